//! Jiu rules: placeholder until the rules are written (every method is unimplemented).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{GameId, Outcome, ParseMoveError, ParsePositionError, Rules, Side};

/// A Jiu position.
#[derive(Debug, Clone)]
pub struct Jiu {
    options: Options,
}

/// Jiu rule options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {}

/// A Jiu move.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Move;

impl fmt::Display for Move {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
    }
}

/// Why a Jiu move is illegal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    #[error("the game is over")]
    GameOver,
}

impl Rules for Jiu {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Jiu;

    fn start(options: &Options) -> Self {
        Jiu {
            options: options.clone(),
        }
    }
    fn options(&self) -> &Options {
        &self.options
    }
    fn from_position_text(_text: &str, _options: &Options) -> Result<Self, ParsePositionError> {
        todo!()
    }
    fn position_text(&self) -> String {
        todo!()
    }
    fn parse_move(_text: &str) -> Result<Move, ParseMoveError> {
        todo!()
    }
    fn turn(&self) -> Side {
        todo!()
    }
    fn outcome(&self) -> Option<Outcome> {
        todo!()
    }
    fn legal_moves(&self, _out: &mut Vec<Move>) {
        todo!()
    }
    fn check_move(&self, _mv: &Move) -> Result<(), IllegalMove> {
        todo!()
    }
    fn play_unchecked(&mut self, _mv: &Move) {
        todo!()
    }
}

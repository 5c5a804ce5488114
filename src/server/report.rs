//! What the server tells its caller: the events of a run as they happen (the library never
//! prints; the binary decides what a person sees), the summary of a finished run, and why a
//! server could not run.

use std::net::SocketAddr;

use super::journaling;
use super::referee::FinishedGame;
use crate::game::EndReason;
use crate::game_line::LineResult;

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("listener: {0}")]
    Listener(#[source] std::io::Error),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    #[error(transparent)]
    Locked(#[from] journaling::LockError),
    #[error("output: {0}")]
    Output(String),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("cannot create output folder {path}: {source}")]
    OutDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One finished game, as `run` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameSummary {
    pub match_id: String,
    pub tournament: String,
    pub first: String,
    pub second: String,
    pub result: LineResult,
    pub reason: EndReason,
    pub moves: usize,
}

impl GameSummary {
    pub(super) fn of(game: &FinishedGame) -> GameSummary {
        GameSummary {
            match_id: game.spec.match_id.clone(),
            tournament: game.spec.tournament.clone(),
            first: game.spec.players[0].clone(),
            second: game.spec.players[1].clone(),
            result: LineResult::of(&game.outcome),
            reason: game.outcome.reason,
            moves: game.moves.len(),
        }
    }
}

/// What the league setup found and did, for the person starting the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Games already finished before this run.
    pub finished: usize,
    /// Unfinished games that continue from journaled moves.
    pub resumed: usize,
    /// Record files or games.jsonl lines written again, or repeated lines removed.
    pub repaired: usize,
    /// A damaged last journal line was dropped.
    pub dropped_torn_line: bool,
}

/// What a server run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSummary {
    pub address: SocketAddr,
    /// Games finished during this run, in the order they finished.
    pub games: Vec<GameSummary>,
    /// Games of the league finished so far, this run's and earlier runs' (from the journal).
    pub league_games_finished: usize,
    /// Games the league plays in all, as far as they are known (a Swiss tournament's later
    /// rounds are counted at their size).
    pub league_games_planned: usize,
    /// Whether every tournament was finished.
    pub tournaments_finished: bool,
    /// Every tournament was finished before this run: it played nothing and exited at once.
    pub already_finished: bool,
}

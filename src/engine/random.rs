//! The `random` engine: plays a uniformly random legal move in any of the four games.

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::options::{self, NoOptions};
use super::{random_move, replay, Engine, EngineError, EngineInfo, SearchRequest};
use crate::game::GameId;

pub const INFO: EngineInfo = EngineInfo {
    id: "random",
    games: &GameId::ALL,
    about: "uniformly random legal moves; a baseline any bot should beat",
    options: &[],
    levels: None,
};

/// Picks uniformly among the legal moves.
#[derive(Debug)]
pub struct RandomEngine {
    game: GameId,
    rules: serde_json::Value,
    rng: SmallRng,
}

impl RandomEngine {
    pub fn new(
        game: GameId,
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<RandomEngine, EngineError> {
        options::parse::<NoOptions>(options)?;
        // Validate the rules now rather than on the first move.
        crate::game::new_game(game, rules)?;
        Ok(RandomEngine {
            game,
            rules: rules.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

impl Engine for RandomEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let position = replay(self.game, &self.rules, request.moves)?;
        random_move(&*position, &mut self.rng).ok_or(EngineError::NoMove)
    }
}

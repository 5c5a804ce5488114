//! The `greedy` engine: a one-ply baseline for every game. It tries each legal move, scores the
//! resulting position with a simple static evaluation, and plays the best (ties broken at
//! random). It takes a win in one but never looks at the opponent's reply.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::Ordering;

use super::options::{self, NoOptions};
use super::{candidate_moves, replay, Engine, EngineError, EngineInfo, SearchRequest};
use crate::game::{AnyGame, GameId, Side};

pub const INFO: EngineInfo = EngineInfo {
    id: "greedy",
    games: &GameId::ALL,
    about:
        "one-ply greedy baseline: best immediate evaluation (material, lines, connection distance)",
    options: &[],
    levels: None,
};

/// Plays the move with the best one-ply evaluation.
#[derive(Debug)]
pub struct GreedyEngine {
    game: GameId,
    rules: serde_json::Value,
    rng: SmallRng,
}

impl GreedyEngine {
    pub fn new(
        game: GameId,
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<GreedyEngine, EngineError> {
        options::parse::<NoOptions>(options)?;
        crate::game::new_game(game, rules)?;
        Ok(GreedyEngine {
            game,
            rules: rules.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

impl Engine for GreedyEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let position = replay(self.game, &self.rules, request.moves)?;
        let me = position.turn();
        let rng = &mut self.rng;
        let mut moves = candidate_moves(&*position, &mut |n| rng.gen_range(0..n.max(1)));
        // Only the moves close to the play so far when the game says which (Connect6: stones
        // within two points of a stone already down, as every Connect6 program does; the full
        // list has ~65,000 pairs, too many to score within a short limit).
        let near: Vec<String> = moves
            .iter()
            .filter(|m| position.is_local_text(m))
            .cloned()
            .collect();
        if !near.is_empty() {
            moves = near;
        }
        let mut best: Vec<&String> = Vec::new();
        let mut best_score = i64::MIN;
        for mv in &moves {
            if request.abort.load(Ordering::Relaxed) && !best.is_empty() {
                break;
            }
            let mut child = position.clone_box();
            if child.play_text(mv).is_err() {
                continue;
            }
            let score = evaluate(&*child, me);
            if score > best_score {
                best_score = score;
                best.clear();
            }
            if score == best_score {
                best.push(mv);
            }
        }
        if best.is_empty() {
            return Err(EngineError::NoMove);
        }
        let pick = self.rng.gen_range(0..best.len());
        Ok(best[pick].clone())
    }
}

const WIN: i64 = 1 << 40;

/// A static score of `position` for `me` (higher is better): the result once the game is over,
/// else the game's own `Rules::heuristic`.
pub fn evaluate(position: &dyn AnyGame, me: Side) -> i64 {
    match position.outcome() {
        Some(outcome) => match outcome.winner {
            Some(w) if w == me => WIN,
            Some(_) => -WIN,
            None => 0,
        },
        None => position.heuristic(me),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ClockView;
    use std::sync::atomic::AtomicBool;

    fn choose(game: GameId, moves: &[&str]) -> String {
        let mut engine =
            GreedyEngine::new(game, &serde_json::Value::Null, &serde_json::Value::Null, 3).unwrap();
        let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        let abort = AtomicBool::new(false);
        engine
            .choose_move(&SearchRequest {
                moves: &moves,
                clock: ClockView::unlimited(),
                abort: &abort,
            })
            .unwrap()
    }

    #[test]
    fn takes_a_connect6_win_in_one() {
        // Black has A1..D1 (and the opening J10); two more stones on row 1 win.
        let mv = choose(
            GameId::Connect6,
            &["A1", "S19,S18", "B1,C1", "S17,S16", "D1,J10", "R19,R18"],
        );
        let mut position =
            crate::game::new_game(GameId::Connect6, &serde_json::Value::Null).unwrap();
        for m in [
            "A1",
            "S19,S18",
            "B1,C1",
            "S17,S16",
            "D1,J10",
            "R19,R18",
            mv.as_str(),
        ] {
            position.play_text(m).unwrap();
        }
        assert_eq!(
            position.outcome().map(|o| o.winner),
            Some(Some(Side::First)),
            "{mv}"
        );
    }

    #[test]
    fn hex_distance_counts_missing_cells() {
        use crate::game::hex::Hex;
        use crate::game::Rules;
        let empty = Hex::start(&Default::default());
        assert_eq!(empty.cells_to_connect(Side::First), 11);
        assert_eq!(empty.cells_to_connect(Side::Second), 11);
        let mut position = empty.clone();
        position.play(&Hex::parse_move("F6").unwrap()).unwrap();
        assert_eq!(position.cells_to_connect(Side::First), 10);
        assert_eq!(position.cells_to_connect(Side::Second), 11);
        assert_eq!(evaluate(&position, Side::First), 100);
    }

    #[test]
    fn greedy_beats_random_at_hex() {
        let config = crate::duel::DuelConfig {
            game: GameId::Hex,
            rules: serde_json::Value::Null,
            engines: [
                ("greedy".into(), serde_json::Value::Null),
                ("random".into(), serde_json::Value::Null),
            ],
            games: 2,
            move_ms: 5_000,
            seed: 11,
        };
        let results = crate::duel::run(&config, |_| {}).unwrap();
        let (wins, _, _) = crate::duel::score(&results);
        assert_eq!(
            wins, 2,
            "greedy lost to random (seeded, so this is reproducible)"
        );
    }
}

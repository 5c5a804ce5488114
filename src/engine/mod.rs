//! Built-in engines: the `Engine` trait every engine implements, the catalogue `arena engines`
//! prints (as `listing` writes it), and the one place that builds an engine from its id.
//!
//! Engines run on a blocking thread (never on the async runtime). They keep their own time
//! budget from the `ClockView` and return their best move promptly once `abort` is set.

pub mod connect6;
pub mod greedy;
pub mod hex;
pub mod jiu;
pub mod level;
pub mod listing;
pub mod options;
pub mod random;
pub mod surakarta;
mod tt;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::game::{GameId, OptionsError, PlayError};

/// The clocks as the bot sees them when asked to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockView {
    pub you_ms: u64,
    pub opponent_ms: u64,
    pub increment_ms: u64,
    /// Per-move limit, if any.
    pub move_limit_ms: Option<u64>,
    /// Moves played so far.
    pub ply: u32,
}

impl ClockView {
    /// A generous clock for tests and tools: ten minutes each, no limit.
    pub fn unlimited() -> ClockView {
        ClockView {
            you_ms: 600_000,
            opponent_ms: 600_000,
            increment_ms: 0,
            move_limit_ms: None,
            ply: 0,
        }
    }

    /// The time an engine should aim to spend on this move: a share of the remaining time
    /// (assuming `moves_left` more moves of its own) plus most of the increment, kept below
    /// the per-move limit, always leaving a safety margin for lag and scheduling.
    pub fn budget(&self, moves_left: u64) -> Duration {
        let reserve = (self.you_ms / 20).clamp(50, 2_000);
        let usable = self.you_ms.saturating_sub(reserve);
        let mut ms = usable / moves_left.max(1) + self.increment_ms * 3 / 4;
        ms = ms.min(usable);
        if let Some(limit) = self.move_limit_ms {
            ms = ms.min(limit.saturating_mul(7) / 10);
        }
        Duration::from_millis(ms)
    }

    /// The hard deadline after which the engine must be aborted: close to the real limit but
    /// leaving room to send the move.
    pub fn hard_limit(&self) -> Duration {
        let reserve = (self.you_ms / 20).clamp(30, 1_000);
        let mut ms = self.you_ms.saturating_sub(reserve);
        if let Some(limit) = self.move_limit_ms {
            ms = ms.min(limit.saturating_sub((limit / 10).clamp(10, 200)));
        }
        Duration::from_millis(ms)
    }
}

/// What an engine is asked: the moves so far (from the start position of the match's rules),
/// the clocks, and the abort flag it must watch.
#[derive(Debug)]
pub struct SearchRequest<'a> {
    pub moves: &'a [String],
    pub clock: ClockView,
    pub abort: &'a AtomicBool,
}

/// Why an engine could not be built or could not move.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("unknown engine {0:?} (see `arena engines`)")]
    UnknownEngine(String),
    #[error("engine {engine} does not play {game}")]
    UnsupportedGame { engine: String, game: GameId },
    #[error("engine option {name}: {why}")]
    BadOption { name: String, why: String },
    #[error(transparent)]
    Rules(#[from] OptionsError),
    #[error("the moves so far do not replay: {0}")]
    BadHistory(#[from] PlayError),
    #[error("no legal move: the game is over")]
    NoMove,
}

/// A move-choosing engine for one match.
pub trait Engine: Send {
    /// Chooses the move to play after `request.moves`. Called on a blocking thread; must return
    /// soon after `request.abort` becomes true, with the best move found so far.
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError>;
}

/// One engine option as `arena engines` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOption {
    pub name: &'static str,
    pub default: &'static str,
    pub about: &'static str,
}

/// One entry of the engine catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineInfo {
    pub id: &'static str,
    pub games: &'static [GameId],
    pub about: &'static str,
    pub options: &'static [EngineOption],
    /// The engine's rows of the shared level table, if its `level` option uses one: the
    /// listing appends what each level limits (`level::describe`) to that option's text, so
    /// the text is never written out by hand beside the rows.
    pub levels: Option<&'static [level::Level]>,
}

/// Every built-in engine. A game's own id names its strongest engine for that game.
pub fn catalogue() -> Vec<EngineInfo> {
    vec![
        random::INFO,
        greedy::INFO,
        connect6::INFO,
        hex::INFO,
        surakarta::INFO,
        jiu::INFO,
    ]
}

/// Builds engine `id` for a match of `game` under `rules` (the match's rule options) with
/// engine `options`. `seed` makes any randomness reproducible.
pub fn new_engine(
    id: &str,
    game: GameId,
    rules: &serde_json::Value,
    options: &serde_json::Value,
    seed: u64,
) -> Result<Box<dyn Engine>, EngineError> {
    let info = catalogue()
        .into_iter()
        .find(|e| e.id == id)
        .ok_or_else(|| EngineError::UnknownEngine(id.to_string()))?;
    if !info.games.contains(&game) {
        return Err(EngineError::UnsupportedGame {
            engine: id.to_string(),
            game,
        });
    }
    match id {
        "random" => Ok(Box::new(random::RandomEngine::new(
            game, rules, options, seed,
        )?)),
        "greedy" => Ok(Box::new(greedy::GreedyEngine::new(
            game, rules, options, seed,
        )?)),
        "connect6" => Ok(Box::new(connect6::Connect6Engine::new(
            rules, options, seed,
        )?)),
        "hex" => Ok(Box::new(hex::HexEngine::new(rules, options, seed)?)),
        "surakarta" => Ok(Box::new(surakarta::SurakartaEngine::new(
            rules, options, seed,
        )?)),
        "jiu" => Ok(Box::new(jiu::JiuEngine::new(rules, options, seed)?)),
        _ => Err(EngineError::UnknownEngine(id.to_string())),
    }
}

/// Replays `moves` from the start position of `game` under `rules`.
pub fn replay(
    game: GameId,
    rules: &serde_json::Value,
    moves: &[String],
) -> Result<Box<dyn crate::game::AnyGame>, EngineError> {
    let mut position = crate::game::new_game(game, rules)?;
    for mv in moves {
        position.play_text(mv)?;
    }
    Ok(position)
}

/// The moves a simple engine chooses among (`Rules::sample_moves`): every legal move, except
/// that each Jiu square capture appears once, its victims distinct enemy stones chosen with
/// `pick(n)` (an index below n) instead of every victim set. Every returned move is legal.
pub fn candidate_moves(
    position: &dyn crate::game::AnyGame,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Vec<String> {
    position.sample_move_texts(pick)
}

/// A uniformly random legal move of `position` (among `candidate_moves`), `None` when there
/// is none: the `random` engine's move, and a level's random moves.
pub fn random_move(
    position: &dyn crate::game::AnyGame,
    rng: &mut rand::rngs::SmallRng,
) -> Option<String> {
    use rand::Rng;
    let mut moves = candidate_moves(position, &mut |n| rng.gen_range(0..n.max(1)));
    if moves.is_empty() {
        return None;
    }
    let index = rng.gen_range(0..moves.len());
    Some(moves.swap_remove(index))
}

/// How many entries of type `E` a transposition table of `mib` MiB holds: the largest power of
/// two that fits (so a key's low bits index it), at least one.
pub fn table_entries<E>(mib: u64) -> usize {
    let wanted = (mib.saturating_mul(1 << 20) / std::mem::size_of::<E>().max(1) as u64).max(1);
    1usize << (63 - wanted.leading_zeros())
}

/// Checks built-in engine `id`'s `options` as a match would (unknown keys, out-of-range
/// values), so a config is refused at load instead of every game being resigned.
pub fn check_options(id: &str, options: &serde_json::Value) -> Result<(), EngineError> {
    let info = catalogue()
        .into_iter()
        .find(|e| e.id == id)
        .ok_or_else(|| EngineError::UnknownEngine(id.to_string()))?;
    for &game in info.games {
        new_engine(id, game, &serde_json::Value::Null, options, 0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_entries_are_the_largest_power_of_two_that_fits() {
        assert_eq!(table_entries::<[u8; 16]>(16), 1 << 20);
        assert_eq!(
            table_entries::<[u8; 24]>(1),
            32_768,
            "43,690 fit; 2^15 is taken"
        );
        assert_eq!(table_entries::<[u8; 24]>(0), 1, "never empty");
    }

    #[test]
    fn budget_stays_inside_the_limits() {
        let clock = ClockView {
            you_ms: 10_000,
            opponent_ms: 10_000,
            increment_ms: 0,
            move_limit_ms: Some(200),
            ply: 0,
        };
        assert!(clock.budget(30) <= Duration::from_millis(140));
        assert!(clock.hard_limit() < Duration::from_millis(200));
        let low = ClockView {
            you_ms: 40,
            ..ClockView::unlimited()
        };
        assert!(low.budget(30) < Duration::from_millis(40));
        assert!(low.hard_limit() < Duration::from_millis(40));
    }

    #[test]
    fn candidate_moves_fill_jiu_victims_with_enemy_stones() {
        // A battle position where N4-N5 and N6-N5 each form a square (fixture moves.in).
        let text = "xxxxxxxxxxxxxo/xxxxxxxxxxxxx./xxxxxxxxxxxxxx/xxxxxxxxxxxxxx/xxxxxxxxxxxxxx/\
                    xxxxxxxxxxxxxx/xxxxxxxxxxxxxx/xxxxxxxxxxxxxx/xxxxxxxxxxxxxx/xxxxxxxxxxxxx./\
                    oooooxxxxxxxxx/oooooxxxxxxxxx/oooooxxxxxxxxx/oooooxxxxxxxxx x phase=battle quiet=7";
        let position =
            crate::game::game_from_position_text(GameId::Jiu, text, &serde_json::Value::Null)
                .unwrap();
        let mut next = 0;
        let moves = candidate_moves(&*position, &mut |n| {
            next += 1;
            next % n
        });
        assert_eq!(moves.len(), position.move_listing().len());
        for mv in &moves {
            assert!(position.check_text(mv).is_ok(), "{mv}");
        }
        let captures: Vec<&String> = moves.iter().filter(|m| m.contains('+')).collect();
        assert_eq!(captures.len(), 2, "{moves:?}");
    }

    #[test]
    fn unknown_engines_and_options_are_refused() {
        assert!(matches!(
            new_engine(
                "nope",
                GameId::Hex,
                &serde_json::Value::Null,
                &serde_json::Value::Null,
                1
            ),
            Err(EngineError::UnknownEngine(_))
        ));
        let bad = serde_json::json!({"colour": "red"});
        assert!(matches!(
            check_options("random", &bad),
            Err(EngineError::BadOption { .. })
        ));
    }

    #[test]
    fn every_listed_option_is_read_with_its_listed_default_and_no_other_is() {
        for info in catalogue() {
            for option in info.options {
                let given = serde_json::json!({ option.name: option.default });
                assert_eq!(check_options(info.id, &given), Ok(()), "{}", info.id);
            }
            let e = check_options(info.id, &serde_json::json!({"colour": "red"})).unwrap_err();
            for option in info.options {
                assert!(e.to_string().contains(option.name), "{}: {e}", info.id);
            }
        }
    }
}

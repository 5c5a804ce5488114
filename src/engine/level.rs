//! Strength levels of the built-in engines: the `level` option, what each level limits (think
//! time, search depth, share of random moves) and the seeded coin that picks the random moves.
//!
//! Each engine keeps its own table of levels (its top level is its default strength: no
//! limits, no random moves), reads `level` with its other options (a `Whole` from 1 to its
//! table's length) and picks the row here; options given beside `level` (`depth`, `time_ms`)
//! override what the level sets.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::random_move;
use crate::game::AnyGame;

/// What one level limits; `None` leaves the engine's default (or the option given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Cap on the think time per move, in milliseconds.
    pub time_ms: Option<u64>,
    /// Cap on the search depth, in the engine's own unit (plies or two-stone turns).
    pub depth: Option<u32>,
    /// Percentage of moves played at random (a legal move, before any search).
    pub noise_pct: u32,
}

impl Level {
    /// The full search with `noise_pct` per cent of random moves.
    pub const fn noisy(noise_pct: u32) -> Level {
        Level {
            time_ms: None,
            depth: None,
            noise_pct,
        }
    }

    /// A search cut at `depth` and `time_ms`, with `noise_pct` per cent of random moves.
    pub const fn limited(depth: u32, time_ms: u64, noise_pct: u32) -> Level {
        Level {
            time_ms: Some(time_ms),
            depth: Some(depth),
            noise_pct,
        }
    }
}

/// The top level: the engine's default strength.
pub const FULL_STRENGTH: Level = Level {
    time_ms: None,
    depth: None,
    noise_pct: 0,
};

/// Level `level` (1 to `levels.len()`, as the engine's options read it) of `levels`; the top
/// level when none is given.
pub fn pick(levels: &[Level], level: Option<u64>) -> Level {
    let top = || levels.last().copied().unwrap_or(FULL_STRENGTH);
    match level {
        Some(n) => usize::try_from(n)
            .ok()
            .and_then(|n| levels.get(n.checked_sub(1)?).copied())
            .unwrap_or_else(top),
        None => top(),
    }
}

/// The levels as `arena engines` lists them, e.g. "1: depth 1, 20 ms, 80% random moves; …;
/// 5: full strength (the default)".
pub fn describe(levels: &[Level]) -> String {
    let mut parts = Vec::new();
    for (i, level) in levels.iter().enumerate() {
        let mut limits = Vec::new();
        if let Some(depth) = level.depth {
            limits.push(format!("depth {depth}"));
        }
        if let Some(ms) = level.time_ms {
            limits.push(format!("{ms} ms"));
        }
        if level.noise_pct > 0 {
            limits.push(format!("{}% random moves", level.noise_pct));
        }
        if limits.is_empty() {
            limits.push("full strength (the default)".to_string());
        }
        parts.push(format!("{}: {}", i + 1, limits.join(", ")));
    }
    parts.join("; ")
}

/// The coin that decides which moves a level plays at random, seeded from the match seed.
/// It never draws at 0%, so an engine at full strength plays exactly as without levels.
#[derive(Debug, Clone)]
pub struct Noise {
    pct: u32,
    rng: SmallRng,
}

impl Noise {
    pub fn new(pct: u32, seed: u64) -> Noise {
        Noise {
            pct: pct.min(100),
            rng: SmallRng::seed_from_u64(seed ^ 0x4C45_5645_4C5F_4E4F),
        }
    }

    /// Whether this move is played at random.
    pub fn random_move(&mut self) -> bool {
        self.pct > 0 && self.rng.gen_range(0..100) < self.pct
    }

    /// A uniformly random legal move of `position` (`None` when there is none).
    pub fn legal_move(&mut self, position: &dyn AnyGame) -> Option<String> {
        random_move(position, &mut self.rng)
    }

    /// An index below `n` (0 when `n` is 0), for picking the random move.
    pub fn pick(&mut self, n: usize) -> usize {
        self.rng.gen_range(0..n.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVELS: &[Level] = &[
        Level {
            time_ms: Some(20),
            depth: Some(1),
            noise_pct: 80,
        },
        FULL_STRENGTH,
    ];

    #[test]
    fn the_level_option_picks_a_row_and_defaults_to_the_top() {
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        struct Options {
            level: Option<crate::engine::options::Whole<1, { LEVELS.len() as u64 }>>,
        }
        let level = |options: serde_json::Value| {
            crate::engine::options::parse::<Options>(&options)
                .map(|o| pick(LEVELS, o.level.map(|l| l.get())))
        };
        assert_eq!(level(serde_json::json!({"level": 1})), Ok(LEVELS[0]));
        assert_eq!(level(serde_json::json!({})), Ok(FULL_STRENGTH));
        for bad in [0, 3] {
            assert!(matches!(
                level(serde_json::json!({ "level": bad })),
                Err(crate::engine::EngineError::BadOption { .. })
            ));
        }
    }

    #[test]
    fn levels_are_described_with_their_limits() {
        assert_eq!(
            describe(LEVELS),
            "1: depth 1, 20 ms, 80% random moves; 2: full strength (the default)"
        );
    }

    #[test]
    fn noise_follows_its_percentage() {
        let mut never = Noise::new(0, 7);
        assert!((0..1000).all(|_| !never.random_move()));
        let mut always = Noise::new(100, 7);
        assert!((0..1000).all(|_| always.random_move()));
        let mut some = Noise::new(30, 7);
        let hits = (0..10_000).filter(|_| some.random_move()).count();
        assert!((2_500..3_500).contains(&hits), "{hits}");
    }
}

#[cfg(test)]
mod engine_tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::engine::{connect6, jiu, new_engine, replay, surakarta, ClockView, SearchRequest};
    use crate::game::GameId;

    const LEVELLED: [(GameId, &str, &[Level]); 3] = [
        (GameId::Connect6, "connect6", connect6::LEVELS),
        (GameId::Surakarta, "surakarta", surakarta::LEVELS),
        (GameId::Jiu, "jiu", jiu::LEVELS),
    ];

    #[test]
    fn arena_engines_lists_each_engines_levels_as_they_are() {
        for (_, id, levels) in LEVELLED {
            let info = crate::engine::catalogue()
                .into_iter()
                .find(|e| e.id == id)
                .unwrap();
            let option = info.options.iter().find(|o| o.name == "level").unwrap();
            assert_eq!(option.default, levels.len().to_string(), "{id}");
            assert!(
                option
                    .about
                    .contains(&format!("strength 1-{}", levels.len())),
                "{id}: {}",
                option.about
            );
            // The listing (`arena engines`, text and JSON) says every row as it is.
            let listed = crate::engine::listing::option_about(&info, option);
            assert!(listed.contains(&describe(levels)), "{id}: {listed}");
            let json = crate::engine::listing::engines_json();
            let listed_json = json
                .as_array()
                .and_then(|e| e.iter().find(|e| e["id"] == id))
                .and_then(|e| e["options"].as_array())
                .and_then(|o| o.iter().find(|o| o["name"] == "level"))
                .and_then(|o| o["about"].as_str())
                .unwrap();
            assert_eq!(listed_json, listed, "{id}");
            assert_eq!(
                levels.last(),
                Some(&FULL_STRENGTH),
                "{id}: top level is the default"
            );
        }
    }

    #[test]
    fn the_weakest_levels_play_legal_moves() {
        let abort = AtomicBool::new(false);
        for (game, id, _) in LEVELLED {
            let rules = serde_json::Value::Null;
            let options = serde_json::json!({"level": 1});
            let mut engines = [
                new_engine(id, game, &rules, &options, 3).unwrap(),
                new_engine(id, game, &rules, &options, 4).unwrap(),
            ];
            let mut moves: Vec<String> = Vec::new();
            for ply in 0..60 {
                let position = replay(game, &rules, &moves).unwrap();
                if position.outcome().is_some() {
                    break;
                }
                let request = SearchRequest {
                    moves: &moves,
                    clock: ClockView::unlimited(),
                    abort: &abort,
                };
                let mv = engines[ply % 2].choose_move(&request).unwrap();
                assert!(position.check_text(&mv).is_ok(), "{id}: {mv}");
                moves.push(mv);
            }
            assert!(moves.len() > 6, "{id}");
        }
    }
}

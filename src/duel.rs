//! A reproducible in-process match between two built-in engines (no server, no TCP), used by
//! the engines' strength tests. Colours alternate; each move runs on its own thread under a
//! per-move limit enforced with the engine's abort flag. It prints nothing: `run` hands each
//! finished game to its caller's callback and returns them all. (The `arena duel` command is an
//! alias of `arena match` with two built-in engines and does not use this module.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use crate::clock::Clocks;
use crate::clock_settings::ClockSpec;
use crate::engine::{self, ClockView, Engine, EngineError, SearchRequest};
use crate::game::{self, EndReason, GameId, Outcome, Side};

/// How a duel is played.
#[derive(Debug, Clone)]
pub struct DuelConfig {
    pub game: GameId,
    pub rules: serde_json::Value,
    /// Engine ids and options for the two contestants, A and B. A is first in even games.
    pub engines: [(String, serde_json::Value); 2],
    pub games: u32,
    /// Per-move limit in milliseconds; exceeding it loses by `timeout`.
    pub move_ms: u64,
    pub seed: u64,
}

/// One finished duel game.
#[derive(Debug, Clone, PartialEq)]
pub struct DuelGame {
    pub index: u32,
    /// Which contestant (0 = A, 1 = B) played first.
    pub first: usize,
    pub outcome: Outcome,
    pub moves: Vec<String>,
    /// Longest think time of each contestant, in milliseconds.
    pub max_think_ms: [u64; 2],
}

impl DuelGame {
    /// The winning contestant (0 = A, 1 = B), or `None` for a draw.
    pub fn winner(&self) -> Option<usize> {
        self.outcome.winner.map(|side| match side {
            Side::First => self.first,
            Side::Second => 1 - self.first,
        })
    }
}

/// Why a duel could not be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DuelError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Options(#[from] game::OptionsError),
    #[error("engine thread failed: {0}")]
    Thread(String),
}

/// Plays the duel, calling `on_game` after each game.
pub fn run(
    config: &DuelConfig,
    mut on_game: impl FnMut(&DuelGame),
) -> Result<Vec<DuelGame>, DuelError> {
    let mut results = Vec::new();
    for index in 0..config.games {
        let first = (index % 2) as usize;
        let game = play_one(config, index, first)?;
        on_game(&game);
        results.push(game);
    }
    Ok(results)
}

fn play_one(config: &DuelConfig, index: u32, first: usize) -> Result<DuelGame, DuelError> {
    let mut position = game::new_game(config.game, &config.rules)?;
    let rules = position.rules_json();
    let mut engines: Vec<Option<Box<dyn Engine>>> = Vec::new();
    for (who, (id, options)) in config.engines.iter().enumerate() {
        let seed = config.seed ^ ((index as u64) << 8) ^ who as u64;
        engines.push(Some(engine::new_engine(
            id,
            config.game,
            &rules,
            options,
            seed,
        )?));
    }
    // Only the per-move limit counts in a duel: the clocks are shown, never charged.
    let clocks = Clocks::new(ClockSpec {
        initial_ms: config.move_ms.saturating_mul(1000),
        increment_ms: 0,
        move_limit_ms: Some(config.move_ms),
    });
    let mut moves: Vec<String> = Vec::new();
    let mut max_think_ms = [0u64; 2];
    let outcome = loop {
        if let Some(outcome) = position.outcome() {
            break outcome;
        }
        let side = position.turn();
        let who = if side == Side::First {
            first
        } else {
            1 - first
        };
        let clock = clocks.view(side, Duration::ZERO, moves.len() as u32);
        let engine = engines[who]
            .take()
            .ok_or_else(|| DuelError::Thread("engine lost".into()))?;
        let (engine, answer, think) = think(engine, moves.clone(), clock)?;
        engines[who] = Some(engine);
        let think_ms = think.as_millis() as u64;
        max_think_ms[who] = max_think_ms[who].max(think_ms);
        if think_ms > config.move_ms {
            break Outcome::win(side.opponent(), EndReason::Timeout);
        }
        let text = match answer {
            Ok(text) => text,
            Err(_) => break Outcome::win(side.opponent(), EndReason::Resign),
        };
        match position.play_text(&text) {
            Ok(played) => moves.push(played),
            Err(_) => break Outcome::win(side.opponent(), EndReason::IllegalMove),
        }
    };
    Ok(DuelGame {
        index,
        first,
        outcome,
        moves,
        max_think_ms,
    })
}

type ThinkResult = (Box<dyn Engine>, Result<String, EngineError>, Duration);

/// Runs one search on its own thread, setting the abort flag at the clock's hard limit.
fn think(
    mut engine: Box<dyn Engine>,
    moves: Vec<String>,
    clock: ClockView,
) -> Result<ThinkResult, DuelError> {
    let abort = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let flag = Arc::clone(&abort);
    let worker = thread::Builder::new()
        .name("duel-engine".into())
        .spawn(move || {
            let answer = engine.choose_move(&SearchRequest {
                moves: &moves,
                clock,
                abort: &flag,
            });
            let _ = tx.send(());
            (engine, answer)
        })
        .map_err(|e| DuelError::Thread(e.to_string()))?;
    if rx.recv_timeout(clock.hard_limit()).is_err() {
        abort.store(true, Ordering::Relaxed);
    }
    let (engine, answer) = worker
        .join()
        .map_err(|_| DuelError::Thread("engine panicked".into()))?;
    Ok((engine, answer, started.elapsed()))
}

/// Wins, draws and losses of contestant A.
pub fn score(results: &[DuelGame]) -> (u32, u32, u32) {
    let mut score = (0, 0, 0);
    for game in results {
        match game.winner() {
            Some(0) => score.0 += 1,
            Some(_) => score.2 += 1,
            None => score.1 += 1,
        }
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_against_random_finishes_every_game_with_alternating_colours() {
        let config = DuelConfig {
            game: GameId::Hex,
            rules: serde_json::Value::Null,
            engines: [
                ("random".into(), serde_json::Value::Null),
                ("random".into(), serde_json::Value::Null),
            ],
            games: 4,
            move_ms: 1000,
            seed: 7,
        };
        let mut seen = 0;
        let results = run(&config, |_| seen += 1).unwrap();
        assert_eq!(seen, 4);
        assert_eq!(
            results.iter().map(|g| g.first).collect::<Vec<_>>(),
            vec![0, 1, 0, 1]
        );
        for game in &results {
            assert_eq!(game.outcome.reason, EndReason::Connection);
            // Replaying the recorded moves reaches the same outcome.
            let mut position = game::new_game(GameId::Hex, &serde_json::Value::Null).unwrap();
            for mv in &game.moves {
                position.play_text(mv).unwrap();
            }
            assert_eq!(position.outcome(), Some(game.outcome));
        }
        let (w, d, l) = score(&results);
        assert_eq!(w + d + l, 4);
        assert_eq!(d, 0);
    }
}

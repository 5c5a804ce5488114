//! The rules' speed: Surakarta perft 6 from the start position, and leaf nodes per second for
//! every game at a depth chosen so that one run takes a fraction of a second.

use std::time::{Duration, Instant};

use crate::game::surakarta::Surakarta;
use crate::game::{new_game, GameId, Rules};

use super::BenchError;

/// One game's perft figure.
#[derive(Debug, Clone, PartialEq)]
pub struct PerftFigure {
    pub game: GameId,
    pub depth: u32,
    /// Leaf positions counted per run (bulk-counted at the last ply).
    pub nodes: u64,
    /// Runs timed (a fast depth is repeated until `target` has passed).
    pub runs: u32,
    pub seconds: f64,
}

impl PerftFigure {
    pub fn nodes_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.nodes as f64 * f64::from(self.runs) / self.seconds
        } else {
            0.0
        }
    }
}

/// Seconds for Surakarta perft 6 from the start position, and its leaf count.
pub fn surakarta_perft_6() -> (f64, u64) {
    let start = Surakarta::start(&Default::default());
    let t = Instant::now();
    let nodes = start.perft(std::hint::black_box(6));
    (t.elapsed().as_secs_f64(), nodes)
}

/// Every game's perft speed: the deepest depth whose estimated time stays under `cap`, repeated
/// until `target` has passed.
pub fn perft_speeds(target: Duration, cap: Duration) -> Result<Vec<PerftFigure>, BenchError> {
    let mut figures = Vec::new();
    for game in GameId::ALL {
        let start = new_game(game, &serde_json::Value::Null)
            .map_err(|e| BenchError::Setup(format!("{game}: {e}")))?;
        let mut depth = 1;
        let mut previous_nodes = 1u64;
        let (nodes, seconds) = loop {
            let t = Instant::now();
            let nodes = start.perft(depth);
            let seconds = t.elapsed().as_secs_f64();
            // The next depth costs about this many times more (the average branching factor).
            let growth = (nodes as f64 / previous_nodes.max(1) as f64).max(1.0);
            let next_estimate = seconds * growth;
            if seconds >= target.as_secs_f64() || next_estimate > cap.as_secs_f64() || depth >= 12 {
                break (nodes, seconds);
            }
            previous_nodes = nodes;
            depth += 1;
        };
        // Repeat a quick depth so that the figure is not one timer tick.
        let mut runs = 1u32;
        let mut total = seconds;
        while total < target.as_secs_f64() && runs < 1000 {
            let t = Instant::now();
            std::hint::black_box(start.perft(depth));
            total += t.elapsed().as_secs_f64();
            runs += 1;
        }
        figures.push(PerftFigure {
            game,
            depth,
            nodes,
            runs,
            seconds: total,
        });
    }
    Ok(figures)
}

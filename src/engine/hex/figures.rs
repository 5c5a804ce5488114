//! Figures of the Hex engine's H-search, measured on demand (the `hex_figures` example prints
//! them): the time of one H-search on random positions, and how many of the kept positions
//! where MoHex's connection builder proved a win H-search sees. Figures, not pass marks: they
//! are run by hand and written into the engine's docs, never asserted.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::tables::{stone, Cells, CELLS, EMPTY, N};
use super::vc::Connections;
use super::{board_of_position, colour_of};
use crate::game::hex::{Hex, Move, Options as HexOptions};
use crate::game::Rules;

/// One row of [`h_search_speed`]: random positions of `stones` stones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HSearchSpeed {
    pub stones: usize,
    /// Mean wall time of one H-search (one colour), in milliseconds.
    pub ms_per_search: f64,
    /// Mean AND-rule attempts per H-search: the work, whatever the machine's speed.
    pub and_attempts: u64,
}

/// Times one H-search per colour on ten random positions each of 10, 20, 30, 40 and 60 stones
/// (the same positions for the same `seed`).
pub fn h_search_speed(seed: u64) -> Vec<HSearchSpeed> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = Vec::new();
    for stones in [10, 20, 30, 40, 60] {
        let (mut total, mut work, mut runs) = (Duration::ZERO, 0, 0u64);
        for _ in 0..10 {
            let mut board = [EMPTY; CELLS];
            let mut placed = 0;
            while placed < stones {
                let c = rng.gen_range(0..CELLS);
                if board[c] == EMPTY {
                    board[c] = stone(placed % 2);
                    placed += 1;
                }
            }
            for colour in 0..2 {
                let start = Instant::now();
                let vc = Connections::build(&board, colour);
                total += start.elapsed();
                work += vc.work();
                runs += 1;
            }
        }
        rows.push(HSearchSpeed {
            stones,
            ms_per_search: total.as_secs_f64() * 1000.0 / runs as f64,
            and_attempts: work / runs,
        });
    }
    rows
}

/// What [`h_search_on_vc_wins`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VcWinsSeen {
    pub positions: usize,
    /// Positions where H-search finds the mover's edge-to-edge semi connection before the key.
    pub semis: usize,
    /// Positions where it finds the full connection once the key is played.
    pub fulls: usize,
    /// Mean wall time of one of its H-searches (before the key and after it, tables reused
    /// as in play), in milliseconds.
    pub ms_per_search: f64,
}

/// How many of the positions in `fixture` (the format of `tests/fixtures/hex/mohex_vc_wins.txt`)
/// H-search sees won, before the key and after it, and the time it takes.
pub fn h_search_on_vc_wins(fixture: &str) -> Result<VcWinsSeen, String> {
    let wins = parse_vc_wins(fixture)?;
    let (mut semis, mut fulls) = (0, 0);
    let mut vc = Connections::new();
    let mut spent = Duration::ZERO;
    for (board, mover, key) in &wins {
        let start = Instant::now();
        vc.search(board, *mover);
        spent += start.elapsed();
        semis += usize::from(vc.won() || vc.edge_semis().len() > 0);
        let mut after = *board;
        after[*key as usize] = stone(*mover);
        let start = Instant::now();
        vc.search(&after, *mover);
        spent += start.elapsed();
        fulls += usize::from(vc.won());
    }
    Ok(VcWinsSeen {
        positions: wins.len(),
        semis,
        fulls,
        ms_per_search: spent.as_secs_f64() * 1000.0 / (2 * wins.len().max(1)) as f64,
    })
}

/// Reads the kept positions: each line a position text, a space and the key cell MoHex's
/// connection builder named; `#` lines and blank lines skipped. Gives the board, the side to
/// move (MoHex) and the key.
pub(super) fn parse_vc_wins(fixture: &str) -> Result<Vec<(Cells, usize, u8)>, String> {
    fixture
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (text, key) = line
                .rsplit_once(' ')
                .ok_or_else(|| format!("{line:?}: no key after the position"))?;
            let position = Hex::from_position_text(text, &HexOptions::default())
                .map_err(|e| format!("{line:?}: {e}"))?;
            let key = match Hex::parse_move(key).map_err(|e| format!("{line:?}: {e}"))? {
                Move::Place(p) => p.index(N as u8) as u8,
                Move::Swap => return Err(format!("{line:?}: the key is not a cell")),
            };
            Ok((
                board_of_position(&position),
                colour_of(position.turn()),
                key,
            ))
        })
        .collect()
}

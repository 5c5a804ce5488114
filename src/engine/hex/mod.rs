//! The `hex` engine: the resistance-circuit evaluation of the BistuHex2 paper (each side's board
//! as a circuit solved with Kirchhoff's laws), its staged search (alpha-beta over the resistance
//! evaluation when few candidate cells carry current, UCT otherwise), and what goes beyond the
//! paper: virtual links for bridges and edge templates in the circuit, RAVE, bridge- and
//! edge-template-saving playouts, answers to bridge / template II / ziggurat intrusions, forced
//! replies (win or block in one), the swap decision, and a UCT tree kept between moves that
//! leaves dead cells out; virtual connections (H-search) before each move and, by option,
//! in the tree; the UCT stage can search on several threads (option `threads`,
//! root parallelism: one tree per thread).
//!
//! Layout: the position is replayed with the typed [`Hex`] rules, then copied into a flat
//! `[u8; 121]` board (row-major, row 1 first, like `Point::index`) that the search mutates.
//! Colour 0 is Red (joins row 1 to row 11), colour 1 is Blue (joins column A to column K).
//!
//! Choices where the paper and the rules are silent (also in `docs/engines.md`):
//! - The paper's abstract puts alpha-beta in the opening and UCT later, while its flow chart
//!   (section 2) picks alpha-beta when fewer than 30 candidate cells remain and UCT otherwise;
//!   we follow the flow chart. A candidate is an empty cell carrying at least
//!   [`CANDIDATE_SHARE`] of the largest cell current of either circuit.
//! - With `swap` on, as Blue we swap a first red stone at least two cells away from every border
//!   (the central 7×7); as Red our first move is A9 (HexGui's a3), which we would not swap.
//!   Without swap, Red opens in the centre, F6.

// The solver and the boards index several parallel fixed-size arrays by cell number.
#![allow(clippy::needless_range_loop)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use serde::Deserialize;

use super::level::Noise;
use super::options::{self, Whole};
use super::{Engine, EngineError, EngineInfo, EngineOption, SearchRequest};
use crate::game::hex::{Hex, Move, Options as HexOptions};
use crate::game::{parse_options, GameId, PlayError, Point, Rules, Side};

pub const INFO: EngineInfo = EngineInfo {
    id: "hex",
    games: &[GameId::Hex],
    about: "resistance-circuit evaluation with staged search: alpha-beta when few cells matter, \
            UCT with RAVE and bridge-saving playouts otherwise; answers bridge intrusions, swaps \
            central openings",
    options: &[
        EngineOption {
            name: "level",
            default: "17",
            about: "strength, 1 (weakest) to 17 (full strength, the defaults below); each level \
                    presets time_ms, playouts, vc, ab_below and noise, and an option given \
                    beside it wins: 1 to 15 = 500 ms, 1500 playouts, vc 1, ab_below 0, with \
                    noise 95, 92, 85, 78, 71, 64, 57, 50, 43, 36, 28, 20, 12, 5 and 0; 16 = \
                    1000 ms, 12000 playouts, vc 1, ab_below 30; 17 = 10000 ms, no playout \
                    cap, vc 1, ab_below 30",
        },
        EngineOption {
            name: "noise",
            default: "0",
            about: "per cent of moves played on a random empty cell instead of the search's \
                    choice (0..=100); a strength knob for the low levels",
        },
        EngineOption {
            name: "time_ms",
            default: "10000",
            about: "cap on the thinking time per move, in milliseconds (the clock may allow less)",
        },
        EngineOption {
            name: "playouts",
            default: "0",
            about: "cap on UCT playouts per move (0: only time limits the search); a strength knob",
        },
        EngineOption {
            name: "ab_below",
            default: "30",
            about: "alpha-beta is used when fewer candidate cells than this remain (counted \
                    inside the must-play region when the opponent threatens to join), UCT \
                    otherwise (0: always UCT, 122: always alpha-beta)",
        },
        EngineOption {
            name: "tree_mb",
            default: "214",
            about: "MiB the UCT tree (kept between moves) may use (1..=4096); memory per game is \
                    about this figure; the default holds about 8 million nodes; with several \
                    threads it is split evenly between their trees",
        },
        EngineOption {
            name: "vc",
            default: "1",
            about: "virtual connections (H-search): 1 before each move (a semi connection's \
                    winning key is played, and only cells that stop the opponent's are \
                    searched); 2 also at each root move's node in the UCT tree; 0 off",
        },
        EngineOption {
            name: "vc_visits",
            default: "0",
            about: "with vc 2, also check every deeper UCT node with virtual connections when \
                    its visits reach this number (0: only the root's moves; needs vc 2)",
        },
        EngineOption {
            name: "pattern_bias",
            default: "0",
            about: "weight, in hundredths, of the trained move patterns' progressive bias in the \
                    UCT tree (0..=10000; 0: patterns off)",
        },
        EngineOption {
            name: "pattern_prior",
            default: "0",
            about: "weight, in hundredths, of the trained move patterns in the starting values \
                    of the UCT tree's moves below the root (0..=100; 0: off)",
        },
        EngineOption {
            name: "pattern_playouts",
            default: "0",
            about: "playouts draw cells in proportion to their trained pattern weights, each \
                    weight capped at this many hundredths (0..=1000000; 0: uniformly at random)",
        },
        EngineOption {
            name: "threads",
            default: "1",
            about: "threads the UCT stage searches with (1..=64), one tree each (root \
                    parallelism); alpha-beta stays on one thread",
        },
    ],
    // Its levels preset options of its own (see `LEVELS`); the `level` option's text says them.
    levels: None,
};

mod alpha_beta;
mod circuit;
pub mod figures;
mod inferior;
pub mod patterns;
mod tables;
#[cfg(test)]
mod tests;
mod uct;
mod vc;

use circuit::*;
use inferior::*;
use patterns::{shape_of, shape_readers, shipped_weights, ShapeKeys};
use tables::*;
use uct::*;
use vc::*;

/// A cell counts as a candidate when its combined current share reaches this fraction of the
/// largest one.
pub const CANDIDATE_SHARE: f64 = 0.2;
/// Cells tried at each inner alpha-beta node, best current first.
const BRANCHING: usize = 10;
/// Deepest alpha-beta iteration.
const MAX_DEPTH: u32 = 12;
/// UCT: virtual AMAF visits given to a move's prior, the RAVE bias, the exploration constant
/// and the visits before a node is expanded.
const PRIOR_VISITS: f32 = 30.0;
const RAVE_BIAS: f32 = 0.0005;
const EXPLORATION: f32 = 0.05;
const EXPAND_AFTER: u32 = 3;
/// The `tree_mb` option's default and largest value. The default, 214 MiB, holds
/// `214 × 2^20 / 28` = 8 013 824 nodes of 28 bytes: the 8-million-node cap the tree had as a
/// constant (when `Vec` doubling could reserve past it: 2^23 nodes, 224 MiB, on a fresh tree).
const DEFAULT_TREE_MB: u64 = 214;
const MAX_TREE_MB: u64 = 4096;
/// The `threads` option's largest value (its default is 1: leagues want one core per engine).
const MAX_THREADS: u64 = 64;

/// The most UCT nodes `mib` MiB hold, computed from the node's size; never more than the
/// tree's `u32` child indices can address.
fn tree_nodes_for(mib: u64) -> usize {
    let nodes = mib.saturating_mul(1 << 20) / std::mem::size_of::<TreeNode>() as u64;
    usize::try_from(nodes.min(u64::from(u32::MAX))).unwrap_or(usize::MAX)
}

/// Which search chose the last move, and how much work it did (for tests and figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchStats {
    pub stage: Stage,
    pub playouts: u64,
    pub nodes: u64,
    pub depth: u32,
    pub candidates: usize,
    /// Root visits kept from the previous move's tree.
    pub reused: u64,
    /// Empty cells the virtual connections left to choose from (0: no restriction).
    pub must_play: usize,
    /// Virtual-connection checks of tree nodes in the UCT stage (`vc` 2), over all threads.
    pub checks: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// Opening book, swap decision, a win in one or a forced block.
    #[default]
    Immediate,
    AlphaBeta,
    Uct,
    /// A semi connection between our edges (virtual connections): its key wins.
    Connection,
}

/// What a `level` presets: time cap (ms), playout cap (0: none), `vc`, `ab_below`, noise (%).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Level {
    time_ms: u64,
    playouts: u64,
    vc: u8,
    ab_below: usize,
    noise: u8,
}

/// Levels 1 to 15: level 15's search (1,500 playouts, no alpha-beta stage), with a share of
/// random moves. In Hex one random move costs far more than in the other games, so the shares
/// fall in steps of 7 or 8 points from 95% (barely better than `random`) to 20%, then 12, 5
/// and 0; the new steps measured at 100 games, the old ones at 40 (docs/engines.md).
const fn noisy(noise: u8) -> Level {
    Level {
        time_ms: 500,
        playouts: 1500,
        vc: 1,
        ab_below: 0,
        noise,
    }
}

/// The levels, weakest first; the last is the engine's full strength (its defaults). The
/// figures are repeated in the `level` option's text that `arena engines` prints.
const LEVELS: [Level; 17] = [
    noisy(95),
    noisy(92),
    noisy(85),
    noisy(78),
    noisy(71),
    noisy(64),
    noisy(57),
    noisy(50),
    noisy(43),
    noisy(36),
    noisy(28),
    noisy(20),
    noisy(12),
    noisy(5),
    noisy(0),
    Level {
        time_ms: 1000,
        playouts: 12_000,
        vc: 1,
        ab_below: 30,
        noise: 0,
    },
    Level {
        time_ms: 10_000,
        playouts: 0,
        vc: 1,
        ab_below: 30,
        noise: 0,
    },
];

/// The `hex` engine's options as given (`INFO.options` lists them); `None`: not given (the
/// level's preset or the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HexEngineOptions {
    level: Option<Whole<1, { LEVELS.len() as u64 }>>,
    noise: Option<Whole<0, 100>>,
    time_ms: Option<Whole<1, { u64::MAX }>>,
    playouts: Option<Whole<0, { u64::MAX }>>,
    ab_below: Option<Whole<0, { CELLS as u64 + 1 }>>,
    tree_mb: Option<Whole<1, MAX_TREE_MB>>,
    vc: Option<Whole<0, 2>>,
    vc_visits: Option<Whole<0, { u32::MAX as u64 }>>,
    pattern_bias: Option<Whole<0, 10_000>>,
    pattern_prior: Option<Whole<0, 100>>,
    pattern_playouts: Option<Whole<0, 1_000_000>>,
    threads: Option<Whole<1, MAX_THREADS>>,
}

/// Engine settings from the engine options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settings {
    /// Per cent of moves played on a random empty cell.
    noise: u8,
    time_ms: u64,
    playouts: u64,
    ab_below: usize,
    /// The UCT trees' cap in nodes, from `tree_mb`: the trees together never hold or reserve
    /// more (each of the `threads` workers gets an equal share).
    tree_nodes: usize,
    /// Threads (and trees) of the UCT stage.
    threads: usize,
    /// Virtual connections: 0 off, 1 before each move, 2 also at the root's children.
    vc: u8,
    /// With `vc` 2, the visits at which a deeper tree node gets the same check (0: never).
    vc_visits: u32,
    /// The UCT tree's pattern bias, in hundredths (0: off).
    pattern_bias: u32,
    /// The patterns' weight in the starting values of moves below the root, in hundredths
    /// (0: off).
    pattern_prior: u32,
    /// Pattern-weighted playouts: the cap on a cell's weight, in hundredths (0: off).
    pattern_playouts: u32,
}

impl Settings {
    fn from_options(options: &serde_json::Value) -> Result<Settings, EngineError> {
        let given = options::parse::<HexEngineOptions>(options)?;
        let level = given.level.map_or(LEVELS.len(), |l| l.get() as usize);
        let Some(&preset) = LEVELS.get(level.saturating_sub(1)) else {
            return Err(EngineError::BadOption {
                name: "level".into(),
                why: format!("no level {level}"),
            });
        };
        let time_ms = given.time_ms.map_or(preset.time_ms, Whole::get);
        let ab_below = given.ab_below.map_or(preset.ab_below as u64, Whole::get);
        let tree_mb = given.tree_mb.map_or(DEFAULT_TREE_MB, Whole::get);
        let threads = given.threads.map_or(1, Whole::get);
        let vc = given.vc.map_or(preset.vc, |v| v.get() as u8);
        let vc_visits = given.vc_visits.map_or(0, |v| v.get() as u32);
        // The deeper checks are part of `vc` 2: refused rather than silently ignored.
        if vc_visits > 0 && vc < 2 {
            return Err(EngineError::BadOption {
                name: "vc_visits".into(),
                why: format!("needs vc 2 (vc is {vc})"),
            });
        }
        Ok(Settings {
            noise: given.noise.map_or(preset.noise, |n| n.get() as u8),
            time_ms,
            playouts: given.playouts.map_or(preset.playouts, Whole::get),
            ab_below: ab_below as usize,
            tree_nodes: tree_nodes_for(tree_mb),
            threads: threads as usize,
            vc,
            vc_visits,
            pattern_bias: given.pattern_bias.map_or(0, |w| w.get() as u32),
            pattern_prior: given.pattern_prior.map_or(0, |w| w.get() as u32),
            pattern_playouts: given.pattern_playouts.map_or(0, |w| w.get() as u32),
        })
    }
}

/// The built-in Hex engine.
pub struct HexEngine {
    rules: HexOptions,
    settings: Settings,
    circuit: Box<Circuit>,
    /// H-search tables for the virtual connections before each move (about 15 MiB, allocated
    /// at the first search that uses them and kept for the game).
    connections: Option<Box<Connections>>,
    /// The UCT searchers, one per thread (at least one), each with its own kept tree.
    workers: Vec<UctWorker>,
    /// Work done for the last move.
    pub last_stats: SearchStats,
    /// Draws the noisy moves of the low levels.
    noise: Noise,
}

impl std::fmt::Debug for HexEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HexEngine")
            .field("rules", &self.rules)
            .field("settings", &self.settings)
            .field("last_stats", &self.last_stats)
            .finish()
    }
}

/// Where the search must stop: the deadline or the abort flag.
struct Limits<'a> {
    /// `None` when the budget reaches past what `Instant` can represent.
    deadline: Option<Instant>,
    abort: &'a AtomicBool,
}

impl Limits<'_> {
    fn reached(&self) -> bool {
        self.abort.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

fn colour_of(side: Side) -> usize {
    match side {
        Side::First => 0,
        Side::Second => 1,
    }
}

fn cell_text(cell: u8) -> String {
    Move::Place(Point::from_index(cell as usize, N as u8)).to_string()
}

/// Whether Blue should swap Red's first stone on `cell`: when it is at least two cells away
/// from every border.
fn should_swap(cell: usize) -> bool {
    let (col, row) = (cell % N, cell / N);
    col.min(row).min(N - 1 - col).min(N - 1 - row) >= 2
}

/// Red's first move when the swap rule is on (A9, HexGui's a3), and without it (F6).
const OPENING_WITH_SWAP: u8 = cell_at(0, 8);
const OPENING: u8 = cell_at(5, 5);

impl HexEngine {
    pub fn new(
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<HexEngine, EngineError> {
        let settings = Settings::from_options(options)?;
        let rules = parse_options::<Hex>(rules)?;
        let threads = settings.threads.max(1);
        let worker_nodes = settings.tree_nodes / threads;
        Ok(HexEngine {
            rules,
            settings,
            circuit: Box::new(Circuit::new()),
            connections: None,
            workers: (0..threads as u64)
                .map(|k| {
                    let mut worker = UctWorker::new(seed, k, worker_nodes);
                    worker.check_children = settings.vc >= 2;
                    worker.check_visits = settings.vc_visits;
                    worker.pattern_bias = settings.pattern_bias as f32 / 100.0;
                    worker.pattern_prior = settings.pattern_prior as f32 / 100.0;
                    worker.playout_gamma_cap = settings.pattern_playouts as f32 / 100.0;
                    worker
                })
                .collect(),
            last_stats: SearchStats::default(),
            noise: Noise::new(u32::from(settings.noise), seed),
        })
    }

    fn replay(&self, moves: &[String]) -> Result<Hex, EngineError> {
        let mut position = Hex::start(&self.rules);
        for text in moves {
            let mv = Hex::parse_move(text).map_err(PlayError::from)?;
            position.play(&mv).map_err(|e| PlayError::Illegal {
                text: text.clone(),
                why: e.to_string(),
            })?;
        }
        Ok(position)
    }

    /// Both circuits of `cells`: (R_red, R_blue), and with `current` each empty cell's summed
    /// current share in both circuits.
    fn assess(&mut self, cells: &Cells, current: Option<&mut [f64; CELLS]>) -> [f64; 2] {
        match current {
            None => [
                self.circuit.resistance(cells, 0, None),
                self.circuit.resistance(cells, 1, None),
            ],
            Some(total) => {
                let mut blue = [0.0; CELLS];
                let r_red = self.circuit.resistance(cells, 0, Some(total));
                let r_blue = self.circuit.resistance(cells, 1, Some(&mut blue));
                total.iter_mut().zip(blue).for_each(|(t, b)| *t += b);
                [r_red, r_blue]
            }
        }
    }

    /// Chooses a cell for `mover` on `cells` (not full, game not over) after `last`.
    fn search(&mut self, cells: &Cells, mover: usize, last: u8, limits: &Limits<'_>) -> u8 {
        self.last_stats = SearchStats::default();
        if let Some(&win) = winning_cells(cells, mover).first() {
            return win;
        }
        if let Some(&block) = winning_cells(cells, 1 - mover).first() {
            return block;
        }
        // Virtual connections: a semi connection between our edges wins by its key; the
        // opponent's semi connections leave only their carriers' intersection worth playing.
        let allowed = if self.settings.vc > 0 {
            let vc = self
                .connections
                .get_or_insert_with(|| Box::new(Connections::new()));
            vc.search(cells, mover);
            if let Some((_, key)) = vc.edge_semis().next() {
                self.last_stats.stage = Stage::Connection;
                return key;
            }
            if vc.won() && vc.edge_fulls().is_empty() {
                // Joined through the cells the fill-in gave us: claim one (an intrusion into
                // a captured pair is answered next move, by the key H-search then finds).
                if let Some(c) = (0..CELLS).find(|&c| holds(vc.filled(), c)) {
                    self.last_stats.stage = Stage::Connection;
                    return c as u8;
                }
            }
            match vc.edge_fulls().iter().min_by_key(|c| c.count_ones()) {
                // Already joined against any defence: any move keeps that, so play inside the
                // smallest carrier (the next move answers an intrusion by a key).
                Some(&carrier) => carrier,
                None => {
                    vc.search(cells, 1 - mover);
                    vc.must_play().unwrap_or(!0)
                }
            }
        } else {
            !0
        };
        // Empty cells worth playing (all of them when the region holds none).
        let empties: CellSet = (0..CELLS)
            .filter(|&c| cells[c] == EMPTY)
            .fold(0, |set, c| set | 1 << c);
        let allowed = match allowed & empties {
            0 => empties,
            region => region,
        };
        // Dead, captured and vulnerable cells are worth no more than a pass: left out while
        // anything else is left.
        let allowed = match allowed & !inferior_cells(cells, mover) {
            0 => allowed,
            region => region,
        };
        self.last_stats.must_play = if allowed == empties {
            0
        } else {
            allowed.count_ones() as usize
        };
        let mut score = [0.0; CELLS];
        self.assess(cells, Some(&mut score));
        let reply = bridge_reply(cells, mover, last).or_else(|| template_reply(cells, mover, last));
        let reply = reply.filter(|&c| holds(allowed, c as usize));
        let best_score = (0..CELLS)
            .filter(|&c| holds(allowed, c))
            .map(|c| score[c])
            .fold(0.0, f64::max);
        let mut candidates: Vec<u8> = (0..CELLS as u8)
            .filter(|&c| {
                holds(allowed, c as usize)
                    && (score[c as usize] >= CANDIDATE_SHARE * best_score || Some(c) == reply)
            })
            .collect();
        candidates.sort_by(|&a, &b| {
            let key = |c: u8| (Some(c) == reply, score[c as usize]);
            key(b)
                .partial_cmp(&key(a))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        if candidates.is_empty() {
            candidates = (0..CELLS as u8)
                .filter(|&c| holds(allowed, c as usize))
                .collect();
        }
        self.last_stats.candidates = candidates.len();
        if candidates.len() < self.settings.ab_below {
            self.last_stats.stage = Stage::AlphaBeta;
            self.alpha_beta_root(cells, mover, candidates, limits)
        } else {
            self.last_stats.stage = Stage::Uct;
            let root = RootKnowledge {
                score: &score,
                best_score,
                reply,
                allowed,
            };
            self.uct(cells, mover, &root, limits)
        }
    }
}

/// The engine's board of a position: each cell empty or a stone of its colour.
fn board_of_position(position: &Hex) -> Cells {
    let mut cells: Cells = [EMPTY; CELLS];
    for (c, cell) in cells.iter_mut().enumerate() {
        if let Some(side) = position.stone_at(Point::from_index(c, N as u8)) {
            *cell = stone(colour_of(side));
        }
    }
    cells
}

impl Engine for HexEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let started = Instant::now();
        let position = self.replay(request.moves)?;
        if position.outcome().is_some() {
            return Err(EngineError::NoMove);
        }
        self.last_stats = SearchStats::default();
        let mover = colour_of(position.turn());
        let cells = board_of_position(&position);
        let stones: Vec<usize> = (0..CELLS).filter(|&c| cells[c] != EMPTY).collect();
        if stones.is_empty() {
            let opening = if self.rules.swap {
                OPENING_WITH_SWAP
            } else {
                OPENING
            };
            return Ok(cell_text(opening));
        }
        if let [red] = stones[..] {
            if position.is_legal(&Move::Swap) && should_swap(red) {
                return Ok(Move::Swap.to_string());
            }
        }
        let last = match request.moves.last().map(|t| Hex::parse_move(t)) {
            Some(Ok(Move::Place(p))) => p.index(N as u8) as u8,
            _ => NO,
        };
        let empties = CELLS - stones.len();
        let moves_left = (empties as u64 / 2).max(8);
        let budget = request
            .clock
            .budget(moves_left)
            .min(Duration::from_millis(self.settings.time_ms));
        let limits = Limits {
            deadline: started.checked_add(budget),
            abort: request.abort,
        };
        // The low levels' noise: some moves on a random empty cell instead of the search's.
        let noisy = if self.noise.random_move() {
            let empties: Vec<u8> = (0..CELLS as u8)
                .filter(|&c| cells[c as usize] == EMPTY)
                .collect();
            empties.get(self.noise.pick(empties.len())).copied()
        } else {
            None
        };
        let mut cell = match noisy {
            Some(cell) => cell,
            None => self.search(&cells, mover, last, &limits),
        };
        if cell as usize >= CELLS || cells[cell as usize] != EMPTY {
            // Never happens by construction; any empty cell beats an illegal move.
            cell = (0..CELLS as u8)
                .find(|&c| cells[c as usize] == EMPTY)
                .ok_or(EngineError::NoMove)?;
        }
        Ok(cell_text(cell))
    }
}

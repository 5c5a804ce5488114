//! The Hex engine's move patterns: each empty cell's shape (its six neighbours, its six bridge
//! points, and where the last move stands), the weights ("gammas") trained for those shapes
//! from strong players' games by minorization-maximization, and the trainer itself.
//!
//! A shape is read from the mover's point of view, so Red and Blue share one table: a cell is
//! empty, the mover's, the opponent's, or off the board (an edge counts as a stone of the
//! colour it belongs to; beyond a corner it is neither). Blue reads the board transposed, which
//! turns its position into Red's; a shape and its half-turn share one weight.

use super::*;

/// Offsets of the twelve cells a shape reads: the six neighbours in ring order, then the six
/// bridge points (each between two consecutive neighbours), in the same order.
const SHAPE_OFFSETS: [(i32, i32); 12] = {
    let mut out = [(0, 0); 12];
    let mut k = 0;
    while k < 6 {
        let (a, b) = (RING_OFFSETS[k], RING_OFFSETS[(k + 1) % 6]);
        out[k] = a;
        out[6 + k] = (a.0 + b.0, a.1 + b.1);
        k += 1;
    }
    out
};

/// Codes a shape's cell takes.
const EMPTY_CODE: usize = 0;
const OWN_CODE: usize = 1;
const THEIRS_CODE: usize = 2;
const OFF_CODE: usize = 3;
/// Shape-table entries that are not cells: the mover's edge, the opponent's, neither.
const OWN_EDGE: u8 = 250;
const THEIR_EDGE: u8 = 251;
const OFF_BOARD: u8 = 252;

/// Keys of a six-cell half of a shape: four codes per cell.
pub(super) const HALF_KEYS: usize = 4096;
/// Where the last move stands from a cell: nowhere near (or no last move), a neighbour, a
/// bridge point.
pub(super) const LAST_RELATIONS: usize = 3;

/// For each mover and cell, the twelve cells its shape reads (or an edge code).
static SHAPE_CELLS: [[[u8; 12]; CELLS]; 2] = shape_table();

const fn shape_table() -> [[[u8; 12]; CELLS]; 2] {
    let mut out = [[[0u8; 12]; CELLS]; 2];
    let mut mover = 0;
    while mover < 2 {
        let mut c = 0;
        while c < CELLS {
            let (col, row) = ((c % N) as i32, (c / N) as i32);
            let mut k = 0;
            while k < 12 {
                // Blue reads the transposed offsets, which maps its shapes onto Red's.
                let (dc, dr) = if mover == 0 {
                    SHAPE_OFFSETS[k]
                } else {
                    (SHAPE_OFFSETS[k].1, SHAPE_OFFSETS[k].0)
                };
                let (x, y) = (col + dc, row + dr);
                let cell = cell_at(x, y);
                out[mover][c][k] = if cell != NO {
                    cell
                } else if is_own_edge(mover, x, y) {
                    OWN_EDGE
                } else if is_own_edge(1 - mover, x, y) {
                    THEIR_EDGE
                } else {
                    OFF_BOARD
                };
                k += 1;
            }
            c += 1;
        }
        mover += 1;
    }
    out
}

/// For each mover and cell x, the cells whose shapes read x and where: `(y, k)` when the
/// shape of y reads x as its cell number k (the first `count` entries).
struct Readers {
    at: [[[(u8, u8); 12]; CELLS]; 2],
    count: [[u8; CELLS]; 2],
}

static READERS: Readers = readers_table();

const fn readers_table() -> Readers {
    let mut out = [[[(0u8, 0u8); 12]; CELLS]; 2];
    let mut count = [[0u8; CELLS]; 2];
    let mut mover = 0;
    while mover < 2 {
        let mut y = 0;
        while y < CELLS {
            let mut k = 0;
            while k < 12 {
                let x = SHAPE_CELLS[mover][y][k] as usize;
                if x < CELLS {
                    out[mover][x][count[mover][x] as usize] = (y as u8, k as u8);
                    count[mover][x] += 1;
                }
                k += 1;
            }
            y += 1;
        }
        mover += 1;
    }
    Readers { at: out, count }
}

/// Every cell's shape key (the neighbours' key, then the bridge points' key above it; the last
/// move left out) for both movers, kept up to date stone by stone: for playouts.
#[derive(Clone)]
pub(super) struct ShapeKeys {
    keys: [[u32; CELLS]; 2],
}

impl ShapeKeys {
    pub(super) fn new(board: &Cells) -> ShapeKeys {
        let mut keys = [[0u32; CELLS]; 2];
        for (mover, keys) in keys.iter_mut().enumerate() {
            for (c, key) in keys.iter_mut().enumerate() {
                let shape = shape_of(board, c, mover, NO);
                *key = u32::from(shape.ring) | u32::from(shape.bridges) << 12;
            }
        }
        ShapeKeys { keys }
    }

    /// A stone of `colour` is put on the empty cell `cell`.
    pub(super) fn place(&mut self, cell: usize, colour: usize) {
        for mover in 0..2 {
            let code = if mover == colour {
                OWN_CODE
            } else {
                THEIRS_CODE
            } as u32;
            let count = READERS.count[mover][cell] as usize;
            for &(y, k) in &READERS.at[mover][cell][..count] {
                self.keys[mover][y as usize] |= code << (2 * k);
            }
        }
    }

    /// The key of `cell`'s shape for `mover`.
    pub(super) fn key(&self, mover: usize, cell: usize) -> u32 {
        self.keys[mover][cell]
    }
}

/// The cells whose shapes read `cell` (the same cells for both movers).
pub(super) fn shape_readers(cell: usize) -> impl Iterator<Item = usize> {
    let count = READERS.count[0][cell] as usize;
    READERS.at[0][cell][..count]
        .iter()
        .map(|&(y, _)| y as usize)
}

/// One empty cell's shape for the mover: the neighbours' key, the bridge points' key and the
/// last move's relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    pub(super) ring: u16,
    pub(super) bridges: u16,
    pub(super) last: u8,
}

/// The shape of `cell` for `mover` on `board`, the last move being `last` (`NO`: none).
pub(super) fn shape_of(board: &Cells, cell: usize, mover: usize, last: u8) -> Shape {
    let cells = &SHAPE_CELLS[mover][cell];
    let own = stone(mover);
    let mut keys = [0u16; 2];
    let mut relation = 0;
    for (k, &at) in cells.iter().enumerate() {
        let code = match at {
            OWN_EDGE => OWN_CODE,
            THEIR_EDGE => THEIRS_CODE,
            OFF_BOARD => OFF_CODE,
            _ => {
                if at == last {
                    relation = if k < 6 { 1 } else { 2 };
                }
                match board[at as usize] {
                    EMPTY => EMPTY_CODE,
                    s if s == own => OWN_CODE,
                    _ => THEIRS_CODE,
                }
            }
        };
        keys[k / 6] |= (code as u16) << (2 * (k % 6));
    }
    Shape {
        ring: keys[0],
        bridges: keys[1],
        last: relation,
    }
}

/// The key of a half shape turned half a turn (each cell's code moves three places round).
pub(super) const fn half_turn(key: u16) -> u16 {
    ((key >> 6) | (key << 6)) & 0xFFF
}

/// The one key a shape and its half-turn share.
pub(super) fn canonical(key: u16) -> u16 {
    key.min(half_turn(key))
}

/// Trained weights: one per neighbours' key and per bridge points' key (the same for a key and
/// its half turn), one per last-move relation; a cell's weight is their product.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternWeights {
    ring: Vec<f32>,
    bridges: Vec<f32>,
    last: [f32; LAST_RELATIONS],
}

/// A line of a weights file that cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("weights line {line}: {why}")]
pub struct ParsePatternWeightsError {
    line: usize,
    why: String,
}

impl Default for PatternWeights {
    fn default() -> Self {
        PatternWeights {
            ring: vec![1.0; HALF_KEYS],
            bridges: vec![1.0; HALF_KEYS],
            last: [1.0; LAST_RELATIONS],
        }
    }
}

impl PatternWeights {
    /// The weight of a cell with shape `shape`.
    pub(super) fn gamma(&self, shape: Shape) -> f32 {
        self.ring[shape.ring as usize]
            * self.bridges[shape.bridges as usize]
            * self.last[shape.last as usize]
    }

    /// A playout's weight for a cell whose [`ShapeKeys`] key is `key`: its shape's weight
    /// (the last move left out), capped at `cap`.
    pub(super) fn playout_gamma(&self, key: u32, cap: f32) -> f32 {
        (self.ring[(key & 0xFFF) as usize] * self.bridges[(key >> 12) as usize]).min(cap)
    }

    fn set(&mut self, table: usize, key: usize, gamma: f32) {
        match table {
            0 | 1 => {
                let half = if table == 0 {
                    &mut self.ring
                } else {
                    &mut self.bridges
                };
                half[key] = gamma;
                half[half_turn(key as u16) as usize] = gamma;
            }
            _ => self.last[key] = gamma,
        }
    }

    /// Reads weights written by [`PatternWeights::write`]: lines `ring KEY GAMMA`,
    /// `bridges KEY GAMMA` or `last RELATION GAMMA`; `#` starts a comment. Keys not listed
    /// weigh 1.
    pub fn parse(text: &str) -> Result<PatternWeights, ParsePatternWeightsError> {
        let mut weights = PatternWeights::default();
        for (n, line) in text.lines().enumerate() {
            let fail = |why: &str| ParsePatternWeightsError {
                line: n + 1,
                why: why.to_string(),
            };
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let [table, key, gamma] = words[..] else {
                return Err(fail("expected: TABLE KEY GAMMA"));
            };
            let (table, keys) = match table {
                "ring" => (0, HALF_KEYS),
                "bridges" => (1, HALF_KEYS),
                "last" => (2, LAST_RELATIONS),
                _ => return Err(fail("the table is ring, bridges or last")),
            };
            let key: usize = key.parse().map_err(|_| fail("the key is not a number"))?;
            if key >= keys {
                return Err(fail("the key is out of range"));
            }
            let gamma: f32 = gamma
                .parse()
                .map_err(|_| fail("the weight is not a number"))?;
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(fail("the weight must be above 0"));
            }
            weights.set(table, key, gamma);
        }
        Ok(weights)
    }

    /// Writes every weight that is not 1, one line each, canonical keys only.
    pub fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for (name, half) in [("ring", &self.ring), ("bridges", &self.bridges)] {
            for (key, &gamma) in half.iter().enumerate() {
                if canonical(key as u16) as usize == key && gamma != 1.0 {
                    writeln!(out, "{name} {key} {gamma:.5}")?;
                }
            }
        }
        for (relation, gamma) in self.last.iter().enumerate() {
            writeln!(out, "last {relation} {gamma:.5}")?;
        }
        Ok(())
    }
}

/// The weights shipped with the engine, trained as docs/engines.md says.
pub(super) fn shipped_weights() -> &'static PatternWeights {
    static WEIGHTS: std::sync::LazyLock<PatternWeights> = std::sync::LazyLock::new(|| {
        // A unit test reads the file: it cannot fail here unless that test fails too.
        PatternWeights::parse(include_str!("patterns.txt")).unwrap_or_default()
    });
    &WEIGHTS
}

/// One position of a training game: every empty cell's features (canonical ring key, bridge
/// key offset by [`HALF_KEYS`], relation offset by twice that) and which cell was played.
struct Competition {
    features: Vec<[u32; 3]>,
    chosen: usize,
}

/// Training positions read from game records, for [`train`].
#[derive(Default)]
pub struct TrainingSet {
    positions: Vec<Competition>,
}

impl TrainingSet {
    /// Adds the positions of one game (`moves` as records write them, no swap) at which
    /// `learn(ply)` holds: ply 0 is the first move. Stops at the first move that is not a
    /// cell of an empty board point; returns the positions added.
    pub fn add_game(&mut self, moves: &[String], learn: &dyn Fn(usize) -> bool) -> usize {
        let mut board: Cells = [EMPTY; CELLS];
        let mut last = NO;
        let mut added = 0;
        for (ply, text) in moves.iter().enumerate() {
            let Ok(Move::Place(point)) = Hex::parse_move(text) else {
                break;
            };
            let cell = point.index(N as u8);
            if cell >= CELLS || board[cell] != EMPTY {
                break;
            }
            // The rules say who moves at each ply (counted from 1 there).
            let mover = colour_of(GameId::Hex.mover_of_ply(ply + 1));
            if learn(ply) {
                let mut features = Vec::with_capacity(CELLS);
                let mut chosen = 0;
                for c in (0..CELLS).filter(|&c| board[c] == EMPTY) {
                    if c == cell {
                        chosen = features.len();
                    }
                    let shape = shape_of(&board, c, mover, last);
                    features.push([
                        u32::from(canonical(shape.ring)),
                        HALF_KEYS as u32 + u32::from(canonical(shape.bridges)),
                        2 * HALF_KEYS as u32 + u32::from(shape.last),
                    ]);
                }
                self.positions.push(Competition { features, chosen });
                added += 1;
            }
            board[cell] = stone(mover);
            last = cell as u8;
        }
        added
    }

    /// How often the played cell is the highest-weighted one, and how often it is among the
    /// five highest, as fractions of the positions (ties counted against the played cell).
    pub fn accuracy(&self, weights: &PatternWeights) -> (f64, f64) {
        let strength = |f: &[u32; 3]| {
            let [ring, bridges, last] = f.map(|k| k as usize);
            weights.ring[ring]
                * weights.bridges[bridges - HALF_KEYS]
                * weights.last[last - 2 * HALF_KEYS]
        };
        let (mut first, mut five) = (0, 0);
        for p in &self.positions {
            let played = strength(&p.features[p.chosen]);
            let above = p.features.iter().filter(|f| strength(f) >= played).count() - 1;
            first += usize::from(above == 0);
            five += usize::from(above < 5);
        }
        let n = self.positions.len().max(1) as f64;
        (first as f64 / n, five as f64 / n)
    }

    pub fn len(&self) -> usize {
        self.positions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }
}

/// Fits the weights to the chosen moves by minorization-maximization (Coulom's generalized
/// Bradley-Terry model: a cell's strength is the product of its features' weights), each
/// feature given one virtual win and one virtual loss against a weight of 1. Reports each
/// iteration's mean log-likelihood per position to `progress`.
pub fn train(
    set: &TrainingSet,
    iterations: usize,
    progress: &mut dyn FnMut(usize, f64),
) -> PatternWeights {
    let features = 2 * HALF_KEYS + LAST_RELATIONS;
    let mut gamma = vec![1.0f64; features];
    let mut wins = vec![0.0f64; features];
    for p in &set.positions {
        for &f in &p.features[p.chosen] {
            wins[f as usize] += 1.0;
        }
    }
    // Each feature group in turn: its weights are updated with the others held.
    let groups = [
        0..HALF_KEYS,
        HALF_KEYS..2 * HALF_KEYS,
        2 * HALF_KEYS..features,
    ];
    for iteration in 0..iterations {
        for (g, group) in groups.iter().enumerate() {
            let mut denominator = vec![0.0f64; features];
            let mut log_likelihood = 0.0;
            for p in &set.positions {
                let strength = |f: &[u32; 3]| f.iter().map(|&k| gamma[k as usize]).product::<f64>();
                let total: f64 = p.features.iter().map(strength).sum();
                log_likelihood += (strength(&p.features[p.chosen]) / total).ln();
                for f in &p.features {
                    // The team's strength without this group's member, over the total.
                    let k = f[g] as usize;
                    denominator[k] += strength(f) / gamma[k] / total;
                }
            }
            for k in group.clone() {
                gamma[k] = (wins[k] + 1.0) / (denominator[k] + 2.0 / (gamma[k] + 1.0));
            }
            if g == 0 {
                progress(
                    iteration,
                    log_likelihood / set.positions.len().max(1) as f64,
                );
            }
        }
    }
    let mut weights = PatternWeights::default();
    for (k, &g) in gamma.iter().enumerate() {
        // Features never seen keep weight 1 (their virtual games leave it there).
        if k < HALF_KEYS {
            if canonical(k as u16) as usize == k {
                weights.set(0, k, g as f32);
            }
        } else if k < 2 * HALF_KEYS {
            let key = k - HALF_KEYS;
            if canonical(key as u16) as usize == key {
                weights.set(1, key, g as f32);
            }
        } else {
            weights.set(2, k - 2 * HALF_KEYS, g as f32);
        }
    }
    weights
}

//! The `hex` engine: the resistance-circuit evaluation of the BistuHex2 paper (each side's board
//! as a circuit solved with Kirchhoff's laws), its staged search (alpha-beta over the resistance
//! evaluation when few candidate cells carry current, UCT otherwise), and what goes beyond the
//! paper: virtual links for bridges and edge templates in the circuit, RAVE, bridge- and
//! edge-template-saving playouts, answers to bridge / template II / ziggurat intrusions, forced
//! replies (win or block in one) and the swap decision.
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

use super::{check_option_names, Engine, EngineError, EngineInfo, EngineOption, SearchRequest};
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
            about: "alpha-beta is used when fewer candidate cells than this remain, UCT otherwise \
                    (0: always UCT, 122: always alpha-beta)",
        },
    ],
};

/// Board width.
const N: usize = 11;
/// Number of cells.
const CELLS: usize = N * N;
/// An empty cell; a stone of colour `c` is `c + 1`.
const EMPTY: u8 = 0;
/// No cell (off the board, or none found).
const NO: u8 = u8::MAX;
/// In a bridge-save triple: the colour's own edge stands in for a stone.
const EDGE: u8 = u8::MAX - 1;

/// The flat board the search works on.
type Cells = [u8; CELLS];

/// The stone value of colour `c` (0 = Red, 1 = Blue).
const fn stone(colour: usize) -> u8 {
    colour as u8 + 1
}

/// The six neighbour offsets (column, row) in ring order: consecutive entries are adjacent.
const RING_OFFSETS: [(i32, i32); 6] = [(1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1)];

const fn cell_at(col: i32, row: i32) -> u8 {
    if col >= 0 && col < N as i32 && row >= 0 && row < N as i32 {
        (row as usize * N + col as usize) as u8
    } else {
        NO
    }
}

/// Neighbours of every cell in ring order, `NO` off the board.
const fn ring_table() -> [[u8; 6]; CELLS] {
    let mut out = [[NO; 6]; CELLS];
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut k = 0;
        while k < 6 {
            out[c][k] = cell_at(col + RING_OFFSETS[k].0, row + RING_OFFSETS[k].1);
            k += 1;
        }
        c += 1;
    }
    out
}

static RING: [[u8; 6]; CELLS] = ring_table();

/// Number of adjacent cell pairs: 110 horizontal, 110 vertical, 100 diagonal.
const PAIR_COUNT: usize = 2 * N * (N - 1) + (N - 1) * (N - 1);

/// Every adjacent pair once.
const fn pair_table() -> [(u8, u8); PAIR_COUNT] {
    let mut out = [(0u8, 0u8); PAIR_COUNT];
    let mut k = 0;
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut d = 0;
        while d < 3 {
            let (dc, dr) = RING_OFFSETS[d];
            let other = cell_at(col + dc, row + dr);
            if other != NO {
                out[k] = (c as u8, other);
                k += 1;
            }
            d += 1;
        }
        c += 1;
    }
    out
}

static PAIRS: [(u8, u8); PAIR_COUNT] = pair_table();

/// Every bridge once, as `[a, b, carrier, carrier]` with a < b; unused entries are all `NO`.
const fn bridge_table() -> [[u8; 4]; 3 * CELLS] {
    let mut out = [[NO; 4]; 3 * CELLS];
    let mut k = 0;
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut i = 0;
        while i < 6 {
            let (o1, o2) = (RING_OFFSETS[i], RING_OFFSETS[(i + 1) % 6]);
            let b = cell_at(col + o1.0 + o2.0, row + o1.1 + o2.1);
            let x = cell_at(col + o1.0, row + o1.1);
            let y = cell_at(col + o2.0, row + o2.1);
            if b != NO && x != NO && y != NO && b as usize > c && k < 3 * CELLS {
                out[k] = [c as u8, b, x, y];
                k += 1;
            }
            i += 1;
        }
        c += 1;
    }
    out
}

static BRIDGES: [[u8; 4]; 3 * CELLS] = bridge_table();

/// Whether off-board (col, row) is part of `colour`'s own edge (Red: below row 1 or above row
/// 11; Blue: left of column A or right of column K).
const fn is_own_edge(colour: usize, col: i32, row: i32) -> bool {
    let n = N as i32;
    if colour == 0 {
        (row < 0 || row >= n) && col >= 0 && col < n
    } else {
        (col < 0 || col >= n) && row >= 0 && row < n
    }
}

/// A bridge end at (col, row): the cell, `EDGE` for `colour`'s own edge, else `NO`.
const fn bridge_end(colour: usize, col: i32, row: i32) -> u8 {
    let c = cell_at(col, row);
    if c != NO {
        c
    } else if is_own_edge(colour, col, row) {
        EDGE
    } else {
        NO
    }
}

/// For each colour and each cell x an opponent may take: up to six `[a, y, b]` where stones
/// (or the own edge, `EDGE`) on a and b make a bridge (or edge template II) whose carrier is
/// {x, y}. When the opponent takes x and y is empty, y restores the connection.
const fn save_table() -> [[[[u8; 3]; 6]; CELLS]; 2] {
    let mut out = [[[[NO; 3]; 6]; CELLS]; 2];
    let mut colour = 0;
    while colour < 2 {
        let mut x = 0;
        while x < CELLS {
            let (col, row) = ((x % N) as i32, (x / N) as i32);
            let mut i = 0;
            while i < 6 {
                let oa = RING_OFFSETS[i];
                let oy = RING_OFFSETS[(i + 1) % 6];
                let ob = RING_OFFSETS[(i + 2) % 6];
                let y = cell_at(col + oy.0, row + oy.1);
                let a = bridge_end(colour, col + oa.0, row + oa.1);
                let b = bridge_end(colour, col + ob.0, row + ob.1);
                if y != NO && a != NO && b != NO && !(a == EDGE && b == EDGE) {
                    out[colour][x][i] = [a, y, b];
                }
                i += 1;
            }
            x += 1;
        }
        colour += 1;
    }
    out
}

static SAVES: [[[[u8; 3]; 6]; CELLS]; 2] = save_table();

/// The reply that restores a bridge (or edge template II) of `colour` after the opponent took
/// cell `taken`, if there is one.
fn bridge_reply(cells: &Cells, colour: usize, taken: u8) -> Option<u8> {
    if taken as usize >= CELLS {
        return None;
    }
    let own = stone(colour);
    let holds = |c: u8| c == EDGE || (c != NO && cells[c as usize] == own);
    SAVES[colour][taken as usize]
        .iter()
        .find(|&&[a, y, b]| y != NO && holds(a) && holds(b) && cells[y as usize] == EMPTY)
        .map(|t| t[1])
}

/// The two mirror images of edge template IIIa (the ziggurat) for a stone on the third row,
/// as (column, row) offsets from the stone with the edge below: one cell beside the stone, three
/// on the second row, then the four on the first row (last, so `carrier[4..]` touch the edge).
const ZIGGURATS: [[(i32, i32); 8]; 2] = [
    [
        (1, 0),
        (-1, -1),
        (0, -1),
        (1, -1),
        (-2, -2),
        (-1, -2),
        (0, -2),
        (1, -2),
    ],
    [
        (-1, 0),
        (-2, -1),
        (-1, -1),
        (0, -1),
        (-3, -2),
        (-2, -2),
        (-1, -2),
        (0, -2),
    ],
];

/// The board cell at local (x, y) of `colour`'s edge number `edge` (0: its first edge, 1: its
/// second), where y counts rows away from that edge (0 touches it). Red's first edge is row 1,
/// Blue's is column A; the other three views are the symmetries of the board that keep
/// adjacency (half-turn, transposition).
fn edge_view(colour: usize, edge: usize, x: i32, y: i32) -> u8 {
    let last = N as i32 - 1;
    match (colour, edge) {
        (0, 0) => cell_at(x, y),
        (0, _) => cell_at(last - x, last - y),
        (_, 0) => cell_at(y, x),
        _ => cell_at(last - y, last - x),
    }
}

/// Whether the group of `stone` reaches a cell of `carrier[4..]` through own stones inside
/// `carrier`.
fn reaches_edge_row(cells: &Cells, stone_cell: u8, carrier: &[u8; 8]) -> bool {
    let own = cells[stone_cell as usize];
    let mut seen = [false; 8];
    let mut stack = [stone_cell; 9];
    let mut top = 1;
    while top > 0 {
        top -= 1;
        let c = stack[top];
        for (k, &d) in carrier.iter().enumerate() {
            if !seen[k] && cells[d as usize] == own && RING[c as usize].contains(&d) {
                if k >= 4 {
                    return true;
                }
                seen[k] = true;
                stack[top] = d;
                top += 1;
            }
        }
    }
    false
}

/// Whether the stone on `stone_cell` stays joined to the edge inside `carrier` when the
/// opponent moves first there and its owner answers every move (a tiny exhaustive search).
fn holds_to_edge(cells: &mut Cells, stone_cell: u8, carrier: &[u8; 8]) -> bool {
    if reaches_edge_row(cells, stone_cell, carrier) {
        return true;
    }
    let own = cells[stone_cell as usize];
    let opponent = 3 - own;
    let mut any_empty = false;
    for &z in carrier {
        if cells[z as usize] != EMPTY {
            continue;
        }
        any_empty = true;
        cells[z as usize] = opponent;
        let answered = carrier.iter().any(|&w| {
            if cells[w as usize] != EMPTY {
                return false;
            }
            cells[w as usize] = own;
            let ok = holds_to_edge(cells, stone_cell, carrier);
            cells[w as usize] = EMPTY;
            ok
        });
        cells[z as usize] = EMPTY;
        if !answered {
            return false;
        }
    }
    any_empty
}

/// The reply that keeps a third-row stone of `colour` joined to its edge by template IIIa after
/// the opponent took `taken` inside the template's otherwise empty carrier.
fn template_reply(cells: &Cells, colour: usize, taken: u8) -> Option<u8> {
    if taken as usize >= CELLS {
        return None;
    }
    let own = stone(colour);
    let mut board = *cells;
    for edge in 0..2 {
        for x in 0..N as i32 {
            let s = edge_view(colour, edge, x, 2);
            if s == NO || cells[s as usize] != own {
                continue;
            }
            for shape in &ZIGGURATS {
                let mut carrier = [NO; 8];
                for (k, &(dx, dy)) in shape.iter().enumerate() {
                    carrier[k] = edge_view(colour, edge, x + dx, 2 + dy);
                }
                let intact = carrier
                    .iter()
                    .all(|&c| c != NO && (c == taken || cells[c as usize] == EMPTY));
                if !intact || !carrier.contains(&taken) {
                    continue;
                }
                for &w in &carrier {
                    if w == taken {
                        continue;
                    }
                    board[w as usize] = own;
                    let holds = holds_to_edge(&mut board, s, &carrier);
                    board[w as usize] = EMPTY;
                    if holds {
                        return Some(w);
                    }
                }
            }
        }
    }
    None
}

fn on_source(colour: usize, cell: usize) -> bool {
    if colour == 0 {
        cell / N == 0
    } else {
        cell.is_multiple_of(N)
    }
}

fn on_sink(colour: usize, cell: usize) -> bool {
    if colour == 0 {
        cell / N == N - 1
    } else {
        cell % N == N - 1
    }
}

/// Whether `colour` joins its two edges on `cells` (a flood fill from its first edge).
fn connected(cells: &Cells, colour: usize) -> bool {
    let own = stone(colour);
    let mut seen = [false; CELLS];
    let mut stack = [0u8; CELLS];
    let mut top = 0;
    for k in 0..N {
        let c = if colour == 0 { k } else { k * N };
        if cells[c] == own {
            seen[c] = true;
            stack[top] = c as u8;
            top += 1;
        }
    }
    while top > 0 {
        top -= 1;
        let c = stack[top] as usize;
        if on_sink(colour, c) {
            return true;
        }
        for &nb in &RING[c] {
            if nb != NO && !seen[nb as usize] && cells[nb as usize] == own {
                seen[nb as usize] = true;
                stack[top] = nb;
                top += 1;
            }
        }
    }
    false
}

/// Empty cells that would connect `colour` at once.
fn winning_cells(cells: &Cells, colour: usize) -> Vec<u8> {
    let mut board = *cells;
    let mut out = Vec::new();
    for c in 0..CELLS {
        if board[c] == EMPTY {
            board[c] = stone(colour);
            if connected(&board, colour) {
                out.push(c as u8);
            }
            board[c] = EMPTY;
        }
    }
    out
}

/// Circuit nodes: the cells (a group of own stones is one node, named by one of its cells),
/// then the two terminals.
const NODES: usize = CELLS + 2;
const SOURCE: u8 = CELLS as u8;
const SINK: u8 = CELLS as u8 + 1;
const BLOCKED: u8 = u8::MAX;
const MAX_EDGES: usize = PAIR_COUNT + 2 * N + 3 * CELLS + 2 * CELLS;
/// Conductance added between the two ends of an intact bridge, and between a second-row stone
/// and its edge through an intact edge template II (virtual connections, beyond the paper).
const VIRTUAL_LINK: f64 = 3.0;
/// Resistance reported when no current flows (the opponent has cut every path).
pub const NO_PATH: f64 = 1e6;
/// Conjugate-gradient stops at this relative squared residual or this many iterations.
const CG_TOLERANCE: f64 = 1e-16;
const CG_MAX_ITERATIONS: usize = 400;

/// A reusable solver for one side's resistance circuit: fixed-size scratch arrays, nothing
/// allocated per evaluation.
///
/// For colour c: an empty cell has resistance 1, a c stone 0 (a whole group is one node), an
/// enemy stone is open; two adjacent cells are joined by r(c1) + r(c2); c's two edges are the
/// terminals (an edge cell joins its edge through its own resistance). Kirchhoff's current law
/// at every node, with the source at 1 V and the sink at 0 V, is the Laplacian system solved
/// here by Jacobi-preconditioned conjugate gradients; the equivalent resistance is 1 / current.
#[derive(Clone)]
struct Circuit {
    node: [u8; CELLS],
    queue: [u8; CELLS],
    edge_a: [u8; MAX_EDGES],
    edge_b: [u8; MAX_EDGES],
    edge_g: [f64; MAX_EDGES],
    edges: usize,
    diag: [f64; NODES],
    rhs: [f64; NODES],
    x: [f64; NODES],
    r: [f64; NODES],
    z: [f64; NODES],
    p: [f64; NODES],
    ap: [f64; NODES],
    /// Conjugate-gradient iterations of the last solve (for the tests and figures).
    last_iterations: usize,
    /// Whether intact bridges and edge templates II add `VIRTUAL_LINK` (off: the paper's
    /// plain circuit).
    virtual_links: bool,
}

impl Circuit {
    fn new() -> Circuit {
        Circuit {
            node: [0; CELLS],
            queue: [0; CELLS],
            edge_a: [0; MAX_EDGES],
            edge_b: [0; MAX_EDGES],
            edge_g: [0.0; MAX_EDGES],
            edges: 0,
            diag: [0.0; NODES],
            rhs: [0.0; NODES],
            x: [0.0; NODES],
            r: [0.0; NODES],
            z: [0.0; NODES],
            p: [0.0; NODES],
            ap: [0.0; NODES],
            last_iterations: 0,
            virtual_links: true,
        }
    }

    fn push_edge(&mut self, a: u8, b: u8, g: f64) {
        if self.edges < MAX_EDGES {
            self.edge_a[self.edges] = a;
            self.edge_b[self.edges] = b;
            self.edge_g[self.edges] = g;
            self.edges += 1;
        }
    }

    /// Extra conductance for each intact bridge between two different nodes, and for each
    /// second-row stone whose two edge cells are empty (edge template II).
    fn add_virtual_links(&mut self, cells: &Cells, colour: usize) {
        let own = stone(colour);
        for &[a, b, x, y] in BRIDGES.iter() {
            if a == NO {
                break;
            }
            if cells[a as usize] == own
                && cells[b as usize] == own
                && cells[x as usize] == EMPTY
                && cells[y as usize] == EMPTY
            {
                let (na, nb) = (self.node[a as usize], self.node[b as usize]);
                if na != nb {
                    self.push_edge(na, nb, VIRTUAL_LINK);
                }
            }
        }
        for c in 0..CELLS {
            if cells[c] != own {
                continue;
            }
            let n = self.node[c];
            for (edge_test, terminal) in [
                (on_source as fn(usize, usize) -> bool, SOURCE),
                (on_sink, SINK),
            ] {
                if n == terminal || edge_test(colour, c) {
                    continue;
                }
                let free = RING[c]
                    .iter()
                    .filter(|&&nb| {
                        nb != NO && edge_test(colour, nb as usize) && cells[nb as usize] == EMPTY
                    })
                    .count();
                if free == 2 {
                    self.push_edge(n, terminal, VIRTUAL_LINK);
                }
            }
        }
    }

    fn voltage(&self, node: u8) -> f64 {
        match node {
            SOURCE => 1.0,
            SINK => 0.0,
            n => self.x[n as usize],
        }
    }

    /// The equivalent resistance between `colour`'s edges: 0 when it is connected, `NO_PATH`
    /// when it is cut off. With `current`, also each empty cell's share of the total current
    /// (0..=1), the paper's measure of how much a cell matters.
    fn resistance(
        &mut self,
        cells: &Cells,
        colour: usize,
        current: Option<&mut [f64; CELLS]>,
    ) -> f64 {
        const UNSET: u8 = u8::MAX - 1;
        const QUEUED: u8 = u8::MAX - 2;
        let own = stone(colour);
        for c in 0..CELLS {
            self.node[c] = match cells[c] {
                EMPTY => c as u8,
                v if v == own => UNSET,
                _ => BLOCKED,
            };
        }
        // Each own group becomes one node, or part of a terminal when it touches an edge.
        for start in 0..CELLS {
            if self.node[start] != UNSET {
                continue;
            }
            let (mut head, mut tail) = (0, 1);
            self.queue[0] = start as u8;
            self.node[start] = QUEUED;
            let (mut source, mut sink) = (false, false);
            while head < tail {
                let c = self.queue[head] as usize;
                head += 1;
                source |= on_source(colour, c);
                sink |= on_sink(colour, c);
                for &nb in &RING[c] {
                    if nb != NO && self.node[nb as usize] == UNSET {
                        self.node[nb as usize] = QUEUED;
                        self.queue[tail] = nb;
                        tail += 1;
                    }
                }
            }
            if source && sink {
                if let Some(current) = current {
                    current.fill(0.0);
                }
                self.last_iterations = 0;
                return 0.0;
            }
            let label = if source {
                SOURCE
            } else if sink {
                SINK
            } else {
                start as u8
            };
            for k in 0..tail {
                self.node[self.queue[k] as usize] = label;
            }
        }
        self.edges = 0;
        for &(a, b) in PAIRS.iter() {
            let (na, nb) = (self.node[a as usize], self.node[b as usize]);
            if na == BLOCKED || nb == BLOCKED || na == nb {
                continue;
            }
            // Two own cells that touch are one group, so one end at least is empty.
            let both_empty = cells[a as usize] == EMPTY && cells[b as usize] == EMPTY;
            self.push_edge(na, nb, if both_empty { 0.5 } else { 1.0 });
        }
        for c in 0..CELLS {
            if cells[c] == EMPTY {
                if on_source(colour, c) {
                    self.push_edge(c as u8, SOURCE, 1.0);
                }
                if on_sink(colour, c) {
                    self.push_edge(c as u8, SINK, 1.0);
                }
            }
        }
        if self.virtual_links {
            self.add_virtual_links(cells, colour);
        }
        self.diag.fill(0.0);
        self.rhs.fill(0.0);
        self.x.fill(0.0);
        for e in 0..self.edges {
            let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
            for (u, v) in [(a, b), (b, a)] {
                if (u as usize) < CELLS {
                    self.diag[u as usize] += g;
                    if v == SOURCE {
                        self.rhs[u as usize] += g;
                    }
                }
            }
        }
        self.conjugate_gradients();
        let mut total = 0.0;
        for e in 0..self.edges {
            let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
            if a == SOURCE {
                total += g * (1.0 - self.voltage(b));
            } else if b == SOURCE {
                total += g * (1.0 - self.voltage(a));
            }
        }
        if let Some(current) = current {
            current.fill(0.0);
            if total > 1e-12 {
                for e in 0..self.edges {
                    let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
                    let flow = g * (self.voltage(a) - self.voltage(b)).abs();
                    for u in [a, b] {
                        if (u as usize) < CELLS && cells[u as usize] == EMPTY {
                            current[u as usize] += flow;
                        }
                    }
                }
                let scale = 0.5 / total;
                current.iter_mut().for_each(|f| *f *= scale);
            }
        }
        if total > 1e-12 {
            1.0 / total
        } else {
            NO_PATH
        }
    }

    /// Solves diag·x − (off-diagonal conductances)·x = rhs over the cell nodes. Nodes in a part
    /// of the circuit that touches no terminal have rhs 0 and stay at 0, so the singular blocks
    /// of the Laplacian never enter the Krylov space.
    fn conjugate_gradients(&mut self) {
        let mut rz = 0.0;
        let mut b_norm = 0.0;
        for i in 0..CELLS {
            self.r[i] = self.rhs[i];
            self.z[i] = if self.diag[i] > 0.0 {
                self.r[i] / self.diag[i]
            } else {
                0.0
            };
            self.p[i] = self.z[i];
            rz += self.r[i] * self.z[i];
            b_norm += self.rhs[i] * self.rhs[i];
        }
        self.last_iterations = 0;
        if b_norm == 0.0 {
            return;
        }
        for iteration in 1..=CG_MAX_ITERATIONS {
            self.last_iterations = iteration;
            for i in 0..CELLS {
                self.ap[i] = self.diag[i] * self.p[i];
            }
            for e in 0..self.edges {
                let (a, b) = (self.edge_a[e] as usize, self.edge_b[e] as usize);
                if a < CELLS && b < CELLS {
                    let g = self.edge_g[e];
                    self.ap[a] -= g * self.p[b];
                    self.ap[b] -= g * self.p[a];
                }
            }
            let pap: f64 = (0..CELLS).map(|i| self.p[i] * self.ap[i]).sum();
            if pap <= 0.0 {
                return;
            }
            let alpha = rz / pap;
            let mut rr = 0.0;
            for i in 0..CELLS {
                self.x[i] += alpha * self.p[i];
                self.r[i] -= alpha * self.ap[i];
                rr += self.r[i] * self.r[i];
            }
            if rr <= CG_TOLERANCE * b_norm {
                return;
            }
            let mut rz_next = 0.0;
            for i in 0..CELLS {
                self.z[i] = if self.diag[i] > 0.0 {
                    self.r[i] / self.diag[i]
                } else {
                    0.0
                };
                rz_next += self.r[i] * self.z[i];
            }
            let beta = rz_next / rz;
            rz = rz_next;
            for i in 0..CELLS {
                self.p[i] = self.z[i] + beta * self.p[i];
            }
        }
    }
}

/// A score that means a won game (minus the plies it takes).
const WIN: f64 = 1_000.0;

/// The paper's evaluation E = R_opponent / R_own, as a logarithm so that it is antisymmetric:
/// positive is good for the side whose resistance is `own`.
fn evaluation(own: f64, opponent: f64) -> f64 {
    if own <= 0.0 {
        WIN
    } else if opponent <= 0.0 {
        -WIN
    } else {
        (opponent / own).ln()
    }
}

/// A cell counts as a candidate when its combined current share reaches this fraction of the
/// largest one.
pub const CANDIDATE_SHARE: f64 = 0.2;
/// Cells tried at each inner alpha-beta node, best current first.
const BRANCHING: usize = 10;
/// Deepest alpha-beta iteration.
const MAX_DEPTH: u32 = 12;
/// UCT: virtual AMAF visits given to a move's prior, the RAVE bias, the exploration constant,
/// the visits before a node is expanded and the tree's size cap.
const PRIOR_VISITS: f32 = 30.0;
const RAVE_BIAS: f32 = 0.0005;
const EXPLORATION: f32 = 0.05;
const EXPAND_AFTER: u32 = 3;
const MAX_TREE_NODES: usize = 2_000_000;

/// Which search chose the last move, and how much work it did (for tests and figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchStats {
    pub stage: Stage,
    pub playouts: u64,
    pub nodes: u64,
    pub depth: u32,
    pub candidates: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// Opening book, swap decision, a win in one or a forced block.
    #[default]
    Immediate,
    AlphaBeta,
    Uct,
}

/// Engine settings from the engine options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settings {
    time_ms: u64,
    playouts: u64,
    ab_below: usize,
}

fn option_u64(options: &serde_json::Value, name: &str, default: u64) -> Result<u64, EngineError> {
    let bad = |why: &str| EngineError::BadOption {
        name: name.to_string(),
        why: why.to_string(),
    };
    match options.get(name) {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| bad("must be a non-negative integer")),
        Some(serde_json::Value::String(s)) => s
            .trim()
            .parse()
            .map_err(|_| bad("must be a non-negative integer")),
        Some(_) => Err(bad("must be a non-negative integer")),
    }
}

impl Settings {
    fn from_options(options: &serde_json::Value) -> Result<Settings, EngineError> {
        check_option_names(options, INFO.options)?;
        let time_ms = option_u64(options, "time_ms", 10_000)?;
        if time_ms == 0 {
            return Err(EngineError::BadOption {
                name: "time_ms".into(),
                why: "must be at least 1".into(),
            });
        }
        let ab_below = option_u64(options, "ab_below", 30)?;
        if ab_below > CELLS as u64 + 1 {
            return Err(EngineError::BadOption {
                name: "ab_below".into(),
                why: format!("must be at most {}", CELLS + 1),
            });
        }
        Ok(Settings {
            time_ms,
            playouts: option_u64(options, "playouts", 0)?,
            ab_below: ab_below as usize,
        })
    }
}

/// One UCT node; `wins` count for the side that played `cell`.
#[derive(Debug, Clone, Copy)]
struct TreeNode {
    cell: u8,
    child_count: u8,
    first_child: u32,
    visits: u32,
    wins: f32,
    rave_visits: f32,
    rave_wins: f32,
}

/// The built-in Hex engine.
pub struct HexEngine {
    rules: HexOptions,
    settings: Settings,
    rng: SmallRng,
    circuit: Box<Circuit>,
    tree: Vec<TreeNode>,
    /// Work done for the last move.
    pub last_stats: SearchStats,
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
        Ok(HexEngine {
            rules,
            settings,
            rng: SmallRng::seed_from_u64(seed),
            circuit: Box::new(Circuit::new()),
            tree: Vec::new(),
            last_stats: SearchStats::default(),
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
        let mut score = [0.0; CELLS];
        self.assess(cells, Some(&mut score));
        let reply = bridge_reply(cells, mover, last).or_else(|| template_reply(cells, mover, last));
        let best_score = score.iter().copied().fold(0.0, f64::max);
        let mut candidates: Vec<u8> = (0..CELLS as u8)
            .filter(|&c| {
                cells[c as usize] == EMPTY
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
                .filter(|&c| cells[c as usize] == EMPTY)
                .collect();
        }
        self.last_stats.candidates = candidates.len();
        if candidates.len() < self.settings.ab_below {
            self.last_stats.stage = Stage::AlphaBeta;
            self.alpha_beta_root(cells, mover, candidates, limits)
        } else {
            self.last_stats.stage = Stage::Uct;
            self.uct(cells, mover, &score, best_score, reply, limits)
        }
    }

    /// Iterative-deepening alpha-beta over `candidates` (best first) with the resistance
    /// evaluation at the leaves; returns the best move of the deepest finished iteration.
    fn alpha_beta_root(
        &mut self,
        cells: &Cells,
        mover: usize,
        mut candidates: Vec<u8>,
        limits: &Limits<'_>,
    ) -> u8 {
        let mut best = candidates.first().copied().unwrap_or(NO);
        let mut board = *cells;
        let mut stopped = false;
        for depth in 1..=MAX_DEPTH {
            let mut alpha = -2.0 * WIN;
            let mut scored: Vec<(u8, f64)> = Vec::with_capacity(candidates.len());
            let mut iteration_best = best;
            for &cell in &candidates {
                board[cell as usize] = stone(mover);
                let value = if connected(&board, mover) {
                    WIN
                } else {
                    -self.negamax(
                        &mut board,
                        1 - mover,
                        depth - 1,
                        -2.0 * WIN,
                        -alpha,
                        1,
                        limits,
                        &mut stopped,
                    )
                };
                board[cell as usize] = EMPTY;
                if stopped {
                    break;
                }
                scored.push((cell, value));
                if value > alpha {
                    alpha = value;
                    iteration_best = cell;
                }
            }
            if stopped {
                break;
            }
            best = iteration_best;
            self.last_stats.depth = depth;
            scored.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
            candidates = scored.iter().map(|s| s.0).collect();
            if alpha.abs() >= WIN - 100.0 || limits.reached() {
                break;
            }
        }
        best
    }

    /// Negamax value of `board` for `mover` (whose opponent has just moved without winning).
    #[allow(clippy::too_many_arguments)]
    fn negamax(
        &mut self,
        board: &mut Cells,
        mover: usize,
        depth: u32,
        mut alpha: f64,
        beta: f64,
        ply: u32,
        limits: &Limits<'_>,
        stopped: &mut bool,
    ) -> f64 {
        self.last_stats.nodes += 1;
        if self.last_stats.nodes % 16 == 1 && limits.reached() {
            *stopped = true;
        }
        if *stopped {
            return 0.0;
        }
        if depth == 0 {
            let r = self.assess(board, None);
            return evaluation(r[mover], r[1 - mover]);
        }
        let mut score = [0.0; CELLS];
        self.assess(board, Some(&mut score));
        let mut top = [(NO, -1.0f64); BRANCHING];
        for c in 0..CELLS {
            if board[c] != EMPTY {
                continue;
            }
            let s = score[c];
            if s > top[BRANCHING - 1].1 {
                let mut k = BRANCHING - 1;
                while k > 0 && top[k - 1].1 < s {
                    top[k] = top[k - 1];
                    k -= 1;
                }
                top[k] = (c as u8, s);
            }
        }
        let mut best = -2.0 * WIN;
        for &(cell, _) in top.iter().filter(|t| t.0 != NO) {
            board[cell as usize] = stone(mover);
            let value = if connected(board, mover) {
                WIN - ply as f64
            } else {
                -self.negamax(
                    board,
                    1 - mover,
                    depth - 1,
                    -beta,
                    -alpha,
                    ply + 1,
                    limits,
                    stopped,
                )
            };
            board[cell as usize] = EMPTY;
            if *stopped {
                return 0.0;
            }
            if value > best {
                best = value;
            }
            if value > alpha {
                alpha = value;
            }
            if alpha >= beta {
                break;
            }
        }
        best
    }

    /// Adds the children of tree node `index` (one per empty cell of `board`) with their priors.
    fn expand(&mut self, index: usize, board: &Cells, mover: usize, prior: &dyn Fn(u8) -> f32) {
        let first = self.tree.len();
        let reply = bridge_reply(board, mover, self.tree[index].cell);
        for c in 0..CELLS as u8 {
            if board[c as usize] != EMPTY {
                continue;
            }
            let p = if Some(c) == reply { 0.9 } else { prior(c) };
            self.tree.push(TreeNode {
                cell: c,
                child_count: 0,
                first_child: 0,
                visits: 0,
                wins: 0.0,
                rave_visits: PRIOR_VISITS,
                rave_wins: PRIOR_VISITS * p,
            });
        }
        let count = (self.tree.len() - first) as u8;
        let node = &mut self.tree[index];
        node.first_child = first as u32;
        node.child_count = count;
    }

    /// The child of `index` with the best RAVE-blended value.
    fn select(&self, index: usize) -> usize {
        let node = &self.tree[index];
        let log_parent = ((node.visits + 1) as f32).ln();
        let first = node.first_child as usize;
        let mut best = first;
        let mut best_value = f32::MIN;
        for k in first..first + node.child_count as usize {
            let child = &self.tree[k];
            let n = child.visits as f32;
            let q = if child.visits > 0 {
                child.wins / n
            } else {
                0.5
            };
            let amaf = child.rave_wins / child.rave_visits.max(1.0);
            let rn = child.rave_visits;
            let beta = rn / (rn + n + RAVE_BIAS * rn * n);
            let value =
                (1.0 - beta) * q + beta * amaf + EXPLORATION * (log_parent / (n + 1.0)).sqrt();
            if value > best_value {
                best_value = value;
                best = k;
            }
        }
        best
    }

    /// Fills the board at random (answering bridge and edge-template intrusions) and returns
    /// the winner: on a full Hex board exactly one side is connected.
    fn playout(&mut self, board: &mut Cells, mut mover: usize, mut last: u8) -> usize {
        let mut order = [0u8; CELLS];
        let mut remaining = 0;
        for c in 0..CELLS {
            if board[c] == EMPTY {
                order[remaining] = c as u8;
                remaining += 1;
            }
        }
        loop {
            let mut chosen = bridge_reply(board, mover, last);
            while chosen.is_none() && remaining > 0 {
                let k = self.rng.gen_range(0..remaining);
                let c = order[k];
                remaining -= 1;
                order.swap(k, remaining);
                if board[c as usize] == EMPTY {
                    chosen = Some(c);
                }
            }
            let Some(cell) = chosen else { break };
            board[cell as usize] = stone(mover);
            last = cell;
            mover = 1 - mover;
        }
        if connected(board, 0) {
            0
        } else {
            1
        }
    }

    /// UCT with RAVE from `cells`, the root priors taken from the resistance currents.
    fn uct(
        &mut self,
        cells: &Cells,
        mover: usize,
        score: &[f64; CELLS],
        best_score: f64,
        reply: Option<u8>,
        limits: &Limits<'_>,
    ) -> u8 {
        self.tree.clear();
        self.tree.push(TreeNode {
            cell: NO,
            child_count: 0,
            first_child: 0,
            visits: 0,
            wins: 0.0,
            rave_visits: 0.0,
            rave_wins: 0.0,
        });
        let scale = if best_score > 0.0 {
            1.0 / best_score
        } else {
            0.0
        };
        let root_prior = |c: u8| {
            if Some(c) == reply {
                0.9
            } else {
                (0.4 + 0.3 * score[c as usize] * scale) as f32
            }
        };
        self.expand(0, cells, mover, &root_prior);
        let flat = |_: u8| 0.5f32;
        let mut path: Vec<usize> = Vec::with_capacity(CELLS + 1);
        loop {
            let playouts = self.last_stats.playouts;
            if self.settings.playouts > 0 && playouts >= self.settings.playouts {
                break;
            }
            if playouts.is_multiple_of(8) && limits.reached() {
                break;
            }
            let mut board = *cells;
            let mut to_move = mover;
            let mut index = 0;
            let mut last = NO;
            path.clear();
            path.push(0);
            loop {
                let node = self.tree[index];
                if node.child_count == 0 {
                    let has_empty = board.contains(&EMPTY);
                    if !has_empty
                        || node.visits < EXPAND_AFTER
                        || self.tree.len() + CELLS > MAX_TREE_NODES
                    {
                        break;
                    }
                    self.expand(index, &board, to_move, &flat);
                }
                index = self.select(index);
                let cell = self.tree[index].cell;
                board[cell as usize] = stone(to_move);
                last = cell;
                to_move = 1 - to_move;
                path.push(index);
            }
            let winner = self.playout(&mut board, to_move, last);
            self.last_stats.playouts += 1;
            // Backpropagation, with all-moves-as-first over the filled board.
            for (depth, &index) in path.iter().enumerate() {
                let node_mover = if depth % 2 == 0 { mover } else { 1 - mover };
                {
                    let node = &mut self.tree[index];
                    node.visits = node.visits.saturating_add(1);
                    // The node was entered by the other side.
                    if depth > 0 && winner != node_mover {
                        node.wins += 1.0;
                    }
                }
                let node = self.tree[index];
                let first = node.first_child as usize;
                let own = stone(node_mover);
                let won = if winner == node_mover { 1.0 } else { 0.0 };
                for child in &mut self.tree[first..first + node.child_count as usize] {
                    if board[child.cell as usize] == own {
                        child.rave_visits += 1.0;
                        child.rave_wins += won;
                    }
                }
            }
        }
        let root = self.tree[0];
        let first = root.first_child as usize;
        self.tree[first..first + root.child_count as usize]
            .iter()
            .max_by(|a, b| {
                (a.visits, a.wins)
                    .partial_cmp(&(b.visits, b.wins))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map_or(NO, |n| n.cell)
    }
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
        let mut cells: Cells = [EMPTY; CELLS];
        for (c, cell) in cells.iter_mut().enumerate() {
            if let Some(side) = position.stone_at(Point::from_index(c, N as u8)) {
                *cell = stone(colour_of(side));
            }
        }
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
        let mut cell = self.search(&cells, mover, last, &limits);
        if cell as usize >= CELLS || cells[cell as usize] != EMPTY {
            // Never happens by construction; any empty cell beats an illegal move.
            cell = (0..CELLS as u8)
                .find(|&c| cells[c as usize] == EMPTY)
                .ok_or(EngineError::NoMove)?;
        }
        Ok(cell_text(cell))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duel::{self, DuelConfig};
    use crate::engine::{new_engine, ClockView};
    use crate::game::EndReason;

    fn cell(text: &str) -> u8 {
        match Hex::parse_move(text).unwrap() {
            Move::Place(p) => p.index(N as u8) as u8,
            Move::Swap => panic!("not a cell"),
        }
    }

    fn engine(options: serde_json::Value, rules: serde_json::Value) -> HexEngine {
        HexEngine::new(&rules, &options, 5).unwrap()
    }

    fn ask(engine: &mut HexEngine, moves: &[&str], clock: ClockView, abort: bool) -> String {
        let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        let flag = AtomicBool::new(abort);
        engine
            .choose_move(&SearchRequest {
                moves: &moves,
                clock,
                abort: &flag,
            })
            .unwrap()
    }

    fn quick() -> ClockView {
        ClockView {
            move_limit_ms: Some(300),
            ..ClockView::unlimited()
        }
    }

    /// Alternates `red` and `blue` stones into a move list (Red first).
    fn interleave(red: &[&str], blue: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for k in 0..red.len().max(blue.len()) {
            if let Some(r) = red.get(k) {
                out.push(r.to_string());
            }
            if let Some(b) = blue.get(k) {
                out.push(b.to_string());
            }
        }
        out
    }

    const RED_COLUMN: [&str; 10] = ["F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10"];
    /// Blue stones that threaten nothing; G11 leaves Red's column F a single winning cell.
    const BLUE_SCATTER: [&str; 10] = ["A1", "A3", "A5", "A7", "A9", "B2", "B4", "G11", "B6", "B10"];

    #[test]
    fn tables_have_the_right_shape() {
        assert_eq!(PAIRS.iter().filter(|p| p.0 == p.1).count(), 0);
        assert_eq!(RING[0].iter().filter(|&&c| c != NO).count(), 3);
        assert_eq!(
            RING[cell("F6") as usize]
                .iter()
                .filter(|&&c| c != NO)
                .count(),
            6
        );
        // Consecutive ring neighbours touch each other.
        let f6 = cell("F6") as usize;
        for k in 0..6 {
            let (a, b) = (RING[f6][k], RING[f6][(k + 1) % 6]);
            assert!(RING[a as usize].contains(&b));
        }
    }

    #[test]
    fn bridges_and_edge_templates_are_restored() {
        // Red bridge E5–F7 over E6/F6: Blue takes E6, Red answers F6, and the other way round.
        let mut cells = [EMPTY; CELLS];
        cells[cell("E5") as usize] = stone(0);
        cells[cell("F7") as usize] = stone(0);
        cells[cell("E6") as usize] = stone(1);
        assert_eq!(bridge_reply(&cells, 0, cell("E6")), Some(cell("F6")));
        cells[cell("E6") as usize] = EMPTY;
        cells[cell("F6") as usize] = stone(1);
        assert_eq!(bridge_reply(&cells, 0, cell("F6")), Some(cell("E6")));
        // No bridge for Blue there, and no reply once the other carrier is gone too.
        assert_eq!(bridge_reply(&cells, 1, cell("F6")), None);
        cells[cell("E6") as usize] = stone(1);
        assert_eq!(bridge_reply(&cells, 0, cell("F6")), None);
        // Edge template II: a red stone on row 2 reaches row 1 through D1 or C1.
        let mut edge = [EMPTY; CELLS];
        edge[cell("D2") as usize] = stone(0);
        edge[cell("D1") as usize] = stone(1);
        assert_eq!(bridge_reply(&edge, 0, cell("D1")), Some(cell("C1")));
        // Blue's version on column K.
        let mut blue = [EMPTY; CELLS];
        blue[cell("J5") as usize] = stone(1);
        blue[cell("K5") as usize] = stone(0);
        assert_eq!(bridge_reply(&blue, 1, cell("K5")), Some(cell("K6")));
    }

    #[test]
    fn ziggurat_intrusions_are_answered() {
        for colour in 0..2 {
            for edge in 0..2 {
                let s = edge_view(colour, edge, 5, 2);
                for shape in &ZIGGURATS {
                    let carrier = shape.map(|(dx, dy)| edge_view(colour, edge, 5 + dx, 2 + dy));
                    let mut cells = [EMPTY; CELLS];
                    cells[s as usize] = stone(colour);
                    // The template holds, and every single intrusion has an answer that keeps it.
                    assert!(holds_to_edge(&mut cells, s, &carrier));
                    for &z in &carrier {
                        cells[z as usize] = stone(1 - colour);
                        let w = template_reply(&cells, colour, z).expect("an answer");
                        assert_eq!(cells[w as usize], EMPTY);
                        // The answer may use the mirror-image ziggurat when z lies in both.
                        cells[w as usize] = stone(colour);
                        assert!(ZIGGURATS.iter().any(|other| {
                            let k = other.map(|(dx, dy)| edge_view(colour, edge, 5 + dx, 2 + dy));
                            holds_to_edge(&mut cells, s, &k)
                        }));
                        cells[w as usize] = EMPTY;
                        cells[z as usize] = EMPTY;
                    }
                    // Without one of its edge cells the carrier does not hold.
                    cells[carrier[7] as usize] = stone(1 - colour);
                    assert!(!holds_to_edge(&mut cells, s, &carrier));
                }
            }
        }
    }

    #[test]
    fn empty_board_resistance_is_symmetric_and_drops_with_stones() {
        let mut circuit = Circuit::new();
        let mut cells = [EMPTY; CELLS];
        let red = circuit.resistance(&cells, 0, None);
        let blue = circuit.resistance(&cells, 1, None);
        assert!(red > 0.0 && red < NO_PATH);
        assert!((red - blue).abs() < 1e-9, "{red} vs {blue}");
        assert!(circuit.last_iterations < CG_MAX_ITERATIONS);
        let mut previous = red;
        for text in ["F6", "F4", "F8", "F2"] {
            cells[cell(text) as usize] = stone(0);
            let now = circuit.resistance(&cells, 0, None);
            assert!(now < previous, "{text}: {now} !< {previous}");
            previous = now;
        }
        // Red's stones raise Blue's resistance.
        assert!(circuit.resistance(&cells, 1, None) > blue);
        // A full red column connects Red and cuts Blue off.
        for text in RED_COLUMN.iter().chain(["F11"].iter()) {
            cells[cell(text) as usize] = stone(0);
        }
        assert_eq!(circuit.resistance(&cells, 0, None), 0.0);
        assert_eq!(circuit.resistance(&cells, 1, None), NO_PATH);
    }

    #[test]
    fn virtual_links_make_bridges_and_edge_templates_conduct() {
        let mut plain = Circuit::new();
        plain.virtual_links = false;
        let mut linked = Circuit::new();
        let mut cells = [EMPTY; CELLS];
        for text in ["F2", "G4", "H6", "I8", "J10"] {
            cells[cell(text) as usize] = stone(0);
        }
        let (before_plain, before_linked) = (
            plain.resistance(&cells, 0, None),
            linked.resistance(&cells, 0, None),
        );
        assert!(
            before_linked < before_plain,
            "{before_linked} vs {before_plain}"
        );
        // Blue breaks one bridge (G4-H6 over G5/H5): the links there go, the resistance rises.
        cells[cell("G5") as usize] = stone(1);
        assert!(linked.resistance(&cells, 0, None) > before_linked);
        // With neither sides' stones the two models agree.
        let empty = [EMPTY; CELLS];
        let gap = plain.resistance(&empty, 1, None) - linked.resistance(&empty, 1, None);
        assert!(gap.abs() < 1e-9);
    }

    #[test]
    fn resistance_matches_a_hand_computed_circuit() {
        // Red stones fill rows 1-10 of column F except F5; Blue walls off everything else
        // around F5 so Red's only path runs through F5: source–(F1..F4 group)–F5–(F6..F10
        // group)–... that group still needs row 11, reached through F11 or G11.
        let mut cells = [stone(1); CELLS];
        for text in ["F1", "F2", "F3", "F4", "F6", "F7", "F8", "F9", "F10"] {
            cells[cell(text) as usize] = stone(0);
        }
        for text in ["F5", "F11", "G11"] {
            cells[cell(text) as usize] = EMPTY;
        }
        let mut circuit = Circuit::new();
        circuit.virtual_links = false;
        // F5 joins both groups with conductance 1 each way: 2 ohms in series; then F11 and G11
        // in parallel, each group–cell 1 plus cell–edge 1: 2 ∥ 2 = 1. Total 3.
        let r = circuit.resistance(&cells, 0, None);
        assert!((r - 3.0).abs() < 1e-9, "{r}");
        let mut current = [0.0; CELLS];
        circuit.resistance(&cells, 0, Some(&mut current));
        assert!((current[cell("F5") as usize] - 1.0).abs() < 1e-9);
        assert!((current[cell("F11") as usize] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn takes_a_win_in_one() {
        let moves = interleave(&RED_COLUMN, &BLUE_SCATTER);
        let mut hex = engine(serde_json::json!({"time_ms": 200}), serde_json::Value::Null);
        let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
        assert_eq!(ask(&mut hex, &refs, quick(), false), "F11");
        assert_eq!(hex.last_stats.stage, Stage::Immediate);
    }

    #[test]
    fn blocks_a_loss_in_one() {
        // Blue to move; Red's column needs only F11 (Blue holds G11).
        let moves = interleave(&RED_COLUMN, &BLUE_SCATTER[..9]);
        let mut hex = engine(serde_json::json!({"time_ms": 200}), serde_json::Value::Null);
        let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
        assert_eq!(ask(&mut hex, &refs, quick(), false), "F11");
        assert_eq!(hex.last_stats.stage, Stage::Immediate);
        // The same threat one cell further along: Red's column F1-F9 plus F11 needs F10.
        let mut red = RED_COLUMN.to_vec();
        red[9] = "F11";
        let moves = interleave(&red, &BLUE_SCATTER[..9]);
        let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
        assert_eq!(ask(&mut hex, &refs, quick(), false), "F10");
    }

    #[test]
    fn returns_promptly_with_a_legal_move_when_aborted() {
        let moves = ["F6", "E7", "D5", "G4"];
        for ab_below in [0u64, 122] {
            let mut hex = engine(
                serde_json::json!({ "ab_below": ab_below }),
                serde_json::Value::Null,
            );
            let answer = ask(&mut hex, &moves, ClockView::unlimited(), true);
            let position = hex.replay(&moves.map(String::from)).unwrap();
            assert!(
                position.is_legal(&Hex::parse_move(&answer).unwrap()),
                "{answer}"
            );
            assert!(hex.last_stats.playouts <= 1, "{:?}", hex.last_stats);
            assert!(hex.last_stats.nodes <= 16, "{:?}", hex.last_stats);
        }
        // A budget too far away for `Instant` means no deadline, not a crash.
        let mut patient = engine(
            serde_json::json!({ "time_ms": u64::MAX }),
            serde_json::Value::Null,
        );
        let endless = ClockView {
            you_ms: u64::MAX,
            ..ClockView::unlimited()
        };
        let answer = ask(&mut patient, &moves, endless, true);
        assert!(patient
            .replay(&moves.map(String::from))
            .unwrap()
            .is_legal(&Hex::parse_move(&answer).unwrap()));
    }

    #[test]
    fn stages_follow_the_candidate_count_and_caps_hold() {
        let moves = ["F6", "E7"];
        let mut uct = engine(
            serde_json::json!({"ab_below": 0, "playouts": 300}),
            serde_json::Value::Null,
        );
        ask(&mut uct, &moves, ClockView::unlimited(), false);
        assert_eq!(uct.last_stats.stage, Stage::Uct);
        assert_eq!(uct.last_stats.playouts, 300);
        let mut ab = engine(
            serde_json::json!({"ab_below": 122, "time_ms": 100}),
            serde_json::Value::Null,
        );
        let answer = ask(&mut ab, &moves, ClockView::unlimited(), false);
        assert_eq!(ab.last_stats.stage, Stage::AlphaBeta);
        assert!(ab.last_stats.depth >= 1, "{:?}", ab.last_stats);
        assert!(ab.replay(&["F6".into(), "E7".into(), answer]).is_ok());
    }

    #[test]
    fn options_are_checked() {
        for bad in [
            serde_json::json!({"colour": "red"}),
            serde_json::json!({"time_ms": 0}),
            serde_json::json!({"time_ms": "soon"}),
            serde_json::json!({"playouts": -3}),
            serde_json::json!({"ab_below": 500}),
            serde_json::json!([1, 2]),
        ] {
            assert!(
                matches!(
                    HexEngine::new(&serde_json::Value::Null, &bad, 1),
                    Err(EngineError::BadOption { .. })
                ),
                "{bad}"
            );
        }
        assert!(HexEngine::new(
            &serde_json::Value::Null,
            &serde_json::json!({"time_ms": "50", "playouts": 10}),
            1
        )
        .is_ok());
        assert!(matches!(
            new_engine(
                "hex",
                GameId::Connect6,
                &serde_json::Value::Null,
                &serde_json::Value::Null,
                1
            ),
            Err(EngineError::UnsupportedGame { .. })
        ));
        assert!(matches!(
            HexEngine::new(
                &serde_json::json!({"swop": true}),
                &serde_json::Value::Null,
                1
            ),
            Err(EngineError::Rules(_))
        ));
    }

    #[test]
    fn swap_decision_when_the_rule_is_on() {
        let rules = serde_json::json!({"swap": true});
        let mut hex = engine(serde_json::json!({"time_ms": 100}), rules.clone());
        assert_eq!(ask(&mut hex, &["F6"], quick(), false), "swap");
        assert_eq!(ask(&mut hex, &["C9"], quick(), false), "swap");
        let answer = ask(&mut hex, &["A1"], quick(), false);
        assert_ne!(answer, "swap");
        assert!(hex.replay(&["A1".into(), answer]).is_ok());
        // As Red, the opening is one we would not swap ourselves.
        let opening = ask(&mut hex, &[], quick(), false);
        assert_eq!(opening, "A9");
        assert!(!should_swap(cell(&opening) as usize));
        // Without the rule: never swap, open in the centre.
        let mut plain = engine(serde_json::json!({"time_ms": 100}), serde_json::Value::Null);
        assert_eq!(ask(&mut plain, &[], quick(), false), "F6");
        assert_ne!(ask(&mut plain, &["F6"], quick(), false), "swap");
        // After a swap, Red moves on the swapped board.
        let after = ask(&mut hex, &["F6", "swap"], quick(), false);
        assert!(hex.replay(&["F6".into(), "swap".into(), after]).is_ok());
    }

    #[test]
    fn plays_only_legal_moves_over_full_games_against_random() {
        for rules in [serde_json::Value::Null, serde_json::json!({"swap": true})] {
            let config = DuelConfig {
                game: GameId::Hex,
                rules,
                engines: [
                    ("hex".into(), serde_json::json!({"time_ms": 15})),
                    ("random".into(), serde_json::Value::Null),
                ],
                games: 2,
                move_ms: 2_000,
                seed: 11,
            };
            for game in duel::run(&config, |_| {}).unwrap() {
                // An illegal move, an error or a timeout would end the game differently.
                assert_eq!(
                    game.outcome.reason,
                    EndReason::Connection,
                    "{:?}",
                    game.moves
                );
                let hex = HexEngine::new(&config.rules, &serde_json::Value::Null, 1).unwrap();
                let replayed = hex.replay(&game.moves).unwrap();
                assert_eq!(replayed.outcome(), Some(game.outcome));
            }
        }
    }
}

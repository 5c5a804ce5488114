//! The Surakarta bitboard core: compile-time circuit tables, the allocation-free move
//! generator (steps and deduplicated circuit captures) and the bulk-counting perft.
//!
//! Points are indexed `row * 6 + col` (row 0 = row 1, col 0 = column A), so a side's pieces are
//! the low 36 bits of a `u64`. Each circuit is a cycle of 24 entries; a crossing point appears
//! at two entries of its circuit. Entry `j` lies on side `j / 6` of the circuit and the corner
//! loops sit between entries 5|6, 11|12, 17|18 and 23|0.

/// Number of points on the board.
pub const POINTS: usize = 36;
/// Every point of the board.
pub const FULL: u64 = (1 << POINTS) - 1;
/// Entries per circuit.
const CIRCUIT_LEN: usize = 24;
const CIRCUIT_MASK: u64 = (1 << CIRCUIT_LEN) - 1;
/// Bit offset of each circuit's entry mask inside a combined circuit-occupancy word.
const CIRCUIT_SHIFT: [u32; 2] = [0, 32];

/// The point at entry `j` of circuit `c` (0 = inner, 1 = outer).
///
/// Inner (k = 1): row 2 A→F, loop F2→E1, column E up, loop E6→F5, row 5 F→A, loop A5→B6,
/// column B down, loop B1→A2. Outer (k = 2) is the same shape on row 3, column D, row 4 and
/// column C with the large loops.
pub const fn circuit_point(c: usize, j: usize) -> usize {
    let k = c + 1;
    let t = j % 6;
    match j / 6 {
        0 => k * 6 + t,
        1 => t * 6 + (5 - k),
        2 => (5 - k) * 6 + (5 - t),
        _ => (5 - t) * 6 + k,
    }
}

/// Whether walking `d` entries forward from entry `i` passes at least one corner loop.
const fn forward_loops(i: usize, d: usize) -> bool {
    i % 6 + d >= 6
}

/// Whether walking `d` entries backward from entry `i` passes at least one corner loop.
const fn backward_loops(i: usize, d: usize) -> bool {
    d > i % 6
}

/// Where a point lies on the circuits: up to two (circuit, entry) pairs.
#[derive(Clone, Copy)]
pub struct Entries {
    pub len: usize,
    pub list: [(usize, usize); 2],
}

/// All precomputed tables.
pub struct Tables {
    /// The 8 neighbours of each point.
    pub neighbours: [u64; POINTS],
    /// Circuit entries of each point.
    pub entries: [Entries; POINTS],
    /// Each point's entry bits in the combined circuit-occupancy word.
    pub circuit_bits: [u64; POINTS],
    /// Board bit of each entry of each circuit.
    pub entry_point_bit: [[u64; CIRCUIT_LEN]; 2],
    /// Circuit-occupancy contribution of each 6-point row pattern, per row.
    pub row_gather: [[u64; 64]; 6],
}

const fn build_tables() -> Tables {
    let mut t = Tables {
        neighbours: [0; POINTS],
        entries: [Entries {
            len: 0,
            list: [(0, 0); 2],
        }; POINTS],
        circuit_bits: [0; POINTS],
        entry_point_bit: [[0; CIRCUIT_LEN]; 2],
        row_gather: [[0; 64]; 6],
    };
    let mut p = 0;
    while p < POINTS {
        let (col, row) = ((p % 6) as i32, (p / 6) as i32);
        let mut dr = -1;
        while dr <= 1 {
            let mut dc = -1;
            while dc <= 1 {
                let (c, r) = (col + dc, row + dr);
                if (dr != 0 || dc != 0) && c >= 0 && c < 6 && r >= 0 && r < 6 {
                    t.neighbours[p] |= 1 << (r * 6 + c);
                }
                dc += 1;
            }
            dr += 1;
        }
        p += 1;
    }
    let mut c = 0;
    while c < 2 {
        let mut j = 0;
        while j < CIRCUIT_LEN {
            let p = circuit_point(c, j);
            t.entry_point_bit[c][j] = 1 << p;
            t.circuit_bits[p] |= 1 << (CIRCUIT_SHIFT[c] as usize + j);
            let e = &mut t.entries[p];
            // A point has at most two entries in all (checked by a unit test via `len`).
            if e.len < 2 {
                e.list[e.len] = (c, j);
            }
            e.len += 1;
            j += 1;
        }
        c += 1;
    }
    let mut row = 0;
    while row < 6 {
        let mut pattern = 0;
        while pattern < 64 {
            let mut col = 0;
            while col < 6 {
                if pattern & (1 << col) != 0 {
                    t.row_gather[row][pattern] |= t.circuit_bits[row * 6 + col];
                }
                col += 1;
            }
            pattern += 1;
        }
        row += 1;
    }
    t
}

/// The tables, built at compile time.
pub static TABLES: Tables = build_tables();

/// Combined circuit occupancy: inner entries in bits 0..24, outer in bits 32..56.
#[inline]
fn circuit_occupancy(occupied: u64) -> u64 {
    let g = &TABLES.row_gather;
    g[0][(occupied & 63) as usize]
        | g[1][((occupied >> 6) & 63) as usize]
        | g[2][((occupied >> 12) & 63) as usize]
        | g[3][((occupied >> 18) & 63) as usize]
        | g[4][((occupied >> 24) & 63) as usize]
        | g[5][((occupied >> 30) & 63) as usize]
}

/// The enemy points a piece on `from` captures, each once however many paths reach it.
/// `occupancy` is `circuit_occupancy` of the whole board.
#[inline]
fn capture_targets(from: usize, occupancy: u64, them: u64) -> u64 {
    let entries = &TABLES.entries[from];
    // The mover's own point counts as empty, at both of its entries.
    let others = occupancy & !TABLES.circuit_bits[from];
    let mut targets = 0;
    let n = if entries.len < 2 { entries.len } else { 2 };
    for &(c, i) in &entries.list[..n] {
        let m = (others >> CIRCUIT_SHIFT[c]) & CIRCUIT_MASK;
        if m == 0 {
            continue;
        }
        let twice = m | (m << CIRCUIT_LEN);
        let bits = &TABLES.entry_point_bit[c];
        // Forward: the first occupied entry after `i` (within 23 steps: `i` itself is clear).
        let d = (twice >> (i + 1)).trailing_zeros() as usize + 1;
        if forward_loops(i, d) {
            targets |= bits[(i + d) % CIRCUIT_LEN];
        }
        // Backward: the last occupied position below `i + 24` in the doubled mask.
        let below = twice & ((1u64 << (i + CIRCUIT_LEN)) - 1);
        let q = 63 - below.leading_zeros() as usize;
        if backward_loops(i, i + CIRCUIT_LEN - q) {
            targets |= bits[q % CIRCUIT_LEN];
        }
    }
    targets & them
}

/// A position from the mover's view: `us` moves next. `quiet` counts plies since a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    pub us: u64,
    pub them: u64,
    pub quiet: u32,
}

impl Board {
    /// Whether the game is over here: a side has no pieces or the quiet limit is reached
    /// (having no legal move is the third end, found by generating).
    #[inline]
    pub fn is_decided(&self, no_capture_limit: u32) -> bool {
        self.us == 0 || self.them == 0 || self.quiet >= no_capture_limit
    }

    /// Number of legal moves, ignoring whether the game is already decided.
    #[inline]
    pub fn count_moves(&self) -> u64 {
        let occupied = self.us | self.them;
        let empty = !occupied & FULL;
        let occupancy = circuit_occupancy(occupied);
        let mut n = 0;
        let mut pieces = self.us;
        while pieces != 0 {
            let from = pieces.trailing_zeros() as usize;
            pieces &= pieces - 1;
            n += (TABLES.neighbours[from] & empty).count_ones()
                + capture_targets(from, occupancy, self.them).count_ones();
        }
        u64::from(n)
    }

    /// Calls `visit(from, to, is_capture)` for every legal move, ignoring whether the game is
    /// already decided: pieces in point order, each piece's steps then captures, targets in
    /// point order.
    #[inline]
    pub fn for_each_move(&self, mut visit: impl FnMut(usize, usize, bool)) {
        let occupied = self.us | self.them;
        let empty = !occupied & FULL;
        let occupancy = circuit_occupancy(occupied);
        let mut pieces = self.us;
        while pieces != 0 {
            let from = pieces.trailing_zeros() as usize;
            pieces &= pieces - 1;
            let mut steps = TABLES.neighbours[from] & empty;
            while steps != 0 {
                visit(from, steps.trailing_zeros() as usize, false);
                steps &= steps - 1;
            }
            let mut captures = capture_targets(from, occupancy, self.them);
            while captures != 0 {
                visit(from, captures.trailing_zeros() as usize, true);
                captures &= captures - 1;
            }
        }
    }

    /// The position after a legal move, from the next mover's view.
    #[inline]
    pub fn after(&self, from: usize, to: usize, capture: bool) -> Board {
        let moved = self.us ^ ((1 << from) | (1 << to));
        if capture {
            Board {
                us: self.them & !(1 << to),
                them: moved,
                quiet: 0,
            }
        } else {
            Board {
                us: self.them,
                them: moved,
                quiet: self.quiet.saturating_add(1),
            }
        }
    }
}

/// Leaves `depth` plies below `board` (depth 0 is the board itself), counting the last ply in
/// bulk. Decided positions have no moves below them.
pub fn perft(board: &Board, depth: u32, no_capture_limit: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    perft_below(board, depth, no_capture_limit)
}

fn perft_below(board: &Board, depth: u32, no_capture_limit: u32) -> u64 {
    if board.is_decided(no_capture_limit) {
        return 0;
    }
    if depth == 1 {
        return board.count_moves();
    }
    let mut leaves = 0;
    board.for_each_move(|from, to, capture| {
        leaves += perft_below(&board.after(from, to, capture), depth - 1, no_capture_limit);
    });
    leaves
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_has_at_most_two_circuit_entries() {
        let mut crossings = 0;
        for p in 0..POINTS {
            let e = &TABLES.entries[p];
            assert!(e.len <= 2, "point {p} has {} entries", e.len);
            if e.len == 2 && e.list[0].0 == e.list[1].0 {
                crossings += 1;
            }
        }
        // B2 E2 B5 E5 on the inner circuit, C3 D3 C4 D4 on the outer.
        assert_eq!(crossings, 8);
    }

    #[test]
    fn loops_join_the_named_corner_points() {
        // Entry pairs (5,6), (11,12), (17,18), (23,0) straddle the loops.
        let name = |p: usize| format!("{}{}", (b'A' + (p % 6) as u8) as char, p / 6 + 1);
        let mut loops = Vec::new();
        for c in 0..2 {
            for j in [5usize, 11, 17, 23] {
                loops.push(format!(
                    "{}-{}",
                    name(circuit_point(c, j)),
                    name(circuit_point(c, (j + 1) % 24))
                ));
            }
        }
        assert_eq!(
            loops,
            ["F2-E1", "E6-F5", "A5-B6", "B1-A2", "F3-D1", "D6-F4", "A4-C6", "C1-A3"]
        );
    }

    #[test]
    fn neighbour_counts() {
        assert_eq!(TABLES.neighbours[0].count_ones(), 3);
        assert_eq!(TABLES.neighbours[1].count_ones(), 5);
        assert_eq!(TABLES.neighbours[7].count_ones(), 8);
    }
}

//! The Connect6 engine's board: the six-point windows and their geometry, and the board the
//! searches play on, which keeps window counts, scores, point gains and its Zobrist key
//! incrementally as stones are placed and removed.

use std::sync::OnceLock;

use crate::engine::tt::TranspositionTable;
use crate::game::connect6::{Connect6, CELLS, SIZE};
use crate::game::Point;
use crate::hash::{splitmix64, zobrist_keys};

/// Value of a six-point window to the colour whose `count` stones are the only ones in it.
/// Index 6 (six in a row) never occurs in a search: wins are taken before.
pub(super) const WINDOW_VALUE: [i32; 7] = [0, 1, 12, 60, 400, 500, 1_000_000];
/// A score beyond any evaluation: a won position.
pub(super) const WIN: i32 = 100_000_000;
/// Scores at least this far from zero are forced wins or losses (within the pruned tree).
pub(super) const PROVEN: i32 = WIN - 1_000;
/// Marks the unused slot of a threat window's empty points.
pub(super) const NO_POINT: u16 = u16::MAX;
/// The four line directions: along a row, along a column and both diagonals.
pub(super) const DIRECTIONS: [(i32, i32); 4] = [(1, 0), (0, 1), (1, 1), (1, -1)];

/// Zobrist keys of a stone of each colour (0 black, 1 white) on each point.
pub(super) static STONE_KEYS: [[u64; CELLS]; 2] = zobrist_keys::<CELLS>();
/// Added to the key when white is to move.
pub(super) const SIDE_KEY: u64 = splitmix64(10_000);

/// Added to the key for the blocking turns a path may still leave uncounted (0 for none), so
/// that nodes of the final check, whose subtrees depend on it, never share entries with other
/// nodes.
pub(super) fn extension_key(left: u32) -> u64 {
    if left == 0 {
        0
    } else {
        splitmix64(0x4558_5400_0000_0000 ^ u64::from(left))
    }
}

/// The alpha-beta's transposition table; an entry's move is a pair's two points.
pub(super) type Table = TranspositionTable<(u16, u16)>;

/// Board geometry shared by every search: the six-point windows and which windows and line
/// neighbours each point has.
pub(super) struct Tables {
    pub(super) windows: Vec<[u16; 6]>,
    pub(super) point_windows: Vec<Vec<u16>>,
    /// Points one or two steps away along the four lines.
    pub(super) near: Vec<Vec<u16>>,
    /// For each point and direction (`DIRECTIONS`), the window in that direction holding the
    /// point as its `k`-th point, for `k` in 0..6 (`NO_WINDOW` where it would leave the board).
    pub(super) window_at: Vec<[[u16; 6]; 4]>,
}

pub(super) const NO_WINDOW: u16 = u16::MAX;

pub(super) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(build_tables)
}

pub(super) fn on_board(col: i32, row: i32) -> Option<u16> {
    let size = SIZE as i32;
    ((0..size).contains(&col) && (0..size).contains(&row)).then(|| (row * size + col) as u16)
}

pub(super) fn build_tables() -> Tables {
    let size = SIZE as i32;
    let mut windows = Vec::new();
    let mut point_windows = vec![Vec::new(); CELLS];
    let mut near = vec![Vec::new(); CELLS];
    let mut window_at = vec![[[NO_WINDOW; 6]; 4]; CELLS];
    for row in 0..size {
        for col in 0..size {
            for (direction, &(dc, dr)) in DIRECTIONS.iter().enumerate() {
                let cells: Option<Vec<u16>> = (0..6)
                    .map(|k| on_board(col + dc * k, row + dr * k))
                    .collect();
                if let Some(cells) = cells {
                    let id = windows.len() as u16;
                    let mut window = [0u16; 6];
                    for (k, (slot, &cell)) in window.iter_mut().zip(&cells).enumerate() {
                        *slot = cell;
                        point_windows[cell as usize].push(id);
                        window_at[cell as usize][direction][k] = id;
                    }
                    windows.push(window);
                }
                for step in [-2, -1, 1, 2] {
                    if let (Some(here), Some(there)) = (
                        on_board(col, row),
                        on_board(col + dc * step, row + dr * step),
                    ) {
                        near[here as usize].push(there);
                    }
                }
            }
        }
    }
    Tables {
        windows,
        point_windows,
        near,
        window_at,
    }
}

/// The board as the search sees it, with incrementally kept window counts and scores.
#[derive(Clone)]
pub(super) struct Board {
    pub(super) tables: &'static Tables,
    /// 0 empty, 1 first player (black), 2 second player (white).
    pub(super) cells: [u8; CELLS],
    /// Stones of each colour in each window.
    pub(super) counts: Vec<[u8; 2]>,
    /// Sum of `WINDOW_VALUE` over each colour's windows.
    pub(super) score: [i32; 2],
    /// For each colour and point, `window_gain` summed over the point's windows: on an empty
    /// point, how much a stone of that colour there would raise its score minus the other's
    /// (`gain`). Kept for every point, so that placing and removing only add differences.
    pub(super) gains: [[i32; 2]; CELLS],
    /// Windows with at least four stones of a colour and none of the other: threats to win.
    pub(super) threats: [u32; 2],
    pub(super) stones: u32,
    /// Zobrist key of the stones (`STONE_KEYS`), kept incrementally; the side to move is not
    /// in it (see `Search::key`).
    pub(super) hash: u64,
    /// Bounding box of the stones: min column, max column, min row, max row.
    pub(super) bbox: [i8; 4],
}

impl Board {
    pub(super) fn from_position(position: &Connect6) -> Board {
        let tables = tables();
        let mut board = Board {
            tables,
            cells: [0; CELLS],
            counts: vec![[0; 2]; tables.windows.len()],
            score: [0; 2],
            gains: [[0; 2]; CELLS],
            threats: [0; 2],
            stones: 0,
            hash: 0,
            bbox: [i8::MAX, i8::MIN, i8::MAX, i8::MIN],
        };
        for (p, windows) in tables.point_windows.iter().enumerate() {
            let empty_window = window_gain(0, 0) * windows.len() as i32;
            board.gains[p] = [empty_window; 2];
        }
        for index in 0..CELLS {
            if let Some(side) = position.stone_at(Point::from_index(index, SIZE)) {
                board.place(index as u16, side.index());
            }
        }
        board
    }

    pub(super) fn is_empty(&self, p: u16) -> bool {
        self.cells[p as usize] == 0
    }

    /// Places a stone of colour `side` (0 or 1) on empty point `p`; returns the old bounding
    /// box for `remove`.
    pub(super) fn place(&mut self, p: u16, side: usize) -> [i8; 4] {
        self.place_keeping::<true>(p, side)
    }

    /// `place` that leaves `gains` as they were (so they are stale until the stone is
    /// removed with `remove_stale`): for a stone tried and taken back before any gain is read.
    pub(super) fn place_stale(&mut self, p: u16, side: usize) -> [i8; 4] {
        self.place_keeping::<false>(p, side)
    }

    pub(super) fn place_keeping<const GAINS: bool>(&mut self, p: u16, side: usize) -> [i8; 4] {
        let other = 1 - side;
        for &w in &self.tables.point_windows[p as usize] {
            let count = &mut self.counts[w as usize];
            let before = *count;
            let (own, theirs) = (count[side] as usize, count[other] as usize);
            if theirs == 0 {
                self.score[side] += WINDOW_VALUE[own + 1] - WINDOW_VALUE[own];
                if own == 3 {
                    self.threats[side] += 1;
                }
            } else if own == 0 {
                self.score[other] -= WINDOW_VALUE[theirs];
                if theirs >= 4 {
                    self.threats[other] -= 1;
                }
            }
            count[side] += 1;
            let after = *count;
            if GAINS {
                self.update_gains(w, before, after);
            }
        }
        self.cells[p as usize] = side as u8 + 1;
        self.stones += 1;
        self.hash ^= STONE_KEYS[side][p as usize];
        let old = self.bbox;
        let (col, row) = ((p % SIZE as u16) as i8, (p / SIZE as u16) as i8);
        self.bbox = [
            old[0].min(col),
            old[1].max(col),
            old[2].min(row),
            old[3].max(row),
        ];
        old
    }

    /// Undoes `place(p, side)`, restoring the bounding box it returned.
    pub(super) fn remove(&mut self, p: u16, side: usize, old_bbox: [i8; 4]) {
        self.remove_keeping::<true>(p, side, old_bbox)
    }

    /// Undoes `place_stale(p, side)`.
    pub(super) fn remove_stale(&mut self, p: u16, side: usize, old_bbox: [i8; 4]) {
        self.remove_keeping::<false>(p, side, old_bbox)
    }

    pub(super) fn remove_keeping<const GAINS: bool>(
        &mut self,
        p: u16,
        side: usize,
        old_bbox: [i8; 4],
    ) {
        let other = 1 - side;
        for &w in &self.tables.point_windows[p as usize] {
            let count = &mut self.counts[w as usize];
            let before = *count;
            count[side] -= 1;
            let after = *count;
            let (own, theirs) = (count[side] as usize, count[other] as usize);
            if theirs == 0 {
                self.score[side] -= WINDOW_VALUE[own + 1] - WINDOW_VALUE[own];
                if own == 3 {
                    self.threats[side] -= 1;
                }
            } else if own == 0 {
                self.score[other] += WINDOW_VALUE[theirs];
                if theirs >= 4 {
                    self.threats[other] += 1;
                }
            }
            if GAINS {
                self.update_gains(w, before, after);
            }
        }
        self.cells[p as usize] = 0;
        self.stones -= 1;
        self.hash ^= STONE_KEYS[side][p as usize];
        self.bbox = old_bbox;
    }

    /// After window `w`'s counts went from `before` to `after`: its points' `gains` change
    /// by the difference of the window's `window_gain` for each colour.
    pub(super) fn update_gains(&mut self, w: u16, before: [u8; 2], after: [u8; 2]) {
        let delta = [
            window_gain(after[0], after[1]) - window_gain(before[0], before[1]),
            window_gain(after[1], after[0]) - window_gain(before[1], before[0]),
        ];
        if delta == [0, 0] {
            return;
        }
        for &q in &self.tables.windows[w as usize] {
            let gains = &mut self.gains[q as usize];
            gains[0] += delta[0];
            gains[1] += delta[1];
        }
    }

    /// How much a `side` stone on empty `p` would raise `side`'s score minus the other's.
    pub(super) fn gain(&self, p: u16, side: usize) -> i32 {
        self.gains[p as usize][side]
    }

    /// `gain(b, side)` as it would be after a `side` stone on empty `a` (`b` empty, not `a`),
    /// without placing it: only the windows holding both points change, and those lie on
    /// the line through them when they are at most five steps apart.
    pub(super) fn gain_after(&self, a: u16, b: u16, side: usize) -> i32 {
        self.gain_with(a, b, side, 0)
    }

    /// `gain(b, side)` with a `side` stone on `a` placed by `place_stale` (its windows' counts
    /// hold it, the gains do not).
    pub(super) fn gain_beside_stale(&self, a: u16, b: u16, side: usize) -> i32 {
        self.gain_with(a, b, side, 1)
    }

    /// `gain(b, side)` corrected for a `side` stone on `a` that the gains do not hold and
    /// the counts hold `counted` times (0 or 1).
    pub(super) fn gain_with(&self, a: u16, b: u16, side: usize, counted: u8) -> i32 {
        let mut gain = self.gain(b, side);
        let (dc, dr) = (
            (b % SIZE as u16) as i32 - (a % SIZE as u16) as i32,
            (b / SIZE as u16) as i32 - (a / SIZE as u16) as i32,
        );
        // The direction of the line from `a` to `b`, and `b`'s steps along it (signed).
        let (direction, steps) = match (dc, dr) {
            (_, 0) => (0, dc),
            (0, _) => (1, dr),
            _ if dc == dr => (2, dc),
            _ if dc == -dr => (3, dc),
            _ => return gain,
        };
        if steps == 0 || steps.abs() > 5 {
            return gain;
        }
        // `a` as the `k`-th point of a window holds `b` as the `k + steps`-th.
        let other = 1 - side;
        for (k, &w) in self.tables.window_at[a as usize][direction]
            .iter()
            .enumerate()
        {
            let at_b = k as i32 + steps;
            if w == NO_WINDOW || !(0..6).contains(&at_b) {
                continue;
            }
            let count = self.counts[w as usize];
            let (own, theirs) = (count[side] - counted, count[other]);
            gain += window_gain(own + 1, theirs) - window_gain(own, theirs);
        }
        gain
    }

    /// The empty points of every window where `side` threatens to win (4 or 5 of its stones,
    /// none of the other colour's); `NO_POINT` fills the second slot of a five.
    pub(super) fn threat_windows(&self, side: usize) -> Vec<[u16; 2]> {
        let mut out = Vec::new();
        if self.threats[side] == 0 {
            return out;
        }
        let other = 1 - side;
        for (w, count) in self.counts.iter().enumerate() {
            if count[side] >= 4 && count[other] == 0 {
                out.push(self.window_empties(w as u16));
            }
        }
        out
    }

    /// The first two empty points of window `w` (`NO_POINT` where there are fewer).
    pub(super) fn window_empties(&self, w: u16) -> [u16; 2] {
        let mut empties = [NO_POINT; 2];
        let mut n = 0;
        for &p in &self.tables.windows[w as usize] {
            if self.is_empty(p) && n < 2 {
                empties[n] = p;
                n += 1;
            }
        }
        empties
    }

    /// The empty points of the search window: the stones' bounding box grown by 2, clipped.
    pub(super) fn window_points(&self) -> impl Iterator<Item = u16> + '_ {
        let size = SIZE as i8;
        let (c0, c1, r0, r1) = if self.stones == 0 {
            (size / 2, size / 2, size / 2, size / 2)
        } else {
            (
                (self.bbox[0] - 2).max(0),
                (self.bbox[1] + 2).min(size - 1),
                (self.bbox[2] - 2).max(0),
                (self.bbox[3] + 2).min(size - 1),
            )
        };
        (r0..=r1)
            .flat_map(move |r| (c0..=c1).map(move |c| r as u16 * SIZE as u16 + c as u16))
            .filter(|&p| self.is_empty(p))
    }
}

/// What a stone placed on an empty point of a window holding `own` stones of its colour and
/// `theirs` of the other adds to its colour's score minus the other's: the window's next
/// value while the other colour is absent, the other colour's value taken away when its
/// colour is, nothing in a window holding both (or full).
pub(super) fn window_gain(own: u8, theirs: u8) -> i32 {
    let (own, theirs) = (own as usize, theirs as usize);
    if own + theirs >= 6 {
        0
    } else if theirs == 0 {
        WINDOW_VALUE[own + 1] - WINDOW_VALUE[own]
    } else if own == 0 {
        WINDOW_VALUE[theirs]
    } else {
        0
    }
}

//! The Hex engine's virtual connections: H-search (Anshelevich's AND and OR rules) over one
//! colour's groups, its two edges and the empty cells, which finds connections the colour
//! holds against any defence (full) or holds if it moves first (semi), each with the empty
//! cells it needs (its carrier). The engine reads the edge-to-edge ones: a semi connection of
//! the side to move is a win (its key is played), and the opponent's semi connections leave
//! only the cells of their carriers' intersection (the "must-play" region) worth a move.
//!
//! Two additions to the plain rules, both from MoHex's connection builder (its ideas, not its
//! data): second-row ladders that join two second-row points through the edge, as base
//! connections the AND and OR rules cannot derive; and captured cells, which let the AND and
//! OR rules combine connections that share cells an end point (or the AND's middle) captures.
//!
//! Everything found is sound (a found connection really holds); the search is capped (per
//! pair of points, per OR and in total work), so it finds fewer than exist, which only makes
//! the must-play region larger than it could be, never wrong.

use super::*;

/// A set of cells: bit `c` for cell `c`.
pub(super) type CellSet = u128;

/// Point numbers: a cell's own number for an empty cell or the captain of a stone's group;
/// the colour's first and last edge after the cells.
const EDGE_FIRST: usize = CELLS;
const EDGE_LAST: usize = CELLS + 1;
const POINTS: usize = CELLS + 2;
/// No point: an opponent's stone.
const NONE: u8 = u8::MAX;

/// Full connections kept per pair of points, semi connections per pair, semi connections
/// one OR may combine, and the AND attempts after which the search stops. On the kept MoHex
/// positions (`figures::h_search_on_vc_wins`) 6 / 10 / 4 saw 6 of 27 won after the key, and
/// these 16; larger caps (32 / 64 / 10) see no more.
const MAX_FULL: usize = 24;
const MAX_SEMI: usize = 40;
const MAX_OR: usize = 8;
const MAX_WORK: u64 = 4_000_000;

/// The cells' bits of a [`CellSet`]; a kept semi connection packs its key above them.
const CELL_BITS: CellSet = (1 << CELLS) - 1;

const fn bit(cell: usize) -> CellSet {
    1 << cell
}

/// Whether every cell of `small` is in `large`.
const fn subset(small: CellSet, large: CellSet) -> bool {
    small & large == small
}

/// Whether `cell` is in `set`.
pub(super) const fn holds(set: CellSet, cell: usize) -> bool {
    set & bit(cell) != 0
}

/// Puts `item` into the first `*count` entries of `list`, which hold no carrier that contains
/// another: refused when a kept carrier is a subset of its carrier; kept ones with a superset
/// are dropped; when the list is full, the largest carrier gives way to a smaller one. Whether
/// it was put in.
fn insert_minimal<T: Copy>(
    list: &mut [T],
    count: &mut u8,
    item: T,
    carrier_of: impl Fn(&T) -> CellSet,
) -> bool {
    let carrier = carrier_of(&item);
    let n = *count as usize;
    if list[..n].iter().any(|e| subset(carrier_of(e), carrier)) {
        return false;
    }
    let mut kept = 0;
    for i in 0..n {
        if !subset(carrier, carrier_of(&list[i])) {
            list[kept] = list[i];
            kept += 1;
        }
    }
    if kept == list.len() {
        let largest = (0..kept).max_by_key(|&i| carrier_of(&list[i]).count_ones());
        match largest {
            Some(i) if carrier_of(&list[i]).count_ones() > carrier.count_ones() => list[i] = item,
            _ => {
                *count = kept as u8;
                return false;
            }
        }
    } else {
        list[kept] = item;
        kept += 1;
    }
    *count = kept as u8;
    true
}

/// The cells of a set, lowest first.
#[cfg(test)]
pub(super) fn cells_of(mut set: CellSet) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        if set == 0 {
            None
        } else {
            let c = set.trailing_zeros() as u8;
            set &= set - 1;
            Some(c)
        }
    })
}

/// One colour's virtual connections on one position.
pub(super) struct Connections {
    /// Per cell: its point ([`NONE`] for the other colour's stones).
    point: [u8; CELLS],
    /// The colour's own stones, which are never in a carrier and may be an AND's middle.
    own: CellSet,
    /// Per pair `x < y` (index `x * POINTS + y`): the full connections' carriers.
    full: Vec<[CellSet; MAX_FULL]>,
    full_count: Vec<u8>,
    /// Per pair: the semi connections, each its carrier (key included) with the key's
    /// number packed above the cells' bits ([`pack_semi`]).
    semi: Vec<[CellSet; MAX_SEMI]>,
    semi_count: Vec<u8>,
    /// Per point: the points it has a full connection with, one bit each.
    partners: [u128; POINTS],
    /// Full connections found and not yet combined with the others.
    queue: std::collections::VecDeque<(u8, u8, CellSet)>,
    work: u64,
    /// Whether one group already touches both edges.
    joined: bool,
    /// Per point: the two cells an own stone there would capture ([`Connections::find_captured`]);
    /// empty for stones, edges and most cells.
    captured: [CellSet; POINTS],
    /// The empty cells the fill-in gave the colour (its captured pairs and the dead cells).
    filled: CellSet,
    /// The cells of the colour's own captured pairs: the searched board holds them as its
    /// stones, but the other colour may still intrude there.
    own_captured: CellSet,
}

fn pair(x: usize, y: usize) -> usize {
    if x < y {
        x * POINTS + y
    } else {
        y * POINTS + x
    }
}

impl Connections {
    /// Empty tables (about 15 MiB), to be filled by [`Connections::search`].
    pub(super) fn new() -> Connections {
        Connections {
            point: [NONE; CELLS],
            own: 0,
            full: vec![[0; MAX_FULL]; POINTS * POINTS],
            full_count: vec![0; POINTS * POINTS],
            semi: vec![[0; MAX_SEMI]; POINTS * POINTS],
            semi_count: vec![0; POINTS * POINTS],
            partners: [0; POINTS],
            queue: std::collections::VecDeque::new(),
            work: 0,
            joined: false,
            captured: [0; POINTS],
            filled: 0,
            own_captured: 0,
        }
    }

    /// H-search for `colour` on `cells` in fresh tables (for tests and figures).
    pub(super) fn build(cells: &Cells, colour: usize) -> Connections {
        let mut vc = Connections::new();
        vc.search(cells, colour);
        vc
    }

    /// H-search for `colour` on `cells` after fill-in (captured pairs to their owners, dead
    /// cells to `colour`: the same winner, and fewer cells to search), replacing what the
    /// tables held.
    pub(super) fn search(&mut self, cells: &Cells, colour: usize) {
        let fill = fill_in(cells, colour);
        self.filled = fill.dead | fill.captured[colour];
        self.own_captured = fill.captured[colour];
        let cells = &fill.board;
        self.point = [NONE; CELLS];
        self.own = 0;
        self.full_count.fill(0);
        self.semi_count.fill(0);
        self.partners = [0; POINTS];
        self.queue.clear();
        self.work = 0;
        self.joined = false;
        self.label(cells, colour);
        if self.joined {
            return;
        }
        self.find_captured(cells, colour);
        self.base(colour);
        self.run();
    }

    /// Points of every cell: groups get one captain (the edge they touch, else their first
    /// cell).
    fn label(&mut self, cells: &Cells, colour: usize) {
        let own = stone(colour);
        let mut seen = [false; CELLS];
        for start in 0..CELLS {
            match cells[start] {
                EMPTY => self.point[start] = start as u8,
                s if s == own && !seen[start] => {
                    let mut members = [0u8; CELLS];
                    let mut size = 0;
                    let touches = flood_group(cells, colour, start, &mut seen, |c| {
                        members[size] = c as u8;
                        size += 1;
                    });
                    if touches[0] && touches[1] {
                        self.joined = true;
                    }
                    let captain = if touches[0] {
                        EDGE_FIRST
                    } else if touches[1] {
                        EDGE_LAST
                    } else {
                        start
                    };
                    for &m in &members[..size] {
                        self.point[m as usize] = captain as u8;
                        self.own |= bit(m as usize);
                    }
                }
                _ => {}
            }
        }
    }

    /// Captured sets: an empty cell p with two adjacent empty neighbours x and y, beyond
    /// which lie three of the colour's stones (or its edge) each touching x or y: once the
    /// colour owns p, an intrusion into x or y is answered by the other, and p is joined to
    /// all three either way. The first such pair found is p's captured set.
    fn find_captured(&mut self, cells: &Cells, colour: usize) {
        self.captured = [0; POINTS];
        let own = stone(colour);
        // Whether (column, row) holds one of the colour's stones or is past its edge.
        let own_at = |c: i32, r: i32| match cell_at(c, r) {
            NO => is_own_edge(colour, c, r),
            cell => cells[cell as usize] == own,
        };
        for p in 0..CELLS {
            if cells[p] != EMPTY {
                continue;
            }
            let (pc, pr) = ((p % N) as i32, (p / N) as i32);
            for i in 0..6 {
                let (d1, d2) = (RING_OFFSETS[i], RING_OFFSETS[(i + 1) % 6]);
                let (x, y) = (cell_at(pc + d1.0, pr + d1.1), cell_at(pc + d2.0, pr + d2.1));
                if x == NO || y == NO || cells[x as usize] != EMPTY || cells[y as usize] != EMPTY {
                    continue;
                }
                let walls = [
                    (pc + 2 * d1.0, pr + 2 * d1.1),
                    (pc + d1.0 + d2.0, pr + d1.1 + d2.1),
                    (pc + 2 * d2.0, pr + 2 * d2.1),
                ];
                if walls.iter().all(|&(c, r)| own_at(c, r)) {
                    self.captured[p] = bit(x as usize) | bit(y as usize);
                    break;
                }
            }
        }
    }

    /// Adjacent points are fully connected with an empty carrier.
    fn base(&mut self, colour: usize) {
        for &(a, b) in PAIRS.iter() {
            let (pa, pb) = (self.point[a as usize], self.point[b as usize]);
            if pa != NONE && pb != NONE && pa != pb {
                self.add_full(pa as usize, pb as usize, 0);
            }
        }
        for c in 0..CELLS {
            let p = self.point[c];
            if p == NONE {
                continue;
            }
            if on_source(colour, c) && p as usize != EDGE_FIRST {
                self.add_full(p as usize, EDGE_FIRST, 0);
            }
            if on_sink(colour, c) && p as usize != EDGE_LAST {
                self.add_full(p as usize, EDGE_LAST, 0);
            }
        }
        self.ladder_links(colour);
    }

    /// Second-row ladders, joined through the edge. X = a(s) and E = a(e) are second-row
    /// points, e ≥ s + 2, where a(p) touches the edge cells b(p − 1) and b(p). Run from X: the
    /// colour owning X has an edge cell of X (b(s), or b(s − 1)) or a(s + 1); from each a(p)
    /// after it, b(p) or a(p + 1); a(e − 1) is next to E. Each pair of choices has no cell in
    /// common, so X reaches the edge or E, using a(s + 1)..a(e − 1), b(s + 1)..b(e − 2) and
    /// X's edge cell; E keeps its own two, b(e − 1) and b(e), apart from those. Run from E
    /// toward X it is the mirror image: E's edge cell b(e − 1) or b(e), the same middle, and
    /// X's two. Once the colour owns X and E they are joined (through the edge if need be),
    /// which the AND rule cannot find since an edge is never its middle.
    fn ladder_links(&mut self, colour: usize) {
        let theirs: CellSet = (0..CELLS)
            .filter(|&c| self.point[c] == NONE)
            .fold(0, |m, c| m | bit(c));
        for edge in 0..2 {
            // The second-row cell `a(p)` touches the edge cells `b(p - 1)` and `b(p)`.
            let a = |p: usize| edge_view(colour, edge, p as i32, 1) as usize;
            let b = |p: usize| edge_view(colour, edge, p as i32, 0) as usize;
            for s in 0..N {
                for e in s + 2..N {
                    let (x, y) = (self.point[a(s)], self.point[a(e)]);
                    if x == NONE || y == NONE || x == y {
                        continue;
                    }
                    let seconds = (s + 1..e).fold(0, |m: CellSet, p| m | bit(a(p)));
                    let middle = (s + 1..e - 1).fold(0, |m: CellSet, p| m | bit(b(p)));
                    // The edge cells: b(s + 1)..b(e − 2) for the ladder's middle, one edge
                    // cell of the point it runs from (either of its two) and both of the
                    // point it runs to.
                    let e_pair = bit(b(e - 1)) | bit(b(e));
                    let x_pair = (s > 0).then(|| bit(b(s - 1)) | bit(b(s)));
                    let windows = [
                        Some(bit(b(s)) | e_pair),
                        x_pair.map(|_| bit(b(s - 1)) | e_pair),
                        x_pair.map(|pair| bit(b(e - 1)) | pair),
                        x_pair.map(|pair| bit(b(e)) | pair),
                    ];
                    for window in windows.into_iter().flatten() {
                        let cells = seconds | middle | window;
                        if cells & theirs == 0 {
                            self.add_full(x as usize, y as usize, cells & !self.own);
                        }
                    }
                }
            }
        }
    }

    /// Whether `p` (a point) is a cell in `set`.
    fn point_in(p: usize, set: CellSet) -> bool {
        p < CELLS && holds(set, p)
    }

    /// Adds a full connection unless one with a subset of its carrier is known; drops known
    /// ones with a superset; keeps the smallest when the pair's list is full.
    fn add_full(&mut self, x: usize, y: usize, carrier: CellSet) -> bool {
        if x == y || Self::point_in(x, carrier) || Self::point_in(y, carrier) {
            return false;
        }
        let k = pair(x, y);
        let added = insert_minimal(&mut self.full[k], &mut self.full_count[k], carrier, |&c| c);
        if added {
            self.partners[x] |= 1 << y;
            self.partners[y] |= 1 << x;
            self.queue.push_back((x as u8, y as u8, carrier));
        }
        added
    }

    /// Adds a semi connection with `key` (in `carrier`) unless a full one or a semi one with a
    /// subset of its carrier is known, then tries the OR rule with it.
    fn add_semi(&mut self, x: usize, y: usize, carrier: CellSet, key: u8) {
        if x == y || Self::point_in(x, carrier) || Self::point_in(y, carrier) {
            return;
        }
        let k = pair(x, y);
        let fulls = self.full_count[k] as usize;
        if self.full[k][..fulls].iter().any(|&c| subset(c, carrier)) {
            return;
        }
        let semi = pack_semi(carrier, key);
        if insert_minimal(&mut self.semi[k], &mut self.semi_count[k], semi, |&s| {
            s & CELL_BITS
        }) {
            self.or_rule(x, y, carrier);
        }
    }

    /// The OR rule: semi connections of one pair whose carriers have no cell in common make a
    /// full one (whatever the opponent plays, one of them is untouched and its key joins).
    /// Combinations with the newest (`carrier`) and up to [`MAX_OR`] − 1 others are tried;
    /// a combination the rest of the list cannot complete is not extended (Benzene's "tail"
    /// test), which keeps the larger caps cheap.
    fn or_rule(&mut self, x: usize, y: usize, carrier: CellSet) {
        let k = pair(x, y);
        let count = self.semi_count[k] as usize;
        let mut list = self.semi[k];
        for entry in &mut list[..count] {
            *entry &= CELL_BITS;
        }
        let caps = [self.captured[x], self.captured[y]];
        let cap = caps[0] | caps[1];
        // Fixed-size work lists (this runs for every semi connection added): each popped
        // entry pushes at most one per semi connection of the pair, and entries use one more
        // semi connection than the one that pushed them, up to MAX_OR; the search stops once
        // MAX_FULL are found, after the entry that found them.
        let mut found = [0 as CellSet; MAX_FULL + MAX_SEMI];
        let mut found_len = 0;
        // Per index: the intersection of the carriers from there on (the newest left out). An
        // intersection that keeps an uncaptured cell of it cannot be emptied by them.
        let mut tail = [CELL_BITS; MAX_SEMI + 1];
        for i in (0..count).rev() {
            tail[i] = tail[i + 1]
                & if list[i] == carrier {
                    CELL_BITS
                } else {
                    list[i]
                };
        }
        // Depth-first over the others in list order: (next index, intersection, union, used).
        let mut stack = [(0usize, 0 as CellSet, 0 as CellSet, 0usize); MAX_SEMI * MAX_OR];
        stack[0] = (0, carrier, carrier, 1);
        let mut stack_len = 1;
        while stack_len > 0 {
            stack_len -= 1;
            let (from, inter, union, used) = stack[stack_len];
            for i in from..count {
                let c = list[i];
                if c == carrier {
                    continue;
                }
                let meet = inter & c;
                if meet == inter {
                    continue;
                }
                if meet & !cap == 0 {
                    if found_len < found.len() {
                        found[found_len] = union | c | captured_touching(&caps, meet);
                        found_len += 1;
                    }
                } else if used + 1 < MAX_OR
                    && stack_len < stack.len()
                    && meet & tail[i + 1] & !cap == 0
                {
                    stack[stack_len] = (i + 1, meet, union | c, used + 1);
                    stack_len += 1;
                }
            }
            if found_len >= MAX_FULL {
                break;
            }
        }
        for &f in &found[..found_len] {
            self.add_full(x, y, f);
        }
    }

    /// The AND rule over the queue: a new full connection x–m with carrier `c1` meets each
    /// full connection m–z with a carrier `c2` disjoint from it (neither holding the other's
    /// far end). Through an own group m, x–z is full with carrier c1 ∪ c2; through an empty
    /// cell m, it is semi with key m and carrier c1 ∪ c2 ∪ {m}. Edges are never the middle.
    fn run(&mut self) {
        while let Some((x, y, c1)) = self.queue.pop_front() {
            let k = pair(x as usize, y as usize);
            // Dropped since (a smaller carrier replaced it): its work is covered.
            if !self.full[k][..self.full_count[k] as usize].contains(&c1) {
                continue;
            }
            for (far, mid) in [(x as usize, y as usize), (y as usize, x as usize)] {
                if mid >= CELLS {
                    continue;
                }
                let through_stone = self.own & bit(mid) != 0;
                // The points m has full connections with (none is added to m's in this
                // loop: every add here is between `far` and another point).
                let mut partners = self.partners[mid] & !(1 << far);
                while partners != 0 {
                    let z = partners.trailing_zeros() as usize;
                    partners &= partners - 1;
                    let kz = pair(mid, z);
                    let count = self.full_count[kz] as usize;
                    if self.work >= MAX_WORK {
                        self.queue.clear();
                        return;
                    }
                    self.work += count as u64;
                    // Read in place: the adds below are between `far` and `z`, never to
                    // the pair m–z.
                    let caps = [self.captured[far], self.captured[z], self.captured[mid]];
                    let cap = caps[0] | caps[1] | caps[2];
                    for i in 0..count {
                        let c2 = self.full[kz][i];
                        let meet = c1 & c2;
                        if meet & !cap != 0 || Self::point_in(far, c2) || Self::point_in(z, c1) {
                            continue;
                        }
                        let extra = captured_touching(&caps, meet);
                        if through_stone {
                            self.add_full(far, z, c1 | c2 | extra);
                        } else {
                            self.add_semi(far, z, c1 | c2 | bit(mid) | extra, mid as u8);
                        }
                    }
                }
            }
        }
    }

    /// Whether the colour holds its two edges together against any defence.
    pub(super) fn won(&self) -> bool {
        self.joined || self.full_count[pair(EDGE_FIRST, EDGE_LAST)] > 0
    }

    /// The empty cells the last search's fill-in gave the colour: when [`Self::won`] holds
    /// with no full connection, the colour is joined through them.
    pub(super) fn filled(&self) -> CellSet {
        self.filled
    }

    /// The edge-to-edge full connections' carriers.
    pub(super) fn edge_fulls(&self) -> &[CellSet] {
        let k = pair(EDGE_FIRST, EDGE_LAST);
        &self.full[k][..self.full_count[k] as usize]
    }

    /// The edge-to-edge semi connections (carrier, key).
    pub(super) fn edge_semis(&self) -> impl ExactSizeIterator<Item = (CellSet, u8)> + '_ {
        self.semis(EDGE_FIRST, EDGE_LAST)
    }

    /// The semi connections (carrier, key) between two points (cells, or 121 and 122 for the
    /// first and last edge).
    pub(super) fn semis(
        &self,
        x: usize,
        y: usize,
    ) -> impl ExactSizeIterator<Item = (CellSet, u8)> + '_ {
        let k = pair(x, y);
        self.semi[k][..self.semi_count[k] as usize]
            .iter()
            .map(|&s| unpack_semi(s))
    }

    /// Where the other colour must play to stop this one joining its edges by moving next:
    /// the intersection of the edge-to-edge semi connections' carriers, plus the colour's own
    /// captured-pair cells (the carriers were found with those cells filled, so they count on
    /// them: an intrusion there is a threat the colour must answer, which can stop its win);
    /// `None` when there is none (anywhere will do, as far as the search knows) or when the
    /// colour is already joined by a full connection (nowhere helps).
    pub(super) fn must_play(&self) -> Option<CellSet> {
        if self.won() {
            return None;
        }
        let semis = self.edge_semis();
        if semis.len() == 0 {
            return None;
        }
        Some(semis.fold(!0, |acc, (c, _)| acc & c) | self.own_captured)
    }

    /// AND attempts made (for tests and figures).
    pub(super) fn work(&self) -> u64 {
        self.work
    }
}

/// A semi connection as kept: its carrier with its key's number above the cells' bits.
const fn pack_semi(carrier: CellSet, key: u8) -> CellSet {
    carrier | (key as CellSet) << CELLS
}

/// A kept semi connection's carrier and key.
const fn unpack_semi(semi: CellSet) -> (CellSet, u8) {
    (semi & CELL_BITS, (semi >> CELLS) as u8)
}

/// The captured sets among `caps` that the cells `overlap` fall in, joined: what a carrier
/// must add when two connections share those cells (empty when they share none). A set the
/// overlap misses is left out, as the connection does not count on it.
fn captured_touching(caps: &[CellSet], overlap: CellSet) -> CellSet {
    caps.iter()
        .filter(|&&set| set & overlap != 0)
        .fold(0, |joined, &set| joined | set)
}

#[cfg(test)]
impl Connections {
    /// The full connections' carriers between two points (cells, or 121 and 122 for the
    /// first and last edge).
    pub(super) fn fulls(&self, x: usize, y: usize) -> &[CellSet] {
        let k = pair(x, y);
        &self.full[k][..self.full_count[k] as usize]
    }
}

//! The transposition table the alpha-beta engines share (Connect6, Surakarta, Jiu): a
//! fixed-size, power-of-two array of entries indexed by the low bits of a position's key, with
//! the bound of each stored score, the best move found, and a replacement rule per table (one
//! of them uses the generation each entry keeps, one per move, so that fresh entries replace
//! old ones). Decided scores (wins and losses counted in plies) are kept relative to the node,
//! not the root, so an entry is valid wherever the position recurs.

/// What a stored score says about the node's true value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Bound {
    /// The value itself.
    #[default]
    Exact,
    /// At least the score (the search failed high).
    Lower,
    /// At most the score (every move failed low).
    Upper,
}

impl Bound {
    /// The bound of `best`, a node's result from a search with the window (`alpha`, `beta`).
    pub fn of(best: i32, alpha: i32, beta: i32) -> Bound {
        if best >= beta {
            Bound::Lower
        } else if best > alpha {
            Bound::Exact
        } else {
            Bound::Upper
        }
    }
}

/// When a stored entry gives way to a new one in its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// To its own position, to an entry of an earlier move, or to a search at least as deep
    /// (Connect6 and Surakarta).
    DeepOrFresh,
    /// To any other position, and to its own position searched at least as deep (Jiu).
    NewOrDeeper,
}

/// One slot of the table.
#[derive(Debug, Clone, Copy, Default)]
struct Entry<M> {
    key: u64,
    score: i32,
    best: Option<M>,
    depth: u8,
    bound: Bound,
    /// 0 marks a slot never written.
    generation: u8,
}

/// What the table knows of a position, its score already made relative to the searching node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit<M> {
    pub score: i32,
    pub depth: u32,
    pub bound: Bound,
    pub best: Option<M>,
}

impl<M> Hit<M> {
    /// The stored score, when it was searched at least `depth` deep and decides a node
    /// searched with the window (`alpha`, `beta`).
    pub fn cutoff(&self, depth: u32, alpha: i32, beta: i32) -> Option<i32> {
        let decides = match self.bound {
            Bound::Exact => true,
            Bound::Lower => self.score >= beta,
            Bound::Upper => self.score <= alpha,
        };
        (self.depth >= depth && decides).then_some(self.score)
    }
}

/// The table: allocated by `allocate` or at the first `new_search` (a table of 0 MiB stores
/// nothing), kept between moves.
#[derive(Debug, Clone)]
pub struct TranspositionTable<M> {
    entries: Vec<Entry<M>>,
    mib: u64,
    generation: u8,
    replacement: Replacement,
    /// Scores at or beyond ± this are decided: a win or loss this many plies from the root
    /// is stored as its distance from the node instead.
    decided: i32,
}

/// A table of no memory, storing nothing (what `std::mem::take` leaves behind).
impl<M: Copy + Default> Default for TranspositionTable<M> {
    fn default() -> TranspositionTable<M> {
        TranspositionTable::with_mib(0, i32::MAX, Replacement::DeepOrFresh)
    }
}

impl<M: Copy + Default> TranspositionTable<M> {
    /// A table of `mib` MiB (rounded down to a power of two entries), not yet allocated;
    /// scores of magnitude `decided` or more are win/loss scores that count plies.
    pub fn with_mib(mib: u64, decided: i32, replacement: Replacement) -> TranspositionTable<M> {
        TranspositionTable {
            entries: Vec::new(),
            mib,
            generation: 0,
            replacement,
            decided,
        }
    }

    /// Allocates the table now if it is not yet (for an engine that allocates when it is built,
    /// not on the clock at its first search).
    pub fn allocate(&mut self) {
        if self.entries.is_empty() && self.mib > 0 {
            self.entries = vec![Entry::default(); super::table_entries::<Entry<M>>(self.mib)];
        }
        // What is stored from now on is found, even before the first `new_search`.
        self.generation = self.generation.max(1);
    }

    /// Allocates the table if needed and starts a new generation (one per move).
    pub fn new_search(&mut self) {
        self.allocate();
        // 1 to 255: generation 0 marks a slot never written.
        self.generation = self.generation % 255 + 1;
    }

    fn slot(&self, key: u64) -> usize {
        // `entries.len()` is a power of two (or 0, when nothing is found).
        key as usize & self.entries.len().wrapping_sub(1)
    }

    /// What is stored for `key`, seen from a node `ply` plies from the root.
    pub fn probe(&self, key: u64, ply: u32) -> Option<Hit<M>> {
        let entry = self.entries.get(self.slot(key))?;
        (entry.key == key && entry.generation != 0).then(|| Hit {
            score: self.relative_to_root(entry.score, ply),
            depth: u32::from(entry.depth),
            bound: entry.bound,
            best: entry.best,
        })
    }

    /// Stores a node's result where the table's `Replacement` lets it; without a `best` move
    /// (a node where every move failed low, whose best is no guide) the move already stored for
    /// the same key is kept.
    pub fn store(
        &mut self,
        key: u64,
        ply: u32,
        depth: u32,
        score: i32,
        bound: Bound,
        best: Option<M>,
    ) {
        let generation = self.generation;
        let score = self.relative_to_node(score, ply);
        let slot = self.slot(key);
        let Some(entry) = self.entries.get_mut(slot) else {
            return;
        };
        let depth = depth.min(255) as u8;
        let replace = match self.replacement {
            Replacement::DeepOrFresh => {
                entry.key == key || entry.generation != generation || depth >= entry.depth
            }
            Replacement::NewOrDeeper => entry.key != key || depth >= entry.depth,
        };
        if replace {
            let best = match best {
                None if entry.key == key => entry.best,
                best => best,
            };
            *entry = Entry {
                key,
                score,
                best,
                depth,
                bound,
                generation,
            };
        }
    }

    /// A root-relative score as the node's own (a win in N plies from the root is a win in
    /// N − `ply` from the node).
    fn relative_to_node(&self, score: i32, ply: u32) -> i32 {
        self.decided_moved_by(score, ply as i32)
    }

    /// The inverse of `relative_to_node`.
    fn relative_to_root(&self, score: i32, ply: u32) -> i32 {
        self.decided_moved_by(score, -(ply as i32))
    }

    /// A decided score moved `plies` further from zero (nearer for negative `plies`); other
    /// scores as they are.
    fn decided_moved_by(&self, score: i32, plies: i32) -> i32 {
        if score >= self.decided {
            score + plies
        } else if score <= -self.decided {
            score - plies
        } else {
            score
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECIDED: i32 = 1_000;

    fn table() -> TranspositionTable<u16> {
        let mut table = TranspositionTable::with_mib(1, DECIDED, Replacement::DeepOrFresh);
        table.new_search();
        table
    }

    #[test]
    fn a_stored_score_comes_back_with_its_bound_depth_and_move() {
        let mut table = table();
        table.store(42, 0, 5, 17, Bound::Lower, Some(7));
        let hit = table.probe(42, 0).expect("stored");
        assert_eq!(
            hit,
            Hit {
                score: 17,
                depth: 5,
                bound: Bound::Lower,
                best: Some(7)
            }
        );
        assert_eq!(table.probe(43, 0), None, "another key");
    }

    #[test]
    fn a_win_is_stored_as_its_distance_from_the_node() {
        let mut table = table();
        // A win 9 plies from the root, found at a node 4 plies deep: 5 plies from the node.
        table.store(1, 4, 3, DECIDED + 100 - 9, Bound::Exact, None);
        assert_eq!(table.probe(1, 4).map(|h| h.score), Some(DECIDED + 91));
        // The same position reached 2 plies from the root: the win is 7 plies away.
        assert_eq!(table.probe(1, 2).map(|h| h.score), Some(DECIDED + 93));
        table.store(2, 4, 3, -(DECIDED + 91), Bound::Exact, None);
        assert_eq!(table.probe(2, 2).map(|h| h.score), Some(-(DECIDED + 93)));
        table.store(3, 4, 3, DECIDED - 1, Bound::Exact, None);
        assert_eq!(
            table.probe(3, 2).map(|h| h.score),
            Some(DECIDED - 1),
            "an undecided score is not moved"
        );
    }

    #[test]
    fn a_cutoff_needs_the_depth_and_a_bound_that_decides_the_window() {
        let hit = |score, bound| Hit::<u16> {
            score,
            depth: 4,
            bound,
            best: None,
        };
        assert_eq!(hit(5, Bound::Exact).cutoff(4, 0, 10), Some(5));
        assert_eq!(hit(5, Bound::Exact).cutoff(5, 0, 10), None, "too shallow");
        assert_eq!(hit(10, Bound::Lower).cutoff(3, 0, 10), Some(10));
        assert_eq!(hit(9, Bound::Lower).cutoff(3, 0, 10), None);
        assert_eq!(hit(0, Bound::Upper).cutoff(3, 0, 10), Some(0));
        assert_eq!(hit(1, Bound::Upper).cutoff(3, 0, 10), None);
        assert_eq!(Bound::of(10, 0, 10), Bound::Lower);
        assert_eq!(Bound::of(5, 0, 10), Bound::Exact);
        assert_eq!(Bound::of(0, 0, 10), Bound::Upper);
    }

    #[test]
    fn a_deeper_entry_of_this_move_is_kept_and_an_old_one_replaced() {
        let mut table = table();
        let slots = table.entries.len() as u64;
        let (a, b) = (5, 5 + slots);
        table.store(a, 0, 6, 1, Bound::Exact, Some(1));
        table.store(b, 0, 2, 2, Bound::Exact, Some(2));
        assert!(
            table.probe(a, 0).is_some(),
            "a shallower search does not evict"
        );
        assert!(table.probe(b, 0).is_none());
        table.new_search();
        table.store(b, 0, 2, 2, Bound::Exact, Some(2));
        assert_eq!(
            table.probe(b, 0).and_then(|h| h.best),
            Some(2),
            "last move's entry gives way"
        );
        // No best move keeps the one stored for the same position.
        table.store(b, 0, 3, -4, Bound::Upper, None);
        assert_eq!(table.probe(b, 0).and_then(|h| h.best), Some(2));
    }

    #[test]
    fn new_or_deeper_gives_way_to_other_positions_and_keeps_its_own_deeper_result() {
        let mut table = TranspositionTable::with_mib(1, DECIDED, Replacement::NewOrDeeper);
        table.new_search();
        let slots = table.entries.len() as u64;
        let (a, b) = (5, 5 + slots);
        table.store(a, 0, 6, 1, Bound::Exact, Some(1));
        table.store(a, 0, 2, 9, Bound::Exact, Some(9));
        assert_eq!(
            table.probe(a, 0).map(|h| h.score),
            Some(1),
            "its own deeper result stays"
        );
        table.store(b, 0, 2, 2, Bound::Exact, Some(2));
        assert!(
            table.probe(a, 0).is_none(),
            "another position takes the slot"
        );
        assert_eq!(table.probe(b, 0).map(|h| h.score), Some(2));
    }

    #[test]
    fn an_allocated_table_finds_what_it_stores_before_any_search_starts() {
        let mut table = TranspositionTable::with_mib(1, DECIDED, Replacement::NewOrDeeper);
        table.allocate();
        table.store(9, 0, 1, 3, Bound::Exact, Some(4u32));
        assert_eq!(table.probe(9, 0).and_then(|h| h.best), Some(4));
    }

    #[test]
    fn the_engines_entries_are_24_bytes() {
        // docs/engines.md states these sizes, and `tt_mb` defaults are chosen from them.
        assert_eq!(std::mem::size_of::<Entry<(u16, u16)>>(), 24, "Connect6");
        assert_eq!(std::mem::size_of::<Entry<u16>>(), 24, "Surakarta");
        assert_eq!(std::mem::size_of::<Entry<u32>>(), 24, "Jiu");
    }

    #[test]
    fn a_table_of_no_memory_stores_nothing() {
        let mut table = TranspositionTable::<u16>::with_mib(0, DECIDED, Replacement::DeepOrFresh);
        table.new_search();
        table.store(1, 0, 1, 1, Bound::Exact, Some(1));
        assert_eq!(table.probe(1, 0), None);
    }
}

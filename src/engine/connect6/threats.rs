//! Threat-space proof search with relevance zones for the `connect6` engine: proves that the
//! side to move wins by a sequence of threats, single threats included, and says which points
//! the proof depends on.
//!
//! The search in the parent module follows only continuous *double* threats (the defender's
//! two stones both go to blocking). Most of the engine's lost games against Cloudict were
//! lost to sequences of *single* threats: a four that one stone blocks plus a free stone that
//! builds the next line, the defender keeping one free stone a turn. Trying every free stone
//! of the defender is out of reach (some 300 a turn), so, as in Wu and Huang's
//! relevance-zone-oriented proof search for Connect6, the defender's free stone is first
//! *passed*: if the attacker still wins, the proof names its relevance zone (the attacker's
//! stones, the empty points of every threat window the defender had to answer, and the zones
//! of the sub-proofs), and only free stones inside that zone, or making a four of the
//! defender's own (a counter-threat the attacker must answer), can refute it; those are tried.
//!
//! Not a complete proof: a free stone outside the zone that gives the defender a four only
//! together with later blocking stones is not tried. Every search is bounded by the search's
//! deadline and abort flag (polled at every node) and by its depth in attacker turns.

use super::board::NO_POINT;
use super::search::{blocking_pairs, blocks_all, stones_to_block, Pair, Search};
use crate::game::connect6::CELLS;

/// Points a proof depends on: a set over the board's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Zone([u64; CELLS.div_ceil(64)]);

impl Zone {
    pub(super) fn new() -> Zone {
        Zone([0; CELLS.div_ceil(64)])
    }

    pub(super) fn add(&mut self, p: u16) {
        if (p as usize) < CELLS {
            self.0[p as usize / 64] |= 1 << (p % 64);
        }
    }

    pub(super) fn contains(&self, p: u16) -> bool {
        (p as usize) < CELLS && self.0[p as usize / 64] & (1 << (p % 64)) != 0
    }

    fn union(&mut self, other: &Zone) {
        for (word, more) in self.0.iter_mut().zip(other.0) {
            *word |= more;
        }
    }

    fn add_windows(&mut self, windows: &[[u16; 2]]) {
        for &p in windows.iter().flatten() {
            if p != NO_POINT {
                self.add(p);
            }
        }
    }

    /// The points in the zone, in board order.
    pub(super) fn points(&self) -> Vec<u16> {
        (0..CELLS as u16).filter(|&p| self.contains(p)).collect()
    }
}

/// Single-threat pairs tried at each attacker node, as a share of `threat_width` (double
/// threats are tried first and in full).
const SINGLE_SHARE: usize = 3;

impl Search<'_> {
    /// The first pair of the shortest threat win (single and double threats) of at most
    /// `depth` attacker turns for the side to move, with the proof's relevance zone,
    /// deepening one turn at a time; `None` if there is none within the depth or time.
    pub(super) fn shortest_threat_proof(&mut self, depth: u32) -> Option<(Pair, Zone)> {
        self.deepening(depth, Search::threat_proof)
    }

    /// A winning first pair of a threat sequence of at most `depth` attacker turns for the
    /// side to move, and the zone its proof depends on.
    fn threat_proof(&mut self, depth: u32) -> Option<(Pair, Zone)> {
        if depth == 0 || self.should_stop() {
            return None;
        }
        let attacker = self.to_move;
        if self.board.threats[attacker] > 0 {
            return None; // a win at once is taken before this search
        }
        let against = self.board.threat_windows(1 - attacker);
        if stones_to_block(&against) > 2 {
            return None;
        }
        let mut moves = self.double_threats(&against);
        // A single threat cannot end the sequence, so it is tried only with a turn to spare.
        if depth > 1 {
            let known = moves.clone();
            moves.extend(
                self.single_threats(&against)
                    .into_iter()
                    .filter(|p| !known.iter().any(|k| (k.a, k.b) == (p.a, p.b))),
            );
        }
        for pair in moves {
            let boxes = self.play_pair(pair);
            let proof = self.every_defence_loses(depth);
            self.undo_pair(pair, boxes);
            if self.stopped {
                return None;
            }
            if let Some(mut zone) = proof {
                zone.add(pair.a);
                zone.add(pair.b);
                return Some((pair, zone));
            }
        }
        None
    }

    /// After the attacker's pair, the defender to move: the zone of the proof that every
    /// defence loses within `depth - 1` more attacker turns, `None` if one holds (or the pair
    /// made no threat).
    fn every_defence_loses(&mut self, depth: u32) -> Option<Zone> {
        let defender = self.to_move;
        let attacker = 1 - defender;
        let windows = self.board.threat_windows(attacker);
        let need = stones_to_block(&windows);
        let mut zone = Zone::new();
        zone.add_windows(&windows);
        match need {
            0 => None,
            1 => {
                // Points that block every threat window with one stone; the other stone is free.
                let mut blocks: Vec<u16> = windows[0]
                    .iter()
                    .copied()
                    .filter(|&p| p != NO_POINT && windows.iter().all(|w| w.contains(&p)))
                    .collect();
                blocks.dedup();
                for x in blocks {
                    let old_x = self.board.place(x, defender);
                    let proof = self.free_stone_loses(x, depth);
                    self.board.remove(x, defender, old_x);
                    zone.union(&proof?);
                }
                Some(zone)
            }
            2 => {
                for reply in blocking_pairs(&windows) {
                    let boxes = self.play_pair(reply);
                    let proof = self.threat_proof(depth - 1);
                    self.undo_pair(reply, boxes);
                    zone.union(&proof?.1);
                }
                Some(zone)
            }
            _ => Some(zone),
        }
    }

    /// The defender has blocked with a stone on `x` (placed) and has one stone left: the zone
    /// of the proof that wherever it goes the attacker still wins within `depth - 1` turns.
    /// The stone is passed first; then it is tried on every empty point of that proof's zone
    /// and on every point that gives the defender a four.
    fn free_stone_loses(&mut self, x: u16, depth: u32) -> Option<Zone> {
        let defender = self.to_move;
        self.to_move = 1 - defender;
        let passed = self.threat_proof(depth - 1);
        self.to_move = defender;
        let (_, mut zone) = passed?;
        let mut tries: Vec<u16> = zone
            .points()
            .into_iter()
            .filter(|&p| self.board.is_empty(p))
            .collect();
        tries.extend(self.points_in_windows(defender, 3));
        tries.sort_unstable();
        tries.dedup();
        for y in tries {
            if y == x || !self.board.is_empty(y) {
                continue;
            }
            let old_y = self.board.place(y, defender);
            self.to_move = 1 - defender;
            let proof = self.threat_proof(depth - 1);
            self.to_move = defender;
            self.board.remove(y, defender, old_y);
            zone.union(&proof?.1);
        }
        Some(zone)
    }

    /// The attacker's pairs (the side to move) that block every window of `against` and
    /// leave exactly one stone to block: a stone that makes a four with a building stone (the
    /// best points by gain), or two stones that bring a window from two to four. Best by the
    /// attacker's evaluation after the pair first, at most `threat_width / SINGLE_SHARE`.
    fn single_threats(&mut self, against: &[[u16; 2]]) -> Vec<Pair> {
        let attacker = self.to_move;
        let defender = 1 - attacker;
        let tables = self.board.tables;
        let builders: Vec<u16> = self
            .top_points(attacker, self.width)
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        let mut candidates: Vec<(u16, u16)> = Vec::new();
        for (w, count) in self.board.counts.iter().enumerate() {
            if count[defender] != 0 || !(2..=3).contains(&count[attacker]) {
                continue;
            }
            let empties: Vec<u16> = tables.windows[w]
                .iter()
                .copied()
                .filter(|&p| self.board.is_empty(p))
                .collect();
            for (i, &a) in empties.iter().enumerate() {
                if count[attacker] == 3 {
                    candidates.extend(builders.iter().map(|&b| (a, b)));
                } else {
                    candidates.extend(empties[i + 1..].iter().map(|&b| (a, b)));
                }
            }
        }
        for pair in candidates.iter_mut() {
            *pair = (pair.0.min(pair.1), pair.0.max(pair.1));
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut found = Vec::new();
        for (a, b) in candidates {
            if a == b || (!against.is_empty() && !blocks_all(against, a, b)) {
                continue;
            }
            if self.should_stop() {
                break;
            }
            let old_a = self.board.place_stale(a, attacker);
            let old_b = self.board.place_stale(b, attacker);
            if self.board.threats[defender] == 0 && self.board.threats[attacker] > 0 {
                let need = stones_to_block(&self.board.threat_windows(attacker));
                if need == 1 {
                    let value = self.board.score[attacker] - self.board.score[defender];
                    found.push(Pair { score: value, a, b });
                }
            }
            self.board.remove_stale(b, attacker, old_b);
            self.board.remove_stale(a, attacker, old_a);
        }
        found.sort_unstable_by(|x, y| y.score.cmp(&x.score).then((x.a, x.b).cmp(&(y.a, y.b))));
        found.truncate((self.threat_width / SINGLE_SHARE).max(2));
        found
    }

    /// Pairs that may refute the opponent's threat win: if the opponent, were it to move now,
    /// had a threat win (single threats included) within `depth` turns, pairs of the points of
    /// that proof's relevance zone (every point where a stone of ours could change the
    /// proof), best `limit` by our gain; with `threats` (the opponent's threat windows now)
    /// only pairs that block them all. Empty when there is no such win (or no time).
    pub(super) fn zone_defences(
        &mut self,
        depth: u32,
        threats: &[[u16; 2]],
        limit: usize,
    ) -> Vec<Pair> {
        let me = self.to_move;
        self.to_move = 1 - me;
        let attack = self.shortest_threat_proof(depth);
        self.to_move = me;
        let Some((_, zone)) = attack else {
            return Vec::new();
        };
        let mut points: Vec<(i32, u16)> = zone
            .points()
            .into_iter()
            .filter(|&p| self.board.is_empty(p))
            .map(|p| (self.board.gain(p, me), p))
            .collect();
        points.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        points.truncate(2 * self.width);
        let mut pairs = Vec::new();
        for (i, &(gain_a, a)) in points.iter().enumerate() {
            for &(_, b) in &points[i + 1..] {
                if threats.is_empty() || blocks_all(threats, a, b) {
                    pairs.push(Pair {
                        score: gain_a + self.board.gain_after(a, b, me),
                        a,
                        b,
                    });
                }
            }
        }
        pairs.sort_unstable_by(|x, y| y.score.cmp(&x.score).then((x.a, x.b).cmp(&(y.a, y.b))));
        pairs.truncate(limit);
        pairs
    }

    /// The first of `candidates` after which the opponent has no threat win (single threats
    /// included) within `depth` turns; `None` if all have one or time runs out.
    pub(super) fn first_unproven(&mut self, candidates: &[Pair], depth: u32) -> Option<Pair> {
        self.first_passing(candidates, |search| {
            search.shortest_threat_proof(depth).is_some()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use super::super::{replay_moves, Board, Search, Table};
    use super::*;
    use crate::game::connect6::Options;

    fn search_after<'a>(moves: &[&str], abort: &'a AtomicBool) -> Search<'a> {
        let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        let position = replay_moves(&Options::default(), &moves).unwrap();
        Search {
            board: Board::from_position(&position),
            to_move: crate::game::Rules::turn(&position).index(),
            width: 12,
            inner_pairs: 12,
            threat_width: 36,
            max_extensions: 0,
            abort,
            deadline: Instant::now() + Duration::from_secs(60),
            nodes: 0,
            stopped: false,
            marks: vec![0; CELLS],
            stamp: 0,
            table: Box::leak(Box::<Table>::default()),
        }
    }

    #[test]
    fn proves_a_threat_win_and_names_the_points_it_depends_on() {
        // From a game lost to Cloudict, with White to move: White wins by threats.
        let abort = AtomicBool::new(false);
        let mut search = search_after(&["I13", "J8,M10", "H13,G13", "J9,J13"], &abort);
        search.to_move = 1 - search.to_move;
        let (pair, zone) = search.shortest_threat_proof(3).unwrap();
        assert!(!search.stopped);
        assert!(zone.contains(pair.a) && zone.contains(pair.b));
        assert!(zone.points().len() > 2, "{:?}", zone.points());
    }
}

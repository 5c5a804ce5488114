//! The Connect6 engine's searches over stone pairs: pair generation and ordering, the
//! iterative-deepening alpha-beta with its transposition table, the threat-space search for
//! continuous double threats, and the final check of the chosen pair.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::board::{extension_key, Board, Table, NO_POINT, PROVEN, SIDE_KEY, WIN};
use super::{replacement_order, CHECK_DEPTH, MAX_EXTENSIONS};
use crate::engine::tt::Bound;
use crate::game::connect6::CELLS;

/// Keeps the first `n` of `items` in the total `order`, sorted: the same as sorting all and
/// truncating, without sorting what is dropped.
pub(super) fn keep_first<T>(
    items: &mut Vec<T>,
    n: usize,
    mut order: impl FnMut(&T, &T) -> std::cmp::Ordering,
) {
    if n == 0 {
        items.clear();
        return;
    }
    if items.len() > n {
        items.select_nth_unstable_by(n - 1, &mut order);
        items.truncate(n);
    }
    items.sort_unstable_by(order);
}

/// Whether two pairs place the same two points.
pub(super) fn same_pair(x: Pair, y: Pair) -> bool {
    (x.a, x.b) == (y.a, y.b) || (x.a, x.b) == (y.b, y.a)
}

/// Whether the pair `a`, `b` hits every threat window.
pub(super) fn blocks_all(threats: &[[u16; 2]], a: u16, b: u16) -> bool {
    threats
        .iter()
        .all(|w| w.contains(&a) || (b != NO_POINT && w.contains(&b)))
}

/// The fewest stones that hit every threat window: 0, 1, 2, or 3 meaning "more than two".
pub(super) fn stones_to_block(threats: &[[u16; 2]]) -> u8 {
    let Some(first) = threats.first() else {
        return 0;
    };
    let mut best = 3;
    for &a in first.iter().filter(|&&p| p != NO_POINT) {
        let rest: Vec<&[u16; 2]> = threats.iter().filter(|w| !w.contains(&a)).collect();
        let Some(next) = rest.first() else {
            return 1;
        };
        for &b in next.iter().filter(|&&p| p != NO_POINT) {
            if rest.iter().all(|w| w.contains(&b)) {
                best = 2;
            }
        }
    }
    best
}

/// A two-stone move under consideration with its ordering (or search) score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair {
    pub(super) score: i32,
    pub(super) a: u16,
    pub(super) b: u16,
}

/// One search: the board, the side to move, limits and counters.
pub(super) struct Search<'a> {
    pub(super) board: Board,
    pub(super) to_move: usize,
    pub(super) width: usize,
    pub(super) inner_pairs: usize,
    /// Attacker pairs tried at each node of the threat-space search.
    pub(super) threat_width: usize,
    /// Blocking turns on a path of the alpha-beta that do not count in its depth.
    pub(super) max_extensions: u32,
    pub(super) abort: &'a AtomicBool,
    pub(super) deadline: Instant,
    pub(super) nodes: u64,
    pub(super) stopped: bool,
    /// Membership marks for pair generation (`stamp` is the current mark).
    pub(super) marks: Vec<u32>,
    pub(super) stamp: u32,
    /// The alpha-beta's transposition table (kept by the engine between moves).
    pub(super) table: &'a mut Table,
}

impl Search<'_> {
    /// The transposition-table key of the current node: the stones, the side to move and the
    /// blocking turns the path may still leave uncounted.
    pub(super) fn key(&self, extensions: u32) -> u64 {
        let side = if self.to_move == 1 { SIDE_KEY } else { 0 };
        self.board.hash ^ side ^ extension_key(self.max_extensions.saturating_sub(extensions))
    }

    pub(super) fn should_stop(&mut self) -> bool {
        if !self.stopped {
            self.nodes += 1;
            if self.abort.load(Ordering::Relaxed)
                || (self.nodes.is_multiple_of(16) && Instant::now() >= self.deadline)
            {
                self.stopped = true;
            }
        }
        self.stopped
    }

    pub(super) fn play_pair(&mut self, pair: Pair) -> [[i8; 4]; 2] {
        let side = self.to_move;
        let first = self.board.place(pair.a, side);
        let second = self.board.place(pair.b, side);
        self.to_move = 1 - side;
        [first, second]
    }

    pub(super) fn undo_pair(&mut self, pair: Pair, boxes: [[i8; 4]; 2]) {
        let side = 1 - self.to_move;
        self.board.remove(pair.b, side, boxes[1]);
        self.board.remove(pair.a, side, boxes[0]);
        self.to_move = side;
    }

    /// The best `width` single points for `side` by gain, best first.
    pub(super) fn top_points(&self, side: usize, width: usize) -> Vec<(i32, u16)> {
        let mut points: Vec<(i32, u16)> = self
            .board
            .window_points()
            .map(|p| (self.board.gain(p, side), p))
            .collect();
        keep_first(&mut points, width, |x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        points
    }

    /// Candidate pairs for `side`, best first, at most `limit`. With `threats` non-empty only
    /// pairs that block every threat window are generated.
    pub(super) fn pairs(&mut self, side: usize, threats: &[[u16; 2]], limit: usize) -> Vec<Pair> {
        let mut points = self.top_points(side, self.width);
        for &p in threats.iter().flatten() {
            if p != NO_POINT && !points.iter().any(|&(_, q)| q == p) {
                points.push((self.board.gain(p, side), p));
            }
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
        for &(_, p) in &points {
            self.marks[p as usize] = self.stamp;
        }
        let tables = self.board.tables;
        let mut pairs = Vec::new();
        for (i, &(gain_a, a)) in points.iter().enumerate() {
            let seconds = points[i + 1..].iter().map(|&(_, p)| p).chain(
                tables.near[a as usize]
                    .iter()
                    .copied()
                    .filter(|&p| self.marks[p as usize] != self.stamp && self.board.is_empty(p)),
            );
            for b in seconds {
                if !threats.is_empty() && !blocks_all(threats, a, b) {
                    continue;
                }
                pairs.push(Pair {
                    score: gain_a + self.board.gain_after(a, b, side),
                    a,
                    b,
                });
            }
        }
        keep_first(&mut pairs, limit, |x, y| {
            y.score
                .cmp(&x.score)
                .then(x.a.cmp(&y.a))
                .then(x.b.cmp(&y.b))
        });
        pairs
    }

    /// Static evaluation for the side to move.
    pub(super) fn evaluate(&self) -> i32 {
        let me = self.to_move;
        self.board.score[me] - self.board.score[1 - me]
    }

    /// One iteration of the root search at `depth`: each of `root`'s pairs gets its value
    /// (exact for a new best, a bound for the others) in `score`, in order; returns the best
    /// pair (the first of equal ones) among those searched before time ran out.
    pub(super) fn root_iteration(&mut self, root: &mut [Pair], depth: u32) -> Option<Pair> {
        let mut alpha = -WIN - 1;
        let mut best = None;
        for pair in root.iter_mut() {
            let boxes = self.play_pair(*pair);
            let value = -self.negamax(depth - 1, 1, 0, -WIN - 1, -alpha);
            self.undo_pair(*pair, boxes);
            if self.stopped {
                break;
            }
            pair.score = value;
            if value > alpha {
                alpha = value;
                best = Some(*pair);
            }
        }
        best
    }

    /// Negamax with alpha-beta; `depth` in two-stone turns, `ply` from the root.
    /// A turn spent blocking the opponent's threats is not counted in `depth` (at most
    /// `self.max_extensions` times on a path, `extensions` so far), so that sequences of
    /// threats, single ones included, are followed beyond the nominal depth.
    pub(super) fn negamax(
        &mut self,
        depth: u32,
        ply: u32,
        extensions: u32,
        mut alpha: i32,
        beta: i32,
    ) -> i32 {
        if self.should_stop() {
            return 0;
        }
        let me = self.to_move;
        if self.board.threats[me] > 0 {
            return WIN - ply as i32;
        }
        let threats = self.board.threat_windows(1 - me);
        let need = stones_to_block(&threats);
        if need > 2 {
            return -(WIN - ply as i32 - 1);
        }
        let empties = CELLS as u32 - self.board.stones;
        let forced = need > 0 && extensions < self.max_extensions;
        if (depth == 0 && !forced) || empties < 2 {
            return self.evaluate();
        }
        let (child_depth, child_extensions) = if forced {
            (depth, extensions + 1)
        } else {
            (depth - 1, extensions)
        };
        // The transposition table: a cutoff when an entry at least as deep decides the node,
        // else its best pair is tried first, before the pairs are even generated (a cutoff by
        // it saves generating them).
        let key = self.key(extensions);
        let mut tt_pair = None;
        if let Some(hit) = self.table.probe(key, ply) {
            if let Some(score) = hit.cutoff(depth, alpha, beta) {
                return score;
            }
            // Only a pair the generator would give here (the entry is this position's, but a
            // key collision must not put a stone on a stone).
            let (a, b) = hit.best.unwrap_or((NO_POINT, NO_POINT));
            if a != b
                && (a as usize) < CELLS
                && (b as usize) < CELLS
                && self.board.is_empty(a)
                && self.board.is_empty(b)
                && (threats.is_empty() || blocks_all(&threats, a, b))
            {
                tt_pair = Some(Pair { score: 0, a, b });
            }
        }
        let original_alpha = alpha;
        let mut best = -WIN;
        let mut best_pair = None;
        let mut generated = false;
        let mut pairs = Vec::new();
        let mut next = 0;
        let tried = tt_pair;
        loop {
            let pair = if let Some(pair) = tt_pair.take() {
                pair
            } else {
                if !generated {
                    generated = true;
                    let limit = self.inner_pairs;
                    pairs = self.pairs(me, &threats, limit);
                    if pairs.is_empty() && best_pair.is_none() {
                        return self.evaluate();
                    }
                }
                let Some(&pair) = pairs.get(next) else {
                    break;
                };
                next += 1;
                if tried.is_some_and(|t: Pair| same_pair(t, pair)) {
                    continue;
                }
                pair
            };
            let boxes = self.play_pair(pair);
            let value = -self.negamax(child_depth, ply + 1, child_extensions, -beta, -alpha);
            self.undo_pair(pair, boxes);
            if self.stopped {
                return 0;
            }
            if value > best {
                best = value;
                best_pair = Some(pair);
                if value > alpha {
                    alpha = value;
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        if let Some(pair) = best_pair {
            let bound = Bound::of(best, original_alpha, beta);
            // A node where every pair failed low keeps the pair already stored.
            let best_move = (bound != Bound::Upper).then_some((pair.a, pair.b));
            self.table.store(key, ply, depth, best, bound, best_move);
        }
        best
    }
}

/// Threat-space search ("victory by continuous double threats"): the attacker (the side to
/// move) plays only pairs that block every threat against it and leave the defender at least
/// two stones to block; the defender plays every pair that blocks all the attacker's threats.
/// The attacker wins when a pair leaves threats that two stones cannot block.
impl Search<'_> {
    /// The first pair of the shortest threat-sequence win of at most `depth` attacker turns,
    /// deepening one turn at a time.
    pub(super) fn shortest_threat_win(&mut self, depth: u32) -> Option<Pair> {
        self.deepening(depth, Search::threat_win)
    }

    /// The first result of `search` at depths 1 to `depth` in turn, stopping when time runs
    /// out.
    pub(super) fn deepening<T>(
        &mut self,
        depth: u32,
        mut search: impl FnMut(&mut Self, u32) -> Option<T>,
    ) -> Option<T> {
        for d in 1..=depth {
            let found = search(self, d);
            if self.stopped {
                return None;
            }
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The winning first pair of a threat sequence of at most `depth` attacker turns, if any.
    pub(super) fn threat_win(&mut self, depth: u32) -> Option<Pair> {
        if depth == 0 || self.should_stop() {
            return None;
        }
        let attacker = self.to_move;
        if self.board.threats[attacker] > 0 {
            return None; // an immediate win is taken before this search
        }
        let against = self.board.threat_windows(1 - attacker);
        if stones_to_block(&against) > 2 {
            return None;
        }
        for pair in self.double_threats(&against) {
            let boxes = self.play_pair(pair);
            let wins = self.defender_is_lost(depth);
            self.undo_pair(pair, boxes);
            if self.stopped {
                return None;
            }
            if wins {
                return Some(pair);
            }
        }
        None
    }

    /// After an attacker's pair: whether every blocking reply leaves the attacker a threat win
    /// within `depth - 1` more turns (or no reply blocks at all).
    pub(super) fn defender_is_lost(&mut self, depth: u32) -> bool {
        let attacker = 1 - self.to_move;
        let windows = self.board.threat_windows(attacker);
        if stones_to_block(&windows) > 2 {
            return true;
        }
        for reply in blocking_pairs(&windows) {
            let boxes = self.play_pair(reply);
            let wins = self.threat_win(depth - 1).is_some();
            self.undo_pair(reply, boxes);
            if !wins || self.stopped {
                return false;
            }
        }
        true
    }

    /// Whether, after our `pair`, the opponent wins by force within `depth` turns of an
    /// alpha-beta in which up to `MAX_EXTENSIONS` blocking turns on a path do not count
    /// (`None` if not, or if time runs out), and if so at which turn after our pair (an odd
    /// turn, the opponent's: 1 for a win at once).
    pub(super) fn extended_loss(&mut self, pair: Pair, depth: u32) -> Option<u32> {
        let boxes = self.play_pair(pair);
        let saved = self.max_extensions;
        self.max_extensions = MAX_EXTENSIONS;
        // The window's lower bound is below every won score, so a won score is exact.
        let value = self.negamax(depth, 1, 0, PROVEN - 1, WIN + 1);
        self.max_extensions = saved;
        self.undo_pair(pair, boxes);
        (!self.stopped && value >= PROVEN).then(|| (WIN - value) as u32)
    }

    /// The final check of our `chosen` pair (`CHECK_DEPTH` turns, blocking turns extended):
    /// `chosen` if the opponent has no forced win after it, else the first other candidate
    /// (`first_batch` in order, then pairs aimed at the refutation, see `replacement_order`)
    /// after which the opponent has neither a threat win within `threat_depth` nor a win in
    /// the check; at most `aimed` aimed pairs. If none passes (in the time left), the pair the
    /// check finds lost slowest, `chosen` among equals: a long win is the likeliest for the
    /// opponent to miss.
    pub(super) fn replace_if_refuted(
        &mut self,
        chosen: Pair,
        first_batch: &[Pair],
        threats: &[[u16; 2]],
        threat_depth: u32,
        aimed: usize,
    ) -> Pair {
        let Some(loss) = self.extended_loss(chosen, CHECK_DEPTH) else {
            return chosen;
        };
        let aimed = match self.check_reply(chosen) {
            Some(attack) => self.defences_against(attack, threats, aimed),
            None => Vec::new(),
        };
        let mut slowest = (loss, chosen);
        for candidate in replacement_order(first_batch, &aimed, chosen) {
            if self.stopped {
                break;
            }
            if self.first_unrefuted(&[candidate], threat_depth).is_none() {
                continue;
            }
            match self.extended_loss(candidate, CHECK_DEPTH) {
                None if !self.stopped => return candidate,
                Some(turns) if turns > slowest.0 => slowest = (turns, candidate),
                _ => {}
            }
        }
        slowest.1
    }

    /// The opponent's best reply to our `pair` in the final check, as the transposition table
    /// kept it (the first pair of its win when `extended_loss` found one); `None` without
    /// a table entry.
    pub(super) fn check_reply(&mut self, pair: Pair) -> Option<Pair> {
        let boxes = self.play_pair(pair);
        let saved = self.max_extensions;
        self.max_extensions = MAX_EXTENSIONS;
        let hit = self.table.probe(self.key(0), 0);
        self.max_extensions = saved;
        self.undo_pair(pair, boxes);
        let (a, b) = hit?.best?;
        (a != b
            && (a as usize) < CELLS
            && (b as usize) < CELLS
            && self.board.is_empty(a)
            && self.board.is_empty(b))
        .then_some(Pair { score: 0, a, b })
    }

    /// The first of `candidates` after which the opponent has no threat win within `depth`
    /// turns (`None` if all have one or time runs out).
    pub(super) fn first_unrefuted(&mut self, candidates: &[Pair], depth: u32) -> Option<Pair> {
        self.first_passing(candidates, |search| {
            search.shortest_threat_win(depth).is_some()
        })
    }

    /// The first of `candidates` after which `refuted` (asked with the pair played) is
    /// false; `None` if it holds for all or time runs out.
    pub(super) fn first_passing(
        &mut self,
        candidates: &[Pair],
        mut refuted: impl FnMut(&mut Self) -> bool,
    ) -> Option<Pair> {
        for &pair in candidates {
            let boxes = self.play_pair(pair);
            let lost = refuted(self);
            self.undo_pair(pair, boxes);
            if self.stopped {
                return None;
            }
            if !lost {
                return Some(pair);
            }
        }
        None
    }

    /// Pairs that may stop the opponent's threat win: if the opponent, were it to move now,
    /// had a threat win within `depth` turns, pairs (best `limit` by gain) of the points of its
    /// first attacking pair and of the opponent's windows through them or holding three or
    /// more of its stones. Empty when there is no such win (or no time to look).
    pub(super) fn defences(&mut self, depth: u32, limit: usize) -> Vec<Pair> {
        let me = self.to_move;
        let opponent = 1 - me;
        self.to_move = opponent;
        let attack = self.shortest_threat_win(depth);
        self.to_move = me;
        match attack {
            Some(attack) => self.defences_against(attack, &[], limit),
            None => Vec::new(),
        }
    }

    /// Pairs that may stop the opponent's attack beginning with its pair `attack` (were it to
    /// move now): pairs (best `limit` by gain) of the attack's points and of the opponent's
    /// windows through them or holding three or more of its stones; with `threats` (the
    /// opponent's threat windows now) only pairs that block them all.
    pub(super) fn defences_against(
        &mut self,
        attack: Pair,
        threats: &[[u16; 2]],
        limit: usize,
    ) -> Vec<Pair> {
        let me = self.to_move;
        let opponent = 1 - me;
        let mut points = vec![attack.a, attack.b];
        for (w, count) in self.board.counts.iter().enumerate() {
            let cells = &self.board.tables.windows[w];
            let through_attack = cells.contains(&attack.a) || cells.contains(&attack.b);
            if count[me] == 0 && (count[opponent] >= 3 || (through_attack && count[opponent] >= 2))
            {
                points.extend(cells.iter().copied().filter(|&p| self.board.is_empty(p)));
            }
        }
        points.sort_unstable();
        points.dedup();
        let mut pairs = Vec::new();
        for (i, &a) in points.iter().enumerate() {
            let gain_a = self.board.gain(a, me);
            let old = self.board.place(a, me);
            for &b in &points[i + 1..] {
                if threats.is_empty() || blocks_all(threats, a, b) {
                    pairs.push(Pair {
                        score: gain_a + self.board.gain(b, me),
                        a,
                        b,
                    });
                }
            }
            self.board.remove(a, me, old);
        }
        pairs.sort_unstable_by(|x, y| y.score.cmp(&x.score).then((x.a, x.b).cmp(&(y.a, y.b))));
        pairs.truncate(limit);
        pairs
    }

    /// The attacker's pairs that block every window of `against` and leave threats needing two
    /// or more stones, most forcing and best evaluated first (at most `self.threat_width`), then
    /// up to `self.threat_width / 2` pairs of one threat stone and one free building stone.
    pub(super) fn double_threats(&mut self, against: &[[u16; 2]]) -> Vec<Pair> {
        let attacker = self.to_move;
        let defender = 1 - attacker;
        let tables = self.board.tables;
        // First stones: points in windows the attacker can bring to four with two stones,
        // and the points that block the defender's threats.
        let mut firsts = self.points_in_windows(attacker, 2);
        firsts.extend(against.iter().flatten().filter(|&&p| p != NO_POINT));
        firsts.sort_unstable();
        firsts.dedup();
        let mut found: Vec<Pair> = Vec::new();
        let mut building: Vec<Pair> = Vec::new();
        // Second stones: points in windows holding three attacker stones once `a` is placed,
        // which are those holding three without it and those through `a` that it brings to
        // three; and the blocking points.
        let mut seconds_before = self.points_in_windows(attacker, 3);
        seconds_before.extend(against.iter().flatten().filter(|&&p| p != NO_POINT));
        let mut seconds = Vec::new();
        for &a in &firsts {
            if self.should_stop() {
                break;
            }
            let old_a = self.board.place_stale(a, attacker);
            if against.is_empty() && self.board.threats[defender] == 0 {
                self.building_pairs(a, &mut building);
            }
            seconds.clear();
            seconds.extend_from_slice(&seconds_before);
            for &w in &tables.point_windows[a as usize] {
                let count = self.board.counts[w as usize];
                if count[attacker] >= 3 && count[defender] == 0 {
                    seconds.extend(
                        tables.windows[w as usize]
                            .iter()
                            .copied()
                            .filter(|&p| self.board.is_empty(p)),
                    );
                }
            }
            seconds.sort_unstable();
            seconds.dedup();
            for &b in &seconds {
                if b == a
                    || !self.board.is_empty(b)
                    || (!against.is_empty() && !blocks_all(against, a, b))
                {
                    continue;
                }
                let old_b = self.board.place_stale(b, attacker);
                // Two stones to block need two threat windows at least (all of them hold `a`
                // or `b`: a threat before would have been a win at once).
                if self.board.threats[defender] == 0 && self.board.threats[attacker] >= 2 {
                    let mut ids: Vec<u16> = tables.point_windows[a as usize]
                        .iter()
                        .chain(&tables.point_windows[b as usize])
                        .copied()
                        .filter(|&w| {
                            let count = self.board.counts[w as usize];
                            count[attacker] >= 4 && count[defender] == 0
                        })
                        .collect();
                    ids.sort_unstable();
                    ids.dedup();
                    let windows: Vec<[u16; 2]> =
                        ids.iter().map(|&w| self.board.window_empties(w)).collect();
                    let need = stones_to_block(&windows);
                    if need >= 2 {
                        let value = self.board.score[attacker] - self.board.score[defender];
                        found.push(Pair {
                            score: need as i32 * (WIN / 10) + value,
                            a: a.min(b),
                            b: a.max(b),
                        });
                    }
                }
                self.board.remove_stale(b, attacker, old_b);
            }
            self.board.remove_stale(a, attacker, old_a);
        }
        found.sort_unstable_by(|x, y| (x.a, x.b).cmp(&(y.a, y.b)).then(y.score.cmp(&x.score)));
        found.dedup_by_key(|p| (p.a, p.b));
        found.sort_unstable_by(|x, y| y.score.cmp(&x.score).then((x.a, x.b).cmp(&(y.a, y.b))));
        found.truncate(self.threat_width);
        // A few pairs whose second stone is free (see `building_pairs`), best first, after
        // the others.
        building.sort_unstable_by(|x, y| y.score.cmp(&x.score).then((x.a, x.b).cmp(&(y.a, y.b))));
        for pair in building {
            if found.len() >= self.threat_width + (self.threat_width / 2).max(2) {
                break;
            }
            if !found.iter().any(|p| (p.a, p.b) == (pair.a, pair.b)) {
                found.push(pair);
            }
        }
        found
    }

    /// With the attacker's stone just placed on `a` (by `place_stale`: gains are read with
    /// `gain_beside_stale`): if that stone alone leaves threats
    /// needing two stones to block, the pair's second stone is free, and the pairs of `a` with
    /// the best points by the attacker's gain outside its threat windows (stones that build
    /// the next threat, as a strong opponent plays them) are added to `out`.
    pub(super) fn building_pairs(&mut self, a: u16, out: &mut Vec<Pair>) {
        let attacker = self.to_move;
        let defender = 1 - attacker;
        let windows = self.board.threat_windows(attacker);
        let need = stones_to_block(&windows);
        if need < 2 {
            return;
        }
        let mut points: Vec<(i32, u16)> = self
            .board
            .window_points()
            .filter(|&p| !windows.iter().any(|w| w.contains(&p)))
            .map(|p| (self.board.gain_beside_stale(a, p, attacker), p))
            .collect();
        points.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        for &(gain, b) in points.iter().take((self.threat_width / 2).max(2)) {
            let value = self.board.score[attacker] - self.board.score[defender] + gain;
            out.push(Pair {
                score: need as i32 * (WIN / 10) + value,
                a: a.min(b),
                b: a.max(b),
            });
        }
    }

    /// Empty points of the windows holding at least `min` stones of `side` and none of the
    /// other colour's (may repeat).
    pub(super) fn points_in_windows(&self, side: usize, min: u8) -> Vec<u16> {
        let other = 1 - side;
        let mut points = Vec::new();
        for (w, count) in self.board.counts.iter().enumerate() {
            if count[side] >= min && count[other] == 0 {
                points.extend(
                    self.board.tables.windows[w]
                        .iter()
                        .copied()
                        .filter(|&p| self.board.is_empty(p)),
                );
            }
        }
        points
    }
}

/// Every pair of the windows' empty points that hits all the windows (each pair once).
pub(super) fn blocking_pairs(windows: &[[u16; 2]]) -> Vec<Pair> {
    let mut points: Vec<u16> = windows
        .iter()
        .flatten()
        .copied()
        .filter(|&p| p != NO_POINT)
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut pairs = Vec::new();
    for (i, &a) in points.iter().enumerate() {
        for &b in &points[i + 1..] {
            if blocks_all(windows, a, b) {
                pairs.push(Pair { score: 0, a, b });
            }
        }
    }
    pairs
}

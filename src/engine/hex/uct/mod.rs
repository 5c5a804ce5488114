//! The Hex engine's UCT stage: a tree of visit and RAVE counts (kept between moves, without
//! dead cells), priors from the circuit's currents, bridge- and edge-template-saving
//! playouts, and an MCTS-solver (wins and losses in one or two found at expansion, proven
//! values carried up the tree, proven wins played and proven losses avoided), with virtual
//! connections checked at the root's moves and, by option, at deeper nodes. With the
//! `threads` option above 1, root parallelism: each worker searches the same root with its own
//! tree and random numbers, and the root children's visits are summed.

use super::*;

/// One UCT node; `wins` count for the side that played `cell`.
#[derive(Debug, Clone, Copy)]
pub(super) struct TreeNode {
    cell: u8,
    child_count: u8,
    first_child: u32,
    visits: u32,
    wins: f32,
    rave_visits: f32,
    rave_wins: f32,
    /// The prior counted into the RAVE figures, so a reused root can swap it for its own (in
    /// [`to_unit`] form, which keeps the node at 28 bytes).
    prior: u16,
    /// The move's share of its siblings' pattern weights, the progressive bias's numerator
    /// (in [`to_unit`] form).
    bias: u16,
    /// For the side that played `cell`: [`WON`] a proven win, [`LOST`] a proven loss, 0 not
    /// proven. A proven node is never searched below again.
    proven: i8,
}

/// [`TreeNode::proven`]: the move into the node wins, or loses, against any defence.
const WON: i8 = 1;
const LOST: i8 = -1;

impl TreeNode {
    fn leaf(cell: u8, prior: f32) -> TreeNode {
        TreeNode {
            cell,
            child_count: 0,
            first_child: 0,
            visits: 0,
            wins: 0.0,
            rave_visits: if cell == NO { 0.0 } else { PRIOR_VISITS },
            rave_wins: if cell == NO {
                0.0
            } else {
                PRIOR_VISITS * prior
            },
            prior: to_unit(prior),
            bias: 0,
            proven: 0,
        }
    }

    /// Puts `prior` in place of the move's prior: its virtual AMAF wins move by the
    /// difference, the statistics gathered since stay.
    fn set_prior(&mut self, prior: f32) {
        self.rave_wins = (self.rave_wins + PRIOR_VISITS * (prior - from_unit(self.prior))).max(0.0);
        self.prior = to_unit(prior);
    }
}

/// A number in 0..=1 as a 16-bit fraction.
fn to_unit(x: f32) -> u16 {
    (x.clamp(0.0, 1.0) * f32::from(u16::MAX)).round() as u16
}

fn from_unit(x: u16) -> f32 {
    f32::from(x) / f32::from(u16::MAX)
}

/// The moves leading from the board `from` to the board `to` when they differ by one stone of
/// `mover` then one of the other colour (our move and the reply), or not at all: the path to
/// follow down a kept tree. `None` when `to` does not follow `from` that way.
pub(super) fn moves_between(from: &Cells, mover: usize, to: &Cells) -> Option<Vec<u8>> {
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for c in 0..CELLS {
        if from[c] == to[c] {
            continue;
        }
        if from[c] != EMPTY {
            return None;
        }
        if to[c] == stone(mover) {
            ours.push(c as u8);
        } else {
            theirs.push(c as u8);
        }
    }
    match (&ours[..], &theirs[..]) {
        ([], []) => Some(Vec::new()),
        ([a], [b]) => Some(vec![*a, *b]),
        _ => None,
    }
}

/// Makes room in `tree` for `extra` more nodes without its capacity passing `cap` nodes: the
/// capacity doubles as `Vec` growth would, but stops at `cap`, so the tree never reserves more
/// than `tree_mb` allows. False, with nothing reserved, when the nodes would pass `cap` or the
/// allocation fails.
pub(super) fn reserve_capped(tree: &mut Vec<TreeNode>, extra: usize, cap: usize) -> bool {
    let needed = tree.len().saturating_add(extra);
    if needed > cap {
        return false;
    }
    if needed <= tree.capacity() {
        return true;
    }
    let target = tree.capacity().saturating_mul(2).max(needed).min(cap);
    tree.try_reserve_exact(target - tree.len()).is_ok()
}

/// One UCT searcher: its own tree (kept between moves), random numbers and node cap. The
/// engine has one worker per thread; with one thread, the single worker runs on the engine's
/// own search thread.
pub(super) struct UctWorker {
    rng: SmallRng,
    tree: Vec<TreeNode>,
    /// The board and mover at the tree's root, when the tree may be reused.
    tree_root: Option<(Cells, usize)>,
    /// The most nodes this worker's tree may hold or reserve: its share of `tree_mb`.
    cap: usize,
    /// Tables for the virtual-connection check of the root's children (allocated at the
    /// first check), and whether that check is on.
    connections: Option<Box<Connections>>,
    pub(super) check_children: bool,
    /// Visits at which a node below the root's children gets the same check (0: never).
    pub(super) check_visits: u32,
    /// The progressive bias given to the pattern weights' share of a move (0: patterns off).
    pub(super) pattern_bias: f32,
    /// How far the pattern weights move the starting value of a move below the root from
    /// the flat 0.5 (0: patterns off there).
    pub(super) pattern_prior: f32,
    /// Playouts draw cells by their pattern weights capped at this (0: uniformly).
    pub(super) playout_gamma_cap: f32,
    /// Virtual-connection checks made by the last search.
    pub(super) checks: u64,
    /// Playouts made by the last search.
    pub(super) playouts: u64,
    /// Root visits the last search kept from the move before.
    pub(super) reused: u64,
}

impl UctWorker {
    /// Worker number `k` of an engine seeded with `seed` (worker 0 uses `seed` itself), its
    /// tree capped at `cap` nodes. Nothing is allocated until it searches.
    pub(super) fn new(seed: u64, k: u64, cap: usize) -> UctWorker {
        UctWorker {
            rng: SmallRng::seed_from_u64(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            tree: Vec::new(),
            tree_root: None,
            cap,
            connections: None,
            check_children: false,
            check_visits: 0,
            pattern_bias: 0.0,
            pattern_prior: 0.0,
            playout_gamma_cap: 0.0,
            checks: 0,
            playouts: 0,
            reused: 0,
        }
    }

    /// Drops the tree (after a worker failed), so the next search starts afresh.
    pub(super) fn forget(&mut self) {
        self.tree = Vec::new();
        self.tree_root = None;
        self.playouts = 0;
        self.reused = 0;
    }

    /// Adds the children of tree node `index` (one per empty cell of `board`) with their priors.
    /// False, adding nothing, when they would not fit under the tree's cap.
    pub(super) fn expand(
        &mut self,
        index: usize,
        board: &Cells,
        mover: usize,
        prior: &dyn Fn(u8) -> f32,
        check: bool,
    ) -> bool {
        // The solver's look at the position: a win in one for the mover proves the move into
        // the node lost; two threats of the other side (and no win in one) prove it won; one
        // threat leaves a single move, the block. Below the root a proven node gets no
        // children. The root is not proven here (the engine plays wins and blocks in one before
        // searching, so it rarely has either); if it has, its one child is that move, a win
        // marked won, which proves the root and ends the search.
        let (wins, win_cells) = win_threats(board, mover);
        let (threats, threat_cells) = if wins > 0 {
            (0, [NO; 2])
        } else {
            win_threats(board, 1 - mover)
        };
        if index != 0 {
            if wins > 0 {
                self.tree[index].proven = LOST;
                return true;
            }
            if threats >= 2 {
                self.tree[index].proven = WON;
                return true;
            }
        }
        let only = if wins > 0 {
            Some(win_cells[0])
        } else if threats == 1 {
            Some(threat_cells[0])
        } else {
            None
        };
        // A root child (with the check on): virtual connections prove it, or leave the mover
        // only the cells that stop the other side's semi connections.
        let mut allowed: CellSet = !0;
        if only.is_none() && check {
            match self.connection_verdict(board, mover) {
                Err(proven) => {
                    self.tree[index].proven = proven;
                    return true;
                }
                Ok(cells) => allowed = cells,
            }
        }
        let first = self.tree.len();
        let reply = bridge_reply(board, mover, self.tree[index].cell);
        if let Some(cell) = only {
            if !reserve_capped(&mut self.tree, 1, self.cap) {
                return false;
            }
            let mut child = TreeNode::leaf(cell, prior(cell));
            if wins > 0 {
                child.proven = WON;
                self.tree[index].proven = LOST;
            }
            self.tree.push(child);
            let node = &mut self.tree[index];
            node.first_child = first as u32;
            node.child_count = 1;
            return true;
        }
        // Dead and vulnerable cells (the opponent's answer on the killer leaves the stone
        // dead) are worth no more than a pass: leave them out of the tree, unless nothing else
        // is left (then any cell will do). A pass is never better than any other move (a
        // stone never hurts its owner), so the children left still prove a node lost when
        // they all lose.
        let groups = Groups::new(board);
        let mut dead = [false; CELLS];
        let mut live = false;
        let (mut empties, mut dead_count) = (0, 0);
        for c in 0..CELLS {
            if board[c] == EMPTY {
                // Cells outside the must-play region lose: left out like dead cells.
                dead[c] = !holds(allowed, c) || killer(board, &groups, c, mover).is_some();
                live |= !dead[c];
                empties += 1;
                dead_count += usize::from(dead[c]);
            }
        }
        let children = if live { empties - dead_count } else { empties };
        if !reserve_capped(&mut self.tree, children, self.cap) {
            return false;
        }
        for c in 0..CELLS as u8 {
            if board[c as usize] != EMPTY || (live && dead[c as usize]) {
                continue;
            }
            let p = if Some(c) == reply { 0.9 } else { prior(c) };
            self.tree.push(TreeNode::leaf(c, p));
        }
        // The root's moves keep the circuit's priors; below it the patterns may set them.
        let pattern_prior = if index == 0 { 0.0 } else { self.pattern_prior };
        if self.pattern_bias > 0.0 || pattern_prior > 0.0 {
            let weights = shipped_weights();
            let last = self.tree[index].cell;
            let children = &mut self.tree[first..];
            let mut gammas = [0.0f32; CELLS];
            for (child, gamma) in children.iter().zip(&mut gammas) {
                *gamma = weights.gamma(shape_of(board, child.cell as usize, mover, last));
            }
            let total: f32 = gammas.iter().sum();
            let best = gammas.iter().copied().fold(0.0f32, f32::max);
            if total > 0.0 {
                for (child, gamma) in children.iter_mut().zip(gammas) {
                    if self.pattern_bias > 0.0 {
                        child.bias = to_unit(gamma / total);
                    }
                    if pattern_prior > 0.0 && Some(child.cell) != reply {
                        child.set_prior(0.5 + pattern_prior * (gamma / best - 0.5));
                    }
                }
            }
        }
        let count = (self.tree.len() - first) as u8;
        let node = &mut self.tree[index];
        node.first_child = first as u32;
        node.child_count = count;
        true
    }

    /// Virtual connections at a node where `mover` is to move: `Err` with the proof of the
    /// move into the node (lost when `mover` has a semi or full connection between its edges,
    /// won when the other side has a full one), else `Ok` with the cells that stop the other
    /// side's semi connections (all cells when it has none).
    fn connection_verdict(&mut self, board: &Cells, mover: usize) -> Result<CellSet, i8> {
        self.checks += 1;
        let vc = self
            .connections
            .get_or_insert_with(|| Box::new(Connections::new()));
        vc.search(board, mover);
        if vc.won() || vc.edge_semis().len() > 0 {
            return Err(LOST);
        }
        vc.search(board, 1 - mover);
        if vc.won() {
            return Err(WON);
        }
        Ok(vc.must_play().unwrap_or(!0))
    }

    /// The check of a deeper node that reached `check_visits` visits, its children already
    /// in the tree: the node is proven by virtual connections, or its children outside the
    /// must-play region are proven lost (and the node won, when that leaves none).
    pub(super) fn check_expanded(&mut self, index: usize, board: &Cells, mover: usize) {
        let allowed = match self.connection_verdict(board, mover) {
            Err(proven) => {
                self.tree[index].proven = proven;
                return;
            }
            Ok(cells) => cells,
        };
        let node = self.tree[index];
        let first = node.first_child as usize;
        let children = &mut self.tree[first..first + node.child_count as usize];
        for child in children.iter_mut() {
            if child.proven == 0 && child.cell != NO && !holds(allowed, child.cell as usize) {
                child.proven = LOST;
            }
        }
        if children.iter().all(|c| c.proven == LOST) {
            self.tree[index].proven = WON;
        }
    }

    /// Carries a proof at the end of `path` up the tree: a node is lost for the side that
    /// moved into it when one of its children wins, and won when all of its children lose.
    /// Stops at the first node whose value does not change.
    fn propagate_proof(&mut self, path: &[usize]) {
        for d in (1..path.len()).rev() {
            let child = self.tree[path[d]].proven;
            let parent = path[d - 1];
            if self.tree[parent].proven != 0 {
                break;
            }
            if child == WON {
                self.tree[parent].proven = LOST;
            } else if child == LOST {
                let node = self.tree[parent];
                let first = node.first_child as usize;
                let children = &self.tree[first..first + node.child_count as usize];
                if children.iter().all(|c| c.proven == LOST) {
                    self.tree[parent].proven = WON;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
    }

    /// The child of `index` with the best RAVE-blended value.
    pub(super) fn select(&self, index: usize) -> usize {
        let node = &self.tree[index];
        let log_parent = ((node.visits + 1) as f32).ln();
        let first = node.first_child as usize;
        let mut best = first;
        let mut best_value = f32::MIN;
        for k in first..first + node.child_count as usize {
            let child = &self.tree[k];
            // A proven loss is never tried again (when every child is one, the node is proven
            // and not searched; the first child then stands).
            if child.proven == LOST {
                continue;
            }
            let n = child.visits as f32;
            let q = if child.visits > 0 {
                child.wins / n
            } else {
                0.5
            };
            let amaf = child.rave_wins / child.rave_visits.max(1.0);
            let rn = child.rave_visits;
            let beta = rn / (rn + n + RAVE_BIAS * rn * n);
            let value = (1.0 - beta) * q
                + beta * amaf
                + EXPLORATION * (log_parent / (n + 1.0)).sqrt()
                + self.pattern_bias * from_unit(child.bias) / (n + 1.0).sqrt();
            if value > best_value {
                best_value = value;
                best = k;
            }
        }
        best
    }

    /// Fills the board at random (answering bridge and edge-template intrusions) and returns
    /// the winner: on a full Hex board exactly one side is connected.
    pub(super) fn playout(&mut self, board: &mut Cells, mut mover: usize, mut last: u8) -> usize {
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

    /// Like [`UctWorker::playout`], but cells are drawn with chances in proportion to their
    /// shapes' trained weights, capped at `self.playout_gamma_cap` (`keys` must be `board`'s).
    pub(super) fn pattern_playout(
        &mut self,
        board: &mut Cells,
        keys: &mut ShapeKeys,
        mut mover: usize,
        mut last: u8,
    ) -> usize {
        let weights = shipped_weights();
        let cap = self.playout_gamma_cap;
        let mut gamma = [[0.0f32; CELLS]; 2];
        let mut rows = [[0.0f32; N]; 2];
        for c in (0..CELLS).filter(|&c| board[c] == EMPTY) {
            for m in 0..2 {
                gamma[m][c] = weights.playout_gamma(keys.key(m, c), cap);
                rows[m][c / N] += gamma[m][c];
            }
        }
        loop {
            let chosen =
                bridge_reply(board, mover, last).or_else(|| self.draw(&gamma[mover], &rows[mover]));
            let Some(cell) = chosen else { break };
            let x = cell as usize;
            board[x] = stone(mover);
            keys.place(x, mover);
            gamma[0][x] = 0.0;
            gamma[1][x] = 0.0;
            for y in shape_readers(x).filter(|&y| board[y] == EMPTY) {
                for m in 0..2 {
                    gamma[m][y] = weights.playout_gamma(keys.key(m, y), cap);
                }
            }
            // The rows the changed cells lie in, summed afresh (no drift).
            for row in (x / N).saturating_sub(2)..(x / N + 3).min(N) {
                for m in 0..2 {
                    rows[m][row] = gamma[m][row * N..row * N + N].iter().sum();
                }
            }
            last = cell;
            mover = 1 - mover;
        }
        if connected(board, 0) {
            0
        } else {
            1
        }
    }

    /// A cell drawn with chances in proportion to `gamma`, whose rows sum to `rows`; `None`
    /// when every weight is 0.
    pub(super) fn draw(&mut self, gamma: &[f32; CELLS], rows: &[f32; N]) -> Option<u8> {
        let mut left = self.rng.gen::<f32>() * rows.iter().sum::<f32>();
        // The row the draw falls in (rounding may carry `left` past the last row: that row).
        let mut chosen_row = None;
        for (row, &sum) in rows.iter().enumerate().filter(|&(_, &sum)| sum > 0.0) {
            chosen_row = Some(row);
            if left < sum {
                break;
            }
            left -= sum;
        }
        let row = chosen_row?;
        let mut found = None;
        for (c, &g) in gamma[row * N..row * N + N].iter().enumerate() {
            if g > 0.0 {
                found = Some((row * N + c) as u8);
                left -= g;
                if left < 0.0 {
                    break;
                }
            }
        }
        found
    }

    /// The root's children: their cells, visits, wins and proofs.
    pub(super) fn root_stats(&self) -> impl Iterator<Item = (u8, u32, f32, i8)> + '_ {
        let (first, count) = self.tree.first().map_or((0, 0), |root| {
            (root.first_child as usize, root.child_count as usize)
        });
        self.tree
            .get(first..first + count)
            .unwrap_or_default()
            .iter()
            .map(|n| (n.cell, n.visits, n.wins, n.proven))
    }

    /// The cells of the root's children and their visits (for tests).
    #[cfg(test)]
    pub(super) fn root_children(&self) -> Vec<(u8, u32)> {
        self.root_stats()
            .map(|(cell, visits, _, _)| (cell, visits))
            .collect()
    }

    /// The cells of the root's children and their proofs (for tests).
    #[cfg(test)]
    pub(super) fn root_proofs(&self) -> Vec<(u8, i8)> {
        self.root_stats()
            .map(|(cell, _, _, proven)| (cell, proven))
            .collect()
    }

    /// A root with the given children (cell, visits, proof) and nothing below them (for
    /// tests of the move choice).
    #[cfg(test)]
    pub(super) fn set_root(&mut self, children: &[(u8, u32, i8)]) {
        self.tree.clear();
        let mut root = TreeNode::leaf(NO, 0.0);
        root.first_child = 1;
        root.child_count = children.len() as u8;
        self.tree.push(root);
        for &(cell, visits, proven) in children {
            let mut child = TreeNode::leaf(cell, 0.5);
            child.visits = visits;
            child.proven = proven;
            self.tree.push(child);
        }
    }

    /// The children of tree node `index`: their cells and pattern-bias shares (for tests).
    #[cfg(test)]
    pub(super) fn child_biases(&self, index: usize) -> Vec<(u8, f32)> {
        self.children_of(index)
            .map(|(_, c)| (c.cell, from_unit(c.bias)))
            .collect()
    }

    /// The children of tree node `index`: their tree indices, cells, priors and whether they
    /// have children of their own (for tests).
    #[cfg(test)]
    pub(super) fn child_priors(&self, index: usize) -> Vec<(usize, u8, f32, bool)> {
        self.children_of(index)
            .map(|(k, c)| (k, c.cell, from_unit(c.prior), c.child_count > 0))
            .collect()
    }

    #[cfg(test)]
    fn children_of(&self, index: usize) -> impl Iterator<Item = (usize, &TreeNode)> {
        let node = &self.tree[index];
        let first = node.first_child as usize;
        (first..).zip(&self.tree[first..first + node.child_count as usize])
    }

    /// The root's proof (for tests).
    #[cfg(test)]
    pub(super) fn root_proven(&self) -> i8 {
        self.tree[0].proven
    }

    /// The tree's node count and capacity (for tests).
    #[cfg(test)]
    pub(super) fn tree_size(&self) -> (usize, usize) {
        (self.tree.len(), self.tree.capacity())
    }

    /// Makes the tree's root the node for `cells` with `mover` to move when the kept tree (from
    /// the last search) reaches it through the moves played since, dropping everything else;
    /// otherwise starts a fresh tree. Returns whether a root with children was kept.
    pub(super) fn reuse_tree(&mut self, cells: &Cells, mover: usize) -> bool {
        let path = match self.tree_root.take() {
            Some((from, from_mover)) if from_mover == mover && !self.tree.is_empty() => {
                moves_between(&from, mover, cells)
            }
            _ => None,
        };
        let mut index = 0;
        let mut found = path.is_some();
        for cell in path.unwrap_or_default() {
            let node = self.tree[index];
            let first = node.first_child as usize;
            match (first..first + node.child_count as usize).find(|&k| self.tree[k].cell == cell) {
                Some(k) => index = k,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if !found || self.tree[index].child_count == 0 {
            self.tree.clear();
            self.tree.push(TreeNode::leaf(NO, 0.0));
            return false;
        }
        if index != 0 {
            // Copy the subtree breadth first, so each node's children stay side by side. The
            // copy grows under the cap like the tree (it is never larger than the old tree).
            let cap = self.cap;
            let mut kept = Vec::with_capacity((self.tree.len() / 4).min(cap));
            let mut origin: Vec<u32> = Vec::with_capacity(self.tree.len() / 4);
            kept.push(self.tree[index]);
            origin.push(index as u32);
            let mut k = 0;
            while k < kept.len() {
                let old: TreeNode = self.tree[origin[k] as usize];
                if old.child_count > 0 {
                    let first = old.first_child as usize;
                    if !reserve_capped(&mut kept, old.child_count as usize, cap) {
                        // No memory for the copy: start afresh rather than fail.
                        self.tree.clear();
                        self.tree.push(TreeNode::leaf(NO, 0.0));
                        return false;
                    }
                    kept[k].first_child = kept.len() as u32;
                    for child in first..first + old.child_count as usize {
                        kept.push(self.tree[child]);
                        origin.push(child as u32);
                    }
                }
                k += 1;
            }
            self.tree = kept;
        }
        true
    }

    /// UCT with RAVE from `cells` until `limits` or `playout_cap` playouts (0: no cap), the
    /// root's children given `root_prior`. False when the root could not be expanded (no
    /// memory): then the tree holds no move.
    pub(super) fn search(
        &mut self,
        cells: &Cells,
        mover: usize,
        root_prior: &dyn Fn(u8) -> f32,
        allowed: CellSet,
        playout_cap: u64,
        limits: &Limits<'_>,
    ) -> bool {
        self.playouts = 0;
        self.checks = 0;
        let kept = self.reuse_tree(cells, mover);
        self.reused = u64::from(self.tree[0].visits);
        if kept {
            // The kept root's children were expanded with the in-tree priors: put the root's
            // own (circuit) priors in their place.
            let root = self.tree[0];
            let first = root.first_child as usize;
            for child in &mut self.tree[first..first + root.child_count as usize] {
                child.set_prior(root_prior(child.cell));
            }
        } else if !self.expand(0, cells, mover, &root_prior, false) {
            // Cannot happen under the cap (1 MiB holds far more than a root's children, even
            // split over the largest thread count) unless memory runs out: then the caller
            // plays any empty cell.
            return false;
        }
        // Root moves outside `allowed` (the virtual connections' must-play region) lose
        // against the opponent's semi connection: proven lost, never searched.
        let root = self.tree[0];
        let first = root.first_child as usize;
        let children = first..first + root.child_count as usize;
        if self.tree[children.clone()]
            .iter()
            .any(|c| c.cell != NO && holds(allowed, c.cell as usize))
        {
            for child in &mut self.tree[children] {
                if child.proven == 0 && !holds(allowed, child.cell as usize) {
                    child.proven = LOST;
                }
            }
        }
        self.tree_root = Some((*cells, mover));
        let flat = |_: u8| 0.5f32;
        let root_keys = (self.playout_gamma_cap > 0.0).then(|| ShapeKeys::new(cells));
        let mut path: Vec<usize> = Vec::with_capacity(CELLS + 1);
        loop {
            let playouts = self.playouts;
            if playout_cap > 0 && playouts >= playout_cap {
                break;
            }
            if playouts.is_multiple_of(8) && limits.reached() {
                break;
            }
            // A solved root: a proven win is played at once; when every move is proven lost,
            // searching on changes nothing.
            if self.tree[0].proven != 0 {
                break;
            }
            let mut board = *cells;
            let mut keys = root_keys.clone();
            let mut to_move = mover;
            let mut index = 0;
            let mut last = NO;
            path.clear();
            path.push(0);
            loop {
                let node = self.tree[index];
                if node.proven != 0 {
                    break;
                }
                if node.child_count == 0 {
                    let has_empty = board.contains(&EMPTY);
                    // At the cap the tree stops growing: the leaf's playouts go on.
                    if !has_empty
                        || node.visits < EXPAND_AFTER
                        || self.tree.len() + CELLS > self.cap
                        || !self.expand(
                            index,
                            &board,
                            to_move,
                            &flat,
                            self.check_children && path.len() == 2,
                        )
                        || self.tree[index].proven != 0
                    {
                        break;
                    }
                } else if self.check_visits > 0
                    && path.len() > 2
                    && node.visits == self.check_visits.max(EXPAND_AFTER + 1)
                {
                    self.check_expanded(index, &board, to_move);
                    if self.tree[index].proven != 0 {
                        break;
                    }
                }
                index = self.select(index);
                let cell = self.tree[index].cell;
                board[cell as usize] = stone(to_move);
                if let Some(keys) = keys.as_mut() {
                    keys.place(cell as usize, to_move);
                }
                last = cell;
                to_move = 1 - to_move;
                path.push(index);
            }
            // A proven node needs no playout: its winner is known (`to_move` moves there).
            let winner = match self.tree[index].proven {
                WON => 1 - to_move,
                LOST => to_move,
                _ => match keys.as_mut() {
                    Some(keys) => self.pattern_playout(&mut board, keys, to_move, last),
                    None => self.playout(&mut board, to_move, last),
                },
            };
            if self.tree[index].proven != 0 {
                self.propagate_proof(&path);
            }
            self.playouts += 1;
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
        true
    }

    /// The root move: a proven win if there is one, else the most visited child not proven
    /// lost (the most visited of all when every one is), more wins breaking ties; `NO` without
    /// a child.
    pub(super) fn best_cell(&self) -> u8 {
        self.root_stats()
            .max_by(|a, b| most_played((proof_rank(a.3), a.1, a.2), (proof_rank(b.3), b.1, b.2)))
            .map_or(NO, |n| n.0)
    }
}

mod root;

pub(super) use root::RootKnowledge;
use root::{most_played, proof_rank};

#[cfg(test)]
impl HexEngine {
    /// The cells of worker 0's root children and their visits.
    pub(super) fn root_children(&self) -> Vec<(u8, u32)> {
        self.workers
            .first()
            .map_or_else(Vec::new, UctWorker::root_children)
    }

    /// Worker 0's tree: its node count and capacity.
    pub(super) fn tree_size(&self) -> (usize, usize) {
        self.workers.first().map_or((0, 0), UctWorker::tree_size)
    }

    /// Each worker's node count, capacity and node cap.
    pub(super) fn worker_trees(&self) -> Vec<(usize, usize, usize)> {
        self.workers
            .iter()
            .map(|w| (w.tree.len(), w.tree.capacity(), w.cap))
            .collect()
    }

    /// Each worker's root children: their cells and visits.
    pub(super) fn worker_roots(&self) -> Vec<Vec<(u8, u32)>> {
        self.workers.iter().map(UctWorker::root_children).collect()
    }

    /// Each worker's children of the root child for `cell` (the replies to it): their cells
    /// and visits.
    pub(super) fn worker_replies(&self, cell: u8) -> Vec<Vec<(u8, u32)>> {
        self.workers
            .iter()
            .map(|w| {
                let Some(root) = w.tree.first() else {
                    return Vec::new();
                };
                let first = root.first_child as usize;
                let children = &w.tree[first..first + root.child_count as usize];
                let Some(node) = children.iter().find(|n| n.cell == cell) else {
                    return Vec::new();
                };
                let first = node.first_child as usize;
                w.tree[first..first + node.child_count as usize]
                    .iter()
                    .map(|n| (n.cell, n.visits))
                    .collect()
            })
            .collect()
    }

    /// Worker 0's root children: their cells and proofs.
    pub(super) fn root_proofs(&self) -> Vec<(u8, i8)> {
        self.workers
            .first()
            .map_or_else(Vec::new, UctWorker::root_proofs)
    }

    /// Each worker's playouts in the last search and the root visits it kept.
    pub(super) fn worker_work(&self) -> Vec<(u64, u64)> {
        self.workers
            .iter()
            .map(|w| (w.playouts, w.reused))
            .collect()
    }
}

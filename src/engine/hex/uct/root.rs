//! The UCT stage's entry: the root's priors and limits handed to one worker, or to several
//! running root-parallel whose root visits are summed, and the choice of the move played.

use super::*;

/// How a proof orders root moves before their visits: proven wins first, proven losses last.
pub(super) fn proof_rank(proven: i8) -> u8 {
    match proven {
        WON => 2,
        LOST => 0,
        _ => 1,
    }
}

/// The order in which root moves are chosen, one tree's or summed over several: proof rank
/// ([`proof_rank`]), then most visits, then most wins.
pub(super) fn most_played<R: PartialOrd, V: PartialOrd, W: PartialOrd>(
    a: (R, V, W),
    b: (R, V, W),
) -> std::cmp::Ordering {
    a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal)
}

/// What the engine knows of the root before the UCT stage: each cell's circuit score and the
/// best of them, the answer to an intrusion (if any), and the cells the virtual connections
/// leave worth playing.
pub(in crate::engine::hex) struct RootKnowledge<'a> {
    pub(in crate::engine::hex) score: &'a [f64; CELLS],
    pub(in crate::engine::hex) best_score: f64,
    pub(in crate::engine::hex) reply: Option<u8>,
    pub(in crate::engine::hex) allowed: CellSet,
}

impl HexEngine {
    /// UCT with RAVE from `cells`, the root priors taken from the resistance currents. One
    /// thread runs the single worker here; more run root-parallel (see [`HexEngine::uct_parallel`]).
    pub(in crate::engine::hex) fn uct(
        &mut self,
        cells: &Cells,
        mover: usize,
        root: &RootKnowledge<'_>,
        limits: &Limits<'_>,
    ) -> u8 {
        let RootKnowledge {
            score,
            best_score,
            reply,
            allowed,
        } = *root;
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
        let cap = self.settings.playouts;
        match self.workers.as_mut_slice() {
            [worker] => {
                let found = worker.search(cells, mover, &root_prior, allowed, cap, limits);
                self.last_stats.playouts = worker.playouts;
                self.last_stats.reused = worker.reused;
                self.last_stats.checks = worker.checks;
                if found {
                    worker.best_cell()
                } else {
                    NO
                }
            }
            _ => self.uct_parallel(cells, mover, &root_prior, allowed, limits),
        }
    }

    /// Root parallelism: worker 0 searches on this thread and every other worker on a scoped
    /// thread of its own, all until the same `limits`; a `playouts` cap is split evenly
    /// between them (and fewer workers run when it is smaller than their number). The root
    /// children's visits (and wins, for ties) are summed by cell over the workers and the most
    /// visited cell is played.
    fn uct_parallel(
        &mut self,
        cells: &Cells,
        mover: usize,
        root_prior: &(dyn Fn(u8) -> f32 + Sync),
        allowed: CellSet,
        limits: &Limits<'_>,
    ) -> u8 {
        let cap = self.settings.playouts;
        let active = if cap > 0 {
            self.workers
                .len()
                .min(usize::try_from(cap).unwrap_or(usize::MAX))
        } else {
            self.workers.len()
        };
        let share = |k: usize| {
            let (n, k) = (active as u64, k as u64);
            if cap == 0 {
                0
            } else {
                cap / n + u64::from(k < cap % n)
            }
        };
        // Per worker: whether it ran and left a root with children.
        let mut found = vec![false; active];
        let mut failed = vec![false; active];
        let Some((first, rest)) = self.workers[..active].split_first_mut() else {
            return NO;
        };
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(rest.len());
            for (k, worker) in rest.iter_mut().enumerate() {
                let k = k + 1;
                let playout_cap = share(k);
                let spawned = std::thread::Builder::new()
                    .name(format!("hex-uct-{k}"))
                    .spawn_scoped(scope, move || {
                        worker.search(cells, mover, root_prior, allowed, playout_cap, limits)
                    });
                match spawned {
                    Ok(handle) => handles.push((k, handle)),
                    // No thread for this worker: the others search without it.
                    Err(_) => failed[k] = true,
                }
            }
            found[0] = first.search(cells, mover, root_prior, allowed, share(0), limits);
            for (k, handle) in handles {
                match handle.join() {
                    Ok(ok) => found[k] = ok,
                    Err(_) => failed[k] = true,
                }
            }
        });
        let mut visits = [0u64; CELLS];
        let mut wins = [0f64; CELLS];
        let mut present = [false; CELLS];
        // Per cell: proven won in some tree, proven lost in some tree (proofs are facts about
        // the position, so the trees never contradict each other).
        let mut won = [false; CELLS];
        let mut lost = [false; CELLS];
        for (k, worker) in self.workers[..active].iter_mut().enumerate() {
            if failed[k] {
                // Its tree may be stale or half-updated: it starts afresh next move.
                worker.forget();
                continue;
            }
            self.last_stats.playouts += worker.playouts;
            self.last_stats.reused += worker.reused;
            self.last_stats.checks += worker.checks;
            if !found[k] {
                continue;
            }
            for (cell, v, w, proven) in worker.root_stats() {
                let c = cell as usize;
                if c < CELLS {
                    visits[c] += u64::from(v);
                    wins[c] += f64::from(w);
                    present[c] = true;
                    won[c] |= proven == WON;
                    lost[c] |= proven == LOST;
                }
            }
        }
        let rank = |c: usize| {
            if won[c] {
                proof_rank(WON)
            } else if lost[c] {
                proof_rank(LOST)
            } else {
                proof_rank(0)
            }
        };
        (0..CELLS)
            .filter(|&c| present[c])
            .max_by(|&a, &b| {
                most_played((rank(a), visits[a], wins[a]), (rank(b), visits[b], wins[b]))
            })
            .map_or(NO, |c| c as u8)
    }
}

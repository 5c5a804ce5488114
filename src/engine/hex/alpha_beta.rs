//! The Hex engine's alpha-beta stage: iterative deepening over the candidate cells with the
//! resistance evaluation at the leaves.

use super::*;

impl HexEngine {
    /// Iterative-deepening alpha-beta over `candidates` (best first) with the resistance
    /// evaluation at the leaves; returns the best move of the deepest finished iteration.
    pub(super) fn alpha_beta_root(
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
    pub(super) fn negamax(
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
}

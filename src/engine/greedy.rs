//! The `greedy` engine: a one-ply baseline for every game. It tries each legal move, scores the
//! resulting position with a simple static evaluation, and plays the best (ties broken at
//! random). It takes a win in one but never looks at the opponent's reply.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::Ordering;

use super::{
    candidate_moves, check_option_names, replay, Engine, EngineError, EngineInfo, SearchRequest,
};
use crate::game::{AnyGame, GameId, Side};

pub const INFO: EngineInfo = EngineInfo {
    id: "greedy",
    games: &GameId::ALL,
    about:
        "one-ply greedy baseline: best immediate evaluation (material, lines, connection distance)",
    options: &[],
};

/// Plays the move with the best one-ply evaluation.
#[derive(Debug)]
pub struct GreedyEngine {
    game: GameId,
    rules: serde_json::Value,
    rng: SmallRng,
}

impl GreedyEngine {
    pub fn new(
        game: GameId,
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<GreedyEngine, EngineError> {
        check_option_names(options, INFO.options)?;
        crate::game::new_game(game, rules)?;
        Ok(GreedyEngine {
            game,
            rules: rules.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

impl Engine for GreedyEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let position = replay(self.game, &self.rules, request.moves)?;
        let me = position.turn();
        let rng = &mut self.rng;
        let mut moves = candidate_moves(&*position, &mut |n| rng.gen_range(0..n.max(1)));
        if self.game == GameId::Connect6 {
            // Only stones within two points of a stone already down, as every Connect6 program
            // does: the full list has ~65,000 pairs, too many to score within a short limit.
            let board = Board::read(&position.position_text());
            let near: Vec<String> = moves
                .iter()
                .filter(|m| m.split(',').all(|p| board.near_a_stone(p)))
                .cloned()
                .collect();
            if !near.is_empty() {
                moves = near;
            }
        }
        let mut best: Vec<&String> = Vec::new();
        let mut best_score = i64::MIN;
        for mv in &moves {
            if request.abort.load(Ordering::Relaxed) && !best.is_empty() {
                break;
            }
            let mut child = position.clone_box();
            if child.play_text(mv).is_err() {
                continue;
            }
            let score = evaluate(&*child, me);
            if score > best_score {
                best_score = score;
                best.clear();
            }
            if score == best_score {
                best.push(mv);
            }
        }
        if best.is_empty() {
            return Err(EngineError::NoMove);
        }
        let pick = self.rng.gen_range(0..best.len());
        Ok(best[pick].clone())
    }
}

const WIN: i64 = 1 << 40;

/// A static score of `position` for `me` (higher is better), read from its position text.
pub fn evaluate(position: &dyn AnyGame, me: Side) -> i64 {
    if let Some(outcome) = position.outcome() {
        return match outcome.winner {
            Some(w) if w == me => WIN,
            Some(_) => -WIN,
            None => 0,
        };
    }
    let text = position.position_text();
    let board = Board::read(&text);
    let (mine, theirs) = match me {
        Side::First => (b'x', b'o'),
        Side::Second => (b'o', b'x'),
    };
    match position.game() {
        GameId::Surakarta => 100 * (board.count(mine) - board.count(theirs)),
        GameId::Jiu => {
            100 * (board.count(mine) - board.count(theirs))
                + 10 * (board.squares(mine) - board.squares(theirs))
        }
        GameId::Connect6 => board.line_score(mine) - board.line_score(theirs),
        GameId::Hex => {
            // First (x) joins bottom to top, second (o) left to right.
            let d_first = board.hex_distance(b'x', b'o', true);
            let d_second = board.hex_distance(b'o', b'x', false);
            let (d_mine, d_theirs) = if me == Side::First {
                (d_first, d_second)
            } else {
                (d_second, d_first)
            };
            100 * (d_theirs - d_mine)
        }
    }
}

/// The rows of a position text, top row first, as bytes.
struct Board {
    rows: Vec<Vec<u8>>,
}

impl Board {
    fn read(text: &str) -> Board {
        let rows_text = text.split_whitespace().next().unwrap_or("");
        Board {
            rows: rows_text
                .split('/')
                .map(|r| r.as_bytes().to_vec())
                .collect(),
        }
    }

    fn size(&self) -> usize {
        self.rows.len()
    }

    fn at(&self, row: usize, col: usize) -> u8 {
        self.rows
            .get(row)
            .and_then(|r| r.get(col))
            .copied()
            .unwrap_or(b'.')
    }

    /// Whether the point named `text` (e.g. `J10`) lies within two points (in both directions)
    /// of a stone; on an empty board, whether it is the centre point.
    fn near_a_stone(&self, text: &str) -> bool {
        let n = self.size();
        let Ok(point) = crate::game::coord::parse_point(text, n as u8) else {
            return false;
        };
        let (t, col) = (n - 1 - point.row as usize, point.col as usize);
        if self.rows.iter().flatten().all(|&b| b == b'.') {
            return t == n / 2 && col == n / 2;
        }
        let lo = |v: usize| v.saturating_sub(2);
        (lo(t)..=(t + 2).min(n - 1))
            .any(|r| (lo(col)..=(col + 2).min(n - 1)).any(|c| self.at(r, c) != b'.'))
    }

    fn count(&self, c: u8) -> i64 {
        self.rows.iter().flatten().filter(|&&b| b == c).count() as i64
    }

    /// 2×2 squares made entirely of `c`.
    fn squares(&self, c: u8) -> i64 {
        let n = self.size();
        let mut count = 0;
        for r in 0..n.saturating_sub(1) {
            for col in 0..n.saturating_sub(1) {
                if self.at(r, col) == c
                    && self.at(r + 1, col) == c
                    && self.at(r, col + 1) == c
                    && self.at(r + 1, col + 1) == c
                {
                    count += 1;
                }
            }
        }
        count
    }

    /// Sum over every window of six points in a line holding only `c` stones of a value rising
    /// steeply with the number of stones.
    fn line_score(&self, c: u8) -> i64 {
        const VALUE: [i64; 7] = [0, 1, 8, 60, 400, 2_000, 100_000];
        let n = self.size() as i64;
        let mut total = 0;
        for (dr, dc) in [(0i64, 1i64), (1, 0), (1, 1), (1, -1)] {
            for r in 0..n {
                for col in 0..n {
                    let (er, ec) = (r + 5 * dr, col + 5 * dc);
                    if !(0..n).contains(&er) || !(0..n).contains(&ec) {
                        continue;
                    }
                    let mut own = 0;
                    let mut blocked = false;
                    for k in 0..6 {
                        let b = self.at((r + k * dr) as usize, (col + k * dc) as usize);
                        if b == c {
                            own += 1;
                        } else if b != b'.' {
                            blocked = true;
                            break;
                        }
                    }
                    if !blocked {
                        total += VALUE[own];
                    }
                }
            }
        }
        total
    }

    /// Fewest empty cells `c` must still fill to connect its edges (0-1 breadth-first search;
    /// own stones cost 0, empty cells 1, `enemy` cells are walls). `vertical`: top to bottom.
    fn hex_distance(&self, c: u8, enemy: u8, vertical: bool) -> i64 {
        let n = self.size();
        let unreachable = (n * n) as i64 + 1;
        let mut dist = vec![unreachable; n * n];
        let mut deque = std::collections::VecDeque::new();
        // Text rows are top first: text row t is board row n-1-t.
        let cost = |t: usize, col: usize| -> Option<i64> {
            match self.at(t, col) {
                b if b == enemy => None,
                b if b == c => Some(0),
                _ => Some(1),
            }
        };
        for i in 0..n {
            let (t, col) = if vertical { (n - 1, i) } else { (i, 0) };
            if let Some(w) = cost(t, col) {
                let idx = t * n + col;
                if w < dist[idx] {
                    dist[idx] = w;
                    if w == 0 {
                        deque.push_front(idx);
                    } else {
                        deque.push_back(idx);
                    }
                }
            }
        }
        while let Some(idx) = deque.pop_front() {
            let (t, col) = (idx / n, idx % n);
            // Board neighbours (c±1, r), (c, r±1), (c+1, r+1), (c-1, r-1); board row up = text row down.
            let (t, col) = (t as i64, col as i64);
            for (dt, dc) in [(0, 1), (0, -1), (1, 0), (-1, 0), (-1, 1), (1, -1)] {
                let (nt, nc) = (t + dt, col + dc);
                if nt < 0 || nc < 0 || nt >= n as i64 || nc >= n as i64 {
                    continue;
                }
                let (nt, nc) = (nt as usize, nc as usize);
                if let Some(w) = cost(nt, nc) {
                    let nidx = nt * n + nc;
                    let d = dist[idx] + w;
                    if d < dist[nidx] {
                        dist[nidx] = d;
                        if w == 0 {
                            deque.push_front(nidx);
                        } else {
                            deque.push_back(nidx);
                        }
                    }
                }
            }
        }
        (0..n)
            .map(|i| {
                if vertical {
                    dist[i]
                } else {
                    dist[i * n + n - 1]
                }
            })
            .min()
            .unwrap_or(unreachable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ClockView;
    use std::sync::atomic::AtomicBool;

    fn choose(game: GameId, moves: &[&str]) -> String {
        let mut engine =
            GreedyEngine::new(game, &serde_json::Value::Null, &serde_json::Value::Null, 3).unwrap();
        let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        let abort = AtomicBool::new(false);
        engine
            .choose_move(&SearchRequest {
                moves: &moves,
                clock: ClockView::unlimited(),
                abort: &abort,
            })
            .unwrap()
    }

    #[test]
    fn takes_a_connect6_win_in_one() {
        // Black has A1..D1 (and the opening J10); two more stones on row 1 win.
        let mv = choose(
            GameId::Connect6,
            &["A1", "S19,S18", "B1,C1", "S17,S16", "D1,J10", "R19,R18"],
        );
        let mut position =
            crate::game::new_game(GameId::Connect6, &serde_json::Value::Null).unwrap();
        for m in [
            "A1",
            "S19,S18",
            "B1,C1",
            "S17,S16",
            "D1,J10",
            "R19,R18",
            mv.as_str(),
        ] {
            position.play_text(m).unwrap();
        }
        assert_eq!(
            position.outcome().map(|o| o.winner),
            Some(Some(Side::First)),
            "{mv}"
        );
    }

    #[test]
    fn hex_distance_counts_missing_cells() {
        let empty = crate::game::new_game(GameId::Hex, &serde_json::Value::Null).unwrap();
        let board = Board::read(&empty.position_text());
        assert_eq!(board.hex_distance(b'x', b'o', true), 11);
        assert_eq!(board.hex_distance(b'o', b'x', false), 11);
        let mut position = empty.clone_box();
        position.play_text("F6").unwrap();
        let board = Board::read(&position.position_text());
        assert_eq!(board.hex_distance(b'x', b'o', true), 10);
        assert_eq!(board.hex_distance(b'o', b'x', false), 11);
    }

    #[test]
    fn greedy_beats_random_at_hex() {
        let config = crate::duel::DuelConfig {
            game: GameId::Hex,
            rules: serde_json::Value::Null,
            engines: [
                ("greedy".into(), serde_json::Value::Null),
                ("random".into(), serde_json::Value::Null),
            ],
            games: 2,
            move_ms: 5_000,
            seed: 11,
        };
        let results = crate::duel::run(&config, |_| {}).unwrap();
        let (wins, _, _) = crate::duel::score(&results);
        assert_eq!(
            wins, 2,
            "greedy lost to random (seeded, so this is reproducible)"
        );
    }
}

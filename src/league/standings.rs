//! Standings of one tournament from its finished games: points, wins/draws/losses, the
//! tie-breaks (head-to-head, Sonneborn-Berger, Buchholz for Swiss, then name), the Elo estimate
//! and per-bot diagnostics (losses by timeout / illegal move / disconnect / forfeit, mean think time).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::elo::{self, EloOptions};
use crate::game::{EndReason, Side};
use crate::game_line::GameLine;

/// Points per game result (`points = { win, draw, loss }` in arena.toml). A Swiss bye scores
/// `win`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Points {
    pub win: f64,
    pub draw: f64,
    pub loss: f64,
}

impl Default for Points {
    fn default() -> Self {
        Points {
            win: 1.0,
            draw: 0.5,
            loss: 0.0,
        }
    }
}

impl Points {
    /// The points for a game score of 1 (win), 0.5 (draw) or 0 (loss).
    pub fn for_score(&self, score: f64) -> f64 {
        if score > 0.75 {
            self.win
        } else if score > 0.25 {
            self.draw
        } else {
            self.loss
        }
    }

    /// The weight a game result gets in Sonneborn-Berger: the game's points as a fraction of a
    /// win (1, 0.5, 0 with the default points). With a non-positive `win` the plain score is used.
    fn sonneborn_berger_weight(&self, score: f64) -> f64 {
        if self.win > 0.0 {
            self.for_score(score) / self.win
        } else {
            score
        }
    }
}

/// Think time summed over the moves of one side of one game (server-measured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkTotal {
    pub total_ms: u64,
    pub moves: u64,
}

impl ThinkTotal {
    pub fn add(&mut self, think_ms: u64) {
        self.total_ms = self.total_ms.saturating_add(think_ms);
        self.moves = self.moves.saturating_add(1);
    }

    fn merge(&mut self, other: ThinkTotal) {
        self.total_ms = self.total_ms.saturating_add(other.total_ms);
        self.moves = self.moves.saturating_add(other.moves);
    }
}

/// One finished game as the standings need it.
#[derive(Debug, Clone, PartialEq)]
pub struct GameResult {
    pub first: String,
    pub second: String,
    /// `None` for a draw.
    pub winner: Option<Side>,
    pub reason: EndReason,
    /// Think time of each side, indexed by `Side::index()`.
    pub think: [ThinkTotal; 2],
}

impl GameResult {
    /// What the standings need of one games.jsonl line: the players, the result, the reason
    /// and each side's think time (the mover of each move is found with
    /// [`GameId::mover_of_ply`]).
    pub fn from_line(line: &GameLine) -> GameResult {
        let mut think = [ThinkTotal::default(); 2];
        for (i, &ms) in line.think_ms.iter().enumerate() {
            think[line.game.mover_of_ply(i + 1).index()].add(ms);
        }
        GameResult {
            first: line.first.clone(),
            second: line.second.clone(),
            winner: line.winner(),
            reason: line.reason,
            think,
        }
    }

    /// The score of `side`: 1 win, 0.5 draw, 0 loss.
    pub fn score(&self, side: Side) -> f64 {
        match self.winner {
            None => 0.5,
            Some(w) if w == side => 1.0,
            Some(_) => 0.0,
        }
    }
}

/// One bot's line in the standings. Field order is the column order of the standings files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingRow {
    /// 1-based; bots equal on points and every numeric tie-break share a rank.
    pub rank: u32,
    pub name: String,
    /// Games played (byes not included).
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Swiss byes received; each scored `points.win` and is in `points`.
    pub byes: u32,
    pub points: f64,
    /// Points scored against the bots that have the same points (0 when no one has).
    pub head_to_head: f64,
    pub sonneborn_berger: f64,
    /// Sum of the opponents' points; Swiss only (`null` otherwise).
    pub buchholz: Option<f64>,
    pub elo: f64,
    pub elo_low: f64,
    pub elo_high: f64,
    pub timeout_losses: u32,
    pub illegal_move_losses: u32,
    pub disconnect_losses: u32,
    pub forfeit_losses: u32,
    /// Mean server-measured think time per move; `null` before the bot's first move.
    pub mean_think_ms: Option<f64>,
    /// Times the server suspended the bot for `suspend_after_faults` losses in a row by
    /// timeout or illegal move (filled in by the server; 0 from `compute_standings`).
    #[serde(default)]
    pub suspensions: u32,
}

/// Turns a points value into an exact integer key so that ties compare exactly.
fn key(x: f64) -> i64 {
    (x * 1e6).round() as i64
}

/// `x` rounded to one decimal (the nearest double to the decimal, so it prints short).
fn round_to_tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[derive(Default)]
struct Tally {
    games: u32,
    wins: u32,
    draws: u32,
    losses: u32,
    byes: u32,
    points: f64,
    timeout_losses: u32,
    illegal_move_losses: u32,
    disconnect_losses: u32,
    forfeit_losses: u32,
    think: ThinkTotal,
}

/// The standings of one tournament.
///
/// `bots` are the tournament's bots in config order (bots without games still get a row; a
/// name that only appears in `results` or `byes` is added). `results` are its finished games,
/// `byes` one entry per Swiss bye received. `swiss` turns on the Buchholz tie-break.
/// Rows come sorted: points, head-to-head, Sonneborn-Berger, Buchholz (Swiss), name.
pub fn compute_standings(
    bots: &[String],
    results: &[GameResult],
    byes: &[String],
    points: &Points,
    swiss: bool,
    elo_options: &EloOptions,
) -> Vec<StandingRow> {
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut intern = |name: &str, names: &mut Vec<String>| -> usize {
        if let Some(&i) = index.get(name) {
            return i;
        }
        names.push(name.to_string());
        index.insert(name.to_string(), names.len() - 1);
        names.len() - 1
    };
    for bot in bots {
        intern(bot, &mut names);
    }
    // (first index, second index, score of first) per game.
    let mut games: Vec<(usize, usize, f64)> = Vec::with_capacity(results.len());
    for r in results {
        let a = intern(&r.first, &mut names);
        let b = intern(&r.second, &mut names);
        games.push((a, b, r.score(Side::First)));
    }
    let bye_players: Vec<usize> = byes.iter().map(|b| intern(b, &mut names)).collect();
    let n = names.len();

    let mut tally: Vec<Tally> = (0..n).map(|_| Tally::default()).collect();
    for (r, &(a, b, _)) in results.iter().zip(&games) {
        for (side, me) in [(Side::First, a), (Side::Second, b)] {
            let score = r.score(side);
            let Some(t) = tally.get_mut(me) else { continue };
            t.games += 1;
            t.points += points.for_score(score);
            t.think.merge(r.think[side.index()]);
            if score > 0.75 {
                t.wins += 1;
            } else if score > 0.25 {
                t.draws += 1;
            } else {
                t.losses += 1;
                match r.reason {
                    EndReason::Timeout => t.timeout_losses += 1,
                    EndReason::IllegalMove => t.illegal_move_losses += 1,
                    EndReason::Disconnect => t.disconnect_losses += 1,
                    EndReason::Forfeit => t.forfeit_losses += 1,
                    _ => {}
                }
            }
        }
    }
    for &p in &bye_players {
        if let Some(t) = tally.get_mut(p) {
            t.byes += 1;
            t.points += points.win;
        }
    }
    let total: Vec<f64> = tally.iter().map(|t| t.points).collect();

    let mut sonneborn_berger = vec![0.0; n];
    let mut buchholz = vec![0.0; n];
    let mut head_to_head = vec![0.0; n];
    for &(a, b, score_a) in &games {
        for (me, opp, score) in [(a, b, score_a), (b, a, 1.0 - score_a)] {
            let opp_points = total.get(opp).copied().unwrap_or(0.0);
            if let Some(sb) = sonneborn_berger.get_mut(me) {
                *sb += points.sonneborn_berger_weight(score) * opp_points;
            }
            if let Some(bh) = buchholz.get_mut(me) {
                *bh += opp_points;
            }
            let tied = me != opp && key(total.get(me).copied().unwrap_or(0.0)) == key(opp_points);
            if tied {
                if let Some(h) = head_to_head.get_mut(me) {
                    *h += points.for_score(score);
                }
            }
        }
    }

    let ratings = elo::estimate(n, &games, elo_options);

    let mut rows: Vec<StandingRow> = names
        .iter()
        .zip(&tally)
        .zip(head_to_head.iter().zip(&sonneborn_berger).zip(&buchholz))
        .enumerate()
        .map(|(i, ((name, t), ((&h2h, &sb), &bh)))| {
            let rating = ratings.get(i).copied().unwrap_or_default();
            StandingRow {
                rank: 0,
                name: name.clone(),
                games: t.games,
                wins: t.wins,
                draws: t.draws,
                losses: t.losses,
                byes: t.byes,
                points: t.points,
                head_to_head: h2h,
                sonneborn_berger: sb,
                buchholz: swiss.then_some(bh),
                elo: round_to_tenth(rating.rating),
                elo_low: round_to_tenth(rating.low),
                elo_high: round_to_tenth(rating.high),
                timeout_losses: t.timeout_losses,
                illegal_move_losses: t.illegal_move_losses,
                disconnect_losses: t.disconnect_losses,
                forfeit_losses: t.forfeit_losses,
                suspensions: 0,
                mean_think_ms: (t.think.moves > 0)
                    .then(|| round_to_tenth(t.think.total_ms as f64 / t.think.moves as f64)),
            }
        })
        .collect();

    let tie_key = |r: &StandingRow| {
        (
            key(r.points),
            key(r.head_to_head),
            key(r.sonneborn_berger),
            r.buchholz.map(key).unwrap_or(0),
        )
    };
    rows.sort_by(|x, y| {
        tie_key(y)
            .cmp(&tie_key(x))
            .then_with(|| x.name.cmp(&y.name))
    });
    let mut previous: Option<((i64, i64, i64, i64), u32)> = None;
    for (position, row) in rows.iter_mut().enumerate() {
        let k = tie_key(row);
        let rank = match previous {
            Some((pk, prank)) if pk == k => prank,
            _ => u32::try_from(position + 1).unwrap_or(u32::MAX),
        };
        row.rank = rank;
        previous = Some((k, rank));
    }
    rows
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// `first` against `second`; `winner` is "first", "second" or "draw".
    fn game(first: &str, second: &str, winner: &str) -> GameResult {
        GameResult {
            first: first.to_string(),
            second: second.to_string(),
            winner: match winner {
                "first" => Some(Side::First),
                "second" => Some(Side::Second),
                _ => None,
            },
            reason: EndReason::Connection,
            think: [ThinkTotal::default(); 2],
        }
    }

    fn standings(
        bots: &[&str],
        results: &[GameResult],
        points: &Points,
        swiss: bool,
    ) -> Vec<StandingRow> {
        compute_standings(
            &names(bots),
            results,
            &[],
            points,
            swiss,
            &EloOptions::default(),
        )
    }

    fn order(rows: &[StandingRow]) -> Vec<(u32, &str)> {
        rows.iter().map(|r| (r.rank, r.name.as_str())).collect()
    }

    #[test]
    fn counts_and_points_follow_the_points_config() {
        let results = [
            game("a", "b", "first"),
            game("b", "c", "draw"),
            game("c", "a", "first"),
            game("a", "b", "first"),
        ];
        let rows = standings(
            &["a", "b", "c", "idle"],
            &results,
            &Points::default(),
            false,
        );
        let a = rows.iter().find(|r| r.name == "a").unwrap();
        assert_eq!(
            (a.games, a.wins, a.draws, a.losses, a.points),
            (3, 2, 0, 1, 2.0)
        );
        let b = rows.iter().find(|r| r.name == "b").unwrap();
        assert_eq!(
            (b.games, b.wins, b.draws, b.losses, b.points),
            (3, 0, 1, 2, 0.5)
        );
        let idle = rows.iter().find(|r| r.name == "idle").unwrap();
        assert_eq!(
            (idle.games, idle.points, idle.mean_think_ms),
            (0, 0.0, None)
        );
        assert_eq!(rows[0].name, "a");
        let three = Points {
            win: 3.0,
            draw: 1.0,
            loss: -1.0,
        };
        let rows = standings(&["a", "b", "c"], &results, &three, false);
        let points: Vec<(&str, f64)> = rows.iter().map(|r| (r.name.as_str(), r.points)).collect();
        assert_eq!(points, vec![("a", 5.0), ("c", 4.0), ("b", -1.0)]);
    }

    #[test]
    fn byes_score_a_win_without_being_games() {
        let rows = compute_standings(
            &names(&["a", "b", "c"]),
            &[game("a", "b", "draw")],
            &names(&["c"]),
            &Points {
                win: 2.0,
                draw: 1.0,
                loss: 0.0,
            },
            true,
            &EloOptions::default(),
        );
        let c = rows.iter().find(|r| r.name == "c").unwrap();
        assert_eq!(
            (c.games, c.wins, c.byes, c.points, c.rank),
            (0, 0, 1, 2.0, 1)
        );
        assert_eq!(c.elo, 1500.0, "a bye says nothing about strength");
    }

    #[test]
    fn head_to_head_breaks_a_points_tie_before_sonneborn_berger() {
        let results = [
            game("b", "a", "first"),
            game("a", "c", "first"),
            game("a", "d", "first"),
            game("c", "b", "first"),
            game("b", "d", "first"),
            game("c", "d", "second"),
        ];
        let rows = standings(&["a", "b", "c", "d"], &results, &Points::default(), false);
        assert_eq!(order(&rows), vec![(1, "b"), (2, "a"), (3, "d"), (4, "c")]);
        let by_name = |n: &str| rows.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!(
            (by_name("b").head_to_head, by_name("a").head_to_head),
            (1.0, 0.0)
        );
        // d is ahead of c on head-to-head although c's Sonneborn-Berger is higher.
        assert_eq!(
            (by_name("d").sonneborn_berger, by_name("c").sonneborn_berger),
            (1.0, 2.0)
        );
    }

    #[test]
    fn sonneborn_berger_breaks_a_tie_the_head_to_head_leaves_and_scales_with_points() {
        let results = [
            game("zz", "aa", "draw"),
            game("zz", "r", "first"),
            game("aa", "s", "first"),
            game("r", "s", "first"),
        ];
        let rows = standings(&["aa", "zz", "r", "s"], &results, &Points::default(), false);
        assert_eq!(order(&rows), vec![(1, "zz"), (2, "aa"), (3, "r"), (4, "s")]);
        assert_eq!((rows[0].head_to_head, rows[1].head_to_head), (0.5, 0.5));
        assert_eq!(
            (rows[0].sonneborn_berger, rows[1].sonneborn_berger),
            (1.75, 0.75)
        );
        // 3/1/0 points: a draw weighs a third of a win.
        let three = Points {
            win: 3.0,
            draw: 1.0,
            loss: 0.0,
        };
        let rows = standings(&["aa", "zz", "r", "s"], &results, &three, false);
        assert_eq!(rows[0].name, "zz");
        assert!((rows[0].sonneborn_berger - (4.0 / 3.0 + 3.0)).abs() < 1e-9);
        assert!((rows[1].sonneborn_berger - 4.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn buchholz_breaks_the_remaining_tie_in_swiss_only_then_names_order_a_shared_rank() {
        let results = [
            game("bob", "x", "first"),
            game("p", "bob", "first"),
            game("al", "y", "first"),
            game("q", "al", "first"),
            game("p", "z", "first"),
        ];
        let bots = ["al", "bob", "p", "q", "x", "y", "z"];
        let swiss = standings(&bots, &results, &Points::default(), true);
        assert_eq!(
            &order(&swiss)[..4],
            &[(1, "p"), (2, "q"), (3, "bob"), (4, "al")]
        );
        let bob = swiss.iter().find(|r| r.name == "bob").unwrap();
        assert_eq!((bob.buchholz, bob.sonneborn_berger), (Some(2.0), 0.0));
        let plain = standings(&bots, &results, &Points::default(), false);
        assert_eq!(
            &order(&plain)[..4],
            &[(1, "p"), (2, "q"), (3, "al"), (3, "bob")]
        );
        assert!(plain.iter().all(|r| r.buchholz.is_none()));
        // A three-way cycle ties on everything: one shared rank, listed by name.
        let cycle = [
            game("zed", "amy", "first"),
            game("amy", "cat", "first"),
            game("cat", "zed", "first"),
        ];
        let rows = standings(&["zed", "amy", "cat"], &cycle, &Points::default(), false);
        assert_eq!(order(&rows), vec![(1, "amy"), (1, "cat"), (1, "zed")]);
        assert!(rows.iter().all(|r| (r.elo - 1500.0).abs() < 0.05));
    }

    #[test]
    fn diagnostics_count_loss_reasons_and_mean_think_time() {
        let mut results = Vec::new();
        for (reason, winner) in [
            (EndReason::Timeout, Side::First),
            (EndReason::IllegalMove, Side::First),
            (EndReason::Disconnect, Side::Second),
            (EndReason::Forfeit, Side::First),
            (EndReason::Resign, Side::First),
        ] {
            let mut g = game("a", "b", winner.as_str());
            g.reason = reason;
            g.think = [
                ThinkTotal {
                    total_ms: 100,
                    moves: 4,
                },
                ThinkTotal {
                    total_ms: 90,
                    moves: 3,
                },
            ];
            results.push(g);
        }
        let rows = standings(&["a", "b"], &results, &Points::default(), false);
        let b = rows.iter().find(|r| r.name == "b").unwrap();
        assert_eq!(
            (
                b.timeout_losses,
                b.illegal_move_losses,
                b.disconnect_losses,
                b.forfeit_losses
            ),
            (1, 1, 0, 1)
        );
        assert_eq!(b.mean_think_ms, Some(30.0));
        let a = rows.iter().find(|r| r.name == "a").unwrap();
        assert_eq!(
            (a.disconnect_losses, a.losses, a.mean_think_ms),
            (1, 1, Some(25.0))
        );
        assert!(a.elo > b.elo && a.elo_low < a.elo && a.elo < a.elo_high);
    }

    #[test]
    fn games_json_objects_are_read_with_each_move_charged_to_its_mover() {
        // A whole games.jsonl line with the fields the standings read replaced by `fields`.
        let line = |fields: serde_json::Value| {
            let mut value = json!({"match": "m1", "tournament": "t", "moves": [], "lag_ms": [],
                "rules": {}, "think_ms": [],
                "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
                "started": "2026-11-22T21:00:00+00:00",
                "finished": "2026-11-22T21:01:00+00:00", "record": ""});
            for (k, v) in fields.as_object().unwrap() {
                value[k] = v.clone();
            }
            value
        };
        let read = |value: serde_json::Value| {
            GameLine::from_json(&value).map(|l| GameResult::from_line(&l))
        };
        // Jiu: 196 placements alternate from the first side, then the second side moves first
        // in battle, so ply 197 is the second side's.
        let mut think: Vec<u64> = (1..=196)
            .map(|ply| if ply % 2 == 1 { 10 } else { 20 })
            .collect();
        think.extend([20, 10]);
        let value = line(
            json!({"game": "jiu", "first": "w", "second": "b", "result": "second",
            "reason": "few_stones", "think_ms": think, "match": "m1"}),
        );
        let r = read(value).unwrap();
        assert_eq!(
            r.think[0],
            ThinkTotal {
                total_ms: 99 * 10,
                moves: 99
            }
        );
        assert_eq!(
            r.think[1],
            ThinkTotal {
                total_ms: 99 * 20,
                moves: 99
            }
        );
        assert_eq!(
            (r.winner, r.reason),
            (Some(Side::Second), EndReason::FewStones)
        );
        let hex = line(
            json!({"game": "hex", "first": "a", "second": "b", "result": "draw",
            "reason": "board_full", "think_ms": [1, 2, 3]}),
        );
        let r = read(hex).unwrap();
        assert_eq!(
            (r.think[0].total_ms, r.think[1].total_ms, r.winner),
            (4, 2, None)
        );
        let bad = line(
            json!({"game": "hex", "first": "a", "second": "b", "result": "won", "reason": "resign"}),
        );
        assert!(read(bad).unwrap_err().to_string().contains("result"));
        let mut missing =
            line(json!({"game": "hex", "first": "a", "result": "draw", "reason": "resign"}));
        missing.as_object_mut().unwrap().remove("second");
        assert!(read(missing).unwrap_err().to_string().contains("second"));
    }
}

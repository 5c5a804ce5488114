//! The tally of a match: each finished game read from the first engine's side (`GameResult`),
//! counted into wins, draws, losses, game pairs, end reasons and think times (`Tally`).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::report::MoveTimes;
use super::stats::{self, EloEstimate, Moments, Pentanomial, Wdl};
use crate::game::{EndReason, Side};
use crate::game_line::{GameLine, LineResult};

/// One finished game as the tally needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameResult {
    /// 1-based game number in the match (`…-gN`).
    pub number: u32,
    /// Whether the first engine (`--engine` #1) moved first.
    pub first_engine_first: bool,
    pub result: LineResult,
    pub reason: EndReason,
    /// Each engine's think time per move (first engine, second engine), in milliseconds, as
    /// the referee charged it; the opening's moves, which neither engine played, left out.
    pub think_ms: [Vec<u64>; 2],
}

impl GameResult {
    /// Reads a games.jsonl line of this match (`None` for a match id not of the form `…-gN`);
    /// its first `opening_plies` moves are the opening.
    pub fn from_line(
        line: &GameLine,
        first_engine: &str,
        opening_plies: usize,
    ) -> Option<GameResult> {
        let number = line.match_id.rsplit_once("-g")?.1.parse().ok()?;
        let first_engine_first = line.first == first_engine;
        let mut think_ms = [Vec::new(), Vec::new()];
        for (index, &ms) in line.think_ms.iter().enumerate().skip(opening_plies) {
            let first_moved = line.game.mover_of_ply(index + 1) == Side::First;
            think_ms[usize::from(first_moved != first_engine_first)].push(ms);
        }
        Some(GameResult {
            number,
            first_engine_first,
            result: line.result,
            reason: line.reason,
            think_ms,
        })
    }

    /// The first engine's points: 1, 0.5 or 0.
    pub fn points(&self) -> f64 {
        match (self.result, self.first_engine_first) {
            (LineResult::Draw, _) => 0.5,
            (LineResult::First, true) | (LineResult::Second, false) => 1.0,
            _ => 0.0,
        }
    }

    /// Which engine lost (0 or 1), `None` for a draw.
    pub fn loser(&self) -> Option<usize> {
        match self.points() {
            p if p >= 1.0 => Some(1),
            p if p <= 0.0 => Some(0),
            _ => None,
        }
    }
}

/// The running count of a match, from the first engine's side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub wdl: Wdl,
    /// Points of the first engine in each game of each pair (pair k: games 2k+1, 2k+2).
    pairs: HashMap<u32, [Option<f64>; 2]>,
    /// End reason → games lost by each engine (draws in `draws`).
    pub reasons: BTreeMap<EndReason, ReasonCount>,
    /// Each engine's think times per move over the games so far: milliseconds → moves (a
    /// count per distinct time, so that a match of many fast games stays cheap to summarise).
    think_ms: [BTreeMap<u64, u64>; 2],
}

/// How many games ended for one reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReasonCount {
    /// Games the first / second engine lost this way.
    pub lost_by: [u32; 2],
    pub draws: u32,
}

impl ReasonCount {
    pub fn total(&self) -> u32 {
        self.lost_by[0] + self.lost_by[1] + self.draws
    }
}

impl Tally {
    pub fn add(&mut self, game: &GameResult) {
        let points = game.points();
        match game.loser() {
            Some(1) => self.wdl.wins += 1,
            Some(_) => self.wdl.losses += 1,
            None => self.wdl.draws += 1,
        }
        let entry = self.reasons.entry(game.reason).or_default();
        match game.loser() {
            Some(i) => entry.lost_by[i] += 1,
            None => entry.draws += 1,
        }
        let pair = game.number.saturating_sub(1) / 2;
        let slot = usize::from(game.number.is_multiple_of(2));
        self.pairs.entry(pair).or_default()[slot] = Some(points);
        for (counts, this_game) in self.think_ms.iter_mut().zip(&game.think_ms) {
            for &ms in this_game {
                *counts.entry(ms).or_default() += 1;
            }
        }
    }

    /// Each engine's time per move so far (`None` for an engine that has made no move).
    pub fn move_times(&self) -> [Option<MoveTimes>; 2] {
        [
            MoveTimes::of(&self.think_ms[0]),
            MoveTimes::of(&self.think_ms[1]),
        ]
    }

    pub fn games(&self) -> u32 {
        self.wdl.games()
    }

    /// Complete pairs by the first engine's points in the pair: [0, ½, 1, 1½, 2].
    pub fn pentanomial(&self) -> Pentanomial {
        let mut counts = [0u32; 5];
        for pair in self.pairs.values() {
            if let [Some(a), Some(b)] = pair {
                let index = ((a + b) * 2.0).round() as usize;
                if let Some(c) = counts.get_mut(index) {
                    *c += 1;
                }
            }
        }
        counts
    }

    /// Elo difference with its interval: from the pairs when there are complete pairs (their
    /// spread is what the openings leave), else from the games.
    /// When the pairs show no spread at all (every pair scored alike), the interval comes from
    /// the counts regularised as the SPRT does (each empty count as 0.001 pairs), so that it is
    /// not a single point.
    pub fn elo(&self) -> Option<EloEstimate> {
        let pairs = self.pentanomial();
        match Moments::pentanomial(&pairs) {
            Some(m) if m.variance > 0.0 => Some(EloEstimate::of(m)),
            Some(m) => Moments::regularized(&pairs).map(|r| EloEstimate {
                elo: stats::elo_of_score(m.mean),
                ..EloEstimate::of(r)
            }),
            None => Moments::trinomial(self.wdl).map(EloEstimate::of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameId;
    use crate::matches::MatchReport;

    fn result(number: u32, first_engine_first: bool, result: &str, reason: &str) -> GameResult {
        GameResult {
            number,
            first_engine_first,
            result: serde_json::from_value(serde_json::json!(result)).unwrap(),
            reason: reason.parse().unwrap(),
            think_ms: [Vec::new(), Vec::new()],
        }
    }

    #[test]
    fn the_tally_counts_games_pairs_and_reasons_from_the_first_engine() {
        let mut tally = Tally::default();
        // Pair 0: A wins with first, draws with second → 1½.
        tally.add(&result(1, true, "first", "connection"));
        tally.add(&result(2, false, "draw", "board_full"));
        // Pair 1: A loses both (once on time) → 0.
        tally.add(&result(3, true, "second", "connection"));
        tally.add(&result(4, false, "first", "timeout"));
        // Pair 2: only the first game so far (A wins as second).
        tally.add(&result(5, false, "second", "illegal_move"));
        assert_eq!(
            tally.wdl,
            Wdl {
                wins: 2,
                draws: 1,
                losses: 2
            }
        );
        assert_eq!(tally.pentanomial(), [1, 0, 0, 1, 0]);
        assert_eq!(tally.reasons[&EndReason::Timeout].lost_by, [1, 0]);
        assert_eq!(tally.reasons[&EndReason::IllegalMove].lost_by, [0, 1]);
        assert_eq!(tally.reasons[&EndReason::Connection].lost_by, [1, 1]);
        assert_eq!(tally.reasons[&EndReason::BoardFull].draws, 1);
        let report = MatchReport::of(GameId::Hex, &["a".into(), "b".into()], 10, &tally, None);
        assert_eq!(report.games, 5);
        assert!((report.score - 0.5).abs() < 1e-12);
        assert_eq!(report.reasons[&EndReason::Connection], 2);
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "games",
            "wins",
            "draws",
            "losses",
            "score",
            "elo",
            "elo_ci95",
            "pentanomial",
            "reasons",
            "sprt",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        let mut table = Vec::new();
        report.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("a: W 2 D 1 L 2"), "{table}");
        assert!(table.contains("pairs       [1, 0, 0, 1, 0]"), "{table}");
        assert!(report.progress_line(None).contains("5/10"));
    }

    #[test]
    fn a_game_line_is_read_from_the_first_engines_side() {
        let line = GameLine::from_json(&serde_json::json!({
            "match": "match-r1-p1-g4", "tournament": "match", "game": "hex", "first": "b",
            "second": "a", "result": "second", "reason": "resign", "moves": ["A1"],
            "think_ms": [5], "lag_ms": [0], "rules": {"swap": false},
            "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-23T00:00:00Z", "finished": "2026-11-23T00:00:01Z",
            "record": "r.txt"
        }))
        .unwrap();
        let game = GameResult::from_line(&line, "a", 0).unwrap();
        assert_eq!(game.number, 4);
        assert!(!game.first_engine_first);
        assert_eq!(game.points(), 1.0);
        assert_eq!(game.loser(), Some(1));
    }

    #[test]
    fn think_times_are_each_engines_own_moves_after_the_opening() {
        // Hex, a two-move opening, then engine "a" (second player) and "b" alternate.
        let line = GameLine::from_json(&serde_json::json!({
            "match": "match-r1-p1-g2", "tournament": "match", "game": "hex", "first": "b",
            "second": "a", "result": "first", "reason": "connection",
            "moves": ["A1", "B2", "C3", "D4", "E5", "F6"],
            "think_ms": [0, 0, 300, 1000, 500, 3000], "lag_ms": [0, 0, 0, 0, 0, 0],
            "rules": {"swap": false},
            "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-23T00:00:00Z", "finished": "2026-11-23T00:00:01Z",
            "record": "r.txt"
        }))
        .unwrap();
        let game = GameResult::from_line(&line, "a", 2).unwrap();
        assert_eq!(game.think_ms, [vec![1000, 3000], vec![300, 500]]);
        let mut tally = Tally::default();
        tally.add(&game);
        let mut again = game.clone();
        again.number = 3;
        again.think_ms = [vec![2000], vec![]];
        tally.add(&again);
        let [a, b] = tally.move_times();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.moves, a.p90_ms, a.max_ms), (3, 3000, 3000));
        assert!((a.mean_ms - 2000.0).abs() < 1e-9);
        assert_eq!((b.moves, b.p90_ms, b.max_ms), (2, 500, 500));
        let report = MatchReport::of(GameId::Hex, &["a".into(), "bb".into()], 4, &tally, None);
        let mut table = Vec::new();
        report.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            table.contains(
                "move time   a:   mean 2.00 s, 90% within 3.00 s, longest 3.00 s (3 moves)\n\
                 \x20           bb:  mean 0.40 s, 90% within 0.50 s, longest 0.50 s (2 moves)\n"
            ),
            "{table}"
        );
        assert!(serde_json::to_value(&report).unwrap()["move_times"][0]["p90_ms"] == 3000);
        // No moves yet: no line.
        let empty = MatchReport::of(
            GameId::Hex,
            &["a".into(), "b".into()],
            4,
            &Tally::default(),
            None,
        );
        let mut table = Vec::new();
        empty.write_table(&mut table).unwrap();
        assert!(!String::from_utf8(table).unwrap().contains("move time"));
    }
}

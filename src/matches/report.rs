//! The report of a match (`MatchReport`): the score, Elo with its interval, LOS, the SPRT's
//! state, end reasons and move times, as the progress line, the table and `--json` show it.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::time::Duration;

use serde::Serialize;

use super::stats::{Pentanomial, SprtResult, SprtSpec};
use super::tally::{ReasonCount, Tally};
use crate::game::{EndReason, GameId};
use crate::quantile::nearest_rank;

/// The SPRT part of the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SprtReport {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    /// `"H0"`, `"H1"` or null while undecided.
    pub decision: Option<&'static str>,
}

impl SprtReport {
    fn of(spec: &SprtSpec, result: SprtResult) -> SprtReport {
        SprtReport {
            elo0: spec.elo0,
            elo1: spec.elo1,
            alpha: spec.alpha,
            beta: spec.beta,
            llr: result.llr,
            lower: result.lower,
            upper: result.upper,
            decision: result.decision.map(|h1| if h1 { "H1" } else { "H0" }),
        }
    }
}

/// How long one engine thought per move, as the referee charged it: whether two engines had
/// equal time is read here, since a program may think longer than it was told to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoveTimes {
    pub moves: u64,
    pub mean_ms: f64,
    /// The time 90% of the moves stayed within.
    pub p90_ms: u64,
    pub max_ms: u64,
}

impl MoveTimes {
    /// From think times in milliseconds, each with its number of moves.
    pub(super) fn of(counts: &BTreeMap<u64, u64>) -> Option<MoveTimes> {
        let (&max_ms, _) = counts.last_key_value()?;
        let moves: u64 = counts.values().sum();
        let total: u64 = counts.iter().map(|(&ms, &n)| ms.saturating_mul(n)).sum();
        // The smallest time at least 90% of the moves stayed within.
        let p90_ms =
            nearest_rank(counts.iter().map(|(&ms, &n)| (ms, n)), moves, 0.9).unwrap_or(max_ms);
        Some(MoveTimes {
            moves,
            mean_ms: total as f64 / moves as f64,
            p90_ms,
            max_ms,
        })
    }
}

/// The final (or current) state of a match, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchReport {
    pub game: String,
    pub engines: [String; 2],
    pub games: u32,
    pub planned: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Points of the first engine over games, 0 to 1.
    pub score: f64,
    /// Null when undefined (no games, or every game won or lost).
    pub elo: Option<f64>,
    pub elo_ci95: [Option<f64>; 2],
    pub los: Option<f64>,
    /// Game pairs by the first engine's points: [0, ½, 1, 1½, 2].
    pub pentanomial: Pentanomial,
    /// End reason → games.
    pub reasons: BTreeMap<EndReason, u32>,
    /// End reason → games lost by each engine and draws.
    pub reasons_detail: BTreeMap<EndReason, ReasonCount>,
    /// Each engine's think time per move (null before its first move).
    pub move_times: [Option<MoveTimes>; 2],
    pub sprt: Option<SprtReport>,
    /// Stopped by ctrl-c before the planned games (resumable with the same command and --out).
    pub interrupted: bool,
    /// Games already in the output folder when this run started.
    pub resumed_games: u32,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl MatchReport {
    pub fn of(
        plan_game: GameId,
        names: &[String; 2],
        planned: u32,
        tally: &Tally,
        sprt: Option<&SprtSpec>,
    ) -> MatchReport {
        let elo = tally.elo();
        let pentanomial = tally.pentanomial();
        MatchReport {
            game: plan_game.as_str().to_string(),
            engines: names.clone(),
            games: tally.games(),
            planned,
            wins: tally.wdl.wins,
            draws: tally.wdl.draws,
            losses: tally.wdl.losses,
            score: tally.wdl.score(),
            elo: elo.and_then(|e| finite(e.elo)),
            elo_ci95: [
                elo.and_then(|e| finite(e.low)),
                elo.and_then(|e| finite(e.high)),
            ],
            los: elo.map(|e| e.los),
            pentanomial,
            reasons: tally.reasons.iter().map(|(k, v)| (*k, v.total())).collect(),
            reasons_detail: tally.reasons.clone(),
            move_times: tally.move_times(),
            sprt: sprt.map(|s| SprtReport::of(s, s.result(&pentanomial))),
            interrupted: false,
            resumed_games: 0,
        }
    }

    /// The one-line progress: `[=====>    ] 12/20  A 7.5/12 (62.5%)  Elo +87 [-20, +200]  ETA 0:35`.
    pub fn progress_line(&self, eta: Option<Duration>) -> String {
        const WIDTH: usize = 20;
        let done = if self.planned == 0 {
            WIDTH
        } else {
            (self.games as usize * WIDTH / self.planned as usize).min(WIDTH)
        };
        let bar: String = (0..WIDTH)
            .map(|i| {
                if i < done {
                    '='
                } else if i == done {
                    '>'
                } else {
                    ' '
                }
            })
            .collect();
        let points = f64::from(self.wins) + 0.5 * f64::from(self.draws);
        let mut line = format!(
            "[{bar}] {}/{}  {} {points}/{} ({:.1}%)  Elo {}",
            self.games,
            self.planned,
            self.engines[0],
            self.games,
            100.0 * self.score,
            elo_text(self.games, self.score, self.elo, self.elo_ci95),
        );
        if let Some(sprt) = &self.sprt {
            line.push_str(&format!(
                "  LLR {:.2} ({:.2}, {:.2})",
                sprt.llr, sprt.lower, sprt.upper
            ));
        }
        if let Some(eta) = eta {
            let s = eta.as_secs();
            line.push_str(&format!(
                "  ETA {}:{:02}:{:02}",
                s / 3600,
                s / 60 % 60,
                s % 60
            ));
        }
        line
    }

    /// The final table.
    pub fn write_table(&self, out: &mut impl Write) -> io::Result<()> {
        let [a, b] = &self.engines;
        writeln!(out, "{} match: {a} vs {b}", self.game)?;
        writeln!(
            out,
            "games       {}{}",
            self.games,
            if self.games < self.planned {
                format!(" of {}", self.planned)
            } else {
                String::new()
            }
        )?;
        writeln!(
            out,
            "{a}: W {} D {} L {}   score {:.1}%",
            self.wins,
            self.draws,
            self.losses,
            100.0 * self.score
        )?;
        writeln!(
            out,
            "Elo         {} (95%)",
            elo_text(self.games, self.score, self.elo, self.elo_ci95)
        )?;
        if let Some(los) = self.los {
            writeln!(out, "LOS         {:.1}%", 100.0 * los)?;
        }
        let p = self.pentanomial;
        writeln!(
            out,
            "pairs       [{}, {}, {}, {}, {}]  ({a}'s points per pair: 0, ½, 1, 1½, 2)",
            p[0], p[1], p[2], p[3], p[4]
        )?;
        let width = a.chars().count().max(b.chars().count());
        for (i, (name, times)) in self.engines.iter().zip(&self.move_times).enumerate() {
            let Some(t) = times else { continue };
            let seconds = |ms: f64| format!("{:.2} s", ms / 1000.0);
            writeln!(
                out,
                "{:<12}{:<width$}  mean {}, 90% within {}, longest {} ({} moves)",
                if i == 0 { "move time" } else { "" },
                format!("{name}:"),
                seconds(t.mean_ms),
                seconds(t.p90_ms as f64),
                seconds(t.max_ms as f64),
                t.moves,
                width = width + 1,
            )?;
        }
        if let Some(s) = &self.sprt {
            writeln!(
                out,
                "SPRT        elo0={} elo1={} alpha={} beta={}: LLR {:.2} [{:.2}, {:.2}] {}",
                s.elo0,
                s.elo1,
                s.alpha,
                s.beta,
                s.llr,
                s.lower,
                s.upper,
                match s.decision {
                    Some("H1") => format!("H1 accepted ({a} is stronger by at least elo1)"),
                    Some(_) => format!("H0 accepted ({a} is not stronger by elo1)"),
                    None => "undecided".to_string(),
                }
            )?;
        }
        writeln!(out, "end reasons (lost by {a} / lost by {b} / draws):")?;
        for (reason, count) in &self.reasons_detail {
            let note = match reason {
                EndReason::Timeout => "  (out of time)",
                EndReason::IllegalMove => "  (illegal move)",
                EndReason::Resign => "  (resigned; a crashed program resigns through the bridge)",
                EndReason::Disconnect => "  (connection lost: crashed or killed)",
                EndReason::Forfeit => "  (did not show up)",
                _ => "",
            };
            writeln!(
                out,
                "  {:<13} {:>4} / {:>4} / {:>4}{note}",
                reason.as_str(),
                count.lost_by[0],
                count.lost_by[1],
                count.draws
            )?;
        }
        if self.interrupted {
            writeln!(
                out,
                "interrupted: run the same command (same --out) to play the remaining games"
            )?;
        }
        Ok(())
    }
}

fn signed(x: f64) -> String {
    format!("{x:+.1}")
}

/// `+87.3 [-20.1, +201.5]`; a score of 1 or 0 is `+inf` or `-inf`.
fn elo_text(games: u32, score: f64, elo: Option<f64>, ci: [Option<f64>; 2]) -> String {
    let infinite = |x: f64| if x > 0.5 { "+inf" } else { "-inf" };
    let bound = |x: Option<f64>, inf: &str| x.map_or_else(|| inf.to_string(), signed);
    if games == 0 {
        return "n/a".to_string();
    }
    let centre = elo.map_or_else(|| infinite(score).to_string(), signed);
    format!(
        "{centre} [{}, {}]",
        bound(ci[0], "-inf"),
        bound(ci[1], "+inf")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_p90_is_the_nearest_rank() {
        let counts = |times: &[u64]| {
            let mut map = BTreeMap::new();
            for &ms in times {
                *map.entry(ms).or_insert(0) += 1;
            }
            map
        };
        let twenty: Vec<u64> = (1..=20).collect();
        assert_eq!(MoveTimes::of(&counts(&twenty)).unwrap().p90_ms, 18);
        let repeated = MoveTimes::of(&counts(&[5, 5, 5, 5, 5, 5, 5, 5, 5, 100])).unwrap();
        assert_eq!(
            (repeated.moves, repeated.p90_ms, repeated.max_ms),
            (10, 5, 100)
        );
        assert!((repeated.mean_ms - 14.5).abs() < 1e-9);
        assert_eq!(MoveTimes::of(&counts(&[7])).unwrap().p90_ms, 7);
        assert_eq!(MoveTimes::of(&BTreeMap::new()), None);
    }
}

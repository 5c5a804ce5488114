//! Standings of one tournament from its finished games: points, wins/draws/losses, the
//! tie-breaks (head-to-head, Sonneborn-Berger, Buchholz for Swiss, then name), the Elo estimate
//! and per-bot diagnostics (losses by timeout / illegal move / disconnect / forfeit, mean think time).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::elo::{self, EloOptions};
use crate::game::{EndReason, GameId, Side};

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

/// The side that makes move number `ply` (1-based) of a game. Sides alternate, first side
/// first, in every game but Tibetan Jiu, where the 196 placements alternate White (first) /
/// Black and then Black (second) also makes the first battle move (RULES.md).
pub fn mover_of_ply(game: GameId, ply: usize) -> Side {
    const JIU_PLACEMENTS: usize = 14 * 14;
    let alternate = |n: usize| {
        if n % 2 == 1 {
            Side::First
        } else {
            Side::Second
        }
    };
    match game {
        GameId::Jiu if ply > JIU_PLACEMENTS => alternate(ply - JIU_PLACEMENTS).opponent(),
        _ => alternate(ply),
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

/// A games.jsonl object that lacks a field the standings need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("games.jsonl object: {0}")]
pub struct GameRecordError(pub String);

impl GameResult {
    /// Reads the fields the standings need from one games.jsonl object (NOTATION.md):
    /// `game`, `first`, `second`, `result`, `reason` and `think_ms` (one number per move; the
    /// mover of each is found with [`mover_of_ply`]).
    pub fn from_games_json(value: &serde_json::Value) -> Result<GameResult, GameRecordError> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(|v| v.as_str())
                .ok_or_else(|| GameRecordError(format!("{key}: expected a string")))
        };
        let game: GameId = text("game")?
            .parse()
            .map_err(|e| GameRecordError(format!("game: {e}")))?;
        let winner = match text("result")? {
            "first" => Some(Side::First),
            "second" => Some(Side::Second),
            "draw" => None,
            other => {
                return Err(GameRecordError(format!(
                    "result: expected first, second or draw, got {other:?}"
                )))
            }
        };
        let reason: EndReason = text("reason")?
            .parse()
            .map_err(|e| GameRecordError(format!("reason: {e}")))?;
        let mut think = [ThinkTotal::default(); 2];
        if let Some(list) = value.get("think_ms") {
            let list = list
                .as_array()
                .ok_or_else(|| GameRecordError("think_ms: expected an array".to_string()))?;
            for (i, ms) in list.iter().enumerate() {
                let ms = ms.as_u64().ok_or_else(|| {
                    GameRecordError(format!("think_ms[{i}]: expected a whole number"))
                })?;
                think[mover_of_ply(game, i + 1).index()].add(ms);
            }
        }
        Ok(GameResult {
            first: text("first")?.to_string(),
            second: text("second")?.to_string(),
            winner,
            reason,
            think,
        })
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
}

/// Turns a points value into an exact integer key so that ties compare exactly.
fn key(x: f64) -> i64 {
    (x * 1e6).round() as i64
}

fn round_to(x: f64, step: f64) -> f64 {
    (x / step).round() * step
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

    let mut rows: Vec<StandingRow> = (0..n)
        .map(|i| {
            let t = &tally[i];
            let rating = ratings.get(i).copied().unwrap_or_default();
            StandingRow {
                rank: 0,
                name: names[i].clone(),
                games: t.games,
                wins: t.wins,
                draws: t.draws,
                losses: t.losses,
                byes: t.byes,
                points: t.points,
                head_to_head: head_to_head[i],
                sonneborn_berger: sonneborn_berger[i],
                buchholz: swiss.then_some(buchholz[i]),
                elo: round_to(rating.rating, 0.1),
                elo_low: round_to(rating.low, 0.1),
                elo_high: round_to(rating.high, 0.1),
                timeout_losses: t.timeout_losses,
                illegal_move_losses: t.illegal_move_losses,
                disconnect_losses: t.disconnect_losses,
                forfeit_losses: t.forfeit_losses,
                mean_think_ms: (t.think.moves > 0)
                    .then(|| round_to(t.think.total_ms as f64 / t.think.moves as f64, 0.1)),
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

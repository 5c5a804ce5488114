//! Pairings: the fixed schedules of round-robin, double round-robin and gauntlet tournaments,
//! and Swiss rounds generated one at a time from the results so far (no repeated pairing,
//! balanced colours, rotating byes).
//!
//! A *pairing* is two bots meeting in a round; it is played as `games_per_pairing` games whose
//! colours alternate (game k+1 swaps first and second of game k). Game ids are stable:
//! `<tournament>-r<round>-p<pair>-g<game>`, all 1-based.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::standings::{GameResult, Points};
use crate::game::Side;

/// The tournament formats of arena.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    RoundRobin,
    DoubleRoundRobin,
    Swiss,
    Gauntlet,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::RoundRobin,
        Format::DoubleRoundRobin,
        Format::Swiss,
        Format::Gauntlet,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::RoundRobin => "round-robin",
            Format::DoubleRoundRobin => "double-round-robin",
            Format::Swiss => "swiss",
            Format::Gauntlet => "gauntlet",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = PairingError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| PairingError::UnknownFormat(s.to_string()))
    }
}

/// One game of the schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledGame {
    /// `<tournament>-r<round>-p<pair>-g<game>`.
    pub id: String,
    /// 1-based.
    pub round: u32,
    pub first: String,
    pub second: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    #[error("unknown format {0:?} (expected round-robin, double-round-robin, swiss or gauntlet)")]
    UnknownFormat(String),
    #[error("tournament {tournament}: needs at least 2 bots, has {count}")]
    TooFewBots { tournament: String, count: usize },
    #[error("tournament {tournament}: bot {bot:?} is listed twice")]
    DuplicateBot { tournament: String, bot: String },
    #[error("tournament {tournament}: games_per_pairing must be at least 1")]
    NoGamesPerPairing { tournament: String },
    #[error("tournament {tournament}: swiss rounds are generated one at a time with swiss_round")]
    SwissHasNoFixedSchedule { tournament: String },
    #[error(
        "tournament {tournament}: a result or bye names {bot:?}, which is not in the tournament"
    )]
    UnknownBot { tournament: String, bot: String },
    #[error(
        "tournament {tournament}: round {round}: every pairing of the bots would repeat a pairing \
         already played; the tournament cannot go on without repeats"
    )]
    NoRepeatFreePairing { tournament: String, round: u32 },
    #[error(
        "tournament {tournament}: round {round}: the pairing search gave up after {nodes} steps"
    )]
    SearchTooLarge {
        tournament: String,
        round: u32,
        nodes: u64,
    },
}

fn game_id(tournament: &str, round: u32, pair: usize, game: u32) -> String {
    format!("{tournament}-r{round}-p{pair}-g{game}")
}

fn check_bots(
    tournament: &str,
    bots: &[String],
    games_per_pairing: u32,
) -> Result<(), PairingError> {
    if bots.len() < 2 {
        return Err(PairingError::TooFewBots {
            tournament: tournament.to_string(),
            count: bots.len(),
        });
    }
    let mut seen = HashSet::new();
    for bot in bots {
        if !seen.insert(bot.as_str()) {
            return Err(PairingError::DuplicateBot {
                tournament: tournament.to_string(),
                bot: bot.clone(),
            });
        }
    }
    if games_per_pairing == 0 {
        return Err(PairingError::NoGamesPerPairing {
            tournament: tournament.to_string(),
        });
    }
    Ok(())
}

/// Expands the pairings of one round into its games: pair p (1-based, in the order given) is
/// `games_per_pairing` games, the first with `(first, second)` as given, then alternating.
fn expand_round(
    tournament: &str,
    round: u32,
    pairs: &[(&str, &str)],
    games_per_pairing: u32,
    out: &mut Vec<ScheduledGame>,
) {
    for (p, &(first, second)) in pairs.iter().enumerate() {
        for k in 1..=games_per_pairing {
            let (f, s) = if k % 2 == 1 {
                (first, second)
            } else {
                (second, first)
            };
            out.push(ScheduledGame {
                id: game_id(tournament, round, p + 1, k),
                round,
                first: f.to_string(),
                second: s.to_string(),
            });
        }
    }
}

/// The rounds of a single round robin by the circle method, each a list of (first, second)
/// bot indices for the pairing's first game.
///
/// With `m` = n rounded up to even (index n is the bye when n is odd), the last index is fixed
/// and the others 0..N (N = m − 1, odd) rotate: in round r the fixed index meets r, and i meets j
/// when i + j ≡ 2r (mod N). Colours: the fixed index is first in odd rounds (0-based); of two
/// rotating indices, i is first when (j − i) mod N is odd. Every bot then has as many firsts as
/// seconds, give or take one.
fn circle_rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    let m = n + n % 2;
    let big_n = m - 1;
    let fixed = m - 1;
    let mut rounds = Vec::with_capacity(big_n);
    for r in 0..big_n {
        let mut pairs = Vec::with_capacity(m / 2);
        let (a, b) = if r % 2 == 1 { (fixed, r) } else { (r, fixed) };
        pairs.push((a, b));
        for k in 1..m / 2 {
            let i = (r + k) % big_n;
            let j = (r + big_n - k) % big_n;
            let d = (j + big_n - i) % big_n;
            pairs.push(if d % 2 == 1 { (i, j) } else { (j, i) });
        }
        // Drop the bye (index n when n is odd): it is not a game.
        pairs.retain(|&(a, b)| a < n && b < n);
        rounds.push(pairs);
    }
    rounds
}

/// The whole schedule of a round-robin, double-round-robin or gauntlet tournament.
///
/// - round robin: n − 1 rounds (n even) or n rounds (n odd, one bot idle each round);
/// - double round robin: the same followed by a second leg with every colour reversed;
/// - gauntlet: round r is the first bot against bot r + 1 (1-based), the first bot first in
///   odd rounds.
pub fn fixed_schedule(
    tournament: &str,
    format: Format,
    bots: &[String],
    games_per_pairing: u32,
) -> Result<Vec<ScheduledGame>, PairingError> {
    check_bots(tournament, bots, games_per_pairing)?;
    let name = |i: usize| bots.get(i).map_or("", String::as_str);
    let mut rounds: Vec<Vec<(&str, &str)>> = Vec::new();
    match format {
        Format::Swiss => {
            return Err(PairingError::SwissHasNoFixedSchedule {
                tournament: tournament.to_string(),
            })
        }
        Format::RoundRobin | Format::DoubleRoundRobin => {
            let leg: Vec<Vec<(&str, &str)>> = circle_rounds(bots.len())
                .into_iter()
                .map(|pairs| pairs.into_iter().map(|(a, b)| (name(a), name(b))).collect())
                .collect();
            if format == Format::DoubleRoundRobin {
                let second_leg: Vec<Vec<(&str, &str)>> = leg
                    .iter()
                    .map(|pairs| pairs.iter().map(|&(a, b)| (b, a)).collect())
                    .collect();
                rounds.extend(leg);
                rounds.extend(second_leg);
            } else {
                rounds = leg;
            }
        }
        Format::Gauntlet => {
            let head = name(0);
            for (r, other) in bots.iter().skip(1).enumerate() {
                rounds.push(vec![if r % 2 == 0 {
                    (head, other.as_str())
                } else {
                    (other.as_str(), head)
                }]);
            }
        }
    }
    let mut games = Vec::new();
    for (r, pairs) in rounds.iter().enumerate() {
        let round = u32::try_from(r + 1).unwrap_or(u32::MAX);
        expand_round(tournament, round, pairs, games_per_pairing, &mut games);
    }
    Ok(games)
}

/// One generated Swiss round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwissRound {
    pub round: u32,
    pub games: Vec<ScheduledGame>,
    /// The bot that sits this round out (odd counts); it scores a win.
    pub bye: Option<String>,
    /// True when no repeat-free pairing kept every colour rule (|firsts − seconds| ≤ 1, never
    /// three of a colour in a row), so colours were assigned as well as possible instead.
    pub colour_rules_relaxed: bool,
}

/// What the Swiss pairing knows about one bot.
struct SwissPlayer {
    points: f64,
    buchholz: f64,
    seed: usize,
    byes: u32,
    /// The colour of each game played, in the order given.
    colours: Vec<Side>,
}

impl SwissPlayer {
    fn colour_difference(&self) -> i64 {
        self.colours
            .iter()
            .map(|s| if *s == Side::First { 1 } else { -1 })
            .sum()
    }

    /// True if the last two games were both `side`.
    fn two_in_a_row(&self, side: Side) -> bool {
        self.colours.len() >= 2 && self.colours.iter().rev().take(2).all(|s| *s == side)
    }
}

fn points_key(x: f64) -> i64 {
    (x * 1e6).round() as i64
}

struct Matcher<'a> {
    players: &'a [SwissPlayer],
    played: &'a HashSet<(usize, usize)>,
    round: u32,
    strict_colours: bool,
    failed: HashSet<Vec<usize>>,
    nodes: u64,
    node_limit: u64,
    /// Per bot: may it take the first / the second colour in its next pairing's first game
    /// without breaking a colour rule.
    can_take: Vec<[bool; 2]>,
}

/// Whether a bot may take `side` in the first game of its next pairing: |firsts − seconds| stays
/// ≤ 1 (or at least shrinks), and with one game per pairing no third game of a colour in a row.
/// An even number of alternating games never changes the balance.
fn may_take(player: &SwissPlayer, side: Side, games_per_pairing: u32) -> bool {
    if games_per_pairing.is_multiple_of(2) {
        return true;
    }
    let old = player.colour_difference();
    let new = if side == Side::First {
        old + 1
    } else {
        old - 1
    };
    let balance_ok = new.abs() <= 1 || new.abs() < old.abs();
    balance_ok && !(games_per_pairing == 1 && player.two_in_a_row(side))
}

impl<'a> Matcher<'a> {
    fn new(
        players: &'a [SwissPlayer],
        played: &'a HashSet<(usize, usize)>,
        games_per_pairing: u32,
        round: u32,
        strict_colours: bool,
        node_limit: u64,
    ) -> Matcher<'a> {
        let can_take = players
            .iter()
            .map(|p| {
                [
                    may_take(p, Side::First, games_per_pairing),
                    may_take(p, Side::Second, games_per_pairing),
                ]
            })
            .collect();
        Matcher {
            players,
            played,
            round,
            strict_colours,
            failed: HashSet::new(),
            nodes: 0,
            node_limit,
            can_take,
        }
    }

    /// Necessary conditions for `unpaired` to be completable, checked before searching it:
    /// with strict colours, the bots that can only take the first colour and those that can
    /// only take the second must balance out through the bots that can take either; and every
    /// bot must have at least one allowed partner left.
    fn may_be_completable(&self, unpaired: &[usize]) -> bool {
        if self.strict_colours {
            let (mut only_first, mut only_second, mut either) = (0i64, 0i64, 0i64);
            for &p in unpaired {
                match self.can_take.get(p).copied().unwrap_or([false, false]) {
                    [true, true] => either += 1,
                    [true, false] => only_first += 1,
                    [false, true] => only_second += 1,
                    [false, false] => return false,
                }
            }
            if (only_first - only_second).abs() > either {
                return false;
            }
        }
        unpaired
            .iter()
            .all(|&p| unpaired.iter().any(|&q| q != p && self.pair_allowed(p, q)))
    }

    fn have_played(&self, a: usize, b: usize) -> bool {
        self.played.contains(&(a.min(b), a.max(b)))
    }

    /// Whether `first` taking the first colour in the pairing's first game keeps the colour
    /// rules for both bots.
    fn colours_allowed(&self, first: usize, second: usize) -> bool {
        self.can_take.get(first).is_some_and(|c| c[0])
            && self.can_take.get(second).is_some_and(|c| c[1])
    }

    /// The two orientations of pairing `a` (the higher ranked) with `b`, most wanted first:
    /// the bot that has had the first colour less often; else the one that was second last
    /// time; else the higher ranked in odd rounds.
    fn orientations(&self, a: usize, b: usize) -> [(usize, usize); 2] {
        let (Some(pa), Some(pb)) = (self.players.get(a), self.players.get(b)) else {
            return [(a, b), (b, a)];
        };
        let a_first = match pa.colour_difference().cmp(&pb.colour_difference()) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => match (pa.colours.last(), pb.colours.last()) {
                (Some(Side::Second), Some(Side::First)) => true,
                (Some(Side::First), Some(Side::Second)) => false,
                _ => self.round % 2 == 1,
            },
        };
        if a_first {
            [(a, b), (b, a)]
        } else {
            [(b, a), (a, b)]
        }
    }

    fn pair_allowed(&self, a: usize, b: usize) -> bool {
        !self.have_played(a, b)
            && (!self.strict_colours
                || self
                    .orientations(a, b)
                    .iter()
                    .any(|&(f, s)| self.colours_allowed(f, s)))
    }

    /// Pairs `unpaired` (bot indices in rank order) without repeats; `Ok(None)` if impossible.
    /// The top bot is paired first, preferring within its score group the bot half a group
    /// below it (top half against bottom half), then the rest of the group, then lower groups.
    fn solve(&mut self, unpaired: &[usize]) -> Result<Option<Vec<(usize, usize)>>, u64> {
        let Some((&top, rest)) = unpaired.split_first() else {
            return Ok(Some(Vec::new()));
        };
        if self.failed.contains(unpaired) {
            return Ok(None);
        }
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Err(self.nodes);
        }
        if !self.may_be_completable(unpaired) {
            self.failed.insert(unpaired.to_vec());
            return Ok(None);
        }
        let score = |i: usize| self.players.get(i).map_or(0, |p| points_key(p.points));
        let same_group = rest.iter().take_while(|&&i| score(i) == score(top)).count();
        // Group size g = same_group + 1 with `top` at its head; the ideal partner sits g/2 below.
        let ideal = same_group.div_ceil(2).saturating_sub(1);
        let order = (ideal..same_group)
            .chain((0..ideal.min(same_group)).rev())
            .chain(same_group..rest.len());
        for c in order {
            let Some(&partner) = rest.get(c) else {
                continue;
            };
            if !self.pair_allowed(top, partner) {
                continue;
            }
            let remaining: Vec<usize> = rest
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != c)
                .map(|(_, &x)| x)
                .collect();
            if let Some(mut pairs) = self.solve(&remaining)? {
                pairs.insert(0, (top, partner));
                return Ok(Some(pairs));
            }
        }
        self.failed.insert(unpaired.to_vec());
        Ok(None)
    }
}

/// Generates Swiss round `round` (1-based) from the tournament's results so far.
///
/// `results` are the finished games of earlier rounds in the order they were played, `byes`
/// one entry per bye given in earlier rounds. Bots are ranked by points (a bye scores a win),
/// then Buchholz, then their order in `bots`; pairings never repeat; with an odd count the bye
/// goes to the lowest-ranked bot with the fewest byes so far. Colours: the bot with fewer
/// firsts gets the first game; |firsts − seconds| stays ≤ 1 and nobody gets three games of one
/// colour in a row unless no repeat-free pairing allows it (then `colour_rules_relaxed`).
pub fn swiss_round(
    tournament: &str,
    bots: &[String],
    round: u32,
    games_per_pairing: u32,
    points: &Points,
    results: &[GameResult],
    byes: &[String],
) -> Result<SwissRound, PairingError> {
    check_bots(tournament, bots, games_per_pairing)?;
    let index: HashMap<&str, usize> = bots
        .iter()
        .enumerate()
        .map(|(i, b)| (b.as_str(), i))
        .collect();
    let lookup = |name: &str| {
        index
            .get(name)
            .copied()
            .ok_or_else(|| PairingError::UnknownBot {
                tournament: tournament.to_string(),
                bot: name.to_string(),
            })
    };
    let mut players: Vec<SwissPlayer> = (0..bots.len())
        .map(|seed| SwissPlayer {
            points: 0.0,
            buchholz: 0.0,
            seed,
            byes: 0,
            colours: Vec::new(),
        })
        .collect();
    let mut played = HashSet::new();
    let mut meetings = Vec::with_capacity(results.len());
    for r in results {
        let (a, b) = (lookup(&r.first)?, lookup(&r.second)?);
        played.insert((a.min(b), a.max(b)));
        meetings.push((a, b));
        for (me, side) in [(a, Side::First), (b, Side::Second)] {
            if let Some(p) = players.get_mut(me) {
                p.points += points.for_score(r.score(side));
                p.colours.push(side);
            }
        }
    }
    for bye in byes {
        if let Some(p) = players.get_mut(lookup(bye)?) {
            p.points += points.win;
            p.byes += 1;
        }
    }
    let totals: Vec<f64> = players.iter().map(|p| p.points).collect();
    for &(a, b) in &meetings {
        let (pa, pb) = (
            totals.get(a).copied().unwrap_or(0.0),
            totals.get(b).copied().unwrap_or(0.0),
        );
        if let Some(p) = players.get_mut(a) {
            p.buchholz += pb;
        }
        if let Some(p) = players.get_mut(b) {
            p.buchholz += pa;
        }
    }

    let name = |i: usize| bots.get(i).map_or("", String::as_str);
    let mut ranked: Vec<usize> = (0..players.len()).collect();
    ranked.sort_by_key(|&i| {
        players.get(i).map(|p| {
            (
                std::cmp::Reverse(points_key(p.points)),
                std::cmp::Reverse(points_key(p.buchholz)),
                p.seed,
            )
        })
    });

    // Bye candidates: fewest byes first, then lowest ranked first.
    let bye_candidates: Vec<Option<usize>> = if ranked.len() % 2 == 1 {
        let mut c: Vec<(usize, usize)> = ranked
            .iter()
            .enumerate()
            .map(|(pos, &i)| (pos, i))
            .collect();
        c.sort_by_key(|&(pos, i)| (players.get(i).map_or(0, |p| p.byes), std::cmp::Reverse(pos)));
        c.into_iter().map(|(_, i)| Some(i)).collect()
    } else {
        vec![None]
    };

    // Search budgets: a strict-colour search that runs out just falls back to relaxed colours;
    // only the relaxed (repeat-free) search running out is an error.
    const STRICT_NODE_LIMIT: u64 = 100_000;
    const NODE_LIMIT: u64 = 2_000_000;
    let mut nodes_used = 0;
    for bye in bye_candidates {
        let unpaired: Vec<usize> = ranked.iter().copied().filter(|&i| Some(i) != bye).collect();
        for strict_colours in [true, false] {
            let limit = if strict_colours {
                STRICT_NODE_LIMIT
            } else {
                NODE_LIMIT.saturating_sub(nodes_used)
            };
            let mut matcher = Matcher::new(
                &players,
                &played,
                games_per_pairing,
                round,
                strict_colours,
                limit,
            );
            let found = match matcher.solve(&unpaired) {
                Ok(found) => found,
                Err(_) if strict_colours => None,
                Err(nodes) => {
                    return Err(PairingError::SearchTooLarge {
                        tournament: tournament.to_string(),
                        round,
                        nodes: nodes_used + nodes,
                    })
                }
            };
            if !strict_colours {
                nodes_used += matcher.nodes;
            }
            let Some(pairs) = found else { continue };
            let oriented: Vec<(&str, &str)> = pairs
                .iter()
                .map(|&(a, b)| {
                    let [preferred, other] = matcher.orientations(a, b);
                    let (f, s) = if matcher.colours_allowed(preferred.0, preferred.1)
                        || !matcher.colours_allowed(other.0, other.1)
                    {
                        preferred
                    } else {
                        other
                    };
                    (name(f), name(s))
                })
                .collect();
            let mut games = Vec::new();
            expand_round(tournament, round, &oriented, games_per_pairing, &mut games);
            return Ok(SwissRound {
                round,
                games,
                bye: bye.map(|i| name(i).to_string()),
                colour_rules_relaxed: !strict_colours,
            });
        }
    }
    Err(PairingError::NoRepeatFreePairing {
        tournament: tournament.to_string(),
        round,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::game::EndReason;
    use crate::league::standings::{compute_standings, ThinkTotal};
    use crate::league::EloOptions;

    fn bots(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("bot{i}")).collect()
    }

    fn unordered(g: &ScheduledGame) -> (String, String) {
        if g.first < g.second {
            (g.first.clone(), g.second.clone())
        } else {
            (g.second.clone(), g.first.clone())
        }
    }

    fn colour_counts(games: &[ScheduledGame]) -> HashMap<String, (i64, i64)> {
        let mut counts: HashMap<String, (i64, i64)> = HashMap::new();
        for g in games {
            counts.entry(g.first.clone()).or_default().0 += 1;
            counts.entry(g.second.clone()).or_default().1 += 1;
        }
        counts
    }

    #[test]
    fn round_robin_pairs_every_two_bots_once_in_balanced_rounds() {
        for n in 2..=9 {
            let names = bots(n);
            let games = fixed_schedule("t", Format::RoundRobin, &names, 1).unwrap();
            assert_eq!(games.len(), n * (n - 1) / 2, "n = {n}");
            let pairs: HashSet<(String, String)> = games.iter().map(unordered).collect();
            assert_eq!(pairs.len(), games.len(), "a pairing repeats for n = {n}");
            assert!(games.iter().all(|g| g.first != g.second));
            let rounds = if n % 2 == 0 { n - 1 } else { n };
            let max_round = games.iter().map(|g| g.round).max().unwrap() as usize;
            assert_eq!(max_round, rounds, "n = {n}");
            for r in 1..=rounds as u32 {
                let in_round: Vec<&ScheduledGame> = games.iter().filter(|g| g.round == r).collect();
                assert_eq!(in_round.len(), n / 2, "n = {n}, round {r}");
                let mut seen = HashSet::new();
                for g in in_round {
                    assert!(
                        seen.insert(&g.first) && seen.insert(&g.second),
                        "n = {n}, round {r}"
                    );
                }
            }
            for (bot, (firsts, seconds)) in colour_counts(&games) {
                assert!(
                    (firsts - seconds).abs() <= 1,
                    "n = {n}: {bot} {firsts}/{seconds}"
                );
            }
            let ids: HashSet<&String> = games.iter().map(|g| &g.id).collect();
            assert_eq!(ids.len(), games.len());
        }
    }

    #[test]
    fn games_of_a_pairing_alternate_colours_with_stable_ids() {
        let names = bots(4);
        let games = fixed_schedule("league", Format::RoundRobin, &names, 3).unwrap();
        assert_eq!(games.len(), 6 * 3);
        for chunk in games.chunks(3) {
            assert_eq!(chunk[0].first, chunk[1].second);
            assert_eq!(chunk[0].second, chunk[1].first);
            assert_eq!(chunk[0].first, chunk[2].first);
            assert!(chunk.iter().all(|g| g.round == chunk[0].round));
        }
        assert_eq!(games[0].id, "league-r1-p1-g1");
        assert_eq!(games[4].id, "league-r1-p2-g2");
        assert_eq!(
            games,
            fixed_schedule("league", Format::RoundRobin, &names, 3).unwrap()
        );
        // Even games per pairing: every bot exactly balanced.
        let even = fixed_schedule("league", Format::RoundRobin, &bots(5), 2).unwrap();
        assert!(colour_counts(&even).values().all(|(f, s)| f == s));
    }

    #[test]
    fn double_round_robin_repeats_every_pairing_with_colours_reversed() {
        for n in 2..=9 {
            let names = bots(n);
            let single = fixed_schedule("t", Format::RoundRobin, &names, 1).unwrap();
            let double = fixed_schedule("t", Format::DoubleRoundRobin, &names, 1).unwrap();
            assert_eq!(double.len(), 2 * single.len());
            let legs = single.iter().map(|g| g.round).max().unwrap();
            let (first_leg, second_leg) = double.split_at(single.len());
            for (a, b) in first_leg.iter().zip(second_leg) {
                assert_eq!(b.round, a.round + legs);
                assert_eq!(
                    (a.first.as_str(), a.second.as_str()),
                    (b.second.as_str(), b.first.as_str())
                );
            }
            let ordered: HashSet<(String, String)> = double
                .iter()
                .map(|g| (g.first.clone(), g.second.clone()))
                .collect();
            assert_eq!(
                ordered.len(),
                double.len(),
                "each ordered pairing once, n = {n}"
            );
            assert!(colour_counts(&double).values().all(|(f, s)| f == s));
        }
    }

    #[test]
    fn gauntlet_plays_the_first_bot_against_each_other_bot() {
        let names = bots(5);
        let games = fixed_schedule("g", Format::Gauntlet, &names, 2).unwrap();
        assert_eq!(games.len(), 4 * 2);
        for other in &names[1..] {
            let with: Vec<&ScheduledGame> = games
                .iter()
                .filter(|g| &g.first == other || &g.second == other)
                .collect();
            assert_eq!(with.len(), 2);
            assert!(with.iter().all(|g| g.first == "bot0" || g.second == "bot0"));
            assert_ne!(with[0].first, with[1].first);
        }
        let single = fixed_schedule("g", Format::Gauntlet, &names, 1).unwrap();
        let (f, s) = colour_counts(&single)["bot0"];
        assert!((f - s).abs() <= 1);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(matches!(
            fixed_schedule("t", Format::RoundRobin, &bots(1), 1),
            Err(PairingError::TooFewBots { count: 1, .. })
        ));
        let dup = vec!["a".to_string(), "a".to_string()];
        assert!(matches!(
            fixed_schedule("t", Format::RoundRobin, &dup, 1),
            Err(PairingError::DuplicateBot { .. })
        ));
        assert!(matches!(
            fixed_schedule("t", Format::RoundRobin, &bots(3), 0),
            Err(PairingError::NoGamesPerPairing { .. })
        ));
        assert!(matches!(
            fixed_schedule("t", Format::Swiss, &bots(3), 1),
            Err(PairingError::SwissHasNoFixedSchedule { .. })
        ));
        let stranger = GameResult {
            first: "bot0".into(),
            second: "zed".into(),
            winner: None,
            reason: EndReason::BoardFull,
            think: [ThinkTotal::default(); 2],
        };
        let err =
            swiss_round("t", &bots(4), 2, 1, &Points::default(), &[stranger], &[]).unwrap_err();
        assert!(err.to_string().contains("\"zed\""), "{err}");
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>().unwrap(), f);
        }
        assert!("roundrobin".parse::<Format>().is_err());
    }

    fn result(first: &str, second: &str, winner: Option<Side>) -> GameResult {
        GameResult {
            first: first.to_string(),
            second: second.to_string(),
            winner,
            reason: EndReason::Connection,
            think: [ThinkTotal::default(); 2],
        }
    }

    #[test]
    fn swiss_first_round_pairs_top_half_against_bottom_half() {
        let names: Vec<String> = "abcdefgh".chars().map(String::from).collect();
        let round = swiss_round("s", &names, 1, 1, &Points::default(), &[], &[]).unwrap();
        let pairs: Vec<(String, String)> = round.games.iter().map(unordered).collect();
        let expected: Vec<(String, String)> = [("a", "e"), ("b", "f"), ("c", "g"), ("d", "h")]
            .iter()
            .map(|(x, y)| (x.to_string(), y.to_string()))
            .collect();
        assert_eq!(pairs, expected);
        assert_eq!(round.bye, None);
        assert_eq!(round.games[0].id, "s-r1-p1-g1");
    }

    #[test]
    fn swiss_byes_go_to_the_lowest_ranked_bot_without_one() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let points = Points::default();
        let r1 = swiss_round("s", &names, 1, 1, &points, &[], &[]).unwrap();
        assert_eq!(r1.bye.as_deref(), Some("c"));
        assert_eq!(r1.games.len(), 1);
        let results = vec![result(
            &r1.games[0].first,
            &r1.games[0].second,
            Some(Side::First),
        )];
        let winner = r1.games[0].first.clone();
        let loser = r1.games[0].second.clone();
        let byes = vec!["c".to_string()];
        let r2 = swiss_round("s", &names, 2, 1, &points, &results, &byes).unwrap();
        assert_eq!(
            r2.bye.as_deref(),
            Some(loser.as_str()),
            "the loser is lowest ranked"
        );
        let mut results = results;
        results.push(result(&r2.games[0].first, &r2.games[0].second, None));
        let byes = vec!["c".to_string(), loser.clone()];
        let r3 = swiss_round("s", &names, 3, 1, &points, &results, &byes).unwrap();
        assert_eq!(
            r3.bye.as_deref(),
            Some(winner.as_str()),
            "the only bot without a bye"
        );
        let mut rest = [loser, "c".to_string()];
        rest.sort();
        assert_eq!(unordered(&r3.games[0]), (rest[0].clone(), rest[1].clone()));
    }

    /// True if the bots other than `bye` can all be paired without a repeat (brute force).
    fn matchable_without(n: usize, bye: Option<usize>, played: &HashSet<(usize, usize)>) -> bool {
        fn matchable(left: &[usize], played: &HashSet<(usize, usize)>) -> bool {
            let Some((&a, rest)) = left.split_first() else {
                return true;
            };
            rest.iter().enumerate().any(|(i, &b)| {
                !played.contains(&(a.min(b), a.max(b))) && {
                    let remaining: Vec<usize> = rest
                        .iter()
                        .enumerate()
                        .filter(|&(j, _)| j != i)
                        .map(|(_, &x)| x)
                        .collect();
                    matchable(&remaining, played)
                }
            })
        }
        let left: Vec<usize> = (0..n).filter(|&x| Some(x) != bye).collect();
        matchable(&left, played)
    }

    /// True if some choice of bye (odd counts) leaves the bots perfectly matchable without a
    /// repeat: the brute-force check of a `NoRepeatFreePairing` answer.
    fn repeat_free_pairing_exists(n: usize, played: &HashSet<(usize, usize)>) -> bool {
        if n.is_multiple_of(2) {
            matchable_without(n, None, played)
        } else {
            (0..n).any(|bye| matchable_without(n, Some(bye), played))
        }
    }

    #[test]
    fn swiss_never_repeats_keeps_colours_balanced_and_rotates_byes() {
        let points = Points::default();
        let mut relaxed_rounds = 0;
        let mut total_rounds = 0;
        for seed in 0..60u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let n = 2 + (seed as usize % 9); // 2..=10
            let games_per_pairing = if seed % 3 == 0 { 2 } else { 1 };
            let names = bots(n);
            let mut results: Vec<GameResult> = Vec::new();
            let mut byes: Vec<String> = Vec::new();
            let mut pairs_seen: HashSet<(String, String)> = HashSet::new();
            for round in 1..=(n as u32 + 1) {
                let generated = swiss_round(
                    "s",
                    &names,
                    round,
                    games_per_pairing,
                    &points,
                    &results,
                    &byes,
                );
                let played: HashSet<(usize, usize)> = pairs_seen
                    .iter()
                    .map(|(a, b)| {
                        let ia: usize = a[3..].parse().unwrap();
                        let ib: usize = b[3..].parse().unwrap();
                        (ia.min(ib), ia.max(ib))
                    })
                    .collect();
                let round_result = match generated {
                    Err(PairingError::NoRepeatFreePairing { .. }) => {
                        assert!(
                            !repeat_free_pairing_exists(n, &played),
                            "seed {seed}: refused round {round} though a pairing exists"
                        );
                        assert!(
                            round as usize > n / 2,
                            "seed {seed}: gave up early, round {round}"
                        );
                        break;
                    }
                    other => other.unwrap(),
                };
                total_rounds += 1;
                relaxed_rounds += usize::from(round_result.colour_rules_relaxed);
                assert_eq!(
                    round_result.games.len(),
                    (n / 2) * games_per_pairing as usize
                );
                let mut in_round = HashSet::new();
                for g in round_result
                    .games
                    .iter()
                    .step_by(games_per_pairing as usize)
                {
                    assert!(
                        pairs_seen.insert(unordered(g)),
                        "seed {seed}: repeat {:?}",
                        unordered(g)
                    );
                    assert!(in_round.insert(g.first.clone()) && in_round.insert(g.second.clone()));
                }
                if let Some(bye) = &round_result.bye {
                    assert!(!in_round.contains(bye));
                    let before = byes.iter().filter(|b| *b == bye).count();
                    let least = names
                        .iter()
                        .map(|x| byes.iter().filter(|b| *b == x).count())
                        .min()
                        .unwrap();
                    if before > least {
                        // Only if no bot with fewer byes could sit out without forcing a repeat.
                        let fewer = names
                            .iter()
                            .enumerate()
                            .filter(|(_, x)| byes.iter().filter(|b| b == x).count() == least);
                        for (i, x) in fewer {
                            assert!(
                                !matchable_without(n, Some(i), &played),
                                "seed {seed} round {round}: {bye} got another bye before {x}"
                            );
                        }
                    }
                    byes.push(bye.clone());
                } else {
                    assert_eq!(n % 2, 0);
                }
                for g in &round_result.games {
                    let winner = match rng.gen_range(0..3) {
                        0 => Some(Side::First),
                        1 => Some(Side::Second),
                        _ => None,
                    };
                    results.push(result(&g.first, &g.second, winner));
                }
                if !round_result.colour_rules_relaxed {
                    // The colour rules hold for this round's games: no bot's |firsts − seconds|
                    // grows beyond 1, and nobody gets a third game of one colour in a row.
                    let mut history: HashMap<&str, Vec<bool>> = HashMap::new();
                    for r in &results {
                        history.entry(&r.first).or_default().push(true);
                        history.entry(&r.second).or_default().push(false);
                    }
                    for (bot, h) in &history {
                        let played_now = round_result
                            .games
                            .iter()
                            .filter(|g| g.first == **bot || g.second == **bot)
                            .count();
                        let diff =
                            |h: &[bool]| -> i64 { h.iter().map(|&f| if f { 1 } else { -1 }).sum() };
                        let (new, old) = (diff(h), diff(&h[..h.len() - played_now]));
                        assert!(
                            new.abs() <= 1 || new.abs() < old.abs(),
                            "seed {seed} round {round}: {bot} {h:?}"
                        );
                        if played_now > 0 && games_per_pairing == 1 && h.len() >= 3 {
                            let last = &h[h.len() - 3..];
                            assert!(
                                !(last[0] == last[1] && last[1] == last[2]),
                                "seed {seed}: {bot} {h:?}"
                            );
                        }
                    }
                }
            }
            // Each bye is worth a win in the standings.
            let rows = compute_standings(
                &names,
                &results,
                &byes,
                &points,
                true,
                &EloOptions::default(),
            );
            for row in rows {
                let expected = row.wins as f64 + 0.5 * row.draws as f64 + row.byes as f64;
                assert!((row.points - expected).abs() < 1e-9, "{row:?}");
            }
        }
        println!("swiss: {relaxed_rounds} of {total_rounds} rounds relaxed the colour rules");
        assert!(
            relaxed_rounds * 4 < total_rounds,
            "{relaxed_rounds} of {total_rounds}"
        );
    }

    #[test]
    fn swiss_pairs_a_large_odd_field_for_many_rounds() {
        // A strict-colour dead end deep in the search used to exhaust the search budget here.
        let names = bots(101);
        let points = Points::default();
        let mut rng = SmallRng::seed_from_u64(1);
        let (mut results, mut byes) = (Vec::new(), Vec::new());
        let mut seen = HashSet::new();
        for round in 1..=10 {
            let r = swiss_round("big", &names, round, 1, &points, &results, &byes).unwrap();
            assert_eq!(r.games.len(), 50);
            byes.push(r.bye.unwrap());
            for g in r.games {
                assert!(seen.insert(unordered(&g)));
                let winner = [Some(Side::First), Some(Side::Second), None][rng.gen_range(0..3)];
                results.push(result(&g.first, &g.second, winner));
            }
        }
        assert_eq!(byes.iter().collect::<HashSet<_>>().len(), 10);
    }
}

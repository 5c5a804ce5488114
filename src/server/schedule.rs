//! Which games each tournament plays (round-robin, double round-robin, gauntlet), with match ids
//! derived from the schedule so they are stable across restarts, and the scheduler task that
//! starts a game as soon as both bots are connected and free, honouring each tournament's
//! concurrency, and forfeits games of bots that stay away.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Format, TournamentConfig};
use crate::game::Side;

use super::output::Output;
use super::referee::{run_match, FinishedGame, MatchSpec, RefereeSettings};
use super::registry::{MatchEntry, Registry};
use super::{GameSummary, ServerError};

/// One game of a tournament's schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledGame {
    /// `TOURNAMENT-rROUND-gN`.
    pub match_id: String,
    pub round: u32,
    /// `[first, second]`.
    pub players: [String; 2],
}

/// The games of a tournament, in the order they are due. Swiss needs results to pair, which this
/// scheduler does not do yet: it is refused.
pub fn schedule(t: &TournamentConfig) -> Result<Vec<ScheduledGame>, ServerError> {
    let pairs_by_round: Vec<Vec<(usize, usize)>> = match t.format {
        Format::RoundRobin | Format::DoubleRoundRobin => berger_rounds(t.bots.len()),
        Format::Gauntlet => (1..t.bots.len()).map(|i| vec![(0, i)]).collect(),
        Format::Swiss => {
            return Err(ServerError::Unsupported(format!(
                "tournament {:?}: format swiss is not supported by this server yet",
                t.name
            )))
        }
    };
    let cycles = match t.format {
        Format::DoubleRoundRobin => 2 * t.games_per_pairing,
        _ => t.games_per_pairing,
    };
    let mut games = Vec::new();
    let rounds_per_cycle = u32::try_from(pairs_by_round.len()).unwrap_or(u32::MAX);
    for cycle in 0..cycles {
        for (r, pairs) in pairs_by_round.iter().enumerate() {
            let round = cycle
                .saturating_mul(rounds_per_cycle)
                .saturating_add(u32::try_from(r).unwrap_or(u32::MAX))
                .saturating_add(1);
            for (g, &(a, b)) in pairs.iter().enumerate() {
                let (first, second) = if cycle % 2 == 0 { (a, b) } else { (b, a) };
                games.push(ScheduledGame {
                    match_id: format!("{}-r{round}-g{}", t.name, g + 1),
                    round,
                    players: [t.bots[first].clone(), t.bots[second].clone()],
                });
            }
        }
    }
    Ok(games)
}

/// Round-robin pairings by the circle method: every pair meets once; with an odd number of bots
/// one sits out each round. Colours alternate from round to round for the fixed bot.
fn berger_rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    let mut ring: Vec<Option<usize>> = (0..n).map(Some).collect();
    if n % 2 == 1 {
        ring.push(None);
    }
    let m = ring.len();
    let mut rounds = Vec::new();
    for r in 0..m.saturating_sub(1) {
        let mut pairs = Vec::new();
        for i in 0..m / 2 {
            if let (Some(a), Some(b)) = (ring[i], ring[m - 1 - i]) {
                if i == 0 && r % 2 == 1 {
                    pairs.push((b, a));
                } else {
                    pairs.push((a, b));
                }
            }
        }
        rounds.push(pairs);
        // Keep ring[0] fixed and rotate the rest by one.
        if m > 2 {
            let last = ring.remove(m - 1);
            ring.insert(1, last);
        }
    }
    rounds
}

struct TournamentState {
    config: TournamentConfig,
    pending: Vec<ScheduledGame>,
    running: u32,
    /// When each pending game first became due while a player was away.
    due_since: HashMap<String, Instant>,
}

/// What a referee task hands back to the scheduler.
struct MatchDone {
    tournament: usize,
    game: Option<FinishedGame>,
}

/// Frees the registry's slots of a match however its referee task ends (even by a panic).
struct MatchGuard {
    registry: Arc<Registry>,
    match_id: String,
}

impl Drop for MatchGuard {
    fn drop(&mut self) {
        self.registry.finish_match(&self.match_id);
    }
}

/// Starts games as bots become available and collects results until every tournament is
/// finished or `stop` is cancelled.
pub struct Scheduler {
    config: Arc<Config>,
    registry: Arc<Registry>,
    output: Arc<Output>,
    tournaments: Vec<TournamentState>,
    running: JoinSet<MatchDone>,
    pub summary: Vec<GameSummary>,
}

impl Scheduler {
    /// Builds every tournament's schedule, leaving out matches games.jsonl already holds.
    pub fn new(
        config: Arc<Config>,
        registry: Arc<Registry>,
        output: Arc<Output>,
    ) -> Result<Scheduler, ServerError> {
        let done = output.finished_matches();
        let mut tournaments = Vec::new();
        for t in &config.tournaments {
            let pending: Vec<ScheduledGame> = schedule(t)?
                .into_iter()
                .filter(|g| !done.contains(&g.match_id))
                .collect();
            tournaments.push(TournamentState {
                config: t.clone(),
                pending,
                running: 0,
                due_since: HashMap::new(),
            });
        }
        Ok(Scheduler {
            config,
            registry,
            output,
            tournaments,
            running: JoinSet::new(),
            summary: Vec::new(),
        })
    }

    fn finished(&self) -> bool {
        self.running.is_empty() && self.tournaments.iter().all(|t| t.pending.is_empty())
    }

    /// Runs until every tournament is finished (returns true) or `stop` is cancelled (false).
    pub async fn run(&mut self, stop: CancellationToken) -> bool {
        loop {
            let next_forfeit = self.start_ready_games(&stop).await;
            if self.finished() {
                return true;
            }
            tokio::select! {
                _ = stop.cancelled() => {
                    // Referees see the same token and stop; wait for them.
                    while self.running.join_next().await.is_some() {}
                    return false;
                }
                _ = self.registry.changed.notified() => {}
                Some(done) = self.running.join_next() => self.collect(done).await,
                _ = async { if let Some(at) = next_forfeit { sleep_until(at).await } }, if next_forfeit.is_some() => {}
            }
        }
    }

    async fn collect(&mut self, done: Result<MatchDone, tokio::task::JoinError>) {
        match done {
            Ok(MatchDone { tournament, game }) => {
                if let Some(t) = self.tournaments.get_mut(tournament) {
                    t.running = t.running.saturating_sub(1);
                }
                if let Some(game) = game {
                    self.summary.push(GameSummary::of(&game));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "a referee task failed; its game is not replayed");
                // Its tournament's running count cannot be attributed; recount from the registry.
                let running: HashSet<String> =
                    self.registry.lock().matches.keys().cloned().collect();
                for t in &mut self.tournaments {
                    let prefix = format!("{}-r", t.config.name);
                    t.running =
                        u32::try_from(running.iter().filter(|id| id.starts_with(&prefix)).count())
                            .unwrap_or(u32::MAX);
                }
            }
        }
    }

    /// Starts every game that can start now and forfeits overdue ones; returns when the next
    /// forfeit could fall due.
    async fn start_ready_games(&mut self, stop: &CancellationToken) -> Option<Instant> {
        let now = Instant::now();
        let settings = RefereeSettings {
            max_lag: Duration::from_millis(self.config.server.max_lag_ms),
            reconnect_grace: Duration::from_millis(self.config.server.reconnect_grace_ms),
        };
        let mut next_forfeit: Option<Instant> = None;
        let mut forfeits: Vec<FinishedGame> = Vec::new();
        for (index, t) in self.tournaments.iter_mut().enumerate() {
            let mut i = 0;
            while i < t.pending.len() && t.running < t.config.concurrency {
                let game = &t.pending[i];
                let mut state = self.registry.lock();
                let ready = game
                    .players
                    .iter()
                    .all(|p| state.available(p, t.config.game));
                if ready {
                    let game = t.pending.remove(i);
                    t.due_since.remove(&game.match_id);
                    let (inbox_tx, inbox_rx) = mpsc::channel(64);
                    let links = [
                        state.sessions.get(&game.players[0]).map(|s| s.link.clone()),
                        state.sessions.get(&game.players[1]).map(|s| s.link.clone()),
                    ];
                    state.matches.insert(
                        game.match_id.clone(),
                        MatchEntry {
                            players: game.players.clone(),
                            inbox: inbox_tx,
                        },
                    );
                    for p in &game.players {
                        *state.busy.entry(p.clone()).or_insert(0) += 1;
                    }
                    drop(state);
                    t.running += 1;
                    let spec = MatchSpec {
                        match_id: game.match_id.clone(),
                        tournament: t.config.name.clone(),
                        game: t.config.game,
                        rules: t.config.rules.clone(),
                        clock: t.config.clock,
                        players: game.players.clone(),
                    };
                    let guard = MatchGuard {
                        registry: self.registry.clone(),
                        match_id: game.match_id.clone(),
                    };
                    let output = self.output.clone();
                    let stop = stop.clone();
                    self.running.spawn(async move {
                        let finished = run_match(spec, settings, links, inbox_rx, stop).await;
                        if let Some(game) = &finished {
                            write_output(&output, game).await;
                        }
                        drop(guard);
                        MatchDone {
                            tournament: index,
                            game: finished,
                        }
                    });
                    continue;
                }
                // Not startable: is a player away (not connected, or connected without
                // listing this game in its hello)?
                let away: Vec<bool> = game
                    .players
                    .iter()
                    .map(|p| {
                        !state
                            .sessions
                            .get(p)
                            .is_some_and(|s| s.games.contains(&t.config.game))
                    })
                    .collect();
                drop(state);
                let limit = t.config.absent_forfeit_ms;
                if limit > 0 && away.iter().any(|&a| a) {
                    let since = *t.due_since.entry(game.match_id.clone()).or_insert(now);
                    let due = since + Duration::from_millis(limit);
                    if due <= now {
                        let game = t.pending.remove(i);
                        t.due_since.remove(&game.match_id);
                        let winner = match (away[0], away[1]) {
                            (true, false) => Some(Side::Second),
                            (false, true) => Some(Side::First),
                            _ => None,
                        };
                        tracing::info!(match_id = %game.match_id, result = winner.map_or("draw", Side::as_str), "forfeit: a bot did not show up");
                        forfeits.push(FinishedGame::forfeit(
                            MatchSpec {
                                match_id: game.match_id.clone(),
                                tournament: t.config.name.clone(),
                                game: t.config.game,
                                rules: t.config.rules.clone(),
                                clock: t.config.clock,
                                players: game.players.clone(),
                            },
                            winner,
                        ));
                        continue;
                    }
                    next_forfeit = Some(next_forfeit.map_or(due, |n: Instant| n.min(due)));
                } else {
                    t.due_since.remove(&game.match_id);
                }
                i += 1;
            }
        }
        for game in forfeits {
            write_output(&self.output, &game).await;
            self.summary.push(GameSummary::of(&game));
        }
        next_forfeit
    }
}

/// Writes a finished game's record and games.jsonl line off the runtime threads.
async fn write_output(output: &Arc<Output>, game: &FinishedGame) {
    let output = output.clone();
    let game_for_task = game.clone();
    let match_id = game.spec.match_id.clone();
    match tokio::task::spawn_blocking(move || output.write_game(&game_for_task)).await {
        Ok(Ok(record)) => tracing::debug!(%match_id, %record, "game written"),
        Ok(Err(e)) => tracing::error!(%match_id, error = %e, "cannot write the game's output"),
        Err(e) => tracing::error!(%match_id, error = %e, "output task failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn tournament(bots: usize, format: &str, per_pairing: u32) -> TournamentConfig {
        let mut text = String::new();
        for i in 0..bots {
            text.push_str(&format!("[[bot]]\nname = \"b{i}\"\ntoken = \"t\"\n"));
        }
        let names: Vec<String> = (0..bots).map(|i| format!("\"b{i}\"")).collect();
        text.push_str(&format!(
            "[[tournament]]\nname = \"t\"\ngame = \"hex\"\nformat = \"{format}\"\nbots = [{}]\ngames_per_pairing = {per_pairing}\n",
            names.join(",")
        ));
        Config::from_toml(&text).unwrap().tournaments.remove(0)
    }

    #[test]
    fn round_robin_meets_every_pair_with_alternating_colours() {
        for n in 2..=7 {
            let games = schedule(&tournament(n, "round-robin", 2)).unwrap();
            assert_eq!(games.len(), n * (n - 1));
            let ids: HashSet<_> = games.iter().map(|g| g.match_id.clone()).collect();
            assert_eq!(ids.len(), games.len(), "match ids are unique");
            let mut seen: HashMap<[String; 2], usize> = HashMap::new();
            for g in &games {
                *seen.entry(g.players.clone()).or_default() += 1;
                assert_ne!(g.players[0], g.players[1]);
            }
            // Every ordered pair once: each pairing played with both colours.
            assert_eq!(seen.len(), n * (n - 1));
            assert!(seen.values().all(|&c| c == 1));
        }
    }

    #[test]
    fn double_round_robin_doubles_and_gauntlet_centres_on_the_first() {
        assert_eq!(
            schedule(&tournament(4, "double-round-robin", 1))
                .unwrap()
                .len(),
            12
        );
        let g = schedule(&tournament(4, "gauntlet", 2)).unwrap();
        assert_eq!(g.len(), 6);
        assert!(g.iter().all(|g| g.players.contains(&"b0".to_string())));
        assert!(schedule(&tournament(4, "swiss", 1)).is_err());
    }

    #[test]
    fn match_ids_follow_rounds() {
        let games = schedule(&tournament(2, "round-robin", 2)).unwrap();
        let ids: Vec<_> = games.iter().map(|g| g.match_id.as_str()).collect();
        assert_eq!(ids, ["t-r1-g1", "t-r2-g1"]);
        assert_eq!(games[0].players, ["b0".to_string(), "b1".to_string()]);
        assert_eq!(games[1].players, ["b1".to_string(), "b0".to_string()]);
    }
}

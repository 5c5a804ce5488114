//! The league as the server runs it. At start ([`prepare_league`], in `prepare.rs`): the
//! journal is opened and checked against the configuration, every tournament's schedule comes
//! from `league::pairing` (fixed formats whole, Swiss one round at a time), games finished
//! before a restart are taken from the journal and games.jsonl (and any half-finished output
//! repaired), and games cut off by a crash are set to resume from their journaled moves. Then
//! the [`Scheduler`] task starts a game as soon as both bots are connected and free (honouring
//! each tournament's concurrency), forfeits games of bots that stay away, finishes every game
//! through the journal, pairs the next Swiss round once a round is over, rewrites the standings
//! after every game (the files in `standings_files.rs`) and publishes the news (a game finished
//! with the league's progress, a round paired, a tournament's final standings) as
//! `ServerEvent`s to whoever follows them; it prints nothing.
//!
//! Match ids are the schedule's game ids, `TOURNAMENT-rROUND-pPAIR-gGAME` (all 1-based): the
//! same configuration always gives the same ids, so they survive restarts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Local;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Format, TournamentConfig};
use crate::game::{EndReason, Side};
use crate::journal::JournalEntry;
use crate::league::{
    compute_standings, swiss_round, EloOptions, GameResult, ScheduledGame, TournamentStandings,
};

use super::events::{
    Events, GameFinished, LeagueProgress, ScheduleSeen, ServerEvent, StandingsBoard,
    TournamentProgress, WaitingPair,
};
use super::journaling::SharedJournal;
use super::link::RefereeInput;
use super::match_spec::MatchSpec;
use super::match_task::{self, lost_by_fault, write_game_output, MatchDone, MatchPlan};
use super::output::Output;
use super::referee::{FinishedGame, RefereeSettings, ResumePoint};
use super::registry::Registry;
use super::report::GameSummary;
use crate::game_line::GameLine;

mod prepare;
mod standings_files;

pub use prepare::prepare_league;
use prepare::scheduled_entry;
use standings_files::write_standings_as_they_come;

/// A game waiting to be played: from the start, or from its journaled moves.
#[derive(Debug, Clone)]
struct PendingGame {
    game: ScheduledGame,
    resume: Option<ResumePoint>,
}

/// One tournament as the server runs it.
#[derive(Debug)]
pub struct TournamentState {
    config: TournamentConfig,
    /// `config.rules`, shared by the `MatchSpec` of every game started.
    rules: Arc<serde_json::Value>,
    /// Every game scheduled so far, in schedule order.
    games: Vec<ScheduledGame>,
    /// What the standings need of each finished game, by id. Only this is kept, not the
    /// whole games.jsonl line: lines hold every move and grow with the games played.
    finished: HashMap<String, GameResult>,
    /// The games.jsonl lines of games found finished at start, for `Output::repair`.
    recovered_lines: Vec<GameLine>,
    /// Swiss byes: (round, bot).
    byes: Vec<(u32, String)>,
    pending: Vec<PendingGame>,
    running: u32,
    /// When each pending game first became due while a player was away.
    due_since: HashMap<String, Instant>,
    /// The highest round scheduled.
    round: u32,
    /// Set when no further Swiss round can be paired without a repeat.
    no_more_rounds: bool,
    /// Whether the final standings have been announced (published once, as an event).
    announced: bool,
    /// Times each of its bots was suspended for repeated faults (league-wide counts).
    suspensions: HashMap<String, u32>,
}

impl TournamentState {
    fn new(config: TournamentConfig) -> TournamentState {
        TournamentState {
            rules: Arc::new(config.rules.clone()),
            config,
            games: Vec::new(),
            finished: HashMap::new(),
            recovered_lines: Vec::new(),
            byes: Vec::new(),
            pending: Vec::new(),
            running: 0,
            due_since: HashMap::new(),
            round: 0,
            no_more_rounds: false,
            announced: false,
            suspensions: HashMap::new(),
        }
    }

    fn swiss(&self) -> bool {
        self.config.format == Format::Swiss
    }

    /// How many games the tournament will have: the whole schedule, or for Swiss every planned
    /// round's games (fewer if the pairings ran out).
    pub fn planned(&self) -> usize {
        if self.swiss() && !self.no_more_rounds {
            let per_round = (self.config.bots.len() / 2)
                .saturating_mul(usize::try_from(self.config.games_per_pairing).unwrap_or(1));
            per_round.saturating_mul(usize::try_from(self.config.rounds).unwrap_or(0))
        } else {
            self.games.len()
        }
    }

    pub fn done(&self) -> usize {
        self.finished.len()
    }

    /// Every game played and, for Swiss, every round paired.
    pub fn is_finished(&self) -> bool {
        let rounds_done = !self.swiss() || self.no_more_rounds || self.round >= self.config.rounds;
        rounds_done && self.games.iter().all(|g| self.finished.contains_key(&g.id))
    }

    /// The finished games of rounds before `before` (all rounds with `u32::MAX`), in schedule
    /// order, as the standings and the Swiss pairing read them.
    fn results(&self, before: u32) -> Vec<GameResult> {
        self.games
            .iter()
            .filter(|g| g.round < before)
            .filter_map(|g| self.finished.get(&g.id))
            .cloned()
            .collect()
    }

    /// Records game `id` as finished with its games.jsonl line.
    fn mark_finished(&mut self, id: String, line: &GameLine) {
        self.finished.insert(id, GameResult::from_line(line));
    }

    fn bye_names(&self, before: u32) -> Vec<String> {
        self.byes
            .iter()
            .filter(|(r, _)| *r < before)
            .map(|(_, b)| b.clone())
            .collect()
    }

    pub fn standings(&self) -> TournamentStandings {
        let mut rows = compute_standings(
            &self.config.bots,
            &self.results(u32::MAX),
            &self.bye_names(u32::MAX),
            &self.config.points.points(),
            self.swiss(),
            &EloOptions::default(),
        );
        for row in &mut rows {
            row.suspensions = self.suspensions.get(&row.name).copied().unwrap_or(0);
        }
        TournamentStandings::new(
            &self.config.name,
            self.config.game,
            self.is_finished(),
            rows,
        )
    }

    /// Pairs Swiss round `round` from the results of the rounds before it.
    fn pair_swiss_round(&self, round: u32) -> Option<crate::league::SwissRound> {
        let t = &self.config;
        match swiss_round(
            &t.name,
            &t.bots,
            round,
            t.games_per_pairing,
            &t.points.points(),
            &self.results(round),
            &self.bye_names(round),
        ) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(tournament = %t.name, round, error = %e, "no further Swiss round: the tournament ends here");
                None
            }
        }
    }

    /// If this is a Swiss tournament whose current round is over and more rounds are due, pairs
    /// the next round, queues its games and returns the journal entries that record it.
    fn next_swiss_round(&mut self) -> Vec<JournalEntry> {
        let round_over = self.games.iter().all(|g| self.finished.contains_key(&g.id));
        if !self.swiss() || self.no_more_rounds || self.round >= self.config.rounds || !round_over {
            return Vec::new();
        }
        let round = self.round + 1;
        let Some(paired) = self.pair_swiss_round(round) else {
            self.no_more_rounds = true;
            return Vec::new();
        };
        self.round = round;
        let mut entries = Vec::new();
        if let Some(bot) = &paired.bye {
            self.byes.push((round, bot.clone()));
            entries.push(JournalEntry::Bye {
                tournament: self.config.name.clone(),
                round,
                bot: bot.clone(),
            });
            tracing::info!(tournament = %self.config.name, round, %bot, "bye (scored as a win)");
        }
        for g in paired.games {
            entries.push(scheduled_entry(&self.config.name, &g));
            self.pending.push(PendingGame {
                game: g.clone(),
                resume: None,
            });
            self.games.push(g);
        }
        entries
    }
}

/// The least time between two tellings of the waiting-games table (it is as large as the
/// schedule, and the scheduler wakes on every connection and finished game).
const SCHEDULE_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Starts games as bots become available and collects results until every tournament is
/// finished or `stop` is cancelled.
pub struct Scheduler {
    config: Arc<Config>,
    registry: Arc<Registry>,
    output: Arc<Output>,
    journal: SharedJournal,
    tournaments: Vec<TournamentState>,
    running: JoinSet<MatchDone>,
    /// The tournament of each running match task, so that a task that fails (a panic) is
    /// still counted off its own tournament.
    task_tournaments: HashMap<tokio::task::Id, usize>,
    pub summary: Vec<GameSummary>,
    /// Each tournament's standings as of its last finished game (recomputed only for the
    /// tournament whose game finished), shared with the standings writer and the web view,
    /// which take a snapshot of them when they need one.
    standings: StandingsBoard,
    /// Wakes the standings writer task after a change of `standings`.
    standings_tx: Option<tokio::sync::watch::Sender<()>>,
    /// Every tournament and bot name, shared: what a live view is told waits names them
    /// four times a second without a string each.
    live_names: std::collections::HashSet<Arc<str>>,
    /// When the waiting games were last told (see `tell_schedule`).
    schedule_told_at: Option<std::time::Instant>,
    standings_writer: Option<tokio::task::JoinHandle<()>>,
    /// Where what happens is told.
    events: Events,
    /// Each bot's current run of losses by timeout or illegal move (what and where).
    faults: HashMap<String, Vec<String>>,
    /// The tournaments each bot plays in: when a bot's availability changes, only these are
    /// looked at again for games to start.
    bot_tournaments: HashMap<String, Vec<usize>>,
    /// Tournaments to look at for games to start, beyond those of the bots that changed: one
    /// whose game has just ended (a slot of its own concurrency is free).
    to_look_at: std::collections::BTreeSet<usize>,
    /// Look at every tournament next time (at the start, and when a forfeit falls due).
    look_at_all: bool,
    /// The soonest moment a game waiting for an absent bot is forfeited, as far as the looks
    /// so far found (a look at every tournament finds it afresh).
    forfeit_due: Option<Instant>,
    /// The league's games done and planned, kept game by game.
    progress: ProgressTally,
}

/// The league's games done and planned: each tournament's share as last counted, and their
/// sums. A finished game updates its own tournament's share instead of summing every
/// tournament's (10,000 of them in the largest bench) each time someone follows the league.
#[derive(Debug, Default)]
struct ProgressTally {
    counted: Vec<(usize, usize)>,
    totals: (usize, usize),
}

impl ProgressTally {
    fn of(tournaments: &[TournamentState]) -> ProgressTally {
        let mut tally = ProgressTally {
            counted: vec![(0, 0); tournaments.len()],
            totals: (0, 0),
        };
        for (index, t) in tournaments.iter().enumerate() {
            tally.set(index, t);
        }
        tally
    }

    /// Counts tournament `index` as `t` stands now.
    fn set(&mut self, index: usize, t: &TournamentState) {
        let now = (t.done(), t.planned());
        if let Some(counted) = self.counted.get_mut(index) {
            let before = std::mem::replace(counted, now);
            self.totals.0 = (self.totals.0 + now.0).saturating_sub(before.0);
            self.totals.1 = (self.totals.1 + now.1).saturating_sub(before.1);
        }
    }
}

/// The tournaments each bot of `tournaments` plays in.
fn tournaments_of_bots(tournaments: &[TournamentState]) -> HashMap<String, Vec<usize>> {
    let mut of_bot: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, t) in tournaments.iter().enumerate() {
        for bot in &t.config.bots {
            let indices = of_bot.entry(bot.clone()).or_default();
            if indices.last() != Some(&index) {
                indices.push(index);
            }
        }
    }
    of_bot
}

/// Every tournament's and bot's name in `config`, one shared copy each.
fn tournaments_and_bots(config: &Config) -> std::collections::HashSet<Arc<str>> {
    let tournaments = config.tournaments.iter().map(|t| t.name.as_str());
    let bots = config.bots.iter().map(|b| b.name.as_str());
    tournaments.chain(bots).map(Arc::from).collect()
}

impl Scheduler {
    pub fn new(
        config: Arc<Config>,
        registry: Arc<Registry>,
        output: Arc<Output>,
        journal: SharedJournal,
        tournaments: Vec<TournamentState>,
        events: Events,
    ) -> Scheduler {
        Scheduler {
            events,
            schedule_told_at: None,
            faults: HashMap::new(),
            live_names: tournaments_and_bots(&config),
            bot_tournaments: tournaments_of_bots(&tournaments),
            to_look_at: std::collections::BTreeSet::new(),
            look_at_all: true,
            forfeit_due: None,
            progress: ProgressTally::of(&tournaments),
            config,
            registry,
            output,
            journal,
            standings: StandingsBoard::new(
                tournaments
                    .iter()
                    .map(|t| Arc::new(t.standings()))
                    .collect(),
            ),
            tournaments,
            running: JoinSet::new(),
            task_tournaments: HashMap::new(),
            summary: Vec::new(),
            standings_tx: None,
            standings_writer: None,
        }
    }

    /// Games of the whole league finished so far (this run's and earlier runs'), and planned.
    /// Whether the league has tournaments and each is finished (nothing left to play).
    pub fn all_tournaments_finished(&self) -> bool {
        !self.tournaments.is_empty() && self.tournaments.iter().all(TournamentState::is_finished)
    }

    /// The league's games done and planned.
    pub fn league_progress(&self) -> (usize, usize) {
        self.progress.totals
    }

    fn finished(&self) -> bool {
        self.running.is_empty() && self.tournaments.iter().all(|t| t.pending.is_empty())
    }

    /// Runs until every tournament is finished (returns true) or `stop` is cancelled (false).
    /// The standings files are written by a task of their own, so that a burst of finished
    /// games costs one rewrite instead of one each; the last state is on disk when this returns.
    pub async fn run(&mut self, stop: CancellationToken) -> bool {
        let (tx, rx) = tokio::sync::watch::channel(());
        self.standings_tx = Some(tx);
        self.standings_writer = Some(tokio::spawn(write_standings_as_they_come(
            self.config.server.out_dir.clone(),
            self.standings.clone(),
            rx,
            self.output.health().clone(),
        )));
        let finished = self.run_games(stop).await;
        self.standings_tx = None;
        if let Some(writer) = self.standings_writer.take() {
            if let Err(e) = writer.await {
                tracing::error!(error = %e, "standings writer failed");
            }
        }
        finished
    }

    async fn run_games(&mut self, stop: CancellationToken) -> bool {
        self.write_standings().await;
        self.announce_finished_tournaments();
        loop {
            let next_forfeit = self.start_ready_games(&stop).await;
            if stop.is_cancelled() {
                // Stopped: referees that saw the token first may already have handed back
                // their unfinished games, which must not make the league look finished.
                while self.running.join_next().await.is_some() {}
                self.task_tournaments.clear();
                return false;
            }
            if self.finished() {
                return true;
            }
            tokio::select! {
                _ = stop.cancelled() => {
                    // Referees see the same token and stop; wait for them.
                    while self.running.join_next().await.is_some() {}
                    self.task_tournaments.clear();
                    return false;
                }
                _ = self.registry.changed().notified() => {}
                Some(done) = self.running.join_next_with_id() => self.collect(done).await,
                _ = async { if let Some(at) = next_forfeit { sleep_until(at).await } }, if next_forfeit.is_some() => {
                    self.look_at_all = true;
                }
            }
        }
    }

    async fn collect(
        &mut self,
        done: Result<(tokio::task::Id, MatchDone), tokio::task::JoinError>,
    ) {
        let task = match &done {
            Ok((task, _)) => *task,
            Err(e) => e.id(),
        };
        let tournament = self.task_tournaments.remove(&task);
        if let Some(t) = tournament.and_then(|index| self.tournaments.get_mut(index)) {
            t.running = t.running.saturating_sub(1);
        }
        // A slot of its concurrency is free (and its next Swiss round may be paired).
        self.to_look_at.extend(tournament);
        match done {
            Ok((
                _,
                MatchDone {
                    tournament,
                    id,
                    game,
                    slot,
                },
            )) => {
                if let Some((game, line)) = game {
                    self.finish(tournament, id, game, line).await;
                }
                drop(slot);
            }
            Err(e) => {
                // Its slot in the registry was freed as the task unwound.
                tracing::error!(error = %e, "a referee task failed; its game is played again after a restart");
            }
        }
    }

    /// Takes a finished game whose output (journal entry, record, games.jsonl line `line`) is
    /// already written: progress (published as an event when someone follows the news),
    /// standings, the next Swiss round, and the final standings when the tournament is over.
    async fn finish(
        &mut self,
        tournament: usize,
        id: String,
        summary: GameSummary,
        line: Arc<GameLine>,
    ) {
        self.summary.push(summary);
        let Some(t) = self.tournaments.get_mut(tournament) else {
            return;
        };
        t.mark_finished(id, &line);
        if let Some(t) = self.tournaments.get(tournament) {
            self.progress.set(tournament, t);
            if self.events.is_followed() {
                let (league_done, league_planned) = self.league_progress();
                let progress = LeagueProgress {
                    tournament_done: t.done(),
                    tournament_planned: t.planned(),
                    league_done,
                    league_planned,
                };
                self.events
                    .publish(&ServerEvent::GameFinished(Arc::new(GameFinished {
                        line: line.clone(),
                        progress,
                    })));
            }
        }
        let entries = self
            .tournaments
            .get_mut(tournament)
            .map(TournamentState::next_swiss_round)
            .unwrap_or_default();
        if let Some(t) = self.tournaments.get(tournament) {
            // A Swiss tournament that cannot pair another round plans fewer games.
            self.progress.set(tournament, t);
            if let Some(round) = entries.iter().find_map(|e| match e {
                JournalEntry::Scheduled { round, .. } => Some(*round),
                _ => None,
            }) {
                self.events.publish(&ServerEvent::RoundPaired {
                    tournament: t.config.name.clone(),
                    round,
                    rounds: t.config.rounds,
                });
            }
        }
        self.journal.append(entries).await;
        self.count_faults(&line).await;
        self.refresh_standings(tournament);
        self.write_standings().await;
        self.announce_if_finished(tournament);
    }

    /// Recomputes tournament `index`'s standings and tells the subscribers.
    fn refresh_standings(&mut self, index: usize) {
        if let Some(t) = self.tournaments.get(index) {
            self.standings.set(index, Arc::new(t.standings()));
            if self.events.is_followed() {
                self.events.publish(&ServerEvent::StandingsChanged {
                    tournament: t.config.name.clone(),
                    standings: self.standings.clone(),
                });
            }
        }
    }

    /// Counts each player's losses in a row by timeout or illegal move (any other result of a
    /// game it played ends the run; a forfeit says nothing) and suspends a bot whose run
    /// reaches `server.suspend_after_faults`.
    async fn count_faults(&mut self, game: &GameLine) {
        let limit = usize::try_from(self.config.server.suspend_after_faults).unwrap_or(usize::MAX);
        if limit == 0 || game.reason == EndReason::Forfeit {
            return;
        }
        let winner = game.winner();
        for (side, name) in [(Side::First, &game.first), (Side::Second, &game.second)] {
            let fault = lost_by_fault(winner, game.reason) && winner == Some(side.opponent());
            if !fault {
                self.faults.remove(name);
                continue;
            }
            let run = self.faults.entry(name.clone()).or_default();
            run.push(format!("{} in {}", game.reason, game.match_id));
            if run.len() >= limit {
                let run = self.faults.remove(name).unwrap_or_default();
                self.suspend(name, &run).await;
            }
        }
    }

    /// Suspends `name` after the faults `run`: the bot is told why and disconnected (its
    /// running games go on under the usual disconnect rules, its next games wait for it as for
    /// any absent bot); the suspension is journaled, logged and counted in the standings.
    async fn suspend(&mut self, name: &str, run: &[String]) {
        let why = format!(
            "suspended after {} losses in a row by timeout or illegal move ({}); fix the bot and connect again: games due meanwhile are forfeited after the tournament's absent_forfeit_ms",
            run.len(),
            run.join(", ")
        );
        tracing::warn!(bot = %name, faults = run.len(), why = %why, "bot suspended");
        self.events.publish(&ServerEvent::BotSuspended {
            bot: name.to_string(),
            why: why.clone(),
        });
        self.journal
            .append(vec![JournalEntry::Suspended {
                bot: name.to_string(),
                time: Local::now().to_rfc3339(),
                why: why.clone(),
            }])
            .await;
        if let Some((conn_id, left)) = self.registry.suspend(name, &why) {
            for (side, door) in left {
                let _ = door
                    .send(RefereeInput::Disconnected { side, conn_id })
                    .await;
            }
        }
        for index in 0..self.tournaments.len() {
            let Some(t) = self.tournaments.get_mut(index) else {
                continue;
            };
            if t.config.bots.iter().any(|b| b == name) {
                *t.suspensions.entry(name.to_string()).or_insert(0) += 1;
                self.refresh_standings(index);
            }
        }
    }

    /// Tells a live view (when one subscribes) which games wait and how each tournament
    /// stands, at most every `SCHEDULE_EVERY`.
    fn tell_schedule(&mut self) {
        if !self.events.is_followed_live() {
            return;
        }
        let now = std::time::Instant::now();
        if self
            .schedule_told_at
            .is_some_and(|last| now.duration_since(last) < SCHEDULE_EVERY)
        {
            return;
        }
        self.schedule_told_at = Some(now);
        let mut waiting = Vec::new();
        let mut progress = Vec::new();
        let name = |text: &str| -> Arc<str> {
            self.live_names
                .get(text)
                .cloned()
                .unwrap_or_else(|| Arc::from(text))
        };
        for t in &self.tournaments {
            let tournament = name(&t.config.name);
            // One entry per pair: a schedule can hold tens of thousands of games.
            let mut pairs = std::collections::HashSet::new();
            for p in &t.pending {
                if pairs.insert((p.game.first.as_str(), p.game.second.as_str())) {
                    waiting.push(WaitingPair {
                        tournament: tournament.clone(),
                        game: t.config.game,
                        players: [name(&p.game.first), name(&p.game.second)],
                    });
                }
            }
            progress.push(TournamentProgress {
                name: tournament,
                game: t.config.game,
                swiss: t.swiss(),
                finished: t.is_finished(),
                running: t.running,
                concurrency: t.config.concurrency,
            });
        }
        // Held until the next rebuild: no spare capacity (a thousand tournaments of a pair
        // each would keep up to twice their size).
        waiting.shrink_to_fit();
        progress.shrink_to_fit();
        self.events
            .publish(&ServerEvent::Schedule(Arc::new(ScheduleSeen {
                waiting,
                tournaments: progress,
            })));
    }

    /// Hands the current standings to the writer task (atomic files, off the runtime threads).
    async fn write_standings(&self) {
        if let Some(tx) = &self.standings_tx {
            // A wake-up: the writer takes the board's newest state when it is ready to write.
            tx.send_replace(());
        }
    }

    /// Tells the final standings of every tournament that has just finished.
    fn announce_finished_tournaments(&mut self) {
        for index in 0..self.tournaments.len() {
            self.announce_if_finished(index);
        }
    }

    /// Tells tournament `index`'s final standings if it has just finished (once).
    fn announce_if_finished(&mut self, index: usize) {
        if let Some(t) = self.tournaments.get_mut(index) {
            if !t.announced && t.is_finished() {
                t.announced = true;
                if self.events.is_followed() {
                    self.events
                        .publish(&ServerEvent::TournamentFinished(Arc::new(t.standings())));
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
            timeout_settle: Duration::from_millis(self.config.server.timeout_settle_ms),
        };
        // Only tournaments where something changed can have a game to start that the last look
        // did not start: one whose own game ended, or one of a bot that connected, left or was
        // freed from a match elsewhere. Looking at all of them at every change cost each game
        // end a pass over every tournament (a thousand and more in a big league).
        let changes = self.registry.take_changes();
        let look_at: Vec<usize> = if self.look_at_all || changes.all {
            self.look_at_all = false;
            self.to_look_at.clear();
            self.forfeit_due = None;
            (0..self.tournaments.len()).collect()
        } else {
            let mut look_at = std::mem::take(&mut self.to_look_at);
            for bot in &changes.bots {
                if let Some(indices) = self.bot_tournaments.get(bot) {
                    look_at.extend(indices.iter().copied());
                }
            }
            look_at.into_iter().collect()
        };
        let mut next_forfeit: Option<Instant> = self.forfeit_due;
        let mut forfeits: Vec<(usize, String, FinishedGame)> = Vec::new();
        let suspending = self.config.server.suspend_after_faults > 0;
        for index in look_at {
            let Some(t) = self.tournaments.get_mut(index) else {
                continue;
            };
            let mut i = 0;
            while i < t.pending.len() && t.running < t.config.concurrency {
                let Some(pending) = t.pending.get(i) else {
                    break;
                };
                let players = [pending.game.first.clone(), pending.game.second.clone()];
                let spec = MatchSpec {
                    match_id: pending.game.id.clone(),
                    tournament: t.config.name.clone(),
                    game: t.config.game,
                    rules: t.rules.clone(),
                    clock: t.config.clock,
                    players: players.clone(),
                };
                let away = match self
                    .registry
                    .claim_match(&spec.match_id, &players, t.config.game)
                {
                    Ok(claimed) => {
                        let pending = t.pending.remove(i);
                        t.due_since.remove(&spec.match_id);
                        t.running += 1;
                        let plan = MatchPlan {
                            tournament: index,
                            opening: t.config.opening_of(&spec.match_id),
                            spec,
                            settings,
                            resume: pending.resume,
                            journal: self.journal.clone(),
                            output: self.output.clone(),
                            events: self.events.clone(),
                            hold_slot_on_fault: suspending,
                            stop: stop.clone(),
                        };
                        let task = self.running.spawn(match_task::play(claimed, plan));
                        self.task_tournaments.insert(task.id(), index);
                        continue;
                    }
                    // Not startable: is a player away (not connected, or connected without
                    // listing this game in its hello)?
                    Err(away) => away,
                };
                let limit = t.config.absent_forfeit_ms;
                // A program that cannot start is absent at once: no waiting out the limit.
                let cannot_start = self.registry.cannot_start(&players);
                let broken = [0, 1].map(|i| away[i] && cannot_start[i]);
                if (limit > 0 || broken.contains(&true)) && away.contains(&true) {
                    let since = *t.due_since.entry(spec.match_id.clone()).or_insert(now);
                    let due = if broken.contains(&true) {
                        now
                    } else {
                        since + Duration::from_millis(limit)
                    };
                    if due <= now {
                        let pending = t.pending.remove(i);
                        t.due_since.remove(&spec.match_id);
                        let absent = if broken.contains(&true) { broken } else { away };
                        let id = spec.match_id.clone();
                        let game = match &pending.resume {
                            // Cut off by a crash: the game was played, so it keeps its moves.
                            Some(resume) => FinishedGame::abandoned(spec, resume, absent),
                            None => {
                                let winner = match absent {
                                    [true, false] => Some(Side::Second),
                                    [false, true] => Some(Side::First),
                                    _ => None,
                                };
                                FinishedGame::forfeit(spec, winner)
                            }
                        };
                        tracing::info!(match_id = %id, result = game.outcome.result_str(), reason = %game.outcome.reason, moves = game.moves.len(), "a bot did not show up: game ended");
                        forfeits.push((index, id, game));
                        continue;
                    }
                    next_forfeit = Some(next_forfeit.map_or(due, |n: Instant| n.min(due)));
                } else {
                    t.due_since.remove(&spec.match_id);
                }
                i += 1;
            }
            // A burst of absences (every bot still connecting at the start of a league) leaves
            // a table as large as the schedule; give its memory back once nobody is missing.
            if t.due_since.is_empty() && t.due_since.capacity() > 0 {
                t.due_since.shrink_to_fit();
            }
        }
        self.tell_schedule();
        let any_forfeit = !forfeits.is_empty();
        for (index, id, game) in forfeits {
            if let Some((game, line)) =
                write_game_output(self.output.clone(), self.journal.clone(), id.clone(), game).await
            {
                self.finish(index, id, game, line).await;
            }
        }
        if any_forfeit {
            // A forfeit may have completed a Swiss round: its next games can start now.
            self.look_at_all = true;
            return Some(Instant::now());
        }
        self.forfeit_due = next_forfeit;
        next_forfeit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RecordEncoding;
    use crate::journal::{Journal, JOURNAL_FILE};
    use std::collections::HashSet;
    use std::path::Path;

    fn swiss_config(out_dir: &Path) -> Config {
        let mut text = String::new();
        for b in ["a", "b", "c", "d"] {
            text.push_str(&format!("[[bot]]\nname = \"{b}\"\ntoken = \"t\"\n"));
        }
        text.push_str(
            "[[tournament]]\nname = \"s\"\ngame = \"hex\"\nformat = \"swiss\"\n\
             bots = [\"a\", \"b\", \"c\", \"d\"]\nrounds = 3\ngames_per_pairing = 1\n",
        );
        let mut config = Config::from_toml(&text).unwrap();
        config.server.out_dir = out_dir.to_path_buf();
        config
    }

    fn output(out_dir: &Path) -> Arc<Output> {
        Arc::new(Output::new(
            out_dir.to_path_buf(),
            RecordEncoding::Utf8,
            "ev".into(),
            "pl".into(),
        ))
    }

    /// Lets `out`'s writer write what the repair queued.
    fn write_queued(out: &Arc<Output>) {
        let writer = out.start_writer().unwrap();
        out.stop_writing();
        assert_eq!(writer.join().unwrap(), None, "everything written");
    }

    /// A games.jsonl object in which the first side wins without a move.
    fn line(g: &ScheduledGame) -> GameLine {
        GameLine::from_json(&serde_json::json!({
            "match": g.id, "tournament": "s", "game": "hex", "first": g.first,
            "second": g.second, "result": "first", "reason": "resign", "moves": [],
            "think_ms": [], "lag_ms": [], "rules": {"swap": false},
            "clock": {"initial_ms": 600000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-22T21:00:00+00:00", "finished": "2026-11-22T21:01:00+00:00",
            "record": format!("{}.txt", g.id),
        }))
        .unwrap()
    }

    fn round_games(ts: &TournamentState, round: u32) -> Vec<ScheduledGame> {
        ts.games
            .iter()
            .filter(|g| g.round == round)
            .cloned()
            .collect()
    }

    #[test]
    fn a_swiss_round_cut_off_while_being_journaled_is_completed_identically() {
        let dir = tempfile::tempdir().unwrap();
        let config = swiss_config(dir.path());
        let out = output(dir.path());
        let (journal, mut tournaments, _) = prepare_league(&config, &out).unwrap();
        let round1 = round_games(&tournaments[0], 1);
        assert_eq!(round1.len(), 2);
        assert_eq!(tournaments[0].round, 1);
        // Round 1 is played: game 1 finishes through the journal only (a crash before its
        // games.jsonl line and record), game 2 through games.jsonl only (a crash before its
        // journal entry, as if the journal were older).
        journal
            .append_blocking(vec![JournalEntry::Finished {
                id: round1[0].id.clone(),
                record: Arc::new(line(&round1[0])),
            }])
            .unwrap();
        std::fs::write(
            out.games_path(),
            format!("{}\n", line(&round1[1]).to_text()),
        )
        .unwrap();
        drop((journal, tournaments));

        let out = output(dir.path());
        let (journal, tournaments_after, report) = prepare_league(&config, &out).unwrap();
        assert_eq!(report.finished, 2);
        assert_eq!(
            report.repaired, 3,
            "game 1's record file and games.jsonl line, game 2's record file"
        );
        write_queued(&out);
        let ids: Vec<String> = out
            .read_games()
            .iter()
            .map(|l| l.match_id.clone())
            .collect();
        assert_eq!(ids, [round1[1].id.clone(), round1[0].id.clone()]);
        for g in &round1 {
            assert!(out.records_dir().join(format!("{}.txt", g.id)).exists());
        }
        let round2 = round_games(&tournaments_after[0], 2);
        assert_eq!(round2.len(), 2);
        let pairs = |games: &[ScheduledGame]| -> HashSet<(String, String)> {
            games
                .iter()
                .map(|g| {
                    (
                        g.first.clone().min(g.second.clone()),
                        g.first.clone().max(g.second.clone()),
                    )
                })
                .collect()
        };
        assert!(pairs(&round1).is_disjoint(&pairs(&round2)), "no repeats");
        drop((journal, tournaments_after));

        // Cut the journal after round 2's first game: the restart pairs round 2 again and
        // journals the missing game, the same as before.
        let path = dir.path().join(JOURNAL_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let cut: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains(&format!("\"id\":\"{}\"", round2[1].id)))
            .collect();
        std::fs::write(&path, cut.join("\n") + "\n").unwrap();
        let (_, again, _) = prepare_league(&config, &out).unwrap();
        assert_eq!(round_games(&again[0], 2), round2);
        let (_, state) = Journal::open(&path).unwrap();
        assert!(state.game(&round2[1].id).is_some(), "journaled again");
        tournaments = again;
        assert!(!tournaments[0].is_finished());
        assert_eq!(tournaments[0].planned(), 6);
        assert_eq!(tournaments[0].done(), 2);
        assert_eq!(tournaments[0].pending.len(), 2);
    }

    #[test]
    fn the_league_tally_follows_each_tournament_it_is_told_of() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = swiss_config(dir.path());
        let mut second = config.tournaments[0].clone();
        second.name = "s2".into();
        config.tournaments.push(second);
        let out = output(dir.path());
        let (_journal, mut tournaments, _) = prepare_league(&config, &out).unwrap();
        let sum = |ts: &[TournamentState]| {
            ts.iter()
                .fold((0, 0), |(d, p), t| (d + t.done(), p + t.planned()))
        };
        let mut tally = ProgressTally::of(&tournaments);
        assert_eq!(tally.totals, (0, 12));
        for index in [0, 1, 1] {
            let game = tournaments[index].pending.remove(0).game;
            tournaments[index].mark_finished(game.id.clone(), &line(&game));
            tally.set(index, &tournaments[index]);
            assert_eq!(tally.totals, sum(&tournaments));
        }
        assert_eq!(tally.totals, (3, 12));
        // Told of the same state again, nothing is counted twice.
        tally.set(1, &tournaments[1]);
        assert_eq!(tally.totals, (3, 12));
    }

    #[test]
    fn a_changed_config_is_refused_naming_the_difference() {
        let dir = tempfile::tempdir().unwrap();
        let config = swiss_config(dir.path());
        prepare_league(&config, &output(dir.path())).unwrap();
        let mut changed = config.clone();
        changed.tournaments[0].rounds = 4;
        let err = prepare_league(&changed, &output(dir.path()))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("tournament s: rounds differs: journal has 3, config has 4"),
            "{err}"
        );
    }
}

//! The web view's read model of a running server: a table of the games that have started
//! (moves, clocks, results), the games still waiting and the latest standings, built from the
//! server's `ServerEvent`s (it subscribes as a live subscriber: every move and the schedule
//! reach it), and a bounded fan-out of `start`/`move`/`end`/`standings` events for the
//! browsers. Taking an event never waits: a receiver that falls behind misses events (the web
//! view then drops that client), so a slow browser never slows a referee.
//!
//! A `move` event (with its position text, which costs the referee to make) is passed on for
//! every move of a game someone follows (`follow`), and otherwise for the first move of each
//! game after each league batch (`next_batch`): the league stream sends each game's position
//! at most once a batch anyway, so fast games cost the referees one position a second each,
//! not one per move. With more than `LEAGUE_BATCH_GAMES` games running, each game takes its
//! turn in every n-th batch only (n = running games / `LEAGUE_BATCH_GAMES`, rounded up): a batch
//! then holds about that many positions whatever the number of games, and a thousand games'
//! boards on the league page are each redrawn every ten seconds instead of every second.
//!
//! A running game's moves are not copied here: its `GameStarted` event lends the referee's own
//! move log (`SharedMoveLog`). Referees publish holding that log's lock, so the table never
//! locks a move log while it holds its own lock (it keeps each game's ply count itself).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::clock::ClocksMs;
use crate::fanout::{Fanout, WhenFull};
use crate::game::{EndReason, GameId};
use crate::game_line::LineResult;
pub use crate::server::events::{MatchSpec, MoveLog, SharedMoveLog};
use crate::server::events::{ScheduleSeen, ServerEvent, StandingsBoard, Subscriber};

/// Events each receiver may have queued: a game's stream that falls this far behind is
/// dropped; the league feed misses events instead.
pub const EVENT_QUEUE: usize = 1024;

/// One event for the web view: its SSE name and its JSON data, serialized once for every
/// receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    pub kind: &'static str,
    pub data: String,
}

/// A game as the web view knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveGame {
    /// Ids, names, rules and clock: the referee's own (shared, not copied).
    pub spec: Arc<MatchSpec>,
    /// The moves with their think times: while the game runs, its referee's own log (shared,
    /// not copied).
    pub moves: SharedMoveLog,
    /// Both clocks after the last move (or at the start).
    pub clocks: [u64; 2],
    /// Set once finished.
    pub result: Option<LineResult>,
    pub reason: Option<EndReason>,
    pub record: Option<String>,
}

/// An `/api/games` entry, however the game is held.
#[derive(Serialize)]
struct SummaryView<'a> {
    #[serde(rename = "match")]
    match_id: &'a str,
    tournament: &'a str,
    game: &'static str,
    first: &'a str,
    second: &'a str,
    status: &'static str,
    ply: usize,
    result: Option<LineResult>,
    reason: Option<EndReason>,
}

impl SummaryView<'_> {
    fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl LiveGame {
    /// The `/api/games` entry (locks the move log for its length: not to be called under the
    /// live view's lock).
    pub fn summary(&self) -> Value {
        self.summary_view(self.moves.len()).json()
    }

    fn summary_view(&self, ply: usize) -> SummaryView<'_> {
        SummaryView {
            match_id: &self.spec.match_id,
            tournament: &self.spec.tournament,
            game: self.spec.game.as_str(),
            first: &self.spec.players[0],
            second: &self.spec.players[1],
            status: if self.result.is_some() {
                "finished"
            } else {
                "playing"
            },
            ply,
            result: self.result,
            reason: self.reason,
        }
    }
}

/// Finished games whose moves the live view keeps in memory, the latest ones; older finished
/// games keep their summary only and are read back from games.jsonl when asked for (a league
/// of many thousand games would otherwise hold every move of every game).
pub const FINISHED_GAMES_KEPT: usize = 64;

/// The running games whose latest position a league batch holds, at most (about; see the
/// module's note). A thousand Connect6 positions would make a batch of about 700 KB, held by
/// the server and sent to every browser each second.
pub const LEAGUE_BATCH_GAMES: u64 = 100;

/// Whether the game at `at` in start order takes its turn in league batch `batch` when each
/// game has one batch in `stride`: games take turns by their place, so every batch holds an
/// even share of them.
fn in_its_batch(at: usize, batch: u64, stride: u64) -> bool {
    (u64::try_from(at).unwrap_or(0).wrapping_add(batch)) % stride.max(1) == 0
}

/// A `move` event's JSON besides its match id, move and position texts: field names, ply,
/// clocks (an estimate; the buffer grows if it is short).
const MOVE_EVENT_FIELDS_BYTES: usize = 120;

/// A finished game whose moves were dropped from memory, as `/api/games` lists it: its match
/// id (shared with the index), numbers for its tournament and players in the table's one
/// list of names, its result and reason (about 60 bytes, where a whole game held a few hundred
/// plus a heap block per name).
#[derive(Debug)]
struct FinishedSummary {
    match_id: Arc<str>,
    tournament: NameId,
    players: [NameId; 2],
    result: Option<LineResult>,
    reason: Option<EndReason>,
    ply: u32,
    game: GameId,
}

/// A name's place in `Names`.
type NameId = u32;

/// Tournament and bot names, each stored once.
#[derive(Debug, Default)]
struct Names {
    list: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, NameId>,
}

impl Names {
    fn id(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = NameId::try_from(self.list.len()).unwrap_or(NameId::MAX);
        let name: Arc<str> = Arc::from(name);
        self.list.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    fn get(&self, id: NameId) -> &str {
        self.list.get(id as usize).map_or("", |n| n)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.list.len()
    }
}

impl FinishedSummary {
    fn view<'a>(&'a self, names: &'a Names) -> SummaryView<'a> {
        SummaryView {
            match_id: &self.match_id,
            tournament: names.get(self.tournament),
            game: self.game.as_str(),
            first: names.get(self.players[0]),
            second: names.get(self.players[1]),
            status: "finished",
            ply: self.ply as usize,
            result: self.result,
            reason: self.reason,
        }
    }
}

/// A started game as the table holds it.
#[derive(Debug)]
enum Slot {
    /// Running, or finished with its moves still held: the game, its ply count (kept here so
    /// that the table never locks a move log under its own lock), and the league batch in
    /// which its last `move` event was published.
    Full {
        game: Box<LiveGame>,
        ply: usize,
        published_in_batch: Option<u64>,
    },
    /// Finished, moves dropped (read back from games.jsonl when asked for).
    Dropped(FinishedSummary),
}

impl Slot {
    /// A game still being played (no result yet).
    fn is_running(&self) -> bool {
        matches!(self, Slot::Full { game, .. } if game.result.is_none())
    }

    fn summary(&self, names: &Names) -> Value {
        match self {
            Slot::Full { game, ply, .. } => game.summary_view(*ply).json(),
            Slot::Dropped(summary) => summary.view(names).json(),
        }
    }
}

/// A started game as the live view holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum HeldGame {
    /// Everything, moves included.
    InMemory(Box<LiveGame>),
    /// A finished game whose moves were dropped from memory: read it from games.jsonl.
    Finished,
}

#[derive(Debug, Default)]
struct LiveState {
    /// Games in start order.
    games: Vec<Slot>,
    /// How many of them are still being played.
    running: usize,
    /// How many streams follow each game (by match id) move by move.
    followed: HashMap<String, usize>,
    /// Finished games (index in `games`) whose moves are still held, oldest first.
    finished_held: std::collections::VecDeque<usize>,
    /// How many of those to hold.
    finished_kept: usize,
    index: HashMap<Arc<str>, usize>,
    /// Tournament and player names of the games in `Slot::Dropped`.
    names: Names,
    /// The games waiting and each tournament's progress, as the scheduler last told.
    schedule: Arc<ScheduleSeen>,
    /// Every tournament's standings as of the last finished game (pointers: the JSON text is
    /// made only when someone asks, not after every game).
    standings: Option<StandingsBoard>,
    /// The JSON text of `standings` once made, with the board's version it was made from.
    standings_text: Option<(u64, Arc<String>)>,
}

#[derive(Debug)]
struct Shared {
    /// The league stream's current batch (see `next_batch`).
    batch: AtomicU64,
    /// Each game's `move` events go into one league batch in this many (at least 1).
    batch_stride: AtomicU64,
    state: Mutex<LiveState>,
    events: Fanout<Arc<LiveEvent>>,
}

/// The read model: its event subscription and the web view's handlers share it (cheap to
/// clone).
#[derive(Debug, Clone)]
pub struct Live {
    shared: Arc<Shared>,
}

impl Default for Live {
    fn default() -> Self {
        Live::keeping_finished(FINISHED_GAMES_KEPT)
    }
}

impl LiveState {
    /// Adds a game that has started (or replaces an earlier start of the same match).
    fn insert(&mut self, game: LiveGame, ply: usize) {
        let at = self.index.get(game.spec.match_id.as_str()).copied();
        let was_running = at
            .and_then(|at| self.games.get(at))
            .is_some_and(Slot::is_running);
        if was_running {
            self.running -= 1;
        }
        if game.result.is_none() {
            self.running += 1;
        }
        let slot = Slot::Full {
            game: Box::new(game),
            ply,
            published_in_batch: None,
        };
        match at.and_then(|at| self.games.get_mut(at)) {
            Some(old) => *old = slot,
            None => {
                let Slot::Full { game, .. } = &slot else {
                    return;
                };
                let key: Arc<str> = Arc::from(game.spec.match_id.as_str());
                self.index.insert(key, self.games.len());
                self.games.push(slot);
            }
        }
    }

    /// Game `at` finished: hold its moves, keeping only its summary for the oldest finished
    /// game held once more than `finished_kept` are.
    fn hold_finished(&mut self, at: usize) {
        let held = matches!(self.games.get(at), Some(Slot::Full { .. }));
        if !held || self.finished_held.contains(&at) {
            return;
        }
        self.finished_held.push_back(at);
        while self.finished_held.len() > self.finished_kept {
            let Some(oldest) = self.finished_held.pop_front() else {
                break;
            };
            self.drop_moves(oldest);
        }
    }

    /// Keeps only the summary of finished game `at`.
    fn drop_moves(&mut self, at: usize) {
        let Some(Slot::Full { game, ply, .. }) = self.games.get(at) else {
            return;
        };
        let names = &mut self.names;
        let summary = FinishedSummary {
            match_id: match self.index.get_key_value(game.spec.match_id.as_str()) {
                Some((key, _)) => key.clone(),
                None => Arc::from(game.spec.match_id.as_str()),
            },
            tournament: names.id(&game.spec.tournament),
            players: [
                names.id(&game.spec.players[0]),
                names.id(&game.spec.players[1]),
            ],
            result: game.result,
            reason: game.reason,
            ply: u32::try_from(*ply).unwrap_or(u32::MAX),
            game: game.spec.game,
        };
        if let Some(slot) = self.games.get_mut(at) {
            *slot = Slot::Dropped(summary);
        }
    }
}

impl Live {
    /// A live view holding the moves of the latest `kept` finished games.
    pub fn keeping_finished(kept: usize) -> Live {
        Live {
            shared: Arc::new(Shared {
                batch: AtomicU64::new(0),
                batch_stride: AtomicU64::new(1),
                state: Mutex::new(LiveState {
                    finished_kept: kept,
                    ..LiveState::default()
                }),
                events: Fanout::new("web view events"),
            }),
        }
    }

    /// Its subscription to a server's events: every event, each move and the schedule too.
    pub fn subscriber(&self) -> Subscriber {
        let live = self.clone();
        Subscriber::live(Arc::new(move |event: &ServerEvent<'_>| live.take(event)))
    }

    /// Brings the table up to date with `event` and passes it on to the browsers that follow.
    pub fn take(&self, event: &ServerEvent<'_>) {
        match event {
            ServerEvent::GameStarted(started) => self.game_started(LiveGame {
                spec: started.spec.clone(),
                moves: started.moves.clone(),
                clocks: started.clocks,
                result: None,
                reason: None,
                record: None,
            }),
            ServerEvent::MovePlayed(played) => self.move_played(
                played.match_id,
                played.ply,
                played.text,
                played.think_ms,
                || played.position(),
                played.clocks,
            ),
            ServerEvent::GameFinished(finished) => {
                let line = &finished.line;
                self.game_ended(
                    &line.match_id,
                    line.result,
                    line.reason,
                    Some(line.record.as_str()),
                );
            }
            ServerEvent::StandingsChanged {
                tournament,
                standings,
            } => self.standings_changed(tournament, standings.clone()),
            ServerEvent::Schedule(seen) => self.lock().schedule = seen.clone(),
            ServerEvent::BotConnected { bot, .. }
            | ServerEvent::BotDisconnected { bot }
            | ServerEvent::BotSuspended { bot, .. } => {
                self.publish("bots", None, json!({ "bot": bot }))
            }
            ServerEvent::Resumed(_)
            | ServerEvent::Ready { .. }
            | ServerEvent::RoundPaired { .. }
            | ServerEvent::TournamentFinished(_)
            | ServerEvent::OutputBehind(_)
            | ServerEvent::OutputCaughtUp(_)
            | ServerEvent::OutputLeftBehind(_) => {}
        }
    }

    fn lock(&self) -> MutexGuard<'_, LiveState> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes an event (about game `match_id`, if given) to whoever is watching.
    fn publish(&self, kind: &'static str, match_id: Option<&str>, data: Value) {
        if !self.shared.events.has_subscribers() {
            return;
        }
        self.publish_text(kind, match_id, data.to_string());
    }

    fn publish_text(&self, kind: &'static str, match_id: Option<&str>, data: String) {
        self.shared
            .events
            .send(match_id, Arc::new(LiveEvent { kind, data }));
    }

    /// A receiver of every event published from now on, for the league feed: if it falls
    /// `EVENT_QUEUE` events behind it misses events rather than being dropped.
    pub fn subscribe_league(&self) -> mpsc::Receiver<Arc<LiveEvent>> {
        self.shared
            .events
            .subscribe(None, EVENT_QUEUE, WhenFull::Skip)
    }

    /// A receiver of game `match_id`'s events from now on, dropped if it falls `EVENT_QUEUE`
    /// events behind.
    pub fn subscribe_game(&self, match_id: &str) -> mpsc::Receiver<Arc<LiveEvent>> {
        self.shared
            .events
            .subscribe(Some(match_id), EVENT_QUEUE, WhenFull::Drop)
    }

    /// A game finished before this run (from games.jsonl), so that the web view lists it.
    pub fn add_finished(&self, game: LiveGame) {
        let ply = game.moves.len();
        let mut state = self.lock();
        if state.index.contains_key(game.spec.match_id.as_str()) {
            return;
        }
        let at = state.games.len();
        state.insert(game, ply);
        state.hold_finished(at);
    }

    /// A referee started (or resumed) a game with the moves in its log already played.
    fn game_started(&self, game: LiveGame) {
        let ply = game.moves.len();
        let summary = game.summary_view(ply).json();
        self.lock().insert(game, ply);
        // For the league only: a game's own stream is its moves, then its end.
        self.publish("start", None, summary);
    }

    /// A referee accepted `text`, the game's move number `ply` (already in its move log), after
    /// `think_ms`; `clocks` are both sides' time left, and `position` makes the position text
    /// after the move, called only if a `move` event is published (see the module's note).
    fn move_played(
        &self,
        match_id: &str,
        ply: usize,
        text: &str,
        think_ms: u64,
        position: impl FnOnce() -> String,
        clocks: [u64; 2],
    ) {
        let batch = self.shared.batch.load(Ordering::Relaxed);
        let stride = self.shared.batch_stride.load(Ordering::Relaxed).max(1);
        {
            let mut state = self.lock();
            let followed = !state.followed.is_empty() && state.followed.contains_key(match_id);
            let Some(at) = state.index.get(match_id).copied() else {
                return;
            };
            let Some(Slot::Full {
                game,
                ply: held_ply,
                published_in_batch,
            }) = state.games.get_mut(at)
            else {
                return;
            };
            *held_ply = ply;
            game.clocks = clocks;
            if !followed && (*published_in_batch == Some(batch) || !in_its_batch(at, batch, stride))
            {
                return;
            }
            *published_in_batch = Some(batch);
        }
        #[derive(Serialize)]
        struct MoveEvent<'a> {
            #[serde(rename = "match")]
            match_id: &'a str,
            ply: usize,
            #[serde(rename = "move")]
            text: &'a str,
            think_ms: u64,
            position: &'a str,
            clocks: ClocksMs,
        }
        let position = position();
        let event = MoveEvent {
            match_id,
            ply,
            text,
            think_ms,
            position: &position,
            clocks: ClocksMs::from(clocks),
        };
        // Sized for the event (the league stream holds one per running game): a growing
        // buffer would end up to twice the text's length.
        let mut data = Vec::with_capacity(
            MOVE_EVENT_FIELDS_BYTES + match_id.len() + text.len() + position.len(),
        );
        match serde_json::to_writer(&mut data, &event) {
            Ok(()) => {
                data.shrink_to_fit();
                match String::from_utf8(data) {
                    Ok(data) => self.publish_text("move", Some(match_id), data),
                    Err(e) => tracing::error!(error = %e, "a move event is not UTF-8"),
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot serialise a move event"),
        }
    }

    /// The league stream starts a new batch: the next move of each game whose turn it is (all
    /// of them while at most `LEAGUE_BATCH_GAMES` run) is published again.
    pub fn next_batch(&self) {
        let running = self.lock().running;
        let stride = u64::try_from(running)
            .unwrap_or(u64::MAX)
            .div_ceil(LEAGUE_BATCH_GAMES)
            .max(1);
        self.shared.batch_stride.store(stride, Ordering::Relaxed);
        self.shared.batch.fetch_add(1, Ordering::Relaxed);
    }

    /// Someone follows `match_id` move by move until the returned guard is dropped.
    pub fn follow(&self, match_id: &str) -> Following {
        *self
            .lock()
            .followed
            .entry(match_id.to_string())
            .or_insert(0) += 1;
        Following {
            live: self.clone(),
            match_id: match_id.to_string(),
        }
    }

    /// A game's result is written (its record file is `record`).
    fn game_ended(
        &self,
        match_id: &str,
        result: LineResult,
        reason: EndReason,
        record: Option<&str>,
    ) {
        {
            let mut state = self.lock();
            let Some(at) = state.index.get(match_id).copied() else {
                // A forfeit: the game never started, so the web view does not list it.
                return;
            };
            if let Some(Slot::Full { game, .. }) = state.games.get_mut(at) {
                let was_running = game.result.is_none();
                game.result = Some(result);
                game.reason = Some(reason);
                game.record = record.map(str::to_string);
                if was_running {
                    state.running -= 1;
                }
                state.hold_finished(at);
            }
        }
        self.publish(
            "end",
            Some(match_id),
            json!({"match": match_id, "result": result, "reason": reason, "record": record}),
        );
    }

    /// The standings changed (`standings`: every tournament's, as `standings.json` has them).
    fn standings_changed(&self, tournament: &str, standings: StandingsBoard) {
        self.lock().standings = Some(standings);
        self.publish("standings", None, json!({ "tournament": tournament }));
    }

    /// Every game that has started, in start order.
    pub fn games(&self) -> Vec<Value> {
        let state = self.lock();
        state
            .games
            .iter()
            .map(|s| s.summary(&state.names))
            .collect()
    }

    /// One game, if it has started.
    pub fn game(&self, match_id: &str) -> Option<HeldGame> {
        let state = self.lock();
        let at = *state.index.get(match_id)?;
        state.games.get(at).map(|s| match s {
            Slot::Dropped(_) => HeldGame::Finished,
            Slot::Full { game, .. } => HeldGame::InMemory(game.clone()),
        })
    }

    /// The last standings as `standings.json` text, if any game has finished this run (made
    /// on the first request after a change, outside the lock).
    pub fn standings(&self) -> Option<Arc<String>> {
        let board = {
            let state = self.lock();
            let board = state.standings.clone()?;
            if let Some((version, text)) = &state.standings_text {
                if *version == board.version() {
                    return Some(text.clone());
                }
            }
            board
        };
        let (version, snapshot) = board.snapshot();
        let text = Arc::new(crate::league::report::standings_json(&snapshot));
        let mut state = self.lock();
        // Kept unless a request that saw a newer version kept its text meanwhile.
        if state
            .standings_text
            .as_ref()
            .is_none_or(|(kept, _)| *kept < version)
        {
            state.standings_text = Some((version, text.clone()));
        }
        Some(text)
    }

    /// The pairs with games waiting to start and each tournament's progress, as the scheduler
    /// last told (at most a quarter of a second ago).
    pub fn schedule(&self) -> Arc<ScheduleSeen> {
        self.lock().schedule.clone()
    }
}

/// A stream following one game move by move (`Live::follow`); dropping it stops that.
#[derive(Debug)]
pub struct Following {
    live: Live,
    match_id: String,
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut state = self.live.lock();
        if let Some(count) = state.followed.get_mut(&self.match_id) {
            *count -= 1;
            if *count == 0 {
                state.followed.remove(&self.match_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Side;
    use crate::server::events::WaitingPair;

    fn game(id: &str) -> LiveGame {
        LiveGame {
            spec: Arc::new(MatchSpec {
                match_id: id.to_string(),
                tournament: "t".into(),
                game: GameId::Hex,
                players: ["a".into(), "b".into()],
                rules: json!({}).into(),
                clock: crate::protocol::ClockSpec {
                    initial_ms: 1000,
                    increment_ms: 0,
                    move_limit_ms: None,
                },
            }),
            moves: SharedMoveLog::default(),
            clocks: [1000, 1000],
            result: None,
            reason: None,
            record: None,
        }
    }

    /// What a referee does for a move: append it to the game's log, then tell its events.
    fn play(live: &Live, log: &SharedMoveLog, id: &str, text: &str, position: impl Fn() -> String) {
        log.push(text, Side::First, 1, 0);
        live.take(&ServerEvent::MovePlayed(
            crate::server::events::MovePlayed::new(id, log.len(), text, 1, [1, 1], &position),
        ));
    }

    /// Starts game `id` and returns its move log (the referee's).
    fn start(live: &Live, id: &str) -> SharedMoveLog {
        let g = game(id);
        let log = g.moves.clone();
        live.take(&ServerEvent::GameStarted(
            crate::server::events::GameStarted {
                spec: g.spec,
                moves: g.moves,
                clocks: g.clocks,
            },
        ));
        log
    }

    /// Game `id`'s end as the scheduler tells it.
    fn finished(id: &str, reason: crate::game::EndReason) -> ServerEvent<'static> {
        let line = crate::game_line::GameLine {
            match_id: id.into(),
            tournament: "t".into(),
            game: GameId::Hex,
            first: "a".into(),
            second: "b".into(),
            result: crate::game_line::LineResult::First,
            reason,
            moves: Vec::new(),
            think_ms: Vec::new(),
            lag_ms: Vec::new(),
            rules: json!({}),
            clock: crate::protocol::ClockSpec::default(),
            started: String::new(),
            finished: String::new(),
            record: "r.txt".into(),
        };
        ServerEvent::GameFinished(Arc::new(crate::server::events::GameFinished {
            line: Arc::new(line),
            progress: Default::default(),
        }))
    }

    #[test]
    fn a_game_is_followed_from_start_to_end() {
        let live = Live::default();
        let server = crate::server::Events::new([live.subscriber()]);
        let pair = WaitingPair {
            tournament: "t".into(),
            game: GameId::Hex,
            players: ["a".into(), "b".into()],
        };
        server.publish(&ServerEvent::Schedule(Arc::new(ScheduleSeen {
            waiting: vec![pair.clone()],
            tournaments: Vec::new(),
        })));
        assert_eq!(live.schedule().waiting, [pair]);
        let mut events = live.subscribe_league();
        let log = start(&live, "m");
        play(&live, &log, "m", "F6", || "pos".into());
        assert_eq!(live.games()[0]["status"], "playing");
        assert_eq!(live.games()[0]["ply"], 1);
        server.publish(&finished("m", crate::game::EndReason::Resign));
        server.publish(&finished("never-started", crate::game::EndReason::Forfeit));
        let kinds: Vec<&str> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["start", "move", "end"]);
        let Some(HeldGame::InMemory(g)) = live.game("m") else {
            panic!("a game just finished is held");
        };
        assert_eq!(g.moves.read().texts_from(0), ["F6"]);
        assert_eq!(g.record.as_deref(), Some("r.txt"));
        assert_eq!(live.games()[0]["status"], "finished");
        assert!(live.game("never-started").is_none());
    }

    #[test]
    fn the_view_reads_the_referees_log_rather_than_a_copy() {
        let live = Live::default();
        let log = start(&live, "m");
        // Moves the view has not been told of yet are there too: it holds the same log.
        log.push("F6", Side::First, 7, 0);
        let Some(HeldGame::InMemory(g)) = live.game("m") else {
            panic!("a running game is held");
        };
        assert_eq!(
            g.moves.read().texts_and_think().collect::<Vec<_>>(),
            [("F6", 7)]
        );
        assert_eq!(
            g.summary()["ply"],
            1,
            "the game's own summary reads its log"
        );
    }

    #[test]
    fn moves_are_published_once_a_batch_unless_someone_follows_the_game() {
        let live = Live::default();
        let m = start(&live, "m");
        let n = start(&live, "n");
        let mut events = live.subscribe_league();
        let made = std::cell::Cell::new(0);
        let position = |ply: usize| {
            made.set(made.get() + 1);
            format!("pos{ply}")
        };
        let plies = |events: &mut mpsc::Receiver<Arc<LiveEvent>>| -> Vec<String> {
            std::iter::from_fn(|| events.try_recv().ok())
                .map(|e| e.data.clone())
                .collect()
        };
        for ply in 1..=3 {
            play(&live, &m, "m", "F6", || position(ply));
        }
        assert_eq!(
            made.get(),
            1,
            "no position is made for a move not published"
        );
        let first = plies(&mut events);
        assert_eq!(first.len(), 1);
        assert!(
            first[0].contains(r#""ply":1"#) && first[0].contains("pos1"),
            "{first:?}"
        );
        live.next_batch();
        play(&live, &m, "m", "F6", || position(4));
        play(&live, &m, "m", "F6", || position(5));
        assert_eq!(
            plies(&mut events).len(),
            1,
            "the first move of the next batch"
        );
        {
            let _following = live.follow("m");
            play(&live, &m, "m", "F6", || position(6));
            play(&live, &m, "m", "F6", || position(7));
            play(&live, &n, "n", "A1", || position(1));
            play(&live, &n, "n", "A2", || position(2));
            let seen = plies(&mut events);
            assert_eq!(seen.len(), 3, "every move of m, the first of n: {seen:?}");
        }
        play(&live, &m, "m", "F6", || position(8));
        assert!(plies(&mut events).is_empty(), "nobody follows m any more");
        assert_eq!(live.games()[0]["ply"], 8, "the summary counts every move");
    }

    #[test]
    fn with_many_games_running_each_takes_its_turn_in_the_league_batches() {
        let live = Live::default();
        let count = usize::try_from(LEAGUE_BATCH_GAMES * 3).unwrap_or(300);
        let logs: Vec<(String, SharedMoveLog)> = (0..count)
            .map(|i| {
                let id = format!("g{i}");
                let log = start(&live, &id);
                (id, log)
            })
            .collect();
        let mut events = live.subscribe_league();
        let mut published: Vec<u32> = vec![0; count];
        for _ in 0..6 {
            // 300 running games: each has one batch in three.
            live.next_batch();
            let mut in_batch = 0;
            for (id, log) in &logs {
                play(&live, log, id, "A1", || "pos".into());
                play(&live, log, id, "A2", || "pos".into());
            }
            for event in std::iter::from_fn(|| events.try_recv().ok()) {
                let at = event
                    .data
                    .split('"')
                    .find_map(|s| s.strip_prefix('g'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .expect("a move event names its game");
                published[at] += 1;
                in_batch += 1;
            }
            assert_eq!(
                in_batch, LEAGUE_BATCH_GAMES,
                "a batch holds its share of the games"
            );
        }
        assert!(
            published.iter().all(|&n| n == 2),
            "every game twice in six batches: {published:?}"
        );
        // Once most have finished, the rest are in every batch again.
        for (id, _) in logs.iter().skip(50) {
            live.game_ended(id, LineResult::Draw, EndReason::MoveLimit, None);
        }
        live.next_batch();
        for (id, log) in logs.iter().take(50) {
            play(&live, log, id, "C1", || "pos".into());
        }
        let moved = std::iter::from_fn(|| events.try_recv().ok())
            .filter(|e| e.kind == "move")
            .count();
        assert_eq!(moved, 50, "50 running games: each in every batch");
        // A followed game gets every move.
        live.next_batch();
        let _following = live.follow("g0");
        let (id, log) = &logs[0];
        for _ in 0..3 {
            play(&live, log, id, "B1", || "pos".into());
        }
        assert_eq!(std::iter::from_fn(|| events.try_recv().ok()).count(), 3);
    }

    #[test]
    fn only_the_latest_finished_games_keep_their_moves_in_memory() {
        let live = Live::keeping_finished(2);
        for id in ["g1", "g2", "g3"] {
            let log = start(&live, id);
            play(&live, &log, id, "F6", String::new);
            play(&live, &log, id, "E7", String::new);
        }
        live.add_finished(LiveGame {
            result: Some(LineResult::First),
            ..game("old")
        });
        let resign = EndReason::Resign;
        live.game_ended("g1", LineResult::First, resign, Some("g1.txt"));
        live.game_ended("g1", LineResult::First, resign, Some("g1.txt"));
        live.game_ended("g2", LineResult::Second, resign, Some("g2.txt"));
        // Held: g1 and g2; "old" (finished first) was dropped when g2 finished.
        assert_eq!(live.game("old"), Some(HeldGame::Finished));
        assert!(matches!(live.game("g1"), Some(HeldGame::InMemory(g)) if g.moves.len() == 2));
        let g1_before = live.games().into_iter().find(|g| g["match"] == "g1");
        live.game_ended("g3", LineResult::Draw, EndReason::MoveLimit, Some("g3.txt"));
        assert_eq!(live.game("g1"), Some(HeldGame::Finished));
        assert!(matches!(live.game("g3"), Some(HeldGame::InMemory(_))));
        let g1 = live
            .games()
            .into_iter()
            .find(|g| g["match"] == "g1")
            .unwrap();
        assert_eq!(
            Some(&g1),
            g1_before.as_ref(),
            "the same summary, moves dropped"
        );
        assert_eq!(g1["ply"], 2, "the summary keeps the ply count");
        assert_eq!(g1["status"], "finished");
        assert_eq!(g1["reason"], "resign");
        assert_eq!(live.game("nope"), None);
        assert_eq!(live.games().len(), 4);
        let names = live.lock().names.len();
        assert!(
            std::mem::size_of::<Slot>() <= 64,
            "a finished game costs the table at most 64 bytes besides its id"
        );
        assert_eq!(names, 3, "old's and g1's t, a and b, once each");
    }

    #[test]
    fn a_game_stream_a_whole_queue_behind_is_dropped_the_league_feed_skips_and_publishing_never_waits(
    ) {
        let live = Live::default();
        let log = start(&live, "m");
        let _following = live.follow("m");
        let mut game = live.subscribe_game("m");
        let mut other_game = live.subscribe_game("n");
        let mut league = live.subscribe_league();
        for ply in 0..EVENT_QUEUE + 10 {
            play(&live, &log, "m", "F6", || format!("{ply}"));
        }
        let count = |r: &mut mpsc::Receiver<Arc<LiveEvent>>| {
            std::iter::from_fn(|| r.try_recv().ok()).count()
        };
        assert_eq!(count(&mut game), EVENT_QUEUE);
        assert_eq!(
            game.try_recv().unwrap_err(),
            mpsc::error::TryRecvError::Disconnected
        );
        assert_eq!(
            count(&mut other_game),
            0,
            "another game's stream gets none of them"
        );
        assert_eq!(count(&mut league), EVENT_QUEUE);
        play(&live, &log, "m", "F6", || "after".into());
        assert!(league.try_recv().is_ok(), "the league feed is still there");
    }

    #[test]
    fn the_standings_text_follows_every_change_of_the_board() {
        use crate::league::TournamentStandings;
        let live = Live::default();
        assert_eq!(live.standings(), None);
        let standings = |finished| {
            Arc::new(TournamentStandings::new(
                "t",
                GameId::Hex,
                finished,
                Vec::new(),
            ))
        };
        let board = crate::server::events::StandingsBoard::new(vec![standings(false)]);
        live.take(&ServerEvent::StandingsChanged {
            tournament: "t".into(),
            standings: board.clone(),
        });
        let before = live.standings().expect("standings");
        assert!(before.contains("\"finished\": false"), "{before}");
        // Asked again with nothing changed: the same text, not made again.
        assert!(Arc::ptr_eq(&before, &live.standings().expect("standings")));
        board.set(0, standings(true));
        live.take(&ServerEvent::StandingsChanged {
            tournament: "t".into(),
            standings: board,
        });
        let after = live.standings().expect("standings");
        assert!(after.contains("\"finished\": true"), "{after}");
    }
}

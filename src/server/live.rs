//! What the web view reads of a running server: a read-only table of the games that have
//! started (moves, clocks, results) and the games still waiting, kept up to date by the
//! referees and the scheduler, and a bounded broadcast of `start`/`move`/`end`/`standings`
//! events. Publishing never waits: a receiver that falls behind misses events (the web view
//! then drops that client), so a slow browser never slows a referee.
//!
//! A `move` event (with its position text, which costs the referee to make) is published for
//! every move of a game someone follows (`follow`), and otherwise for the first move of each
//! game after each league batch (`next_batch`): the league stream sends each game's position
//! at most once a batch anyway, so a thousand fast games cost the referees a thousand events a
//! second, not one per move.
//!
//! Off unless the web view is on (`Live::enable`): then every hook returns at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::game::GameId;
use crate::protocol::ClockSpec;

/// Events each receiver may have queued before it counts as too slow and is dropped.
pub const EVENT_QUEUE: usize = 1024;

/// One event for the web view: its SSE name and its JSON data, serialized once for every
/// receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    pub kind: &'static str,
    pub data: String,
}

/// The least time between two rebuilds of the waiting-games table (it is as large as the
/// schedule, and the scheduler wakes on every connection and finished game).
const SCHEDULE_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A game's move texts in one string (a line each): a thousand games in progress would
/// otherwise hold a heap block per move, beside the referees' own move logs. Serialised as a
/// JSON array of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveTexts {
    lines: String,
    count: usize,
}

impl MoveTexts {
    /// Appends a move text (a line break in it would split it: move texts have none).
    pub fn push(&mut self, text: &str) {
        self.lines.push_str(text);
        self.lines.push('\n');
        self.count += 1;
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The texts in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.lines.lines()
    }
}

impl<S: AsRef<str>> FromIterator<S> for MoveTexts {
    fn from_iter<I: IntoIterator<Item = S>>(texts: I) -> MoveTexts {
        let mut moves = MoveTexts::default();
        for text in texts {
            moves.push(text.as_ref());
        }
        moves
    }
}

impl Serialize for MoveTexts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// A game as the web view knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveGame {
    pub match_id: String,
    pub tournament: String,
    pub game: GameId,
    pub players: [String; 2],
    pub rules: Value,
    pub clock: ClockSpec,
    pub moves: MoveTexts,
    pub think_ms: Vec<u64>,
    /// Both clocks after the last move (or at the start).
    pub clocks: [u64; 2],
    /// `first`, `second` or `draw` once finished.
    pub result: Option<String>,
    pub reason: Option<String>,
    pub record: Option<String>,
}

impl LiveGame {
    /// The `/api/games` entry.
    pub fn summary(&self) -> Value {
        json!({
            "match": self.match_id,
            "tournament": self.tournament,
            "game": self.game.as_str(),
            "first": self.players[0],
            "second": self.players[1],
            "status": if self.result.is_some() { "finished" } else { "playing" },
            "ply": self.moves.len(),
            "result": self.result,
            "reason": self.reason,
        })
    }
}

/// Two bots with at least one game of a tournament not started yet, as the scheduler last saw
/// them (one entry per pair and colours, however many games they have left: a thousand pairs
/// of fifty games each are a thousand entries, not fifty thousand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingPair {
    pub tournament: String,
    pub game: GameId,
    pub players: [String; 2],
}

/// A tournament's progress as the scheduler last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TournamentProgress {
    pub name: String,
    pub game: GameId,
    pub swiss: bool,
    pub finished: bool,
    /// Games running now.
    pub running: u32,
    pub concurrency: u32,
}

/// Finished games whose moves the live view keeps in memory, the latest ones; older finished
/// games keep their summary only and are read back from games.jsonl when asked for (a league
/// of many thousand games would otherwise hold every move of every game).
pub const FINISHED_GAMES_KEPT: usize = 256;

/// A started game and the league batch in which its last `move` event was published.
#[derive(Debug)]
struct Slot {
    game: LiveGame,
    published_in_batch: Option<u64>,
    /// Set when the game's moves were dropped from memory: its ply count.
    moves_dropped: Option<usize>,
}

impl Slot {
    fn new(game: LiveGame) -> Slot {
        Slot {
            game,
            published_in_batch: None,
            moves_dropped: None,
        }
    }

    fn summary(&self) -> Value {
        let mut summary = self.game.summary();
        if let Some(plies) = self.moves_dropped {
            summary["ply"] = json!(plies);
        }
        summary
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
    /// How many streams follow each game (by match id) move by move.
    followed: HashMap<String, usize>,
    /// Finished games (index in `games`) whose moves are still held, oldest first.
    finished_held: std::collections::VecDeque<usize>,
    /// How many of those to hold.
    finished_kept: usize,
    index: HashMap<String, usize>,
    waiting: Vec<WaitingPair>,
    tournaments: Vec<TournamentProgress>,
    /// Every tournament's standings as of the last finished game (pointers: the JSON text is
    /// made only when someone asks, not after every game).
    standings: Option<StandingsSnapshot>,
    /// The JSON text of `standings`, once made.
    standings_text: Option<Arc<String>>,
}

/// Every tournament's standings at one moment, shared.
pub type StandingsSnapshot = Arc<Vec<Arc<crate::league::TournamentStandings>>>;

#[derive(Debug)]
struct Shared {
    enabled: AtomicBool,
    /// The league stream's current batch (see `next_batch`).
    batch: AtomicU64,
    /// When the waiting-games table was last rebuilt.
    schedule_seen_at: Mutex<Option<std::time::Instant>>,
    state: Mutex<LiveState>,
    events: broadcast::Sender<Arc<LiveEvent>>,
}

/// The handle referees, the scheduler and the web view share (cheap to clone).
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
    /// Game `at` finished: hold its moves, dropping those of the oldest finished game held
    /// once more than `finished_kept` are.
    fn hold_finished(&mut self, at: usize) {
        let held = self
            .games
            .get(at)
            .is_some_and(|s| s.moves_dropped.is_none());
        if !held || self.finished_held.contains(&at) {
            return;
        }
        self.finished_held.push_back(at);
        while self.finished_held.len() > self.finished_kept {
            let Some(oldest) = self.finished_held.pop_front() else {
                break;
            };
            if let Some(slot) = self.games.get_mut(oldest) {
                slot.moves_dropped = Some(slot.game.moves.len());
                slot.game.moves = MoveTexts::default();
                slot.game.think_ms = Vec::new();
            }
        }
    }
}

impl Live {
    /// A live view holding the moves of the latest `kept` finished games.
    pub fn keeping_finished(kept: usize) -> Live {
        let (events, _) = broadcast::channel(EVENT_QUEUE);
        Live {
            shared: Arc::new(Shared {
                enabled: AtomicBool::new(false),
                batch: AtomicU64::new(0),
                schedule_seen_at: Mutex::new(None),
                state: Mutex::new(LiveState {
                    finished_kept: kept,
                    ..LiveState::default()
                }),
                events,
            }),
        }
    }

    /// Switches the hooks on (the web view is running).
    pub fn enable(&self) {
        self.shared.enabled.store(true, Ordering::Relaxed);
    }

    pub fn is_enabled(&self) -> bool {
        self.shared.enabled.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, LiveState> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, kind: &'static str, data: Value) {
        // No receiver is not an error: nobody is watching.
        if self.shared.events.receiver_count() == 0 {
            return;
        }
        self.publish_text(kind, data.to_string());
    }

    fn publish_text(&self, kind: &'static str, data: String) {
        let _ = self.shared.events.send(Arc::new(LiveEvent { kind, data }));
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        self.shared.events.subscribe()
    }

    /// A game finished before this run (from games.jsonl), so that the web view lists it.
    pub fn add_finished(&self, game: LiveGame) {
        let mut state = self.lock();
        if state.index.contains_key(&game.match_id) {
            return;
        }
        let at = state.games.len();
        state.index.insert(game.match_id.clone(), at);
        state.games.push(Slot::new(game));
        state.hold_finished(at);
    }

    /// A referee started (or resumed) a game with `game.moves` already played.
    pub fn game_started(&self, game: LiveGame) {
        if !self.is_enabled() {
            return;
        }
        let summary = game.summary();
        {
            let mut state = self.lock();
            let slot = Slot::new(game);
            match state.index.get(&slot.game.match_id).copied() {
                Some(at) => {
                    if let Some(old) = state.games.get_mut(at) {
                        *old = slot;
                    }
                }
                None => {
                    let at = state.games.len();
                    state.index.insert(slot.game.match_id.clone(), at);
                    state.games.push(slot);
                }
            }
        }
        self.publish("start", summary);
    }

    /// A referee accepted `text` (`think_ms` charged); `clocks` are both sides' time left, and
    /// `position` makes the position text after the move, called only if a `move` event is
    /// published (see the module's note).
    pub fn move_played(
        &self,
        match_id: &str,
        text: &str,
        think_ms: u64,
        position: impl FnOnce() -> String,
        clocks: [u64; 2],
    ) {
        if !self.is_enabled() {
            return;
        }
        let batch = self.shared.batch.load(Ordering::Relaxed);
        let ply = {
            let mut state = self.lock();
            let followed = !state.followed.is_empty() && state.followed.contains_key(match_id);
            let Some(at) = state.index.get(match_id).copied() else {
                return;
            };
            let Some(slot) = state.games.get_mut(at) else {
                return;
            };
            slot.game.moves.push(text);
            slot.game.think_ms.push(think_ms);
            slot.game.clocks = clocks;
            if !followed && slot.published_in_batch == Some(batch) {
                return;
            }
            slot.published_in_batch = Some(batch);
            slot.game.moves.len()
        };
        #[derive(Serialize)]
        struct Clocks {
            first_ms: u64,
            second_ms: u64,
        }
        #[derive(Serialize)]
        struct MoveEvent<'a> {
            #[serde(rename = "match")]
            match_id: &'a str,
            ply: usize,
            #[serde(rename = "move")]
            text: &'a str,
            position: &'a str,
            clocks: Clocks,
        }
        let position = position();
        let event = MoveEvent {
            match_id,
            ply,
            text,
            position: &position,
            clocks: Clocks {
                first_ms: clocks[0],
                second_ms: clocks[1],
            },
        };
        match serde_json::to_string(&event) {
            Ok(data) => self.publish_text("move", data),
            Err(e) => tracing::error!(error = %e, "cannot serialise a move event"),
        }
    }

    /// The league stream starts a new batch: each game's next move is published again.
    pub fn next_batch(&self) {
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
    pub fn game_ended(&self, match_id: &str, result: &str, reason: &str, record: Option<&str>) {
        if !self.is_enabled() {
            return;
        }
        {
            let mut state = self.lock();
            let Some(at) = state.index.get(match_id).copied() else {
                // A forfeit: the game never started, so the web view does not list it.
                return;
            };
            if let Some(Slot { game, .. }) = state.games.get_mut(at) {
                game.result = Some(result.to_string());
                game.reason = Some(reason.to_string());
                game.record = record.map(str::to_string);
                state.hold_finished(at);
            }
        }
        self.publish(
            "end",
            json!({"match": match_id, "result": result, "reason": reason, "record": record}),
        );
    }

    /// The standings changed (`standings`: every tournament's, as `standings.json` has them).
    pub fn standings_changed(&self, tournament: &str, standings: StandingsSnapshot) {
        if !self.is_enabled() {
            return;
        }
        {
            let mut state = self.lock();
            state.standings = Some(standings);
            state.standings_text = None;
        }
        self.publish("standings", json!({ "tournament": tournament }));
    }

    /// Whether the scheduler should tell its view again (the web view runs and the last time
    /// was long enough ago).
    pub fn schedule_due(&self) -> bool {
        if !self.is_enabled() {
            return false;
        }
        let mut at = self
            .shared
            .schedule_seen_at
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        match *at {
            Some(last) if now.duration_since(last) < SCHEDULE_EVERY => false,
            _ => {
                *at = Some(now);
                true
            }
        }
    }

    /// The scheduler's view after it started what it could: the pairs with games still waiting
    /// and each tournament's progress.
    pub fn schedule_seen(&self, waiting: Vec<WaitingPair>, tournaments: Vec<TournamentProgress>) {
        if !self.is_enabled() {
            return;
        }
        let mut state = self.lock();
        state.waiting = waiting;
        state.tournaments = tournaments;
    }

    /// Every game that has started, in start order.
    pub fn games(&self) -> Vec<Value> {
        self.lock().games.iter().map(Slot::summary).collect()
    }

    /// One game, if it has started.
    pub fn game(&self, match_id: &str) -> Option<HeldGame> {
        let state = self.lock();
        let at = *state.index.get(match_id)?;
        state.games.get(at).map(|s| match s.moves_dropped {
            Some(_) => HeldGame::Finished,
            None => HeldGame::InMemory(Box::new(s.game.clone())),
        })
    }

    /// The last standings as `standings.json` text, if any game has finished this run (made
    /// on the first request after a change, outside the lock).
    pub fn standings(&self) -> Option<Arc<String>> {
        let snapshot = {
            let state = self.lock();
            if let Some(text) = &state.standings_text {
                return Some(text.clone());
            }
            state.standings.clone()?
        };
        let text = Arc::new(crate::league::report::standings_json(&snapshot));
        let mut state = self.lock();
        if state
            .standings
            .as_ref()
            .is_some_and(|now| Arc::ptr_eq(now, &snapshot))
        {
            state.standings_text = Some(text.clone());
        }
        Some(text)
    }

    /// The pairs with games waiting to start and each tournament's progress, as the scheduler
    /// last saw them (at most `SCHEDULE_EVERY` ago).
    pub fn schedule(&self) -> (Vec<WaitingPair>, Vec<TournamentProgress>) {
        let state = self.lock();
        (state.waiting.clone(), state.tournaments.clone())
    }

    /// The games `name` is playing now.
    pub fn playing(&self, name: &str) -> Vec<String> {
        self.lock()
            .games
            .iter()
            .map(|s| &s.game)
            .filter(|g| g.result.is_none() && g.players.iter().any(|p| p == name))
            .map(|g| g.match_id.clone())
            .collect()
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

    fn game(id: &str) -> LiveGame {
        LiveGame {
            match_id: id.to_string(),
            tournament: "t".into(),
            game: GameId::Hex,
            players: ["a".into(), "b".into()],
            rules: json!({}),
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: MoveTexts::default(),
            think_ms: Vec::new(),
            clocks: [1000, 1000],
            result: None,
            reason: None,
            record: None,
        }
    }

    #[test]
    fn move_texts_keep_their_order_and_serialise_as_an_array() {
        let mut moves: MoveTexts = ["F6", "E7"].into_iter().collect();
        moves.push("A11");
        assert_eq!(moves.len(), 3);
        assert_eq!(moves.iter().collect::<Vec<_>>(), ["F6", "E7", "A11"]);
        assert_eq!(
            serde_json::to_value(&moves).unwrap(),
            json!(["F6", "E7", "A11"])
        );
        assert!(MoveTexts::default().is_empty());
        assert_eq!(
            serde_json::to_value(MoveTexts::default()).unwrap(),
            json!([])
        );
    }

    #[test]
    fn hooks_do_nothing_until_the_web_view_runs() {
        let live = Live::default();
        let mut events = live.subscribe();
        live.game_started(game("m"));
        live.move_played("m", "F6", 5, || "pos".into(), [995, 1000]);
        assert!(live.games().is_empty());
        assert!(events.try_recv().is_err());
    }

    #[test]
    fn a_game_is_followed_from_start_to_end() {
        let live = Live::default();
        live.enable();
        let pair = WaitingPair {
            tournament: "t".into(),
            game: GameId::Hex,
            players: ["a".into(), "b".into()],
        };
        live.schedule_seen(vec![pair.clone()], Vec::new());
        assert_eq!(live.schedule().0, [pair]);
        let mut events = live.subscribe();
        live.game_started(game("m"));
        live.move_played("m", "F6", 5, || "pos".into(), [995, 1000]);
        assert_eq!(live.playing("a"), vec!["m".to_string()]);
        live.game_ended("m", "first", "resign", Some("r.txt"));
        live.game_ended("never-started", "first", "forfeit", None);
        let kinds: Vec<&str> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["start", "move", "end"]);
        let Some(HeldGame::InMemory(g)) = live.game("m") else {
            panic!("a game just finished is held");
        };
        assert_eq!(g.moves.iter().collect::<Vec<_>>(), ["F6"]);
        assert_eq!(g.record.as_deref(), Some("r.txt"));
        assert_eq!(live.games()[0]["status"], "finished");
        assert!(live.game("never-started").is_none());
        assert!(live.playing("a").is_empty());
    }

    #[test]
    fn moves_are_published_once_a_batch_unless_someone_follows_the_game() {
        let live = Live::default();
        live.enable();
        live.game_started(game("m"));
        live.game_started(game("n"));
        let mut events = live.subscribe();
        let made = std::cell::Cell::new(0);
        let position = |ply: usize| {
            made.set(made.get() + 1);
            format!("pos{ply}")
        };
        let plies = |events: &mut broadcast::Receiver<Arc<LiveEvent>>| -> Vec<String> {
            std::iter::from_fn(|| events.try_recv().ok())
                .map(|e| e.data.clone())
                .collect()
        };
        for ply in 1..=3 {
            live.move_played("m", "F6", 1, || position(ply), [1, 1]);
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
        live.move_played("m", "F6", 1, || position(4), [1, 1]);
        live.move_played("m", "F6", 1, || position(5), [1, 1]);
        assert_eq!(
            plies(&mut events).len(),
            1,
            "the first move of the next batch"
        );
        {
            let _following = live.follow("m");
            live.move_played("m", "F6", 1, || position(6), [1, 1]);
            live.move_played("m", "F6", 1, || position(7), [1, 1]);
            live.move_played("n", "A1", 1, || position(1), [1, 1]);
            live.move_played("n", "A2", 1, || position(2), [1, 1]);
            let seen = plies(&mut events);
            assert_eq!(seen.len(), 3, "every move of m, the first of n: {seen:?}");
        }
        live.move_played("m", "F6", 1, || position(8), [1, 1]);
        assert!(plies(&mut events).is_empty(), "nobody follows m any more");
        let Some(HeldGame::InMemory(m)) = live.game("m") else {
            panic!("a game in progress is held");
        };
        assert_eq!(m.moves.len(), 8, "every move is kept");
    }

    #[test]
    fn only_the_latest_finished_games_keep_their_moves_in_memory() {
        let live = Live::keeping_finished(2);
        live.enable();
        for id in ["g1", "g2", "g3"] {
            live.game_started(game(id));
            live.move_played(id, "F6", 1, String::new, [1, 1]);
            live.move_played(id, "E7", 1, String::new, [1, 1]);
        }
        live.add_finished(LiveGame {
            result: Some("first".into()),
            ..game("old")
        });
        live.game_ended("g1", "first", "resign", Some("g1.txt"));
        live.game_ended("g1", "first", "resign", Some("g1.txt"));
        live.game_ended("g2", "second", "resign", Some("g2.txt"));
        // Held: g1 and g2; "old" (finished first) was dropped when g2 finished.
        assert_eq!(live.game("old"), Some(HeldGame::Finished));
        assert!(matches!(live.game("g1"), Some(HeldGame::InMemory(g)) if g.moves.len() == 2));
        live.game_ended("g3", "draw", "draw", Some("g3.txt"));
        assert_eq!(live.game("g1"), Some(HeldGame::Finished));
        assert!(matches!(live.game("g3"), Some(HeldGame::InMemory(_))));
        let g1 = live
            .games()
            .into_iter()
            .find(|g| g["match"] == "g1")
            .unwrap();
        assert_eq!(g1["ply"], 2, "the summary keeps the ply count");
        assert_eq!(g1["status"], "finished");
        assert_eq!(live.game("nope"), None);
    }

    #[test]
    fn a_receiver_that_falls_a_whole_queue_behind_is_told_so_and_publishing_never_waits() {
        let live = Live::default();
        live.enable();
        live.game_started(game("m"));
        let _following = live.follow("m");
        let mut slow = live.subscribe();
        for ply in 0..EVENT_QUEUE + 10 {
            live.move_played("m", "F6", 1, || format!("{ply}"), [1, 1]);
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
    }
}

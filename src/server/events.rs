//! `ServerEvent`: the one way news leaves a running server. The referees, the scheduler and the
//! output writers publish typed events; whoever started the server subscribes (the console in
//! `main.rs`, the web view's read model, `arena match`'s tally) and decides what to make of
//! them. The library formats no terminal text and shapes no API JSON here.
//!
//! Subscribers are fixed when the server starts ([`Events::new`]) and are plain functions
//! called on the publisher's thread: each must return at once (update a table under a short
//! lock, or queue the event). Events nobody follows cost nothing: with no subscriber, a
//! referee or the scheduler checks one flag and makes no event at all. Per-move news
//! ([`ServerEvent::MovePlayed`]) and the waiting-games table ([`ServerEvent::Schedule`]) reach
//! only subscribers that asked for them ([`Subscriber::live`]); a move event lends its position
//! text as a function, so the position is made only for the moves a subscriber passes on.

use std::net::SocketAddr;
use std::sync::Arc;

pub use super::match_spec::MatchSpec;
pub use super::move_log::{MoveLog, SharedMoveLog};
pub use super::output_health::{OutputFault, OutputKind};
use super::report::ResumeReport;
use crate::game::GameId;
use crate::game_line::GameLine;
use crate::league::TournamentStandings;

/// What happens in a running server, as it happens.
#[derive(Debug, Clone)]
pub enum ServerEvent<'a> {
    /// The league was read back from the journal of an earlier run.
    Resumed(ResumeReport),
    /// The server holds its output folder and accepts bots on `address` (and serves the web
    /// view on `web`). Nothing said before this means the server is running.
    Ready {
        address: SocketAddr,
        web: Option<SocketAddr>,
    },
    /// A referee started (or resumed) a game.
    GameStarted(GameStarted),
    /// A referee accepted a move (only to [`Subscriber::live`] subscribers).
    MovePlayed(MovePlayed<'a>),
    /// A game finished and its output (journal, record, games.jsonl line) is written or queued.
    /// A forfeited game finishes without having started.
    GameFinished(Arc<GameFinished>),
    /// A Swiss round was paired.
    RoundPaired {
        tournament: String,
        round: u32,
        rounds: u32,
    },
    /// A finished game (or a suspension) changed `tournament`'s standings; `standings` holds
    /// every tournament's, as they are now (a reader takes a snapshot when it needs one).
    StandingsChanged {
        tournament: String,
        standings: StandingsBoard,
    },
    /// A tournament finished: its final standings.
    TournamentFinished(Arc<TournamentStandings>),
    /// The games waiting to start and each tournament's progress, as the scheduler sees them
    /// now (only to [`Subscriber::live`] subscribers, at most every `SCHEDULE_EVERY`).
    Schedule(Arc<ScheduleSeen>),
    /// A bot logged in; `games` are those of its `hello` that this server plays, in order.
    BotConnected { bot: String, games: Vec<GameId> },
    /// A logged-in bot's connection closed (not when a newer login of the bot replaced it:
    /// the bot is still there).
    BotDisconnected { bot: String },
    /// A bot was suspended after losses in a row by a fault (`why` says which).
    BotSuspended { bot: String, why: String },
    /// An output could not be written: the writes are kept and tried again (told once per run
    /// of failures).
    OutputBehind(OutputFault),
    /// An output that had fallen behind is written again.
    OutputCaughtUp(OutputKind),
    /// The server stopped with outputs still waiting: the next start writes them from the
    /// journal (`what`), or could not keep them (the journal itself).
    OutputLeftBehind(OutputFault),
}

/// A game a referee started or resumed: its spec and its move log (the referee's own, shared,
/// not copied: the moves already played on a resume are in it), and both clocks now.
#[derive(Debug, Clone)]
pub struct GameStarted {
    pub spec: Arc<MatchSpec>,
    pub moves: SharedMoveLog,
    pub clocks: [u64; 2],
}

/// A move a referee accepted (already in its game's move log).
#[derive(Clone, Copy)]
pub struct MovePlayed<'a> {
    pub match_id: &'a str,
    /// The move's number: 1 for the game's first move.
    pub ply: usize,
    pub text: &'a str,
    pub think_ms: u64,
    /// Both sides' time left after the move.
    pub clocks: [u64; 2],
    position: &'a (dyn Fn() -> String + 'a),
}

impl<'a> MovePlayed<'a> {
    /// `position` makes the position text after the move when a subscriber asks for it.
    pub fn new(
        match_id: &'a str,
        ply: usize,
        text: &'a str,
        think_ms: u64,
        clocks: [u64; 2],
        position: &'a (dyn Fn() -> String + 'a),
    ) -> MovePlayed<'a> {
        MovePlayed {
            match_id,
            ply,
            text,
            think_ms,
            clocks,
            position,
        }
    }

    /// The position after the move, as the game writes it (made on each call: costly).
    pub fn position(&self) -> String {
        (self.position)()
    }
}

impl std::fmt::Debug for MovePlayed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MovePlayed")
            .field("match_id", &self.match_id)
            .field("ply", &self.ply)
            .field("text", &self.text)
            .field("think_ms", &self.think_ms)
            .field("clocks", &self.clocks)
            .finish_non_exhaustive()
    }
}

/// A finished game: its games.jsonl line, and how far its tournament and the league are.
#[derive(Debug, Clone, PartialEq)]
pub struct GameFinished {
    /// Shared with the output queue (no copy of the game's moves for the event).
    pub line: Arc<GameLine>,
    pub progress: LeagueProgress,
}

/// Games finished and planned, of one tournament and of the whole league (a Swiss
/// tournament's later rounds are counted at their size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeagueProgress {
    pub tournament_done: usize,
    pub tournament_planned: usize,
    pub league_done: usize,
    pub league_planned: usize,
}

/// Every tournament's standings at one moment, shared.
pub type StandingsSnapshot = Arc<Vec<Arc<TournamentStandings>>>;

/// Every tournament's latest standings, one slot each, shared by the scheduler and their
/// readers (the standings files, the web view). A finished game replaces its tournament's slot
/// and copies nothing else; a reader takes a snapshot of them all when it needs one. (With a
/// tournament per pair of bots, as the bench runs 10,000 matches, a copy of every slot at
/// every game's end cost the server more per move the more tournaments there were.)
#[derive(Debug, Clone)]
pub struct StandingsBoard(Arc<std::sync::Mutex<Board>>);

#[derive(Debug)]
struct Board {
    slots: Vec<Arc<TournamentStandings>>,
    /// Grows by one with each change.
    version: u64,
}

impl StandingsBoard {
    pub fn new(slots: Vec<Arc<TournamentStandings>>) -> StandingsBoard {
        StandingsBoard(Arc::new(std::sync::Mutex::new(Board { slots, version: 0 })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Board> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces tournament `index`'s standings (nothing if there is no such tournament).
    pub fn set(&self, index: usize, standings: Arc<TournamentStandings>) {
        let mut board = self.lock();
        if let Some(slot) = board.slots.get_mut(index) {
            *slot = standings;
            board.version += 1;
        }
    }

    /// How many changes the board has seen: a reader compares it with the version of what it
    /// last took to know whether anything changed since.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// Every tournament's standings now, with their version.
    pub fn snapshot(&self) -> (u64, StandingsSnapshot) {
        let board = self.lock();
        (board.version, Arc::new(board.slots.clone()))
    }
}

/// What the scheduler sees waiting (see [`ServerEvent::Schedule`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScheduleSeen {
    pub waiting: Vec<WaitingPair>,
    pub tournaments: Vec<TournamentProgress>,
}

/// Two bots with at least one game of a tournament not started yet, as the scheduler last saw
/// them (one entry per pair and colours, however many games they have left: a thousand pairs
/// of fifty games each are a thousand entries, not fifty thousand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingPair {
    pub tournament: Arc<str>,
    pub game: GameId,
    pub players: [Arc<str>; 2],
}

/// A tournament's progress as the scheduler last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TournamentProgress {
    pub name: Arc<str>,
    pub game: GameId,
    pub swiss: bool,
    pub finished: bool,
    /// Games running now.
    pub running: u32,
    pub concurrency: u32,
}

/// A function that takes events, called on the publisher's thread (it must return at once).
pub type EventSink = Arc<dyn Fn(&ServerEvent<'_>) + Send + Sync>;

/// One subscriber: its sink, and whether it takes the per-move and schedule news.
#[derive(Clone)]
pub struct Subscriber {
    sink: EventSink,
    live: bool,
}

impl Subscriber {
    /// Takes every event but the per-move and schedule news (a console, a tally).
    pub fn news(sink: EventSink) -> Subscriber {
        Subscriber { sink, live: false }
    }

    /// Takes every event, each move and the schedule too (a live view).
    pub fn live(sink: EventSink) -> Subscriber {
        Subscriber { sink, live: true }
    }
}

/// Where a running server publishes: its subscribers, fixed at its start (cheap to clone).
#[derive(Clone, Default)]
pub struct Events {
    subscribers: Arc<[Subscriber]>,
    live: bool,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("subscribers", &self.subscribers.len())
            .field("live", &self.live)
            .finish()
    }
}

impl Events {
    pub fn new(subscribers: impl IntoIterator<Item = Subscriber>) -> Events {
        let subscribers: Arc<[Subscriber]> = subscribers.into_iter().collect();
        let live = subscribers.iter().any(|s| s.live);
        Events { subscribers, live }
    }

    /// Whether anyone takes events at all (so that one is worth making).
    pub fn is_followed(&self) -> bool {
        !self.subscribers.is_empty()
    }

    /// Whether anyone takes the per-move and schedule news.
    pub fn is_followed_live(&self) -> bool {
        self.live
    }

    /// Tells `event` to every subscriber that takes its kind, in their order.
    pub fn publish(&self, event: &ServerEvent<'_>) {
        let live_only = matches!(event, ServerEvent::MovePlayed(_) | ServerEvent::Schedule(_));
        for subscriber in self.subscribers.iter() {
            if subscriber.live || !live_only {
                (subscriber.sink)(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn recorder() -> (EventSink, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let sink: EventSink = Arc::new(move |event: &ServerEvent<'_>| {
            let kind = match event {
                ServerEvent::MovePlayed(m) => format!("move {} {}", m.ply, m.position()),
                ServerEvent::OutputCaughtUp(_) => "caught up".to_string(),
                other => format!("{other:?}"),
            };
            into.lock().unwrap().push(kind);
        });
        (sink, seen)
    }

    #[test]
    fn moves_reach_only_live_subscribers_and_positions_are_made_only_when_asked() {
        let (news, news_seen) = recorder();
        let (live, live_seen) = recorder();
        let events = Events::new([Subscriber::news(news.clone())]);
        assert!(events.is_followed());
        assert!(!events.is_followed_live(), "nobody takes moves");
        let made = std::sync::atomic::AtomicUsize::new(0);
        let position = || {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            "pos".to_string()
        };
        let played = MovePlayed::new("m", 1, "F6", 5, [1, 2], &position);
        events.publish(&ServerEvent::MovePlayed(played));
        assert!(news_seen.lock().unwrap().is_empty());
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 0);

        let events = Events::new([Subscriber::news(news), Subscriber::live(live)]);
        assert!(events.is_followed_live());
        events.publish(&ServerEvent::MovePlayed(played));
        events.publish(&ServerEvent::OutputCaughtUp(OutputKind::Journal));
        assert_eq!(*live_seen.lock().unwrap(), ["move 1 pos", "caught up"]);
        assert_eq!(*news_seen.lock().unwrap(), ["caught up"]);
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn a_server_nobody_follows_has_nobody_to_tell() {
        let events = Events::default();
        assert!(!events.is_followed());
        assert!(!events.is_followed_live());
        // Publishing to nobody is allowed and does nothing.
        events.publish(&ServerEvent::OutputCaughtUp(OutputKind::Games));
    }

    #[test]
    fn a_standings_board_replaces_one_slot_and_counts_each_change() {
        let standings = |name: &str, finished| {
            Arc::new(TournamentStandings::new(
                name,
                GameId::Hex,
                finished,
                Vec::new(),
            ))
        };
        let board = StandingsBoard::new(vec![standings("a", false), standings("b", false)]);
        let (before, first) = board.snapshot();
        board.set(1, standings("b", true));
        assert_eq!(board.version(), before + 1);
        // A tournament that does not exist changes nothing.
        board.set(2, standings("c", true));
        assert_eq!(board.version(), before + 1);
        let (version, now) = board.snapshot();
        assert_eq!(version, before + 1);
        // The snapshot taken before is not changed by later ones; the other slot is shared.
        assert!(!first[1].finished);
        assert!(now[1].finished);
        assert!(Arc::ptr_eq(&first[0], &now[0]));
    }
}

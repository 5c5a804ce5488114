//! Who is connected and which matches are running: the shared table that connections, referees
//! and the scheduler consult. Its lock is never held across an `.await`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::game::{GameId, Side};
use crate::protocol::RefereeMessage;

use super::referee::RefereeInput;

/// Round-trip time not measured yet.
const RTT_UNKNOWN: u64 = u64::MAX;

/// When a line reached the socket: set by the connection's writer right after writing it, read
/// by the referee that queued it (a `turn`, whose clock runs from that moment). A plain
/// instant behind an uncontended lock: one write and one or two reads per turn.
#[derive(Debug, Default)]
pub struct WriteStamp {
    /// (when the writer began writing the line, when the write returned).
    written: Mutex<(Option<tokio::time::Instant>, Option<tokio::time::Instant>)>,
}

impl WriteStamp {
    pub fn new() -> WriteStamp {
        WriteStamp::default()
    }

    #[allow(clippy::type_complexity)]
    fn slot(&self) -> MutexGuard<'_, (Option<tokio::time::Instant>, Option<tokio::time::Instant>)> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets the last stamp (a new line is about to be queued).
    pub fn clear(&self) {
        *self.slot() = (None, None);
    }

    /// Records `at` as the moment the writer began writing the line (before the bytes reach
    /// the socket: nothing that arrived earlier can be an answer to it).
    pub fn begin(&self, at: tokio::time::Instant) {
        let mut slot = self.slot();
        if slot.0.is_none() {
            slot.0 = Some(at);
        }
    }

    /// Records `at` as the moment the line was written (and as its beginning, if the writer
    /// did not say so before).
    pub fn set(&self, at: tokio::time::Instant) {
        let mut slot = self.slot();
        if slot.0.is_none() {
            slot.0 = Some(at);
        }
        slot.1 = Some(at);
    }

    /// When the line was written, if it has been.
    pub fn get(&self) -> Option<tokio::time::Instant> {
        self.slot().1
    }

    /// When the writer began writing the line, if it has.
    pub fn begun(&self) -> Option<tokio::time::Instant> {
        self.slot().0
    }
}

/// A line for a connection's writer (with its `\n`), and the stamp to set once it is written.
#[derive(Debug)]
pub struct Outgoing {
    pub line: String,
    pub written: Option<Arc<WriteStamp>>,
}

/// The way to reach one live connection: its outgoing line queue (lines with their `\n`), its measured round-trip time
/// and the token that drops it.
#[derive(Debug, Clone)]
pub struct BotLink {
    pub conn_id: u64,
    tx: flume::Sender<Outgoing>,
    rtt_us: Arc<AtomicU64>,
    close: CancellationToken,
}

impl BotLink {
    pub fn new(conn_id: u64, tx: flume::Sender<Outgoing>, close: CancellationToken) -> BotLink {
        BotLink {
            conn_id,
            tx,
            rtt_us: Arc::new(AtomicU64::new(RTT_UNKNOWN)),
            close,
        }
    }

    /// Queues a message without waiting. A bot whose queue is full is not reading its socket:
    /// it is dropped rather than allowed to hold anyone up. Returns whether the line was queued.
    pub fn send(&self, message: &RefereeMessage) -> bool {
        self.queue(message, None)
    }

    /// Like `send`, and `written` is set when the line reaches the socket (cleared now).
    pub fn send_stamped(&self, message: &RefereeMessage, written: &Arc<WriteStamp>) -> bool {
        written.clear();
        self.queue(message, Some(written.clone()))
    }

    fn queue(&self, message: &RefereeMessage, written: Option<Arc<WriteStamp>>) -> bool {
        let outgoing = Outgoing {
            line: message.to_wire_line(),
            written,
        };
        match self.tx.try_send(outgoing) {
            Ok(()) => true,
            Err(flume::TrySendError::Full(_)) => {
                tracing::warn!(
                    conn = self.conn_id,
                    "outgoing queue full (the bot is not reading): dropping the connection"
                );
                self.close.cancel();
                false
            }
            Err(flume::TrySendError::Disconnected(_)) => false,
        }
    }

    /// The last measured round-trip time, if any.
    pub fn rtt(&self) -> Option<Duration> {
        match self.rtt_us.load(Ordering::Relaxed) {
            RTT_UNKNOWN => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    pub fn set_rtt(&self, rtt: Duration) {
        let us = u64::try_from(rtt.as_micros()).unwrap_or(RTT_UNKNOWN - 1);
        self.rtt_us
            .store(us.min(RTT_UNKNOWN - 1), Ordering::Relaxed);
    }

    /// Forgets the round-trip time (no credit until it is measured again).
    pub fn clear_rtt(&self) {
        self.rtt_us.store(RTT_UNKNOWN, Ordering::Relaxed);
    }

    /// Drops the connection.
    pub fn close(&self) {
        self.close.cancel();
    }
}

/// An authenticated connection.
#[derive(Debug, Clone)]
pub struct Session {
    pub link: BotLink,
    pub games: HashSet<GameId>,
    pub max_games: u32,
}

/// A running match as connections see it: its two players and its referee's inbox.
#[derive(Debug, Clone)]
pub struct MatchEntry {
    pub players: [String; 2],
    pub inbox: flume::Sender<RefereeInput>,
}

impl MatchEntry {
    /// The side `name` plays in this match.
    pub fn side_of(&self, name: &str) -> Option<Side> {
        if self.players[0] == name {
            Some(Side::First)
        } else if self.players[1] == name {
            Some(Side::Second)
        } else {
            None
        }
    }
}

#[derive(Debug, Default)]
pub struct RegistryState {
    pub sessions: HashMap<String, Session>,
    pub matches: HashMap<String, MatchEntry>,
    /// Matches each bot is playing now (counted against its `max_games`).
    pub busy: HashMap<String, u32>,
    /// Bots suspended for repeated faults and not connected since: why.
    pub suspended: HashMap<String, String>,
}

impl RegistryState {
    /// Whether `name` is connected, plays `game` and has a free match slot.
    pub fn available(&self, name: &str, game: GameId) -> bool {
        match self.sessions.get(name) {
            Some(s) => {
                s.games.contains(&game) && self.busy.get(name).copied().unwrap_or(0) < s.max_games
            }
            None => false,
        }
    }
}

/// Why a bot could not be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlreadyConnected;

/// The shared table plus the bell that wakes the scheduler when something changes.
#[derive(Debug, Default)]
pub struct Registry {
    state: Mutex<RegistryState>,
    pub changed: Notify,
    /// What the web view reads (off unless it runs).
    pub live: super::live::Live,
}

impl Registry {
    pub fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A poisoned lock means a panic elsewhere while holding it; the table itself is still
        // consistent enough to keep serving other matches.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers an authenticated connection and returns the matches it is already part of
    /// (to resume them) after queueing `welcome`, or refuses a second live connection with the same name.
    pub fn register(
        &self,
        name: &str,
        session: Session,
        welcome: &RefereeMessage,
    ) -> Result<Vec<(Side, flume::Sender<RefereeInput>)>, AlreadyConnected> {
        let mut state = self.lock();
        if state.sessions.contains_key(name) {
            return Err(AlreadyConnected);
        }
        // Queued under the lock, so no referee can send `start` before it.
        session.link.send(welcome);
        state.sessions.insert(name.to_string(), session);
        state.suspended.remove(name);
        let resumed = state
            .matches
            .values()
            .filter_map(|m| m.side_of(name).map(|side| (side, m.inbox.clone())))
            .collect();
        drop(state);
        self.changed.notify_one();
        Ok(resumed)
    }

    /// Removes the session of connection `conn_id` (if it is still the registered one) and
    /// returns the matches it was part of.
    pub fn unregister(&self, name: &str, conn_id: u64) -> Vec<(Side, flume::Sender<RefereeInput>)> {
        let mut state = self.lock();
        let ours = state
            .sessions
            .get(name)
            .is_some_and(|s| s.link.conn_id == conn_id);
        if !ours {
            return Vec::new();
        }
        state.sessions.remove(name);
        let left = state
            .matches
            .values()
            .filter_map(|m| m.side_of(name).map(|side| (side, m.inbox.clone())))
            .collect();
        drop(state);
        self.changed.notify_one();
        left
    }

    /// Suspends `name`: queues `error` (code `suspended`, saying `why`) on its connection,
    /// removes its session at once (so no game starts with it meanwhile) and drops the
    /// connection. Returns the matches it is still part of with its connection id, for their
    /// referees to hear that it left (its own connection no longer tells them).
    pub fn suspend(
        &self,
        name: &str,
        why: &str,
    ) -> Option<(u64, Vec<(Side, flume::Sender<RefereeInput>)>)> {
        let mut state = self.lock();
        state.suspended.insert(name.to_string(), why.to_string());
        let session = state.sessions.remove(name)?;
        session.link.send(&RefereeMessage::Error {
            code: crate::protocol::ErrorCode::Suspended,
            message: why.to_string(),
            match_id: None,
        });
        session.link.close();
        let left = state
            .matches
            .values()
            .filter_map(|m| m.side_of(name).map(|side| (side, m.inbox.clone())))
            .collect();
        drop(state);
        self.changed.notify_one();
        Some((session.link.conn_id, left))
    }

    /// The match `match_id` if `name` plays in it: its referee's inbox and `name`'s side.
    pub fn match_for(
        &self,
        match_id: &str,
        name: &str,
    ) -> Option<(Side, flume::Sender<RefereeInput>)> {
        let state = self.lock();
        let entry = state.matches.get(match_id)?;
        Some((entry.side_of(name)?, entry.inbox.clone()))
    }

    /// Forgets a finished match and frees its players' slots.
    pub fn finish_match(&self, match_id: &str) {
        let mut state = self.lock();
        if let Some(entry) = state.matches.remove(match_id) {
            for name in entry.players {
                if let Some(n) = state.busy.get_mut(&name) {
                    *n = n.saturating_sub(1);
                }
            }
        }
        drop(state);
        self.changed.notify_one();
    }
}

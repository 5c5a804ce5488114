//! Who is connected and which matches are running: the shared table that connections, referees,
//! the scheduler and the web view consult, its state private behind methods. A match's slots are
//! taken with `claim_match` and given back when its `MatchSlot` is dropped (`finish_match`), so
//! the two always pair up, even when a referee task panics. Its lock is never held across an
//! `.await`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::game::{GameId, Side};
use crate::protocol::RefereeMessage;

use super::link::{referee_door, BotLink, RefereeDoor, RefereeInbox};

/// An authenticated connection.
#[derive(Debug, Clone)]
pub struct Session {
    pub link: BotLink,
    pub games: HashSet<GameId>,
    pub max_games: u32,
}

/// A running match as connections see it: its two players and the way to its referee.
#[derive(Debug, Clone)]
struct MatchEntry {
    players: [String; 2],
    door: RefereeDoor,
}

impl MatchEntry {
    /// The side `name` plays in this match.
    fn side_of(&self, name: &str) -> Option<Side> {
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
struct RegistryState {
    sessions: HashMap<String, Session>,
    matches: HashMap<String, MatchEntry>,
    /// The ids of the matches each bot is playing now (counted against its `max_games`): a
    /// bot's matches are found here, not by looking through every running match (a log-in of
    /// a league of 10,000 matches spent milliseconds doing so under this lock).
    /// (Each id an exact-size `Box<str>`, in a list that starts with room for one: most bots
    /// play one game at a time, and a list and its ids per bot are part of each match's
    /// memory.)
    playing: HashMap<String, Vec<Box<str>>>,
    /// Bots suspended for repeated faults and not connected since: why.
    suspended: HashMap<String, String>,
    /// `program` bots whose program failed to start several times in a row and that have not
    /// connected since: absent, their due games forfeited at once.
    cannot_start: HashSet<String>,
    /// Bots whose availability changed since the scheduler last asked (see
    /// [`Registry::take_changes`]).
    changes: Changes,
}

/// Most bots remembered as changed between two looks of the scheduler; past it the scheduler
/// is told that anyone may have changed.
const MAX_CHANGED_BOTS: usize = 4096;

/// What changed since the scheduler last looked: these bots, or (`all`) possibly anyone.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    pub all: bool,
    pub bots: Vec<String>,
}

impl Changes {
    fn bot(&mut self, name: &str) {
        if self.all {
            return;
        }
        if self.bots.len() >= MAX_CHANGED_BOTS {
            self.all = true;
            self.bots = Vec::new();
        } else {
            self.bots.push(name.to_string());
        }
    }
}

impl RegistryState {
    /// The matches `name` plays now: its side in each and the door to its referee.
    fn matches_of(&self, name: &str) -> BotMatches {
        self.playing
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|id| self.matches.get(&**id))
            .filter_map(|m| m.side_of(name).map(|side| (side, m.door.clone())))
            .collect()
    }

    /// Whether `name` is connected, plays `game` and has a free match slot.
    fn available(&self, name: &str, game: GameId) -> bool {
        match self.sessions.get(name) {
            Some(s) => {
                s.games.contains(&game)
                    && self.playing.get(name).map_or(0, Vec::len) < s.max_games as usize
            }
            None => false,
        }
    }
}

/// What registering a connection found.
#[derive(Debug)]
pub struct Registered {
    /// The matches the bot is part of, to resume on the new connection.
    pub resumed: BotMatches,
    /// The connection id of the bot's older connection that the new one replaced.
    pub replaced: Option<u64>,
}

/// What the web view shows of one bot: its connection, the matches it plays now, and why it was
/// suspended if it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BotStatus {
    /// The games its `hello` listed and its `max_games`, while it is connected.
    pub session: Option<(HashSet<GameId>, u32)>,
    /// Matches it is playing now.
    pub busy: u32,
    /// The ids of those matches, sorted: taken from the same state as `busy`, so the two never
    /// disagree (the web view's game list learns of a new game a moment later).
    pub playing: Vec<String>,
    /// Why it was suspended, until it connects again.
    pub suspended: Option<String>,
}

/// A claimed match: its players' connections (`None` for one that has left since), its
/// referee's inbox and the door connections reach it by (whose direct path the referee
/// opens), and the slot that frees the match in the registry when dropped.
#[derive(Debug)]
pub struct ClaimedMatch {
    pub links: [Option<BotLink>; 2],
    pub inbox: RefereeInbox,
    pub door: RefereeDoor,
    pub slot: MatchSlot,
}

/// A match's place in the registry: dropping it finishes the match there (frees both players'
/// slots and forgets its inbox), however the task holding it ends.
#[derive(Debug)]
pub struct MatchSlot {
    registry: Arc<Registry>,
    match_id: String,
}

impl Drop for MatchSlot {
    fn drop(&mut self) {
        self.registry.finish_match(&self.match_id);
    }
}

/// The shared table plus the bell that wakes the scheduler when something changes.
#[derive(Debug, Default)]
pub struct Registry {
    state: Mutex<RegistryState>,
    changed: Notify,
    /// Set once every tournament is finished (see [`Registry::end_league`]).
    league_over: std::sync::atomic::AtomicBool,
}

/// What a bot is told when the league is over.
pub const LEAGUE_OVER_MESSAGE: &str =
    "the league is over: every tournament is finished, there is nothing more to play here";

/// The matches a bot is part of: its side in each and the door to its referee.
pub type BotMatches = Vec<(Side, RefereeDoor)>;

/// How many messages a referee's inbox holds before a connection waits to hand it one.
const REFEREE_INBOX: usize = 64;

impl Registry {
    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A poisoned lock means a panic elsewhere while holding it; the table itself is still
        // consistent enough to keep serving other matches.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers an authenticated connection, queues `welcome` on it, and returns the matches
    /// the bot is already part of (to resume them on this connection). A connection of the same
    /// bot that is still registered is replaced (the newest login wins: a bot whose old
    /// connection went silent can always come back): it is told why with an `error` (code
    /// `replaced`) and dropped; its id is returned so that its later close is not taken for
    /// the bot leaving.
    pub fn register(&self, name: &str, session: Session, welcome: &RefereeMessage) -> Registered {
        let mut state = self.lock();
        let replaced = state.sessions.remove(name).map(|old| {
            old.link.send(&RefereeMessage::Error {
                code: crate::protocol::ErrorCode::Replaced,
                message: format!(
                    "a newer login of bot {name:?} replaced this connection; its matches go on there"
                ),
                match_id: None,
            });
            old.link.close_because(super::link::REPLACED);
            old.link.conn_id
        });
        // Queued under the lock, so no referee can send `start` before it.
        session.link.send(welcome);
        state.sessions.insert(name.to_string(), session);
        state.suspended.remove(name);
        state.cannot_start.remove(name);
        state.changes.bot(name);
        let resumed = state.matches_of(name);
        drop(state);
        self.changed.notify_one();
        Registered { resumed, replaced }
    }

    /// Removes the session of connection `conn_id` and returns the matches it was part of;
    /// `None` if that connection is no longer the bot's registered one (a newer login
    /// replaced it, or the bot was suspended).
    pub fn unregister(&self, name: &str, conn_id: u64) -> Option<BotMatches> {
        let mut state = self.lock();
        let ours = state
            .sessions
            .get(name)
            .is_some_and(|s| s.link.conn_id == conn_id);
        if !ours {
            return None;
        }
        state.sessions.remove(name);
        state.changes.bot(name);
        let left = state.matches_of(name);
        drop(state);
        self.changed.notify_one();
        Some(left)
    }

    /// Suspends `name`: queues `error` (code `suspended`, saying `why`) on its connection,
    /// removes its session at once (so no game starts with it meanwhile) and drops the
    /// connection. Returns the matches it is still part of with its connection id, for their
    /// referees to hear that it left (its own connection no longer tells them).
    pub fn suspend(&self, name: &str, why: &str) -> Option<(u64, BotMatches)> {
        let mut state = self.lock();
        state.suspended.insert(name.to_string(), why.to_string());
        let session = state.sessions.remove(name)?;
        state.changes.bot(name);
        session.link.send(&RefereeMessage::Error {
            code: crate::protocol::ErrorCode::Suspended,
            message: why.to_string(),
            match_id: None,
        });
        session.link.close_because(super::link::SUSPENDED);
        let left = state.matches_of(name);
        drop(state);
        self.changed.notify_one();
        Some((session.link.conn_id, left))
    }

    /// The league is over: every connected bot is told so (`error` `league_over`) and dropped,
    /// and from now on [`Registry::league_is_over`] says so to each `hello`.
    pub fn end_league(&self) {
        let state = self.lock();
        self.league_over
            .store(true, std::sync::atomic::Ordering::Release);
        for session in state.sessions.values() {
            session.link.send(&RefereeMessage::Error {
                code: crate::protocol::ErrorCode::LeagueOver,
                message: LEAGUE_OVER_MESSAGE.to_string(),
                match_id: None,
            });
            session.link.close_because(super::link::LEAGUE_OVER);
        }
    }

    /// Whether [`Registry::end_league`] was called.
    pub fn league_is_over(&self) -> bool {
        self.league_over.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The match `match_id` if `name` plays in it: `name`'s side and the door to its referee.
    pub fn match_for(&self, match_id: &str, name: &str) -> Option<(Side, RefereeDoor)> {
        let state = self.lock();
        let entry = state.matches.get(match_id)?;
        Some((entry.side_of(name)?, entry.door.clone()))
    }

    /// Rings when a bot connects or leaves or a match ends: the scheduler waits on it.
    pub fn changed(&self) -> &Notify {
        &self.changed
    }

    /// The bots whose availability changed (connected, left, suspended, marked as unable to
    /// start, or freed from a match) since the last call: the scheduler looks again only at
    /// their tournaments.
    pub fn take_changes(&self) -> Changes {
        std::mem::take(&mut self.lock().changes)
    }

    /// Claims match `match_id` of `game` for `players` if both are connected, play `game` and
    /// have a free slot: the match is entered (connections can reach its referee) and each
    /// player's slot is taken until the returned `slot` is dropped. Otherwise returns, for each
    /// player, whether it is away (not connected, or connected without `game`); a player
    /// that is only busy is not away.
    pub fn claim_match(
        self: &Arc<Self>,
        match_id: &str,
        players: &[String; 2],
        game: GameId,
    ) -> Result<ClaimedMatch, [bool; 2]> {
        let mut state = self.lock();
        if !players.iter().all(|p| state.available(p, game)) {
            let away = |p: &String| {
                !state
                    .sessions
                    .get(p)
                    .is_some_and(|s| s.games.contains(&game))
            };
            return Err([away(&players[0]), away(&players[1])]);
        }
        let (door, inbox) = referee_door(REFEREE_INBOX);
        let links = [
            state.sessions.get(&players[0]).map(|s| s.link.clone()),
            state.sessions.get(&players[1]).map(|s| s.link.clone()),
        ];
        state.matches.insert(
            match_id.to_string(),
            MatchEntry {
                players: players.clone(),
                door: door.clone(),
            },
        );
        for p in players {
            state
                .playing
                .entry(p.clone())
                .or_insert_with(|| Vec::with_capacity(1))
                .push(Box::from(match_id));
        }
        Ok(ClaimedMatch {
            links,
            inbox,
            door,
            slot: MatchSlot {
                registry: self.clone(),
                match_id: match_id.to_string(),
            },
        })
    }

    /// Marks the `program` bot `name` as one whose program cannot start: until it connects,
    /// its due games are forfeited at once rather than after `absent_forfeit_ms`.
    pub fn mark_cannot_start(&self, name: &str) {
        let mut state = self.lock();
        state.cannot_start.insert(name.to_string());
        state.changes.bot(name);
        drop(state);
        self.changed.notify_one();
    }

    /// For each of `players`, whether its program cannot start (see `mark_cannot_start`).
    pub fn cannot_start(&self, players: &[String; 2]) -> [bool; 2] {
        let state = self.lock();
        [0, 1].map(|i| state.cannot_start.contains(&players[i]))
    }

    /// The status of every bot that is connected, busy or suspended.
    pub fn statuses(&self) -> HashMap<String, BotStatus> {
        let state = self.lock();
        let mut out: HashMap<String, BotStatus> = HashMap::new();
        for (name, session) in &state.sessions {
            out.entry(name.clone()).or_default().session =
                Some((session.games.clone(), session.max_games));
        }
        for (name, ids) in &state.playing {
            let status = out.entry(name.clone()).or_default();
            status.busy = u32::try_from(ids.len()).unwrap_or(u32::MAX);
            status.playing = ids.iter().map(|id| id.to_string()).collect();
        }
        for status in out.values_mut() {
            status.playing.sort_unstable();
        }
        for (name, why) in &state.suspended {
            out.entry(name.clone()).or_default().suspended = Some(why.clone());
        }
        out
    }

    /// Forgets a finished match and frees its players' slots (see [`MatchSlot`]).
    fn finish_match(&self, match_id: &str) {
        let mut state = self.lock();
        if let Some(entry) = state.matches.remove(match_id) {
            for name in entry.players {
                if let Some(ids) = state.playing.get_mut(&name) {
                    ids.retain(|id| &**id != match_id);
                    if ids.is_empty() {
                        state.playing.remove(&name);
                    }
                }
                state.changes.bot(&name);
            }
        }
        drop(state);
        self.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::link::{outbox, LinkClose};
    use tokio_util::sync::CancellationToken;

    fn session(conn_id: u64, max_games: u32) -> Session {
        let (tx, _reader) = outbox(16, None);
        Session {
            link: BotLink::new(conn_id, tx, LinkClose::new(CancellationToken::new())),
            games: HashSet::from([GameId::Hex]),
            max_games,
        }
    }

    #[test]
    fn a_bots_status_names_the_matches_it_is_counted_busy_for() {
        let registry = Arc::new(Registry::default());
        let welcome = RefereeMessage::Welcome {
            protocol: 1,
            name: "a".into(),
            server: "arena".into(),
            ticket: None,
        };
        registry.register("a", session(1, 2), &welcome);
        registry.register("b", session(2, 1), &welcome);
        let players = ["a".to_string(), "b".to_string()];
        let claimed = registry
            .claim_match("m1", &players, GameId::Hex)
            .expect("both are free");
        // `b` is at its max_games: a second match is refused, and neither is away.
        assert_eq!(
            registry.claim_match("m2", &players, GameId::Hex).err(),
            Some([false, false])
        );
        let statuses = registry.statuses();
        for name in ["a", "b"] {
            assert_eq!(statuses[name].busy, 1, "{name}");
            assert_eq!(statuses[name].playing, ["m1"], "{name}");
        }
        drop(claimed);
        let statuses = registry.statuses();
        assert_eq!((statuses["a"].busy, statuses["a"].playing.len()), (0, 0));
        assert_eq!((statuses["b"].busy, statuses["b"].playing.len()), (0, 0));
    }
}

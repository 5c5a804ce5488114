//! The moves of a running match as its referee keeps them: every move text in one string, and
//! per move its end in that string, its mover, its think time and its lag credit.
//!
//! A thousand matches at once each hold up to a few hundred moves. Kept as a `Vec<String>` plus
//! three more vectors, a move cost about 70 bytes (a heap block per text, and the vectors'
//! spare room); here it costs its text plus 16 bytes.
//!
//! The referee and the web view share one log per game (`SharedMoveLog`): the referee appends,
//! the web view reads it when a browser asks for the game, and no second copy of the moves is
//! kept while the game runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::game::{GameId, Side};

/// One move's bookkeeping (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ply {
    /// End of the move's text in `MoveLog::texts`.
    end: u32,
    think_ms: u32,
    lag_ms: u32,
    mover: Side,
}

/// The moves of one match so far, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveLog {
    texts: String,
    plies: Vec<Ply>,
}

/// Milliseconds as the log keeps them: over 49 days saturates.
fn saturate(ms: u64) -> u32 {
    u32::try_from(ms).unwrap_or(u32::MAX)
}

/// Room a log takes at its first move: enough for most of a game without growing, where
/// growing from nothing took about fifteen reallocations a game (a share of the referee's
/// time a move in the bench's profile). About 1.3 KiB a match.
const FIRST_ROOM_PLIES: usize = 64;
const FIRST_ROOM_TEXT_BYTES: usize = FIRST_ROOM_PLIES * 4;

impl MoveLog {
    /// Appends a move with who made it, the think time charged and the lag credited.
    pub fn push(&mut self, text: &str, mover: Side, think_ms: u64, lag_ms: u64) {
        if self.plies.capacity() == 0 {
            self.plies.reserve(FIRST_ROOM_PLIES);
            self.texts.reserve(FIRST_ROOM_TEXT_BYTES);
        }
        self.texts.push_str(text);
        self.plies.push(Ply {
            end: u32::try_from(self.texts.len()).unwrap_or(u32::MAX),
            think_ms: saturate(think_ms),
            lag_ms: saturate(lag_ms),
            mover,
        });
    }

    /// Moves so far.
    pub fn len(&self) -> usize {
        self.plies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plies.is_empty()
    }

    fn start_of(&self, index: usize) -> usize {
        match index.checked_sub(1).and_then(|i| self.plies.get(i)) {
            Some(previous) => previous.end as usize,
            None => 0,
        }
    }

    /// The text of move `index` (0-based).
    pub fn text(&self, index: usize) -> Option<&str> {
        let ply = self.plies.get(index)?;
        self.texts.get(self.start_of(index)..ply.end as usize)
    }

    /// The texts of the moves from `from` on, as the protocol sends them.
    pub fn texts_from(&self, from: usize) -> Vec<String> {
        (from..self.len())
            .filter_map(|i| self.text(i))
            .map(str::to_string)
            .collect()
    }

    /// The last move: its text, think time and lag credit.
    pub fn last(&self) -> Option<(&str, u64, u64)> {
        let index = self.len().checked_sub(1)?;
        let ply = self.plies.get(index)?;
        Some((
            self.text(index)?,
            u64::from(ply.think_ms),
            u64::from(ply.lag_ms),
        ))
    }

    /// Gives back the spare room the log grew into (a finished game that stays in memory).
    pub fn shrink_to_fit(&mut self) {
        self.texts.shrink_to_fit();
        self.plies.shrink_to_fit();
    }

    /// Every move's text and think time, in order.
    pub fn texts_and_think(&self) -> impl Iterator<Item = (&str, u64)> {
        (0..self.len()).filter_map(|i| {
            let ply = self.plies.get(i)?;
            Some((self.text(i)?, u64::from(ply.think_ms)))
        })
    }

    /// Everything, as a finished game keeps it: texts, movers, think times, lag credits.
    pub fn columns(&self) -> (Vec<String>, Vec<Side>, Vec<u64>, Vec<u64>) {
        (
            self.texts_from(0),
            self.plies.iter().map(|p| p.mover).collect(),
            self.plies.iter().map(|p| u64::from(p.think_ms)).collect(),
            self.plies.iter().map(|p| u64::from(p.lag_ms)).collect(),
        )
    }
}

/// One game's move log, shared by its referee (which appends) and the web view (which reads):
/// cheap to clone, a short lock per access, never held across an `.await` (the guard cannot be
/// sent between threads, so the compiler refuses that). Its length is kept beside the lock
/// too, so that asking it (several times a move) takes no lock.
#[derive(Debug, Clone, Default)]
pub struct SharedMoveLog(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    log: Mutex<MoveLog>,
    /// `log.len()`, written under the lock at each push.
    len: AtomicUsize,
}

impl SharedMoveLog {
    pub fn new(log: MoveLog) -> SharedMoveLog {
        SharedMoveLog(Arc::new(Shared {
            len: AtomicUsize::new(log.len()),
            log: Mutex::new(log),
        }))
    }

    /// The log of a finished game as games.jsonl keeps it (who made each move follows from
    /// the game; a missing think or lag time counts as 0).
    pub fn of_finished(game: GameId, moves: &[String], think_ms: &[u64], lag_ms: &[u64]) -> Self {
        let mut log = MoveLog::default();
        for (ply, text) in moves.iter().enumerate() {
            let at = |times: &[u64]| times.get(ply).copied().unwrap_or(0);
            log.push(text, game.mover_of_ply(ply + 1), at(think_ms), at(lag_ms));
        }
        // A finished game grows no more: no room kept for moves to come.
        log.shrink_to_fit();
        SharedMoveLog::new(log)
    }

    fn lock(&self) -> MutexGuard<'_, MoveLog> {
        // A panic elsewhere while holding it leaves a log that is still whole: each push is
        // one append.
        self.0.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The log, locked for reading: appending goes through `push` only, which keeps `len`
    /// with it.
    pub fn read(&self) -> ReadMoveLog<'_> {
        ReadMoveLog(self.lock())
    }

    /// Asks for the log's shared block (its lock and length) to be brought into the cache.
    pub fn prefetch(&self) {
        super::prefetch::value(&*self.0);
    }

    /// Appends a move (see `MoveLog::push`).
    pub fn push(&self, text: &str, mover: Side, think_ms: u64, lag_ms: u64) {
        let mut log = self.lock();
        log.push(text, mover, think_ms, lag_ms);
        self.0.len.store(log.len(), Ordering::Release);
    }

    /// Gives back the spare room the log grew into (see `MoveLog::shrink_to_fit`).
    pub fn shrink_to_fit(&self) {
        self.lock().shrink_to_fit();
    }

    /// Moves so far.
    pub fn len(&self) -> usize {
        self.0.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared log locked for reading (see [`SharedMoveLog::read`]).
pub struct ReadMoveLog<'a>(MutexGuard<'a, MoveLog>);

impl std::ops::Deref for ReadMoveLog<'_> {
    type Target = MoveLog;

    fn deref(&self) -> &MoveLog {
        &self.0
    }
}

impl PartialEq for SharedMoveLog {
    fn eq(&self, other: &SharedMoveLog) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        // One lock at a time: two logs locked together could deadlock with a caller comparing
        // them the other way round.
        let mine = self.read().clone();
        *other.read() == mine
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_come_back_as_they_went_in() {
        let mut log = MoveLog::default();
        assert!(log.is_empty());
        assert_eq!(log.last(), None);
        log.push("J10", Side::First, 120, 3);
        log.push("K10,K11", Side::Second, 4000, 0);
        log.push("G7xG9xI9+B3", Side::Second, 7, 500);
        assert_eq!(log.len(), 3);
        assert_eq!(log.text(0), Some("J10"));
        assert_eq!(log.text(1), Some("K10,K11"));
        assert_eq!(log.text(3), None);
        assert_eq!(log.texts_from(1), vec!["K10,K11", "G7xG9xI9+B3"]);
        assert_eq!(log.texts_from(3), Vec::<String>::new());
        assert_eq!(log.last(), Some(("G7xG9xI9+B3", 7, 500)));
        assert_eq!(
            log.texts_and_think().collect::<Vec<_>>(),
            [("J10", 120), ("K10,K11", 4000), ("G7xG9xI9+B3", 7)]
        );
        let (texts, movers, think, lag) = log.columns();
        assert_eq!(texts, vec!["J10", "K10,K11", "G7xG9xI9+B3"]);
        assert_eq!(movers, vec![Side::First, Side::Second, Side::Second]);
        assert_eq!(think, vec![120, 4000, 7]);
        assert_eq!(lag, vec![3, 0, 500]);
    }

    #[test]
    fn a_shared_log_shows_every_holder_the_same_moves() {
        let referee = SharedMoveLog::default();
        let viewer = referee.clone();
        referee.push("F6", Side::First, 10, 0);
        assert_eq!(viewer.len(), 1);
        assert_eq!(viewer.read().text(0), Some("F6"));
        assert_eq!(referee, viewer);
        let mut copy = MoveLog::default();
        copy.push("F6", Side::First, 10, 0);
        assert_eq!(
            SharedMoveLog::new(copy.clone()),
            referee,
            "equal by content"
        );
        copy.push("E7", Side::Second, 10, 0);
        assert_ne!(SharedMoveLog::new(copy), referee);
    }

    #[test]
    fn a_finished_games_log_names_each_mover_from_the_game() {
        let moves = ["J10".to_string(), "K10,K11".into(), "L12,L13".into()];
        let log = SharedMoveLog::of_finished(GameId::Connect6, &moves, &[5, 6], &[]);
        let (texts, movers, think, lag) = log.read().columns();
        assert_eq!(texts, moves);
        assert_eq!(movers, [Side::First, Side::Second, Side::First]);
        assert_eq!(think, [5, 6, 0], "a missing think time is 0");
        assert_eq!(lag, [0, 0, 0]);
    }

    #[test]
    fn times_beyond_49_days_saturate() {
        let mut log = MoveLog::default();
        log.push("A1", Side::First, u64::MAX, 1 << 40);
        assert_eq!(
            log.last(),
            Some(("A1", u64::from(u32::MAX), u64::from(u32::MAX)))
        );
    }
}

//! The server's use of the crash-safe journal (`crate::journal`): the configuration's
//! fingerprint, the journal shared by the scheduler and the referees (every append made durable
//! on a blocking thread, never on the runtime's), and the per-match handle through which a
//! referee journals each accepted move with both clocks.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::move_log::SharedMoveLog;
use super::output_health::{OutputHealth, OutputKind};
use crate::clock_settings::whole_ms as ms;
use crate::config::{Config, Format};
use crate::journal::{
    ConfigFingerprint, EncodedLines, Journal, JournalEntry, JournalError, MoveLine,
    TournamentFingerprint, KEPT_LINES_BYTES,
};

/// The lock file in `out_dir` that keeps a second server off a league's files.
pub const LOCK_FILE: &str = "arena.lock";

/// An exclusive lock on `out_dir/arena.lock`, held while a server runs on that folder: two
/// servers writing one journal and one games.jsonl would play games twice. The operating system
/// releases it when the process ends, however it ends (a `kill -9` included).
#[derive(Debug)]
pub struct OutDirLock {
    _file: File,
}

/// Why the output folder cannot be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path} is locked: another arena server is running on this out_dir")]
    InUse { path: PathBuf },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Takes the lock of `out_dir` without waiting.
pub fn lock_out_dir(out_dir: &Path) -> Result<OutDirLock, LockError> {
    let path = out_dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| LockError::Io {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(OutDirLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::InUse { path }),
        Err(std::fs::TryLockError::Error(source)) => Err(LockError::Io { path, source }),
    }
}

/// The fingerprint of what a league's schedule and games depend on (per tournament: name, game,
/// format, bots, games_per_pairing, rounds for Swiss, clock and every rule option).
pub fn fingerprint(config: &Config) -> ConfigFingerprint {
    ConfigFingerprint::new(
        config
            .tournaments
            .iter()
            .map(|t| TournamentFingerprint {
                name: t.name.clone(),
                game: t.game.as_str().to_string(),
                format: t.format.as_str().to_string(),
                bots: t.bots.clone(),
                games_per_pairing: t.games_per_pairing,
                rounds: (t.format == Format::Swiss).then_some(t.rounds),
                clock: t.clock,
                rules: t.rules.clone(),
                openings: t.openings.clone(),
            })
            .collect(),
    )
}

/// The open journal, shared between the scheduler and the referees. One writer thread owns the
/// file and commits in groups: it writes every entry queued since its last fsync, then syncs
/// once for the whole batch, so a thousand referees journaling moves cost a few fsyncs a
/// second, not a thousand. Entries reach the file in the order they were queued.
///
/// Entries are encoded as the file's lines where they are queued, into one buffer the writer
/// takes whole: a move costs its referee a short lock and about a hundred bytes written, with
/// nothing allocated, and the writer only writes. (Until 2026-12-01 each entry went through a
/// channel as a value, with its move text copied into a string of its own, and the writer
/// encoded it: about 0.4 µs of the server's CPU a move in the bench's profile.)
///
/// Written-behind entries are counted while they wait for the writer: past
/// [`MAX_QUEUED_BEHIND`] (a stalled disk), referees wait for their moves to be durable instead
/// of queueing more, so the queue's memory stays bounded.
#[derive(Debug, Clone)]
pub struct SharedJournal {
    handle: Arc<Handle>,
}

/// What the journal's handles share; when the last goes, the writer writes what is queued and
/// ends.
#[derive(Debug)]
struct Handle {
    queue: Arc<Queue>,
    path: PathBuf,
    max_queued_behind: usize,
    /// The writer thread, woken when its queue has something new for it to look at.
    writer: Option<std::thread::Thread>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.queue.state().closed = true;
        if let Some(writer) = &self.writer {
            writer.unpark();
        }
    }
}

/// The entries waiting for the writer.
#[derive(Debug, Default)]
struct Queue {
    state: std::sync::Mutex<QueueState>,
    /// Entries queued and not yet written (read without the lock, before every move).
    queued: AtomicUsize,
}

#[derive(Debug, Default)]
struct QueueState {
    /// Every entry queued since the writer last took them, encoded, in order.
    lines: EncodedLines,
    /// Whoever waits for those lines to be on disk.
    waiting: Vec<std::sync::mpsc::SyncSender<Result<(), String>>>,
    /// When the first of `lines` was queued.
    since: Option<std::time::Instant>,
    /// Every handle is gone.
    closed: bool,
}

impl Queue {
    fn state(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Most journal entries waiting for the writer before written-behind moves wait instead (about
/// 10 MB of lines; at 60,000 moves a second the writer normally holds a few thousand).
pub const MAX_QUEUED_BEHIND: usize = 100_000;

impl SharedJournal {
    /// Hands `journal` to a new writer thread, which tells `health` when writing fails and when
    /// it works again; the thread ends when the last handle is dropped, after writing what was
    /// queued.
    pub fn with_health(journal: Journal, health: Arc<OutputHealth>) -> SharedJournal {
        SharedJournal::start(journal, MAX_QUEUED_BEHIND, health)
    }

    /// A journal whose written-behind moves wait once `max_queued_behind` entries are queued.
    #[cfg(test)]
    pub fn with_limit(journal: Journal, max_queued_behind: usize) -> SharedJournal {
        SharedJournal::start(journal, max_queued_behind, Arc::default())
    }

    fn start(
        journal: Journal,
        max_queued_behind: usize,
        health: Arc<OutputHealth>,
    ) -> SharedJournal {
        let path = journal.path().to_path_buf();
        let queue = Arc::new(Queue::default());
        let writer_queue = queue.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || write_in_groups(journal, &writer_queue, &health));
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                // Without the thread nothing is written; whoever waits is told so.
                tracing::error!(error = %e, "cannot start the journal writer thread");
                None
            }
        };
        SharedJournal {
            handle: Arc::new(Handle {
                queue,
                path,
                max_queued_behind,
                writer,
            }),
        }
    }

    /// Whether so many entries wait for the writer that moves should wait to be durable.
    pub fn is_backed_up(&self) -> bool {
        self.handle.queue.queued.load(Ordering::Relaxed) >= self.handle.max_queued_behind
    }

    /// Entries queued and not yet written.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.handle.queue.queued.load(Ordering::Relaxed)
    }

    /// Queues lines already encoded (`encode` writes them into the queue's buffer under its
    /// lock), with `waiter` told once they are on disk; wakes the writer when it must look.
    fn queue(
        &self,
        encode: impl FnOnce(&mut EncodedLines),
        waiter: Option<std::sync::mpsc::SyncSender<Result<(), String>>>,
    ) -> Result<(), String> {
        let Some(writer) = &self.handle.writer else {
            return Err("the journal writer has stopped".to_string());
        };
        let queue = &self.handle.queue;
        let mut state = queue.state();
        let was_empty = state.lines.is_empty() && state.waiting.is_empty();
        let before = state.lines.entries();
        encode(&mut state.lines);
        let added = state.lines.entries() - before;
        queue.queued.fetch_add(added, Ordering::Relaxed);
        if state.since.is_none() {
            state.since = Some(std::time::Instant::now());
        }
        let waits = waiter.is_some();
        if let Some(waiter) = waiter {
            state.waiting.push(waiter);
        }
        drop(state);
        // A written-behind entry wakes the writer only to start its group's wait: the next
        // ones find it sleeping on that and wake nobody.
        if was_empty || waits {
            writer.unpark();
        }
        Ok(())
    }

    fn error(&self, message: String) -> JournalError {
        JournalError::Io {
            path: self.handle.path.clone(),
            source: std::io::Error::other(message),
        }
    }

    /// Appends entries in order and waits until they are on disk. Blocking: call from a
    /// blocking thread.
    pub fn append_blocking(&self, entries: Vec<JournalEntry>) -> Result<(), JournalError> {
        if entries.is_empty() {
            return Ok(());
        }
        // Encoded before the queue's lock is taken: a finished game's entry holds its whole
        // games.jsonl line.
        let mut lines = EncodedLines::default();
        for entry in &entries {
            lines.push(entry)?;
        }
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.queue(|queued| queued.append(&mut lines), Some(done))
            .map_err(|e| self.error(e))?;
        wait.recv()
            .map_err(|_| self.error("the journal writer has stopped".into()))?
            .map_err(|e| self.error(e))
    }

    /// Appends entries and waits (on a blocking thread, never the runtime's) until they are on
    /// disk. A failure is logged: the league goes on, but a crash from now on may lose the
    /// entries. (Waiting through `spawn_blocking` also keeps paused-time tests exact: the
    /// runtime does not jump its clock while a blocking task is running.)
    pub async fn append(&self, entries: Vec<JournalEntry>) {
        if entries.is_empty() {
            return;
        }
        let journal = self.clone();
        let result = tokio::task::spawn_blocking(move || journal.append_blocking(entries)).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "cannot append to the journal"),
            Err(e) => tracing::error!(error = %e, "journal task failed"),
        }
    }

    /// Queues one entry without waiting: it reaches the disk with the writer's next group
    /// commit.
    pub fn append_behind(&self, entry: JournalEntry) {
        let mut encoded = Ok(());
        let queued = self.queue(|lines| encoded = lines.push(&entry), None);
        if let Err(e) = queued.map_err(|e| self.error(e)).and(encoded) {
            tracing::error!(error = %e, "cannot append to the journal");
        }
    }

    /// Queues one move without waiting (see [`SharedJournal::append_behind`]), written
    /// straight into the queue from the referee's own fields.
    pub fn append_move_behind(&self, mv: &MoveLine<'_>) {
        if let Err(e) = self.queue(|lines| lines.push_move(mv), None) {
            tracing::error!(error = %self.error(e), "cannot append to the journal");
        }
    }
}

/// How long written-behind entries may wait in the writer before a group commit: one fsync
/// per window instead of one after another (each costs the machine CPU, on a virtual disk
/// much more than the write). A request someone waits for is committed at once.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// The writer thread: lets written-behind entries gather until someone waits for them,
/// `COMMIT_EVERY` has passed since the oldest of them was queued, or every handle is gone;
/// then takes them all, writes them in one write, syncs once, and tells each waiting requester
/// the outcome. It sleeps meanwhile, so queueing a move costs the referee no wake-up; a
/// requester that waits, or the first entry of a group, wakes it (`unpark`).
///
/// A group that cannot be written (a full disk, a read-only folder) is cut back off the file
/// and kept, with what arrives meanwhile queued behind it in order, and written again after a
/// pause that doubles up to `MAX_RETRY_PAUSE`: nothing is dropped while the server runs, and
/// requesters who wait for it wait until it is on disk. `health` hears when writing fails and
/// when it works again. Once every handle is gone (the server stops) a failing group is tried
/// for `GIVE_UP_AFTER` more, then reported lost.
fn write_in_groups(mut journal: Journal, queue: &Queue, health: &OutputHealth) {
    // The group being written (and, while writing fails, tried again), and who waits for it.
    let mut group = EncodedLines::default();
    let mut waiting: Vec<std::sync::mpsc::SyncSender<Result<(), String>>> = Vec::new();
    let mut retry = Retry::default();
    loop {
        let now = std::time::Instant::now();
        let closed = {
            let mut state = queue.state();
            let someone_waits = !state.waiting.is_empty() || !waiting.is_empty();
            let due = state.since.map(|since| since + COMMIT_EVERY);
            let ready = match retry.next_at {
                Some(at) => now >= at,
                None => someone_waits || state.closed || due.is_some_and(|due| now >= due),
            };
            if !ready {
                let closed = state.closed;
                drop(state);
                if closed && group.is_empty() {
                    return;
                }
                match retry.next_at.or(due) {
                    Some(until) => std::thread::park_timeout(until.saturating_duration_since(now)),
                    None => std::thread::park(),
                }
                continue;
            }
            // Taken whole: the queue keeps the room of the last group for the next one.
            if group.is_empty() {
                std::mem::swap(&mut group, &mut state.lines);
            } else {
                group.append(&mut state.lines);
            }
            waiting.append(&mut state.waiting);
            state.since = None;
            state.closed
        };
        if group.is_empty() && waiting.is_empty() {
            if closed {
                return;
            }
            continue;
        }
        match commit(&mut journal, &group) {
            Ok(()) => {
                queue.queued.fetch_sub(group.entries(), Ordering::Relaxed);
                group.clear(KEPT_LINES_BYTES);
                for done in waiting.drain(..) {
                    let _ = done.send(Ok(()));
                }
                if retry.failing() {
                    health.recovered(OutputKind::Journal);
                }
                retry = Retry::default();
            }
            Err(e) => {
                let waiting_entries = queue.queued.load(Ordering::Relaxed);
                health.failed(OutputKind::Journal, &e, waiting_entries);
                if closed && retry.gave_up(now) {
                    tracing::error!(error = %e, entries = waiting_entries, "the server is stopping and the journal still cannot be written: these entries are lost (games in progress resume from their last saved move)");
                    for done in waiting.drain(..) {
                        let _ = done.send(Err(e.clone()));
                    }
                    return;
                }
                retry.failed(now, closed);
            }
        }
    }
}

/// Longest pause between two tries of a write that keeps failing.
pub(crate) const MAX_RETRY_PAUSE: Duration = Duration::from_secs(2);

/// How long a failing write is still tried once the server is stopping.
const GIVE_UP_AFTER: Duration = Duration::from_secs(10);

/// When a failing write is tried again: after a pause that doubles from 50 ms up to
/// `MAX_RETRY_PAUSE`.
#[derive(Debug, Default)]
struct Retry {
    next_at: Option<std::time::Instant>,
    pause: Duration,
    /// When the server began to stop while this write was failing.
    stopping_since: Option<std::time::Instant>,
}

impl Retry {
    fn failing(&self) -> bool {
        self.next_at.is_some()
    }

    fn failed(&mut self, now: std::time::Instant, stopping: bool) {
        self.pause = (self.pause * 2).clamp(Duration::from_millis(50), MAX_RETRY_PAUSE);
        self.next_at = Some(now + self.pause);
        if stopping && self.stopping_since.is_none() {
            self.stopping_since = Some(now);
        }
    }

    fn gave_up(&self, now: std::time::Instant) -> bool {
        self.stopping_since
            .is_some_and(|since| now.duration_since(since) >= GIVE_UP_AFTER)
    }
}

/// Writes a group's lines and syncs once. On failure the file is cut back to where the group
/// began (after a failed sync the system may have dropped the pages, so the entries are not
/// known to be on disk): the whole group is written again on the next try.
fn commit(journal: &mut Journal, group: &EncodedLines) -> Result<(), String> {
    let before = journal.len();
    let result = journal
        .write_lines(group)
        .and_then(|()| journal.sync())
        .map_err(|e| e.to_string());
    if result.is_err() {
        if let Err(e) = journal.rollback(before) {
            tracing::warn!(error = %e, "cannot cut a failed journal write back off");
        }
    }
    result
}

/// What a referee journals its moves through: the journal and the game's schedule id.
#[derive(Debug, Clone)]
pub struct MoveJournal {
    pub journal: SharedJournal,
    pub id: Arc<str>,
}

impl MoveJournal {
    /// Journals the last of `moves` (ply = its number) with its think time and lag credit and
    /// both clocks' time left after it. Write-behind: it reaches the disk with the writer's next
    /// group commit (within `COMMIT_EVERY` and one fsync); a crash before that loses at most the last moves of a
    /// game in progress, which then resumes from its last journaled move. If the writer is
    /// backed up (a stalled disk), this waits until the move is on disk instead.
    pub async fn record_last_move(&self, moves: &SharedMoveLog, remaining: [Duration; 2]) {
        let Some(entry) = self.last_move_entry(moves, remaining) else {
            return;
        };
        if self.journal.is_backed_up() {
            self.journal.append(vec![entry]).await;
        } else {
            self.journal.append_behind(entry);
        }
    }

    /// [`MoveJournal::record_last_move`] for a caller that cannot wait: always written behind.
    /// Callers look at [`MoveJournal::is_backed_up`] first and wait (with the async form)
    /// when it says so.
    pub fn record_last_move_behind(&self, moves: &SharedMoveLog, remaining: [Duration; 2]) {
        let moves = moves.read();
        let Some((text, think_ms, lag_ms)) = moves.last() else {
            return;
        };
        self.journal.append_move_behind(&MoveLine {
            id: &self.id,
            ply: u32::try_from(moves.len()).unwrap_or(u32::MAX),
            text,
            think_ms,
            lag_ms,
            clocks_ms: [ms(remaining[0]), ms(remaining[1])],
        });
    }

    /// Whether a move journaled now would have to wait for the disk.
    pub fn is_backed_up(&self) -> bool {
        self.journal.is_backed_up()
    }

    fn last_move_entry(
        &self,
        moves: &SharedMoveLog,
        remaining: [Duration; 2],
    ) -> Option<JournalEntry> {
        let moves = moves.read();
        let (text, think_ms, lag_ms) = moves.last()?;
        Some(JournalEntry::Move {
            id: self.id.clone(),
            ply: u32::try_from(moves.len()).unwrap_or(u32::MAX),
            text: text.to_string(),
            think_ms,
            lag_ms,
            first_clock_ms: ms(remaining[0]),
            second_clock_ms: ms(remaining[1]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Side;

    fn journal_in(dir: &Path, limit: usize) -> (SharedJournal, PathBuf) {
        let path = dir.join("journal.jsonl");
        let (journal, _) = Journal::open(&path).expect("open journal");
        (SharedJournal::with_limit(journal, limit), path)
    }

    fn one_move() -> SharedMoveLog {
        let moves = SharedMoveLog::default();
        moves.push("J10", Side::First, 120, 3);
        moves
    }

    #[test]
    fn a_move_written_behind_reaches_the_file_with_nothing_else_queued() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, path) = journal_in(dir.path(), MAX_QUEUED_BEHIND);
        journal.append_behind(JournalEntry::Started {
            id: "t-r1-p1-g1".into(),
            match_id: "t-r1-p1-g1".into(),
            time: "2026-11-23T00:00:00+00:00".into(),
        });
        // The writer holds it for a group commit (`COMMIT_EVERY`), then writes it unasked. The
        // bound is generous: this checks that it comes, not how fast.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while journal.queued() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let text = std::fs::read_to_string(&path).expect("journal file");
        assert!(text.contains("t-r1-p1-g1"), "{text}");
    }

    /// Moves queued straight from a referee's fields reach the file in order, each line reading
    /// back as the entry it stands for.
    #[test]
    fn moves_queued_from_a_referees_fields_reach_the_file_in_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, path) = journal_in(dir.path(), MAX_QUEUED_BEHIND);
        let moves = MoveJournal {
            journal,
            id: "t-r1-p1-g1".into(),
        };
        let log = SharedMoveLog::default();
        for (ply, text) in ["J10", "K10,K11", "L10,L11"].into_iter().enumerate() {
            log.push(text, Side::First, 100 + ply as u64, 2);
            moves.record_last_move_behind(&log, [Duration::from_secs(59), Duration::from_secs(60)]);
        }
        drop(moves);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let mut text = String::new();
        while text.lines().count() < 3 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
            text = std::fs::read_to_string(&path).unwrap_or_default();
        }
        let entries: Vec<JournalEntry> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a journal entry"))
            .collect();
        let expected: Vec<JournalEntry> = ["J10", "K10,K11", "L10,L11"]
            .into_iter()
            .enumerate()
            .map(|(ply, text)| JournalEntry::Move {
                id: "t-r1-p1-g1".into(),
                ply: ply as u32 + 1,
                text: text.to_string(),
                think_ms: 100 + ply as u64,
                lag_ms: 2,
                first_clock_ms: 59_000,
                second_clock_ms: 60_000,
            })
            .collect();
        assert_eq!(entries, expected);
    }

    #[tokio::test]
    async fn a_backed_up_journal_makes_a_move_wait_until_it_is_on_disk() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A limit of 0: the writer always counts as backed up.
        let (journal, path) = journal_in(dir.path(), 0);
        assert!(journal.is_backed_up());
        let moves = MoveJournal {
            journal,
            id: "t-r1-p1-g1".into(),
        };
        moves
            .record_last_move(
                &one_move(),
                [Duration::from_secs(59), Duration::from_secs(60)],
            )
            .await;
        let text = std::fs::read_to_string(&path).expect("journal file");
        assert!(
            text.lines()
                .any(|l| l.contains("\"t-r1-p1-g1\"") && l.contains("\"J10\"")),
            "the move is on disk when the call returns: {text}"
        );
    }

    #[tokio::test]
    async fn entries_written_behind_are_counted_until_the_writer_has_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, path) = journal_in(dir.path(), 3);
        assert!(!journal.is_backed_up());
        let moves = MoveJournal {
            journal: journal.clone(),
            id: "t-r1-p1-g1".into(),
        };
        moves
            .record_last_move(
                &one_move(),
                [Duration::from_secs(1), Duration::from_secs(1)],
            )
            .await;
        // A blocking append is ordered after it, so once that returns both are written.
        let marker = JournalEntry::Started {
            id: "t-r1-p1-g2".into(),
            match_id: "t-r1-p1-g2".into(),
            time: "2026-11-23T00:00:00+00:00".into(),
        };
        let waiting = journal.clone();
        tokio::task::spawn_blocking(move || waiting.append_blocking(vec![marker]))
            .await
            .expect("task")
            .expect("append");
        assert_eq!(journal.queued(), 0);
        let text = std::fs::read_to_string(&path).expect("journal file");
        assert!(
            text.contains("\"J10\"") && text.contains("t-r1-p1-g2"),
            "{text}"
        );
    }
}

//! The server's use of the crash-safe journal (`crate::journal`): the configuration's
//! fingerprint, the journal shared by the scheduler and the referees (every append made durable
//! on a blocking thread, never on the runtime's), and the per-match handle through which a
//! referee journals each accepted move with both clocks.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::move_log::{MoveLog, SharedMoveLog};
use super::output_health::{OutputHealth, OutputKind};
use crate::clock_settings::whole_ms as ms;
use crate::config::{Config, Format};
use crate::journal::{
    ConfigFingerprint, Journal, JournalEntry, JournalError, MoveLine, TournamentFingerprint,
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
/// file and commits in groups: it writes every line queued since its last fsync in one write,
/// then syncs once for the whole group, so a thousand referees journaling moves cost a few
/// fsyncs a second, not a thousand. Entries reach the file in the order they were queued.
///
/// An entry is encoded by whoever queues it, straight into the queue's buffer (one lock, no
/// entry of its own, no message to the writer): a profile of the bench put the old queue of
/// entries, each copied, sent, encoded on the writer's thread and freed there, at about 4% of
/// the server's CPU per move.
///
/// Written-behind entries are counted while they wait for the writer: past
/// [`MAX_QUEUED_BEHIND`] (a stalled disk), referees wait for their moves to be durable instead
/// of queueing more, so the queue's memory stays bounded.
#[derive(Debug, Clone)]
pub struct SharedJournal {
    handle: Arc<Handle>,
    path: PathBuf,
    max_queued_behind: usize,
}

/// Most journal entries waiting for the writer before written-behind moves wait instead (about
/// 11 MB of lines; at 60,000 moves a second the writer normally holds a few thousand).
pub const MAX_QUEUED_BEHIND: usize = 100_000;

/// The handles' side of the writer: dropped with the last [`SharedJournal`], which tells the
/// writer to write what is left and end.
#[derive(Debug)]
struct Handle {
    queue: Arc<Queue>,
    /// The writer thread, woken when someone waits for a commit or it sleeps with nothing to do.
    writer: Option<std::thread::Thread>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        if let Some(writer) = &self.writer {
            writer.unpark();
        }
    }
}

/// What waits for the writer.
#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<Pending>,
    /// Entries queued and not yet written (those in `pending` and the writer's group), read
    /// without the lock.
    queued: AtomicUsize,
}

/// Lines queued since the writer last took them.
#[derive(Debug, Default)]
struct Pending {
    /// Whole encoded lines, in the order they were queued.
    lines: Vec<u8>,
    /// Entries in `lines`.
    entries: usize,
    /// Who waits for everything queued up to now to be on disk.
    waiters: Vec<Waiter>,
    /// When the first of `lines` was queued: they are committed `COMMIT_EVERY` after it.
    since: Option<std::time::Instant>,
    /// The writer sleeps with nothing to do: whoever queues next wakes it.
    writer_idle: bool,
    /// Every handle is gone: the writer writes what is left and ends.
    closed: bool,
    /// The writer has ended (or never started): nothing queued from now on would be written.
    stopped: bool,
}

/// Told the outcome of the group commit that held its entries.
type Waiter = std::sync::mpsc::SyncSender<Result<(), String>>;

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // The lock guards plain data that no panic can leave half changed.
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Most entries the writer lets queue before it commits them without waiting out
/// `COMMIT_EVERY`: the queuer that reaches it wakes the writer.
const MAX_GROUP_ENTRIES: usize = 4096;

/// Most bytes a group's buffer keeps between commits (a group of `MAX_GROUP_ENTRIES` moves is
/// about 450 KB; the bench's groups at full load about 150 KB).
const KEPT_GROUP_BYTES: usize = 1 << 20;

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
            .spawn(move || {
                let _stopped = WriterStopped(&writer_queue);
                write_in_groups(journal, &writer_queue, &health);
            });
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                // Without the thread every request fails, and says so.
                tracing::error!(error = %e, "cannot start the journal writer thread");
                queue.lock().stopped = true;
                None
            }
        };
        SharedJournal {
            handle: Arc::new(Handle { queue, writer }),
            path,
            max_queued_behind,
        }
    }

    /// Whether so many entries wait for the writer that moves should wait to be durable.
    pub fn is_backed_up(&self) -> bool {
        self.queued() >= self.max_queued_behind
    }

    /// Entries queued and not yet written.
    fn queued(&self) -> usize {
        self.handle.queue.queued.load(Ordering::Relaxed)
    }

    /// Queues the lines `encode` appends (it returns how many entries they are), and `waiter`
    /// to be told once they are on disk.
    fn queue(
        &self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<usize, JournalError>,
        waiter: Option<Waiter>,
    ) -> Result<(), String> {
        let mut pending = self.handle.queue.lock();
        if pending.stopped {
            return Err("the journal writer has stopped".to_string());
        }
        let start = pending.lines.len();
        let count = match encode(&mut pending.lines) {
            Ok(count) => count,
            Err(e) => {
                pending.lines.truncate(start);
                return Err(e.to_string());
            }
        };
        self.handle.queue.queued.fetch_add(count, Ordering::Relaxed);
        let reached_group =
            pending.entries < MAX_GROUP_ENTRIES && pending.entries + count >= MAX_GROUP_ENTRIES;
        pending.entries += count;
        if pending.since.is_none() {
            pending.since = Some(std::time::Instant::now());
        }
        let wake = waiter.is_some() || pending.writer_idle || reached_group;
        if let Some(waiter) = waiter {
            pending.waiters.push(waiter);
        }
        pending.writer_idle = false;
        drop(pending);
        if wake {
            if let Some(writer) = &self.handle.writer {
                writer.unpark();
            }
        }
        Ok(())
    }

    /// Queues `entries` with someone to wait for them; the receiver hears once they are on disk.
    fn queue_waited(
        &self,
        entries: &[JournalEntry],
    ) -> Result<std::sync::mpsc::Receiver<Result<(), String>>, JournalError> {
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.queue(|lines| encode_lines(entries, lines), Some(done))
            .map_err(|e| self.error(e))?;
        Ok(wait)
    }

    fn wait(
        &self,
        wait: &std::sync::mpsc::Receiver<Result<(), String>>,
    ) -> Result<(), JournalError> {
        wait.recv()
            .map_err(|_| self.error("the journal writer has stopped".into()))?
            .map_err(|e| self.error(e))
    }

    fn error(&self, message: String) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(message),
        }
    }

    /// Appends entries in order and waits until they are on disk. Blocking: call from a
    /// blocking thread.
    pub fn append_blocking(&self, entries: Vec<JournalEntry>) -> Result<(), JournalError> {
        if entries.is_empty() {
            return Ok(());
        }
        let wait = self.queue_waited(&entries)?;
        self.wait(&wait)
    }

    /// Appends entries (queued now, in order with everything queued before) and waits (on a
    /// blocking thread, never the runtime's) until they are on disk. A failure is logged: the
    /// league goes on, but a crash from now on may lose the entries. (Waiting through
    /// `spawn_blocking` also keeps paused-time tests exact: the runtime does not jump its clock
    /// while a blocking task is running.)
    pub async fn append(&self, entries: Vec<JournalEntry>) {
        if entries.is_empty() {
            return;
        }
        let queued = self.queue_waited(&entries);
        self.wait_on_blocking_thread(queued).await;
    }

    /// Waits for what `queued` holds on a blocking thread, logging a failure.
    async fn wait_on_blocking_thread(
        &self,
        queued: Result<std::sync::mpsc::Receiver<Result<(), String>>, JournalError>,
    ) {
        let result = match queued {
            Ok(wait) => {
                let journal = self.clone();
                match tokio::task::spawn_blocking(move || journal.wait(&wait)).await {
                    Ok(waited) => waited.map_err(|e| e.to_string()),
                    Err(e) => Err(format!("journal task failed: {e}")),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "cannot append to the journal");
        }
    }

    /// Queues one entry without waiting: it reaches the disk with the writer's next group commit.
    pub fn append_behind(&self, entry: JournalEntry) {
        self.queue_behind(|lines| entry.encode_line(lines).map(|()| 1));
    }

    /// Queues the line `encode` appends without waiting (one entry).
    fn queue_behind(&self, encode: impl FnOnce(&mut Vec<u8>) -> Result<usize, JournalError>) {
        if let Err(e) = self.queue(encode, None) {
            tracing::error!(error = %e, path = %self.path.display(), "cannot append to the journal");
        }
    }
}

thread_local! {
    /// A move's journal line as it is encoded, before it is queued (see
    /// [`MoveJournal::record_last_move_behind`]): one buffer per thread, kept between moves.
    static MOVE_LINE_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A scratch line grown past this (a move text near the line cap) is freed after use.
const MAX_SCRATCH_BYTES: usize = 4096;

/// Encodes `entries`, one line each, and says how many.
fn encode_lines(entries: &[JournalEntry], lines: &mut Vec<u8>) -> Result<usize, JournalError> {
    for entry in entries {
        entry.encode_line(lines)?;
    }
    Ok(entries.len())
}

/// Marks the queue stopped when the writer thread ends, however it ends: later requests fail at
/// once, and whoever still waits hears that the writer is gone (their senders are dropped).
struct WriterStopped<'a>(&'a Queue);

impl Drop for WriterStopped<'_> {
    fn drop(&mut self) {
        let mut pending = self.0.lock();
        pending.stopped = true;
        pending.waiters.clear();
    }
}

/// How long written-behind entries may wait in the writer before a group commit: one fsync
/// per window instead of one after another (each costs the machine CPU, on a virtual disk
/// much more than the write). A request someone waits for is committed at once.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// The writer thread: lets lines queue until someone waits for them, `COMMIT_EVERY` has passed
/// since the first arrived, or `MAX_GROUP_ENTRIES` are queued; then takes them all, writes them
/// in one write, syncs once, and tells each waiting requester the outcome. While lines wait it
/// sleeps with a timeout, so queueing a move costs the referee no wake-up; a requester that
/// waits wakes it (`unpark`), and so does the first line queued while it sleeps with nothing.
///
/// A group that cannot be written (a full disk, a read-only folder) is cut back off the file
/// and kept, with what is queued meanwhile taken behind it in order, and written again after a
/// pause that doubles up to `MAX_RETRY_PAUSE`: nothing is dropped while the server runs, and
/// requesters who wait for it wait until it is on disk. `health` hears when writing fails and
/// when it works again. Once every handle is gone (the server stops) a failing group is tried
/// for `GIVE_UP_AFTER` more, then reported lost.
fn write_in_groups(mut journal: Journal, queue: &Queue, health: &OutputHealth) {
    let queued = &queue.queued;
    // The group being written: lines taken from the queue (kept while a write fails).
    let mut group: Vec<u8> = Vec::new();
    let mut group_entries = 0usize;
    let mut waiters: Vec<Waiter> = Vec::new();
    let mut retry = Retry::default();
    loop {
        let closed = {
            let mut pending = queue.lock();
            loop {
                let holding = !group.is_empty() || !waiters.is_empty();
                let queued_now = pending.entries > 0 || !pending.waiters.is_empty();
                if !holding && !queued_now {
                    if pending.closed {
                        return;
                    }
                    pending.writer_idle = true;
                    drop(pending);
                    std::thread::park();
                    pending = queue.lock();
                    continue;
                }
                let now = std::time::Instant::now();
                let due = pending.since.map(|since| since + COMMIT_EVERY);
                let ready = match retry.next_at {
                    Some(at) => now >= at,
                    None => {
                        !pending.waiters.is_empty()
                            || pending.closed
                            || pending.entries >= MAX_GROUP_ENTRIES
                            || due.is_none_or(|due| now >= due)
                    }
                };
                if ready {
                    break;
                }
                let until = retry.next_at.or(due).unwrap_or(now);
                drop(pending);
                std::thread::park_timeout(until.saturating_duration_since(now));
                pending = queue.lock();
            }
            // Take everything queued: swapped, not copied, when no failed group is kept (the
            // queue gets the last group's emptied buffer back).
            if group.is_empty() {
                std::mem::swap(&mut group, &mut pending.lines);
            } else {
                group.extend_from_slice(&pending.lines);
                pending.lines.clear();
            }
            group_entries += std::mem::take(&mut pending.entries);
            waiters.append(&mut pending.waiters);
            pending.since = None;
            pending.closed
        };
        let now = std::time::Instant::now();
        match commit(&mut journal, &group) {
            Ok(()) => {
                queued.fetch_sub(std::mem::take(&mut group_entries), Ordering::Relaxed);
                group.clear();
                if group.capacity() > KEPT_GROUP_BYTES {
                    group = Vec::new();
                }
                for done in waiters.drain(..) {
                    let _ = done.send(Ok(()));
                }
                if retry.failing() {
                    health.recovered(OutputKind::Journal);
                }
                retry = Retry::default();
            }
            Err(e) => {
                let waiting = queued.load(Ordering::Relaxed);
                health.failed(OutputKind::Journal, &e, waiting);
                if closed && retry.gave_up(now) {
                    tracing::error!(error = %e, entries = waiting, "the server is stopping and the journal still cannot be written: these entries are lost (games in progress resume from their last saved move)");
                    for done in waiters.drain(..) {
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
fn commit(journal: &mut Journal, group: &[u8]) -> Result<(), String> {
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
        if !self.journal.is_backed_up() {
            self.record_last_move_behind(moves, remaining);
            return;
        }
        let queued = {
            let moves = moves.read();
            let Some(line) = self.last_move_line(&moves, remaining) else {
                return;
            };
            let (done, wait) = std::sync::mpsc::sync_channel(1);
            self.journal
                .queue(
                    |lines| {
                        line.encode_line(lines);
                        Ok(1)
                    },
                    Some(done),
                )
                .map(|()| wait)
                .map_err(|e| self.journal.error(e))
        };
        self.journal.wait_on_blocking_thread(queued).await;
    }

    /// [`MoveJournal::record_last_move`] for a caller that cannot wait: always written behind.
    /// Callers look at [`MoveJournal::is_backed_up`] first and wait (with the async form)
    /// when it says so.
    pub fn record_last_move_behind(&self, moves: &SharedMoveLog, remaining: [Duration; 2]) {
        // Encoded from the move log while it is held, into this thread's scratch line, and only
        // copied under the queue's lock: both workers queue moves, and a lock held for the
        // encoding made the other one sleep on it (a futex wait and a context switch) often
        // enough to show in a profile.
        MOVE_LINE_SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            {
                let moves = moves.read();
                let Some(line) = self.last_move_line(&moves, remaining) else {
                    return;
                };
                line.encode_line(scratch);
            }
            self.journal.queue_behind(|lines| {
                lines.extend_from_slice(scratch);
                Ok(1)
            });
            if scratch.capacity() > MAX_SCRATCH_BYTES {
                *scratch = Vec::new();
            }
        });
    }

    /// Whether a move journaled now would have to wait for the disk.
    pub fn is_backed_up(&self) -> bool {
        self.journal.is_backed_up()
    }

    /// The journal's line for the last of `moves`, by reference into the log.
    fn last_move_line<'a>(
        &'a self,
        moves: &'a MoveLog,
        remaining: [Duration; 2],
    ) -> Option<MoveLine<'a>> {
        let (text, think_ms, lag_ms) = moves.last()?;
        Some(MoveLine {
            id: &self.id,
            ply: u32::try_from(moves.len()).unwrap_or(u32::MAX),
            text,
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

    #[test]
    fn what_is_queued_behind_when_the_last_handle_goes_is_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, path) = journal_in(dir.path(), MAX_QUEUED_BEHIND);
        let moves = MoveJournal {
            journal,
            id: "t-r1-p1-g1".into(),
        };
        moves.record_last_move_behind(&one_move(), [Duration::from_secs(3), Duration::ZERO]);
        // The server stops: the writer is told at once, without waiting out `COMMIT_EVERY`.
        drop(moves);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let mut text = String::new();
        while !text.contains("\"J10\"") && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
            text = std::fs::read_to_string(&path).expect("journal file");
        }
        assert!(
            text.contains("{\"kind\":\"move\",\"id\":\"t-r1-p1-g1\",\"ply\":1,\"text\":\"J10\",\"think_ms\":120,\"lag_ms\":3,\"first_clock_ms\":3000,\"second_clock_ms\":0}\n"),
            "{text}"
        );
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
        let (at_move, at_marker) = (text.find("\"J10\""), text.find("t-r1-p1-g2"));
        assert!(
            at_move.is_some() && at_marker.is_some() && at_move < at_marker,
            "both written, in the order they were queued: {text}"
        );
    }
}

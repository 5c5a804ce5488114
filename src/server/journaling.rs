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
    ConfigFingerprint, Journal, JournalEntry, JournalError, TournamentFingerprint,
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
/// Written-behind entries are counted while they wait for the writer: past
/// [`MAX_QUEUED_BEHIND`] (a stalled disk), referees wait for their moves to be durable instead
/// of queueing more, so the queue's memory stays bounded.
#[derive(Debug, Clone)]
pub struct SharedJournal {
    /// Unbounded (its length is bounded by `queued` instead). std's queue frees its blocks as
    /// the writer takes them; flume's kept the room of its longest queue (twice the entries of
    /// a group commit at full load, about 0.3 KiB per match in the bench) for no gain that
    /// the bench could tell apart from its noise.
    requests: std::sync::mpsc::Sender<Request>,
    path: PathBuf,
    /// Entries sent and not yet written by the writer thread.
    queued: Arc<AtomicUsize>,
    max_queued_behind: usize,
    /// The writer thread, woken when someone waits for a commit.
    writer: Option<std::thread::Thread>,
}

/// Most journal entries waiting for the writer before written-behind moves wait instead (about
/// 20 MB of entries; at 60,000 moves a second the writer normally keeps a few thousand).
pub const MAX_QUEUED_BEHIND: usize = 100_000;

/// A batch of entries for the writer, and who waits for it to be durable.
#[derive(Debug)]
struct Request {
    entries: Entries,
    ack: Ack,
}

/// A request's entries: a move is one entry, handed over without a vector of its own.
#[derive(Debug)]
enum Entries {
    One(JournalEntry),
    Many(Vec<JournalEntry>),
}

impl Entries {
    fn len(&self) -> usize {
        match self {
            Entries::One(_) => 1,
            Entries::Many(entries) => entries.len(),
        }
    }

    fn iter(&self) -> std::slice::Iter<'_, JournalEntry> {
        match self {
            Entries::One(entry) => std::slice::from_ref(entry).iter(),
            Entries::Many(entries) => entries.iter(),
        }
    }
}

#[derive(Debug)]
enum Ack {
    /// Write-behind: nobody waits (moves of a game in progress).
    None,
    Blocking(std::sync::mpsc::SyncSender<Result<(), String>>),
}

/// Most requests the writer takes into one group commit.
const MAX_BATCH: usize = 4096;

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
        let (requests, inbox) = std::sync::mpsc::channel::<Request>();
        let queued = Arc::new(AtomicUsize::new(0));
        let writer_queued = queued.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || write_in_groups(journal, inbox, &writer_queued, &health));
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                // Without the thread every request fails (its receiver is gone) and says so.
                tracing::error!(error = %e, "cannot start the journal writer thread");
                None
            }
        };
        SharedJournal {
            requests,
            path,
            queued,
            max_queued_behind,
            writer,
        }
    }

    /// Whether so many entries wait for the writer that moves should wait to be durable.
    pub fn is_backed_up(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= self.max_queued_behind
    }

    fn send(&self, entries: Entries, ack: Ack) -> Result<(), String> {
        let count = entries.len();
        self.queued.fetch_add(count, Ordering::Relaxed);
        self.requests.send(Request { entries, ack }).map_err(|_| {
            self.queued.fetch_sub(count, Ordering::Relaxed);
            "the journal writer has stopped".to_string()
        })
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
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.send(Entries::Many(entries), Ack::Blocking(done))
            .map_err(|e| self.error(e))?;
        if let Some(writer) = &self.writer {
            writer.unpark();
        }
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

    /// Queues one entry without waiting: it reaches the disk with the writer's next group commit
    /// (no vector is allocated: a move is queued this way at every ply).
    pub fn append_behind(&self, entry: JournalEntry) {
        if let Err(e) = self.send(Entries::One(entry), Ack::None) {
            tracing::error!(error = %e, path = %self.path.display(), "cannot append to the journal");
        }
    }
}

/// How long written-behind entries may wait in the writer before a group commit: one fsync
/// per window instead of one after another (each costs the machine CPU, on a virtual disk
/// much more than the write). A request someone waits for is committed at once.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// The writer thread: collects requests until someone waits for one, `COMMIT_EVERY` has passed
/// since the oldest written-behind one arrived, or `MAX_BATCH` are held; then writes their
/// entries, syncs once, and tells each waiting requester the outcome. While it holds
/// written-behind entries it sleeps instead of waiting on the channel, so queueing a move costs
/// the referee no wake-up; a requester that waits wakes it (`unpark`).
///
/// A group that cannot be written (a full disk, a read-only folder) is cut back off the file
/// and kept, with what arrives meanwhile queued behind it in order, and written again after a
/// pause that doubles up to `MAX_RETRY_PAUSE`: nothing is dropped while the server runs, and
/// requesters who wait for it wait until it is on disk. `health` hears when writing fails and
/// when it works again. Once every handle is gone (the server stops) a failing group is tried
/// for `GIVE_UP_AFTER` more, then reported lost.
fn write_in_groups(
    mut journal: Journal,
    inbox: std::sync::mpsc::Receiver<Request>,
    queued: &AtomicUsize,
    health: &OutputHealth,
) {
    use std::sync::mpsc::TryRecvError;
    let mut batch: Vec<Request> = Vec::new();
    let mut someone_waits = false;
    let mut due = std::time::Instant::now();
    let mut retry = Retry::default();
    let mut closed = false;
    loop {
        if batch.is_empty() {
            if closed {
                return;
            }
            match inbox.recv() {
                Ok(request) => {
                    due = std::time::Instant::now() + COMMIT_EVERY;
                    someone_waits |= matches!(request.ack, Ack::Blocking(_));
                    batch.push(request);
                }
                Err(_) => return,
            }
        }
        while !closed && (batch.len() < MAX_BATCH || retry.failing()) {
            match inbox.try_recv() {
                Ok(request) => {
                    someone_waits |= matches!(request.ack, Ack::Blocking(_));
                    batch.push(request);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        let now = std::time::Instant::now();
        let ready = match retry.next_at {
            Some(at) => now >= at,
            None => someone_waits || closed || batch.len() >= MAX_BATCH || now >= due,
        };
        if !ready {
            let until = retry.next_at.unwrap_or(due);
            std::thread::park_timeout(until.saturating_duration_since(now));
            continue;
        }
        match commit(&mut journal, &batch) {
            Ok(()) => {
                let written: usize = batch.iter().map(|r| r.entries.len()).sum();
                queued.fetch_sub(written, Ordering::Relaxed);
                // Drained, not replaced: the batch keeps its capacity for the next group.
                for request in batch.drain(..) {
                    if let Ack::Blocking(done) = request.ack {
                        let _ = done.send(Ok(()));
                    }
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
                    for request in batch.drain(..) {
                        if let Ack::Blocking(done) = request.ack {
                            let _ = done.send(Err(e.clone()));
                        }
                    }
                    return;
                }
                retry.failed(now, closed);
            }
        }
        someone_waits = false;
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

/// Writes a group's entries and syncs once. On failure the file is cut back to where the group
/// began (after a failed sync the system may have dropped the pages, so the entries are not
/// known to be on disk): the whole group is written again on the next try.
fn commit(journal: &mut Journal, batch: &[Request]) -> Result<(), String> {
    let before = journal.len();
    let result = journal
        .write_entries(batch.iter().flat_map(|r| r.entries.iter()))
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
        if let Some(entry) = self.last_move_entry(moves, remaining) {
            self.journal.append_behind(entry);
        }
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
        while journal.queued.load(Ordering::Relaxed) > 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let text = std::fs::read_to_string(&path).expect("journal file");
        assert!(text.contains("t-r1-p1-g1"), "{text}");
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
        assert_eq!(journal.queued.load(Ordering::Relaxed), 0);
        let text = std::fs::read_to_string(&path).expect("journal file");
        assert!(
            text.contains("\"J10\"") && text.contains("t-r1-p1-g2"),
            "{text}"
        );
    }
}

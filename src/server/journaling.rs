//! The server's use of the crash-safe journal (`crate::journal`): the configuration's
//! fingerprint, the journal shared by the scheduler and the referees (every append made durable
//! on a blocking thread, never on the runtime's), and the per-match handle through which a
//! referee journals each accepted move with both clocks.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
/// Entries are encoded as the file's lines where they are queued, each thread into a buffer of
/// its own (a [`Shard`]), numbered in one sequence across threads; the writer takes every
/// buffer and writes the lines in number order. A move costs its referee a lock nobody else
/// takes meanwhile, one shared counter and about a hundred bytes written into memory its own
/// core wrote last. (Until 2026-12-01 each entry went through a channel as a value, with its
/// move text copied into a string of its own, and the writer encoded it; a single buffer
/// shared by every thread cost as much again, in its lines passed from core to core.)
///
/// Entries waiting for the writer are counted: past [`MAX_QUEUED_BEHIND`] (a stalled disk),
/// referees wait for their moves to be durable instead of queueing more, so the queue's memory
/// stays bounded.
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
    /// The writer thread, woken when its queue has something new for it to look at.
    writer: Option<std::thread::Thread>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.queue.control().closed = true;
        if let Some(writer) = &self.writer {
            writer.unpark();
        }
    }
}

/// The entries waiting for the writer.
#[derive(Debug)]
struct Queue {
    /// The number of the next entry: lines reach the file in this order. An entry takes its
    /// number while its thread's shard is locked, which is what lets the writer know when it
    /// has every entry below a number (see `write_in_groups`).
    next_number: AtomicU64,
    /// Set by the first entry queued after the writer took the shards (which wakes it).
    pending: AtomicBool,
    /// Set by the writer while so many entries wait that moves should wait to be durable.
    backed_up: AtomicBool,
    max_queued_behind: usize,
    /// Entries the writer has taken and not yet written (for tests and the health report).
    held: AtomicUsize,
    /// Every thread's shard.
    shards: std::sync::Mutex<Vec<Arc<Shard>>>,
    control: std::sync::Mutex<Control>,
}

/// Who waits for the queue to be on disk, and whether every handle is gone.
#[derive(Debug, Default)]
struct Control {
    waiting: Vec<std::sync::mpsc::SyncSender<Result<(), String>>>,
    closed: bool,
}

/// The entries one thread queued since the writer last took them.
#[derive(Debug, Default)]
struct Shard(std::sync::Mutex<Numbered>);

/// Encoded lines with, per entry, its number and where its line ends, in number order.
#[derive(Debug, Default)]
struct Numbered {
    lines: EncodedLines,
    ends: Vec<(u64, usize)>,
}

impl Numbered {
    fn clear(&mut self) {
        self.lines.clear(KEPT_LINES_BYTES);
        self.ends.clear();
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

impl Queue {
    fn new(max_queued_behind: usize) -> Queue {
        Queue {
            next_number: AtomicU64::new(0),
            pending: AtomicBool::new(false),
            backed_up: AtomicBool::new(max_queued_behind == 0),
            max_queued_behind,
            held: AtomicUsize::new(0),
            shards: std::sync::Mutex::default(),
            control: std::sync::Mutex::default(),
        }
    }

    fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn shards(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Shard>>> {
        self.shards.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Shard {
    fn lock(&self) -> std::sync::MutexGuard<'_, Numbered> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

thread_local! {
    /// This thread's shard of each journal it has queued to.
    static SHARDS: std::cell::RefCell<Vec<(std::sync::Weak<Queue>, Arc<Shard>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The calling thread's shard of `queue` (made and registered with the queue the first time).
fn own_shard(queue: &Arc<Queue>) -> Arc<Shard> {
    SHARDS.with_borrow_mut(|kept| {
        if let Some((_, shard)) = kept
            .iter()
            .find(|(q, _)| std::ptr::eq(q.as_ptr(), Arc::as_ptr(queue)))
        {
            return shard.clone();
        }
        // The shards of journals that are gone go with this thread's next new one.
        kept.retain(|(q, _)| q.strong_count() > 0);
        let shard = Arc::new(Shard::default());
        queue.shards().push(shard.clone());
        kept.push((Arc::downgrade(queue), shard.clone()));
        shard
    })
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
        let queue = Arc::new(Queue::new(max_queued_behind));
        let writer_queue = queue.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || write_in_groups(journal, &writer_queue, &health));
        let writer = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                // Without the thread nothing is written; whoever queues is told so.
                tracing::error!(error = %e, "cannot start the journal writer thread");
                None
            }
        };
        SharedJournal {
            handle: Arc::new(Handle {
                queue,
                path,
                writer,
            }),
        }
    }

    /// Whether so many entries wait for the writer that moves should wait to be durable.
    pub fn is_backed_up(&self) -> bool {
        self.handle.queue.backed_up.load(Ordering::Relaxed)
    }

    /// Entries queued and not yet written.
    #[cfg(test)]
    fn queued(&self) -> usize {
        let queue = &self.handle.queue;
        let in_shards: usize = queue.shards().iter().map(|s| s.lock().len()).sum();
        in_shards + queue.held.load(Ordering::SeqCst)
    }

    /// Queues `count` entries that `encode` writes into the calling thread's shard, numbered
    /// in turn, with `waiter` told once they are on disk; wakes the writer when it must look.
    fn queue(
        &self,
        count: usize,
        encode: impl FnOnce(&mut Numbered, u64),
        waiter: Option<std::sync::mpsc::SyncSender<Result<(), String>>>,
    ) -> Result<(), String> {
        let Some(writer) = &self.handle.writer else {
            return Err("the journal writer has stopped".to_string());
        };
        let queue = &self.handle.queue;
        let shard = own_shard(queue);
        {
            let mut numbered = shard.lock();
            let first = queue
                .next_number
                .fetch_add(u64::try_from(count).unwrap_or(u64::MAX), Ordering::SeqCst);
            encode(&mut numbered, first);
        }
        let mut wake = false;
        if let Some(waiter) = waiter {
            queue.control().waiting.push(waiter);
            wake = true;
        }
        // The first entry after the writer took the shards starts its group's wait; the next
        // ones find it sleeping on that and wake nobody.
        if !queue.pending.load(Ordering::SeqCst) {
            queue.pending.store(true, Ordering::SeqCst);
            wake = true;
        }
        if wake {
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

    /// Queues entries encoded beforehand (`lines`: one line each), numbered in turn.
    fn queue_lines(
        &self,
        lines: &EncodedLines,
        ends: &[usize],
        waiter: Option<std::sync::mpsc::SyncSender<Result<(), String>>>,
    ) -> Result<(), String> {
        self.queue(
            ends.len(),
            |numbered, first| {
                let mut start = 0;
                for (number, &end) in (first..).zip(ends) {
                    numbered.lines.push_lines_of(lines, start..end, 1);
                    numbered.ends.push((number, numbered.lines.byte_len()));
                    start = end;
                }
            },
            waiter,
        )
    }

    /// Encodes entries one line each, with where each line ends.
    fn encode(entries: &[JournalEntry]) -> Result<(EncodedLines, Vec<usize>), JournalError> {
        let mut lines = EncodedLines::default();
        let mut ends = Vec::with_capacity(entries.len());
        for entry in entries {
            lines.push(entry)?;
            ends.push(lines.byte_len());
        }
        Ok((lines, ends))
    }

    /// Appends entries in order and waits until they are on disk. Blocking: call from a
    /// blocking thread.
    pub fn append_blocking(&self, entries: Vec<JournalEntry>) -> Result<(), JournalError> {
        if entries.is_empty() {
            return Ok(());
        }
        // Encoded before any lock is taken: a finished game's entry holds its whole
        // games.jsonl line.
        let (lines, ends) = SharedJournal::encode(&entries)?;
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.queue_lines(&lines, &ends, Some(done))
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
        let queued =
            SharedJournal::encode(std::slice::from_ref(&entry)).and_then(|(lines, ends)| {
                self.queue_lines(&lines, &ends, None)
                    .map_err(|e| self.error(e))
            });
        if let Err(e) = queued {
            tracing::error!(error = %e, "cannot append to the journal");
        }
    }

    /// Queues one move without waiting (see [`SharedJournal::append_behind`]), written
    /// straight into the thread's shard from the referee's own fields.
    pub fn append_move_behind(&self, mv: &MoveLine<'_>) {
        let queued = self.queue(
            1,
            |numbered, number| {
                numbered.lines.push_move(mv);
                numbered.ends.push((number, numbered.lines.byte_len()));
            },
            None,
        );
        if let Err(e) = queued {
            tracing::error!(error = %self.error(e), "cannot append to the journal");
        }
    }
}

/// How long written-behind entries may wait in the writer before a group commit: one fsync
/// per window instead of one after another (each costs the machine CPU, on a virtual disk
/// much more than the write). A request someone waits for is committed at once.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// How often the writer takes the shards while a group gathers: each shard and the writer's
/// staging room then hold a quarter of a group, not a whole one (at 60,000 moves a second a
/// group is about 130 KB, and one each was about a kilobyte of heap per match in the bench).
const TAKE_EVERY: std::time::Duration = std::time::Duration::from_millis(5);

/// What the writer has taken from the shards: the lines to write next, in number order, and
/// the ones numbered too late to be written yet (an entry below their number may still be on
/// its way into a shard).
#[derive(Debug, Default)]
struct Taken {
    /// The group being written (and, while writing fails, tried again).
    group: EncodedLines,
    /// Taken lines numbered at or past the number read before the shards were taken.
    later: Numbered,
    /// Everything taken at once, before it is put in order (kept for its room).
    staging: Numbered,
    /// The staged entries' numbers and byte ranges, put in number order.
    order: Vec<(u64, usize, usize)>,
}

impl Numbered {
    /// Copies every entry of `other` to the end of these, numbers kept.
    fn append_copy_of(&mut self, other: &Numbered) {
        let base = self.lines.byte_len();
        self.lines
            .push_lines_of(&other.lines, 0..other.lines.byte_len(), other.len());
        self.ends
            .extend(other.ends.iter().map(|&(number, end)| (number, base + end)));
    }
}

impl Taken {
    /// Takes every shard's lines, and adds to the group, in number order, every line numbered
    /// below `below` (the queue's next number, read before the first shard was locked: an
    /// entry takes its number while its shard is locked, so every entry numbered below it is
    /// in its shard by the time the writer holds that shard's lock).
    ///
    /// Each shard's lines are copied out and its buffer emptied in place: a thread keeps
    /// writing into the room it wrote last, and a thread that queued little (one of the
    /// blocking pool's) never holds a buffer grown by a busy one.
    fn take(&mut self, queue: &Queue, below: u64) {
        let mut staged = std::mem::take(&mut self.staging);
        staged.clear();
        staged.append_copy_of(&self.later);
        self.later.clear();
        let shards: Vec<Arc<Shard>> = queue.shards().clone();
        for shard in &shards {
            let mut numbered = shard.lock();
            staged.append_copy_of(&numbered);
            numbered.clear();
        }
        drop(shards);
        self.order.clear();
        let mut start = 0;
        for &(number, end) in &staged.ends {
            self.order.push((number, start, end));
            start = end;
        }
        self.order.sort_unstable_by_key(|&(number, _, _)| number);
        for &(number, start, end) in &self.order {
            if number < below {
                self.group.push_lines_of(&staged.lines, start..end, 1);
            } else {
                self.later.lines.push_lines_of(&staged.lines, start..end, 1);
                let end = self.later.lines.byte_len();
                self.later.ends.push((number, end));
            }
        }
        staged.clear();
        self.staging = staged;
        // A thread that is gone leaves an empty shard only the queue holds: let it go.
        queue
            .shards()
            .retain(|shard| Arc::strong_count(shard) > 1 || shard.lock().len() > 0);
    }

    fn held(&self) -> usize {
        self.group.entries() + self.later.len()
    }
}

/// The writer thread: lets written-behind entries gather until someone waits for them,
/// `COMMIT_EVERY` has passed since the first of them woke it, or every handle is gone; then
/// takes them all, writes them in one write, syncs once, and tells each waiting requester the
/// outcome. It sleeps meanwhile, so queueing a move costs the referee no wake-up; a requester
/// that waits, or the first entry of a group, wakes it (`unpark`).
///
/// A group that cannot be written (a full disk, a read-only folder) is cut back off the file
/// and kept, with what arrives meanwhile queued behind it in order, and written again after a
/// pause that doubles up to `MAX_RETRY_PAUSE`: nothing is dropped while the server runs, and
/// requesters who wait for it wait until it is on disk. While a group gathers (and while a
/// write fails) the writer takes the shards every `TAKE_EVERY`, which keeps them small and
/// tells it when so much waits that moves must wait.
/// `health` hears when writing fails and when it works again. Once every handle is gone (the
/// server stops) a failing group is tried for `GIVE_UP_AFTER` more, then reported lost.
fn write_in_groups(mut journal: Journal, queue: &Queue, health: &OutputHealth) {
    let mut taken = Taken::default();
    let mut waiting: Vec<std::sync::mpsc::SyncSender<Result<(), String>>> = Vec::new();
    let mut retry = Retry::default();
    // When the group that is gathering is to be written, and when its shards are next taken.
    let mut due: Option<std::time::Instant> = None;
    let mut next_take = std::time::Instant::now();
    loop {
        let now = std::time::Instant::now();
        let (someone_waits, closed) = {
            let control = queue.control();
            (
                !control.waiting.is_empty() || !waiting.is_empty(),
                control.closed,
            )
        };
        let pending = queue.pending.load(Ordering::SeqCst);
        if (pending || retry.failing()) && due.is_none() {
            due = Some(now + COMMIT_EVERY);
            next_take = now + TAKE_EVERY;
        }
        let write_now = match retry.next_at {
            Some(at) => now >= at,
            None => someone_waits || closed || due.is_some_and(|due| now >= due),
        };
        let take_now = write_now || (due.is_some() && now >= next_take);
        if !take_now {
            if closed && taken.held() == 0 && !pending {
                return;
            }
            let wake = [retry.next_at, due, due.map(|_| next_take)];
            match wake.into_iter().flatten().min() {
                Some(until) => std::thread::park_timeout(until.saturating_duration_since(now)),
                None => std::thread::park(),
            }
            continue;
        }
        if write_now {
            // The group's last take: whoever waits first (their entries are in the shards
            // before they wait); the flag is cleared before the shards are taken, so that an
            // entry queued after the take sets it again and wakes the writer.
            waiting.append(&mut queue.control().waiting);
            queue.pending.store(false, Ordering::SeqCst);
        }
        let below = queue.next_number.load(Ordering::SeqCst);
        taken.take(queue, below);
        next_take = now + TAKE_EVERY;
        queue.held.store(taken.held(), Ordering::SeqCst);
        queue
            .backed_up
            .store(taken.held() >= queue.max_queued_behind, Ordering::Relaxed);
        if !write_now {
            continue;
        }
        due = None;
        if taken.later.len() > 0 {
            // Numbered past what could be taken whole: written with the next group, soon.
            queue.pending.store(true, Ordering::SeqCst);
        }
        if taken.group.is_empty() && waiting.is_empty() {
            // Once every handle is gone nothing more can be queued: all is written.
            if closed && taken.held() == 0 {
                return;
            }
            continue;
        }
        match commit(&mut journal, &taken.group) {
            Ok(()) => {
                taken.group.clear(KEPT_LINES_BYTES);
                queue.held.store(taken.held(), Ordering::SeqCst);
                queue
                    .backed_up
                    .store(taken.held() >= queue.max_queued_behind, Ordering::Relaxed);
                for done in waiting.drain(..) {
                    let _ = done.send(Ok(()));
                }
                if retry.failing() {
                    health.recovered(OutputKind::Journal);
                }
                retry = Retry::default();
            }
            Err(e) => {
                let waiting_entries = taken.held();
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
    /// The id's bytes, inline up to `ID_INLINE` bytes: a move reads them to write its entry,
    /// and in a heap block of their own they were a cache miss at every move.
    id: smallvec::SmallVec<[u8; ID_INLINE]>,
}

/// A schedule id held inline up to this length (longer ones live in a heap block).
const ID_INLINE: usize = 32;

impl MoveJournal {
    pub fn new(journal: SharedJournal, id: &str) -> MoveJournal {
        MoveJournal {
            journal,
            id: smallvec::SmallVec::from_slice(id.as_bytes()),
        }
    }

    /// The game's schedule id.
    pub fn id(&self) -> &str {
        // Made from a `&str`, so always UTF-8.
        std::str::from_utf8(&self.id).unwrap_or_default()
    }

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
            id: self.id(),
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
            id: Arc::from(self.id()),
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
        let moves = MoveJournal::new(journal, "t-r1-p1-g1");
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

    /// The writer's take merges the shards in number order and holds back what is numbered at
    /// or past the number it read first (a lower number may still be on its way into a shard),
    /// writing it with the next take.
    #[test]
    fn a_take_writes_in_number_order_and_holds_back_what_came_too_late() {
        let queue = Queue::new(MAX_QUEUED_BEHIND);
        let (a, b) = (Arc::new(Shard::default()), Arc::new(Shard::default()));
        queue.shards().extend([a.clone(), b.clone()]);
        let queue_move = |shard: &Shard, number: u64| {
            let mut numbered = shard.lock();
            numbered.lines.push_move(&MoveLine {
                id: "g",
                ply: u32::try_from(number).expect("small"),
                text: "J10",
                think_ms: 0,
                lag_ms: 0,
                clocks_ms: [0, 0],
            });
            let end = numbered.lines.byte_len();
            numbered.ends.push((number, end));
        };
        let plies = |lines: &EncodedLines| -> Vec<u32> {
            std::str::from_utf8(lines.as_bytes())
                .expect("utf-8")
                .lines()
                .map(|line| match serde_json::from_str(line).expect("an entry") {
                    JournalEntry::Move { ply, .. } => ply,
                    other => panic!("not a move: {other:?}"),
                })
                .collect()
        };
        for n in [0, 2, 3, 5] {
            queue_move(&a, n);
        }
        queue_move(&b, 1);
        // Read before the shards were taken: 4 has its number but is not in its shard yet.
        let mut taken = Taken::default();
        taken.take(&queue, 4);
        assert_eq!(plies(&taken.group), [0, 1, 2, 3]);
        assert_eq!(taken.later.len(), 1, "5 waits for 4");
        taken.group.clear(KEPT_LINES_BYTES);
        queue_move(&b, 4);
        queue_move(&a, 6);
        taken.take(&queue, 7);
        assert_eq!(plies(&taken.group), [4, 5, 6]);
        assert_eq!(taken.held(), 3);
    }

    /// Threads take turns under one lock, as a game's two connections do under its referee's,
    /// each queueing its move from a shard of its own: the file has every move once, in the
    /// order the lock gave them, however the writer's takes fall between them.
    #[test]
    fn moves_queued_from_several_threads_in_turn_reach_the_file_in_that_order() {
        const THREADS: usize = 4;
        // Long enough for the writer to take the shards several times meanwhile.
        const FOR: Duration = Duration::from_millis(150);
        let dir = tempfile::tempdir().expect("temp dir");
        let (journal, path) = journal_in(dir.path(), MAX_QUEUED_BEHIND);
        let turn = Arc::new(std::sync::Mutex::new(0u32));
        let until = std::time::Instant::now() + FOR;
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (journal, turn) = (journal.clone(), turn.clone());
                std::thread::spawn(move || loop {
                    let mut next = turn.lock().expect("turn");
                    if std::time::Instant::now() >= until {
                        return;
                    }
                    *next += 1;
                    journal.append_move_behind(&MoveLine {
                        id: "t-r1-p1-g1",
                        ply: *next,
                        text: "J10",
                        think_ms: 1,
                        lag_ms: 0,
                        clocks_ms: [1, 1],
                    });
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        // A blocking append comes after every move in the order: once it returns, all are on
        // disk.
        journal
            .append_blocking(vec![JournalEntry::Started {
                id: "t-r1-p1-g2".into(),
                match_id: "t-r1-p1-g2".into(),
                time: "2026-12-01T00:00:00+00:00".into(),
            }])
            .expect("append");
        let text = std::fs::read_to_string(&path).expect("journal file");
        let plies: Vec<u32> = text
            .lines()
            .filter_map(|line| match serde_json::from_str(line).expect("an entry") {
                JournalEntry::Move { ply, .. } => Some(ply),
                _ => None,
            })
            .collect();
        let moves = *turn.lock().expect("turn");
        assert!(moves > 1_000, "{moves} moves");
        assert_eq!(plies, (1..=moves).collect::<Vec<_>>());
        assert!(
            text.trim_end().ends_with("\"2026-12-01T00:00:00+00:00\"}"),
            "the marker last"
        );
        assert_eq!(journal.queued(), 0);
    }

    #[tokio::test]
    async fn a_backed_up_journal_makes_a_move_wait_until_it_is_on_disk() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A limit of 0: the writer always counts as backed up.
        let (journal, path) = journal_in(dir.path(), 0);
        assert!(journal.is_backed_up());
        let moves = MoveJournal::new(journal, "t-r1-p1-g1");
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
        let moves = MoveJournal::new(journal.clone(), "t-r1-p1-g1");
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

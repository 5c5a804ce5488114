//! A connection's outgoing side and what it hands a referee: the handle the registry and the
//! referees hold to reach a bot (`BotLink`, a bounded line queue with its write stamps), the
//! writer task that drains that queue into the socket, `RefereeInput`, what a connection
//! tells the referee of a match, and `RefereeDoor`, how it reaches that referee (its inbox,
//! or directly for a move). Both the registry and the referees depend on this file, never
//! on each other.
//!
//! A line queued while nothing is waiting before it is written at once, from the queuing task,
//! where the socket takes it without waiting (`TryWrite`); only what the socket cannot take
//! now goes through the writer task. A `turn` thus reaches its bot without one more task
//! wake-up per move.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;
use tokio::time::{timeout, Instant};
use tokio_util::sync::CancellationToken;

use crate::game::Side;

use super::arrival::{ReadProgress, SharedRead, SocketLook};
use crate::protocol::RefereeMessage;

/// Round-trip time not measured yet.
const RTT_UNKNOWN: u64 = u64::MAX;

/// When a line reached the socket: set by whoever writes it (the queuing task, or the
/// connection's writer), read by the referee that queued it (a `turn`, whose clock runs from
/// that moment). Two instants kept as atomics, as nanoseconds after the stamp was made plus one
/// (0: not yet), so that the referee's several reads per move take no lock.
#[derive(Debug)]
pub struct WriteStamp {
    origin: tokio::time::Instant,
    /// When the writer began writing the line (before the bytes reach the socket: nothing
    /// that arrived earlier can be an answer to it).
    begun: AtomicU64,
    /// When the write returned.
    written: AtomicU64,
}

impl Default for WriteStamp {
    fn default() -> WriteStamp {
        WriteStamp::new()
    }
}

impl WriteStamp {
    pub fn new() -> WriteStamp {
        WriteStamp {
            origin: tokio::time::Instant::now(),
            begun: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    /// `at` as kept: never 0, and an instant before the stamp was made (which no write can
    /// be) counts as the moment it was made.
    fn encode(&self, at: tokio::time::Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(nanos)
            .unwrap_or(u64::MAX - 1)
            .min(u64::MAX - 1)
            + 1
    }

    fn decode(&self, kept: u64) -> Option<tokio::time::Instant> {
        kept.checked_sub(1)
            .and_then(|nanos| self.origin.checked_add(Duration::from_nanos(nanos)))
    }

    /// Forgets the last stamp (a new line is about to be queued).
    pub fn clear(&self) {
        self.begun.store(0, Ordering::Release);
        self.written.store(0, Ordering::Release);
    }

    /// Records `at` as the moment the writer began writing the line, unless it had begun.
    pub fn begin(&self, at: tokio::time::Instant) {
        // Failing means it had begun: the first moment is kept.
        let _ =
            self.begun
                .compare_exchange(0, self.encode(at), Ordering::AcqRel, Ordering::Acquire);
    }

    /// Records `at` as the moment the line was written (and as its beginning, if the writer
    /// did not say so before).
    pub fn set(&self, at: tokio::time::Instant) {
        let kept = self.encode(at);
        let _ = self
            .begun
            .compare_exchange(0, kept, Ordering::AcqRel, Ordering::Acquire);
        self.written.store(kept, Ordering::Release);
    }

    /// When the line was written, if it has been.
    pub fn get(&self) -> Option<tokio::time::Instant> {
        self.decode(self.written.load(Ordering::Acquire))
    }

    /// When the writer began writing the line, if it has.
    pub fn begun(&self) -> Option<tokio::time::Instant> {
        self.decode(self.begun.load(Ordering::Acquire))
    }
}

/// What drops a connection: the token its tasks watch, and the first reason given for
/// dropping it (for the line that logs its close). Its token is a child of the server's
/// shutdown token, so a shutdown cancels it too, with no reason given.
#[derive(Debug, Clone)]
pub struct LinkClose {
    token: CancellationToken,
    why: Arc<OnceLock<&'static str>>,
}

impl LinkClose {
    pub fn new(token: CancellationToken) -> LinkClose {
        LinkClose {
            token,
            why: Arc::new(OnceLock::new()),
        }
    }

    /// Drops the connection, saying why (the first reason given is the one kept).
    pub fn close_because(&self, why: &'static str) {
        let _ = self.why.set(why);
        self.token.cancel();
    }

    /// Why the connection was dropped, if it was dropped with a reason.
    pub fn why(&self) -> Option<&'static str> {
        self.why.get().copied()
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

/// Why a connection is dropped when its outgoing queue is full.
pub const QUEUE_FULL: &str = "its outgoing queue was full (the bot is not reading)";
/// Why a connection is dropped when a write to it fails.
pub const WRITE_FAILED: &str = "a write to it failed (the bot closed or reset its socket)";
/// Why a connection is dropped when its bot is suspended.
pub const SUSPENDED: &str = "its bot was suspended";
/// Why a connection was dropped for a newer login of the same bot.
pub const REPLACED: &str = "a newer login of its bot replaced it";
/// Why every connection is dropped once the league is over.
pub const LEAGUE_OVER: &str = "the league is over";

/// A line for a connection's writer (with its `\n`), how much of it is already written, and the
/// stamp to set once it is written.
#[derive(Debug)]
pub struct Outgoing {
    pub line: String,
    /// Bytes of `line` already written (by a write that the socket took only in part).
    pub start: usize,
    pub written: Option<Arc<WriteStamp>>,
}

impl Outgoing {
    /// What is left to write.
    pub fn unwritten(&self) -> &[u8] {
        self.line.as_bytes().get(self.start..).unwrap_or_default()
    }
}

/// A socket that can be written to without waiting: it takes what it can now, or says
/// `WouldBlock`.
pub trait TryWrite: Send + Sync {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize>;
}

impl TryWrite for OwnedWriteHalf {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        OwnedWriteHalf::try_write(self, bytes)
    }
}

/// Where a connection's writer task writes: a TCP socket's write half (which can also be
/// written to at once by whoever queues a line), or any byte stream (the web view's bridged
/// WebSocket), which only the writer task writes.
pub trait LineSink: Send + 'static {
    /// The socket, for writing a line at once when nothing is queued before it.
    fn direct(&self) -> Option<Arc<dyn TryWrite>>;
    /// Writes all of `bytes`.
    fn write_all<'a>(
        &'a mut self,
        bytes: &'a [u8],
    ) -> impl Future<Output = io::Result<()>> + Send + 'a;
    /// Ends the stream's sending side (after the last line).
    fn finish(self) -> impl Future<Output = ()> + Send;
}

/// A TCP connection's write half, shared between the writer task and the direct writes. Its
/// sending side is shut down when the last holder lets go of it (the writer, at its end).
pub struct TcpSink(Arc<OwnedWriteHalf>);

impl TcpSink {
    pub fn new(half: OwnedWriteHalf) -> TcpSink {
        TcpSink(Arc::new(half))
    }
}

impl LineSink for TcpSink {
    fn direct(&self) -> Option<Arc<dyn TryWrite>> {
        Some(self.0.clone())
    }

    async fn write_all<'a>(&'a mut self, mut bytes: &'a [u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.0.writable().await?;
            match self.0.try_write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn finish(self) {}
}

/// Any byte stream, written only by the writer task.
pub struct StreamSink<W>(pub W);

impl<W: tokio::io::AsyncWrite + Unpin + Send + 'static> LineSink for StreamSink<W> {
    fn direct(&self) -> Option<Arc<dyn TryWrite>> {
        None
    }

    async fn write_all<'a>(&'a mut self, bytes: &'a [u8]) -> io::Result<()> {
        self.0.write_all(bytes).await
    }

    async fn finish(mut self) {
        let _ = self.0.shutdown().await;
    }
}

/// A connection's outgoing lines, shared by its links (which queue) and its writer task (which
/// drains).
struct Outbox {
    state: Mutex<OutboxState>,
    /// Wakes the writer when a line is queued.
    queued: Notify,
    capacity: usize,
}

struct OutboxState {
    lines: VecDeque<Outgoing>,
    /// The writer holds a line it has not finished writing: a new line must queue behind it.
    writing: bool,
    /// The socket, while the writer runs (see `LineSink::direct`).
    direct: Option<Arc<dyn TryWrite>>,
    /// The writer has ended: nothing more is written.
    closed: bool,
}

/// The stamp a line's writing sets, and when its sender queued it: a line written at once
/// counts as begun then (the sender read the clock just before; one clock read less a `turn`).
/// The stamp is shared with the writer only if the line has to wait for it.
struct Stamping<'a> {
    stamp: &'a Arc<WriteStamp>,
    queued_at: Instant,
}

/// What became of a line handed to the outbox.
enum Handed {
    Written,
    Queued,
    Full,
    WriteFailed,
    Closed,
}

impl Outbox {
    fn state(&self) -> MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `line` at once if nothing is ahead of it and the socket takes it all now;
    /// otherwise queues what is left for the writer (never waits). A borrowed line is copied
    /// only if it has to wait.
    fn push(&self, line: Cow<'_, str>, written: Option<Stamping<'_>>) -> Handed {
        let mut state = self.state();
        if state.closed {
            return Handed::Closed;
        }
        // Refused before anything is written, so a line is never half sent and then dropped.
        if state.lines.len() >= self.capacity {
            return Handed::Full;
        }
        let mut start = 0;
        if state.lines.is_empty() && !state.writing {
            if let Some(socket) = &state.direct {
                if let Some(stamping) = &written {
                    stamping.stamp.begin(stamping.queued_at);
                }
                match socket.try_write(line.as_bytes()) {
                    Ok(n) if n == line.len() => {
                        if let Some(stamping) = &written {
                            stamping.stamp.set(Instant::now());
                        }
                        return Handed::Written;
                    }
                    Ok(n) => start = n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => return Handed::WriteFailed,
                }
            }
        }
        state.lines.push_back(Outgoing {
            line: line.into_owned(),
            start,
            written: written.map(|stamping| stamping.stamp.clone()),
        });
        drop(state);
        self.queued.notify_one();
        Handed::Queued
    }

    /// The next line for the writer, which is done with the one before.
    fn pop(&self) -> Option<Outgoing> {
        let mut state = self.state();
        let next = state.lines.pop_front();
        state.writing = next.is_some();
        next
    }

    /// The writer has ended: later lines are refused, and the socket is let go of.
    fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        state.writing = false;
        state.direct = None;
    }
}

/// The writer task's end of a connection's outbox.
pub struct OutboxReader(Arc<Outbox>);

impl OutboxReader {
    /// The next queued line, once there is one (the line before it is then done).
    pub async fn recv(&self) -> Outgoing {
        loop {
            if let Some(next) = self.0.pop() {
                return next;
            }
            self.0.queued.notified().await;
        }
    }

    /// The next queued line, if one is queued now.
    pub fn try_recv(&self) -> Option<Outgoing> {
        self.0.pop()
    }

    /// Whether no line is queued.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.state().lines.is_empty()
    }
}

/// A connection's outbox of at most `capacity` queued lines: the sending end for its
/// `BotLink` and the receiving end for its writer. With a `direct` socket, lines are written at
/// once where they can be.
pub fn outbox(capacity: usize, direct: Option<Arc<dyn TryWrite>>) -> (OutboxSender, OutboxReader) {
    let outbox = Arc::new(Outbox {
        state: Mutex::new(OutboxState {
            lines: VecDeque::new(),
            writing: false,
            direct,
            closed: false,
        }),
        queued: Notify::new(),
        capacity,
    });
    (OutboxSender(outbox.clone()), OutboxReader(outbox))
}

/// The sending end of a connection's outbox (see `outbox`).
#[derive(Clone)]
pub struct OutboxSender(Arc<Outbox>);

impl std::fmt::Debug for OutboxSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxSender")
            .field("capacity", &self.0.capacity)
            .finish_non_exhaustive()
    }
}

impl OutboxSender {
    /// Writes `line` (with its `\n`) at once where the socket takes it, queues it for the
    /// writer otherwise; returns whether it was written or queued (not refused: the queue
    /// full, the writer ended or the socket failed). The bench's relay writes its lines
    /// this way, as links do.
    pub fn push_line(&self, line: String) -> bool {
        matches!(
            self.0.push(Cow::Owned(line), None),
            Handed::Written | Handed::Queued
        )
    }
}

/// The way to reach one live connection: its outgoing line queue (lines with their `\n`), its measured round-trip time
/// and the token that drops it.
#[derive(Debug, Clone)]
pub struct BotLink {
    pub conn_id: u64,
    tx: OutboxSender,
    rtt_us: Arc<AtomicU64>,
    close: LinkClose,
    /// When the connection's reader last emptied its socket (where it can tell).
    reading: Option<Arc<ReadProgress>>,
}

impl BotLink {
    pub fn new(conn_id: u64, tx: OutboxSender, close: LinkClose) -> BotLink {
        BotLink {
            conn_id,
            tx,
            rtt_us: Arc::new(AtomicU64::new(RTT_UNKNOWN)),
            close,
            reading: None,
        }
    }

    /// The link of a connection whose reader reports when it has emptied its socket.
    pub fn with_read_progress(mut self, reading: Option<Arc<ReadProgress>>) -> BotLink {
        self.reading = reading;
        self
    }

    /// Whether everything this connection's bot sent that reached the server before `at` has
    /// been read (always, where the reader cannot tell): the reader has found its socket empty
    /// since `at`, or waits on an empty socket now (a bot that sends nothing is never read).
    pub fn read_everything_before(&self, at: Instant) -> bool {
        self.reading
            .as_ref()
            .is_none_or(|r| r.drained_since(at) || r.waits_on_empty_socket())
    }

    /// Whether the connection's reader counts its stream, so that a look at its socket can
    /// tell which lines had arrived (see [`BotLink::look_at_socket`]).
    pub fn counts_its_stream(&self) -> bool {
        self.reading.is_some()
    }

    /// How much of the bot's stream the server's kernel has received by now, read or not
    /// (`None` where the reader cannot tell).
    pub fn look_at_socket(&self) -> Option<SocketLook> {
        self.reading.as_ref().and_then(|r| r.look())
    }

    /// Queues a message without waiting. A bot whose queue is full is not reading its socket:
    /// it is dropped rather than allowed to hold anyone up. Returns whether the line was queued.
    pub fn send(&self, message: &RefereeMessage) -> bool {
        self.queue(message, None)
    }

    /// Sends a line already encoded (with its `\n`) as `send` does; copied only if it has to
    /// wait for the writer.
    pub fn send_line(&self, line: &str) -> bool {
        self.push(Cow::Borrowed(line), None)
    }

    /// Sends a line already encoded (with its `\n`, as `RefereeMessage::to_wire_line` gives)
    /// as `send` does, and `written` is set when the line reaches the socket (cleared now).
    /// `queued_at` is the caller's reading of the clock as it queues the line: a line written
    /// at once counts as begun then. The line is copied only if it has to wait for the writer.
    pub fn send_line_stamped(
        &self,
        line: &str,
        written: &Arc<WriteStamp>,
        queued_at: Instant,
    ) -> bool {
        written.clear();
        let stamping = Stamping {
            stamp: written,
            queued_at,
        };
        self.push(Cow::Borrowed(line), Some(stamping))
    }

    fn queue(&self, message: &RefereeMessage, written: Option<Stamping<'_>>) -> bool {
        self.push(Cow::Owned(message.to_wire_line()), written)
    }

    fn push(&self, line: Cow<'_, str>, written: Option<Stamping<'_>>) -> bool {
        match self.tx.0.push(line, written) {
            Handed::Written | Handed::Queued => true,
            Handed::Full => {
                tracing::warn!(
                    conn = self.conn_id,
                    "outgoing queue full (the bot is not reading): dropping the connection"
                );
                self.close.close_because(QUEUE_FULL);
                false
            }
            Handed::WriteFailed => {
                self.close.close_because(WRITE_FAILED);
                false
            }
            Handed::Closed => false,
        }
    }

    /// Asks for the blocks a move reads and writes through this link to be brought into the
    /// cache: its round-trip time and its outgoing queue.
    pub fn prefetch(&self) {
        super::prefetch::value(&*self.rtt_us);
        super::prefetch::value(&*self.tx.0);
    }

    /// The last measured round-trip time, if any.
    pub fn rtt(&self) -> Option<Duration> {
        match self.rtt_us.load(Ordering::Relaxed) {
            RTT_UNKNOWN => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    pub fn set_rtt(&self, rtt: Duration) {
        let us = u64::try_from(rtt.as_micros())
            .unwrap_or(RTT_UNKNOWN - 1)
            .min(RTT_UNKNOWN - 1);
        // The reader calls this only when the kernel's figure changed (see `read_loop`).
        self.rtt_us.store(us, Ordering::Relaxed);
    }

    /// Forgets the round-trip time (no credit until it is measured again).
    pub fn clear_rtt(&self) {
        self.rtt_us.store(RTT_UNKNOWN, Ordering::Relaxed);
    }

    /// Drops the connection, saying why (for the line that logs its close).
    pub fn close_because(&self, why: &'static str) {
        self.close.close_because(why);
    }

    /// Why the connection was dropped, if it was dropped with a reason.
    pub fn closed_because(&self) -> Option<&'static str> {
        self.close.why()
    }

    /// Completes once the connection is dropped (for any reason, or by the shutdown).
    pub fn dropped(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.close.token.clone().cancelled_owned()
    }
}

/// What reaches a referee from the connections of its two players.
#[derive(Debug)]
pub enum RefereeInput {
    /// A `move` line: `received` is when it reached the server (the kernel's receive time where
    /// available; the clock stops there), `read` when the connection's reader got to it.
    Move {
        side: Side,
        conn_id: u64,
        text: String,
        /// The `ply` the bot says it answers, if it said.
        ply: Option<u32>,
        received: Instant,
        /// Set when later bytes shared the line's read (`received` is then theirs).
        shared_read: Option<SharedRead>,
        read: Instant,
    },
    Resign {
        side: Side,
        conn_id: u64,
    },
    /// The connection of `side` closed.
    Disconnected {
        side: Side,
        conn_id: u64,
    },
    /// `side` connected (again): it gets `start` with every move so far, then `turn` if it is
    /// its move.
    Connected {
        side: Side,
        link: BotLink,
    },
}

/// A `move` as the connection that read it hands it over: its text borrowed from the line read,
/// so a move the referee takes directly is copied only into the game's move log.
/// [`RefereeInput::Move`] is its owned form, for the inbox.
#[derive(Debug, Clone, Copy)]
pub struct MoveInput<'a> {
    pub side: Side,
    pub conn_id: u64,
    pub text: &'a str,
    /// The `ply` the bot says it answers, if it said.
    pub ply: Option<u32>,
    /// When the kernel received the read that completed the line (or when it was read): never
    /// earlier than the line's arrival.
    pub received: Instant,
    /// Set when later bytes came in the same read: `received` is then theirs, and the line may
    /// have come any time after the socket was last found empty.
    pub shared_read: Option<SharedRead>,
    pub read: Instant,
}

impl MoveInput<'_> {
    /// The move as the referee's inbox takes it (its text copied).
    pub fn to_owned_input(self) -> RefereeInput {
        RefereeInput::Move {
            side: self.side,
            conn_id: self.conn_id,
            text: self.text.to_string(),
            ply: self.ply,
            received: self.received,
            shared_read: self.shared_read,
            read: self.read,
        }
    }
}

impl RefereeInput {
    /// The move this input is, borrowed (its [`MoveInput`] form); `None` for other inputs.
    pub fn as_move(&self) -> Option<MoveInput<'_>> {
        match self {
            RefereeInput::Move {
                side,
                conn_id,
                text,
                ply,
                received,
                shared_read,
                read,
            } => Some(MoveInput {
                side: *side,
                conn_id: *conn_id,
                text,
                ply: *ply,
                received: *received,
                shared_read: *shared_read,
                read: *read,
            }),
            _ => None,
        }
    }
}

/// A referee that can take a move on the calling connection's own task, under its own lock,
/// instead of through its inbox: no hand-over to the referee's task and no wake-up of it per
/// move. Only moves go this way; everything else goes to its task.
pub trait DirectMoves: Send + Sync {
    /// Plays `mv` now; false if only the referee's task may take it now (the move then goes
    /// through the inbox).
    fn try_play(&self, mv: MoveInput<'_>) -> bool;

    /// Asks for the referee's state to be brought into the cache: a move for it is on its way.
    fn prefetch(&self) {}
}

/// How connections reach the referee of a match: its inbox, and the direct path once the
/// referee has opened it. Inputs keep their order: the direct path is taken only while no
/// input handed to the inbox waits for the task.
///
/// Everything a move's look needs is in one block: the count of inputs waiting, whether the
/// referee still runs, and the direct path. (Asking the inbox itself whether it was empty took
/// the channel's lock, in a block of its own, at every move.)
#[derive(Clone)]
pub struct RefereeDoor {
    shared: Arc<Door>,
    inbox: flume::Sender<RefereeInput>,
}

/// What a door's clones and the referee's inbox share.
struct Door {
    /// Inputs handed to the inbox and not yet taken by the referee's task.
    queued: AtomicUsize,
    /// The referee's task has let go of its inbox: the match is over.
    ended: AtomicBool,
    direct: OnceLock<Arc<dyn DirectMoves>>,
}

impl std::fmt::Debug for RefereeDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefereeDoor")
            .field("queued", &self.shared.queued.load(Ordering::Relaxed))
            .field("ended", &self.shared.ended.load(Ordering::Relaxed))
            .field("direct", &self.shared.direct.get().is_some())
            .finish()
    }
}

/// A referee's door, and the inbox its task reads, holding up to `capacity` inputs.
pub fn referee_door(capacity: usize) -> (RefereeDoor, RefereeInbox) {
    let (inbox, rx) = flume::bounded(capacity);
    let shared = Arc::new(Door {
        queued: AtomicUsize::new(0),
        ended: AtomicBool::new(false),
        direct: OnceLock::new(),
    });
    (
        RefereeDoor {
            shared: shared.clone(),
            inbox,
        },
        RefereeInbox { rx, shared },
    )
}

impl RefereeDoor {
    /// Hands `input` to the referee's task, waiting while its inbox is full; the input back if
    /// the referee has ended.
    pub async fn send(&self, input: RefereeInput) -> Result<(), RefereeInput> {
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        self.inbox.send_async(input).await.map_err(|e| {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            e.into_inner()
        })
    }

    /// Hands `input` to the referee's task if its inbox has room now.
    pub fn try_send(&self, input: RefereeInput) -> Result<(), flume::TrySendError<RefereeInput>> {
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        self.inbox.try_send(input).inspect_err(|_| {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        })
    }

    /// Whether the referee's task still runs.
    pub fn is_running(&self) -> bool {
        !self.shared.ended.load(Ordering::Relaxed)
    }

    /// Opens the direct path (once; later calls are ignored).
    pub fn open_direct(&self, direct: Arc<dyn DirectMoves>) {
        let _ = self.shared.direct.set(direct);
    }

    /// Asks for the referee's state to be brought into the cache (see `DirectMoves::prefetch`),
    /// once its direct path is open.
    pub fn prefetch(&self) {
        if let Some(direct) = self.shared.direct.get() {
            direct.prefetch();
        }
    }

    /// Plays `mv` directly if the referee takes it now; false otherwise (the caller then hands
    /// it to the inbox).
    pub fn try_direct(&self, mv: MoveInput<'_>) -> bool {
        match self.shared.direct.get() {
            Some(direct) if self.shared.queued.load(Ordering::SeqCst) == 0 => direct.try_play(mv),
            _ => false,
        }
    }
}

/// The referee task's end of its door: the inputs handed to it, in order. Dropping it (the
/// task ending, however it ends) tells the door that the referee no longer runs.
pub struct RefereeInbox {
    rx: flume::Receiver<RefereeInput>,
    shared: Arc<Door>,
}

impl std::fmt::Debug for RefereeInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefereeInbox")
            .field("queued", &self.shared.queued.load(Ordering::Relaxed))
            .finish()
    }
}

impl RefereeInbox {
    /// The next input, once one is handed over; `None` once no door is left to hand one.
    pub async fn recv(&self) -> Option<RefereeInput> {
        let input = self.rx.recv_async().await.ok()?;
        self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        Some(input)
    }
}

impl Drop for RefereeInbox {
    fn drop(&mut self) {
        self.shared.ended.store(true, Ordering::Relaxed);
    }
}

/// Writes queued lines (each with its `\n`) until the connection is dropped; then flushes what
/// is already queued (e.g. a final `error`) for a short while.
///
/// Each line is written straight from its own string: no write buffer stays allocated per
/// connection (a framed writer's buffer grows to the longest line ever sent, such as an `end`
/// with every move of a long game, and keeps that size).
pub async fn write_lines<S: LineSink>(mut sink: S, rx: OutboxReader, link_close: LinkClose) {
    let close = link_close.token();
    // One wait for the whole loop: a fresh `cancelled()` per line registers and unregisters a
    // waiter each time, which showed up in the bench's profile.
    let closed = close.cancelled();
    tokio::pin!(closed);
    loop {
        tokio::select! {
            biased;
            _ = &mut closed => break,
            outgoing = rx.recv() => {
                if let Some(written) = &outgoing.written {
                    written.begin(Instant::now());
                }
                tokio::select! {
                    result = sink.write_all(outgoing.unwritten()) => {
                        if result.is_err() {
                            rx.0.close();
                            link_close.close_because(WRITE_FAILED);
                            return;
                        }
                        if let Some(written) = &outgoing.written {
                            written.set(Instant::now());
                        }
                    }
                    _ = &mut closed => {
                        rx.0.close();
                        return;
                    }
                }
            }
        }
    }
    let _ = timeout(Duration::from_millis(500), async {
        while let Some(outgoing) = rx.try_recv() {
            if sink.write_all(outgoing.unwritten()).await.is_err() {
                return;
            }
        }
    })
    .await;
    rx.0.close();
    sink.finish().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;

    fn ping() -> RefereeMessage {
        RefereeMessage::Ping { id: 1 }
    }

    #[test]
    fn the_first_reason_given_for_a_drop_is_kept() {
        let close = LinkClose::new(CancellationToken::new());
        assert_eq!(close.why(), None);
        close.close_because(QUEUE_FULL);
        close.close_because(WRITE_FAILED);
        assert!(close.token().is_cancelled());
        assert_eq!(close.why(), Some(QUEUE_FULL));
    }

    #[test]
    fn a_bot_whose_queue_is_full_is_dropped_for_not_reading() {
        let (tx, _rx) = outbox(1, None);
        let link = BotLink::new(7, tx, LinkClose::new(CancellationToken::new()));
        assert!(link.send(&ping()));
        assert_eq!(link.closed_because(), None);
        assert!(!link.send(&ping()));
        assert_eq!(link.closed_because(), Some(QUEUE_FULL));
    }

    #[tokio::test]
    async fn a_failed_write_drops_the_connection_saying_so() {
        let (ours, theirs) = tokio::io::duplex(64);
        drop(theirs);
        let (tx, rx) = outbox(4, None);
        let close = LinkClose::new(CancellationToken::new());
        let link = BotLink::new(7, tx, close.clone());
        assert!(link.send(&ping()));
        write_lines(StreamSink(ours), rx, close.clone()).await;
        assert!(close.token().is_cancelled());
        assert_eq!(link.closed_because(), Some(WRITE_FAILED));
    }

    /// A socket that takes `room` more bytes, then says `WouldBlock`, and keeps what it took.
    #[derive(Default)]
    struct SmallSocket {
        taken: Mutex<(Vec<u8>, usize)>,
    }

    impl SmallSocket {
        fn with_room(room: usize) -> Arc<SmallSocket> {
            let socket = SmallSocket::default();
            socket.taken.lock().expect("lock").1 = room;
            Arc::new(socket)
        }

        fn taken(&self) -> String {
            String::from_utf8(self.taken.lock().expect("lock").0.clone()).expect("UTF-8")
        }
    }

    impl TryWrite for SmallSocket {
        fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
            let mut taken = self.taken.lock().expect("lock");
            let n = bytes.len().min(taken.1);
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            taken.0.extend_from_slice(&bytes[..n]);
            taken.1 -= n;
            Ok(n)
        }
    }

    fn ping_line(id: u64) -> String {
        RefereeMessage::Ping { id }.to_wire_line()
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_stamp_keeps_its_instants_exactly_and_the_first_beginning() {
        let stamp = WriteStamp::new();
        assert_eq!((stamp.begun(), stamp.get()), (None, None));
        let began = Instant::now() + Duration::from_nanos(1_234_567);
        stamp.begin(began);
        stamp.begin(began + Duration::from_millis(5));
        assert_eq!(stamp.begun(), Some(began), "the first beginning is kept");
        assert_eq!(stamp.get(), None, "begun is not written");
        let written = began + Duration::from_micros(250);
        stamp.set(written);
        assert_eq!((stamp.begun(), stamp.get()), (Some(began), Some(written)));
        stamp.clear();
        assert_eq!((stamp.begun(), stamp.get()), (None, None));
        // Written without a beginning: it began when it was written.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let later = Instant::now();
        stamp.set(later);
        assert_eq!((stamp.begun(), stamp.get()), (Some(later), Some(later)));
        // An instant from before the stamp was made (no write can be) reads as its making.
        let young = WriteStamp::new();
        young.set(later - Duration::from_secs(1));
        assert_eq!(young.get(), Some(later));
    }

    #[test]
    fn a_line_with_nothing_ahead_of_it_is_written_at_once_and_stamped() {
        let socket = SmallSocket::with_room(1 << 16);
        let (tx, rx) = outbox(4, Some(socket.clone()));
        let link = BotLink::new(7, tx, LinkClose::new(CancellationToken::new()));
        let stamp = Arc::new(WriteStamp::new());
        assert!(link.send_line_stamped(&ping().to_wire_line(), &stamp, Instant::now()));
        assert_eq!(socket.taken(), ping_line(1));
        assert!(stamp.get().is_some(), "stamped when written");
        assert!(rx.try_recv().is_none(), "nothing left for the writer");
    }

    #[test]
    fn what_the_socket_cannot_take_now_is_queued_and_later_lines_wait_behind_it() {
        let socket = SmallSocket::with_room(5);
        let (tx, rx) = outbox(4, Some(socket.clone()));
        let link = BotLink::new(7, tx, LinkClose::new(CancellationToken::new()));
        let stamp = Arc::new(WriteStamp::new());
        assert!(link.send_line_stamped(&ping().to_wire_line(), &stamp, Instant::now()));
        assert!(link.send(&RefereeMessage::Ping { id: 2 }));
        assert_eq!(socket.taken(), ping_line(1)[..5]);
        assert!(stamp.begun().is_some(), "its writing has begun");
        assert!(stamp.get().is_none(), "not written yet");
        let first = rx.try_recv().expect("the rest of the first line");
        assert_eq!(first.unwritten(), &ping_line(1).as_bytes()[5..]);
        // While the writer holds a line, a new one queues behind it even if the queue is empty.
        let second = rx.try_recv().expect("the second line, whole");
        assert_eq!(second.unwritten(), ping_line(2).as_bytes());
        socket.taken.lock().expect("lock").1 = 1 << 16;
        assert!(link.send(&RefereeMessage::Ping { id: 3 }));
        assert_eq!(socket.taken(), ping_line(1)[..5], "waits for the writer");
        // The writer is done with what it took: the next line goes straight out.
        assert!(rx.try_recv().is_some());
        assert!(rx.try_recv().is_none());
        assert!(link.send(&RefereeMessage::Ping { id: 4 }));
        assert_eq!(
            socket.taken(),
            format!("{}{}", &ping_line(1)[..5], ping_line(4))
        );
    }

    #[tokio::test]
    async fn a_stopped_writer_refuses_later_lines_and_lets_go_of_the_socket() {
        let socket = SmallSocket::with_room(1 << 16);
        let (tx, rx) = outbox(4, Some(socket.clone()));
        let close = LinkClose::new(CancellationToken::new());
        let link = BotLink::new(7, tx, close.clone());
        close.close_because(SUSPENDED);
        write_lines(StreamSink(tokio::io::sink()), rx, close.clone()).await;
        assert!(!link.send(&ping()));
        assert_eq!(socket.taken(), "");
        assert_eq!(Arc::strong_count(&socket), 1, "the outbox let go of it");
    }

    #[tokio::test]
    async fn lines_reach_a_real_socket_in_order_whether_written_at_once_or_queued() {
        use tokio::io::AsyncBufReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let client = tokio::net::TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        let (_read_half, write_half) = server.into_split();
        let sink = TcpSink::new(write_half);
        let (tx, rx) = outbox(100_000, sink.direct());
        let close = LinkClose::new(CancellationToken::new());
        let link = BotLink::new(7, tx, close.clone());
        // More than the socket's buffers hold while nobody reads: the first lines are written
        // at once, the rest queue for the writer.
        let line = |id: u64| RefereeMessage::Error {
            code: ErrorCode::BadJson,
            message: format!("{id:0>1000}"),
            match_id: None,
        };
        let count = 20_000u64;
        for id in 1..=count {
            assert!(link.send(&line(id)));
        }
        assert!(!rx.is_empty(), "some lines had to queue");
        assert!(
            rx.0.state().lines.len() < 20_000,
            "some were written at once"
        );
        let writer = tokio::spawn(write_lines(sink, rx, close.clone()));
        let mut lines = tokio::io::BufReader::new(client).lines();
        for id in 1..=count {
            let read = lines.next_line().await.expect("read").expect("a line");
            assert_eq!(format!("{read}\n"), line(id).to_wire_line());
        }
        close.close_because(SUSPENDED);
        writer.await.expect("writer");
        assert_eq!(
            lines.next_line().await.expect("read"),
            None,
            "closed after the last"
        );
    }

    #[test]
    fn a_shutdown_cancels_the_link_without_a_reason() {
        let shutdown = CancellationToken::new();
        let close = LinkClose::new(shutdown.child_token());
        shutdown.cancel();
        assert!(close.token().is_cancelled());
        assert_eq!(close.why(), None);
    }
}

//! A connection's outgoing side and what it hands a referee: the handle the registry and the
//! referees hold to reach a bot (`BotLink`, a bounded line queue with its write stamps), the
//! writer task that drains that queue into the socket, and `RefereeInput`, what a connection
//! tells the referee of a match. Both the registry and the referees depend on this file, never
//! on each other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::time::{timeout, Instant};
use tokio_util::sync::CancellationToken;

use crate::game::Side;

use super::arrival::ReadProgress;
use crate::protocol::RefereeMessage;

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
    close: LinkClose,
    /// When the connection's reader last emptied its socket (where it can tell).
    reading: Option<Arc<ReadProgress>>,
}

impl BotLink {
    pub fn new(conn_id: u64, tx: flume::Sender<Outgoing>, close: LinkClose) -> BotLink {
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
    /// been read (always, where the reader cannot tell).
    pub fn read_everything_before(&self, at: Instant) -> bool {
        self.reading.as_ref().is_none_or(|r| r.drained_since(at))
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
                self.close.close_because(QUEUE_FULL);
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

/// Writes queued lines (each with its `\n`) until the queue closes or the connection is
/// dropped; then flushes what is already queued (e.g. a final `error`) for a short while.
///
/// Each line is written straight from its own string: no write buffer stays allocated per
/// connection (a framed writer's buffer grows to the longest line ever sent, such as an `end`
/// with every move of a long game, and keeps that size).
pub async fn write_lines<W: tokio::io::AsyncWrite + Unpin>(
    mut socket: W,
    rx: flume::Receiver<Outgoing>,
    link_close: LinkClose,
) {
    let close = link_close.token();
    // One wait for the whole loop: a fresh `cancelled()` per line registers and unregisters a
    // waiter each time, which showed up in the bench's profile.
    let closed = close.cancelled();
    tokio::pin!(closed);
    loop {
        tokio::select! {
            biased;
            _ = &mut closed => break,
            outgoing = rx.recv_async() => {
                let Ok(outgoing) = outgoing else { break };
                if let Some(written) = &outgoing.written {
                    written.begin(Instant::now());
                }
                tokio::select! {
                    result = socket.write_all(outgoing.line.as_bytes()) => {
                        if result.is_err() {
                            link_close.close_because(WRITE_FAILED);
                            return;
                        }
                        if let Some(written) = &outgoing.written {
                            written.set(Instant::now());
                        }
                    }
                    _ = &mut closed => return,
                }
            }
        }
    }
    let _ = timeout(Duration::from_millis(500), async {
        while let Ok(outgoing) = rx.try_recv() {
            if socket.write_all(outgoing.line.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = socket.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (tx, _rx) = flume::bounded(1);
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
        let (tx, rx) = flume::bounded(4);
        let close = LinkClose::new(CancellationToken::new());
        let link = BotLink::new(7, tx, close.clone());
        assert!(link.send(&ping()));
        write_lines(ours, rx, close.clone()).await;
        assert!(close.token().is_cancelled());
        assert_eq!(link.closed_because(), Some(WRITE_FAILED));
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

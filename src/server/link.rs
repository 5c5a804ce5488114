//! A connection's outgoing side and what it hands a referee: the handle the registry and the
//! referees hold to reach a bot (`BotLink`, a bounded line queue with its write stamps), the
//! writer task that drains that queue into the socket, and `RefereeInput`, what a connection
//! tells the referee of a match. Both the registry and the referees depend on this file, never
//! on each other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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
    /// When the connection's reader last emptied its socket (where it can tell).
    reading: Option<Arc<ReadProgress>>,
}

impl BotLink {
    pub fn new(conn_id: u64, tx: flume::Sender<Outgoing>, close: CancellationToken) -> BotLink {
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
    close: CancellationToken,
) {
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
                            close.cancel();
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

//! A connection's read half that remembers when the kernel received the bytes of its latest
//! read (`SO_TIMESTAMPNS`), so a clock stops when a move arrived, not when a busy server got
//! round to reading it.
//!
//! Under load a readable socket can wait milliseconds before its reader task runs. Stamping a
//! move with `Instant::now()` in the reader charges that wait to the bot. The kernel stamps every
//! packet as it arrives; `recvmsg` hands back the stamp of the last packet a read consumed. That
//! stamp is never earlier than the arrival of any line completed by the read, so a bot is never
//! charged less than its true time to the server's door.
//!
//! The kernel stamps with `CLOCK_REALTIME`. A stamp becomes a monotonic instant through a pairing
//! of the two clocks read together (see `clock_pair`: reused for [`CLOCK_PAIR_REUSE`], since the
//! two clocks run at one rate and part only when the wall clock is stepped). The instant is
//! then kept between the start of the previous read that found the socket empty (nothing this
//! read took can have arrived before it) and the end of this read (nothing it took can have
//! arrived after), so a wall clock step can move an arrival only within those bounds; one
//! older than [`MAX_TRUSTED_AGE`] is not trusted at all. The bound is the read's end, not its
//! start: a thread preempted between reading the clock and entering `recvmsg` takes bytes that
//! arrived after that clock reading, and bounding them by it would date a bot's answer before
//! the `turn` it answers (and refuse it as sent ahead).
//! Where the socket option is refused, reads work as before and [`last_arrival`] is `None`.
//! Linux also switches packet stamping on a moment after the first socket of the machine asks
//! for it, so the first reads of a fresh server may come back unstamped: those lines are
//! stamped when they are read, as without the option.
//!
//! A read that takes several lines gets one stamp, the last packet's, and the kernel merges
//! packets that wait unread (keeping the later stamp): a line that came before others in the
//! same read may have arrived any time after the socket was last found empty. Such a line
//! carries a [`SharedRead`] (where it ends in the stream, and that lower bound), and the
//! referee's [`SocketLook`] at a deadline (how many bytes the kernel had received by then) tells
//! whether it was already there.
//!
//! [`last_arrival`]: ArrivalStampedRead::last_arrival

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::time::Instant;

/// A receive stamp older than this (compared with the wall clock) is ignored: the wall clock
/// was stepped, and the read is stamped with the current instant instead.
pub const MAX_TRUSTED_AGE: Duration = Duration::from_secs(10);

/// Set once the kernel refuses `SO_TIMESTAMPNS` on any connection.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether the kernel has refused receive timestamps on some connection of this process (the
/// bench reports it: its clocks then stop when the server reads a move).
pub fn kernel_receive_timestamps_refused() -> bool {
    REFUSED.load(Ordering::Relaxed)
}

/// How long the kernel's round-trip estimate is reused before it is asked again: the minimum
/// it gives is taken over minutes and moves slowly, and asking costs a system call. (At 250 ms,
/// the bench's busy bots still asked about once in four moves: 0.5% of the server's samples.)
const RTT_REFRESH: Duration = Duration::from_secs(1);

/// When a connection's reader last had read, and handed on to its referees, everything the
/// kernel had received: shared with the referees, which wait for it before declaring a loss
/// on time, so that a move that reached a busy server before the deadline is not lost because
/// the server had not read it yet. Set by the stamped reader (which sees its system calls)
/// when a read finds the socket empty, or, for a read that emptied it, when the line reader
/// asks for more (every line of that read handed on).
///
/// It also tells whether the reader is waiting on an empty socket right now
/// ([`ReadProgress::waits_on_empty_socket`]): a bot that sends nothing is never read again,
/// so without that a referee would wait out its whole patience for a read that never comes.
#[derive(Debug)]
pub struct ReadProgress {
    /// Microseconds since `progress_base()`, plus one; 0: never.
    drained_at: AtomicU64,
    /// Bit 0: the reader waits for its socket, which it found empty with every line handed
    /// on. The bits above count the reader's wake-ups from that wait, so that a referee can
    /// tell whether the reader woke while it looked.
    waiting: AtomicU64,
    /// The socket, while its reader lives (-1 otherwise), for asking the kernel how many bytes
    /// wait in it unread.
    socket: AtomicI32,
    /// How many bytes the reader has taken from the socket in all, as of its last read.
    consumed: AtomicU64,
    /// Odd while a read is under way (`consumed` may then lag what the kernel handed over);
    /// bumped at the start and end of every read, so a look can tell one happened meanwhile.
    reads: AtomicU64,
}

/// What the kernel had received of a connection's stream when the referee looked (see
/// [`ReadProgress::look`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLook {
    /// When the look began: bytes beyond `received_bytes` had not arrived by then.
    pub at: Instant,
    /// The bytes received in all: those read plus those waiting unread.
    pub received_bytes: u64,
}

/// A line that shared its read with bytes that came after it: the read's stamp is theirs (an
/// upper bound of the line's arrival, no more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedRead {
    /// When the socket was last found empty before the line came (the start of the latest
    /// read that found it empty or emptied it), if known: the line arrived after that.
    pub after: Option<Instant>,
    /// Where the line ends, in bytes from the start of the connection's stream.
    pub end_byte: u64,
}

/// How many times a look tries again while the reader is in the middle of a read.
const LOOK_TRIES: usize = 8;

impl Default for ReadProgress {
    fn default() -> ReadProgress {
        ReadProgress {
            drained_at: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            socket: AtomicI32::new(-1),
            consumed: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }
}

/// The instant `ReadProgress` counts from (the first time one is used).
fn progress_base() -> std::time::Instant {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(std::time::Instant::now)
}

impl ReadProgress {
    /// A read that began at `at` found the socket empty or emptied it: everything the kernel
    /// had received before `at` has been read.
    pub fn drained_at(&self, at: Instant) {
        let since = at.into_std().saturating_duration_since(progress_base());
        let us = u64::try_from(since.as_micros()).unwrap_or(u64::MAX - 1);
        self.drained_at.store(us + 1, Ordering::Relaxed);
    }

    /// Whether the reader has found the socket empty at or after `at`: everything that reached
    /// the server's kernel before `at` has been read.
    pub fn drained_since(&self, at: Instant) -> bool {
        let since = at.into_std().saturating_duration_since(progress_base());
        let at_us = u64::try_from(since.as_micros()).unwrap_or(u64::MAX - 1);
        self.drained_at.load(Ordering::Relaxed) > at_us
    }

    /// Whether the reader is waiting on its socket now with every line handed on, and the
    /// kernel holds no byte of the bot's unread: everything that reached the server until this
    /// moment has been read. False whenever that cannot be told (no socket, the reader busy or
    /// woken meanwhile, the kernel not answering).
    pub fn waits_on_empty_socket(&self) -> bool {
        let before = self.waiting.load(Ordering::SeqCst);
        if before & 1 == 0 {
            return false;
        }
        let socket = self.socket.load(Ordering::SeqCst);
        if socket < 0 {
            return false;
        }
        // The reader marks its wake-up before it reads: if it read what the kernel held (so
        // that the kernel now says empty), the second look sees that it woke.
        let empty = unread_bytes(socket) == Some(0);
        empty && self.waiting.load(Ordering::SeqCst) == before
    }

    /// How much of the stream the kernel had received at this moment, read or not; `None` when
    /// that cannot be told (no socket, the kernel not answering, or the reader kept reading
    /// through every try). Never counts a byte that had not arrived when the look began.
    pub fn look(&self) -> Option<SocketLook> {
        let socket = self.socket.load(Ordering::SeqCst);
        if socket < 0 {
            return None;
        }
        for _ in 0..LOOK_TRIES {
            let at = Instant::now();
            let before = self.reads.load(Ordering::SeqCst);
            if before & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let unread = unread_bytes(socket)?;
            let consumed = self.consumed.load(Ordering::SeqCst);
            // No read began or ended meanwhile: `consumed` is what the kernel had handed over
            // when it counted the unread bytes.
            if self.reads.load(Ordering::SeqCst) == before {
                let unread = u64::try_from(unread).unwrap_or(u64::MAX);
                return Some(SocketLook {
                    at,
                    received_bytes: consumed.saturating_add(unread),
                });
            }
        }
        None
    }

    /// The progress of a reader of the socket `fd` that has taken `consumed` bytes of it (for
    /// the referee's tests, which drive no reader).
    #[cfg(test)]
    pub(crate) fn of_socket_read_to(fd: i32, consumed: u64) -> ReadProgress {
        let progress = ReadProgress::default();
        progress.socket.store(fd, Ordering::SeqCst);
        progress.consumed.store(consumed, Ordering::SeqCst);
        progress
    }

    /// A read of the socket is about to take bytes.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn read_begins(&self) {
        self.reads.fetch_add(1, Ordering::SeqCst);
    }

    /// The read is over: the reader has taken `consumed` bytes in all.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn read_ends(&self, consumed: u64) {
        self.consumed.store(consumed, Ordering::SeqCst);
        self.reads.fetch_add(1, Ordering::SeqCst);
    }

    /// The reader waits for its socket, found empty, with every line handed on.
    fn reader_waits(&self) {
        let state = self.waiting.load(Ordering::Relaxed);
        if state & 1 == 0 {
            self.waiting.store(state | 1, Ordering::SeqCst);
        }
    }

    /// The reader woke (or is going away): it may read from now on.
    fn reader_woke(&self) {
        let state = self.waiting.load(Ordering::Relaxed);
        if state & 1 == 1 {
            self.waiting
                .store((state & !1).wrapping_add(2), Ordering::SeqCst);
        }
    }

    /// The reader's socket is closed or about to be: no more questions to the kernel about it.
    fn forget_socket(&self) {
        self.reader_woke();
        self.socket.store(-1, Ordering::SeqCst);
    }
}

/// How many received bytes wait unread in the socket `fd` (`FIONREAD`), if the kernel says.
#[cfg(target_os = "linux")]
fn unread_bytes(fd: i32) -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `int` through the pointer, which points at a live local of
    // that type. A descriptor that is no longer a socket makes the call fail, nothing else.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, std::ptr::addr_of_mut!(unread)) };
    if rc == 0 {
        usize::try_from(unread).ok()
    } else {
        None
    }
}

#[cfg(not(target_os = "linux"))]
fn unread_bytes(_fd: i32) -> Option<usize> {
    None
}

/// Room for one `SCM_TIMESTAMPNS` control message, aligned as `cmsghdr` requires.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// The read half of a TCP connection, with the kernel's receive time of its latest read.
// Off Linux the stamping fields are set but never used.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct ArrivalStampedRead {
    inner: OwnedReadHalf,
    /// Whether the kernel accepted `SO_TIMESTAMPNS` (and the caller wanted it).
    stamping: bool,
    last_arrival: Option<Instant>,
    control: ControlBuffer,
    /// The kernel's last round-trip estimate and when it was read.
    rtt: std::cell::Cell<Option<(Instant, Option<Duration>)>>,
    /// When a read last found the socket empty (and every line it read was handed on).
    progress: Arc<ReadProgress>,
    /// When the last read began, if it emptied the socket (reported once its lines are
    /// handed on, at the next read).
    emptied_by_last_read: Option<Instant>,
    /// When the latest read that found the socket empty, or emptied it, began: whatever a
    /// later read takes arrived after that.
    empty_since: Option<Instant>,
    /// When the latest read that took bytes ended (the moment its lines count as read: nothing
    /// it took arrived later).
    last_read_ended: Option<Instant>,
    /// `empty_since` as the latest read began: what it took arrived after that.
    last_read_after: Option<Instant>,
    /// Bytes read from the socket in all.
    bytes_read: u64,
}

impl Drop for ArrivalStampedRead {
    fn drop(&mut self) {
        self.progress.forget_socket();
    }
}

impl ArrivalStampedRead {
    /// Wraps a read half; with `stamp_arrivals`, asks the kernel to stamp received packets.
    pub fn new(inner: OwnedReadHalf, stamp_arrivals: bool) -> ArrivalStampedRead {
        let stamping = stamp_arrivals && kernel::enable_stamps(&inner);
        let progress = ReadProgress::default();
        if stamping {
            use std::os::fd::AsRawFd;
            progress
                .socket
                .store(inner.as_ref().as_raw_fd(), Ordering::SeqCst);
        }
        ArrivalStampedRead {
            inner,
            stamping,
            last_arrival: None,
            control: ControlBuffer([0; 64]),
            rtt: std::cell::Cell::new(None),
            progress: Arc::new(progress),
            emptied_by_last_read: None,
            empty_since: None,
            last_read_ended: None,
            last_read_after: None,
            bytes_read: 0,
        }
    }

    /// Where a line ends that the latest read completed with `left` bytes of it still to
    /// decode after the line: `None` if the line ended the read (its stamp is its own) or
    /// reads are not stamped.
    pub fn shared_read(&self, left: usize) -> Option<SharedRead> {
        if left == 0 || !self.stamping {
            return None;
        }
        let left = u64::try_from(left).unwrap_or(u64::MAX);
        Some(SharedRead {
            after: self.last_read_after,
            end_byte: self.bytes_read.saturating_sub(left),
        })
    }

    /// When the latest stamped read that took bytes ended (the lines it took count as read
    /// then); `None` without kernel stamps.
    pub fn last_read_ended(&self) -> Option<Instant> {
        self.last_read_ended
    }

    /// When this reader last emptied its socket (shared, for the referees); `None` without
    /// kernel stamps, whose reads go through tokio and cannot tell.
    pub fn progress(&self) -> Option<Arc<ReadProgress>> {
        self.stamping.then(|| self.progress.clone())
    }

    /// Whether reads carry the kernel's receive time.
    pub fn is_stamping(&self) -> bool {
        self.stamping
    }

    /// When the kernel received the last packet of the latest read, if it said.
    pub fn last_arrival(&self) -> Option<Instant> {
        self.last_arrival
    }

    /// The kernel's round-trip estimate of the connection (`TCP_INFO`'s minimum RTT, or its
    /// smoothed RTT where no minimum is known; measured from ACKs, which the bot's process cannot
    /// delay); `None` where the system does not give it. Read from the kernel at most every
    /// `RTT_REFRESH` (`now` is the caller's reading of the clock, taken as it read a line).
    pub fn kernel_rtt(&self, now: Instant) -> Option<std::time::Duration> {
        if let Some((read, rtt)) = self.rtt.get() {
            if now.saturating_duration_since(read) < RTT_REFRESH {
                return rtt;
            }
        }
        let rtt = kernel_rtt(&self.inner);
        self.rtt.set(Some((now, rtt)));
        rtt
    }
}

#[cfg(target_os = "linux")]
fn kernel_rtt(inner: &OwnedReadHalf) -> Option<Duration> {
    use std::os::fd::AsRawFd;
    let fd = inner.as_ref().as_raw_fd();
    // SAFETY: `info` is a plain C struct of integers, zeroed and fully owned here; `len` says
    // its size, and the kernel writes at most that many bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::tcp_info>()).ok()?;
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::addr_of_mut!(info).cast(),
            &mut len,
        )
    };
    // The lowest round-trip time the kernel has seen on the connection (over a window of
    // minutes): the path's own latency. The smoothed `tcpi_rtt` also carries the peer's delayed
    // acknowledgements (tens of ms on an idle loopback), which are not network lag.
    let rtt = match info.tcpi_min_rtt {
        0 => info.tcpi_rtt,
        min => min,
    };
    (rc == 0).then(|| Duration::from_micros(u64::from(rtt)))
}

#[cfg(not(target_os = "linux"))]
fn kernel_rtt(_inner: &OwnedReadHalf) -> Option<Duration> {
    None
}

/// The monotonic and the wall clock read at (nearly) one moment. Read one after the other, a
/// thread preempted between the two reads (a loaded machine) would pair instants that lie
/// milliseconds apart, and a move converted with them would seem to arrive that much earlier:
/// before the `turn` it answers, and be refused. So the wall clock is read between two
/// monotonic reads and the pair taken from their midpoint; a bracket wider than
/// `PAIRED_READ_MAX` is read again, and if every try is wide the later monotonic read is used
/// (an arrival then seems later, never earlier, than it was).
fn paired_now() -> (Instant, SystemTime) {
    const TRIES: usize = 4;
    let mut last = None;
    for _ in 0..TRIES {
        let before = Instant::now();
        let wall = SystemTime::now();
        let after = Instant::now();
        let bracket = after.saturating_duration_since(before);
        if bracket <= PAIRED_READ_MAX {
            return (before + bracket / 2, wall);
        }
        last = Some((after, wall));
    }
    last.unwrap_or_else(|| (Instant::now(), SystemTime::now()))
}

/// The widest bracket of two monotonic reads around a wall-clock read that `paired_now`
/// trusts (an unpreempted pair of reads takes well under a microsecond).
const PAIRED_READ_MAX: Duration = Duration::from_micros(20);

/// How long one pairing of the clocks converts stamps. The monotonic clock and the wall clock
/// run at one rate (time synchronisation slews both alike) and part only when the wall clock
/// is stepped, so a pairing stays exact until then; reading both clocks afresh for every
/// move cost three clock reads a move. A step is seen within this long; until then the
/// arrival's bounds hold (see the module comment).
pub const CLOCK_PAIR_REUSE: Duration = Duration::from_millis(10);

thread_local! {
    /// This thread's latest pairing of the clocks (see `clock_pair`).
    static CLOCK_PAIR: Cell<Option<(Instant, SystemTime)>> = const { Cell::new(None) };
}

/// The clocks paired (see `paired_now`), a pairing younger than [`CLOCK_PAIR_REUSE`] at `now`
/// (the caller's own monotonic reading) reused.
fn clock_pair(now: Instant) -> (Instant, SystemTime) {
    CLOCK_PAIR.with(|kept| {
        if let Some((mono, wall)) = kept.get() {
            if now >= mono && now.duration_since(mono) < CLOCK_PAIR_REUSE {
                return (mono, wall);
            }
        }
        let pair = paired_now();
        kept.set(Some(pair));
        pair
    })
}

/// Converts a kernel wall-clock stamp (seconds and nanoseconds since 1970) of bytes that a read
/// ending at `read_ended` took into a monotonic instant, no later than `read_ended` and no
/// earlier than `empty_since` (see the module comment); `None` for a stamp older than
/// [`MAX_TRUSTED_AGE`].
fn arrival_instant(
    tv_sec: i64,
    tv_nsec: i64,
    read_ended: Instant,
    empty_since: Option<Instant>,
) -> Option<Instant> {
    let (mono, wall) = clock_pair(read_ended);
    let secs = u64::try_from(tv_sec).ok()?;
    let nanos = u32::try_from(tv_nsec).ok()?;
    let stamp = UNIX_EPOCH.checked_add(Duration::new(secs, nanos))?;
    let arrived = match stamp.duration_since(wall) {
        Ok(after) => mono.checked_add(after)?,
        Err(before) => mono.checked_sub(before.duration())?,
    };
    let arrived = arrived.min(read_ended);
    if read_ended.duration_since(arrived) > MAX_TRUSTED_AGE {
        return None;
    }
    Some(empty_since.map_or(arrived, |empty| arrived.max(empty.min(read_ended))))
}

impl AsyncRead for ArrivalStampedRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        #[cfg(target_os = "linux")]
        if this.stamping {
            return kernel::poll_read_stamped(this, cx, buf);
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

/// Linux: `SO_TIMESTAMPNS` and `recvmsg` (through `nix`).
#[cfg(target_os = "linux")]
mod kernel {
    use std::io;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::Ordering;
    use std::task::{Context, Poll};

    use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
    use tokio::io::{Interest, ReadBuf};
    use tokio::net::tcp::OwnedReadHalf;

    use super::{arrival_instant, ArrivalStampedRead, REFUSED};

    /// Most bytes one stamped read takes.
    const MAX_READ_BYTES: usize = 8 * 1024;

    /// Asks the kernel to stamp the socket's received packets; false if it refuses.
    pub fn enable_stamps(inner: &OwnedReadHalf) -> bool {
        match setsockopt(inner.as_ref(), sockopt::ReceiveTimestampns, &true) {
            Ok(()) => true,
            Err(e) => {
                REFUSED.store(true, Ordering::Relaxed);
                tracing::debug!(error = %e, "no kernel receive timestamps; stamping reads");
                false
            }
        }
    }

    /// One read through `recvmsg`, keeping the stamp of the last packet it consumed.
    pub fn poll_read_stamped(
        this: &mut ArrivalStampedRead,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let stream = this.inner.as_ref();
        // From here on the reader may take what waits in the socket.
        this.progress.reader_woke();
        // Asked for more, the line reader has handed on every line of the last read: if that
        // read emptied the socket, everything that arrived before it began has now reached
        // its referee.
        if let Some(began) = this.emptied_by_last_read.take() {
            this.progress.drained_at(began);
        }
        loop {
            match stream.poll_read_ready(cx) {
                Poll::Ready(ready) => ready?,
                Poll::Pending => {
                    // Every line read is handed on (the line reader asks for more only then),
                    // and the socket was found empty or has not said it holds anything.
                    this.progress.reader_waits();
                    return Poll::Pending;
                }
            }
            // Zeroed before each read (recvmsg wants initialised memory): at most
            // MAX_READ_BYTES, however far a long line once grew the buffer.
            let room = buf.remaining().min(MAX_READ_BYTES);
            let unfilled = buf.initialize_unfilled_to(room);
            let control = &mut this.control.0;
            // A read that leaves room in the buffer has drained the socket: it is reported to
            // `try_io` as `WouldBlock` (its result kept in `short_read`), which clears the
            // readiness, as tokio's own `poll_read` does after a short read. Without it every
            // line would cost a second `recvmsg` that only finds the socket empty. Readiness
            // that arrives meanwhile is not lost: tokio clears only the event this read saw.
            let mut short_read = None;
            let mut found_empty = None;
            let progress = &this.progress;
            let consumed_before = this.bytes_read;
            let read = stream.try_io(Interest::READABLE, || {
                let room = unfilled.len();
                let mut iov = [io::IoSliceMut::new(unfilled)];
                // Taken before the read: if it finds the socket empty or leaves room,
                // everything received before this moment has been read.
                let began = tokio::time::Instant::now();
                #[cfg(test)]
                super::tests::before_recvmsg();
                progress.read_begins();
                let msg = recvmsg::<()>(
                    stream.as_raw_fd(),
                    &mut iov,
                    Some(&mut control[..]),
                    MsgFlags::empty(),
                );
                let taken = msg.as_ref().map_or(0, |m| m.bytes);
                // Read after the read: what it took arrived by then (see the module comment).
                let ended = if taken > 0 {
                    tokio::time::Instant::now()
                } else {
                    began
                };
                progress.read_ends(consumed_before + u64::try_from(taken).unwrap_or(0));
                let msg = msg.map_err(|e| {
                    // Nothing was waiting, and every line read before has been handed on.
                    if e == nix::errno::Errno::EAGAIN {
                        progress.drained_at(began);
                        found_empty = Some(began);
                    }
                    io::Error::from(e)
                })?;
                let mut stamp = None;
                if let Ok(messages) = msg.cmsgs() {
                    for message in messages {
                        if let ControlMessageOwned::ScmTimestampns(ts) = message {
                            stamp = Some((ts.tv_sec(), ts.tv_nsec()));
                        }
                    }
                }
                if msg.bytes > 0 && msg.bytes < room {
                    short_read = Some((msg.bytes, stamp, began, ended));
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok((msg.bytes, stamp, began, ended))
            });
            let read = match (read, short_read) {
                (Err(e), Some((bytes, stamp, began, ended)))
                    if e.kind() == io::ErrorKind::WouldBlock =>
                {
                    // The socket is empty as of `began`, but the lines just read are not
                    // handed on yet: reported at the next read (above).
                    this.emptied_by_last_read = Some(began);
                    Ok((bytes, stamp, began, ended))
                }
                (read, _) => read,
            };
            match read {
                Ok((bytes, stamp, began, ended)) => {
                    buf.advance(bytes);
                    this.bytes_read += u64::try_from(bytes).unwrap_or(0);
                    this.last_read_after = this.empty_since;
                    this.last_arrival =
                        stamp.and_then(|(s, ns)| arrival_instant(s, ns, ended, this.empty_since));
                    this.last_read_ended = Some(ended);
                    if short_read.is_some() {
                        this.empty_since = Some(began);
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    if found_empty.is_some() {
                        this.empty_since = found_empty;
                    }
                    continue;
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// Elsewhere: no kernel stamps; lines are stamped when read.
#[cfg(not(target_os = "linux"))]
mod kernel {
    use std::sync::atomic::Ordering;

    use tokio::net::tcp::OwnedReadHalf;

    use super::REFUSED;

    pub fn enable_stamps(_inner: &OwnedReadHalf) -> bool {
        REFUSED.store(true, Ordering::Relaxed);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn connected_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (client.expect("connect"), accepted.expect("accept").0)
    }

    /// A client socket and the server side's reader (stamping or not), with the server's write
    /// half kept open.
    async fn reader_pair(
        stamp: bool,
    ) -> (
        TcpStream,
        ArrivalStampedRead,
        tokio::net::tcp::OwnedWriteHalf,
    ) {
        let (client, server) = connected_pair().await;
        let (read_half, write_half) = server.into_split();
        (
            client,
            ArrivalStampedRead::new(read_half, stamp),
            write_half,
        )
    }

    thread_local! {
        /// Run by a stamped read of this thread between reading the clock and `recvmsg`: what
        /// a preemption there lets happen.
        static BEFORE_RECVMSG: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
            const { std::cell::RefCell::new(None) };
    }

    pub(super) fn before_recvmsg() {
        if let Some(hook) = BEFORE_RECVMSG.with(|hook| hook.borrow_mut().take()) {
            hook();
        }
    }

    /// A read whose thread is held up between reading the clock and entering `recvmsg` takes
    /// bytes that arrived meanwhile: they are dated when they arrived, never before the read's
    /// clock reading (a bot's answer would otherwise seem to precede the `turn` it answers).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bytes_that_arrive_while_a_read_is_held_up_are_dated_by_their_arrival() {
        let (client, mut reader, _write_half, _) = stamped_reader_holding(b"a\n").await;
        let mut client = client.into_std().expect("std socket");
        client.set_nonblocking(false).expect("blocking");
        let written = std::rc::Rc::new(std::cell::Cell::new(None));
        let written_in_hook = written.clone();
        BEFORE_RECVMSG.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                use std::io::Write;
                std::thread::sleep(Duration::from_millis(20));
                written_in_hook.set(Some(Instant::now()));
                client.write_all(b"b\n").expect("write");
                // Loopback delivers at once; give it time anyway.
                std::thread::sleep(Duration::from_millis(20));
            }));
        });
        let mut buf = [0u8; 16];
        let n = reader.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"a\nb\n");
        let written = written.get().expect("the hook ran");
        let arrived = reader.last_arrival().expect("stamped");
        assert!(
            arrived + Duration::from_millis(1) >= written,
            "dated {:?} before the bytes were written",
            written.duration_since(arrived)
        );
        let read = reader.last_read_ended().expect("read");
        assert!(read >= written && arrived <= read);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_read_is_stamped_with_the_arrival_not_the_read() {
        let (mut client, mut reader, _write_half) = reader_pair(true).await;
        assert!(reader.is_stamping(), "this kernel refuses SO_TIMESTAMPNS");
        wait_for_stamps(&mut client, &mut reader).await;
        let mut buf = [0u8; 16];
        client.write_all(b"hello\n").await.expect("write");
        let written = Instant::now();
        // The bytes wait in the socket while the reader is busy elsewhere.
        std::thread::sleep(Duration::from_millis(60));
        let n = reader.read(&mut buf).await.expect("read");
        let read_at = Instant::now();
        assert_eq!(&buf[..n], b"hello\n");
        let arrived = reader.last_arrival().expect("a receive stamp");
        assert!(arrived <= read_at);
        // The stamp is the arrival (right after the write), not the read 60 ms later.
        assert!(
            read_at.duration_since(arrived) >= Duration::from_millis(55),
            "stamp only {:?} before the read",
            read_at.duration_since(arrived)
        );
        assert!(
            arrived.saturating_duration_since(written) < Duration::from_millis(55),
            "stamp {:?} after the write",
            arrived.saturating_duration_since(written)
        );
    }

    /// Writes and reads warm-up lines until the kernel stamps reads (Linux switches packet
    /// stamping on a moment after the first socket asks for it: a deferred static key).
    #[cfg(target_os = "linux")]
    async fn wait_for_stamps(client: &mut TcpStream, reader: &mut ArrivalStampedRead) {
        let mut buf = [0u8; 16];
        for attempt in 0.. {
            client.write_all(b"warm\n").await.expect("write");
            let n = reader.read(&mut buf).await.expect("read");
            assert_eq!(&buf[..n], b"warm\n");
            if reader.last_arrival().is_some() {
                return;
            }
            assert!(attempt < 200, "no receive stamps after 2 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the socket behind `progress` holds at least `bytes` unread.
    #[cfg(target_os = "linux")]
    async fn wait_until_unread(progress: &ReadProgress, bytes: usize) {
        let fd = progress.socket.load(Ordering::SeqCst);
        for _ in 0..200 {
            if unread_bytes(fd).is_some_and(|n| n >= bytes) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{bytes} bytes never arrived");
    }

    /// A stamping reader past its warm-up (see `wait_for_stamps`) whose socket holds `line`
    /// unread, with the client, the server's write half and the reader's progress.
    #[cfg(target_os = "linux")]
    async fn stamped_reader_holding(
        line: &[u8],
    ) -> (
        TcpStream,
        ArrivalStampedRead,
        tokio::net::tcp::OwnedWriteHalf,
        Arc<ReadProgress>,
    ) {
        let (mut client, mut reader, write_half) = reader_pair(true).await;
        wait_for_stamps(&mut client, &mut reader).await;
        let progress = reader.progress().expect("stamping");
        client.write_all(line).await.expect("write");
        wait_until_unread(&progress, line.len()).await;
        (client, reader, write_half, progress)
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_line_read_together_with_a_later_one_is_told_apart_by_where_it_ends() {
        let (mut client, mut reader, _write_half, progress) =
            stamped_reader_holding(b"first\n").await;
        // The warm-up's bytes: `first` waits unread.
        let warm = reader.bytes_read;
        // Arrived while the first waits unread: one read takes both.
        tokio::time::sleep(Duration::from_millis(40)).await;
        let second_written = Instant::now();
        client.write_all(b"second\n").await.expect("write");
        wait_until_unread(&progress, 13).await;
        let look = progress.look().expect("a look");
        assert_eq!(look.received_bytes, warm + 13, "read and unread bytes");
        let mut buf = [0u8; 64];
        let n = reader.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"first\nsecond\n");
        // The read has the later line's stamp: too late for the first line.
        let stamp = reader.last_arrival().expect("stamped");
        assert!(
            stamp + Duration::from_millis(5) >= second_written,
            "the read's stamp is the second line's"
        );
        // The first line shared its read; where it ends tells it from the second.
        let first = reader.shared_read(7).expect("shared");
        assert_eq!(first.end_byte, warm + 6);
        assert!(first.after.is_some_and(|after| after < second_written));
        assert_eq!(
            reader.shared_read(0),
            None,
            "the last line's stamp is its own"
        );
        let now = progress.look().expect("a look");
        assert_eq!(now.received_bytes, warm + 13, "nothing unread now");
        assert!(now.at >= look.at);
    }

    #[tokio::test]
    async fn a_look_without_a_stamping_reader_tells_nothing() {
        let (_client, reader, _write_half) = reader_pair(false).await;
        assert!(reader.progress().is_none());
        assert_eq!(reader.shared_read(3), None);
        assert_eq!(ReadProgress::default().look(), None, "no socket");
    }

    #[tokio::test]
    async fn without_stamping_reads_work_and_carry_no_stamp() {
        let (mut client, mut reader, _write_half) = reader_pair(false).await;
        assert!(!reader.is_stamping());
        client.write_all(b"x\n").await.expect("write");
        drop(client);
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.expect("read");
        assert_eq!(all, b"x\n");
        assert_eq!(reader.last_arrival(), None);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_stamped_reader_reads_everything_up_to_the_end_of_the_stream() {
        let (mut client, mut reader, _write_half) = reader_pair(true).await;
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let sent = payload.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.expect("write");
        });
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.expect("read");
        writer.await.expect("writer");
        assert_eq!(all, payload);
    }

    /// A short read clears the socket's readiness (no second `recvmsg` per line): the next
    /// line must still wake the reader, whether it comes while the reader waits or before.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn after_a_short_read_the_next_line_still_wakes_the_reader() {
        let (mut client, mut reader, _write_half) = reader_pair(true).await;
        let mut buf = [0u8; 64];
        for round in 0..300u32 {
            let line = format!("line {round}\n");
            if round % 2 == 0 {
                // Written while the reader is already waiting.
                let pending = reader.read(&mut buf);
                let write = async {
                    tokio::task::yield_now().await;
                    client.write_all(line.as_bytes()).await.expect("write");
                };
                let (n, ()) = tokio::join!(
                    async {
                        tokio::time::timeout(Duration::from_secs(5), pending)
                            .await
                            .expect("the reader was woken")
                            .expect("read")
                    },
                    write
                );
                assert_eq!(&buf[..n], line.as_bytes());
            } else {
                // Written before the reader asks.
                client.write_all(line.as_bytes()).await.expect("write");
                let n = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut buf))
                    .await
                    .expect("the reader was woken")
                    .expect("read");
                assert_eq!(&buf[..n], line.as_bytes());
            }
        }
    }

    /// The reader tells the referees when it has emptied its socket: not before it has read,
    /// then, once the lines of a read that left room are handed on, as of that read's start.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_stamped_reader_reports_when_it_has_read_everything() {
        let (mut client, mut reader, _write_half) = reader_pair(true).await;
        let progress = reader
            .progress()
            .expect("a stamping reader reports its reads");
        let start = Instant::now();
        assert!(!progress.drained_since(start), "nothing read yet");
        client.write_all(b"move\n").await.expect("write");
        let mut buf = [0u8; 64];
        let n = reader.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"move\n");
        assert!(
            !progress.drained_since(start),
            "not before the line read is handed on"
        );
        // Asking for more means the line was handed on: the socket was empty when the read
        // that took it began.
        let more = tokio::time::timeout(Duration::from_millis(20), reader.read(&mut buf)).await;
        assert!(more.is_err(), "nothing more to read");
        assert!(progress.drained_since(start), "the read emptied the socket");
        assert!(
            !progress.drained_since(Instant::now() + Duration::from_millis(5)),
            "not past the last read"
        );
        let (_client, unstamped, _w) = reader_pair(false).await;
        assert!(
            unstamped.progress().is_none(),
            "reads through tokio cannot tell"
        );
    }

    /// The paired reads lie within the bracket of two monotonic reads taken around the call,
    /// and the wall clock read with them is the one of that moment.
    #[test]
    fn paired_reads_of_both_clocks_lie_within_the_calls_bracket() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            for _ in 0..100 {
                let (before, wall_before) = (Instant::now(), SystemTime::now());
                let (now, wall) = paired_now();
                let (after, wall_after) = (Instant::now(), SystemTime::now());
                assert!(before <= now && now <= after);
                assert!(wall_before <= wall && wall <= wall_after);
            }
        });
    }

    #[test]
    fn stamps_are_kept_between_the_last_empty_socket_and_the_reads_end() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970");
            let stamp = |d: Duration| (d.as_secs() as i64, i64::from(d.subsec_nanos()));
            let ended = Instant::now();
            // From the future (a wall clock stepped back): the read's end.
            let (s, ns) = stamp(wall + Duration::from_secs(5));
            assert_eq!(arrival_instant(s, ns, ended, None), Some(ended));
            // Too old to trust.
            let (s, ns) = stamp(wall - MAX_TRUSTED_AGE - Duration::from_secs(1));
            assert_eq!(arrival_instant(s, ns, ended, None), None);
            // A recent one: its age before the read.
            let (s, ns) = stamp(wall - Duration::from_millis(200));
            let got = arrival_instant(s, ns, ended, None).expect("recent stamp");
            let age = ended.duration_since(got);
            assert!(
                age >= Duration::from_millis(199) && age <= Duration::from_millis(230),
                "{age:?}"
            );
            // Never before the socket was last found empty (a wall clock stepped forward).
            let empty = ended - Duration::from_millis(50);
            assert_eq!(arrival_instant(s, ns, ended, Some(empty)), Some(empty));
            // An empty socket after it: the bound is the read's end.
            let later = ended + Duration::from_millis(1);
            assert_eq!(arrival_instant(s, ns, ended, Some(later)), Some(ended));
        });
    }

    /// One pairing of the clocks converts the stamps of reads within `CLOCK_PAIR_REUSE` of it;
    /// a read after that pairs them afresh.
    #[test]
    fn a_pairing_of_the_clocks_is_reused_only_while_young() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let now = Instant::now();
            let first = clock_pair(now);
            assert_eq!(clock_pair(now + CLOCK_PAIR_REUSE / 2), first);
            std::thread::sleep(CLOCK_PAIR_REUSE + Duration::from_millis(1));
            let again = clock_pair(Instant::now());
            assert_ne!(again, first);
            assert!(again.0 > first.0 && again.1 > first.1);
        });
    }

    /// A reader waiting on an empty socket says so; bytes that wait unread, a reader that is
    /// reading, or a reader gone make it say no.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_reader_waiting_on_an_empty_socket_says_so() {
        let (mut client, mut reader, _write_half) = reader_pair(true).await;
        let progress = reader
            .progress()
            .expect("a stamping reader reports its reads");
        assert!(!progress.waits_on_empty_socket(), "it has not waited yet");
        let mut buf = [0u8; 64];
        let wait = tokio::time::timeout(Duration::from_millis(20), reader.read(&mut buf)).await;
        assert!(wait.is_err(), "nothing to read");
        assert!(progress.waits_on_empty_socket(), "waiting, nothing sent");
        client.write_all(b"move\n").await.expect("write");
        // Loopback hands the bytes over at once; the bound only keeps a broken test finite.
        let until = Instant::now() + Duration::from_secs(5);
        while progress.waits_on_empty_socket() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(!progress.waits_on_empty_socket(), "a line waits unread");
        let n = reader.read(&mut buf).await.expect("read");
        assert_eq!(&buf[..n], b"move\n");
        assert!(
            !progress.waits_on_empty_socket(),
            "the line read is not handed on yet"
        );
        let wait = tokio::time::timeout(Duration::from_millis(20), reader.read(&mut buf)).await;
        assert!(wait.is_err(), "nothing more to read");
        assert!(progress.waits_on_empty_socket(), "waiting again");
        drop(reader);
        assert!(!progress.waits_on_empty_socket(), "the reader is gone");
        assert!(
            !ReadProgress::default().waits_on_empty_socket(),
            "no socket"
        );
    }
}

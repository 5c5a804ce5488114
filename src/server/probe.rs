//! Measurement hooks the referee feeds for `arena bench`: moves relayed, matches running, the
//! time from reading a move to queueing the opponent's `turn` and the time moves wait in the
//! socket before they are read (lock-free histograms), and, when asked, every charged think
//! time. Off unless the bench switches them on: then each hook costs
//! one relaxed atomic load.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::quantile::nearest_rank;

/// Values below this many microseconds have a bucket each (exact).
const LINEAR: usize = 1024;
/// Above `LINEAR`, each power of two is split into `1 << SUB_BITS` buckets (under 1.6% wide).
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// log2(LINEAR).
const LINEAR_BITS: usize = 10;
/// Buckets for every u64 value.
const BUCKETS: usize = LINEAR + (64 - LINEAR_BITS) * SUB;

/// A histogram of microsecond values, updated with relaxed atomic adds (no lock).
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
}

impl Histogram {
    pub const fn new() -> Histogram {
        Histogram {
            counts: [const { AtomicU64::new(0) }; BUCKETS],
        }
    }

    fn index(us: u64) -> usize {
        if us < LINEAR as u64 {
            return us as usize;
        }
        // `us >= 1024`, so `exp` is 10..=63 and the shift below is at least 4.
        let exp = 63 - us.leading_zeros();
        let sub = (us >> (exp - SUB_BITS)) as usize & (SUB - 1);
        LINEAR + (exp as usize - LINEAR_BITS) * SUB + sub
    }

    /// The smallest value that lands in bucket `index`.
    fn lower_bound(index: usize) -> u64 {
        if index < LINEAR {
            return index as u64;
        }
        let exp = (index - LINEAR) / SUB + LINEAR_BITS;
        let sub = ((index - LINEAR) % SUB) as u64;
        (1u64 << exp) | (sub << (exp - SUB_BITS as usize))
    }

    pub fn record(&self, us: u64) {
        if let Some(c) = self.counts.get(Histogram::index(us)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The counts of a histogram at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    counts: Vec<u64>,
}

impl HistogramSnapshot {
    /// What was recorded after `earlier` was taken.
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: self
                .counts
                .iter()
                .zip(earlier.counts.iter().chain(std::iter::repeat(&0)))
                .map(|(now, then)| now.saturating_sub(*then))
                .collect(),
        }
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value at quantile `q` (0..=1): exact below 1024 µs, the bucket's lower bound above.
    /// `None` when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let counted = self.counts.iter().enumerate().map(|(i, &c)| (i, c));
        nearest_rank(counted, total, q).map(Histogram::lower_bound)
    }
}

/// One charged think time, kept when `enable(true)` asked for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinkSample {
    pub match_id: String,
    /// Index of the move in the game.
    pub ply: u32,
    /// From `turn` written (its clock's start) to the move's arrival.
    pub elapsed_us: u64,
    /// What the clock was charged (after lag credit).
    pub think_us: u64,
    /// When the move reached the server (the kernel's receive time, where the clock stops), on
    /// the machine-wide monotonic clock (`monotonic_us`), so that a load generator on the same
    /// machine can line its own times up with the referee's.
    pub received_mono_us: u64,
}

/// Microseconds on the machine-wide CLOCK_MONOTONIC (the same clock in every process).
pub fn monotonic_us() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the struct it is given.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
    }
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0) / 1000
}

/// Counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSnapshot {
    /// Moves accepted by referees while the probe was on.
    pub moves: u64,
    /// Referee tasks running now (counted whether or not the probe is on).
    pub matches_running: u64,
    /// Read-move-to-`turn`-queued times in microseconds.
    pub overhead_us: HistogramSnapshot,
    /// How long accepted moves waited in the socket: kernel receive time to the reader getting
    /// to them, in microseconds (0 where the kernel gives no receive times).
    pub socket_wait_us: HistogramSnapshot,
}

/// A move lost on time, as the referee saw it (kept with the think samples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutSample {
    pub match_id: String,
    /// Index of the move the mover did not make in time.
    pub ply: u32,
    /// When its `turn` was written (its clock's start), machine-wide monotonic µs.
    pub turn_written_mono_us: u64,
    /// When the loss was declared, machine-wide monotonic µs.
    pub declared_mono_us: u64,
    /// Declared because the settle window closed with no move read (not a move received after
    /// the deadline).
    pub no_move_read: bool,
}

/// How many shares the per-move counters are split into. Each thread counts into a share of
/// its own (threads beyond this many share), so the referees on two cores never take turns
/// owning one cache line at every move: in a profile of the bench, the move counter sat on the
/// line of the flag every hook reads, and each core's count made the other's next look a miss.
const SHARES: usize = 8;

/// One thread's share of the per-move counters, on cache lines of its own.
#[repr(align(128))]
struct MoveShare {
    moves: AtomicU64,
    overhead_us: Histogram,
    socket_wait_us: Histogram,
}

impl MoveShare {
    const fn new() -> MoveShare {
        MoveShare {
            moves: AtomicU64::new(0),
            overhead_us: Histogram::new(),
            socket_wait_us: Histogram::new(),
        }
    }
}

/// The switches every hook reads: written only by `enable` and `disable`, on a line of their
/// own.
#[repr(align(128))]
struct Switches {
    enabled: AtomicBool,
    keep_think: AtomicBool,
}

/// Matches started and ended: written once per match, on a line of their own.
#[repr(align(128))]
struct MatchCounts {
    started: AtomicU64,
    ended: AtomicU64,
}

/// The per-move counters, in `SHARES` shares.
struct MoveShares([MoveShare; SHARES]);

impl MoveShares {
    const fn new() -> MoveShares {
        MoveShares([const { MoveShare::new() }; SHARES])
    }

    /// The calling thread's share (given out in turn, at its first use in this process).
    fn own(&self) -> &MoveShare {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static INDEX: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
        }
        let index = INDEX.with(|index| {
            index.get().unwrap_or_else(|| {
                let given = NEXT.fetch_add(1, Ordering::Relaxed) % SHARES;
                index.set(Some(given));
                given
            })
        });
        &self.0[index % SHARES]
    }

    fn moves(&self) -> u64 {
        self.0
            .iter()
            .map(|share| share.moves.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of every share's histogram `which`.
    fn summed(&self, which: impl Fn(&MoveShare) -> &Histogram) -> HistogramSnapshot {
        let mut counts = vec![0u64; BUCKETS];
        for share in &self.0 {
            for (sum, count) in counts.iter_mut().zip(which(share).counts.iter()) {
                *sum += count.load(Ordering::Relaxed);
            }
        }
        HistogramSnapshot { counts }
    }
}

struct Probe {
    switches: Switches,
    matches: MatchCounts,
    shares: MoveShares,
    think: Mutex<Vec<ThinkSample>>,
    timeouts: Mutex<Vec<TimeoutSample>>,
}

static PROBE: Probe = Probe {
    switches: Switches {
        enabled: AtomicBool::new(false),
        keep_think: AtomicBool::new(false),
    },
    matches: MatchCounts {
        started: AtomicU64::new(0),
        ended: AtomicU64::new(0),
    },
    shares: MoveShares::new(),
    think: Mutex::new(Vec::new()),
    timeouts: Mutex::new(Vec::new()),
};

/// Switches the hooks on; with `keep_think`, every charged think time is kept too (one short
/// lock per move).
pub fn enable(keep_think: bool) {
    PROBE
        .switches
        .keep_think
        .store(keep_think, Ordering::Relaxed);
    PROBE.switches.enabled.store(true, Ordering::Relaxed);
}

pub fn disable() {
    PROBE.switches.enabled.store(false, Ordering::Relaxed);
    PROBE.switches.keep_think.store(false, Ordering::Relaxed);
}

pub fn snapshot() -> ProbeSnapshot {
    ProbeSnapshot {
        moves: PROBE.shares.moves(),
        matches_running: PROBE
            .matches
            .started
            .load(Ordering::Relaxed)
            .saturating_sub(PROBE.matches.ended.load(Ordering::Relaxed)),
        overhead_us: PROBE.shares.summed(|share| &share.overhead_us),
        socket_wait_us: PROBE.shares.summed(|share| &share.socket_wait_us),
    }
}

/// The think times kept so far (and forgets them).
pub fn take_think_samples() -> Vec<ThinkSample> {
    let mut kept = PROBE.think.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *kept)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A referee accepted move `ply` of the match `match_id` names, which reached the server at
/// `received` and was read at `read`; `turn_queued` says whether it has queued the opponent's
/// `turn` (not when the move ended the game). `match_id` is asked only when think samples are
/// kept: a match's id sits in a cache line no other step of a move touches, and reading it at
/// every move cost the referee about 1% of its time a move in the bench's profile.
pub fn move_accepted(
    match_id: impl FnOnce() -> String,
    ply: usize,
    received: Instant,
    read: Instant,
    elapsed: Duration,
    think: Duration,
    turn_queued: bool,
) {
    if !PROBE.switches.enabled.load(Ordering::Relaxed) {
        return;
    }
    let share = PROBE.shares.own();
    share.moves.fetch_add(1, Ordering::Relaxed);
    share
        .socket_wait_us
        .record(micros(read.saturating_duration_since(received)));
    if turn_queued {
        share
            .overhead_us
            .record(micros(Instant::now().saturating_duration_since(read)));
    }
    if PROBE.switches.keep_think.load(Ordering::Relaxed) {
        let ago = micros(Instant::now().saturating_duration_since(received));
        let sample = ThinkSample {
            received_mono_us: monotonic_us().saturating_sub(ago),
            match_id: match_id(),
            ply: u32::try_from(ply).unwrap_or(u32::MAX),
            elapsed_us: micros(elapsed),
            think_us: micros(think),
        };
        PROBE
            .think
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sample);
    }
}

/// A referee ended its match on time: move `ply` of `match_id`, whose clock started at
/// `turn_start`; `no_move_read` when no move had been read by the end of the settle window
/// (kept only with the think samples).
pub fn timed_out(match_id: &str, ply: usize, turn_start: Instant, no_move_read: bool) {
    if !PROBE.switches.enabled.load(Ordering::Relaxed)
        || !PROBE.switches.keep_think.load(Ordering::Relaxed)
    {
        return;
    }
    let ago = micros(Instant::now().saturating_duration_since(turn_start));
    let now = monotonic_us();
    let sample = TimeoutSample {
        match_id: match_id.to_string(),
        ply: u32::try_from(ply).unwrap_or(u32::MAX),
        turn_written_mono_us: now.saturating_sub(ago),
        declared_mono_us: now,
        no_move_read,
    };
    PROBE
        .timeouts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(sample);
}

/// The timeouts kept so far (and forgets them).
pub fn take_timeout_samples() -> Vec<TimeoutSample> {
    let mut kept = PROBE.timeouts.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *kept)
}

/// Moves counted in time although their read's kernel stamp was past the deadline (later
/// bytes shared the read; see `Referee::arrived_by`), while the probe is on.
static SHARED_READ_MOVES_IN_TIME: AtomicU64 = AtomicU64::new(0);

/// A move was counted in time although its read's stamp, that of later bytes, was past the
/// deadline.
pub fn shared_read_move_in_time() {
    if PROBE.switches.enabled.load(Ordering::Relaxed) {
        SHARED_READ_MOVES_IN_TIME.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many moves [`shared_read_move_in_time`] counted so far (and forgets them).
pub fn take_shared_read_moves_in_time() -> u64 {
    SHARED_READ_MOVES_IN_TIME.swap(0, Ordering::Relaxed)
}

/// Servers of this process that have finished setting up (schedule built, accepting bots).
static SERVERS_READY: AtomicU64 = AtomicU64::new(0);

/// A server has built its schedule and starts accepting bots (always counted: one relaxed add
/// per server start).
pub fn server_ready() {
    SERVERS_READY.fetch_add(1, Ordering::Relaxed);
}

/// How many servers of this process have reached `server_ready`.
pub fn servers_ready() -> u64 {
    SERVERS_READY.load(Ordering::Relaxed)
}

/// Counts a referee task as running until it is dropped (however the task ends).
pub struct RunningMatch(());

impl RunningMatch {
    pub fn start() -> RunningMatch {
        PROBE.matches.started.fetch_add(1, Ordering::Relaxed);
        RunningMatch(())
    }
}

impl Drop for RunningMatch {
    fn drop(&mut self) {
        PROBE.matches.ended.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_1024_and_within_two_percent_above() {
        for us in [0u64, 1, 17, 999, 1023] {
            assert_eq!(Histogram::lower_bound(Histogram::index(us)), us);
        }
        let mut previous = 0;
        for us in [1024u64, 1500, 2047, 2048, 65_000, 1 << 40, u64::MAX] {
            let i = Histogram::index(us);
            assert!(i < BUCKETS, "{us} -> {i}");
            assert!(i >= previous, "indexes grow with values");
            previous = i;
            let low = Histogram::lower_bound(i);
            assert!(
                low <= us && (us - low) as f64 <= us as f64 * 0.016,
                "{us}: {low}"
            );
        }
    }

    #[test]
    fn quantiles_of_a_snapshot_difference() {
        let h = Histogram::new();
        h.record(5_000);
        let before = h.snapshot();
        for us in 1..=100 {
            h.record(us);
        }
        let window = h.snapshot().since(&before);
        assert_eq!(window.count(), 100);
        assert_eq!(window.quantile(0.5), Some(50));
        assert_eq!(window.quantile(0.99), Some(99));
        assert_eq!(window.quantile(1.0), Some(100));
        assert_eq!(Histogram::new().snapshot().quantile(0.5), None);
    }

    #[test]
    fn threads_count_into_shares_of_their_own_and_a_look_sums_them() {
        // Built on the heap: the shares are too large for a test thread's stack.
        let shares: &'static MoveShares = Box::leak(Box::new(MoveShares::new()));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    let share = shares.own();
                    for _ in 0..1000 {
                        share.moves.fetch_add(1, Ordering::Relaxed);
                        share.socket_wait_us.record(10 + t);
                    }
                    std::ptr::from_ref(share) as usize
                })
            })
            .collect();
        let used: std::collections::BTreeSet<usize> = threads
            .into_iter()
            .map(|t| t.join().expect("counting thread"))
            .collect();
        assert_eq!(used.len(), 4, "four threads, four shares");
        assert_eq!(shares.moves(), 4000);
        let waits = shares.summed(|share| &share.socket_wait_us);
        assert_eq!(waits.count(), 4000);
        assert_eq!(waits.quantile(0.25), Some(10));
        assert_eq!(waits.quantile(1.0), Some(13));
        assert_eq!(shares.summed(|share| &share.overhead_us).count(), 0);
    }
}

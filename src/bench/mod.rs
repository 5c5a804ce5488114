//! `arena bench`: the figures that show the rules are fast and the referee fast and fair under
//! load: perft speed, moves relayed per second and the referee's per-move overhead with 1,000
//! concurrent matches of instant bots, memory per match, and clock error and false timeouts with
//! 1,000 matches of bots that sleep known times. The bots run in a child process
//! (`arena bench --bots-only`, `bots.rs`); the server runs in this one (`load.rs`).
//! See docs/benchmarks.md.

pub mod bots;
pub mod load;
pub mod perft;
mod relay;
pub mod web_load;

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::server::probe::ThinkSample;
use bots::quantile;
pub use bots::{run_bots, BotsOptions};
use load::{run_phase, LoadPlan, LoadResult};

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Server(#[from] crate::server::ServerError),
}

/// What `arena bench` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchOptions {
    /// Smaller counts (100 matches, short windows): a smoke test, not a measurement.
    pub quick: bool,
    /// This executable, re-run as the load generator.
    pub exe: PathBuf,
    /// Run the server with its web view on and this many clients following its live events
    /// (0: no web view), to compare the figures with and without it.
    pub web_clients: usize,
    /// Matches at once (`None`: 1,000, or 100 with `quick`).
    pub matches: Option<usize>,
    /// Keep one CPU core busy with a spinning child process during the load phases, as other
    /// work on a contest server would.
    pub hog: bool,
}

/// `arena bench --hog-only`: spins on the last core this process may use until killed (the
/// CPU hog of `--hog`, in a process of its own so that its CPU time is not counted as the
/// server's).
pub fn spin_forever() -> ! {
    if let Some(&core) = crate::program::available_cores().last() {
        // Not fatal: an unpinned hog still takes a core's worth of time.
        let _ = crate::program::set_affinity(&[core]);
    }
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
}

/// The CPU hog of `--hog`: killed when dropped.
struct Hog(std::process::Child);

impl Hog {
    fn start(exe: &std::path::Path) -> Result<Hog, BenchError> {
        std::process::Command::new(exe)
            .args(["bench", "--hog-only"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map(Hog)
            .map_err(|e| BenchError::Setup(format!("cannot start the CPU hog: {e}")))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where the bots run, as the report says it.
pub const BOTS_RUN_IN: &str = "another process: `arena bench` re-executes itself as `arena bench --bots-only` (its own tokio runtime), talking to the in-process server over loopback TCP";

/// Every figure, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub date: String,
    pub quick: bool,
    /// Clients following the web view's live events during the load phases (0: web view off).
    pub web_clients: usize,
    /// Bytes those clients read from their event streams in the throughput phase.
    pub web_event_bytes: u64,
    pub cores: usize,
    /// /proc/loadavg when the bench started (other work on the machine skews every figure).
    pub load_average: String,
    pub open_files_limit: u64,
    pub perft_surakarta_6_s: f64,
    pub perft_surakarta_6_nodes: u64,
    /// Game → leaf nodes per second.
    pub perft_nps: BTreeMap<String, f64>,
    /// Game → the depth timed.
    pub perft_depth: BTreeMap<String, u32>,
    pub bots_run_in: String,
    /// The folder under which the load phases wrote their leagues' records and journals.
    pub files_in: String,
    /// Mean time to create one record-sized file there just before the load phases (each
    /// finished game creates one; see docs/benchmarks.md on ext4 without a journal).
    pub file_create_us: f64,
    /// The same when the bench started: a full run waits up to 75 s for it to fall below
    /// 50 µs (the penalty of recent deletions, as by a previous run, fading).
    pub file_create_us_at_start: f64,
    /// How long the bench waited for that.
    pub disk_wait_s: f64,
    pub matches: usize,
    /// Matches running on average during the throughput window (the others were between two
    /// games).
    pub matches_running_mean: f64,
    pub window_s: f64,
    /// The interleaved windows, in the order they ran: referee, relay, referee, relay, ...
    pub rounds: Vec<Round>,
    /// Medians over `rounds` from here to `relay_cpu_us_per_move`.
    pub referee_moves_per_s: f64,
    /// The same bots, sockets and match count through a rules-free line relay (no JSON
    /// parsing, no rules, clocks or journal): the ceiling the referee is measured against.
    pub relay_moves_per_s: f64,
    /// Per round, the referee's moves per second over the relay's (the two windows next to
    /// each other): the median, the lowest and the highest. It depends on how the two cores
    /// are shared at that moment.
    pub referee_to_relay_ratio: f64,
    pub referee_to_relay_ratio_min: f64,
    pub referee_to_relay_ratio_max: f64,
    /// Per round, the relay's CPU per move over the referee's server CPU per move (the goal):
    /// the median, the lowest and the highest.
    pub cpu_ratio: f64,
    pub cpu_ratio_min: f64,
    pub cpu_ratio_max: f64,
    /// CPU time per move of the relay process during its window.
    pub relay_cpu_us_per_move: f64,
    /// Whether a spinning child process held one core during the load phases (`--hog`).
    pub hog: bool,
    pub move_overhead_us_p50: u64,
    pub move_overhead_us_p99: u64,
    pub move_overhead_samples: u64,
    /// How long moves waited in the socket before the server's reader got to them (kernel
    /// receive time → read), with 1,000 matches: the queueing the clocks no longer charge.
    pub socket_wait_us_p50: u64,
    pub socket_wait_us_p99: u64,
    /// Whether the kernel stamped received moves (`SO_TIMESTAMPNS`); if not, clocks stop when
    /// the server reads a move and the socket wait is 0.
    pub kernel_receive_timestamps: bool,
    /// CPU time per move during the window: the server process, and the load generator.
    pub server_cpu_us_per_move: f64,
    pub bots_cpu_us_per_move: f64,
    /// Share of all cores the two processes got during the window (the rest went to other work
    /// or idled).
    pub cpu_share: f64,
    pub relay_latency_us_p50: u64,
    pub relay_latency_us_p99: u64,
    /// With the web view on, taken with its event streams open (and no game running).
    pub rss_idle_mib: f64,
    pub rss_loaded_mib: f64,
    /// What opening the web view's event streams added to the idle server, before any game
    /// (0 without the web view): not counted in the per-match figures, which grow with games.
    pub web_streams_heap_kib: f64,
    pub web_streams_rss_kib: f64,
    pub rss_per_match_kib: f64,
    /// Heap in use per match (mean over the window − idle, over the matches running then):
    /// the live data alone, without the freed memory the allocator keeps, so it varies less
    /// between runs than `rss_per_match_kib`. 0 where the allocator does not tell.
    pub heap_per_match_kib: f64,
    pub timed_think_max_ms: u64,
    pub timed_move_limit_ms: u64,
    pub timed_moves: usize,
    pub clock_error_ms_p50: f64,
    pub clock_error_ms_p99: f64,
    pub clock_error_ms_max: f64,
    /// Without the lag credit: move received time minus `turn`-written time, minus true think
    /// time.
    pub clock_error_uncredited_ms_p99: f64,
    /// The two halves of the uncredited error: `turn` written by the server -> read by the bot,
    /// and move written by the bot -> received by the server (machine-wide monotonic clock).
    pub clock_turn_to_bot_ms_p99: f64,
    pub clock_move_to_server_ms_p99: f64,
    /// Part of `clock_turn_to_bot_ms`: how long `turn` sat in the bot's socket after the bot's
    /// kernel received it, before the bot's process read it (the bot machine's scheduling,
    /// which no referee can see).
    pub clock_turn_waited_in_bot_ms_p99: f64,
    /// The clock error without that wait: what the referee charged minus the time from `turn`
    /// reaching the bot's kernel to the move being written.
    pub clock_error_referee_ms_p99: f64,
    /// Moves in those two figures (those whose `turn` the bot's kernel stamped).
    pub bot_stamped_moves: usize,
    /// In the clock phase: how long moves waited in the socket before being read (not charged).
    pub clock_socket_wait_ms_p99: f64,
    /// Clock phase: games a bot lost on time although, by its own clock, it had used at most
    /// 90% of the limit on that move (from reading `turn` to writing its move).
    pub false_timeouts: u64,
    /// For each false timeout, how long its `turn` took from the referee writing it to the
    /// bot's kernel receiving it and to the bot's process reading it (null where the referee's
    /// stamp is missing): a bot reading its socket late loses time the referee cannot see.
    pub false_timeout_turn_delays: Vec<Option<TurnDelay>>,
    /// Clock phase: every game that ended on time, as the referees recorded them.
    pub timeouts_total: usize,
    /// Clock phase: games lost on time by a bot that had itself used more than 90% by its own
    /// clock (the load generator's process was held up past its planned sleep).
    pub timeouts_bot_overran: u64,
    pub bot_errors_seen: u64,
    pub total_s: f64,
    /// Every goal with its figure and whether it is met (as the readable report prints them).
    pub goals: Vec<GoalCheck>,
}

/// One round of the interleaved windows: a referee window, then a relay window right after it.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// /proc/loadavg when the round began.
    pub load_average: String,
    pub referee_moves_per_s: f64,
    pub server_cpu_us_per_move: f64,
    pub bots_cpu_us_per_move: f64,
    /// The bench's own looks at the server's memory during the referee window, per move: left
    /// out of `server_cpu_us_per_move` (the relay's window has none).
    pub memory_looks_cpu_us_per_move: f64,
    pub relay_moves_per_s: f64,
    pub relay_cpu_us_per_move: f64,
    /// `referee_moves_per_s / relay_moves_per_s`.
    pub throughput_ratio: f64,
    /// `relay_cpu_us_per_move / server_cpu_us_per_move`.
    pub cpu_ratio: f64,
}

/// A goal, its figure in this run, and whether the figure meets it.
#[derive(Debug, Clone, Serialize)]
pub struct GoalCheck {
    pub name: String,
    pub figure: String,
    pub goal: String,
    pub met: bool,
}

/// How many rounds of interleaved referee and relay windows a run takes.
pub const ROUNDS: usize = 3;

/// The median of some figures (0 for none).
fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The lowest and the highest of some figures ((0, 0) for none).
fn spread(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold(None, |range: Option<(f64, f64)>, v| {
            Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })
        .unwrap_or((0.0, 0.0))
}

/// Two decimals, as the ratios are reported.
fn hundredths(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// /proc/loadavg's three averages.
pub(crate) fn load_average_now() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Raises the soft open-files limit to the hard one, and both to `wanted` if they are below it
/// and the system lets this process raise the hard limit (as root); returns the soft limit now
/// in force. The load generator, started afterwards, inherits it.
pub fn raise_open_files_limit(wanted: u64) -> u64 {
    let now = crate::server::open_files::raise_open_files_limit().unwrap_or(0);
    if now >= wanted {
        return now;
    }
    let raised = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: wanted,
    };
    // SAFETY: setrlimit only reads the struct it is given. Refused (EPERM) without the
    // privilege to raise the hard limit; the limit then stays as it was.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        wanted
    } else {
        now
    }
}

/// The open-files limit a run of `matches` matches and `web_clients` event streams wants: each
/// process holds two sockets per match (and the web streams), and the server gives its bot port
/// two thirds of what is left after an eighth is kept back (`server::open_files`).
fn open_files_wanted(matches: usize, web_clients: usize) -> u64 {
    u64::try_from(4 * matches + 4 * web_clients + 1000).unwrap_or(u64::MAX)
}

fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// Per move both sides saw, in microseconds, each list sorted: server-charged think time minus
/// the bot's true think time; the same before lag credit; and the two halves of the latter, on
/// the machine-wide monotonic clock: `turn` written -> bot read it ("out") and bot wrote its
/// move -> server read it ("in").
struct ClockErrors {
    charged: Vec<i64>,
    uncredited: Vec<i64>,
    out: Vec<i64>,
    back: Vec<i64>,
    /// Where the bot's kernel stamped its `turn`: how long the line waited in the bot's socket
    /// before its process read it (part of "out"), and the charged error without that wait.
    in_bot: Vec<i64>,
    referee: Vec<i64>,
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn clock_errors(result: &LoadResult) -> ClockErrors {
    let server: HashMap<(&str, u32), &ThinkSample> = result
        .think
        .iter()
        .map(|s| ((s.match_id.as_str(), s.ply), s))
        .collect();
    let mut e = ClockErrors {
        charged: Vec::new(),
        uncredited: Vec::new(),
        out: Vec::new(),
        back: Vec::new(),
        in_bot: Vec::new(),
        referee: Vec::new(),
    };
    for bot in &result.bots.think {
        if let Some(s) = server.get(&(bot.match_id.as_str(), bot.ply)) {
            let t = signed(bot.think_us);
            let read = signed(bot.read_mono_us);
            let charged = signed(s.think_us).saturating_sub(t);
            e.charged.push(charged);
            e.uncredited.push(signed(s.elapsed_us).saturating_sub(t));
            let turn_written = signed(s.received_mono_us).saturating_sub(signed(s.elapsed_us));
            e.out.push(read.saturating_sub(turn_written));
            e.back
                .push(signed(s.received_mono_us).saturating_sub(read.saturating_add(t)));
            if let Some(arrived) = bot.arrived_mono_us {
                let in_bot = read.saturating_sub(signed(arrived)).max(0);
                e.in_bot.push(in_bot);
                e.referee.push(charged.saturating_sub(in_bot));
            }
        }
    }
    for v in [
        &mut e.charged,
        &mut e.uncredited,
        &mut e.out,
        &mut e.back,
        &mut e.in_bot,
        &mut e.referee,
    ] {
        v.sort_unstable();
    }
    e
}

/// For each game the load generator lost on time within its plan (at most `think_max_ms` by its
/// own clock): its `turn`, from the referee writing it to the bot's kernel receiving it (where
/// the bot's kernel stamped it) and to the bot's process reading it, in ms on the machine-wide
/// monotonic clock; `None` where the referee kept no stamp.
fn false_timeout_delays(result: &LoadResult, think_max_ms: u64) -> Vec<Option<TurnDelay>> {
    result
        .bots
        .lost_on_time
        .iter()
        .filter(|lost| lost.think_us <= think_max_ms.saturating_mul(1000))
        .map(|lost| {
            result
                .referee_timeouts
                .iter()
                .find(|t| t.match_id == lost.match_id && t.ply == lost.ply)
                .map(|t| {
                    let since_written = |at: u64| {
                        signed(at).saturating_sub(signed(t.turn_written_mono_us)) as f64 / 1000.0
                    };
                    TurnDelay {
                        received_ms: lost.arrived_mono_us.map(since_written),
                        read_ms: since_written(lost.read_mono_us),
                        used_ms: lost.think_us as f64 / 1000.0,
                        declared_ms: since_written(t.declared_mono_us),
                        no_move_read: t.no_move_read,
                    }
                })
        })
        .collect()
}

/// How late a bot got a `turn` it then lost on time: after the referee wrote it, its kernel
/// received it (if stamped) and its process read it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TurnDelay {
    pub received_ms: Option<f64>,
    pub read_ms: f64,
    /// The time the bot had used by its own clock.
    pub used_ms: f64,
    /// When the referee declared the loss.
    pub declared_ms: f64,
    /// Declared when the settle window closed with no move read.
    pub no_move_read: bool,
}

/// Files the disk probe creates before the load phases (see [`load::Scratch::time_file_creation`]).
const FILE_PROBE_COUNT: usize = 300;

/// A record file created faster than this (µs) means the disk is not paying for recent
/// deletions (about 20 µs on this project's ext4 when quiet, up to 800 µs right after a run).
const SETTLED_FILE_CREATE_US: f64 = 50.0;
/// How long a full run waits at most for the disk to settle: ext4 without a journal skips
/// inodes deleted in the last 60 s once their table is written back (synced before waiting).
const DISK_PATIENCE: Duration = Duration::from_secs(75);
/// How often the disk is probed again while waiting.
const DISK_PROBE_EVERY: Duration = Duration::from_secs(5);

/// What the disk probe saw before the load phases.
#[derive(Debug, Clone, Copy, PartialEq)]
struct DiskState {
    /// Microseconds to create a record file when the bench started.
    at_start_us: f64,
    /// The same just before the load phases.
    before_load_us: f64,
    /// How long the bench waited between the two.
    waited: Duration,
}

/// Probes file creation and, while it is slower than [`SETTLED_FILE_CREATE_US`], waits (a
/// `wait` call of [`DISK_PROBE_EVERY`]) and probes again, for at most `patience` in all.
fn settle_disk(
    mut probe: impl FnMut() -> Result<f64, BenchError>,
    mut wait: impl FnMut(Duration),
    patience: Duration,
) -> Result<DiskState, BenchError> {
    let at_start_us = probe()?;
    let mut state = DiskState {
        at_start_us,
        before_load_us: at_start_us,
        waited: Duration::ZERO,
    };
    while state.before_load_us > SETTLED_FILE_CREATE_US && state.waited < patience {
        let step = DISK_PROBE_EVERY.min(patience - state.waited);
        wait(step);
        state.waited += step;
        state.before_load_us = probe()?;
    }
    Ok(state)
}

/// Runs every measurement, telling `progress` what it is doing.
pub fn run(options: &BenchOptions, progress: &mut impl Write) -> Result<BenchReport, BenchError> {
    let began = Instant::now();
    let mut say = |text: &str| {
        let _ = writeln!(progress, "bench: {text}");
        let _ = progress.flush();
    };
    let date = chrono::Local::now().to_rfc3339();
    let load_average = load_average_now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut matches = options
        .matches
        .unwrap_or(if options.quick { 100 } else { 1000 });
    let open_files_limit = raise_open_files_limit(open_files_wanted(matches, options.web_clients));
    // Each process holds two sockets per match plus a few files.
    let needed = u64::try_from(2 * matches + 200).unwrap_or(u64::MAX);
    if open_files_limit < needed {
        let fit = usize::try_from(open_files_limit.saturating_sub(200) / 2).unwrap_or(0);
        say(&format!(
            "open-files limit {open_files_limit} is too low for {matches} matches (needs {needed}); running {fit}"
        ));
        matches = fit;
        if matches == 0 {
            return Err(BenchError::Setup(format!(
                "open-files limit {open_files_limit} is too low; raise `ulimit -n`"
            )));
        }
    }

    say("timing Surakarta perft 6");
    let (perft_surakarta_6_s, perft_surakarta_6_nodes) = perft::surakarta_perft_6();
    say("timing perft of every game");
    let (target, cap) = if options.quick {
        (Duration::from_millis(50), Duration::from_millis(300))
    } else {
        (Duration::from_millis(300), Duration::from_millis(1500))
    };
    let figures = perft::perft_speeds(target, cap)?;

    // Six throughput windows (three referee, three relay): 6 s each in a full run.
    let (warmup, window) = if options.quick {
        (Duration::from_millis(300), Duration::from_secs(2))
    } else {
        (Duration::from_secs(2), Duration::from_secs(6))
    };
    let mut scratch = load::Scratch::create()?;
    let mut told = false;
    let disk = settle_disk(
        || scratch.time_file_creation(FILE_PROBE_COUNT),
        |step| {
            if !told {
                told = true;
                say(&format!(
                    "creating a file takes over {SETTLED_FILE_CREATE_US} µs here (files deleted in the last minutes, as by a previous run, slow it on ext4 without a journal); waiting up to {} s for it to settle",
                    DISK_PATIENCE.as_secs()
                ));
                load::sync_files_root();
            }
            std::thread::sleep(step);
        },
        if options.quick {
            Duration::ZERO
        } else {
            DISK_PATIENCE
        },
    )?;
    let _hog = if options.hog {
        say("a child process spins on one core during the load phases (--hog)");
        Some(Hog::start(&options.exe)?)
    } else {
        None
    };
    let instant_plan = LoadPlan {
        matches,
        think_max_ms: 0,
        move_limit_ms: 0,
        warmup,
        window,
        keep_think: false,
        seed: 1,
        web_clients: options.web_clients,
        web_hammer: 0,
    };
    // The relay has no web view: its plan is the referee's without the event streams.
    let relay_plan = LoadPlan {
        web_clients: 0,
        ..instant_plan.clone()
    };
    // Referee, relay, referee, relay, referee, relay: each ratio compares two windows run one
    // right after the other, and three of them give a median and a spread that the machine's
    // drift between windows (other work on a shared machine) moves far less than one.
    let mut windows: Vec<(LoadResult, relay::RelayResult, String)> = Vec::with_capacity(ROUNDS);
    for round in 1..=ROUNDS {
        let round_load = load_average_now();
        say(&format!(
            "round {round}/{ROUNDS} (load {round_load}): referee, {matches} Connect6 matches of instant bots ({} s window)",
            window.as_secs_f64()
        ));
        let referee = run_phase(
            &scratch.phase_dir(&format!("instant-{round}")),
            &instant_plan,
            &options.exe,
        )?;
        say(&format!(
            "round {round}/{ROUNDS}: ceiling, the same {matches} pairs of bots through a rules-free line relay"
        ));
        let relay = relay::run_relay_phase(&relay_plan, &options.exe)?;
        let per_move = |cpu_us: u64, moves: u64| cpu_us as f64 / moves.max(1) as f64;
        let (referee_cpu, relay_cpu) = (
            per_move(referee.server_cpu_us, referee.moves_in_window),
            per_move(relay.relay_cpu_us, relay.moves_in_window),
        );
        say(&format!(
            "round {round}/{ROUNDS}: referee {:.0} /s at {referee_cpu:.1} us CPU per move, relay {:.0} /s at {relay_cpu:.1} us: CPU ratio {:.2}",
            referee.moves_in_window as f64 / referee.window_s.max(1e-9),
            relay.moves_in_window as f64 / relay.window_s.max(1e-9),
            relay_cpu / referee_cpu.max(1e-9)
        ));
        windows.push((referee, relay, round_load));
    }
    let timed_plan = LoadPlan {
        matches,
        think_max_ms: 180,
        move_limit_ms: 200,
        warmup,
        window: if options.quick {
            window
        } else {
            Duration::from_secs(15)
        },
        keep_think: true,
        seed: 2,
        web_clients: options.web_clients,
        web_hammer: 0,
    };
    say(&format!(
        "clocks: {matches} matches of bots sleeping 0-{} ms under a {} ms move limit",
        timed_plan.think_max_ms, timed_plan.move_limit_ms
    ));
    let timed = run_phase(&scratch.phase_dir("timed"), &timed_plan, &options.exe)?;
    let ClockErrors {
        charged,
        uncredited,
        out,
        back,
        in_bot,
        referee,
    } = clock_errors(&timed);

    let per_s = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    let per_move = |cpu_us: u64, moves: u64| {
        if moves > 0 {
            cpu_us as f64 / moves as f64
        } else {
            0.0
        }
    };
    let rounds: Vec<Round> = windows
        .iter()
        .map(|(referee, relay, load_average)| {
            let referee_moves_per_s = per_s(referee.moves_in_window, referee.window_s);
            let relay_moves_per_s = per_s(relay.moves_in_window, relay.window_s);
            let server_cpu_us_per_move = per_move(referee.server_cpu_us, referee.moves_in_window);
            let relay_cpu_us_per_move = per_move(relay.relay_cpu_us, relay.moves_in_window);
            Round {
                load_average: load_average.clone(),
                referee_moves_per_s: referee_moves_per_s.round(),
                server_cpu_us_per_move,
                bots_cpu_us_per_move: per_move(referee.bots_cpu_us, referee.moves_in_window),
                memory_looks_cpu_us_per_move: per_move(
                    referee.memory_looks_cpu_us,
                    referee.moves_in_window,
                ),
                relay_moves_per_s: relay_moves_per_s.round(),
                relay_cpu_us_per_move,
                throughput_ratio: if relay_moves_per_s > 0.0 {
                    hundredths(referee_moves_per_s / relay_moves_per_s)
                } else {
                    0.0
                },
                cpu_ratio: if server_cpu_us_per_move > 0.0 {
                    hundredths(relay_cpu_us_per_move / server_cpu_us_per_move)
                } else {
                    0.0
                },
            }
        })
        .collect();
    // Every other throughput figure is the median of the referee windows'.
    let referees: Vec<&LoadResult> = windows.iter().map(|(referee, _, _)| referee).collect();
    let median_of =
        |figure: &dyn Fn(&LoadResult) -> f64| median(referees.iter().map(|r| figure(r)));
    let per_match = |r: &LoadResult, loaded: u64, idle: u64| {
        if r.matches_running_mean > 0.0 {
            loaded.saturating_sub(idle) as f64 / r.matches_running_mean
        } else {
            0.0
        }
    };
    let first = referees
        .first()
        .ok_or_else(|| BenchError::Setup("no throughput window ran".into()))?;
    let (throughput_min, throughput_max) = spread(rounds.iter().map(|r| r.throughput_ratio));
    let (cpu_ratio_min, cpu_ratio_max) = spread(rounds.iter().map(|r| r.cpu_ratio));
    let mut report = BenchReport {
        date,
        quick: options.quick,
        web_clients: options.web_clients,
        web_event_bytes: first.bots.web_event_bytes,
        cores,
        load_average,
        open_files_limit,
        perft_surakarta_6_s,
        perft_surakarta_6_nodes,
        perft_nps: figures
            .iter()
            .map(|f| (f.game.as_str().to_string(), f.nodes_per_s().round()))
            .collect(),
        perft_depth: figures
            .iter()
            .map(|f| (f.game.as_str().to_string(), f.depth))
            .collect(),
        bots_run_in: BOTS_RUN_IN.to_string(),
        files_in: load::files_root().display().to_string(),
        file_create_us: (disk.before_load_us * 10.0).round() / 10.0,
        file_create_us_at_start: (disk.at_start_us * 10.0).round() / 10.0,
        disk_wait_s: disk.waited.as_secs_f64(),
        matches,
        matches_running_mean: median_of(&|r| r.matches_running_mean),
        window_s: first.window_s,
        referee_moves_per_s: median(rounds.iter().map(|r| r.referee_moves_per_s)),
        relay_moves_per_s: median(rounds.iter().map(|r| r.relay_moves_per_s)),
        referee_to_relay_ratio: median(rounds.iter().map(|r| r.throughput_ratio)),
        referee_to_relay_ratio_min: throughput_min,
        referee_to_relay_ratio_max: throughput_max,
        cpu_ratio: median(rounds.iter().map(|r| r.cpu_ratio)),
        cpu_ratio_min,
        cpu_ratio_max,
        relay_cpu_us_per_move: median(rounds.iter().map(|r| r.relay_cpu_us_per_move)),
        hog: options.hog,
        move_overhead_us_p50: median_of(&|r| r.overhead_us.quantile(0.5).unwrap_or(0) as f64)
            as u64,
        move_overhead_us_p99: median_of(&|r| r.overhead_us.quantile(0.99).unwrap_or(0) as f64)
            as u64,
        move_overhead_samples: referees.iter().map(|r| r.overhead_us.count()).sum(),
        socket_wait_us_p50: median_of(&|r| r.socket_wait_us.quantile(0.5).unwrap_or(0) as f64)
            as u64,
        socket_wait_us_p99: median_of(&|r| r.socket_wait_us.quantile(0.99).unwrap_or(0) as f64)
            as u64,
        kernel_receive_timestamps: !crate::server::kernel_receive_timestamps_refused(),
        server_cpu_us_per_move: median(rounds.iter().map(|r| r.server_cpu_us_per_move)),
        bots_cpu_us_per_move: median(rounds.iter().map(|r| r.bots_cpu_us_per_move)),
        cpu_share: median_of(&|r| {
            if r.window_s > 0.0 {
                (r.server_cpu_us + r.bots_cpu_us) as f64 / 1e6 / r.window_s / cores as f64
            } else {
                0.0
            }
        }),
        relay_latency_us_p50: median_of(&|r| r.bots.relay_us_p50 as f64) as u64,
        relay_latency_us_p99: median_of(&|r| r.bots.relay_us_p99 as f64) as u64,
        rss_idle_mib: first.rss_idle_kib as f64 / 1024.0,
        web_streams_heap_kib: first
            .heap_idle_kib
            .saturating_sub(first.heap_before_streams_kib) as f64,
        web_streams_rss_kib: first
            .rss_idle_kib
            .saturating_sub(first.rss_before_streams_kib) as f64,
        rss_loaded_mib: first.rss_loaded_kib as f64 / 1024.0,
        rss_per_match_kib: median_of(&|r| per_match(r, r.rss_loaded_kib, r.rss_idle_kib)),
        heap_per_match_kib: median_of(&|r| per_match(r, r.heap_loaded_kib, r.heap_idle_kib)),
        timed_think_max_ms: timed_plan.think_max_ms,
        timed_move_limit_ms: timed_plan.move_limit_ms,
        timed_moves: charged.len(),
        clock_error_ms_p50: quantile(&charged, 0.5).map_or(0.0, ms),
        clock_error_ms_p99: quantile(&charged, 0.99).map_or(0.0, ms),
        clock_error_ms_max: charged.last().copied().map_or(0.0, ms),
        clock_error_uncredited_ms_p99: quantile(&uncredited, 0.99).map_or(0.0, ms),
        clock_turn_to_bot_ms_p99: quantile(&out, 0.99).map_or(0.0, ms),
        clock_move_to_server_ms_p99: quantile(&back, 0.99).map_or(0.0, ms),
        clock_turn_waited_in_bot_ms_p99: quantile(&in_bot, 0.99).map_or(0.0, ms),
        clock_error_referee_ms_p99: quantile(&referee, 0.99).map_or(0.0, ms),
        bot_stamped_moves: referee.len(),
        clock_socket_wait_ms_p99: timed.socket_wait_us.quantile(0.99).unwrap_or(0) as f64 / 1000.0,
        false_timeouts: timed.bots.timeouts_within_plan,
        false_timeout_turn_delays: false_timeout_delays(&timed, timed_plan.think_max_ms),
        timeouts_total: timed.timeouts,
        timeouts_bot_overran: timed.bots.timeouts_overran,
        bot_errors_seen: referees.iter().map(|r| r.bots.errors_seen).sum::<u64>()
            + timed.bots.errors_seen,
        total_s: began.elapsed().as_secs_f64(),
        rounds,
        goals: Vec::new(),
    };
    report.goals = report.goal_checks();
    Ok(report)
}

impl BenchReport {
    /// The readable report.
    pub fn write_text(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "arena bench{}{}{} — {} — {} cores, load average {} at start, open-files limit {}",
            if self.quick {
                " --quick (smoke test, not a measurement)"
            } else {
                ""
            },
            if self.hog {
                " --hog (one core kept busy by a spinning process)"
            } else {
                ""
            },
            if self.web_clients > 0 {
                format!(
                    " --web-clients {} (web view on, that many live event streams)",
                    self.web_clients
                )
            } else {
                String::new()
            },
            self.date,
            self.cores,
            self.load_average,
            self.open_files_limit
        )?;
        writeln!(out, "rules")?;
        writeln!(
            out,
            "  Surakarta perft 6: {:.3} s",
            self.perft_surakarta_6_s
        )?;
        for (game, nps) in &self.perft_nps {
            let depth = self.perft_depth.get(game).copied().unwrap_or(0);
            writeln!(
                out,
                "  perft {game:<10} depth {depth}: {:>8.2} M leaf nodes/s",
                nps / 1e6
            )?;
        }
        writeln!(
            out,
            "referee under load: {} concurrent Connect6 matches over loopback TCP, {:.1} s window",
            self.matches, self.window_s
        )?;
        writeln!(out, "  bots: {}", self.bots_run_in)?;
        writeln!(
            out,
            "  records and journals written under {} (set TMPDIR to choose)",
            self.files_in
        )?;
        writeln!(
            out,
            "  creating a record file there took {:.0} µs before the load phases (each finished game makes one); {:.0} µs at start, then waited {:.0} s",
            self.file_create_us, self.file_create_us_at_start, self.disk_wait_s
        )?;
        writeln!(
            out,
            "  matches running during the window: {:.0} on average (the rest between two games)",
            self.matches_running_mean
        )?;
        writeln!(
            out,
            "  interleaved windows, referee then the rules-free line relay (same bots and sockets), {} rounds:",
            self.rounds.len()
        )?;
        for (i, round) in self.rounds.iter().enumerate() {
            writeln!(
                out,
                "    round {} (load {}): referee {:.0} /s at {:.1} us CPU per move (+{:.2} us the bench's memory looks); relay {:.0} /s at {:.1} us; throughput ratio {:.2}, CPU ratio {:.2}",
                i + 1,
                round.load_average,
                round.referee_moves_per_s,
                round.server_cpu_us_per_move,
                round.memory_looks_cpu_us_per_move,
                round.relay_moves_per_s,
                round.relay_cpu_us_per_move,
                round.throughput_ratio,
                round.cpu_ratio
            )?;
        }
        writeln!(
            out,
            "  medians: referee {:.0} /s, relay {:.0} /s; CPU per move: server {:.1} us, relay {:.1} us",
            self.referee_moves_per_s,
            self.relay_moves_per_s,
            self.server_cpu_us_per_move,
            self.relay_cpu_us_per_move
        )?;
        writeln!(
            out,
            "  CPU ratio (relay / referee CPU per move) {:.2}, spread {:.2}-{:.2}; throughput ratio {:.2}, spread {:.2}-{:.2}",
            self.cpu_ratio,
            self.cpu_ratio_min,
            self.cpu_ratio_max,
            self.referee_to_relay_ratio,
            self.referee_to_relay_ratio_min,
            self.referee_to_relay_ratio_max
        )?;
        writeln!(
            out,
            "  overhead read move -> turn queued: p50 {} us, p99 {} us",
            self.move_overhead_us_p50, self.move_overhead_us_p99
        )?;
        writeln!(
            out,
            "  moves waiting in the socket before the server read them (kernel stamps: {}): p50 {} us, p99 {} us",
            if self.kernel_receive_timestamps { "on" } else { "refused" },
            self.socket_wait_us_p50,
            self.socket_wait_us_p99
        )?;
        writeln!(
            out,
            "  CPU per move (medians): server {:.1} us, bots {:.1} us; the two processes got {:.0}% of {} cores",
            self.server_cpu_us_per_move,
            self.bots_cpu_us_per_move,
            self.cpu_share * 100.0,
            self.cores
        )?;
        writeln!(
            out,
            "  bot-seen relay (move written -> turn read) p50 {} us, p99 {} us",
            self.relay_latency_us_p50, self.relay_latency_us_p99
        )?;
        if self.web_clients > 0 {
            writeln!(
                out,
                "  web view: {} event streams read {:.1} MB (in the load generator's process)",
                self.web_clients,
                self.web_event_bytes as f64 / 1e6
            )?;
            writeln!(
                out,
                "  web view: opening them, before any game, took {:.0} KiB of heap ({:.1} KiB a \
                 stream) and {:.0} KiB resident; the idle figures below include them, the \
                 per-match figures do not",
                self.web_streams_heap_kib,
                self.web_streams_heap_kib / self.web_clients as f64,
                self.web_streams_rss_kib
            )?;
        }
        writeln!(
            out,
            "  memory per match: heap in use {:.1} KiB, resident {:.1} KiB (server process {:.1} MiB idle, {:.1} MiB loaded)",
            self.heap_per_match_kib, self.rss_per_match_kib, self.rss_idle_mib, self.rss_loaded_mib
        )?;
        writeln!(
            out,
            "clocks: {} matches of bots sleeping 0-{} ms, move limit {} ms, {} moves compared",
            self.matches, self.timed_think_max_ms, self.timed_move_limit_ms, self.timed_moves
        )?;
        writeln!(
            out,
            "  clock error (charged - true) p99 {:.3} ms, p50 {:.3} ms, max {:.3} ms; before lag credit p99 {:.3} ms",
            self.clock_error_ms_p99,
            self.clock_error_ms_p50,
            self.clock_error_ms_max,
            self.clock_error_uncredited_ms_p99
        )?;
        writeln!(
            out,
            "  where it goes (p99): turn written -> bot read it {:.3} ms; move written -> server received it {:.3} ms",
            self.clock_turn_to_bot_ms_p99, self.clock_move_to_server_ms_p99
        )?;
        writeln!(
            out,
            "  turn waited in the bot's socket (its process's delay) p99 {:.3} ms; clock error without it p99 {:.3} ms ({} moves)",
            self.clock_turn_waited_in_bot_ms_p99,
            self.clock_error_referee_ms_p99,
            self.bot_stamped_moves
        )?;
        writeln!(
            out,
            "  not charged: moves waited in the socket before being read, p99 {:.3} ms",
            self.clock_socket_wait_ms_p99
        )?;
        writeln!(out, "  false timeouts: {}", self.false_timeouts)?;
        if !self.false_timeout_turn_delays.is_empty() {
            let delays: Vec<String> = self
                .false_timeout_turn_delays
                .iter()
                .map(|d| match d {
                    None => "?".to_string(),
                    Some(d) => format!(
                        "{}/{:.1}/{:.1}/{:.1}{}",
                        d.received_ms.map_or("?".to_string(), |r| format!("{r:.1}")),
                        d.read_ms,
                        d.read_ms + d.used_ms,
                        d.declared_ms,
                        if d.no_move_read {
                            " (no move read)"
                        } else {
                            ""
                        }
                    ),
                })
                .collect();
            writeln!(
                out,
                "  each false timeout, ms after its turn was written: received by the bot's kernel / read by the bot / move written / loss declared: {}",
                delays.join(", ")
            )?;
        }
        writeln!(
            out,
            "  games lost on time: {} in all; {} of them by a bot whose own clock says it used more than 90% (its process was held up)",
            self.timeouts_total, self.timeouts_bot_overran
        )?;
        writeln!(
            out,
            "goals (throughput figures are medians of the {} rounds; cost per move from 1,000 to 10,000 matches is compared across runs with --matches)",
            self.rounds.len()
        )?;
        for check in &self.goals {
            writeln!(
                out,
                "  {:<44} {:>12}   goal {:<12} {}",
                check.name,
                check.figure,
                check.goal,
                if check.met { "met" } else { "MISSED" }
            )?;
        }
        writeln!(
            out,
            "total {:.0} s; the machine is shared, so every figure is noisy",
            self.total_s
        )
    }

    /// Every goal with this run's figure.
    pub fn goal_checks(&self) -> Vec<GoalCheck> {
        let check = |name: &str, figure: String, goal: &str, met: bool| GoalCheck {
            name: name.to_string(),
            figure,
            goal: goal.to_string(),
            met,
        };
        vec![
            check(
                "Surakarta perft 6",
                format!("{:.3} s", self.perft_surakarta_6_s),
                "<= 3 s",
                self.perft_surakarta_6_s <= 3.0,
            ),
            check(
                "cpu_ratio: relay / referee CPU per move",
                format!("{:.2}", self.cpu_ratio),
                ">= 0.7",
                self.cpu_ratio >= 0.7,
            ),
            check(
                "throughput ratio: referee / relay moves/s",
                format!("{:.2}", self.referee_to_relay_ratio),
                ">= 0.75",
                self.referee_to_relay_ratio >= 0.75,
            ),
            check(
                "moves validated and relayed",
                format!("{:.0} /s", self.referee_moves_per_s),
                ">= 50000 /s",
                self.referee_moves_per_s >= 50_000.0,
            ),
            check(
                "overhead read move -> turn queued p99",
                format!("{} us", self.move_overhead_us_p99),
                "<= 1000 us",
                self.move_overhead_us_p99 <= 1000,
            ),
            check(
                "memory per match (heap in use)",
                format!("{:.1} KiB", self.heap_per_match_kib),
                "<= 24 KiB",
                self.heap_per_match_kib <= 24.0,
            ),
            check(
                "resident memory per match",
                format!("{:.1} KiB", self.rss_per_match_kib),
                "<= 64 KiB",
                self.rss_per_match_kib <= 64.0,
            ),
            check(
                "clock error (charged - true) p99",
                format!("{:.3} ms", self.clock_error_ms_p99),
                "<= 1 ms",
                self.clock_error_ms_p99 <= 1.0,
            ),
            check(
                "false timeouts",
                self.false_timeouts.to_string(),
                "0",
                self.false_timeouts == 0,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::probe::{Histogram, TimeoutSample};

    /// Runs `settle_disk` over probe results given in advance, returning its state and the
    /// waits it asked for.
    fn settle_with(probes: &[f64], patience: Duration) -> (DiskState, Vec<Duration>, usize) {
        let mut next = probes.iter();
        let mut probed = 0;
        let mut waits = Vec::new();
        let state = settle_disk(
            || {
                probed += 1;
                Ok(*next.next().expect("no more probe results"))
            },
            |step| waits.push(step),
            patience,
        )
        .expect("probes succeed");
        (state, waits, probed)
    }

    #[test]
    fn a_quiet_disk_is_probed_once_and_not_waited_for() {
        let (state, waits, probed) = settle_with(&[19.0], DISK_PATIENCE);
        assert_eq!(probed, 1);
        assert!(waits.is_empty());
        assert_eq!(state.at_start_us, 19.0);
        assert_eq!(state.before_load_us, 19.0);
        assert_eq!(state.waited, Duration::ZERO);
    }

    #[test]
    fn a_slow_disk_is_waited_for_until_it_settles() {
        let (state, waits, probed) = settle_with(&[834.0, 500.0, 120.0, 21.0], DISK_PATIENCE);
        assert_eq!(probed, 4);
        assert_eq!(waits, vec![DISK_PROBE_EVERY; 3]);
        assert_eq!(state.at_start_us, 834.0);
        assert_eq!(state.before_load_us, 21.0);
        assert_eq!(state.waited, 3 * DISK_PROBE_EVERY);
    }

    #[test]
    fn the_wait_for_the_disk_ends_at_its_patience() {
        let (state, waits, _) = settle_with(&[900.0; 100], Duration::from_secs(12));
        let total: Duration = waits.iter().sum();
        assert_eq!(total, Duration::from_secs(12));
        assert_eq!(waits.last(), Some(&Duration::from_secs(2)));
        assert_eq!(state.waited, Duration::from_secs(12));
        assert_eq!(state.before_load_us, 900.0);
    }

    #[test]
    fn rounds_are_summed_up_by_their_median_and_spread() {
        assert_eq!(median([0.52, 0.44, 0.61]), 0.52);
        assert_eq!(median([0.4, 0.6]), 0.5);
        assert_eq!(median(Vec::new()), 0.0);
        assert_eq!(spread([0.52, 0.44, 0.61]), (0.44, 0.61));
        assert_eq!(spread(Vec::new()), (0.0, 0.0));
    }

    #[test]
    fn a_quick_run_never_waits_for_the_disk() {
        let (state, waits, probed) = settle_with(&[900.0], Duration::ZERO);
        assert_eq!((probed, waits.len()), (1, 0));
        assert_eq!(state.before_load_us, 900.0);
    }

    fn result_with(think: Vec<ThinkSample>, bots: Vec<bots::TimedMove>) -> LoadResult {
        LoadResult {
            window_s: 1.0,
            moves_in_window: 0,
            overhead_us: Histogram::new().snapshot(),
            socket_wait_us: Histogram::new().snapshot(),
            rss_idle_kib: 0,
            rss_before_streams_kib: 0,
            heap_before_streams_kib: 0,
            rss_loaded_kib: 0,
            heap_idle_kib: 0,
            heap_loaded_kib: 0,
            matches_running_mean: 0.0,
            server_cpu_us: 0,
            bots_cpu_us: 0,
            memory_looks_cpu_us: 0,
            timeouts: 0,
            games_finished: 0,
            think,
            referee_timeouts: Vec::new(),
            bots: bots::BotsReport {
                think: bots,
                ..Default::default()
            },
            hammer: None,
        }
    }

    #[test]
    fn false_timeouts_are_matched_with_the_referees_turn_stamp() {
        let mut result = result_with(Vec::new(), Vec::new());
        result.referee_timeouts = vec![TimeoutSample {
            match_id: "m1-r1-g1".into(),
            ply: 7,
            turn_written_mono_us: 10_000,
            declared_mono_us: 260_000,
            no_move_read: true,
        }];
        let lost = |match_id: &str, ply, used_us, read_mono_us, arrived_mono_us| bots::TimedMove {
            match_id: match_id.to_string(),
            ply,
            think_us: used_us,
            read_mono_us,
            arrived_mono_us,
        };
        result.bots.lost_on_time = vec![
            // Received 0.2 ms and read 25 ms after it was written, used 180 ms by its own
            // clock: false, and the bot's process held the turn.
            lost("m1-r1-g1", 7, 180_000, 35_000, Some(10_200)),
            // Used 230 ms by its own clock: it overran, not counted.
            lost("m2-r1-g1", 3, 230_000, 50_000, None),
            // Within plan, but the referee kept no stamp for it.
            lost("m3-r1-g1", 9, 100_000, 50_000, None),
        ];
        assert_eq!(
            false_timeout_delays(&result, 180),
            vec![
                Some(TurnDelay {
                    received_ms: Some(0.2),
                    read_ms: 25.0,
                    used_ms: 180.0,
                    declared_ms: 250.0,
                    no_move_read: true,
                }),
                None
            ]
        );
    }

    #[test]
    fn clock_errors_pair_moves_by_match_and_ply_and_split_into_halves() {
        // The referee wrote `turn` at 1_000 µs and read the move at 51_500 µs, charging 50_000
        // after 500 of lag credit; the bot read `turn` at 1_300 and wrote its move 50_000 later.
        let server = vec![
            ThinkSample {
                match_id: "m1-r1-g1".into(),
                ply: 4,
                elapsed_us: 50_500,
                think_us: 50_000,
                received_mono_us: 51_500,
            },
            ThinkSample {
                match_id: "m2-r1-g1".into(),
                ply: 4,
                elapsed_us: 9_000,
                think_us: 9_000,
                received_mono_us: 99_000,
            },
        ];
        let timed = |ply, think_us, read_mono_us, arrived_mono_us| bots::TimedMove {
            match_id: "m1-r1-g1".to_string(),
            ply,
            think_us,
            read_mono_us,
            arrived_mono_us,
        };
        let bots = vec![
            // Its kernel received `turn` at 1_100: it waited 200 µs in the bot's socket.
            timed(4, 50_000, 1_300, Some(1_100)),
            // No server sample for this one: left out.
            timed(5, 10_000, 60_000, None),
        ];
        let e = clock_errors(&result_with(server, bots));
        assert_eq!(e.charged, vec![0]);
        assert_eq!(e.uncredited, vec![500]);
        assert_eq!(e.out, vec![300], "turn written at 1_000, read at 1_300");
        assert_eq!(e.back, vec![200], "written at 51_300, read at 51_500");
        assert_eq!(e.out[0] + e.back[0], e.uncredited[0]);
        assert_eq!(e.in_bot, vec![200], "received at 1_100, read at 1_300");
        assert_eq!(
            e.referee,
            vec![-200],
            "charged 0 over a true 50_000, less the 200 waited"
        );
    }
}

//! `arena bench`: the figures that show the rules are fast and the referee fast and fair under
//! load: perft speed, moves relayed per second and the referee's per-move overhead with 1,000
//! concurrent matches of instant bots, memory per match, and clock error and false timeouts with
//! 1,000 matches of bots that sleep known times. The bots run in a child process
//! (`arena bench --bots-only`, `bots.rs`); the server runs in this one (`load.rs`). The report
//! and its goals are `report.rs`.
//! See docs/benchmarks.md.

pub mod bots;
pub mod load;
pub mod perft;
mod relay;
mod report;
pub mod web_load;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::server::open_files::OpenFilesBudget;
use crate::server::probe::ThinkSample;
use bots::quantile;
pub use bots::{run_bots, BotsOptions};
use load::{run_phase, BotsPriority, LoadPlan, LoadResult};
pub use report::{BenchReport, GoalCheck, Round};

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
    /// Games each bot plays at once over its one connection (1: two sockets a match). More
    /// than one lets a run hold more matches under the same open-files limit.
    pub games_per_bot: usize,
    /// Keep one CPU core busy with a spinning child process during the load phases, as other
    /// work on a contest server would.
    pub hog: bool,
    /// Worker threads of the server's and the relay's runtimes (0: one per core).
    pub server_threads: usize,
    /// Run the server (and the relay) on one core and the load generator on the others: the
    /// referee's cost with a core to itself rather than two cores traded with the bots. Not
    /// the goals' setting.
    pub split_cores: bool,
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

/// The clock phase's bots think a uniform 0-180 ms under a 200 ms move limit at up to 1,000
/// matches: about 11,000 moves a second, well within what this kind of machine referees. With
/// more matches both grow in proportion (0-1,800 ms under 2 s at 10,000), so the phase asks the
/// same moves a second and its figures say whether the clocks stay fair among that many
/// matches; at 180 ms they asked 110,000 moves a second at 10,000 matches, more than two cores
/// referee, and measured the overload instead. Returns (think_max_ms, move_limit_ms).
fn clock_phase_times(matches: usize) -> (u64, u64) {
    let scale = u64::try_from(matches.div_ceil(1000).max(1)).unwrap_or(u64::MAX);
    (180u64.saturating_mul(scale), 200u64.saturating_mul(scale))
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
/// process holds a socket per bot (two a match, or fewer when bots play several games at once)
/// and the web streams, and the server gives its bot port
/// two thirds of what is left after an eighth is kept back (`server::open_files`).
fn open_files_wanted(matches: usize, games_per_bot: usize, web_clients: usize) -> u64 {
    u64::try_from(2 * load::bots_for(matches, games_per_bot) + 4 * web_clients + 1000)
        .unwrap_or(u64::MAX)
}

/// The most matches, up to `matches`, that both processes can hold under the open-files limit
/// `limit` (which the load generator inherits): the server's bot port, as the server shares the
/// limit (`OpenFilesBudget`), takes a connection a bot, its web port the streams, and the load
/// generator a socket a bot and the streams, with a few files to spare.
fn matches_that_fit(limit: u64, matches: usize, games_per_bot: usize, web_clients: usize) -> usize {
    let fits = |m: usize| {
        let (bot_cap, web_cap) = load::bench_config_caps(m, games_per_bot, web_clients);
        let budget = OpenFilesBudget::fit(Some(limit), bot_cap, web_cap);
        let generator =
            u64::try_from(load::bots_for(m, games_per_bot) + web_clients + 200).unwrap_or(u64::MAX);
        // The bot port's whole configured cap, not just two a match: bots that reconnect or
        // wait for a slot would otherwise time out their `hello`.
        budget.bot_connections >= bot_cap
            && budget.web_connections >= web_clients
            && generator <= limit
    };
    // Holding fewer matches never needs more files: the largest that fits, by bisection.
    let (mut lo, mut hi) = (0, matches);
    if fits(hi) {
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
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
    /// The clock goal's figure: over every move, the charged error from where the bot's
    /// kernel received `turn` (`referee`'s figure), or from the bot's read where its kernel
    /// gave no stamp (`charged`'s, which can only be larger).
    at_wire: Vec<i64>,
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
        at_wire: Vec::new(),
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
                e.at_wire.push(charged.saturating_sub(in_bot));
            } else {
                e.at_wire.push(charged);
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
        &mut e.at_wire,
    ] {
        v.sort_unstable();
    }
    e
}

/// For each game the load generator lost on time within its plan (at most `think_max_ms` used
/// at the wire, `TimedMove::used_us`): its `turn`, from the referee writing it to the bot's
/// kernel receiving it (where the bot's kernel stamped it) and to the bot's process reading
/// it, in ms on the machine-wide monotonic clock; `None` where the referee kept no stamp.
fn false_timeout_delays(result: &LoadResult, think_max_ms: u64) -> Vec<Option<TurnDelay>> {
    result
        .bots
        .lost_on_time
        .iter()
        .filter(|lost| lost.used_us() <= think_max_ms.saturating_mul(1000))
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
                        used_ms: lost.used_us() as f64 / 1000.0,
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
    /// The time the bot had used at the wire (`TimedMove::used_us`: from its kernel's receipt
    /// of `turn` where stamped, else from reading it).
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
    let games_per_bot = options.games_per_bot.max(1);
    // Every bot plays `games_per_bot` games at once: a whole number of them per pair.
    let whole = |m: usize| m / games_per_bot * games_per_bot;
    let mut matches = whole(
        options
            .matches
            .unwrap_or(if options.quick { 100 } else { 1000 }),
    )
    .max(games_per_bot);
    let open_files_limit = raise_open_files_limit(open_files_wanted(
        matches,
        games_per_bot,
        options.web_clients,
    ));
    let fit = whole(matches_that_fit(
        open_files_limit,
        matches,
        games_per_bot,
        options.web_clients,
    ));
    if fit < matches {
        say(&format!(
            "open-files limit {open_files_limit} is too low for {matches} matches (the server's bot port and the load generator hold a socket a bot, {} bots); running {fit}",
            load::bots_for(matches, games_per_bot)
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
    let bots_cores = if options.split_cores {
        let cores = crate::program::available_cores();
        let split = load::CoreSplit::of(&cores).ok_or_else(|| {
            BenchError::Setup(format!(
                "--split-cores needs two cores or more; this process may use {}",
                cores.len()
            ))
        })?;
        load::pin_this_process(split.server)?;
        say(&format!(
            "the server (and the relay) run on core {}, the load generator on {:?} (--split-cores)",
            split.server, split.bots
        ));
        split.bots
    } else {
        Vec::new()
    };
    let instant_plan = LoadPlan {
        matches,
        games_per_bot,
        think_max_ms: 0,
        move_limit_ms: 0,
        warmup,
        window,
        keep_think: false,
        seed: 1,
        web_clients: options.web_clients,
        web_hammer: 0,
        server_threads: options.server_threads,
        bots_priority: BotsPriority::Same,
        bots_cores: bots_cores.clone(),
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
    let (think_max_ms, move_limit_ms) = clock_phase_times(matches);
    let timed_plan = LoadPlan {
        matches,
        games_per_bot,
        think_max_ms,
        move_limit_ms,
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
        server_threads: options.server_threads,
        bots_priority: BotsPriority::Raised,
        bots_cores,
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
        at_wire,
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
        games_per_bot,
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
        split_cores: options.split_cores,
        server_workers: first.server_workers,
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
        clock_bots_scheduling: timed.bots_scheduling,
        clock_error_ms_p50: quantile(&charged, 0.5).map_or(0.0, ms),
        clock_error_ms_p99: quantile(&charged, 0.99).map_or(0.0, ms),
        clock_error_ms_max: charged.last().copied().map_or(0.0, ms),
        clock_error_uncredited_ms_p99: quantile(&uncredited, 0.99).map_or(0.0, ms),
        clock_turn_to_bot_ms_p99: quantile(&out, 0.99).map_or(0.0, ms),
        clock_move_to_server_ms_p99: quantile(&back, 0.99).map_or(0.0, ms),
        clock_turn_waited_in_bot_ms_p99: quantile(&in_bot, 0.99).map_or(0.0, ms),
        clock_error_referee_ms_p99: quantile(&referee, 0.99).map_or(0.0, ms),
        bot_stamped_moves: referee.len(),
        clock_error_at_wire_ms_p99: quantile(&at_wire, 0.99).map_or(0.0, ms),
        clock_socket_wait_ms_p99: timed.socket_wait_us.quantile(0.99).unwrap_or(0) as f64 / 1000.0,
        false_timeouts: timed.bots.timeouts_within_plan,
        false_timeout_turn_delays: false_timeout_delays(&timed, timed_plan.think_max_ms),
        timeouts_total: timed.timeouts,
        timeouts_bot_overran: timed.bots.timeouts_overran,
        shared_read_moves_in_time: referees
            .iter()
            .map(|r| r.shared_read_moves_in_time)
            .sum::<u64>()
            + timed.shared_read_moves_in_time,
        bot_errors_seen: referees.iter().map(|r| r.bots.errors_seen).sum::<u64>()
            + timed.bots.errors_seen,
        total_s: began.elapsed().as_secs_f64(),
        rounds,
        goals: Vec::new(),
    };
    report.goals = report.goal_checks();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::probe::{Histogram, TimeoutSample};

    #[test]
    fn the_matches_run_fit_both_processes_under_the_open_files_limit() {
        // Plenty of files: every match asked for.
        assert_eq!(matches_that_fit(1 << 20, 10_000, 1, 1_000), 10_000);
        // 20,000 files: the server keeps an eighth back, so its bot port holds 17,500
        // connections: 8,700 matches and 100 to spare, not the 9,900 that two sockets a match
        // would suggest.
        let fit = matches_that_fit(20_000, 10_000, 1, 0);
        assert_eq!(fit, 8_700);
        let budget = OpenFilesBudget::fit(Some(20_000), 2 * fit + 100, 0);
        assert_eq!(budget.bot_connections, 2 * fit + 100);
        // The streams need files in both processes.
        assert!(matches_that_fit(20_000, 10_000, 1, 1_000) < fit);
        assert_eq!(matches_that_fit(100, 10, 1, 0), 0);
        // Bots playing two games at once on one connection: one socket a match, so 10,000
        // matches fit where 8,700 did.
        assert_eq!(matches_that_fit(20_000, 10_000, 2, 0), 10_000);
        assert_eq!(matches_that_fit(20_000, 20_000, 2, 0), 17_400);
    }

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
    fn the_clock_phase_asks_the_same_moves_a_second_from_more_matches() {
        assert_eq!(clock_phase_times(100), (180, 200));
        assert_eq!(clock_phase_times(1000), (180, 200));
        assert_eq!(clock_phase_times(1001), (360, 400));
        assert_eq!(clock_phase_times(5000), (900, 1000));
        assert_eq!(clock_phase_times(10_000), (1800, 2000));
        // Bots keep to 90% of the limit, and the mean think per match grows as the matches do.
        for matches in [1000, 5000, 10_000] {
            let (think, limit) = clock_phase_times(matches);
            assert_eq!(think * 10, limit * 9);
            let moves_a_second = matches as f64 * 1000.0 / (think as f64 / 2.0);
            assert!((moves_a_second - 11_111.0).abs() < 1.0, "{moves_a_second}");
        }
    }

    #[test]
    fn a_quick_run_never_waits_for_the_disk() {
        let (state, waits, probed) = settle_with(&[900.0], Duration::ZERO);
        assert_eq!((probed, waits.len()), (1, 0));
        assert_eq!(state.before_load_us, 900.0);
    }

    fn result_with(think: Vec<ThinkSample>, bots: Vec<bots::TimedMove>) -> LoadResult {
        LoadResult {
            server_workers: 2,
            bots_scheduling: None,
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
            shared_read_moves_in_time: 0,
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
            // Received 0.2 ms and read 25 ms after it was written, then thought 155 ms: it
            // used 179.8 ms from its kernel's receipt, within plan, so the loss is false.
            lost("m1-r1-g1", 7, 155_000, 35_000, Some(10_200)),
            // Thought 170 ms after its turn waited 24.8 ms in its socket: 194.8 ms at the
            // wire, the load generator's own delay, not counted.
            lost("m4-r1-g1", 5, 170_000, 35_000, Some(10_200)),
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
                    used_ms: 179.8,
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
            // Not stamped by the bot's kernel: its error counts from its read.
            bots::TimedMove {
                match_id: "m2-r1-g1".to_string(),
                ..timed(4, 8_000, 90_500, None)
            },
        ];
        let e = clock_errors(&result_with(server, bots));
        assert_eq!(
            e.charged,
            vec![0, 1_000],
            "m1: 50_000 - 50_000; m2: 9_000 - 8_000"
        );
        assert_eq!(e.uncredited, vec![500, 1_000]);
        assert_eq!(e.out[0], 300, "m1: turn written at 1_000, read at 1_300");
        assert_eq!(e.back[0], 200, "m1: written at 51_300, read at 51_500");
        assert_eq!(e.out[0] + e.back[0], e.uncredited[0]);
        assert_eq!(e.in_bot, vec![200], "received at 1_100, read at 1_300");
        assert_eq!(
            e.referee,
            vec![-200],
            "charged 0 over a true 50_000, less the 200 waited"
        );
        assert_eq!(
            e.at_wire,
            vec![-200, 1_000],
            "m1 from its kernel's stamp, m2 (unstamped) from its read"
        );
    }
}

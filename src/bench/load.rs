//! One load phase: an in-process referee server on 127.0.0.1:0 with a generated configuration
//! (bots `b0..b{2N-1}`, N tournaments of two bots so that N Connect6 games run at once), driven by
//! a child process `arena bench --bots-only` (the load generator, `bots.rs`), measured through
//! `server::probe` over a fixed window, and its resident memory read from `/proc/self/statm`.

use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

use crate::config::{BotConfig, Config, Format, PointsConfig, ServerConfig, TournamentConfig};
use crate::game::GameId;
use crate::server::probe::{self, HistogramSnapshot, ThinkSample, TimeoutSample};

use super::bots::{bot_token, BotsReport};
use super::BenchError;

/// What one phase runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    /// Matches at once (a multiple of `games_per_bot`).
    pub matches: usize,
    /// Games each bot plays at once over its one connection (1: two sockets a match; 2: one).
    pub games_per_bot: usize,
    /// 0: bots reply at once; otherwise a random sleep of 0..=think_max_ms.
    pub think_max_ms: u64,
    /// The per-move limit (0: none).
    pub move_limit_ms: u64,
    /// After every match has started, before measuring.
    pub warmup: Duration,
    pub window: Duration,
    /// Keep every charged think time (for the clock error).
    pub keep_think: bool,
    pub seed: u64,
    /// With the web view on: this many clients following `/api/events` (0: no web view).
    pub web_clients: usize,
    /// With the web view on: this many clients hammering every endpoint from another process
    /// (`arena bench --hammer-only`) from the matches' start to the window's end (0: none).
    pub web_hammer: usize,
    /// Worker threads of the server's (and the relay's) runtime; 0: one per core, as
    /// `arena serve` with `server.threads = 0`.
    pub server_threads: usize,
    /// How the load generator is scheduled: the clock phase raises it (see [`BotsPriority`]).
    pub bots_priority: BotsPriority,
    /// The cores the load generator runs on (`--split-cores`); empty: the bench's own.
    pub bots_cores: Vec<usize>,
}

/// `--split-cores`: which core the server (this process) runs on, and which the load
/// generator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreSplit {
    pub server: usize,
    pub bots: Vec<usize>,
}

impl CoreSplit {
    /// The first of `cores` for the server, the rest for the load generator; `None` with
    /// fewer than two.
    pub fn of(cores: &[usize]) -> Option<CoreSplit> {
        match cores {
            [server, bots @ ..] if !bots.is_empty() => Some(CoreSplit {
                server: *server,
                bots: bots.to_vec(),
            }),
            _ => None,
        }
    }
}

/// Pins every thread of this process to `core`, and so every thread and process it starts
/// from now on (the server's and the relay's runtimes are built after this). A thread that ends
/// meanwhile is skipped.
pub(super) fn pin_this_process(core: usize) -> Result<(), BenchError> {
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| BenchError::Setup(format!("cannot list this process's threads: {e}")))?;
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        match crate::program::set_thread_affinity(tid, &[core]) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => {
                return Err(BenchError::Setup(format!(
                    "cannot pin the server to core {core}: {e}"
                )))
            }
        }
    }
    Ok(())
}

/// How the load generator of a phase is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BotsPriority {
    /// As the bench itself.
    Same,
    /// Ahead of the server and of anything else on the machine: real-time round-robin at the
    /// lowest real-time priority, or where that is refused (it needs root or `CAP_SYS_NICE`)
    /// nice -10, or where that is refused too the bench's own. For the clock phase: its bots
    /// then read `turn` as soon as their kernel has it, as bots on machines of their own would,
    /// so the clock error measures the referee rather than the generator's place in the run
    /// queue (under `--hog` that place was most of it). The generator sleeps most of that
    /// phase, and the kernel keeps a twentieth of every second from real-time work anyway.
    Raised,
}

/// How a process was found to be scheduled: real-time round-robin, or by its nice value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    RealTime { priority: i32 },
    Nice(i32),
}

/// In the report's JSON as its readable text (`"real-time (SCHED_RR 1)"`, `"nice -10"`).
impl serde::Serialize for Scheduling {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl std::fmt::Display for Scheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scheduling::RealTime { priority } => write!(f, "real-time (SCHED_RR {priority})"),
            Scheduling::Nice(nice) => write!(f, "nice {nice}"),
        }
    }
}

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Worker threads the server's runtime ran on.
    pub server_workers: usize,
    /// How the load generator was scheduled (see [`LoadPlan::bots_priority`]); `None` if it
    /// could not be read.
    pub bots_scheduling: Option<Scheduling>,
    pub window_s: f64,
    /// Moves accepted by referees during the window.
    pub moves_in_window: u64,
    pub overhead_us: HistogramSnapshot,
    /// Kernel receive time → reader, per accepted move.
    pub socket_wait_us: HistogramSnapshot,
    /// Resident memory of this process with the server idle (listening, no bot connected; with
    /// the web view on, its event streams open).
    pub rss_idle_kib: u64,
    /// The same and the heap in use before the web view's event streams opened (equal to the
    /// idle figures without the web view).
    pub rss_before_streams_kib: u64,
    pub heap_before_streams_kib: u64,
    /// Resident memory over the window (the mean of a look every 100 ms).
    pub rss_loaded_kib: u64,
    /// Heap in use (allocated and not freed) with the server idle and over the window (the
    /// mean of the same looks), when the allocator tells (glibc); else 0.
    pub heap_idle_kib: u64,
    pub heap_loaded_kib: u64,
    /// Matches running on average over the window (the same looks as the memory figures); the
    /// rest of the pairs were between games (writing one game's output, starting the next).
    pub matches_running_mean: f64,
    /// CPU time used during the window by this process (the server, without the bench's own
    /// looks at its memory) and by the load generator.
    pub server_cpu_us: u64,
    pub bots_cpu_us: u64,
    /// CPU time the bench's looks at the server's memory took during the window (left out of
    /// `server_cpu_us`).
    pub memory_looks_cpu_us: u64,
    /// Games that ended on time, over the whole phase.
    pub timeouts: usize,
    pub games_finished: usize,
    pub think: Vec<ThinkSample>,
    /// Moves the referees ended on time, with when their `turn` was written.
    pub referee_timeouts: Vec<TimeoutSample>,
    /// Moves counted in time although their read's stamp (that of later bytes sharing the
    /// read) was past the deadline.
    pub shared_read_moves_in_time: u64,
    pub bots: BotsReport,
    /// What the hammering web clients did (`plan.web_hammer` > 0).
    pub hammer: Option<super::web_load::HammerReport>,
}

/// How often the window's memory is looked at: 40 looks over a 10 s window. (Each look once
/// walked glibc's free lists under its lock, 1.1% of the window's server CPU at one look every
/// 100 ms; the counted heap is read in a few hundred nanoseconds.)
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Looks at the running matches, the heap and the resident size every `SAMPLE_EVERY` for
/// `window`; also returns the CPU time those looks took (in microseconds), which is the bench's,
/// not the server's (the heap count is cheap to read, but the resident size is a file read and
/// the look at the matches takes the probe's lock).
async fn sample_window(window: Duration) -> (Vec<WindowSample>, u64) {
    let end = Instant::now() + window;
    let mut samples = Vec::new();
    let mut looking_us = 0;
    while Instant::now() < end {
        let before = thread_cpu_us();
        samples.push(WindowSample {
            running: probe::snapshot().matches_running,
            heap_kib: heap_in_use_kib(),
            rss_kib: rss_kib(),
        });
        looking_us += thread_cpu_us().saturating_sub(before);
        sleep(SAMPLE_EVERY.min(end.saturating_duration_since(Instant::now()))).await;
    }
    (samples, looking_us)
}

/// CPU time the calling thread has used, in microseconds (0 if unknown).
fn thread_cpu_us() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the struct it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0;
    }
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000
        + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000
}

/// One look at the server during the window.
#[derive(Debug, Clone, Copy)]
struct WindowSample {
    running: u64,
    heap_kib: u64,
    rss_kib: u64,
}

/// The mean of `value` over `samples` (0 for none).
fn mean(samples: &[WindowSample], value: impl Fn(&WindowSample) -> u64) -> f64 {
    samples.iter().map(|s| value(s) as f64).sum::<f64>() / samples.len().max(1) as f64
}

/// Heap this process has allocated and not freed, in KiB (counted by the `arena` binary's
/// allocator, see `heap_count`), 0 if not counted: unlike the resident size, it leaves out
/// memory the allocator holds freed.
pub fn heap_in_use_kib() -> u64 {
    crate::heap_count::heap_in_use_bytes().map_or(0, |bytes| bytes / 1024)
}

/// Resident memory of this process in KiB (Linux `/proc/self/statm`), 0 if unknown.
pub fn rss_kib() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096) / 1024
}

/// CPU time (user + system) this process has used, in microseconds.
pub fn own_cpu_us() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; it was zeroed, so it is initialised
    // whatever happens.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let us = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec).unwrap_or(0)
    };
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// CPU time (user + system) process `pid` has used, in microseconds (`/proc/PID/stat`), 0 if
/// unknown.
pub fn process_cpu_us(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name (which may contain spaces) start at state (field 3);
    // utime and stime are fields 14 and 15.
    let Some((_, rest)) = text.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    // SAFETY: sysconf only reads a system constant.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    fields.iter().sum::<u64>() * 1_000_000 / ticks.max(1)
}

/// The connection caps of a phase of `matches` matches followed by `web_clients` event
/// streams: the bot port's `max_connections`, and the web port's `web_max_connections` (0: no
/// web view).
pub fn bench_config_caps(
    matches: usize,
    games_per_bot: usize,
    web_clients: usize,
) -> (usize, usize) {
    let web = if web_clients > 0 {
        ServerConfig::default().web_max_connections + web_clients
    } else {
        0
    };
    (bots_for(matches, games_per_bot) + 100, web)
}

/// The bots (and their connections) of `matches` matches when each bot plays `games_per_bot`
/// of them at once: two a match, shared by that many matches.
pub fn bots_for(matches: usize, games_per_bot: usize) -> usize {
    2 * matches / games_per_bot.max(1)
}

/// The generated arena configuration of a phase.
pub fn bench_config(plan: &LoadPlan, out_dir: &Path) -> Result<Config, BenchError> {
    let games_per_bot = plan.games_per_bot.max(1);
    let bots = bots_for(plan.matches, games_per_bot);
    let defaults = ServerConfig::default();
    let (max_connections, web_max_connections) =
        bench_config_caps(plan.matches, games_per_bot, plan.web_clients);
    let mut config = Config {
        server: ServerConfig {
            listen: "127.0.0.1:0".into(),
            out_dir: out_dir.to_path_buf(),
            event: "arena bench".into(),
            exit_when_done: false,
            max_connections,
            // Every bot connects from this machine at once.
            max_unauthenticated_per_address: bots + 100,
            // The load generator follows the web view from one address, with every stream.
            web_max_connections: web_max_connections.max(defaults.web_max_connections),
            web_max_connections_per_address: defaults.web_max_connections_per_address
                + plan.web_clients,
            web_max_event_streams: defaults.web_max_event_streams + plan.web_clients,
            web_max_event_streams_per_address: defaults.web_max_event_streams_per_address
                + plan.web_clients,
            progress: false,
            ..defaults.clone()
        },
        bots: (0..bots)
            .map(|i| BotConfig {
                name: format!("b{i}"),
                token: Some(bot_token(i)),
                builtin: None,
                options: serde_json::Value::Null,
                max_games: u32::try_from(games_per_bot).unwrap_or(u32::MAX),
                ..BotConfig::default()
            })
            .collect(),
        // One tournament a pair of bots, playing `games_per_bot` games at once.
        tournaments: (0..bots / 2)
            .map(|k| TournamentConfig {
                name: format!("m{k}"),
                game: GameId::Connect6,
                format: Format::RoundRobin,
                bots: vec![format!("b{}", 2 * k), format!("b{}", 2 * k + 1)],
                // Far more games than a phase lasts: the pair plays game after game.
                games_per_pairing: 50,
                rounds: 1,
                concurrency: u32::try_from(games_per_bot).unwrap_or(u32::MAX),
                clock: crate::protocol::ClockSpec {
                    initial_ms: 3_600_000,
                    increment_ms: 0,
                    move_limit_ms: (plan.move_limit_ms > 0).then_some(plan.move_limit_ms),
                },
                rules: serde_json::Value::Null,
                points: PointsConfig::default(),
                absent_forfeit_ms: 600_000,
                openings: Vec::new(),
            })
            .collect(),
        programs: Default::default(),
    };
    config.validate()?;
    Ok(config)
}

/// The folder under which each phase writes its league's files (records, games.jsonl, the
/// journal, flushed to disk as in a league): the temporary folder (`TMPDIR`). The disk is part
/// of what is measured; `TMPDIR=/dev/shm` takes it out (docs/benchmarks.md says when that
/// matters: on ext4 without a journal, creating files within minutes of thousands being
/// deleted, as right after another run, costs far more than otherwise).
pub fn files_root() -> PathBuf {
    std::env::temp_dir()
}

/// One bench run's folder under [`files_root`]: every phase's records and journals and the disk
/// probe's files. Nothing in it is deleted before the run ends: on ext4 without a journal,
/// creating a file skips every inode of its group deleted in the last minute (six while the
/// inode table is not yet written back), so deleting one phase's thousands of records would
/// slow the next phase's record files. Dropping it removes the folder and syncs the file
/// system, so that the deleted inodes age from then on a minute, not six.
pub struct Scratch {
    dir: PathBuf,
    probes: usize,
}

impl Scratch {
    pub fn create() -> Result<Scratch, BenchError> {
        let dir = files_root().join(format!("arena-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Scratch { dir, probes: 0 })
    }

    /// A fresh folder for one phase's league files.
    pub fn phase_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// How long creating one record-sized file takes here, in microseconds: the mean over
    /// `count` files made the way a finished game's record file is (`create_new_file`), in a
    /// fresh folder kept until the run ends. Every finished game creates one, so this says
    /// how much the disk weighs in the run's figures.
    pub fn time_file_creation(&mut self, count: usize) -> Result<f64, BenchError> {
        self.probes += 1;
        let dir = self.dir.join(format!("file-probe-{}", self.probes));
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::Setup(format!("cannot create {}: {e}", dir.display())))?;
        let bytes = vec![b'x'; 1500];
        let started = std::time::Instant::now();
        for i in 0..count {
            crate::atomic_file::create_new_file(&dir.join(format!("{i}.txt")), &bytes)
                .map_err(|e| BenchError::Setup(format!("file creation probe: {e}")))?;
        }
        Ok(started.elapsed().as_secs_f64() * 1e6 / count.max(1) as f64)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        sync_files_root();
    }
}

/// Writes every dirty block of [`files_root`]'s file system back, so that inodes deleted
/// before now are skipped for one minute rather than six (see [`Scratch`]).
pub fn sync_files_root() {
    let _ = crate::atomic_file::sync_file_system(&files_root());
}

/// Starts the load generator: this same executable as `arena bench --bots-only`; with `web`,
/// it also follows the web view's events at that address with `plan.web_clients` streams.
pub(super) fn spawn_bots(
    exe: &Path,
    addr: &str,
    plan: &LoadPlan,
    web: Option<std::net::SocketAddr>,
) -> Result<Child, BenchError> {
    let mut command = Command::new(exe);
    command
        .args(["bench", "--bots-only", "--server", addr])
        .arg("--bots")
        .arg(bots_for(plan.matches, plan.games_per_bot).to_string())
        .arg("--games-per-bot")
        .arg(plan.games_per_bot.max(1).to_string())
        .arg("--think-max-ms")
        .arg(plan.think_max_ms.to_string())
        .arg("--seed")
        .arg(plan.seed.to_string());
    if let Some(web) = web {
        command
            .arg("--web-events")
            .arg(web.to_string())
            .arg("--web-clients")
            .arg(plan.web_clients.to_string());
    }
    if plan.bots_priority == BotsPriority::Raised {
        ask_raised_priority(&mut command);
    }
    if !plan.bots_cores.is_empty() {
        run_on_cores(&mut command, plan.bots_cores.clone());
    }
    command
        .stdin(if web.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| BenchError::Setup(format!("cannot start the load generator: {e}")))
}

/// Has the process `command` starts ask for [`BotsPriority::Raised`] before it runs (threads it
/// starts inherit it). A refusal is not an error: [`scheduling_of`] reads back what it got.
fn ask_raised_priority(command: &mut Command) {
    // SAFETY: the hook only calls sched_setscheduler and setpriority, which allocate nothing.
    unsafe {
        command.pre_exec(|| {
            let lowest = libc::sched_get_priority_min(libc::SCHED_RR);
            let param = libc::sched_param {
                sched_priority: lowest,
            };
            if libc::sched_setscheduler(0, libc::SCHED_RR, &param) != 0 {
                let _ = libc::setpriority(libc::PRIO_PROCESS, 0, RAISED_NICE);
            }
            Ok(())
        });
    }
}

/// Has the process `command` starts run on `cores` (and every thread it starts); it fails to
/// start if they cannot be set.
fn run_on_cores(command: &mut Command, cores: Vec<usize>) {
    // SAFETY: the hook only calls sched_setaffinity on a set built on its stack.
    unsafe {
        command.pre_exec(move || crate::program::set_affinity(&cores));
    }
}

/// The nice value [`BotsPriority::Raised`] falls back to without real-time scheduling.
const RAISED_NICE: i32 = -10;

/// How process `pid` (its first thread) is scheduled; `None` if it cannot be read.
fn scheduling_of(pid: u32) -> Option<Scheduling> {
    let signed_pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: these calls only read the process's scheduling data into the values given.
    // getpriority returns -1 both as a value and as an error: errno tells them apart.
    unsafe {
        let policy = libc::sched_getscheduler(signed_pid);
        if policy == libc::SCHED_RR || policy == libc::SCHED_FIFO {
            let mut param = libc::sched_param { sched_priority: 0 };
            return (libc::sched_getparam(signed_pid, &mut param) == 0).then_some(
                Scheduling::RealTime {
                    priority: param.sched_priority,
                },
            );
        }
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, pid);
        (nice != -1 || *libc::__errno_location() == 0).then_some(Scheduling::Nice(nice))
    }
}

/// Runs one phase: server up, load generator connected, every match running, warm-up, window.
pub fn run_phase(dir: &Path, plan: &LoadPlan, exe: &Path) -> Result<LoadResult, BenchError> {
    let config = bench_config(plan, dir)?;
    let runtime = crate::server::runtime(plan.server_threads)
        .map_err(|e| BenchError::Setup(format!("server runtime: {e}")))?;
    runtime.block_on(measure(config, plan, exe))
}

async fn measure(config: Config, plan: &LoadPlan, exe: &Path) -> Result<LoadResult, BenchError> {
    let listener = crate::server::bind(&config, Some("127.0.0.1:0")).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::Setup(format!("listener: {e}")))?;
    let shutdown = CancellationToken::new();
    probe::enable(plan.keep_think);
    let _ = probe::take_think_samples();
    let _ = probe::take_timeout_samples();
    let ready_before = probe::servers_ready();
    let web = if plan.web_clients > 0 {
        Some(
            tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| BenchError::Setup(format!("web view listener: {e}")))?,
        )
    } else {
        None
    };
    // The event streams are followed by the load generator's process, as browsers would be:
    // other processes, whose CPU and memory are not the server's.
    let web_addr = match &web {
        Some(web) => Some(
            web.local_addr()
                .map_err(|e| BenchError::Setup(format!("web view listener: {e}")))?,
        ),
        None => None,
    };
    let server = tokio::spawn(crate::server::run_with(
        config,
        listener,
        shutdown.clone(),
        Vec::new(),
        web.map(crate::web::companion),
    ));
    // The idle footprint includes the built schedule: wait until the server has built it (on
    // a busy machine that can take seconds), then a moment for its first standings write.
    let setup_deadline = Instant::now() + Duration::from_secs(60);
    while probe::servers_ready() == ready_before && Instant::now() < setup_deadline {
        if server.is_finished() {
            break;
        }
        sleep(Duration::from_millis(20)).await;
    }
    sleep(Duration::from_millis(300)).await;
    let rss_before_streams_kib = rss_kib();
    let heap_before_streams_kib = heap_in_use_kib();

    let mut child = spawn_bots(exe, &addr.to_string(), plan, web_addr)?;
    let bots_scheduling = scheduling_of(child.id());
    let (opened_tx, opened) = std::sync::mpsc::channel();
    let reader = read_child_output(child.stdout.take(), Some(opened_tx));
    // With the web view, the load generator opens its event streams first and waits: the idle
    // figures are then taken with the streams open, so that what a stream holds whatever the
    // number of games is reported on its own and not spread over the matches.
    let (rss_idle_kib, heap_idle_kib) = if web_addr.is_some() {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if opened.try_recv().is_ok() {
                break;
            }
            if Instant::now() > deadline || matches!(child.try_wait(), Ok(Some(_))) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BenchError::Setup(
                    "the load generator's web event streams did not open".into(),
                ));
            }
            sleep(Duration::from_millis(20)).await;
        }
        sleep(Duration::from_millis(300)).await;
        let idle = (rss_kib(), heap_in_use_kib());
        if let Some(mut go) = child.stdin.take() {
            let _ = go.write_all(b"go\n");
        }
        idle
    } else {
        (rss_before_streams_kib, heap_before_streams_kib)
    };

    let outcome = async {
        let deadline = Instant::now() + Duration::from_secs(120);
        let wanted = u64::try_from(plan.matches).unwrap_or(u64::MAX);
        while probe::snapshot().matches_running < wanted {
            if Instant::now() > deadline {
                // More matches than the machine can serve (bots that time out are suspended,
                // their pairs stop): measure those that run, as `matches_running_mean` says.
                let running = probe::snapshot().matches_running;
                if running == 0 {
                    return Err(BenchError::Setup(format!(
                        "no match of {} started within 2 minutes",
                        plan.matches
                    )));
                }
                tracing::warn!(
                    running,
                    matches = plan.matches,
                    "not every match started within 2 minutes; measuring those running"
                );
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(BenchError::Setup(format!(
                    "the load generator stopped early ({status})"
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
        let hammer = match web_addr {
            Some(web) if plan.web_hammer > 0 => Some(spawn_hammer(
                exe,
                web,
                plan.web_hammer,
                plan.warmup + plan.window,
            )?),
            _ => None,
        };
        sleep(plan.warmup).await;
        let before = probe::snapshot();
        let started = Instant::now();
        let cpu_before = (own_cpu_us(), process_cpu_us(child.id()));
        // Memory is averaged over the window: every game of the bench starts at once and is as
        // long as the others, so their move logs grow and empty together, and one look at the
        // heap would catch them anywhere between.
        let (samples, looking_us) = sample_window(plan.window).await;
        let rss_loaded_kib = mean(&samples, |s| s.rss_kib).round() as u64;
        let heap_loaded_kib = mean(&samples, |s| s.heap_kib).round() as u64;
        let running_mean = mean(&samples, |s| s.running);
        let after = probe::snapshot();
        let window_s = started.elapsed().as_secs_f64();
        // The server's CPU time without the bench's own looks at its memory.
        let cpu = (
            own_cpu_us()
                .saturating_sub(cpu_before.0)
                .saturating_sub(looking_us),
            process_cpu_us(child.id()).saturating_sub(cpu_before.1),
        );
        let hammer = match hammer {
            Some((mut hammer, reader)) => {
                let text = finish_child(&mut hammer, reader, 0).await;
                Some(
                    serde_json::from_str::<super::web_load::HammerReport>(text.trim()).map_err(
                        |e| BenchError::Setup(format!("cannot read the web clients' report: {e}")),
                    )?,
                )
            }
            None => None,
        };
        Ok((
            hammer,
            before,
            after,
            window_s,
            (rss_loaded_kib, heap_loaded_kib, running_mean),
            cpu,
            looking_us,
        ))
    }
    .await;

    shutdown.cancel();
    let summary = server.await;
    probe::disable();
    let think = probe::take_think_samples();
    let referee_timeouts = probe::take_timeout_samples();
    let shared_read_moves_in_time = probe::take_shared_read_moves_in_time();
    let bots_text = finish_child(
        &mut child,
        reader,
        bots_for(plan.matches, plan.games_per_bot) + plan.web_clients,
    )
    .await;
    let (
        hammer,
        before,
        after,
        window_s,
        (rss_loaded_kib, heap_loaded_kib, matches_running_mean),
        (server_cpu_us, bots_cpu_us),
        memory_looks_cpu_us,
    ) = outcome?;
    let summary = summary
        .map_err(|e| BenchError::Setup(format!("server task: {e}")))?
        .map_err(BenchError::Server)?;
    let bots: BotsReport = serde_json::from_str(bots_text.trim())
        .map_err(|e| BenchError::Setup(format!("cannot read the load generator's report: {e}")))?;
    Ok(LoadResult {
        server_workers: tokio::runtime::Handle::current().metrics().num_workers(),
        bots_scheduling,
        window_s,
        moves_in_window: after.moves.saturating_sub(before.moves),
        overhead_us: after.overhead_us.since(&before.overhead_us),
        socket_wait_us: after.socket_wait_us.since(&before.socket_wait_us),
        rss_idle_kib,
        rss_before_streams_kib,
        heap_before_streams_kib,
        rss_loaded_kib,
        heap_idle_kib,
        heap_loaded_kib,
        matches_running_mean,
        server_cpu_us,
        bots_cpu_us,
        memory_looks_cpu_us,
        timeouts: summary
            .games
            .iter()
            .filter(|g| g.reason == crate::game::EndReason::Timeout)
            .count(),
        games_finished: summary.games.len(),
        think,
        referee_timeouts,
        shared_read_moves_in_time,
        bots,
        hammer,
    })
}

/// Starts the hammering web clients: this same executable as `arena bench --hammer-only`, for
/// `length`; returns the child and the reader of its report.
fn spawn_hammer(
    exe: &Path,
    web: std::net::SocketAddr,
    clients: usize,
    length: Duration,
) -> Result<(Child, std::thread::JoinHandle<String>), BenchError> {
    let mut child = Command::new(exe)
        .args(["bench", "--hammer-only", "--hammer-web"])
        .arg(web.to_string())
        .arg("--hammer-clients")
        .arg(clients.to_string())
        .arg("--hammer-seconds")
        .arg(format!("{:.3}", length.as_secs_f64()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| BenchError::Setup(format!("cannot start the web clients: {e}")))?;
    let reader = read_child_output(child.stdout.take(), None);
    Ok((child, reader))
}

/// Reads the load generator's output on a thread of its own: sends `()` on `streams_open` when
/// it says its web event streams are open, and returns the rest (its report).
pub(super) fn read_child_output(
    out: Option<std::process::ChildStdout>,
    streams_open: Option<std::sync::mpsc::Sender<()>>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let Some(out) = out else {
            return text;
        };
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else {
                break;
            };
            if line == super::bots::WEB_STREAMS_OPEN {
                if let Some(open) = &streams_open {
                    let _ = open.send(());
                }
            } else {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    })
}

/// Waits for the load generator to see every connection closed and print its report (killing it
/// after 30 s); returns what it printed.
async fn finish_child(
    child: &mut Child,
    reader: std::thread::JoinHandle<String>,
    connections: usize,
) -> String {
    // Closing thousands of connections takes a loaded machine a while: 30 s, and 4 ms more
    // per connection (8,750 matches: 100 s), before the report is given up.
    let grace = Duration::from_secs(30)
        + Duration::from_millis(4 * u64::try_from(connections).unwrap_or(u64::MAX / 8));
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => break,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => sleep(Duration::from_millis(50)).await,
        }
    }
    tokio::task::spawn_blocking(move || reader.join().unwrap_or_default())
        .await
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's own account of a process's scheduling, from `/proc/<pid>/stat` (fields 19,
    /// 40 and 41: nice, real-time priority, policy).
    fn scheduling_in_proc(pid: u32) -> Scheduling {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        let fields: Vec<i64> = stat[stat.rfind(')').expect("name") + 2..]
            .split(' ')
            .map(|field| field.trim().parse().unwrap_or(i64::MIN))
            .collect();
        let (nice, rt_priority, policy) = (fields[16], fields[37], fields[38]);
        if policy == i64::from(libc::SCHED_RR) || policy == i64::from(libc::SCHED_FIFO) {
            Scheduling::RealTime {
                priority: rt_priority as i32,
            }
        } else {
            Scheduling::Nice(nice as i32)
        }
    }

    /// Starts `sleep 5` with `prepare` applied to its command; returns how it was scheduled, as
    /// read back and as the kernel says.
    fn scheduling_of_a_sleep(
        prepare: impl FnOnce(&mut Command),
    ) -> (Option<Scheduling>, Scheduling) {
        let mut command = Command::new("sleep");
        command.arg("5");
        prepare(&mut command);
        let mut child = command.spawn().expect("sleep");
        let read_back = scheduling_of(child.id());
        let in_proc = scheduling_in_proc(child.id());
        let _ = child.kill();
        let _ = child.wait();
        (read_back, in_proc)
    }

    /// The cores the kernel lets process `pid` run on (`Cpus_allowed_list` of its status),
    /// as listed there: `1`, `0-3`, `0,2`.
    fn cores_allowed_in_proc(pid: u32) -> String {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .expect("Cpus_allowed_list")
            .trim()
            .to_string()
    }

    #[test]
    fn split_cores_give_the_server_the_first_core_and_the_bots_the_rest() {
        assert_eq!(
            CoreSplit::of(&[0, 1]),
            Some(CoreSplit {
                server: 0,
                bots: vec![1]
            })
        );
        assert_eq!(
            CoreSplit::of(&[2, 5, 7]),
            Some(CoreSplit {
                server: 2,
                bots: vec![5, 7]
            })
        );
        assert_eq!(CoreSplit::of(&[3]), None);
        assert_eq!(CoreSplit::of(&[]), None);
    }

    #[test]
    fn a_load_generator_given_cores_runs_on_those_only() {
        let cores = crate::program::available_cores();
        let Some(&last) = cores.last() else {
            return;
        };
        let mut command = Command::new("sleep");
        command.arg("5");
        run_on_cores(&mut command, vec![last]);
        let mut child = command.spawn().expect("sleep");
        let allowed = cores_allowed_in_proc(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(allowed, last.to_string());
        // Without it the child runs where this process may, on more than that one core
        // where there are several.
        let mut child = Command::new("sleep").arg("5").spawn().expect("sleep");
        let inherited = cores_allowed_in_proc(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(inherited, cores_allowed_in_proc(std::process::id()));
    }

    #[test]
    fn how_a_process_is_scheduled_is_read_back_as_the_kernel_says() {
        let own = scheduling_of(std::process::id()).expect("own scheduling");
        assert_eq!(own, scheduling_in_proc(std::process::id()));
        let Scheduling::Nice(own_nice) = own else {
            return; // the tests run real-time: nothing below to compare with
        };
        // A nice value above one's own needs no privilege.
        let wanted = (own_nice + 7).min(19);
        let (read_back, in_proc) = scheduling_of_a_sleep(|command| {
            // SAFETY: the hook only calls setpriority.
            unsafe {
                command.pre_exec(move || {
                    libc::setpriority(libc::PRIO_PROCESS, 0, wanted);
                    Ok(())
                });
            }
        });
        assert_eq!(read_back, Some(Scheduling::Nice(wanted)));
        assert_eq!(in_proc, Scheduling::Nice(wanted));
    }

    #[test]
    fn a_raised_priority_is_real_time_or_a_lower_nice_value_never_worse() {
        let own = scheduling_of(std::process::id()).expect("own scheduling");
        let (read_back, in_proc) = scheduling_of_a_sleep(ask_raised_priority);
        assert_eq!(read_back, Some(in_proc));
        let lowest_rr = unsafe { libc::sched_get_priority_min(libc::SCHED_RR) };
        match (own, in_proc) {
            (_, Scheduling::RealTime { priority }) => assert_eq!(priority, lowest_rr),
            // Refused real time: nice -10 if allowed, else the bench's own.
            (Scheduling::Nice(own), Scheduling::Nice(got)) => {
                assert!(got == RAISED_NICE || got == own, "nice {got}, own {own}")
            }
            (Scheduling::RealTime { .. }, Scheduling::Nice(got)) => {
                panic!("a real-time bench started its generator at nice {got}")
            }
        }
        // Where real time is allowed (root, as in CI), the raise must have taken it.
        if can_schedule_in_real_time() {
            assert_eq!(
                in_proc,
                Scheduling::RealTime {
                    priority: lowest_rr
                }
            );
        }
    }

    /// Whether this process may switch a thread to real-time scheduling (tried on a thread of
    /// its own, which then ends).
    fn can_schedule_in_real_time() -> bool {
        std::thread::spawn(|| {
            let param = libc::sched_param {
                sched_priority: unsafe { libc::sched_get_priority_min(libc::SCHED_RR) },
            };
            // SAFETY: changes only this short-lived thread's scheduling.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0 }
        })
        .join()
        .unwrap_or(false)
    }
}

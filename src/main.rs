//! The `arena` binary: parses the command line and hands each subcommand to the library, then
//! decides what a person sees (the console lines for the server's news, the match's progress
//! line and table, error texts, exit codes).
//!
//! Why it is longer than 800 lines: some 430 of them are the command line's definition (every
//! subcommand and flag with the help text `arena --help` shows) and some 330 the dispatch that
//! turns each subcommand's flags into the library's plain data (`matches::MatchCommand`,
//! `bridge::ConnectOptions`, `client::BotClientConfig`…). Games, matches, engines and their
//! listing live in the library; this file holds the command line, the wiring and the console.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use arena::game::GameId;

/// mimalloc: a server's many small allocations, made and freed on different threads, cost it
/// less than under glibc's malloc (the referee's CPU a move fell by 4–33% in the bench),
/// counted for the bench's memory figures. It reserves a gigabyte of address space at start,
/// so `engine-exec` sets a program bot's address-space cap only as the bot's program replaces
/// it, and starts no thread (see `arena::program::Limits::exec`).
#[global_allocator]
static ALLOCATOR: arena::heap_count::CountingAllocator<mimalloc::MiMalloc> =
    arena::heap_count::CountingAllocator(mimalloc::MiMalloc);

#[derive(Parser)]
#[command(
    name = "arena",
    version,
    about = "Referee server and bot arena for Connect6, Hex, Surakarta and Tibetan Jiu"
)]
struct Cli {
    /// More log output (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    /// Without a subcommand: `serve` with ./arena.toml.
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the referee server: bots connect over TCP and play the configured tournaments.
    Serve {
        /// The arena configuration.
        #[arg(long, default_value = "arena.toml")]
        config: std::path::PathBuf,
        /// Listen on this address instead of the config's `server.listen` (e.g. 127.0.0.1:0).
        #[arg(long)]
        listen: Option<String>,
        /// Serve the web view on this address instead of the config's `server.web`
        /// (e.g. 127.0.0.1:0 for a free port).
        #[arg(long)]
        web: Option<String>,
    },
    /// Write the static web site of a league (standings, every finished game, the records) for
    /// publishing on any web host.
    Site {
        /// The arena configuration.
        #[arg(long, default_value = "arena.toml")]
        config: std::path::PathBuf,
        /// Where to write it (default: the league's out_dir/site).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Check that a league's outputs are complete: every game the journal holds as finished has
    /// exactly one games.jsonl line and one record file of its own with its moves, and the
    /// standings count each game once. Exit status 1 if anything is missing.
    Audit {
        /// The arena configuration (its out_dir is audited).
        #[arg(long, default_value = "arena.toml")]
        config: std::path::PathBuf,
    },
    /// Count leaf positions for each depth 1..=DEPTH from the start position.
    Perft {
        /// The game.
        #[arg(value_parser = GameValueParser)]
        game: GameId,
        /// At least 1.
        #[arg(value_parser = clap::value_parser!(u32).range(1..))]
        depth: u32,
        /// Rule options as a JSON object, e.g. '{"swap":true}'.
        #[arg(long, default_value = "{}")]
        rules: String,
    },
    /// For each position text on stdin, print its legal moves.
    Moves {
        /// The game.
        #[arg(value_parser = GameValueParser)]
        game: GameId,
        #[arg(long, default_value = "{}")]
        rules: String,
        /// Print a Jiu square capture once per choice of removed stones instead of once with
        /// `+?` (a position with more than 100000 such moves gets an error line).
        #[arg(long)]
        expand: bool,
    },
    /// For each move list on stdin (one game per line), print how the game stands.
    Replay {
        /// The game.
        #[arg(value_parser = GameValueParser)]
        game: GameId,
        #[arg(long, default_value = "{}")]
        rules: String,
    },
    /// Check contest record files: one line per file, `ok RESULT FILE` or `invalid WHY FILE`;
    /// exit status 1 if any file is invalid.
    Check {
        /// Record files in the contest's record format.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Rule options the games were played under, as a JSON object (default: each game's
        /// defaults, with Hex's swap rule on when a record contains a swap).
        #[arg(long)]
        rules: Option<String>,
    },
    /// Play two engines against each other on the arena's own referee, as cutechess-cli and
    /// fastchess do for chess: built-in engines and programs (gtp, sau, json), openings played
    /// with both colours, a live progress line, then W/D/L, Elo with its 95% interval, LOS,
    /// game-pair counts and end reasons; optionally an SPRT. See docs/match.md.
    Match(MatchArgs),
    /// Run an engine command in the sandbox a league's `program` bot gets (its stdin and output
    /// passed through, stopped after --seconds) and report what it could not do: files it was
    /// refused or that are not in the sandbox, network it tried, limits it hit, how it ended.
    /// See docs/security.md.
    SandboxCheck {
        /// Take the limits of this config's [programs] table (and, with --bot, that bot's).
        #[arg(long)]
        config: Option<std::path::PathBuf>,
        /// A `program` bot of --config: its folder, limits and, without COMMAND, its program.
        #[arg(long, requires = "config")]
        bot: Option<String>,
        /// The engine's folder (shown to it at /engine).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Give the engine a private writable copy of its folder of this size.
        #[arg(long)]
        scratch_mb: Option<u64>,
        /// Memory limit in MiB.
        #[arg(long)]
        memory_mb: Option<u64>,
        /// Stop the engine after this many seconds.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// The engine command (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Internal: run an engine command under a folder, memory limit and CPU set (how the server
    /// starts `program` bots with limits).
    #[command(hide = true)]
    EngineExec {
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        #[arg(long)]
        memory_mb: Option<u64>,
        #[arg(long, value_delimiter = ',')]
        cpus: Vec<usize>,
        #[arg(long)]
        processes: Option<u64>,
        #[arg(long)]
        file_size_mb: Option<u64>,
        #[arg(long)]
        open_files: Option<u64>,
        #[arg(long)]
        copy_from: Option<std::path::PathBuf>,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Old name kept as a thin alias of `arena match GAME --engine builtin:A --engine builtin:B
    /// --move-limit MS` (prints the match table).
    Duel {
        /// The game.
        #[arg(value_parser = GameValueParser)]
        game: GameId,
        /// Engine id of contestant A (see `arena engines`).
        engine_a: String,
        /// Engine id of contestant B.
        engine_b: String,
        #[arg(long, default_value_t = 10)]
        games: u32,
        /// Per-move limit in milliseconds (exceeding it loses on time).
        #[arg(long, default_value_t = 1000)]
        move_ms: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "{}")]
        rules: String,
        /// Engine options of A as a JSON object.
        #[arg(long, default_value = "{}")]
        a_options: String,
        /// Engine options of B as a JSON object.
        #[arg(long, default_value = "{}")]
        b_options: String,
    },
    /// Connect a built-in engine to a referee as a bot (until ctrl-c, or the referee has been
    /// gone longer than --reconnect-for-ms).
    Bot {
        /// --server, --name and the token (not needed with --stdio).
        #[command(flatten)]
        login: Option<Login>,
        /// Speak the protocol on stdin/stdout instead of connecting: the engine becomes a
        /// `json:` program for `arena match`, a league's `program` bots or `arena connect`
        /// (e.g. a build of an older version, to measure a newer one against it). Logs go to
        /// stderr; it ends when stdin does.
        #[arg(long, conflicts_with_all = ["server", "name", "token", "token_file"])]
        stdio: bool,
        /// Engine id (see `arena engines`).
        #[arg(long)]
        engine: String,
        /// Engine option KEY=VALUE (repeatable); VALUE is read as JSON if it parses.
        #[arg(long = "option", value_name = "KEY=VALUE")]
        options: Vec<String>,
        /// Games to offer, comma-separated (default: every game the engine plays).
        #[arg(long, value_delimiter = ',')]
        games: Vec<GameId>,
        /// How many matches the referee may run at once with this bot.
        #[arg(long, default_value_t = 1)]
        max_games: u32,
        /// After losing the referee, keep reconnecting (with backoff) this long; 0: stop at
        /// once. The default outlasts a server restart within its reconnect grace.
        #[arg(long, default_value_t = 60_000)]
        reconnect_for_ms: u64,
    },
    /// Measure the rules' speed and the referee under load (1,000 concurrent matches of bots
    /// in a child process over loopback TCP); see docs/benchmarks.md. Takes about 50 seconds,
    /// and up to 75 more while a disk busy from recent mass deletions settles.
    Bench {
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Smaller counts (100 matches, short windows): a smoke test, not a measurement.
        #[arg(long)]
        quick: bool,
        /// Serve the web view with this many clients following its live events
        /// (`/api/events`), to compare with a run without it (docs/benchmarks.md).
        #[arg(long, visible_alias = "web-streams", default_value_t = 0)]
        web_clients: usize,
        /// Run this many matches at once instead of 1,000 (100 with --quick), for the scaling
        /// table; the open-files limit is raised to fit where the system allows.
        #[arg(long)]
        matches: Option<usize>,
        /// Let each bot play this many games at once over its one connection (the league's
        /// `max_games`), so that a run holds that many times more matches per socket: 10,000
        /// matches need 20,000 sockets in each process with 1, 10,000 with 2.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
        games_per_bot: u16,
        /// Keep one core busy with a spinning process during the load phases, as other work
        /// on a busy contest server would (docs/benchmarks.md).
        #[arg(long)]
        hog: bool,
        /// Run the server (and the relay it is compared with) on this many worker threads
        /// instead of one per core, as `server.threads` does for `arena serve` (at most 256).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=arena::config::MAX_SERVER_THREADS as i64))]
        server_threads: u16,
        /// Run the server (and the relay) on one core and the load generator on the others:
        /// what the referee costs with a core to itself; not the goals' setting
        /// (docs/benchmarks.md).
        #[arg(long)]
        split_cores: bool,
        /// Instead of the usual run: measure how much web clients hammering every endpoint
        /// slow a live game (windows without and with them, three of each; about 2 minutes).
        #[arg(long)]
        web_load: bool,
        /// With --web-load: how many hammering clients.
        #[arg(long, default_value_t = 8)]
        hammer_clients: usize,
        /// Internal: run only the hammering web clients against --hammer-web.
        #[arg(long, hide = true)]
        hammer_only: bool,
        #[arg(long, hide = true)]
        hammer_web: Option<std::net::SocketAddr>,
        #[arg(long, hide = true, default_value_t = 10.0)]
        hammer_seconds: f64,
        /// Internal: run only the load generator's bots against --server.
        #[arg(long, hide = true)]
        bots_only: bool,
        /// Internal: spin on one core until killed (the CPU hog of --hog).
        #[arg(long, hide = true)]
        hog_only: bool,
        #[arg(long, hide = true, default_value = "127.0.0.1:7878")]
        server: String,
        #[arg(long, hide = true, default_value_t = 2)]
        bots: usize,
        #[arg(long, hide = true, default_value_t = 0)]
        think_max_ms: u64,
        #[arg(long, hide = true, default_value_t = 1)]
        seed: u64,
        /// Internal (with --bots-only): follow this web view's events with --web-clients streams.
        #[arg(long, hide = true)]
        web_events: Option<std::net::SocketAddr>,
    },
    /// Print a strong random token to put in a `[[bot]]` of the config.
    Token,
    /// List the built-in engines, the games they play and their options.
    Engines {
        /// Print the catalogue as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Play an existing engine in the arena: connect to the referee and run the engine (the
    /// command after `--`) as a child process for each match, translating its protocol. With
    /// --check, no server: play one short game as each side against the random engine and
    /// report what the engine does wrong.
    Connect {
        /// --server, --name and the token (not needed with --check).
        #[command(flatten)]
        login: Option<Login>,
        /// Check the engine's protocol without a server (see docs/bots.md).
        #[arg(long)]
        check: bool,
        /// The folder the engine runs in (a relative command like ./engine is taken from it).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// What the engine speaks: json (protocol v1), gtp (Hex) or sau (Connect6).
        #[arg(long)]
        protocol: arena::program::EngineProtocol,
        /// Games to offer, comma separated (default: hex for gtp, connect6 for sau, the
        /// engine's own hello for json).
        #[arg(long, value_delimiter = ',')]
        games: Option<Vec<String>>,
        /// A line sent to the engine right after it starts (repeatable).
        #[arg(long)]
        init: Vec<String>,
        /// How long the engine may take to answer anything that is not a move, in ms.
        #[arg(long, default_value_t = 10_000)]
        setup_timeout_ms: u64,
        /// Matches played at once, each against its own engine process.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        max_games: u32,
        /// With --check: each engine move's limit in ms (raise it for an engine that thinks
        /// longer by default).
        #[arg(long, default_value_t = arena::bridge::conformance::CHECK_MOVE_MS,
              value_parser = clap::value_parser!(u64).range(1..), requires = "check")]
        move_limit: u64,
        /// The engine command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// The `GAME` argument's parser: `GameId`'s own parser (any case; its error names the games),
/// with the names `--help` lists taken from [`GameId::ALL`], so a new game needs no change here.
#[derive(Clone)]
struct GameValueParser;

impl clap::builder::TypedValueParser for GameValueParser {
    type Value = GameId;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<GameId, clap::Error> {
        clap::builder::StringValueParser::new()
            .try_map(|name| name.parse::<GameId>())
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            GameId::ALL
                .into_iter()
                .map(|g| clap::builder::PossibleValue::new(g.as_str())),
        ))
    }
}

/// `arena match` options.
#[derive(Args)]
struct MatchArgs {
    /// The game.
    #[arg(value_parser = GameValueParser)]
    game: GameId,
    /// An engine: builtin:ENGINE[:KEY=VALUE,…], gtp:COMMAND, sau:COMMAND or json:COMMAND
    /// (the command split as a shell splits it). Give exactly two; the first is the one the
    /// score is counted for.
    #[arg(long = "engine", required = true, value_name = "SPEC")]
    engines: Vec<String>,
    /// Display name of the --engine before it (also its name in records).
    #[arg(long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// Working folder of the --engine before it (a program's relative command is found there).
    #[arg(long = "dir", value_name = "DIR")]
    dirs: Vec<std::path::PathBuf>,
    /// A line sent to the --engine before it right after it starts (repeatable).
    #[arg(long = "init", value_name = "LINE")]
    inits: Vec<String>,
    /// Games to play (pairs of games share an opening, colours reversed).
    #[arg(long, default_value_t = 20)]
    games: u32,
    /// Games played at once (a program engine runs one process per game).
    #[arg(long, default_value_t = 1)]
    concurrency: u32,
    /// Each side's clock, INITIAL+INCREMENT in seconds.
    #[arg(long, default_value = "10+0.1")]
    clock: String,
    /// Per-move limit in milliseconds (0: none).
    #[arg(long, default_value_t = 0)]
    move_limit: u64,
    /// Rule options, KEY=VALUE,… (e.g. swap=true) or a JSON object.
    #[arg(long, default_value = "")]
    rules: String,
    /// Openings file: one opening per line, moves separated by spaces (default: the game's
    /// built-in set).
    #[arg(long)]
    openings: Option<std::path::PathBuf>,
    /// Stop when the test decides: elo0=…,elo1=…,alpha=…,beta=…[,model=normalized|logistic].
    #[arg(long)]
    sprt: Option<String>,
    /// Keep records, games.jsonl and the journal here; an interrupted match resumes with the
    /// same command.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Address-space limit of each program engine, in MiB.
    #[arg(long)]
    memory_mb: Option<u64>,
    /// Serve the web view here while the match runs (HOST:PORT; 127.0.0.1:0 picks a port):
    /// live boards, the games so far and their records.
    #[arg(long)]
    web: Option<std::net::SocketAddr>,
    /// Print one JSON object at the end instead of the table.
    #[arg(long)]
    json: bool,
}

/// How a bot logs in to a referee (`arena bot`, `arena connect`).
#[derive(Args)]
struct Login {
    /// The referee's address, HOST:PORT.
    #[arg(long)]
    server: String,
    /// The bot's name in the arena's config.
    #[arg(long)]
    name: String,
    /// The bot's token in the arena's config (visible to other users in `ps`: prefer
    /// --token-file or the ARENA_TOKEN environment variable).
    #[arg(long)]
    token: Option<String>,
    /// A file whose first line is the bot's token.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<std::path::PathBuf>,
}

impl Login {
    /// The token: --token, else the first line of --token-file, else $ARENA_TOKEN.
    fn token(&self) -> anyhow::Result<String> {
        if let Some(token) = &self.token {
            return Ok(token.clone());
        }
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the token file {}", path.display()))?;
            let token = text.lines().next().unwrap_or("").trim();
            anyhow::ensure!(
                !token.is_empty(),
                "the token file {} is empty",
                path.display()
            );
            return Ok(token.to_string());
        }
        match std::env::var("ARENA_TOKEN") {
            Ok(token) if !token.is_empty() => Ok(token),
            _ => anyhow::bail!(
                "no token: give --token-file FILE or set ARENA_TOKEN (or --token TOKEN, which \
                 other users can see in `ps`)"
            ),
        }
    }
}

/// The log's writer threads, told to write what they still hold when the program ends.
static LOG_THREADS: std::sync::Mutex<Vec<arena::log_writer::WriterThread>> =
    std::sync::Mutex::new(Vec::new());

/// A writer for one log output: a thread of its own, or, if none can be started (the system is
/// out of threads), stderr, written where each line is logged.
fn background_writer(
    name: &str,
    out: Box<dyn io::Write + Send>,
) -> tracing_subscriber::fmt::writer::BoxMakeWriter {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let (writer, thread) =
        match arena::log_writer::spawn(name, out, arena::log_writer::QUEUED_LINES) {
            Ok(started) => started,
            Err(e) => {
                eprintln!("arena: cannot start the log's writer thread ({e}); logging directly");
                return BoxMakeWriter::new(io::stderr);
            }
        };
    LOG_THREADS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(thread);
    BoxMakeWriter::new(writer)
}

/// Lets the log's writer threads write what they hold (for a bounded time) before the program
/// ends.
fn finish_logging() {
    for thread in LOG_THREADS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        thread.finish(arena::log_writer::FINISH_WAIT);
    }
}

/// The log file `arena serve` keeps in its out_dir: the whole log, whatever the console shows.
const LOG_FILE: &str = "arena.log";

/// Who writes the log's lines out.
#[derive(Clone, Copy)]
enum LogWriters {
    /// A thread of its own for each output (`log_writer`).
    Threads,
    /// The console's lines written by the thread that logs, straight away: for `engine-exec`,
    /// which must start no thread (and keeps no log file).
    Direct,
}

/// Logs to stderr at `console` by default (debug with -v, trace with -vv; RUST_LOG overrides)
/// and, with `file`, the whole log there (info by default, or the -v level or RUST_LOG).
fn init_logging(verbose: u8, console: &str, file: Option<std::fs::File>, writers: LogWriters) {
    use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt, Layer};
    let level = |default| match verbose {
        0 => default,
        1 => "debug",
        _ => "trace",
    };
    let filter = |default: &str| {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
    };
    // Each output is written by a thread of its own (`log_writer`): a paused terminal or a
    // slow disk delays the log, never the server. Where no thread can be started, lines are
    // written where they are logged, as before.
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let console_writer = match writers {
        LogWriters::Threads => background_writer("log-console", Box::new(io::stderr())),
        LogWriters::Direct => BoxMakeWriter::new(io::stderr),
    };
    let console = tracing_subscriber::fmt::layer()
        .with_writer(console_writer)
        .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
        .with_filter(filter(level(console)));
    let file = file.map(|file| {
        tracing_subscriber::fmt::layer()
            .with_writer(background_writer("log-file", Box::new(file)))
            .with_ansi(false)
            .with_filter(filter(level("info")))
    });
    let _ = tracing_subscriber::registry()
        .with(console)
        .with(file)
        .try_init();
}

/// Opens `out_dir/arena.log` for appending (creating the folder), or says why not.
fn open_log_file(out_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let path = out_dir.join(LOG_FILE);
    std::fs::create_dir_all(out_dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
        })
        .with_context(|| format!("cannot open the log file {}", path.display()))
}

/// The columns of the terminal on file descriptor `fd` (80 when it cannot be told).
fn terminal_width(fd: i32) -> usize {
    #[cfg(unix)]
    {
        let mut size = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ only fills in the winsize struct it is given.
        if unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_col > 0 {
            return usize::from(size.ws_col);
        }
    }
    80
}

fn run_bot_command(config: arena::client::BotClientConfig, stdio: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let shutdown = shutdown_on_signals();
        if stdio {
            arena::client::run_stdio_bot(config, shutdown).await
        } else {
            arena::client::run_bot(config, shutdown).await
        }
    })?;
    Ok(())
}

/// A shutdown token cancelled by ctrl-c (call inside the runtime).
fn shutdown_on_ctrl_c() -> tokio_util::sync::CancellationToken {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::info!("interrupted: shutting down");
            on_signal.cancel();
        }
    });
    shutdown
}

/// A shutdown token cancelled by ctrl-c or SIGTERM (what `kill` and service managers send), so
/// both end a server the same way: games stopped, files written, the summary printed.
fn shutdown_on_signals() -> tokio_util::sync::CancellationToken {
    let shutdown = shutdown_on_ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let on_signal = shutdown.clone();
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::spawn(async move {
                    if terminate.recv().await.is_some() {
                        tracing::info!("terminated (SIGTERM): shutting down");
                        on_signal.cancel();
                    }
                });
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for SIGTERM"),
        }
    }
    shutdown
}

fn parse_rules(text: &str) -> anyhow::Result<serde_json::Value> {
    let value: serde_json::Value =
        serde_json::from_str(text).context("--rules must be a JSON object")?;
    anyhow::ensure!(
        value.is_object(),
        "--rules must be a JSON object, e.g. '{{\"swap\":true}}'"
    );
    Ok(value)
}

fn run(cli: Cli, matches: &ArgMatches) -> anyhow::Result<ExitCode> {
    // `arena serve` starts its logging once it knows its out_dir (for the log file).
    match &cli.command {
        None | Some(Command::Serve { .. }) => {}
        // `arena match` shows its own progress line; the server's per-game log would drown it.
        Some(Command::Match(_) | Command::Duel { .. } | Command::Bot { stdio: true, .. }) => {
            init_logging(cli.verbose, "warn", None, LogWriters::Threads)
        }
        // No writer thread: the engine's limits (its address-space cap) must meet no thread
        // of this process still starting when they are set, just before the engine replaces it.
        Some(Command::EngineExec { .. }) => {
            init_logging(cli.verbose, "warn", None, LogWriters::Direct)
        }
        Some(_) => init_logging(cli.verbose, "info", None, LogWriters::Threads),
    }
    // Not `stdout().lock()`: the server prints progress lines from its own threads (in-process
    // under `arena bench`), which would wait forever on a lock this thread holds.
    let mut out = BufWriter::new(io::stdout());
    let command = cli.command.unwrap_or(Command::Serve {
        config: std::path::PathBuf::from("arena.toml"),
        listen: None,
        web: None,
    });
    match command {
        Command::Serve {
            config,
            listen,
            web,
        } => {
            return serve(&config, listen.as_deref(), web, cli.verbose);
        }
        Command::Site { config, out: site } => {
            let config = arena::config::Config::load(&config)?;
            let dir = site.unwrap_or_else(|| config.server.out_dir.join("site"));
            arena::web::site::write_site(&config, &dir)?;
            writeln!(
                out,
                "static site written to {} (serve that folder with any web server)",
                dir.display()
            )?;
        }
        Command::Audit { config } => {
            let config = arena::config::Config::load(&config)?;
            let report = arena::audit::audit(&config.server.out_dir)?;
            arena::audit::write_report(&report, &config.server.out_dir, &mut out)?;
            if !report.is_complete() {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Perft { game, depth, rules } => {
            arena::tools::perft(game, &parse_rules(&rules)?, depth, &mut out)?;
        }
        Command::Moves {
            game,
            rules,
            expand,
        } => {
            let listing = if expand {
                arena::tools::Listing::Expanded
            } else {
                arena::tools::Listing::Once
            };
            arena::tools::moves(
                game,
                &parse_rules(&rules)?,
                listing,
                io::stdin().lock(),
                &mut out,
            )?;
        }
        Command::Replay { game, rules } => {
            arena::tools::replay(game, &parse_rules(&rules)?, io::stdin().lock(), &mut out)?;
        }
        Command::Bot {
            login,
            stdio,
            engine,
            options,
            games,
            max_games,
            reconnect_for_ms,
        } => {
            let engine_options = arena::client::parse_engine_options(&options)?;
            let login = match (login, stdio) {
                (Some(login), _) => login,
                (None, true) => Login {
                    server: String::new(),
                    name: engine.clone(),
                    token: Some(String::new()),
                    token_file: None,
                },
                (None, false) => anyhow::bail!(
                    "arena bot needs --server, --name and a token (--token-file, ARENA_TOKEN or \
                     --token), or --stdio to speak the protocol on stdin/stdout"
                ),
            };
            let token = login.token()?;
            let config = arena::client::BotClientConfig {
                server: login.server,
                name: login.name,
                token,
                engine,
                engine_options,
                games,
                max_games,
                reconnect_for: std::time::Duration::from_millis(reconnect_for_ms),
                seed: 0,
            };
            run_bot_command(config, stdio)?;
        }
        Command::Bench {
            json,
            quick,
            web_clients,
            matches,
            games_per_bot,
            hog,
            server_threads,
            split_cores,
            web_load,
            hammer_clients,
            hammer_only,
            hammer_web,
            hammer_seconds,
            bots_only,
            hog_only,
            server,
            bots,
            think_max_ms,
            seed,
            web_events,
        } => {
            if hog_only {
                arena::bench::spin_forever();
            }
            if hammer_only {
                let web = hammer_web.context("--hammer-only needs --hammer-web ADDR")?;
                arena::bench::web_load::run_hammer(
                    &arena::bench::web_load::HammerOptions {
                        web,
                        clients: hammer_clients,
                        seconds: hammer_seconds,
                    },
                    &mut out,
                )?;
            } else if web_load {
                let options = arena::bench::BenchOptions {
                    quick,
                    exe: std::env::current_exe().context("cannot find this executable")?,
                    web_clients,
                    matches: None,
                    games_per_bot: 1,
                    hog,
                    server_threads: usize::from(server_threads),
                    split_cores,
                };
                let report =
                    arena::bench::web_load::run(&options, hammer_clients, &mut io::stderr())?;
                if json {
                    serde_json::to_writer(&mut out, &report)?;
                    writeln!(out)?;
                } else {
                    report.write_text(&mut out)?;
                }
            } else if bots_only {
                arena::bench::run_bots(
                    arena::bench::BotsOptions {
                        server,
                        bots,
                        games_per_bot: usize::from(games_per_bot),
                        think_max_ms,
                        seed,
                        web_events: web_events.map(|addr| (addr, web_clients)),
                    },
                    &mut out,
                    &mut io::stdin().lock(),
                )?;
            } else {
                let options = arena::bench::BenchOptions {
                    quick,
                    exe: std::env::current_exe().context("cannot find this executable")?,
                    web_clients,
                    matches,
                    games_per_bot: usize::from(games_per_bot),
                    hog,
                    server_threads: usize::from(server_threads),
                    split_cores,
                };
                let report = arena::bench::run(&options, &mut io::stderr())?;
                if json {
                    serde_json::to_writer(&mut out, &report)?;
                    writeln!(out)?;
                } else {
                    report.write_text(&mut out)?;
                }
            }
        }
        Command::Token => {
            writeln!(out, "{}", arena::server::random_token())?;
        }
        Command::Engines { json } => {
            if json {
                serde_json::to_writer_pretty(&mut out, &arena::engine::listing::engines_json())?;
                writeln!(out)?;
            } else {
                arena::engine::listing::write_engine_table(&mut out)?;
            }
        }
        Command::Connect {
            login,
            check,
            cwd,
            protocol,
            games,
            init,
            setup_timeout_ms,
            max_games,
            move_limit,
            command,
        } => {
            let login = match (login, check) {
                (Some(login), _) => login,
                (None, true) => Login {
                    server: String::new(),
                    name: "checked-engine".to_string(),
                    token: Some(String::new()),
                    token_file: None,
                },
                (None, false) => anyhow::bail!(
                    "arena connect needs --server, --name and a token (--token-file, ARENA_TOKEN \
                     or --token), or --check to test the engine without a server"
                ),
            };
            let token = login.token()?;
            let options = arena::bridge::ConnectOptions {
                server: login.server,
                name: login.name,
                token,
                protocol,
                games,
                init,
                command,
                cwd,
                launch: Default::default(),
                setup_timeout: std::time::Duration::from_millis(setup_timeout_ms),
                max_games,
                stop: tokio_util::sync::CancellationToken::new(),
            };
            let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
            if check {
                let passed = runtime.block_on(arena::bridge::conformance::run_check(
                    &options, move_limit, &mut out,
                ))?;
                if !passed {
                    return Ok(ExitCode::FAILURE);
                }
            } else {
                let matches = runtime.block_on(arena::bridge::run(options))?;
                tracing::info!("done after {matches} match(es)");
            }
        }
        Command::Check { files, rules } => {
            let rules = rules.as_deref().map(parse_rules).transpose()?;
            if !arena::record::check_files(&files, rules.as_ref(), &mut out)? {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Duel {
            game,
            engine_a,
            engine_b,
            games,
            move_ms,
            seed,
            rules,
            a_options,
            b_options,
        } => {
            let command = arena::matches::MatchCommand::duel(
                game,
                &engine_a,
                &parse_rules(&a_options)?,
                &engine_b,
                &parse_rules(&b_options)?,
                games,
                move_ms,
                rules,
                seed,
            )?;
            return run_match(command, None, None, false, &mut out);
        }
        Command::Match(args) => {
            let sub = matches.subcommand_matches("match");
            let flags = sub.map(|sub| engine_flags(&args, sub));
            let command = arena::matches::MatchCommand {
                game: args.game,
                engines: arena::matches::engine_entries(&args.engines, flags.as_ref())?,
                games: args.games,
                concurrency: args.concurrency,
                clock: args.clock,
                move_limit: args.move_limit,
                rules: args.rules,
                openings: args.openings,
                sprt: args.sprt,
                memory_mb: args.memory_mb,
                seed: None,
            };
            return run_match(command, args.out, args.web, args.json, &mut out);
        }
        Command::SandboxCheck {
            config,
            bot,
            dir,
            scratch_mb,
            memory_mb,
            seconds,
            command,
        } => {
            return sandbox_check(
                config, bot, dir, scratch_mb, memory_mb, seconds, command, &mut out,
            )
        }
        Command::EngineExec {
            dir,
            memory_mb,
            cpus,
            processes,
            file_size_mb,
            open_files,
            copy_from,
            command,
        } => {
            let limits = arena::program::Limits {
                dir,
                memory_mb,
                cpus,
                processes,
                file_size_mb,
                open_files,
                copy_from,
            };
            let error = limits.exec(&command);
            anyhow::bail!("cannot start {:?}: {error}", command.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `arena sandbox-check`: the limits of the config (or the defaults) and of `--bot`, then the
/// check and its report.
#[allow(clippy::too_many_arguments)]
fn sandbox_check(
    config: Option<std::path::PathBuf>,
    bot: Option<String>,
    dir: Option<std::path::PathBuf>,
    scratch_mb: Option<u64>,
    memory_mb: Option<u64>,
    seconds: u64,
    mut command: Vec<String>,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let config = match &config {
        Some(path) => arena::config::Config::load(path)?,
        None => arena::config::Config::default(),
    };
    let mut limits = config.programs.default_limits();
    let mut dir = dir;
    if let Some(name) = &bot {
        let bot = config
            .bot(name)
            .filter(|b| b.program.is_some())
            .ok_or_else(|| anyhow::anyhow!("the config has no `program` bot named {name:?}"))?;
        limits = config.programs.limits_for(bot);
        dir = dir.or_else(|| bot.dir.clone());
        if command.is_empty() {
            command = bot.program_spec().map(|s| s.command).unwrap_or_default();
        }
    }
    limits.scratch_mb = scratch_mb.or(limits.scratch_mb);
    limits.memory_mb = memory_mb.unwrap_or(limits.memory_mb);
    anyhow::ensure!(
        !command.is_empty(),
        "give the engine command after `--` (or --config and --bot)"
    );
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    let sandbox = runtime
        .block_on(arena::sandbox::Sandbox::probe(
            arena::sandbox::SandboxKind::Bwrap,
        ))?
        .context("no sandbox")?;
    let options = arena::sandbox::check::CheckOptions {
        command,
        dir,
        limits,
        time_limit: std::time::Duration::from_secs(seconds),
    };
    let report = runtime.block_on(arena::sandbox::check::run(&sandbox, &exe, &options))?;
    writeln!(out, "sandbox-check: the engine {}", report.ended)?;
    if report.findings.is_empty() {
        writeln!(out, "sandbox-check: nothing it tried was refused")?;
    }
    for finding in &report.findings {
        writeln!(out, "  {finding}")?;
    }
    if report.more > 0 {
        writeln!(out, "  … and {} more", report.more)?;
    }
    if !report.traced {
        writeln!(
            out,
            "sandbox-check: strace is not installed, so only how the engine ended is known (apt-get install strace lists the files, network and limits it was refused)"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Where each `--engine`, `--name`, `--dir` and `--init` stands on the `match` subcommand's
/// command line (`sub`), so the library attaches each setting to the `--engine` before it.
fn engine_flags(args: &MatchArgs, sub: &ArgMatches) -> arena::matches::EngineFlags {
    fn placed<T: Clone>(values: &[T], sub: &ArgMatches, id: &str) -> Vec<(usize, T)> {
        sub.indices_of(id)
            .into_iter()
            .flatten()
            .zip(values.iter().cloned())
            .collect()
    }
    arena::matches::EngineFlags {
        engines_at: sub
            .indices_of("engines")
            .map(|i| i.collect())
            .unwrap_or_default(),
        names: placed(&args.names, sub, "names"),
        dirs: placed(&args.dirs, sub, "dirs"),
        inits: placed(&args.inits, sub, "inits"),
    }
}

/// `arena match` (and its `duel` alias): plays the match with a live progress line on stderr,
/// then prints the table (or the JSON object) on stdout.
fn run_match(
    command: arena::matches::MatchCommand,
    out_dir: Option<std::path::PathBuf>,
    web: Option<std::net::SocketAddr>,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    use arena::matches;
    let temporary = out_dir.is_none();
    let out_dir = out_dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("arena-match-{}", std::process::id()))
    });
    let plan = command.plan(out_dir.clone())?;
    let mut board = arena::console::StatusBoard::new(
        io::stderr(),
        io::IsTerminal::is_terminal(&io::stderr()),
        terminal_width(libc::STDERR_FILENO),
    );
    let mut observer = |report: &matches::MatchReport, eta: Option<std::time::Duration>| {
        let _ = board.set("match", &report.progress_line(eta));
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let report = runtime.block_on(async {
        let web = match web {
            Some(addr) => {
                let web = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot serve the web view on {addr}"))?;
                eprintln!("web view: http://{}/", web.local_addr()?);
                Some(web)
            }
            None => None,
        };
        let web = web.map(arena::web::companion);
        anyhow::Ok(matches::run(&plan, web, shutdown_on_signals(), &mut observer).await?)
    });
    // Engines still winding down (a bridge killing its child) finish before the folder goes.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if temporary {
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    let report = report?;
    if json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        report.write_table(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `arena serve`: runs the league of `config_path` until it is finished or ctrl-c.
fn serve(
    config_path: &std::path::Path,
    listen: Option<&str>,
    web: Option<String>,
    verbose: u8,
) -> anyhow::Result<ExitCode> {
    let mut config = arena::config::Config::load(config_path)?;
    // Before the log file is opened, so that a refused config leaves nothing behind.
    let weak = config
        .check_token_lengths()
        .map_err(|e| e.in_file(config_path))?;
    if let Some(web) = web {
        config.server.web = web;
        config.web_addr()?;
    }
    // The console shows a person's view (progress lines, tables, warnings, errors); the whole
    // log goes to the file.
    init_logging(
        verbose,
        "warn",
        Some(open_log_file(&config.server.out_dir)?),
        LogWriters::Threads,
    );
    for name in weak {
        eprintln!(
            "warning: bot {name:?} has a token shorter than {} characters (weak_token = true), which can be guessed; `arena token` prints a strong one",
            arena::config::MIN_TOKEN_CHARS
        );
    }
    let out_dir = config.server.out_dir.clone();
    let league_config = config.clone();
    let runtime =
        arena::server::runtime(config.server.threads).context("cannot start the async runtime")?;
    let summary = runtime.block_on(async move {
        let listener = arena::server::bind(&config, listen).await?;
        let web = match config.web_addr()? {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot serve the web view on {addr}"))?,
            ),
            None => None,
        };
        let board = std::sync::Mutex::new(arena::console::StatusBoard::new(
            io::stdout(),
            io::IsTerminal::is_terminal(&io::stdout()),
            terminal_width(libc::STDOUT_FILENO),
        ));
        let progress = config.server.progress;
        let console = arena::server::Subscriber::news(std::sync::Arc::new(move |event| {
            print_server_event(&board, progress, event)
        }));
        anyhow::Ok(
            arena::server::run_with(
                config,
                listener,
                shutdown_on_signals(),
                vec![console],
                web.map(arena::web::companion),
            )
            .await?,
        )
    })?;
    // With the web view on, a league that finished (and the server that exited by itself)
    // leaves its web site as static files; so does a league finished before this run, which
    // the server leaves at once.
    let config = league_config;
    let site = out_dir.join("site");
    let writes_site = config.server.exit_when_done && config.web_addr().ok().flatten().is_some();
    if summary.already_finished {
        let games = format!(
            "{} game{}",
            summary.league_games_finished,
            if summary.league_games_finished == 1 {
                ""
            } else {
                "s"
            }
        );
        if writes_site {
            println!(
                "this league is already finished ({games}, every tournament done): nothing to \
                 play.\nIts records and standings are in {out}; to play the league again, give it \
                 a new out_dir.",
                out = out_dir.display(),
            );
            write_static_site(&config, &site);
        } else {
            println!(
                "this league is already finished ({games}, every tournament done): nothing to play.\n\
                 Its records and standings are in {out}. `arena site --config {config}` writes its web \
                 site to {site} (serve that folder with any web server, e.g. `python3 -m http.server -d \
                 {site}`); to play the league again, give it a new out_dir.",
                out = out_dir.display(),
                config = config_path.display(),
                site = site.display(),
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if summary.tournaments_finished && writes_site {
        write_static_site(&config, &site);
    }
    println!("{}", closing_line(&summary));
    Ok(ExitCode::SUCCESS)
}

/// Writes the static copy of `config`'s league to `site`, as `arena site` does, and says where
/// (or why it could not).
fn write_static_site(config: &arena::config::Config, site: &std::path::Path) {
    match arena::web::site::write_site(config, site) {
        Ok(()) => println!(
            "static site written to {} (serve that folder with any web server)",
            site.display()
        ),
        Err(e) => eprintln!("cannot write the static site to {}: {e}", site.display()),
    }
}

/// The last line of `arena serve`: this run's games and the league's.
fn closing_line(summary: &arena::server::ServerSummary) -> String {
    let games = |n: usize| format!("{n} game{}", if n == 1 { "" } else { "s" });
    let this_run = summary.games.len();
    let league = summary.league_games_finished;
    let mut line = if league == this_run {
        format!("{} played", games(this_run))
    } else {
        format!(
            "{} played this run, {league} in the league so far",
            games(this_run)
        )
    };
    if summary.tournaments_finished {
        line.push_str("; every tournament finished");
    } else {
        line.push_str(&format!(
            "; {league} of {} league games done",
            summary.league_games_planned
        ));
    }
    line
}

/// What a person sees of the server's events on stdout (the progress events only with
/// `progress` on): on a terminal, a status line per running tournament with its latest game;
/// elsewhere a line per game.
fn print_server_event(
    board: &std::sync::Mutex<arena::console::StatusBoard<io::Stdout>>,
    progress: bool,
    event: &arena::server::ServerEvent<'_>,
) {
    use arena::server::ServerEvent;
    let Ok(mut board) = board.lock() else {
        return;
    };
    // A closed stdout leaves the server running; there is nobody to tell.
    let _ = match event {
        ServerEvent::Ready { address, web } => {
            let mut text = format!("arena listening on {address}");
            if let Some(web) = web {
                text.push_str(&format!("\nweb view: http://{web}/"));
            }
            board.print(&text)
        }
        ServerEvent::Resumed(report) if progress => board.print(&format!(
            "resuming from the journal: {} games already played, {} continue from their last journaled move{}{}",
            report.finished,
            report.resumed,
            if report.repaired > 0 {
                format!(", {} output files or lines repaired", report.repaired)
            } else {
                String::new()
            },
            if report.dropped_torn_line {
                ", a damaged last journal line dropped"
            } else {
                ""
            }
        )),
        ServerEvent::GameFinished(game) if progress => {
            board.set(&game.line.tournament, &progress_line(game))
        }
        ServerEvent::RoundPaired {
            tournament,
            round,
            rounds,
        } if progress => board.print(&format!("{tournament}: round {round} of {rounds} paired")),
        ServerEvent::TournamentFinished(standings) if progress => board
            .remove(&standings.name)
            .and_then(|()| {
                board.print(&format!(
                    "\n{}",
                    arena::league::report::terminal_table(standings)
                ))
            }),
        ServerEvent::OutputBehind(fault) => board.print(&format!(
            "OUTPUT BEHIND: cannot write the {} ({}); {} waiting, kept in memory and retried until it works",
            fault.what,
            fault.why,
            waiting_text(fault)
        )),
        ServerEvent::OutputCaughtUp(what) => {
            board.print(&format!("output caught up: writing the {what} works again"))
        }
        ServerEvent::OutputLeftBehind(fault) => board.print(&format!(
            "stopped with the {} not written ({}; {} waiting): the next start writes them from the journal",
            fault.what,
            fault.why,
            waiting_text(fault)
        )),
        _ => Ok(()),
    };
}

/// A finished game's progress line: its tournament's count, the players and the result, and
/// the league's count.
fn progress_line(game: &arena::server::events::GameFinished) -> String {
    let line = &game.line;
    let p = game.progress;
    let result = match line.winner() {
        Some(arena::game::Side::First) => format!("{} wins by {}", line.first, line.reason),
        Some(arena::game::Side::Second) => format!("{} wins by {}", line.second, line.reason),
        None => format!("draw by {}", line.reason),
    };
    format!(
        "{} {}/{}  {}  {} vs {}: {result} after {} moves  [all: {}/{}]",
        line.tournament,
        p.tournament_done,
        p.tournament_planned,
        line.match_id,
        line.first,
        line.second,
        line.moves.len(),
        p.league_done,
        p.league_planned,
    )
}

/// What waits for a failing output, in words.
fn waiting_text(fault: &arena::server::OutputFault) -> String {
    use arena::server::OutputKind;
    match fault.what {
        OutputKind::Journal => format!("{} journal entries", fault.waiting),
        OutputKind::Games => format!("{} finished games", fault.waiting),
        OutputKind::Standings => "the newest standings".to_string(),
    }
}

/// The command line: the derived parser, except that `arena connect --check` needs no login
/// (the login group is shared with `arena bot`, where it is always required).
fn parse_cli() -> (Cli, ArgMatches) {
    let command = Cli::command().mut_subcommand("connect", |connect| {
        ["server", "name"].into_iter().fold(connect, |cmd, id| {
            cmd.mut_arg(id, |arg| {
                arg.required(false).required_unless_present("check")
            })
        })
    });
    let matches = command.get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    (cli, matches)
}

fn main() -> ExitCode {
    keep_large_buffers_out_of_the_heap();
    let (cli, matches) = parse_cli();
    let result = run(cli, &matches);
    finish_logging();
    match result {
        Ok(code) => code,
        // A reader that stopped early (`arena moves jiu < positions | head`) is not an error:
        // stop quietly, as other command-line tools do.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arena: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

/// Buffers of 128 KiB and more get pages of their own, given back to the system when freed.
/// glibc otherwise raises that limit to the size of each such buffer freed, after which the
/// web view's event batch (some hundred KB a second with a thousand games) and big standings
/// texts come from the heap and leave it fragmented, which showed as several KiB of resident
/// memory per match in `arena bench` beyond the live data (docs/history/benchmarks-runs.md, "Third
/// sitting").
fn keep_large_buffers_out_of_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; it runs before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// `e` with its causes, each said once: an error whose message already quotes its cause (such as
/// `cannot listen on ADDR: Address in use (os error 98)`) does not repeat it.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}

/// Whether `e` comes from writing to a pipe whose reader has gone.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_names_the_tournament_count_players_and_result() {
        let mut line = arena::game_line::GameLine {
            match_id: "hex-demo-r2-p1-g1".into(),
            tournament: "hex-demo".into(),
            game: GameId::Hex,
            first: "greedy".into(),
            second: "hex-engine".into(),
            result: arena::game_line::LineResult::Second,
            reason: arena::game::EndReason::Forfeit,
            moves: Vec::new(),
            think_ms: Vec::new(),
            lag_ms: Vec::new(),
            rules: serde_json::json!({}),
            clock: arena::protocol::ClockSpec::default(),
            started: String::new(),
            finished: String::new(),
            record: String::new(),
        };
        let progress = arena::server::events::LeagueProgress {
            tournament_done: 2,
            tournament_planned: 2,
            league_done: 7,
            league_planned: 10,
        };
        let game = |line: &arena::game_line::GameLine| arena::server::events::GameFinished {
            line: std::sync::Arc::new(line.clone()),
            progress,
        };
        assert_eq!(
            progress_line(&game(&line)),
            "hex-demo 2/2  hex-demo-r2-p1-g1  greedy vs hex-engine: hex-engine wins by forfeit \
             after 0 moves  [all: 7/10]"
        );
        line.result = arena::game_line::LineResult::Draw;
        line.moves = vec!["A1".into()];
        assert!(progress_line(&game(&line)).contains(": draw by forfeit after 1 moves"));
    }
}

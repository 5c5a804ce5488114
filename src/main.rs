//! The `arena` binary: parses the command line and hands each subcommand to the library.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use arena::game::GameId;

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
    },
    /// Count leaf positions for each depth 1..=DEPTH from the start position.
    Perft {
        game: GameId,
        depth: u32,
        /// Rule options as a JSON object, e.g. '{"swap":true}'.
        #[arg(long, default_value = "{}")]
        rules: String,
    },
    /// For each position text on stdin, print its legal moves.
    Moves {
        game: GameId,
        #[arg(long, default_value = "{}")]
        rules: String,
    },
    /// For each move list on stdin (one game per line), print how the game stands.
    Replay {
        game: GameId,
        #[arg(long, default_value = "{}")]
        rules: String,
    },
    /// Check contest record files: one line per file, `ok RESULT FILE` or `invalid WHY FILE`;
    /// exit status 1 if any file is invalid.
    Check {
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Rule options the games were played under, as a JSON object (default: each game's
        /// defaults, with Hex's swap rule on when a record contains a swap).
        #[arg(long)]
        rules: Option<String>,
    },
    /// Play two built-in engines against each other in-process (colours alternate) and print
    /// the score of the first: a reproducible strength measurement.
    Duel {
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
    /// Connect a built-in engine to a referee as a bot (until the referee closes or ctrl-c).
    Bot {
        #[command(flatten)]
        login: Login,
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
    },
    /// Measure the rules' speed and the referee under load (1,000 concurrent matches of bots
    /// in a child process over loopback TCP); see docs/benchmarks.md. Takes about 35 seconds.
    Bench {
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Smaller counts (100 matches, short windows): a smoke test, not a measurement.
        #[arg(long)]
        quick: bool,
        /// Internal: run only the load generator's bots against --server.
        #[arg(long, hide = true)]
        bots_only: bool,
        #[arg(long, hide = true, default_value = "127.0.0.1:7878")]
        server: String,
        #[arg(long, hide = true, default_value_t = 2)]
        bots: usize,
        #[arg(long, hide = true, default_value_t = 0)]
        think_max_ms: u64,
        #[arg(long, hide = true, default_value_t = 1)]
        seed: u64,
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
    /// command after `--`) as a child process for each match, translating its protocol.
    Connect {
        #[command(flatten)]
        login: Login,
        /// What the engine speaks: json (protocol v1), gtp (Hex) or sau (Connect6).
        #[arg(long)]
        protocol: arena::bridge::EngineProtocol,
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
        /// The engine command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
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
    /// The bot's token in the arena's config.
    #[arg(long)]
    token: String,
}

/// Logs to stderr: info by default, debug with -v, trace with -vv; RUST_LOG overrides.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
        .try_init();
}

fn run_bot_command(config: arena::client::BotClientConfig) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move { arena::client::run_bot(config, shutdown_on_ctrl_c()).await })?;
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

fn parse_rules(text: &str) -> anyhow::Result<serde_json::Value> {
    let value: serde_json::Value =
        serde_json::from_str(text).context("--rules must be a JSON object")?;
    anyhow::ensure!(
        value.is_object(),
        "--rules must be a JSON object, e.g. '{{\"swap\":true}}'"
    );
    Ok(value)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    init_logging(cli.verbose);
    // Not `stdout().lock()`: the server prints progress lines from its own threads (in-process
    // under `arena bench`), which would wait forever on a lock this thread holds.
    let mut out = BufWriter::new(io::stdout());
    let command = cli.command.unwrap_or(Command::Serve {
        config: std::path::PathBuf::from("arena.toml"),
        listen: None,
    });
    match command {
        Command::Serve { config, listen } => {
            return serve(&config, listen.as_deref());
        }
        Command::Perft { game, depth, rules } => {
            arena::tools::perft(game, &parse_rules(&rules)?, depth, &mut out)?;
        }
        Command::Moves { game, rules } => {
            arena::tools::moves(game, &parse_rules(&rules)?, io::stdin().lock(), &mut out)?;
        }
        Command::Replay { game, rules } => {
            arena::tools::replay(game, &parse_rules(&rules)?, io::stdin().lock(), &mut out)?;
        }
        Command::Bot {
            login:
                Login {
                    server,
                    name,
                    token,
                },
            engine,
            options,
            games,
            max_games,
        } => {
            let engine_options = arena::client::parse_engine_options(&options)?;
            run_bot_command(arena::client::BotClientConfig {
                server,
                name,
                token,
                engine,
                engine_options,
                games,
                max_games,
            })?;
        }
        Command::Bench {
            json,
            quick,
            bots_only,
            server,
            bots,
            think_max_ms,
            seed,
        } => {
            if bots_only {
                arena::bench::run_bots(
                    arena::bench::BotsOptions {
                        server,
                        bots,
                        think_max_ms,
                        seed,
                    },
                    &mut out,
                )?;
            } else {
                let options = arena::bench::BenchOptions {
                    quick,
                    exe: std::env::current_exe().context("cannot find this executable")?,
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
                serde_json::to_writer_pretty(&mut out, &arena::client::engines_json())?;
                writeln!(out)?;
            } else {
                arena::client::write_engine_table(&mut out)?;
            }
        }
        Command::Connect {
            login:
                Login {
                    server,
                    name,
                    token,
                },
            protocol,
            games,
            init,
            setup_timeout_ms,
            command,
        } => {
            let options = arena::bridge::ConnectOptions {
                server,
                name,
                token,
                protocol,
                games,
                init,
                command,
                setup_timeout: std::time::Duration::from_millis(setup_timeout_ms),
            };
            let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
            let matches = runtime.block_on(arena::bridge::run(options))?;
            tracing::info!("done after {matches} match(es)");
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
            let config = arena::duel::DuelConfig {
                game,
                rules: parse_rules(&rules)?,
                engines: [
                    (engine_a.clone(), parse_rules(&a_options)?),
                    (engine_b.clone(), parse_rules(&b_options)?),
                ],
                games,
                move_ms,
                seed,
            };
            let names = [format!("A:{engine_a}"), format!("B:{engine_b}")];
            let results = arena::duel::run(&config, |g| {
                let first = &names[g.first];
                let second = &names[1 - g.first];
                let winner = g.winner().map_or("draw", |w| names[w].as_str());
                println!(
                    "game {:>3}: {first} (first) vs {second}: {winner} by {} after {} moves; max think A {} ms, B {} ms",
                    g.index + 1,
                    g.outcome.reason,
                    g.moves.len(),
                    g.max_think_ms[0],
                    g.max_think_ms[1]
                );
            })?;
            let (w, d, l) = arena::duel::score(&results);
            println!(
                "{} vs {}: {w} wins, {d} draws, {l} losses for {}",
                names[0], names[1], names[0]
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `arena serve`: runs the league of `config_path` until it is finished or ctrl-c.
fn serve(config_path: &std::path::Path, listen: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = arena::config::Config::load(config_path)?;
    for name in arena::server::bots_with_short_tokens(&config) {
        eprintln!(
            "warning: bot {name:?} has a token shorter than {} characters, which can be guessed; `arena token` prints a strong one",
            arena::server::MIN_TOKEN_CHARS
        );
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let summary = runtime.block_on(async move {
        let listener = arena::server::bind(&config, listen).await?;
        let address = listener.local_addr().context("listener address")?;
        println!("arena listening on {address}");
        anyhow::Ok(arena::server::run(config, listener, shutdown_on_ctrl_c()).await?)
    })?;
    println!(
        "{} games played{}",
        summary.games.len(),
        if summary.tournaments_finished {
            "; every tournament finished"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
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

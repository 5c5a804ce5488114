//! The `arena` binary: parses the command line and hands each subcommand to the library.

use std::io::{self, BufWriter};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// Play an existing engine in the arena: connect to the referee and run the engine (the
    /// command after `--`) as a child process for each match, translating its protocol.
    Connect {
        /// The referee's address, HOST:PORT.
        #[arg(long)]
        server: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        token: String,
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
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Perft { game, depth, rules } => {
            arena::tools::perft(game, &parse_rules(&rules)?, depth, &mut out)?;
        }
        Command::Moves { game, rules } => {
            arena::tools::moves(game, &parse_rules(&rules)?, io::stdin().lock(), &mut out)?;
        }
        Command::Replay { game, rules } => {
            arena::tools::replay(game, &parse_rules(&rules)?, io::stdin().lock(), &mut out)?;
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
        Command::Connect {
            server,
            name,
            token,
            protocol,
            games,
            init,
            setup_timeout_ms,
            command,
        } => {
            init_logging(cli.verbose);
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
    }
    Ok(ExitCode::SUCCESS)
}

/// Log lines go to stderr; `-v`/`-vv` or RUST_LOG raise the level.
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
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("arena: {e:#}");
            ExitCode::from(2)
        }
    }
}

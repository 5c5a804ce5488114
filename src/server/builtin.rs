//! Built-in engines: each configured `builtin` bot is started in-process as a loopback TCP client
//! of this very server (`crate::client::run_bot`), so it goes through the same listener,
//! authentication and clocks as any third-party bot. A client that stops early is restarted.
//! `program` bots are started the same way, through the bridge (`crate::bridge::run`): one
//! loopback connection per bot, a child process per game (its process group killed when the
//! game ends), under the bot's folder and memory limit and, when there are enough cores for
//! every program bot, pinned to a core of its own.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::client::{run_bot, BotClientConfig};
use crate::config::{BotConfig, Config};
use crate::game::GameId;

/// How long to wait before restarting a built-in client that stopped.
const RESTART_DELAY: Duration = Duration::from_secs(1);

/// Where a built-in bot connects: the bound address, with an unspecified IP (0.0.0.0, ::)
/// replaced by loopback.
fn loopback(address: SocketAddr) -> SocketAddr {
    let mut address = address;
    if address.ip().is_unspecified() {
        address.set_ip(match address {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    address
}

/// Starts one client task per built-in bot (`(bot, engine id, token)`); each offers the games
/// of the tournaments it is entered in.
pub fn start_builtins(
    config: &Config,
    address: SocketAddr,
    builtins: Vec<(BotConfig, String, String)>,
    stop: CancellationToken,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let server = loopback(address).to_string();
    for (bot, engine, token) in builtins {
        let games: BTreeSet<GameId> = config
            .tournaments
            .iter()
            .filter(|t| t.bots.contains(&bot.name))
            .map(|t| t.game)
            .collect();
        if games.is_empty() {
            tracing::info!(bot = %bot.name, "built-in bot is in no tournament; not started");
            continue;
        }
        let client_config = BotClientConfig {
            server: server.clone(),
            name: bot.name.clone(),
            token,
            engine,
            engine_options: bot.options.clone(),
            games: games.into_iter().collect(),
            max_games: bot.max_games,
            // The server restarts its own engines' clients itself.
            reconnect_for: Duration::ZERO,
        };
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                let result = run_bot(client_config.clone(), stop.clone()).await;
                if stop.is_cancelled() {
                    break;
                }
                match result {
                    Ok(()) => {
                        tracing::warn!(bot = %client_config.name, "built-in bot disconnected; restarting")
                    }
                    Err(e) => {
                        tracing::warn!(bot = %client_config.name, error = %e, "built-in bot stopped; restarting")
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(RESTART_DELAY) => {}
                }
            }
        });
    }
    tasks
}

/// A `program` bot to start: its config and the token it logs in with.
pub struct ProgramBot {
    pub bot: BotConfig,
    pub token: String,
}

/// Starts one bridge per `program` bot into `tasks`, each offering the games of the
/// tournaments it is entered in.
pub fn start_programs(
    config: &Config,
    address: SocketAddr,
    programs: Vec<ProgramBot>,
    stop: CancellationToken,
    tasks: &mut JoinSet<()>,
) {
    let server = loopback(address).to_string();
    let cores = crate::program::available_cores();
    let pin = programs.len() >= 2 && programs.len() <= cores.len();
    let exe = std::env::current_exe().ok();
    for (index, ProgramBot { bot, token }) in programs.into_iter().enumerate() {
        let Some(spec) = bot.program_spec() else {
            continue;
        };
        let games: BTreeSet<GameId> = config
            .tournaments
            .iter()
            .filter(|t| t.bots.contains(&bot.name))
            .map(|t| t.game)
            .collect();
        if games.is_empty() {
            tracing::info!(bot = %bot.name, "program bot is in no tournament; not started");
            continue;
        }
        let limits = crate::program::Limits {
            dir: bot.dir.clone(),
            memory_mb: bot.memory_mb,
            cpus: if pin {
                cores.get(index).map(|&c| vec![c]).unwrap_or_default()
            } else {
                Vec::new()
            },
        };
        let command = match &exe {
            Some(exe) => limits.wrap(exe, &spec.command),
            None if limits.dir.is_none() && limits.memory_mb.is_none() => spec.command.clone(),
            None => {
                tracing::error!(bot = %bot.name, "cannot find this executable to apply the folder and memory limit; not started");
                continue;
            }
        };
        let options = crate::bridge::ConnectOptions {
            server: server.clone(),
            name: bot.name.clone(),
            token,
            protocol: spec.protocol,
            games: Some(games.iter().map(|g| g.as_str().to_string()).collect()),
            init: bot.init.clone(),
            command,
            cwd: None,
            setup_timeout: Duration::from_secs(10),
            // One engine process per game: the bot plays as many at once as its config says.
            max_games: bot.max_games,
            // The bridge sees the stop itself and ends its engines (quit, wait, kill, reap)
            // before it returns, so no engine outlives the server.
            stop: stop.clone(),
        };
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                let result = crate::bridge::run(options.clone()).await;
                if stop.is_cancelled() {
                    break;
                }
                match result {
                    Ok(_) => tracing::warn!(bot = %options.name, "program bot's bridge disconnected; restarting"),
                    Err(e) => tracing::warn!(bot = %options.name, error = %e, "program bot's bridge stopped; restarting"),
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(RESTART_DELAY) => {}
                }
            }
        });
    }
}

/// Waits for every built-in client to finish (they stop on the shutdown token).
pub async fn stop_builtins(mut tasks: JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}

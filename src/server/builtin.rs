//! Built-in engines: each configured `builtin` bot is started in-process as a loopback TCP client
//! of this very server (`crate::client::run_bot`), so it goes through the same listener,
//! authentication and clocks as any third-party bot. A client that stops early is restarted.

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

/// Waits for every built-in client to finish (they stop on the shutdown token).
pub async fn stop_builtins(mut tasks: JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}

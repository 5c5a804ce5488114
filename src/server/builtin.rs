//! Built-in engines: each configured `builtin` bot is started in-process as a loopback TCP client
//! of this very server (`crate::client::run_bot`), so it goes through the same listener,
//! authentication and clocks as any third-party bot. A client that stops before the league is
//! over is restarted.
//! `program` bots are started the same way, through the bridge (`crate::bridge::run`): one
//! loopback connection per bot, a child process per game (its process group killed when the
//! game ends), in the sandbox with the bot's folder and limits (`crate::sandbox`) and, when
//! there are enough cores for every program bot, pinned to a core of its own. A program that
//! keeps failing to start is marked absent and retried with a growing delay.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::registry::Registry;
use crate::bridge::child::Launch;
use crate::bridge::BridgeError;
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
    registry: Arc<Registry>,
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
            seed: bot.seed.unwrap_or(0),
            // The server restarts its own engines' clients itself.
            reconnect_for: Duration::ZERO,
        };
        let stop = stop.clone();
        let registry = registry.clone();
        tasks.spawn(async move {
            loop {
                let result = run_bot(client_config.clone(), stop.clone()).await;
                // Told the league is over, the client stops before the server's own stop
                // (which may never come: `exit_when_done = false` keeps the web view up).
                if stop.is_cancelled() || registry.league_is_over() {
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

/// The longest wait between two tries of a program that keeps failing to start.
const MOST_RESTART_DELAY: Duration = Duration::from_secs(30);

/// Starts one bridge per `program` bot into `tasks`, each offering the games of the
/// tournaments it is entered in, each engine in `sandbox` (`None`: unconfined, as the config
/// asked). A program that fails its start check `[programs] failed_starts` times in a row is
/// marked in `registry` as one that cannot start (its due games are forfeited at once), said
/// once on the console with what it printed, and retried with a growing delay.
pub fn start_programs(
    config: &Config,
    address: SocketAddr,
    programs: Vec<ProgramBot>,
    sandbox: Option<&crate::sandbox::Sandbox>,
    registry: Arc<Registry>,
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
        let cpus = if pin {
            cores.get(index).map(|&c| vec![c]).unwrap_or_default()
        } else {
            Vec::new()
        };
        let launch = match program_launch(config, &bot, cpus, sandbox, exe.as_deref()) {
            Ok(launch) => launch,
            Err(why) => {
                tracing::error!(bot = %bot.name, "{why}; not started");
                registry.mark_cannot_start(&bot.name);
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
            command: spec.command.clone(),
            cwd: None,
            launch,
            setup_timeout: Duration::from_secs(10),
            // One engine process per game: the bot plays as many at once as its config says.
            max_games: bot.max_games,
            // The bridge sees the stop itself and ends its engines (quit, wait, kill, reap)
            // before it returns, so no engine outlives the server.
            stop: stop.clone(),
        };
        let stop = stop.clone();
        let registry = registry.clone();
        let give_up_after = config.programs.failed_starts;
        tasks.spawn(async move {
            let mut failed_starts = 0u32;
            loop {
                let result = crate::bridge::run(options.clone()).await;
                if stop.is_cancelled() || registry.league_is_over() {
                    break;
                }
                let name = &options.name;
                match result {
                    Err(e @ (BridgeError::EngineCheck { .. } | BridgeError::Spawn(_))) => {
                        failed_starts = failed_starts.saturating_add(1);
                        if failed_starts < give_up_after {
                            tracing::warn!(bot = %name, "program did not start ({failed_starts} in a row): {e}");
                        } else if failed_starts == give_up_after {
                            registry.mark_cannot_start(name);
                            tracing::error!(bot = %name, "program failed to start {failed_starts} times in a row; it is absent and its games are forfeited until it starts (tried again with a growing delay): {e}");
                        } else {
                            tracing::debug!(bot = %name, "program still does not start: {e}");
                        }
                    }
                    Ok(_) => {
                        failed_starts = 0;
                        tracing::warn!(bot = %name, "program bot's bridge disconnected; restarting");
                    }
                    Err(e) => {
                        failed_starts = 0;
                        tracing::warn!(bot = %name, error = %e, "program bot's bridge stopped; restarting");
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(restart_delay(failed_starts)) => {}
                }
            }
        });
    }
}

/// The wait before the next try after `failed_starts` failed starts in a row: a second, then
/// doubling up to `MOST_RESTART_DELAY`.
fn restart_delay(failed_starts: u32) -> Duration {
    let doublings = failed_starts.saturating_sub(1).min(16);
    RESTART_DELAY
        .saturating_mul(1 << doublings)
        .min(MOST_RESTART_DELAY)
}

/// How the bridge starts `bot`'s engine: in `sandbox` with the bot's limits, its output capped
/// and its stderr captured, or, without a sandbox, as before it: under `arena engine-exec`
/// with its folder, memory limit and cores, its stderr passed through.
fn program_launch(
    config: &Config,
    bot: &BotConfig,
    cpus: Vec<usize>,
    sandbox: Option<&crate::sandbox::Sandbox>,
    exe: Option<&std::path::Path>,
) -> Result<Launch, String> {
    let limits = config.programs.limits_for(bot);
    let Some(sandbox) = sandbox else {
        let wrap = crate::program::Limits {
            dir: bot.dir.clone(),
            memory_mb: bot.memory_mb,
            cpus,
            ..Default::default()
        };
        let wrapper = match exe {
            Some(exe) => wrap.wrap(exe, &[]),
            None if wrap.is_empty() => Vec::new(),
            None => {
                return Err(
                    "cannot find this executable to apply the folder and memory limit".into(),
                )
            }
        };
        // Unconfined as before the sandbox: stderr passes through to the server's.
        return Ok(Launch {
            wrapper,
            jail: None,
            output_cap: None,
        });
    };
    let exe = exe.ok_or("cannot find this executable to run `engine-exec` in the sandbox")?;
    if let Some(dir) = &bot.dir {
        warn_if_unreadable(&bot.name, dir);
    }
    let inside = crate::program::Limits {
        dir: bot.dir.clone(),
        memory_mb: Some(limits.memory_mb),
        cpus,
        processes: Some(limits.processes),
        file_size_mb: Some(limits.file_size_mb),
        open_files: Some(limits.open_files),
        copy_from: None,
    };
    let jail = sandbox
        .jail(Some(exe), &inside, limits.scratch_mb, limits.tmp_mb)
        .map_err(|e| e.to_string())?;
    Ok(Launch {
        wrapper: jail.wrapper().to_vec(),
        jail: Some(Arc::new(jail)),
        output_cap: Some(limits.output_bytes()),
    })
}

/// The sandboxed engine runs as `nobody` when the server is root: a folder that others may
/// not read is empty to it.
fn warn_if_unreadable(bot: &str, dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    if let Ok(meta) = std::fs::metadata(dir) {
        if meta.permissions().mode() & 0o005 != 0o005 {
            tracing::warn!(%bot, dir = %dir.display(), "the program's folder is not readable by other users, and its sandboxed engine runs as the unprivileged user nobody: give it `chmod -R a+rX`");
        }
    }
}

/// Waits for every built-in client to finish (they stop on the shutdown token).
pub async fn stop_builtins(mut tasks: JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_after_failed_starts_back_off_to_a_ceiling() {
        assert_eq!(restart_delay(0), RESTART_DELAY);
        assert_eq!(restart_delay(1), RESTART_DELAY);
        assert_eq!(restart_delay(2), RESTART_DELAY * 2);
        assert_eq!(restart_delay(3), RESTART_DELAY * 4);
        assert_eq!(restart_delay(40), MOST_RESTART_DELAY);
    }
}

//! `arena serve`: the referee server. This file owns the listener (accept loop with the
//! connection cap), the shutdown token that reaches every task, the built-in engines' start, and
//! `run`, the library entry point.
//!
//! Tasks: one accept loop; per connection a reader (`connection`) and a writer task (`link`); per
//! match a task (`match_task`) that runs its referee (`referee`) and writes its output; one
//! scheduler (`schedule`) that decides what starts when. They share the `registry`. What happens
//! is told to the caller's subscribers as typed `events`: the library never prints. A
//! companion service (the web view) runs beside the server when the caller brings one: the
//! server knows nothing of what it is.

pub mod address;
mod arrival;
mod builtin;
pub mod connection;
pub mod events;
mod journaling;
mod link;
pub mod log_summary;
mod login_guard;
mod match_spec;
mod match_task;
mod move_log;
pub mod open_files;
pub(crate) mod output;
pub mod output_health;
mod prefetch;
pub mod probe;
mod reader_waits;
mod referee;
pub mod registry;
mod report;
mod schedule;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

pub use arrival::{kernel_receive_timestamps_refused, ArrivalStampedRead};
use connection::{serve_connection, ConnectionContext};
pub use events::{EventSink, Events, OutputFault, OutputKind, ServerEvent, Subscriber};
/// A connection's outgoing side, for the bench's relay to write lines exactly as the server does.
pub use link::{outbox, write_lines, LineSink, LinkClose, OutboxReader, OutboxSender, TcpSink};
use output::Output;
use registry::Registry;
pub use report::{GameSummary, ResumeReport, ServerError, ServerSummary};
use schedule::Scheduler;

/// The runtime a server runs on: `threads` worker threads (`server.threads`), or one per core
/// if 0.
pub fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if threads > 0 {
        builder.worker_threads(threads);
    }
    builder.enable_all().build()
}

/// Binds the configured listen address (or `listen` when given).
pub async fn bind(config: &Config, listen: Option<&str>) -> Result<TcpListener, ServerError> {
    let addr = match listen {
        Some(a) => a.to_string(),
        None => config.listen_addr()?.to_string(),
    };
    TcpListener::bind(&addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })
}

/// A strong random token: 32 hex digits (128 bits) from the operating system's seeded CSPRNG.
/// Built-in bots get one that never leaves the process; `arena token` prints one for the config.
pub fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..32)
        .map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)]))
        .collect()
}

/// The sandbox the config's `program` bots run in, probed before anything else starts: the
/// server refuses to start when the machine cannot give it (the error says what to install);
/// `sandbox = "none"` is warned about at every start.
async fn program_sandbox(config: &Config) -> Result<Option<crate::sandbox::Sandbox>, ServerError> {
    if !config.bots.iter().any(|b| b.program.is_some()) {
        return Ok(None);
    }
    let kind = config.programs.sandbox;
    let sandbox = crate::sandbox::Sandbox::probe(kind).await?;
    match &sandbox {
        Some(sandbox) => tracing::info!(bwrap = %sandbox.bwrap().display(), "program bots run in a sandbox"),
        None => tracing::warn!("program bots run WITHOUT a sandbox ([programs] sandbox = \"none\"): each can read and write whatever this server can, reach the network and the referee port, and see other processes"),
    }
    Ok(sandbox)
}

/// Runs the server on `listener` until every tournament is finished (when `exit_when_done`) or
/// `shutdown` is cancelled.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<ServerSummary, ServerError> {
    run_with(config, listener, shutdown, Vec::new(), None).await
}

/// A service that runs beside the server (the web view): it subscribes to the server's events,
/// is started with the server's connection context once the server listens, and is stopped
/// with the server (its failures are its own: they never stop the league).
pub struct Companion {
    /// Where it serves, told in [`ServerEvent::Ready`].
    pub address: Option<std::net::SocketAddr>,
    /// Its subscription to the server's events (from the server's start on).
    pub subscriber: Subscriber,
    /// Starts it; its task ends soon after the token is cancelled.
    #[allow(clippy::type_complexity)]
    pub start: Box<
        dyn FnOnce(Arc<ConnectionContext>, CancellationToken) -> tokio::task::JoinHandle<()> + Send,
    >,
}

/// [`run`], telling what happens to `subscribers` (beginning with [`ServerEvent::Ready`] once
/// the output folder is held), with `companion` running beside the server when given.
pub async fn run_with(
    config: Config,
    listener: TcpListener,
    shutdown: CancellationToken,
    subscribers: Vec<Subscriber>,
    companion: Option<Companion>,
) -> Result<ServerSummary, ServerError> {
    let address = listener.local_addr().map_err(ServerError::Listener)?;
    let (companion, companion_address) = match companion {
        Some(Companion {
            address,
            subscriber,
            start,
        }) => (Some((subscriber, start)), address),
        None => (None, None),
    };
    let mut subscribers = subscribers;
    let companion = companion.map(|(subscriber, start)| {
        subscribers.push(subscriber);
        start
    });
    let events = Events::new(subscribers);
    let mut config = config;
    let budget = fit_connections_under_open_files_limit(&mut config, companion.is_some());
    let config = Arc::new(config);
    let sandbox = program_sandbox(&config).await?;
    let out_dir = config.server.out_dir.clone();
    std::fs::create_dir_all(&out_dir).map_err(|source| ServerError::OutDir {
        path: out_dir.clone(),
        source,
    })?;
    let health = Arc::new(output_health::OutputHealth::new(events.clone()));
    let output = Arc::new(Output::with_health(
        out_dir,
        config.server.record_encoding,
        config.server.event.clone(),
        config.server.place.clone(),
        health,
    ));
    let _lock = journaling::lock_out_dir(&config.server.out_dir)?;
    let registry = Arc::new(Registry::default());
    let (journal, tournaments, report) = {
        let config = config.clone();
        let output = output.clone();
        tokio::task::spawn_blocking(move || schedule::prepare_league(&config, &output))
            .await
            .map_err(|e| ServerError::Output(format!("league setup task failed: {e}")))??
    };
    let writer = output
        .start_writer()
        .map_err(|e| ServerError::Output(format!("cannot start the output writer: {e}")))?;
    let mut scheduler = Scheduler::new(
        config.clone(),
        registry.clone(),
        output.clone(),
        journal,
        tournaments,
        events.clone(),
    );
    if config.server.exit_when_done && scheduler.all_tournaments_finished() {
        tracing::info!("every tournament was finished before this run: nothing to play");
        // The outputs the journal repaired (a games.jsonl line or record a crash cut off) are
        // queued for the writer: on disk before the caller reads the league (`arena serve`
        // writes its static site from them).
        finish_output(&output, writer, &events).await;
        let (league_games_finished, league_games_planned) = scheduler.league_progress();
        return Ok(ServerSummary {
            address,
            games: Vec::new(),
            league_games_finished,
            league_games_planned,
            tournaments_finished: true,
            already_finished: true,
        });
    }

    let mut tokens = HashMap::new();
    let mut builtins = Vec::new();
    let mut programs = Vec::new();
    for bot in &config.bots {
        match (&bot.token, &bot.builtin) {
            (Some(token), _) => {
                tokens.insert(bot.name.clone(), token.clone());
            }
            (None, Some(engine)) => {
                let token = random_token();
                tokens.insert(bot.name.clone(), token.clone());
                builtins.push((bot.clone(), engine.clone(), token));
            }
            (None, None) if bot.program.is_some() => {
                let token = random_token();
                tokens.insert(bot.name.clone(), token.clone());
                programs.push(builtin::ProgramBot {
                    bot: bot.clone(),
                    token,
                });
            }
            (None, None) => {}
        }
    }

    let stop = shutdown.child_token();
    let ctx = Arc::new(ConnectionContext {
        config: config.clone(),
        registry: registry.clone(),
        logins: login_guard::LoginGuard::new(
            config.server.max_failed_logins_per_minute,
            Duration::from_millis(config.server.failed_login_block_ms),
        ),
        refusals: Arc::new(log_summary::LogSummary::new()),
        tokens,
        output: output.clone(),
        events: events.clone(),
        shutdown: stop.clone(),
    });
    let companion = companion.map(|start| start(ctx.clone(), stop.clone()));
    probe::server_ready();
    // The runtime's worker threads: one per core, or `server.threads` (see `arena serve`).
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    tracing::info!(%address, workers, open_files_limit = ?budget.limit, bot_connections = budget.bot_connections, web_connections = budget.web_connections, "arena server listening");
    events.publish(&ServerEvent::Ready {
        address,
        web: companion_address,
    });
    if report.finished > 0 || report.resumed > 0 || report.repaired > 0 {
        events.publish(&ServerEvent::Resumed(report));
    }
    let accept = tokio::spawn(accept_loop(listener, ctx, stop.clone()));
    let mut engines =
        builtin::start_builtins(&config, address, builtins, registry.clone(), stop.clone());
    builtin::start_programs(
        &config,
        address,
        programs,
        sandbox.as_ref(),
        registry.clone(),
        stop.clone(),
        &mut engines,
    );

    let finished = scheduler.run(stop.clone()).await;
    finish_output(&output, writer, &events).await;
    if finished {
        tracing::info!(
            games = scheduler.summary.len(),
            "every tournament is finished"
        );
        registry.end_league();
        if config.server.exit_when_done {
            stop.cancel();
        }
    }
    stop.cancelled().await;
    let _ = accept.await;
    builtin::stop_builtins(engines).await;
    if let Some(companion) = companion {
        // Its streams end with `stop`; a browser that holds a request open does not hold the
        // server's exit.
        if tokio::time::timeout(Duration::from_secs(5), companion)
            .await
            .is_err()
        {
            tracing::warn!("the companion service (web view) did not stop within 5 s; leaving it");
        }
    }
    let (league_games_finished, league_games_planned) = scheduler.league_progress();
    Ok(ServerSummary {
        address,
        games: std::mem::take(&mut scheduler.summary),
        league_games_finished,
        league_games_planned,
        tournaments_finished: finished,
        already_finished: false,
    })
}

/// Lets the output writer write what waits (or give up, if writing keeps failing: the journal
/// holds those games for the next start), tells `events` what is left, and flushes the league's
/// files to disk: while games go on, record files and games.jsonl lines are left to the system
/// to flush (the journal can redo them); a clean stop puts them on disk.
async fn finish_output(
    output: &Arc<Output>,
    writer: std::thread::JoinHandle<Option<OutputFault>>,
    events: &Events,
) {
    output.stop_writing();
    let output = output.clone();
    let done = tokio::task::spawn_blocking(move || {
        let left = writer.join().unwrap_or_else(|_| {
            Some(OutputFault {
                what: OutputKind::Games,
                waiting: output.waiting(),
                why: "the output writer panicked".into(),
            })
        });
        if let Err(e) = output.flush_to_disk() {
            tracing::error!(error = %e, "cannot flush the league's files to disk");
        }
        left
    })
    .await;
    match done {
        Ok(Some(left)) => {
            tracing::error!(waiting = left.waiting, error = %left.why, "stopping with game outputs not written; the next start writes them from the journal");
            events.publish(&ServerEvent::OutputLeftBehind(left));
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "output task failed"),
    }
}

/// Raises the open-files limit and holds both ports' connection caps (`max_connections`,
/// `web_max_connections`) under it, with room kept for the league's own files; warns when that
/// lowers a configured cap.
fn fit_connections_under_open_files_limit(
    config: &mut Config,
    web_view: bool,
) -> open_files::OpenFilesBudget {
    let server = &mut config.server;
    // Without a web view its port takes no files: the bots may have them all.
    let web_cap = if web_view {
        server.web_max_connections
    } else {
        0
    };
    let budget = open_files::OpenFilesBudget::fit(
        open_files::raise_open_files_limit(),
        server.max_connections,
        web_cap,
    );
    if budget.bot_connections < server.max_connections || budget.web_connections < web_cap {
        tracing::warn!(
            open_files_limit = ?budget.limit,
            max_connections = server.max_connections,
            web_max_connections = server.web_max_connections,
            bot_port_holds = budget.bot_connections,
            web_port_holds = budget.web_connections,
            "the open-files limit is too low for the configured connection caps: the ports hold fewer connections at once (raise the hard limit, e.g. `ulimit -Hn`, LimitNOFILE= in a systemd unit)"
        );
    }
    server.max_connections = budget.bot_connections;
    if web_view {
        server.web_max_connections = budget.web_connections;
    }
    budget
}

/// Accepts connections while fewer than `max_connections` are open (the rest wait in the
/// listen queue), each served by its own task; on `stop`, waits for them to close. When
/// `accept` fails (out of file descriptors) it pauses and goes on serving.
async fn accept_loop(listener: TcpListener, ctx: Arc<ConnectionContext>, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(ctx.config.server.max_connections));
    let unauthenticated =
        address::AddressShares::new(ctx.config.server.max_unauthenticated_per_address);
    let mut connections = JoinSet::new();
    let mut next_id: u64 = 0;
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((socket, peer)) => {
                let Some(share) = unauthenticated.try_take(peer.ip()) else {
                    ctx.refusals.note(
                        peer.ip(),
                        "connection refused: the address holds its share of connections that have not said hello",
                    );
                    continue;
                };
                next_id += 1;
                let ctx = ctx.clone();
                let conn_id = next_id;
                connections.spawn(async move {
                    serve_connection(ctx, socket, peer, conn_id, share).await;
                    drop(permit);
                });
            }
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

//! `arena match`: engine-versus-engine testing on one machine, as cutechess-cli and fastchess
//! do for chess. A match is a one-tournament league (two bots, `games` games, colours
//! alternating, game pairs sharing an opening) run by the arena's own server on a loopback
//! port: built-in engines connect as clients, programs through the bridge, exactly as in a
//! league. This module runs that server (`run`), tallies the games already in games.jsonl and
//! then each one the server reports finished, and stops early when the SPRT decides.
//!
//! Files: `spec` (the engines, clock and rules as the command line gives them), `plan` (the
//! plan as an arena configuration), `tally` (finished games counted from the first engine's
//! side), `report` (what the progress line, the table and `--json` show), `stats` (the
//! arithmetic), `settings` (`match.json`, the command a folder's match was started with).

mod plan;
mod report;
pub mod settings;
mod spec;
pub mod stats;
mod tally;

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::game_line::GameLine;

pub use plan::{MatchPlan, TOURNAMENT};
pub use report::{MatchReport, MoveTimes, SprtReport};
pub use spec::{
    engine_entries, engine_names, parse_clock, parse_rules, EngineEntry, EngineFlags, EngineKind,
    MatchCommand,
};
pub use tally::{GameResult, ReasonCount, Tally};

/// Why a match could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error("--engine {spec:?}: {message}")]
    Engine { spec: String, message: String },
    #[error("{0}")]
    Plan(String),
    #[error(
        "{} holds a match started with another command: {}; run the command it was started with, or give another --out",
        dir.display(),
        changes.join("; ")
    )]
    Changed { dir: PathBuf, changes: Vec<String> },
    #[error(transparent)]
    Openings(#[from] crate::openings::OpeningError),
    #[error(transparent)]
    Sprt(#[from] stats::SprtSpecError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Server(#[from] crate::server::ServerError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What `run` tells its caller as games finish.
pub trait MatchObserver {
    /// After each finished game (and once at start with the games found in the folder).
    fn progress(&mut self, report: &MatchReport, eta: Option<Duration>);
}

impl<F: FnMut(&MatchReport, Option<Duration>)> MatchObserver for F {
    fn progress(&mut self, report: &MatchReport, eta: Option<Duration>) {
        self(report, eta)
    }
}

/// What `run` hears from its server.
enum Heard {
    /// The server holds the output folder: games.jsonl is as the start left it (repaired from
    /// the journal if it had to be).
    Ready,
    Finished(std::sync::Arc<crate::server::events::GameFinished>),
}

/// Plays the match: starts the server on a loopback port (its engines connect to it), tallies
/// the games as the server tells they finish, stops when every game is played, the SPRT
/// decides, or `shutdown` is cancelled (then `interrupted` is set: the same plan resumes from
/// `out_dir`, whose games.jsonl gives the games played before). With `web`, that companion
/// (the web view) runs beside the server while the games run.
pub async fn run(
    plan: &MatchPlan,
    web: Option<crate::server::Companion>,
    shutdown: CancellationToken,
    observer: &mut impl MatchObserver,
) -> Result<MatchReport, MatchError> {
    use crate::server::{ServerEvent, Subscriber};
    let config = plan.config()?;
    settings::check_and_record(plan, &config)?;
    let names = engine_names(&plan.engines)?;
    let listener = crate::server::bind(&config, None).await?;
    // Which opening each game was given (its moves are no engine's).
    let openings = config.tournaments[0].clone();
    let games_file = config.server.out_dir.join("games.jsonl");
    let mut tally = Tally::default();
    let mut seen = std::collections::HashSet::new();
    let add_lines = |lines: &mut dyn Iterator<Item = &GameLine>,
                     tally: &mut Tally,
                     seen: &mut std::collections::HashSet<u32>| {
        let mut added = 0u32;
        for line in lines {
            if line.tournament != TOURNAMENT {
                continue;
            }
            let opening_plies = openings.opening_of(&line.match_id).len();
            if let Some(game) = GameResult::from_line(line, &names[0], opening_plies) {
                if seen.insert(game.number) {
                    tally.add(&game);
                    added += 1;
                }
            }
        }
        added
    };
    let played_before: Vec<GameLine> = GameLine::read_file(&games_file).collect();
    let resumed = add_lines(&mut played_before.iter(), &mut tally, &mut seen);
    drop(played_before);
    let report_now = |tally: &Tally| {
        let mut r = MatchReport::of(plan.game, &names, plan.games, tally, plan.sprt.as_ref());
        r.resumed_games = resumed;
        r
    };
    let mut report = report_now(&tally);
    observer.progress(&report, None);
    let stop = CancellationToken::new();
    let decided = report.sprt.is_some_and(|s| s.decision.is_some());
    // Holds at most one `Ready` and one entry per game of the plan.
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let mut server = None;
    if !decided && report.games < plan.games {
        let tell = Subscriber::news(std::sync::Arc::new(move |event: &ServerEvent<'_>| {
            let _ = match event {
                ServerEvent::Ready { .. } => heard_tx.send(Heard::Ready),
                ServerEvent::GameFinished(game) => heard_tx.send(Heard::Finished(game.clone())),
                _ => Ok(()),
            };
        }));
        server = Some(tokio::spawn(crate::server::run_with(
            config,
            listener,
            stop.clone(),
            vec![tell],
            web,
        )));
    } else {
        drop(heard_tx);
    }
    let began = tokio::time::Instant::now();
    let mut interrupted = false;
    let mut server_done = server.is_none();
    loop {
        let heard_now = tokio::select! {
            _ = shutdown.cancelled(), if !interrupted && !server_done => {
                interrupted = true;
                stop.cancel();
                continue;
            }
            done = async { server.as_mut()?.await.ok() }, if !server_done => {
                server_done = true;
                if let Some(done) = done {
                    done?;
                } else {
                    return Err(MatchError::Plan("the server task failed".to_string()));
                }
                // What it told before it ended is still queued: taken below.
                continue;
            }
            heard_now = heard.recv() => match heard_now {
                Some(heard_now) => heard_now,
                // The server has ended and everything it told is taken.
                None => break,
            },
        };
        let added = match heard_now {
            // Games its start wrote again from the journal were played before this run.
            Heard::Ready => add_lines(
                &mut GameLine::read_file(&games_file).collect::<Vec<_>>().iter(),
                &mut tally,
                &mut seen,
            ),
            Heard::Finished(game) => {
                add_lines(&mut std::iter::once(&*game.line), &mut tally, &mut seen)
            }
        };
        if added > 0 {
            report = report_now(&tally);
            let played = tally.games().saturating_sub(resumed);
            let eta = (played > 0).then(|| {
                began.elapsed().mul_f64(
                    f64::from(plan.games.saturating_sub(tally.games())) / f64::from(played),
                )
            });
            observer.progress(&report, eta);
            if report.sprt.is_some_and(|s| s.decision.is_some()) {
                stop.cancel();
            }
        }
    }
    report = report_now(&tally);
    report.interrupted = interrupted && report.games < plan.games;
    Ok(report)
}

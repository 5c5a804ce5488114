//! The standings files written as the league goes on: each new snapshot written on a blocking
//! thread, at a rest that keeps the writes to a twentieth of a core, retried when a write fails.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::league::write_standings;
use crate::server::events::StandingsBoard;
use crate::server::journaling::MAX_RETRY_PAUSE;
use crate::server::output_health::{OutputHealth, OutputKind};

/// The least time between two rewrites of the standings files while games go on (the last
/// state is written when the league stops, without waiting). The web view's standings are
/// live whatever this is; the files are for publishing, and at 1 s the rewrites of a league of
/// 1,000 tournaments took 1.7% of the bench's server CPU.
pub(super) const STANDINGS_REST: std::time::Duration = std::time::Duration::from_secs(2);

/// After a rewrite of the standings files the writer rests this many times as long as the
/// rewrite took (at least `STANDINGS_REST`): the files then take at most a twentieth of a core.
const REST_PER_WRITE: u32 = 19;

/// Writes the board's standings whenever `rx` says they changed, taking the newest state when
/// it is ready to write (changes meanwhile cost nothing more); ends when the sender is dropped
/// and the last state is written. After each write it rests
/// `REST_PER_WRITE` times as long as the write took, and at least `STANDINGS_REST`, so that with
/// many tournaments and many games ending the files cost at most a twentieth of a core, never the
/// referees' share (the web view's standings do not wait for the files). A write that fails is
/// tried again (the newest snapshot then) after a pause doubling up to `MAX_RETRY_PAUSE`,
/// and `health` hears of it; once the league stops, a failing write is tried for
/// `STANDINGS_STOPPING_TRIES` more (the next start writes the standings anew from the journal).
pub(super) async fn write_standings_as_they_come(
    dir: std::path::PathBuf,
    board: StandingsBoard,
    mut rx: tokio::sync::watch::Receiver<()>,
    health: Arc<OutputHealth>,
) {
    // The board's version last written.
    let mut written: Option<u64> = None;
    let mut pause = Duration::ZERO;
    let mut stopped_at: Option<Instant> = None;
    loop {
        rx.borrow_and_update();
        if written == Some(board.version()) {
            if rx.changed().await.is_err() {
                // The sender is gone: done once its last state is written.
                if written == Some(board.version()) {
                    return;
                }
            }
            continue;
        }
        let began = Instant::now();
        let (latest, snapshot) = board.snapshot();
        let dir_for_task = dir.clone();
        let failed =
            match tokio::task::spawn_blocking(move || write_standings(&dir_for_task, &snapshot))
                .await
            {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(format!("standings task failed: {e}")),
            };
        let rest = match failed {
            None => {
                if !pause.is_zero() {
                    health.recovered(OutputKind::Standings);
                    pause = Duration::ZERO;
                }
                written = Some(latest);
                began
                    .elapsed()
                    .saturating_mul(REST_PER_WRITE)
                    .max(STANDINGS_REST)
            }
            Some(why) => {
                health.failed(OutputKind::Standings, &why, 1);
                if rx.has_changed().is_err() {
                    let since = *stopped_at.get_or_insert(began);
                    if since.elapsed() >= STANDINGS_STOPPING_TRIES {
                        tracing::error!(error = %why, "stopping with the standings files not written; the next start writes them");
                        return;
                    }
                }
                pause = (pause * 2).clamp(Duration::from_millis(50), MAX_RETRY_PAUSE);
                pause
            }
        };
        // Rest, unless the sender goes away meanwhile (the league stopped: write its last state
        // now). Newer snapshots are seen by pointer at the top of the loop.
        tokio::select! {
            _ = tokio::time::sleep(rest) => {}
            _ = async { while rx.changed().await.is_ok() {} }, if stopped_at.is_none() => {}
        }
    }
}

/// How long a failing standings write is still tried once the league stops.
pub(super) const STANDINGS_STOPPING_TRIES: Duration = Duration::from_secs(5);

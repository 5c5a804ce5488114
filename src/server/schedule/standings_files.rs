//! The standings files written as the league goes on: each new snapshot written on a blocking
//! thread, at a rest that keeps the writes to a twentieth of a core, retried when a write fails.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::league::report::StandingsTexts;
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
    // Lent to each rewrite's blocking task and handed back (empty again if that task is lost).
    let mut texts = StandingsTexts::default();
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
        let mut texts_for_task = std::mem::take(&mut texts);
        let written_by_task = tokio::task::spawn_blocking(move || {
            let written = texts_for_task.write(&dir_for_task, &snapshot);
            (texts_for_task, written)
        })
        .await;
        let failed = match written_by_task {
            Ok((kept, written)) => {
                texts = kept;
                written.err().map(|e| e.to_string())
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameId;
    use crate::league::TournamentStandings;

    /// The `finished` flag of the one tournament in `dir`'s standings.json, if written.
    fn written_finished(dir: &std::path::Path) -> Option<bool> {
        let text = std::fs::read_to_string(dir.join("standings.json")).ok()?;
        let file: serde_json::Value = serde_json::from_str(&text).ok()?;
        file["tournaments"][0]["finished"].as_bool()
    }

    fn standings(finished: bool) -> Arc<TournamentStandings> {
        Arc::new(TournamentStandings::new(
            "t",
            GameId::Hex,
            finished,
            Vec::new(),
        ))
    }

    /// Waits (a few ms of the test's paused clock at most) until the file says `finished`.
    async fn until_written(dir: &std::path::Path, finished: bool) {
        for _ in 0..100 {
            if written_finished(dir) == Some(finished) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("standings.json never said finished = {finished}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_waits_out_the_rest_after_a_rewrite_and_the_last_state_is_written_at_the_stop()
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let board = StandingsBoard::new(vec![standings(false)]);
        let (changed, rx) = tokio::sync::watch::channel(());
        let writer = tokio::spawn(write_standings_as_they_come(
            dir.path().to_path_buf(),
            board.clone(),
            rx,
            Arc::new(OutputHealth::default()),
        ));
        // The first state is written at once.
        until_written(dir.path(), false).await;
        let first_written = Instant::now();
        board.set(0, standings(true));
        changed.send(()).expect("writer listens");
        tokio::time::sleep_until(first_written + STANDINGS_REST - Duration::from_millis(200)).await;
        assert_eq!(
            written_finished(dir.path()),
            Some(false),
            "rewritten before the rest was over"
        );
        tokio::time::sleep_until(first_written + STANDINGS_REST + Duration::from_millis(200)).await;
        until_written(dir.path(), true).await;
        // The league stops right after a change: its state is written without waiting out the
        // rest, and the writer ends.
        board.set(0, standings(false));
        changed.send(()).expect("writer listens");
        drop(changed);
        let stopped = Instant::now();
        tokio::time::timeout(Duration::from_millis(500), writer)
            .await
            .expect("the writer ends once the league stops")
            .expect("writer task");
        assert!(stopped.elapsed() < STANDINGS_REST);
        assert_eq!(written_finished(dir.path()), Some(false));
    }
}

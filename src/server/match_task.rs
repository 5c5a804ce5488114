//! One match from claimed to written: journal its start, run its referee, write its output
//! (journal `finished` entry, record file, games.jsonl line) and hand the scheduler a typed
//! result. The scheduler only decides what starts when.

use std::sync::Arc;

use chrono::Local;
use tokio_util::sync::CancellationToken;

use crate::game::{EndReason, Side};
use crate::game_line::GameLine;
use crate::journal::JournalEntry;

use super::events::Events;
use super::journaling::{MoveJournal, SharedJournal};
use super::match_spec::MatchSpec;
use super::output::Output;
use super::referee::{
    run_journaled_match, FinishedGame, MatchJournaling, RefereeSettings, ResumePoint,
};
use super::registry::{ClaimedMatch, MatchSlot};
use super::report::GameSummary;

/// Everything a match needs besides its claim in the registry.
pub struct MatchPlan {
    /// The tournament's index in the scheduler.
    pub tournament: usize,
    pub spec: MatchSpec,
    pub settings: RefereeSettings,
    /// Where it resumes after a crash, if it was cut off by one.
    pub resume: Option<ResumePoint>,
    /// Opening moves played before the first turn.
    pub opening: Vec<String>,
    pub journal: SharedJournal,
    pub output: Arc<Output>,
    /// Where the game's start and moves are told.
    pub events: Events,
    /// Keep the match's slot until the scheduler has counted a loss by a fault (see
    /// [`MatchDone::slot`]).
    pub hold_slot_on_fault: bool,
    pub stop: CancellationToken,
}

/// Plays a claimed match to its end and writes its output.
pub async fn play(claimed: ClaimedMatch, plan: MatchPlan) -> MatchDone {
    let ClaimedMatch {
        links,
        inbox,
        door,
        slot,
    } = claimed;
    let MatchPlan {
        tournament,
        spec,
        settings,
        resume,
        opening,
        journal,
        output,
        events,
        hold_slot_on_fault,
        stop,
    } = plan;
    let id = spec.match_id.clone();
    let time = resume.as_ref().map_or_else(Local::now, |r| r.started);
    // Written behind, like the moves: the one journal writer keeps queue order, so no move of
    // this game can reach the disk before it, and a crash that loses it loses the game's moves
    // too (it is then replayed from the start). Waiting for it would hold every game's start
    // back by a group commit.
    journal.append_behind(JournalEntry::Started {
        id: id.clone(),
        match_id: id.clone(),
        time: time.to_rfc3339(),
    });
    let journaling = MatchJournaling {
        opening,
        resume,
        journal: Some(MoveJournal {
            journal: journal.clone(),
            id: Arc::from(id.as_str()),
        }),
        events,
    };
    let finished =
        run_journaled_match(spec, settings, links, inbox, Some(&door), stop, journaling).await;
    let slot = match &finished {
        Some(game)
            if hold_slot_on_fault && lost_by_fault(game.outcome.winner, game.outcome.reason) =>
        {
            Some(slot)
        }
        _ => {
            // Free the players for their next games while the output is written.
            drop(slot);
            None
        }
    };
    let game = match finished {
        Some(game) => write_game_output(output, journal, id.clone(), game).await,
        None => None,
    };
    MatchDone {
        tournament,
        id,
        game,
        slot,
    }
}

/// What a referee task hands back to the scheduler: the finished game with its games.jsonl
/// line, already written (each match task writes its own output, so games that end together
/// are written in parallel rather than one after another by the scheduler).
pub struct MatchDone {
    pub tournament: usize,
    pub id: String,
    pub game: Option<(GameSummary, Arc<GameLine>)>,
    /// Held for a game lost by a fault (timeout, illegal move) until the scheduler has counted
    /// it: its players' slots stay taken, so no next game starts with a bot that this loss
    /// suspends.
    pub slot: Option<MatchSlot>,
}

/// Whether a game won by `winner` for `reason` was lost by a fault, which counts toward
/// `suspend_after_faults`.
pub fn lost_by_fault(winner: Option<Side>, reason: EndReason) -> bool {
    winner.is_some() && matches!(reason, EndReason::Timeout | EndReason::IllegalMove)
}

/// Finishes a game's output: journals it as finished (made durable on the journal's writer
/// thread, which keeps trying while the disk fails), then queues its record file and games.jsonl
/// line for the output writer, which writes them in finishing order and retries what fails.
/// Returns the game's summary and its games.jsonl line. `None` only if the blocking task itself
/// was lost (the runtime shutting down).
pub async fn write_game_output(
    output: Arc<Output>,
    journal: SharedJournal,
    id: String,
    game: FinishedGame,
) -> Option<(GameSummary, Arc<GameLine>)> {
    let summary = GameSummary::of(&game);
    // One copy of the line, shared by the journal entry, the output queue and the scheduler;
    // the finished game's moves move into it.
    let line = Arc::new(output.game_line(game));
    let entry = JournalEntry::Finished {
        id: id.clone(),
        record: line.clone(),
    };
    match tokio::task::spawn_blocking(move || journal.append_blocking(vec![entry])).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            // Only when the journal writer gave up as the server stops: the game is played
            // again (from its last saved move) at the next start.
            tracing::error!(match_id = %id, error = %e, "cannot journal the finished game");
        }
        Err(e) => {
            // Only a cancelled runtime gets here (shutting down): nothing to return.
            tracing::error!(match_id = %id, error = %e, "output task failed");
            return None;
        }
    }
    output.enqueue(line.clone());
    Some((summary, line))
}

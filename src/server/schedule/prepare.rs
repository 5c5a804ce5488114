//! The league at start: the journal opened and checked against the configuration, every
//! tournament's schedule and progress rebuilt from the journal and games.jsonl, and what a
//! crash cut short repaired or set to resume.

use std::collections::HashMap;

use chrono::{DateTime, Local};

use super::{PendingGame, TournamentState};
use crate::config::{Config, Format};
use crate::game_line::GameLine;
use crate::journal::{Journal, JournalEntry, JournalState, JOURNAL_FILE};
use crate::league::{fixed_schedule, ScheduledGame};
use crate::server::journaling::{fingerprint, SharedJournal};
use crate::server::output::Output;
use crate::server::referee::ResumePoint;
use crate::server::report::{ResumeReport, ServerError};

pub(super) fn scheduled_entry(tournament: &str, g: &ScheduledGame) -> JournalEntry {
    JournalEntry::Scheduled {
        id: g.id.clone(),
        tournament: tournament.to_string(),
        round: g.round,
        first: g.first.clone(),
        second: g.second.clone(),
    }
}

/// Opens the journal in `out_dir`, refuses a configuration that differs from the one it was
/// started with, builds every tournament's schedule and progress from the journal and
/// games.jsonl, repairs what a crash cut short, and journals anything new (the fingerprint,
/// scheduled games, Swiss rounds and byes). Blocking: call from `spawn_blocking`.
pub fn prepare_league(
    config: &Config,
    output: &Output,
) -> Result<(SharedJournal, Vec<TournamentState>, ResumeReport), ServerError> {
    let path = config.server.out_dir.join(JOURNAL_FILE);
    let (journal, state) = Journal::open(&path)?;
    let mut report = ResumeReport {
        dropped_torn_line: state.dropped_torn_line.is_some(),
        ..ResumeReport::default()
    };
    if let Some(line) = state.dropped_torn_line {
        tracing::warn!(journal = %path.display(), line, "dropped a damaged last journal line (a crash during a write)");
    }
    let print = fingerprint(config);
    state.check_config(&print)?;
    let journal = SharedJournal::with_health(journal, output.health().clone());
    let mut entries = Vec::new();
    if state.config.is_none() {
        entries.push(print.entry());
    }
    let jsonl: HashMap<String, GameLine> = output
        .read_games()
        .into_iter()
        .map(|line| (line.match_id.clone(), line))
        .collect();
    let mut tournaments = Vec::new();
    for t in &config.tournaments {
        let mut ts = TournamentState::new(t.clone());
        ts.suspensions = state
            .suspensions
            .iter()
            .filter(|(bot, _)| t.bots.contains(bot))
            .map(|(bot, n)| (bot.clone(), *n))
            .collect();
        if t.format == Format::Swiss {
            load_swiss(&mut ts, &state, &jsonl, &mut entries);
        } else {
            let schedule = fixed_schedule(&t.name, t.format, &t.bots, t.games_per_pairing)
                .map_err(|e| ServerError::Unsupported(e.to_string()))?;
            ts.round = schedule.iter().map(|g| g.round).max().unwrap_or(0);
            for g in &schedule {
                if state.game(&g.id).is_none() {
                    entries.push(scheduled_entry(&t.name, g));
                }
            }
            ts.games = schedule;
            take_finished(&mut ts, &state, &jsonl, &mut entries);
        }
        entries.extend(ts.next_swiss_round());
        // What is left to play, from the journal's moves where there are some.
        for g in &ts.games {
            if ts.finished.contains_key(&g.id) || ts.pending.iter().any(|p| p.game.id == g.id) {
                continue;
            }
            let resume = state.game(&g.id).and_then(|progress| {
                let time = progress.started.as_ref().map(|(_, time)| time.as_str())?;
                if progress.moves.is_empty() {
                    return None;
                }
                let started = DateTime::parse_from_rfc3339(time)
                    .map(|t| t.with_timezone(&Local))
                    .unwrap_or_else(|_| Local::now());
                Some(ResumePoint {
                    moves: progress.moves.clone(),
                    started,
                })
            });
            report.resumed += usize::from(resume.is_some());
            ts.pending.push(PendingGame {
                game: g.clone(),
                resume,
            });
        }
        report.finished += ts.done();
        tournaments.push(ts);
    }
    journal.append_blocking(entries)?;
    let finished_lines: Vec<GameLine> = tournaments
        .iter_mut()
        .flat_map(|t| std::mem::take(&mut t.recovered_lines))
        .collect();
    report.repaired = output
        .repair(&finished_lines)
        .map_err(|e| ServerError::Output(e.to_string()))?;
    Ok((journal, tournaments, report))
}

/// Marks the scheduled games of `ts` that the journal or games.jsonl hold as finished; a game
/// only games.jsonl holds (a crash between the two writes, or a journal started after it) is
/// journaled as finished too.
pub(super) fn take_finished(
    ts: &mut TournamentState,
    state: &JournalState,
    jsonl: &HashMap<String, GameLine>,
    entries: &mut Vec<JournalEntry>,
) {
    let ids: Vec<String> = ts.games.iter().map(|g| g.id.clone()).collect();
    for id in ids {
        if let Some(line) = state.game(&id).and_then(|p| p.finished.clone()) {
            ts.mark_finished(id, &line);
            ts.recovered_lines.push(line);
        } else if let Some(line) = jsonl.get(&id) {
            entries.push(JournalEntry::Finished {
                id: id.clone(),
                record: std::sync::Arc::new(line.clone()),
            });
            ts.mark_finished(id, line);
            ts.recovered_lines.push(line.clone());
        }
    }
}

/// Rebuilds a Swiss tournament from the journal: the rounds it holds, its byes, and the last
/// round paired again (pairing is deterministic) so that a round a crash cut off while it was
/// being journaled is completed.
pub(super) fn load_swiss(
    ts: &mut TournamentState,
    state: &JournalState,
    jsonl: &HashMap<String, GameLine>,
    entries: &mut Vec<JournalEntry>,
) {
    let name = ts.config.name.clone();
    ts.games = state
        .games
        .iter()
        .filter(|g| g.tournament == name)
        .map(|g| ScheduledGame {
            id: g.id.clone(),
            round: g.round,
            first: g.first.clone(),
            second: g.second.clone(),
        })
        .collect();
    ts.byes = state
        .byes
        .iter()
        .filter(|b| b.tournament == name)
        .map(|b| (b.round, b.bot.clone()))
        .collect();
    ts.round = ts.games.iter().map(|g| g.round).max().unwrap_or(0);
    ts.round = ts
        .round
        .max(ts.byes.iter().map(|(r, _)| *r).max().unwrap_or(0));
    take_finished(ts, state, jsonl, entries);
    if ts.round == 0 {
        return;
    }
    let round = ts.round;
    let Some(paired) = ts.pair_swiss_round(round) else {
        return;
    };
    if let Some(bot) = paired.bye {
        if !ts.byes.iter().any(|(r, _)| *r == round) {
            entries.push(JournalEntry::Bye {
                tournament: name.clone(),
                round,
                bot: bot.clone(),
            });
            ts.byes.push((round, bot));
        }
    }
    for g in paired.games {
        match ts.games.iter().find(|x| x.id == g.id) {
            Some(existing) if existing != &g => {
                tracing::warn!(id = %g.id, "the journaled pairing differs from the regenerated one; keeping the journal's");
            }
            Some(_) => {}
            None => {
                entries.push(scheduled_entry(&name, &g));
                ts.games.push(g);
            }
        }
    }
}

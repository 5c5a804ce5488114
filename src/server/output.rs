//! What a finished game leaves on disk: its contest record file under `out_dir/records/` and one
//! line in `out_dir/games.jsonl` (docs/leagues.md), both written so that a crash never leaves half a
//! file or half a line.
//!
//! The record text and its file name come from `crate::record`; the file writes from
//! `crate::atomic_file`.
//!
//! Finishing a game is idempotent across crashes: the journal's `finished` entry (holding the
//! whole games.jsonl object, record file name included) is made durable first, then the record
//! file is created and the games.jsonl line appended, both left to the system to flush (an
//! fsync each would cost more than the game's moves at a thousand games at once). On restart,
//! [`Output::repair`] redoes from the journal whatever a crash lost or cut short (a missing or
//! partial record file, a missing or torn line), so every finished game has exactly one
//! complete record file and one games.jsonl line. When the server stops it flushes the folder
//! ([`Output::flush_to_disk`]).

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use crate::atomic_file::{append_line, create_new_file, sync_file_system, write_atomically, Flush};
use crate::config::RecordEncoding;
use crate::game_line::{GameLine, LineResult};
use crate::journal::JournalEntry;
use crate::record::{Record, RecordResult};

use super::journaling::SharedJournal;
use super::referee::FinishedGame;

/// Why a game's output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    #[error(transparent)]
    File(#[from] crate::atomic_file::AtomicFileError),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    #[error("{0}: no free record file name")]
    NoRecordName(PathBuf),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes finished games under `out_dir`.
#[derive(Debug)]
pub struct Output {
    out_dir: PathBuf,
    encoding: RecordEncoding,
    event: String,
    place: String,
    /// Serialises appends to games.jsonl between referees.
    append_lock: Mutex<()>,
    /// Record file names chosen by games being finished now and not yet created (games that
    /// end together are finished in parallel and may want the same name).
    names_in_flight: Mutex<HashSet<PathBuf>>,
}

impl Output {
    pub fn new(out_dir: PathBuf, encoding: RecordEncoding, event: String, place: String) -> Output {
        Output {
            out_dir,
            encoding,
            event,
            place,
            append_lock: Mutex::new(()),
            names_in_flight: Mutex::new(HashSet::new()),
        }
    }

    pub fn games_path(&self) -> PathBuf {
        self.out_dir.join("games.jsonl")
    }

    pub fn records_dir(&self) -> PathBuf {
        self.out_dir.join("records")
    }

    /// The games of games.jsonl, in file order. A line a crash cut short, or any line that is
    /// not a game, is skipped.
    pub fn read_games(&self) -> Vec<GameLine> {
        GameLine::read_file(&self.games_path()).collect()
    }

    /// The games.jsonl line of a finished game whose record file is `record_name`.
    pub fn game_line(game: &FinishedGame, record_name: &str) -> GameLine {
        let spec = &game.spec;
        GameLine {
            match_id: spec.match_id.clone(),
            tournament: spec.tournament.clone(),
            game: spec.game,
            first: spec.players[0].clone(),
            second: spec.players[1].clone(),
            result: LineResult::of(&game.outcome),
            reason: game.outcome.reason,
            moves: game.moves.clone(),
            think_ms: game.think_ms.clone(),
            lag_ms: game.lag_ms.clone(),
            rules: Value::clone(&spec.rules),
            clock: spec.clock,
            started: game.started.to_rfc3339(),
            finished: game.finished.to_rfc3339(),
            record: record_name.to_string(),
        }
    }

    /// Finishes a game: journals it as finished (with its games.jsonl object, which names the
    /// record file it is about to get), writes the record file, appends the games.jsonl line.
    /// Returns the games.jsonl object. Blocking (fsync): call from `spawn_blocking`, one game
    /// at a time (the scheduler does).
    pub fn finish_game(
        &self,
        journal: &SharedJournal,
        id: &str,
        game: &FinishedGame,
    ) -> Result<GameLine, OutputError> {
        let records = self.records_dir();
        fs::create_dir_all(&records).map_err(io_error(&records))?;
        let record = record_of(game, &self.event, &self.place);
        let path = self.reserve_record_path(&record, &records)?;
        let written = self.write_finished(journal, id, game, &record, &path);
        self.names_in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&path);
        written
    }

    /// The first record file name that neither exists nor is chosen by another game being
    /// finished now, kept for this game until `finish_game` is done.
    fn reserve_record_path(&self, record: &Record, records: &Path) -> Result<PathBuf, OutputError> {
        let mut in_flight = self
            .names_in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let path = record
            .unused_paths_in(records)
            .find(|p| !in_flight.contains(p))
            .ok_or_else(|| OutputError::NoRecordName(records.to_path_buf()))?;
        in_flight.insert(path.clone());
        Ok(path)
    }

    fn write_finished(
        &self,
        journal: &SharedJournal,
        id: &str,
        game: &FinishedGame,
        record: &Record,
        path: &Path,
    ) -> Result<GameLine, OutputError> {
        let record_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let line = Output::game_line(game, &record_name);
        journal.append_blocking(vec![JournalEntry::Finished {
            id: id.to_string(),
            record: Box::new(line.clone()),
        }])?;
        let bytes = record.encode(self.encoding)?;
        if let Err(e) = create_new_file(path, &bytes) {
            // Someone else made a file of that name since it was chosen: the journal names this
            // one for the game, so it gets the game's record.
            tracing::warn!(error = %e, "record file name taken; replacing it");
            write_atomically(path, &bytes)?;
        }
        self.append_line(&line, Flush::Later)?;
        Ok(line)
    }

    fn append_line(&self, line: &GameLine, flush: Flush) -> Result<(), OutputError> {
        let json = line.to_text();
        let _guard = self.append_lock.lock().unwrap_or_else(|e| e.into_inner());
        append_line(&self.games_path(), &json, flush)?;
        Ok(())
    }

    /// Flushes everything written under `out_dir` to disk (the server calls it as it stops, so
    /// that a league that ended cleanly needs no repair after a power cut). Blocking.
    pub fn flush_to_disk(&self) -> Result<(), OutputError> {
        Ok(sync_file_system(&self.out_dir)?)
    }

    /// Completes what a crash cut short for the finished games `finished` (games.jsonl
    /// lines as the journal holds them): a missing or partial record file is written again from
    /// the object, a missing games.jsonl line appended, and games.jsonl rewritten (atomically)
    /// without repeated lines of one match or lines a crash cut short. Returns how many things
    /// were repaired. Blocking.
    pub fn repair(&self, finished: &[GameLine]) -> Result<usize, OutputError> {
        let mut repaired = 0;
        let mut lines = self.read_games();
        let mut seen = HashSet::new();
        // Lines that are not game objects (a line a crash cut short) are dropped too.
        let before = fs::read_to_string(self.games_path())
            .map(|text| text.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0);
        lines.retain(|l| seen.insert(l.match_id.clone()));
        if lines.len() != before {
            let mut text = String::new();
            for l in &lines {
                text.push_str(&l.to_text());
                text.push('\n');
            }
            write_atomically(&self.games_path(), text.as_bytes())?;
            repaired += before - lines.len();
        }
        let records = self.records_dir();
        for line in finished {
            let id = line.match_id.as_str();
            let path = records.join(&line.record);
            if !line.record.is_empty() {
                if let Some(record) = record_of_line(line, &self.event, &self.place) {
                    // Missing, or cut short by a crash before the system flushed it.
                    let bytes = record.encode(self.encoding)?;
                    if fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
                        fs::create_dir_all(&records).map_err(io_error(&records))?;
                        write_atomically(&path, &bytes)?;
                        repaired += 1;
                    }
                }
            }
            if !seen.contains(id) {
                self.append_line(line, Flush::Now)?;
                seen.insert(id.to_string());
                repaired += 1;
            }
        }
        Ok(repaired)
    }
}

/// The contest record of a games.jsonl line (to write a record file a crash prevented), or
/// `None` when its start time does not read.
pub fn record_of_line(line: &GameLine, event: &str, place: &str) -> Option<Record> {
    let played_at = chrono::DateTime::parse_from_rfc3339(&line.started)
        .ok()?
        .naive_local();
    Some(Record {
        game: line.game,
        first: line.first.clone(),
        second: line.second.clone(),
        result: RecordResult::from_winner(line.winner()),
        played_at,
        place: place.to_string(),
        event: event.to_string(),
        moves: line.moves.clone(),
        rules: line.rules.clone(),
    })
}

/// The contest record of a finished game.
pub fn record_of(game: &FinishedGame, event: &str, place: &str) -> Record {
    Record {
        game: game.spec.game,
        first: game.spec.players[0].clone(),
        second: game.spec.players[1].clone(),
        result: RecordResult::from_outcome(&game.outcome),
        played_at: game.started.naive_local(),
        place: place.to_string(),
        event: event.to_string(),
        moves: game.moves.clone(),
        rules: Value::clone(&game.spec.rules),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{EndReason, GameId, Outcome, Side};
    use crate::protocol::ClockSpec;
    use crate::server::match_spec::MatchSpec;

    fn hex_game(match_id: &str) -> FinishedGame {
        let mut game = FinishedGame::forfeit(
            MatchSpec {
                match_id: match_id.into(),
                tournament: "t".into(),
                game: GameId::Hex,
                rules: serde_json::json!({"swap": false}).into(),
                clock: ClockSpec::default(),
                players: ["red bot".into(), "blue bot".into()],
            },
            Some(Side::First),
        );
        game.outcome = Outcome::win(Side::First, EndReason::Resign);
        game.moves = vec!["F6".into(), "E7".into()];
        game.think_ms = vec![10, 20];
        game.lag_ms = vec![0, 1];
        game
    }

    fn output_in(dir: &Path) -> (Output, SharedJournal) {
        let output = Output::new(
            dir.to_path_buf(),
            RecordEncoding::Utf8,
            "ev".into(),
            "pl".into(),
        );
        let (journal, _) = crate::journal::Journal::open(&dir.join("journal.jsonl")).unwrap();
        (output, SharedJournal::new(journal))
    }

    fn schedule(journal: &SharedJournal, ids: &[&str]) {
        let entries: Vec<JournalEntry> = ids
            .iter()
            .map(|id| JournalEntry::Scheduled {
                id: id.to_string(),
                tournament: "t".into(),
                round: 1,
                first: "red bot".into(),
                second: "blue bot".into(),
            })
            .collect();
        journal.append_blocking(entries).unwrap();
    }

    #[test]
    fn a_game_leaves_a_record_one_line_and_a_journal_entry() {
        let dir = tempfile::tempdir().unwrap();
        let (output, journal) = output_in(dir.path());
        schedule(&journal, &["t-r1-g1", "t-r1-g2"]);
        let first = output
            .finish_game(&journal, "t-r1-g1", &hex_game("t-r1-g1"))
            .unwrap();
        let second = output
            .finish_game(&journal, "t-r1-g2", &hex_game("t-r1-g2"))
            .unwrap();
        let name = first.record.clone();
        assert_ne!(
            name, second.record,
            "a second record never replaces the first"
        );
        let text = fs::read_to_string(dir.path().join("records").join(&name)).unwrap();
        assert!(
            text.starts_with("{[HEX][red bot R][blue bot B][先手胜]"),
            "{text}"
        );
        assert!(text.contains(";R(F,6);B(E,7)}"), "{text}");
        let lines = output.read_games();
        assert_eq!(lines, vec![first.clone(), second]);
        assert_eq!(lines[0].think_ms, [10, 20]);
        assert_eq!(lines[0].reason, EndReason::Resign);
        let (_, state) = crate::journal::Journal::open(&dir.path().join("journal.jsonl")).unwrap();
        assert_eq!(state.game("t-r1-g1").unwrap().finished, Some(first));
    }

    #[test]
    fn games_finished_at_once_never_take_the_same_record_name() {
        let dir = tempfile::tempdir().unwrap();
        let (output, _journal) = output_in(dir.path());
        let records = output.records_dir();
        fs::create_dir_all(&records).unwrap();
        let record = record_of(&hex_game("t-r1-g1"), "ev", "pl");
        let first = output.reserve_record_path(&record, &records).unwrap();
        let second = output.reserve_record_path(&record, &records).unwrap();
        assert_ne!(
            first, second,
            "the first name is taken while its game is written"
        );
        assert_eq!(second, records.join(record.file_name_numbered(2)));
    }

    #[test]
    fn repair_restores_a_lost_or_partial_record_and_line_and_drops_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let (output, journal) = output_in(dir.path());
        schedule(&journal, &["t-r1-g1", "t-r1-g2"]);
        let first = output
            .finish_game(&journal, "t-r1-g1", &hex_game("t-r1-g1"))
            .unwrap();
        let second = output
            .finish_game(&journal, "t-r1-g2", &hex_game("t-r1-g2"))
            .unwrap();
        let record = output.records_dir().join(&second.record);
        let record_text = fs::read_to_string(&record).unwrap();
        let first_record = output.records_dir().join(&first.record);
        let first_text = fs::read_to_string(&first_record).unwrap();
        // A crash after the journal entry: no record file, no games.jsonl line for game 2,
        // and (as if appended twice) game 1's line repeated.
        fs::remove_file(&record).unwrap();
        // A power cut before the system wrote game 1's record file back: only part of it.
        fs::write(
            &first_record,
            &first_text.as_bytes()[..first_text.len() / 2],
        )
        .unwrap();
        // And a torn last line.
        let one = format!("{}\n", first.to_text());
        fs::write(output.games_path(), format!("{one}{one}{{\"match\":\"t-r")).unwrap();
        let repaired = output.repair(&[first.clone(), second.clone()]).unwrap();
        assert_eq!(repaired, 5);
        assert_eq!(output.read_games(), vec![first.clone(), second.clone()]);
        assert_eq!(fs::read_to_string(&record).unwrap(), record_text);
        assert_eq!(fs::read_to_string(&first_record).unwrap(), first_text);
        // Nothing left to repair.
        assert_eq!(output.repair(&[first, second]).unwrap(), 0);
    }
}

//! What a finished game leaves on disk: its contest record file under `out_dir/records/` and one
//! line in `out_dir/games.jsonl` (NOTATION.md), both written so that a crash never leaves half a
//! file or half a line.
//!
//! The record text and its file name come from `crate::record`; the crash-safe writes from
//! `crate::atomic_file` (temp file + rename for records, one durable write per games.jsonl line).

use std::collections::HashSet;
use std::fs;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::atomic_file::append_line_durably;
use crate::config::{ClockConfig, RecordEncoding};
use crate::record::{write_record, Record, RecordResult};

use super::referee::FinishedGame;

/// Why a game's output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    #[error(transparent)]
    File(#[from] crate::atomic_file::AtomicFileError),
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

/// One line of games.jsonl.
#[derive(Debug, Serialize)]
pub struct GameLine<'a> {
    #[serde(rename = "match")]
    pub match_id: &'a str,
    pub tournament: &'a str,
    pub game: &'a str,
    pub first: &'a str,
    pub second: &'a str,
    pub result: &'a str,
    pub reason: &'a str,
    pub moves: &'a [String],
    pub think_ms: &'a [u64],
    pub lag_ms: &'a [u64],
    pub rules: &'a serde_json::Value,
    pub clock: ClockLine,
    pub started: String,
    pub finished: String,
    pub record: &'a str,
}

/// The clock as games.jsonl keeps it (the protocol's form: `move_limit_ms` null for none).
#[derive(Debug, Serialize)]
pub struct ClockLine {
    pub initial_ms: u64,
    pub increment_ms: u64,
    pub move_limit_ms: Option<u64>,
}

impl From<&ClockConfig> for ClockLine {
    fn from(c: &ClockConfig) -> Self {
        let spec = c.spec();
        ClockLine {
            initial_ms: spec.initial_ms,
            increment_ms: spec.increment_ms,
            move_limit_ms: spec.move_limit_ms,
        }
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
}

impl Output {
    pub fn new(out_dir: PathBuf, encoding: RecordEncoding, event: String, place: String) -> Output {
        Output {
            out_dir,
            encoding,
            event,
            place,
            append_lock: Mutex::new(()),
        }
    }

    pub fn games_path(&self) -> PathBuf {
        self.out_dir.join("games.jsonl")
    }

    /// The match ids games.jsonl already holds (finished before a restart). A line a crash cut
    /// short is skipped.
    pub fn finished_matches(&self) -> HashSet<String> {
        let mut done = HashSet::new();
        let Ok(file) = fs::File::open(self.games_path()) else {
            return done;
        };
        for line in io::BufReader::new(file).lines().map_while(Result::ok) {
            if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&line) {
                if let Some(serde_json::Value::String(id)) = map.get("match") {
                    done.insert(id.clone());
                }
            }
        }
        done
    }

    /// Writes the record file, then the games.jsonl line; returns the record's file name.
    /// Blocking (fsync): call from `spawn_blocking`.
    pub fn write_game(&self, game: &FinishedGame) -> Result<String, OutputError> {
        let records = self.out_dir.join("records");
        fs::create_dir_all(&records).map_err(io_error(&records))?;
        let record = record_of(game, &self.event, &self.place);
        let path = write_record(&records, &record, self.encoding)?;
        let record_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let spec = &game.spec;
        let line = GameLine {
            match_id: &spec.match_id,
            tournament: &spec.tournament,
            game: spec.game.as_str(),
            first: &spec.players[0],
            second: &spec.players[1],
            result: game.outcome.result_str(),
            reason: game.outcome.reason.as_str(),
            moves: &game.moves,
            think_ms: &game.think_ms,
            lag_ms: &game.lag_ms,
            rules: &spec.rules,
            clock: ClockLine::from(&spec.clock),
            started: game.started.to_rfc3339(),
            finished: game.finished.to_rfc3339(),
            record: &record_name,
        };
        let json = serde_json::to_string(&line).map_err(|e| OutputError::Io {
            path: self.games_path(),
            source: io::Error::other(e),
        })?;
        let _guard = self.append_lock.lock().unwrap_or_else(|e| e.into_inner());
        append_line_durably(&self.games_path(), &json)?;
        Ok(record_name)
    }
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
        rules: game.spec.rules.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClockConfig;
    use crate::game::{EndReason, GameId, Outcome, Side};
    use crate::server::referee::MatchSpec;

    fn hex_game(match_id: &str) -> FinishedGame {
        let mut game = FinishedGame::forfeit(
            MatchSpec {
                match_id: match_id.into(),
                tournament: "t".into(),
                game: GameId::Hex,
                rules: serde_json::json!({"swap": false}),
                clock: ClockConfig::default(),
                players: ["red bot".into(), "blue bot".into()],
            },
            Some(Side::First),
        );
        game.outcome = Outcome::win(Side::First, EndReason::Resign);
        game.moves = vec!["F6".into(), "E7".into()];
        game.movers = vec![Side::First, Side::Second];
        game.think_ms = vec![10, 20];
        game.lag_ms = vec![0, 1];
        game
    }

    #[test]
    fn a_game_leaves_a_record_and_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let output = Output::new(
            dir.path().to_path_buf(),
            RecordEncoding::Utf8,
            "ev".into(),
            "pl".into(),
        );
        let name = output.write_game(&hex_game("t-r1-g1")).unwrap();
        let again = output.write_game(&hex_game("t-r1-g2")).unwrap();
        assert_ne!(name, again, "a second record never replaces the first");
        let text = fs::read_to_string(dir.path().join("records").join(&name)).unwrap();
        assert!(
            text.starts_with("{[HEX][red bot R][blue bot B][先手胜]"),
            "{text}"
        );
        assert!(text.contains(";R(F,6);B(E,7)}"), "{text}");
        let lines: Vec<serde_json::Value> = fs::read_to_string(output.games_path())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["record"], name.as_str());
        assert_eq!(lines[0]["think_ms"], serde_json::json!([10, 20]));
        assert_eq!(lines[0]["reason"], "resign");
        let done = output.finished_matches();
        assert!(done.contains("t-r1-g1") && done.contains("t-r1-g2"));
    }
}

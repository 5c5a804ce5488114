//! One line of `out_dir/games.jsonl` (docs/leagues.md): the typed `GameLine` that the server writes
//! and that the journal, the output repair and the standings read back. The one type of that
//! file format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock_settings::ClockSpec;
use crate::game::{EndReason, GameId, Outcome, Side};

/// A finished game as games.jsonl keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameLine {
    #[serde(rename = "match")]
    pub match_id: String,
    pub tournament: String,
    pub game: GameId,
    /// The first side's bot.
    pub first: String,
    pub second: String,
    pub result: LineResult,
    pub reason: EndReason,
    /// Move texts, ply 1 first.
    pub moves: Vec<String>,
    /// Think time of each move, ply 1 first (the mover of each: `GameId::mover_of_ply`).
    pub think_ms: Vec<u64>,
    pub lag_ms: Vec<u64>,
    /// Every rule option in force.
    pub rules: Value,
    pub clock: ClockSpec,
    /// RFC 3339 times.
    pub started: String,
    pub finished: String,
    /// The record file's name under `records/` (empty if it could not be written).
    pub record: String,
}

/// `first`, `second` or `draw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineResult {
    First,
    Second,
    Draw,
}

impl LineResult {
    /// As games.jsonl writes it: `first`, `second` or `draw`.
    pub fn as_str(self) -> &'static str {
        match self {
            LineResult::First => "first",
            LineResult::Second => "second",
            LineResult::Draw => "draw",
        }
    }

    pub fn of(outcome: &Outcome) -> LineResult {
        match outcome.winner {
            Some(Side::First) => LineResult::First,
            Some(Side::Second) => LineResult::Second,
            None => LineResult::Draw,
        }
    }

    /// The winning side, `None` for a draw.
    pub fn winner(self) -> Option<Side> {
        match self {
            LineResult::First => Some(Side::First),
            LineResult::Second => Some(Side::Second),
            LineResult::Draw => None,
        }
    }
}

/// A games.jsonl line that is not a game: names the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("games.jsonl line: {0}")]
pub struct GameLineError(String);

impl GameLine {
    /// Reads one line (or an already parsed JSON value) of games.jsonl.
    pub fn from_json(value: &Value) -> Result<GameLine, GameLineError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            GameLineError(if e.path().to_string() == "." {
                e.inner().to_string()
            } else {
                format!("{}: {}", e.path(), e.inner())
            })
        })
    }

    /// The games of a games.jsonl file, in file order, read as they are needed. A missing file
    /// has none; a line a crash cut short, or any line that is not a game, is skipped.
    pub fn read_file(path: &std::path::Path) -> impl Iterator<Item = GameLine> {
        let lines = std::fs::File::open(path)
            .ok()
            .map(|file| std::io::BufRead::lines(std::io::BufReader::new(file)));
        lines
            .into_iter()
            .flatten()
            .map_while(Result::ok)
            .filter_map(|line| GameLine::from_text(&line).ok())
    }

    /// Reads one line of games.jsonl text.
    pub fn from_text(line: &str) -> Result<GameLine, GameLineError> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| GameLineError(format!("not JSON: {e}")))?;
        GameLine::from_json(&value)
    }

    /// The line's text, without the newline.
    pub fn to_text(&self) -> String {
        // Only strings, numbers and JSON values: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn winner(&self) -> Option<Side> {
        self.result.winner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"match":"m1","tournament":"t","game":"hex","first":"a","second":"b","result":"first","reason":"connection","moves":["F6"],"think_ms":[5],"lag_ms":[0],"rules":{"swap":false},"clock":{"initial_ms":1000,"increment_ms":0,"move_limit_ms":null},"started":"2026-11-22T21:00:00+00:00","finished":"2026-11-22T21:01:00+00:00","record":"r.txt"}"#;

    #[test]
    fn a_line_round_trips_and_bad_fields_are_named() {
        let line = GameLine::from_text(LINE).unwrap();
        assert_eq!(line.game, GameId::Hex);
        assert_eq!(line.winner(), Some(Side::First));
        assert_eq!(line.to_text(), LINE);
        let bad = LINE.replace("\"first\",\"reason\"", "\"won\",\"reason\"");
        let err = GameLine::from_text(&bad).unwrap_err().to_string();
        assert!(err.contains("result"), "{err}");
        let err = GameLine::from_text("{\"match\":\"m1\"}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("tournament"), "{err}");
    }
}

//! What a finished game leaves on disk: its contest record file under `out_dir/records/` and one
//! line in `out_dir/games.jsonl` (NOTATION.md), both written so that a crash never leaves half a
//! file or half a line.
//!
//! Until the shared records module (`crate::record`, `crate::atomic_file`) lands, the record text
//! and the crash-safe writes are done by the small functions at the bottom of this file
//! (`record_text`, `write_new_file`, `append_line`): the only three places to switch over.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::config::{ClockConfig, RecordEncoding};
use crate::game::Side;

use super::referee::FinishedGame;

/// Why a game's output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
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
        let (name, text) = record_text(game, &self.event, &self.place);
        let bytes = match self.encoding {
            RecordEncoding::Utf8 => text.into_bytes(),
            RecordEncoding::Gb2312 => encoding_rs::GB18030.encode(&text).0.into_owned(),
        };
        let record_name = write_new_file(&records, &name, &bytes)?;
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
        append_line(&self.games_path(), &json)?;
        Ok(record_name)
    }
}

/// A record file's name and text (NOTATION.md, "Records").
pub fn record_text(game: &FinishedGame, event: &str, place: &str) -> (String, String) {
    let spec = &game.spec;
    let g = spec.game;
    let c1 = g.colour_letter(Side::First);
    let c2 = g.colour_letter(Side::Second);
    let result = match game.outcome.winner {
        Some(Side::First) => "先手胜",
        Some(Side::Second) => "后手胜",
        None => "平局",
    };
    let date = game.started.format("%Y.%m.%d %H:%M").to_string();
    let file_date = game.started.format("%Y.%m.%d %H.%M").to_string();
    let mut text = format!(
        "{{[{}][{} {c1}][{} {c2}][{result}][{date} {place}][{event}]",
        g.record_code(),
        spec.players[0],
        spec.players[1]
    );
    for (mv, side) in game.moves.iter().zip(&game.movers) {
        let colour = g.colour_letter(*side);
        for part in mv.split(',') {
            text.push(';');
            text.push(colour);
            text.push_str(&record_move(part));
        }
    }
    text.push('}');
    let name = format!(
        "{}-{} {c1} vs {} {c2}-{result}-{file_date} {place}-{event}.txt",
        g.record_code(),
        spec.players[0],
        spec.players[1]
    );
    let name: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | '\0') {
                '_'
            } else {
                c
            }
        })
        .collect();
    (name, text)
}

/// `B2xE5` → `(B,2)x(E,5)`: every point (a letter followed by digits) becomes `(L,N)`; other
/// characters are kept.
fn record_move(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let digits = chars[i + 1..]
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .count();
        if c.is_ascii_alphabetic() && digits > 0 {
            let number: String = chars[i + 1..i + 1 + digits].iter().collect();
            out.push_str(&format!("({},{number})", c.to_ascii_uppercase()));
            i += 1 + digits;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Creates `dir/name` (or `name` with ` (2)`, ` (3)` ... before `.txt` if taken) atomically:
/// temp file, fsync, hard link to the final name (never replacing a file), fsync of the folder.
fn write_new_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<String, OutputError> {
    let temp = dir.join(format!(".tmp-{}-{}", std::process::id(), unique()));
    {
        let mut file = fs::File::create(&temp).map_err(io_error(&temp))?;
        file.write_all(bytes).map_err(io_error(&temp))?;
        file.sync_all().map_err(io_error(&temp))?;
    }
    let stem = name.strip_suffix(".txt").unwrap_or(name);
    for n in 1..10_000u32 {
        let candidate = if n == 1 {
            name.to_string()
        } else {
            format!("{stem} ({n}).txt")
        };
        let path = dir.join(&candidate);
        match fs::hard_link(&temp, &path) {
            Ok(()) => {
                let _ = fs::remove_file(&temp);
                sync_dir(dir);
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                let _ = fs::remove_file(&temp);
                return Err(OutputError::Io { path, source: e });
            }
        }
    }
    let _ = fs::remove_file(&temp);
    Err(OutputError::Io {
        path: dir.join(name),
        source: io::Error::other("no free file name"),
    })
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Appends `line` and a `\n` in one write, then fsyncs. If the file does not end with `\n`
/// (a crash cut the last line short), a `\n` goes first so the new line stands alone.
fn append_line(path: &Path, line: &str) -> Result<(), OutputError> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    let mut bytes = Vec::with_capacity(line.len() + 2);
    if len > 0 {
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))
            .map_err(io_error(path))?;
        file.read_exact(&mut last).map_err(io_error(path))?;
        if last[0] != b'\n' {
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes).map_err(io_error(path))?;
    file.sync_all().map_err(io_error(path))?;
    if len == 0 {
        if let Some(parent) = path.parent() {
            sync_dir(parent);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_become_record_coordinates() {
        assert_eq!(record_move("J10"), "(J,10)");
        assert_eq!(record_move("B2xE5"), "(B,2)x(E,5)");
        assert_eq!(record_move("G7-G8+B3"), "(G,7)-(G,8)+(B,3)");
        assert_eq!(record_move("A1xA3xC3+B3"), "(A,1)x(A,3)x(C,3)+(B,3)");
    }

    #[test]
    fn appended_lines_stand_alone_after_a_cut_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("games.jsonl");
        fs::write(&path, "{\"match\":\"a\"}\n{\"mat").unwrap();
        append_line(&path, "{\"match\":\"b\"}").unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"match\":\"a\"}\n{\"mat\n{\"match\":\"b\"}\n");
    }

    #[test]
    fn new_files_never_replace_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_new_file(dir.path(), "x.txt", b"one").unwrap();
        let b = write_new_file(dir.path(), "x.txt", b"two").unwrap();
        assert_eq!(a, "x.txt");
        assert_eq!(b, "x (2).txt");
        assert_eq!(fs::read(dir.path().join(a)).unwrap(), b"one");
        assert_eq!(fs::read(dir.path().join(b)).unwrap(), b"two");
    }
}

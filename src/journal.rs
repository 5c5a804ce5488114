//! The crash-safe league journal `out_dir/journal.jsonl`: an append-only file of JSON lines
//! (config fingerprint, scheduled games, starts, every move with clocks, finished games, byes),
//! each appended with one write and `fsync`, and the reader that rebuilds the league's state
//! from it on restart.
//!
//! Only the last line may be damaged (a crash in the middle of an append): it is ignored and cut
//! off when the journal is reopened, so the next append starts on a fresh line. Damage anywhere
//! else is refused with its line number.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::atomic_file::{open_for_append, sync_created, AtomicFileError};

pub use crate::clock_settings::ClockSpec;
use crate::game_line::GameLine;

/// The journal's file name inside `out_dir`.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// The schedule-relevant settings of one tournament: what must not change between a crash and
/// the resumption, because the schedule, the games or their records depend on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentFingerprint {
    pub name: String,
    pub game: String,
    pub format: String,
    pub bots: Vec<String>,
    pub games_per_pairing: u32,
    /// Swiss rounds; `None` for the other formats.
    pub rounds: Option<u32>,
    /// Written as arena.toml has it (`move_limit_ms` 0 for none).
    #[serde(with = "crate::clock_settings::table")]
    pub clock: ClockSpec,
    /// The rule options table, as JSON.
    pub rules: Value,
    /// Openings the games start from (left out when there are none, so that journals written
    /// before openings existed keep their fingerprint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openings: Vec<String>,
}

/// The fingerprint of a whole configuration: its tournaments (sorted by name), their canonical
/// JSON (object keys sorted, no spaces) and a 64-bit FNV-1a hash of that text.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFingerprint {
    pub tournaments: Vec<TournamentFingerprint>,
    pub canonical: String,
    pub hash: String,
}

/// Sorts object keys recursively (independent of serde_json's map ordering feature).
fn canonical_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical_value(v))).collect();
            let mut out = serde_json::Map::new();
            for (k, v) in sorted {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical_value).collect()),
        other => other.clone(),
    }
}

/// Writes `value` with object keys in sorted order.
fn canonical_text(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            let parts: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_text(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical_text).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

impl ConfigFingerprint {
    pub fn new(mut tournaments: Vec<TournamentFingerprint>) -> ConfigFingerprint {
        tournaments.sort_by(|a, b| a.name.cmp(&b.name));
        for t in &mut tournaments {
            t.rules = canonical_value(&t.rules);
        }
        let value = serde_json::to_value(&tournaments).unwrap_or(Value::Null);
        let canonical = canonical_text(&value);
        let hash = format!("{:016x}", crate::hash::fnv1a64(canonical.as_bytes()));
        ConfigFingerprint {
            tournaments,
            canonical,
            hash,
        }
    }

    /// The journal entry that records this fingerprint.
    pub fn entry(&self) -> JournalEntry {
        JournalEntry::Config {
            hash: self.hash.clone(),
            tournaments: self.tournaments.clone(),
        }
    }

    /// What differs between the journal's fingerprint (`self`) and the config's, one clause per
    /// difference, e.g. `tournament hex-league: bots differ: journal has [a,b], config has
    /// [a,b,c]`. Empty when they are the same.
    pub fn differences(&self, config: &ConfigFingerprint) -> Vec<String> {
        let mut out = Vec::new();
        let by_name = |list: &[TournamentFingerprint]| -> BTreeMap<String, TournamentFingerprint> {
            list.iter().map(|t| (t.name.clone(), t.clone())).collect()
        };
        let journal = by_name(&self.tournaments);
        let current = by_name(&config.tournaments);
        for name in journal.keys() {
            if !current.contains_key(name) {
                out.push(format!(
                    "tournament {name}: in the journal but not in the config"
                ));
            }
        }
        for (name, c) in &current {
            let Some(j) = journal.get(name) else {
                out.push(format!(
                    "tournament {name}: in the config but not in the journal"
                ));
                continue;
            };
            let mut field = |what: &str, plural: bool, old: String, new: String| {
                if old != new {
                    let verb = if plural { "differ" } else { "differs" };
                    out.push(format!(
                        "tournament {name}: {what} {verb}: journal has {old}, config has {new}"
                    ));
                }
            };
            field("game", false, j.game.clone(), c.game.clone());
            field("format", false, j.format.clone(), c.format.clone());
            field(
                "bots",
                true,
                format!("[{}]", j.bots.join(",")),
                format!("[{}]", c.bots.join(",")),
            );
            field(
                "games_per_pairing",
                false,
                j.games_per_pairing.to_string(),
                c.games_per_pairing.to_string(),
            );
            let rounds = |r: Option<u32>| r.map_or_else(|| "none".to_string(), |r| r.to_string());
            field("rounds", false, rounds(j.rounds), rounds(c.rounds));
            let clock = |c: &ClockSpec| {
                format!(
                    "initial_ms={} increment_ms={} move_limit_ms={}",
                    c.initial_ms,
                    c.increment_ms,
                    c.move_limit_ms.unwrap_or(0)
                )
            };
            field("clock", false, clock(&j.clock), clock(&c.clock));
            field(
                "rules",
                true,
                canonical_text(&j.rules),
                canonical_text(&c.rules),
            );
            if j.openings != c.openings {
                out.push(format!(
                    "tournament {name}: openings differ: journal has {} openings, config has {} (or other moves)",
                    j.openings.len(),
                    c.openings.len()
                ));
            }
        }
        out
    }
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JournalEntry {
    /// The configuration's fingerprint; written first.
    Config {
        hash: String,
        tournaments: Vec<TournamentFingerprint>,
    },
    /// A game was put on the schedule.
    Scheduled {
        id: String,
        tournament: String,
        round: u32,
        first: String,
        second: String,
    },
    /// A game started (or restarted after a resumption) as protocol match `match_id`.
    Started {
        id: String,
        match_id: String,
        /// RFC 3339.
        time: String,
    },
    /// Move `ply` (1-based) of a game, with both clocks' remaining time after it.
    Move {
        /// Shared with the referee that journals the game's moves (no copy per move).
        id: std::sync::Arc<str>,
        ply: u32,
        text: String,
        think_ms: u64,
        lag_ms: u64,
        first_clock_ms: u64,
        second_clock_ms: u64,
    },
    /// A game finished; `record` is its whole games.jsonl line.
    Finished {
        id: String,
        /// Shared with the output queue and the scheduler (no copy of the game's moves each).
        record: std::sync::Arc<GameLine>,
    },
    /// A Swiss bye: `bot` sits out `round` and scores a win.
    Bye {
        tournament: String,
        round: u32,
        bot: String,
    },
    /// `bot` was suspended for repeated faults (see `server.suspend_after_faults`).
    Suspended {
        bot: String,
        /// RFC 3339.
        time: String,
        why: String,
    },
}

impl JournalEntry {
    /// Appends the entry's line, its JSON and a newline, to `out`: the bytes
    /// [`Journal::write_entries`] writes for it. On an error `out` is left as it was.
    pub fn encode_line(&self, out: &mut Vec<u8>) -> Result<(), JournalError> {
        let start = out.len();
        // A move (one per move of every game) is written without serde_json's serializer.
        let encoded = if self.write_move_line(out) {
            Ok(())
        } else {
            serde_json::to_writer(&mut *out, self)
        };
        if let Err(e) = encoded {
            out.truncate(start);
            return Err(e.into());
        }
        out.push(b'\n');
        Ok(())
    }

    /// Writes a `move` entry's JSON (no newline), byte for byte what `serde_json` writes for it
    /// (a unit test compares them), and returns true; any other entry writes nothing and
    /// returns false.
    fn write_move_line(&self, out: &mut Vec<u8>) -> bool {
        let JournalEntry::Move {
            id,
            ply,
            text,
            think_ms,
            lag_ms,
            first_clock_ms,
            second_clock_ms,
        } = self
        else {
            return false;
        };
        MoveLine {
            id,
            ply: *ply,
            text,
            think_ms: *think_ms,
            lag_ms: *lag_ms,
            first_clock_ms: *first_clock_ms,
            second_clock_ms: *second_clock_ms,
        }
        .write_json(out);
        true
    }
}

/// A `move` entry by reference: what a referee journals at every move, encoded from its move
/// log without copying the move's text or the game's id into an entry of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveLine<'a> {
    pub id: &'a str,
    pub ply: u32,
    pub text: &'a str,
    pub think_ms: u64,
    pub lag_ms: u64,
    pub first_clock_ms: u64,
    pub second_clock_ms: u64,
}

impl MoveLine<'_> {
    /// Appends the line of the `move` entry with these fields, newline included: the same
    /// bytes [`JournalEntry::encode_line`] writes for it.
    pub fn encode_line(&self, out: &mut Vec<u8>) {
        self.write_json(out);
        out.push(b'\n');
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        use crate::json_out::{push_key, push_str, push_u64};
        out.extend_from_slice(b"{\"kind\":\"move\"");
        push_key(out, "id", false);
        push_str(out, self.id);
        push_key(out, "ply", false);
        push_u64(out, u64::from(self.ply));
        push_key(out, "text", false);
        push_str(out, self.text);
        for (key, value) in [
            ("think_ms", self.think_ms),
            ("lag_ms", self.lag_ms),
            ("first_clock_ms", self.first_clock_ms),
            ("second_clock_ms", self.second_clock_ms),
        ] {
            push_key(out, key, false);
            push_u64(out, value);
        }
        out.push(b'}');
    }
}

/// One journaled move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalMove {
    pub ply: u32,
    pub text: String,
    pub think_ms: u64,
    pub lag_ms: u64,
    pub first_clock_ms: u64,
    pub second_clock_ms: u64,
}

/// What the journal says about one scheduled game.
#[derive(Debug, Clone, PartialEq)]
pub struct GameProgress {
    pub id: String,
    pub tournament: String,
    pub round: u32,
    pub first: String,
    pub second: String,
    /// The latest start: (match id, RFC 3339 time).
    pub started: Option<(String, String)>,
    /// The moves so far, ply 1 first.
    pub moves: Vec<JournalMove>,
    /// The games.jsonl line once finished.
    pub finished: Option<GameLine>,
}

/// A Swiss bye as journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByeRecord {
    pub tournament: String,
    pub round: u32,
    pub bot: String,
}

/// The league state rebuilt from a journal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JournalState {
    /// The fingerprint the journal was started with.
    pub config: Option<ConfigFingerprint>,
    /// Every scheduled game, in schedule order.
    pub games: Vec<GameProgress>,
    pub byes: Vec<ByeRecord>,
    /// How many times each bot was suspended for repeated faults.
    pub suspensions: HashMap<String, u32>,
    /// The 1-based number of a damaged last line that was dropped, if any.
    pub dropped_torn_line: Option<usize>,
    index: HashMap<String, usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("journal {path}, line {line}: {what}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        what: String,
    },
    #[error("the configuration is not the one the journal was started with: {0}")]
    ConfigMismatch(String),
    #[error("journal: {0}")]
    File(#[from] AtomicFileError),
    #[error("journal entry cannot be written as JSON: {0}")]
    Encode(#[from] serde_json::Error),
}

impl JournalState {
    /// The game with schedule id `id`.
    pub fn game(&self, id: &str) -> Option<&GameProgress> {
        self.index.get(id).and_then(|&i| self.games.get(i))
    }

    /// Scheduled games not finished yet, in schedule order.
    pub fn unfinished(&self) -> impl Iterator<Item = &GameProgress> {
        self.games.iter().filter(|g| g.finished.is_none())
    }

    /// The games.jsonl lines of the finished games of `tournament`, in schedule order.
    pub fn finished_records<'a>(
        &'a self,
        tournament: &'a str,
    ) -> impl Iterator<Item = &'a GameLine> {
        self.games
            .iter()
            .filter(move |g| g.tournament == tournament)
            .filter_map(|g| g.finished.as_ref())
    }

    /// Checks that `config` is the configuration the journal was started with. A journal
    /// without a config entry accepts any (the caller then appends `config.entry()`).
    pub fn check_config(&self, config: &ConfigFingerprint) -> Result<(), JournalError> {
        let Some(journal) = &self.config else {
            return Ok(());
        };
        if journal.hash == config.hash {
            return Ok(());
        }
        let mut differences = journal.differences(config);
        if differences.is_empty() {
            differences.push(format!(
                "fingerprints differ: journal has {}, config has {}",
                journal.hash, config.hash
            ));
        }
        Err(JournalError::ConfigMismatch(differences.join("; ")))
    }

    fn game_mut(&mut self, id: &str) -> Result<&mut GameProgress, String> {
        let i = *self
            .index
            .get(id)
            .ok_or_else(|| format!("game {id:?} was never scheduled"))?;
        self.games
            .get_mut(i)
            .ok_or_else(|| format!("game {id:?} was never scheduled"))
    }

    /// Applies one entry; the error says why the entry cannot follow the ones before it.
    pub fn apply(&mut self, entry: JournalEntry) -> Result<(), String> {
        match entry {
            JournalEntry::Config { hash, tournaments } => {
                let fingerprint = ConfigFingerprint::new(tournaments);
                if fingerprint.hash != hash {
                    return Err(format!(
                        "config hash {hash} does not match its settings (hash {})",
                        fingerprint.hash
                    ));
                }
                match &self.config {
                    Some(first) if first.hash != fingerprint.hash => {
                        return Err(format!(
                            "a second config entry differs from the first: {}",
                            first.differences(&fingerprint).join("; ")
                        ))
                    }
                    Some(_) => {}
                    None => self.config = Some(fingerprint),
                }
            }
            JournalEntry::Scheduled {
                id,
                tournament,
                round,
                first,
                second,
            } => {
                let progress = GameProgress {
                    id: id.clone(),
                    tournament,
                    round,
                    first,
                    second,
                    started: None,
                    moves: Vec::new(),
                    finished: None,
                };
                if let Some(existing) = self.game(&id) {
                    let same = existing.tournament == progress.tournament
                        && existing.round == progress.round
                        && existing.first == progress.first
                        && existing.second == progress.second;
                    if !same {
                        return Err(format!("game {id:?} scheduled twice, differently"));
                    }
                } else {
                    self.index.insert(id, self.games.len());
                    self.games.push(progress);
                }
            }
            JournalEntry::Started { id, match_id, time } => {
                let game = self.game_mut(&id)?;
                if game.finished.is_some() {
                    return Err(format!("game {id:?} started after it finished"));
                }
                game.started = Some((match_id, time));
            }
            JournalEntry::Move {
                id,
                ply,
                text,
                think_ms,
                lag_ms,
                first_clock_ms,
                second_clock_ms,
            } => {
                let game = self.game_mut(&id)?;
                if game.finished.is_some() {
                    return Err(format!("game {id:?} has a move after it finished"));
                }
                if game.started.is_none() {
                    return Err(format!("game {id:?} has a move before it started"));
                }
                let next = game.moves.len() + 1;
                let ply_index = usize::try_from(ply).unwrap_or(usize::MAX);
                if ply == 0 || ply_index > next {
                    return Err(format!(
                        "game {id:?}: move {ply} does not follow move {}",
                        next - 1
                    ));
                }
                // A ply already journaled means the game was replayed from that point: the
                // later moves are superseded.
                game.moves.truncate(ply_index - 1);
                game.moves.push(JournalMove {
                    ply,
                    text,
                    think_ms,
                    lag_ms,
                    first_clock_ms,
                    second_clock_ms,
                });
            }
            JournalEntry::Finished { id, record } => {
                let game = self.game_mut(&id)?;
                if game.finished.is_some() {
                    return Err(format!("game {id:?} finished twice"));
                }
                game.finished = Some(std::sync::Arc::unwrap_or_clone(record));
            }
            JournalEntry::Bye {
                tournament,
                round,
                bot,
            } => {
                let bye = ByeRecord {
                    tournament,
                    round,
                    bot,
                };
                if !self.byes.contains(&bye) {
                    self.byes.push(bye);
                }
            }
            JournalEntry::Suspended { bot, .. } => {
                *self.suspensions.entry(bot).or_insert(0) += 1;
            }
        }
        Ok(())
    }

    /// Rebuilds the state from the bytes of a journal. Returns the state and the length of the
    /// intact prefix (shorter than `bytes` when a damaged last line was dropped), or the 1-based
    /// line number and what is wrong there.
    pub fn from_bytes(bytes: &[u8]) -> Result<(JournalState, usize), (usize, String)> {
        let mut state = JournalState::default();
        let mut start = 0;
        let mut line = 0;
        while start < bytes.len() {
            line += 1;
            let rest = bytes.get(start..).unwrap_or_default();
            let (text, end, terminated) = match rest.iter().position(|&b| b == b'\n') {
                Some(newline) => (
                    rest.get(..newline).unwrap_or_default(),
                    start + newline + 1,
                    true,
                ),
                None => (rest, bytes.len(), false),
            };
            let is_last = end >= bytes.len();
            if !terminated {
                // An append that never completed: drop it.
                state.dropped_torn_line = Some(line);
                return Ok((state, start));
            }
            match serde_json::from_slice::<JournalEntry>(text) {
                Ok(entry) => state.apply(entry).map_err(|what| (line, what))?,
                Err(_) if is_last => {
                    state.dropped_torn_line = Some(line);
                    return Ok((state, start));
                }
                Err(e) => return Err((line, format!("not a journal entry: {e}"))),
            }
            start = end;
        }
        Ok((state, bytes.len()))
    }
}

/// The journal file, open for appending.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    /// The length of the file's whole lines: a write that fails (a full disk) is cut back to
    /// it, so that no half line is left for the next write to run into.
    len: u64,
    /// The lines of the latest write, kept for the next one: a group of a thousand moves is
    /// about 100 KiB, and growing a fresh buffer to that size and freeing it each time showed
    /// in the server's profile (reallocations, and glibc consolidating its free lists on every
    /// free of a chunk that large).
    lines: Vec<u8>,
}

/// Most bytes the kept write buffer holds on to between writes.
const KEPT_LINES_BYTES: usize = 1 << 20;

impl Journal {
    /// Opens (creating if needed) the journal at `path`, rebuilds the state it records, and
    /// cuts off a damaged last line so the next append starts on a fresh line.
    pub fn open(path: &Path) -> Result<(Journal, JournalState), JournalError> {
        let io_error = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (mut file, existed) = open_for_append(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error)?;
        let (state, intact) =
            JournalState::from_bytes(&bytes).map_err(|(line, what)| JournalError::Corrupt {
                path: path.to_path_buf(),
                line,
                what,
            })?;
        let len = u64::try_from(intact).unwrap_or(u64::MAX);
        if intact < bytes.len() {
            file.set_len(len).map_err(io_error)?;
            file.sync_data().map_err(io_error)?;
        }
        if !existed {
            sync_created(&file, path)?;
        }
        Ok((
            Journal {
                file,
                path: path.to_path_buf(),
                len,
                lines: Vec::new(),
            },
            state,
        ))
    }

    /// Appends one entry as one line, in one write, and waits until it is on disk.
    pub fn append(&mut self, entry: &JournalEntry) -> Result<(), JournalError> {
        self.write_entry(entry)?;
        self.sync()
    }

    /// Appends one entry as one line, in one write, without waiting for the disk (`sync`
    /// makes every entry written so far durable: one fsync for a batch).
    pub fn write_entry(&mut self, entry: &JournalEntry) -> Result<(), JournalError> {
        self.write_entries(std::iter::once(entry))
    }

    /// Appends entries, one line each, in one write (a crash can cut only the last line,
    /// which the reader drops), without waiting for the disk.
    pub fn write_entries<'a>(
        &mut self,
        entries: impl IntoIterator<Item = &'a JournalEntry>,
    ) -> Result<(), JournalError> {
        let mut lines = std::mem::take(&mut self.lines);
        lines.clear();
        let mut written = Ok(());
        for entry in entries {
            if let Err(e) = entry.encode_line(&mut lines) {
                written = Err(e);
                break;
            }
        }
        if written.is_ok() {
            written = self.write_lines(&lines);
        }
        if lines.capacity() <= KEPT_LINES_BYTES {
            self.lines = lines;
        }
        written
    }

    /// Appends `lines`, whole lines as [`JournalEntry::encode_line`] and
    /// [`MoveLine::encode_line`] encode them, in one write (a crash can cut only the last
    /// line, which the reader drops), without waiting for the disk. A write that fails is cut
    /// back off the file.
    pub fn write_lines(&mut self, lines: &[u8]) -> Result<(), JournalError> {
        // A failed write whose cut-back failed too left part of a line: cut it now or write
        // nothing (a line written after it would be unreadable).
        let on_disk = self.file.metadata().map(|m| m.len()).unwrap_or(self.len);
        if on_disk != self.len {
            self.rollback(self.len)?;
        }
        match self.file.write_all(lines) {
            Ok(()) => {
                self.len += u64::try_from(lines.len()).unwrap_or(u64::MAX);
                Ok(())
            }
            Err(source) => {
                // Part of it may be in the file: cut it off (best effort; `rollback` is
                // tried again before the next write).
                let _ = self.rollback(self.len);
                Err(JournalError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// The length of the file's whole lines so far (to [`Journal::rollback`] to).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been written to the journal.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Cuts the file back to `len` bytes (a length [`Journal::len`] gave): what was written
    /// since is gone, to be written again. Used when a write or a sync failed, since after a
    /// failed sync the system may have dropped those pages, so they are not known to be on disk.
    pub fn rollback(&mut self, len: u64) -> Result<(), JournalError> {
        let io_error = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.set_len(len).map_err(io_error)?;
        self.len = len;
        Ok(())
    }

    /// Waits until every entry written so far is on disk.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.file.sync_data().map_err(|source| JournalError::Io {
            path: self.path.clone(),
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tournament(name: &str, bots: &[&str]) -> TournamentFingerprint {
        TournamentFingerprint {
            name: name.to_string(),
            game: "hex".to_string(),
            format: "round-robin".to_string(),
            bots: bots.iter().map(|s| s.to_string()).collect(),
            games_per_pairing: 2,
            rounds: None,
            clock: ClockSpec {
                initial_ms: 600_000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            rules: json!({"swap": false}),
            openings: Vec::new(),
        }
    }

    fn scheduled(id: &str) -> JournalEntry {
        JournalEntry::Scheduled {
            id: id.to_string(),
            tournament: "hex-league".to_string(),
            round: 1,
            first: "a".to_string(),
            second: "b".to_string(),
        }
    }

    fn started(id: &str) -> JournalEntry {
        JournalEntry::Started {
            id: id.to_string(),
            match_id: format!("m-{id}"),
            time: "2026-11-22T21:00:00Z".to_string(),
        }
    }

    fn mv(id: &str, ply: u32, text: &str) -> JournalEntry {
        JournalEntry::Move {
            id: id.into(),
            ply,
            text: text.to_string(),
            think_ms: 100 * u64::from(ply),
            lag_ms: 3,
            first_clock_ms: 600_000 - u64::from(ply),
            second_clock_ms: 599_000,
        }
    }

    /// A finished game's games.jsonl line: the first side won in `moves`.
    fn game_line(match_id: &str, moves: &[&str]) -> GameLine {
        GameLine::from_json(&json!({
            "match": match_id, "tournament": "hex-league", "game": "hex", "first": "a",
            "second": "b", "result": "first", "reason": "resign", "moves": moves,
            "think_ms": [], "lag_ms": [], "rules": {"swap": false},
            "clock": {"initial_ms": 600000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-22T21:00:00+00:00", "finished": "2026-11-22T21:01:00+00:00",
            "record": "",
        }))
        .unwrap()
    }

    fn write_all(path: &Path, entries: &[JournalEntry]) {
        let (mut journal, _) = Journal::open(path).unwrap();
        for e in entries {
            journal.append(e).unwrap();
        }
    }

    #[test]
    fn a_journal_reads_back_as_the_state_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let config = ConfigFingerprint::new(vec![tournament("hex-league", &["a", "b"])]);
        let record = game_line("m-g1", &["F6", "E7"]);
        write_all(
            &path,
            &[
                config.entry(),
                scheduled("g1"),
                scheduled("g2"),
                started("g1"),
                mv("g1", 1, "F6"),
                mv("g1", 2, "E7"),
                JournalEntry::Finished {
                    id: "g1".into(),
                    record: std::sync::Arc::new(record.clone()),
                },
                started("g2"),
                mv("g2", 1, "A1"),
                JournalEntry::Bye {
                    tournament: "s".into(),
                    round: 2,
                    bot: "c".into(),
                },
            ],
        );
        let text = fs_text(&path);
        assert_eq!(text.lines().count(), 10);
        assert!(text.lines().all(|l| l.starts_with("{\"kind\":")));
        let (_, state) = Journal::open(&path).unwrap();
        assert_eq!(state.config.as_ref().unwrap(), &config);
        assert!(state.check_config(&config).is_ok());
        assert_eq!(state.dropped_torn_line, None);
        let g1 = state.game("g1").unwrap();
        assert_eq!(g1.finished.as_ref(), Some(&record));
        assert_eq!(g1.moves.len(), 2);
        let g2 = state.game("g2").unwrap();
        assert_eq!(
            g2.started,
            Some(("m-g2".to_string(), "2026-11-22T21:00:00Z".to_string()))
        );
        assert_eq!(
            g2.moves,
            vec![JournalMove {
                ply: 1,
                text: "A1".into(),
                think_ms: 100,
                lag_ms: 3,
                first_clock_ms: 599_999,
                second_clock_ms: 599_000
            }]
        );
        let unfinished: Vec<&str> = state.unfinished().map(|g| g.id.as_str()).collect();
        assert_eq!(unfinished, ["g2"]);
        assert_eq!(state.finished_records("hex-league").count(), 1);
        assert_eq!(
            state.byes,
            vec![ByeRecord {
                tournament: "s".into(),
                round: 2,
                bot: "c".into()
            }]
        );
    }

    fn fs_text(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_off() {
        for torn in [
            "{\"kind\":\"move\",\"id\":\"g1\",\"pl",
            "{\"kind\":\"move\"\n",
            "\u{0}\u{0}\u{0}\n",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(JOURNAL_FILE);
            write_all(&path, &[scheduled("g1"), started("g1"), mv("g1", 1, "F6")]);
            let intact = fs_text(&path);
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap()
                .write_all(torn.as_bytes())
                .unwrap();
            let (mut journal, state) = Journal::open(&path).unwrap();
            assert_eq!(state.dropped_torn_line, Some(4), "{torn:?}");
            assert_eq!(state.game("g1").unwrap().moves.len(), 1);
            assert_eq!(fs_text(&path), intact, "the torn line is cut off");
            journal.append(&mv("g1", 2, "E7")).unwrap();
            drop(journal);
            let (_, state) = Journal::open(&path).unwrap();
            assert_eq!(state.dropped_torn_line, None);
            assert_eq!(state.game("g1").unwrap().moves.len(), 2);
        }
    }

    #[test]
    fn damage_before_the_last_line_is_refused_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        write_all(
            &path,
            &[
                scheduled("g1"),
                started("g1"),
                mv("g1", 1, "F6"),
                mv("g1", 2, "E7"),
            ],
        );
        let mut lines: Vec<String> = fs_text(&path).lines().map(String::from).collect();
        lines[2].truncate(10);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let err = Journal::open(&path).unwrap_err();
        assert!(
            matches!(err, JournalError::Corrupt { line: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("line 3"), "{err}");
        // The file is left as it was for a human to look at.
        assert_eq!(fs_text(&path), lines.join("\n") + "\n");
    }

    #[test]
    fn entries_that_cannot_follow_the_earlier_ones_are_refused() {
        let cases: Vec<(Vec<JournalEntry>, usize, &str)> = vec![
            (vec![mv("g9", 1, "F6")], 1, "never scheduled"),
            (
                vec![scheduled("g1"), mv("g1", 1, "F6")],
                2,
                "before it started",
            ),
            (
                vec![scheduled("g1"), started("g1"), mv("g1", 2, "F6")],
                3,
                "does not follow",
            ),
            (
                vec![
                    scheduled("g1"),
                    JournalEntry::Finished {
                        id: "g1".into(),
                        record: std::sync::Arc::new(game_line("m-g1", &[])),
                    },
                    JournalEntry::Finished {
                        id: "g1".into(),
                        record: std::sync::Arc::new(game_line("m-g1", &[])),
                    },
                ],
                3,
                "finished twice",
            ),
            (
                vec![
                    scheduled("g1"),
                    JournalEntry::Scheduled {
                        id: "g1".into(),
                        tournament: "hex-league".into(),
                        round: 1,
                        first: "b".into(),
                        second: "a".into(),
                    },
                ],
                2,
                "scheduled twice",
            ),
        ];
        for (entries, line, what) in cases {
            let mut bytes = Vec::new();
            for e in &entries {
                bytes.extend(serde_json::to_vec(e).unwrap());
                bytes.push(b'\n');
            }
            // A well-formed last line is not "torn": the error stands.
            let (at, message) = JournalState::from_bytes(&bytes).unwrap_err();
            assert_eq!(at, line, "{message}");
            assert!(message.contains(what), "{message}");
        }
    }

    #[test]
    fn a_replayed_ply_supersedes_the_later_moves_and_a_restart_keeps_the_moves() {
        let mut state = JournalState::default();
        for e in [
            scheduled("g1"),
            started("g1"),
            mv("g1", 1, "A1"),
            mv("g1", 2, "B2"),
            mv("g1", 3, "C3"),
        ] {
            state.apply(e).unwrap();
        }
        state.apply(started("g1")).unwrap();
        assert_eq!(state.game("g1").unwrap().moves.len(), 3);
        state.apply(mv("g1", 2, "D4")).unwrap();
        let texts: Vec<&str> = state
            .game("g1")
            .unwrap()
            .moves
            .iter()
            .map(|m| m.text.as_str())
            .collect();
        assert_eq!(texts, ["A1", "D4"]);
        assert!(state.apply(mv("g1", 0, "A1")).is_err());
    }

    #[test]
    fn a_changed_config_is_refused_with_what_changed() {
        let journal = ConfigFingerprint::new(vec![tournament("hex-league", &["a", "b"])]);
        let mut state = JournalState::default();
        state.apply(journal.entry()).unwrap();

        let more_bots = ConfigFingerprint::new(vec![tournament("hex-league", &["a", "b", "c"])]);
        let err = state.check_config(&more_bots).unwrap_err().to_string();
        assert!(
            err.contains(
                "tournament hex-league: bots differ: journal has [a,b], config has [a,b,c]"
            ),
            "{err}"
        );

        let mut t = tournament("hex-league", &["a", "b"]);
        t.clock.increment_ms = 5000;
        t.rules = json!({"swap": true});
        t.games_per_pairing = 4;
        let err = state
            .check_config(&ConfigFingerprint::new(vec![t]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("clock differs: journal has initial_ms=600000 increment_ms=0"),
            "{err}"
        );
        assert!(
            err.contains("rules differ: journal has {\"swap\":false}, config has {\"swap\":true}"),
            "{err}"
        );
        assert!(
            err.contains("games_per_pairing differs: journal has 2, config has 4"),
            "{err}"
        );
        assert!(!err.contains("bots"), "{err}");

        let added = ConfigFingerprint::new(vec![
            tournament("hex-league", &["a", "b"]),
            tournament("c6", &["a"]),
        ]);
        let err = state.check_config(&added).unwrap_err().to_string();
        assert!(
            err.contains("tournament c6: in the config but not in the journal"),
            "{err}"
        );

        // Tournament order and rule key order do not matter.
        let mut x = tournament("x", &["a"]);
        x.rules = json!({"swap": false, "size": 11});
        let mut y = x.clone();
        y.rules = json!({"size": 11, "swap": false});
        let one = ConfigFingerprint::new(vec![tournament("hex-league", &["a", "b"]), x]);
        let two = ConfigFingerprint::new(vec![y, tournament("hex-league", &["a", "b"])]);
        assert_eq!(one.hash, two.hash);
        assert_eq!(one.canonical, two.canonical);
        assert!(JournalState::default().check_config(&one).is_ok());
    }

    #[test]
    fn a_config_entry_whose_hash_does_not_match_is_refused() {
        let entry = JournalEntry::Config {
            hash: "0000000000000000".to_string(),
            tournaments: vec![tournament("hex-league", &["a", "b"])],
        };
        let mut bytes = serde_json::to_vec(&entry).unwrap();
        bytes.push(b'\n');
        let (line, what) = JournalState::from_bytes(&bytes).unwrap_err();
        assert_eq!(line, 1);
        assert!(what.contains("does not match"), "{what}");
    }

    #[test]
    fn move_entries_are_written_as_serde_json_writes_them() {
        for (i, text) in crate::json_out::tests::AWKWARD.iter().enumerate() {
            let entry = JournalEntry::Move {
                id: std::sync::Arc::from(*text),
                ply: u32::try_from(i).unwrap() * 1000,
                text: text.to_string(),
                think_ms: u64::MAX,
                lag_ms: 0,
                first_clock_ms: 599_999,
                second_clock_ms: 7,
            };
            let mut line = Vec::new();
            assert!(entry.write_move_line(&mut line));
            let serde_line = serde_json::to_string(&entry).unwrap();
            assert_eq!(String::from_utf8(line).unwrap(), serde_line);
            // Its whole line, and the same move encoded by reference, as the referee queues it.
            let mut whole = Vec::new();
            entry.encode_line(&mut whole).unwrap();
            assert_eq!(String::from_utf8(whole).unwrap(), format!("{serde_line}\n"));
            let mut by_reference = Vec::new();
            MoveLine {
                id: text,
                ply: u32::try_from(i).unwrap() * 1000,
                text,
                think_ms: u64::MAX,
                lag_ms: 0,
                first_clock_ms: 599_999,
                second_clock_ms: 7,
            }
            .encode_line(&mut by_reference);
            assert_eq!(
                String::from_utf8(by_reference).unwrap(),
                format!("{serde_line}\n")
            );
        }
    }
}

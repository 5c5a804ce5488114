//! The server's use of the crash-safe journal (`crate::journal`): the configuration's
//! fingerprint, the journal shared by the scheduler and the referees (every append made durable
//! on a blocking thread, never on the runtime's), and the per-match handle through which a
//! referee journals each accepted move with both clocks.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::{Config, Format};
use crate::journal::{
    ClockSettings, ConfigFingerprint, Journal, JournalEntry, JournalError, TournamentFingerprint,
};

/// The lock file in `out_dir` that keeps a second server off a league's files.
pub const LOCK_FILE: &str = "arena.lock";

/// An exclusive lock on `out_dir/arena.lock`, held while a server runs on that folder: two
/// servers writing one journal and one games.jsonl would play games twice. The operating system
/// releases it when the process ends, however it ends (a `kill -9` included).
#[derive(Debug)]
pub struct OutDirLock {
    _file: File,
}

/// Why the output folder cannot be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path} is locked: another arena server is running on this out_dir")]
    InUse { path: PathBuf },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Takes the lock of `out_dir` without waiting.
pub fn lock_out_dir(out_dir: &Path) -> Result<OutDirLock, LockError> {
    let path = out_dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| LockError::Io {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(OutDirLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(LockError::InUse { path }),
        Err(std::fs::TryLockError::Error(source)) => Err(LockError::Io { path, source }),
    }
}

/// The fingerprint of what a league's schedule and games depend on (per tournament: name, game,
/// format, bots, games_per_pairing, rounds for Swiss, clock and every rule option).
pub fn fingerprint(config: &Config) -> ConfigFingerprint {
    ConfigFingerprint::new(
        config
            .tournaments
            .iter()
            .map(|t| TournamentFingerprint {
                name: t.name.clone(),
                game: t.game.as_str().to_string(),
                format: t.format.as_str().to_string(),
                bots: t.bots.clone(),
                games_per_pairing: t.games_per_pairing,
                rounds: (t.format == Format::Swiss).then_some(t.rounds),
                clock: ClockSettings {
                    initial_ms: t.clock.initial_ms,
                    increment_ms: t.clock.increment_ms,
                    move_limit_ms: t.clock.move_limit_ms,
                },
                rules: t.rules.clone(),
            })
            .collect(),
    )
}

/// The open journal, shared between the scheduler and the referees.
#[derive(Debug, Clone)]
pub struct SharedJournal {
    inner: Arc<Mutex<Journal>>,
}

impl SharedJournal {
    pub fn new(journal: Journal) -> SharedJournal {
        SharedJournal {
            inner: Arc::new(Mutex::new(journal)),
        }
    }

    /// Appends entries, each durably, in order. Blocking: call from a blocking thread.
    pub fn append_blocking(&self, entries: &[JournalEntry]) -> Result<(), JournalError> {
        let mut journal = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for entry in entries {
            journal.append(entry)?;
        }
        Ok(())
    }

    /// Appends entries on a blocking thread and waits until they are on disk. A failure is
    /// logged: the league goes on, but a crash from now on may lose the entries.
    pub async fn append(&self, entries: Vec<JournalEntry>) {
        if entries.is_empty() {
            return;
        }
        let journal = self.clone();
        let result = tokio::task::spawn_blocking(move || journal.append_blocking(&entries)).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "cannot append to the journal"),
            Err(e) => tracing::error!(error = %e, "journal task failed"),
        }
    }
}

/// What a referee journals its moves through: the journal and the game's schedule id.
#[derive(Debug, Clone)]
pub struct MoveJournal {
    pub journal: SharedJournal,
    pub id: String,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl MoveJournal {
    /// Journals the last of `moves` (ply = its number) with its think time and lag credit and
    /// both clocks' time left after it; returns once it is on disk.
    pub async fn record_last_move(
        &self,
        moves: &[String],
        think_ms: &[u64],
        lag_ms: &[u64],
        remaining: [Duration; 2],
    ) {
        let Some(text) = moves.last() else {
            return;
        };
        let entry = JournalEntry::Move {
            id: self.id.clone(),
            ply: u32::try_from(moves.len()).unwrap_or(u32::MAX),
            text: text.clone(),
            think_ms: think_ms.last().copied().unwrap_or(0),
            lag_ms: lag_ms.last().copied().unwrap_or(0),
            first_clock_ms: ms(remaining[0]),
            second_clock_ms: ms(remaining[1]),
        };
        self.journal.append(vec![entry]).await;
    }
}

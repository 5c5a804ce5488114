//! What a finished game leaves on disk: its contest record file under `out_dir/records/` and one
//! line in `out_dir/games.jsonl` (docs/leagues.md), both written so that a crash never leaves half a
//! file or half a line, and a failing disk delays them but never loses or mixes them.
//!
//! The record text and its file name come from `crate::record`; the file writes from
//! `crate::atomic_file`.
//!
//! A game's record file name is fixed when it finishes, from its match id (unique in a league),
//! so no two games can ever share one. Finishing a game is idempotent across crashes: the
//! journal's `finished` entry (holding the whole games.jsonl object, record file name included)
//! is made durable first; then the game joins the write queue, whose one writer thread creates
//! the record file and appends the games.jsonl line, in finishing order, left to the system to
//! flush (an fsync each would cost more than the game's moves at a thousand games at once). A
//! write that fails (a full disk, a read-only folder, no file descriptor left) is kept and
//! tried again, with pauses doubling up to two seconds, and [`OutputHealth`] tells the caller
//! when output falls behind and when it has caught up. On restart, [`Output::repair`] queues
//! again from the journal whatever a crash lost or cut short (a missing or partial record file,
//! a missing or torn line), so every finished game has exactly one complete record file and one
//! games.jsonl line. When the server stops it flushes the folder ([`Output::flush_to_disk`]).

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::atomic_file::{
    append_line, create_new_file, sync_file_system, write_atomically, AtomicFileError, Flush,
};
use crate::config::RecordEncoding;
use crate::game_line::{GameLine, LineResult};
use crate::record::{MoveSides, Record, RecordResult};

use super::journaling::MAX_RETRY_PAUSE;
use super::output_health::{OutputFault, OutputHealth, OutputKind};
use super::referee::FinishedGame;

/// Why a game's output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    #[error(transparent)]
    File(#[from] crate::atomic_file::AtomicFileError),
    #[error("{path} holds another game's record (not replaced; this game's record is missing)")]
    NameHeldByAnotherGame { path: PathBuf },
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

/// A finished game whose outputs wait to be written.
#[derive(Debug, Clone)]
struct QueuedGame {
    /// Shared: the writer takes a copy of the queue's front to write outside the lock.
    line: Arc<GameLine>,
    /// Whether its record file is to be written (or checked).
    record: bool,
    /// Whether its games.jsonl line is to be appended.
    append: bool,
    /// How the record's writer finds each move's side: from the move numbers for a game this
    /// server just refereed, by replaying for one read back from the journal after a crash.
    sides: MoveSides,
}

/// The write queue, in finishing order, and whether the server is stopping.
#[derive(Debug, Default)]
struct Queue {
    games: VecDeque<QueuedGame>,
    stopping: bool,
}

/// How long the writer keeps trying a failing write once the server is stopping; what is left
/// then is written from the journal at the next start.
const STOPPING_TRIES_FOR: Duration = Duration::from_secs(5);

/// Writes finished games under `out_dir`.
#[derive(Debug)]
pub struct Output {
    out_dir: PathBuf,
    encoding: RecordEncoding,
    event: String,
    place: String,
    /// Serialises appends to games.jsonl.
    append_lock: Mutex<()>,
    queue: Mutex<Queue>,
    /// Rung when a game joins the queue or the server stops.
    queued: Condvar,
    health: Arc<OutputHealth>,
}

impl Output {
    #[cfg(test)]
    pub fn new(out_dir: PathBuf, encoding: RecordEncoding, event: String, place: String) -> Output {
        Output::with_health(out_dir, encoding, event, place, Arc::default())
    }

    /// An `Output` telling `health` when writing falls behind and when it catches up.
    pub fn with_health(
        out_dir: PathBuf,
        encoding: RecordEncoding,
        event: String,
        place: String,
        health: Arc<OutputHealth>,
    ) -> Output {
        Output {
            out_dir,
            encoding,
            event,
            place,
            append_lock: Mutex::new(()),
            queue: Mutex::new(Queue::default()),
            queued: Condvar::new(),
            health,
        }
    }

    pub fn health(&self) -> &Arc<OutputHealth> {
        &self.health
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

    /// The games.jsonl line of a finished game, naming the record file it gets (see
    /// [`Record::file_name_for_match`]).
    pub fn game_line(&self, game: FinishedGame) -> GameLine {
        let spec = &game.spec;
        // The file's name does not depend on the moves: they are not copied for it.
        let record = record_without_moves(&game, &self.event, &self.place)
            .file_name_for_match(&spec.match_id);
        GameLine {
            match_id: spec.match_id.clone(),
            tournament: spec.tournament.clone(),
            game: spec.game,
            first: spec.players[0].clone(),
            second: spec.players[1].clone(),
            result: LineResult::of(&game.outcome),
            reason: game.outcome.reason,
            rules: Value::clone(&spec.rules),
            clock: spec.clock,
            started: game.started.to_rfc3339(),
            finished: game.finished.to_rfc3339(),
            record,
            // Moved, not copied: the finished game is not needed past its line.
            moves: game.moves,
            think_ms: game.think_ms,
            lag_ms: game.lag_ms,
        }
    }

    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a journaled finished game for its record file and games.jsonl line.
    pub fn enqueue(&self, line: Arc<GameLine>) {
        self.push(QueuedGame {
            line,
            record: true,
            append: true,
            sides: MoveSides::Refereed,
        });
    }

    fn push(&self, game: QueuedGame) {
        self.lock_queue().games.push_back(game);
        self.queued.notify_all();
    }

    /// The games.jsonl object of finished game `match_id` if it is still waiting to be
    /// written (so that the web view can show it meanwhile).
    pub fn waiting_line(&self, match_id: &str) -> Option<GameLine> {
        self.lock_queue()
            .games
            .iter()
            .find(|g| g.line.match_id == match_id)
            .map(|g| GameLine::clone(&g.line))
    }

    /// How many finished games wait for their outputs.
    pub fn waiting(&self) -> usize {
        self.lock_queue().games.len()
    }

    /// The writer: writes the queued games in order until [`Output::stop_writing`], retrying a
    /// failing write after a pause. Blocking: run it on a thread of its own
    /// ([`Output::start_writer`]). Returns what was left unwritten, if anything.
    fn write_queued(&self) -> Option<OutputFault> {
        let mut pause = Duration::ZERO;
        let mut stopping_since: Option<Instant> = None;
        let mut last_error: Option<String> = None;
        loop {
            let next = {
                let mut queue = self.lock_queue();
                while queue.games.is_empty() && !queue.stopping {
                    queue = self.queued.wait(queue).unwrap_or_else(|e| e.into_inner());
                }
                if queue.stopping && stopping_since.is_none() {
                    stopping_since = Some(Instant::now());
                }
                match queue.games.front() {
                    Some(game) => game.clone(),
                    None => return None,
                }
            };
            match self.write_game(&next) {
                Ok(()) => {
                    let left = {
                        let mut queue = self.lock_queue();
                        queue.games.pop_front();
                        queue.games.len()
                    };
                    if last_error.is_some() && left == 0 {
                        self.health.recovered(OutputKind::Games);
                        last_error = None;
                    }
                    pause = Duration::ZERO;
                }
                Err(e) => {
                    let why = e.to_string();
                    let waiting = self.waiting();
                    if let OutputError::NameHeldByAnotherGame { .. } = e {
                        // Not a passing fault: trying again changes nothing. Reported, and
                        // its games.jsonl line still written.
                        tracing::error!(match_id = %next.line.match_id, error = %why, "record not written");
                        let mut queue = self.lock_queue();
                        if let Some(front) = queue.games.front_mut() {
                            front.record = false;
                        }
                        continue;
                    }
                    self.health.failed(OutputKind::Games, &why, waiting);
                    last_error = Some(why.clone());
                    if stopping_since.is_some_and(|since| since.elapsed() >= STOPPING_TRIES_FOR) {
                        return Some(OutputFault {
                            what: OutputKind::Games,
                            waiting,
                            why,
                        });
                    }
                    pause = (pause * 2).clamp(Duration::from_millis(50), MAX_RETRY_PAUSE);
                    let queue = self.lock_queue();
                    // Woken early only to notice the server stopping.
                    let _ = self.queued.wait_timeout(queue, pause);
                }
            }
        }
    }

    /// Starts the writer thread; [`Output::stop_writing`] ends it.
    pub fn start_writer(
        self: &Arc<Self>,
    ) -> std::io::Result<std::thread::JoinHandle<Option<OutputFault>>> {
        let output = self.clone();
        std::thread::Builder::new()
            .name("output-writer".into())
            .spawn(move || output.write_queued())
    }

    /// Tells the writer to finish: it writes what is queued and ends, or, if writing keeps
    /// failing, gives up after `STOPPING_TRIES_FOR` (the journal holds those games: the next
    /// start writes them).
    pub fn stop_writing(&self) {
        self.lock_queue().stopping = true;
        self.queued.notify_all();
    }

    /// Writes one queued game's record file (unless it holds the same record already) and
    /// appends its games.jsonl line, each only where still to be done.
    fn write_game(&self, game: &QueuedGame) -> Result<(), OutputError> {
        if game.record && !game.line.record.is_empty() {
            if let Some(record) = record_of_line(&game.line, &self.event, &self.place) {
                let bytes = record.encode_with(self.encoding, game.sides)?;
                write_record_file(&self.records_dir().join(&game.line.record), &bytes)?;
            }
            let mut queue = self.lock_queue();
            if let Some(front) = queue.games.front_mut() {
                front.record = false;
            }
        }
        if game.append {
            self.append_line(&game.line, Flush::Later)?;
        }
        Ok(())
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

    /// Completes what a crash or a stop left undone for the finished games `finished`
    /// (games.jsonl lines as the journal holds them, in journal order): games.jsonl is
    /// rewritten (atomically) without repeated lines of one match or lines a crash cut short,
    /// and every game whose record file is missing or partial, or whose line is missing, is
    /// queued for the writer (a record file name held by another game's record is reported,
    /// never replaced). Returns how many things were repaired or queued. Blocking.
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
            let record = !line.record.is_empty()
                && record_of_line(line, &self.event, &self.place).is_some_and(|record| {
                    record.encode(self.encoding).is_ok_and(|bytes| {
                        fs::read(records.join(&line.record)).ok().as_deref()
                            != Some(bytes.as_slice())
                    })
                });
            let append = seen.insert(line.match_id.clone());
            if record || append {
                repaired += usize::from(record) + usize::from(append);
                self.push(QueuedGame {
                    line: Arc::new(line.clone()),
                    record,
                    append,
                    sides: MoveSides::Replayed,
                });
            }
        }
        Ok(repaired)
    }
}

/// Writes a record file at `path`, creating its folder if it is missing. A file already there
/// is this game's if it holds these bytes (written before a crash or a failed try) or their
/// start (cut short: completed); any other content is another game's and is not replaced.
/// The common case, a new name in an existing folder, costs one `open`.
fn write_record_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let open_error = |e: &AtomicFileError| match e {
        AtomicFileError::Open { source, .. } => Some(source.kind()),
        _ => None,
    };
    match create_new_file(path, bytes) {
        Ok(()) => return Ok(()),
        Err(e) if open_error(&e) == Some(io::ErrorKind::NotFound) => {
            if let Some(folder) = path.parent() {
                fs::create_dir_all(folder).map_err(io_error(folder))?;
            }
            return Ok(create_new_file(path, bytes)?);
        }
        Err(e) if open_error(&e) == Some(io::ErrorKind::AlreadyExists) => {}
        Err(e) => return Err(e.into()),
    }
    match fs::read(path) {
        Ok(held) if held == bytes => Ok(()),
        Ok(held) if bytes.starts_with(&held) => Ok(write_atomically(path, bytes)?),
        Ok(_) => Err(OutputError::NameHeldByAnotherGame {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(io_error(path)(e)),
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

/// The contest record of a finished game, without its moves (all a file name needs).
fn record_without_moves(game: &FinishedGame, event: &str, place: &str) -> Record {
    Record {
        game: game.spec.game,
        first: game.spec.players[0].clone(),
        second: game.spec.players[1].clone(),
        result: RecordResult::from_outcome(&game.outcome),
        played_at: game.started.naive_local(),
        place: place.to_string(),
        event: event.to_string(),
        moves: Vec::new(),
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

    fn output_in(dir: &Path) -> Arc<Output> {
        Arc::new(Output::new(
            dir.to_path_buf(),
            RecordEncoding::Utf8,
            "ev".into(),
            "pl".into(),
        ))
    }

    /// Writes what is queued and stops the writer; what it left unwritten.
    fn drain(output: &Arc<Output>) -> Option<OutputFault> {
        let writer = output.start_writer().unwrap();
        output.stop_writing();
        writer.join().unwrap()
    }

    #[test]
    fn games_alike_in_every_field_get_records_of_their_own_and_lines_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let output = output_in(dir.path());
        // Same players, result, minute, event and place: only the match ids differ.
        let first = output.game_line(hex_game("t-r1-p1-g1"));
        let second = output.game_line(hex_game("t-r1-p1-g2"));
        assert_ne!(first.record, second.record);
        assert!(
            first.record.ends_with(" (t-r1-p1-g1).txt"),
            "{}",
            first.record
        );
        output.enqueue(Arc::new(first.clone()));
        output.enqueue(Arc::new(second.clone()));
        assert_eq!(drain(&output), None);
        assert_eq!(output.read_games(), vec![first.clone(), second.clone()]);
        let text = fs::read_to_string(output.records_dir().join(&first.record)).unwrap();
        assert!(
            text.starts_with("{[HEX][red bot R][blue bot B][先手胜]"),
            "{text}"
        );
        assert!(text.contains(";R(F,6);B(E,7)}"), "{text}");
        assert_eq!(output.read_games()[0].think_ms, [10, 20]);
        assert_eq!(output.read_games()[0].reason, EndReason::Resign);
    }

    #[test]
    fn a_failing_write_waits_in_memory_and_is_written_once_it_works() {
        let dir = tempfile::tempdir().unwrap();
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        let health = Arc::new(OutputHealth::new(crate::server::Events::new([
            crate::server::Subscriber::news(Arc::new(
                move |event: &crate::server::ServerEvent<'_>| {
                    sink.lock().unwrap().push(format!("{event:?}"));
                },
            )),
        ])));
        let output = Arc::new(Output::with_health(
            dir.path().to_path_buf(),
            RecordEncoding::Utf8,
            "ev".into(),
            "pl".into(),
            health,
        ));
        // A plain file where the records folder goes: every record write fails (as root too,
        // which a read-only mode would not stop).
        fs::write(output.records_dir(), b"in the way").unwrap();
        let writer = output.start_writer().unwrap();
        let lines: Vec<GameLine> = (1..=3)
            .map(|n| output.game_line(hex_game(&format!("t-r1-p1-g{n}"))))
            .collect();
        for line in &lines {
            output.enqueue(Arc::new(line.clone()));
        }
        let until = Instant::now() + Duration::from_secs(20);
        while output.health().faults().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let faults = output.health().faults();
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert_eq!(faults[0].what, OutputKind::Games);
        assert_eq!(output.waiting(), 3, "nothing is dropped");
        assert_eq!(output.waiting_line("t-r1-p1-g2").as_ref(), Some(&lines[1]));
        assert!(output.read_games().is_empty(), "no line before its record");
        // The fault clears: every game is written, in finishing order.
        fs::remove_file(output.records_dir()).unwrap();
        output.stop_writing();
        assert_eq!(writer.join().unwrap(), None);
        assert_eq!(output.read_games(), lines);
        for line in &lines {
            assert!(output.records_dir().join(&line.record).is_file());
        }
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 2, "told once behind, once caught up: {told:?}");
        assert!(told[0].contains("OutputBehind"), "{told:?}");
        assert!(told[1].contains("OutputCaughtUp"), "{told:?}");
    }

    #[test]
    fn repair_restores_a_lost_or_partial_record_and_line_and_drops_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let output = output_in(dir.path());
        let first = output.game_line(hex_game("t-r1-p1-g1"));
        let second = output.game_line(hex_game("t-r1-p1-g2"));
        output.enqueue(Arc::new(first.clone()));
        output.enqueue(Arc::new(second.clone()));
        assert_eq!(drain(&output), None);
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
        let output = output_in(dir.path());
        let repaired = output.repair(&[first.clone(), second.clone()]).unwrap();
        assert_eq!(repaired, 5);
        assert_eq!(drain(&output), None);
        assert_eq!(output.read_games(), vec![first.clone(), second.clone()]);
        assert_eq!(fs::read_to_string(&record).unwrap(), record_text);
        assert_eq!(fs::read_to_string(&first_record).unwrap(), first_text);
        // Nothing left to repair.
        let output = output_in(dir.path());
        assert_eq!(output.repair(&[first, second]).unwrap(), 0);
        assert_eq!(output.waiting(), 0);
    }

    #[test]
    fn repair_never_writes_one_games_record_over_anothers() {
        let dir = tempfile::tempdir().unwrap();
        let output = output_in(dir.path());
        let mut first = output.game_line(hex_game("t-r1-p1-g1"));
        let mut second = output.game_line(hex_game("t-r1-p1-g2"));
        second.moves = vec!["A1".into()];
        // As an older version could journal them: two games under one name.
        first.record = "shared.txt".into();
        second.record = "shared.txt".into();
        output.enqueue(Arc::new(first.clone()));
        assert_eq!(drain(&output), None);
        let path = output.records_dir().join("shared.txt");
        let held = fs::read(&path).unwrap();
        let output = output_in(dir.path());
        assert_eq!(output.repair(&[first.clone(), second.clone()]).unwrap(), 2);
        assert_eq!(drain(&output), None);
        assert_eq!(
            fs::read(&path).unwrap(),
            held,
            "the first game's record stays"
        );
        assert_eq!(
            output.read_games(),
            vec![first, second],
            "both lines are written"
        );
        assert!(matches!(
            write_record_file(&path, b"{[HEX] another game}"),
            Err(OutputError::NameHeldByAnotherGame { .. })
        ));
    }
}

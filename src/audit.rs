//! `arena audit`: whether a league's outputs are complete. Every game the journal holds as
//! finished must have exactly one games.jsonl line and exactly one record file of its own,
//! holding that game's moves, and the standings must count every game once. Reads only;
//! reports every gap it finds to a writer.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::game_line::GameLine;
use crate::journal::{JournalState, JOURNAL_FILE};
use crate::record::Record;

/// Why a league's outputs could not be audited at all.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}, line {line}: {what}")]
    Journal {
        path: PathBuf,
        line: usize,
        what: String,
    },
    #[error("cannot write the report: {0}")]
    Write(#[source] io::Error),
}

/// What an audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// Games the journal holds as finished.
    pub finished: usize,
    /// Every gap or inconsistency, one sentence each.
    pub problems: Vec<String>,
}

impl AuditReport {
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Audits the league whose outputs are in `out_dir`.
pub fn audit(out_dir: &Path) -> Result<AuditReport, AuditError> {
    let read =
        |path: PathBuf| std::fs::read(&path).map_err(|source| AuditError::Read { path, source });
    let journal_path = out_dir.join(JOURNAL_FILE);
    let (state, _) =
        JournalState::from_bytes(&read(journal_path.clone())?).map_err(|(line, what)| {
            AuditError::Journal {
                path: journal_path,
                line,
                what,
            }
        })?;
    let finished: Vec<&GameLine> = state
        .games
        .iter()
        .filter_map(|g| g.finished.as_ref())
        .collect();
    let mut report = AuditReport {
        finished: finished.len(),
        problems: Vec::new(),
    };
    let lines: Vec<GameLine> = GameLine::read_file(&out_dir.join("games.jsonl")).collect();
    check_lines(&finished, &lines, &mut report.problems);
    check_records(&out_dir.join("records"), &finished, &mut report.problems);
    check_standings(
        &out_dir.join("standings.json"),
        &finished,
        &mut report.problems,
    );
    Ok(report)
}

/// Each finished game has one games.jsonl line, with the journal's moves; no other lines.
fn check_lines(finished: &[&GameLine], lines: &[GameLine], problems: &mut Vec<String>) {
    let mut by_match: BTreeMap<&str, Vec<&GameLine>> = BTreeMap::new();
    for line in lines {
        by_match.entry(&line.match_id).or_default().push(line);
    }
    for game in finished {
        match by_match.remove(game.match_id.as_str()).as_deref() {
            None | Some([]) => problems.push(format!(
                "{}: finished in the journal but has no games.jsonl line",
                game.match_id
            )),
            Some([line]) if line.moves != game.moves => problems.push(format!(
                "{}: its games.jsonl line holds other moves than the journal",
                game.match_id
            )),
            Some([_]) => {}
            Some(more) => problems.push(format!(
                "{}: {} games.jsonl lines (one expected)",
                game.match_id,
                more.len()
            )),
        }
    }
    for id in by_match.keys() {
        problems.push(format!(
            "{id}: a games.jsonl line for a game the journal does not hold as finished"
        ));
    }
}

/// Each finished game has a record file no other game names, holding its moves.
fn check_records(records: &Path, finished: &[&GameLine], problems: &mut Vec<String>) {
    let mut named: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for game in finished {
        if game.record.is_empty() {
            problems.push(format!("{}: no record file name", game.match_id));
            continue;
        }
        named.entry(&game.record).or_default().push(&game.match_id);
    }
    for (name, games) in &named {
        if games.len() > 1 {
            problems.push(format!(
                "{name}: one record file named by {} games ({})",
                games.len(),
                games.join(", ")
            ));
        }
    }
    for game in finished.iter().filter(|g| !g.record.is_empty()) {
        let path = records.join(&game.record);
        match std::fs::read(&path) {
            Err(e) => problems.push(format!(
                "{}: record file {:?} cannot be read: {e}",
                game.match_id, game.record
            )),
            Ok(bytes) => match Record::parse(&bytes) {
                Err(e) => problems.push(format!(
                    "{}: record file {:?} does not read as a record: {e}",
                    game.match_id, game.record
                )),
                Ok(record) if !same_moves(&record.moves, &game.moves) => problems.push(format!(
                    "{}: record file {:?} holds other moves than the game",
                    game.match_id, game.record
                )),
                Ok(_) => {}
            },
        }
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(records)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".txt"))
                .collect()
        })
        .unwrap_or_default();
    for name in on_disk.iter().filter(|n| !named.contains_key(n.as_str())) {
        problems.push(format!(
            "{name}: a record file no finished game of the journal names"
        ));
    }
}

/// Whether a record's moves are the game's, compared case-insensitively (records keep
/// coordinates only, in upper case).
fn same_moves(record: &[String], game: &[String]) -> bool {
    record.len() == game.len()
        && record
            .iter()
            .zip(game)
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Every tournament's standings count each of its finished games once: the rows' games add
/// up to two per game (one for each player).
fn check_standings(path: &Path, finished: &[&GameLine], problems: &mut Vec<String>) {
    let mut games_of: BTreeMap<&str, u64> = BTreeMap::new();
    for game in finished {
        *games_of.entry(&game.tournament).or_default() += 1;
    }
    let standings: Value = match std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    {
        Some(v) => v,
        None => {
            if !finished.is_empty() {
                problems.push(format!("{}: missing or unreadable", path.display()));
            }
            return;
        }
    };
    let tournaments = standings["tournaments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (name, games) in games_of {
        let Some(t) = tournaments.iter().find(|t| t["name"] == name) else {
            problems.push(format!("standings: tournament {name:?} is missing"));
            continue;
        };
        let counted: u64 = t["rows"]
            .as_array()
            .map(|rows| rows.iter().filter_map(|r| r["games"].as_u64()).sum())
            .unwrap_or(0);
        if counted != 2 * games {
            problems.push(format!(
                "standings: tournament {name:?} counts {counted} player-games for {games} finished games (expected {})",
                2 * games
            ));
        }
    }
}

/// Writes `report` for a person: one line per problem, then a summary line.
pub fn write_report(
    report: &AuditReport,
    out_dir: &Path,
    out: &mut dyn Write,
) -> Result<(), AuditError> {
    for problem in &report.problems {
        writeln!(out, "gap: {problem}").map_err(AuditError::Write)?;
    }
    if report.is_complete() {
        writeln!(
            out,
            "complete: {} finished games, each with one games.jsonl line and one record file of its own; the standings count each once ({})",
            report.finished,
            out_dir.display()
        )
    } else {
        writeln!(
            out,
            "incomplete: {} problems among {} finished games ({})",
            report.problems.len(),
            report.finished,
            out_dir.display()
        )
    }
    .map_err(AuditError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RecordEncoding;
    use crate::game::{EndReason, GameId};
    use crate::game_line::LineResult;
    use crate::journal::{Journal, JournalEntry};
    use crate::protocol::ClockSpec;
    use crate::server::output::record_of_line;

    fn line(match_id: &str, moves: &[&str]) -> GameLine {
        let mut line = GameLine {
            match_id: match_id.into(),
            tournament: "t".into(),
            game: GameId::Hex,
            first: "a".into(),
            second: "b".into(),
            result: LineResult::First,
            reason: EndReason::Resign,
            moves: moves.iter().map(|m| m.to_string()).collect(),
            think_ms: vec![1; moves.len()],
            lag_ms: vec![0; moves.len()],
            rules: serde_json::json!({"swap": false}),
            clock: ClockSpec::default(),
            started: "2026-11-27T10:00:00+00:00".into(),
            finished: "2026-11-27T10:01:00+00:00".into(),
            record: String::new(),
        };
        let record = record_of_line(&line, "ev", "pl").unwrap();
        line.record = record.file_name_for_match(match_id);
        line
    }

    /// A league folder whose journal holds `games` as finished, with every output written.
    fn league(dir: &Path, games: &[GameLine]) {
        let (mut journal, _) = Journal::open(&dir.join(JOURNAL_FILE)).unwrap();
        for g in games {
            for entry in [
                JournalEntry::Scheduled {
                    id: g.match_id.clone(),
                    tournament: "t".into(),
                    round: 1,
                    first: "a".into(),
                    second: "b".into(),
                },
                JournalEntry::Started {
                    id: g.match_id.clone(),
                    match_id: g.match_id.clone(),
                    time: g.started.clone(),
                },
                JournalEntry::Finished {
                    id: g.match_id.clone(),
                    record: std::sync::Arc::new(g.clone()),
                },
            ] {
                journal.append(&entry).unwrap();
            }
        }
        std::fs::create_dir_all(dir.join("records")).unwrap();
        let mut text = String::new();
        for g in games {
            text.push_str(&g.to_text());
            text.push('\n');
            let bytes = record_of_line(g, "ev", "pl")
                .unwrap()
                .encode(RecordEncoding::Utf8)
                .unwrap();
            std::fs::write(dir.join("records").join(&g.record), bytes).unwrap();
        }
        std::fs::write(dir.join("games.jsonl"), text).unwrap();
        let standings = serde_json::json!({"tournaments": [{"name": "t", "rows": [
            {"name": "a", "games": games.len()}, {"name": "b", "games": games.len()}
        ]}]});
        std::fs::write(dir.join("standings.json"), standings.to_string()).unwrap();
    }

    #[test]
    fn a_complete_league_has_no_gap() {
        let dir = tempfile::tempdir().unwrap();
        league(
            dir.path(),
            &[
                line("t-r1-p1-g1", &["F6"]),
                line("t-r1-p1-g2", &["A1", "B2"]),
            ],
        );
        let report = audit(dir.path()).unwrap();
        assert_eq!(report.finished, 2);
        assert!(report.is_complete(), "{:?}", report.problems);
        let mut text = Vec::new();
        write_report(&report, dir.path(), &mut text).unwrap();
        assert!(String::from_utf8(text)
            .unwrap()
            .starts_with("complete: 2 finished games"));
    }

    #[test]
    fn every_kind_of_gap_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let games = [
            line("t-r1-p1-g1", &["F6"]),
            line("t-r1-p1-g2", &["A1", "B2"]),
            line("t-r1-p1-g3", &["C3"]),
        ];
        league(dir.path(), &games);
        let records = dir.path().join("records");
        // Game 1's record is gone; game 2's holds another game's moves; games.jsonl repeats
        // game 3 and lacks game 2; a stray record; the standings count one game too few.
        std::fs::remove_file(records.join(&games[0].record)).unwrap();
        let other = record_of_line(&line("x", &["K11"]), "ev", "pl").unwrap();
        std::fs::write(
            records.join(&games[1].record),
            other.encode(RecordEncoding::Utf8).unwrap(),
        )
        .unwrap();
        std::fs::write(records.join("stray.txt"), b"{[HEX]}").unwrap();
        let text = format!(
            "{}\n{}\n{}\n",
            games[0].to_text(),
            games[2].to_text(),
            games[2].to_text()
        );
        std::fs::write(dir.path().join("games.jsonl"), text).unwrap();
        let standings = serde_json::json!({"tournaments": [{"name": "t", "rows": [
            {"name": "a", "games": 2}, {"name": "b", "games": 3}
        ]}]});
        std::fs::write(dir.path().join("standings.json"), standings.to_string()).unwrap();
        let report = audit(dir.path()).unwrap();
        let all = report.problems.join("\n");
        for expected in [
            "t-r1-p1-g1: record file",
            "t-r1-p1-g2: finished in the journal but has no games.jsonl line",
            "t-r1-p1-g2: record file",
            "holds other moves",
            "t-r1-p1-g3: 2 games.jsonl lines",
            "stray.txt: a record file no finished game",
            "counts 5 player-games for 3 finished games",
        ] {
            assert!(all.contains(expected), "{expected:?} missing from:\n{all}");
        }
        assert_eq!(report.problems.len(), 6, "{all}");
    }
}

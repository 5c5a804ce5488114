//! The league library end to end, from data files: standings from a games.jsonl fixture, the
//! standings files, journal fixtures (torn and corrupt), and a Swiss league journaled round by
//! round through a simulated crash, whose standings and pairings rebuild exactly from the journal.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use arena::game::{EndReason, GameId, Side};
use arena::game_line::GameLine;
use arena::journal::{
    ClockSpec, ConfigFingerprint, Journal, JournalEntry, JournalError, TournamentFingerprint,
    JOURNAL_FILE,
};
use arena::league::report::{standings_csv, StandingsFile};
use arena::league::{
    compute_standings, swiss_round, write_standings, EloOptions, GameResult, Points,
    TournamentStandings,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/league")
        .join(name)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn standings_from_a_games_jsonl_file() {
    let text = std::fs::read_to_string(fixture("games.jsonl")).unwrap();
    let results: Vec<GameResult> = text
        .lines()
        .map(|l| GameResult::from_line(&GameLine::from_text(l).unwrap()))
        .collect();
    let bots = names(&["alice", "bob", "carol", "dave"]);
    let rows = compute_standings(
        &bots,
        &results,
        &[],
        &Points::default(),
        false,
        &EloOptions::default(),
    );
    // bob and dave have 2 points each; bob beat dave. alice 1.5, carol 0.5.
    let order: Vec<(u32, &str, f64)> = rows
        .iter()
        .map(|r| (r.rank, r.name.as_str(), r.points))
        .collect();
    assert_eq!(
        order,
        vec![
            (1, "bob", 2.0),
            (2, "dave", 2.0),
            (3, "alice", 1.5),
            (4, "carol", 0.5)
        ]
    );
    let row = |n: &str| rows.iter().find(|r| r.name == n).unwrap();
    assert_eq!(
        (row("carol").timeout_losses, row("carol").forfeit_losses),
        (1, 1)
    );
    assert_eq!(row("dave").illegal_move_losses, 1);
    assert_eq!(row("alice").disconnect_losses, 1);
    // Connect6 moves alternate: alice thought 10 + 30 (game 1) and 10 (game 3) over 3 moves.
    assert_eq!(row("alice").mean_think_ms, Some(16.7));
    assert_eq!(row("dave").mean_think_ms, Some(38.5));

    let dir = tempfile::tempdir().unwrap();
    let standings = vec![TournamentStandings::new(
        "c6-league",
        GameId::Connect6,
        true,
        rows.clone(),
    )];
    write_standings(dir.path(), &standings).unwrap();
    let json = std::fs::read_to_string(dir.path().join("standings.json")).unwrap();
    let back: StandingsFile = serde_json::from_str(&json).unwrap();
    assert_eq!(back.tournaments[0].rows, rows);
    let csv = std::fs::read_to_string(dir.path().join("standings.csv")).unwrap();
    assert_eq!(csv, standings_csv(&standings));
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("c6-league,1,bob,3,"));
    let md = std::fs::read_to_string(dir.path().join("standings.md")).unwrap();
    assert!(md.contains("## c6-league (connect6, finished)"));
}

#[test]
fn a_torn_journal_fixture_opens_and_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(JOURNAL_FILE);
    std::fs::copy(fixture("journal-torn.jsonl"), &path).unwrap();
    let (mut journal, state) = Journal::open(&path).unwrap();
    assert_eq!(state.dropped_torn_line, Some(5));
    let game = state.game("t-r1-p1-g1").unwrap();
    assert!(game.finished.is_none());
    let clocks: Vec<(u32, &str, u64, u64)> = game
        .moves
        .iter()
        .map(|m| (m.ply, m.text.as_str(), m.first_clock_ms, m.second_clock_ms))
        .collect();
    assert_eq!(
        clocks,
        vec![(1, "F6", 599_880, 600_000), (2, "E7", 599_880, 599_920)]
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("599920}\n"), "the torn tail is gone");
    journal
        .append(&JournalEntry::Finished {
            id: "t-r1-p1-g1".into(),
            record: Box::new(record("a", "b", Some(Side::First), &[])),
        })
        .unwrap();
    drop(journal);
    let (_, state) = Journal::open(&path).unwrap();
    assert!(state.game("t-r1-p1-g1").unwrap().finished.is_some());
    assert_eq!(state.dropped_torn_line, None);
}

#[test]
fn a_corrupt_journal_fixture_is_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(JOURNAL_FILE);
    std::fs::copy(fixture("journal-corrupt.jsonl"), &path).unwrap();
    match Journal::open(&path) {
        Err(JournalError::Corrupt { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected corruption on line 2, got {other:?}"),
    }
}

fn swiss_fingerprint(bots: &[String]) -> ConfigFingerprint {
    ConfigFingerprint::new(vec![TournamentFingerprint {
        name: "sw".into(),
        game: "hex".into(),
        format: "swiss".into(),
        bots: bots.to_vec(),
        games_per_pairing: 1,
        rounds: Some(4),
        clock: ClockSpec {
            initial_ms: 60_000,
            increment_ms: 0,
            move_limit_ms: None,
        },
        rules: json!({"swap": false}),
        openings: Vec::new(),
    }])
}

/// Results and byes of tournament `sw` as the journal at `path` records them.
fn from_journal(path: &Path) -> (Journal, Vec<GameResult>, Vec<String>) {
    let (journal, state) = Journal::open(path).unwrap();
    let results = state
        .finished_records("sw")
        .map(GameResult::from_line)
        .collect();
    let byes = state.byes.iter().map(|b| b.bot.clone()).collect();
    (journal, results, byes)
}

fn record(first: &str, second: &str, winner: Option<Side>, think: &[u64]) -> GameLine {
    GameLine::from_json(&json!({
        "match": "m", "game": "hex", "tournament": "sw", "first": first, "second": second,
        "result": winner.map_or("draw", Side::as_str),
        "reason": if winner.is_some() { EndReason::Connection.as_str() } else { EndReason::Resign.as_str() },
        "think_ms": think, "moves": [], "lag_ms": [], "rules": {"swap": false},
        "clock": {"initial_ms": 60000, "increment_ms": 0, "move_limit_ms": null},
        "started": "2026-11-22T21:00:00+00:00", "finished": "2026-11-22T21:01:00+00:00",
        "record": "",
    }))
    .unwrap()
}

#[test]
fn a_swiss_league_rebuilds_from_its_journal_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(JOURNAL_FILE);
    let bots = names(&["a", "b", "c", "d", "e"]);
    let points = Points::default();
    let fingerprint = swiss_fingerprint(&bots);
    {
        let (mut journal, state) = Journal::open(&path).unwrap();
        state.check_config(&fingerprint).unwrap();
        journal.append(&fingerprint.entry()).unwrap();
    }
    let mut rng = SmallRng::seed_from_u64(7);
    let mut memory_results: Vec<GameResult> = Vec::new();
    let mut memory_byes: Vec<String> = Vec::new();
    let mut pairs = HashSet::new();
    for round in 1..=4 {
        // Every round starts from a fresh reopen, as after a restart.
        let (mut journal, results, byes) = from_journal(&path);
        let (_, state) = Journal::open(&path).unwrap();
        state.check_config(&fingerprint).unwrap();
        assert_eq!(results, memory_results);
        assert_eq!(byes, memory_byes);
        let generated = swiss_round("sw", &bots, round, 1, &points, &results, &byes).unwrap();
        let again = swiss_round(
            "sw",
            &bots,
            round,
            1,
            &points,
            &memory_results,
            &memory_byes,
        )
        .unwrap();
        assert_eq!(generated, again);
        if let Some(bye) = &generated.bye {
            journal
                .append(&JournalEntry::Bye {
                    tournament: "sw".into(),
                    round,
                    bot: bye.clone(),
                })
                .unwrap();
            memory_byes.push(bye.clone());
        }
        for g in &generated.games {
            assert!(pairs.insert((
                g.first.clone().min(g.second.clone()),
                g.first.clone().max(g.second.clone())
            )));
            journal
                .append(&JournalEntry::Scheduled {
                    id: g.id.clone(),
                    tournament: "sw".into(),
                    round,
                    first: g.first.clone(),
                    second: g.second.clone(),
                })
                .unwrap();
        }
        for (i, g) in generated.games.iter().enumerate() {
            journal
                .append(&JournalEntry::Started {
                    id: g.id.clone(),
                    match_id: format!("m{round}-{i}"),
                    time: "2026-11-22T21:00:00Z".into(),
                })
                .unwrap();
            let think: Vec<u64> = (0..4).map(|_| rng.gen_range(1..500)).collect();
            for (ply, ms) in think.iter().enumerate().take(2) {
                journal
                    .append(&JournalEntry::Move {
                        id: g.id.clone(),
                        ply: ply as u32 + 1,
                        text: format!("A{}", ply + 1),
                        think_ms: *ms,
                        lag_ms: 0,
                        first_clock_ms: 50_000,
                        second_clock_ms: 50_000,
                    })
                    .unwrap();
            }
            if round == 3 && i == 0 {
                // Crash in the middle of an append, then resume the game from its journal.
                drop(journal);
                let mut raw = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                std::io::Write::write_all(&mut raw, b"{\"kind\":\"move\",\"id\":\"sw-r3").unwrap();
                drop(raw);
                let (reopened, state) = Journal::open(&path).unwrap();
                journal = reopened;
                let progress = state.game(&g.id).unwrap();
                assert!(progress.finished.is_none());
                assert_eq!(progress.moves.len(), 2);
                assert_eq!(state.unfinished().count(), generated.games.len());
            }
            let winner = match rng.gen_range(0..3) {
                0 => Some(Side::First),
                1 => Some(Side::Second),
                _ => None,
            };
            let value = record(&g.first, &g.second, winner, &think);
            memory_results.push(GameResult::from_line(&value));
            journal
                .append(&JournalEntry::Finished {
                    id: g.id.clone(),
                    record: Box::new(value),
                })
                .unwrap();
        }
    }
    let (_, results, byes) = from_journal(&path);
    assert_eq!(results.len(), 4 * 2);
    assert_eq!(byes.len(), 4);
    assert_eq!(byes.iter().collect::<HashSet<_>>().len(), 4, "byes rotate");
    let from_disk = compute_standings(
        &bots,
        &results,
        &byes,
        &points,
        true,
        &EloOptions::default(),
    );
    let from_memory = compute_standings(
        &bots,
        &memory_results,
        &memory_byes,
        &points,
        true,
        &EloOptions::default(),
    );
    assert_eq!(from_disk, from_memory);
    let total: f64 = from_disk.iter().map(|r| r.points).sum();
    assert!(
        (total - (8.0 + 4.0)).abs() < 1e-9,
        "one point per game and per bye"
    );

    // The same journal with a changed bot list is refused, naming the change.
    let changed = swiss_fingerprint(&names(&["a", "b", "c", "d"]));
    let (_, state) = Journal::open(&path).unwrap();
    let err = state.check_config(&changed).unwrap_err().to_string();
    assert!(
        err.contains("tournament sw: bots differ: journal has [a,b,c,d,e], config has [a,b,c,d]"),
        "{err}"
    );
}

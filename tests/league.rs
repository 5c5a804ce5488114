//! Leagues end to end. The league library from data files: standings from a games.jsonl
//! fixture, the standings files, journal fixtures (torn and corrupt), and a Swiss league journaled
//! round by round through a simulated crash, whose standings and pairings rebuild exactly from
//! the journal. The league through the server: a Swiss tournament of built-in engines, forfeits
//! counted in the standings, suspension, tokens kept secret, and crash safety of the real
//! binary: SIGKILL while a game runs, restart on the same config and out_dir, the game resumes
//! from its journaled moves (or keeps them when a bot stays away), every game ends up exactly
//! once; bots reconnect by themselves; a changed config is refused naming the difference; a
//! torn journal line is tolerated.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
use serde_json::{json, Value};

use support::{read_games, serve_output, spawn_server, Client, TestServer};

// The league library, from data files.

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
            record: std::sync::Arc::new(record("a", "b", Some(Side::First), &[])),
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
                        id: g.id.as_str().into(),
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
                    record: std::sync::Arc::new(value),
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

// The league through the server.

fn standings(out_dir: &Path) -> Value {
    let text = std::fs::read_to_string(out_dir.join("standings.json")).expect("standings.json");
    serde_json::from_str(&text).expect("standings.json is JSON")
}

/// The rows of tournament `name` in standings.json, by bot.
fn rows(standings: &Value, name: &str) -> HashMap<String, Value> {
    let t = standings["tournaments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tournament {name} in {standings}"));
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

/// Wins, draws, losses and games of each bot, counted straight from games.jsonl.
fn tally(games: &[Value]) -> HashMap<String, [u64; 4]> {
    let mut out: HashMap<String, [u64; 4]> = HashMap::new();
    for g in games {
        let (first, second) = (g["first"].as_str().unwrap(), g["second"].as_str().unwrap());
        let (rf, rs) = match g["result"].as_str().unwrap() {
            "first" => (0, 2),
            "second" => (2, 0),
            _ => (1, 1),
        };
        for (bot, r) in [(first, rf), (second, rs)] {
            let t = out.entry(bot.to_string()).or_default();
            t[r] += 1;
            t[3] += 1;
        }
    }
    out
}

/// The standings rows agree with games.jsonl (wins, draws, losses, games, and points with the
/// default points plus one win per bye).
fn assert_standings_match_games(out_dir: &Path, tournament: &str) {
    let games: Vec<Value> = read_games(out_dir)
        .into_iter()
        .filter(|g| g["tournament"] == tournament)
        .collect();
    let counted = tally(&games);
    let rows = rows(&standings(out_dir), tournament);
    for (bot, row) in &rows {
        let [w, d, l, n] = counted.get(bot).copied().unwrap_or_default();
        assert_eq!(
            (row["wins"].as_u64(), row["draws"].as_u64()),
            (Some(w), Some(d)),
            "{bot}: {row}"
        );
        assert_eq!(
            (row["losses"].as_u64(), row["games"].as_u64()),
            (Some(l), Some(n)),
            "{bot}: {row}"
        );
        let byes = row["byes"].as_u64().unwrap() as f64;
        let points = w as f64 + 0.5 * d as f64 + byes;
        assert!(
            (row["points"].as_f64().unwrap() - points).abs() < 1e-9,
            "{bot}: {row}"
        );
    }
}

fn journal_lines(out_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(out_dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Whether `bots` can all be paired without repeating a pair of `played` (brute force).
fn matchable(bots: &[&str], played: &HashSet<(String, String)>) -> bool {
    let Some((&a, rest)) = bots.split_first() else {
        return true;
    };
    rest.iter().enumerate().any(|(i, &b)| {
        let pair = (a.min(b).to_string(), a.max(b).to_string());
        !played.contains(&pair) && {
            let others: Vec<&str> = rest
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &x)| x)
                .collect();
            matchable(&others, played)
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swiss_tournament_of_built_in_engines_never_repeats_a_pairing_and_scores_byes() {
    let mut config = String::from("[server]\nping_interval_ms = 1000\n");
    let bots = ["e1", "e2", "e3", "e4", "e5"];
    for b in bots {
        config.push_str(&format!("[[bot]]\nname = \"{b}\"\nbuiltin = \"random\"\n"));
    }
    config.push_str(
        r#"
[[tournament]]
name = "swiss"
game = "hex"
format = "swiss"
bots = ["e1", "e2", "e3", "e4", "e5"]
rounds = 4
games_per_pairing = 1
concurrency = 2
clock = { initial_ms = 20000, increment_ms = 0, move_limit_ms = 0 }
"#,
    );
    let server = TestServer::start(&config).await;
    let (summary, out_dir, _dir) = server.finished().await;
    assert!(summary.tournaments_finished);
    let games = read_games(&out_dir);
    assert_eq!(games.len(), 4 * 2, "4 rounds of 2 games (one bye each)");
    let mut pairs = HashSet::new();
    let mut per_round: HashMap<u64, HashSet<String>> = HashMap::new();
    for g in &games {
        let (a, b) = (g["first"].as_str().unwrap(), g["second"].as_str().unwrap());
        assert!(
            pairs.insert((a.min(b).to_string(), a.max(b).to_string())),
            "pairing {a}-{b} repeated"
        );
        let id = g["match"].as_str().unwrap();
        let round: u64 = id
            .strip_prefix("swiss-r")
            .and_then(|r| r.split('-').next())
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("match id {id}"));
        let seen = per_round.entry(round).or_default();
        assert!(seen.insert(a.to_string()) && seen.insert(b.to_string()));
    }
    assert_eq!(per_round.len(), 4);
    // One bye per round, journaled, never to a bot that plays that round. Byes rotate: a bot
    // gets a second bye only when no bot with fewer byes could sit out without forcing a
    // repeated pairing among the others.
    let byes: Vec<String> = journal_lines(&out_dir)
        .iter()
        .filter(|e| e["kind"] == "bye")
        .map(|e| e["bot"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(byes.len(), 4);
    let mut played_before: HashSet<(String, String)> = HashSet::new();
    for (round, bye) in (1u64..).zip(&byes) {
        assert!(
            !per_round[&round].contains(bye),
            "{bye} sat out round {round}"
        );
        let index = usize::try_from(round - 1).unwrap();
        let count = |b: &str| byes[..index].iter().filter(|x| *x == b).count();
        for other in bots {
            if count(other) < count(bye) {
                let rest: Vec<&str> = bots.iter().copied().filter(|b| b != &other).collect();
                assert!(
                    !matchable(&rest, &played_before),
                    "round {round}: {bye} got another bye though {other} could have sat out"
                );
            }
        }
        for g in &games {
            let id = g["match"].as_str().unwrap();
            if id.starts_with(&format!("swiss-r{round}-")) {
                let (a, b) = (g["first"].as_str().unwrap(), g["second"].as_str().unwrap());
                played_before.insert((a.min(b).to_string(), a.max(b).to_string()));
            }
        }
    }
    let standings = standings(&out_dir);
    assert_eq!(standings["tournaments"][0]["finished"], true);
    let rows = rows(&standings, "swiss");
    for bot in bots {
        let expected = byes.iter().filter(|b| *b == bot).count() as u64;
        assert_eq!(rows[bot]["byes"].as_u64(), Some(expected));
    }
    assert!(rows.values().all(|r| r["buchholz"].is_number()));
    assert_standings_match_games(&out_dir, "swiss");
}

#[tokio::test(start_paused = true)]
async fn forfeits_of_an_absent_bot_are_recorded_and_counted_in_the_standings() {
    let config = support::config(
        "",
        &["a", "b", "c"],
        "hex",
        "games_per_pairing = 1\nconcurrency = 1\nabsent_forfeit_ms = 5000",
    );
    let server = TestServer::start_virtual_clock(&config).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    // a and b play their game (whoever it is first resigns at once); c never comes.
    let start = a.expect("start").await;
    let id = start["match"].as_str().unwrap().to_string();
    b.expect("start").await;
    a.send(json!({"type":"resign","match":id})).await;
    let (summary, out_dir, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 3);
    let games = read_games(&out_dir);
    let forfeits: Vec<&Value> = games.iter().filter(|g| g["reason"] == "forfeit").collect();
    assert_eq!(forfeits.len(), 2);
    for g in &forfeits {
        let loser = if g["result"] == "first" {
            &g["second"]
        } else {
            &g["first"]
        };
        assert_eq!(loser, "c", "{g}");
        let record = out_dir.join("records").join(g["record"].as_str().unwrap());
        assert!(record.exists(), "a forfeit has a record file too");
    }
    let rows = rows(&standings(&out_dir), "t");
    assert_eq!(rows["c"]["forfeit_losses"], 2);
    assert_eq!(rows["c"]["losses"], 2);
    assert_eq!(rows["b"]["wins"], 2, "b beat a (resigned) and c (forfeit)");
    assert_eq!(rows["a"]["wins"], 1);
    assert_standings_match_games(&out_dir, "t");
}

/// Polls `check` every 20 ms for up to 20 s.
async fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}

fn scripted_config(out_dir: &Path, initial_ms: u64) -> String {
    support::config(
        &format!(
            "out_dir = {:?}\nreconnect_grace_ms = 60000",
            out_dir.to_str().unwrap()
        ),
        &["a", "b"],
        "hex",
        &format!(
            "games_per_pairing = 2\nconcurrency = 1\nabsent_forfeit_ms = 0\n\
             clock = {{ initial_ms = {initial_ms}, increment_ms = 0, move_limit_ms = 0 }}"
        ),
    )
}

/// The moves journaled for game `id`, in order.
fn journaled_moves(out_dir: &Path, id: &str) -> Vec<Value> {
    journal_lines(out_dir)
        .into_iter()
        .filter(|e| e["kind"] == "move" && e["id"] == id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_league_killed_mid_game_resumes_from_the_journal_and_plays_every_game_once() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    std::fs::write(&config_path, scripted_config(&out, 60_000)).unwrap();

    let mut server = spawn_server(&config_path).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    // Game 1: a is first; b resigns.
    let g1 = "t-r1-p1-g1";
    assert_eq!(a.expect("start").await["match"], g1);
    b.expect("start").await;
    a.expect("turn").await;
    b.send(json!({"type":"resign","match":g1})).await;
    assert_eq!(a.expect("end").await["result"], "win");
    b.expect("end").await;
    // The standings are rewritten after the game, with its result.
    wait_until("standings.json shows game 1", || {
        std::fs::read_to_string(out.join("standings.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|s| rows(&s, "t")["a"]["games"] == 1)
    })
    .await;
    let after_one = rows(&standings(&out), "t");
    assert_eq!(
        (
            after_one["a"]["wins"].as_u64(),
            after_one["b"]["losses"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(after_one["a"]["points"], 1.0);

    // A second server on the same out_dir is refused while the first runs
    // (it has played a game, so it surely holds the lock).
    let second = serve_output(&config_path).await;
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("another arena server is running"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(
        !stdout.contains("listening"),
        "a refused server never says it listens: {stdout}"
    );
    // Game 2: b is first; four moves, then the server is killed mid-game.
    let g2 = "t-r1-p1-g2";
    assert_eq!(b.expect("start").await["match"], g2);
    a.expect("start").await;
    let played = ["A1", "B2", "C3", "D4"];
    for (i, mv) in played.iter().enumerate() {
        let (mover, other) = if i % 2 == 0 {
            (&mut b, &mut a)
        } else {
            (&mut a, &mut b)
        };
        mover.expect("turn").await;
        mover.play(g2, mv).await;
        let _ = other;
    }
    wait_until("four moves are journaled", || {
        journaled_moves(&out, g2).len() == 4
    })
    .await;
    let before_kill = journaled_moves(&out, g2);
    let pid = i32::try_from(server.child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = server.child.wait().await.unwrap();
    assert!(!status.success());
    drop(a);
    drop(b);
    assert_eq!(read_games(&out).len(), 1, "game 2 was not finished");

    // A crash in the middle of an append leaves a torn last line: it must be tolerated.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(out.join("journal.jsonl"))
            .unwrap();
        f.write_all(br#"{"kind":"move","id":"t-r1-p1-g2","ply":5,"te"#)
            .unwrap();
    }

    // Restart on the same config and out_dir: game 2 continues from its journaled moves.
    let server = spawn_server(&config_path).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let start_b = b.expect("start").await;
    let start_a = a.expect("start").await;
    for start in [&start_a, &start_b] {
        assert_eq!(start["match"], g2, "game 1 is not played again");
        assert_eq!(start["moves"], json!(played), "{start}");
    }
    let turn = b.expect("turn").await;
    assert_eq!(turn["ply"], 4);
    let journaled_left = before_kill.last().unwrap()["first_clock_ms"]
        .as_u64()
        .unwrap();
    let you = turn["clock"]["you_ms"].as_u64().unwrap();
    assert!(
        you <= journaled_left && you + 5_000 > journaled_left,
        "b's clock resumes from the journal: {you} vs {journaled_left}"
    );
    b.play(g2, "E5").await;
    a.expect("turn").await;
    a.send(json!({"type":"resign","match":g2})).await;
    assert_eq!(b.expect("end").await["result"], "win");
    let (status, printed) = server.exited(Duration::from_secs(30)).await;
    assert!(status.success());
    let printed = printed.join("\n");
    assert!(printed.contains("resuming from the journal"), "{printed}");
    assert!(printed.contains("t 2/2"), "{printed}");
    assert!(
        printed
            .ends_with("1 game played this run, 2 in the league so far; every tournament finished"),
        "the closing line counts the league's games: {printed}"
    );

    // Every scheduled game exactly once, one record file each, standings agree.
    let games = read_games(&out);
    let ids: Vec<&str> = games.iter().map(|g| g["match"].as_str().unwrap()).collect();
    assert_eq!(ids, [g1, g2]);
    let records: Vec<_> = std::fs::read_dir(out.join("records"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    for g in &games {
        assert!(records.contains(&g["record"].as_str().unwrap().to_string()));
    }
    let resumed = &games[1];
    assert_eq!(resumed["moves"], json!(["A1", "B2", "C3", "D4", "E5"]));
    let kept_think: Vec<u64> = before_kill
        .iter()
        .map(|m| m["think_ms"].as_u64().unwrap())
        .collect();
    let think: Vec<u64> = resumed["think_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        &think[..4],
        &kept_think[..],
        "journaled think times are kept"
    );
    assert_standings_match_games(&out, "t");
    assert_eq!(standings(&out)["tournaments"][0]["finished"], true);

    // A second restart on the finished league plays nothing, changes nothing, and says why.
    let again = serve_output(&config_path).await;
    assert!(again.status.success());
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.starts_with("this league is already finished (2 games"),
        "{stdout}"
    );
    assert_eq!(read_games(&out).len(), 2);

    // A changed config is refused, naming what differs.
    std::fs::write(&config_path, scripted_config(&out, 30_000)).unwrap();
    let refused = serve_output(&config_path).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("tournament t: clock differs: journal has initial_ms=60000"),
        "{stderr}"
    );
    assert!(stderr.contains("config has initial_ms=30000"), "{stderr}");
}

/// The unfinished game with the most journaled moves: (id, move texts).
fn running_game(out_dir: &Path) -> Option<(String, Vec<String>)> {
    let entries = journal_lines(out_dir);
    let finished: HashSet<&str> = entries
        .iter()
        .filter(|e| e["kind"] == "finished")
        .filter_map(|e| e["id"].as_str())
        .collect();
    let mut moves: HashMap<String, Vec<String>> = HashMap::new();
    for e in entries.iter().filter(|e| e["kind"] == "move") {
        let id = e["id"].as_str().unwrap();
        if finished.contains(id) {
            continue;
        }
        let list = moves.entry(id.to_string()).or_default();
        let ply = usize::try_from(e["ply"].as_u64().unwrap()).unwrap();
        list.truncate(ply - 1);
        list.push(e["text"].as_str().unwrap().to_string());
    }
    moves.into_iter().max_by_key(|(_, m)| m.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_engines_killed_mid_league_resume_and_finish_every_game_once() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    let config = format!(
        r#"
[server]
out_dir = {out:?}
ping_interval_ms = 1000

[[bot]]
name = "hex-engine"
builtin = "hex"
options = {{ time_ms = 100 }}

[[bot]]
name = "greedy"
builtin = "greedy"

[[tournament]]
name = "h"
game = "hex"
bots = ["hex-engine", "greedy"]
games_per_pairing = 3
concurrency = 1
clock = {{ initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }}
rules = {{ swap = false }}
"#,
        out = out.to_str().unwrap()
    );
    std::fs::write(&config_path, config).unwrap();

    let mut server = spawn_server(&config_path).await;
    // Kill it once a game is under way with a few moves on the journal.
    let mut cut_off = None;
    wait_until("a game has four journaled moves", || {
        cut_off = running_game(&out).filter(|(_, moves)| moves.len() >= 4);
        cut_off.is_some()
    })
    .await;
    let pid = i32::try_from(server.child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(!server.child.wait().await.unwrap().success());
    // What the journal holds after the kill is what the resumed game starts from.
    let (id, journaled) = running_game(&out).expect("a game was cut off");
    assert!(cut_off.is_some_and(|(first_id, _)| first_id == id));

    let server = spawn_server(&config_path).await;
    let (status, printed) = server.exited(Duration::from_secs(300)).await;
    assert!(status.success());
    let printed = printed.join("\n");
    assert!(
        printed.contains("1 continue from their last journaled move"),
        "{printed}"
    );

    let games = read_games(&out);
    let mut ids: Vec<&str> = games.iter().map(|g| g["match"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(
        ids,
        ["h-r1-p1-g1", "h-r1-p1-g2", "h-r1-p1-g3"],
        "each game once"
    );
    let records = std::fs::read_dir(out.join("records")).unwrap().count();
    assert_eq!(records, 3);
    let resumed = games.iter().find(|g| g["match"] == id.as_str()).unwrap();
    let moves: Vec<&str> = resumed["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        moves.len() >= journaled.len() && moves[..journaled.len()] == journaled[..],
        "{moves:?} starts with {journaled:?}"
    );
    for g in &games {
        let record = out.join("records").join(g["record"].as_str().unwrap());
        match arena::record::check_file(&record) {
            arena::record::CheckVerdict::Ok { .. } => {}
            other => panic!("{}: {other:?}", record.display()),
        }
    }
    assert_standings_match_games(&out, "h");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_game_whose_bot_stays_away_keeps_its_moves_and_the_absent_bot_loses_by_disconnect(
) {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    let config = support::config(
        &format!("out_dir = {:?}", out.to_str().unwrap()),
        &["a", "b"],
        "hex",
        "games_per_pairing = 1\nconcurrency = 1\nabsent_forfeit_ms = 1000\n\
         clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }",
    );
    std::fs::write(&config_path, config).unwrap();

    let mut server = spawn_server(&config_path).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let id = "t-r1-p1-g1";
    assert_eq!(a.expect("start").await["match"], id);
    b.expect("start").await;
    let played = ["A1", "B2", "C3", "D4"];
    for (i, mv) in played.iter().enumerate() {
        let mover = if i % 2 == 0 { &mut a } else { &mut b };
        mover.expect("turn").await;
        mover.play(id, mv).await;
    }
    wait_until("four moves are journaled", || {
        journaled_moves(&out, id).len() == 4
    })
    .await;
    let journaled = journaled_moves(&out, id);
    let started = journal_lines(&out)
        .into_iter()
        .find(|e| e["kind"] == "started" && e["id"] == id)
        .expect("the start is journaled")["time"]
        .clone();
    let pid = i32::try_from(server.child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(!server.child.wait().await.unwrap().success());
    drop(a);
    drop(b);

    // Restarted, only `a` comes back: after absent_forfeit_ms the game ends, `b` losing by
    // disconnect, with the moves played before the crash.
    let server = spawn_server(&config_path).await;
    let _a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let (status, _) = server.exited(Duration::from_secs(30)).await;
    assert!(status.success());
    let games = read_games(&out);
    assert_eq!(games.len(), 1);
    let game = &games[0];
    assert_eq!(game["result"], "first", "{game}");
    assert_eq!(game["reason"], "disconnect", "{game}");
    assert_eq!(game["moves"], json!(played), "{game}");
    let think: Vec<Value> = journaled.iter().map(|m| m["think_ms"].clone()).collect();
    assert_eq!(game["think_ms"], json!(think), "{game}");
    assert_eq!(game["started"], started, "the original start is kept");
    assert_ne!(game["started"], game["finished"], "{game}");
    let record = std::fs::read_to_string(
        out.join("records")
            .join(game["record"].as_str().expect("a record name")),
    )
    .unwrap();
    assert!(
        record.contains("R(A,1);B(B,2);R(C,3);B(D,4)"),
        "the record keeps the moves: {record}"
    );
    let rows = rows(&standings(&out), "t");
    assert_eq!(rows["b"]["disconnect_losses"], 1);
    assert_eq!(rows["b"]["forfeit_losses"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_server_like_ctrl_c_with_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    std::fs::write(&config_path, scripted_config(&out, 60_000)).unwrap();
    let server = spawn_server(&config_path).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let g1 = "t-r1-p1-g1";
    a.expect("start").await;
    b.expect("start").await;
    a.expect("turn").await;
    b.send(json!({"type":"resign","match":g1})).await;
    a.expect("end").await;
    wait_until("game 1 is written", || read_games(&out).len() == 1).await;
    let pid = i32::try_from(server.child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let (status, printed) = server.exited(Duration::from_secs(30)).await;
    assert!(status.success(), "SIGTERM is a clean stop: {status:?}");
    let printed = printed.join("\n");
    assert!(
        printed.ends_with("1 game played; 1 of 2 league games done"),
        "the summary is printed: {printed}"
    );
}

/// A plain HTTP/1.1 GET; the whole answer (headers and body) as text.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: arena\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// Tokens never leave the config: not in the log (at its most verbose), the output folder
/// (journal, records, games.jsonl, standings) or anything the web view serves; neither does a
/// token someone tried.
/// A league that is over on a server kept up for its web view (`exit_when_done = false`): the
/// built-in bots, told the league is over, stop for good. They are not restarted (which logged
/// a warning, and then every second a refused login).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_bots_told_the_league_is_over_are_not_restarted() {
    let told = [("there is nothing more to play here; stopping", 2)];
    a_finished_league_restarts_none_of(&["first:random", "second:random"], "", &told).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn program_bots_told_the_league_is_over_are_not_restarted() {
    // Unconfined (`sandbox = "none"`), so that it runs on any machine: the supervisor is the
    // same with and without the sandbox.
    let engine = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge/gtp_engine.py");
    let program = format!(
        "gtp-program\nprogram = \"gtp:python3 {} {}\"",
        fixture.display(),
        engine.path().display()
    );
    let told = [
        ("the referee says the league is over", 1),
        ("there is nothing more to play here; stopping", 1),
    ];
    let sandbox = "\n[programs]\nsandbox = \"none\"";
    a_finished_league_restarts_none_of(&[&program, "second:random"], sandbox, &told).await;
}

/// Plays a one-game Hex league between `bots` (as `support::config` takes them: built-in or
/// program bots) on a real `arena serve` that stays up for its web view after the league
/// (`exit_when_done = false`), with `more` config lines after the `[server]` table; waits
/// until its log shows each `told` text the given number of times (each bot hearing that the
/// league is over), then longer than the delay before a restart, and checks that no bot was
/// restarted.
async fn a_finished_league_restarts_none_of(bots: &[&str], more: &str, told: &[(&str, usize)]) {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    let config = support::config(
        &format!("out_dir = {out:?}\nexit_when_done = false\n{more}"),
        bots,
        "hex",
        "games_per_pairing = 1\nconcurrency = 1\n\
         clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }",
    );
    std::fs::write(&config_path, config).unwrap();
    let mut server = spawn_server(&config_path).await;
    let log = || std::fs::read_to_string(out.join("arena.log")).unwrap_or_default();
    wait_until("every bot was told the league is over", || {
        let text = log();
        told.iter()
            .all(|(said, n)| text.matches(said).count() == *n)
    })
    .await;
    let played = read_games(&out);
    assert_eq!(played.len(), 1);
    assert_ne!(
        played[0]["reason"], "forfeit",
        "both bots played: {:?}",
        played[0]
    );
    // Longer than the wait before a restart: a restarted bot would have logged in again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let text = log();
    assert!(!text.contains("restarting"), "{text}");
    for (said, n) in told {
        assert_eq!(text.matches(said).count(), *n, "{said}: {text}");
    }
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server stays up for its web view"
    );
    server.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_reach_logs_files_or_the_web_view() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    let (token_a, token_b, guessed) = (
        "Tok3n-of-a-9f8e7d6c",
        "Tok3n-of-b-1a2b3c4d",
        "Gu3ssed-5e6f7a8b",
    );
    let config = support::config(
        &format!(
            "out_dir = {:?}\nexit_when_done = false",
            out.to_str().unwrap()
        ),
        &["a", "b"],
        "hex",
        "games_per_pairing = 1\nconcurrency = 1\n\
         clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }",
    )
    .replace("token = \"ta\"", &format!("token = {token_a:?}"))
    .replace("token = \"tb\"", &format!("token = {token_b:?}"));
    std::fs::write(&config_path, config).unwrap();
    let log_path = dir.path().join("server.log");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["-vv", "serve", "--config"])
        .arg(&config_path)
        .args(["--listen", "127.0.0.1:0", "--web", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    for _ in 0..2 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("a line")
            .unwrap()
            .expect("a line");
        printed.push(line);
    }
    let (first, second) = (printed[0].clone(), printed[1].clone());
    let addr: std::net::SocketAddr = first
        .strip_prefix("arena listening on ")
        .unwrap()
        .parse()
        .unwrap();
    let web: std::net::SocketAddr = second
        .strip_prefix("web view: http://")
        .and_then(|s| s.strip_suffix('/'))
        .unwrap()
        .parse()
        .unwrap();

    let mut wrong = Client::hello(addr, 1, "a", guessed, &["hex"]).await;
    wrong.expect_error("auth_failed").await;
    let mut a = Client::login(addr, "a", token_a, &["hex"]).await;
    let mut b = Client::login(addr, "b", token_b, &["hex"]).await;
    let id = "t-r1-p1-g1";
    a.expect("start").await;
    b.expect("start").await;
    a.expect("turn").await;
    a.play(id, "A1").await;
    b.expect("turn").await;
    let mut served = String::new();
    for path in [
        "/",
        "/play",
        "/api/bots",
        "/api/games",
        &format!("/api/games/{id}"),
        "/api/standings",
    ] {
        served.push_str(&http_get(web, path).await);
    }
    b.send(json!({"type":"resign","match":id})).await;
    a.expect("end").await;
    wait_until("the game is written", || read_games(&out).len() == 1).await;
    let games = read_games(&out);
    let record = games[0]["record"].as_str().unwrap().to_string();
    for path in [
        "/api/games",
        "/api/standings",
        "/api/bots",
        &format!("/records/{record}"),
    ] {
        served.push_str(&http_get(web, path).await);
    }
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the server stops")
        .unwrap();
    assert!(status.success());
    let mut files = String::new();
    let mut folders = vec![out.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
    }
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("failed login"), "the failed login is logged");
    assert!(log.contains("127.0.0.1"), "with the address");
    assert!(
        files.contains("A1") || files.contains("(A,1)"),
        "the files were read"
    );
    assert!(
        served.contains("\"bots\""),
        "the web view answered: {served}"
    );
    for secret in [token_a, token_b, guessed] {
        assert!(!log.contains(secret), "{secret} in the log");
        assert!(!files.contains(secret), "{secret} in the output folder");
        assert!(!served.contains(secret), "{secret} served by the web view");
    }
}

/// A free loopback port below Linux's default ephemeral range (32768–60999), so that no
/// server or client binding port 0 is given it.
fn port_outside_the_ephemeral_range() -> u16 {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    for _ in 0..1000 {
        let port = rng.gen_range(20_000..32_000);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000..32000");
}

/// `arena serve` on `config` listening on `listen`, as `spawn_server` but on a given address.
async fn spawn_server_on(config: &Path, listen: &str) -> support::ServerProcess {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["serve", "--config"])
        .arg(config)
        .args(["--listen", listen])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server prints its address")
        .unwrap()
        .expect("a first line");
    let addr = first
        .strip_prefix("arena listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .parse()
        .unwrap();
    let stdout = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line);
        }
        seen
    });
    support::ServerProcess {
        child,
        addr,
        stdout,
    }
}

/// A server restart does not need every student to restart their bot: `arena bot` reconnects
/// with backoff, the interrupted game resumes, and the league finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arena_bots_reconnect_after_the_server_is_killed_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let config_path = dir.path().join("arena.toml");
    std::fs::write(&config_path, scripted_config(&out, 60_000)).unwrap();
    // Not a port the kernel hands out for port 0: while this server is down, another test's
    // server binding port 0 could get it, and this test's bots (named and keyed like every
    // scripted league's) would log in there and play that test's games.
    let port = port_outside_the_ephemeral_range();
    let mut server = spawn_server_on(&config_path, &format!("127.0.0.1:{port}")).await;
    let bot = |name: &str, token: &str| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"))
            .args(["bot", "--server", &server.addr.to_string(), "--name", name])
            .args([
                "--token",
                token,
                "--engine",
                "hex",
                "--option",
                "time_ms=150",
            ])
            .args(["--games", "hex", "--reconnect-for-ms", "5000"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let bot_a = bot("a", "ta");
    let bot_b = bot("b", "tb");
    wait_until("a few moves of game 1 are journaled", || {
        journaled_moves(&out, "t-r1-p1-g1").len() >= 3
    })
    .await;
    let pid = i32::try_from(server.child.id().unwrap()).unwrap();
    // SAFETY: kill(2) on the child this test spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    assert!(!server.child.wait().await.unwrap().success());
    // Down for a moment, then back on the same port.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let server = spawn_server_on(&config_path, &format!("127.0.0.1:{port}")).await;
    let (status, printed) = server.exited(Duration::from_secs(120)).await;
    assert!(status.success(), "{printed:?}");
    let games = read_games(&out);
    assert_eq!(games.len(), 2, "both games were played: {printed:?}");
    assert!(
        games
            .iter()
            .all(|g| g["reason"] != "disconnect" && g["reason"] != "forfeit"),
        "{games:?}"
    );
    // The bots give up once the finished league's server has been gone for 5 s.
    for bot in [bot_a, bot_b] {
        let output = tokio::time::timeout(Duration::from_secs(30), bot.wait_with_output())
            .await
            .expect("the bot stops by itself")
            .unwrap();
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(log.contains("reconnecting in"), "{log}");
    }
}

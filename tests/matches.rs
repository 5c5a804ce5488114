//! `arena match` end to end, through the real binary: built-in engines and the fake GTP engine
//! of the bridge tests (tests/fixtures/bridge/gtp_engine.py, which plays the first empty cell)
//! play on the in-process referee; a match is recorded, interrupted with SIGINT and resumed;
//! an SPRT stops a lopsided match early; a league `program` bot runs in its folder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::processes_mentioning;

fn arena() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_arena"));
    command.stdin(Stdio::null());
    command
}

fn fake_gtp(dir: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge/gtp_engine.py");
    format!("gtp:python3 {} {}", script.display(), dir.display())
}

fn json_of(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "arena failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn games_jsonl(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("games.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sum(v: &Value) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum()
}

#[test]
fn a_match_of_builtins_plays_every_game_from_the_openings_and_reports() {
    let out = tempfile::tempdir().unwrap();
    let output = arena()
        .args([
            "match",
            "hex",
            "--engine",
            "builtin:greedy",
            "--engine",
            "builtin:random",
        ])
        .args([
            "--games",
            "4",
            "--concurrency",
            "2",
            "--clock",
            "5+0",
            "--json",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    let report = json_of(&output);
    assert_eq!(report["games"], 4);
    let (w, d, l) = (
        report["wins"].as_u64().unwrap(),
        report["draws"].as_u64().unwrap(),
        report["losses"].as_u64().unwrap(),
    );
    assert_eq!(w + d + l, 4);
    assert_eq!(sum(&report["pentanomial"]), 2, "{report}");
    let reasons: u64 = report["reasons"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(reasons, 4);
    let score = report["score"].as_f64().unwrap();
    assert!((score - (w as f64 + 0.5 * d as f64) / 4.0).abs() < 1e-9);
    assert!(report["elo_ci95"].as_array().unwrap().len() == 2);
    assert!(report["sprt"].is_null());

    // Records and games.jsonl are in the folder; each pair starts from one built-in opening
    // with the colours reversed.
    let lines = games_jsonl(out.path());
    assert_eq!(lines.len(), 4);
    assert_eq!(
        std::fs::read_dir(out.path().join("records"))
            .unwrap()
            .count(),
        4
    );
    let openings =
        arena::openings::builtin_openings(arena::game::GameId::Hex, &Value::Null).unwrap();
    for line in &lines {
        let id = line["match"].as_str().unwrap();
        let number: usize = id.rsplit_once("-g").unwrap().1.parse().unwrap();
        let opening = &openings[(number - 1) / 2];
        let moves: Vec<&str> = line["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert_eq!(&moves[..opening.len()], opening.as_slice(), "{id}");
        let greedy_first = line["first"] == "greedy";
        assert_eq!(greedy_first, number % 2 == 1, "{id}: colours alternate");
    }

    // Run again with the same command: everything is already played; the table is printed.
    let output = arena()
        .args([
            "match",
            "hex",
            "--engine",
            "builtin:greedy",
            "--engine",
            "builtin:random",
        ])
        .args([
            "--games",
            "4",
            "--concurrency",
            "2",
            "--clock",
            "5+0",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}");
    assert!(
        table.contains(&format!("greedy: W {w} D {d} L {l}")),
        "{table}"
    );
    for part in ["Elo", "LOS", "pairs", "end reasons"] {
        assert!(table.contains(part), "{part}: {table}");
    }
    assert_eq!(games_jsonl(out.path()).len(), 4, "nothing played twice");
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Whether process `pid` is gone within a second: a child killed as its parent exits stays a
/// zombie until init reaps it, which on a loaded machine takes a moment. An engine left running
/// is still there after the second.
fn gone_soon(pid: i32) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while alive(pid) {
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

#[test]
fn an_interrupted_match_kills_its_engines_and_resumes_with_the_same_command() {
    let out = tempfile::tempdir().unwrap();
    let engine_dir = tempfile::tempdir().unwrap();
    let command = |json: bool| {
        let mut c = arena();
        c.args(["match", "hex", "--engine", "builtin:hex:time_ms=100"])
            .args(["--engine", &fake_gtp(engine_dir.path()), "--name", "fake"])
            .args(["--games", "6", "--clock", "20+0", "--out"])
            .arg(out.path());
        if json {
            c.arg("--json");
        }
        c
    };
    let child = command(false)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while games_jsonl(out.path()).is_empty() {
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "no game finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sends SIGINT to the child we started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}");
    let played = games_jsonl(out.path()).len();
    assert!(played < 6, "interrupted before the end ({played} games)");
    assert!(table.contains("interrupted"), "{table}");
    assert!(
        table.contains(&format!("games       {played} of 6")),
        "{table}"
    );
    let pid: i32 = std::fs::read_to_string(engine_dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(gone_soon(pid), "the engine process is gone after ctrl-c");

    let report = json_of(&command(true).output().unwrap());
    assert_eq!(report["games"], 6);
    assert_eq!(report["resumed_games"].as_u64().unwrap() as usize, played);
    let lines = games_jsonl(out.path());
    let mut ids: Vec<&str> = lines.iter().map(|l| l["match"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "every game once");
}

#[test]
fn an_sprt_stops_a_lopsided_match_with_h1() {
    let engine_dir = tempfile::tempdir().unwrap();
    let output = arena()
        .args(["match", "hex", "--engine", "builtin:greedy", "--engine"])
        .arg(fake_gtp(engine_dir.path()))
        .args(["--games", "200", "--clock", "10+0", "--json"])
        .args(["--sprt", "elo0=0,elo1=20,alpha=0.05,beta=0.05"])
        .output()
        .unwrap();
    let report = json_of(&output);
    let sprt = &report["sprt"];
    assert_eq!(sprt["decision"], "H1", "{report}");
    assert!(sprt["llr"].as_f64().unwrap() >= sprt["upper"].as_f64().unwrap());
    assert!((sprt["upper"].as_f64().unwrap() - (0.95f64 / 0.05).ln()).abs() < 1e-9);
    let games = report["games"].as_u64().unwrap();
    assert!(games < 40, "stopped early, after {games} games");
    assert_eq!(report["wins"].as_u64().unwrap(), games, "{report}");
}

#[test]
fn per_engine_settings_must_follow_an_engine() {
    let output = arena()
        .args([
            "match",
            "hex",
            "--name",
            "x",
            "--engine",
            "builtin:greedy",
            "--engine",
            "builtin:random",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--name must follow"));
    let output = arena()
        .args(["match", "hex", "--engine", "builtin:greedy"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("exactly two --engine"));
    let output = arena()
        .args([
            "match",
            "hex",
            "--engine",
            "builtin:jiu",
            "--engine",
            "builtin:greedy",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--engine builtin:jiu does not play hex"),
        "{stderr}"
    );
    let output = arena()
        .args([
            "match",
            "hex",
            "--engine",
            "uci:./x",
            "--engine",
            "builtin:random",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected json, gtp or sau"));
}

#[test]
fn a_league_program_bot_runs_in_its_folder_one_child_per_game() {
    let root = tempfile::tempdir().unwrap();
    let team = root.path().join("team7");
    std::fs::create_dir(&team).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge/gtp_engine.py");
    std::fs::copy(&script, team.join("engine.py")).unwrap();
    let out: PathBuf = root.path().join("out");
    let config = format!(
        r#"
[server]
listen = "127.0.0.1:0"
out_dir = "{}"
progress = false

[[bot]]
name = "team7"
program = "gtp:python3 engine.py ."
dir = "{}"
memory_mb = 1024

[[bot]]
name = "greedy"
builtin = "greedy"

[[tournament]]
name = "hex-cup"
game = "hex"
bots = ["team7", "greedy"]
games_per_pairing = 2
rounds = 1
concurrency = 1
clock = {{ initial_ms = 10000 }}

# The engine writes its pid and log into its folder for this test to read: unconfined.
[programs]
sandbox = "none"
"#,
        out.display(),
        team.display()
    );
    let config_path = root.path().join("arena.toml");
    std::fs::write(&config_path, config).unwrap();
    let output = arena()
        .arg("serve")
        .arg("--config")
        .arg(&config_path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = games_jsonl(&out);
    assert_eq!(lines.len(), 2);
    // The engine ran in its folder (it wrote its pid to "."): once for the bridge's start check,
    // then once per game, and is gone.
    let log = std::fs::read_to_string(team.join("log")).unwrap();
    assert_eq!(log.matches("boardsize 11").count(), 1 + 2, "{log}");
    let pid: i32 = std::fs::read_to_string(team.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone_soon(pid),
        "the engine process is gone when the league ends: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_match_can_be_watched_in_the_web_view_while_it_plays() {
    use std::io::{BufRead, BufReader, Read, Write};
    let out = tempfile::tempdir().unwrap();
    let mut child = arena()
        .args([
            "match",
            "hex",
            "--engine",
            "builtin:hex:time_ms=100",
            "--engine",
            "builtin:hex:time_ms=100",
            "--games",
            "2",
            "--json",
            "--web",
            "127.0.0.1:0",
            "--out",
        ])
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let address = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no web view line");
        if let Some(rest) = line.trim().strip_prefix("web view: http://") {
            break rest.trim_end_matches('/').to_string();
        }
    };
    // Keep reading stderr so the progress lines never block the match.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    // The match's games appear in the live API while it runs.
    let began = Instant::now();
    let games = loop {
        let answer = get("/api/games");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        let games = body["games"].as_array().unwrap().clone();
        if !games.is_empty() {
            break games;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "no game started");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(games[0]["game"], "hex");
    assert_eq!(games[0]["tournament"], "match");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["games"], 2);
}

#[test]
fn program_engines_play_several_games_at_once_one_process_each_and_leave_none() {
    let out = tempfile::tempdir().unwrap();
    let engine_dir = tempfile::tempdir().unwrap();
    let report = json_of(
        &arena()
            .args(["match", "hex", "--engine", "builtin:hex:time_ms=30"])
            .args(["--engine", &fake_gtp(engine_dir.path()), "--name", "fake"])
            .args([
                "--games",
                "2",
                "--concurrency",
                "2",
                "--clock",
                "60+0",
                "--json",
            ])
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap(),
    );
    assert_eq!(report["games"], 2);
    let lines = games_jsonl(out.path());
    assert_eq!(lines.len(), 2);
    let time = |line: &Value, key: &str| {
        chrono::DateTime::parse_from_rfc3339(line[key].as_str().unwrap()).unwrap()
    };
    let (a, b) = (&lines[0], &lines[1]);
    assert!(
        time(a, "started") < time(b, "finished") && time(b, "started") < time(a, "finished"),
        "the two games overlapped in time: {a} {b}"
    );
    // One engine process per game (plus the bridge's start check), each given its own setup.
    let log = std::fs::read_to_string(engine_dir.path().join("log")).unwrap();
    assert_eq!(log.matches("boardsize 11").count(), 1 + 2, "{log}");
    let left = processes_mentioning(&engine_dir.path().display().to_string());
    assert!(left.is_empty(), "engine processes left: {left:?}");
}

#[test]
fn a_built_in_engine_on_stdio_plays_as_a_json_program() {
    // `arena bot --stdio` is how one build of the engines plays another's: here the same
    // build's greedy engine, run as a `json:` program, against the built-in random engine.
    let out = tempfile::tempdir().unwrap();
    let program = format!(
        "json:{} bot --stdio --engine greedy",
        env!("CARGO_BIN_EXE_arena")
    );
    let report = json_of(
        &arena()
            .args([
                "match",
                "surakarta",
                "--engine",
                &program,
                "--name",
                "stdio",
            ])
            .args(["--engine", "builtin:random", "--games", "2", "--json"])
            .args(["--clock", "60+0"])
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap(),
    );
    assert_eq!(report["games"], 2, "{report}");
    let lines = games_jsonl(out.path());
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let reason = line["reason"].as_str().unwrap();
        assert!(
            !["crash", "disconnect", "timeout", "illegal_move", "forfeit"].contains(&reason),
            "the stdio engine misbehaved: {line}"
        );
        assert!(line["moves"].as_array().unwrap().len() > 4, "{line}");
    }
}

#[test]
fn a_finished_match_folder_refuses_a_changed_command() {
    let out = tempfile::tempdir().unwrap();
    let run = |opponent: &str, clock: &str| {
        arena()
            .args(["match", "hex", "--engine", "builtin:greedy", "--engine"])
            .args([opponent, "--games", "2", "--clock", clock, "--out"])
            .arg(out.path())
            .output()
            .unwrap()
    };
    let first = run("builtin:random", "5+0");
    assert!(first.status.success(), "{first:?}");
    let played = games_jsonl(out.path());
    assert_eq!(played.len(), 2);
    let changed = run("builtin:greedy", "60+1");
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert!(!changed.status.success(), "{stderr}");
    assert!(
        stderr.contains("--engine builtin:greedy but this --out was started with builtin:random"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--clock 60+1 but this --out was started with 5+0"),
        "{stderr}"
    );
    assert!(changed.stdout.is_empty(), "no table for a refused command");
    assert_eq!(games_jsonl(out.path()), played, "the folder is untouched");
}

/// The moves of each game of a `duel` of two random engines played with `seed` (the library's
/// `arena duel`), in game order.
fn duel_moves(seed: u64) -> Vec<Value> {
    let out = tempfile::tempdir().unwrap();
    let command = arena::matches::MatchCommand::duel(
        arena::game::GameId::Hex,
        "random",
        &serde_json::json!({}),
        "random",
        &serde_json::json!({}),
        2,
        2000,
        String::new(),
        seed,
    )
    .unwrap();
    let plan = command.plan(out.path().to_path_buf()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut observer = |_: &arena::matches::MatchReport, _: Option<Duration>| {};
    let report = runtime
        .block_on(arena::matches::run(
            &plan,
            None,
            tokio_util::sync::CancellationToken::new(),
            &mut observer,
        ))
        .unwrap();
    assert_eq!(report.games, 2);
    let mut games = games_jsonl(out.path());
    games.sort_by(|a, b| a["match"].as_str().cmp(&b["match"].as_str()));
    games.iter().map(|g| g["moves"].clone()).collect()
}

#[test]
fn a_duels_seed_reaches_its_engines_same_seed_same_games() {
    let first = duel_moves(7);
    assert_eq!(first.len(), 2);
    assert_eq!(duel_moves(7), first, "the same seed plays the same games");
    assert_ne!(duel_moves(8), first, "another seed plays other games");
}

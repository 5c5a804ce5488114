//! The sandbox of `program` bots, through the real binary (`arena serve`): hostile programs
//! (tests/fixtures/sandbox) are contained and the league still finishes with standings that
//! are exactly its games'; honest engines (the shipped C sau engine, a Python json engine, a
//! GTP engine, an engine reading data files from its own folder) play whole games sandboxed;
//! the shipped demo's Python program bot plays its Hex games sandboxed; a program that cannot
//! start forfeits its games at once; a machine without bubblewrap is
//! refused with a message saying what to install; `arena sandbox-check` reports what an
//! engine could not do. Tests that need bubblewrap skip, saying so, when it is missing,
//! except under CI (`CI=true`), where they fail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::{last_lines, processes_mentioning};

fn arena() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_arena"));
    command.stdin(Stdio::null());
    command
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Whether bubblewrap is here; without it, a test skips (saying so) or, under CI, fails.
fn bwrap_or_skip(test: &str) -> bool {
    if arena::sandbox::find_on_path("bwrap").is_some() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: bubblewrap (bwrap) is missing, and CI=true: install it (apt-get install bubblewrap)"
    );
    // Straight to stderr: the test harness does not capture this, so the skip is seen.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    );
    false
}

/// A fresh folder the unprivileged sandbox user may read (temporary folders are 0700).
fn open_dir(root: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn copy_into(dir: &Path, from: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    let target = dir.join(name);
    std::fs::copy(from, &target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn games(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("games.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `arena -v serve` on `config` (written into `root`), bounded by `limit`; returns its
/// output and how long it took.
fn serve(root: &Path, config: &str, limit: Duration) -> (Output, Duration) {
    let path = root.join("arena.toml");
    std::fs::write(&path, config).unwrap();
    let started = Instant::now();
    let mut child = arena()
        .args(["-v", "serve", "--config"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr meanwhile so that the server never blocks on a full pipe.
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut { stderr }, &mut text).unwrap();
        text
    });
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
            panic!(
                "the league did not finish within {limit:?}; its log ends:\n{}",
                last_lines(&stderr, 40)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    let mut output = child.wait_with_output().unwrap();
    output.stderr = reader.join().unwrap();
    (output, elapsed)
}

/// The log of a league that finished and ran its program bots in the sandbox.
fn finished_sandboxed(output: &Output) -> String {
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{}", last_lines(&log, 40));
    assert!(
        log.contains("program bots run in a sandbox"),
        "{}",
        last_lines(&log, 40)
    );
    log
}

/// Waits up to 3 s for every process mentioning `needle` to be gone.
fn none_left(needle: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let left = processes_mentioning(needle);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The points each bot has in standings.json's tournament `name`.
fn standings_points(out: &Path, name: &str) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(out.join("standings.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let tournament = json["tournaments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tournament {name} in {json}"));
    let mut rows: Vec<(String, f64)> = tournament["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["points"].as_f64().unwrap(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// The points each bot earned in `lines` (win 1, draw 0.5, loss 0).
fn points_of(lines: &[Value]) -> Vec<(String, f64)> {
    let mut points = std::collections::BTreeMap::new();
    for line in lines {
        let (first, second) = (
            line["first"].as_str().unwrap().to_string(),
            line["second"].as_str().unwrap().to_string(),
        );
        let (a, b) = match line["result"].as_str().unwrap() {
            "first" => (1.0, 0.0),
            "second" => (0.0, 1.0),
            _ => (0.5, 0.5),
        };
        *points.entry(first).or_insert(0.0) += a;
        *points.entry(second).or_insert(0.0) += b;
    }
    points.into_iter().collect()
}

/// A free loopback port (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn hostile_programs_are_contained_and_the_league_finishes_with_its_games_standings() {
    if !bwrap_or_skip(
        "hostile_programs_are_contained_and_the_league_finishes_with_its_games_standings",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let hostile = open_dir(root.path(), "hostile");
    copy_into(&hostile, &fixture("sandbox/hostile_gtp.py"), "engine.py");
    let other = open_dir(root.path(), "other");
    copy_into(&other, &fixture("sandbox/hostile_gtp.py"), "engine.py");
    let out = root.path().join("out");
    // The test listens on a loopback port of its own: the engine must not reach it.
    let test_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    test_listener.set_nonblocking(true).unwrap();
    let test_port = test_listener.local_addr().unwrap().port();
    let referee_port = free_port();
    let config_path = root.path().join("arena.toml");
    let config = format!(
        r#"
[server]
listen = "127.0.0.1:{referee_port}"
out_dir = "{out}"
progress = false

[[bot]]
name = "hostile"
program = "gtp:python3 engine.py attacks {config} {out} {other} {referee_port} {test_port} {pid}"
dir = "{hostile}"
scratch_mb = 8

[[bot]]
name = "flood"
program = "gtp:python3 engine.py flood"
dir = "{other}"

[[bot]]
name = "random"
builtin = "random"

[[tournament]]
name = "hex"
game = "hex"
bots = ["hostile", "flood", "random"]
games_per_pairing = 1
concurrency = 3
clock = {{ initial_ms = 20000 }}
"#,
        config = config_path.display(),
        out = out.display(),
        other = other.display(),
        hostile = hostile.display(),
        pid = std::process::id(),
    );
    let (output, _) = serve(root.path(), &config, Duration::from_secs(50));
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}", last_lines(&log, 40));
    // Every attack was tried (at the start check and in each of its two games) and failed.
    for attack in [
        "read-config",
        "read-other-bot",
        "connect-referee",
        "connect-test-port",
        "write-out-dir",
        "kill-parent",
        "list-processes",
        "fork-10000",
        "allocate-10GiB",
        "fill-scratch",
    ] {
        let contained = log.matches(&format!("attack {attack}: contained")).count();
        assert!(
            contained >= 3,
            "{attack} contained {contained} times, not at each of the 3 starts:\n{}",
            log.lines()
                .filter(|l| l.contains("attack "))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let mut reports: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("engine stderr: attack ").map(|(_, r)| r))
        .collect();
    reports.sort();
    reports.dedup();
    eprintln!("what the hostile engine reported:\n{}", reports.join("\n"));
    assert!(!log.contains("SUCCEEDED"), "{}", last_lines(&log, 60));
    assert!(log.contains("attacks done"));
    assert!(
        log.contains("printed more than its 16 MiB of output"),
        "the flood was cut and logged"
    );
    // Nothing reached the test's port; nothing was written into out_dir.
    assert!(
        test_listener.accept().is_err(),
        "an engine reached the test's port"
    );
    assert!(!out.join("hacked").exists());
    // The league finished: its three games, and standings that are exactly theirs.
    let lines = games(&out);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(standings_points(&out, "hex"), points_of(&lines));
    let records = std::fs::read_dir(out.join("records")).unwrap().count();
    assert_eq!(records, lines.len(), "one record per game");
    let flood_games: Vec<&Value> = lines
        .iter()
        .filter(|l| l["first"] == "flood" || l["second"] == "flood")
        .collect();
    for game in &flood_games {
        let flood_first = game["first"] == "flood";
        let won = if flood_first { "first" } else { "second" };
        assert_ne!(game["result"], won, "the flooding engine lost: {game}");
    }
    for line in &lines {
        assert_ne!(line["reason"], "forfeit", "every game was played: {line}");
    }
    let left = none_left(&root.path().display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// The shipped C sau engine built into `dir`, or `None` (saying why) without a C compiler.
fn build_c_engine(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("bots/c/connect6_sau.c");
    let target = dir.join("connect6_sau");
    let built = Command::new("cc")
        .args(["-O2", "-std=c99", "-o"])
        .arg(&target)
        .arg(&source)
        .status();
    match built {
        Ok(status) if status.success() => Some(target),
        other => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cannot build the C engine under CI: {other:?}"
            );
            eprintln!("no C compiler ({other:?}): the C engine is left out");
            None
        }
    }
}

#[test]
fn honest_engines_play_whole_games_sandboxed() {
    if !bwrap_or_skip("honest_engines_play_whole_games_sandboxed") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let c_dir = open_dir(root.path(), "c");
    let c_engine = build_c_engine(&c_dir);
    let book = open_dir(root.path(), "book");
    copy_into(&book, &fixture("bridge/sau_engine.py"), "engine.py");
    // It reads its patterns from its folder, and writes its pid there (its private copy).
    std::fs::write(book.join("patterns.in"), "patterns\n").unwrap();
    let hex = open_dir(root.path(), "hex");
    copy_into(&hex, &fixture("bridge/gtp_engine.py"), "gtp.py");
    copy_into(&hex, &fixture("bridge/json_engine.py"), "json_engine.py");
    let out = root.path().join("out");
    let c6_opponent = if c_engine.is_some() {
        "[[bot]]\nname = \"c-sau\"\nprogram = \"sau:./connect6_sau\"\n".to_string()
            + &format!("dir = \"{}\"\n", c_dir.display())
    } else {
        "[[bot]]\nname = \"c-sau\"\nbuiltin = \"random\"\n".to_string()
    };
    let config = format!(
        r#"
[server]
listen = "127.0.0.1:0"
out_dir = "{out}"
progress = false

{c6_opponent}
[[bot]]
name = "book"
program = "sau:python3 engine.py"
dir = "{book}"
scratch_mb = 4

[[bot]]
name = "gtp"
program = "gtp:python3 gtp.py /tmp"
dir = "{hex}"

[[bot]]
name = "json"
program = "json:python3 json_engine.py /tmp ok"
dir = "{hex}"

[[tournament]]
name = "c6"
game = "connect6"
bots = ["c-sau", "book"]
games_per_pairing = 2
clock = {{ initial_ms = 30000 }}

[[tournament]]
name = "hex"
game = "hex"
bots = ["gtp", "json"]
games_per_pairing = 2
clock = {{ initial_ms = 30000 }}
"#,
        out = out.display(),
        book = book.display(),
        hex = hex.display(),
    );
    let (output, _) = serve(root.path(), &config, Duration::from_secs(50));
    let log = finished_sandboxed(&output);
    let lines = games(&out);
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        let reason = line["reason"].as_str().unwrap();
        assert!(
            ![
                "crash",
                "disconnect",
                "timeout",
                "illegal_move",
                "forfeit",
                "resign"
            ]
            .contains(&reason),
            "an honest engine failed in the sandbox: {line}\n{}",
            last_lines(&log, 40)
        );
        assert!(line["moves"].as_array().unwrap().len() > 4, "{line}");
    }
    // The engine with a writable copy wrote into the copy, never into its real folder.
    assert!(!book.join("pid").exists());
    let left = none_left(&root.path().display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_program_that_cannot_start_forfeits_its_games_at_once_and_says_why_once() {
    // About starts and forfeits, so it runs on any machine: sandboxed where bubblewrap is
    // (the sandbox captures stderr and the message quotes it), else unconfined (stderr is
    // the server's own).
    let sandboxed = arena::sandbox::find_on_path("bwrap").is_some();
    let root = tempfile::tempdir().unwrap();
    let broken = open_dir(root.path(), "broken");
    std::fs::write(
        broken.join("engine.sh"),
        "#!/bin/sh\necho 'cannot load weights.bin: no such file' >&2\nexit 3\n",
    )
    .unwrap();
    let out = root.path().join("out");
    let config = format!(
        r#"
[server]
listen = "127.0.0.1:0"
out_dir = "{out}"
progress = false

[[bot]]
name = "broken"
program = "sau:sh engine.sh"
dir = "{broken}"

[[bot]]
name = "random"
builtin = "random"

[[tournament]]
name = "c6"
game = "connect6"
bots = ["broken", "random"]
games_per_pairing = 4
concurrency = 1

[programs]
sandbox = "{sandbox}"
failed_starts = 2
"#,
        out = out.display(),
        broken = broken.display(),
        sandbox = if sandboxed { "auto" } else { "none" },
    );
    // absent_forfeit_ms is 60 s by default: four games would take four minutes.
    let (output, elapsed) = serve(root.path(), &config, Duration::from_secs(40));
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}", last_lines(&log, 40));
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    let lines = games(&out);
    assert_eq!(lines.len(), 4);
    for line in &lines {
        assert_eq!(line["reason"], "forfeit", "{line}");
        let broken_first = line["first"] == "broken";
        assert_eq!(
            line["result"],
            if broken_first { "second" } else { "first" },
            "{line}"
        );
    }
    let gave_up: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("failed to start 2 times in a row"))
        .collect();
    assert_eq!(gave_up.len(), 1, "said once: {gave_up:?}");
    if sandboxed {
        assert!(
            gave_up[0].contains("its last lines on stderr: `cannot load weights.bin"),
            "with its stderr: {}",
            gave_up[0]
        );
    } else {
        assert!(log.contains("cannot load weights.bin"));
        assert!(
            log.contains("WITHOUT a sandbox"),
            "sandbox = none is warned about"
        );
    }
}

#[test]
fn a_machine_without_bubblewrap_is_refused_with_what_to_install() {
    let root = tempfile::tempdir().unwrap();
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nout_dir = \"{}\"\n\n\
         [[bot]]\nname = \"p\"\nprogram = \"sau:./engine\"\n\n\
         [[bot]]\nname = \"r\"\nbuiltin = \"random\"\n\n\
         [[tournament]]\nname = \"t\"\ngame = \"connect6\"\nbots = [\"p\", \"r\"]\n",
        root.path().join("out").display()
    );
    let path = root.path().join("arena.toml");
    std::fs::write(&path, config).unwrap();
    let empty = open_dir(root.path(), "no-programs-here");
    let output = arena()
        .args(["serve", "--config"])
        .arg(&path)
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("apt-get install bubblewrap"), "{stderr}");
    assert!(stderr.contains("sandbox = \"none\""), "{stderr}");
    assert!(!root.path().join("out").join("games.jsonl").exists());
}

#[test]
fn sandbox_check_reports_what_an_engine_could_not_do() {
    if !bwrap_or_skip("sandbox_check_reports_what_an_engine_could_not_do") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let dir = open_dir(root.path(), "engine");
    let secret = root.path().join("arena.toml");
    std::fs::write(&secret, "[[bot]]\nname = \"x\"\ntoken = \"secret\"\n").unwrap();
    let port = free_port();
    std::fs::write(
        dir.join("engine.py"),
        format!(
            "import socket\n\
             try: open({secret:?})\nexcept OSError: pass\n\
             try: socket.create_connection(('127.0.0.1', {port}))\nexcept OSError: pass\n\
             try: open('out.txt', 'w')\nexcept OSError: pass\n\
             try: bytearray(10 * 2 ** 30)\nexcept MemoryError: pass\n\
             print('engine ran')\n",
            secret = secret.display().to_string()
        ),
    )
    .unwrap();
    let output = arena()
        .args(["sandbox-check", "--seconds", "20", "--dir"])
        .arg(&dir)
        .args(["--", "python3", "engine.py"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("engine ran"), "{stdout}");
    assert!(
        stdout.contains("the engine exited with status 0"),
        "{stdout}"
    );
    if stdout.contains("strace is not installed") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "strace is missing under CI"
        );
        eprintln!("strace is not installed: only the end of the engine was checked");
        return;
    }
    for expected in [
        format!("{:?}: not found", secret.display().to_string()),
        format!("network: connect to 127.0.0.1:{port} failed"),
        "\"out.txt\" refused (EROFS)".to_string(),
        "limit: memory refused".to_string(),
    ] {
        assert!(
            stdout.contains(&expected),
            "{expected} missing in:\n{stdout}"
        );
    }
}

/// Spawn-to-first-reply times (ms, sorted) of a one-line shell engine started `runs` times
/// with `launch`.
async fn reply_times(launch: &arena::bridge::child::Launch, runs: usize) -> Vec<f64> {
    use arena::bridge::child::{EngineOutput, EngineProcess};
    let command: Vec<String> = ["sh", "-c", "read line; echo \"= $line\""]
        .iter()
        .map(|w| w.to_string())
        .collect();
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let mut engine = EngineProcess::spawn_launched(&command, None, 1024, launch).unwrap();
        assert!(engine.send("name"));
        let reply = tokio::time::timeout(Duration::from_secs(10), engine.next_output())
            .await
            .expect("the engine answers within 10 s");
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(reply, EngineOutput::Line("= name".into()));
        engine.shutdown().await;
    }
    times.sort_by(f64::total_cmp);
    times
}

#[tokio::test]
async fn the_sandbox_start_overhead_per_game_is_measured() {
    if !bwrap_or_skip("the_sandbox_start_overhead_per_game_is_measured") {
        return;
    }
    let sandbox = arena::sandbox::Sandbox::probe(arena::sandbox::SandboxKind::Bwrap)
        .await
        .unwrap()
        .expect("a sandbox");
    let root = tempfile::tempdir().unwrap();
    let dir = open_dir(root.path(), "engine");
    let limits = arena::config::ProgramsConfig::default().default_limits();
    let inside = arena::program::Limits {
        dir: Some(dir),
        memory_mb: Some(limits.memory_mb),
        processes: Some(limits.processes),
        file_size_mb: Some(limits.file_size_mb),
        open_files: Some(limits.open_files),
        ..Default::default()
    };
    let exe = Path::new(env!("CARGO_BIN_EXE_arena"));
    let jail = sandbox
        .jail(Some(exe), &inside, None, limits.tmp_mb)
        .unwrap();
    let sandboxed = arena::bridge::child::Launch {
        wrapper: jail.wrapper().to_vec(),
        jail: Some(std::sync::Arc::new(jail)),
        output_cap: Some(limits.output_bytes()),
    };
    let plain = arena::bridge::child::Launch::default();
    // Alternate so that a busy machine weighs on both alike.
    let mut bare = Vec::new();
    let mut boxed = Vec::new();
    for _ in 0..5 {
        bare.extend(reply_times(&plain, 2).await);
        boxed.extend(reply_times(&sandboxed, 2).await);
    }
    bare.sort_by(f64::total_cmp);
    boxed.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    eprintln!(
        "spawn to first reply, 10 runs each: unconfined {:.1}-{:.1} ms (median {:.1}), sandboxed {:.1}-{:.1} ms (median {:.1}); overhead of the median {:.1} ms",
        bare[0],
        bare[bare.len() - 1],
        median(&bare),
        boxed[0],
        boxed[boxed.len() - 1],
        median(&boxed),
        median(&boxed) - median(&bare)
    );
    // A game start must stay cheap next to any clock (bounded generously for busy machines).
    assert!(median(&boxed) < 1000.0, "sandboxed start {boxed:?} ms");
}

/// The shipped demo league (`arena.toml`) with only its `tournament` (every bot kept), on
/// free ports, its out folder relative to the copy.
fn shipped_demo_with_only(tournament: &str) -> String {
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("arena.toml")).unwrap();
    let mut config: toml::Table = shipped.parse().unwrap();
    let server = config["server"].as_table_mut().unwrap();
    server.insert("listen".into(), "127.0.0.1:0".into());
    server.insert("web".into(), "127.0.0.1:0".into());
    let tournaments = config["tournament"].as_array_mut().unwrap();
    tournaments.retain(|t| t["name"].as_str() == Some(tournament));
    assert_eq!(tournaments.len(), 1, "the demo has no {tournament}");
    toml::to_string(&config).unwrap()
}

#[test]
fn the_shipped_demo_runs_its_python_program_bot_sandboxed() {
    if !bwrap_or_skip("the_shipped_demo_runs_its_python_program_bot_sandboxed") {
        return;
    }
    // The demo's layout: the config, and the bot's folder (readable by all) beside it.
    let root = tempfile::tempdir().unwrap();
    let bot_dir = open_dir(&open_dir(root.path(), "bots"), "python");
    copy_into(
        &bot_dir,
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("bots/python/arena_random_bot.py"),
        "arena_random_bot.py",
    );
    let config = shipped_demo_with_only("hex-demo");
    assert!(config.contains("python-random"), "{config}");
    let (output, _) = serve(root.path(), &config, Duration::from_secs(120));
    let log = finished_sandboxed(&output);
    let lines = games(&root.path().join("out"));
    let python: Vec<&Value> = lines
        .iter()
        .filter(|g| g["first"] == "python-random" || g["second"] == "python-random")
        .collect();
    // A double round-robin of three bots: python-random meets each of the others once a leg.
    assert_eq!(python.len(), 4, "{lines:?}\n{}", last_lines(&log, 40));
    for game in python {
        assert_eq!(
            game["reason"],
            "connection",
            "the program bot did not play its game out in the sandbox: {game}\n{}",
            last_lines(&log, 40)
        );
        assert!(game["moves"].as_array().unwrap().len() > 10, "{game}");
    }
    let left = none_left("arena_random_bot.py --stdio");
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

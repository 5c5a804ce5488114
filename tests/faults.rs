//! Fault injection on a real league (the `arena serve` binary, real files, real sockets): the
//! records folder made read-only for a second, a full disk, a low open-files limit under a
//! connection flood, `kill -9` while writes wait, and a bot whose old connection went silent
//! logging in again. After each, every game the journal holds as finished has exactly one
//! games.jsonl line and one record file of its own with its moves, and the standings count it
//! once (`arena::audit`, the check behind `arena audit`, plus direct counts here).
//!
//! The file-system faults need root and mount namespaces (`unshare -m`, a private read-only bind
//! mount or a tiny tmpfs that only the server sees). Where those are missing the tests say so
//! and skip, except under CI (`CI` set), where they fail instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Command;

use support::{Client, TestServer};

/// A league of built-in random Hex bots: 180 quick games, two at a time, several seconds in
/// all, so that a fault a second or two in falls in its middle.
fn league_config(out_dir: &Path) -> String {
    league_config_of(out_dir, LEAGUE_GAMES / 6)
}

/// The same league with `per_pairing` games for each of its six pairings.
fn league_config_of(out_dir: &Path, per_pairing: usize) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:0"
out_dir = "{}"
exit_when_done = true

[[bot]]
name = "r1"
builtin = "random"
[[bot]]
name = "r2"
builtin = "random"
[[bot]]
name = "r3"
builtin = "random"
[[bot]]
name = "r4"
builtin = "random"

[[tournament]]
name = "faults"
game = "hex"
bots = ["r1", "r2", "r3", "r4"]
games_per_pairing = {per_pairing}
concurrency = 2
clock = {{ initial_ms = 60000, increment_ms = 0 }}
"#,
        out_dir.display()
    )
}

const LEAGUE_GAMES: usize = 180;

/// A private mount namespace (mounts there are seen by the server alone) and a PID namespace
/// whose processes all end with `unshare` (no server is left behind if a test fails).
const UNSHARE: [&str; 6] = [
    "--mount",
    "--propagation",
    "private",
    "--pid",
    "--fork",
    "--kill-child",
];

/// Whether this machine can run the mount-namespace scenarios; prints why not.
async fn namespaces_available() -> bool {
    let probe = Command::new("unshare")
        .args(UNSHARE.iter().chain(&["true"]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    let ok = probe.is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the fault-injection tests: `unshare --mount` (root, util-linux) is needed"
        );
        eprintln!(
            "SKIPPED: mount namespaces are not available here (run as root with util-linux's \
             unshare to run this fault-injection test)"
        );
    }
    ok
}

/// Runs `script` under `sh` in a private mount namespace of its own, with `ARENA`, `CONF` and
/// `OUT` set; returns its exit status and everything it printed (kept in a file, so that a
/// scenario that does not finish in time still shows how far it got).
async fn run_in_namespace(script: &str, dir: &Path) -> (bool, String) {
    let log_path = dir.join("scenario.log");
    let log = std::fs::File::create(&log_path).expect("scenario log");
    let mut child = Command::new("unshare")
        .args(UNSHARE.iter().chain(&["sh", "-c", script]))
        .env("ARENA", env!("CARGO_BIN_EXE_arena"))
        .env("CONF", dir.join("league.toml"))
        .env("OUT", dir.join("out"))
        .env("RUST_LOG", "warn")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("unshare runs");
    let status = tokio::time::timeout(Duration::from_secs(300), child.wait()).await;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        Ok(status) => (status.is_ok_and(|s| s.success()), text),
        Err(_) => panic!("the scenario did not finish in 300 s; it printed:\n{text}"),
    }
}

/// A fresh league folder with its config.
fn league_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("records")).expect("records folder");
    std::fs::write(dir.path().join("league.toml"), league_config(&out)).expect("config");
    (dir, out)
}

/// Shell functions: `wait_for_games N` waits until games.jsonl has at least N lines (at most
/// 60 s); `records_read_only` remounts the records folder read-only.
const WAIT_FOR_GAMES: &str = r#"
wait_for_games() {
    i=0
    while [ "$(cat "$OUT/games.jsonl" 2>/dev/null | wc -l)" -lt "$1" ] && [ $i -lt 1200 ]; do
        sleep 0.05; i=$((i+1))
    done
}
# Makes the records folder read-only. The kernel refuses while a file in it is open for
# writing ("mount point is busy"): the server writes a record file now and then, briefly, so
# the remount is tried again until it lands between two writes.
records_read_only() {
    i=0
    until mount -o remount,bind,ro "$OUT/records" 2>/dev/null; do
        i=$((i+1))
        if [ $i -ge 200 ]; then mount -o remount,bind,ro "$OUT/records"; return; fi
        sleep 0.01
    done
}
"#;

/// Asserts that every finished game has exactly one line and one record file of its own
/// holding its moves, that `expected` games finished, and that the standings count each once.
fn assert_nothing_lost(out: &Path, expected: usize, log: &str) {
    let report = arena::audit::audit(out).expect("the league's outputs can be audited");
    assert!(report.is_complete(), "{:#?}\n{log}", report.problems);
    assert_eq!(report.finished, expected, "{log}");
    // And counted here directly, not only through the audit.
    let lines = support::read_games(out);
    assert_eq!(lines.len(), expected, "one games.jsonl line per game");
    let mut per_record: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        *per_record
            .entry(line["record"].as_str().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    assert!(
        per_record.values().all(|&n| n == 1),
        "no two games share a record"
    );
    let files = std::fs::read_dir(out.join("records"))
        .expect("records folder")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
        .count();
    assert_eq!(files, expected, "one record file per game");
    for line in &lines {
        let bytes = std::fs::read(out.join("records").join(line["record"].as_str().unwrap()))
            .expect("the record file of a game");
        let record = arena::record::Record::parse(&bytes).expect("a record");
        let moves: Vec<String> = serde_json::from_value(line["moves"].clone()).unwrap();
        assert_eq!(record.moves, moves, "{} holds its own moves", line["match"]);
    }
    let standings: Value =
        serde_json::from_slice(&std::fs::read(out.join("standings.json")).unwrap()).unwrap();
    let counted: u64 = standings["tournaments"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["games"].as_u64().unwrap())
        .sum();
    assert_eq!(
        counted,
        2 * expected as u64,
        "the standings count every game once"
    );
}

/// The console said that output fell behind after the fault began (mid-league), and that it
/// caught up.
fn assert_fault_told_and_ended(log: &str) {
    let behind = log
        .find("OUTPUT BEHIND")
        .unwrap_or_else(|| panic!("the console says so: {log}"));
    assert!(
        log[..behind].contains("FAULT ON"),
        "the fault came mid-league: {log}"
    );
    assert!(
        log[behind..].contains("output caught up"),
        "and says when it caught up: {log}"
    );
}

#[tokio::test]
async fn a_read_only_records_folder_for_a_second_loses_nothing() {
    if !namespaces_available().await {
        return;
    }
    let (dir, out) = league_dir();
    let script = format!(
        r#"
set -e
{WAIT_FOR_GAMES}
# A mount point of its own, so that it can be made read-only in this namespace alone.
mount --bind "$OUT/records" "$OUT/records"
"$ARENA" serve --config "$CONF" &
pid=$!
wait_for_games 10
echo "FAULT ON"
records_read_only
sleep 1
mount -o remount,bind,rw "$OUT/records"
echo "FAULT OFF"
wait $pid
"#
    );
    let (ok, log) = run_in_namespace(&script, dir.path()).await;
    assert!(ok, "{log}");
    assert_fault_told_and_ended(&log);
    assert_nothing_lost(&out, LEAGUE_GAMES, &log);
}

#[tokio::test]
async fn a_full_disk_for_a_second_loses_nothing() {
    if !namespaces_available().await {
        return;
    }
    let (dir, out) = league_dir();
    let script = format!(
        r#"
set -e
{WAIT_FOR_GAMES}
mount -t tmpfs -o size=16m arena-out "$OUT"
mkdir -p "$OUT/records"
"$ARENA" serve --config "$CONF" &
pid=$!
wait_for_games 10
echo "FAULT ON"
dd if=/dev/zero of="$OUT/filler" bs=64k 2>/dev/null || true
sleep 1
rm -f "$OUT/filler"
echo "FAULT OFF"
wait $pid
# The tmpfs goes with the namespace: keep a copy for the checks.
mkdir -p "$OUT.kept"
cp -a "$OUT/." "$OUT.kept/"
"#
    );
    let (ok, log) = run_in_namespace(&script, dir.path()).await;
    assert!(ok, "{log}");
    assert_fault_told_and_ended(&log);
    let kept = dir.path().join("out.kept");
    assert_nothing_lost(&kept, LEAGUE_GAMES, &log);
    // The journal reads back whole: no half line a failed write left behind.
    let (_, state) = arena::journal::Journal::open(&kept.join("journal.jsonl"))
        .expect("the journal opens after the fault");
    assert_eq!(state.dropped_torn_line, None);
    drop(out);
}

#[tokio::test]
async fn kill_9_while_writes_wait_then_restart_loses_nothing() {
    if !namespaces_available().await {
        return;
    }
    let (dir, out) = league_dir();
    let script = format!(
        r#"
set -e
{WAIT_FOR_GAMES}
mount --bind "$OUT/records" "$OUT/records"
"$ARENA" serve --config "$CONF" > "$OUT/../first-run.txt" 2>&1 &
pid=$!
wait_for_games 10
records_read_only
i=0
while ! grep -q "OUTPUT BEHIND" "$OUT/../first-run.txt" && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
sleep 0.3
kill -9 $pid
wait $pid || true
echo "KILLED"
cat "$OUT/../first-run.txt"
mount -o remount,bind,rw "$OUT/records"
"$ARENA" serve --config "$CONF"
"#
    );
    let (ok, log) = run_in_namespace(&script, dir.path()).await;
    assert!(ok, "{log}");
    let killed = log.find("KILLED").expect("killed");
    assert!(
        log[killed..].contains("OUTPUT BEHIND"),
        "writes were waiting when it was killed: {log}"
    );
    assert!(
        log.contains("resuming from the journal"),
        "the second run resumed: {log}"
    );
    assert_nothing_lost(&out, LEAGUE_GAMES, &log);
}

#[tokio::test]
async fn a_connection_flood_under_a_low_open_files_limit_loses_nothing() {
    if !namespaces_available().await {
        return;
    }
    // The flood comes from this process: it needs the descriptors.
    arena::server::open_files::raise_open_files_limit();
    let (dir, out) = league_dir();
    // Twice as long a league, so that the flood ends in its middle.
    let games = 2 * LEAGUE_GAMES;
    let config = league_config_of(&out, games / 6).replace(
        "exit_when_done = true",
        "exit_when_done = true\nweb = \"127.0.0.1:0\"\nhello_timeout_ms = 2000",
    );
    std::fs::write(dir.path().join("league.toml"), config).unwrap();
    let mut server = Command::new("sh")
        .args([
            "-c",
            r#"ulimit -n 256 && exec "$ARENA" serve --config "$CONF""#,
        ])
        .env("ARENA", env!("CARGO_BIN_EXE_arena"))
        .env("CONF", dir.path().join("league.toml"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("server starts");
    let stdout = server.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let (mut bot_port, mut web_port) = (None, None);
    while bot_port.is_none() || web_port.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server says where it listens")
            .unwrap()
            .expect("a line");
        if let Some(addr) = line.strip_prefix("arena listening on ") {
            bot_port = Some(addr.trim().to_string());
        }
        if let Some(addr) = line.strip_prefix("web view: http://") {
            web_port = Some(addr.trim_end_matches('/').to_string());
        }
    }
    // 1,000 connections at once, 600 to the bot port and 400 to the web port, held idle for
    // three seconds while the league plays.
    let mut connecting = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let addr = if i % 5 < 3 { &bot_port } else { &web_port };
        let addr = addr.clone().unwrap();
        connecting.spawn(async move {
            tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
                .await
                .ok()
                .and_then(Result::ok)
        });
    }
    let mut flood = Vec::new();
    while let Some(done) = connecting.join_next().await {
        flood.extend(done.ok().flatten());
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(flood);
    let mut rest = Vec::new();
    while let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .expect("the league finishes")
    {
        rest.push(line);
    }
    let status = server.wait().await.unwrap();
    let log = rest.join("\n");
    assert!(status.success(), "{log}");
    assert_nothing_lost(&out, games, &log);
}

/// Two bots in a Hex game; `a`'s connection goes silent (its process hung, its network gone
/// without a FIN), and the restarted bot logs in again with the same token.
#[tokio::test]
async fn a_bot_whose_old_connection_went_silent_takes_its_seat_back() {
    let server = TestServer::start(&support::two_bot_config("hex", "", "")).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let start = a.expect("start").await;
    b.expect("start").await;
    let match_id = start["match"].as_str().unwrap().to_string();
    let (mut first, mut second, a_first) = if start["side"] == "first" {
        (a, b, true)
    } else {
        (b, a, false)
    };
    first.expect("turn").await;
    first.play(&match_id, "F6").await;
    second.expect("turn").await;
    second.play(&match_id, "E7").await;
    // `a` stops reading and answering: its connection stays open but silent.
    let (silent, mut other) = if a_first {
        (first, second)
    } else {
        (second, first)
    };
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let resumed = a.expect("start").await;
    assert_eq!(resumed["match"], match_id.as_str());
    assert_eq!(resumed["moves"], json!(["F6", "E7"]));
    // The game goes on with the new connection and ends normally: Red fills column F (a win),
    // Blue plays down column A.
    let red_moves = ["F1", "F2", "F3", "F4", "F5", "F7", "F8", "F9", "F10", "F11"];
    let blue_moves: Vec<String> = (1..=11).map(|r| format!("A{r}")).collect();
    let (mut red_next, mut blue_next) = (red_moves.iter(), blue_moves.iter());
    let mut ply = 2;
    loop {
        let red_to_move = ply % 2 == 0;
        let seat = if red_to_move == a_first {
            &mut a
        } else {
            &mut other
        };
        let msg = seat.recv().await;
        if msg["type"] == "end" {
            break;
        }
        assert_eq!(msg["type"], "turn", "{msg}");
        let mv = if red_to_move {
            red_next.next().map(|m| m.to_string())
        } else {
            blue_next.next().cloned()
        };
        seat.play(&match_id, &mv.expect("a move left")).await;
        ply += 1;
    }
    drop(silent);
    let (summary, out, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 1);
    assert_ne!(summary.games[0].reason.as_str(), "disconnect");
    assert_ne!(summary.games[0].reason.as_str(), "timeout");
    let report = arena::audit::audit(&out).unwrap();
    assert!(report.is_complete(), "{:?}", report.problems);
    assert_eq!(report.finished, 1);
}

//! `arena bench --quick --json` through the real binary: it runs to the end (the load generator
//! re-executed as a child process included) and prints one JSON object with every figure, each
//! of a sane type; with `--web-clients`, the load generator's event streams read the web view;
//! with `--web-load`, web clients hammer every endpoint beside a live game.
//! Speed is never asserted here: figures are read by people, not tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn number(report: &Value, key: &str) -> f64 {
    report
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} should be a number in {report}"))
}

/// Runs `arena bench --quick --json` with `extra` arguments, its files in a fresh temporary
/// folder that it must leave empty, and returns its one JSON report.
fn quick_bench(extra: &[&str]) -> Value {
    let files = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["bench", "--quick", "--json"])
        .args(extra)
        .env("TMPDIR", files.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run arena bench");
    let mut out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        out.read_to_string(&mut text).map(|_| text)
    });
    // A hang is a failure, not a stuck CI run.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for arena bench") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("arena bench --quick did not finish within 3 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "arena bench failed: {status}");
    let stdout = reader.join().expect("reader").expect("UTF-8 output");
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    let report: Value = serde_json::from_str(&stdout).expect("the report is JSON");
    // The phases' leagues wrote under TMPDIR, and every file written there is gone.
    assert_eq!(
        report["files_in"].as_str().map(std::path::Path::new),
        Some(files.path()),
        "{report}"
    );
    let left: Vec<_> = std::fs::read_dir(files.path())
        .expect("read the temporary folder")
        .collect();
    assert!(left.is_empty(), "the bench left files behind: {left:?}");
    report
}

/// Whether this process may switch a thread to real-time scheduling (tried on a thread of its
/// own, which then ends).
fn may_schedule_in_real_time() -> bool {
    std::thread::spawn(|| {
        // SAFETY: changes only this short-lived thread's scheduling.
        unsafe {
            let param = libc::sched_param {
                sched_priority: libc::sched_get_priority_min(libc::SCHED_RR),
            };
            libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0
        }
    })
    .join()
    .unwrap_or(false)
}

#[test]
fn quick_bench_prints_every_figure_as_json() {
    let report = quick_bench(&[]);

    for key in [
        "perft_surakarta_6_s",
        "referee_moves_per_s",
        "rss_per_match_kib",
        "heap_per_match_kib",
        "clock_error_ms_p99",
        "clock_error_ms_p50",
        "server_cpu_us_per_move",
        "window_s",
        "matches_running_mean",
        "clock_socket_wait_ms_p99",
        "clock_turn_waited_in_bot_ms_p99",
        "clock_error_referee_ms_p99",
        "clock_error_at_wire_ms_p99",
    ] {
        let v = number(&report, key);
        assert!(v.is_finite(), "{key} = {v}");
    }
    assert!(number(&report, "perft_surakarta_6_s") > 0.0);
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(
            number(&report, "heap_per_match_kib") > 0.0,
            "running matches hold heap"
        );
    }
    // Moves did flow: a referee that relayed nothing would report 0.
    assert!(number(&report, "referee_moves_per_s") > 0.0, "{report}");
    // The ceiling was measured with the same bots, so the ratio compares like with like.
    assert!(number(&report, "relay_moves_per_s") > 0.0, "{report}");
    // Three rounds of a referee window and a relay window, one after the other; the ratios
    // are the medians of the rounds' and lie within their spread.
    let rounds = report["rounds"].as_array().expect("rounds is a list");
    assert_eq!(rounds.len(), 3, "{report}");
    for round in rounds {
        for key in [
            "referee_moves_per_s",
            "server_cpu_us_per_move",
            "relay_moves_per_s",
            "relay_cpu_us_per_move",
        ] {
            assert!(number(round, key) > 0.0, "{key} in {round}");
        }
        let cpu_ratio =
            number(round, "relay_cpu_us_per_move") / number(round, "server_cpu_us_per_move");
        assert!(
            (number(round, "cpu_ratio") - cpu_ratio).abs() < 0.01,
            "{round}"
        );
        let ratio = number(round, "referee_moves_per_s") / number(round, "relay_moves_per_s");
        assert!(
            (number(round, "throughput_ratio") - ratio).abs() < 0.01,
            "{round}"
        );
        assert!(round["load_average"].is_string(), "{round}");
    }
    for (median, low, high) in [
        ("cpu_ratio", "cpu_ratio_min", "cpu_ratio_max"),
        (
            "referee_to_relay_ratio",
            "referee_to_relay_ratio_min",
            "referee_to_relay_ratio_max",
        ),
    ] {
        let (m, lo, hi) = (
            number(&report, median),
            number(&report, low),
            number(&report, high),
        );
        assert!(lo <= m && m <= hi && lo > 0.0, "{median}: {lo} {m} {hi}");
    }
    // Every goal is printed with its figure and a verdict.
    let goals = report["goals"].as_array().expect("goals is a list");
    let names: Vec<&str> = goals.iter().filter_map(|g| g["name"].as_str()).collect();
    for wanted in [
        "cpu_ratio",
        "throughput ratio",
        "clock error",
        "false timeouts",
        "memory per match",
    ] {
        assert!(
            names.iter().any(|n| n.contains(wanted)),
            "{wanted} in {names:?}"
        );
    }
    for goal in goals {
        assert!(
            goal["met"].is_boolean() && goal["figure"].is_string(),
            "{goal}"
        );
    }
    assert_eq!(report["hog"], false);
    assert_eq!(report["split_cores"], false);
    // The clock phase's bots run ahead of the server where the bench may raise them: in real
    // time where this process may use it (root, as in CI), otherwise at a nice value.
    let scheduling = report["clock_bots_scheduling"].as_str().unwrap_or("");
    if may_schedule_in_real_time() {
        assert!(scheduling.starts_with("real-time"), "{report}");
    } else {
        assert!(scheduling.starts_with("nice "), "{report}");
    }
    // One worker a core by default, as `arena serve` runs.
    assert!(number(&report, "server_workers") >= 1.0, "{report}");
    assert_eq!(
        number(&report, "web_event_bytes"),
        0.0,
        "no web view, no streams"
    );
    assert_eq!(number(&report, "web_streams_heap_kib"), 0.0, "{report}");
    for key in [
        "move_overhead_us_p50",
        "move_overhead_us_p99",
        "false_timeouts",
        "matches",
        "timed_moves",
        "socket_wait_us_p50",
        "socket_wait_us_p99",
    ] {
        assert!(
            report.get(key).and_then(Value::as_u64).is_some(),
            "{key} should be a whole number in {report}"
        );
    }
    assert!(
        report["move_overhead_us_p50"].as_u64() <= report["move_overhead_us_p99"].as_u64(),
        "p50 <= p99: {report}"
    );
    assert!(
        report["socket_wait_us_p50"].as_u64() <= report["socket_wait_us_p99"].as_u64(),
        "p50 <= p99: {report}"
    );
    // This test runs on Linux, whose kernel stamps received packets: the clocks use them.
    assert_eq!(report["kernel_receive_timestamps"], true, "{report}");
    assert_eq!(report["quick"], true);
    assert_eq!(report["matches"], 100);
    assert_eq!(report["games_per_bot"], 1);
    assert!(report["timed_moves"].as_u64().unwrap_or(0) > 0, "{report}");
    // The bots' kernel stamps their turns too, so the bot's own delay is told apart.
    let stamped = report["bot_stamped_moves"].as_u64().unwrap_or(0);
    assert!(stamped > 0, "{report}");
    // The goal's figure counts each move from where the bot's kernel received `turn`, never
    // later than the bot's read: it cannot exceed the error counted from the read.
    assert!(
        number(&report, "clock_error_at_wire_ms_p99") <= number(&report, "clock_error_ms_p99"),
        "{report}"
    );
    assert!(
        stamped <= report["timed_moves"].as_u64().unwrap_or(0),
        "{report}"
    );
    assert!(report["bots_run_in"]
        .as_str()
        .is_some_and(|s| s.contains("--bots-only")));
    // The disk probe ran (creating a file takes some time, and not whole seconds).
    let file_create_us = number(&report, "file_create_us");
    assert!(file_create_us > 0.0 && file_create_us < 1e6, "{report}");
    // A smoke test never waits for the disk to settle: it probes once.
    assert_eq!(number(&report, "disk_wait_s"), 0.0, "{report}");
    assert_eq!(
        number(&report, "file_create_us_at_start"),
        file_create_us,
        "{report}"
    );

    let nps = report["perft_nps"]
        .as_object()
        .expect("perft_nps is an object");
    for game in ["connect6", "hex", "surakarta", "jiu"] {
        let v = nps
            .get(game)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("perft_nps.{game} in {report}"));
        assert!(v > 0.0, "perft_nps.{game} = {v}");
    }
}

#[test]
fn quick_bench_with_the_web_view_on_and_two_games_per_bot() {
    // Three options in one run (each run takes a minute): the web view's streams, bots that
    // play two games at once over their one connection (50 bots for the 100 matches), and a
    // server on one core with its bots on the others (`--split-cores`: then tokio, asked for a
    // worker a core, starts one, which shows the server was pinned before its runtime was
    // built), or on one worker thread where there is only one core.
    let split = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let one_core = if split {
        ["--split-cores"].as_slice()
    } else {
        ["--server-threads", "1"].as_slice()
    };
    let mut args = vec!["--web-clients", "2", "--games-per-bot", "2"];
    args.extend_from_slice(one_core);
    let report = quick_bench(&args);
    assert_eq!(report["server_workers"], 1, "{report}");
    assert_eq!(report["split_cores"], split, "{report}");
    assert_eq!(report["web_clients"], 2);
    assert_eq!(report["games_per_bot"], 2);
    assert_eq!(report["matches"], 100);
    // With one game a connection at a time, 50 bots could hold at most 50 matches.
    assert!(number(&report, "matches_running_mean") > 50.0, "{report}");
    assert!(number(&report, "relay_moves_per_s") > 0.0, "{report}");
    assert!(report["timed_moves"].as_u64().unwrap_or(0) > 0, "{report}");
    assert!(number(&report, "relay_latency_us_p50") > 0.0, "{report}");
    // The load generator's streams read the league's events while the referee relayed moves.
    assert!(number(&report, "web_event_bytes") > 0.0, "{report}");
    assert!(number(&report, "referee_moves_per_s") > 0.0, "{report}");
    // The streams were open before any game, and what they hold was measured on its own.
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(number(&report, "web_streams_heap_kib") > 0.0, "{report}");
    }
}

#[test]
fn quick_web_load_hammers_every_endpoint_beside_a_live_game() {
    let report = quick_bench(&["--web-load", "--hammer-clients", "3"]);
    let windows = report["windows"].as_array().expect("windows");
    // Three rounds, each a window without the clients and one with them.
    assert_eq!(windows.len(), 6, "{report}");
    for (i, window) in windows.iter().enumerate() {
        let hammered = i % 2 == 1;
        assert_eq!(window["hammer_clients"], if hammered { 3 } else { 0 });
        // The live game moved, and its relays were timed.
        assert!(number(window, "moves") > 0.0, "{window}");
        assert!(number(window, "relay_samples") > 0.0, "{window}");
        assert!(
            window["relay_us_p50"].as_u64() <= window["relay_us_p99"].as_u64(),
            "{window}"
        );
        let answered: u64 = window["statuses"]
            .as_object()
            .expect("statuses")
            .values()
            .filter_map(Value::as_u64)
            .sum();
        if hammered {
            // The clients were answered, most of them with 200.
            assert!(number(window, "requests_per_s") > 0.0, "{window}");
            assert!(
                window["statuses"]["200"].as_u64().unwrap_or(0) * 2 > answered,
                "{window}"
            );
        } else {
            assert_eq!(answered, 0, "{window}");
        }
    }
    assert_eq!(
        report["p99_increase_us"].as_i64(),
        Some(
            report["p99_with_us"].as_i64().unwrap_or(0)
                - report["p99_without_us"].as_i64().unwrap_or(0)
        ),
        "{report}"
    );
    assert!(report["goal_met"].is_boolean(), "{report}");
}

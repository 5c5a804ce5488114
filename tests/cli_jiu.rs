//! The Jiu rules through the real `arena` binary: `arena moves jiu`, `arena replay jiu` and
//! `arena perft jiu` on the fixtures in `tests/fixtures/jiu/`, against their expected outputs.
//!
//! Fixture inputs: `moves.input` (start, the forced second placement, the first battle position
//! after the board fills, a square-capture position, a finished game, junk), `replay.input` and
//! `replay_limit2.input` (move lists, the latter replayed with `no_capture_limit` 2).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn fixture(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", "jiu", name]
        .iter()
        .collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `arena ARGS` with `input` on stdin; returns stdout, asserting success.
fn arena(args: &[&str], input: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arena");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("wait for arena");
    assert!(
        output.status.success(),
        "arena {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The words of a line, sorted: `arena moves` may list moves in any order.
fn sorted_words(line: &str) -> Vec<&str> {
    let mut words: Vec<&str> = line.split(' ').collect();
    words.sort_unstable();
    words
}

#[test]
fn moves_lists_each_position() {
    let got = arena(&["moves", "jiu"], &fixture("moves.input"));
    let expected = fixture("moves.expected");
    let (got, expected): (Vec<&str>, Vec<&str>) =
        (got.lines().collect(), expected.lines().collect());
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for (g, e) in got.iter().zip(&expected) {
        if e.starts_with("error ") {
            assert_eq!(g, e);
        } else {
            assert_eq!(sorted_words(g), sorted_words(e));
        }
    }
    // No listing repeats a move.
    for line in got.iter().filter(|l| !l.starts_with("error ")) {
        let words = sorted_words(line);
        let mut unique = words.clone();
        unique.dedup();
        assert_eq!(unique.len(), words.len(), "{line}");
    }
}

#[test]
fn replay_reports_each_game() {
    let got = arena(&["replay", "jiu"], &fixture("replay.input"));
    assert_eq!(got, fixture("replay.expected"));
}

#[test]
fn replay_with_a_small_move_limit() {
    let got = arena(
        &["replay", "jiu", "--rules", r#"{"no_capture_limit":2}"#],
        &fixture("replay_limit2.input"),
    );
    assert_eq!(got, fixture("replay_limit2.expected"));
}

#[test]
fn perft_to_depth_three() {
    let got = arena(&["perft", "jiu", "3"], "");
    assert_eq!(got, fixture("perft3.expected"));
}

#[test]
fn unknown_rule_options_are_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["perft", "jiu", "1", "--rules", r#"{"flying":true}"#])
        .output()
        .expect("run arena");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("flying"));
}

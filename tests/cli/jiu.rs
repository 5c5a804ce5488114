//! The Jiu rules through the real `arena` binary: `arena moves jiu`, `arena replay jiu` and
//! on the fixtures in `tests/fixtures/jiu/`, against their expected outputs (perft: `perft.rs`).
//!
//! Fixture inputs: `moves.in` (start, the forced second placement, the first battle position
//! after the board fills, a square-capture position, a jump chain forming two squares with one
//! enemy stone left (listed with two `+?`), a finished game, junk), `replay.in` and
//! `replay_limit2.in` (move lists, the latter replayed with `no_capture_limit` 2).

use super::common::stdout_of as arena;

fn fixture(name: &str) -> String {
    super::common::fixture(&format!("jiu/{name}"))
}

/// The words of a line, sorted: `arena moves` may list moves in any order.
fn sorted_words(line: &str) -> Vec<&str> {
    let mut words: Vec<&str> = line.split(' ').collect();
    words.sort_unstable();
    words
}

#[test]
fn moves_lists_each_position() {
    let got = arena(&["moves", "jiu"], &fixture("moves.in"));
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
    let got = arena(&["replay", "jiu"], &fixture("replay.in"));
    assert_eq!(got, fixture("replay.expected"));
}

#[test]
fn replay_with_a_small_move_limit() {
    let got = arena(
        &["replay", "jiu", "--rules", r#"{"no_capture_limit":2}"#],
        &fixture("replay_limit2.in"),
    );
    assert_eq!(got, fixture("replay_limit2.expected"));
}

#[test]
fn unknown_rule_options_are_refused() {
    let output = super::common::arena_command()
        .args(["perft", "jiu", "1", "--rules", r#"{"flying":true}"#])
        .output()
        .expect("run arena");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("flying"));
}

//! Runs the built `arena` binary's rules tools (moves, replay; perft: `perft.rs`) for Connect6 and Hex on the
//! fixtures under `tests/fixtures/connect6/` and `tests/fixtures/hex/`, comparing with the
//! expected-output files beside them.

use super::common::{fixture, stdout_of as arena};

/// Compares line by line so that a failure names the first differing input line.
fn assert_same_lines(args: &[&str], input_name: &str, actual: &str, expected: &str) {
    let input = fixture(input_name);
    let input_lines: Vec<&str> = input.lines().collect();
    let actual_lines: Vec<&str> = actual.lines().collect();
    let expected_lines: Vec<&str> = expected.lines().collect();
    for (k, (a, e)) in actual_lines.iter().zip(&expected_lines).enumerate() {
        assert_eq!(
            a,
            e,
            "arena {args:?}, line {} of {input_name}: {:?}",
            k + 1,
            input_lines
                .get(k)
                .map(|l| l.chars().take(120).collect::<String>())
        );
    }
    assert_eq!(
        actual_lines.len(),
        expected_lines.len(),
        "arena {args:?} on {input_name}: line count"
    );
}

fn check_tool(args: &[&str], input_name: &str, expected_name: &str) {
    let actual = arena(args, &fixture(input_name));
    assert_same_lines(args, input_name, &actual, &fixture(expected_name));
}

#[test]
fn moves_connect6_lists_empty_points() {
    check_tool(
        &["moves", "connect6"],
        "connect6/moves.in",
        "connect6/moves.expected",
    );
}

#[test]
fn moves_hex_lists_empty_cells_and_swap() {
    check_tool(&["moves", "hex"], "hex/moves.in", "hex/moves.expected");
    check_tool(
        &["moves", "hex", "--rules", r#"{"swap":true}"#],
        "hex/moves_swap.in",
        "hex/moves_swap.expected",
    );
}

#[test]
fn replay_connect6_games() {
    check_tool(
        &["replay", "connect6"],
        "connect6/replay.in",
        "connect6/replay.expected",
    );
}

#[test]
fn replay_hex_games() {
    check_tool(&["replay", "hex"], "hex/replay.in", "hex/replay.expected");
    check_tool(
        &["replay", "hex", "--rules", r#"{"swap":true}"#],
        "hex/replay_swap.in",
        "hex/replay_swap.expected",
    );
}

#[test]
fn unknown_rule_options_are_refused() {
    for (game, rules) in [
        ("hex", r#"{"swop":true}"#),
        ("connect6", r#"{"swap":true}"#),
    ] {
        let output = super::common::arena_command()
            .args(["perft", game, "1", "--rules", rules])
            .output()
            .expect("run arena");
        assert!(!output.status.success(), "{game} {rules}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("swap"), "{stderr}");
    }
}

//! Runs the real `arena` binary on Surakarta: perft counts, `moves` and `replay` on the fixture
//! inputs under `tests/fixtures/surakarta/` against their expected-output files, and option errors.

use super::common::{run as arena, stdout_of};

fn fixture(name: &str) -> String {
    super::common::fixture(&format!("surakarta/{name}"))
}

#[test]
fn perft_prints_the_reference_counts() {
    assert_eq!(
        stdout_of(&["perft", "surakarta", "4"], ""),
        "1 16\n2 256\n3 5382\n4 111122\n"
    );
}

#[test]
fn perft_with_a_tiny_quiet_limit_stops_at_the_limit() {
    // With no_capture_limit 2 every game is over after two quiet plies.
    assert_eq!(
        stdout_of(
            &[
                "perft",
                "surakarta",
                "3",
                "--rules",
                r#"{"no_capture_limit":2}"#
            ],
            ""
        ),
        "1 16\n2 256\n3 0\n"
    );
}

#[test]
fn moves_lists_the_fixture_positions() {
    assert_eq!(
        stdout_of(&["moves", "surakarta"], &fixture("moves_input.txt")),
        fixture("moves_expected.txt")
    );
}

#[test]
fn replay_judges_the_fixture_games() {
    assert_eq!(
        stdout_of(&["replay", "surakarta"], &fixture("replay_input.txt")),
        fixture("replay_expected.txt")
    );
}

#[test]
fn replay_honours_no_capture_limit() {
    assert_eq!(
        stdout_of(
            &[
                "replay",
                "surakarta",
                "--rules",
                r#"{"no_capture_limit":4}"#
            ],
            &fixture("replay_limit4_input.txt")
        ),
        fixture("replay_limit4_expected.txt")
    );
}

#[test]
fn bad_options_are_refused_naming_the_option() {
    for (rules, name) in [
        (r#"{"no_capture_limit":0}"#, "no_capture_limit"),
        (r#"{"no_capture_limit":"80"}"#, "no_capture_limit"),
        (r#"{"quiet_limit":80}"#, "quiet_limit"),
    ] {
        let out = arena(&["perft", "surakarta", "1", "--rules", rules], "");
        assert!(!out.status.success(), "{rules} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name), "{rules}: {err}");
        assert!(out.stdout.is_empty());
    }
}

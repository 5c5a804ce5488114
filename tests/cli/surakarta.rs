//! Runs the real `arena` binary on Surakarta: `moves` and `replay` on the fixture inputs under
//! `tests/fixtures/surakarta/` against their expected-output files, and option errors (perft
//! counts: `perft.rs`).

use super::common::{run as arena, stdout_of};

fn fixture(name: &str) -> String {
    super::common::fixture(&format!("surakarta/{name}"))
}

#[test]
fn moves_lists_the_fixture_positions() {
    assert_eq!(
        stdout_of(&["moves", "surakarta"], &fixture("moves.in")),
        fixture("moves.expected")
    );
}

#[test]
fn replay_judges_the_fixture_games() {
    assert_eq!(
        stdout_of(&["replay", "surakarta"], &fixture("replay.in")),
        fixture("replay.expected")
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
            &fixture("replay_limit4.in")
        ),
        fixture("replay_limit4.expected")
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

//! One perft harness for every game: each `tests/fixtures/<game>/perft[_<variant>].expected`
//! holds what `arena perft <game> <depth> [--rules R]` prints, one `depth count` line per depth
//! from 1, so the depth is its line count. The table below names each fixture's rule options.

use super::common::{fixture, stdout_of as arena};

/// (game, fixture name, rule options; empty for the defaults).
const PERFT_FIXTURES: [(&str, &str, &str); 6] = [
    ("connect6", "perft", ""),
    ("hex", "perft", ""),
    ("hex", "perft_swap", r#"{"swap":true}"#),
    // Reference counts from the start position.
    ("surakarta", "perft", ""),
    // With no_capture_limit 2 every game is over after two quiet plies.
    ("surakarta", "perft_quiet2", r#"{"no_capture_limit":2}"#),
    ("jiu", "perft", ""),
];

#[test]
fn perft_prints_every_fixture_s_counts() {
    for (game, name, rules) in PERFT_FIXTURES {
        let expected = fixture(&format!("{game}/{name}.expected"));
        let depth = expected.lines().count().to_string();
        let mut args = vec!["perft", game, depth.as_str()];
        if !rules.is_empty() {
            args.extend(["--rules", rules]);
        }
        assert_eq!(arena(&args, ""), expected, "arena {args:?}");
    }
}

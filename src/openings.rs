//! Openings (for `arena match` and league tournaments): read from a file or a config list (one
//! opening per line, moves separated by spaces, as `arena replay` reads them), or the built-in set of each game. Every opening is
//! checked against the rules in force before the match starts.
//!
//! How the built-in sets are made: from the start position, `GameId::builtin_opening_plies` moves are played,
//! each chosen uniformly among the legal moves (for Connect6, those with every stone within
//! three points of the centre) by a xorshift64 generator started from
//! [`BUILTIN_SEED`]; walks that repeat an earlier opening are dropped, until [`BUILTIN_COUNT`]
//! openings are found. They are legal by construction (and tested), and short: they give
//! deterministic engines different games rather than theory. They are not balanced by analysis;
//! each opening is played twice with colours reversed, which cancels its bias within the pair.

use crate::game::{self, AnyGame, GameId};

/// Openings in a built-in set.
pub const BUILTIN_COUNT: usize = 50;
/// The generator's seed (any fixed value; this one spells "arena").
pub const BUILTIN_SEED: u64 = 0x0061_7265_6e61;

/// Why an openings file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpeningError {
    #[error("openings line {line}: move {ply} {text:?}: {why}")]
    Move {
        line: usize,
        ply: usize,
        text: String,
        why: String,
    },
    #[error("openings line {line}: the game is already over after this opening")]
    Finished { line: usize },
    #[error("the openings file has no opening")]
    Empty,
    #[error("rules: {0}")]
    Rules(String),
}

fn start(game: GameId, rules: &serde_json::Value) -> Result<Box<dyn AnyGame>, OpeningError> {
    game::new_game(game, rules).map_err(|e| OpeningError::Rules(e.to_string()))
}

/// Reads openings: one per line, moves separated by blanks; blank lines and lines starting with
/// `#` are skipped. Each is replayed under `rules`; the moves come back as the rules write them.
pub fn parse_openings(
    game: GameId,
    rules: &serde_json::Value,
    text: &str,
) -> Result<Vec<Vec<String>>, OpeningError> {
    let start = start(game, rules)?;
    let mut openings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut position = start.clone_box();
        let mut moves = Vec::new();
        for (ply, text) in line.split_whitespace().enumerate() {
            if position.outcome().is_some() {
                return Err(OpeningError::Finished { line: line_no });
            }
            let played = position.play_text(text).map_err(|e| OpeningError::Move {
                line: line_no,
                ply: ply + 1,
                text: text.to_string(),
                why: e.to_string(),
            })?;
            moves.push(played);
        }
        if position.outcome().is_some() {
            return Err(OpeningError::Finished { line: line_no });
        }
        openings.push(moves);
    }
    if openings.is_empty() {
        return Err(OpeningError::Empty);
    }
    Ok(openings)
}

/// The built-in openings of `game` under `rules` (see the module comment for how they are made).
pub fn builtin_openings(
    game: GameId,
    rules: &serde_json::Value,
) -> Result<Vec<Vec<String>>, OpeningError> {
    let start = start(game, rules)?;
    let plies = game.builtin_opening_plies();
    let mut state = BUILTIN_SEED;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut openings: Vec<Vec<String>> = Vec::new();
    // Bounded: a game with few distinct openings gives a smaller set instead of looping.
    for _ in 0..BUILTIN_COUNT * 20 {
        if openings.len() == BUILTIN_COUNT {
            break;
        }
        let mut position = start.clone_box();
        let mut moves = Vec::new();
        while moves.len() < plies && position.outcome().is_none() {
            let legal: Vec<String> = position
                .legal_move_texts()
                .into_iter()
                .filter(|text| game.builtin_opening_move(text))
                .collect();
            if legal.is_empty() {
                break;
            }
            let pick = (next() % legal.len() as u64) as usize;
            match position.play_text(&legal[pick]) {
                Ok(played) => moves.push(played),
                Err(_) => break,
            }
        }
        if moves.len() == plies && position.outcome().is_none() && !openings.contains(&moves) {
            openings.push(moves);
        }
    }
    Ok(openings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAMES: [GameId; 4] = [
        GameId::Hex,
        GameId::Connect6,
        GameId::Surakarta,
        GameId::Jiu,
    ];

    #[test]
    fn every_builtin_set_is_full_distinct_legal_and_stable() {
        let rules = serde_json::Value::Null;
        for game in GAMES {
            let set = builtin_openings(game, &rules).unwrap();
            assert_eq!(set.len(), BUILTIN_COUNT, "{game}");
            for (i, opening) in set.iter().enumerate() {
                assert_eq!(opening.len(), game.builtin_opening_plies());
                assert!(!set[..i].contains(opening), "{game}: repeated opening");
            }
            // Each replays under the rules, as an openings file would.
            let text: Vec<String> = set.iter().map(|o| o.join(" ")).collect();
            assert_eq!(parse_openings(game, &rules, &text.join("\n")).unwrap(), set);
            assert_eq!(
                builtin_openings(game, &rules).unwrap(),
                set,
                "deterministic"
            );
            if game == GameId::Connect6 {
                for stone in set.iter().flatten().flat_map(|m| m.split(',')) {
                    let p = crate::game::coord::parse_point(stone, 19).unwrap();
                    assert!(p.col.abs_diff(9) <= 3 && p.row.abs_diff(9) <= 3, "{stone}");
                }
            }
        }
    }

    /// The balanced Connect6 set kept in the repository (`docs/openings/connect6-balanced.txt`, see
    /// docs/history/engines-connect6-runs.md for how it was chosen) loads, and every opening is Black's centre stone
    /// plus one White pair within three points of it, distinct, legal under the default rules.
    #[test]
    fn the_balanced_connect6_file_loads() {
        let text = include_str!("../docs/openings/connect6-balanced.txt");
        let set = parse_openings(GameId::Connect6, &serde_json::Value::Null, text).unwrap();
        assert_eq!(set.len(), 29, "17 of the first ring, 12 of the second");
        for (i, opening) in set.iter().enumerate() {
            assert_eq!(opening.len(), 2, "{opening:?}");
            assert_eq!(opening[0], "J10");
            for stone in opening[1].split(',') {
                let p = crate::game::coord::parse_point(stone, 19).unwrap();
                assert!(p.col.abs_diff(9) <= 3 && p.row.abs_diff(9) <= 3, "{stone}");
            }
            assert!(!set[..i].contains(opening), "repeated: {opening:?}");
        }
    }

    #[test]
    fn a_file_is_read_with_comments_and_checked() {
        let rules = serde_json::Value::Null;
        let set = parse_openings(GameId::Hex, &rules, "# hex openings\n\nA1 B2\n  C3  \n").unwrap();
        assert_eq!(
            set,
            vec![
                vec!["A1".to_string(), "B2".to_string()],
                vec!["C3".to_string()]
            ]
        );
        assert!(matches!(
            parse_openings(GameId::Hex, &rules, "A1\nA1 A1\n"),
            Err(OpeningError::Move {
                line: 2,
                ply: 2,
                ..
            })
        ));
        assert!(matches!(
            parse_openings(GameId::Hex, &rules, "Z99\n"),
            Err(OpeningError::Move {
                line: 1,
                ply: 1,
                ..
            })
        ));
        assert_eq!(
            parse_openings(GameId::Hex, &rules, "# nothing\n"),
            Err(OpeningError::Empty)
        );
    }
}

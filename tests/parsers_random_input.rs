//! Bounded random-input testing of every parser a bot or a file can reach: protocol lines, move
//! text and position text of all four games. Seeded, so a failure is reproducible; each input
//! must give a value or an error, never a panic. (The cargo-fuzz targets in `fuzz/` explore the
//! same parsers without bounds.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use arena::game::{self, GameId};
use arena::protocol;

/// A small deterministic generator (xorshift64*), so the test needs no randomness crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces real inputs are made of, so mutations land near valid syntax.
const ATOMS: &[&str] = &[
    "A",
    "J",
    "S",
    "K",
    "F",
    "N",
    "Z",
    "a",
    "1",
    "10",
    "19",
    "0",
    "99",
    "-",
    "x",
    "X",
    "+",
    "?",
    ",",
    " ",
    "/",
    ".",
    "o",
    "swap",
    "stones=",
    "quiet=",
    "phase=",
    "battle",
    "placement",
    "{",
    "}",
    "\"",
    ":",
    "[",
    "]",
    "type",
    "hello",
    "move",
    "match",
    "null",
    "é",
    "\u{0}",
    "\u{202e}",
    "99999999999999999999",
    "\\u0000",
];

fn mutate(rng: &mut Rng, seed: &str) -> String {
    let mut s: Vec<char> = seed.chars().collect();
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s.remove(i);
            }
            1 => {
                let atom = ATOMS[rng.below(ATOMS.len())];
                let i = rng.below(s.len() + 1);
                for (k, c) in atom.chars().enumerate() {
                    s.insert(i + k, c);
                }
            }
            2 if !s.is_empty() => {
                let i = rng.below(s.len());
                s[i] = char::from_u32(rng.below(0x3000) as u32).unwrap_or('?');
            }
            _ => {
                let i = rng.below(s.len() + 1);
                s.truncate(i);
            }
        }
    }
    s.into_iter().collect()
}

/// Valid examples of each game's move and position texts to mutate.
fn seeds(game: GameId) -> (Vec<String>, Vec<String>) {
    let mut position = game::new_game(game, &serde_json::json!({})).unwrap();
    let mut moves = Vec::new();
    let mut positions = vec![position.position_text()];
    let mut rng = Rng(7);
    for _ in 0..40 {
        if position.outcome().is_some() {
            break;
        }
        let mut legal = position.legal_move_texts();
        if legal.is_empty() {
            break;
        }
        let mv = legal.swap_remove(rng.below(legal.len()));
        position.play_text(&mv).unwrap();
        moves.push(mv);
        positions.push(position.position_text());
    }
    (moves, positions)
}

#[test]
fn move_and_position_parsers_never_panic_on_mutated_input() {
    for game in GameId::ALL {
        let (moves, positions) = seeds(game);
        let start = game::new_game(game, &serde_json::json!({})).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ game as u64);
        for _ in 0..3_000 {
            let pick = rng.below(moves.len());
            let text = mutate(&mut rng, &moves[pick]);
            // Either a canonical move comes back, which must itself parse and check the same
            // way, or an error; nothing else.
            if let Ok(canonical) = start.check_text(&text) {
                assert_eq!(
                    start.check_text(&canonical),
                    Ok(canonical.clone()),
                    "{game}: {text:?}"
                );
            }
            let pick = rng.below(positions.len());
            let text = mutate(&mut rng, &positions[pick]);
            if let Ok(position) = game::game_from_position_text(game, &text, &serde_json::json!({}))
            {
                // Whatever parses must write back to text that parses to the same position text.
                let again = game::game_from_position_text(
                    game,
                    &position.position_text(),
                    &serde_json::json!({}),
                )
                .unwrap_or_else(|e| panic!("{game}: {text:?} read, but its own text did not: {e}"));
                assert_eq!(again.position_text(), position.position_text());
                let _ = position.move_listing();
            }
        }
    }
}

#[test]
fn protocol_parser_never_panics_on_mutated_lines() {
    let seeds = [
        r#"{"type":"hello","protocol":1,"name":"bistu","token":"s3cret","games":["hex"]}"#,
        r#"{"type":"move","match":"r1-hex-3","move":"F6"}"#,
        r#"{"type":"resign","match":"m"}"#,
        r#"{"type":"pong","id":3}"#,
    ];
    let mut rng = Rng(42);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let pick = rng.below(seeds.len());
        let line = mutate(&mut rng, seeds[pick]);
        match protocol::parse_bot_line(&line) {
            Ok(message) => {
                accepted += 1;
                // An accepted message serialises and reads back to itself.
                assert_eq!(protocol::parse_bot_line(&message.to_line()), Ok(message));
            }
            Err(e) => assert!(!e.message.is_empty()),
        }
    }
    // The mutations keep some lines valid (e.g. an extra blank), so both paths are exercised.
    assert!(accepted > 0);
}

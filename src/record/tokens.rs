//! The move tokens of a contest record and their conversion to and from move text:
//! `J10,K11` ⇄ `W(J,10);W(K,11)`, `B2xE5` ⇄ `B(B,2)x(E,5)`, `swap` ⇄ `B(swap)`.
//!
//! Pure text work: which side made a move is given by the caller (the writer replays the game,
//! the reader takes the colour letters as written).

use crate::game::{GameId, Side};

/// A move text that cannot be written as record tokens (not a move text of the notation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("move text {text:?} cannot be written as a record token: {what}")]
pub struct MoveTextError {
    pub text: String,
    pub what: String,
}

/// The record tokens (each with its colour letter) of one move made by `mover`.
/// A Connect6 two-stone turn gives two tokens; every other move gives one.
pub fn move_to_tokens(game: GameId, mover: Side, text: &str) -> Result<Vec<String>, MoveTextError> {
    let mut tokens = Vec::new();
    let mut scratch = String::new();
    for_each_token(game, mover, text, &mut scratch, |token| {
        tokens.push(token.to_string())
    })?;
    Ok(tokens)
}

/// Calls `each` with every record token of one move made by `mover`, made in `scratch` (a
/// record of hundreds of moves reuses one buffer instead of allocating per token).
pub fn for_each_token(
    game: GameId,
    mover: Side,
    text: &str,
    scratch: &mut String,
    mut each: impl FnMut(&str),
) -> Result<(), MoveTextError> {
    let colour = game.colour_letter(mover);
    // A Connect6 turn's stones are separated by commas; any other move is one piece.
    let pieces = if game.stones_per_turn() > 1 {
        usize::MAX
    } else {
        1
    };
    for piece in text.splitn(pieces, ',') {
        scratch.clear();
        scratch.push(colour);
        push_token_body(scratch, piece.trim()).map_err(|what| MoveTextError {
            text: text.to_string(),
            what,
        })?;
        each(scratch);
    }
    Ok(())
}

/// Appends a move piece's token body to `out`: `B2xE5` → `(B,2)x(E,5)`; `swap` → `(swap)`.
fn push_token_body(out: &mut String, piece: &str) -> Result<(), String> {
    if piece.eq_ignore_ascii_case("swap") {
        out.push_str("(swap)");
        return Ok(());
    }
    if piece.is_empty() {
        return Err("empty move".to_string());
    }
    let mut chars = piece.chars().enumerate().peekable();
    let mut expect_point = true;
    while let Some((i, c)) = chars.next() {
        let next_is_digit = chars.peek().is_some_and(|&(_, d)| d.is_ascii_digit());
        if expect_point {
            if !(c.is_ascii_alphabetic() && next_is_digit) {
                return Err(format!("expected a point at character {}", i + 1));
            }
            out.push('(');
            out.push(c.to_ascii_uppercase());
            out.push(',');
            while let Some((_, d)) = chars.next_if(|&(_, d)| d.is_ascii_digit()) {
                out.push(d);
            }
            out.push(')');
            expect_point = false;
        } else {
            match c {
                '-' | '+' => out.push(c),
                'x' | 'X' => out.push('x'),
                _ => {
                    return Err(format!(
                        "expected '-', 'x' or '+' at character {}, found {c:?}",
                        i + 1
                    ))
                }
            }
            expect_point = true;
        }
    }
    if expect_point {
        return Err("the move ends with a separator".to_string());
    }
    Ok(())
}

/// One move token as read from a record: its side and its move text (for Connect6 one stone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadToken {
    /// The side the colour letter names.
    pub side: Side,
    /// The colour letter as written (upper-cased).
    pub colour: char,
    /// The move text, e.g. `B2xE5`, `J10`, `swap`.
    pub text: String,
}

/// Why a token cannot be read; `at` is the 0-based index into the token's characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError {
    pub at: usize,
    pub what: String,
}

impl TokenError {
    fn new(at: usize, what: impl Into<String>) -> TokenError {
        TokenError {
            at,
            what: what.into(),
        }
    }
}

/// Reads one token, given as its characters with their positions (blanks already removed):
/// a colour letter, then `(COL,ROW)` or `(swap)` groups joined by `-`, `x` or `+`. Anything
/// after the last group that does not continue the move (e.g. `MARK[1]`) is ignored. Letters
/// may be in either case. `at` in errors is an index into `chars`.
pub fn read_token(game: GameId, chars: &[char]) -> Result<ReadToken, TokenError> {
    let Some(&letter) = chars.first() else {
        return Err(TokenError::new(0, "empty token"));
    };
    let colours = format!(
        "{} or {}",
        game.colour_letter(Side::First),
        game.colour_letter(Side::Second)
    );
    let Some(side) = game.side_of_colour(letter) else {
        return Err(TokenError::new(
            0,
            format!(
                "expected a colour letter ({colours} in {}), found {letter:?}",
                game.record_code()
            ),
        ));
    };
    let mut text = String::new();
    let mut i = 1;
    loop {
        match chars.get(i) {
            Some('(') => {}
            Some(c) => return Err(TokenError::new(i, format!("expected '(', found {c:?}"))),
            None => {
                return Err(TokenError::new(
                    i,
                    "expected '(', found the end of the token",
                ))
            }
        }
        i += 1;
        let start = i;
        while chars.get(i).is_some_and(|&c| c != ')') {
            i += 1;
        }
        if chars.get(i).is_none() {
            return Err(TokenError::new(
                start - 1,
                "'(' without its ')' in this token",
            ));
        }
        text.push_str(&read_group(&chars[start..i], start)?);
        i += 1; // past ')'
        match chars.get(i) {
            Some(&c @ ('-' | '+' | 'x' | 'X')) => {
                text.push(if c == 'X' { 'x' } else { c });
                i += 1;
                if chars.get(i) != Some(&'(') {
                    return Err(TokenError::new(
                        i,
                        format!("expected '(' after {c:?}, the move is incomplete"),
                    ));
                }
            }
            Some('(') => {
                return Err(TokenError::new(
                    i,
                    "expected '-', 'x' or '+' between two points",
                ))
            }
            // The end of the token, or a suffix such as MARK[1] that records may carry.
            _ => break,
        }
    }
    Ok(ReadToken {
        side,
        colour: letter.to_ascii_uppercase(),
        text,
    })
}

/// The inside of one `( )` group: `COL,ROW` or `swap`. `offset` is the group's index in the token.
fn read_group(group: &[char], offset: usize) -> Result<String, TokenError> {
    let word: String = group.iter().collect();
    if word.eq_ignore_ascii_case("swap") {
        return Ok("swap".to_string());
    }
    let col = match group.first() {
        Some(c) if c.is_ascii_alphabetic() => c.to_ascii_uppercase(),
        Some(c) => {
            return Err(TokenError::new(
                offset,
                format!("expected a column letter, found {c:?}"),
            ))
        }
        None => return Err(TokenError::new(offset, "empty '()'")),
    };
    if group.get(1) != Some(&',') {
        return Err(TokenError::new(
            offset + 1,
            "expected ',' between the column letter and the row number",
        ));
    }
    let digits = &group[2..];
    if digits.is_empty() || digits.len() > 3 || !digits.iter().all(|d| d.is_ascii_digit()) {
        return Err(TokenError::new(
            offset + 2,
            format!(
                "expected a row number, found {:?}",
                digits.iter().collect::<String>()
            ),
        ));
    }
    let mut point = String::with_capacity(4);
    point.push(col);
    point.extend(digits.iter());
    Ok(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn moves_become_tokens_with_the_movers_colour() {
        let cases: &[(GameId, Side, &str, &[&str])] = &[
            (GameId::Connect6, Side::First, "J10", &["B(J,10)"]),
            (
                GameId::Connect6,
                Side::Second,
                "K10,K11",
                &["W(K,10)", "W(K,11)"],
            ),
            (GameId::Hex, Side::First, "F6", &["R(F,6)"]),
            (GameId::Hex, Side::Second, "swap", &["B(swap)"]),
            (GameId::Surakarta, Side::First, "B2-C3", &["B(B,2)-(C,3)"]),
            (GameId::Surakarta, Side::Second, "E5xB2", &["W(E,5)x(B,2)"]),
            (GameId::Jiu, Side::First, "G7", &["W(G,7)"]),
            (GameId::Jiu, Side::Second, "G6-G7", &["B(G,6)-(G,7)"]),
            (
                GameId::Jiu,
                Side::First,
                "A1xA3xC3+B3",
                &["W(A,1)x(A,3)x(C,3)+(B,3)"],
            ),
            (
                GameId::Jiu,
                Side::Second,
                "G7-G8+B3+N14",
                &["B(G,7)-(G,8)+(B,3)+(N,14)"],
            ),
        ];
        for &(game, side, text, tokens) in cases {
            let got = move_to_tokens(game, side, text).unwrap();
            assert_eq!(got, tokens, "{game} {text}");
            // And back: each token reads as its piece of the move, with the same side.
            let pieces: Vec<String> = got
                .iter()
                .map(|t| {
                    let read = read_token(game, &chars(t)).unwrap();
                    assert_eq!(read.side, side);
                    read.text
                })
                .collect();
            assert_eq!(pieces.join(","), text);
        }
    }

    #[test]
    fn bad_move_texts_are_errors_not_panics() {
        for bad in ["", "J", "10", "B2-", "B2--C3", "B2?C3", "B2-C", "J10,"] {
            assert!(
                move_to_tokens(GameId::Connect6, Side::First, bad).is_err(),
                "{bad:?}"
            );
            assert!(
                move_to_tokens(GameId::Surakarta, Side::First, bad).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn tokens_are_read_case_insensitively_and_suffixes_ignored() {
        let read = |s: &str| read_token(GameId::Connect6, &chars(s));
        assert_eq!(read("w(k,10)").unwrap().text, "K10");
        assert_eq!(read("w(k,10)").unwrap().colour, 'W');
        assert_eq!(read("B(J,10)MARK[1]").unwrap().text, "J10");
        let sur = read_token(GameId::Surakarta, &chars("b(b,2)X(e,5)")).unwrap();
        assert_eq!(sur.text, "B2xE5");
        let hex = read_token(GameId::Hex, &chars("b(SWAP)")).unwrap();
        assert_eq!((hex.side, hex.text.as_str()), (Side::Second, "swap"));
    }

    #[test]
    fn bad_tokens_say_what_and_where() {
        let err = |game, s: &str| read_token(game, &chars(s)).unwrap_err();
        let e = err(GameId::Hex, "W(E,7)");
        assert_eq!(e.at, 0);
        assert!(e.what.contains("R or B"), "{}", e.what);
        assert_eq!(err(GameId::Hex, "R").at, 1);
        assert_eq!(err(GameId::Hex, "RE,7)").at, 1);
        assert_eq!(err(GameId::Hex, "R(E,7").at, 1);
        assert_eq!(err(GameId::Hex, "R(E7)").at, 3);
        assert_eq!(err(GameId::Hex, "R(7,E)").at, 2);
        assert_eq!(err(GameId::Hex, "R(E,)").at, 4);
        assert_eq!(err(GameId::Hex, "R(E,1234)").at, 4);
        assert_eq!(err(GameId::Hex, "R()").at, 2);
        assert_eq!(err(GameId::Surakarta, "B(B,2)-").at, 7);
        assert_eq!(err(GameId::Surakarta, "B(B,2)(C,3)").at, 6);
        assert!(err(GameId::Surakarta, "B(B,2)x(C,3").what.contains("')'"));
    }
}

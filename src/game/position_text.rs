//! What the games' position texts (docs/rules.md) share: the tokenizer contract (tokens split at
//! whitespace, each with its byte offset; errors turn offsets into 1-based character positions
//! with `coord::char_pos`), the rows of `x`/`o`/`.` written from the top row down, separated
//! by `/`, then the side to move, and the `key=value` items after it (`read_keys`), read
//! case-insensitively as move text is.

use super::coord::char_pos;
use super::{ParsePositionError, Side};
use crate::options_text;

/// The whitespace-separated tokens of `text`, each with its byte offset in `text`.
pub fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_whitespace()
        .map(move |t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
}

/// Reads the ROWS token `rows` (at byte `rows_at` of `text`) of a `size`×`size` board, as every
/// game writes it: `size` rows of `size` points, `x` (first side), `o` (second side) or `.`
/// (empty), either case, top row first, separated by `/`. Returns the board row-major, row 1
/// first (`Point::index`). Errors point at the offending character; `noun` names the squares
/// ("points", "cells").
pub fn read_rows(
    text: &str,
    rows_at: usize,
    rows: &str,
    size: u8,
    noun: &str,
) -> Result<Vec<Option<Side>>, ParsePositionError> {
    let n = usize::from(size);
    let err = |byte: usize, what: String| ParsePositionError::new(char_pos(text, byte), what);
    let mut board = vec![None; n * n];
    // Rows are written from the top (row `n`) down; `from_top` counts rows finished so far.
    let mut from_top = 0usize;
    let mut col = 0usize;
    for (byte, ch) in rows.char_indices() {
        let at = rows_at + byte;
        let row_number = n - from_top;
        match ch {
            '/' => {
                if col != n {
                    return Err(err(
                        at,
                        format!("row {row_number} has {col} {noun}, expected {size}"),
                    ));
                }
                if from_top + 1 == n {
                    return Err(err(at, format!("more than {size} rows")));
                }
                from_top += 1;
                col = 0;
            }
            'x' | 'X' | 'o' | 'O' | '.' => {
                if col == n {
                    return Err(err(
                        at,
                        format!("row {row_number} has more than {size} {noun}"),
                    ));
                }
                board[(row_number - 1) * n + col] = match ch {
                    'x' | 'X' => Some(Side::First),
                    'o' | 'O' => Some(Side::Second),
                    _ => None,
                };
                col += 1;
            }
            other => {
                return Err(err(
                    at,
                    format!("unexpected {other:?} in row {row_number} (expected x, o or .)"),
                ))
            }
        }
    }
    let end = rows_at + rows.len();
    if from_top + 1 < n {
        return Err(err(
            end,
            format!(
                "expected {size} rows separated by '/', found {}",
                from_top + 1
            ),
        ));
    }
    if col != n {
        return Err(err(end, format!("row 1 has {col} {noun}, expected {size}")));
    }
    Ok(board)
}

/// Reads the SIDE token that follows the rows (`token`, `None` at the end of `text`): `x` for
/// the first side, `o` for the second, either case.
pub fn read_side(text: &str, token: Option<(usize, &str)>) -> Result<Side, ParsePositionError> {
    match token {
        Some((_, "x" | "X")) => Ok(Side::First),
        Some((_, "o" | "O")) => Ok(Side::Second),
        Some((at, other)) => Err(ParsePositionError::new(
            char_pos(text, at),
            format!("side to move must be x or o, found {other:?}"),
        )),
        None => Err(ParsePositionError::new(
            char_pos(text, text.len()),
            "expected the side to move (x or o) after the rows",
        )),
    }
}

/// One `key=value` item of a position text, as `read_keys` found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyValue<'a> {
    /// The key as the game names it (lower case), whatever case the text wrote it in.
    pub key: &'static str,
    /// The value as written; `word` reads a word value without regard to case.
    pub value: &'a str,
    /// Byte offset of the item in the text.
    pub at: usize,
    /// Byte offset of the value in the text.
    pub value_at: usize,
}

impl KeyValue<'_> {
    /// Which of `words` (each in lower case) the value is, whatever its case.
    pub fn word(&self, words: &[&'static str]) -> Option<&'static str> {
        words
            .iter()
            .copied()
            .find(|w| self.value.eq_ignore_ascii_case(w))
    }
}

/// Reads the `key=value` items after the side to move (`items`: tokens with their byte offsets
/// in `text`), as every game with keys reads them: each must be `key=value`, its key one of
/// `known` (lower case) in any case (`STONES=1` is `stones=1`, as `j10` is `J10`), and no key
/// may be given twice, whatever the case. A game writes its keys, and word values, in lower
/// case. Errors give the 1-based character position; an unknown key is refused naming it and
/// the keys `game` knows.
pub fn read_keys<'a>(
    text: &str,
    items: impl IntoIterator<Item = (usize, &'a str)>,
    game: &str,
    known: &[&'static str],
) -> Result<Vec<KeyValue<'a>>, ParsePositionError> {
    // Byte offsets here, turned into character positions only for an error: counting
    // characters from the start for every item would cost the square of their number.
    let pairs = options_text::read_items(items)
        .map_err(|e| ParsePositionError::new(char_pos(text, e.at()), e.to_string()))?;
    pairs
        .into_iter()
        .map(|options_text::Pair { key, value, at }| {
            match known.iter().copied().find(|k| key.eq_ignore_ascii_case(k)) {
                Some(name) => Ok(KeyValue {
                    key: name,
                    value,
                    at,
                    // A known key is ASCII, so its bytes are its characters.
                    value_at: at + key.len() + 1,
                }),
                None => Err(ParsePositionError::new(
                    char_pos(text, at),
                    format!("unknown key {key:?} ({game} knows {})", key_list(known)),
                )),
            }
        })
        .collect()
}

/// `only stones`, `phase and quiet`, `a, b and c`.
fn key_list(known: &[&str]) -> String {
    match known {
        [] => "no keys".to_string(),
        [one] => format!("only {one}"),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_their_byte_offsets() {
        let text = "  ab\u{3000}cd\te ";
        let toks: Vec<(usize, &str)> = tokens(text).collect();
        assert_eq!(toks, vec![(2, "ab"), (7, "cd"), (10, "e")]);
    }

    #[test]
    fn rows_read_top_first_and_errors_point_at_the_fault() {
        let board = read_rows("x./.o x", 0, "x./.o", 2, "points").unwrap();
        assert_eq!(
            board,
            vec![None, Some(Side::Second), Some(Side::First), None]
        );
        let e = read_rows("x./.o/.. x", 0, "x./.o/..", 2, "points").unwrap_err();
        assert_eq!((e.at, e.what.as_str()), (6, "more than 2 rows"));
        let e = read_rows("x. x", 0, "x.", 2, "points").unwrap_err();
        assert_eq!(
            (e.at, e.what.as_str()),
            (3, "expected 2 rows separated by '/', found 1")
        );
        let e = read_rows("x./. x", 0, "x./.", 2, "cells").unwrap_err();
        assert_eq!(
            (e.at, e.what.as_str()),
            (5, "row 1 has 1 cells, expected 2")
        );
        let e = read_rows("x/.. x", 0, "x/..", 2, "cells").unwrap_err();
        assert_eq!(
            (e.at, e.what.as_str()),
            (2, "row 2 has 1 cells, expected 2")
        );
        let e = read_rows("x../.. x", 0, "x../..", 2, "points").unwrap_err();
        assert_eq!((e.at, e.what.as_str()), (3, "row 2 has more than 2 points"));
        let e = read_rows("x./.q x", 0, "x./.q", 2, "points").unwrap_err();
        assert_eq!(
            (e.at, e.what.as_str()),
            (5, "unexpected 'q' in row 1 (expected x, o or .)")
        );
        // Either case reads the same.
        assert_eq!(read_rows("X./.O x", 0, "X./.O", 2, "points"), Ok(board));
    }

    #[test]
    fn keys_and_word_values_read_in_any_case_and_unknown_keys_are_named() {
        let text = "x./.o x STONES=1 Phase=BATTLE";
        let items = tokens(text).skip(2);
        let keys = read_keys(text, items, "demo", &["phase", "stones"]).unwrap();
        assert_eq!(
            keys.iter().map(|k| (k.key, k.value)).collect::<Vec<_>>(),
            [("stones", "1"), ("phase", "BATTLE")]
        );
        assert_eq!((keys[0].at, keys[0].value_at), (8, 15));
        assert_eq!(&text[keys[1].value_at..], "BATTLE");
        assert_eq!(keys[1].word(&["placement", "battle"]), Some("battle"));
        assert_eq!(keys[0].word(&["placement", "battle"]), None);
        // Unknown keys are named, at their character position (é is two bytes, one character).
        let text = "é x Turns=2";
        let e = read_keys(text, tokens(text).skip(2), "demo", &["stones"]).unwrap_err();
        assert_eq!(e.at, 5);
        assert_eq!(e.what, "unknown key \"Turns\" (demo knows only stones)");
        let e = read_keys(text, tokens(text).skip(2), "demo", &["phase", "quiet"]).unwrap_err();
        assert_eq!(e.what, "unknown key \"Turns\" (demo knows phase and quiet)");
        // A key given twice in two cases is given twice.
        let text = "x stones=1 STONES=2";
        let e = read_keys(text, tokens(text).skip(1), "demo", &["stones"]).unwrap_err();
        assert_eq!((e.at, e.what.as_str()), (12, "STONES is given twice"));
        let e = read_keys("x stones", tokens("x stones").skip(1), "demo", &["stones"]);
        assert!(e.unwrap_err().what.contains("key=value"));
    }
}

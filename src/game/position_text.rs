//! What the games' position texts (NOTATION.md) share: the tokenizer contract (tokens split at
//! whitespace, each with its byte offset; errors turn offsets into 1-based character positions
//! with `coord::char_pos`) and the rows of `x`/`o`/`.` written from the top row down, separated
//! by `/`, then the side to move, as Connect6 and Hex read them.

use super::coord::char_pos;
use super::{ParsePositionError, Side};

/// The whitespace-separated tokens of `text`, each with its byte offset in `text`.
pub fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_whitespace()
        .map(move |t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
}

/// Reads the ROWS token `rows` (at byte `rows_at` of `text`) of a `size`×`size` board: `size`
/// rows of `size` lower-case `x`, `o` or `.`, top row first. Returns the board row-major, row 1
/// first (`Point::index`). `noun` names the squares in errors ("points", "cells").
pub fn read_rows(
    text: &str,
    rows_at: usize,
    rows: &str,
    size: u8,
    noun: &str,
) -> Result<Vec<Option<Side>>, ParsePositionError> {
    let n = usize::from(size);
    let row_count = rows.split('/').count();
    if row_count != n {
        return Err(ParsePositionError::new(
            char_pos(text, rows_at),
            format!("expected {size} rows separated by '/', found {row_count}"),
        ));
    }
    let mut board = vec![None; n * n];
    let mut offset = rows_at;
    for (k, row_text) in rows.split('/').enumerate() {
        let row_number = n - k;
        let len = row_text.chars().count();
        if len != n {
            return Err(ParsePositionError::new(
                char_pos(text, offset),
                format!("row {row_number} has {len} {noun}, expected {size}"),
            ));
        }
        for (col, (byte, ch)) in row_text.char_indices().enumerate() {
            board[(row_number - 1) * n + col] = match ch {
                'x' => Some(Side::First),
                'o' => Some(Side::Second),
                '.' => None,
                other => {
                    return Err(ParsePositionError::new(
                        char_pos(text, offset + byte),
                        format!("unexpected {other:?} in row {row_number} (expected x, o or .)"),
                    ))
                }
            };
        }
        offset += row_text.len() + 1;
    }
    Ok(board)
}

/// Reads the SIDE token that follows the rows (`token`, `None` at the end of `text`): `x` for
/// the first side, `o` for the second.
pub fn read_side(text: &str, token: Option<(usize, &str)>) -> Result<Side, ParsePositionError> {
    match token {
        Some((_, "x")) => Ok(Side::First),
        Some((_, "o")) => Ok(Side::Second),
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
        assert_eq!(
            (e.at, e.what.as_str()),
            (1, "expected 2 rows separated by '/', found 3")
        );
        let e = read_rows("x./. x", 0, "x./.", 2, "cells").unwrap_err();
        assert_eq!(
            (e.at, e.what.as_str()),
            (4, "row 1 has 1 cells, expected 2")
        );
        let e = read_rows("x./.X x", 0, "x./.X", 2, "points").unwrap_err();
        assert_eq!(e.at, 5);
    }
}

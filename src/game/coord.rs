//! Board points as the contest names them: column letter (A = leftmost) and row number
//! (1 = bottom), e.g. `J10`; parsing (case-insensitive) and formatting (upper case).

use std::fmt;

use super::ParseMoveError;

/// A point on a square board, 0-based: `col` 0 is column A, `row` 0 is row 1 (the bottom row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub col: u8,
    pub row: u8,
}

impl Point {
    pub const fn new(col: u8, row: u8) -> Point {
        Point { col, row }
    }

    /// Index into a row-major board of width `size`, row 0 first.
    pub fn index(self, size: u8) -> usize {
        self.row as usize * size as usize + self.col as usize
    }

    /// The point at `index` of a row-major board of width `size`.
    pub fn from_index(index: usize, size: u8) -> Point {
        Point {
            col: (index % size as usize) as u8,
            row: (index / size as usize) as u8,
        }
    }

    /// The column letter, `A` for column 0.
    pub fn col_letter(self) -> char {
        (b'A' + self.col) as char
    }

    /// The 1-based row number.
    pub fn row_number(self) -> u32 {
        self.row as u32 + 1
    }
}

impl fmt::Display for Point {
    /// Written piece by piece rather than through `write!`, whose formatting machinery showed
    /// in the referee's profile (every move it records is formatted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        f.write_char(self.col_letter())?;
        f.write_str(itoa::Buffer::new().format(self.row_number()))
    }
}

/// Reads one point at byte offset `start` of `text` on a `size`×`size` board: a column letter
/// then a row number. Returns the point and the byte offset just after it.
pub fn parse_point_at(
    text: &str,
    start: usize,
    size: u8,
) -> Result<(Point, usize), ParseMoveError> {
    let bytes = text.as_bytes();
    let last_col = (b'A' + size - 1) as char;
    let at = char_pos(text, start);
    let Some(&c) = bytes.get(start) else {
        return Err(ParseMoveError::new(
            text,
            at,
            format!("expected a point (column A-{last_col}, then a row 1-{size}), found the end"),
        ));
    };
    let upper = c.to_ascii_uppercase();
    if !upper.is_ascii_uppercase() {
        return Err(ParseMoveError::new(
            text,
            at,
            format!(
                "expected a column letter A-{last_col}, found {:?}",
                found_char(text, start)
            ),
        ));
    }
    let col = upper - b'A';
    if col >= size {
        return Err(ParseMoveError::new(
            text,
            at,
            format!("column {} is off the board (A-{last_col})", upper as char),
        ));
    }
    let digits_start = start + 1;
    let mut end = digits_start;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end == digits_start {
        let what = match bytes.get(digits_start) {
            Some(_) => format!(
                "expected a row number 1-{size}, found {:?}",
                found_char(text, digits_start)
            ),
            None => format!("expected a row number 1-{size}, found the end"),
        };
        return Err(ParseMoveError::new(
            text,
            char_pos(text, digits_start),
            what,
        ));
    }
    let digits = &text[digits_start..end];
    let row: u32 = digits.parse().unwrap_or(u32::MAX);
    if row == 0 || row > size as u32 || (digits.len() > 1 && digits.starts_with('0')) {
        return Err(ParseMoveError::new(
            text,
            char_pos(text, digits_start),
            format!("row {digits} is off the board (1-{size})"),
        ));
    }
    Ok((Point::new(col, (row - 1) as u8), end))
}

/// Reads a whole text that must be exactly one point.
pub fn parse_point(text: &str, size: u8) -> Result<Point, ParseMoveError> {
    let (p, end) = parse_point_at(text, 0, size)?;
    expect_end(text, end)?;
    Ok(p)
}

/// Fails unless `end` is the end of `text`.
pub fn expect_end(text: &str, end: usize) -> Result<(), ParseMoveError> {
    if end < text.len() {
        return Err(ParseMoveError::new(
            text,
            char_pos(text, end),
            format!("unexpected {:?} after the move", found_char(text, end)),
        ));
    }
    Ok(())
}

/// The 1-based character position of byte offset `byte` in `text`.
pub fn char_pos(text: &str, byte: usize) -> usize {
    text.get(..byte)
        .map(|s| s.chars().count())
        .unwrap_or_else(|| text.len())
        + 1
}

/// The character starting at byte offset `byte` (or the replacement character mid-sequence).
pub fn found_char(text: &str, byte: usize) -> char {
    text.get(byte..)
        .and_then(|s| s.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_round_trip_on_every_board_size() {
        for size in [6u8, 11, 14, 19] {
            for row in 0..size {
                for col in 0..size {
                    let p = Point::new(col, row);
                    assert_eq!(parse_point(&p.to_string(), size).unwrap(), p);
                    assert_eq!(parse_point(&p.to_string().to_lowercase(), size).unwrap(), p);
                }
            }
        }
    }

    #[test]
    fn bad_points_say_what_and_where() {
        let e = parse_point("Z3", 19).unwrap_err();
        assert_eq!(e.at, 1);
        assert!(e.what.contains("off the board"), "{e}");
        let e = parse_point("J20", 19).unwrap_err();
        assert_eq!(e.at, 2);
        let e = parse_point("J", 19).unwrap_err();
        assert!(e.what.contains("found the end"), "{e}");
        let e = parse_point("J10x", 19).unwrap_err();
        assert_eq!(e.at, 4);
        let e = parse_point("J0", 19).unwrap_err();
        assert!(e.what.contains("off the board"));
        let e = parse_point("J05", 19).unwrap_err();
        assert!(e.what.contains("off the board"));
        let e = parse_point("", 19).unwrap_err();
        assert_eq!(e.at, 1);
        let e = parse_point("é1", 19).unwrap_err();
        assert_eq!(e.at, 1);
        assert!(parse_point("J99999999999999999999", 19).is_err());
    }
}

//! Jiu move text (`G7`, `G7-G8`, `G7xG9xI9`, `+B3` victims) and position text
//! (`ROWS SIDE phase=placement|battle [quiet=N]`): reading, with what and where on error, and
//! writing, in upper case and canonical victim order.

use std::fmt;

use super::{Board, Jiu, Move, Options, Phase, Victims, CENTRE, POINTS, SIZE};
use crate::game::coord::{char_pos, expect_end, found_char, parse_point_at};
use crate::game::position_text::{read_keys, read_rows, tokens};
use crate::game::{ParseMoveError, ParsePositionError, Point, Rules, Side};

impl fmt::Display for Victims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in self.points() {
            write!(f, "+{p}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::Place(p) => write!(f, "{p}"),
            Move::Shift { from, to, victims } => write!(f, "{from}-{to}{victims}"),
            Move::Jump {
                from,
                landings,
                victims,
            } => {
                write!(f, "{from}")?;
                for land in landings {
                    write!(f, "x{land}")?;
                }
                write!(f, "{victims}")
            }
        }
    }
}

/// Reads move text, case-insensitively: `P`, `P-P`, `PxP[xP...]`, the last two optionally
/// followed by `+P` victims in any order (kept sorted). Syntax only.
pub(super) fn parse_move(text: &str) -> Result<Move, ParseMoveError> {
    let bytes = text.as_bytes();
    let (from, mut at) = parse_point_at(text, 0, SIZE)?;
    let mv = match bytes.get(at) {
        None => return Ok(Move::Place(from)),
        Some(b'-') => {
            let (to, end) = parse_point_at(text, at + 1, SIZE)?;
            at = end;
            Move::Shift {
                from,
                to,
                victims: Victims::none(),
            }
        }
        Some(b'x' | b'X') => {
            let mut landings = Vec::new();
            while matches!(bytes.get(at), Some(b'x' | b'X')) {
                let (land, end) = parse_point_at(text, at + 1, SIZE)?;
                landings.push(land);
                at = end;
            }
            Move::Jump {
                from,
                landings,
                victims: Victims::none(),
            }
        }
        Some(b'+') => {
            return Err(ParseMoveError::new(
                text,
                char_pos(text, at),
                "a placement removes nothing: `+` victims follow only a step, fly or jump",
            ))
        }
        Some(_) => {
            return Err(ParseMoveError::new(
                text,
                char_pos(text, at),
                format!(
                    "expected `-` (step or fly), `x` (jump) or the end after the point, found {:?}",
                    found_char(text, at)
                ),
            ))
        }
    };
    let mut victims = Vec::new();
    while bytes.get(at) == Some(&b'+') {
        let (victim, end) = parse_point_at(text, at + 1, SIZE)?;
        victims.push(victim);
        at = end;
    }
    if at < bytes.len() {
        let what = match (&mv, bytes.get(at)) {
            (Move::Shift { .. }, Some(b'-')) => {
                "a step or fly goes to one point; a chain of jumps is written with `x`".to_string()
            }
            (_, Some(b'x' | b'X')) if !victims.is_empty() => {
                "the `+` victims come after the last landing point".to_string()
            }
            _ => format!(
                "unexpected {:?}: only `+` victims may follow",
                found_char(text, at)
            ),
        };
        return Err(ParseMoveError::new(text, char_pos(text, at), what));
    }
    expect_end(text, at)?;
    Ok(match mv {
        Move::Shift { from, to, .. } => Move::Shift {
            from,
            to,
            victims: Victims::new(victims),
        },
        Move::Jump { from, landings, .. } => Move::Jump {
            from,
            landings,
            victims: Victims::new(victims),
        },
        Move::Place(p) => Move::Place(p),
    })
}

/// Writes position text: 14 rows from row 14 down to row 1, the side to move, the phase, and in
/// the battle phase the plies since the last capture.
pub(super) fn position_text(position: &Jiu) -> String {
    let mut text = String::with_capacity(POINTS + 40);
    for row in (0..SIZE).rev() {
        for col in 0..SIZE {
            text.push(match position.stone_at(Point::new(col, row)) {
                Some(side) => side.position_char(),
                None => '.',
            });
        }
        if row > 0 {
            text.push('/');
        }
    }
    text.push(' ');
    text.push(position.turn().position_char());
    text.push_str(" phase=");
    text.push_str(position.phase().as_str());
    if position.phase() == Phase::Battle {
        text.push_str(&format!(" quiet={}", position.quiet_plies()));
    }
    text
}

/// Reads position text (docs/rules.md). A placement position must be one the placement phase can
/// reach: x has as many stones as o or one more, the side to move is the one whose turn that
/// makes, the board is not full, and the stones on G7 and H8 follow the forced opening.
pub(super) fn parse_position(text: &str, options: &Options) -> Result<Jiu, ParsePositionError> {
    let err = |byte: usize, what: String| ParsePositionError::new(char_pos(text, byte), what);
    let tokens: Vec<(usize, &str)> = tokens(text).collect();
    let Some(&(rows_at, rows)) = tokens.first() else {
        return Err(err(
            0,
            "expected the 14 rows, the side to move and phase=..., found nothing".to_string(),
        ));
    };
    let board = parse_rows(text, rows_at, rows)?;

    let side = match tokens.get(1) {
        None => {
            return Err(err(
                text.len(),
                "expected the side to move (x or o) after the rows".to_string(),
            ))
        }
        Some(&(at, s)) => match s {
            "x" | "X" => Side::First,
            "o" | "O" => Side::Second,
            _ => {
                return Err(err(
                    at,
                    format!("expected the side to move, x or o, found {s:?}"),
                ))
            }
        },
    };

    let mut phase = None;
    let mut quiet = None;
    for key in read_keys(
        text,
        tokens.iter().skip(2).copied(),
        "jiu",
        &["phase", "quiet"],
    )? {
        let value = key.value;
        match key.key {
            "phase" => {
                phase = Some(match key.word(&["placement", "battle"]) {
                    Some("placement") => Phase::Placement,
                    Some(_) => Phase::Battle,
                    None => {
                        return Err(err(
                            key.value_at,
                            format!("phase must be placement or battle, found {value:?}"),
                        ))
                    }
                });
            }
            // "quiet", the only other key `read_keys` lets through.
            _ => {
                let n = if value.bytes().all(|b| b.is_ascii_digit()) {
                    value.parse::<u32>().ok()
                } else {
                    None
                };
                match n {
                    Some(n) => quiet = Some((key.at, n)),
                    None => {
                        return Err(err(
                            key.value_at,
                            format!("quiet must be a whole number of plies, found {value:?}"),
                        ))
                    }
                }
            }
        }
    }
    let Some(phase) = phase else {
        return Err(err(
            text.len(),
            "phase=placement or phase=battle is required".to_string(),
        ));
    };

    if phase == Phase::Placement {
        check_placement(text, &board, side, quiet)?;
    }
    Ok(Jiu::from_parts(
        options,
        board,
        phase,
        side,
        quiet.map_or(0, |(_, n)| n),
    ))
}

/// Reads the 14 rows (top row first) into a board, as every game reads its rows.
fn parse_rows(text: &str, rows_at: usize, rows: &str) -> Result<Board, ParsePositionError> {
    let mut board: Board = [None; POINTS];
    for (cell, point) in board
        .iter_mut()
        .zip(read_rows(text, rows_at, rows, SIZE, "points")?)
    {
        *cell = point;
    }
    Ok(board)
}

/// Refuses placement positions the placement phase cannot reach.
fn check_placement(
    text: &str,
    board: &Board,
    side: Side,
    quiet: Option<(usize, u32)>,
) -> Result<(), ParsePositionError> {
    let err = |byte: usize, what: String| ParsePositionError::new(char_pos(text, byte), what);
    if let Some((at, n)) = quiet {
        if n != 0 {
            return Err(err(
                at,
                "quiet counts battle plies: it must be 0 (or absent) in the placement phase"
                    .to_string(),
            ));
        }
    }
    let count = |s: Side| board.iter().filter(|&&c| c == Some(s)).count();
    let (x, o) = (count(Side::First), count(Side::Second));
    let expected_side = if x == o {
        Side::First
    } else if x == o + 1 {
        Side::Second
    } else {
        return Err(err(
            0,
            format!("in placement x places first, so x has as many stones as o or one more (x {x}, o {o})"),
        ));
    };
    if side != expected_side {
        return Err(err(
            0,
            format!(
                "with x {x} and o {o} stones placed it is {}'s turn to place",
                expected_side.position_char()
            ),
        ));
    }
    if x + o >= POINTS {
        return Err(err(
            0,
            "a full board is in the battle phase (G7 and H8 are emptied)".to_string(),
        ));
    }
    let centre = CENTRE.map(|p| board.get(p.index(SIZE)).copied().flatten());
    let opening_ok = match x + o {
        0 => true,
        1 => centre.contains(&Some(Side::First)),
        _ => centre.contains(&Some(Side::First)) && centre.contains(&Some(Side::Second)),
    };
    if !opening_ok {
        return Err(err(
            0,
            "the forced opening is missing: x's first stone is on G7 or H8 and o's on the other"
                .to_string(),
        ));
    }
    Ok(())
}

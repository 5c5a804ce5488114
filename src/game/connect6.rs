//! Connect6 (六子棋) rules on the 19×19 board: one opening stone, then two stones per turn, six
//! or more in a row wins; move text `J10` / `J10,K11` and position text `ROWS SIDE [stones=1|2]`.
//!
//! Choices where RULES.md is silent (also in `docs/rules/connect6.md`):
//! - A one-stone move when two stones are due is legal only if that stone completes six in a row
//!   (that is how the record of such a finish reads back, since the unplayed second stone is not
//!   recorded) or if only one empty point is left.
//! - `legal_moves` lists each unordered pair of distinct empty points once (lower board index
//!   first) and not the one-stone form of a winning pair, which is the same turn as that pair.
//!   `perft` therefore counts turns: a pair is one move, and depth 2 from the start is
//!   361 · C(360, 2) = 361 · 64620 = 23 327 820.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::coord::{char_pos, found_char, parse_point_at};
use super::{EndReason, GameId, Outcome, ParseMoveError, ParsePositionError, Point, Rules, Side};

/// Board width and height.
pub const SIZE: u8 = 19;
/// Number of points on the board.
pub const CELLS: usize = SIZE as usize * SIZE as usize;
/// Stones in a row that win (or more).
const WIN_LENGTH: usize = 6;
/// The four line directions: row, column and both diagonals.
const DIRECTIONS: [(i32, i32); 4] = [(1, 0), (0, 1), (1, 1), (1, -1)];

/// A Connect6 position: the board, the side to move, how many stones it places this turn, and
/// the result once the game is over.
#[derive(Clone, PartialEq, Eq)]
pub struct Connect6 {
    options: Options,
    /// Row-major, row 1 first (`Point::index`).
    board: [Option<Side>; CELLS],
    turn: Side,
    /// Stones the side to move places this turn: 1 (Black's opening stone) or 2.
    stones_due: u8,
    empty_count: u16,
    outcome: Option<Outcome>,
}

impl fmt::Debug for Connect6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connect6")
            .field("position", &self.position_text())
            .field("outcome", &self.outcome)
            .finish()
    }
}

/// Connect6 rule options: there are none. Any option given is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {}

/// One Connect6 turn: one stone (Black's opening move, a stone that completes six, or the last
/// empty point) or two stones, placed in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Move {
    One(Point),
    Two(Point, Point),
}

impl Move {
    /// The stones of the move, in the order they are placed.
    pub fn stones(&self) -> impl Iterator<Item = Point> {
        let (first, second) = match *self {
            Move::One(a) => (a, None),
            Move::Two(a, b) => (a, Some(b)),
        };
        std::iter::once(first).chain(second)
    }

    fn stone_count(&self) -> u8 {
        match self {
            Move::One(_) => 1,
            Move::Two(..) => 2,
        }
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::One(a) => write!(f, "{a}"),
            Move::Two(a, b) => write!(f, "{a},{b}"),
        }
    }
}

/// Why a Connect6 move is illegal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    #[error("the game is over")]
    GameOver,
    #[error("point (column {}, row {}) is off the board", .0.col, .0.row)]
    OffBoard(Point),
    #[error("{0} is already occupied")]
    Occupied(Point),
    #[error("the two stones of a turn must be on distinct points")]
    SameStoneTwice,
    #[error("{}", wrong_count_text(*expected, *got))]
    WrongStoneCount { expected: u8, got: u8 },
}

fn wrong_count_text(expected: u8, got: u8) -> String {
    let mut text = format!("this turn places {expected} stone(s), not {got}");
    if expected == 2 && got == 1 {
        text.push_str(
            " (a single stone is accepted only when it completes six in a row \
             or fills the last empty point)",
        );
    }
    text
}

impl Connect6 {
    /// The stone on `p`, if any (`None` also for a point off the board).
    pub fn stone_at(&self, p: Point) -> Option<Side> {
        cell_index(p).and_then(|i| self.board[i])
    }

    /// Stones the side to move places this turn (1 or 2).
    pub fn stones_due(&self) -> u8 {
        self.stones_due
    }

    /// Number of empty points.
    pub fn empty_count(&self) -> usize {
        self.empty_count as usize
    }

    /// Length of the `side` run through `(col, row)` in direction `(dc, dr)`, not counting the
    /// point itself.
    fn run_length(&self, col: i32, row: i32, dc: i32, dr: i32, side: Side) -> usize {
        let mut n = 0;
        for step in 1..SIZE as i32 {
            let (c, r) = (col + dc * step, row + dr * step);
            match index_of(c, r) {
                Some(i) if self.board[i] == Some(side) => n += 1,
                _ => break,
            }
        }
        n
    }

    /// Whether a `side` stone on `p` (placed or about to be) lies on six or more in a row.
    fn makes_six(&self, p: Point, side: Side) -> bool {
        let (col, row) = (p.col as i32, p.row as i32);
        DIRECTIONS.iter().any(|&(dc, dr)| {
            1 + self.run_length(col, row, dc, dr, side) + self.run_length(col, row, -dc, -dr, side)
                >= WIN_LENGTH
        })
    }

    /// Places one stone of the side to move; returns whether it completes six.
    fn place(&mut self, i: usize) -> bool {
        self.board[i] = Some(self.turn);
        self.empty_count = self.empty_count.saturating_sub(1);
        self.makes_six(Point::from_index(i, SIZE), self.turn)
    }

    /// Indices of the empty points, in board order, and how many there are.
    fn empty_points(&self) -> ([u16; CELLS], usize) {
        let mut empties = [0u16; CELLS];
        let mut n = 0;
        for (i, cell) in self.board.iter().enumerate() {
            if cell.is_none() {
                empties[n] = i as u16;
                n += 1;
            }
        }
        (empties, n)
    }

    /// The board's result when read from position text: a six is a win for its colour; a full
    /// board without one is a draw. Both colours having a six is an error.
    fn outcome_on_board(&self) -> Result<Option<Outcome>, ParsePositionError> {
        let mut has_six = [false; 2];
        for i in 0..CELLS {
            if let Some(side) = self.board[i] {
                if !has_six[side.index()] && self.makes_six(Point::from_index(i, SIZE), side) {
                    has_six[side.index()] = true;
                }
            }
        }
        Ok(match has_six {
            [true, true] => {
                return Err(ParsePositionError::new(
                    1,
                    "both colours have six in a row; a game ends at the first six",
                ))
            }
            [true, false] => Some(Outcome::win(Side::First, EndReason::SixInRow)),
            [false, true] => Some(Outcome::win(Side::Second, EndReason::SixInRow)),
            [false, false] if self.empty_count == 0 => Some(Outcome::draw(EndReason::BoardFull)),
            [false, false] => None,
        })
    }
}

/// The board index of `(col, row)` if it is on the board.
fn index_of(col: i32, row: i32) -> Option<usize> {
    let size = SIZE as i32;
    if (0..size).contains(&col) && (0..size).contains(&row) {
        Some((row * size + col) as usize)
    } else {
        None
    }
}

fn cell_index(p: Point) -> Option<usize> {
    index_of(p.col as i32, p.row as i32)
}

/// Skips ASCII blanks from byte offset `at`.
fn skip_blanks(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while bytes.get(at).is_some_and(|b| *b == b' ' || *b == b'\t') {
        at += 1;
    }
    at
}

/// The whitespace-separated tokens of `text` with their byte offsets.
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_ascii_whitespace()
        .map(move |t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
}

impl Rules for Connect6 {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Connect6;

    /// The empty board, Black (`x`) to place one stone.
    fn start(options: &Options) -> Self {
        Connect6 {
            options: options.clone(),
            board: [None; CELLS],
            turn: Side::First,
            stones_due: 1,
            empty_count: CELLS as u16,
            outcome: None,
        }
    }

    fn options(&self) -> &Options {
        &self.options
    }

    /// Reads `ROWS SIDE [stones=1|2]`: 19 rows of 19 `x`/`o`/`.` from row 19 down to row 1,
    /// separated by `/`; the side to move; `stones` (default 2) the stones it places this turn.
    fn from_position_text(text: &str, options: &Options) -> Result<Self, ParsePositionError> {
        let mut toks = tokens(text);
        let Some((rows_at, rows)) = toks.next() else {
            return Err(ParsePositionError::new(
                1,
                "empty position text (expected ROWS SIDE [stones=1|2])",
            ));
        };
        let mut position = Connect6::start(options);
        position.stones_due = 2;
        read_rows(text, rows_at, rows, &mut position.board)?;
        position.empty_count = position.board.iter().filter(|c| c.is_none()).count() as u16;
        position.turn = match toks.next() {
            Some((_, "x")) => Side::First,
            Some((_, "o")) => Side::Second,
            Some((at, other)) => {
                return Err(ParsePositionError::new(
                    char_pos(text, at),
                    format!("side to move must be x or o, found {other:?}"),
                ))
            }
            None => {
                return Err(ParsePositionError::new(
                    char_pos(text, text.len()),
                    "expected the side to move (x or o) after the rows",
                ))
            }
        };
        let mut stones_seen = false;
        for (at, token) in toks {
            let at = char_pos(text, at);
            let Some((key, value)) = token.split_once('=') else {
                return Err(ParsePositionError::new(
                    at,
                    format!("expected key=value, found {token:?}"),
                ));
            };
            if key != "stones" {
                return Err(ParsePositionError::new(
                    at,
                    format!("unknown key {key:?} (connect6 knows only stones)"),
                ));
            }
            if stones_seen {
                return Err(ParsePositionError::new(at, "duplicate key \"stones\""));
            }
            stones_seen = true;
            position.stones_due = match value {
                "1" => 1,
                "2" => 2,
                _ => {
                    return Err(ParsePositionError::new(
                        at + key.len() + 1,
                        format!("stones must be 1 or 2, found {value:?}"),
                    ))
                }
            };
        }
        position.outcome = position.outcome_on_board()?;
        Ok(position)
    }

    fn position_text(&self) -> String {
        let mut text = String::with_capacity(CELLS + SIZE as usize + 12);
        for row in (0..SIZE).rev() {
            for col in 0..SIZE {
                let i = Point::new(col, row).index(SIZE);
                text.push(self.board[i].map_or('.', Side::position_char));
            }
            if row > 0 {
                text.push('/');
            }
        }
        text.push(' ');
        text.push(self.turn.position_char());
        if self.stones_due == 1 {
            text.push_str(" stones=1");
        }
        text
    }

    /// Reads `J10` or `J10,K11` (case-insensitive; blanks allowed around the comma).
    fn parse_move(text: &str) -> Result<Move, ParseMoveError> {
        let (first, end) = parse_point_at(text, 0, SIZE)?;
        let after = skip_blanks(text, end);
        if after == text.len() && end == text.len() {
            return Ok(Move::One(first));
        }
        if text.as_bytes().get(after) != Some(&b',') {
            return Err(ParseMoveError::new(
                text,
                char_pos(text, end),
                format!(
                    "expected ',' and a second point, or the end, found {:?}",
                    found_char(text, end)
                ),
            ));
        }
        let (second, end) = parse_point_at(text, skip_blanks(text, after + 1), SIZE)?;
        if end < text.len() {
            return Err(ParseMoveError::new(
                text,
                char_pos(text, end),
                format!(
                    "unexpected {:?} after the move (at most two stones)",
                    found_char(text, end)
                ),
            ));
        }
        Ok(Move::Two(first, second))
    }

    fn turn(&self) -> Side {
        self.turn
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// With one stone due (or only one empty point left): each empty point. With two due: each
    /// unordered pair of distinct empty points once, lower board index first. The one-stone form
    /// of a winning pair is legal but not listed (it is the same turn as the pair).
    fn legal_moves(&self, out: &mut Vec<Move>) {
        if self.outcome.is_some() {
            return;
        }
        let (empties, n) = self.empty_points();
        let empties = &empties[..n];
        if self.stones_due == 1 || n == 1 {
            out.extend(
                empties
                    .iter()
                    .map(|&i| Move::One(Point::from_index(i as usize, SIZE))),
            );
            return;
        }
        out.reserve(n * n.saturating_sub(1) / 2);
        for (k, &a) in empties.iter().enumerate() {
            let pa = Point::from_index(a as usize, SIZE);
            for &b in &empties[k + 1..] {
                out.push(Move::Two(pa, Point::from_index(b as usize, SIZE)));
            }
        }
    }

    fn check_move(&self, mv: &Move) -> Result<(), IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        let wrong_count = IllegalMove::WrongStoneCount {
            expected: self.stones_due,
            got: mv.stone_count(),
        };
        let free = |p: Point| match cell_index(p) {
            None => Err(IllegalMove::OffBoard(p)),
            Some(i) if self.board[i].is_some() => Err(IllegalMove::Occupied(p)),
            Some(_) => Ok(()),
        };
        match *mv {
            Move::One(a) => {
                free(a)?;
                if self.stones_due == 2 && self.empty_count != 1 && !self.makes_six(a, self.turn) {
                    return Err(wrong_count);
                }
            }
            Move::Two(a, b) => {
                if self.stones_due != 2 {
                    return Err(wrong_count);
                }
                free(a)?;
                if a == b {
                    return Err(IllegalMove::SameStoneTwice);
                }
                free(b)?;
            }
        }
        Ok(())
    }

    /// Places the stones one at a time; if the first stone of a pair completes six the game
    /// ends there and the second stone is not placed.
    fn play_unchecked(&mut self, mv: &Move) {
        debug_assert!(self.check_move(mv).is_ok(), "illegal move {mv}");
        let mover = self.turn;
        for p in mv.stones() {
            let Some(i) = cell_index(p) else { return };
            if self.board[i].is_some() {
                return;
            }
            if self.place(i) {
                self.outcome = Some(Outcome::win(mover, EndReason::SixInRow));
                break;
            }
        }
        if self.outcome.is_none() && self.empty_count == 0 {
            self.outcome = Some(Outcome::draw(EndReason::BoardFull));
        }
        self.turn = mover.opponent();
        self.stones_due = 2;
    }

    /// A pair whose first stone already completes six is recorded as that one stone.
    fn recorded_move(&self, mv: &Move) -> Move {
        match *mv {
            Move::Two(a, _) if self.makes_six(a, self.turn) => Move::One(a),
            other => other,
        }
    }

    /// What `arena moves` prints: the empty points (nothing once the game is over), since
    /// listing every pair would be tens of thousands of moves.
    fn move_listing(&self) -> Vec<String> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        let (empties, n) = self.empty_points();
        empties[..n]
            .iter()
            .map(|&i| Point::from_index(i as usize, SIZE).to_string())
            .collect()
    }
}

/// Reads the ROWS field (starting at byte `rows_at` of `text`) into `board`.
fn read_rows(
    text: &str,
    rows_at: usize,
    rows: &str,
    board: &mut [Option<Side>; CELLS],
) -> Result<(), ParsePositionError> {
    let row_count = rows.split('/').count();
    if row_count != SIZE as usize {
        return Err(ParsePositionError::new(
            char_pos(text, rows_at),
            format!("expected {SIZE} rows separated by '/', found {row_count}"),
        ));
    }
    let mut offset = rows_at;
    for (k, row_text) in rows.split('/').enumerate() {
        let row_number = SIZE as usize - k;
        let len = row_text.chars().count();
        if len != SIZE as usize {
            return Err(ParsePositionError::new(
                char_pos(text, offset),
                format!("row {row_number} has {len} points, expected {SIZE}"),
            ));
        }
        for (col, (byte, ch)) in row_text.char_indices().enumerate() {
            let cell = match ch {
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
            board[(row_number - 1) * SIZE as usize + col] = cell;
        }
        offset += row_text.len() + 1;
    }
    Ok(())
}

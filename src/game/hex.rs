//! Hex (海克斯棋) rules on the 11×11 rhombus: Red (first, `x`) joins row 1 to row 11, Blue
//! (second, `o`) joins column A to column K; optional swap rule; move text `F6` / `swap` and
//! position text `ROWS SIDE`. Connections are tracked with a union-find over the cells and four
//! virtual edge nodes, so each move costs a few array operations.
//!
//! Choices where RULES.md is silent (also in `docs/rules/hex.md`):
//! - Whether `swap` is legal depends on the position only: the option is on, Blue is to move,
//!   and the board holds exactly one red stone and no blue stone.
//! - `legal_moves` (and so `arena moves`) lists the empty cells and then `swap` when it is legal.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::coord::{char_pos, parse_point};
use super::{EndReason, GameId, Outcome, ParseMoveError, ParsePositionError, Point, Rules, Side};

/// Board width and height.
pub const SIZE: u8 = 11;
/// Number of cells.
pub const CELLS: usize = SIZE as usize * SIZE as usize;
/// Virtual union-find nodes for the four edges.
const BOTTOM: usize = CELLS;
const TOP: usize = CELLS + 1;
const LEFT: usize = CELLS + 2;
const RIGHT: usize = CELLS + 3;
const NODES: usize = CELLS + 4;
/// The six neighbours of (c, r): (c±1, r), (c, r±1), (c+1, r+1), (c−1, r−1).
const NEIGHBOURS: [(i32, i32); 6] = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1)];

/// A Hex position: the board, the side to move, the connection tracker and the result.
#[derive(Clone)]
pub struct Hex {
    options: Options,
    /// Row-major, row 1 first (`Point::index`).
    board: [Option<Side>; CELLS],
    /// Union-find parents over the cells and the edge nodes; stones join only their own colour
    /// and their own colour's edges.
    parent: [u8; NODES],
    turn: Side,
    /// Stones on the board per side (`Side::index`).
    stone_counts: [u8; 2],
    outcome: Option<Outcome>,
}

/// Two positions are equal when options, board, side to move and result are: the union-find
/// layout depends on the order stones were placed and is not part of the position.
impl PartialEq for Hex {
    fn eq(&self, other: &Hex) -> bool {
        self.options == other.options
            && self.board == other.board
            && self.turn == other.turn
            && self.outcome == other.outcome
    }
}

impl Eq for Hex {}

impl fmt::Debug for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hex")
            .field("options", &self.options)
            .field("position", &self.position_text())
            .field("outcome", &self.outcome)
            .finish()
    }
}

/// Hex rule options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Blue's first move may be `swap` (default false).
    pub swap: bool,
}

/// A Hex move: a stone on an empty cell, or the swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Move {
    Place(Point),
    Swap,
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::Place(p) => write!(f, "{p}"),
            Move::Swap => f.write_str("swap"),
        }
    }
}

/// Why `swap` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapRefusal {
    /// The rule option `swap` is off.
    OptionOff,
    /// It is not Blue's first move (Blue to move with exactly one red stone and no blue stone).
    NotBluesFirstMove,
}

impl fmt::Display for SwapRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SwapRefusal::OptionOff => "the swap rule is off",
            SwapRefusal::NotBluesFirstMove => "swap is only allowed as Blue's first move",
        })
    }
}

/// Why a Hex move is illegal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    #[error("the game is over")]
    GameOver,
    #[error("point (column {}, row {}) is off the board", .0.col, .0.row)]
    OffBoard(Point),
    #[error("{0} is already occupied")]
    Occupied(Point),
    #[error("swap not allowed: {0}")]
    SwapNotAllowed(SwapRefusal),
}

/// The cell Red's stone on `p` becomes after a swap: column c, row r (1-based) goes to column
/// 12 − r, row 12 − c (A1 → K11, C2 → J9).
pub fn swapped_point(p: Point) -> Point {
    let last = SIZE - 1;
    Point::new(last.saturating_sub(p.row), last.saturating_sub(p.col))
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

fn fresh_parents() -> [u8; NODES] {
    let mut parent = [0u8; NODES];
    for (i, p) in parent.iter_mut().enumerate() {
        *p = i as u8;
    }
    parent
}

impl Hex {
    /// The stone on `p`, if any (`None` also for a cell off the board).
    pub fn stone_at(&self, p: Point) -> Option<Side> {
        cell_index(p).and_then(|i| self.board[i])
    }

    fn find(&mut self, mut node: usize) -> usize {
        while self.parent[node] as usize != node {
            let grand = self.parent[self.parent[node] as usize];
            self.parent[node] = grand;
            node = grand as usize;
        }
        node
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra] = rb as u8;
        }
    }

    /// Whether `side` joins its two edges.
    fn connected(&mut self, side: Side) -> bool {
        let (a, b) = match side {
            Side::First => (BOTTOM, TOP),
            Side::Second => (LEFT, RIGHT),
        };
        self.find(a) == self.find(b)
    }

    /// Puts a `side` stone on cell `i` and joins it to its own colour's neighbours and edges.
    fn place(&mut self, i: usize, side: Side) {
        self.board[i] = Some(side);
        self.stone_counts[side.index()] = self.stone_counts[side.index()].saturating_add(1);
        let p = Point::from_index(i, SIZE);
        let (col, row) = (p.col as i32, p.row as i32);
        for (dc, dr) in NEIGHBOURS {
            if let Some(j) = index_of(col + dc, row + dr) {
                if self.board[j] == Some(side) {
                    self.union(i, j);
                }
            }
        }
        let last = SIZE - 1;
        match side {
            Side::First if p.row == 0 => self.union(i, BOTTOM),
            Side::First if p.row == last => self.union(i, TOP),
            Side::Second if p.col == 0 => self.union(i, LEFT),
            Side::Second if p.col == last => self.union(i, RIGHT),
            _ => {}
        }
    }

    fn swap_refusal(&self) -> Option<SwapRefusal> {
        if !self.options.swap {
            Some(SwapRefusal::OptionOff)
        } else if self.turn != Side::Second || self.stone_counts != [1, 0] {
            Some(SwapRefusal::NotBluesFirstMove)
        } else {
            None
        }
    }
}

impl Rules for Hex {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Hex;

    /// The empty board, Red (`x`) to move.
    fn start(options: &Options) -> Self {
        Hex {
            options: options.clone(),
            board: [None; CELLS],
            parent: fresh_parents(),
            turn: Side::First,
            stone_counts: [0, 0],
            outcome: None,
        }
    }

    fn options(&self) -> &Options {
        &self.options
    }

    /// Reads `ROWS SIDE`: 11 rows of 11 `x`/`o`/`.` from row 11 down to row 1, separated by
    /// `/`, then the side to move. A position where both sides are connected is refused.
    fn from_position_text(text: &str, options: &Options) -> Result<Self, ParsePositionError> {
        let mut toks = text
            .split_ascii_whitespace()
            .map(|t| (t.as_ptr() as usize - text.as_ptr() as usize, t));
        let Some((rows_at, rows)) = toks.next() else {
            return Err(ParsePositionError::new(
                1,
                "empty position text (expected ROWS SIDE)",
            ));
        };
        let mut position = Hex::start(options);
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
                    format!("row {row_number} has {len} cells, expected {SIZE}"),
                ));
            }
            for (col, (byte, ch)) in row_text.char_indices().enumerate() {
                let side = match ch {
                    'x' => Side::First,
                    'o' => Side::Second,
                    '.' => continue,
                    other => {
                        return Err(ParsePositionError::new(
                            char_pos(text, offset + byte),
                            format!(
                                "unexpected {other:?} in row {row_number} (expected x, o or .)"
                            ),
                        ))
                    }
                };
                position.place((row_number - 1) * SIZE as usize + col, side);
            }
            offset += row_text.len() + 1;
        }
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
        if let Some((at, extra)) = toks.next() {
            return Err(ParsePositionError::new(
                char_pos(text, at),
                format!("unexpected {extra:?} after the side to move (hex positions have no keys)"),
            ));
        }
        position.outcome = match (
            position.connected(Side::First),
            position.connected(Side::Second),
        ) {
            (true, true) => {
                return Err(ParsePositionError::new(
                    1,
                    "both sides are connected; a game ends at the first connection",
                ))
            }
            (true, false) => Some(Outcome::win(Side::First, EndReason::Connection)),
            (false, true) => Some(Outcome::win(Side::Second, EndReason::Connection)),
            (false, false) => None,
        };
        Ok(position)
    }

    fn position_text(&self) -> String {
        let mut text = String::with_capacity(CELLS + SIZE as usize + 2);
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
        text
    }

    /// Reads `F6` or `swap` (case-insensitive).
    fn parse_move(text: &str) -> Result<Move, ParseMoveError> {
        if text.eq_ignore_ascii_case("swap") {
            return Ok(Move::Swap);
        }
        parse_point(text, SIZE).map(Move::Place).map_err(|e| {
            let letters = text.bytes().take_while(u8::is_ascii_alphabetic).count();
            if letters > 1 {
                ParseMoveError::new(
                    text,
                    1,
                    "expected a cell (column A-K, then a row 1-11) or swap",
                )
            } else {
                e
            }
        })
    }

    fn turn(&self) -> Side {
        self.turn
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// The empty cells in board order (row 1 first), then `swap` when it is legal.
    fn legal_moves(&self, out: &mut Vec<Move>) {
        if self.outcome.is_some() {
            return;
        }
        out.extend(
            self.board
                .iter()
                .enumerate()
                .filter(|(_, cell)| cell.is_none())
                .map(|(i, _)| Move::Place(Point::from_index(i, SIZE))),
        );
        if self.swap_refusal().is_none() {
            out.push(Move::Swap);
        }
    }

    fn check_move(&self, mv: &Move) -> Result<(), IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        match *mv {
            Move::Place(p) => match cell_index(p) {
                None => Err(IllegalMove::OffBoard(p)),
                Some(i) if self.board[i].is_some() => Err(IllegalMove::Occupied(p)),
                Some(_) => Ok(()),
            },
            Move::Swap => match self.swap_refusal() {
                Some(why) => Err(IllegalMove::SwapNotAllowed(why)),
                None => Ok(()),
            },
        }
    }

    fn play_unchecked(&mut self, mv: &Move) {
        debug_assert!(self.check_move(mv).is_ok(), "illegal move {mv}");
        let mover = self.turn;
        match *mv {
            Move::Place(p) => {
                let Some(i) = cell_index(p) else { return };
                if self.board[i].is_some() {
                    return;
                }
                self.place(i, mover);
            }
            Move::Swap => {
                let Some(red) = self.board.iter().position(|c| *c == Some(Side::First)) else {
                    return;
                };
                let Some(target) = cell_index(swapped_point(Point::from_index(red, SIZE))) else {
                    return;
                };
                // Only one stone is on the board: start the tracker afresh.
                self.board = [None; CELLS];
                self.parent = fresh_parents();
                self.stone_counts = [0, 0];
                self.place(target, Side::Second);
            }
        }
        if self.connected(mover) {
            self.outcome = Some(Outcome::win(mover, EndReason::Connection));
        }
        self.turn = mover.opponent();
    }
}

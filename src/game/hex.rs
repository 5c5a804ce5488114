//! Hex (海克斯棋) rules on the 11×11 rhombus: Red (first, `x`) joins row 1 to row 11, Blue
//! (second, `o`) joins column A to column K; optional swap rule; move text `F6` / `swap` and
//! position text `ROWS SIDE`. Connections are tracked with a union-find over the cells and four
//! virtual edge nodes, so each move costs a few array operations.
//!
//! Choices where docs/rules.md is silent (also in `docs/rules.md, Hex`):
//! - Whether `swap` is legal depends on the position only: the option is on, Blue is to move,
//!   and the board holds exactly one red stone and no blue stone.
//! - `legal_moves` (and so `arena moves`) lists the empty cells and then `swap` when it is legal.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::coord::{char_pos, parse_point};
use super::position_text::{read_rows, read_side, tokens};
use super::{BoardDrawing, StoneColour};
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

    /// Fewest empty cells `side` must still fill to join its edges (a 0-1 breadth-first
    /// search: own stones cost 0, empty cells 1, enemy stones are walls); `CELLS + 1` when it
    /// cannot.
    pub fn cells_to_connect(&self, side: Side) -> i64 {
        let unreachable = CELLS as i64 + 1;
        let mut dist = vec![unreachable; CELLS];
        let mut deque = std::collections::VecDeque::new();
        let cost = |i: usize| -> Option<i64> {
            match self.board[i] {
                Some(s) if s == side => Some(0),
                Some(_) => None,
                None => Some(1),
            }
        };
        let n = SIZE as usize;
        // Red starts on row 1 and ends on row 11; Blue from column A to column K.
        let edge = |k: usize, far: bool| -> usize {
            let line = if far { n - 1 } else { 0 };
            match side {
                Side::First => line * n + k,
                Side::Second => k * n + line,
            }
        };
        // Reaching cell `j` at distance `d`, the last step costing `w`: 0-cost steps go first.
        let relax = |dist: &mut Vec<i64>,
                     deque: &mut std::collections::VecDeque<usize>,
                     j: usize,
                     d: i64,
                     w: i64| {
            if d < dist[j] {
                dist[j] = d;
                if w == 0 {
                    deque.push_front(j);
                } else {
                    deque.push_back(j);
                }
            }
        };
        for k in 0..n {
            let i = edge(k, false);
            if let Some(w) = cost(i) {
                relax(&mut dist, &mut deque, i, w, w);
            }
        }
        while let Some(i) = deque.pop_front() {
            let p = Point::from_index(i, SIZE);
            for (dc, dr) in NEIGHBOURS {
                let Some(j) = index_of(p.col as i32 + dc, p.row as i32 + dr) else {
                    continue;
                };
                if let Some(w) = cost(j) {
                    let d = dist[i] + w;
                    relax(&mut dist, &mut deque, j, d, w);
                }
            }
        }
        (0..n)
            .map(|k| dist[edge(k, true)])
            .min()
            .unwrap_or(unreachable)
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
    const ID: &'static str = "hex";
    const RECORD_CODE: &'static str = "HEX";
    const BUILTIN_OPENING_PLIES: usize = 2;
    const COLOURS: [char; 2] = ['R', 'B'];
    const BOARD_SIZE: u8 = SIZE;
    const BOARD_DRAWING: BoardDrawing = BoardDrawing::Hexagons;
    const STONE_COLOURS: [StoneColour; 2] = [StoneColour::Red, StoneColour::Blue];

    /// A `swap` move needs the swap rule.
    fn rules_required_by(moves: &[String]) -> serde_json::Value {
        if moves.iter().any(|m| m.eq_ignore_ascii_case("swap")) {
            serde_json::json!({ "swap": true })
        } else {
            serde_json::Value::Null
        }
    }

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
    /// `/`, then the side to move. A position where both sides are connected is refused (on a
    /// Hex board a red and a blue chain cannot cross, so this guards against a broken tracker).
    fn from_position_text(text: &str, options: &Options) -> Result<Self, ParsePositionError> {
        let mut toks = tokens(text);
        let Some((rows_at, rows)) = toks.next() else {
            return Err(ParsePositionError::new(
                1,
                "empty position text (expected ROWS SIDE)",
            ));
        };
        let mut position = Hex::start(options);
        let board = read_rows(text, rows_at, rows, SIZE, "cells")?;
        for (i, cell) in board.into_iter().enumerate() {
            if let Some(side) = cell {
                position.place(i, side);
            }
        }
        position.turn = read_side(text, toks.next())?;
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

    /// 100 per cell the opponent still needs to connect beyond what `side` needs.
    fn heuristic(&self, side: Side) -> i64 {
        100 * (self.cells_to_connect(side.opponent()) - self.cells_to_connect(side))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::parse_options;
    use crate::game::test_support::{
        check_parsers_on, edited_text, junk_text, Prng, JUNK_ALPHABET,
    };
    use std::collections::HashSet;

    fn pt(text: &str) -> Point {
        parse_point(text, SIZE).unwrap()
    }

    fn mv(text: &str) -> Move {
        Hex::parse_move(text).unwrap()
    }

    fn with_swap() -> Options {
        Options { swap: true }
    }

    fn rows_text(red: &[Point], blue: &[Point]) -> String {
        let mut grid = [['.'; SIZE as usize]; SIZE as usize];
        for (list, ch) in [(red, 'x'), (blue, 'o')] {
            for p in list {
                grid[p.row as usize][p.col as usize] = ch;
            }
        }
        let rows: Vec<String> = grid.iter().rev().map(|r| r.iter().collect()).collect();
        rows.join("/")
    }

    fn position(red: &[Point], blue: &[Point], turn: char, options: &Options) -> Hex {
        let text = format!("{} {turn}", rows_text(red, blue));
        Hex::from_position_text(&text, options).unwrap()
    }

    fn points(texts: &[&str]) -> Vec<Point> {
        texts.iter().map(|t| pt(t)).collect()
    }

    fn transpose(ps: &[Point]) -> Vec<Point> {
        ps.iter().map(|p| Point::new(p.row, p.col)).collect()
    }

    fn all_legal(pos: &Hex) -> Vec<Move> {
        let mut out = Vec::new();
        pos.legal_moves(&mut out);
        out
    }

    /// Independent check by flood fill: does `side` join its edges on `pos`'s board?
    fn flood_connected(pos: &Hex, side: Side) -> bool {
        let n = SIZE as i32;
        let starts_on_edge = |c: i32, r: i32| match side {
            Side::First => r == 0,
            Side::Second => c == 0,
        };
        let reaches_far_edge = |c: i32, r: i32| match side {
            Side::First => r == n - 1,
            Side::Second => c == n - 1,
        };
        let owned = |c: i32, r: i32| {
            (0..n).contains(&c)
                && (0..n).contains(&r)
                && pos.stone_at(Point::new(c as u8, r as u8)) == Some(side)
        };
        let mut seen = HashSet::new();
        let mut stack: Vec<(i32, i32)> = Vec::new();
        for c in 0..n {
            for r in 0..n {
                if starts_on_edge(c, r) && owned(c, r) {
                    stack.push((c, r));
                    seen.insert((c, r));
                }
            }
        }
        while let Some((c, r)) = stack.pop() {
            if reaches_far_edge(c, r) {
                return true;
            }
            for (dc, dr) in [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1)] {
                let next = (c + dc, r + dr);
                if owned(next.0, next.1) && seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        false
    }

    #[test]
    fn start_position_and_perft() {
        let start = Hex::start(&Options::default());
        assert_eq!(start.turn(), Side::First);
        assert_eq!(start.outcome(), None);
        let moves = all_legal(&start);
        assert_eq!(moves.len(), CELLS);
        assert_eq!(moves.iter().collect::<HashSet<_>>().len(), CELLS);
        assert_eq!(moves[0], mv("A1"));
        assert_eq!(moves[CELLS - 1], mv("K11"));
        let n = CELLS as u64;
        assert_eq!(start.perft(1), n);
        assert_eq!(start.perft(2), n * (n - 1));
        assert_eq!(start.perft(3), n * (n - 1) * (n - 2));
        assert_eq!(start.perft(3), 1_727_880);
        assert_eq!(
            start.position_text(),
            format!("{} x", vec!["...........".to_string(); 11].join("/"))
        );
        // With the swap rule, each of Blue's first replies has one more move.
        let swap_start = Hex::start(&with_swap());
        assert_eq!(swap_start.perft(1), n);
        assert_eq!(swap_start.perft(2), n * n);
    }

    /// Plays `last` on a position holding `chain` minus `last` and checks that `side` wins then.
    fn assert_chain_wins(chain: &[Point], side: Side, last: Point) {
        let rest: Vec<Point> = chain.iter().copied().filter(|p| *p != last).collect();
        let (red, blue) = match side {
            Side::First => (rest, vec![]),
            Side::Second => (vec![], rest),
        };
        let pos = position(&red, &blue, side.position_char(), &Options::default());
        assert_eq!(pos.outcome(), None, "connected too early");
        assert!(!flood_connected(&pos, side));
        let mut after = pos.clone();
        after.play(&Move::Place(last)).unwrap();
        assert_eq!(
            after.outcome(),
            Some(Outcome::win(side, EndReason::Connection)),
            "{after:?}"
        );
        assert!(flood_connected(&after, side));
        assert!(all_legal(&after).is_empty());
        assert_eq!(
            after.check_move(&mv("K11")),
            Err(IllegalMove::GameOver),
            "{after:?}"
        );
        let back = Hex::from_position_text(&after.position_text(), &Options::default()).unwrap();
        assert_eq!(back, after);
    }

    #[test]
    fn straight_connections_win_for_both_sides() {
        let column: Vec<Point> = (0..SIZE).map(|r| Point::new(4, r)).collect();
        for &last in &[column[0], column[5], column[10]] {
            assert_chain_wins(&column, Side::First, last);
            let row = transpose(&column);
            assert_chain_wins(&row, Side::Second, Point::new(last.row, last.col));
        }
    }

    #[test]
    fn winding_chains_win_through_the_short_diagonal() {
        let snake = points(&[
            "B1", "B2", "B3", "B4", "B5", "C5", "D5", "E5", "F5", "G5", "H5", "H6", "H7", "H8",
            "G8", "F8", "E8", "D8", "C8", "C9", "C10", "C11",
        ]);
        assert_chain_wins(&snake, Side::First, pt("E8"));
        assert_chain_wins(&transpose(&snake), Side::Second, pt("H5"));
        // The long diagonal A1, B2, ..., K11 needs the (c+1, r+1) neighbour at every step.
        let stairs: Vec<Point> = (0..SIZE).map(|k| Point::new(k, k)).collect();
        assert_chain_wins(&stairs, Side::First, Point::new(5, 5));
        assert_chain_wins(&stairs, Side::Second, Point::new(10, 10));
    }

    #[test]
    fn the_long_diagonal_does_not_connect() {
        // K1, J2, ..., A11: each step is (c-1, r+1), which is not a neighbour.
        let diagonal: Vec<Point> = (0..SIZE).map(|k| Point::new(SIZE - 1 - k, k)).collect();
        let pos = position(&diagonal, &[], 'o', &Options::default());
        assert_eq!(pos.outcome(), None);
        let pos = position(&[], &diagonal, 'x', &Options::default());
        assert_eq!(pos.outcome(), None);
    }

    #[test]
    fn swap_moves_the_stone_to_its_mirror_image() {
        assert_eq!(swapped_point(pt("A1")), pt("K11"));
        assert_eq!(swapped_point(pt("C2")), pt("J9"));
        for i in 0..CELLS {
            let p = Point::from_index(i, SIZE);
            assert_eq!(swapped_point(swapped_point(p)), p);
        }
        for (red, blue) in [("A1", "K11"), ("C2", "J9"), ("F6", "F6"), ("K1", "K1")] {
            let mut pos = Hex::start(&with_swap());
            pos.play(&mv(red)).unwrap();
            let moves = all_legal(&pos);
            assert_eq!(moves.len(), CELLS);
            assert_eq!(moves.last(), Some(&Move::Swap));
            pos.play(&mv("SWAP")).unwrap();
            assert_eq!(pos.turn(), Side::First);
            assert_eq!(pos.stone_at(pt(blue)), Some(Side::Second));
            if red != blue {
                assert_eq!(pos.stone_at(pt(red)), None);
            }
            assert_eq!(pos.stone_counts, [0, 1]);
            assert!(!all_legal(&pos).contains(&Move::Swap));
            assert_eq!(
                pos.check_move(&Move::Swap),
                Err(IllegalMove::SwapNotAllowed(SwapRefusal::NotBluesFirstMove))
            );
        }
    }

    #[test]
    fn swapped_stone_counts_for_blue_connections() {
        // After A1 swap, Blue owns K11 and connects along row 11.
        let mut pos = Hex::start(&with_swap());
        for m in [
            "A1", "swap", "A2", "A11", "A3", "B11", "A4", "C11", "A5", "D11", "A6",
        ] {
            pos.play(&mv(m)).unwrap();
        }
        for m in [
            "E11", "A7", "F11", "A8", "G11", "A9", "H11", "A10", "I11", "B10",
        ] {
            assert_eq!(pos.outcome(), None);
            pos.play(&mv(m)).unwrap();
        }
        assert_eq!(pos.outcome(), None);
        pos.play(&mv("J11")).unwrap();
        assert_eq!(
            pos.outcome(),
            Some(Outcome::win(Side::Second, EndReason::Connection))
        );
    }

    #[test]
    fn every_illegal_move_class() {
        let mut pos = Hex::start(&Options::default());
        assert_eq!(
            pos.check_move(&Move::Swap),
            Err(IllegalMove::SwapNotAllowed(SwapRefusal::OptionOff))
        );
        pos.play(&mv("F6")).unwrap();
        assert_eq!(
            pos.check_move(&Move::Swap),
            Err(IllegalMove::SwapNotAllowed(SwapRefusal::OptionOff))
        );
        assert!(!all_legal(&pos).contains(&Move::Swap));
        assert_eq!(
            pos.check_move(&mv("f6")),
            Err(IllegalMove::Occupied(pt("F6")))
        );
        assert_eq!(
            pos.check_move(&Move::Place(Point::new(11, 0))),
            Err(IllegalMove::OffBoard(Point::new(11, 0)))
        );
        let mut swap_pos = Hex::start(&with_swap());
        assert_eq!(
            swap_pos.check_move(&Move::Swap),
            Err(IllegalMove::SwapNotAllowed(SwapRefusal::NotBluesFirstMove))
        );
        swap_pos.play(&mv("C2")).unwrap();
        swap_pos.play(&mv("D4")).unwrap();
        assert_eq!(
            swap_pos.check_move(&Move::Swap),
            Err(IllegalMove::SwapNotAllowed(SwapRefusal::NotBluesFirstMove))
        );
        swap_pos.play(&mv("E5")).unwrap();
        assert_eq!(
            swap_pos.check_move(&Move::Swap),
            Err(IllegalMove::SwapNotAllowed(SwapRefusal::NotBluesFirstMove))
        );
        let mut boxed: Box<dyn crate::game::AnyGame> = Box::new(swap_pos);
        let err = boxed.play_text("swap").unwrap_err();
        assert!(err.to_string().contains("first move"), "{err}");
        for e in [
            IllegalMove::GameOver,
            IllegalMove::Occupied(pt("A1")),
            IllegalMove::SwapNotAllowed(SwapRefusal::OptionOff),
        ] {
            assert!(e.to_string().len() > 10, "{e}");
        }
    }

    #[test]
    fn options_default_and_refuse_unknown_keys() {
        let defaults = parse_options::<Hex>(&serde_json::json!({})).unwrap();
        assert_eq!(defaults, Options { swap: false });
        let on = parse_options::<Hex>(&serde_json::json!({"swap": true})).unwrap();
        assert!(on.swap);
        let err = parse_options::<Hex>(&serde_json::json!({"swop": true})).unwrap_err();
        assert!(err.message.contains("swop"), "{err}");
        let err = parse_options::<Hex>(&serde_json::json!({"swap": "yes"})).unwrap_err();
        assert!(err.message.contains("swap"), "{err}");
        let game = crate::game::new_game(GameId::Hex, &serde_json::Value::Null).unwrap();
        assert_eq!(game.rules_json(), serde_json::json!({"swap": false}));
    }

    #[test]
    fn move_text_round_trips() {
        assert_eq!(mv("f6"), Move::Place(pt("F6")));
        assert_eq!(mv("SwAp"), Move::Swap);
        assert_eq!(Move::Swap.to_string(), "swap");
        let mut pos = Hex::start(&with_swap());
        for setup in ["A1", "swap", "K1", "B7"] {
            for m in all_legal(&pos) {
                assert_eq!(mv(&m.to_string()), m);
                assert_eq!(mv(&m.to_string().to_uppercase()), m);
                assert_eq!(mv(&m.to_string().to_lowercase()), m);
            }
            pos.play(&mv(setup)).unwrap();
        }
    }

    #[test]
    fn bad_move_text_says_what_and_where() {
        let e = Hex::parse_move("L1").unwrap_err();
        assert!(e.what.contains("off the board"), "{e}");
        let e = Hex::parse_move("A12").unwrap_err();
        assert_eq!(e.at, 2);
        let e = Hex::parse_move("swapp").unwrap_err();
        assert!(e.what.contains("swap"), "{e}");
        let e = Hex::parse_move("F6,G7").unwrap_err();
        assert_eq!(e.at, 3);
        for junk in [
            "",
            " ",
            "F",
            "6",
            " F6",
            "F6 ",
            "sw",
            "ĸ1",
            "F-6",
            "\u{0}",
            "F99999999999999999",
            "pass",
            "resign",
        ] {
            let e = Hex::parse_move(junk).unwrap_err();
            assert!(!e.what.is_empty() && e.at >= 1, "{junk:?}: {e}");
        }
    }

    #[test]
    fn position_text_round_trips_and_rejects_bad_text() {
        let opts = with_swap();
        let mut pos = Hex::start(&opts);
        for m in ["C2", "swap", "F6", "E7", "A1"] {
            let back = Hex::from_position_text(&pos.position_text(), &opts).unwrap();
            assert_eq!(back, pos);
            // Swap legality is read back from the position alone.
            assert_eq!(all_legal(&back), all_legal(&pos));
            pos.play(&mv(m)).unwrap();
        }
        let empty = vec!["...........".to_string(); 11].join("/");
        let ok = |t: &str| Hex::from_position_text(t, &opts);
        assert!(ok(&format!(" {empty}  o ")).is_ok());
        let e = ok(&format!("{empty}/........... x")).unwrap_err();
        assert!(e.what.contains("more than 11 rows"), "{e}");
        let e = ok(&format!("{empty} x swap=1")).unwrap_err();
        assert!(e.what.contains("no keys"), "{e}");
        assert_eq!(e.at, empty.len() + 4);
        let e = ok(&format!("{empty} r")).unwrap_err();
        assert_eq!(e.at, empty.len() + 2);
        let e = ok(&empty).unwrap_err();
        assert!(e.what.contains("side to move"), "{e}");
        let e = ok(&format!(".........x/{} x", &empty[12..])).unwrap_err();
        assert!(e.what.contains("row 11 has 10"), "{e}");
        let e = ok(&format!("....+....../{} x", &empty[12..])).unwrap_err();
        assert_eq!(e.at, 5);
        assert!(e.what.contains("'+'"), "{e}");
        // Red on column A and Blue on row 1 from B1: Blue never reaches column A, Red wins.
        let red: Vec<Point> = (0..SIZE).map(|r| Point::new(0, r)).collect();
        let blue: Vec<Point> = (1..SIZE).map(|c| Point::new(c, 0)).collect();
        let pos = position(&red, &blue, 'o', &opts);
        assert_eq!(
            pos.outcome(),
            Some(Outcome::win(Side::First, EndReason::Connection))
        );
        let pos = position(&transpose(&blue), &transpose(&red), 'x', &opts);
        assert_eq!(
            pos.outcome(),
            Some(Outcome::win(Side::Second, EndReason::Connection))
        );
        for junk in ["", "x", "/ x", "x x x", "\u{1F600} o", "..........x o"] {
            assert!(ok(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn random_playouts_always_end_in_a_connection() {
        let mut rng = Prng::new(0x0123_4567_89ab_cdef);
        let mut wins = [0usize; 2];
        let mut swaps = 0;
        for game in 0..300 {
            let opts = Options {
                swap: game % 2 == 0,
            };
            let mut pos = Hex::start(&opts);
            let mut plies = 0;
            while pos.outcome().is_none() {
                let moves = all_legal(&pos);
                assert!(!moves.is_empty(), "no move but no outcome: {pos:?}");
                for m in &moves {
                    pos.check_move(m).unwrap();
                }
                let mover = pos.turn();
                let chosen = moves[rng.below(moves.len())];
                if chosen == Move::Swap {
                    swaps += 1;
                }
                pos.play(&chosen).unwrap();
                plies += 1;
                let connected = flood_connected(&pos, mover);
                assert_eq!(pos.outcome().is_some(), connected, "{pos:?}");
                assert!(!flood_connected(&pos, mover.opponent()));
                assert_eq!(pos.turn(), mover.opponent());
            }
            let outcome = pos.outcome().unwrap();
            assert_eq!(outcome.reason, EndReason::Connection);
            let winner = outcome.winner.unwrap();
            wins[winner.index()] += 1;
            assert!(plies <= CELLS, "{plies}");
            let back = Hex::from_position_text(&pos.position_text(), &opts).unwrap();
            assert_eq!(back, pos);
        }
        assert_eq!(wins[0] + wins[1], 300);
        assert!(wins[0] > 0 && wins[1] > 0, "{wins:?}");
        assert!(swaps > 0);
    }

    #[test]
    fn junk_and_mutated_texts_are_errors_not_panics() {
        let mut rng = Prng::new(0xdead_beef_f00d_0001);
        let mut pos = Hex::start(&Options { swap: true });
        let mut moves = Vec::new();
        pos.legal_moves(&mut moves);
        pos.play(&moves[60]).unwrap();
        let valid = pos.position_text();
        for round in 0..3000 {
            let text = if round % 2 == 0 {
                junk_text(&mut rng, JUNK_ALPHABET, 12)
            } else {
                edited_text(&mut rng, &valid, JUNK_ALPHABET)
            };
            check_parsers_on::<Hex>(&text, &pos.options);
        }
    }
}

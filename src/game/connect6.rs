//! Connect6 (六子棋) rules on the 19×19 board: one opening stone, then two stones per turn, six
//! or more in a row wins; move text `J10` / `J10,K11` and position text `ROWS SIDE [stones=1|2]`.
//!
//! Choices where docs/rules.md is silent (also in `docs/rules.md, Connect6`):
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
use super::position_text::{read_keys, read_rows, read_side, tokens};
use super::{BoardDrawing, StoneColour};
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
        // Piece by piece, as `Point`'s own formatting (see there).
        match self {
            Move::One(a) => fmt::Display::fmt(a, f),
            Move::Two(a, b) => {
                fmt::Display::fmt(a, f)?;
                f.write_str(",")?;
                fmt::Display::fmt(b, f)
            }
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

    /// Sum over every window of six points in a line holding only `side` stones of a value
    /// rising steeply with their number.
    fn line_score(&self, side: Side) -> i64 {
        const VALUE: [i64; WIN_LENGTH + 1] = [0, 1, 8, 60, 400, 2_000, 100_000];
        let mut total = 0;
        for &(dc, dr) in &DIRECTIONS {
            for start in 0..CELLS {
                let (col, row) = (
                    (start % SIZE as usize) as i32,
                    (start / SIZE as usize) as i32,
                );
                let last = (WIN_LENGTH - 1) as i32;
                if index_of(col + last * dc, row + last * dr).is_none() {
                    continue;
                }
                let mut own = 0;
                let mut blocked = false;
                for k in 0..WIN_LENGTH as i32 {
                    match index_of(col + k * dc, row + k * dr).and_then(|i| self.board[i]) {
                        Some(s) if s == side => own += 1,
                        Some(_) => {
                            blocked = true;
                            break;
                        }
                        None => {}
                    }
                }
                if !blocked {
                    total += VALUE[own];
                }
            }
        }
        total
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

impl Rules for Connect6 {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Connect6;
    const ID: &'static str = "connect6";
    const RECORD_CODE: &'static str = "C6";
    const BUILTIN_OPENING_PLIES: usize = 2;

    /// Every stone within three points of the centre (a 7×7 square, as contest openings are):
    /// a random stone on the edge gives games no engine would play, and some engines (Cloudict)
    /// fail on them.
    fn builtin_opening_move(mv: &Move) -> bool {
        let centre = SIZE / 2;
        mv.stones()
            .all(|p| p.col.abs_diff(centre) <= 3 && p.row.abs_diff(centre) <= 3)
    }
    const COLOURS: [char; 2] = ['B', 'W'];
    const BOARD_SIZE: u8 = SIZE;
    const BOARD_DRAWING: BoardDrawing = BoardDrawing::Lines;
    const STONE_COLOURS: [StoneColour; 2] = [StoneColour::Black, StoneColour::White];
    const STAR_POINTS: &'static [&'static str] =
        &["D4", "J4", "P4", "D10", "J10", "P10", "D16", "J16", "P16"];
    const STONES_PER_TURN: usize = 2;

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
        for (cell, read) in position
            .board
            .iter_mut()
            .zip(read_rows(text, rows_at, rows, SIZE, "points")?)
        {
            *cell = read;
        }
        position.empty_count = position.board.iter().filter(|c| c.is_none()).count() as u16;
        position.turn = read_side(text, toks.next())?;
        for key in read_keys(text, toks, "connect6", &["stones"])? {
            position.stones_due = match key.value {
                "1" => 1,
                "2" => 2,
                value => {
                    return Err(ParsePositionError::new(
                        char_pos(text, key.value_at),
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

    /// Sum over every window of six points in a line of a value rising steeply with the
    /// number of `side` stones in it (windows holding an enemy stone count nothing), minus the
    /// same for the opponent.
    fn heuristic(&self, side: Side) -> i64 {
        self.line_score(side) - self.line_score(side.opponent())
    }

    /// Every stone lies within two points (in both directions) of a stone already down; on an
    /// empty board, on the centre point. The full list has ~65,000 pairs.
    fn is_local(&self, mv: &Move) -> bool {
        let empty = self.empty_count() == CELLS;
        mv.stones().all(|p| {
            if empty {
                return p.col == SIZE / 2 && p.row == SIZE / 2;
            }
            let (col, row) = (p.col as i32, p.row as i32);
            (-2..=2).any(|dr| {
                (-2..=2)
                    .any(|dc| index_of(col + dc, row + dr).is_some_and(|i| self.board[i].is_some()))
            })
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::parse_options;
    use crate::game::test_support::{
        check_parsers_on, edited_text, junk_text, Prng, JUNK_ALPHABET,
    };
    use std::collections::HashSet;

    #[test]
    fn built_in_openings_keep_every_stone_near_the_centre() {
        assert!(GameId::Connect6.builtin_opening_move("J10"));
        assert!(GameId::Connect6.builtin_opening_move("G7,M13"));
        assert!(
            !GameId::Connect6.builtin_opening_move("J10,F6"),
            "F6 is four off"
        );
        assert!(!GameId::Connect6.builtin_opening_move("A1"));
        assert!(!GameId::Connect6.builtin_opening_move("junk"));
        assert!(
            GameId::Hex.builtin_opening_move("A1"),
            "other games keep every move"
        );
        assert_eq!(GameId::Connect6.builtin_opening_plies(), 2);
        assert_eq!(GameId::Jiu.builtin_opening_plies(), 4);
    }

    fn pt(text: &str) -> Point {
        crate::game::coord::parse_point(text, SIZE).unwrap()
    }

    fn mv(text: &str) -> Move {
        Connect6::parse_move(text).unwrap()
    }

    /// Position with the given stones, `turn` to move, `stones` due.
    fn position(black: &[&str], white: &[&str], turn: char, stones: u8) -> Connect6 {
        crate::game::test_support::connect6_position(black, white, turn, stones)
    }

    /// Colour of (col, row) in a pattern with no three in a row in any direction.
    fn pattern_side(col: u8, row: u8) -> Side {
        if (col / 2 + row).is_multiple_of(2) {
            Side::First
        } else {
            Side::Second
        }
    }

    /// The full pattern board with `holes` left empty, `turn` to move, two stones due.
    fn pattern_position(holes: &[&str], turn: Side) -> Connect6 {
        let holes: Vec<Point> = holes.iter().map(|h| pt(h)).collect();
        let mut rows = Vec::new();
        for row in (0..SIZE).rev() {
            let mut line = String::new();
            for col in 0..SIZE {
                if holes.contains(&Point::new(col, row)) {
                    line.push('.');
                } else {
                    line.push(pattern_side(col, row).position_char());
                }
            }
            rows.push(line);
        }
        let text = format!("{} {}", rows.join("/"), turn.position_char());
        Connect6::from_position_text(&text, &Options::default()).unwrap()
    }

    fn all_legal(pos: &Connect6) -> Vec<Move> {
        let mut out = Vec::new();
        pos.legal_moves(&mut out);
        out
    }

    #[test]
    fn start_position_has_one_stone_moves_on_every_point() {
        let start = Connect6::start(&Options::default());
        assert_eq!(start.turn(), Side::First);
        assert_eq!(start.stones_due(), 1);
        assert_eq!(start.outcome(), None);
        let moves = all_legal(&start);
        assert_eq!(moves.len(), CELLS);
        assert!(moves.iter().all(|m| matches!(m, Move::One(_))));
        assert_eq!(moves.iter().collect::<HashSet<_>>().len(), CELLS);
        assert_eq!(moves[0], mv("A1"));
        assert_eq!(moves[CELLS - 1], mv("S19"));
        assert_eq!(start.move_listing().len(), CELLS);
        let text = start.position_text();
        assert!(text.ends_with(" x stones=1"), "{text}");
        assert_eq!(text.matches('.').count(), CELLS);
    }

    #[test]
    fn second_turn_lists_every_unordered_pair_once() {
        let mut pos = Connect6::start(&Options::default());
        pos.play(&mv("J10")).unwrap();
        assert_eq!(pos.turn(), Side::Second);
        assert_eq!(pos.stones_due(), 2);
        let moves = all_legal(&pos);
        let empty = CELLS - 1;
        assert_eq!(moves.len(), empty * (empty - 1) / 2);
        let mut seen = HashSet::new();
        for m in &moves {
            let Move::Two(a, b) = *m else {
                panic!("not a pair: {m}")
            };
            assert!(a.index(SIZE) < b.index(SIZE), "{m}");
            assert!(seen.insert((a, b)), "listed twice: {m}");
            assert_ne!(a, pt("J10"));
            assert_ne!(b, pt("J10"));
        }
        assert_eq!(pos.move_listing().len(), empty);
        assert!(!pos.move_listing().contains(&"J10".to_string()));
    }

    #[test]
    fn perft_counts_turns() {
        let start = Connect6::start(&Options::default());
        assert_eq!(start.perft(1), CELLS as u64);
        let pairs_after_opening = ((CELLS - 1) * (CELLS - 2) / 2) as u64;
        assert_eq!(pairs_after_opening, 64_620);
        assert_eq!(start.perft(2), CELLS as u64 * pairs_after_opening);
    }

    fn assert_six(black: &[&str], winning_stone: &str) {
        let pos = position(black, &["A19", "B19"], 'x', 2);
        assert_eq!(pos.outcome(), None);
        // The winning stone alone, and as the first stone of a pair.
        let mut single = pos.clone();
        single.play(&mv(winning_stone)).unwrap();
        assert_eq!(
            single.outcome(),
            Some(Outcome::win(Side::First, EndReason::SixInRow)),
            "{black:?} + {winning_stone}"
        );
        let pair = mv(&format!("{winning_stone},S1"));
        assert_eq!(pos.recorded_move(&pair), mv(winning_stone));
        let mut paired = pos.clone();
        paired.play(&pair).unwrap();
        assert_eq!(paired, single, "second stone must not be placed");
        assert_eq!(paired.stone_at(pt("S1")), None);
    }

    #[test]
    fn six_in_a_row_wins_in_all_four_directions() {
        assert_six(&["C5", "D5", "E5", "F5", "G5"], "H5");
        assert_six(&["K3", "K4", "K5", "K6", "K7"], "K8");
        assert_six(&["C3", "D4", "E5", "G7", "H8"], "F6");
        assert_six(&["C8", "D7", "E6", "F5", "G4"], "B9");
        // At the board edges.
        assert_six(&["A1", "A2", "A3", "A4", "A5"], "A6");
        assert_six(&["N19", "O18", "P17", "Q16", "R15"], "S14");
    }

    #[test]
    fn seven_or_more_in_a_row_also_wins() {
        assert_six(&["C5", "D5", "E5", "G5", "H5", "I5"], "F5");
        assert_six(&["B2", "C3", "D4", "E5", "G7", "H8", "J9", "K10"], "F6");
    }

    #[test]
    fn five_in_a_row_and_broken_lines_do_not_win() {
        let mut pos = position(&["C5", "D5", "E5", "F5"], &[], 'x', 2);
        pos.play(&mv("G5,J5")).unwrap();
        assert_eq!(pos.outcome(), None);
        // A white stone breaks the line.
        let mut pos = position(&["C5", "D5", "E5", "G5", "H5"], &["F5"], 'x', 2);
        pos.play(&mv("B5,J5")).unwrap();
        assert_eq!(pos.outcome(), None);
    }

    #[test]
    fn second_stone_of_a_pair_can_win_and_both_are_recorded() {
        let pos = position(&["C5", "D5", "E5", "F5", "G5"], &["A19"], 'x', 2);
        let pair = mv("S1,H5");
        assert_eq!(pos.recorded_move(&pair), pair);
        let mut after = pos.clone();
        after.play(&pair).unwrap();
        assert_eq!(
            after.outcome(),
            Some(Outcome::win(Side::First, EndReason::SixInRow))
        );
        assert_eq!(after.stone_at(pt("S1")), Some(Side::First));
        // Pair placed in order: white wins with the first and the second is not placed.
        let pos = position(&["A19"], &["C5", "D5", "E5", "F5", "G5"], 'o', 2);
        let mut boxed: Box<dyn crate::game::AnyGame> = Box::new(pos);
        assert_eq!(boxed.play_text("h5, s1").unwrap(), "H5");
        assert_eq!(
            boxed.outcome(),
            Some(Outcome::win(Side::Second, EndReason::SixInRow))
        );
        assert_eq!(boxed.legal_move_texts().len(), 0);
        assert!(boxed.move_listing().is_empty());
    }

    #[test]
    fn board_full_without_six_is_a_draw() {
        let pos = pattern_position(&["A1", "B1"], pattern_side(0, 0));
        assert_eq!(pattern_side(0, 0), pattern_side(1, 0));
        assert_eq!(pos.outcome(), None);
        assert_eq!(all_legal(&pos), vec![mv("A1,B1")]);
        let mut after = pos.clone();
        after.play(&mv("B1,A1")).unwrap();
        assert_eq!(after.outcome(), Some(Outcome::draw(EndReason::BoardFull)));
        assert_eq!(after.empty_count(), 0);
        // Read back from text, the full board is a draw too.
        let again = Connect6::from_position_text(&after.position_text(), &Options::default());
        assert_eq!(again.unwrap(), after);
    }

    #[test]
    fn last_empty_point_takes_a_single_stone() {
        let pos = pattern_position(&["J10"], pattern_side(9, 9));
        assert_eq!(pos.stones_due(), 2);
        assert_eq!(all_legal(&pos), vec![mv("J10")]);
        let mut after = pos.clone();
        after.play(&mv("J10")).unwrap();
        assert_eq!(after.outcome(), Some(Outcome::draw(EndReason::BoardFull)));
        assert_eq!(
            pos.check_move(&mv("J10,J10")),
            Err(IllegalMove::SameStoneTwice)
        );
    }

    #[test]
    fn every_illegal_move_class() {
        let pos = position(&["J10", "C5", "D5", "E5", "F5"], &["K10"], 'x', 2);
        assert_eq!(
            pos.check_move(&mv("J10,A1")),
            Err(IllegalMove::Occupied(pt("J10")))
        );
        assert_eq!(
            pos.check_move(&mv("A1,K10")),
            Err(IllegalMove::Occupied(pt("K10")))
        );
        assert_eq!(
            pos.check_move(&mv("A1,A1")),
            Err(IllegalMove::SameStoneTwice)
        );
        assert_eq!(
            pos.check_move(&mv("A1")),
            Err(IllegalMove::WrongStoneCount {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            pos.check_move(&Move::One(Point::new(19, 0))),
            Err(IllegalMove::OffBoard(Point::new(19, 0)))
        );
        assert_eq!(
            pos.check_move(&Move::Two(pt("A1"), Point::new(0, 40))),
            Err(IllegalMove::OffBoard(Point::new(0, 40)))
        );
        // Five in a row is not six: a single G5 is still refused.
        assert!(matches!(
            pos.check_move(&mv("G5")),
            Err(IllegalMove::WrongStoneCount { .. })
        ));
        let start = Connect6::start(&Options::default());
        assert_eq!(
            start.check_move(&mv("A1,B2")),
            Err(IllegalMove::WrongStoneCount {
                expected: 1,
                got: 2
            })
        );
        let won = position(&["C5", "D5", "E5", "F5", "G5", "H5"], &[], 'o', 2);
        assert_eq!(
            won.outcome(),
            Some(Outcome::win(Side::First, EndReason::SixInRow))
        );
        assert_eq!(won.check_move(&mv("A1,B1")), Err(IllegalMove::GameOver));
        assert!(all_legal(&won).is_empty());
        // Every error says something.
        for e in [
            IllegalMove::GameOver,
            IllegalMove::Occupied(pt("A1")),
            IllegalMove::SameStoneTwice,
            IllegalMove::WrongStoneCount {
                expected: 2,
                got: 1,
            },
        ] {
            assert!(e.to_string().len() > 10, "{e}");
        }
        let mut boxed: Box<dyn crate::game::AnyGame> = Box::new(pos);
        assert!(matches!(
            boxed.play_text("J10,A1"),
            Err(crate::game::PlayError::Illegal { .. })
        ));
    }

    #[test]
    fn options_are_empty_and_refuse_unknown_keys() {
        let none = parse_options::<Connect6>(&serde_json::Value::Null).unwrap();
        assert_eq!(none, Options::default());
        let empty = parse_options::<Connect6>(&serde_json::json!({})).unwrap();
        assert_eq!(empty, Options::default());
        let err = parse_options::<Connect6>(&serde_json::json!({"swap": true})).unwrap_err();
        assert!(err.message.contains("swap"), "{err}");
    }

    #[test]
    fn move_text_round_trips_and_tolerates_case_and_blanks() {
        assert_eq!(mv("j10"), Move::One(pt("J10")));
        assert_eq!(mv("j10,k11"), Move::Two(pt("J10"), pt("K11")));
        assert_eq!(mv("J10 ,\tK11"), Move::Two(pt("J10"), pt("K11")));
        assert_eq!(mv("J10, K11").to_string(), "J10,K11");
        let mut pos = Connect6::start(&Options::default());
        let moves = all_legal(&pos);
        for m in &moves {
            assert_eq!(&mv(&m.to_string()), m);
            assert_eq!(&mv(&m.to_string().to_lowercase()), m);
        }
        pos.play(&mv("J10")).unwrap();
        pos.play(&mv("K10,K11")).unwrap();
        for m in all_legal(&pos) {
            assert_eq!(mv(&m.to_string()), m);
        }
        let late = pattern_position(&["A1", "C7", "S19", "K4"], Side::Second);
        for m in all_legal(&late) {
            assert_eq!(mv(&m.to_string()), m);
            late.check_move(&m).unwrap();
        }
    }

    #[test]
    fn bad_move_text_says_what_and_where() {
        let e = Connect6::parse_move("J10;K11").unwrap_err();
        assert_eq!(e.at, 4);
        assert!(e.what.contains("','"), "{e}");
        let e = Connect6::parse_move("J10,").unwrap_err();
        assert_eq!(e.at, 5);
        assert!(e.what.contains("found the end"), "{e}");
        let e = Connect6::parse_move("J10,K11,L12").unwrap_err();
        assert_eq!(e.at, 8);
        let e = Connect6::parse_move("T1").unwrap_err();
        assert!(e.what.contains("off the board"), "{e}");
        let e = Connect6::parse_move("J20,K1").unwrap_err();
        assert_eq!(e.at, 2);
        for junk in [
            "",
            " ",
            ",",
            "J",
            "10",
            "J10 ",
            " J10",
            "J10,,K11",
            "swap",
            "J1O",
            "Ж10",
            "J10,Ж",
            "J10 K11",
            "J-1",
            "J10,K11 ",
            "\u{0}",
            "J99999999999999999999",
        ] {
            let e = Connect6::parse_move(junk).unwrap_err();
            assert!(!e.what.is_empty() && e.at >= 1, "{junk:?}: {e}");
        }
    }

    #[test]
    fn position_text_round_trips() {
        let opts = Options::default();
        let start = Connect6::start(&opts);
        let mut pos = start.clone();
        for text in ["J10", "K10,K11", "A1,S19", "B2,C3"] {
            let back = Connect6::from_position_text(&pos.position_text(), &opts).unwrap();
            assert_eq!(back, pos);
            pos.play(&mv(text)).unwrap();
        }
        let back = Connect6::from_position_text(&pos.position_text(), &opts).unwrap();
        assert_eq!(back, pos);
        // Default stones is 2 and is not written.
        assert!(!pos.position_text().contains("stones"));
        let won = position(&["C5", "D5", "E5", "F5", "G5", "H5"], &[], 'o', 2);
        let back = Connect6::from_position_text(&won.position_text(), &opts).unwrap();
        assert_eq!(back, won);
        let white_won = position(&["A1"], &["K1", "K2", "K3", "K4", "K5", "K6", "K7"], 'x', 2);
        assert_eq!(
            white_won.outcome(),
            Some(Outcome::win(Side::Second, EndReason::SixInRow))
        );
    }

    #[test]
    fn position_keys_are_read_in_any_case_and_written_in_lower_case() {
        let opts = Options::default();
        let start = Connect6::start(&opts);
        let text = start.position_text();
        assert!(text.ends_with(" x stones=1"), "{text}");
        let rows = text.split(' ').next().unwrap();
        for key in ["STONES", "Stones", "sToNeS"] {
            let loud = Connect6::from_position_text(&format!("{rows} X {key}=1"), &opts)
                .unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(loud, start, "{key}");
            assert_eq!(loud.position_text(), text);
        }
        // The same key twice in two cases, and an unknown key, are refused naming the key.
        let e = Connect6::from_position_text(&format!("{rows} x stones=1 STONES=2"), &opts)
            .unwrap_err();
        assert!(e.what.contains("STONES is given twice"), "{e}");
        let e = Connect6::from_position_text(&format!("{rows} x STONE=1"), &opts).unwrap_err();
        assert!(e.what.contains("unknown key \"STONE\""), "{e}");
        assert_eq!(e.at, rows.len() + 4);
    }

    #[test]
    fn bad_position_text_says_what_and_where() {
        let opts = Options::default();
        let empty_row = ".".repeat(19);
        let rows = vec![empty_row.clone(); 19].join("/");
        let ok = |t: &str| Connect6::from_position_text(t, &opts);
        assert!(ok(&format!("{rows} x")).is_ok());
        assert!(ok(&format!("  {rows}   o   stones=1 ")).is_ok());
        let e = ok(&format!("{rows}/{empty_row} x")).unwrap_err();
        assert!(e.what.contains("more than 19 rows"), "{e}");
        assert_eq!(e.at, rows.len() + 1, "at the twentieth row's '/'");
        let short = vec![empty_row.clone(); 18].join("/");
        let e = ok(&format!("{short}/.......... x")).unwrap_err();
        assert!(e.what.contains("row 1 has 10"), "{e}");
        assert_eq!(e.at, 18 * 20 + 11, "at the end of the short row");
        let bad = format!("..x.o.Q{}", &empty_row[7..]);
        let e = ok(&format!(
            "{bad}/{} x",
            vec![empty_row.clone(); 18].join("/")
        ))
        .unwrap_err();
        assert!(e.what.contains("'Q'") && e.what.contains("row 19"), "{e}");
        assert_eq!(e.at, 7);
        let side_at = rows.len() + 2;
        let e = ok(&format!("{rows} b")).unwrap_err();
        assert_eq!(e.at, side_at);
        let e = ok(&rows).unwrap_err();
        assert!(e.what.contains("side to move"), "{e}");
        let e = ok(&format!("{rows} x turns=2")).unwrap_err();
        assert!(e.what.contains("unknown key"), "{e}");
        assert_eq!(e.at, side_at + 2);
        let e = ok(&format!("{rows} x stones=1 stones=2")).unwrap_err();
        assert!(e.what.contains("stones is given twice"), "{e}");
        assert_eq!(e.at, side_at + 11);
        let e = ok(&format!("{rows} x stones=3")).unwrap_err();
        assert!(e.what.contains("1 or 2"), "{e}");
        assert_eq!(e.at, side_at + 9);
        let e = ok(&format!("{rows} x stones")).unwrap_err();
        assert!(e.what.contains("key=value"), "{e}");
        let e = ok("").unwrap_err();
        assert_eq!(e.at, 1);
        // Both colours with a six.
        let mut grid: Vec<String> = vec![empty_row.clone(); 19];
        grid[0] = format!("xxxxxx{}", &empty_row[6..]);
        grid[2] = format!("oooooo{}", &empty_row[6..]);
        let e = ok(&format!("{} x", grid.join("/"))).unwrap_err();
        assert!(e.what.contains("both colours"), "{e}");
        for junk in [
            "x",
            "/",
            "//////",
            "x x x",
            "\u{1F600} x",
            "... x stones=1",
            "é/é x",
        ] {
            assert!(ok(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn random_playouts_end_with_a_consistent_outcome() {
        let opts = Options::default();
        let mut rng = Prng::new(0x5eed_c6c6_1234_5678);
        let (mut wins, mut draws) = (0, 0);
        for game in 0..200 {
            let mut pos = Connect6::start(&opts);
            let mut plies = 0;
            while pos.outcome().is_none() {
                let mover = pos.turn();
                let chosen = if pos.empty_count() <= 40 || game % 50 == 0 && plies < 3 {
                    // Small enough to list every move: pick one of them.
                    let moves = all_legal(&pos);
                    assert!(!moves.is_empty(), "no move but no outcome: {pos:?}");
                    for m in &moves {
                        pos.check_move(m).unwrap();
                    }
                    moves[rng.below(moves.len())]
                } else {
                    // Otherwise draw from the empty points of the listing.
                    let listing = pos.move_listing();
                    let a = &listing[rng.below(listing.len())];
                    let text = if pos.stones_due() == 1 {
                        a.clone()
                    } else {
                        let mut b = a;
                        while b == a {
                            b = &listing[rng.below(listing.len())];
                        }
                        format!("{a},{b}")
                    };
                    mv(&text)
                };
                pos.check_move(&chosen).unwrap();
                let recorded = pos.recorded_move(&chosen);
                pos.play_unchecked(&chosen);
                plies += 1;
                // Replaying the recorded form gives the same position.
                let text = pos.position_text();
                let back = Connect6::from_position_text(&text, &opts).unwrap();
                assert_eq!(back.outcome(), pos.outcome(), "{text}");
                if let Some(outcome) = pos.outcome() {
                    match outcome.reason {
                        EndReason::SixInRow => {
                            assert_eq!(outcome.winner, Some(mover));
                            let last = recorded.stones().last().unwrap();
                            assert!(pos.makes_six(last, mover));
                            wins += 1;
                        }
                        EndReason::BoardFull => {
                            assert_eq!(outcome.winner, None);
                            assert_eq!(pos.empty_count(), 0);
                            draws += 1;
                        }
                        other => panic!("unexpected end reason {other}"),
                    }
                } else {
                    assert_eq!(pos.turn(), mover.opponent());
                    assert_eq!(pos.stones_due(), 2);
                }
            }
            assert!(plies <= 181, "{plies}");
        }
        assert_eq!(wins + draws, 200);
        assert!(wins > 0, "random games should sometimes make six");
    }

    #[test]
    fn junk_and_mutated_texts_are_errors_not_panics() {
        let mut rng = Prng::new(0xdead_beef_f00d_0001);
        let mut pos = Connect6::start(&Options::default());
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
            check_parsers_on::<Connect6>(&text, &pos.options);
        }
    }
}

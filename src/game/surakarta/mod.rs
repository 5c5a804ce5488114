//! Surakarta rules (docs/rules.md): steps, circuit captures through the corner loops, the three game
//! ends, move text (`B2-C3`, `B2xE5`) and position text (`ROWS SIDE [quiet=N]`).
//!
//! The move generator and perft live in `board` (bitboards and compile-time circuit tables);
//! `check_move` walks the circuits point by point instead, so the two are independent and the
//! tests compare them.
//!
//! Choices where the spec is silent:
//! - A position text in which the side NOT to move has no pieces is over: the side to move wins
//!   (`no_pieces`), as if it had just taken the last piece. A board with no pieces at all, or a
//!   side with more than 12 pieces, is refused.
//! - A position text is checked for the three ends when read, in the order of docs/rules.md.

pub mod board;
#[cfg(test)]
mod tests;

use std::fmt;
use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

use super::coord::{char_pos, expect_end, found_char, parse_point_at};
use super::position_text::{read_keys, read_rows, tokens};
use super::{BoardDrawing, StoneColour};
use super::{EndReason, GameId, Outcome, ParseMoveError, ParsePositionError, Point, Rules, Side};
use board::{circuit_point, Board};

/// Board width and height.
pub const SIZE: u8 = 6;
/// Pieces each side starts with (and the most a position may hold).
pub const PIECES_PER_SIDE: u32 = 12;

/// A Surakarta position: pieces, side to move, plies since the last capture, and the result
/// once the game is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surakarta {
    /// Pieces by `Side::index`, one bit per point (`row * 6 + col`).
    pieces: [u64; 2],
    turn: Side,
    quiet: u32,
    options: Options,
    outcome: Option<Outcome>,
}

/// Surakarta rule options (docs/rules.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Options {
    /// Plies in a row without a capture after which the game ends (`move_limit`): more pieces
    /// wins, equal counts draw. Default 80 (40 rounds).
    pub no_capture_limit: NonZeroU32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            no_capture_limit: NonZeroU32::new(80).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// Step to a neighbouring empty point, or capture along a circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveKind {
    Step,
    Capture,
}

/// A Surakarta move: `B2-C3` (step) or `B2xE5` (capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Move {
    pub from: Point,
    pub to: Point,
    pub kind: MoveKind,
}

impl Move {
    pub fn step(from: Point, to: Point) -> Move {
        Move {
            from,
            to,
            kind: MoveKind::Step,
        }
    }

    pub fn capture(from: Point, to: Point) -> Move {
        Move {
            from,
            to,
            kind: MoveKind::Capture,
        }
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = match self.kind {
            MoveKind::Step => '-',
            MoveKind::Capture => 'x',
        };
        write!(f, "{}{sep}{}", self.from, self.to)
    }
}

/// Why a Surakarta move is illegal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    #[error("the game is over")]
    GameOver,
    #[error("{0} is off the board")]
    OffBoard(Point),
    #[error("the move starts and ends on {0}")]
    SamePoint(Point),
    #[error("there is no piece on {0}")]
    NoPieceAt(Point),
    #[error("the piece on {0} belongs to the opponent")]
    NotYourPiece(Point),
    #[error("a step goes to a neighbouring point, and {to} is not next to {from}")]
    NotANeighbour { from: Point, to: Point },
    #[error("a step must go to an empty point, and {0} is occupied")]
    StepTargetOccupied(Point),
    #[error("a capture must end on an enemy piece, and {0} holds none")]
    CaptureTargetNotEnemy(Point),
    #[error("no circuit path from {from} through a corner loop reaches {to} unblocked")]
    NoCapturePath { from: Point, to: Point },
}

/// The bit index of a point, if it is on the board.
fn index_of(p: Point) -> Option<usize> {
    (p.col < SIZE && p.row < SIZE).then(|| p.index(SIZE))
}

fn point_of(index: usize) -> Point {
    Point::from_index(index, SIZE)
}

impl Surakarta {
    /// The board from the side to move's view.
    fn board(&self) -> Board {
        Board {
            us: self.pieces[self.turn.index()],
            them: self.pieces[self.turn.opponent().index()],
            quiet: self.quiet,
        }
    }

    /// Plies played since the last capture.
    pub fn quiet_plies(&self) -> u32 {
        self.quiet
    }

    /// Number of pieces `side` has on the board.
    pub fn piece_count(&self, side: Side) -> u32 {
        self.pieces[side.index()].count_ones()
    }

    /// Who holds `p`, if anyone.
    pub fn piece_at(&self, p: Point) -> Option<Side> {
        let bit = 1u64 << index_of(p)?;
        [Side::First, Side::Second]
            .into_iter()
            .find(|s| self.pieces[s.index()] & bit != 0)
    }

    /// The more numerous side wins, equal counts draw.
    fn by_count(&self, reason: EndReason) -> Outcome {
        let first = self.piece_count(Side::First);
        let second = self.piece_count(Side::Second);
        match first.cmp(&second) {
            std::cmp::Ordering::Greater => Outcome::win(Side::First, reason),
            std::cmp::Ordering::Less => Outcome::win(Side::Second, reason),
            std::cmp::Ordering::Equal => Outcome::draw(reason),
        }
    }

    /// The game ends of docs/rules.md, in order, for the side to move (`self.turn`).
    fn decide(&self) -> Option<Outcome> {
        let mover = self.turn.opponent();
        if self.piece_count(self.turn) == 0 {
            return Some(Outcome::win(mover, EndReason::NoPieces));
        }
        if self.piece_count(mover) == 0 {
            return Some(Outcome::win(self.turn, EndReason::NoPieces));
        }
        if self.quiet >= self.options.no_capture_limit.get() {
            return Some(self.by_count(EndReason::MoveLimit));
        }
        if self.board().count_moves() == 0 {
            return Some(self.by_count(EndReason::NoMoves));
        }
        None
    }

    /// Whether a piece of the side to move on `from` captures `to` along some circuit path,
    /// walking the circuits point by point (independent of the bitboard generator).
    fn capture_path_exists(&self, from: usize, to: usize) -> bool {
        let us = self.pieces[self.turn.index()];
        let them = self.pieces[self.turn.opponent().index()];
        let occupied = us | them;
        for circuit in 0..2 {
            for start in (0..24).filter(|&j| circuit_point(circuit, j) == from) {
                for forward in [true, false] {
                    let mut entry = start;
                    let mut looped = false;
                    for _ in 0..23 {
                        let next = if forward {
                            (entry + 1) % 24
                        } else {
                            (entry + 23) % 24
                        };
                        // Leaving side entry/6 for another side passes a corner loop.
                        looped |= entry / 6 != next / 6;
                        entry = next;
                        let p = circuit_point(circuit, entry);
                        if p == from || occupied & (1 << p) == 0 {
                            continue;
                        }
                        if p == to && looped && them & (1 << p) != 0 {
                            return true;
                        }
                        break;
                    }
                }
            }
        }
        false
    }
}

impl Rules for Surakarta {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Surakarta;
    const ID: &'static str = "surakarta";
    const RECORD_CODE: &'static str = "SUR";
    const BUILTIN_OPENING_PLIES: usize = 4;
    const COLOURS: [char; 2] = ['B', 'W'];
    const BOARD_SIZE: u8 = SIZE;
    const BOARD_DRAWING: BoardDrawing = BoardDrawing::Circuits;
    const STONE_COLOURS: [StoneColour; 2] = [StoneColour::Black, StoneColour::White];

    /// 100 per piece more than the opponent.
    fn heuristic(&self, side: Side) -> i64 {
        100 * (i64::from(self.piece_count(side)) - i64::from(self.piece_count(side.opponent())))
    }

    fn start(options: &Options) -> Self {
        let first = (1u64 << 12) - 1;
        Surakarta {
            pieces: [first, first << 24],
            turn: Side::First,
            quiet: 0,
            options: *options,
            outcome: None,
        }
    }

    fn options(&self) -> &Options {
        &self.options
    }

    fn from_position_text(text: &str, options: &Options) -> Result<Self, ParsePositionError> {
        let mut position = parse_position(text, options)?;
        position.outcome = position.decide();
        Ok(position)
    }

    fn position_text(&self) -> String {
        let mut text = String::with_capacity(48);
        for row in (0..SIZE).rev() {
            for col in 0..SIZE {
                text.push(match self.piece_at(Point::new(col, row)) {
                    Some(side) => side.position_char(),
                    None => '.',
                });
            }
            text.push(if row == 0 { ' ' } else { '/' });
        }
        text.push(self.turn.position_char());
        if self.quiet != 0 {
            text.push_str(&format!(" quiet={}", self.quiet));
        }
        text
    }

    fn parse_move(text: &str) -> Result<Move, ParseMoveError> {
        let (from, end) = parse_point_at(text, 0, SIZE)?;
        let kind = match text.as_bytes().get(end) {
            Some(b'-') => MoveKind::Step,
            Some(b'x' | b'X') => MoveKind::Capture,
            Some(_) => {
                return Err(ParseMoveError::new(
                    text,
                    char_pos(text, end),
                    format!(
                        "expected '-' (step) or 'x' (capture) after {from}, found {:?}",
                        found_char(text, end)
                    ),
                ))
            }
            None => {
                return Err(ParseMoveError::new(
                    text,
                    char_pos(text, end),
                    format!("expected '-' (step) or 'x' (capture) after {from}, found the end"),
                ))
            }
        };
        let (to, end) = parse_point_at(text, end + 1, SIZE)?;
        expect_end(text, end)?;
        Ok(Move { from, to, kind })
    }

    fn turn(&self) -> Side {
        self.turn
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    fn legal_moves(&self, out: &mut Vec<Move>) {
        if self.outcome.is_some() {
            return;
        }
        self.board().for_each_move(|from, to, capture| {
            let (from, to) = (point_of(from), point_of(to));
            out.push(if capture {
                Move::capture(from, to)
            } else {
                Move::step(from, to)
            });
        });
    }

    fn check_move(&self, mv: &Move) -> Result<(), IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        let from = index_of(mv.from).ok_or(IllegalMove::OffBoard(mv.from))?;
        let to = index_of(mv.to).ok_or(IllegalMove::OffBoard(mv.to))?;
        if from == to {
            return Err(IllegalMove::SamePoint(mv.from));
        }
        let us = self.pieces[self.turn.index()];
        let them = self.pieces[self.turn.opponent().index()];
        if (us | them) & (1 << from) == 0 {
            return Err(IllegalMove::NoPieceAt(mv.from));
        }
        if us & (1 << from) == 0 {
            return Err(IllegalMove::NotYourPiece(mv.from));
        }
        match mv.kind {
            MoveKind::Step => {
                if mv.from.col.abs_diff(mv.to.col) > 1 || mv.from.row.abs_diff(mv.to.row) > 1 {
                    return Err(IllegalMove::NotANeighbour {
                        from: mv.from,
                        to: mv.to,
                    });
                }
                if (us | them) & (1 << to) != 0 {
                    return Err(IllegalMove::StepTargetOccupied(mv.to));
                }
            }
            MoveKind::Capture => {
                if them & (1 << to) == 0 {
                    return Err(IllegalMove::CaptureTargetNotEnemy(mv.to));
                }
                if !self.capture_path_exists(from, to) {
                    return Err(IllegalMove::NoCapturePath {
                        from: mv.from,
                        to: mv.to,
                    });
                }
            }
        }
        Ok(())
    }

    fn play_unchecked(&mut self, mv: &Move) {
        // An off-board move (only constructible by hand, never parsed) changes nothing.
        let (Some(from), Some(to)) = (index_of(mv.from), index_of(mv.to)) else {
            return;
        };
        let next = self.board().after(from, to, mv.kind == MoveKind::Capture);
        self.turn = self.turn.opponent();
        self.pieces[self.turn.index()] = next.us & board::FULL;
        self.pieces[self.turn.opponent().index()] = next.them & board::FULL;
        self.quiet = next.quiet;
        self.outcome = self.decide();
    }

    fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        if self.outcome.is_some() {
            return 0;
        }
        board::perft(&self.board(), depth, self.options.no_capture_limit.get())
    }
}

/// Reads `ROWS SIDE [quiet=N]` (docs/rules.md); the outcome is left for the caller to decide.
fn parse_position(text: &str, options: &Options) -> Result<Surakarta, ParsePositionError> {
    let rows_byte = tokens(text).next().map_or(0, |(byte, _)| byte);
    let tokens: Vec<(usize, &str)> = tokens(text)
        .map(|(byte, token)| (char_pos(text, byte), token))
        .collect();
    let end_pos = text.chars().count() + 1;
    let Some(&(rows_at, rows)) = tokens.first() else {
        return Err(ParsePositionError::new(
            1,
            "empty position text; expected ROWS SIDE, e.g. \
             oooooo/oooooo/....../....../xxxxxx/xxxxxx x",
        ));
    };
    let mut pieces = [0u64; 2];
    for (index, point) in read_rows(text, rows_byte, rows, SIZE, "points")?
        .into_iter()
        .enumerate()
    {
        if let Some(side) = point {
            pieces[side.index()] |= 1u64 << index;
        }
    }
    for side in [Side::First, Side::Second] {
        let n = pieces[side.index()].count_ones();
        if n > PIECES_PER_SIDE {
            return Err(ParsePositionError::new(
                rows_at,
                format!(
                    "side {} has {n} pieces, at most {PIECES_PER_SIDE} are allowed",
                    side.position_char()
                ),
            ));
        }
    }
    if pieces == [0, 0] {
        return Err(ParsePositionError::new(rows_at, "the board has no pieces"));
    }

    let Some(&(side_at, side_text)) = tokens.get(1) else {
        return Err(ParsePositionError::new(
            end_pos,
            "expected the side to move (x or o) after the rows, found the end",
        ));
    };
    let turn = match side_text {
        "x" | "X" => Side::First,
        "o" | "O" => Side::Second,
        other => {
            return Err(ParsePositionError::new(
                side_at,
                format!("expected the side to move, x or o, found {other:?}"),
            ))
        }
    };

    let mut quiet = None;
    for key in read_keys(
        text,
        super::position_text::tokens(text).skip(2),
        "surakarta",
        &["quiet"],
    )? {
        let value = key.value;
        let value_at = char_pos(text, key.value_at);
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParsePositionError::new(
                value_at,
                format!("quiet must be a whole number of plies, found {value:?}"),
            ));
        }
        quiet = Some(value.parse::<u32>().map_err(|_| {
            ParsePositionError::new(value_at, format!("quiet={value} is too large"))
        })?);
    }

    Ok(Surakarta {
        pieces,
        turn,
        quiet: quiet.unwrap_or(0),
        options: *options,
        outcome: None,
    })
}

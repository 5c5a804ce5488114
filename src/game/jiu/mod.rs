//! Tibetan Jiu (久棋) rules on 14×14 points: the placement phase, the battle phase (step, jump
//! chain, fly), square captures and the end of the game, as docs/rules.md states them.
//!
//! Move and position text live in `jiu/text.rs`; the unit tests in `jiu/tests.rs`.
//! `docs/rules.md (Tibetan Jiu)` restates the rules and lists every choice made where the spec is silent.

#[cfg(test)]
mod tests;
mod text;

use std::fmt;
use std::num::NonZeroU32;
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use super::{
    BoardDrawing, EndReason, GameId, ListingTooLarge, MoveChoice, Outcome, ParseMoveError,
    ParsePositionError, Point, Rules, Side, StoneColour,
};

/// Points per side of the board (columns A–N, rows 1–14).
pub const SIZE: u8 = 14;
/// Number of points on the board.
pub const POINTS: usize = SIZE as usize * SIZE as usize;
/// The two ends of the centre diagonal: the forced first placements, emptied when battle begins.
pub const CENTRE: [Point; 2] = [Point::new(6, 6), Point::new(7, 7)];
/// A side with this many stones or fewer may fly (and, unless `flying_single_jump`, nobody may
/// make a single jump while either side is this small).
pub const FLYING_STONES: u32 = 14;
/// A side left with this many stones or fewer loses (`few_stones`).
pub const FEW_STONES: u32 = 3;

/// The four orthogonal directions (column delta, row delta).
const DIRECTIONS: [(i32, i32); 4] = [(0, 1), (0, -1), (-1, 0), (1, 0)];

/// What stands on each point, row-major with row 1 first (see `Point::index`).
pub(crate) type Board = [Option<Side>; POINTS];

/// Jiu rule options (docs/rules.md). Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Battle plies in a row without any capture after which the game ends (`move_limit`):
    /// the side with more stones wins, equal counts draw. Default 100.
    pub no_capture_limit: NonZeroU32,
    /// Whether a single jump stays legal while a side has 14 or fewer stones. Default false:
    /// then a jump must chain at least two jumps.
    pub flying_single_jump: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            no_capture_limit: NonZeroU32::new(100).unwrap_or(NonZeroU32::MIN),
            flying_single_jump: false,
        }
    }
}

/// The two phases of a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// 布局: the sides fill the board one stone at a time.
    Placement,
    /// 战斗: stones step, jump and fly.
    Battle,
}

impl Phase {
    /// `placement` or `battle`, as in position text.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Placement => "placement",
            Phase::Battle => "battle",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The enemy stones a square capture removes: a set, kept sorted (column, then row) so that
/// equality and display never depend on the order the text named them in. Duplicates are kept
/// (side by side) so that `check_move` can refuse them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Victims(Vec<Point>);

impl Victims {
    /// The victims `points`, in canonical order.
    pub fn new(points: impl IntoIterator<Item = Point>) -> Victims {
        let mut points: Vec<Point> = points.into_iter().collect();
        points.sort();
        Victims(points)
    }

    /// No victims: the move forms no square.
    pub fn none() -> Victims {
        Victims(Vec::new())
    }

    /// The victims in canonical order (column, then row).
    pub fn points(&self) -> &[Point] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One Jiu turn.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Move {
    /// Placement phase: a stone on an empty point (`G7`).
    Place(Point),
    /// Battle: a step to an orthogonal neighbour, or a fly anywhere for a side with 14 or fewer
    /// stones (`G7-G8`, `G7-A1`), then the square victims (`+B3`).
    Shift {
        from: Point,
        to: Point,
        victims: Victims,
    },
    /// Battle: a jump chain naming every landing point (`G7xG9xI9`), then the square victims.
    Jump {
        from: Point,
        landings: Vec<Point>,
        victims: Victims,
    },
}

impl Move {
    /// The square victims (none for a placement).
    pub fn victims(&self) -> &[Point] {
        match self {
            Move::Place(_) => &[],
            Move::Shift { victims, .. } | Move::Jump { victims, .. } => victims.points(),
        }
    }
}

/// What is wrong with one leg of a jump chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JumpFault {
    #[error("a jump names at least one landing point")]
    NoLanding,
    #[error("{to} is not two points up, down, left or right of {from}")]
    NotInLine { from: Point, to: Point },
    #[error("{over} holds no enemy stone to jump over")]
    NotOverEnemy { over: Point },
    #[error("the landing point {at} is not empty")]
    LandingNotEmpty { at: Point },
    #[error("the chain already visited {at}")]
    Revisit { at: Point },
}

/// Why a well-formed Jiu move is not legal in a position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalMove {
    #[error("the game is over")]
    GameOver,
    #[error("the game is in the {phase} phase, which has no moves of this form (placement: `G7`; battle: `G7-G8`, `G7xG9`)")]
    WrongPhase { phase: Phase },
    #[error("the point at column {col}, row {row} (0-based) is off the board")]
    OffBoard { col: u8, row: u8 },
    #[error("{0} is not empty")]
    Occupied(Point),
    #[error("the first two placements are forced: this one goes on {allowed}")]
    ForcedOpening { allowed: String },
    #[error("there is no stone on {0}")]
    NoStoneAt(Point),
    #[error("the stone on {0} belongs to the opponent")]
    NotYourStone(Point),
    #[error("a step goes one point up, down, left or right: {to} is not next to {from}")]
    NotAdjacent { from: Point, to: Point },
    #[error("{to} is not next to {from}, and only a side with 14 or fewer stones may fly (this side has {stones})")]
    FlyNotAllowed { from: Point, to: Point, stones: u32 },
    #[error("jump {leg} of the chain: {fault}")]
    BadJump { leg: usize, fault: JumpFault },
    #[error("while a side has 14 or fewer stones, a jump must chain at least two jumps")]
    SingleJumpForbidden,
    #[error("the move forms squares that remove {expected} enemy stone(s), but it names {got}")]
    WrongVictimCount { expected: usize, got: usize },
    #[error("{0} holds no enemy stone to remove")]
    VictimNotEnemy(Point),
    #[error("{0} is named twice as a victim")]
    DuplicateVictim(Point),
}

/// A Jiu position: the board, the phase, the side to move and the plies since the last capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jiu {
    options: Options,
    board: Board,
    phase: Phase,
    to_move: Side,
    /// Battle plies in a row without a capture.
    quiet: u32,
    /// Stones on the board per side (`Side::index`).
    counts: [u32; 2],
    /// Derived from the rest, refreshed after every move.
    outcome: Option<Outcome>,
}

/// A battle move without its square victims: what the moving stone does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Shift { from: Point, to: Point },
    Jump { from: Point, landings: Vec<Point> },
}

impl Action {
    fn with_victims(self, victims: Victims) -> Move {
        match self {
            Action::Shift { from, to } => Move::Shift { from, to, victims },
            Action::Jump { from, landings } => Move::Jump {
                from,
                landings,
                victims,
            },
        }
    }
}

fn on_board(p: Point) -> bool {
    p.col < SIZE && p.row < SIZE
}

fn stone(board: &Board, p: Point) -> Option<Side> {
    if !on_board(p) {
        return None;
    }
    board.get(p.index(SIZE)).copied().flatten()
}

fn put(board: &mut Board, p: Point, value: Option<Side>) {
    if on_board(p) {
        if let Some(cell) = board.get_mut(p.index(SIZE)) {
            *cell = value;
        }
    }
}

/// `p` moved by (`dc`, `dr`), if that is still on the board.
fn shifted(p: Point, dc: i32, dr: i32) -> Option<Point> {
    let col = i32::from(p.col) + dc;
    let row = i32::from(p.row) + dr;
    let range = 0..i32::from(SIZE);
    if range.contains(&col) && range.contains(&row) {
        Some(Point::new(col as u8, row as u8))
    } else {
        None
    }
}

fn orthogonally_adjacent(a: Point, b: Point) -> bool {
    a.col.abs_diff(b.col) + a.row.abs_diff(b.row) == 1
}

/// The 2×2 squares made entirely of `side`'s stones that contain `p`.
fn squares_at(board: &Board, p: Point, side: Side) -> usize {
    [(-1, -1), (-1, 0), (0, -1), (0, 0)]
        .into_iter()
        .filter(|&(dc, dr)| {
            shifted(p, dc, dr).is_some_and(|corner| {
                [(0, 0), (1, 0), (0, 1), (1, 1)].into_iter().all(|(c, r)| {
                    shifted(corner, c, r).is_some_and(|q| stone(board, q) == Some(side))
                })
            })
        })
        .count()
}

/// The square capture of one battle action (docs/rules.md, "Square capture"): the 2×2 squares
/// of the mover's stones it forms at its end point, and the enemy stones it removes, one per
/// square or all of them if fewer are left after the jumps. The listing (`move_listing`) shows
/// `formed`; a move names `removes` victims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Squares {
    formed: usize,
    removes: usize,
}

impl Squares {
    /// The squares a move of `side` that left `board` with its stone on `end` forms, with
    /// `enemy_left` enemy stones on `board`.
    fn at(board: &Board, end: Point, side: Side, enemy_left: usize) -> Squares {
        let formed = squares_at(board, end, side);
        Squares {
            formed,
            removes: formed.min(enemy_left),
        }
    }
}

/// Every point holding a stone of `side`, in canonical order (column, then row).
fn stones_of(board: &Board, side: Side) -> Vec<Point> {
    let mut points: Vec<Point> = (0..POINTS)
        .map(|i| Point::from_index(i, SIZE))
        .filter(|&p| stone(board, p) == Some(side))
        .collect();
    points.sort();
    points
}

/// Calls `each` with every `k`-element subset of `items` (in order), as a sorted `Victims`.
fn for_each_subset(items: &[Point], k: usize, each: &mut dyn FnMut(Victims)) {
    fn go(
        items: &[Point],
        k: usize,
        start: usize,
        chosen: &mut Vec<Point>,
        each: &mut dyn FnMut(Victims),
    ) {
        if chosen.len() == k {
            each(Victims(chosen.clone()));
            return;
        }
        let needed = k - chosen.len();
        for i in start..items.len() {
            if items.len() - i < needed {
                break;
            }
            if let Some(&p) = items.get(i) {
                chosen.push(p);
                go(items, k, i + 1, chosen, each);
                chosen.pop();
            }
        }
    }
    let mut chosen = Vec::with_capacity(k);
    go(items, k, 0, &mut chosen, each);
}

impl Jiu {
    /// The phase the game is in.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The stone on `p`, if any.
    pub fn stone_at(&self, p: Point) -> Option<Side> {
        stone(&self.board, p)
    }

    /// Number of stones `side` has on the board.
    pub fn stone_count(&self, side: Side) -> u32 {
        self.counts[side.index()]
    }

    /// Battle plies in a row without any capture.
    pub fn quiet_plies(&self) -> u32 {
        self.quiet
    }

    /// Whether `side` may fly (14 or fewer stones).
    pub fn can_fly(&self, side: Side) -> bool {
        self.stone_count(side) <= FLYING_STONES
    }

    /// Whether a single jump (a chain of one) is legal now.
    pub fn single_jump_allowed(&self) -> bool {
        self.options.flying_single_jump
            || (self.stone_count(Side::First) > FLYING_STONES
                && self.stone_count(Side::Second) > FLYING_STONES)
    }

    fn total_stones(&self) -> u32 {
        self.counts[0] + self.counts[1]
    }

    /// Builds a position from its parts and derives its outcome. The caller has checked that
    /// the parts make sense (see `text::parse_position`).
    fn from_parts(options: &Options, board: Board, phase: Phase, to_move: Side, quiet: u32) -> Jiu {
        let counts = [Side::First, Side::Second]
            .map(|side| board.iter().filter(|&&cell| cell == Some(side)).count() as u32);
        let mut position = Jiu {
            options: options.clone(),
            board,
            phase,
            to_move,
            quiet,
            counts,
            outcome: None,
        };
        position.outcome = position.derive_outcome();
        position
    }

    /// The end checks of docs/rules.md, in order, for the side to move having just been moved
    /// against: few_stones, then move_limit, then no_moves. Never during placement.
    fn derive_outcome(&self) -> Option<Outcome> {
        if self.phase == Phase::Placement {
            return None;
        }
        let victim = self.to_move;
        let mover = victim.opponent();
        if self.stone_count(victim) <= FEW_STONES {
            return Some(Outcome::win(mover, EndReason::FewStones));
        }
        if self.quiet >= self.options.no_capture_limit.get() {
            let (mine, theirs) = (self.stone_count(mover), self.stone_count(victim));
            return Some(match mine.cmp(&theirs) {
                std::cmp::Ordering::Greater => Outcome::win(mover, EndReason::MoveLimit),
                std::cmp::Ordering::Less => Outcome::win(victim, EndReason::MoveLimit),
                std::cmp::Ordering::Equal => Outcome::draw(EndReason::MoveLimit),
            });
        }
        let has_move = self
            .for_each_action(&mut |_, _, _| ControlFlow::Break(()))
            .is_break();
        if !has_move {
            return Some(Outcome::win(mover, EndReason::NoMoves));
        }
        None
    }

    /// The placements legal now (placement phase, game not over).
    fn placements(&self) -> Vec<Point> {
        match self.total_stones() {
            0 => CENTRE.to_vec(),
            1 => CENTRE
                .into_iter()
                .filter(|&p| stone(&self.board, p).is_none())
                .collect(),
            _ => (0..POINTS)
                .map(|i| Point::from_index(i, SIZE))
                .filter(|&p| stone(&self.board, p).is_none())
                .collect(),
        }
    }

    /// Calls `each` with every battle action of the side to move, the board after it (square
    /// victims not yet removed) and the squares it forms: how many, and how many victims it must
    /// name (min(squares formed, enemy stones left)). Stops when `each` breaks.
    fn for_each_action(
        &self,
        each: &mut dyn FnMut(Action, &Board, Squares) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.phase != Phase::Battle {
            return ControlFlow::Continue(());
        }
        let me = self.to_move;
        let enemy_count = self.stone_count(me.opponent()) as usize;
        let flying = self.can_fly(me);
        let min_chain = if self.single_jump_allowed() { 1 } else { 2 };
        let empties: Vec<Point> = if flying {
            (0..POINTS)
                .map(|i| Point::from_index(i, SIZE))
                .filter(|&p| stone(&self.board, p).is_none())
                .collect()
        } else {
            Vec::new()
        };
        let mut scratch = self.board;
        for from in (0..POINTS).map(|i| Point::from_index(i, SIZE)) {
            if stone(&self.board, from) != Some(me) {
                continue;
            }
            // Steps, or flies for a small side.
            let targets: Vec<Point> = if flying {
                empties.clone()
            } else {
                DIRECTIONS
                    .into_iter()
                    .filter_map(|(dc, dr)| shifted(from, dc, dr))
                    .filter(|&p| stone(&self.board, p).is_none())
                    .collect()
            };
            for to in targets {
                put(&mut scratch, from, None);
                put(&mut scratch, to, Some(me));
                let squares = Squares::at(&scratch, to, me, enemy_count);
                let flow = each(Action::Shift { from, to }, &scratch, squares);
                put(&mut scratch, to, None);
                put(&mut scratch, from, Some(me));
                flow?;
            }
            // Jump chains, every prefix of at least `min_chain` jumps.
            put(&mut scratch, from, None);
            let mut visited = [false; POINTS];
            if let Some(v) = visited.get_mut(from.index(SIZE)) {
                *v = true;
            }
            let mut landings = Vec::new();
            let flow = self.jump_search(
                &mut JumpSearch {
                    board: &mut scratch,
                    visited: &mut visited,
                    landings: &mut landings,
                    from,
                    me,
                    enemy_count,
                    min_chain,
                },
                from,
                each,
            );
            put(&mut scratch, from, Some(me));
            flow?;
        }
        ControlFlow::Continue(())
    }

    /// Depth-first search of the jump chains continuing from `at`.
    fn jump_search(
        &self,
        search: &mut JumpSearch<'_>,
        at: Point,
        each: &mut dyn FnMut(Action, &Board, Squares) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let me = search.me;
        for (dc, dr) in DIRECTIONS {
            let (Some(over), Some(land)) = (shifted(at, dc, dr), shifted(at, 2 * dc, 2 * dr))
            else {
                continue;
            };
            let land_index = land.index(SIZE);
            if stone(search.board, over) != Some(me.opponent())
                || stone(search.board, land).is_some()
                || search.visited.get(land_index).copied().unwrap_or(true)
            {
                continue;
            }
            put(search.board, over, None);
            if let Some(v) = search.visited.get_mut(land_index) {
                *v = true;
            }
            search.landings.push(land);
            let mut flow = ControlFlow::Continue(());
            if search.landings.len() >= search.min_chain {
                put(search.board, land, Some(me));
                let left = search.enemy_count.saturating_sub(search.landings.len());
                let squares = Squares::at(search.board, land, me, left);
                let action = Action::Jump {
                    from: search.from,
                    landings: search.landings.clone(),
                };
                flow = each(action, search.board, squares);
                put(search.board, land, None);
            }
            if flow.is_continue() {
                flow = self.jump_search(search, land, each);
            }
            search.landings.pop();
            if let Some(v) = search.visited.get_mut(land_index) {
                *v = false;
            }
            put(search.board, over, Some(me.opponent()));
            flow?;
        }
        ControlFlow::Continue(())
    }

    /// Checks the stone a battle move starts from.
    fn check_from(&self, from: Point) -> Result<(), IllegalMove> {
        if !on_board(from) {
            return Err(IllegalMove::OffBoard {
                col: from.col,
                row: from.row,
            });
        }
        match stone(&self.board, from) {
            None => Err(IllegalMove::NoStoneAt(from)),
            Some(side) if side != self.to_move => Err(IllegalMove::NotYourStone(from)),
            Some(_) => Ok(()),
        }
    }

    /// Walks a battle action on a copy of the board, checking each part. Returns the board after
    /// it, the point where the stone ended and the number of stones the jumps removed.
    fn check_action(
        &self,
        from: Point,
        action: ActionRef<'_>,
    ) -> Result<(Board, Point, usize), IllegalMove> {
        self.check_from(from)?;
        let me = self.to_move;
        let mut board = self.board;
        match action {
            ActionRef::Shift(to) => {
                if !on_board(to) {
                    return Err(IllegalMove::OffBoard {
                        col: to.col,
                        row: to.row,
                    });
                }
                if stone(&board, to).is_some() {
                    return Err(IllegalMove::Occupied(to));
                }
                if !self.can_fly(me) && !orthogonally_adjacent(from, to) {
                    let diagonal = from.col.abs_diff(to.col) == 1 && from.row.abs_diff(to.row) == 1;
                    return Err(if diagonal {
                        IllegalMove::NotAdjacent { from, to }
                    } else {
                        IllegalMove::FlyNotAllowed {
                            from,
                            to,
                            stones: self.stone_count(me),
                        }
                    });
                }
                put(&mut board, from, None);
                put(&mut board, to, Some(me));
                Ok((board, to, 0))
            }
            ActionRef::Jump(landings) => {
                if landings.is_empty() {
                    return Err(IllegalMove::BadJump {
                        leg: 1,
                        fault: JumpFault::NoLanding,
                    });
                }
                put(&mut board, from, None);
                let mut visited = [false; POINTS];
                if let Some(v) = visited.get_mut(from.index(SIZE)) {
                    *v = true;
                }
                let mut at = from;
                for (i, &land) in landings.iter().enumerate() {
                    let leg = i + 1;
                    let bad = |fault| IllegalMove::BadJump { leg, fault };
                    if !on_board(land) {
                        return Err(IllegalMove::OffBoard {
                            col: land.col,
                            row: land.row,
                        });
                    }
                    let over = match (land.col.abs_diff(at.col), land.row.abs_diff(at.row)) {
                        (2, 0) | (0, 2) => Point::new(
                            at.col.min(land.col) + land.col.abs_diff(at.col) / 2,
                            at.row.min(land.row) + land.row.abs_diff(at.row) / 2,
                        ),
                        _ => return Err(bad(JumpFault::NotInLine { from: at, to: land })),
                    };
                    if stone(&board, over) != Some(me.opponent()) {
                        return Err(bad(JumpFault::NotOverEnemy { over }));
                    }
                    if visited.get(land.index(SIZE)).copied().unwrap_or(true) {
                        return Err(bad(JumpFault::Revisit { at: land }));
                    }
                    if stone(&board, land).is_some() {
                        return Err(bad(JumpFault::LandingNotEmpty { at: land }));
                    }
                    put(&mut board, over, None);
                    if let Some(v) = visited.get_mut(land.index(SIZE)) {
                        *v = true;
                    }
                    at = land;
                }
                if landings.len() == 1 && !self.single_jump_allowed() {
                    return Err(IllegalMove::SingleJumpForbidden);
                }
                put(&mut board, at, Some(me));
                Ok((board, at, landings.len()))
            }
        }
    }

    /// Checks the square victims named for a move that left `board` with the stone on `end`.
    fn check_victims(
        &self,
        board: &Board,
        end: Point,
        jumped: usize,
        victims: &Victims,
    ) -> Result<(), IllegalMove> {
        let me = self.to_move;
        let enemy_left = (self.stone_count(me.opponent()) as usize).saturating_sub(jumped);
        let expected = Squares::at(board, end, me, enemy_left).removes;
        if victims.len() != expected {
            return Err(IllegalMove::WrongVictimCount {
                expected,
                got: victims.len(),
            });
        }
        let mut previous = None;
        for &v in victims.points() {
            if previous == Some(v) {
                return Err(IllegalMove::DuplicateVictim(v));
            }
            if stone(board, v) != Some(me.opponent()) {
                return Err(IllegalMove::VictimNotEnemy(v));
            }
            previous = Some(v);
        }
        Ok(())
    }

    /// Plays a battle move (assumed legal): moves the stone, removes what it jumped and the
    /// square victims, updates the quiet count and passes the turn.
    fn play_battle(&mut self, from: Point, action: ActionRef<'_>, victims: &Victims) {
        let me = self.to_move;
        let mut captured = 0usize;
        if stone(&self.board, from) == Some(me) {
            put(&mut self.board, from, None);
        }
        let end = match action {
            ActionRef::Shift(to) => to,
            ActionRef::Jump(landings) => {
                let mut at = from;
                for &land in landings {
                    let over = Point::new(
                        at.col.min(land.col) + land.col.abs_diff(at.col) / 2,
                        at.row.min(land.row) + land.row.abs_diff(at.row) / 2,
                    );
                    if stone(&self.board, over) == Some(me.opponent()) && self.remove(over) {
                        captured += 1;
                    }
                    at = land;
                }
                at
            }
        };
        put(&mut self.board, end, Some(me));
        for &v in victims.points() {
            if stone(&self.board, v) == Some(me.opponent()) && self.remove(v) {
                captured += 1;
            }
        }
        self.quiet = if captured > 0 {
            0
        } else {
            self.quiet.saturating_add(1)
        };
        self.to_move = me.opponent();
    }

    /// Removes a stone (if any) from the board and the counts.
    fn remove(&mut self, p: Point) -> bool {
        match stone(&self.board, p) {
            Some(side) => {
                put(&mut self.board, p, None);
                self.counts[side.index()] = self.counts[side.index()].saturating_sub(1);
                true
            }
            None => false,
        }
    }
}

/// The state of one jump-chain search (see `Jiu::jump_search`).
struct JumpSearch<'a> {
    board: &'a mut Board,
    visited: &'a mut [bool; POINTS],
    landings: &'a mut Vec<Point>,
    from: Point,
    me: Side,
    enemy_count: usize,
    min_chain: usize,
}

/// A battle move's action, borrowed from a `Move`.
#[derive(Clone, Copy)]
enum ActionRef<'a> {
    Shift(Point),
    Jump(&'a [Point]),
}

impl Rules for Jiu {
    type Move = Move;
    type Options = Options;
    type Illegal = IllegalMove;
    const GAME: GameId = GameId::Jiu;
    const ID: &'static str = "jiu";
    const RECORD_CODE: &'static str = "JIU";
    const BUILTIN_OPENING_PLIES: usize = 4;
    const COLOURS: [char; 2] = ['W', 'B'];
    const BOARD_SIZE: u8 = SIZE;
    const BOARD_DRAWING: BoardDrawing = BoardDrawing::Lines;
    const STONE_COLOURS: [StoneColour; 2] = [StoneColour::White, StoneColour::Black];

    /// Sides alternate through the 196 placements, White (first) first; Black (second) makes
    /// both the last placement and the first battle move, then sides alternate again.
    fn mover_of_ply(ply: usize) -> Side {
        if ply > POINTS {
            super::alternating_mover(ply - POINTS).opponent()
        } else {
            super::alternating_mover(ply)
        }
    }

    /// 100 per stone more than the opponent, 10 per 2×2 square of own stones more.
    fn heuristic(&self, side: Side) -> i64 {
        let squares = |s: Side| -> i64 {
            let mut n = 0;
            for row in 0..SIZE - 1 {
                for col in 0..SIZE - 1 {
                    let corners = [(0, 0), (1, 0), (0, 1), (1, 1)];
                    if corners
                        .iter()
                        .all(|&(dc, dr)| self.stone_at(Point::new(col + dc, row + dr)) == Some(s))
                    {
                        n += 1;
                    }
                }
            }
            n
        };
        let them = side.opponent();
        100 * (i64::from(self.stone_count(side)) - i64::from(self.stone_count(them)))
            + 10 * (squares(side) - squares(them))
    }

    /// Every legal move, except that a move forming squares appears once, with distinct enemy
    /// stones chosen as its victims by `pick` (from the enemy stones top row first, left to
    /// right), instead of once per victim set.
    fn sample_moves(&self, pick: &mut dyn FnMut(usize) -> usize) -> Vec<Move> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        if self.phase == Phase::Placement {
            return self.placements().into_iter().map(Move::Place).collect();
        }
        let enemy = self.to_move.opponent();
        let enemy_points: Vec<Point> = (0..SIZE)
            .rev()
            .flat_map(|row| (0..SIZE).map(move |col| Point::new(col, row)))
            .filter(|&p| self.stone_at(p) == Some(enemy))
            .collect();
        let mut moves = Vec::new();
        let _ = self.for_each_action(&mut |action, _, squares| {
            let need = squares.removes;
            if need == 0 {
                moves.push(action.with_victims(Victims::none()));
                return ControlFlow::Continue(());
            }
            // Partial Fisher-Yates: `need` distinct enemy stones.
            let mut pool = enemy_points.clone();
            let taken = need.min(pool.len());
            for k in 0..taken {
                let j = k + pick(pool.len() - k).min(pool.len() - k - 1);
                pool.swap(k, j);
            }
            let mv = action.with_victims(Victims::new(pool.into_iter().take(taken)));
            if self.check_move(&mv).is_ok() {
                moves.push(mv);
            }
            ControlFlow::Continue(())
        });
        moves
    }

    /// The empty board in the placement phase, White (`x`, first) to place.
    fn start(options: &Options) -> Self {
        Jiu::from_parts(options, [None; POINTS], Phase::Placement, Side::First, 0)
    }

    fn options(&self) -> &Options {
        &self.options
    }

    fn from_position_text(text: &str, options: &Options) -> Result<Self, ParsePositionError> {
        text::parse_position(text, options)
    }

    fn position_text(&self) -> String {
        text::position_text(self)
    }

    fn parse_move(text: &str) -> Result<Move, ParseMoveError> {
        text::parse_move(text)
    }

    /// In the placement phase the sides alternate; the battle starts with Black (second), which
    /// made the last placement, so Black moves twice in a row there.
    fn turn(&self) -> Side {
        self.to_move
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Every complete legal move: each placement; each step or fly; each jump chain and each of
    /// its prefixes (of at least two jumps while single jumps are forbidden). A move forming K
    /// squares appears once for every distinct set of min(K, enemy stones left) victims, so a
    /// move forming squares can expand to many moves (`move_listing` shows it once with `+?`).
    /// `perft` counts these complete moves.
    fn legal_moves(&self, out: &mut Vec<Move>) {
        if self.outcome.is_some() {
            return;
        }
        match self.phase {
            Phase::Placement => out.extend(self.placements().into_iter().map(Move::Place)),
            Phase::Battle => {
                let enemy = self.to_move.opponent();
                let _ = self.for_each_action(&mut |action, board, squares| {
                    if squares.removes == 0 {
                        out.push(action.with_victims(Victims::none()));
                    } else {
                        let enemies = stones_of(board, enemy);
                        for_each_subset(&enemies, squares.removes, &mut |victims| {
                            out.push(action.clone().with_victims(victims));
                        });
                    }
                    ControlFlow::Continue(())
                });
            }
        }
    }

    /// Validates without enumerating: a jump chain is walked leg by leg, the victims are checked
    /// against the squares the move forms.
    fn check_move(&self, mv: &Move) -> Result<(), IllegalMove> {
        if self.outcome.is_some() {
            return Err(IllegalMove::GameOver);
        }
        match (self.phase, mv) {
            (Phase::Placement, Move::Place(p)) => {
                let p = *p;
                if !on_board(p) {
                    return Err(IllegalMove::OffBoard {
                        col: p.col,
                        row: p.row,
                    });
                }
                if stone(&self.board, p).is_some() {
                    return Err(IllegalMove::Occupied(p));
                }
                if self.total_stones() < 2 && !CENTRE.contains(&p) {
                    let allowed: Vec<String> =
                        self.placements().iter().map(|q| q.to_string()).collect();
                    return Err(IllegalMove::ForcedOpening {
                        allowed: allowed.join(" or "),
                    });
                }
                Ok(())
            }
            (Phase::Battle, Move::Shift { from, to, victims }) => {
                let (board, end, jumped) = self.check_action(*from, ActionRef::Shift(*to))?;
                self.check_victims(&board, end, jumped, victims)
            }
            (
                Phase::Battle,
                Move::Jump {
                    from,
                    landings,
                    victims,
                },
            ) => {
                let (board, end, jumped) = self.check_action(*from, ActionRef::Jump(landings))?;
                self.check_victims(&board, end, jumped, victims)
            }
            (phase, _) => Err(IllegalMove::WrongPhase { phase }),
        }
    }

    fn play_unchecked(&mut self, mv: &Move) {
        let me = self.to_move;
        match mv {
            Move::Place(p) => {
                if stone(&self.board, *p).is_none() && on_board(*p) {
                    put(&mut self.board, *p, Some(me));
                    self.counts[me.index()] += 1;
                }
                if self.total_stones() as usize >= POINTS {
                    for p in CENTRE {
                        self.remove(p);
                    }
                    self.phase = Phase::Battle;
                    self.quiet = 0;
                    // Black placed last and moves first in battle.
                    self.to_move = Side::Second;
                } else {
                    self.to_move = me.opponent();
                }
            }
            Move::Shift { from, to, victims } => {
                self.play_battle(*from, ActionRef::Shift(*to), victims)
            }
            Move::Jump {
                from,
                landings,
                victims,
            } => self.play_battle(*from, ActionRef::Jump(landings), victims),
        }
        self.outcome = self.derive_outcome();
    }

    /// One entry per action: a move forming K squares is listed once with K `+?` suffixes, one
    /// per square (docs/rules.md; the move itself names min(K, enemy stones left) victims);
    /// other moves plainly.
    fn move_listing(&self) -> Vec<String> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        match self.phase {
            Phase::Placement => self.placements().iter().map(|p| p.to_string()).collect(),
            Phase::Battle => {
                let mut lines = Vec::new();
                let _ = self.for_each_action(&mut |action, _, squares| {
                    let mut text = action.with_victims(Victims::none()).to_string();
                    text.push_str(&"+?".repeat(squares.formed));
                    lines.push(text);
                    ControlFlow::Continue(())
                });
                lines
            }
        }
    }

    /// One entry per action, as `move_listing`: a move forming squares carries how many
    /// victims it must name (min(squares, enemy stones left): `remove` counts the stones it
    /// actually removes, which is fewer than `move_listing`'s `+?` when fewer enemy stones are
    /// left than squares formed) and the enemy stones left after it (any of them may be named).
    /// The victim sets are never enumerated.
    fn move_choices(&self, budget: usize) -> Result<Vec<MoveChoice>, ListingTooLarge> {
        if self.outcome.is_some() {
            return Ok(Vec::new());
        }
        if self.phase == Phase::Placement {
            return Ok(self
                .placements()
                .iter()
                .map(|p| MoveChoice::plain(p.to_string()))
                .collect());
        }
        let enemy = self.to_move.opponent();
        let mut choices = Vec::new();
        let mut spent = 0usize;
        let flow = self.for_each_action(&mut |action, board, squares| {
            let text = action.with_victims(Victims::none()).to_string();
            let need = squares.removes;
            let removable = if need == 0 {
                Vec::new()
            } else {
                stones_of(board, enemy)
            };
            spent = spent.saturating_add(1 + removable.len());
            if spent > budget {
                return ControlFlow::Break(());
            }
            choices.push(MoveChoice {
                text,
                remove: need,
                removable,
            });
            ControlFlow::Continue(())
        });
        if flow.is_break() {
            return Err(ListingTooLarge { budget });
        }
        Ok(choices)
    }
}

//! The `jiu` engine for Tibetan Jiu: formation-scored placement after the seed paper (triangle,
//! trinity, twain, contrast and square formations; defence before attack before connection) and
//! an iterative-deepening alpha-beta battle search with quiescence on captures, evaluating
//! Eva = move + kill + triple + square + material. Moves are generated as shapes (step, fly,
//! jump chain) on a padded board; square-capture victims are picked by a danger heuristic rather
//! than enumerated, so a move forming squares is one move, not one per victim set.

mod bits;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use serde::Deserialize;

use super::level::{self, Level, Noise, FULL_STRENGTH};
use super::options::{self, Whole};
use super::tt::{Bound, Replacement, TranspositionTable};
use super::{Engine, EngineError, EngineInfo, EngineOption, SearchRequest};
use crate::game::jiu::{Jiu, Move, Phase, Victims, CENTRE, FEW_STONES, FLYING_STONES};
use crate::game::{GameId, Point, Rules, Side};
use crate::hash::splitmix64;
use bits::{Bits, ON_BOARD};

pub const INFO: EngineInfo = EngineInfo {
    id: "jiu",
    games: &[GameId::Jiu],
    about: "Tibetan Jiu: formation-scored placement (defence > attack > connection), alpha-beta battle search with captures first",
    options: &[
        EngineOption {
            name: "time_ms",
            default: "0",
            about: "cap on the think time per move in ms (0: only the clock's budget)",
        },
        EngineOption {
            name: "depth",
            default: "32",
            about: "maximum battle search depth in plies (iterative deepening stops sooner on time)",
        },
        EngineOption {
            name: "level",
            default: "38",
            about: "strength 1-38, each level's limits (battle depth in plies; time cap; share of \
                    random moves, placement included); depth and time_ms given beside it win",
        },
    ],
    levels: Some(LEVELS),
};

/// The `level` option's rows, weakest first (measured against each other in docs/engines.md,
/// "Levels"). Over a game of some 200 moves a side each random move costs so much that every
/// few per cent of them is a level: levels 1-33 are depth 1 with a share of random moves
/// falling from 99% (about 75% against `random`; 1-2 per cent a step near the top, 3-6 lower
/// down) to none. Depth 2 wins about 90% against depth 1, so depth 2 with 3% random moves
/// stands between them; depths 3 and 4 win 70-75% against the depth below.
pub const LEVELS: &[Level] = &[
    Level::limited(1, 100, 99),
    Level::limited(1, 100, 98),
    Level::limited(1, 100, 97),
    Level::limited(1, 100, 96),
    Level::limited(1, 100, 95),
    Level::limited(1, 100, 93),
    Level::limited(1, 100, 92),
    Level::limited(1, 100, 90),
    Level::limited(1, 100, 88),
    Level::limited(1, 100, 85),
    Level::limited(1, 100, 82),
    Level::limited(1, 100, 79),
    Level::limited(1, 100, 76),
    Level::limited(1, 100, 73),
    Level::limited(1, 100, 70),
    Level::limited(1, 100, 67),
    Level::limited(1, 100, 64),
    Level::limited(1, 100, 61),
    Level::limited(1, 100, 58),
    Level::limited(1, 100, 55),
    Level::limited(1, 100, 52),
    Level::limited(1, 100, 49),
    Level::limited(1, 100, 45),
    Level::limited(1, 100, 40),
    Level::limited(1, 100, 37),
    Level::limited(1, 100, 33),
    Level::limited(1, 100, 29),
    Level::limited(1, 100, 24),
    Level::limited(1, 100, 20),
    Level::limited(1, 100, 15),
    Level::limited(1, 100, 10),
    Level::limited(1, 100, 4),
    Level::limited(1, 100, 0),
    Level::limited(2, 100, 3),
    Level::limited(2, 100, 0),
    Level::limited(3, 200, 0),
    Level::limited(4, 1000, 0),
    FULL_STRENGTH,
];

// ---------------------------------------------------------------------------------------------
// The padded board: 16×16 cells, the 14×14 points inside a ring of walls. Cell indices are u8,
// so indexing a [_; 256] array can never go out of bounds; neighbours are `wrapping_add`s.

const EMPTY: u8 = 0;
const WALL: u8 = 3;
type Cells = [u8; 256];
/// Right, left, up, down as wrapping u8 offsets.
const DIRS: [u8; 4] = [1, 255, 16, 240];
/// Corners (lowest index) of the four 2×2 windows holding a point, as offsets from it.
const WINDOW_CORNERS: [u8; 4] = [0, 255, 240, 239];
/// The four cells of the window with lowest corner `c`, as offsets from `c`.
const WINDOW_CELLS: [u8; 4] = [0, 1, 16, 17];
/// Fly moves kept per node in search: the best destinations and the cheapest stones to move.
const FLY_TARGETS: usize = 10;
const FLY_SOURCES: usize = 4;
/// Jump moves kept per node (chains can multiply in open positions).
const MAX_JUMPS: usize = 400;
const WIN: i32 = 1_000_000;
const INF: i32 = 2_000_000;
/// Plies of captures-only search at the leaves.
const QUIESCENCE_PLIES: u32 = 4;
/// Victim choices the root search compares for each move forming squares.
const ROOT_VICTIM_CHOICES: usize = 3;
/// Captures tried per quiescence node, best ordered first.
const QUIESCENCE_WIDTH: usize = 6;

fn colour(side: Side) -> u8 {
    match side {
        Side::First => 1,
        Side::Second => 2,
    }
}

fn cell_of(p: Point) -> u8 {
    ((u16::from(p.row) + 1) * 16 + u16::from(p.col) + 1) as u8
}

fn point_of(cell: u8) -> Point {
    Point::new((cell % 16).wrapping_sub(1), (cell / 16).wrapping_sub(1))
}

fn at(cells: &Cells, cell: u8) -> u8 {
    cells[usize::from(cell)]
}

fn set(cells: &mut Cells, cell: u8, value: u8) {
    cells[usize::from(cell)] = value;
}

/// Every point of the board as a cell index.
fn points() -> impl Iterator<Item = u8> {
    (1u8..=14).flat_map(|r| (1u8..=14).map(move |c| r * 16 + c))
}

/// Stones of each colour (index 0: empty, 1, 2, 3: wall) in the window with lowest corner `c`.
fn window_counts(cells: &Cells, c: u8) -> [u8; 4] {
    let mut n = [0u8; 4];
    for o in WINDOW_CELLS {
        n[usize::from(at(cells, c.wrapping_add(o)) & 3)] += 1;
    }
    n
}

/// The 2×2 squares entirely of `who` that contain `p`.
fn squares_at(cells: &Cells, p: u8, who: u8) -> usize {
    WINDOW_CORNERS
        .iter()
        .filter(|&&o| {
            let c = p.wrapping_add(o);
            WINDOW_CELLS
                .iter()
                .all(|&w| at(cells, c.wrapping_add(w)) == who)
        })
        .count()
}

/// Zobrist keys per cell and colour (1 and 2), from a fixed splitmix64 stream.
const ZOBRIST: [[u64; 2]; 256] = zobrist_keys();
const SIDE_KEY: u64 = 0x9e37_79b9_7f4a_7c15;
/// Mixed in, times the plies left, when the no-capture limit is this close.
const QUIET_KEY: u64 = 0xd6e8_feb8_6659_fd93;
const QUIET_HORIZON: u32 = 16;

const fn zobrist_keys() -> [[u64; 2]; 256] {
    let mut keys = [[0u64; 2]; 256];
    let mut state: u64 = 0x243f_6a88_85a3_08d3;
    let mut i = 0;
    while i < 512 {
        keys[i / 2][i % 2] = splitmix64(state);
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        i += 1;
    }
    keys
}

/// The key of `who`'s stone on `cell`.
fn stone_key(cell: u8, who: u8) -> u64 {
    let keys = &ZOBRIST[usize::from(cell)];
    if who == 1 {
        keys[0]
    } else {
        keys[1]
    }
}

/// The rule options the search needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    no_capture_limit: u32,
    flying_single_jump: bool,
}

/// A position on the padded board.
#[derive(Clone, Copy, PartialEq, Eq)]
struct State {
    cells: Cells,
    /// Stones per colour (index 1 and 2).
    counts: [u32; 3],
    to_move: u8,
    quiet: u32,
    /// Zobrist hash of the stones and the side to move.
    hash: u64,
    /// The cells of each colour's stones (index 0: colour 1, index 1: colour 2), kept with
    /// `cells` for the evaluation.
    stones: [Bits; 2],
}

impl State {
    fn from_jiu(position: &Jiu) -> State {
        let mut cells = [WALL; 256];
        let mut counts = [0u32; 3];
        let mut stones = [Bits::default(); 2];
        for cell in points() {
            let value = position.stone_at(point_of(cell)).map_or(EMPTY, colour);
            set(&mut cells, cell, value);
            if value != EMPTY {
                counts[usize::from(value).min(2)] += 1;
                stones[usize::from(value == 2)].toggle(cell);
            }
        }
        let to_move = colour(position.turn());
        let mut hash = if to_move == 2 { SIDE_KEY } else { 0 };
        for cell in points() {
            let who = at(&cells, cell);
            if who != EMPTY {
                hash ^= stone_key(cell, who);
            }
        }
        State {
            cells,
            counts,
            to_move,
            quiet: position.quiet_plies(),
            hash,
            stones,
        }
    }

    /// The transposition key: the hash, plus the plies left before the no-capture limit when
    /// that is near (it changes the result).
    fn key(&self, limits: &Limits) -> u64 {
        let left = limits.no_capture_limit.saturating_sub(self.quiet);
        if left <= QUIET_HORIZON {
            self.hash ^ QUIET_KEY.wrapping_mul(u64::from(left) + 1)
        } else {
            self.hash
        }
    }

    fn count(&self, who: u8) -> u32 {
        self.counts[usize::from(who).min(2)]
    }

    fn can_fly(&self, who: u8) -> bool {
        self.count(who) <= FLYING_STONES
    }

    fn single_jump_allowed(&self, limits: &Limits) -> bool {
        limits.flying_single_jump
            || (self.count(1) > FLYING_STONES && self.count(2) > FLYING_STONES)
    }

    /// Plays `m` (generated for this position), choosing its square victims now if the
    /// generator left them to be chosen. Returns the victims removed.
    fn apply(&mut self, m: &BMove) -> Vec<u8> {
        let me = self.to_move;
        let op = 3 - me;
        let mut captured = 0;
        set(&mut self.cells, m.from, EMPTY);
        self.hash ^= stone_key(m.from, me) ^ stone_key(m.to, me) ^ SIDE_KEY;
        let (mine, theirs) = (usize::from(me == 2), usize::from(op == 2));
        self.stones[mine].toggle(m.from);
        self.stones[mine].toggle(m.to);
        let mut here = m.from;
        for &land in &m.jumps {
            let over = ((u16::from(here) + u16::from(land)) / 2) as u8;
            if at(&self.cells, over) == op {
                set(&mut self.cells, over, EMPTY);
                self.hash ^= stone_key(over, op);
                self.stones[theirs].toggle(over);
                captured += 1;
            }
            here = land;
        }
        set(&mut self.cells, m.to, me);
        let victims = if m.victims.len() == usize::from(m.need) {
            m.victims.clone()
        } else {
            choose_victims(&self.cells, me, usize::from(m.need))
        };
        for &v in &victims {
            if at(&self.cells, v) == op {
                set(&mut self.cells, v, EMPTY);
                self.hash ^= stone_key(v, op);
                self.stones[theirs].toggle(v);
                captured += 1;
            }
        }
        let oi = usize::from(op);
        self.counts[oi] = self.counts[oi].saturating_sub(captured);
        self.quiet = if captured > 0 {
            0
        } else {
            self.quiet.saturating_add(1)
        };
        self.to_move = op;
        victims
    }

    /// The game result for the side to move if the game is over (few stones, then the
    /// no-capture limit), scored for that side; `no_moves` is found by the move generator.
    fn terminal(&self, limits: &Limits, ply: i32) -> Option<i32> {
        let me = self.to_move;
        let op = 3 - me;
        if self.count(me) <= FEW_STONES {
            return Some(-(WIN - ply));
        }
        if self.quiet >= limits.no_capture_limit {
            return Some(match self.count(me).cmp(&self.count(op)) {
                std::cmp::Ordering::Greater => WIN - ply,
                std::cmp::Ordering::Less => -(WIN - ply),
                std::cmp::Ordering::Equal => 0,
            });
        }
        None
    }
}

/// A battle move as the search sees it: the moving stone, where it ends, the jump landings
/// (empty for a step or fly) and the square victims.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BMove {
    from: u8,
    to: u8,
    jumps: Vec<u8>,
    /// The square victims; left empty by the search's generator and chosen when the move is
    /// played (most generated moves are never played).
    victims: Vec<u8>,
    /// How many victims the move must name: min(squares formed, enemy stones left).
    need: u8,
    /// Move-ordering score: captures first.
    order: i32,
}

impl BMove {
    fn captures(&self) -> usize {
        self.jumps.len() + usize::from(self.need)
    }

    /// A compact identity for the transposition table and killer slots (never 0).
    fn id(&self) -> u32 {
        u32::from(self.from)
            | u32::from(self.to) << 8
            | (self.jumps.len().min(127) as u32) << 16
            | 1 << 24
    }

    fn to_move(&self) -> Move {
        let victims = Victims::new(self.victims.iter().map(|&v| point_of(v)));
        if self.jumps.is_empty() {
            Move::Shift {
                from: point_of(self.from),
                to: point_of(self.to),
                victims,
            }
        } else {
            Move::Jump {
                from: point_of(self.from),
                landings: self.jumps.iter().map(|&l| point_of(l)).collect(),
                victims,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Square victims

/// How much harm the enemy stone on `e` does to `me` (higher: remove it first), on the board
/// after the move that formed the square.
fn victim_danger(cells: &Cells, e: u8, me: u8) -> i32 {
    let enemy = 3 - me;
    let mut score = 0;
    for o in WINDOW_CORNERS {
        let n = window_counts(cells, e.wrapping_add(o));
        let (mine, theirs, empty) = (n[usize::from(me)], n[usize::from(enemy)], n[0]);
        if n[3] > 0 {
            continue;
        }
        if mine == 0 {
            score += match (theirs, empty) {
                (4, _) => 30,
                (3, 1) => 60,
                (2, 2) => 6,
                _ => 0,
            };
        }
        if mine == 3 && theirs == 1 {
            // Removing it leaves our near-square with a hole to fill.
            score += 25;
        }
    }
    for d in DIRS {
        let n1 = at(cells, e.wrapping_add(d));
        let n2 = at(cells, e.wrapping_add(d).wrapping_add(d));
        let back = at(cells, e.wrapping_sub(d));
        if n1 == me && n2 == EMPTY {
            score += 25; // it can jump one of ours
        }
        if n1 == enemy && n2 == me {
            score += 15; // its point becomes a landing for our jump
        }
        if n1 == me && n2 == enemy {
            score -= 15; // its point becomes a landing for their jump
        }
        if back == me && n1 == EMPTY {
            score -= 10; // we can jump it anyway
        }
    }
    score
}

/// The `need` enemy stones to remove after a move that left `cells`: the most dangerous ones.
fn choose_victims(cells: &Cells, me: u8, need: usize) -> Vec<u8> {
    if need == 0 {
        return Vec::new();
    }
    let enemy = 3 - me;
    let mut scored: Vec<(i32, u8)> = points()
        .filter(|&p| at(cells, p) == enemy)
        .map(|p| (victim_danger(cells, p, me), p))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(need).map(|(_, p)| p).collect()
}

/// `m` with its victims named: the most dangerous enemy stones, and (when `choices` > 1) the
/// same move with the last victim replaced by each of the next most dangerous, so that the
/// root search, not only the heuristic, picks among them.
fn victim_alternatives(st: &State, m: &BMove, choices: usize) -> Vec<BMove> {
    let need = usize::from(m.need);
    if need == 0 {
        return vec![m.clone()];
    }
    let me = st.to_move;
    let mut cells = st.cells;
    set(&mut cells, m.from, EMPTY);
    let mut here = m.from;
    for &land in &m.jumps {
        set(
            &mut cells,
            ((u16::from(here) + u16::from(land)) / 2) as u8,
            EMPTY,
        );
        here = land;
    }
    set(&mut cells, m.to, me);
    let ranked = choose_victims(&cells, me, need + choices.saturating_sub(1));
    let base: Vec<u8> = ranked.iter().copied().take(need).collect();
    let mut out = vec![BMove {
        victims: base.clone(),
        ..m.clone()
    }];
    for (i, &other) in ranked.iter().enumerate().skip(need) {
        let mut victims = base.clone();
        if let Some(last) = victims.last_mut() {
            *last = other;
        }
        out.push(BMove {
            victims,
            order: m.order - i as i32,
            ..m.clone()
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Move generation

/// The victims as generated: chosen at once for `GenMode::All` (complete moves), left for
/// `State::apply` to choose otherwise.
fn eager_victims(cells: &Cells, me: u8, need: usize, mode: GenMode) -> Vec<u8> {
    if mode == GenMode::All {
        choose_victims(cells, me, need)
    } else {
        Vec::new()
    }
}

/// Which moves to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GenMode {
    /// Every shape (all flies): for checks against the rules.
    All,
    /// Every step and jump; only promising flies.
    Search,
    /// Jumps and square-forming moves only (quiescence).
    Captures,
}

/// Pushes the moves of the side to move in `st`.
fn generate(st: &State, limits: &Limits, mode: GenMode, out: &mut Vec<BMove>) {
    let me = st.to_move;
    let op = 3 - me;
    let enemies = st.count(op) as usize;
    let min_chain = if st.single_jump_allowed(limits) { 1 } else { 2 };
    let mut cells = st.cells;
    let jump_cap = if mode == GenMode::All {
        usize::MAX
    } else {
        out.len() + MAX_JUMPS
    };
    let own = st.stones[usize::from(me == 2)];
    let enemy = st.stones[usize::from(op == 2)];
    let empty = ON_BOARD & !(own | enemy);
    // Only a stone with an enemy next to it and an empty point beyond can start a chain.
    let jumpers = DIRS
        .iter()
        .map(|&d| enemy.at_offset(d) & empty.at_offset(d.wrapping_mul(2)))
        .fold(Bits::default(), |acc, b| acc | b)
        & own;
    let mut visited = [false; 256];
    for s in jumpers.cells() {
        set(&mut cells, s, EMPTY);
        visited[usize::from(s)] = true;
        let mut chain = JumpChain {
            cells: &mut cells,
            visited: &mut visited,
            landings: Vec::new(),
            from: s,
            me,
            enemies,
            min_chain,
            cap: jump_cap,
            mode,
        };
        chain.search(s, out);
        visited[usize::from(s)] = false;
        set(&mut cells, s, me);
    }
    if st.can_fly(me) {
        generate_flies(st, mode, out);
        return;
    }
    // A step forms a square only on the hole of a window holding three own stones.
    let targets = if mode == GenMode::Captures {
        triple_holes(own, empty)
    } else {
        empty
    };
    for s in own.cells() {
        for d in DIRS {
            let t = s.wrapping_add(d);
            if !targets.contains(t) {
                continue;
            }
            push_shift(&mut cells, s, t, me, enemies, mode, out);
        }
    }
}

/// The empty points that complete a window of three `own` stones.
fn triple_holes(own: Bits, empty: Bits) -> Bits {
    let mut holes = Bits::default();
    // For each of the four windows holding a point: its other three cells, as offsets from
    // the point, all own.
    for corner in WINDOW_CORNERS {
        holes = holes
            | WINDOW_CELLS
                .iter()
                .map(|&w| corner.wrapping_add(w))
                .filter(|&offset| offset != 0)
                .fold(!Bits::default(), |acc, offset| acc & own.at_offset(offset));
    }
    holes & empty
}

/// Pushes the shift `s`-`t` (unless `mode` wants captures only and it forms no square).
fn push_shift(
    cells: &mut Cells,
    s: u8,
    t: u8,
    me: u8,
    enemies: usize,
    mode: GenMode,
    out: &mut Vec<BMove>,
) {
    set(cells, s, EMPTY);
    set(cells, t, me);
    let need = squares_at(cells, t, me).min(enemies);
    if need > 0 || mode != GenMode::Captures {
        out.push(BMove {
            from: s,
            to: t,
            jumps: Vec::new(),
            victims: eager_victims(cells, me, need, mode),
            need: need as u8,
            order: 1000 * need as i32,
        });
    }
    set(cells, t, EMPTY);
    set(cells, s, me);
}

/// The flies of a side with 14 or fewer stones: all of them in `GenMode::All`, otherwise the
/// best few destinations (forming or blocking squares, threatening jumps, safe) from the stones
/// cheapest to move.
fn generate_flies(st: &State, mode: GenMode, out: &mut Vec<BMove>) {
    let me = st.to_move;
    let op = 3 - me;
    let enemies = st.count(op) as usize;
    let mut cells = st.cells;
    let empties: Vec<u8> = points().filter(|&p| at(&cells, p) == EMPTY).collect();
    let stones: Vec<u8> = points().filter(|&p| at(&cells, p) == me).collect();
    if mode == GenMode::All {
        for &s in &stones {
            for &t in &empties {
                push_shift(&mut cells, s, t, me, enemies, mode, out);
            }
        }
        return;
    }
    let mut targets: Vec<(i32, u8)> = empties
        .iter()
        .map(|&t| (fly_target_score(&cells, t, me), t))
        .filter(|&(score, _)| mode != GenMode::Captures || score >= 1000)
        .collect();
    targets.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let keep = targets
        .iter()
        .take_while(|(score, _)| *score >= 400)
        .count()
        .max(FLY_TARGETS);
    targets.truncate(keep);
    let mut sources: Vec<(i32, u8)> = stones
        .iter()
        .map(|&s| (leave_cost(&cells, s, me), s))
        .collect();
    sources.sort();
    for &(_, t) in &targets {
        let mut used = 0;
        for &(_, s) in &sources {
            if used >= FLY_SOURCES {
                break;
            }
            // A stone sharing a window with the target would break what it builds there.
            if WINDOW_CORNERS.iter().any(|&o| {
                let c = t.wrapping_add(o);
                WINDOW_CELLS.iter().any(|&w| c.wrapping_add(w) == s)
            }) {
                continue;
            }
            used += 1;
            push_shift(&mut cells, s, t, me, enemies, mode, out);
        }
    }
}

/// How good an empty point `t` is to fly to for `me`.
fn fly_target_score(cells: &Cells, t: u8, me: u8) -> i32 {
    let op = 3 - me;
    let mut score = 0;
    for o in WINDOW_CORNERS {
        let n = window_counts(cells, t.wrapping_add(o));
        if n[3] > 0 {
            continue;
        }
        let (mine, theirs) = (n[usize::from(me)], n[usize::from(op)]);
        score += match (mine, theirs) {
            (3, 0) => 1000,
            (0, 3) => 400,
            (2, 0) => 40,
            (0, 2) => 15,
            (1, 0) => 5,
            _ => 0,
        };
    }
    for d in DIRS {
        let n1 = at(cells, t.wrapping_add(d));
        let beyond = at(cells, t.wrapping_add(d).wrapping_add(d));
        let back = at(cells, t.wrapping_sub(d));
        if n1 == op && beyond == EMPTY {
            score += 30; // threatens a jump
        }
        if n1 == op && back == EMPTY {
            score -= 60; // could be jumped there
        }
    }
    score
}

/// How much `me` loses by moving the stone on `s` away (lower: move it first).
fn leave_cost(cells: &Cells, s: u8, me: u8) -> i32 {
    let op = 3 - me;
    let mut cost = 0;
    for o in WINDOW_CORNERS {
        let n = window_counts(cells, s.wrapping_add(o));
        if n[3] > 0 || n[usize::from(op)] > 0 {
            continue;
        }
        cost += match n[usize::from(me)] {
            4 => 40,
            3 => 30,
            2 => 8,
            _ => 0,
        };
    }
    for d in DIRS {
        if at(cells, s.wrapping_add(d)) == op && at(cells, s.wrapping_sub(d)) == EMPTY {
            cost -= 50; // under attack: moving it saves it
        }
    }
    cost
}

/// The state of one depth-first search of jump chains from one stone.
struct JumpChain<'a> {
    cells: &'a mut Cells,
    visited: &'a mut [bool; 256],
    landings: Vec<u8>,
    from: u8,
    me: u8,
    enemies: usize,
    min_chain: usize,
    cap: usize,
    mode: GenMode,
}

impl JumpChain<'_> {
    fn search(&mut self, here: u8, out: &mut Vec<BMove>) {
        let op = 3 - self.me;
        for d in DIRS {
            if out.len() >= self.cap {
                return;
            }
            let over = here.wrapping_add(d);
            if at(self.cells, over) != op {
                continue;
            }
            let land = over.wrapping_add(d);
            if at(self.cells, land) != EMPTY || self.visited[usize::from(land)] {
                continue;
            }
            set(self.cells, over, EMPTY);
            self.visited[usize::from(land)] = true;
            self.landings.push(land);
            if self.landings.len() >= self.min_chain {
                set(self.cells, land, self.me);
                let left = self.enemies.saturating_sub(self.landings.len());
                let need = squares_at(self.cells, land, self.me).min(left);
                out.push(BMove {
                    from: self.from,
                    to: land,
                    jumps: self.landings.clone(),
                    victims: eager_victims(self.cells, self.me, need, self.mode),
                    need: need as u8,
                    order: 1000 * (self.landings.len() + need) as i32,
                });
                set(self.cells, land, EMPTY);
            }
            self.search(land, out);
            self.landings.pop();
            self.visited[usize::from(land)] = false;
            set(self.cells, over, op);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation: Eva = move + kill + triple + square (the paper's terms) + material.

/// What the evaluation counts for one colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Features {
    /// Full 2×2 squares.
    square: i32,
    /// Windows of 3 stones and an empty hole that a stone can close: an own stone next to
    /// the hole outside the window, or any hole when the colour flies.
    closable: i32,
    /// The other windows of 3 stones and an empty hole.
    near: i32,
    /// Windows of 2 stones and 2 empty points.
    two: i32,
    /// Empty points next to a stone, counted once per stone.
    mobility: i32,
    /// Single-jump threats: an own stone, an enemy stone next to it, the point beyond empty.
    kill: i32,
}

/// For each cell of a window (in `WINDOW_CELLS` order), its two neighbours outside the
/// window, as offsets from the window's lowest corner: a stone there can move into it.
const OUTSIDE_NEIGHBOURS: [[i32; 2]; 4] = [[-1, -16], [2, -15], [15, 32], [18, 33]];
/// The ways to split a window's four cells into two stones and two empty points.
const TWO_AND_TWO: [([usize; 2], [usize; 2]); 6] = [
    ([0, 1], [2, 3]),
    ([0, 2], [1, 3]),
    ([0, 3], [1, 2]),
    ([1, 2], [0, 3]),
    ([1, 3], [0, 2]),
    ([2, 3], [0, 1]),
];

/// `bits` moved by a signed cell offset: cell `c` of the result is cell `c + offset`.
fn shifted(bits: Bits, offset: i32) -> Bits {
    if offset >= 0 {
        bits.ahead(offset.unsigned_abs())
    } else {
        bits.behind(offset.unsigned_abs())
    }
}

/// Counts `own`'s features, every window and stone at once. A window is named by its lowest
/// corner; windows reaching into the ring of walls never count (a wall is neither a stone nor
/// empty).
fn features(own: Bits, enemy: Bits, empty: Bits, flies: bool) -> Features {
    let window = |bits: Bits| WINDOW_CELLS.map(|o| bits.at_offset(o));
    let o = window(own);
    let e = window(empty);
    let square = (o[0] & o[1] & o[2] & o[3]).count();
    let mut closable = 0;
    let mut near = 0;
    for (hole, outside) in OUTSIDE_NEIGHBOURS.iter().enumerate() {
        let three = (0..4)
            .filter(|&cell| cell != hole)
            .fold(e[hole], |acc, cell| acc & o[cell]);
        let close = if flies {
            three
        } else {
            let [a, b] = outside.map(|offset| shifted(own, offset));
            three & (a | b)
        };
        closable += close.count();
        near += three.count() - close.count();
    }
    let two = TWO_AND_TWO
        .iter()
        .map(|&([i, j], [k, l])| (o[i] & o[j] & e[k] & e[l]).count())
        .sum();
    let mut mobility = 0;
    let mut kill = 0;
    for d in DIRS {
        let next = |bits: Bits| bits.at_offset(d);
        mobility += (own & next(empty)).count();
        kill += (own & next(enemy) & next(next(empty))).count();
    }
    Features {
        square,
        closable,
        near,
        two,
        mobility,
        kill,
    }
}

/// A static score of `st` for the side to move.
fn evaluate(st: &State, limits: &Limits) -> i32 {
    let me = st.to_move;
    let op = 3 - me;
    let single = st.single_jump_allowed(limits);
    let mine = st.stones[usize::from(me == 2)];
    let theirs = st.stones[usize::from(op == 2)];
    let empty = ON_BOARD & !(mine | theirs);
    let (fly_m, fly_o) = (st.can_fly(me), st.can_fly(op));
    let m = features(mine, theirs, empty, fly_m);
    let o = features(theirs, mine, empty, fly_o);
    let material = 100 * (st.count(me) as i32 - st.count(op) as i32);
    let squares = 12 * (m.square - o.square);
    let triple = 30 * m.closable.min(2) - (70 * o.closable.min(1) + 30 * (o.closable - 1).max(0))
        + 8 * (m.near - o.near)
        + 2 * (m.two - o.two);
    let kill_weight = if single { 1 } else { 0 };
    let kill_score =
        kill_weight * (20 * m.kill.min(3) - (35 * o.kill.min(1) + 10 * (o.kill - 1).clamp(0, 3)));
    let moves =
        if fly_m { 0 } else { m.mobility.min(40) } - if fly_o { 0 } else { o.mobility.min(40) };
    material + squares + triple + kill_score + moves
}

// ---------------------------------------------------------------------------------------------
// Search

/// Transposition-table memory: 2^18 entries of 24 bytes.
const TT_MIB: u64 = 6;
/// Killer-move slots are kept for this many plies.
const KILLER_PLIES: usize = 64;

/// The search's memory, kept by the engine across moves.
#[derive(Debug)]
struct Tables {
    tt: TranspositionTable<u32>,
    killers: [[u32; 2]; KILLER_PLIES],
}

impl Tables {
    /// The tables, allocated now rather than on the clock at the first search.
    fn new() -> Tables {
        let mut tt = TranspositionTable::with_mib(TT_MIB, WIN - 1000, Replacement::NewOrDeeper);
        tt.allocate();
        Tables {
            tt,
            killers: [[0; 2]; KILLER_PLIES],
        }
    }
}

struct Searcher<'a> {
    limits: Limits,
    abort: &'a AtomicBool,
    deadline: Instant,
    nodes: u64,
    stopped: bool,
    tables: &'a mut Tables,
}

impl Searcher<'_> {
    fn out_of_time(&mut self) -> bool {
        if self.stopped {
            return true;
        }
        self.nodes += 1;
        if self.abort.load(Ordering::Relaxed)
            || (self.nodes.is_multiple_of(16) && Instant::now() >= self.deadline)
        {
            self.stopped = true;
        }
        self.stopped
    }

    fn ordered_moves(&self, st: &State, mode: GenMode) -> Vec<BMove> {
        let mut moves = Vec::new();
        generate(st, &self.limits, mode, &mut moves);
        if moves.is_empty() && mode == GenMode::Search {
            // Pruning must never make a side look stuck.
            generate(st, &self.limits, GenMode::All, &mut moves);
        }
        moves.sort_by_key(|m| std::cmp::Reverse(m.order));
        moves
    }

    fn negamax(&mut self, st: &State, depth: u32, mut alpha: i32, beta: i32, ply: i32) -> i32 {
        if self.out_of_time() {
            return 0;
        }
        if let Some(score) = st.terminal(&self.limits, ply) {
            return score;
        }
        if depth == 0 {
            return self.quiesce(st, alpha, beta, ply, QUIESCENCE_PLIES);
        }
        let key = st.key(&self.limits);
        let mut hash_move = 0;
        if let Some(hit) = self.tables.tt.probe(key, ply as u32) {
            hash_move = hit.best.unwrap_or(0);
            if let Some(score) = hit.cutoff(depth, alpha, beta) {
                return score;
            }
        }
        let mut moves = Vec::new();
        generate(st, &self.limits, GenMode::Search, &mut moves);
        if moves.is_empty() {
            // Pruning must never make a side look stuck.
            generate(st, &self.limits, GenMode::All, &mut moves);
        }
        if moves.is_empty() {
            return -(WIN - ply);
        }
        let killers = usize::try_from(ply)
            .ok()
            .and_then(|p| self.tables.killers.get(p))
            .copied()
            .unwrap_or([0; 2]);
        for m in &mut moves {
            let id = m.id();
            if id == hash_move {
                m.order += 1_000_000;
            } else if m.captures() == 0 && killers.contains(&id) {
                m.order += 500;
            }
        }
        moves.sort_by_key(|m| std::cmp::Reverse(m.order));
        let alpha_in = alpha;
        let mut best = -INF;
        let mut best_id = 0;
        for m in &moves {
            let mut child = *st;
            child.apply(m);
            let score = -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1);
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_id = m.id();
            }
            if score > alpha {
                alpha = score;
            }
            if alpha >= beta {
                if m.captures() == 0 {
                    if let Some(slot) = usize::try_from(ply)
                        .ok()
                        .and_then(|p| self.tables.killers.get_mut(p))
                    {
                        if slot[0] != m.id() {
                            slot[1] = slot[0];
                            slot[0] = m.id();
                        }
                    }
                }
                break;
            }
        }
        let bound = Bound::of(best, alpha_in, beta);
        self.tables
            .tt
            .store(key, ply as u32, depth, best, bound, Some(best_id));
        best
    }

    fn quiesce(&mut self, st: &State, mut alpha: i32, beta: i32, ply: i32, left: u32) -> i32 {
        if self.out_of_time() {
            return 0;
        }
        if let Some(score) = st.terminal(&self.limits, ply) {
            return score;
        }
        let stand = evaluate(st, &self.limits);
        if left == 0 || stand >= beta {
            return stand;
        }
        alpha = alpha.max(stand);
        let moves = self.ordered_moves(st, GenMode::Captures);
        let mut best = stand;
        for m in moves.iter().take(QUIESCENCE_WIDTH) {
            // Delta pruning: even winning every stone it takes cannot lift this above alpha.
            if stand + 100 * m.captures() as i32 + 200 <= alpha {
                continue;
            }
            let mut child = *st;
            child.apply(m);
            let score = -self.quiesce(&child, -beta, -alpha, ply + 1, left - 1);
            if self.stopped {
                return 0;
            }
            best = best.max(score);
            alpha = alpha.max(score);
            if alpha >= beta {
                break;
            }
        }
        best
    }

    /// Iterative deepening at the root. Returns the best move (the first generated if time runs
    /// out at once) and the depth completed.
    fn root(&mut self, st: &State, max_depth: u32, soft: Instant) -> Option<(BMove, u32)> {
        let mut moves: Vec<BMove> = self
            .ordered_moves(st, GenMode::Search)
            .iter()
            .flat_map(|m| victim_alternatives(st, m, ROOT_VICTIM_CHOICES))
            .collect();
        let mut best = moves.first()?.clone();
        if moves.len() == 1 {
            let mut after = *st;
            best.victims = after.apply(&best);
            return Some((best, 0));
        }
        let mut completed = 0;
        for depth in 1..=max_depth.max(1) {
            let mut alpha = -INF;
            let mut scores: Vec<i32> = vec![-INF; moves.len()];
            let mut iteration_best = None;
            for (i, m) in moves.iter().enumerate() {
                let mut child = *st;
                child.apply(m);
                let score = -self.negamax(&child, depth - 1, -INF, -alpha, 1);
                if self.stopped {
                    break;
                }
                if let Some(s) = scores.get_mut(i) {
                    *s = score;
                }
                if score > alpha {
                    alpha = score;
                    iteration_best = Some(i);
                }
            }
            if let Some(m) = iteration_best.and_then(|i| moves.get(i)) {
                best = m.clone();
            }
            if self.stopped {
                break;
            }
            completed = depth;
            // Best first, the rest by this iteration's scores.
            let mut order: Vec<(i32, BMove)> = scores.into_iter().zip(moves).collect();
            order.sort_by_key(|entry| std::cmp::Reverse(entry.0));
            moves = order.into_iter().map(|(_, m)| m).collect();
            if alpha.abs() >= WIN - 1000 || Instant::now() >= soft {
                break;
            }
        }
        if best.victims.len() != usize::from(best.need) {
            let mut after = *st;
            best.victims = after.apply(&best);
        }
        Some((best, completed))
    }
}

// ---------------------------------------------------------------------------------------------
// Placement: formation scores after the paper.

/// Points next to the centre points (which are empty when battle begins) and the points from
/// which a stone could jump into them: they decide who can move first in battle.
fn centre_weight(p: u8) -> i32 {
    let centres = CENTRE.map(cell_of);
    let mut w = 0;
    for c in centres {
        for d in DIRS {
            if c.wrapping_add(d) == p {
                w += 12;
            }
            if c.wrapping_add(d).wrapping_add(d) == p {
                w += 6;
            }
        }
    }
    w
}

/// The placement score of the empty point `p` for `me`: defence (blocking the opponent's
/// windows: triangle gap 120, trinity fork 35, a third stone 25) outranks attack (completing a
/// square 100, making a triangle 30, a fork 40, twain 6), then connection and centrality.
/// Windows holding a centre point count that point as the empty it will be in battle, weighted
/// up: three stones round it make a square the first battle moves can close.
fn placement_score(cells: &Cells, p: u8, me: u8) -> i32 {
    let op = 3 - me;
    let centres = CENTRE.map(cell_of);
    let mut defence = 0;
    let mut attack = 0;
    let mut my_forks = 0;
    let mut their_forks = 0;
    for o in WINDOW_CORNERS {
        let c = p.wrapping_add(o);
        let mut n = [0i32; 4];
        let mut has_centre = false;
        for w in WINDOW_CELLS {
            let q = c.wrapping_add(w);
            if q == p {
                continue;
            }
            if centres.contains(&q) {
                has_centre = true;
                continue;
            }
            n[usize::from(at(cells, q) & 3)] += 1;
        }
        if n[3] > 0 {
            continue;
        }
        let (mine, theirs) = (n[usize::from(me)], n[usize::from(op)]);
        if has_centre {
            // Two other cells besides p and the centre.
            if theirs == 0 {
                attack += [4, 20, 150][mine.clamp(0, 2) as usize];
            }
            if mine == 0 {
                defence += [3, 25, 180][theirs.clamp(0, 2) as usize];
            }
            continue;
        }
        if theirs == 0 {
            attack += [1, 6, 30, 100][mine.clamp(0, 3) as usize];
            if mine == 2 {
                my_forks += 1;
            }
        }
        if mine == 0 {
            defence += [0, 4, 25, 120][theirs.clamp(0, 3) as usize];
            if theirs == 2 {
                their_forks += 1;
            }
        }
    }
    if my_forks >= 2 {
        attack += 40;
    }
    if their_forks >= 2 {
        defence += 35;
    }
    let mut connection = 0;
    for d in DIRS {
        if at(cells, p.wrapping_add(d)) == me {
            connection += 2;
        }
    }
    let centre = point_of(p);
    let distance = i32::from(centre.col.abs_diff(6).min(centre.col.abs_diff(7)))
        + i32::from(centre.row.abs_diff(6).min(centre.row.abs_diff(7)));
    defence + attack + connection + centre_weight(p) - distance
}

/// The placement for the side to move.
fn choose_placement(st: &State, rng: &mut SmallRng) -> Option<u8> {
    let stones = st.count(1) + st.count(2);
    let centres = CENTRE.map(cell_of);
    if stones < 2 {
        return centres.into_iter().find(|&c| at(&st.cells, c) == EMPTY);
    }
    let me = st.to_move;
    let mut best = None;
    let mut best_score = i32::MIN;
    for p in points() {
        if at(&st.cells, p) != EMPTY {
            continue;
        }
        // Noise below the smallest formation score breaks ties between equal points.
        let score = 4 * placement_score(&st.cells, p, me) + rng.gen_range(0..4);
        if score > best_score {
            best_score = score;
            best = Some(p);
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------
// The engine

/// The `jiu` engine's options as given (`INFO.options` lists them); `None`: not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct JiuOptions {
    time_ms: Option<Whole<0, { u64::MAX }>>,
    depth: Option<Whole<1, 64>>,
    level: Option<Whole<1, { LEVELS.len() as u64 }>>,
}

/// The built-in Jiu engine.
#[derive(Debug)]
pub struct JiuEngine {
    options: crate::game::jiu::Options,
    limits: Limits,
    time_ms: u64,
    depth: u32,
    rng: SmallRng,
    /// The level's random moves.
    noise: Noise,
    /// Transposition table and killers, allocated with the engine (not on the clock).
    tables: Box<Tables>,
}

impl JiuEngine {
    pub fn new(
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<JiuEngine, EngineError> {
        let given = options::parse::<JiuOptions>(options)?;
        let rule_options = crate::game::parse_options::<Jiu>(rules)?;
        let level = level::pick(LEVELS, given.level.map(Whole::get));
        let time_ms = given.time_ms.map_or(level.time_ms.unwrap_or(0), Whole::get);
        let depth = given
            .depth
            .map_or(level.depth.map_or(32, u64::from), Whole::get);
        Ok(JiuEngine {
            limits: Limits {
                no_capture_limit: rule_options.no_capture_limit.get(),
                flying_single_jump: rule_options.flying_single_jump,
            },
            options: rule_options,
            time_ms,
            depth: depth as u32,
            rng: SmallRng::seed_from_u64(seed),
            noise: Noise::new(level.noise_pct, seed),
            tables: Box::new(Tables::new()),
        })
    }

    /// Replays the moves so far from the start position.
    fn replay(&self, moves: &[String]) -> Result<Jiu, EngineError> {
        let mut position = Jiu::start(&self.options);
        for text in moves {
            let mv = Jiu::parse_move(text).map_err(crate::game::PlayError::from)?;
            position
                .check_move(&mv)
                .map_err(|e| crate::game::PlayError::Illegal {
                    text: text.clone(),
                    why: e.to_string(),
                })?;
            position.play_unchecked(&mv);
        }
        Ok(position)
    }

    /// The move for `position`, thinking until `deadline` at most.
    fn choose_in(
        &mut self,
        position: &Jiu,
        deadline: Instant,
        abort: &AtomicBool,
    ) -> Result<Move, EngineError> {
        if position.outcome().is_some() {
            return Err(EngineError::NoMove);
        }
        let st = State::from_jiu(position);
        if position.phase() == Phase::Placement {
            let p = choose_placement(&st, &mut self.rng).ok_or(EngineError::NoMove)?;
            return Ok(Move::Place(point_of(p)));
        }
        let now = Instant::now();
        let soft = now + deadline.saturating_duration_since(now) / 2;
        self.tables.tt.new_search();
        let mut searcher = Searcher {
            limits: self.limits,
            abort,
            deadline,
            nodes: 0,
            stopped: false,
            tables: &mut self.tables,
        };
        let chosen = searcher
            .root(&st, self.depth, soft)
            .map(|(m, _)| m.to_move());
        if let Some(mv) = chosen.filter(|mv| position.check_move(mv).is_ok()) {
            return Ok(mv);
        }
        // A safety net that should never be needed: any legal shape with its victims.
        let mut all = Vec::new();
        generate(&st, &self.limits, GenMode::All, &mut all);
        all.into_iter()
            .map(|m| m.to_move())
            .find(|mv| position.check_move(mv).is_ok())
            .ok_or(EngineError::NoMove)
    }
}

impl Engine for JiuEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let started = Instant::now();
        let position = self.replay(request.moves)?;
        if position.outcome().is_none() && self.noise.random_move() {
            return self.noise.legal_move(&position).ok_or(EngineError::NoMove);
        }
        let moves_left = match position.phase() {
            Phase::Placement => 40,
            Phase::Battle => 30,
        };
        // Three quarters of the budget: on a loaded machine a thread can lose tens of
        // milliseconds to the scheduler between two clock checks.
        let mut think = request.clock.budget(moves_left) * 3 / 4;
        if self.time_ms > 0 {
            think = think.min(Duration::from_millis(self.time_ms));
        }
        think = think.min(request.clock.hard_limit());
        let deadline = started + think;
        let mv = self.choose_in(&position, deadline, request.abort)?;
        Ok(mv.to_string())
    }
}

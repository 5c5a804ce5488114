//! The `surakarta` engine: iterative-deepening alpha-beta (PVS) on the bitboard move generator,
//! with a Zobrist transposition table, TT-move / capture / killer / history ordering, late-move
//! reductions and a capture quiescence; the evaluation follows the seed paper (material,
//! position-value matrix, arc-occupation value, endgame retuning) plus mobility, attacks and the
//! no-capture limit (the evaluation is `eval.rs`).
//!
//! Choices where the brief and paper are silent:
//! - A game won by count at the no-capture limit (or with no legal move) is scored like any
//!   other win: a win is a win, and the side ahead may run out the clock.
//! - The hash covers the pieces, the side to move and the quiet-ply count, so the TT never mixes
//!   positions that differ in how close they are to the no-capture limit.
//! - "Arc occupation" (占弧): a side occupies a corner loop when one of its pieces is the
//!   nearest piece to that loop along the circuit on either side (it can run through the loop).

mod eval;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::level::{self, Level, Noise, FULL_STRENGTH};
use super::options::{self, Whole};
use super::tt::{Bound, Replacement, TranspositionTable};
use super::{Engine, EngineError, EngineInfo, EngineOption, SearchRequest};
use crate::game::surakarta::board::{Board, FULL, POINTS};
use crate::game::surakarta::{Move, Surakarta};
use crate::game::{parse_options, GameId, PlayError, Point, Rules};
use crate::hash::{splitmix64, zobrist_keys};
use eval::{count_result, decided, evaluate, evaluate_with, ENDGAME_PIECES};

pub const INFO: EngineInfo = EngineInfo {
    id: "surakarta",
    games: &[GameId::Surakarta],
    about: "alpha-beta (PVS, iterative deepening, transposition table, capture quiescence) with \
            the paper's position matrix, arc occupation and endgame retuning",
    options: &[
        EngineOption {
            name: "depth",
            default: "64",
            about: "maximum search depth in plies (1..=64)",
        },
        EngineOption {
            name: "time_ms",
            default: "0",
            about: "cap on the time per move in milliseconds (0: only the clock decides)",
        },
        EngineOption {
            name: "nodes",
            default: "0",
            about: "cap on the nodes searched per move, for reproducible tests (0: none)",
        },
        EngineOption {
            name: "opening_random",
            default: "0",
            about: "game plies (from the start) in which a seeded random move is played among \
                    those scored within 30 of the best, to vary test games",
        },
        EngineOption {
            name: "null_move",
            default: "0",
            about: "1: null-move pruning in the middlegame (weaker here: passing is often the \
                    best move, since a step can open a circuit), 0: off",
        },
        EngineOption {
            name: "tt_mb",
            default: "24",
            about: "transposition table size in MiB (1..=1024), allocated once per engine",
        },
        EngineOption {
            name: "level",
            default: "23",
            about: "strength 1-23, each level's limits (depth in plies; time cap; share of random \
                    moves); depth and time_ms given beside it win",
        },
    ],
    levels: Some(LEVELS),
};

/// The `level` option's rows, weakest first (measured against each other in docs/engines.md,
/// "Levels"). Levels 1-18 are depth 1 with a share of random moves falling from 93% (77.5%
/// against `random` over 80 games) to none, a few per cent a level (61-77% against the level
/// below); above them depth alone sets the levels apart: depth 2 wins 63% against depth 1
/// (80 games), and over 40 games depth 3 65% against depth 2, depth 4 65% against 3, depth 6
/// 71% against 4 and the full search 76% against 6. The time caps are far above what those
/// depths take and only bound a slow machine.
pub const LEVELS: &[Level] = &[
    Level::limited(1, 100, 93),
    Level::limited(1, 100, 88),
    Level::limited(1, 100, 83),
    Level::limited(1, 100, 77),
    Level::limited(1, 100, 71),
    Level::limited(1, 100, 65),
    Level::limited(1, 100, 57),
    Level::limited(1, 100, 50),
    Level::limited(1, 100, 44),
    Level::limited(1, 100, 38),
    Level::limited(1, 100, 32),
    Level::limited(1, 100, 26),
    Level::limited(1, 100, 20),
    Level::limited(1, 100, 14),
    Level::limited(1, 100, 11),
    Level::limited(1, 100, 7),
    Level::limited(1, 100, 4),
    Level::limited(1, 100, 0),
    Level::limited(2, 100, 0),
    Level::limited(3, 200, 0),
    Level::limited(4, 500, 0),
    Level::limited(6, 1000, 0),
    FULL_STRENGTH,
];

/// Score of a won game (less the plies to reach it).
const WIN: i32 = 30_000;
/// Scores beyond this are decided games.
const WIN_BOUND: i32 = WIN - 1_000;
const INFINITY: i32 = WIN + 1;
/// Deepest ply the search (with quiescence) may reach.
const MAX_PLY: usize = 128;
const MAX_DEPTH: u32 = 64;
/// Room for every legal move of a position (at most 12 × 8 steps + 12 × 4 captures).
const MOVE_CAP: usize = 256;
/// Quiet moves searched per remaining ply of depth at depth 1 and 2 (late-move pruning).
const LMP_MOVES: usize = 5;
/// Own moves assumed left in the game when sharing out the clock (20 measured +49 Elo over 30
/// at 4 s + 0.04 s: the middlegame decides most games, so it gets the time).
const MOVES_LEFT: u64 = 20;
/// How far below the best a randomised opening move may score.
const OPENING_MARGIN: i32 = 30;

// ---------------------------------------------------------------------------------------------
// Moves: `from | to << 6 | capture << 12`; 0 is "no move" (a move never starts and ends on A1).

type Mv = u16;
const NO_MOVE: Mv = 0;

fn encode(from: usize, to: usize, capture: bool) -> Mv {
    (from as u16) | ((to as u16) << 6) | (u16::from(capture) << 12)
}
fn mv_from(mv: Mv) -> usize {
    usize::from(mv & 63)
}
fn mv_to(mv: Mv) -> usize {
    usize::from((mv >> 6) & 63)
}
fn mv_capture(mv: Mv) -> bool {
    mv & (1 << 12) != 0
}

/// The rules' move for an encoded move.
fn to_move(mv: Mv) -> Move {
    let from = Point::from_index(mv_from(mv), 6);
    let to = Point::from_index(mv_to(mv), 6);
    if mv_capture(mv) {
        Move::capture(from, to)
    } else {
        Move::step(from, to)
    }
}

#[derive(Clone)]
struct MoveList {
    moves: [Mv; MOVE_CAP],
    keys: [i32; MOVE_CAP],
    len: usize,
}

impl MoveList {
    fn new() -> MoveList {
        MoveList {
            moves: [NO_MOVE; MOVE_CAP],
            keys: [0; MOVE_CAP],
            len: 0,
        }
    }

    /// Every legal move of `board` (captures only if `captures_only`); returns how many legal
    /// moves there are in all.
    fn generate(board: &Board, captures_only: bool) -> (MoveList, usize) {
        let mut list = MoveList::new();
        let all = list.fill(board, captures_only);
        (list, all)
    }

    /// [`MoveList::generate`] into this list (its moves replaced), so the search's nodes fill
    /// a list on their own stack instead of copying a returned one (1.5 KB a node, a tenth of
    /// the search's time in a profile); returns how many legal moves there are in all.
    fn fill(&mut self, board: &Board, captures_only: bool) -> usize {
        self.len = 0;
        let mut all = 0;
        board.for_each_move(|from, to, capture| {
            all += 1;
            if (capture || !captures_only) && self.len < MOVE_CAP {
                self.moves[self.len] = encode(from, to, capture);
                self.len += 1;
            }
        });
        all
    }

    /// The points the listed captures land on (the enemy pieces they take).
    fn targets(&self) -> u64 {
        self.moves[..self.len]
            .iter()
            .filter(|&&mv| mv_capture(mv))
            .fold(0, |bits, &mv| bits | 1 << mv_to(mv))
    }

    /// Swaps the best-keyed move of `start..` into `start` and returns it.
    fn pick(&mut self, start: usize) -> Mv {
        let mut best = start;
        for i in start + 1..self.len {
            if self.keys[i] > self.keys[best] {
                best = i;
            }
        }
        self.moves.swap(start, best);
        self.keys.swap(start, best);
        self.moves[start]
    }
}

// ---------------------------------------------------------------------------------------------
// Zobrist hashing over absolute colours (First = 0, Second = 1).

static PIECE_KEYS: [[u64; POINTS]; 2] = zobrist_keys::<POINTS>();
const SIDE_KEY: u64 = splitmix64(1_000);

fn quiet_key(quiet: u32) -> u64 {
    splitmix64(0x5155_4945_5400_0000 ^ u64::from(quiet))
}

/// A search node: the board from the mover's view, the mover's colour and the hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    board: Board,
    /// Colour of `board.us`: 0 first, 1 second.
    side: usize,
    hash: u64,
}

impl Node {
    fn new(board: Board, side: usize) -> Node {
        Node {
            board,
            side,
            hash: full_hash(&board, side),
        }
    }

    /// The node after `mv`, hash updated incrementally.
    fn after(&self, mv: Mv) -> Node {
        let (from, to, capture) = (mv_from(mv), mv_to(mv), mv_capture(mv));
        let board = self.board.after(from, to, capture);
        let keys = &PIECE_KEYS[self.side];
        let mut hash = self.hash ^ keys[from] ^ keys[to] ^ SIDE_KEY;
        if capture {
            hash ^= PIECE_KEYS[1 - self.side][to];
        }
        hash ^= quiet_key(self.board.quiet) ^ quiet_key(board.quiet);
        Node {
            board,
            side: 1 - self.side,
            hash,
        }
    }
}

/// The hash of `board` with colour `side` to move, computed from scratch.
fn full_hash(board: &Board, side: usize) -> u64 {
    let mut hash = quiet_key(board.quiet);
    if side == 1 {
        hash ^= SIDE_KEY;
    }
    for (bits, colour) in [(board.us, side), (board.them, 1 - side)] {
        let mut bits = bits & FULL;
        while bits != 0 {
            hash ^= PIECE_KEYS[colour][bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
    }
    hash
}

/// The search node of a rules position.
fn node_of(position: &Surakarta) -> Node {
    let mut pieces = [0u64; 2];
    for p in 0..POINTS {
        if let Some(side) = position.piece_at(Point::from_index(p, 6)) {
            pieces[side.index()] |= 1 << p;
        }
    }
    let side = position.turn().index();
    Node::new(
        Board {
            us: pieces[side],
            them: pieces[1 - side],
            quiet: position.quiet_plies(),
        },
        side,
    )
}

/// The alpha-beta's transposition table; decided scores are those beyond `WIN_BOUND`.
type Table = TranspositionTable<Mv>;

// ---------------------------------------------------------------------------------------------
// Search.

/// Move-ordering memory kept between moves of a game.
#[derive(Debug)]
struct Heuristics {
    killers: [[Mv; 2]; MAX_PLY],
    history: [[i32; POINTS]; POINTS],
}

impl Heuristics {
    fn new() -> Heuristics {
        Heuristics {
            killers: [[NO_MOVE; 2]; MAX_PLY],
            history: [[0; POINTS]; POINTS],
        }
    }

    fn age(&mut self) {
        for row in self.history.iter_mut() {
            for h in row.iter_mut() {
                *h /= 8;
            }
        }
        self.killers = [[NO_MOVE; 2]; MAX_PLY];
    }
}

/// What the last search did (for tests and tuning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub depth: u32,
    pub score: i32,
    pub nodes: u64,
}

/// Gives each listed move its ordering key: the table's move, captures (by history), the two
/// killers of `ply`, then the history of quiet moves.
fn order_moves(heuristics: &Heuristics, list: &mut MoveList, tt_move: Mv, ply: usize) {
    let killers = heuristics.killers.get(ply).copied().unwrap_or_default();
    for i in 0..list.len {
        let mv = list.moves[i];
        list.keys[i] = if mv == tt_move {
            1 << 30
        } else if mv_capture(mv) {
            (1 << 29) + heuristics.history[mv_from(mv)][mv_to(mv)]
        } else if mv == killers[0] {
            (1 << 28) + 1
        } else if mv == killers[1] {
            1 << 28
        } else {
            heuristics.history[mv_from(mv)][mv_to(mv)]
        };
    }
}

struct Search<'a> {
    table: &'a mut Table,
    heuristics: &'a mut Heuristics,
    abort: &'a AtomicBool,
    stop_at: Instant,
    stopped: bool,
    nodes: u64,
    limit: u32,
    null_move: bool,
    /// Node budget of the whole move (checked with the clock).
    max_nodes: u64,
    /// The ply of the node just reached by a null move (none: `usize::MAX`).
    null_child: usize,
    /// One move list per ply, made once per move: a node fills its ply's list rather than a
    /// fresh one (zeroing 1.5 KB a node cost 4% of the search's time).
    lists: Vec<MoveList>,
}

impl Search<'_> {
    fn poll(&mut self) -> bool {
        // The first node checks at once, then every 256th.
        if !self.stopped && self.nodes & 255 == 1 {
            self.stopped = self.abort.load(Ordering::Relaxed)
                || Instant::now() >= self.stop_at
                || self.nodes >= self.max_nodes;
        }
        self.stopped
    }

    fn order(&self, list: &mut MoveList, tt_move: Mv, ply: usize) {
        order_moves(self.heuristics, list, tt_move, ply);
    }

    fn reward(&mut self, mv: Mv, depth: i32, ply: usize) {
        let h = &mut self.heuristics.history[mv_from(mv)][mv_to(mv)];
        *h = (*h + depth * depth).min(1 << 26);
        if !mv_capture(mv) {
            if let Some(k) = self.heuristics.killers.get_mut(ply) {
                if k[0] != mv {
                    k[1] = k[0];
                    k[0] = mv;
                }
            }
        }
    }

    fn negamax(&mut self, node: &Node, depth: i32, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.nodes += 1;
        if self.poll() {
            return 0;
        }
        let board = &node.board;
        if let Some(score) = decided(board, self.limit, ply) {
            return score;
        }
        if depth <= 0 || ply + 1 >= MAX_PLY {
            return self.quiesce(node, alpha, beta, ply);
        }
        let pv = beta - alpha > 1;
        let mut tt_move = NO_MOVE;
        if let Some(hit) = self.table.probe(node.hash, ply as u32) {
            tt_move = hit.best.unwrap_or(NO_MOVE);
            if let Some(score) = hit.cutoff(depth.max(0) as u32, alpha, beta).filter(|_| !pv) {
                return score;
            }
        }
        let all = self.lists[ply].fill(board, false);
        if all == 0 {
            return count_result(board, ply);
        }
        // Null move: if passing still holds beta, so will a real move. Not in the endgame,
        // where blockades make passing a real advantage, and never twice in a row.
        if self.null_move
            && !pv
            && depth >= 3
            && self.null_child != ply
            && board.us.count_ones() >= 4
            && board.us.count_ones() + board.them.count_ones() > ENDGAME_PIECES
            && beta.abs() < WIN_BOUND
            && evaluate(board, self.limit) >= beta
        {
            let quiet = board.quiet.saturating_add(1);
            let passed = Node {
                board: Board {
                    us: board.them,
                    them: board.us,
                    quiet,
                },
                side: 1 - node.side,
                hash: node.hash ^ SIDE_KEY ^ quiet_key(board.quiet) ^ quiet_key(quiet),
            };
            let reduction = 2 + i32::from(depth >= 6);
            self.null_child = ply + 1;
            let score = -self.negamax(&passed, depth - 1 - reduction, -beta, -beta + 1, ply + 1);
            self.null_child = usize::MAX;
            if self.stopped {
                return 0;
            }
            if score >= beta {
                return if score > WIN_BOUND { beta } else { score };
            }
        }
        order_moves(self.heuristics, &mut self.lists[ply], tt_move, ply);
        let original_alpha = alpha;
        let mut best = -INFINITY;
        let mut best_move = NO_MOVE;
        for i in 0..self.lists[ply].len {
            let mv = self.lists[ply].pick(i);
            let quiet_move = !mv_capture(mv) && self.lists[ply].keys[i] < (1 << 28);
            // Late-move pruning: near the leaves, quiet moves far down the order are skipped
            // once a move has a score that is not a loss.
            if !pv
                && depth <= 2
                && quiet_move
                && i >= LMP_MOVES * depth as usize
                && best > -WIN_BOUND
            {
                continue;
            }
            let child = node.after(mv);
            let mut score;
            if i == 0 {
                score = -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1);
            } else {
                // Late quiet moves are searched shallower first.
                // One ply more for the very late ones deep in the tree, one less on the
                // principal variation, always leaving two plies to search.
                let reduction = if depth >= 3 && i >= 2 && quiet_move {
                    let r = 1 + i32::from(depth >= 4 && i >= 5) + i32::from(depth >= 6 && i >= 12);
                    (r - i32::from(pv && r > 1)).min(depth - 2)
                } else {
                    0
                };
                score = -self.negamax(&child, depth - 1 - reduction, -alpha - 1, -alpha, ply + 1);
                if score > alpha && reduction > 0 {
                    score = -self.negamax(&child, depth - 1, -alpha - 1, -alpha, ply + 1);
                }
                if score > alpha && score < beta {
                    score = -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1);
                }
            }
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_move = mv;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        self.reward(mv, depth, ply);
                        break;
                    }
                }
            }
        }
        let bound = Bound::of(best, original_alpha, beta);
        let best_move = (best_move != NO_MOVE).then_some(best_move);
        self.table.store(
            node.hash,
            ply as u32,
            depth.max(0) as u32,
            best,
            bound,
            best_move,
        );
        best
    }

    fn quiesce(&mut self, node: &Node, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.nodes += 1;
        if self.poll() {
            return 0;
        }
        let board = &node.board;
        if let Some(score) = decided(board, self.limit, ply) {
            return score;
        }
        let all = self.lists[ply].fill(board, true);
        if all == 0 {
            return count_result(board, ply);
        }
        let stand = evaluate_with(board, self.limit, all as i32, self.lists[ply].targets());
        if stand >= beta || ply + 1 >= MAX_PLY {
            return stand;
        }
        alpha = alpha.max(stand);
        let tt_move = self
            .table
            .probe(node.hash, ply as u32)
            .and_then(|h| h.best)
            .unwrap_or(NO_MOVE);
        order_moves(self.heuristics, &mut self.lists[ply], tt_move, ply);
        let mut best = stand;
        for i in 0..self.lists[ply].len {
            let mv = self.lists[ply].pick(i);
            let score = -self.quiesce(&node.after(mv), -beta, -alpha, ply + 1);
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        best
    }
}

// ---------------------------------------------------------------------------------------------
// The engine.

/// The `surakarta` engine's options as given (`INFO.options` lists them); `None`: not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SurakartaOptions {
    depth: Option<Whole<1, { MAX_DEPTH as u64 }>>,
    time_ms: Option<Whole<0, { u32::MAX as u64 }>>,
    nodes: Option<Whole<0, { u64::MAX }>>,
    opening_random: Option<Whole<0, 1000>>,
    null_move: Option<Whole<0, 1>>,
    tt_mb: Option<Whole<1, 1024>>,
    level: Option<Whole<1, { LEVELS.len() as u64 }>>,
}

/// Plays Surakarta by alpha-beta search.
#[derive(Debug)]
pub struct SurakartaEngine {
    options: crate::game::surakarta::Options,
    max_depth: u32,
    time_cap_ms: Option<u64>,
    null_move: bool,
    max_nodes: u64,
    /// Plies at the start of the game played at random among near-best moves.
    opening_random: u32,
    rng: SmallRng,
    /// The level's random moves.
    noise: Noise,
    table: Table,
    heuristics: Box<Heuristics>,
    last: SearchStats,
}

impl SurakartaEngine {
    pub fn new(
        rules: &serde_json::Value,
        options: &serde_json::Value,
        seed: u64,
    ) -> Result<SurakartaEngine, EngineError> {
        let given = options::parse::<SurakartaOptions>(options)?;
        let level = level::pick(LEVELS, given.level.map(Whole::get));
        let max_depth = given
            .depth
            .map_or(level.depth.unwrap_or(MAX_DEPTH), |d| d.get() as u32);
        let time_cap_ms = given
            .time_ms
            .map(Whole::get)
            .or(level.time_ms)
            .filter(|&ms| ms > 0);
        let tt_mb = given.tt_mb.map_or(24, Whole::get);
        // Allocated when the engine is built, not on the clock at its first search.
        let mut table = Table::with_mib(tt_mb, WIN_BOUND + 1, Replacement::DeepOrFresh);
        table.allocate();
        Ok(SurakartaEngine {
            options: parse_options::<Surakarta>(rules)?,
            max_depth,
            time_cap_ms,
            null_move: given.null_move.is_some_and(|n| n.get() == 1),
            max_nodes: given
                .nodes
                .map(Whole::get)
                .filter(|&n| n > 0)
                .unwrap_or(u64::MAX),
            opening_random: given.opening_random.map_or(0, |n| n.get() as u32),
            rng: SmallRng::seed_from_u64(seed),
            noise: Noise::new(level.noise_pct, seed),
            table,
            heuristics: Box::new(Heuristics::new()),
            last: SearchStats::default(),
        })
    }

    /// Depth, score and nodes of the last search.
    pub fn last_stats(&self) -> SearchStats {
        self.last
    }

    /// The position after `moves` from the start.
    fn replay(&self, moves: &[String]) -> Result<Surakarta, EngineError> {
        let mut position = Surakarta::start(&self.options);
        for text in moves {
            let mv = Surakarta::parse_move(text).map_err(PlayError::from)?;
            position.play(&mv).map_err(|e| PlayError::Illegal {
                text: text.clone(),
                why: e.to_string(),
            })?;
        }
        Ok(position)
    }

    /// Searches `position` under `clock` and returns the best move found.
    pub fn best_move(
        &mut self,
        position: &Surakarta,
        clock: &super::ClockView,
        abort: &AtomicBool,
    ) -> Result<Move, EngineError> {
        let started = Instant::now();
        if position.outcome().is_some() {
            return Err(EngineError::NoMove);
        }
        let root = node_of(position);
        let (mut list, _) = MoveList::generate(&root.board, false);
        if list.len == 0 {
            return Err(EngineError::NoMove);
        }
        self.table.new_search();
        self.heuristics.age();
        let mut search = Search {
            table: &mut self.table,
            heuristics: &mut self.heuristics,
            abort,
            stop_at: started,
            stopped: false,
            nodes: 0,
            limit: self.options.no_capture_limit.get(),
            null_move: self.null_move,
            max_nodes: self.max_nodes,
            null_child: usize::MAX,
            lists: vec![MoveList::new(); MAX_PLY + 1],
        };
        let tt_move = search
            .table
            .probe(root.hash, 0)
            .and_then(|h| h.best)
            .unwrap_or(NO_MOVE);
        search.order(&mut list, tt_move, 0);
        // The legal fallback from the start: the best-ordered move (a capture if any).
        let mut best = list.pick(0);
        self.last = SearchStats::default();
        if list.len == 1 {
            return Ok(to_move(best));
        }

        let mut budget = clock.budget(MOVES_LEFT);
        // An iteration may run past the budget, but stops well before the hard limit: a busy
        // machine can delay the thread by tens of milliseconds.
        let mut stop_after = (budget * 2).min(clock.hard_limit() * 7 / 10);
        if let Some(cap) = self.time_cap_ms {
            budget = budget.min(Duration::from_millis(cap));
            stop_after = stop_after.min(Duration::from_millis(cap));
        }
        search.stop_at = started + stop_after;

        // Root moves with their last scores; the best so far stays first.
        let mut root_moves: Vec<(Mv, i32)> =
            (0..list.len).map(|i| (list.pick(i), -INFINITY)).collect();
        // While the opening is randomised every root move gets an exact score.
        let exact_root = clock.ply < self.opening_random;
        let mut completed: Vec<(Mv, i32)> = Vec::new();
        for depth in 1..=self.max_depth as i32 {
            let mut alpha = -INFINITY;
            let mut iteration_best = NO_MOVE;
            for (i, entry) in root_moves.iter_mut().enumerate() {
                let mv = entry.0;
                let child = root.after(mv);
                let score = if i == 0 || exact_root {
                    -search.negamax(&child, depth - 1, -INFINITY, INFINITY, 1)
                } else {
                    let mut s = -search.negamax(&child, depth - 1, -alpha - 1, -alpha, 1);
                    if s > alpha && !search.stopped {
                        s = -search.negamax(&child, depth - 1, -INFINITY, -alpha, 1);
                    }
                    s
                };
                if search.stopped {
                    break;
                }
                entry.1 = score;
                if score > alpha {
                    alpha = score;
                    iteration_best = mv;
                }
            }
            // A move that beat the fully searched first move is good even in a cut-short
            // iteration.
            if iteration_best != NO_MOVE {
                best = iteration_best;
            }
            if search.stopped {
                break;
            }
            self.last = SearchStats {
                depth: depth as u32,
                score: alpha,
                nodes: search.nodes,
            };
            root_moves.sort_by_key(|&(mv, score)| (mv != best, -score));
            if exact_root {
                completed.clone_from(&root_moves);
            }
            if alpha.abs() > WIN_BOUND || started.elapsed() >= budget * 7 / 10 {
                break;
            }
        }
        self.last.nodes = search.nodes;
        if let Some(&(_, top)) = completed.first() {
            let near: Vec<Mv> = completed
                .iter()
                .filter(|&&(_, score)| score >= top - OPENING_MARGIN)
                .map(|&(mv, _)| mv)
                .collect();
            if !near.is_empty() {
                best = near[self.rng.gen_range(0..near.len())];
            }
        }
        tracing::debug!(
            depth = self.last.depth,
            score = self.last.score,
            nodes = self.last.nodes,
            ms = started.elapsed().as_millis() as u64,
            "surakarta search"
        );
        Ok(to_move(best))
    }
}

impl Engine for SurakartaEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let position = self.replay(request.moves)?;
        if self.noise.random_move() {
            return self.noise.legal_move(&position).ok_or(EngineError::NoMove);
        }
        let mv = self.best_move(&position, &request.clock, request.abort)?;
        Ok(mv.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{new_engine, ClockView};
    use crate::game::surakarta::Options;
    use crate::game::{EndReason, Side};

    fn position(text: &str) -> Surakarta {
        Surakarta::from_position_text(text, &Options::default()).unwrap()
    }

    fn engine(options: serde_json::Value) -> SurakartaEngine {
        SurakartaEngine::new(&serde_json::Value::Null, &options, 1).unwrap()
    }

    fn think(engine: &mut SurakartaEngine, position: &Surakarta) -> Move {
        let abort = AtomicBool::new(false);
        engine
            .best_move(position, &ClockView::unlimited(), &abort)
            .unwrap()
    }

    /// Own pieces minus enemy pieces for `side`.
    fn balance(position: &Surakarta, side: Side) -> i64 {
        i64::from(position.piece_count(side)) - i64::from(position.piece_count(side.opponent()))
    }

    /// The worst balance for `side` (who just moved) over every reply of the opponent.
    fn worst_after_reply(position: &Surakarta, side: Side) -> i64 {
        let mut replies = Vec::new();
        position.legal_moves(&mut replies);
        replies
            .iter()
            .map(|r| {
                let mut next = position.clone();
                next.play(r).unwrap();
                balance(&next, side)
            })
            .min()
            .unwrap_or_else(|| balance(position, side))
    }

    #[test]
    fn takes_the_last_enemy_piece() {
        // x B2 captures B5 through the A2-B1 loop; x F1 and E6 are distractions.
        let start = position("....x./.o..../....../....../.x..../.....x x");
        let mut engine = engine(serde_json::json!({"time_ms": 2000}));
        let mv = think(&mut engine, &start);
        let mut after = start.clone();
        after.play(&mv).unwrap();
        let outcome = after.outcome().unwrap();
        assert_eq!(outcome.winner, Some(Side::First), "{mv}");
        assert_eq!(outcome.reason, EndReason::NoPieces);
    }

    #[test]
    fn meets_a_threat_to_a_piece() {
        // o E6 attacks x A2 along row 5 / column B and along column E / row 2.
        let start = position("o...oo/....../....../....../x...../x....x x");
        let mut moves = Vec::new();
        start.legal_moves(&mut moves);
        // The threat is real: some x moves lose a piece.
        assert!(moves.iter().any(|m| {
            let mut next = start.clone();
            next.play(m).unwrap();
            worst_after_reply(&next, Side::First) < balance(&start, Side::First)
        }));
        let mut engine = engine(serde_json::json!({"time_ms": 2000}));
        let mv = think(&mut engine, &start);
        let mut next = start.clone();
        next.play(&mv).unwrap();
        assert!(
            worst_after_reply(&next, Side::First) >= balance(&start, Side::First),
            "{mv} loses material"
        );
    }

    #[test]
    fn captures_when_behind_at_the_no_capture_limit() {
        // x is a piece down two plies before the limit: only a capture now avoids a loss by
        // count (A2xE6 is the one capture).
        let start = position("o...oo/....../....../....../x...../x..... x quiet=78");
        let mut engine = engine(serde_json::json!({"depth": 4}));
        let mv = think(&mut engine, &start);
        assert_eq!(mv.to_string(), "A2xE6");
    }

    #[test]
    fn returns_a_legal_move_at_once_when_aborted() {
        let start = Surakarta::start(&Options::default());
        let mut engine = engine(serde_json::Value::Null);
        let abort = AtomicBool::new(true);
        let mv = engine
            .best_move(&start, &ClockView::unlimited(), &abort)
            .unwrap();
        assert!(start.is_legal(&mv), "{mv}");
        // The first node already sees the flag.
        assert!(engine.last_stats().nodes <= 1, "{:?}", engine.last_stats());
    }

    #[test]
    fn depth_option_caps_the_search() {
        let start = Surakarta::start(&Options::default());
        let mut engine = engine(serde_json::json!({"depth": 2}));
        let mv = think(&mut engine, &start);
        assert!(start.is_legal(&mv));
        assert_eq!(engine.last_stats().depth, 2);
    }

    #[test]
    fn unknown_and_bad_options_are_refused() {
        for bad in [
            serde_json::json!({"colour": "red"}),
            serde_json::json!({"depth": 0}),
            serde_json::json!({"depth": "deep"}),
            serde_json::json!({"tt_mb": 0}),
            serde_json::json!({"time_ms": -5}),
        ] {
            let result = new_engine(
                "surakarta",
                GameId::Surakarta,
                &serde_json::Value::Null,
                &bad,
                1,
            );
            assert!(
                matches!(result, Err(EngineError::BadOption { .. })),
                "{bad} was accepted"
            );
        }
        assert!(matches!(
            new_engine(
                "surakarta",
                GameId::Hex,
                &serde_json::Value::Null,
                &serde_json::Value::Null,
                1
            ),
            Err(EngineError::UnsupportedGame { .. })
        ));
    }

    #[test]
    fn quiescence_stand_pat_equals_the_full_evaluation() {
        // The quiescence search evaluates from its captures-only list; that must be the same
        // score as the evaluation's own move generation, over a whole game.
        let mut node = node_of(&Surakarta::start(&Options::default()));
        let limit = Options::default().no_capture_limit.get();
        let mut checked_with_captures = 0;
        for ply in 0..200usize {
            let (captures, all) = MoveList::generate(&node.board, true);
            if all == 0 || node.board.us == 0 || node.board.them == 0 {
                break;
            }
            assert_eq!(
                evaluate_with(&node.board, limit, all as i32, captures.targets()),
                evaluate(&node.board, limit),
                "ply {ply}"
            );
            checked_with_captures += usize::from(captures.len > 0);
            let (list, _) = MoveList::generate(&node.board, false);
            node = node.after(list.moves[(ply * 7 + 3) % list.len]);
        }
        assert!(checked_with_captures > 5);
    }

    #[test]
    fn incremental_hash_matches_the_hash_recomputed_after_play() {
        let mut rules_position = Surakarta::start(&Options::default());
        let mut node = node_of(&rules_position);
        let mut ply = 0usize;
        while rules_position.outcome().is_none() && ply < 300 {
            let (list, _) = MoveList::generate(&node.board, false);
            assert!(list.len > 0);
            // Prefer captures so that both kinds of update are exercised.
            let captures: Vec<Mv> = list.moves[..list.len]
                .iter()
                .copied()
                .filter(|&m| mv_capture(m))
                .collect();
            let mv = if !captures.is_empty() && ply.is_multiple_of(3) {
                captures[ply % captures.len()]
            } else {
                list.moves[(ply * 7 + 3) % list.len]
            };
            rules_position.play(&to_move(mv)).unwrap();
            node = node.after(mv);
            let fresh = node_of(&rules_position);
            assert_eq!(node, fresh, "after ply {ply}");
            ply += 1;
        }
        assert!(ply > 20);
    }

    #[test]
    fn plays_only_legal_moves_through_full_games_against_random() {
        let config = crate::duel::DuelConfig {
            game: GameId::Surakarta,
            rules: serde_json::Value::Null,
            engines: [
                ("surakarta".into(), serde_json::json!({"time_ms": 20})),
                ("random".into(), serde_json::Value::Null),
            ],
            games: 2,
            move_ms: 2_000,
            seed: 5,
        };
        let results = crate::duel::run(&config, |_| {}).unwrap();
        for game in &results {
            assert!(
                !matches!(
                    game.outcome.reason,
                    EndReason::IllegalMove | EndReason::Timeout | EndReason::Resign
                ),
                "{:?}",
                game.outcome
            );
            let mut replayed = Surakarta::start(&Options::default());
            for text in &game.moves {
                replayed
                    .play(&Surakarta::parse_move(text).unwrap())
                    .unwrap();
            }
            assert_eq!(replayed.outcome(), Some(game.outcome));
        }
    }
}

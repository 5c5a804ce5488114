//! The `surakarta` engine's evaluation: the seed paper's material, position-value matrices and
//! arc occupation, retuned for the endgame, plus mobility, attacks and the no-capture limit;
//! and the scores of positions already decided.

use super::WIN;
use crate::game::surakarta::board::{circuit_point, Board, FULL, POINTS};

/// The paper's position-value matrix (1), and (3) for when both sides have fewer than 6 pieces.
/// Symmetric, so row order does not matter.
const MATRIX_OPENING: [i32; POINTS] = [
    5, 20, 20, 20, 20, 5, //
    20, 30, 50, 50, 30, 20, //
    20, 50, 40, 40, 50, 20, //
    20, 50, 40, 40, 50, 20, //
    20, 30, 50, 50, 30, 20, //
    5, 20, 20, 20, 20, 5,
];
const MATRIX_LATE: [i32; POINTS] = [
    5, 20, 20, 20, 20, 5, //
    20, 30, 25, 25, 30, 20, //
    20, 25, 40, 40, 25, 20, //
    20, 25, 40, 40, 25, 20, //
    20, 30, 25, 25, 30, 20, //
    5, 20, 20, 20, 20, 5,
];

/// Value of a piece before and in the endgame (the paper raises material there).
const PIECE: i32 = 400;
const PIECE_ENDGAME: i32 = 600;
/// Total pieces at or below which the endgame weights apply.
pub(super) const ENDGAME_PIECES: u32 = 8;
/// Paper: ArcValue = Self × 5 + Opp × 5, halved in the endgame; the difference between the two
/// sides' ArcValue is 10 per arc.
const ARC: i32 = 10;
const MOBILITY: i32 = 2;
/// Per distinct enemy piece the mover can capture, and per own piece the opponent can capture.
const ATTACKS: i32 = 20;
const ATTACKED: i32 = 25;
const TEMPO: i32 = 8;
/// Plies before the no-capture limit from which the side ahead gets a rising bonus.
const LIMIT_HORIZON: u32 = 24;
const LIMIT_STEP: i32 = 12;

const fn circuit_table() -> [[usize; 24]; 2] {
    let mut t = [[0; 24]; 2];
    let mut c = 0;
    while c < 2 {
        let mut j = 0;
        while j < 24 {
            t[c][j] = circuit_point(c, j);
            j += 1;
        }
        c += 1;
    }
    t
}

static CIRCUITS: [[usize; 24]; 2] = circuit_table();

/// Which sides (bit 0 us, bit 1 them) own the nearest piece on either side of each of the eight
/// corner loops; returns the number of loops each side occupies.
fn arcs_occupied(us: u64, them: u64) -> (i32, i32) {
    let occupied = us | them;
    let (mut ours, mut theirs) = (0, 0);
    for circuit in &CIRCUITS {
        for k in 0..4 {
            let mut owners = 0u8;
            // Entries 6k+5 and 6k+6 straddle the loop; walk away from it both ways.
            for forward in [false, true] {
                let mut j = if forward { (6 * k + 6) % 24 } else { 6 * k + 5 };
                for _ in 0..24 {
                    let p = circuit[j];
                    if occupied & (1 << p) != 0 {
                        owners |= if us & (1 << p) != 0 { 1 } else { 2 };
                        break;
                    }
                    j = if forward { (j + 1) % 24 } else { (j + 23) % 24 };
                }
            }
            ours += i32::from(owners & 1);
            theirs += i32::from(owners >> 1);
        }
    }
    (ours, theirs)
}

/// Moves and distinct capture targets of the side to move of `board`.
fn activity(board: &Board) -> (i32, u64) {
    let mut moves = 0;
    let mut targets = 0u64;
    board.for_each_move(|_, to, capture| {
        moves += 1;
        if capture {
            targets |= 1 << to;
        }
    });
    (moves, targets)
}

/// Static score of a live position for the side to move (higher is better).
pub(super) fn evaluate(board: &Board, limit: u32) -> i32 {
    let (moves_us, targets_us) = activity(board);
    evaluate_with(board, limit, moves_us, targets_us)
}

/// [`evaluate`] given the side to move's [`activity`] (its move count and capture targets),
/// which the quiescence search has already generated.
pub(super) fn evaluate_with(board: &Board, limit: u32, moves_us: i32, targets_us: u64) -> i32 {
    let (n_us, n_them) = (board.us.count_ones(), board.them.count_ones());
    let endgame = n_us + n_them <= ENDGAME_PIECES;
    let late = n_us < 6 && n_them < 6;
    let piece = if endgame { PIECE_ENDGAME } else { PIECE };
    let matrix = if late { &MATRIX_LATE } else { &MATRIX_OPENING };
    let material = n_us as i32 - n_them as i32;
    let mut score = piece * material + TEMPO;

    let mut place = |bits: u64, sign: i32| {
        let mut bits = bits & FULL;
        while bits != 0 {
            score += sign * matrix[bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
    };
    place(board.us, 1);
    place(board.them, -1);

    let (arcs_us, arcs_them) = arcs_occupied(board.us, board.them);
    let arc = if endgame { ARC / 2 } else { ARC };
    score += arc * (arcs_us - arcs_them);

    let swapped = Board {
        us: board.them,
        them: board.us,
        quiet: board.quiet,
    };
    let (moves_them, targets_them) = activity(&swapped);
    score += MOBILITY * (moves_us - moves_them);
    score += ATTACKS * targets_us.count_ones() as i32 - ATTACKED * targets_them.count_ones() as i32;

    // Near the no-capture limit the count decides: the side ahead gains, the side behind must
    // capture soon.
    let left = limit.saturating_sub(board.quiet);
    if material != 0 && left < LIMIT_HORIZON {
        score += material.signum() * LIMIT_STEP * (LIMIT_HORIZON - left) as i32;
    }
    score
}

/// Score of a game decided by count (move limit or no legal move), for the side to move.
pub(super) fn count_result(board: &Board, ply: usize) -> i32 {
    match board.us.count_ones().cmp(&board.them.count_ones()) {
        std::cmp::Ordering::Greater => WIN - ply as i32,
        std::cmp::Ordering::Less => -(WIN - ply as i32),
        std::cmp::Ordering::Equal => 0,
    }
}

/// The score of `board` if the game is already over there (docs/rules.md order, no-moves aside).
pub(super) fn decided(board: &Board, limit: u32, ply: usize) -> Option<i32> {
    if board.us == 0 {
        Some(-(WIN - ply as i32))
    } else if board.them == 0 {
        Some(WIN - ply as i32)
    } else if board.quiet >= limit {
        Some(count_result(board, ply))
    } else {
        None
    }
}

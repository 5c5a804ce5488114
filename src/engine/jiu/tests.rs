//! Tests of the `jiu` engine: its move shapes agree with the rules, it plays legal moves over
//! whole games, takes wins in one, stops the opponent's squares, places after the paper's
//! priorities, answers at once when aborted and refuses unknown options.

use std::collections::HashMap;

use super::*;
use crate::engine::ClockView;
use crate::game::jiu::Options;

fn pt(text: &str) -> Point {
    crate::game::coord::parse_point(text, 14).unwrap()
}

/// Position text with `x` and `o` stones (space-separated points), `side` to move.
fn position_text(x: &str, o: &str, side: char, phase: &str) -> String {
    let mut cells = [['.'; 14]; 14];
    for (spec, c) in [(x, 'x'), (o, 'o')] {
        for p in spec.split_whitespace().map(pt) {
            cells[p.row as usize][p.col as usize] = c;
        }
    }
    let rows: Vec<String> = cells.iter().rev().map(|r| r.iter().collect()).collect();
    let quiet = if phase == "battle" { " quiet=0" } else { "" };
    format!("{} {side} phase={phase}{quiet}", rows.join("/"))
}

fn position(x: &str, o: &str, side: char, phase: &str) -> Jiu {
    let text = position_text(x, o, side, phase);
    Jiu::from_position_text(&text, &Options::default()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every point of the rows named, e.g. `row(12)` = A12 … N12.
fn row(r: u32) -> String {
    (b'A'..=b'N')
        .map(|c| format!("{}{r}", c as char))
        .collect::<Vec<_>>()
        .join(" ")
}

fn engine() -> JiuEngine {
    JiuEngine::new(&serde_json::Value::Null, &serde_json::Value::Null, 5).unwrap()
}

/// The engine's move in `position`, with a generous deadline.
fn choose(position: &Jiu) -> Move {
    let abort = AtomicBool::new(false);
    let mv = engine()
        .choose_in(
            position,
            Instant::now() + Duration::from_millis(400),
            &abort,
        )
        .unwrap();
    position.check_move(&mv).unwrap();
    mv
}

fn played(position: &Jiu, mv: &Move) -> Jiu {
    let mut next = position.clone();
    next.play_unchecked(mv);
    next
}

/// The rules' listing of move shapes (`+?` per victim) as a multiset.
fn listing_counts(lines: Vec<String>) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for line in lines {
        *counts.entry(line).or_insert(0) += 1;
    }
    counts
}

/// Our generator's shapes in the same form as `move_listing`.
fn our_listing(position: &Jiu) -> Vec<String> {
    let st = State::from_jiu(position);
    let limits = Limits {
        no_capture_limit: position.options().no_capture_limit.get(),
        flying_single_jump: position.options().flying_single_jump,
    };
    let mut moves = Vec::new();
    generate(&st, &limits, GenMode::All, &mut moves);
    moves
        .iter()
        .map(|m| {
            let mut shape = m.clone();
            let n = usize::from(shape.need);
            assert_eq!(shape.victims.len(), n);
            shape.victims.clear();
            format!("{}{}", shape.to_move(), "+?".repeat(n))
        })
        .collect()
}

#[test]
fn generated_shapes_match_the_rules_through_random_games() {
    // Random games (random placements, then random moves of our own generator) under both
    // single-jump options: at every battle ply our shapes equal the rules' listing and every
    // generated move, victims included, is legal.
    for (seed, single) in [(1u64, false), (2, true)] {
        let options = Options {
            flying_single_jump: single,
            ..Options::default()
        };
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut position = Jiu::start(&options);
        let mut battle_plies = 0;
        let mut saw_fly = false;
        let mut saw_victims = false;
        while position.outcome().is_none() && battle_plies < 400 {
            if position.phase() == Phase::Placement {
                let lines = position.move_listing();
                let pick = &lines[rng.gen_range(0..lines.len())];
                let mv = Jiu::parse_move(pick).unwrap();
                position.play_unchecked(&mv);
                continue;
            }
            battle_plies += 1;
            let ours = listing_counts(our_listing(&position));
            let theirs = listing_counts(position.move_listing());
            assert_eq!(ours, theirs, "{}", position.position_text());
            let st = State::from_jiu(&position);
            saw_fly |= st.can_fly(st.to_move);
            let limits = Limits {
                no_capture_limit: 100,
                flying_single_jump: single,
            };
            let mut moves = Vec::new();
            generate(&st, &limits, GenMode::All, &mut moves);
            for m in &moves {
                position.check_move(&m.to_move()).unwrap();
            }
            // Prefer captures so that the game reaches the flying phase.
            let captures: Vec<&BMove> = moves.iter().filter(|m| m.captures() > 0).collect();
            let m = if !captures.is_empty() && rng.gen_bool(0.8) {
                captures[rng.gen_range(0..captures.len())]
            } else {
                &moves[rng.gen_range(0..moves.len())]
            };
            saw_victims |= !m.victims.is_empty();
            let mut next = st;
            next.apply(m);
            position.play_unchecked(&m.to_move());
            assert!(
                next == State::from_jiu(&position),
                "apply disagrees with the rules after {}",
                m.to_move()
            );
        }
        assert!(
            battle_plies > 20,
            "the battle was too short to test anything"
        );
        assert!(
            saw_fly && saw_victims,
            "fly {saw_fly}, victims {saw_victims}"
        );
    }
}

#[test]
fn plays_only_legal_moves_over_whole_games_against_random() {
    let config = crate::duel::DuelConfig {
        game: GameId::Jiu,
        rules: serde_json::Value::Null,
        engines: [
            ("jiu".into(), serde_json::json!({"time_ms": 20})),
            ("random".into(), serde_json::Value::Null),
        ],
        games: 2,
        move_ms: 2_000,
        seed: 3,
    };
    let results = crate::duel::run(&config, |_| {}).unwrap();
    for game in &results {
        assert!(game.moves.len() >= 196, "{} plies", game.moves.len());
        assert!(
            game.outcome.reason.is_board_result(),
            "game {} ended by {}",
            game.index,
            game.outcome.reason
        );
        let mut replay = crate::game::new_game(GameId::Jiu, &serde_json::Value::Null).unwrap();
        for mv in &game.moves {
            replay.play_text(mv).unwrap();
        }
        assert_eq!(replay.outcome(), Some(game.outcome));
    }
}

#[test]
fn takes_a_win_in_one_by_a_jump_chain() {
    // o has five stones; x's B2 can jump C2 and E2 in one chain (both sides fly, so a jump must
    // chain two), leaving o with three. A square for x elsewhere would only take one.
    let x = "B2 K10 L10 K11 M4 M6";
    let o = "C2 E2 A12 B14 N14";
    let p = position(x, o, 'x', "battle");
    let mv = choose(&p);
    let after = played(&p, &mv);
    assert_eq!(
        after.outcome().map(|o| (o.winner, o.reason)),
        Some((Some(Side::First), crate::game::EndReason::FewStones)),
        "{mv}"
    );
}

#[test]
fn takes_a_win_in_one_by_a_square_capture() {
    // o has four stones; x completes the square K10 L10 K11 L11 by flying a stone to L11 and
    // removes one, leaving three.
    let x = "K10 L10 K11 B2 D4 F6";
    let o = "A12 B14 N14 N1";
    let p = position(x, o, 'x', "battle");
    let mv = choose(&p);
    let after = played(&p, &mv);
    assert_eq!(
        after.outcome().map(|o| o.winner),
        Some(Some(Side::First)),
        "{mv}"
    );
}

/// Whether the side to move in `position` has a move forming a square.
fn can_form_square(position: &Jiu) -> bool {
    let st = State::from_jiu(position);
    let mut moves = Vec::new();
    generate(
        &st,
        &Limits {
            no_capture_limit: 100,
            flying_single_jump: false,
        },
        GenMode::All,
        &mut moves,
    );
    moves.iter().any(|m| !m.victims.is_empty())
}

/// Filler far from the action that keeps a side above 14 stones (no flying, single jumps
/// allowed) without forming anything: a full row and every other point of a row two away, so
/// that no single step makes even a triangle.
fn filler(full_row: u32, sparse_row: u32) -> String {
    let sparse: Vec<String> = (b'A'..=b'N')
        .step_by(2)
        .map(|c| format!("{}{sparse_row}", c as char))
        .collect();
    format!("{} {}", row(full_row), sparse.join(" "))
}

#[test]
fn stops_the_opponents_square() {
    // o's F6 G6 F7 wait for H7 to step into G7 and capture. x (to move) can jump H7 from I7,
    // landing on G7 (and go on over F7). Both sides are large: steps only, single jumps allowed.
    let x = format!("{} I7", filler(14, 12));
    let o = format!("{} F6 G6 F7 H7", filler(1, 3));
    let p = position(&x, &o, 'x', "battle");
    assert!(can_form_square(&played(
        &p,
        &Jiu::parse_move("A14-A13").unwrap()
    )));
    for depth in 1..=5 {
        let abort = AtomicBool::new(false);
        let mut tables = Tables::new();
        let mut searcher = Searcher {
            limits: Limits {
                no_capture_limit: 100,
                flying_single_jump: false,
            },
            abort: &abort,
            deadline: Instant::now() + Duration::from_secs(600),
            nodes: 0,
            stopped: false,
            tables: &mut tables,
        };
        let (best, _) = searcher
            .root(
                &State::from_jiu(&p),
                depth,
                Instant::now() + Duration::from_secs(600),
            )
            .unwrap();
        let mv = best.to_move();
        let after = played(&p, &mv);
        assert!(
            !can_form_square(&after),
            "depth {depth}: after {mv} o can still form a square: {}",
            after.position_text()
        );
    }
}

#[test]
fn square_victims_are_the_dangerous_stones() {
    // x closes the square C3 D3 C4 D4 by stepping D5-D4 (D4 empty). o's near-square K10 L10 K11
    // with L12 ready to step into L11 is the stone group to break up; the lone N1 is harmless.
    let x = format!("{} C3 D3 C4 D5", row(14));
    let o = format!("{} N1 K10 L10 K11 L12", row(1));
    let mut x_stones = x;
    // Keep both sides large (no flying) with filler that forms nothing.
    x_stones.push_str(" A12 C12 E12 G12 I12 K12 M12 A10 C10 E10 G10");
    let o_stones = format!("{o} B3 F3 H3 J3 L3 N3 A5 N5 H7 N7 N9");
    let p = position(&x_stones, &o_stones, 'x', "battle");
    let st = State::from_jiu(&p);
    let mut moves = Vec::new();
    generate(
        &st,
        &Limits {
            no_capture_limit: 100,
            flying_single_jump: false,
        },
        GenMode::All,
        &mut moves,
    );
    let closing = moves
        .iter()
        .find(|m| m.from == cell_of(pt("D5")) && m.to == cell_of(pt("D4")))
        .expect("D5-D4 generated");
    assert_eq!(closing.victims.len(), 1);
    let victim = point_of(closing.victims[0]);
    assert!(
        ["K10", "L10", "K11", "L12"].contains(&victim.to_string().as_str()),
        "removed {victim}"
    );
}

/// The forced opening plus `x` and `o` stones, in the placement phase.
fn placement(x: &str, o: &str) -> Jiu {
    let side = if x.split_whitespace().count() == o.split_whitespace().count() {
        'x'
    } else {
        'o'
    };
    position(&format!("G7 {x}"), &format!("H8 {o}"), side, "placement")
}

#[test]
fn placement_completes_its_square_to_be() {
    // x has B2 C2 B3: C3 makes a square. o's stones far off form nothing.
    let p = placement("B2 C2 B3", "M12 K13 M2");
    assert_eq!(choose(&p), Move::Place(pt("C3")));
}

#[test]
fn placement_blocks_the_opponents_square_to_be() {
    // o has L12 M12 L13: x must take M13. x's own stones are scattered.
    let p = placement("B2 D4 B6", "L12 M12 L13");
    assert_eq!(choose(&p), Move::Place(pt("M13")));
}

#[test]
fn placement_puts_defence_before_attack() {
    // Both have a square-to-be; the paper's priority blocks first.
    let p = placement("B2 C2 B3", "L12 M12 L13");
    assert_eq!(choose(&p), Move::Place(pt("M13")));
}

#[test]
fn the_forced_opening_is_played() {
    let start = Jiu::start(&Options::default());
    let first = choose(&start);
    assert!(matches!(first, Move::Place(p) if CENTRE.contains(&p)));
    let second = choose(&played(&start, &first));
    assert!(matches!(second, Move::Place(p) if CENTRE.contains(&p)));
}

#[test]
fn answers_at_once_when_already_aborted() {
    // A busy battle position (x flies: many moves) and the abort flag already set: the engine
    // still returns a legal move, and its search completed no depth.
    let x = "B2 K10 L10 K11 M4 M6 C9 E9 G9 I9";
    let o = format!("{} C2 E2", row(13));
    let p = position(x, &o, 'x', "battle");
    let abort = AtomicBool::new(true);
    let mut searcher = Searcher {
        limits: Limits {
            no_capture_limit: 100,
            flying_single_jump: false,
        },
        abort: &abort,
        deadline: Instant::now() + Duration::from_secs(600),
        nodes: 0,
        stopped: false,
        tables: &mut Tables::new(),
    };
    let st = State::from_jiu(&p);
    let (best, depth) = searcher
        .root(&st, 32, Instant::now() + Duration::from_secs(600))
        .unwrap();
    assert_eq!(depth, 0);
    p.check_move(&best.to_move()).unwrap();
    // And through the Engine interface with an unlimited clock.
    let moves: Vec<String> = Vec::new();
    let mv = engine()
        .choose_move(&SearchRequest {
            moves: &moves,
            clock: ClockView::unlimited(),
            abort: &abort,
        })
        .unwrap();
    assert!(["G7", "H8"].contains(&mv.as_str()));
}

#[test]
fn unknown_and_bad_options_are_refused() {
    let rules = serde_json::Value::Null;
    for bad in [
        serde_json::json!({"colour": "red"}),
        serde_json::json!({"depth": 0}),
        serde_json::json!({"depth": "deep"}),
        serde_json::json!({"time_ms": -5}),
    ] {
        assert!(
            matches!(
                JiuEngine::new(&rules, &bad, 1),
                Err(EngineError::BadOption { .. })
            ),
            "{bad}"
        );
    }
    assert!(JiuEngine::new(&rules, &serde_json::json!({"depth": 3, "time_ms": "50"}), 1).is_ok());
    assert!(
        crate::engine::new_engine("jiu", GameId::Hex, &rules, &serde_json::Value::Null, 1).is_err()
    );
}

/// Lowest corners of every 2×2 window on the board.
fn windows() -> impl Iterator<Item = u8> {
    (1u8..=13).flat_map(|r| (1u8..=13).map(move |c| r * 16 + c))
}

/// The evaluation as it was written before the bit masks: point by point and window by
/// window over `cells`. `evaluate` must agree with it everywhere.
fn evaluate_cell_by_cell(st: &State, limits: &Limits) -> i32 {
    let me = st.to_move;
    let op = 3 - me;
    let cells = &st.cells;
    let fly = [false, st.can_fly(1), st.can_fly(2)];
    let single = st.single_jump_allowed(limits);
    // Per colour (index 1, 2): squares, closable near-squares, other near-squares, twos.
    let mut square = [0i32; 3];
    let mut closable = [0i32; 3];
    let mut near = [0i32; 3];
    let mut two = [0i32; 3];
    for c in windows() {
        let n = window_counts(cells, c);
        for who in [1u8, 2] {
            let k = n[usize::from(who)];
            if k == 4 {
                square[usize::from(who)] += 1;
            } else if k == 3 && n[0] == 1 {
                let hole = WINDOW_CELLS
                    .iter()
                    .map(|&w| c.wrapping_add(w))
                    .find(|&p| at(cells, p) == EMPTY)
                    .unwrap_or(c);
                let in_window = |p: u8| WINDOW_CELLS.iter().any(|&w| c.wrapping_add(w) == p);
                let can_close = fly[usize::from(who)]
                    || DIRS.iter().any(|&d| {
                        let p = hole.wrapping_add(d);
                        at(cells, p) == who && !in_window(p)
                    });
                if can_close {
                    closable[usize::from(who)] += 1;
                } else {
                    near[usize::from(who)] += 1;
                }
            } else if k == 2 && n[0] == 2 {
                two[usize::from(who)] += 1;
            }
        }
    }
    // Mobility (empty neighbours) and jump threats per colour.
    let mut mobility = [0i32; 3];
    let mut kill = [0i32; 3];
    for p in points() {
        let who = at(cells, p);
        if who != 1 && who != 2 {
            continue;
        }
        let enemy = 3 - who;
        for d in DIRS {
            let q = p.wrapping_add(d);
            let v = at(cells, q);
            if v == EMPTY {
                mobility[usize::from(who)] += 1;
            } else if v == enemy && at(cells, q.wrapping_add(d)) == EMPTY {
                kill[usize::from(who)] += 1;
            }
        }
    }
    let (m, o) = (usize::from(me), usize::from(op));
    let material = 100 * (st.count(me) as i32 - st.count(op) as i32);
    let squares = 12 * (square[m] - square[o]);
    let triple = 30 * closable[m].min(2)
        - (70 * closable[o].min(1) + 30 * (closable[o] - 1).max(0))
        + 8 * (near[m] - near[o])
        + 2 * (two[m] - two[o]);
    let kill_weight = if single { 1 } else { 0 };
    let kill_score = kill_weight
        * (20 * kill[m].min(3) - (35 * kill[o].min(1) + 10 * (kill[o] - 1).clamp(0, 3)));
    let moves =
        if fly[m] { 0 } else { mobility[m].min(40) } - if fly[o] { 0 } else { mobility[o].min(40) };
    material + squares + triple + kill_score + moves
}

/// Plays a random game (random placements, then random battle moves of the engine's own
/// generator, captures chosen with probability `capture_share`) for at most `plies` plies,
/// showing `visit` every position before its move.
fn random_game(
    seed: u64,
    single: bool,
    plies: usize,
    capture_share: f64,
    mut visit: impl FnMut(&Jiu, &State, &Limits),
) {
    let options = Options {
        flying_single_jump: single,
        ..Options::default()
    };
    let limits = Limits {
        no_capture_limit: 100,
        flying_single_jump: single,
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut position = Jiu::start(&options);
    for _ in 0..plies {
        if position.outcome().is_some() {
            break;
        }
        let st = State::from_jiu(&position);
        visit(&position, &st, &limits);
        if position.phase() == Phase::Placement {
            let lines = position.move_listing();
            let pick = &lines[rng.gen_range(0..lines.len())];
            position.play_unchecked(&Jiu::parse_move(pick).unwrap());
            continue;
        }
        let mut moves = Vec::new();
        generate(&st, &limits, GenMode::All, &mut moves);
        let captures: Vec<&BMove> = moves.iter().filter(|m| m.captures() > 0).collect();
        let m = if !captures.is_empty() && rng.gen_bool(capture_share) {
            captures[rng.gen_range(0..captures.len())]
        } else {
            &moves[rng.gen_range(0..moves.len())]
        };
        position.play_unchecked(&m.to_move());
    }
}

#[test]
fn the_evaluation_agrees_with_counting_cell_by_cell_over_random_games() {
    // Captures preferred, so that flying and the end of single jumps are reached; both
    // single-jump options, both sides to move.
    let mut positions = 0;
    for (seed, single) in [(5u64, false), (6, true), (7, false)] {
        random_game(seed, single, 600, 0.7, |position, st, limits| {
            assert_eq!(
                evaluate(st, limits),
                evaluate_cell_by_cell(st, limits),
                "{}",
                position.position_text()
            );
            positions += 1;
        });
    }
    assert!(positions > 500, "only {positions} positions compared");
}

#[test]
fn quiescence_moves_are_the_captures_among_all_moves_over_random_games() {
    // Jumps and square-forming steps, generated through the bit-mask shortcuts, against the
    // captures filtered out of every step and jump (side not flying; flies are chosen apart).
    let mut compared = 0;
    for seed in [8u64, 9] {
        random_game(seed, false, 500, 0.3, |position, st, limits| {
            if position.phase() == Phase::Placement || st.can_fly(st.to_move) {
                return;
            }
            let mut all = Vec::new();
            generate(st, limits, GenMode::Search, &mut all);
            let mut captures = Vec::new();
            generate(st, limits, GenMode::Captures, &mut captures);
            let expected: Vec<&BMove> = all.iter().filter(|m| m.captures() > 0).collect();
            assert_eq!(
                captures.iter().collect::<Vec<_>>(),
                expected,
                "{}",
                position.position_text()
            );
            compared += usize::from(!captures.is_empty());
        });
    }
    assert!(compared > 50, "only {compared} positions had captures");
}

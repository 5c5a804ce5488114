//! Unit tests of the Jiu rules: both phases, every battle move kind, square captures, every end
//! reason, every illegal-move class, text round trips and seeded random playouts.

use std::collections::HashSet;
use std::ops::ControlFlow;

use super::*;
use crate::game::test_support::{check_parsers_on, edited_text, junk_text, Prng};
use crate::game::{parse_options, Rules};

// ---------------------------------------------------------------------------------------------
// Helpers

fn pt(text: &str) -> Point {
    crate::game::coord::parse_point(text, SIZE).unwrap()
}

/// Points from a spec such as `"A1 C3 E1:G2"` (`P:Q` is the rectangle from P to Q).
fn points(spec: &str) -> Vec<Point> {
    let mut out = Vec::new();
    for item in spec.split_whitespace() {
        match item.split_once(':') {
            Some((a, b)) => {
                let (a, b) = (pt(a), pt(b));
                for col in a.col.min(b.col)..=a.col.max(b.col) {
                    for row in a.row.min(b.row)..=a.row.max(b.row) {
                        out.push(Point::new(col, row));
                    }
                }
            }
            None => out.push(pt(item)),
        }
    }
    out
}

/// Battle position text with `x` and `o` stones (point specs; `o` overrides `x`), and `side`.
fn battle_text(x: &str, o: &str, side: char, quiet: u32) -> String {
    let mut cells = [['.'; SIZE as usize]; SIZE as usize];
    for (spec, c) in [(x, 'x'), (o, 'o')] {
        for p in points(spec) {
            cells[p.row as usize][p.col as usize] = c;
        }
    }
    let rows: Vec<String> = cells.iter().rev().map(|r| r.iter().collect()).collect();
    format!("{} {side} phase=battle quiet={quiet}", rows.join("/"))
}

fn battle_with(x: &str, o: &str, side: char, options: &Options) -> Jiu {
    let text = battle_text(x, o, side, 0);
    Jiu::from_position_text(&text, options).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn battle(x: &str, o: &str, side: char) -> Jiu {
    battle_with(x, o, side, &Options::default())
}

/// 28 stones per side on rows far from the test area (x rows 12 and 14, o rows 1 and 3), so
/// that nobody flies and single jumps are allowed.
const X_FILL: &str = "A14:N14 A12:N12";
const O_FILL: &str = "A1:N1 A3:N3";

fn mv(text: &str) -> Move {
    Jiu::parse_move(text).unwrap_or_else(|e| panic!("{e}"))
}

fn legal(position: &Jiu) -> Vec<Move> {
    let mut out = Vec::new();
    position.legal_moves(&mut out);
    out
}

fn legal_texts(position: &Jiu) -> HashSet<String> {
    legal(position).iter().map(|m| m.to_string()).collect()
}

/// The legal moves starting from `from`, as text.
fn moves_from(position: &Jiu, from: &str) -> HashSet<String> {
    let from = pt(from);
    legal(position)
        .into_iter()
        .filter(|m| match m {
            Move::Place(_) => false,
            Move::Shift { from: f, .. } | Move::Jump { from: f, .. } => *f == from,
        })
        .map(|m| m.to_string())
        .collect()
}

fn set(items: &[&str]) -> HashSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn check(position: &Jiu, text: &str) -> Result<(), IllegalMove> {
    position.check_move(&mv(text))
}

fn played(position: &Jiu, text: &str) -> Jiu {
    let mut next = position.clone();
    next.play(&mv(text))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    next
}

fn options(limit: u32, flying_single_jump: bool) -> Options {
    Options {
        no_capture_limit: NonZeroU32::new(limit).unwrap(),
        flying_single_jump,
    }
}

fn binomial(n: usize, k: usize) -> u64 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u64, |acc, i| acc * (n - i) as u64 / (i + 1) as u64)
}

// ---------------------------------------------------------------------------------------------
// Options

#[test]
fn options_default_and_refuse_unknown_or_bad_values() {
    let defaults = parse_options::<Jiu>(&serde_json::json!({})).unwrap();
    assert_eq!(defaults, Options::default());
    assert_eq!(defaults.no_capture_limit.get(), 100);
    assert!(!defaults.flying_single_jump);
    let set = parse_options::<Jiu>(
        &serde_json::json!({"no_capture_limit": 7, "flying_single_jump": true}),
    )
    .unwrap();
    assert_eq!(set, options(7, true));
    let e = parse_options::<Jiu>(&serde_json::json!({"swap": true})).unwrap_err();
    assert!(e.message.contains("swap"), "{e}");
    let e = parse_options::<Jiu>(&serde_json::json!({"no_capture_limit": 0})).unwrap_err();
    assert!(e.message.contains("no_capture_limit"), "{e}");
    let e = parse_options::<Jiu>(&serde_json::json!({"flying_single_jump": "yes"})).unwrap_err();
    assert!(e.message.contains("flying_single_jump"), "{e}");
    let json = serde_json::to_value(Options::default()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"no_capture_limit": 100, "flying_single_jump": false})
    );
}

// ---------------------------------------------------------------------------------------------
// Placement phase

#[test]
fn start_offers_only_the_centre_diagonal() {
    let start = Jiu::start(&Options::default());
    assert_eq!(start.turn(), Side::First);
    assert_eq!(start.phase(), Phase::Placement);
    assert_eq!(start.outcome(), None);
    assert_eq!(legal_texts(&start), set(&["G7", "H8"]));
    assert_eq!(start.move_listing().len(), 2);
    assert!(matches!(
        check(&start, "A1"),
        Err(IllegalMove::ForcedOpening { .. })
    ));
}

#[test]
fn second_placement_is_the_other_centre_point() {
    let start = Jiu::start(&Options::default());
    for (first, second) in [("G7", "H8"), ("H8", "G7")] {
        let after = played(&start, first);
        assert_eq!(after.turn(), Side::Second);
        assert_eq!(legal_texts(&after), set(&[second]));
        assert_eq!(check(&after, first), Err(IllegalMove::Occupied(pt(first))));
        match check(&after, "A1") {
            Err(IllegalMove::ForcedOpening { allowed }) => assert_eq!(allowed, second),
            other => panic!("{other:?}"),
        }
        let third = played(&after, second);
        assert_eq!(third.turn(), Side::First);
        assert_eq!(legal(&third).len(), POINTS - 2);
        assert_eq!(check(&third, "A1"), Ok(()));
    }
}

#[test]
fn perft_from_the_start() {
    let start = Jiu::start(&Options::default());
    // Two forced placements, then any of the 194 empty points.
    assert_eq!(start.perft(1), 2);
    assert_eq!(start.perft(2), 2);
    assert_eq!(start.perft(3), 2 * (POINTS as u64 - 2));
}

/// Fills the board: G7, H8, then every other point in index order.
fn fill_order() -> Vec<Point> {
    let mut order = CENTRE.to_vec();
    order.extend(
        (0..POINTS)
            .map(|i| Point::from_index(i, SIZE))
            .filter(|p| !CENTRE.contains(p)),
    );
    order
}

#[test]
fn full_board_removes_the_centre_stones_and_black_moves_twice() {
    let mut position = Jiu::start(&Options::default());
    let order = fill_order();
    for (i, &p) in order.iter().enumerate() {
        assert_eq!(position.phase(), Phase::Placement);
        let expected = if i % 2 == 0 {
            Side::First
        } else {
            Side::Second
        };
        assert_eq!(position.turn(), expected, "placement {}", i + 1);
        position.play(&Move::Place(p)).unwrap();
    }
    // The last (196th) placement was Black's; Black also makes the first battle move.
    assert_eq!(position.phase(), Phase::Battle);
    assert_eq!(position.turn(), Side::Second);
    assert_eq!(position.outcome(), None);
    for p in CENTRE {
        assert_eq!(position.stone_at(p), None);
    }
    assert_eq!(position.stone_count(Side::First), 97);
    assert_eq!(position.stone_count(Side::Second), 97);
    assert_eq!(position.quiet_plies(), 0);
    // Every battle move ends on one of the two emptied points.
    let moves = legal(&position);
    assert!(!moves.is_empty());
    for m in &moves {
        let end = match m {
            Move::Shift { to, .. } => *to,
            Move::Jump { landings, .. } => *landings.last().unwrap(),
            Move::Place(_) => panic!("placement in battle: {m}"),
        };
        assert!(CENTRE.contains(&end), "{m}");
    }
    assert_eq!(
        check(&position, "A1"),
        Err(IllegalMove::WrongPhase {
            phase: Phase::Battle
        })
    );
    let text = position.position_text();
    assert!(text.ends_with(" o phase=battle quiet=0"), "{text}");
}

#[test]
fn placement_never_captures_or_forms_squares() {
    // x has a 2x2 block after its placement: nothing is removed and the quiet count stays 0.
    let order = fill_order();
    let mut position = Jiu::start(&Options::default());
    for &p in &order[..40] {
        position.play(&Move::Place(p)).unwrap();
    }
    assert_eq!(
        position.stone_count(Side::First) + position.stone_count(Side::Second),
        40
    );
    assert_eq!(
        check(&position, "A1-A2"),
        Err(IllegalMove::WrongPhase {
            phase: Phase::Placement
        })
    );
    assert_eq!(
        check(&position, "A1xA3"),
        Err(IllegalMove::WrongPhase {
            phase: Phase::Placement
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Battle moves

#[test]
fn step_goes_one_point_orthogonally() {
    let x = format!("{X_FILL} E5");
    let p = battle(&x, O_FILL, 'x');
    assert_eq!(
        moves_from(&p, "E5"),
        set(&["E5-E6", "E5-E4", "E5-D5", "E5-F5"])
    );
    assert_eq!(check(&p, "E5-E6"), Ok(()));
    assert_eq!(
        check(&p, "E5-F6"),
        Err(IllegalMove::NotAdjacent {
            from: pt("E5"),
            to: pt("F6")
        })
    );
    assert_eq!(
        check(&p, "E5-E7"),
        Err(IllegalMove::FlyNotAllowed {
            from: pt("E5"),
            to: pt("E7"),
            stones: 29
        })
    );
    assert_eq!(check(&p, "E5-E5"), Err(IllegalMove::Occupied(pt("E5"))));
    assert_eq!(check(&p, "E7-E8"), Err(IllegalMove::NoStoneAt(pt("E7"))));
    assert_eq!(check(&p, "A3-A4"), Err(IllegalMove::NotYourStone(pt("A3"))));
    assert_eq!(check(&p, "A12-A13"), Ok(()));
    assert_eq!(check(&p, "A12-A14"), Err(IllegalMove::Occupied(pt("A14"))));
    let after = played(&p, "E5-E6");
    assert_eq!(after.stone_at(pt("E5")), None);
    assert_eq!(after.stone_at(pt("E6")), Some(Side::First));
    assert_eq!(after.turn(), Side::Second);
    assert_eq!(after.quiet_plies(), 1);
}

#[test]
fn a_side_with_fourteen_or_fewer_stones_flies() {
    // x: 14 stones, o: 28. x flies anywhere empty; o still steps.
    let p = battle("A14:N14", O_FILL, 'x');
    assert!(p.can_fly(Side::First));
    let empties = POINTS - 14 - 28;
    assert_eq!(moves_from(&p, "A14").len(), empties);
    assert_eq!(check(&p, "A14-G7"), Ok(()));
    assert_eq!(check(&p, "A14-A13"), Ok(()));
    assert_eq!(check(&p, "A14-B14"), Err(IllegalMove::Occupied(pt("B14"))));
    let after = played(&p, "A14-G7");
    assert_eq!(after.stone_at(pt("G7")), Some(Side::First));
    // o (28 stones) may not fly.
    assert!(matches!(
        check(&after, "A3-G9"),
        Err(IllegalMove::FlyNotAllowed { stones: 28, .. })
    ));
    // With 15 stones x no longer flies.
    let p = battle("A14:N14 A12", O_FILL, 'x');
    assert!(!p.can_fly(Side::First));
    assert!(matches!(
        check(&p, "A14-G7"),
        Err(IllegalMove::FlyNotAllowed { stones: 15, .. })
    ));
}

#[test]
fn jump_chains_list_every_prefix_and_remove_the_jumped_stones() {
    // C5 jumps C6 to C7, D7 to E7, E8 to E9 (or stops earlier).
    let x = format!("{X_FILL} C5");
    let o = format!("{O_FILL} C6 D7 E8");
    let p = battle(&x, &o, 'x');
    assert_eq!(
        moves_from(&p, "C5"),
        set(&[
            "C5-C4",
            "C5-B5",
            "C5-D5",
            "C5xC7",
            "C5xC7xE7",
            "C5xC7xE7xE9"
        ])
    );
    for prefix in ["C5xC7", "C5xC7xE7", "C5xC7xE7xE9"] {
        assert_eq!(check(&p, prefix), Ok(()), "{prefix}");
    }
    let after = played(&p, "C5xC7xE7xE9");
    for gone in ["C5", "C6", "D7", "E8"] {
        assert_eq!(after.stone_at(pt(gone)), None, "{gone}");
    }
    assert_eq!(after.stone_at(pt("E9")), Some(Side::First));
    assert_eq!(after.stone_count(Side::Second), 28);
    assert_eq!(after.quiet_plies(), 0);
    // Jumping is never compulsory: the step stays legal.
    assert_eq!(check(&p, "C5-C4"), Ok(()));
}

#[test]
fn jump_legs_are_checked_one_by_one() {
    let x = format!("{X_FILL} C5 D5");
    let o = format!("{O_FILL} C6 D7 E8");
    let p = battle(&x, &o, 'x');
    let bad = |leg, fault| Err(IllegalMove::BadJump { leg, fault });
    assert_eq!(
        check(&p, "C5xC8"),
        bad(
            1,
            JumpFault::NotInLine {
                from: pt("C5"),
                to: pt("C8")
            }
        )
    );
    assert_eq!(
        check(&p, "C5xE7"),
        bad(
            1,
            JumpFault::NotInLine {
                from: pt("C5"),
                to: pt("E7")
            }
        )
    );
    assert_eq!(
        check(&p, "C5xA5"),
        bad(1, JumpFault::NotOverEnemy { over: pt("B5") })
    );
    assert_eq!(
        check(&p, "C5xE5"),
        bad(1, JumpFault::NotOverEnemy { over: pt("D5") })
    );
    assert_eq!(
        check(&p, "C5xC7xC9"),
        bad(2, JumpFault::NotOverEnemy { over: pt("C8") })
    );
    // D5 over D6 (empty) fails although D7 holds an enemy stone.
    assert_eq!(
        check(&p, "D5xD7"),
        bad(1, JumpFault::NotOverEnemy { over: pt("D6") })
    );
    let blocked = battle(&format!("{X_FILL} C5 C7"), &format!("{O_FILL} C6"), 'x');
    assert_eq!(
        check(&blocked, "C5xC7"),
        bad(1, JumpFault::LandingNotEmpty { at: pt("C7") })
    );
    let none = Move::Jump {
        from: pt("C5"),
        landings: Vec::new(),
        victims: Victims::none(),
    };
    assert_eq!(p.check_move(&none), bad(1, JumpFault::NoLanding));
}

#[test]
fn a_chain_may_not_revisit_a_point() {
    // B6 around the ring B7, C8, D7, C6 would land back on its start B6.
    let x = format!("{X_FILL} B6");
    let o = format!("{O_FILL} B7 C8 D7 C6");
    let p = battle(&x, &o, 'x');
    let from_b6 = moves_from(&p, "B6");
    assert!(from_b6.contains("B6xB8xD8xD6"), "{from_b6:?}");
    assert!(!from_b6.iter().any(|m| m.ends_with("xB6")), "{from_b6:?}");
    assert_eq!(
        check(&p, "B6xB8xD8xD6xB6"),
        Err(IllegalMove::BadJump {
            leg: 4,
            fault: JumpFault::Revisit { at: pt("B6") }
        })
    );
    // Landing twice on a middle point: A8 -> C8 -> E8 -> E10 -> C10 -> C8.
    let x = format!("{X_FILL} A8");
    let o = format!("{O_FILL} B8 D8 E9 D10 C9");
    let p = battle(&x, &o, 'x');
    assert_eq!(check(&p, "A8xC8xE8xE10xC10"), Ok(()));
    assert_eq!(
        check(&p, "A8xC8xE8xE10xC10xC8"),
        Err(IllegalMove::BadJump {
            leg: 5,
            fault: JumpFault::Revisit { at: pt("C8") }
        })
    );
    assert!(!moves_from(&p, "A8").contains("A8xC8xE8xE10xC10xC8"));
}

#[test]
fn single_jumps_need_a_chain_while_a_side_is_small() {
    // x has 14 stones (and flies); o has 30. Neither side may make a single jump.
    let o = format!("{O_FILL} E5 E7");
    let p = battle("B14:N14 E4", &o, 'x');
    assert!(p.can_fly(Side::First));
    assert!(!p.single_jump_allowed());
    assert_eq!(check(&p, "E4xE6"), Err(IllegalMove::SingleJumpForbidden));
    assert_eq!(check(&p, "E4xE6xE8"), Ok(()));
    let from_e4 = moves_from(&p, "E4");
    assert!(from_e4.contains("E4xE6xE8"), "{from_e4:?}");
    assert!(!from_e4.contains("E4xE6"), "{from_e4:?}");
    // o to move: o has 30 stones, but x's 14 forbid o's single jumps too.
    let p_o = battle("C14:N14 E4 E8", &o, 'o');
    assert!(!p_o.single_jump_allowed());
    assert_eq!(
        check(&p_o, "E5xE3"),
        Err(IllegalMove::BadJump {
            leg: 1,
            fault: JumpFault::LandingNotEmpty { at: pt("E3") }
        })
    );
    assert_eq!(check(&p_o, "E7xE9"), Err(IllegalMove::SingleJumpForbidden));
    assert!(!moves_from(&p_o, "E7").contains("E7xE9"));
    // With the option on, single jumps are legal again.
    let allowed = battle_with("B14:N14 E4", &o, 'x', &options(100, true));
    assert!(allowed.single_jump_allowed());
    assert_eq!(check(&allowed, "E4xE6"), Ok(()));
    assert!(moves_from(&allowed, "E4").contains("E4xE6"));
    let allowed_o = battle_with("C14:N14 E4 E8", &o, 'o', &options(100, true));
    assert_eq!(check(&allowed_o, "E7xE9"), Ok(()));
    // Both sides above 14: single jumps without the option.
    let big = battle(&format!("{X_FILL} E4"), &o, 'x');
    assert!(big.single_jump_allowed());
    assert_eq!(check(&big, "E4xE6"), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Square captures

#[test]
fn one_square_takes_one_enemy_stone_anywhere() {
    let x = format!("{X_FILL} E5 F5 E6 F7");
    let p = battle(&x, O_FILL, 'x');
    let listing = p.move_listing();
    assert!(listing.contains(&"F7-F6+?".to_string()), "{listing:?}");
    assert!(!listing.contains(&"F7-F6".to_string()));
    let from_f7: Vec<String> = legal(&p)
        .iter()
        .map(|m| m.to_string())
        .filter(|m| m.starts_with("F7-F6"))
        .collect();
    assert_eq!(from_f7.len(), 28, "one move per o stone");
    assert_eq!(check(&p, "F7-F6+A1"), Ok(()));
    assert_eq!(check(&p, "f7-f6+n3"), Ok(()));
    assert_eq!(
        check(&p, "F7-F6"),
        Err(IllegalMove::WrongVictimCount {
            expected: 1,
            got: 0
        })
    );
    assert_eq!(
        check(&p, "F7-F6+A1+B1"),
        Err(IllegalMove::WrongVictimCount {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        check(&p, "F7-F6+A2"),
        Err(IllegalMove::VictimNotEnemy(pt("A2")))
    );
    assert_eq!(
        check(&p, "F7-F6+E5"),
        Err(IllegalMove::VictimNotEnemy(pt("E5")))
    );
    // A move forming no square names no victim.
    assert_eq!(
        check(&p, "F7-G7+A1"),
        Err(IllegalMove::WrongVictimCount {
            expected: 0,
            got: 1
        })
    );
    let after = played(&p, "F7-F6+C3");
    assert_eq!(after.stone_at(pt("C3")), None);
    assert_eq!(after.stone_count(Side::Second), 27);
    assert_eq!(after.quiet_plies(), 0);
}

#[test]
fn two_squares_take_two_distinct_stones_in_any_order() {
    // F6 completes E5-F6 and F5-G6.
    let x = format!("{X_FILL} E5 F5 G5 E6 G6 F7");
    let p = battle(&x, O_FILL, 'x');
    assert!(p.move_listing().contains(&"F7-F6+?+?".to_string()));
    let count = legal(&p)
        .iter()
        .filter(|m| m.to_string().starts_with("F7-F6+"))
        .count() as u64;
    assert_eq!(count, binomial(28, 2));
    assert_eq!(mv("F7-F6+C1+A1"), mv("F7-F6+A1+C1"));
    assert_eq!(mv("F7-F6+C1+A1").to_string(), "F7-F6+A1+C1");
    assert_eq!(check(&p, "F7-F6+N3+A1"), Ok(()));
    assert_eq!(
        check(&p, "F7-F6+A1+A1"),
        Err(IllegalMove::DuplicateVictim(pt("A1")))
    );
    assert_eq!(
        check(&p, "F7-F6+A1"),
        Err(IllegalMove::WrongVictimCount {
            expected: 2,
            got: 1
        })
    );
    let after = played(&p, "F7-F6+N3+A1");
    assert_eq!(after.stone_count(Side::Second), 26);
}

#[test]
fn three_and_four_squares() {
    // Flying into the middle of a 3x3 block completes four squares; with a corner missing, three.
    let p = battle("D4:F6 A14:C14", O_FILL, 'x');
    assert!(p.can_fly(Side::First));
    let hole = battle("D4:D6 E4 E6 F4:F6 A14:C14", O_FILL, 'x');
    assert_eq!(p.stone_count(Side::First), 12);
    assert_eq!(check(&hole, "A14-E5+A1+B1+C1+D1"), Ok(()));
    assert!(hole.move_listing().contains(&"A14-E5+?+?+?+?".to_string()));
    let four = legal(&hole)
        .iter()
        .filter(|m| m.to_string().starts_with("A14-E5+"))
        .count() as u64;
    assert_eq!(four, binomial(28, 4));
    let after = played(&hole, "A14-E5+A1+B1+C1+D1");
    assert_eq!(after.stone_count(Side::Second), 24);
    let three = battle("D4:D6 E4 E6 F4:F5 A14:C14", O_FILL, 'x');
    assert!(three.move_listing().contains(&"A14-E5+?+?+?".to_string()));
    assert_eq!(
        check(&three, "A14-E5+A1+B1"),
        Err(IllegalMove::WrongVictimCount {
            expected: 3,
            got: 2
        })
    );
    assert_eq!(check(&three, "A14-E5+A1+B1+N1"), Ok(()));
}

#[test]
fn fewer_enemy_stones_than_squares_removes_them_all() {
    // Four squares but o has only two stones left (both flying sides): both go, x wins. The
    // listing still shows the four squares; the move names the two stones.
    let p = battle("D4:D6 E4 E6 F4:F6 A14", "N1 N3", 'x');
    assert_eq!(p.outcome(), None);
    assert!(p.move_listing().contains(&"A14-E5+?+?+?+?".to_string()));
    let moves: Vec<String> = legal(&p)
        .iter()
        .map(|m| m.to_string())
        .filter(|m| m.starts_with("A14-E5"))
        .collect();
    assert_eq!(moves, vec!["A14-E5+N1+N3".to_string()]);
    assert_eq!(
        check(&p, "A14-E5+N1"),
        Err(IllegalMove::WrongVictimCount {
            expected: 2,
            got: 1
        })
    );
    let after = played(&p, "A14-E5+N3+N1");
    assert_eq!(after.stone_count(Side::Second), 0);
    assert_eq!(
        after.outcome(),
        Some(Outcome::win(Side::First, EndReason::FewStones))
    );
    // A jump chain that leaves fewer enemies than the squares it forms: the jumped stones are
    // gone before the victims are counted. A7 jumps B7 and D7 to E7, forming two squares (two
    // `+?` in the listing) with one o stone left (one victim named).
    let p = battle("A7 F7 E8 F8 E6 F6", "B7 D7 N1", 'x');
    assert!(p.move_listing().contains(&"A7xC7xE7+?+?".to_string()));
    assert_eq!(check(&p, "A7xC7xE7+N1"), Ok(()));
    assert_eq!(
        check(&p, "A7xC7xE7+N1+B7"),
        Err(IllegalMove::WrongVictimCount {
            expected: 1,
            got: 2
        })
    );
    let after = played(&p, "A7xC7xE7+N1");
    assert_eq!(after.stone_count(Side::Second), 0);
    assert_eq!(
        after.outcome(),
        Some(Outcome::win(Side::First, EndReason::FewStones))
    );
}

#[test]
fn the_listing_counts_squares_while_the_move_names_the_stones_left() {
    // A1 jumps A2, A4 and B5 to C5, completing C4-D5 and C5-D6: two squares, but only N14 is
    // left to remove. Listed with two `+?`; the move names N14 alone.
    let p = battle("A1 C4 D4 D5 C6 D6", "A2 A4 B5 N14", 'x');
    assert_eq!(p.outcome(), None);
    let listing = p.move_listing();
    assert!(
        listing.contains(&"A1xA3xA5xC5+?+?".to_string()),
        "{listing:?}"
    );
    assert!(!listing.contains(&"A1xA3xA5xC5+?".to_string()));
    let chains: Vec<String> = legal(&p)
        .iter()
        .map(|m| m.to_string())
        .filter(|m| m.starts_with("A1xA3xA5xC5"))
        .collect();
    assert_eq!(chains, vec!["A1xA3xA5xC5+N14".to_string()]);
    assert_eq!(
        check(&p, "A1xA3xA5xC5"),
        Err(IllegalMove::WrongVictimCount {
            expected: 1,
            got: 0
        })
    );
    let after = played(&p, "A1xA3xA5xC5+N14");
    assert_eq!(after.stone_count(Side::Second), 0);
    assert_eq!(
        after.outcome(),
        Some(Outcome::win(Side::First, EndReason::FewStones))
    );
    // Where enough enemy stones are left the two counts agree: the fly to C5 forms the same
    // two squares against four o stones.
    assert!(listing.contains(&"A1-C5+?+?".to_string()), "{listing:?}");
    let flies = legal(&p)
        .iter()
        .filter(|m| m.to_string().starts_with("A1-C5+"))
        .count() as u64;
    assert_eq!(flies, binomial(4, 2));
    // The web view's entry for the chain asks for the one stone that can be removed.
    let choices = p.move_choices(10_000).unwrap();
    let chain = choices
        .iter()
        .find(|c| c.text == "A1xA3xA5xC5")
        .expect("the chain is offered");
    assert_eq!(chain.remove, 1);
    assert_eq!(chain.removable, vec![pt("N14")]);
    assert_eq!(chain.complete_moves(), 1);
    check_all_moves(&p);
}

#[test]
fn a_jump_can_end_in_a_square() {
    // C7 jumps over D7; landing on E7 completes the square E7 F7 E8 F8.
    let x = format!("{X_FILL} C7 F7 E8 F8");
    let o = format!("{O_FILL} D7");
    let p = battle(&x, &o, 'x');
    assert!(p.move_listing().contains(&"C7xE7+?".to_string()));
    assert_eq!(check(&p, "C7xE7+A1"), Ok(()));
    assert_eq!(
        check(&p, "C7xE7+D7"),
        Err(IllegalMove::VictimNotEnemy(pt("D7")))
    );
    let after = played(&p, "C7xE7+A1");
    // 29 o stones: D7 jumped, A1 taken by the square.
    assert_eq!(after.stone_count(Side::Second), 27);
    assert_eq!(after.stone_at(pt("D7")), None);
}

// ---------------------------------------------------------------------------------------------
// End of the game

#[test]
fn few_stones_ends_the_game_for_the_mover() {
    // o has 4 stones; x jumps one: o is left with 3.
    let x = format!("{X_FILL} E5");
    let p = battle(&x, "E6 A1 B1 C1", 'x');
    assert_eq!(p.outcome(), None);
    assert!(p.can_fly(Side::Second));
    assert_eq!(check(&p, "E5xE7"), Err(IllegalMove::SingleJumpForbidden));
    let p = battle_with(&x, "E6 A1 B1 C1", 'x', &options(100, true));
    let after = played(&p, "E5xE7");
    assert_eq!(
        after.outcome(),
        Some(Outcome::win(Side::First, EndReason::FewStones))
    );
    assert!(legal(&after).is_empty());
    assert!(after.move_listing().is_empty());
    assert_eq!(check(&after, "A1-A2"), Err(IllegalMove::GameOver));
    // A position whose side to move has 3 stones is over already.
    let over = battle(X_FILL, "A1 B1 C1", 'o');
    assert_eq!(
        over.outcome(),
        Some(Outcome::win(Side::First, EndReason::FewStones))
    );
}

#[test]
fn move_limit_more_stones_win_equal_counts_draw() {
    let opts = options(2, false);
    let p = battle_with(X_FILL, O_FILL, 'x', &opts);
    let p = played(&p, "A12-A11");
    assert_eq!(p.outcome(), None);
    let p = played(&p, "A3-A4");
    assert_eq!(p.outcome(), Some(Outcome::draw(EndReason::MoveLimit)));
    // x has one stone more: x wins, whoever made the last quiet ply.
    let x = format!("{X_FILL} G7");
    let p = battle_with(&x, O_FILL, 'x', &opts);
    let p = played(&played(&p, "A12-A11"), "A3-A4");
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::First, EndReason::MoveLimit))
    );
    let o = format!("{O_FILL} G7");
    let p = battle_with(X_FILL, &o, 'x', &opts);
    let p = played(&played(&p, "A12-A11"), "A3-A4");
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::Second, EndReason::MoveLimit))
    );
    // A capture resets the count.
    let x = format!("{X_FILL} E5");
    let o = format!("{O_FILL} E6");
    let p = battle_with(&x, &o, 'x', &opts);
    let p = played(&p, "A12-A11");
    assert_eq!(p.quiet_plies(), 1);
    let p = played(&p, "A3-A4");
    assert!(p.outcome().is_some());
    let p = Jiu::from_position_text(&battle_text(&x, &o, 'x', 1), &opts).unwrap();
    let p = played(&p, "E5xE7");
    assert_eq!(p.quiet_plies(), 0);
    assert_eq!(p.outcome(), None);
    // quiet read from position text counts.
    let done = Jiu::from_position_text(&battle_text(X_FILL, O_FILL, 'x', 2), &opts).unwrap();
    assert_eq!(done.outcome(), Some(Outcome::draw(EndReason::MoveLimit)));
}

#[test]
fn no_moves_loses() {
    // o: a 5x4 block in the corner, walled in by x, plus one free stone on N14. x steps N4-N5,
    // forming one square, and removes N14: o has no move left.
    let o = "A1:E4 N14";
    let mut x_points = Vec::new();
    for p in (0..POINTS).map(|i| Point::from_index(i, SIZE)) {
        let text = p.to_string();
        if !points(o).contains(&p) && text != "N5" && text != "N13" {
            x_points.push(text);
        }
    }
    let p = battle(&x_points.join(" "), o, 'x');
    assert_eq!(p.outcome(), None);
    assert!(p.move_listing().contains(&"N4-N5+?".to_string()));
    let after = played(&p, "N4-N5+N14");
    assert_eq!(
        after.outcome(),
        Some(Outcome::win(Side::First, EndReason::NoMoves))
    );
    // Taking a block stone instead leaves o a move.
    let other = played(&p, "N4-N5+A1");
    assert_eq!(other.outcome(), None);
    // A flying side always has a move while the board has an empty point.
    let p = battle(X_FILL, "A1:E2", 'o');
    assert!(p.can_fly(Side::Second));
    assert_eq!(p.outcome(), None);
}

// ---------------------------------------------------------------------------------------------
// Illegal moves not covered above

#[test]
fn off_board_points_are_refused_not_panicked_on() {
    let p = battle(X_FILL, O_FILL, 'x');
    let far = Point::new(20, 3);
    let moves = [
        Move::Shift {
            from: far,
            to: pt("A1"),
            victims: Victims::none(),
        },
        Move::Shift {
            from: pt("A12"),
            to: Point::new(0, 200),
            victims: Victims::none(),
        },
        Move::Jump {
            from: pt("A12"),
            landings: vec![Point::new(0, 255)],
            victims: Victims::none(),
        },
    ];
    for m in &moves {
        assert!(
            matches!(p.check_move(m), Err(IllegalMove::OffBoard { .. })),
            "{m:?}"
        );
    }
    let start = Jiu::start(&Options::default());
    assert!(matches!(
        start.check_move(&Move::Place(far)),
        Err(IllegalMove::OffBoard { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Text

#[test]
fn move_text_round_trips_and_is_case_insensitive() {
    for text in [
        "G7",
        "N14",
        "A1-A2",
        "G7-A1",
        "G7xG9",
        "G7xG9xI9xI11",
        "G7-G8+B3",
        "G7xG9+C4+M2",
        "A1xA3+A5+B5+C5+D5",
    ] {
        let m = mv(text);
        assert_eq!(m.to_string(), text);
        assert_eq!(mv(&text.to_lowercase()), m);
    }
    assert_eq!(mv("g7Xg9xI9").to_string(), "G7xG9xI9");
    assert_eq!(mv("G7xG9+M2+C4").to_string(), "G7xG9+C4+M2");
    assert_eq!(mv("G7-G8+B3+B3").victims(), &[pt("B3"), pt("B3")]);
}

#[test]
fn bad_move_text_says_what_and_where() {
    let cases: [(&str, usize, &str); 12] = [
        ("", 1, "found the end"),
        ("O5", 1, "off the board"),
        ("G15", 2, "off the board"),
        ("G7+A1", 3, "placement removes nothing"),
        ("G7-", 4, "found the end"),
        ("G7-G8-G9", 6, "`x`"),
        ("G7xG9+A1xB2", 9, "after the last landing"),
        ("G7x", 4, "found the end"),
        ("G7*G8", 3, "expected `-`"),
        ("G7-G8+", 7, "found the end"),
        ("G7-G8 ", 6, "unexpected"),
        ("G7xG9+A1?", 9, "unexpected"),
    ];
    for (text, at, what) in cases {
        let e = Jiu::parse_move(text).unwrap_err();
        assert_eq!(e.at, at, "{text}: {e}");
        assert!(e.what.contains(what), "{text}: {e}");
    }
}

#[test]
fn junk_text_never_panics() {
    let mut rng = Prng::new(0x5eed_1234);
    let alphabet: Vec<char> = "aAgGnNoOxX-+.=/ 0123456789é\u{0}\t".chars().collect();
    let good = battle_text(X_FILL, O_FILL, 'x', 0);
    for _ in 0..3000 {
        let text = junk_text(&mut rng, &alphabet, 24);
        check_parsers_on::<Jiu>(&text, &Options::default());
        let edited = edited_text(&mut rng, &good, &alphabet);
        check_parsers_on::<Jiu>(&edited, &Options::default());
    }
    // Junk around a valid position.
    for cut in 0..good.len() {
        let _ = Jiu::from_position_text(&good[..cut], &Options::default());
        let mut changed = good.clone().into_bytes();
        changed[cut] = b'#';
        let changed = String::from_utf8(changed).unwrap();
        let result = Jiu::from_position_text(&changed, &Options::default());
        if good.as_bytes()[cut] != b' ' {
            assert!(result.is_err(), "{changed}");
        }
    }
}

#[test]
fn bad_position_text_says_what_and_where() {
    let opts = Options::default();
    let good = battle_text(X_FILL, O_FILL, 'x', 0);
    let rows = good.split(' ').next().unwrap().to_string();
    let cases = [
        (String::new(), "found nothing"),
        (rows.clone(), "side to move"),
        (
            format!("{rows} x"),
            "phase=placement or phase=battle is required",
        ),
        (format!("{rows} z phase=battle"), "x or o"),
        (format!("{rows} x phase=war"), "placement or battle"),
        (format!("{rows} x phase=battle phase=battle"), "twice"),
        (format!("{rows} x phase=battle quiet=-1"), "whole number"),
        (
            format!("{rows} x phase=battle quiet=99999999999"),
            "whole number",
        ),
        (format!("{rows} x phase=battle stones=2"), "unknown key"),
        (format!("{rows} x phase=battle junk"), "key=value"),
        (
            format!("{rows}/.............. x phase=battle"),
            "more than 14 rows",
        ),
        (format!("{} x phase=battle", &rows[15..]), "expected 14"),
        (format!("{}. x phase=battle", rows), "more than 14"),
        (
            format!("{} x phase=battle", &rows[..rows.len() - 1]),
            "row 1 has 13",
        ),
        (
            format!(
                "{} x phase=placement",
                battle_text(X_FILL, "", 'x', 0).split(' ').next().unwrap()
            ),
            "x places first",
        ),
    ];
    for (text, what) in cases {
        let e = Jiu::from_position_text(&text, &opts).unwrap_err();
        assert!(e.what.contains(what), "{text}: {e}");
        assert!(e.at >= 1 && e.at <= text.chars().count() + 1, "{text}: {e}");
    }
    // Placement positions must be reachable.
    let empty_rows = vec![".".repeat(14); 14].join("/");
    assert!(Jiu::from_position_text(&format!("{empty_rows} x phase=placement"), &opts).is_ok());
    let e = Jiu::from_position_text(&format!("{empty_rows} o phase=placement"), &opts).unwrap_err();
    assert!(e.what.contains("x's turn"), "{e}");
    let e = Jiu::from_position_text(&format!("{empty_rows} x phase=placement quiet=3"), &opts)
        .unwrap_err();
    assert!(e.what.contains("quiet"), "{e}");
    let mut one = Jiu::start(&opts);
    one.play(&mv("H8")).unwrap();
    let text = one.position_text();
    assert_eq!(Jiu::from_position_text(&text, &opts).unwrap(), one);
    let wrong_first = text.replacen('x', ".", 1).replacen('.', "x", 1);
    let e = Jiu::from_position_text(&wrong_first, &opts).unwrap_err();
    assert!(e.what.contains("forced opening"), "{e}");
}

#[test]
fn position_text_round_trips() {
    let opts = Options::default();
    let start = Jiu::start(&opts);
    let text = start.position_text();
    assert_eq!(
        text,
        format!("{} x phase=placement", vec![".".repeat(14); 14].join("/"))
    );
    assert_eq!(Jiu::from_position_text(&text, &opts).unwrap(), start);
    let p = battle(X_FILL, O_FILL, 'o');
    let p = played(&p, "A3-A4");
    let text = p.position_text();
    assert!(text.ends_with(" x phase=battle quiet=1"), "{text}");
    assert_eq!(Jiu::from_position_text(&text, &opts).unwrap(), p);
    // Upper-case stones and keys are read too; extra blanks are fine.
    let loud = format!(
        "  {}  ",
        text.to_uppercase().replace("PHASE=BATTLE", "phase=Battle")
    );
    assert_eq!(Jiu::from_position_text(&loud, &opts).unwrap(), p);
}

#[test]
fn position_keys_and_phase_words_are_read_in_any_case_and_written_in_lower_case() {
    let opts = Options::default();
    let start = Jiu::start(&opts);
    let text = start.position_text();
    let rows = text.split(' ').next().unwrap();
    for tail in ["X PHASE=PLACEMENT", "x Phase=Placement QUIET=0"] {
        let loud = Jiu::from_position_text(&format!("{rows} {tail}"), &opts)
            .unwrap_or_else(|e| panic!("{tail}: {e}"));
        assert_eq!(loud, start, "{tail}");
        assert_eq!(loud.position_text(), text);
    }
    let p = battle(X_FILL, O_FILL, 'x');
    let text = p.position_text();
    assert!(text.ends_with(" x phase=battle quiet=0"), "{text}");
    let rows = text.split(' ').next().unwrap();
    let loud = Jiu::from_position_text(&format!("{rows} x PHASE=BATTLE QuIeT=0"), &opts).unwrap();
    assert_eq!(loud, p);
    assert_eq!(loud.position_text(), text);
    let e =
        Jiu::from_position_text(&format!("{rows} x PHASE=battle phase=battle"), &opts).unwrap_err();
    assert!(e.what.contains("phase is given twice"), "{e}");
    let e = Jiu::from_position_text(&format!("{rows} x phase=battle STONES=2"), &opts).unwrap_err();
    assert!(e.what.contains("unknown key \"STONES\""), "{e}");
    assert_eq!(e.at, rows.len() + 17);
    let e = Jiu::from_position_text(&format!("{rows} x PHASE=WAR"), &opts).unwrap_err();
    assert!(e.what.contains("placement or battle, found \"WAR\""), "{e}");
    assert_eq!(e.at, rows.len() + 10);
}

// ---------------------------------------------------------------------------------------------
// Whole-list checks and random playouts

/// Checks every legal move and the listing of `position`: no duplicates, each passes
/// `check_move` and round-trips through text, and the listing expands to exactly the list.
/// Positions whose list would be huge (many victim sets) are only checked through the listing.
fn check_all_moves(position: &Jiu) {
    let listing = position.move_listing();
    let unique: HashSet<&String> = listing.iter().collect();
    assert_eq!(unique.len(), listing.len(), "duplicate in listing");
    let enemy = position.turn().opponent();
    let expanded: u64 = listing
        .iter()
        .map(|line| {
            // One `+?` per square; the move names min(squares, stones left) victims.
            let squares = line.matches("+?").count();
            if squares == 0 {
                return 1;
            }
            let base = mv(line.trim_end_matches("+?"));
            let jumped = match &base {
                Move::Jump { landings, .. } => landings.len(),
                _ => 0,
            };
            let left = position.stone_count(enemy) as usize - jumped;
            binomial(left, squares.min(left))
        })
        .sum();
    if expanded > 100_000 {
        return;
    }
    let moves = legal(position);
    assert_eq!(expanded, moves.len() as u64);
    let mut seen = HashSet::new();
    for m in &moves {
        assert!(seen.insert(m.clone()), "duplicate {m}");
        assert_eq!(position.check_move(m), Ok(()), "{m}");
        assert_eq!(&mv(&m.to_string()), m);
    }
}

/// A random legal move: a random action, then random victims for its squares. A `greedy` player
/// takes a capturing action (jump or square) when it has one, three times out of four.
fn random_move(position: &Jiu, rng: &mut Prng, greedy: bool) -> Move {
    if position.phase() == Phase::Placement {
        let moves = legal(position);
        return moves[rng.below(moves.len())].clone();
    }
    let enemy = position.turn().opponent();
    let mut actions = Vec::new();
    let _ = position.for_each_action(&mut |action, board, squares| {
        let need = squares.removes;
        let enemies = if need > 0 {
            stones_of(board, enemy)
        } else {
            Vec::new()
        };
        actions.push((action, need, enemies));
        ControlFlow::Continue(())
    });
    let captures: Vec<usize> = (0..actions.len())
        .filter(|&i| actions[i].1 > 0 || matches!(actions[i].0, Action::Jump { .. }))
        .collect();
    let pick = if greedy && !captures.is_empty() && rng.below(4) > 0 {
        captures[rng.below(captures.len())]
    } else {
        rng.below(actions.len())
    };
    let (action, need, mut enemies) = actions.swap_remove(pick);
    let mut victims = Vec::new();
    for _ in 0..need {
        victims.push(enemies.swap_remove(rng.below(enemies.len())));
    }
    action.with_victims(Victims::new(victims))
}

#[test]
fn random_playouts_end_and_every_move_checks() {
    let mut reasons = HashSet::new();
    for game in 0..20u64 {
        let opts = options(if game % 3 == 0 { 30 } else { 100 }, game % 4 == 1);
        let mut rng =
            Prng::new(0x9E37_79B9_7F4A_7C15 ^ (game + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let mut position = Jiu::start(&opts);
        let mut plies = 0u32;
        while position.outcome().is_none() {
            if plies.is_multiple_of(37) || plies == 196 {
                check_all_moves(&position);
            }
            let m = random_move(&position, &mut rng, game % 2 == 1);
            assert_eq!(
                position.check_move(&m),
                Ok(()),
                "game {game} ply {plies}: {m}"
            );
            assert_eq!(mv(&m.to_string()), m);
            let listed_as = if plies.is_multiple_of(5) {
                let base = m.to_string().split('+').next().unwrap().to_string();
                Some((position.move_listing(), base, position.turn()))
            } else {
                None
            };
            position.play_unchecked(&m);
            if let Some((listing, base, mover)) = listed_as {
                // Listed once, with one `+?` per square formed where the stone ended (the
                // victims are enemy stones: removing them leaves the mover's squares whole).
                let end = match &m {
                    Move::Place(p) | Move::Shift { to: p, .. } => Some(*p),
                    Move::Jump { landings, .. } => landings.last().copied(),
                };
                let squares = match (&m, end) {
                    (Move::Place(_), _) | (_, None) => 0,
                    (_, Some(end)) => squares_at(&position.board, end, mover),
                };
                assert!(squares >= m.victims().len(), "{m}");
                let line = base + &"+?".repeat(squares);
                assert!(listing.contains(&line), "{m} not listed as {line}");
            }
            if plies.is_multiple_of(5) || position.outcome().is_some() {
                let text = position.position_text();
                assert_eq!(
                    Jiu::from_position_text(&text, &opts).unwrap(),
                    position,
                    "{text}"
                );
            }
            plies += 1;
            assert!(plies < 40_000, "game {game} does not end");
        }
        assert_eq!(position.phase(), Phase::Battle);
        assert!(plies > 196);
        assert!(legal(&position).is_empty());
        println!(
            "game {game}: {plies} plies, x {} o {}, {:?}",
            position.stone_count(Side::First),
            position.stone_count(Side::Second),
            position.outcome()
        );
        reasons.insert(position.outcome().unwrap().reason);
    }
    println!("end reasons seen: {reasons:?}");
    // Random play mostly runs into the move limit; greedy play mostly wins on few stones.
    assert!(reasons.contains(&EndReason::MoveLimit), "{reasons:?}");
    assert!(reasons.contains(&EndReason::FewStones), "{reasons:?}");
}

// ---------------------------------------------------------------------------------------------
// The web view's listing: each move once, victims to choose, bounded work

#[test]
fn move_choices_list_a_square_capture_once_with_its_count_and_the_removable_stones() {
    let hole = battle("D4:D6 E4 E6 F4:F6 A14:C14", O_FILL, 'x');
    let choices = hole.move_choices(100_000).unwrap();
    let capture: Vec<_> = choices.iter().filter(|c| c.text == "A14-E5").collect();
    assert_eq!(capture.len(), 1, "listed once");
    assert_eq!(capture[0].remove, 4);
    assert_eq!(capture[0].removable, stones_of(&hole.board, Side::Second));
    assert_eq!(capture[0].removable.len(), 28);
    assert_eq!(capture[0].complete_moves(), binomial(28, 4));
    // One entry per `move_listing` line, and together they stand for every legal move.
    assert_eq!(choices.len(), hole.move_listing().len());
    let total: u64 = choices.iter().map(|c| c.complete_moves()).sum();
    assert_eq!(total, legal(&hole).len() as u64);
    for c in choices.iter().filter(|c| c.remove == 0) {
        assert!(c.removable.is_empty(), "{c:?}");
    }
}

#[test]
fn move_choices_of_a_jump_leave_out_the_stones_it_jumped() {
    // x jumps A7xC7xE7 over B7 and D7 and completes the square E7 F7 E8 F8.
    let p = battle(
        &format!("{X_FILL} A7 E8 F8 F7"),
        &format!("{O_FILL} B7 D7"),
        'x',
    );
    let choices = p.move_choices(100_000).unwrap();
    let jump = choices.iter().find(|c| c.text == "A7xC7xE7").unwrap();
    assert_eq!(jump.remove, 1);
    assert_eq!(jump.removable.len(), 28);
    assert!(!jump.removable.contains(&pt("B7")) && !jump.removable.contains(&pt("D7")));
    assert_eq!(check(&p, "A7xC7xE7+A1"), Ok(()));
    assert!(check(&p, "A7xC7xE7+B7").is_err());
}

#[test]
fn move_choices_stop_at_their_budget_on_a_position_with_hundreds_of_millions_of_moves() {
    // x may fly (12 stones) into the hole of a 3×3 block (four squares), o has 180 stones:
    // C(180, 4) ≈ 43 million complete moves for that one fly, times every x stone.
    let x = "D4:D6 E4 E6 F4:F6 A14:D14";
    // x's block and four stones on row 14, o everywhere else but the hole and the top right.
    let x_points = points(x);
    let mut cells = [['o'; SIZE as usize]; SIZE as usize];
    for p in &x_points {
        cells[p.row as usize][p.col as usize] = 'x';
    }
    cells[pt("E5").row as usize][pt("E5").col as usize] = '.';
    for spec in ["E14:N14", "H13:N13"] {
        for p in points(spec) {
            cells[p.row as usize][p.col as usize] = '.';
        }
    }
    let rows: Vec<String> = cells.iter().rev().map(|r| r.iter().collect()).collect();
    let text = format!("{} x phase=battle quiet=0", rows.join("/"));
    let p = Jiu::from_position_text(&text, &Options::default()).unwrap();
    assert!(p.can_fly(Side::First));
    assert!(p.stone_count(Side::Second) > 160);
    let full = p.move_choices(1_000_000).unwrap();
    let fly = full.iter().find(|c| c.text == "A14-E5").unwrap();
    assert_eq!(fly.remove, 4);
    assert!(
        fly.complete_moves() > 10_000_000,
        "{}",
        fly.complete_moves()
    );
    assert_eq!(
        p.move_choices(1_000).unwrap_err(),
        crate::game::ListingTooLarge { budget: 1_000 }
    );
    // The referee's checks never enumerate: a full move validates directly.
    let victims: Vec<String> = fly.removable[..4].iter().map(|v| v.to_string()).collect();
    assert_eq!(check(&p, &format!("A14-E5+{}", victims.join("+"))), Ok(()));
}

//! Unit tests of the Surakarta rules: hand-made positions for every capture shape, end reason
//! and illegal-move class, text round trips, and seeded random cross-checks of the bitboard
//! generator against the point-by-point `check_move`.

use std::collections::HashSet;

use serde_json::json;

use super::*;
use crate::game::parse_options;
use crate::game::test_support::{check_parsers_on, edited_text, junk_text, Prng};

fn start() -> Surakarta {
    Surakarta::start(&Options::default())
}

fn with_limit(limit: u32) -> Options {
    Options {
        no_capture_limit: NonZeroU32::new(limit).unwrap(),
    }
}

fn pos(text: &str) -> Surakarta {
    Surakarta::from_position_text(text, &Options::default())
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn mv(text: &str) -> Move {
    Surakarta::parse_move(text).unwrap()
}

fn listing(p: &Surakarta) -> Vec<String> {
    Rules::move_listing(p)
}

fn captures(p: &Surakarta) -> Vec<String> {
    listing(p).into_iter().filter(|m| m.contains('x')).collect()
}

fn legal(p: &Surakarta, text: &str) -> Result<(), IllegalMove> {
    p.check_move(&mv(text))
}

/// Perft the obvious way: clone, generate, play (what the trait's default does).
fn slow_perft(p: &Surakarta, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = Vec::new();
    p.legal_moves(&mut moves);
    moves
        .iter()
        .map(|m| {
            let mut child = p.clone();
            child.play_unchecked(m);
            slow_perft(&child, depth - 1)
        })
        .sum()
}

/// Every move `check_move` accepts, found by trying all point pairs and both kinds.
fn brute_force_moves(p: &Surakarta) -> HashSet<Move> {
    let mut set = HashSet::new();
    for from in 0..36 {
        for to in 0..36 {
            for kind in [MoveKind::Step, MoveKind::Capture] {
                let m = Move {
                    from: point_of(from),
                    to: point_of(to),
                    kind,
                };
                if p.check_move(&m).is_ok() {
                    set.insert(m);
                }
            }
        }
    }
    set
}

/// A random position: 1-12 pieces a side on random points, random side, random quiet count.
fn random_position(rng: &mut Prng, options: &Options) -> Surakarta {
    let mut cells = ['.'; 36];
    for side in ['x', 'o'] {
        let n = 1 + rng.below(12);
        let mut placed = 0;
        while placed < n {
            let k = rng.below(36);
            if cells[k] == '.' {
                cells[k] = side;
                placed += 1;
            }
        }
    }
    let rows: Vec<String> = (0..6)
        .rev()
        .map(|r| cells[r * 6..r * 6 + 6].iter().collect())
        .collect();
    let side = if rng.below(2) == 0 { 'x' } else { 'o' };
    let text = format!("{} {side} quiet={}", rows.join("/"), rng.below(4));
    Surakarta::from_position_text(&text, options).unwrap()
}

/// Positions met in seeded random games from the start.
fn playout_positions(seed: u64, games: usize) -> Vec<Surakarta> {
    let mut rng = Prng::new(seed);
    let mut seen = Vec::new();
    for _ in 0..games {
        let mut p = start();
        let mut moves = Vec::new();
        while p.outcome().is_none() {
            seen.push(p.clone());
            moves.clear();
            p.legal_moves(&mut moves);
            let m = moves[rng.below(moves.len())];
            p.play_unchecked(&m);
        }
        seen.push(p);
    }
    seen
}

// ---- start position and perft -------------------------------------------------------------

#[test]
fn start_position_has_exactly_these_16_moves() {
    assert_eq!(
        listing(&start()).join(" "),
        "A2-A3 A2-B3 B2-A3 B2-B3 B2-C3 C2-B3 C2-C3 C2-D3 D2-C3 D2-D3 D2-E3 \
         E2-D3 E2-E3 E2-F3 F2-E3 F2-F3"
    );
}

#[test]
fn start_position_text_is_the_notation_example() {
    let text = "oooooo/oooooo/....../....../xxxxxx/xxxxxx x";
    assert_eq!(start().position_text(), text);
    assert_eq!(pos(text), start());
}

#[test]
fn perft_from_start_matches_the_reference_counts() {
    let s = start();
    let expected = [1, 16, 256, 5382, 111_122, 2_572_484];
    for (depth, &count) in expected.iter().enumerate() {
        assert_eq!(Rules::perft(&s, depth as u32), count, "depth {depth}");
    }
}

#[test]
fn fast_perft_agrees_with_the_obvious_perft_from_start() {
    for depth in 0..=3 {
        assert_eq!(Rules::perft(&start(), depth), slow_perft(&start(), depth));
    }
}

#[test]
fn fast_perft_agrees_with_the_obvious_perft_on_random_positions() {
    let mut rng = Prng::new(0x5eed_0001);
    for k in 0..300 {
        // Small limits make move_limit ends occur inside the tree.
        let options = if k % 3 == 0 {
            with_limit(1 + rng.below(4) as u32)
        } else {
            Options::default()
        };
        let p = random_position(&mut rng, &options);
        for depth in 0..=2 {
            assert_eq!(
                Rules::perft(&p, depth),
                slow_perft(&p, depth),
                "{} depth {depth}",
                p.position_text()
            );
        }
    }
    for p in playout_positions(7, 3).iter().step_by(10) {
        assert_eq!(
            Rules::perft(p, 3),
            slow_perft(p, 3),
            "{}",
            p.position_text()
        );
    }
}

#[test]
fn decided_positions_have_nothing_below_them() {
    // Second has no pieces: first has won.
    let over = pos("....../....../....../....../x...../...... o");
    assert_eq!(
        over.outcome(),
        Some(Outcome::win(Side::First, EndReason::NoPieces))
    );
    assert_eq!(Rules::perft(&over, 0), 1);
    assert_eq!(Rules::perft(&over, 1), 0);
    assert_eq!(Rules::perft(&over, 3), 0);
    // One capture takes the last enemy piece: that line stops there, the 5 steps go on.
    let p = pos("....../....../....../....../x...../....o. x");
    assert_eq!(listing(&p).len(), 6);
    assert_eq!(Rules::perft(&p, 2), slow_perft(&p, 2));
    let mut after_capture = p.clone();
    after_capture.play(&mv("A2xE1")).unwrap();
    assert_eq!(Rules::perft(&after_capture, 1), 0);
    // The quiet limit reached: no moves below.
    let limited = Surakarta::from_position_text(
        "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=3",
        &with_limit(3),
    )
    .unwrap();
    assert_eq!(Rules::perft(&limited, 2), 0);
    let almost = Surakarta::from_position_text(
        "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=2",
        &with_limit(3),
    )
    .unwrap();
    assert_eq!(Rules::perft(&almost, 1), 16);
    assert_eq!(Rules::perft(&almost, 2), 0);
}

// ---- captures -----------------------------------------------------------------------------

#[test]
fn several_paths_to_one_target_are_one_move() {
    // C2 is on both circuits; D5 is reached along each in both directions (4 paths).
    let p = pos("....../...o../....../....../..x.../...... x");
    assert_eq!(captures(&p), ["C2xD5"]);
    assert_eq!(listing(&p).len(), 9);
}

#[test]
fn capture_through_two_loops() {
    // F2 → loop → column E up → loop → F5, E5, D5; the other way round also needs two loops.
    let p = pos("....../...o../....../....../.....x/...... x");
    assert_eq!(captures(&p), ["F2xD5"]);
}

#[test]
fn capture_through_three_loops_and_its_blocking() {
    // The own piece on C2 closes F2's short way (row 2 leftwards) to B3; the long way runs
    // F2 → E1..E6 → F5..A5 → B6, B5, B4, B3 through three loops.
    let p = pos("....../....../....../.o..../..x..x/...... x");
    assert_eq!(legal(&p, "F2xB3"), Ok(()));
    assert!(captures(&p).contains(&"F2xB3".to_string()));
    // An own piece on row 5 blocks the long way too.
    let blocked = pos("....../..x.../....../.o..../..x..x/...... x");
    assert_eq!(
        legal(&blocked, "F2xB3"),
        Err(IllegalMove::NoCapturePath {
            from: Point::new(5, 1),
            to: Point::new(1, 2)
        })
    );
}

#[test]
fn capture_may_pass_back_over_its_own_start_point() {
    // B2 → A2 → loop → B1 → over B2 itself → B3 → B4. The own piece on E3 closes the long way
    // round, so this path is B2's only one (E3 itself reaches B4 the long way round).
    let p = pos("....../....../.o..../....x./.x..../...... x");
    assert_eq!(captures(&p), ["B2xB4", "E3xB4"]);
    assert_eq!(legal(&p, "B2xB4"), Ok(()));
}

#[test]
fn capture_blocked_by_an_own_piece() {
    // A2 reaches E1 along row 2 and the F2→E1 loop, unless D2 is taken by its own side;
    // B4 (own) closes the other direction.
    let open = pos("....../....../.x..../....../x...../....o. x");
    assert_eq!(legal(&open, "A2xE1"), Ok(()));
    let blocked = pos("....../....../.x..../....../x..x../....o. x");
    assert_eq!(
        legal(&blocked, "A2xE1"),
        Err(IllegalMove::NoCapturePath {
            from: Point::new(0, 1),
            to: Point::new(4, 0)
        })
    );
}

#[test]
fn capture_needs_a_loop() {
    // A2 meets D2 along row 2 without a loop; the loop direction is closed by the own B1.
    let p = pos("....../....../....../....../x..o../.x.... x");
    assert!(matches!(
        legal(&p, "A2xD2"),
        Err(IllegalMove::NoCapturePath { .. })
    ));
    // Without B1 the way round (A2 → B1 → column B → … → E1 → F2 → E2 → D2) is open.
    let round = pos("....../....../....../....../x..o../...... x");
    assert_eq!(legal(&round, "A2xD2"), Ok(()));
}

#[test]
fn crossing_point_looks_in_four_directions() {
    // C3 sits twice on the outer circuit. Its four directions:
    //   along row 3 right: D3 E3 F3 loop D1 D2 → captures D2;
    //   along row 3 left: B3 A3 loop C1 → captures C1;
    //   down column C: C2 C1 → meets C1 before any loop, no capture that way;
    //   up column C: C4 C5 C6 loop A4 B4 C4 D4 E4 → captures E4.
    let p = pos("....../....../....o./..x.../...o../..o... x");
    assert_eq!(captures(&p), ["C3xC1", "C3xD2", "C3xE4"]);
    assert_eq!(listing(&p).len(), 10);
    // A crossing on the inner circuit: E5 reaches D5 and E4 only by going round through a
    // loop and back over its own point.
    let inner = pos("....../...ox./....o./....../....../...... x");
    assert_eq!(captures(&inner), ["E5xE4", "E5xD5"]);
}

#[test]
fn a_step_never_captures_and_captures_do_not_step() {
    let p = start();
    assert_eq!(
        legal(&p, "A2xA3"),
        Err(IllegalMove::CaptureTargetNotEnemy(Point::new(0, 2)))
    );
    let q = pos("....../....../....../.o..../x...../...... x");
    assert_eq!(
        legal(&q, "A2-B3"),
        Err(IllegalMove::StepTargetOccupied(Point::new(1, 2)))
    );
}

// ---- game ends ----------------------------------------------------------------------------

#[test]
fn taking_the_last_piece_wins_by_no_pieces() {
    let mut p = pos("....../....../....../....../x...../....o. x");
    assert_eq!(p.outcome(), None);
    p.play(&mv("a2xe1")).unwrap();
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::First, EndReason::NoPieces))
    );
    assert_eq!(
        p.position_text(),
        "....../....../....../....../....../....x. o"
    );
}

#[test]
fn move_limit_draw_with_equal_counts() {
    let mut p = Surakarta::start(&with_limit(2));
    p.play(&mv("A2-A3")).unwrap();
    assert_eq!(p.outcome(), None);
    p.play(&mv("A5-A4")).unwrap();
    assert_eq!(p.outcome(), Some(Outcome::draw(EndReason::MoveLimit)));
}

#[test]
fn move_limit_win_for_the_side_with_more_pieces() {
    let text = "o...../....../....../....../xx..../...... x quiet=79";
    let mut p = pos(text);
    p.play(&mv("A2-A3")).unwrap();
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::First, EndReason::MoveLimit))
    );
    // Same position, higher limit: the game goes on.
    let mut q = Surakarta::from_position_text(text, &with_limit(81)).unwrap();
    q.play(&mv("A2-A3")).unwrap();
    assert_eq!(q.outcome(), None);
    q.play(&mv("A6-A5")).unwrap();
    assert_eq!(
        q.outcome(),
        Some(Outcome::win(Side::First, EndReason::MoveLimit))
    );
}

#[test]
fn a_capture_resets_the_quiet_count() {
    let mut p = Surakarta::from_position_text(
        "....../...o../....../....../..x.../.....o x quiet=2",
        &with_limit(3),
    )
    .unwrap();
    p.play(&mv("C2xD5")).unwrap();
    assert_eq!(p.quiet_plies(), 0);
    assert_eq!(p.outcome(), None);
    p.play(&mv("F1-F2")).unwrap();
    assert_eq!(p.quiet_plies(), 1);
}

#[test]
fn no_capture_limit_changes_when_move_limit_fires() {
    for limit in [1u32, 3, 5] {
        let mut p = Surakarta::start(&with_limit(limit));
        let line = ["A2-A3", "A5-A4", "B2-B3", "B5-B4", "C2-C3", "C5-C4"];
        let mut ended_at = None;
        for (k, m) in line.iter().enumerate() {
            p.play(&mv(m)).unwrap();
            if p.outcome().is_some() {
                ended_at = Some(k + 1);
                break;
            }
        }
        assert_eq!(ended_at, Some(limit as usize), "limit {limit}");
    }
}

#[test]
fn no_legal_move_ends_the_game_and_counts_decide() {
    // After C3-B2 the x on A1 (off both circuits) is hemmed in by A2, B1, B2.
    let mut p = pos("....../....../....../..o.../o...../xo.... o");
    assert_eq!(p.outcome(), None);
    p.play(&mv("C3-B2")).unwrap();
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::Second, EndReason::NoMoves))
    );
    assert!(listing(&p).is_empty());
}

#[test]
fn end_checks_run_in_the_order_of_the_rules() {
    // x (A1) is hemmed in and the quiet limit is reached: move_limit comes first.
    let p = Surakarta::from_position_text(
        "....../....../....../....../oo..../xo.... x quiet=4",
        &with_limit(4),
    )
    .unwrap();
    assert_eq!(
        p.outcome(),
        Some(Outcome::win(Side::Second, EndReason::MoveLimit))
    );
    let q = pos("....../....../....../....../oo..../xo.... x quiet=4");
    assert_eq!(
        q.outcome(),
        Some(Outcome::win(Side::Second, EndReason::NoMoves))
    );
}

// ---- illegal moves ------------------------------------------------------------------------

#[test]
fn every_illegal_move_class() {
    let s = start();
    assert_eq!(
        legal(&s, "C3-C4"),
        Err(IllegalMove::NoPieceAt(Point::new(2, 2)))
    );
    assert_eq!(
        legal(&s, "A5-A4"),
        Err(IllegalMove::NotYourPiece(Point::new(0, 4)))
    );
    assert_eq!(
        legal(&s, "A1-A2"),
        Err(IllegalMove::StepTargetOccupied(Point::new(0, 1)))
    );
    assert_eq!(
        legal(&s, "A2-A4"),
        Err(IllegalMove::NotANeighbour {
            from: Point::new(0, 1),
            to: Point::new(0, 3)
        })
    );
    assert_eq!(
        legal(&s, "A2xB1"),
        Err(IllegalMove::CaptureTargetNotEnemy(Point::new(1, 0)))
    );
    assert_eq!(
        legal(&s, "A2xA5"),
        Err(IllegalMove::NoCapturePath {
            from: Point::new(0, 1),
            to: Point::new(0, 4)
        })
    );
    assert_eq!(
        legal(&s, "A2-A2"),
        Err(IllegalMove::SamePoint(Point::new(0, 1)))
    );
    let off = Move::step(Point::new(6, 0), Point::new(5, 0));
    assert_eq!(
        s.check_move(&off),
        Err(IllegalMove::OffBoard(Point::new(6, 0)))
    );
    let mut won = pos("....../....../....../....../x...../....o. x");
    won.play(&mv("A2xE1")).unwrap();
    assert_eq!(legal(&won, "E1-E2"), Err(IllegalMove::GameOver));
    // Playing an off-board move unchecked leaves the position alone.
    let mut t = s.clone();
    t.play_unchecked(&off);
    assert_eq!(t, s);
    // Errors read as sentences naming the points.
    assert_eq!(
        IllegalMove::NoCapturePath {
            from: Point::new(0, 1),
            to: Point::new(0, 4)
        }
        .to_string(),
        "no circuit path from A2 through a corner loop reaches A5 unblocked"
    );
}

#[test]
fn play_text_reports_illegal_moves_through_any_game() {
    let mut g: Box<dyn crate::game::AnyGame> = Box::new(start());
    assert_eq!(g.play_text("b2-c3").unwrap(), "B2-C3");
    let err = g.play_text("A6xA1").unwrap_err().to_string();
    assert!(err.contains("no circuit path"), "{err}");
    assert!(g.play_text("A5-A4").is_ok());
}

// ---- options ------------------------------------------------------------------------------

#[test]
fn options_default_and_errors_name_the_option() {
    assert_eq!(
        parse_options::<Surakarta>(&serde_json::Value::Null).unwrap(),
        Options::default()
    );
    assert_eq!(
        parse_options::<Surakarta>(&json!({}))
            .unwrap()
            .no_capture_limit
            .get(),
        80
    );
    assert_eq!(
        parse_options::<Surakarta>(&json!({"no_capture_limit": 12}))
            .unwrap()
            .no_capture_limit
            .get(),
        12
    );
    for bad in [
        json!(0),
        json!(-3),
        json!("80"),
        json!(1.5),
        json!(5_000_000_000u64),
    ] {
        let e = parse_options::<Surakarta>(&json!({ "no_capture_limit": bad })).unwrap_err();
        assert!(e.message.contains("no_capture_limit"), "{bad}: {e}");
    }
    let e = parse_options::<Surakarta>(&json!({"swap": true})).unwrap_err();
    assert!(e.message.contains("swap"), "{e}");
    assert_eq!(
        serde_json::to_value(Options::default()).unwrap(),
        json!({"no_capture_limit": 80})
    );
    assert_eq!(
        crate::game::AnyGame::rules_json(&Surakarta::start(&with_limit(7))),
        json!({"no_capture_limit": 7})
    );
}

// ---- text ---------------------------------------------------------------------------------

#[test]
fn move_text_parses_case_insensitively_and_prints_upper_case() {
    assert_eq!(mv("b2-c3"), Move::step(Point::new(1, 1), Point::new(2, 2)));
    assert_eq!(
        mv("B2XE5"),
        Move::capture(Point::new(1, 1), Point::new(4, 4))
    );
    assert_eq!(mv("b2xe5").to_string(), "B2xE5");
    assert_eq!(mv("f6-e5").to_string(), "F6-E5");
}

#[test]
fn bad_move_text_says_what_and_where() {
    let cases = [
        ("", 1, "found the end"),
        ("B2", 3, "'-' (step) or 'x' (capture)"),
        ("B2+C3", 3, "found '+'"),
        ("B2-", 4, "found the end"),
        ("B2-G3", 4, "off the board"),
        ("B7-C3", 2, "off the board"),
        ("B2-C3x", 6, "unexpected"),
        ("B2 - C3", 3, "found ' '"),
        ("é2-C3", 1, "column letter"),
        ("B2-C3é", 6, "unexpected"),
    ];
    for (text, at, what) in cases {
        let e = Surakarta::parse_move(text).unwrap_err();
        assert_eq!(e.at, at, "{text:?}: {e}");
        assert!(e.what.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn bad_position_text_says_what_and_where() {
    let cases = [
        ("", 1, "empty"),
        ("   ", 1, "empty"),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx",
            42,
            "side to move",
        ),
        ("oooooo/oooooo/....../....../xxxxxx/xxxxxx z", 43, "x or o"),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x q=1",
            45,
            "unknown key",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet",
            45,
            "key=value",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=-1",
            51,
            "whole number",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=",
            51,
            "whole number",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=99999999999",
            51,
            "too large",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx x quiet=1 quiet=2",
            53,
            "twice",
        ),
        (
            "ooooo/oooooo/....../....../xxxxxx/xxxxxx x",
            6,
            "row 6 has 5 points",
        ),
        (
            "ooooooo/oooooo/....../....../xxxxxx/xxxxxx x",
            7,
            "more than 6 points",
        ),
        ("oooooo/oooooo/....../....../xxxxxx x", 35, "found 5"),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxxx/...... x",
            42,
            "more than 6 rows",
        ),
        (
            "oooooo/oooooo/....../....../xxxxxx/xxxxx x",
            41,
            "row 1 has 5",
        ),
        (
            "oooooo/oooooo/..q.../....../xxxxxx/xxxxxx x",
            17,
            "unexpected 'q'",
        ),
        (
            "oooooo/oooooo/..é.../....../xxxxxx/xxxxxx x",
            17,
            "unexpected 'é'",
        ),
        (
            "oooooo/oooooo/o...../....../xxxxxx/xxxxxx x",
            1,
            "13 pieces",
        ),
        (
            "....../....../....../....../....../...... x",
            1,
            "no pieces",
        ),
    ];
    for (text, at, what) in cases {
        let e = Surakarta::from_position_text(text, &Options::default()).unwrap_err();
        assert_eq!(e.at, at, "{text:?}: {e}");
        assert!(e.what.contains(what), "{text:?}: {e}");
    }
    // Upper case pieces and side are read; surrounding blanks are fine.
    assert_eq!(
        pos("  OOOOOO/OOOOOO/....../....../XXXXXX/XXXXXX X  "),
        start()
    );
}

#[test]
fn junk_text_never_panics() {
    let alphabet: Vec<char> = "abcxoXO.-/=0123456789 quiet\té€\u{0}ABCDEFGZ"
        .chars()
        .collect();
    let mut rng = Prng::new(0xdead_beef);
    let base = start().position_text();
    for _ in 0..20_000 {
        let junk = junk_text(&mut rng, &alphabet, 50);
        check_parsers_on::<Surakarta>(&junk, &Options::default());
        // Small edits of a valid text.
        let edited = edited_text(&mut rng, &base, &alphabet);
        check_parsers_on::<Surakarta>(&edited, &Options::default());
    }
}

#[test]
fn move_and_position_text_round_trip_along_random_games() {
    let positions = playout_positions(42, 40);
    assert!(positions.len() > 1000);
    let mut moves = Vec::new();
    for p in &positions {
        let text = p.position_text();
        assert_eq!(pos(&text), *p, "{text}");
        moves.clear();
        p.legal_moves(&mut moves);
        for m in &moves {
            let s = m.to_string();
            assert_eq!(Surakarta::parse_move(&s).unwrap(), *m);
            assert_eq!(Surakarta::parse_move(&s.to_lowercase()).unwrap(), *m);
        }
    }
}

// ---- generator cross-checks and playouts --------------------------------------------------

#[test]
fn legal_moves_agree_with_check_move_on_random_positions() {
    let mut rng = Prng::new(0x1234_5678);
    let mut positions: Vec<Surakarta> = (0..1500)
        .map(|_| random_position(&mut rng, &Options::default()))
        .collect();
    positions.extend(playout_positions(99, 5).into_iter().step_by(3));
    let mut with_captures = 0;
    for p in &positions {
        let mut moves = Vec::new();
        p.legal_moves(&mut moves);
        let set: HashSet<Move> = moves.iter().copied().collect();
        assert_eq!(
            set.len(),
            moves.len(),
            "duplicates in {}",
            p.position_text()
        );
        assert_eq!(set, brute_force_moves(p), "{}", p.position_text());
        assert_eq!(moves.len() as u64, Rules::perft(p, 1));
        if moves.iter().any(|m| m.kind == MoveKind::Capture) {
            with_captures += 1;
        }
    }
    // The sample exercises captures, not just steps.
    assert!(with_captures > 500, "{with_captures}");
}

#[test]
fn random_playouts_stay_legal_and_always_end() {
    let mut rng = Prng::new(2026);
    let mut reasons = HashSet::new();
    let mut moves = Vec::new();
    for game in 0..300 {
        let options = if game % 2 == 0 {
            Options::default()
        } else {
            with_limit(1 + rng.below(30) as u32)
        };
        let mut p = Surakarta::start(&options);
        let mut plies = 0;
        while p.outcome().is_none() {
            moves.clear();
            p.legal_moves(&mut moves);
            assert!(!moves.is_empty(), "{}", p.position_text());
            let m = moves[rng.below(moves.len())];
            p.play(&m)
                .unwrap_or_else(|e| panic!("{m} in {}: {e}", p.position_text()));
            plies += 1;
            // 24 captures at most, each followed by fewer than `limit` quiet plies.
            assert!(plies <= 25 * 80, "game {game} does not end");
        }
        let outcome = p.outcome().unwrap();
        let (first, second) = (p.piece_count(Side::First), p.piece_count(Side::Second));
        match outcome.reason {
            EndReason::NoPieces => assert_eq!(first.min(second), 0),
            EndReason::MoveLimit => {
                assert!(p.quiet_plies() >= options.no_capture_limit.get())
            }
            EndReason::NoMoves => assert_eq!(p.board().count_moves(), 0),
            other => panic!("unexpected reason {other}"),
        }
        if outcome.reason != EndReason::NoPieces {
            let expected = match first.cmp(&second) {
                std::cmp::Ordering::Greater => Some(Side::First),
                std::cmp::Ordering::Less => Some(Side::Second),
                std::cmp::Ordering::Equal => None,
            };
            assert_eq!(outcome.winner, expected);
        }
        moves.clear();
        p.legal_moves(&mut moves);
        assert!(moves.is_empty());
        reasons.insert(outcome.reason);
    }
    assert!(reasons.contains(&EndReason::MoveLimit));
    assert!(reasons.contains(&EndReason::NoPieces), "{reasons:?}");
}

#[test]
fn position_text_after_two_steps_carries_the_quiet_count() {
    let mut p = start();
    p.play(&mv("A2-A3")).unwrap();
    p.play(&mv("A5-A4")).unwrap();
    let text = "oooooo/.ooooo/o...../x...../.xxxxx/xxxxxx x quiet=2";
    assert_eq!(p.position_text(), text);
    assert_eq!(pos(text), p);
}

#[test]
fn position_keys_are_read_in_any_case_and_written_in_lower_case() {
    let text = "oooooo/.ooooo/o...../x...../.xxxxx/xxxxxx x quiet=3";
    let quiet = pos(text);
    assert_eq!(quiet.position_text(), text);
    for loud in [
        "OOOOOO/.OOOOO/O...../X...../.XXXXX/XXXXXX X QUIET=3",
        "oooooo/.ooooo/o...../x...../.xxxxx/xxxxxx x Quiet=3",
    ] {
        assert_eq!(pos(loud), quiet, "{loud}");
        assert_eq!(pos(loud).position_text(), text);
    }
    let rows = "oooooo/.ooooo/o...../x...../.xxxxx/xxxxxx";
    let e =
        Surakarta::from_position_text(&format!("{rows} x quiet=1 QUIET=2"), &Options::default())
            .unwrap_err();
    assert!(e.what.contains("QUIET is given twice"), "{e}");
    let e = Surakarta::from_position_text(&format!("{rows} x QUITE=2"), &Options::default())
        .unwrap_err();
    assert!(e.what.contains("unknown key \"QUITE\""), "{e}");
    assert_eq!(e.at, 45);
    let e = Surakarta::from_position_text(&format!("{rows} x QUIET=x"), &Options::default())
        .unwrap_err();
    assert!(e.what.contains("whole number"), "{e}");
    assert_eq!(e.at, 51);
}

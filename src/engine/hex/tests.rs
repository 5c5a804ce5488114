//! Unit tests of the Hex engine: tables, templates, the circuit, the search stages and games.

use super::*;
use crate::duel::{self, DuelConfig};
use crate::engine::{new_engine, ClockView};
use crate::game::EndReason;
use std::collections::HashMap;

fn cell(text: &str) -> u8 {
    match Hex::parse_move(text).unwrap() {
        Move::Place(p) => p.index(N as u8) as u8,
        Move::Swap => panic!("not a cell"),
    }
}

fn engine(options: serde_json::Value, rules: serde_json::Value) -> HexEngine {
    HexEngine::new(&rules, &options, 5).unwrap()
}

fn ask(engine: &mut HexEngine, moves: &[&str], clock: ClockView, abort: bool) -> String {
    let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
    let flag = AtomicBool::new(abort);
    engine
        .choose_move(&SearchRequest {
            moves: &moves,
            clock,
            abort: &flag,
        })
        .unwrap()
}

fn quick() -> ClockView {
    ClockView {
        move_limit_ms: Some(300),
        ..ClockView::unlimited()
    }
}

/// Alternates `red` and `blue` stones into a move list (Red first).
fn interleave(red: &[&str], blue: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for k in 0..red.len().max(blue.len()) {
        if let Some(r) = red.get(k) {
            out.push(r.to_string());
        }
        if let Some(b) = blue.get(k) {
            out.push(b.to_string());
        }
    }
    out
}

const RED_COLUMN: [&str; 10] = ["F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10"];
/// Blue stones that threaten nothing; G11 leaves Red's column F a single winning cell.
const BLUE_SCATTER: [&str; 10] = ["A1", "A3", "A5", "A7", "A9", "B2", "B4", "G11", "B6", "B10"];

#[test]
fn tables_have_the_right_shape() {
    assert_eq!(PAIRS.iter().filter(|p| p.0 == p.1).count(), 0);
    assert_eq!(RING[0].iter().filter(|&&c| c != NO).count(), 3);
    assert_eq!(
        RING[cell("F6") as usize]
            .iter()
            .filter(|&&c| c != NO)
            .count(),
        6
    );
    // Consecutive ring neighbours touch each other.
    let f6 = cell("F6") as usize;
    for k in 0..6 {
        let (a, b) = (RING[f6][k], RING[f6][(k + 1) % 6]);
        assert!(RING[a as usize].contains(&b));
    }
}

#[test]
fn bridges_and_edge_templates_are_restored() {
    // Red bridge E5–F7 over E6/F6: Blue takes E6, Red answers F6, and the other way round.
    let mut cells = [EMPTY; CELLS];
    cells[cell("E5") as usize] = stone(0);
    cells[cell("F7") as usize] = stone(0);
    cells[cell("E6") as usize] = stone(1);
    assert_eq!(bridge_reply(&cells, 0, cell("E6")), Some(cell("F6")));
    cells[cell("E6") as usize] = EMPTY;
    cells[cell("F6") as usize] = stone(1);
    assert_eq!(bridge_reply(&cells, 0, cell("F6")), Some(cell("E6")));
    // No bridge for Blue there, and no reply once the other carrier is gone too.
    assert_eq!(bridge_reply(&cells, 1, cell("F6")), None);
    cells[cell("E6") as usize] = stone(1);
    assert_eq!(bridge_reply(&cells, 0, cell("F6")), None);
    // Edge template II: a red stone on row 2 reaches row 1 through D1 or C1.
    let mut edge = [EMPTY; CELLS];
    edge[cell("D2") as usize] = stone(0);
    edge[cell("D1") as usize] = stone(1);
    assert_eq!(bridge_reply(&edge, 0, cell("D1")), Some(cell("C1")));
    // Blue's version on column K.
    let mut blue = [EMPTY; CELLS];
    blue[cell("J5") as usize] = stone(1);
    blue[cell("K5") as usize] = stone(0);
    assert_eq!(bridge_reply(&blue, 1, cell("K5")), Some(cell("K6")));
}

#[test]
fn ziggurat_intrusions_are_answered() {
    for colour in 0..2 {
        for edge in 0..2 {
            let s = edge_view(colour, edge, 5, 2);
            for shape in &ZIGGURATS {
                let carrier = shape.map(|(dx, dy)| edge_view(colour, edge, 5 + dx, 2 + dy));
                let mut cells = [EMPTY; CELLS];
                cells[s as usize] = stone(colour);
                // The template holds, and every single intrusion has an answer that keeps it.
                assert!(holds_to_edge(&mut cells, s, &carrier));
                for &z in &carrier {
                    cells[z as usize] = stone(1 - colour);
                    let w = template_reply(&cells, colour, z).expect("an answer");
                    assert_eq!(cells[w as usize], EMPTY);
                    // The answer may use the mirror-image ziggurat when z lies in both.
                    cells[w as usize] = stone(colour);
                    assert!(ZIGGURATS.iter().any(|other| {
                        let k = other.map(|(dx, dy)| edge_view(colour, edge, 5 + dx, 2 + dy));
                        holds_to_edge(&mut cells, s, &k)
                    }));
                    cells[w as usize] = EMPTY;
                    cells[z as usize] = EMPTY;
                }
                // Without one of its edge cells the carrier does not hold.
                cells[carrier[7] as usize] = stone(1 - colour);
                assert!(!holds_to_edge(&mut cells, s, &carrier));
            }
        }
    }
}

#[test]
fn empty_board_resistance_is_symmetric_and_drops_with_stones() {
    let mut circuit = Circuit::new();
    let mut cells = [EMPTY; CELLS];
    let red = circuit.resistance(&cells, 0, None);
    let blue = circuit.resistance(&cells, 1, None);
    assert!(red > 0.0 && red < NO_PATH);
    assert!((red - blue).abs() < 1e-9, "{red} vs {blue}");
    assert!(circuit.last_iterations < CG_MAX_ITERATIONS);
    let mut previous = red;
    for text in ["F6", "F4", "F8", "F2"] {
        cells[cell(text) as usize] = stone(0);
        let now = circuit.resistance(&cells, 0, None);
        assert!(now < previous, "{text}: {now} !< {previous}");
        previous = now;
    }
    // Red's stones raise Blue's resistance.
    assert!(circuit.resistance(&cells, 1, None) > blue);
    // A full red column connects Red and cuts Blue off.
    for text in RED_COLUMN.iter().chain(["F11"].iter()) {
        cells[cell(text) as usize] = stone(0);
    }
    assert_eq!(circuit.resistance(&cells, 0, None), 0.0);
    assert_eq!(circuit.resistance(&cells, 1, None), NO_PATH);
}

#[test]
fn virtual_links_make_bridges_and_edge_templates_conduct() {
    let mut plain = Circuit::new();
    plain.virtual_links = false;
    let mut linked = Circuit::new();
    let mut cells = [EMPTY; CELLS];
    for text in ["F2", "G4", "H6", "I8", "J10"] {
        cells[cell(text) as usize] = stone(0);
    }
    let (before_plain, before_linked) = (
        plain.resistance(&cells, 0, None),
        linked.resistance(&cells, 0, None),
    );
    assert!(
        before_linked < before_plain,
        "{before_linked} vs {before_plain}"
    );
    // Blue breaks one bridge (G4-H6 over G5/H5): the links there go, the resistance rises.
    cells[cell("G5") as usize] = stone(1);
    assert!(linked.resistance(&cells, 0, None) > before_linked);
    // With neither sides' stones the two models agree.
    let empty = [EMPTY; CELLS];
    let gap = plain.resistance(&empty, 1, None) - linked.resistance(&empty, 1, None);
    assert!(gap.abs() < 1e-9);
}

#[test]
fn resistance_matches_a_hand_computed_circuit() {
    // Red stones fill rows 1-10 of column F except F5; Blue walls off everything else
    // around F5 so Red's only path runs through F5: source–(F1..F4 group)–F5–(F6..F10
    // group)–... that group still needs row 11, reached through F11 or G11.
    let mut cells = [stone(1); CELLS];
    for text in ["F1", "F2", "F3", "F4", "F6", "F7", "F8", "F9", "F10"] {
        cells[cell(text) as usize] = stone(0);
    }
    for text in ["F5", "F11", "G11"] {
        cells[cell(text) as usize] = EMPTY;
    }
    let mut circuit = Circuit::new();
    circuit.virtual_links = false;
    // F5 joins both groups with conductance 1 each way: 2 ohms in series; then F11 and G11
    // in parallel, each group–cell 1 plus cell–edge 1: 2 ∥ 2 = 1. Total 3.
    let r = circuit.resistance(&cells, 0, None);
    assert!((r - 3.0).abs() < 1e-9, "{r}");
    let mut current = [0.0; CELLS];
    circuit.resistance(&cells, 0, Some(&mut current));
    assert!((current[cell("F5") as usize] - 1.0).abs() < 1e-9);
    assert!((current[cell("F11") as usize] - 0.5).abs() < 1e-9);
}

#[test]
fn takes_a_win_in_one() {
    let moves = interleave(&RED_COLUMN, &BLUE_SCATTER);
    let mut hex = engine(serde_json::json!({"time_ms": 200}), serde_json::Value::Null);
    let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
    assert_eq!(ask(&mut hex, &refs, quick(), false), "F11");
    assert_eq!(hex.last_stats.stage, Stage::Immediate);
}

#[test]
fn blocks_a_loss_in_one() {
    // Blue to move; Red's column needs only F11 (Blue holds G11).
    let moves = interleave(&RED_COLUMN, &BLUE_SCATTER[..9]);
    let mut hex = engine(serde_json::json!({"time_ms": 200}), serde_json::Value::Null);
    let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
    assert_eq!(ask(&mut hex, &refs, quick(), false), "F11");
    assert_eq!(hex.last_stats.stage, Stage::Immediate);
    // The same threat one cell further along: Red's column F1-F9 plus F11 needs F10.
    let mut red = RED_COLUMN.to_vec();
    red[9] = "F11";
    let moves = interleave(&red, &BLUE_SCATTER[..9]);
    let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
    assert_eq!(ask(&mut hex, &refs, quick(), false), "F10");
}

#[test]
fn returns_promptly_with_a_legal_move_when_aborted() {
    let moves = ["F6", "E7", "D5", "G4"];
    for ab_below in [0u64, 122] {
        let mut hex = engine(
            serde_json::json!({ "ab_below": ab_below }),
            serde_json::Value::Null,
        );
        let answer = ask(&mut hex, &moves, ClockView::unlimited(), true);
        let position = hex.replay(&moves.map(String::from)).unwrap();
        assert!(
            position.is_legal(&Hex::parse_move(&answer).unwrap()),
            "{answer}"
        );
        assert!(hex.last_stats.playouts <= 1, "{:?}", hex.last_stats);
        assert!(hex.last_stats.nodes <= 16, "{:?}", hex.last_stats);
    }
    // A budget too far away for `Instant` means no deadline, not a crash.
    let mut patient = engine(
        serde_json::json!({ "time_ms": u64::MAX }),
        serde_json::Value::Null,
    );
    let endless = ClockView {
        you_ms: u64::MAX,
        ..ClockView::unlimited()
    };
    let answer = ask(&mut patient, &moves, endless, true);
    assert!(patient
        .replay(&moves.map(String::from))
        .unwrap()
        .is_legal(&Hex::parse_move(&answer).unwrap()));
}

#[test]
fn stages_follow_the_candidate_count_and_caps_hold() {
    let moves = ["F6", "E7"];
    let mut uct = engine(
        serde_json::json!({"ab_below": 0, "playouts": 300}),
        serde_json::Value::Null,
    );
    ask(&mut uct, &moves, ClockView::unlimited(), false);
    assert_eq!(uct.last_stats.stage, Stage::Uct);
    assert_eq!(uct.last_stats.playouts, 300);
    let mut ab = engine(
        // Time enough for depth 1 on a machine busy with the rest of the test suite (100 ms
        // was not, once).
        serde_json::json!({"ab_below": 122, "time_ms": 1000}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut ab, &moves, ClockView::unlimited(), false);
    assert_eq!(ab.last_stats.stage, Stage::AlphaBeta);
    assert!(ab.last_stats.depth >= 1, "{:?}", ab.last_stats);
    assert!(ab.replay(&["F6".into(), "E7".into(), answer]).is_ok());
}

#[test]
fn options_are_checked() {
    for bad in [
        serde_json::json!({"colour": "red"}),
        serde_json::json!({"time_ms": 0}),
        serde_json::json!({"time_ms": "soon"}),
        serde_json::json!({"playouts": -3}),
        serde_json::json!({"ab_below": 500}),
        serde_json::json!({"vc": 3}),
        serde_json::json!({"vc_visits": -1}),
        serde_json::json!({"vc_visits": 5_000_000_000u64}),
        serde_json::json!({"vc_visits": 300}),
        serde_json::json!({"vc": 1, "vc_visits": 300}),
        serde_json::json!([1, 2]),
    ] {
        assert!(
            matches!(
                HexEngine::new(&serde_json::Value::Null, &bad, 1),
                Err(EngineError::BadOption { .. })
            ),
            "{bad}"
        );
    }
    assert!(HexEngine::new(
        &serde_json::Value::Null,
        &serde_json::json!({"time_ms": "50", "playouts": 10}),
        1
    )
    .is_ok());
    assert!(HexEngine::new(
        &serde_json::Value::Null,
        &serde_json::json!({"vc": 2, "vc_visits": 300}),
        1
    )
    .is_ok());
    assert!(matches!(
        new_engine(
            "hex",
            GameId::Connect6,
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            1
        ),
        Err(EngineError::UnsupportedGame { .. })
    ));
    assert!(matches!(
        HexEngine::new(
            &serde_json::json!({"swop": true}),
            &serde_json::Value::Null,
            1
        ),
        Err(EngineError::Rules(_))
    ));
}

#[test]
fn swap_decision_when_the_rule_is_on() {
    let rules = serde_json::json!({"swap": true});
    let mut hex = engine(serde_json::json!({"time_ms": 100}), rules.clone());
    assert_eq!(ask(&mut hex, &["F6"], quick(), false), "swap");
    assert_eq!(ask(&mut hex, &["C9"], quick(), false), "swap");
    let answer = ask(&mut hex, &["A1"], quick(), false);
    assert_ne!(answer, "swap");
    assert!(hex.replay(&["A1".into(), answer]).is_ok());
    // As Red, the opening is one we would not swap ourselves.
    let opening = ask(&mut hex, &[], quick(), false);
    assert_eq!(opening, "A9");
    assert!(!should_swap(cell(&opening) as usize));
    // Without the rule: never swap, open in the centre.
    let mut plain = engine(serde_json::json!({"time_ms": 100}), serde_json::Value::Null);
    assert_eq!(ask(&mut plain, &[], quick(), false), "F6");
    assert_ne!(ask(&mut plain, &["F6"], quick(), false), "swap");
    // After a swap, Red moves on the swapped board.
    let after = ask(&mut hex, &["F6", "swap"], quick(), false);
    assert!(hex.replay(&["F6".into(), "swap".into(), after]).is_ok());
}

#[test]
fn plays_only_legal_moves_over_full_games_against_random() {
    for rules in [serde_json::Value::Null, serde_json::json!({"swap": true})] {
        let config = DuelConfig {
            game: GameId::Hex,
            rules,
            engines: [
                ("hex".into(), serde_json::json!({"time_ms": 15})),
                ("random".into(), serde_json::Value::Null),
            ],
            games: 2,
            move_ms: 2_000,
            seed: 11,
        };
        for game in duel::run(&config, |_| {}).unwrap() {
            // An illegal move, an error or a timeout would end the game differently.
            assert_eq!(
                game.outcome.reason,
                EndReason::Connection,
                "{:?}",
                game.moves
            );
            let hex = HexEngine::new(&config.rules, &serde_json::Value::Null, 1).unwrap();
            let replayed = hex.replay(&game.moves).unwrap();
            assert_eq!(replayed.outcome(), Some(game.outcome));
        }
    }
}

fn board_of(red: &[&str], blue: &[&str]) -> Cells {
    let mut cells = [EMPTY; CELLS];
    for &r in red {
        cells[cell(r) as usize] = stone(0);
    }
    for &b in blue {
        cells[cell(b) as usize] = stone(1);
    }
    cells
}

#[test]
fn dead_cells_are_recognised() {
    let f6 = cell("F6") as usize;
    // F6's ring: G6 G7 F7 E6 E5 F5, consecutive cells adjacent.
    let ring = ["G6", "G7", "F7", "E6", "E5", "F5"];
    assert!(is_dead(&board_of(&ring, &[]), f6));
    // Three of each colour side by side: each colour's neighbours are joined already.
    assert!(is_dead(&board_of(&ring[..3], &ring[3..]), f6));
    // Alternating colours: a red stone on F6 would join three red stones, a blue one three blue.
    let red = ["G6", "F7", "E5"];
    let blue = ["G7", "E6", "F5"];
    assert!(!is_dead(&board_of(&red, &blue), f6));
    // Five red neighbours and an empty one next to them: a red F6 joins nothing new, a blue
    // one touches a single empty cell, so it is dead. Three red and one blue: a red F6 would
    // join E5 (empty, touching no red stone) to the red group, so it is not. An occupied cell
    // is never dead.
    assert!(is_dead(&board_of(&ring[..5], &[]), f6));
    assert!(!is_dead(&board_of(&ring[..3], &ring[3..4]), f6));
    assert!(!is_dead(&board_of(&["F6"], &[]), f6));
    // Edges count as their colour's stones: F1 under blue stones and Red's top edge is dead, and
    // so is the corner A1 between B1 (touching the top edge) and A2 (touching the left edge).
    let f1 = cell("F1") as usize;
    assert!(is_dead(&board_of(&[], &["G1", "G2", "F2", "E1"]), f1));
    assert!(is_dead(
        &board_of(&["B1", "B2"], &["A2"]),
        cell("A1") as usize
    ));
    // F2 under red stones, with a blue stone on F1 and nothing joining G2 to E2 around F2's
    // other neighbours... a red F2 would join E2 and G2's halves: not dead when they are apart.
    let f2 = cell("F2") as usize;
    assert!(!is_dead(
        &board_of(&["G2", "G3", "E2"], &["F1", "G1", "F3", "E1"]),
        f2
    ));
}

#[test]
fn dead_cells_stay_out_of_the_tree() {
    // Red has surrounded F6; Blue to move. F6 is dead, so Blue's root must not offer it.
    let moves = interleave(
        &["G6", "G7", "F7", "E6", "E5", "F5"],
        &["A1", "B3", "K2", "J9", "C10"],
    );
    let moves: Vec<&str> = moves.iter().map(String::as_str).collect();
    let mut e = engine(
        serde_json::json!({"ab_below": 0, "playouts": 400}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut e, &moves, ClockView::unlimited(), false);
    assert_eq!(e.last_stats.stage, Stage::Uct);
    let children = e.root_children();
    assert!(!children.is_empty());
    assert!(children.iter().all(|&(c, _)| c != cell("F6")), "{answer}");
    assert_ne!(answer, "F6");
    // 121 cells, 11 stones, and seven inferior cells for Blue: F6 and the corner K1 dead
    // (every two of their usable neighbours already linked); A11 (acute corner: Red's B11
    // or A10 kills it), J1 (Red's I1 leaves it touching only K2's group), K3 (Red's J3 leaves
    // it touching only K2's group and Blue's edge), C11 and D11 (Red's B11 or E11 leaves them
    // touching only C10's group) vulnerable: each worth no more than a pass to Blue.
    let mut left_out: Vec<String> = (0..CELLS as u8)
        .filter(|&c| !moves.contains(&cell_text(c).as_str()))
        .filter(|&c| children.iter().all(|&(x, _)| x != c))
        .map(cell_text)
        .collect();
    left_out.sort();
    assert_eq!(
        left_out,
        ["A11", "C11", "D11", "F6", "J1", "K1", "K3"],
        "{children:?}"
    );
    assert_eq!(children.len(), CELLS - 11 - 7);
}

#[test]
fn the_tree_is_kept_between_moves() {
    let options = serde_json::json!({"ab_below": 0, "playouts": 3000});
    let mut e = engine(options.clone(), serde_json::Value::Null);
    let first = ask(&mut e, &["F6", "E7"], ClockView::unlimited(), false);
    assert_eq!(e.last_stats.stage, Stage::Uct);
    assert_eq!(e.last_stats.reused, 0);
    let reply = ["C3", "D3"].into_iter().find(|&c| c != first).unwrap();
    let moves = ["F6", "E7", first.as_str(), reply];
    ask(&mut e, &moves, ClockView::unlimited(), false);
    assert_eq!(e.last_stats.stage, Stage::Uct);
    assert!(e.last_stats.reused > 0, "{:?}", e.last_stats);
    assert_eq!(e.last_stats.playouts, 3000);
    // The root's children hold the kept visits (less those made before the kept node was
    // expanded) plus this move's playouts.
    let visits: u64 = e.root_children().iter().map(|&(_, v)| u64::from(v)).sum();
    assert_eq!(
        visits,
        3000 + e.last_stats.reused - u64::from(EXPAND_AFTER),
        "{:?}",
        e.last_stats
    );
    // A fresh engine has nothing to keep, and neither has one asked about another game.
    let mut fresh = engine(options, serde_json::Value::Null);
    ask(&mut fresh, &moves, ClockView::unlimited(), false);
    assert_eq!(fresh.last_stats.reused, 0);
    ask(
        &mut e,
        &["B2", "J10", "C5", "H3"],
        ClockView::unlimited(),
        false,
    );
    assert_eq!(e.last_stats.reused, 0);
    // Only our move followed by one reply (or no move at all) leads down the tree.
    let from = board_of(&["F6"], &["E7"]);
    let to = board_of(&["F6", "C3"], &["E7", "D3"]);
    assert_eq!(
        moves_between(&from, 0, &to),
        Some(vec![cell("C3"), cell("D3")])
    );
    assert_eq!(moves_between(&from, 0, &from), Some(vec![]));
    let two_red = board_of(&["F6", "C3", "D3"], &["E7"]);
    assert_eq!(moves_between(&from, 0, &two_red), None);
    assert_eq!(moves_between(&to, 0, &from), None);
}

#[test]
fn tree_mb_is_checked_and_its_default_keeps_the_old_cap() {
    for bad in [
        serde_json::json!({"tree_mb": 0}),
        serde_json::json!({"tree_mb": MAX_TREE_MB + 1}),
        serde_json::json!({"tree_mb": "lots"}),
        serde_json::json!({"tree_mb": -1}),
    ] {
        match HexEngine::new(&serde_json::Value::Null, &bad, 1) {
            Err(EngineError::BadOption { name, .. }) => assert_eq!(name, "tree_mb", "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    for good in [1, DEFAULT_TREE_MB, MAX_TREE_MB] {
        let options = serde_json::json!({ "tree_mb": good.to_string() });
        let hex = engine(options, serde_json::Value::Null);
        assert_eq!(hex.settings.tree_nodes, tree_nodes_for(good));
        let bytes = hex.settings.tree_nodes * std::mem::size_of::<TreeNode>();
        assert!(bytes as u64 <= good << 20, "{good}: {bytes}");
    }
    // The catalogue shows the default in force, and it is the 8-million-node cap of before.
    let option = INFO.options.iter().find(|o| o.name == "tree_mb").unwrap();
    assert_eq!(option.default, DEFAULT_TREE_MB.to_string());
    let default = engine(serde_json::Value::Null, serde_json::Value::Null);
    let nodes = default.settings.tree_nodes;
    assert_eq!(nodes, tree_nodes_for(DEFAULT_TREE_MB));
    assert!((8_000_000..8_050_000).contains(&nodes), "{nodes}");
    // One MiB still holds a root's children many times over.
    assert!(tree_nodes_for(1) > 100 * CELLS);
}

/// Checks `hex`'s tree against what `mib` MiB hold; returns whether the tree reached the cap.
fn tree_within(hex: &HexEngine, mib: u64) -> bool {
    let cap = tree_nodes_for(mib);
    let (len, capacity) = hex.tree_size();
    assert!(
        len <= cap && capacity <= cap,
        "{len} nodes, capacity {capacity}, cap {cap}"
    );
    assert!(capacity * std::mem::size_of::<TreeNode>() <= (mib << 20) as usize);
    len + CELLS > cap
}

#[test]
fn a_small_tree_mb_bounds_the_tree_and_the_search_goes_on() {
    let options = serde_json::json!({"ab_below": 0, "playouts": 5000, "tree_mb": 1});
    let mut hex = engine(options, serde_json::Value::Null);
    let first = ask(&mut hex, &["F6", "E7"], ClockView::unlimited(), false);
    assert_eq!(hex.last_stats.stage, Stage::Uct);
    // The cap was reached and every playout was still made.
    assert!(tree_within(&hex, 1), "{:?}", hex.tree_size());
    assert_eq!(hex.last_stats.playouts, 5000);
    assert!(hex
        .replay(&["F6".into(), "E7".into(), first.clone()])
        .is_ok());
    // The next move keeps part of the full tree and stays under the cap.
    let reply = ["C3", "D3"].into_iter().find(|&c| c != first).unwrap();
    let moves = ["F6", "E7", first.as_str(), reply];
    let second = ask(&mut hex, &moves, ClockView::unlimited(), false);
    assert!(hex.last_stats.reused > 0, "{:?}", hex.last_stats);
    assert_eq!(hex.last_stats.playouts, 5000);
    tree_within(&hex, 1);
    let mut line: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
    line.push(second);
    assert!(hex.replay(&line).is_ok());
}

/// Plays a whole game between two engines built with `options`, checking every answer is
/// legal, and returns how many times `after_move` (called on the engine that just moved)
/// reported a full tree. The game must end by a connection.
fn whole_game_counting_full_trees(
    options: serde_json::Value,
    mut after_move: impl FnMut(&HexEngine) -> usize,
) -> usize {
    let mut sides = [
        engine(options.clone(), serde_json::Value::Null),
        engine(options, serde_json::Value::Null),
    ];
    let mut moves: Vec<String> = Vec::new();
    let mut full = 0;
    let outcome = loop {
        let position = sides[0].replay(&moves).unwrap();
        if let Some(outcome) = position.outcome() {
            break outcome;
        }
        let hex = &mut sides[moves.len() % 2];
        let refs: Vec<&str> = moves.iter().map(String::as_str).collect();
        let answer = ask(hex, &refs, ClockView::unlimited(), false);
        full += after_move(hex);
        assert!(
            position.is_legal(&Hex::parse_move(&answer).unwrap()),
            "{answer} after {moves:?}"
        );
        moves.push(answer);
    };
    assert_eq!(outcome.reason, EndReason::Connection, "{moves:?}");
    full
}

#[test]
fn a_tiny_tree_plays_a_whole_game_legally() {
    // 8000 playouts a move: with inferior cells left out each expansion adds fewer
    // children, and at 4000 the tree ends most moves a little under the cap.
    let options = serde_json::json!({"ab_below": 0, "playouts": 8000, "tree_mb": 1});
    let capped = whole_game_counting_full_trees(options, |hex| usize::from(tree_within(hex, 1)));
    assert!(capped >= 10, "the tree was full after only {capped} moves");
}

#[test]
fn threads_is_checked_and_splits_the_tree_cap() {
    for bad in [
        serde_json::json!({"threads": 0}),
        serde_json::json!({"threads": MAX_THREADS + 1}),
        serde_json::json!({"threads": "both"}),
        serde_json::json!({"threads": -2}),
    ] {
        match HexEngine::new(&serde_json::Value::Null, &bad, 1) {
            Err(EngineError::BadOption { name, .. }) => assert_eq!(name, "threads", "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let option = INFO.options.iter().find(|o| o.name == "threads").unwrap();
    assert_eq!(option.default, "1");
    assert_eq!(
        engine(serde_json::Value::Null, serde_json::Value::Null)
            .worker_trees()
            .len(),
        1
    );
    for (threads, tree_mb) in [(1, 1), (2, 1), (3, 214), (MAX_THREADS, 1)] {
        let options = serde_json::json!({"threads": threads.to_string(), "tree_mb": tree_mb});
        let hex = engine(options, serde_json::Value::Null);
        let trees = hex.worker_trees();
        assert_eq!(trees.len() as u64, threads);
        // Equal shares that together stay within `tree_mb`, each still far above a root's
        // children.
        let caps: Vec<usize> = trees.iter().map(|t| t.2).collect();
        assert!(
            caps.iter().all(|&c| c == caps[0] && c > 2 * CELLS),
            "{caps:?}"
        );
        assert!(caps.iter().sum::<usize>() <= tree_nodes_for(tree_mb));
        assert!(caps[0] * threads as usize + threads as usize > tree_nodes_for(tree_mb));
    }
}

#[test]
fn two_threads_search_in_parallel_and_keep_their_trees() {
    let options = serde_json::json!({"ab_below": 0, "playouts": 8001, "threads": 2});
    let mut hex = engine(options, serde_json::Value::Null);
    let first = ask(&mut hex, &["F6", "E7"], ClockView::unlimited(), false);
    assert_eq!(hex.last_stats.stage, Stage::Uct);
    assert!(hex
        .replay(&["F6".into(), "E7".into(), first.clone()])
        .is_ok());
    // The cap is split between the workers, and both searched.
    assert_eq!(hex.last_stats.playouts, 8001);
    let work = hex.worker_work();
    assert_eq!(work, vec![(4001, 0), (4000, 0)]);
    // Each has its own tree and random numbers: their root visits differ.
    let trees = hex.worker_trees();
    assert!(trees.iter().all(|t| t.0 > CELLS), "{trees:?}");
    let roots = hex.worker_roots();
    assert_ne!(roots[0], roots[1]);
    // The move played is the most visited cell over both trees.
    let mut summed = [0u64; CELLS];
    for &(c, v) in roots.iter().flatten() {
        summed[c as usize] += u64::from(v);
    }
    // A fresh root is expanded at once: every playout passed through one of its children.
    assert_eq!(summed.iter().sum::<u64>(), 8001);
    let most = summed.iter().copied().max().unwrap();
    assert_eq!(summed[cell(&first) as usize], most, "{first}");
    // Both workers keep their trees for the next move, after a reply both have searched.
    let replies = hex.worker_replies(cell(&first));
    let reply = replies[0]
        .iter()
        .filter_map(|&(c, v)| Some((c, v.min(replies[1].iter().find(|r| r.0 == c)?.1))))
        .max_by_key(|&(_, v)| v)
        .unwrap();
    assert!(reply.1 > EXPAND_AFTER, "{reply:?}");
    let reply = cell_text(reply.0);
    let moves = ["F6", "E7", first.as_str(), reply.as_str()];
    let second = ask(&mut hex, &moves, ClockView::unlimited(), false);
    let work = hex.worker_work();
    assert!(work.iter().all(|&(p, kept)| p > 0 && kept > 0), "{work:?}");
    assert_eq!(hex.last_stats.reused, work.iter().map(|w| w.1).sum::<u64>());
    let mut line: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
    line.push(second);
    assert!(hex.replay(&line).is_ok());
    // A cap smaller than the thread count runs only as many workers as playouts.
    let mut few = engine(
        serde_json::json!({"ab_below": 0, "playouts": 2, "threads": 4}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut few, &["F6", "E7"], ClockView::unlimited(), false);
    assert!(few.replay(&["F6".into(), "E7".into(), answer]).is_ok());
    assert_eq!(few.last_stats.playouts, 2);
    let work: Vec<u64> = few.worker_work().iter().map(|w| w.0).collect();
    assert_eq!(work, vec![1, 1, 0, 0]);
}

#[test]
fn two_threads_answer_at_once_when_aborted() {
    let moves = ["F6", "E7", "D5", "G4"];
    let position = || {
        engine(serde_json::Value::Null, serde_json::Value::Null)
            .replay(&moves.map(String::from))
            .unwrap()
    };
    // No cap: only the abort flag (or the deadline) stops the workers.
    for ab_below in [0u64, 122] {
        let options = serde_json::json!({"ab_below": ab_below, "threads": 2});
        let mut hex = engine(options, serde_json::Value::Null);
        let answer = ask(&mut hex, &moves, ClockView::unlimited(), true);
        assert!(
            position().is_legal(&Hex::parse_move(&answer).unwrap()),
            "{answer}"
        );
        assert_eq!(hex.last_stats.playouts, 0, "{:?}", hex.last_stats);
        assert!(hex.last_stats.nodes <= 16, "{:?}", hex.last_stats);
    }
    // Unaborted, a time limit alone stops both workers with a legal move.
    let options = serde_json::json!({"ab_below": 0, "threads": 2, "time_ms": 50});
    let mut hex = engine(options, serde_json::Value::Null);
    let answer = ask(&mut hex, &moves, ClockView::unlimited(), false);
    assert_eq!(hex.last_stats.stage, Stage::Uct);
    assert!(position().is_legal(&Hex::parse_move(&answer).unwrap()));
}

#[test]
fn two_threads_with_a_tiny_tree_play_a_whole_game_legally() {
    let options = serde_json::json!({"ab_below": 0, "playouts": 4000, "tree_mb": 1, "threads": 2});
    let capped = whole_game_counting_full_trees(options, |hex| {
        let trees = hex.worker_trees();
        let bytes: usize =
            trees.iter().map(|t| t.1).sum::<usize>() * std::mem::size_of::<TreeNode>();
        assert!(bytes <= 1 << 20, "{trees:?}");
        trees
            .iter()
            .map(|&(len, capacity, cap)| {
                assert!(len <= cap && capacity <= cap, "{trees:?}");
                usize::from(len + CELLS > cap)
            })
            .sum()
    });
    assert!(capped >= 10, "the trees were full only {capped} times");
}

#[test]
fn win_threats_agree_with_winning_cells() {
    let mut rng = SmallRng::seed_from_u64(11);
    for round in 0..400 {
        let mut cells = [EMPTY; CELLS];
        let fill = 20 + round % 80;
        for _ in 0..fill {
            let c = rng.gen_range(0..CELLS);
            cells[c] = stone(rng.gen_range(0..2));
        }
        for colour in 0..2 {
            if connected(&cells, colour) {
                continue;
            }
            let slow = winning_cells(&cells, colour);
            let (count, found) = win_threats(&cells, colour);
            assert_eq!(count, slow.len().min(2), "{cells:?}");
            assert_eq!(&found[..count], &slow[..count]);
        }
    }
}

/// Red to move wins in three: F1-F4 and G7-G11 are one stone apart, and F5 or G6 joins one of
/// them with a double threat on the other (nine idle Blue stones in the corner).
const RED_GAP: [&str; 9] = ["F1", "F2", "F3", "F4", "G7", "G8", "G9", "G10", "G11"];
const BLUE_IDLE: [&str; 9] = ["A9", "B9", "C9", "A10", "B10", "C10", "A11", "B11", "C11"];

#[test]
fn the_solver_proves_a_win_in_three_and_plays_it() {
    let moves = interleave(&RED_GAP, &BLUE_IDLE);
    let moves: Vec<&str> = moves.iter().map(String::as_str).collect();
    let mut e = engine(
        serde_json::json!({"ab_below": 0, "playouts": 50000, "vc": 0}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut e, &moves, ClockView::unlimited(), false);
    assert_eq!(e.last_stats.stage, Stage::Uct);
    assert!(answer == "F5" || answer == "G6", "{answer}");
    let proofs = e.root_proofs();
    let chosen = proofs.iter().find(|&&(c, _)| cell_text(c) == answer);
    assert_eq!(chosen.map(|p| p.1), Some(1), "{proofs:?}");
    // The search stopped once the root was solved, well before its playout cap.
    assert!(e.last_stats.playouts < 50000, "{:?}", e.last_stats);
}

#[test]
fn the_solver_marks_wins_and_losses_in_one_and_two() {
    // Red's column F lacks only F11: a win in one at the root is marked (the engine itself
    // plays it before searching, so the worker is asked directly).
    let mut cells = board_of(&RED_COLUMN, &BLUE_SCATTER[..9]);
    let mut worker = UctWorker::new(1, 0, 100_000);
    let limits_flag = AtomicBool::new(false);
    let limits = Limits {
        deadline: None,
        abort: &limits_flag,
    };
    let flat = |_: u8| 0.5f32;
    assert!(worker.search(&cells, 0, &flat, !0, 100, &limits));
    assert_eq!(worker.root_proofs(), vec![(cell("F11"), 1)]);
    assert_eq!(worker.best_cell(), cell("F11"));
    // Blue to move on the win-in-three board (Red's F5/G6 threat): every Blue move that leaves
    // both F5 and G6 to Red, and every one that cannot stop the double threat, is proven lost.
    cells = board_of(&RED_GAP, &BLUE_IDLE[..8]);
    let mut worker = UctWorker::new(2, 0, 2_000_000);
    assert!(worker.search(&cells, 1, &flat, !0, 60000, &limits));
    let proofs = worker.root_proofs();
    let lost = proofs.iter().filter(|p| p.1 == -1).count();
    assert!(lost > 10, "{proofs:?}");
    let best = worker.best_cell();
    let best_proof = proofs.iter().find(|p| p.0 == best).map(|p| p.1);
    assert!(
        best_proof != Some(-1) || lost == proofs.len(),
        "{best} {proofs:?}"
    );
}

#[test]
fn a_proven_loss_is_not_chosen_while_another_move_exists() {
    let mut worker = UctWorker::new(3, 0, 1000);
    // The most visited move is proven lost: the next one is played.
    worker.set_root(&[(10, 900, -1), (20, 50, 0), (30, 40, 0)]);
    assert_eq!(worker.best_cell(), 20);
    // A proven win beats any number of visits.
    worker.set_root(&[(10, 900, 0), (20, 50, 0), (30, 2, 1)]);
    assert_eq!(worker.best_cell(), 30);
    // Every move lost: the most visited is still played.
    worker.set_root(&[(10, 900, -1), (20, 50, -1)]);
    assert_eq!(worker.best_cell(), 10);
}

#[test]
fn the_solver_avoids_proven_losses_in_play() {
    // The win-in-three shape mirrored for Blue (A6-D6 and G7-K7; E6 or F7 makes a double
    // threat), Red to move with idle stones in the far corner: Red's moves elsewhere lose.
    let blue = ["A6", "B6", "C6", "D6", "G7", "H7", "I7", "J7", "K7"];
    let red = ["I1", "J1", "K1", "I2", "J2", "K2", "I3", "J3", "K3"];
    let moves = interleave(&red, &blue);
    let moves: Vec<&str> = moves.iter().map(String::as_str).collect();
    let mut e = engine(
        serde_json::json!({"ab_below": 0, "playouts": 60000}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut e, &moves, ClockView::unlimited(), false);
    let proofs = e.root_proofs();
    let lost = proofs.iter().filter(|p| p.1 == -1).count();
    assert!(lost > 10, "{proofs:?}");
    let chosen = proofs.iter().find(|&&(c, _)| cell_text(c) == answer);
    assert!(
        chosen.map(|p| p.1) != Some(-1) || lost == proofs.len(),
        "{answer} {proofs:?}"
    );
}

fn set_of(cells: &[&str]) -> CellSet {
    cells.iter().fold(0, |s, c| s | (1u128 << cell(c)))
}

#[test]
fn h_search_finds_the_edge_template_and_a_bridge_ladder() {
    // F2 joins Red's first edge through E1 or F1 (edge template II). The fill-in finds that
    // pair captured (a Blue stone on either is dead once Red takes the other) and gives it to
    // Red, so F2 is part of the edge and a stone bridging to it, G4, joins the edge through
    // the bridge's two cells F3 and G3.
    let board = board_of(&["F2"], &[]);
    let vc = Connections::build(&board, 0);
    assert_eq!(vc.filled(), set_of(&["E1", "F1"]));
    assert!(vc.fulls(cell("F2") as usize, CELLS).is_empty());
    let vc = Connections::build(&board_of(&["F2", "G4"], &[]), 0);
    assert!(
        vc.fulls(cell("G4") as usize, CELLS)
            .contains(&set_of(&["F3", "G3"])),
        "{:?}",
        vc.fulls(cell("G4") as usize, CELLS)
    );
    assert!(!vc.won());
    // A ladder of bridges from row 2 to row 10, each end in template II: Red is joined.
    let ladder = ["F2", "G4", "H6", "I8", "J10"];
    let vc = Connections::build(&board_of(&ladder, &[]), 0);
    assert!(vc.won());
    assert_eq!(vc.must_play(), None);
    // Blue takes one carrier cell of the G4–H6 bridge (G5): Red still holds the edges if it
    // moves first (the other cell, H5, is a key), and Blue must play in every semi
    // connection's carrier, which holds H5.
    let vc = Connections::build(&board_of(&ladder, &["G5"]), 0);
    assert!(!vc.won(), "{:?}", vc.edge_fulls());
    assert!(vc.edge_semis().any(|(_, key)| key == cell("H5")));
    let must = vc.must_play().expect("a semi connection");
    assert_ne!(must & (1u128 << cell("H5")), 0);
    // Blue can only defend inside the ladder's links: the bridges' and templates' cells.
    let links = set_of(&[
        "E1", "F1", "F3", "G3", "H5", "H7", "I7", "I9", "J9", "J11", "K11",
    ]);
    assert_eq!(must & !links, 0, "{:?}", cells_of(must).collect::<Vec<_>>());
}

/// The winner of `board` with `mover` to move, by exhaustive search (small boards only).
fn solve(board: &mut Cells, mover: usize) -> usize {
    for colour in 0..2 {
        if connected(board, colour) {
            return colour;
        }
    }
    for c in 0..CELLS {
        if board[c] == EMPTY {
            board[c] = stone(mover);
            let w = solve(board, 1 - mover);
            board[c] = EMPTY;
            if w == mover {
                return mover;
            }
        }
    }
    1 - mover
}

/// A random board with `empty` cells left, Red and Blue stones alternating (Red to move).
fn random_filling(rng: &mut SmallRng, empty: usize) -> Cells {
    let mut board = [EMPTY; CELLS];
    let mut order: Vec<usize> = (0..CELLS).collect();
    for k in (1..CELLS).rev() {
        order.swap(k, rng.gen_range(0..=k));
    }
    for (k, &c) in order[..CELLS - empty].iter().enumerate() {
        board[c] = stone(k % 2);
    }
    board
}

#[test]
fn h_search_is_sound_on_small_endgames() {
    // Random fillings with 8 empty cells left and no side joined yet: every full edge
    // connection H-search finds must win against any defence, every semi connection's key
    // must win for the colour moving first, and every cell outside the must-play region must
    // lose for the other colour. Exhaustive search checks each claim.
    let mut rng = SmallRng::seed_from_u64(7);
    let (mut positions, mut fulls, mut semis, mut outside) = (0, 0, 0, 0);
    while positions < 60 {
        let board = random_filling(&mut rng, 8);
        if connected(&board, 0) || connected(&board, 1) {
            continue;
        }
        positions += 1;
        for colour in 0..2 {
            let vc = Connections::build(&board, colour);
            if vc.won() {
                fulls += 1;
                assert_eq!(solve(&mut board.clone(), 1 - colour), colour, "{board:?}");
            }
            for (_, key) in vc.edge_semis() {
                semis += 1;
                let mut after = board;
                after[key as usize] = stone(colour);
                assert_eq!(solve(&mut after, 1 - colour), colour, "{board:?} key {key}");
            }
            if let Some(must) = vc.must_play() {
                for c in (0..CELLS).filter(|&c| board[c] == EMPTY && !holds(must, c)) {
                    outside += 1;
                    let mut after = board;
                    after[c] = stone(1 - colour);
                    assert_eq!(solve(&mut after, colour), colour, "{board:?} cell {c}");
                }
            }
        }
    }
    // The claims were put to the test, not vacuously true.
    assert!(
        fulls > 5 && semis > 5 && outside > 5,
        "{fulls} {semis} {outside}"
    );
}

/// The positions of `tests/fixtures/hex/mohex_vc_wins.txt`: the board, the side to move (MoHex)
/// and the key MoHex's connection builder named.
fn mohex_vc_wins() -> Vec<(Cells, usize, u8)> {
    figures::parse_vc_wins(include_str!(
        "../../../tests/fixtures/hex/mohex_vc_wins.txt"
    ))
    .unwrap()
}

#[test]
fn a_kept_position_line_that_does_not_read_is_refused_naming_it() {
    let err = figures::parse_vc_wins("# a comment\nnot-a-position F6\n").unwrap_err();
    assert!(err.contains("not-a-position"), "{err}");
    let fixture = include_str!("../../../tests/fixtures/hex/mohex_vc_wins.txt");
    let first = fixture
        .lines()
        .find(|line| !line.starts_with('#') && !line.trim().is_empty())
        .unwrap();
    let (position, _) = first.rsplit_once(' ').unwrap();
    let err = figures::parse_vc_wins(&format!("{position} Z99")).unwrap_err();
    assert!(err.contains("Z99"), "{err}");
    assert_eq!(figures::parse_vc_wins(first).unwrap().len(), 1);
}

#[test]
fn mohex_vc_wins_are_open_positions_with_an_empty_key() {
    let wins = mohex_vc_wins();
    assert_eq!(wins.len(), 27);
    for (board, mover, key) in wins {
        assert_eq!(board[key as usize], EMPTY);
        // The key does not win at once: the connection it makes is virtual.
        let mut after = board;
        after[key as usize] = stone(mover);
        assert!(!connected(&after, mover));
    }
}

#[test]
fn h_search_on_the_kept_mohex_wins_agrees_with_mohex() {
    // MoHex proved each position won for the side to move by playing the key. After the key
    // the other side, to move, must find no full and no semi connection of its own (it would
    // be a win MoHex's proof rules out), and the mover's full connections, where found, are
    // MoHex's win. Position 9 (Red's key I5) needs the caps of 24 full / 40 semi per pair and
    // 8 semis per OR: with 6 / 10 / 4 H-search missed it.
    let wins = mohex_vc_wins();
    let mut seen = Vec::new();
    for (i, (board, mover, key)) in wins.iter().enumerate() {
        let mut after = *board;
        after[*key as usize] = stone(*mover);
        let other = Connections::build(&after, 1 - mover);
        assert!(
            !other.won() && other.edge_semis().len() == 0,
            "position {i}"
        );
        if Connections::build(&after, *mover).won() {
            seen.push(i);
        }
    }
    assert!(seen.contains(&9), "{seen:?}");
}

#[test]
fn virtual_connections_play_the_winning_key_and_the_must_play_region() {
    // Red's F1–F4 and G7–G11 leave a gap that one Red move closes for good: H-search finds
    // Red's semi connection and the engine plays its key at once, without searching.
    let moves = interleave(&RED_GAP, &BLUE_IDLE);
    let moves: Vec<&str> = moves.iter().map(String::as_str).collect();
    let mut e = engine(
        serde_json::json!({"playouts": 50000}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut e, &moves, ClockView::unlimited(), false);
    assert_eq!(e.last_stats.stage, Stage::Connection);
    let mut board = board_of(&RED_GAP, &BLUE_IDLE);
    board[cell(&answer) as usize] = stone(0);
    assert!(Connections::build(&board, 0).won(), "{answer}");
    // Blue to move in Red's ladder with one link broken: Blue is kept to the cells that stop
    // Red's semi connection, and plays one of them.
    let ladder = ["F2", "G4", "H6", "I8", "J10"];
    let blue = ["G5", "A1", "A2", "A3"];
    let moves = interleave(&ladder, &blue);
    let moves: Vec<&str> = moves[..9].iter().map(String::as_str).collect();
    let mut e = engine(
        serde_json::json!({"playouts": 3000}),
        serde_json::Value::Null,
    );
    let answer = ask(&mut e, &moves, ClockView::unlimited(), false);
    let must = Connections::build(&board_of(&ladder, &blue[..4]), 0)
        .must_play()
        .expect("Red has a semi connection");
    assert!(e.last_stats.must_play > 0 && e.last_stats.must_play <= 11);
    assert_ne!(must & (1u128 << cell(&answer)), 0, "{answer}");
}

#[test]
fn root_children_are_proven_by_virtual_connections() {
    // Blue to move against Red's intact ladder of bridges: whatever Blue plays, Red keeps a
    // semi or full connection, so with the children's check (`vc` 2) every root move is
    // proven lost once expanded and the search stops early; without it (`vc` 1) the playout
    // cap is reached.
    let ladder = ["F2", "G4", "H6", "I8", "J10"];
    let blue = ["A1", "A2", "A3", "A4"];
    let moves = interleave(&ladder, &blue);
    let moves: Vec<&str> = moves[..9].iter().map(String::as_str).collect();
    let mut checked = engine(
        serde_json::json!({"vc": 2, "playouts": 200000, "ab_below": 0}),
        serde_json::Value::Null,
    );
    ask(&mut checked, &moves, ClockView::unlimited(), false);
    let proofs = checked.root_proofs();
    assert!(!proofs.is_empty());
    assert!(proofs.iter().all(|&(_, p)| p == -1), "{proofs:?}");
    assert!(
        checked.last_stats.playouts < 200000,
        "{:?}",
        checked.last_stats
    );
    let mut plain = engine(
        serde_json::json!({"vc": 1, "playouts": 20000, "ab_below": 0}),
        serde_json::Value::Null,
    );
    ask(&mut plain, &moves, ClockView::unlimited(), false);
    assert_eq!(plain.last_stats.playouts, 20000);
    // The checks are counted, over both threads when there are two.
    assert!(checked.last_stats.checks > 0, "{:?}", checked.last_stats);
    assert_eq!(plain.last_stats.checks, 0);
    let mut two = engine(
        serde_json::json!({"vc": 2, "playouts": 20000, "ab_below": 0, "threads": 2}),
        serde_json::Value::Null,
    );
    ask(&mut two, &moves, ClockView::unlimited(), false);
    assert!(two.last_stats.checks > 1, "{:?}", two.last_stats);
    assert!(plain.root_proofs().iter().any(|&(_, p)| p == 0));
}

#[test]
fn tree_nodes_proven_by_virtual_connections_are_right() {
    // UCT with the checks of nodes below the root's moves (at 4 visits; the root's moves
    // themselves unchecked) on random positions with 11 empty cells: every root move the
    // search proves won or lost must be so by exhaustive search. The root's moves get their
    // proofs from the threat scan and the checks below them.
    let mut rng = SmallRng::seed_from_u64(13);
    let (mut positions, mut proofs, mut checks) = (0, 0, 0);
    let abort = AtomicBool::new(false);
    let limits = Limits {
        deadline: None,
        abort: &abort,
    };
    while positions < 60 {
        let board = random_filling(&mut rng, 11);
        // Positions without a win in one for either side, where the threat scan alone
        // decides nothing at the root.
        if connected(&board, 0)
            || connected(&board, 1)
            || win_threats(&board, 0).0 > 0
            || win_threats(&board, 1).0 > 0
        {
            continue;
        }
        positions += 1;
        let mover = 0;
        let mut worker = UctWorker::new(3, 0, 1 << 20);
        worker.check_visits = 4;
        assert!(worker.search(&board, mover, &|_| 0.5, !0, 3000, &limits));
        checks += worker.checks;
        for (c, proven) in worker.root_proofs() {
            if proven == 0 {
                continue;
            }
            proofs += 1;
            let mut after = board;
            after[c as usize] = stone(mover);
            let winner = solve(&mut after, 1 - mover);
            let claimed = if proven > 0 { mover } else { 1 - mover };
            assert_eq!(winner, claimed, "{board:?} cell {c} proven {proven}");
        }
    }
    assert!(
        proofs > 30 && checks > 30,
        "{proofs} proofs, {checks} checks"
    );
}

#[test]
fn a_checked_node_keeps_only_the_must_play_cells() {
    // A node with all its children in the tree, checked on random positions with 10 empty
    // cells. Where H-search decides the node outright (the side to move has a semi or full
    // connection, or the other side a full one), the node's proof must be right; the first
    // 20 such positions are solved. Otherwise the children outside the other side's
    // must-play region are proven lost, which exhaustive search must confirm, and the ones
    // inside stay open; five such positions are checked.
    let mut rng = SmallRng::seed_from_u64(17);
    let (mut positions, mut pruned, mut open, mut proven) = (0, 0, 0, 0);
    let mover = 0;
    while positions < 5 {
        let board = random_filling(&mut rng, 10);
        if connected(&board, 0) || connected(&board, 1) {
            continue;
        }
        let empties: Vec<(u8, u32, i8)> = (0..CELLS as u8)
            .filter(|&c| board[c as usize] == EMPTY)
            .map(|c| (c, 1, 0))
            .collect();
        let mut worker = UctWorker::new(3, 0, 1 << 16);
        worker.set_root(&empties);
        worker.check_expanded(0, &board, mover);
        let node = worker.root_proven();
        if node != 0 {
            // The node's proof is for the side that moved into it, the other side.
            if proven < 20 {
                proven += 1;
                let claimed = if node > 0 { 1 - mover } else { mover };
                assert_eq!(solve(&mut board.clone(), mover), claimed, "{board:?}");
            }
            continue;
        }
        positions += 1;
        for (c, p) in worker.root_proofs() {
            let mut after = board;
            after[c as usize] = stone(mover);
            if p == -1 {
                pruned += 1;
                assert_eq!(
                    solve(&mut after, 1 - mover),
                    1 - mover,
                    "{board:?} cell {c}"
                );
            } else {
                assert_eq!(p, 0);
                open += 1;
            }
        }
    }
    assert!(
        pruned > 15 && open > 5 && proven == 20,
        "{pruned} pruned, {open} open, {proven} proven"
    );
}

/// `board` turned half a turn (cell c goes to CELLS - 1 - c).
fn half_turned(board: &Cells) -> Cells {
    std::array::from_fn(|c| board[CELLS - 1 - c])
}

/// `board` mirrored in its long diagonal with the colours swapped: Red's position becomes
/// Blue's.
fn mirrored(board: &Cells) -> Cells {
    std::array::from_fn(|c| match board[(c % N) * N + c / N] {
        EMPTY => EMPTY,
        s => 3 - s,
    })
}

#[test]
fn a_shape_is_the_same_after_a_half_turn_and_for_the_other_colour_mirrored() {
    use patterns::{canonical, half_turn};
    let mut rng = SmallRng::seed_from_u64(11);
    let mut checked = 0;
    for _ in 0..40 {
        let empty = rng.gen_range(20..110);
        let board = random_filling(&mut rng, empty);
        let last = rng.gen_range(0..CELLS) as u8;
        for c in (0..CELLS).filter(|&c| board[c] == EMPTY) {
            for mover in 0..2 {
                let shape = shape_of(&board, c, mover, last);
                let turned = shape_of(
                    &half_turned(&board),
                    CELLS - 1 - c,
                    mover,
                    (CELLS - 1 - last as usize) as u8,
                );
                assert_eq!(turned.ring, half_turn(shape.ring), "{board:?} {c}");
                assert_eq!(turned.bridges, half_turn(shape.bridges));
                assert_eq!(turned.last, shape.last);
                assert_eq!(canonical(turned.ring), canonical(shape.ring));
                let t = |x: usize| (x % N) * N + x / N;
                let other = shape_of(&mirrored(&board), t(c), 1 - mover, t(last as usize) as u8);
                assert_eq!(other, shape, "{board:?} {c} mover {mover}");
                checked += 1;
            }
        }
    }
    assert!(checked > 5000, "{checked}");
}

#[test]
fn a_shape_reads_the_edges_as_their_owners_stones() {
    let board = [EMPTY; CELLS];
    // A1's neighbours in ring order: B1, B2, A2 on the board; the three off it are, for Red,
    // Blue's edge (left of A), then the corner beyond both edges, then Red's edge (above row 1).
    let red = shape_of(&board, cell("A1") as usize, 0, NO);
    assert_eq!(red.ring, 2 << 6 | 3 << 8 | 1 << 10);
    // Blue reads the board transposed: A1 lies on the long diagonal, so its shape for Blue is
    // Red's (left of A is Blue's own edge, read where Red reads its own edge above row 1).
    let blue = shape_of(&board, cell("A1") as usize, 1, NO);
    assert_eq!(blue, red);
    let k1 = shape_of(&board, cell("K1") as usize, 0, NO);
    // K1 for Red: L1 off the board right (Blue's edge), L2 too, A... ring order from (1,0):
    // (1,0) L1 Blue's edge, (1,1) L2 Blue's edge, (0,1) K2, (-1,0) J1, (-1,-1) J0 Red's
    // edge, (0,-1) K0 Red's edge.
    assert_eq!(k1.ring, 2 | 2 << 2 | 1 << 8 | 1 << 10);
    // The last move as a neighbour, then as a bridge point (C2 = A1 + B1's and B2's offsets).
    assert_eq!(shape_of(&board, cell("A1") as usize, 0, cell("B2")).last, 1);
    assert_eq!(shape_of(&board, cell("A1") as usize, 0, cell("C2")).last, 2);
    assert_eq!(shape_of(&board, cell("A1") as usize, 0, cell("D4")).last, 0);
    // The mover's stone reads 1 and the opponent's 2, whoever the mover is.
    let mut board = board;
    board[cell("B1") as usize] = stone(0);
    assert_eq!(shape_of(&board, cell("A1") as usize, 0, NO).ring & 3, 1);
    assert_eq!(
        shape_of(&board, cell("A1") as usize, 1, NO).ring >> 4 & 3,
        2
    );
}

#[test]
fn pattern_weights_round_trip_through_their_text() {
    use patterns::PatternWeights;
    let text = "# weights\nring 5 2.5\nbridges 4095 0.25 # a comment\nlast 1 4\n\n";
    let weights = PatternWeights::parse(text).unwrap();
    let mut written = Vec::new();
    weights.write(&mut written).unwrap();
    let written = String::from_utf8(written).unwrap();
    assert_eq!(PatternWeights::parse(&written).unwrap(), weights);
    // The half-turned key shares the weight; unlisted keys weigh 1.
    let shape = |ring, bridges, last| patterns::Shape {
        ring,
        bridges,
        last,
    };
    assert_eq!(weights.gamma(shape(patterns::half_turn(5), 0, 0)), 2.5);
    assert_eq!(weights.gamma(shape(5, 4095, 1)), 2.5 * 0.25 * 4.0);
    assert_eq!(weights.gamma(shape(6, 7, 2)), 1.0);
    // Four lines: ring 5 (canonical), bridges 4095's canonical key, and last 0..3.
    assert!(written.contains("ring 5 2.5"), "{written}");
    assert_eq!(written.lines().count(), 5, "{written}");
}

#[test]
fn bad_pattern_weights_are_refused_with_their_line() {
    use patterns::PatternWeights;
    for (text, why) in [
        ("ring 5", "expected: TABLE KEY GAMMA"),
        ("stones 5 1", "the table is ring, bridges or last"),
        ("ring five 1", "the key is not a number"),
        ("ring 4096 1", "the key is out of range"),
        ("last 3 1", "the key is out of range"),
        ("ring 5 x", "the weight is not a number"),
        ("ring 5 0", "the weight must be above 0"),
        ("ring 5 inf", "the weight must be above 0"),
    ] {
        let error = PatternWeights::parse(&format!("last 0 1\n{text}\n")).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("weights line 2: {why}"),
            "{text}"
        );
    }
}

#[test]
fn the_shipped_pattern_weights_are_read_in_full() {
    let text = include_str!("patterns.txt");
    let weights = patterns::PatternWeights::parse(text).unwrap();
    let lines = text.lines().filter(|l| !l.starts_with('#')).count();
    let mut written = Vec::new();
    weights.write(&mut written).unwrap();
    assert_eq!(written.split(|&b| b == b'\n').count() - 1, lines);
    assert!(lines > 100, "{lines} weights");
    assert_eq!(shipped_weights(), &weights);
}

#[test]
fn training_learns_the_shape_the_chosen_moves_share() {
    use patterns::{train, TrainingSet};
    // Games where every move after the first is a neighbour of the move before (where one is
    // free): the weight of "next to the last move" must come out far above the others, and
    // the likelihood must never fall (minorization-maximization climbs).
    let mut rng = SmallRng::seed_from_u64(3);
    let mut set = TrainingSet::default();
    for _ in 0..60 {
        let mut board = [EMPTY; CELLS];
        let mut moves = Vec::new();
        let mut last = rng.gen_range(0..CELLS);
        for _ in 0..40 {
            let near: Vec<u8> = RING[last]
                .iter()
                .copied()
                .filter(|&n| n != NO && board[n as usize] == EMPTY)
                .collect();
            let next = match near[..] {
                [] => loop {
                    let c = rng.gen_range(0..CELLS);
                    if board[c] == EMPTY {
                        break c;
                    }
                },
                _ => near[rng.gen_range(0..near.len())] as usize,
            };
            board[next] = stone(moves.len() % 2);
            moves.push(cell_text(next as u8));
            last = next;
        }
        assert_eq!(set.add_game(&moves, &|ply| ply >= 1), 39);
    }
    assert_eq!(set.len(), 60 * 39);
    let mut likelihoods = Vec::new();
    let weights = train(&set, 8, &mut |_, l| likelihoods.push(l));
    assert_eq!(likelihoods.len(), 8);
    assert!(
        likelihoods.windows(2).all(|w| w[1] >= w[0] - 1e-9),
        "{likelihoods:?}"
    );
    let gamma = |last| {
        weights.gamma(patterns::Shape {
            ring: 0,
            bridges: 0,
            last,
        })
    };
    assert!(gamma(1) > 20.0 * gamma(0), "{} {}", gamma(1), gamma(0));
    assert!(gamma(1) > 20.0 * gamma(2), "{} {}", gamma(1), gamma(2));
}

#[test]
fn a_game_stops_being_learnt_at_a_move_that_is_not_a_free_cell() {
    let mut set = patterns::TrainingSet::default();
    let moves: Vec<String> = ["F6", "E5", "F6", "A1"]
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert_eq!(set.add_game(&moves, &|_| true), 2);
    let moves: Vec<String> = ["F6", "swap", "A1"].iter().map(|m| m.to_string()).collect();
    assert_eq!(set.add_game(&moves, &|_| true), 1);
}

/// A worker set up by `configure` after `playouts` playouts from Red's F6, Blue to move,
/// the root's moves given the flat prior 0.5.
fn searched_after_f6(configure: impl FnOnce(&mut UctWorker), playouts: u64) -> UctWorker {
    let mut board = [EMPTY; CELLS];
    board[cell("F6") as usize] = stone(0);
    let abort = AtomicBool::new(false);
    let limits = Limits {
        deadline: None,
        abort: &abort,
    };
    let mut worker = UctWorker::new(1, 0, 1 << 16);
    configure(&mut worker);
    assert!(worker.search(&board, 1, &|_| 0.5, !0, playouts, &limits));
    worker
}

#[test]
fn with_patterns_on_the_children_share_the_bias() {
    let worker = searched_after_f6(|w| w.pattern_bias = 2.5, 1);
    let biases = worker.child_biases(0);
    // Every cell but F6 and the two acute corners, K1 and A11, each of which a Red stone on
    // either neighbour leaves dead (vulnerable: worth no more than a pass to Blue).
    assert_eq!(biases.len(), CELLS - 3);
    for corner in ["K1", "A11"] {
        assert!(biases.iter().all(|&(c, _)| c != cell(corner)), "{corner}");
    }
    let total: f32 = biases.iter().map(|&(_, b)| b).sum();
    assert!((total - 1.0).abs() < 1e-3, "{total}");
    // The trained weights favour some cells: the shares are not all equal.
    let most = biases.iter().map(|&(_, b)| b).fold(0.0, f32::max);
    assert!(most > 2.0 / CELLS as f32, "{most}");
    let plain = searched_after_f6(|_| (), 1);
    assert!(plain.child_biases(0).iter().all(|&(_, b)| b == 0.0));
}

/// The tree index of a root move that has children of its own.
fn expanded_root_move(worker: &UctWorker) -> usize {
    let children = worker.child_priors(0);
    let &(index, ..) = children
        .iter()
        .find(|&&(_, _, _, expanded)| expanded)
        .expect("an expanded root move");
    index
}

#[test]
fn with_pattern_priors_moves_below_the_root_start_from_their_weights() {
    let worker = searched_after_f6(|w| w.pattern_prior = 0.4, 2000);
    // The root's moves keep the priors they were given.
    let root = worker.child_priors(0);
    assert!(root.iter().all(|&(_, _, p, _)| (p - 0.5).abs() < 1e-3));
    // A move below the root: its children start between 0.3 and 0.7 (0.9 for the answer to a
    // bridge intrusion), the best-weighted at 0.7, and not all alike.
    let below = expanded_root_move(&worker);
    let priors: Vec<f32> = worker
        .child_priors(below)
        .iter()
        .map(|&(_, _, p, _)| p)
        .collect();
    assert!(priors
        .iter()
        .all(|&p| (0.3 - 1e-3..=0.7 + 1e-3).contains(&p) || p > 0.89));
    assert!(priors.iter().any(|&p| (p - 0.7).abs() < 1e-3), "{priors:?}");
    assert!(priors.iter().any(|&p| p < 0.5), "{priors:?}");
    // Without the option they are all flat.
    let plain = searched_after_f6(|_| (), 2000);
    let below = expanded_root_move(&plain);
    assert!(plain
        .child_priors(below)
        .iter()
        .all(|&(_, _, p, _)| (p - 0.5).abs() < 1e-3 || p > 0.89));
}

#[test]
fn pattern_prior_is_an_option_with_a_range() {
    let settings = Settings::from_options(&serde_json::json!({"pattern_prior": 40})).unwrap();
    assert_eq!(settings.pattern_prior, 40);
    let error = Settings::from_options(&serde_json::json!({"pattern_prior": 101})).unwrap_err();
    assert!(error.to_string().contains("pattern_prior"), "{error}");
}

#[test]
fn pattern_bias_is_an_option_with_a_range() {
    let settings = Settings::from_options(&serde_json::json!({"pattern_bias": 250})).unwrap();
    assert_eq!(settings.pattern_bias, 250);
    assert_eq!(
        Settings::from_options(&serde_json::json!({}))
            .unwrap()
            .pattern_bias,
        0
    );
    let error = Settings::from_options(&serde_json::json!({"pattern_bias": 10001})).unwrap_err();
    assert!(error.to_string().contains("pattern_bias"), "{error}");
}

#[test]
fn shape_keys_kept_stone_by_stone_match_keys_read_afresh() {
    use patterns::ShapeKeys;
    let mut rng = SmallRng::seed_from_u64(5);
    for _ in 0..20 {
        let empty = rng.gen_range(60..121);
        let mut board = random_filling(&mut rng, empty);
        let mut keys = ShapeKeys::new(&board);
        for _ in 0..30 {
            let empties: Vec<usize> = (0..CELLS).filter(|&c| board[c] == EMPTY).collect();
            let Some(&c) = empties.get(rng.gen_range(0..empties.len().max(1))) else {
                break;
            };
            let colour = rng.gen_range(0..2);
            board[c] = stone(colour);
            keys.place(c, colour);
            let fresh = ShapeKeys::new(&board);
            for mover in 0..2 {
                for y in (0..CELLS).filter(|&y| board[y] == EMPTY) {
                    assert_eq!(keys.key(mover, y), fresh.key(mover, y), "{board:?} {y}");
                }
            }
            // The cells that read c are the cells c reads.
            let readers: Vec<usize> = shape_readers(c).collect();
            let shape = shape_of(&board, c, 0, NO);
            let mut near: Vec<usize> = (0..CELLS)
                .filter(|&y| y != c && shape_of(&board, y, 0, c as u8).last > 0)
                .collect();
            near.sort_unstable();
            let mut sorted = readers.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, near, "{c} {shape:?}");
        }
    }
}

#[test]
fn pattern_playouts_fill_the_board_and_find_the_winner() {
    let mut rng = SmallRng::seed_from_u64(9);
    let mut worker = UctWorker::new(1, 0, 1 << 16);
    worker.playout_gamma_cap = 1.0;
    for _ in 0..200 {
        let empty = rng.gen_range(1..121);
        let mut board = random_filling(&mut rng, empty);
        let mover = usize::from(board.iter().filter(|&&c| c != EMPTY).count() % 2 == 1);
        let mut keys = patterns::ShapeKeys::new(&board);
        let winner = worker.pattern_playout(&mut board, &mut keys, mover, NO);
        assert!(!board.contains(&EMPTY));
        assert!(connected(&board, winner) && !connected(&board, 1 - winner));
    }
}

#[test]
fn a_weighted_draw_follows_the_weights() {
    let mut worker = UctWorker::new(4, 0, 1 << 10);
    let mut gamma = [0.0f32; CELLS];
    let mut rows = [0.0f32; N];
    assert_eq!(worker.draw(&gamma, &rows), None);
    for (c, g) in [(3, 1.0), (60, 2.0), (120, 1.0)] {
        gamma[c] = g;
        rows[c / N] += g;
    }
    let mut counts = [0u32; CELLS];
    for _ in 0..20_000 {
        counts[worker.draw(&gamma, &rows).unwrap() as usize] += 1;
    }
    assert_eq!(
        counts.iter().sum::<u32>(),
        counts[3] + counts[60] + counts[120]
    );
    // Expected 5 000, 10 000 and 5 000: 400 off is over 5.6 standard deviations (seeded, too).
    for (c, expected) in [(3, 5_000), (60, 10_000), (120, 5_000)] {
        assert!(counts[c].abs_diff(expected) < 400, "{c}: {}", counts[c]);
    }
}

#[test]
fn h_search_joins_second_row_points_by_a_ladder_through_the_edge() {
    // Red's C2 cannot use B1 (Blue's): pushed along the second row it reaches the first edge
    // or G2, and G2 keeps F1 and G1. So C2 and G2 are joined through the edge.
    let board = board_of(&["C2"], &["B1"]);
    let vc = Connections::build(&board, 0);
    let ladder = set_of(&["C1", "D1", "E1", "F1", "G1", "D2", "E2", "F2"]);
    assert!(
        vc.fulls(cell("C2") as usize, cell("G2") as usize)
            .contains(&ladder),
        "{:?}",
        vc.fulls(cell("C2") as usize, cell("G2") as usize)
    );
    // The same shape along Blue's last edge (column K), turned: Blue's J9 with K10 taken.
    let board = board_of(&["K10"], &["J9"]);
    let vc = Connections::build(&board, 1);
    let ladder = set_of(&["K9", "K8", "K7", "K6", "K5", "J8", "J7", "J6"]);
    assert!(vc
        .fulls(cell("J9") as usize, cell("J5") as usize)
        .contains(&ladder));
    // A Blue stone inside the ladder breaks it.
    let board = board_of(&["C2"], &["B1", "E1"]);
    let vc = Connections::build(&board, 0);
    assert!(vc
        .fulls(cell("C2") as usize, cell("G2") as usize)
        .iter()
        .all(|&c| c & (1 << cell("E1")) == 0));
}

/// Cells next to `set`'s cells.
fn neighbours_of(set: CellSet) -> CellSet {
    cells_of(set)
        .flat_map(|c| RING[c as usize])
        .filter(|&n| n != NO)
        .fold(0, |s, n| s | 1 << n)
}

/// One end of a connection: a point's cells (an empty cell or a group), or an edge.
#[derive(Clone, Copy)]
enum End {
    Cells(CellSet),
    Edge(usize),
}

/// Whether `own` stones join the two ends, each of the colour's edges (`edges`: their rows)
/// counting as one more stone next to its row.
fn joined_through_edges(own: CellSet, ends: (End, End), edges: [CellSet; 2]) -> bool {
    let mut touched = [false; 2];
    let mut reached = match ends.0 {
        End::Cells(cells) => cells,
        End::Edge(i) => {
            touched[i] = true;
            edges[i] & own
        }
    };
    loop {
        let mut next = reached | (neighbours_of(reached) & own);
        for (i, &row) in edges.iter().enumerate() {
            if touched[i] || next & row != 0 {
                touched[i] = true;
                next |= row & own;
            }
        }
        let done = match ends.1 {
            End::Cells(cells) => next & cells != 0,
            End::Edge(i) => touched[i],
        };
        if done {
            return true;
        }
        if next == reached {
            return false;
        }
        reached = next;
    }
}

/// Whether the colour owning `own` joins the two ends with the other side moving first and
/// playing only on `empty` cells (every other cell stays as it is).
fn holds_against_any_defence(
    own: CellSet,
    empty: CellSet,
    ends: (End, End),
    edges: [CellSet; 2],
    memo: &mut HashMap<(CellSet, CellSet), bool>,
) -> bool {
    if joined_through_edges(own, ends, edges) {
        return true;
    }
    if !joined_through_edges(own | empty, ends, edges) {
        return false;
    }
    if let Some(&known) = memo.get(&(own, empty)) {
        return known;
    }
    let holds = cells_of(empty).all(|d| {
        let left = empty & !(1 << d);
        cells_of(left)
            .any(|r| holds_against_any_defence(own | 1 << r, left & !(1 << r), ends, edges, memo))
    });
    memo.insert((own, empty), holds);
    holds
}

#[test]
fn h_search_connections_near_an_edge_hold_against_any_defence() {
    // Random positions whose empty cells lie on the three rows next to Red's first edge (or
    // Blue's, turned): every full connection H-search finds between two points there, the
    // ladders through the edge and those using captured cells included, is checked by
    // exhaustive play inside its carrier, the other side moving first; every semi connection
    // likewise once its key is played.
    let mut rng = SmallRng::seed_from_u64(23);
    let (mut checked, mut through_edge_or_captured, mut semis_checked) = (0, 0, 0);
    for round in 0..40 {
        let colour = round % 2;
        let mut board = [EMPTY; CELLS];
        let left = rng.gen_range(0..N - 5);
        for c in 0..CELLS {
            let (col, row) = if colour == 0 {
                (c % N, c / N)
            } else {
                (c / N, c % N)
            };
            let near = row < 3 && (left..left + 6).contains(&col);
            board[c] = if near && rng.gen_range(0..10) < 7 {
                EMPTY
            } else {
                stone(rng.gen_range(0..2))
            };
        }
        // H-search works on the board after fill-in (whose soundness the inferior-cell tests
        // check): its connections are checked on that board.
        let board = fill_in(&board, colour).board;
        let edges = [
            (0..CELLS)
                .filter(|&c| on_source(colour, c))
                .fold(0, |s, c| s | 1 << c),
            (0..CELLS)
                .filter(|&c| on_sink(colour, c))
                .fold(0, |s, c| s | 1 << c),
        ];
        let own: CellSet = (0..CELLS)
            .filter(|&c| board[c] == stone(colour))
            .fold(0, |s, c| s | 1 << c);
        let vc = Connections::build(&board, colour);
        // A point's end: an empty cell, a group, or an edge.
        let end_of = |p: usize| -> End {
            if p >= CELLS {
                return End::Edge(p - CELLS);
            }
            if board[p] == EMPTY {
                return End::Cells(1 << p);
            }
            let mut seen = [false; CELLS];
            let mut group = 0;
            flood_group(&board, colour, p, &mut seen, |m| group |= 1 << m);
            End::Cells(group)
        };
        // Empty end cells are the colour's, as the connection assumes.
        let owned = |end: End| match end {
            End::Cells(cells) => cells,
            End::Edge(_) => 0,
        };
        for x in 0..CELLS + 2 {
            for y in x + 1..CELLS + 2 {
                for &carrier in vc.fulls(x, y) {
                    if carrier.count_ones() > 11 || carrier == 0 {
                        continue;
                    }
                    let ends = (end_of(x), end_of(y));
                    let holds = holds_against_any_defence(
                        own | owned(ends.0) | owned(ends.1),
                        carrier,
                        ends,
                        edges,
                        &mut HashMap::new(),
                    );
                    assert!(holds, "{board:?} colour {colour} {x}-{y} {carrier:b}");
                    checked += 1;
                    // Neither end touches the edge, yet the carrier reaches it: a connection
                    // through the edge (a ladder) or one that counted on captured cells.
                    if x < CELLS && y < CELLS && carrier & (edges[0] | edges[1]) != 0 {
                        through_edge_or_captured += 1;
                    }
                }
                // A semi connection: once the colour has played its key, it holds against
                // any defence inside the rest of its carrier. Through an empty middle cell
                // the AND rule may count on the cells that middle cell captures.
                for (carrier, key) in vc.semis(x, y) {
                    if carrier.count_ones() > 11 {
                        continue;
                    }
                    let ends = (end_of(x), end_of(y));
                    let key = 1 << key;
                    let holds = holds_against_any_defence(
                        own | owned(ends.0) | owned(ends.1) | key,
                        carrier & !key,
                        ends,
                        edges,
                        &mut HashMap::new(),
                    );
                    assert!(
                        holds,
                        "{board:?} colour {colour} {x}-{y} {carrier:b} key {key:b}"
                    );
                    semis_checked += 1;
                }
            }
        }
    }
    assert!(
        checked > 200 && through_edge_or_captured > 20 && semis_checked > 200,
        "{checked} {through_edge_or_captured} {semis_checked}"
    );
}

/// Each level is at least as strong as the one below by construction (no more noise, no
/// fewer playouts or less time; 0 playouts is no cap), and the top is the engine's defaults.
#[test]
fn each_level_searches_at_least_as_much_as_the_one_below() {
    let cap = |playouts: u64| if playouts == 0 { u64::MAX } else { playouts };
    for pair in super::LEVELS.windows(2) {
        let (below, above) = (pair[0], pair[1]);
        assert!(above.noise <= below.noise, "{above:?} after {below:?}");
        assert!(
            cap(above.playouts) >= cap(below.playouts),
            "{above:?} after {below:?}"
        );
        assert!(above.time_ms >= below.time_ms, "{above:?} after {below:?}");
        assert!(above != below, "two equal levels: {above:?}");
    }
    // The top level is what `arena engines` lists as the options' defaults.
    let top = super::LEVELS[super::LEVELS.len() - 1];
    let listed = |name: &str| {
        INFO.options
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.default.parse::<u64>().expect("a whole number"))
            .expect("listed")
    };
    assert_eq!(
        (
            u64::from(top.noise),
            top.playouts,
            top.time_ms,
            u64::from(top.vc),
            top.ab_below as u64
        ),
        (
            listed("noise"),
            listed("playouts"),
            listed("time_ms"),
            listed("vc"),
            listed("ab_below")
        )
    );
    assert_eq!(listed("level"), super::LEVELS.len() as u64);
    // The level option's text repeats the noisy levels' shares, in order.
    let shares: Vec<String> = super::LEVELS
        .iter()
        .filter(|l| l.playouts == 1500)
        .map(|l| l.noise.to_string())
        .collect();
    let (last, rest) = shares.split_last().expect("noisy levels");
    let text = format!("noise {} and {last}", rest.join(", "));
    let about = INFO
        .options
        .iter()
        .find(|o| o.name == "level")
        .expect("listed");
    assert!(about.about.contains(&text), "{text}: {}", about.about);
}

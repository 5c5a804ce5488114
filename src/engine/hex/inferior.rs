//! The Hex engine's inferior-cell analysis (after Henderson's "Playing and solving Hex" and
//! Benzene's ICE): dead cells (no completion of the board's colour depends on them), captured
//! pairs (two cells a colour can always keep, answering an intrusion into one with the other,
//! which leaves the intruding stone dead), vulnerable cells (the opponent has a reply that
//! kills the stone), and the fill-in that plays captured and dead cells before H-search.
//!
//! Dead, by the neighbours alone: for each colour, every two of a cell's neighbours that colour
//! could use (its stones, its edge, empty cells) and that are not next to each other are
//! already linked without the cell, through a group of the colour or its edge they both belong
//! or touch. Then in every completion of the board a path of that colour through the cell can
//! be rerouted around it, so the cell's colour decides nothing: it may be filled with either
//! colour. Since stones are never removed the links stay, and a dead cell stays dead.
//!
//! Each rule is sound on its own; the fill-in applies them one round at a time, relabelling the
//! groups between rounds (within a round the labels only miss links, which finds fewer cells,
//! never wrong ones).

use super::*;

/// An anchor: a group (by its captain cell's bit), an edge of one colour (bits after the
/// cells), or the hypothetical stone of [`dead_with`] (its empty cell's bit).
type Anchors = u128;

const fn edge_anchor(colour: usize, which: usize) -> Anchors {
    1 << (CELLS + 2 * colour + which)
}

/// The anchors of a cell's position: the edges of `colour` it touches.
fn edges_touched(colour: usize, cell: usize) -> Anchors {
    let mut a = 0;
    if on_source(colour, cell) {
        a |= edge_anchor(colour, 0);
    }
    if on_sink(colour, cell) {
        a |= edge_anchor(colour, 1);
    }
    a
}

/// Every stone's group, as anchors: the group's captain bit and the edges it touches.
pub(super) struct Groups {
    anchors: [Anchors; CELLS],
}

impl Groups {
    pub(super) fn new(cells: &Cells) -> Groups {
        let mut anchors = [0; CELLS];
        let mut seen = [false; CELLS];
        let mut members = [0u8; CELLS];
        for start in 0..CELLS {
            if cells[start] == EMPTY || seen[start] {
                continue;
            }
            let colour = (cells[start] - 1) as usize;
            let mut size = 0;
            let touches = flood_group(cells, colour, start, &mut seen, |c| {
                members[size] = c as u8;
                size += 1;
            });
            let mut a: Anchors = 1 << start;
            for (which, &t) in touches.iter().enumerate() {
                if t {
                    a |= edge_anchor(colour, which);
                }
            }
            for &m in &members[..size] {
                anchors[m as usize] = a;
            }
        }
        Groups { anchors }
    }
}

/// A stone of `colour` imagined on the empty cell `at`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Extra {
    pub at: u8,
    pub colour: usize,
}

/// The anchors of the imagined stone: its own bit, its neighbouring groups, its edges.
fn extra_anchors(cells: &Cells, groups: &Groups, extra: Extra) -> Anchors {
    let own = stone(extra.colour);
    let at = extra.at as usize;
    let mut a: Anchors = (1 << at) | edges_touched(extra.colour, at);
    for &nb in &RING[at] {
        if nb != NO && cells[nb as usize] == own {
            a |= groups.anchors[nb as usize];
        }
    }
    a
}

/// Whether the empty `cell` is dead on `cells` (with `extra`, if any, imagined on its cell).
pub(super) fn dead_with(cells: &Cells, groups: &Groups, cell: usize, extra: Option<Extra>) -> bool {
    if cells[cell] != EMPTY {
        return false;
    }
    let extra_a = extra.map(|e| (e, extra_anchors(cells, groups, e)));
    (0..2).all(|colour| {
        let own = stone(colour);
        // A stone of the colour: its group's anchors, joined with the imagined stone's when
        // that stone is of the colour and touches the group.
        let stone_anchors = |a: Anchors| match extra_a {
            Some((e, ea)) if e.colour == colour && a & ea != 0 => a | ea,
            _ => a,
        };
        // Per ring position: `None` when the colour cannot use it, else its anchors.
        let mut items: [Option<Anchors>; 6] = [None; 6];
        for (k, &nb) in RING[cell].iter().enumerate() {
            items[k] = if nb == NO {
                let (edge_colour, which) = off_board_edge(cell, k);
                (edge_colour == colour).then(|| edge_anchor(colour, which))
            } else if let Some((e, ea)) = extra_a.filter(|(e, _)| e.at == nb) {
                (e.colour == colour).then_some(ea)
            } else if cells[nb as usize] == own {
                Some(stone_anchors(groups.anchors[nb as usize]))
            } else if cells[nb as usize] != EMPTY {
                None
            } else {
                // An empty neighbour: linked to whatever of the colour it touches.
                let nbu = nb as usize;
                let mut a = edges_touched(colour, nbu);
                for &m in &RING[nbu] {
                    if m == NO || m as usize == cell {
                        continue;
                    }
                    match extra_a {
                        Some((e, ea)) if e.at == m && e.colour == colour => {
                            a |= ea;
                        }
                        Some((e, _)) if e.at == m => {}
                        _ if cells[m as usize] == own => {
                            a |= stone_anchors(groups.anchors[m as usize]);
                        }
                        _ => {}
                    }
                }
                Some(a)
            };
        }
        (0..6).all(|i| {
            (i + 2..i + 5).all(|j| {
                let j = j % 6;
                match (items[i], items[j]) {
                    (Some(a), Some(b)) => a & b != 0,
                    _ => true,
                }
            })
        })
    })
}

/// Whether the empty `cell` is dead on `cells` (labelling the groups first: to test many
/// cells of one board, label once with [`Groups::new`] and call [`dead`]).
#[cfg(test)]
pub(super) fn is_dead(cells: &Cells, cell: usize) -> bool {
    dead(cells, &Groups::new(cells), cell)
}

/// Whether the empty `cell` is dead on `cells`.
pub(super) fn dead(cells: &Cells, groups: &Groups, cell: usize) -> bool {
    dead_with(cells, groups, cell, None)
}

/// The killer of `cell` for `mover`: the cell itself when it is dead, else an empty neighbour
/// where the other colour's stone would
/// leave `cell` dead (so a stone of `mover` there is worth no more than a pass: the opponent
/// answers on the killer). `None` when there is none.
pub(super) fn killer(cells: &Cells, groups: &Groups, cell: usize, mover: usize) -> Option<u8> {
    if cells[cell] != EMPTY {
        return None;
    }
    if dead(cells, groups, cell) {
        return Some(cell as u8);
    }
    RING[cell].iter().copied().find(|&k| {
        k != NO
            && cells[k as usize] == EMPTY
            && dead_with(
                cells,
                groups,
                cell,
                Some(Extra {
                    at: k,
                    colour: 1 - mover,
                }),
            )
    })
}

/// Whether `colour` captures the adjacent empty cells `a` and `b`: an intrusion into either is
/// answered by the other, and the intruding stone is then dead.
pub(super) fn captures_pair(cells: &Cells, groups: &Groups, colour: usize, a: u8, b: u8) -> bool {
    let (a, b) = (a as usize, b as usize);
    cells[a] == EMPTY
        && cells[b] == EMPTY
        && dead_with(
            cells,
            groups,
            a,
            Some(Extra {
                at: b as u8,
                colour,
            }),
        )
        && dead_with(
            cells,
            groups,
            b,
            Some(Extra {
                at: a as u8,
                colour,
            }),
        )
}

/// A position after fill-in: the board with every captured pair given to its owner and every
/// dead cell to the colour asked for, and which cells those were.
#[derive(Debug, Clone)]
pub(super) struct FillIn {
    pub board: Cells,
    pub dead: CellSet,
    /// Per colour: the cells of the pairs it captures.
    pub captured: [CellSet; 2],
}

/// Rounds of fill-in at most (each finds something or ends it).
const MAX_ROUNDS: usize = 12;

/// Fills `cells`' captured pairs with their owners and its dead cells with `dead_colour`,
/// round after round until nothing changes. The filled board has the same winner as
/// `cells` with either side to move.
pub(super) fn fill_in(cells: &Cells, dead_colour: usize) -> FillIn {
    let mut fill = FillIn {
        board: *cells,
        dead: 0,
        captured: [0; 2],
    };
    for _ in 0..MAX_ROUNDS {
        let groups = Groups::new(&fill.board);
        let mut changed = false;
        for &(a, b) in PAIRS.iter() {
            for colour in 0..2 {
                if captures_pair(&fill.board, &groups, colour, a, b) {
                    fill.board[a as usize] = stone(colour);
                    fill.board[b as usize] = stone(colour);
                    fill.captured[colour] |= 1 << a | 1 << b;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            let groups = Groups::new(&fill.board);
            for c in 0..CELLS {
                if dead(&fill.board, &groups, c) {
                    fill.board[c] = stone(dead_colour);
                    fill.dead |= 1 << c;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    fill
}

/// The empty cells of `cells` not worth a move for `mover`: dead, captured (by either side)
/// or vulnerable after fill-in. Each is worth no more than a pass, and a pass no more than
/// any move, so the search may leave them all out as long as one move is left.
pub(super) fn inferior_cells(cells: &Cells, mover: usize) -> CellSet {
    let fill = fill_in(cells, mover);
    let groups = Groups::new(&fill.board);
    let vulnerable = (0..CELLS)
        .filter(|&c| killer(&fill.board, &groups, c, mover).is_some())
        .fold(0 as CellSet, |set, c| set | 1 << c);
    fill.dead | fill.captured[0] | fill.captured[1] | vulnerable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> usize {
        match Hex::parse_move(text) {
            Ok(Move::Place(p)) => p.index(N as u8),
            other => panic!("{text}: {other:?}"),
        }
    }

    fn board(red: &[&str], blue: &[&str]) -> Cells {
        let mut cells = [EMPTY; CELLS];
        red.iter().for_each(|t| cells[at(t)] = stone(0));
        blue.iter().for_each(|t| cells[at(t)] = stone(1));
        cells
    }

    fn extra(text: &str, colour: usize) -> Option<Extra> {
        Some(Extra {
            at: at(text) as u8,
            colour,
        })
    }

    /// Red's F5 and G7 bridge over F6 and G6; blue walls F7–E6–E5 and G5–H6–H7 close the
    /// bridge's two sides.
    const BRIDGE_RED: [&str; 2] = ["F5", "G7"];
    const WALLS_BLUE: [&str; 6] = ["F7", "E6", "E5", "G5", "H6", "H7"];

    #[test]
    fn a_cell_beside_four_joined_stones_is_dead_with_two_empty_neighbours() {
        // F6's ring is G6 G7 F7 E6 E5 F5. Red on the first four (one group): a red F6 joins
        // nothing new (E5 touches E6, F5 touches G6), a blue one joins E5 to F5, which touch.
        let cells = board(&["G6", "G7", "F7", "E6"], &[]);
        assert!(is_dead(&cells, at("F6")));
        // Red on G6 and E6 only: a red F6 joins two groups, so it is not dead.
        let cells = board(&["G6", "E6"], &[]);
        assert!(!is_dead(&cells, at("F6")));
    }

    #[test]
    fn an_edge_counts_as_a_group_of_its_colour() {
        // F1 (Red's first row) under red F2 and G2: a red F1 joins that group to the edge.
        let cells = board(&["F2", "G2"], &[]);
        assert!(!is_dead(&cells, at("F1")));
        // With red E1 and G1 too, the group touches the edge already: every neighbour of F1 is
        // red or Red's edge, all joined, so F1 is dead.
        let cells = board(&["F2", "G2", "E1", "G1"], &[]);
        assert!(is_dead(&cells, at("F1")));
    }

    #[test]
    fn a_bridge_closed_on_both_sides_is_captured_and_not_dead() {
        let cells = board(&BRIDGE_RED, &WALLS_BLUE);
        let groups = Groups::new(&cells);
        // Neither cell is dead: a blue stone there keeps the bridge's red ends apart for now.
        assert!(!dead(&cells, &groups, at("F6")));
        assert!(!dead(&cells, &groups, at("G6")));
        // Either one red makes the other dead: Red captures the pair, Blue does not.
        assert!(dead_with(&cells, &groups, at("F6"), extra("G6", 0)));
        assert!(dead_with(&cells, &groups, at("G6"), extra("F6", 0)));
        assert!(captures_f6_g6(&cells, &groups, 0));
        assert!(!captures_f6_g6(&cells, &groups, 1));
        // The fill-in gives both to Red and leaves Red's bridge ends joined.
        let fill = fill_in(&cells, 1);
        assert_eq!(fill.captured[0], 1 << at("F6") | 1 << at("G6"));
        assert_eq!(fill.board[at("F6")], stone(0));
        assert_eq!(fill.captured[1], 0);
    }

    /// Whether `colour` captures the pair F6, G6 of the bridge tests.
    fn captures_f6_g6(cells: &Cells, groups: &Groups, colour: usize) -> bool {
        captures_pair(cells, groups, colour, at("F6") as u8, at("G6") as u8)
    }

    #[test]
    fn a_bridge_open_on_one_side_is_not_captured() {
        // Without E6 the blue F7 and E5 are apart, and a blue F6 could join them.
        let blue: Vec<&str> = WALLS_BLUE.iter().copied().filter(|&c| c != "E6").collect();
        let cells = board(&BRIDGE_RED, &blue);
        let groups = Groups::new(&cells);
        assert!(!dead_with(&cells, &groups, at("F6"), extra("G6", 0)));
        assert!(!captures_f6_g6(&cells, &groups, 0));
        let fill = fill_in(&cells, 1);
        assert_eq!(fill.board[at("F6")], EMPTY);
        assert_eq!(fill.board[at("G6")], EMPTY);
    }

    #[test]
    fn a_cell_red_can_kill_is_vulnerable_for_blue_only() {
        let cells = board(&BRIDGE_RED, &WALLS_BLUE);
        let groups = Groups::new(&cells);
        // A blue F6 is answered by a red G6, which leaves it dead.
        assert_eq!(killer(&cells, &groups, at("F6"), 1), Some(at("G6") as u8));
        // Red's F6 has no killer: a blue G6 leaves F5 and G7 joined through F6.
        assert_eq!(killer(&cells, &groups, at("F6"), 0), None);
        // An open cell has no killer.
        assert_eq!(killer(&cells, &groups, at("B9"), 1), None);
        // Inferior for Blue: both captured cells; for Red too (its own captured pair is a
        // pass), but not the open board.
        let inferior = inferior_cells(&cells, 1);
        assert!(holds(inferior, at("F6")) && holds(inferior, at("G6")));
        assert!(!holds(inferior, at("B9")));
    }
}

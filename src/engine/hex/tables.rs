//! The Hex engine's board tables and shape knowledge: the flat board, neighbour rings,
//! adjacent pairs, bridges, bridge and edge-template saves, the ziggurat (template IIIa) and
//! the connection checks the search uses.

/// Board width.
pub(super) const N: usize = 11;
/// Number of cells.
pub(super) const CELLS: usize = N * N;
/// An empty cell; a stone of colour `c` is `c + 1`.
pub(super) const EMPTY: u8 = 0;
/// No cell (off the board, or none found).
pub(super) const NO: u8 = u8::MAX;
/// In a bridge-save triple: the colour's own edge stands in for a stone.
pub(super) const EDGE: u8 = u8::MAX - 1;

/// The flat board the search works on.
pub(super) type Cells = [u8; CELLS];

/// The stone value of colour `c` (0 = Red, 1 = Blue).
pub(super) const fn stone(colour: usize) -> u8 {
    colour as u8 + 1
}

/// The six neighbour offsets (column, row) in ring order: consecutive entries are adjacent.
pub(super) const RING_OFFSETS: [(i32, i32); 6] =
    [(1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1)];

pub(super) const fn cell_at(col: i32, row: i32) -> u8 {
    if col >= 0 && col < N as i32 && row >= 0 && row < N as i32 {
        (row as usize * N + col as usize) as u8
    } else {
        NO
    }
}

/// Neighbours of every cell in ring order, `NO` off the board.
pub(super) const fn ring_table() -> [[u8; 6]; CELLS] {
    let mut out = [[NO; 6]; CELLS];
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut k = 0;
        while k < 6 {
            out[c][k] = cell_at(col + RING_OFFSETS[k].0, row + RING_OFFSETS[k].1);
            k += 1;
        }
        c += 1;
    }
    out
}

pub(super) static RING: [[u8; 6]; CELLS] = ring_table();

/// Number of adjacent cell pairs: 110 horizontal, 110 vertical, 100 diagonal.
pub(super) const PAIR_COUNT: usize = 2 * N * (N - 1) + (N - 1) * (N - 1);

/// Every adjacent pair once.
pub(super) const fn pair_table() -> [(u8, u8); PAIR_COUNT] {
    let mut out = [(0u8, 0u8); PAIR_COUNT];
    let mut k = 0;
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut d = 0;
        while d < 3 {
            let (dc, dr) = RING_OFFSETS[d];
            let other = cell_at(col + dc, row + dr);
            if other != NO {
                out[k] = (c as u8, other);
                k += 1;
            }
            d += 1;
        }
        c += 1;
    }
    out
}

pub(super) static PAIRS: [(u8, u8); PAIR_COUNT] = pair_table();

/// Every bridge once, as `[a, b, carrier, carrier]` with a < b; unused entries are all `NO`.
pub(super) const fn bridge_table() -> [[u8; 4]; 3 * CELLS] {
    let mut out = [[NO; 4]; 3 * CELLS];
    let mut k = 0;
    let mut c = 0;
    while c < CELLS {
        let (col, row) = ((c % N) as i32, (c / N) as i32);
        let mut i = 0;
        while i < 6 {
            let (o1, o2) = (RING_OFFSETS[i], RING_OFFSETS[(i + 1) % 6]);
            let b = cell_at(col + o1.0 + o2.0, row + o1.1 + o2.1);
            let x = cell_at(col + o1.0, row + o1.1);
            let y = cell_at(col + o2.0, row + o2.1);
            if b != NO && x != NO && y != NO && b as usize > c && k < 3 * CELLS {
                out[k] = [c as u8, b, x, y];
                k += 1;
            }
            i += 1;
        }
        c += 1;
    }
    out
}

pub(super) static BRIDGES: [[u8; 4]; 3 * CELLS] = bridge_table();

/// Whether off-board (col, row) is part of `colour`'s own edge (Red: below row 1 or above row
/// 11; Blue: left of column A or right of column K).
pub(super) const fn is_own_edge(colour: usize, col: i32, row: i32) -> bool {
    let n = N as i32;
    if colour == 0 {
        (row < 0 || row >= n) && col >= 0 && col < n
    } else {
        (col < 0 || col >= n) && row >= 0 && row < n
    }
}

/// A bridge end at (col, row): the cell, `EDGE` for `colour`'s own edge, else `NO`.
pub(super) const fn bridge_end(colour: usize, col: i32, row: i32) -> u8 {
    let c = cell_at(col, row);
    if c != NO {
        c
    } else if is_own_edge(colour, col, row) {
        EDGE
    } else {
        NO
    }
}

/// For each colour and each cell x an opponent may take: up to six `[a, y, b]` where stones
/// (or the own edge, `EDGE`) on a and b make a bridge (or edge template II) whose carrier is
/// {x, y}. When the opponent takes x and y is empty, y restores the connection.
pub(super) const fn save_table() -> [[[[u8; 3]; 6]; CELLS]; 2] {
    let mut out = [[[[NO; 3]; 6]; CELLS]; 2];
    let mut colour = 0;
    while colour < 2 {
        let mut x = 0;
        while x < CELLS {
            let (col, row) = ((x % N) as i32, (x / N) as i32);
            let mut i = 0;
            while i < 6 {
                let oa = RING_OFFSETS[i];
                let oy = RING_OFFSETS[(i + 1) % 6];
                let ob = RING_OFFSETS[(i + 2) % 6];
                let y = cell_at(col + oy.0, row + oy.1);
                let a = bridge_end(colour, col + oa.0, row + oa.1);
                let b = bridge_end(colour, col + ob.0, row + ob.1);
                if y != NO && a != NO && b != NO && !(a == EDGE && b == EDGE) {
                    out[colour][x][i] = [a, y, b];
                }
                i += 1;
            }
            x += 1;
        }
        colour += 1;
    }
    out
}

pub(super) static SAVES: [[[[u8; 3]; 6]; CELLS]; 2] = save_table();

/// The reply that restores a bridge (or edge template II) of `colour` after the opponent took
/// cell `taken`, if there is one.
pub(super) fn bridge_reply(cells: &Cells, colour: usize, taken: u8) -> Option<u8> {
    if taken as usize >= CELLS {
        return None;
    }
    let own = stone(colour);
    let holds = |c: u8| c == EDGE || (c != NO && cells[c as usize] == own);
    SAVES[colour][taken as usize]
        .iter()
        .find(|&&[a, y, b]| y != NO && holds(a) && holds(b) && cells[y as usize] == EMPTY)
        .map(|t| t[1])
}

/// The two mirror images of edge template IIIa (the ziggurat) for a stone on the third row,
/// as (column, row) offsets from the stone with the edge below: one cell beside the stone, three
/// on the second row, then the four on the first row (last, so `carrier[4..]` touch the edge).
pub(super) const ZIGGURATS: [[(i32, i32); 8]; 2] = [
    [
        (1, 0),
        (-1, -1),
        (0, -1),
        (1, -1),
        (-2, -2),
        (-1, -2),
        (0, -2),
        (1, -2),
    ],
    [
        (-1, 0),
        (-2, -1),
        (-1, -1),
        (0, -1),
        (-3, -2),
        (-2, -2),
        (-1, -2),
        (0, -2),
    ],
];

/// The board cell at local (x, y) of `colour`'s edge number `edge` (0: its first edge, 1: its
/// second), where y counts rows away from that edge (0 touches it). Red's first edge is row 1,
/// Blue's is column A; the other three views are the symmetries of the board that keep
/// adjacency (half-turn, transposition).
pub(super) fn edge_view(colour: usize, edge: usize, x: i32, y: i32) -> u8 {
    let last = N as i32 - 1;
    match (colour, edge) {
        (0, 0) => cell_at(x, y),
        (0, _) => cell_at(last - x, last - y),
        (_, 0) => cell_at(y, x),
        _ => cell_at(last - y, last - x),
    }
}

/// Whether the group of `stone` reaches a cell of `carrier[4..]` through own stones inside
/// `carrier`.
pub(super) fn reaches_edge_row(cells: &Cells, stone_cell: u8, carrier: &[u8; 8]) -> bool {
    let own = cells[stone_cell as usize];
    let mut seen = [false; 8];
    let mut stack = [stone_cell; 9];
    let mut top = 1;
    while top > 0 {
        top -= 1;
        let c = stack[top];
        for (k, &d) in carrier.iter().enumerate() {
            if !seen[k] && cells[d as usize] == own && RING[c as usize].contains(&d) {
                if k >= 4 {
                    return true;
                }
                seen[k] = true;
                stack[top] = d;
                top += 1;
            }
        }
    }
    false
}

/// Whether the stone on `stone_cell` stays joined to the edge inside `carrier` when the
/// opponent moves first there and its owner answers every move (a tiny exhaustive search).
pub(super) fn holds_to_edge(cells: &mut Cells, stone_cell: u8, carrier: &[u8; 8]) -> bool {
    if reaches_edge_row(cells, stone_cell, carrier) {
        return true;
    }
    let own = cells[stone_cell as usize];
    let opponent = 3 - own;
    let mut any_empty = false;
    for &z in carrier {
        if cells[z as usize] != EMPTY {
            continue;
        }
        any_empty = true;
        cells[z as usize] = opponent;
        let answered = carrier.iter().any(|&w| {
            if cells[w as usize] != EMPTY {
                return false;
            }
            cells[w as usize] = own;
            let ok = holds_to_edge(cells, stone_cell, carrier);
            cells[w as usize] = EMPTY;
            ok
        });
        cells[z as usize] = EMPTY;
        if !answered {
            return false;
        }
    }
    any_empty
}

/// The reply that keeps a third-row stone of `colour` joined to its edge by template IIIa after
/// the opponent took `taken` inside the template's otherwise empty carrier.
pub(super) fn template_reply(cells: &Cells, colour: usize, taken: u8) -> Option<u8> {
    if taken as usize >= CELLS {
        return None;
    }
    let own = stone(colour);
    let mut board = *cells;
    for edge in 0..2 {
        for x in 0..N as i32 {
            let s = edge_view(colour, edge, x, 2);
            if s == NO || cells[s as usize] != own {
                continue;
            }
            for shape in &ZIGGURATS {
                let mut carrier = [NO; 8];
                for (k, &(dx, dy)) in shape.iter().enumerate() {
                    carrier[k] = edge_view(colour, edge, x + dx, 2 + dy);
                }
                let intact = carrier
                    .iter()
                    .all(|&c| c != NO && (c == taken || cells[c as usize] == EMPTY));
                if !intact || !carrier.contains(&taken) {
                    continue;
                }
                for &w in &carrier {
                    if w == taken {
                        continue;
                    }
                    board[w as usize] = own;
                    let holds = holds_to_edge(&mut board, s, &carrier);
                    board[w as usize] = EMPTY;
                    if holds {
                        return Some(w);
                    }
                }
            }
        }
    }
    None
}

pub(super) fn on_source(colour: usize, cell: usize) -> bool {
    if colour == 0 {
        cell / N == 0
    } else {
        cell.is_multiple_of(N)
    }
}

pub(super) fn on_sink(colour: usize, cell: usize) -> bool {
    if colour == 0 {
        cell / N == N - 1
    } else {
        cell % N == N - 1
    }
}

/// Whether `colour` joins its two edges on `cells` (a flood fill from its first edge).
pub(super) fn connected(cells: &Cells, colour: usize) -> bool {
    let own = stone(colour);
    let mut seen = [false; CELLS];
    let mut stack = [0u8; CELLS];
    let mut top = 0;
    for k in 0..N {
        let c = if colour == 0 { k } else { k * N };
        if cells[c] == own {
            seen[c] = true;
            stack[top] = c as u8;
            top += 1;
        }
    }
    flood(cells, own, &mut seen, &mut stack, top, |c| {
        on_sink(colour, c)
    })
}

/// The flood fill under [`connected`] and [`flood_group`]: from the `top` cells on `stack`
/// (already marked in `seen`), visits every cell of stone `own` joined to them, marking it,
/// until `stop` says so for one; returns whether it did.
fn flood(
    cells: &Cells,
    own: u8,
    seen: &mut [bool; CELLS],
    stack: &mut [u8; CELLS],
    mut top: usize,
    mut stop: impl FnMut(usize) -> bool,
) -> bool {
    while top > 0 {
        top -= 1;
        let c = stack[top] as usize;
        if stop(c) {
            return true;
        }
        for &nb in &RING[c] {
            if nb != NO && !seen[nb as usize] && cells[nb as usize] == own {
                seen[nb as usize] = true;
                stack[top] = nb;
                top += 1;
            }
        }
    }
    false
}

/// Empty cells that would connect `colour` at once.
pub(super) fn winning_cells(cells: &Cells, colour: usize) -> Vec<u8> {
    let mut board = *cells;
    let mut out = Vec::new();
    for c in 0..CELLS {
        if board[c] == EMPTY {
            board[c] = stone(colour);
            if connected(&board, colour) {
                out.push(c as u8);
            }
            board[c] = EMPTY;
        }
    }
    out
}

/// Which colour's edge (0 = Red's rows, 1 = Blue's columns) the off-board neighbour of `cell` in
/// ring direction `k` belongs to, and which of that colour's two edges it is (0 = first row or
/// column, 1 = last). The obtuse corners touch one edge of each colour; the ring direction tells
/// which one.
pub(super) fn off_board_edge(cell: usize, k: usize) -> (usize, usize) {
    let (col, row) = ((cell % N) as i32, (cell / N) as i32);
    let (c, r) = (col + RING_OFFSETS[k].0, row + RING_OFFSETS[k].1);
    if r < 0 {
        (0, 0)
    } else if r >= N as i32 {
        (0, 1)
    } else if c < 0 {
        (1, 0)
    } else {
        (1, 1)
    }
}

/// Floods `colour`'s group from its stone on `start`, marking its cells in `seen` and calling
/// `each` with every one; returns whether the group touches `colour`'s first and last edge.
pub(super) fn flood_group(
    cells: &Cells,
    colour: usize,
    start: usize,
    seen: &mut [bool; CELLS],
    mut each: impl FnMut(usize),
) -> [bool; 2] {
    let own = stone(colour);
    let mut stack = [0u8; CELLS];
    stack[0] = start as u8;
    seen[start] = true;
    let mut touches = [false; 2];
    flood(cells, own, seen, &mut stack, 1, |c| {
        each(c);
        touches[0] |= on_source(colour, c);
        touches[1] |= on_sink(colour, c);
        false
    });
    touches
}

/// Up to two empty cells that would connect `colour` at once, in cell order, and how many
/// were found (0, 1 or 2: the search only needs to know "none", "one, which" or "several").
/// One labelling of `colour`'s groups (with the edges each touches), then one look at each
/// empty cell's neighbours: far cheaper than [`winning_cells`], which fills every cell in turn.
pub(super) fn win_threats(cells: &Cells, colour: usize) -> (usize, [u8; 2]) {
    let own = stone(colour);
    // Per cell: whether its group touches the first edge, the last edge (own stones only).
    let mut touches = [[false; 2]; CELLS];
    let mut seen = [false; CELLS];
    let mut members = [0u8; CELLS];
    for start in 0..CELLS {
        if cells[start] != own || seen[start] {
            continue;
        }
        let mut count = 0;
        let group = flood_group(cells, colour, start, &mut seen, |c| {
            members[count] = c as u8;
            count += 1;
        });
        for &m in &members[..count] {
            touches[m as usize] = group;
        }
    }
    let mut found = [NO; 2];
    let mut count = 0;
    for c in 0..CELLS {
        if cells[c] != EMPTY {
            continue;
        }
        let mut reach = [on_source(colour, c), on_sink(colour, c)];
        for &nb in &RING[c] {
            if nb != NO && cells[nb as usize] == own {
                reach[0] |= touches[nb as usize][0];
                reach[1] |= touches[nb as usize][1];
            }
        }
        if reach[0] && reach[1] {
            found[count] = c as u8;
            count += 1;
            if count == 2 {
                break;
            }
        }
    }
    (count, found)
}

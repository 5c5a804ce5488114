//! The resistance circuit of the BistuHex2 paper: each side's board as a circuit (with
//! virtual links for bridges and edge templates) solved by conjugate gradients, and the
//! evaluation E = R_opponent / R_own.

use super::*;

/// Circuit nodes: the cells (a group of own stones is one node, named by one of its cells),
/// then the two terminals.
pub(super) const NODES: usize = CELLS + 2;
pub(super) const SOURCE: u8 = CELLS as u8;
pub(super) const SINK: u8 = CELLS as u8 + 1;
pub(super) const BLOCKED: u8 = u8::MAX;
pub(super) const MAX_EDGES: usize = PAIR_COUNT + 2 * N + 3 * CELLS + 2 * CELLS;
/// Conductance added between the two ends of an intact bridge, and between a second-row stone
/// and its edge through an intact edge template II (virtual connections, beyond the paper).
pub(super) const VIRTUAL_LINK: f64 = 3.0;
/// Resistance reported when no current flows (the opponent has cut every path).
pub const NO_PATH: f64 = 1e6;
/// Conjugate-gradient stops at this relative squared residual or this many iterations.
pub(super) const CG_TOLERANCE: f64 = 1e-16;
pub(super) const CG_MAX_ITERATIONS: usize = 400;

/// A reusable solver for one side's resistance circuit: fixed-size scratch arrays, nothing
/// allocated per evaluation.
///
/// For colour c: an empty cell has resistance 1, a c stone 0 (a whole group is one node), an
/// enemy stone is open; two adjacent cells are joined by r(c1) + r(c2); c's two edges are the
/// terminals (an edge cell joins its edge through its own resistance). Kirchhoff's current law
/// at every node, with the source at 1 V and the sink at 0 V, is the Laplacian system solved
/// here by Jacobi-preconditioned conjugate gradients; the equivalent resistance is 1 / current.
#[derive(Clone)]
pub(super) struct Circuit {
    node: [u8; CELLS],
    queue: [u8; CELLS],
    edge_a: [u8; MAX_EDGES],
    edge_b: [u8; MAX_EDGES],
    edge_g: [f64; MAX_EDGES],
    edges: usize,
    diag: [f64; NODES],
    rhs: [f64; NODES],
    x: [f64; NODES],
    r: [f64; NODES],
    z: [f64; NODES],
    p: [f64; NODES],
    ap: [f64; NODES],
    /// Conjugate-gradient iterations of the last solve (for the tests and figures).
    pub(super) last_iterations: usize,
    /// Whether intact bridges and edge templates II add `VIRTUAL_LINK` (off: the paper's
    /// plain circuit).
    pub(super) virtual_links: bool,
}

impl Circuit {
    pub(super) fn new() -> Circuit {
        Circuit {
            node: [0; CELLS],
            queue: [0; CELLS],
            edge_a: [0; MAX_EDGES],
            edge_b: [0; MAX_EDGES],
            edge_g: [0.0; MAX_EDGES],
            edges: 0,
            diag: [0.0; NODES],
            rhs: [0.0; NODES],
            x: [0.0; NODES],
            r: [0.0; NODES],
            z: [0.0; NODES],
            p: [0.0; NODES],
            ap: [0.0; NODES],
            last_iterations: 0,
            virtual_links: true,
        }
    }

    pub(super) fn push_edge(&mut self, a: u8, b: u8, g: f64) {
        if self.edges < MAX_EDGES {
            self.edge_a[self.edges] = a;
            self.edge_b[self.edges] = b;
            self.edge_g[self.edges] = g;
            self.edges += 1;
        }
    }

    /// Extra conductance for each intact bridge between two different nodes, and for each
    /// second-row stone whose two edge cells are empty (edge template II).
    pub(super) fn add_virtual_links(&mut self, cells: &Cells, colour: usize) {
        let own = stone(colour);
        for &[a, b, x, y] in BRIDGES.iter() {
            if a == NO {
                break;
            }
            if cells[a as usize] == own
                && cells[b as usize] == own
                && cells[x as usize] == EMPTY
                && cells[y as usize] == EMPTY
            {
                let (na, nb) = (self.node[a as usize], self.node[b as usize]);
                if na != nb {
                    self.push_edge(na, nb, VIRTUAL_LINK);
                }
            }
        }
        for c in 0..CELLS {
            if cells[c] != own {
                continue;
            }
            let n = self.node[c];
            for (edge_test, terminal) in [
                (on_source as fn(usize, usize) -> bool, SOURCE),
                (on_sink, SINK),
            ] {
                if n == terminal || edge_test(colour, c) {
                    continue;
                }
                let free = RING[c]
                    .iter()
                    .filter(|&&nb| {
                        nb != NO && edge_test(colour, nb as usize) && cells[nb as usize] == EMPTY
                    })
                    .count();
                if free == 2 {
                    self.push_edge(n, terminal, VIRTUAL_LINK);
                }
            }
        }
    }

    pub(super) fn voltage(&self, node: u8) -> f64 {
        match node {
            SOURCE => 1.0,
            SINK => 0.0,
            n => self.x[n as usize],
        }
    }

    /// The equivalent resistance between `colour`'s edges: 0 when it is connected, `NO_PATH`
    /// when it is cut off. With `current`, also each empty cell's share of the total current
    /// (0..=1), the paper's measure of how much a cell matters.
    pub(super) fn resistance(
        &mut self,
        cells: &Cells,
        colour: usize,
        current: Option<&mut [f64; CELLS]>,
    ) -> f64 {
        const UNSET: u8 = u8::MAX - 1;
        const QUEUED: u8 = u8::MAX - 2;
        let own = stone(colour);
        for c in 0..CELLS {
            self.node[c] = match cells[c] {
                EMPTY => c as u8,
                v if v == own => UNSET,
                _ => BLOCKED,
            };
        }
        // Each own group becomes one node, or part of a terminal when it touches an edge.
        for start in 0..CELLS {
            if self.node[start] != UNSET {
                continue;
            }
            let (mut head, mut tail) = (0, 1);
            self.queue[0] = start as u8;
            self.node[start] = QUEUED;
            let (mut source, mut sink) = (false, false);
            while head < tail {
                let c = self.queue[head] as usize;
                head += 1;
                source |= on_source(colour, c);
                sink |= on_sink(colour, c);
                for &nb in &RING[c] {
                    if nb != NO && self.node[nb as usize] == UNSET {
                        self.node[nb as usize] = QUEUED;
                        self.queue[tail] = nb;
                        tail += 1;
                    }
                }
            }
            if source && sink {
                if let Some(current) = current {
                    current.fill(0.0);
                }
                self.last_iterations = 0;
                return 0.0;
            }
            let label = if source {
                SOURCE
            } else if sink {
                SINK
            } else {
                start as u8
            };
            for k in 0..tail {
                self.node[self.queue[k] as usize] = label;
            }
        }
        self.edges = 0;
        for &(a, b) in PAIRS.iter() {
            let (na, nb) = (self.node[a as usize], self.node[b as usize]);
            if na == BLOCKED || nb == BLOCKED || na == nb {
                continue;
            }
            // Two own cells that touch are one group, so one end at least is empty.
            let both_empty = cells[a as usize] == EMPTY && cells[b as usize] == EMPTY;
            self.push_edge(na, nb, if both_empty { 0.5 } else { 1.0 });
        }
        for c in 0..CELLS {
            if cells[c] == EMPTY {
                if on_source(colour, c) {
                    self.push_edge(c as u8, SOURCE, 1.0);
                }
                if on_sink(colour, c) {
                    self.push_edge(c as u8, SINK, 1.0);
                }
            }
        }
        if self.virtual_links {
            self.add_virtual_links(cells, colour);
        }
        self.diag.fill(0.0);
        self.rhs.fill(0.0);
        self.x.fill(0.0);
        for e in 0..self.edges {
            let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
            for (u, v) in [(a, b), (b, a)] {
                if (u as usize) < CELLS {
                    self.diag[u as usize] += g;
                    if v == SOURCE {
                        self.rhs[u as usize] += g;
                    }
                }
            }
        }
        self.conjugate_gradients();
        let mut total = 0.0;
        for e in 0..self.edges {
            let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
            if a == SOURCE {
                total += g * (1.0 - self.voltage(b));
            } else if b == SOURCE {
                total += g * (1.0 - self.voltage(a));
            }
        }
        if let Some(current) = current {
            current.fill(0.0);
            if total > 1e-12 {
                for e in 0..self.edges {
                    let (a, b, g) = (self.edge_a[e], self.edge_b[e], self.edge_g[e]);
                    let flow = g * (self.voltage(a) - self.voltage(b)).abs();
                    for u in [a, b] {
                        if (u as usize) < CELLS && cells[u as usize] == EMPTY {
                            current[u as usize] += flow;
                        }
                    }
                }
                let scale = 0.5 / total;
                current.iter_mut().for_each(|f| *f *= scale);
            }
        }
        if total > 1e-12 {
            1.0 / total
        } else {
            NO_PATH
        }
    }

    /// Solves diag·x − (off-diagonal conductances)·x = rhs over the cell nodes. Nodes in a part
    /// of the circuit that touches no terminal have rhs 0 and stay at 0, so the singular blocks
    /// of the Laplacian never enter the Krylov space.
    pub(super) fn conjugate_gradients(&mut self) {
        let mut rz = 0.0;
        let mut b_norm = 0.0;
        for i in 0..CELLS {
            self.r[i] = self.rhs[i];
            self.z[i] = if self.diag[i] > 0.0 {
                self.r[i] / self.diag[i]
            } else {
                0.0
            };
            self.p[i] = self.z[i];
            rz += self.r[i] * self.z[i];
            b_norm += self.rhs[i] * self.rhs[i];
        }
        self.last_iterations = 0;
        if b_norm == 0.0 {
            return;
        }
        for iteration in 1..=CG_MAX_ITERATIONS {
            self.last_iterations = iteration;
            for i in 0..CELLS {
                self.ap[i] = self.diag[i] * self.p[i];
            }
            for e in 0..self.edges {
                let (a, b) = (self.edge_a[e] as usize, self.edge_b[e] as usize);
                if a < CELLS && b < CELLS {
                    let g = self.edge_g[e];
                    self.ap[a] -= g * self.p[b];
                    self.ap[b] -= g * self.p[a];
                }
            }
            let pap: f64 = (0..CELLS).map(|i| self.p[i] * self.ap[i]).sum();
            if pap <= 0.0 {
                return;
            }
            let alpha = rz / pap;
            let mut rr = 0.0;
            for i in 0..CELLS {
                self.x[i] += alpha * self.p[i];
                self.r[i] -= alpha * self.ap[i];
                rr += self.r[i] * self.r[i];
            }
            if rr <= CG_TOLERANCE * b_norm {
                return;
            }
            let mut rz_next = 0.0;
            for i in 0..CELLS {
                self.z[i] = if self.diag[i] > 0.0 {
                    self.r[i] / self.diag[i]
                } else {
                    0.0
                };
                rz_next += self.r[i] * self.z[i];
            }
            let beta = rz_next / rz;
            rz = rz_next;
            for i in 0..CELLS {
                self.p[i] = self.z[i] + beta * self.p[i];
            }
        }
    }
}

/// A score that means a won game (minus the plies it takes).
pub(super) const WIN: f64 = 1_000.0;

/// The paper's evaluation E = R_opponent / R_own, as a logarithm so that it is antisymmetric:
/// positive is good for the side whose resistance is `own`.
pub(super) fn evaluation(own: f64, opponent: f64) -> f64 {
    if own <= 0.0 {
        WIN
    } else if opponent <= 0.0 {
        -WIN
    } else {
        (opponent / own).ln()
    }
}

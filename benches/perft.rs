//! Times Surakarta perft from the start position (default depth 6; `PERFT_DEPTH` overrides) and
//! prints seconds and leaf nodes per second. Run with `cargo bench --bench perft`. Run by
//! `cargo test --all-targets` (without `--bench`) it only smoke-tests depth 3.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use arena::game::surakarta::Surakarta;
use arena::game::Rules;

fn main() {
    let depth: u32 = std::env::var("PERFT_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(if std::env::args().any(|a| a == "--bench") {
            6
        } else {
            3
        });
    let start = Surakarta::start(&Default::default());
    // One warm-up pass at a smaller depth, then the timed run.
    std::hint::black_box(start.perft(depth.saturating_sub(2)));
    let t = Instant::now();
    let nodes = start.perft(std::hint::black_box(depth));
    let secs = t.elapsed().as_secs_f64();
    println!(
        "surakarta perft {depth}: {nodes} leaves in {secs:.3} s ({:.1} M nodes/s)",
        nodes as f64 / secs / 1e6
    );
}

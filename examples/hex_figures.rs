//! Prints the Hex engine's speed and H-search figures, for the engine's docs and for
//! measuring a change side by side: playouts per second with one and two threads, with and
//! without the move patterns and the virtual-connection checks, the time of one H-search, and
//! how many of the kept MoHex positions H-search sees won.
//!
//! `cargo run --release --example hex_figures -- thread-speed` (and `pattern-cost`,
//! `vc-check-cost`, `h-search-speed`, `h-search-mohex [FILE]`). Figures depend on what else
//! the machine runs: compare settings within one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use arena::engine::hex::{figures, HexEngine};
use arena::engine::{ClockView, Engine, SearchRequest};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Print the Hex engine's speed and H-search figures")]
struct Args {
    #[command(subcommand)]
    figure: Figure,
}

#[derive(Subcommand)]
enum Figure {
    /// Playouts per second with one and with two threads (2 s a position, two rounds).
    ThreadSpeed,
    /// Playouts per second without the move patterns, with the tree's bias, in the playouts.
    PatternCost,
    /// Playouts per second and checks made with `vc` 0, 1, 2 and deeper checks (1 s each).
    VcCheckCost,
    /// Time of one H-search on random positions of 10 to 60 stones.
    HSearchSpeed,
    /// How many kept positions where MoHex's connection builder proved a win H-search sees.
    HSearchMohex {
        #[arg(default_value = "tests/fixtures/hex/mohex_vc_wins.txt")]
        file: std::path::PathBuf,
    },
}

/// The opening positions the speed figures search.
const SPEED_POSITIONS: [&[&str]; 3] = [
    &["F6", "E7"],
    &["F6", "E7", "D5", "G4", "C8", "H6"],
    &["C3", "I9", "F6", "E7", "D8", "G5", "H4", "B10", "E5", "F5"],
];

/// Lets an engine with `options` choose a move after `moves`; gives its playouts and checks and
/// the seconds it took.
fn search(options: serde_json::Value, moves: &[&str]) -> anyhow::Result<(u64, u64, f64)> {
    let mut engine = HexEngine::new(&serde_json::Value::Null, &options, 5)
        .with_context(|| format!("engine options {options}"))?;
    let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
    let abort = AtomicBool::new(false);
    let started = Instant::now();
    engine.choose_move(&SearchRequest {
        moves: &moves,
        clock: ClockView::unlimited(),
        abort: &abort,
    })?;
    let seconds = started.elapsed().as_secs_f64();
    Ok((
        engine.last_stats.playouts,
        engine.last_stats.checks,
        seconds,
    ))
}

fn thread_speed() -> anyhow::Result<()> {
    let mut totals = [(0u64, 0f64); 2];
    for round in 0..2 {
        for moves in SPEED_POSITIONS {
            for (slot, threads) in [1u64, 2].into_iter().enumerate() {
                let options =
                    serde_json::json!({"ab_below": 0, "time_ms": 2000, "threads": threads});
                let (playouts, _, seconds) = search(options, moves)?;
                totals[slot].0 += playouts;
                totals[slot].1 += seconds;
                println!(
                    "round {round} {} stones, {threads} thread(s): {playouts} playouts in \
                     {seconds:.2} s, {:.0}/s",
                    moves.len(),
                    playouts as f64 / seconds
                );
            }
        }
    }
    let rate = |(playouts, seconds): (u64, f64)| playouts as f64 / seconds;
    println!(
        "total: 1 thread {:.0}/s, 2 threads {:.0}/s, ratio {:.2}",
        rate(totals[0]),
        rate(totals[1]),
        rate(totals[1]) / rate(totals[0])
    );
    Ok(())
}

fn pattern_cost() -> anyhow::Result<()> {
    let configs = [
        serde_json::json!({"ab_below": 0, "time_ms": 1000}),
        serde_json::json!({"ab_below": 0, "time_ms": 1000, "pattern_bias": 250}),
        serde_json::json!({"ab_below": 0, "time_ms": 1000, "pattern_playouts": 100}),
    ];
    let mut rates = vec![0.0; configs.len()];
    for moves in SPEED_POSITIONS {
        for (k, options) in configs.iter().enumerate() {
            let (playouts, _, seconds) = search(options.clone(), moves)?;
            let rate = playouts as f64 / seconds;
            rates[k] += rate / SPEED_POSITIONS.len() as f64;
            println!("{} stones, {options}: {rate:.0} playouts/s", moves.len());
        }
    }
    for (options, rate) in configs.iter().zip(&rates) {
        println!(
            "mean {rate:.0}/s ({:.2} of the first) {options}",
            rate / rates[0]
        );
    }
    Ok(())
}

fn vc_check_cost() -> anyhow::Result<()> {
    let positions: [&[&str]; 5] = [
        &["F6", "E7"],
        &["F6", "E7", "G4", "D5"],
        &["C3", "I9", "F5"],
        &[
            "H9", "A5", "G7", "B1", "F5", "G6", "F6", "F4", "G5", "G4", "E4", "E3",
        ],
        &[
            "H9", "A5", "G7", "B1", "F5", "G6", "F6", "F4", "G5", "G4", "E4", "E3", "I5", "H3",
            "A1", "B2", "A2", "B3", "C2", "G1",
        ],
    ];
    for (vc, vc_visits) in [(0, 0), (1, 0), (2, 0), (2, 2000), (2, 500), (2, 100)] {
        let (mut playouts, mut checks, mut seconds) = (0, 0, 0.0);
        for moves in positions {
            let options = serde_json::json!({"vc": vc, "vc_visits": vc_visits, "time_ms": 1000,
                "ab_below": 0});
            let (p, c, s) = search(options, moves)?;
            playouts += p;
            checks += c;
            seconds += s;
        }
        println!(
            "vc {vc}, vc_visits {vc_visits}: {:.0} playouts/s, {checks} checks",
            playouts as f64 / seconds
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    match Args::parse().figure {
        Figure::ThreadSpeed => thread_speed()?,
        Figure::PatternCost => pattern_cost()?,
        Figure::VcCheckCost => vc_check_cost()?,
        Figure::HSearchSpeed => {
            for row in figures::h_search_speed(11) {
                println!(
                    "{} stones: {:.2} ms per H-search, {} AND attempts",
                    row.stones, row.ms_per_search, row.and_attempts
                );
            }
        }
        Figure::HSearchMohex { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let seen = figures::h_search_on_vc_wins(&text).map_err(anyhow::Error::msg)?;
            println!(
                "H-search sees {} of {} semi connections before the key, {} full ones after it \
                 ({:.2} ms per H-search)",
                seen.semis, seen.positions, seen.fulls, seen.ms_per_search
            );
        }
    }
    Ok(())
}

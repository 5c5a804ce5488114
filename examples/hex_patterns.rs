//! Trains the Hex engine's move-pattern weights from game records (`games.jsonl` files written
//! by `arena match` or a league) and writes them in the engine's weights format to stdout.
//!
//! `cargo run --release --example hex_patterns -- --player mohex DIR/games.jsonl… > src/engine/hex/patterns.txt`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;

use anyhow::{bail, Context};
use arena::engine::hex::patterns::{train, TrainingSet};
use arena::game::{GameId, Side};
use arena::game_line::GameLine;
use clap::Parser;

#[derive(Parser)]
#[command(about = "Train the Hex engine's move-pattern weights from games.jsonl files")]
struct Args {
    /// Learn only these players' moves (names in the records; repeatable); every move when
    /// none is given.
    #[arg(long)]
    player: Vec<String>,
    /// Moves at the start of each game not learnt from (the openings).
    #[arg(long, default_value_t = 2)]
    skip: usize,
    /// Minorization-maximization iterations.
    #[arg(long, default_value_t = 30)]
    iterations: usize,
    /// Every this many games, one is kept out of training and only tested on (0: none).
    #[arg(long, default_value_t = 0)]
    hold_out: usize,
    /// games.jsonl files.
    #[arg(required = true)]
    games: Vec<std::path::PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut set = TrainingSet::default();
    let mut held_out = TrainingSet::default();
    let mut games = 0;
    let mut seen = 0;
    for path in &args.games {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let where_ = || format!("{} line {}", path.display(), n + 1);
            let value: serde_json::Value = serde_json::from_str(line).with_context(where_)?;
            let game = GameLine::from_json(&value).with_context(where_)?;
            if game.game != GameId::Hex
                || game.rules.get("swap") == Some(&serde_json::Value::Bool(true))
            {
                continue;
            }
            let learnt = |ply: usize| {
                // `mover_of_ply` counts plies from 1.
                let name = match GameId::Hex.mover_of_ply(ply + 1) {
                    Side::First => &game.first,
                    Side::Second => &game.second,
                };
                ply >= args.skip && (args.player.is_empty() || args.player.contains(name))
            };
            seen += 1;
            if args.hold_out > 0 && seen % args.hold_out == 0 {
                held_out.add_game(&game.moves, &learnt);
            } else if set.add_game(&game.moves, &learnt) > 0 {
                games += 1;
            }
        }
    }
    if set.is_empty() {
        bail!("no position to learn from");
    }
    eprintln!("{} positions from {games} games", set.len());
    let weights = train(&set, args.iterations, &mut |iteration, log_likelihood| {
        eprintln!("iteration {iteration}: mean log-likelihood {log_likelihood:.4}");
    });
    let (first, five) = set.accuracy(&weights);
    eprintln!("training positions: played cell first {first:.3}, in the top five {five:.3}");
    if !held_out.is_empty() {
        let (first, five) = held_out.accuracy(&weights);
        eprintln!(
            "{} held-out positions: played cell first {first:.3}, in the top five {five:.3}",
            held_out.len()
        );
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# Hex move-pattern weights: {} positions from {games} games.",
        set.len()
    )?;
    weights.write(&mut out)?;
    Ok(())
}

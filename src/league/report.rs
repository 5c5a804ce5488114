//! The standings files (`standings.json`, `standings.csv`, `standings.md`, each replaced
//! atomically) and the plain-text table printed when a tournament ends.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::standings::StandingRow;
use crate::game::GameId;

/// The standings of one tournament as written to the files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentStandings {
    pub name: String,
    /// The game id (`hex`, ...).
    pub game: String,
    /// True once every game of the tournament is finished.
    pub finished: bool,
    pub rows: Vec<StandingRow>,
}

impl TournamentStandings {
    pub fn new(name: &str, game: GameId, finished: bool, rows: Vec<StandingRow>) -> Self {
        TournamentStandings {
            name: name.to_string(),
            game: game.as_str().to_string(),
            finished,
            rows,
        }
    }
}

/// The whole of `standings.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingsFile {
    pub tournaments: Vec<TournamentStandings>,
}

/// The row columns, in order, as named in all three files (the CSV adds `tournament` first).
pub const ROW_COLUMNS: [&str; 19] = [
    "rank",
    "name",
    "games",
    "wins",
    "draws",
    "losses",
    "byes",
    "points",
    "head_to_head",
    "sonneborn_berger",
    "buchholz",
    "elo",
    "elo_low",
    "elo_high",
    "timeout_losses",
    "illegal_move_losses",
    "disconnect_losses",
    "forfeit_losses",
    "mean_think_ms",
];

/// A number as the files show it: the shortest form that reads back the same (`2.5`, `3`).
fn number(x: f64) -> String {
    // Avoid "-0" after rounding.
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x}")
    }
}

/// The cells of one row in `ROW_COLUMNS` order; `None` fields are `empty`.
fn cells(row: &StandingRow, empty: &str) -> Vec<String> {
    let optional = |x: Option<f64>| x.map_or_else(|| empty.to_string(), number);
    vec![
        row.rank.to_string(),
        row.name.clone(),
        row.games.to_string(),
        row.wins.to_string(),
        row.draws.to_string(),
        row.losses.to_string(),
        row.byes.to_string(),
        number(row.points),
        number(row.head_to_head),
        number(row.sonneborn_berger),
        optional(row.buchholz),
        number(row.elo),
        number(row.elo_low),
        number(row.elo_high),
        row.timeout_losses.to_string(),
        row.illegal_move_losses.to_string(),
        row.disconnect_losses.to_string(),
        row.forfeit_losses.to_string(),
        optional(row.mean_think_ms),
    ]
}

/// `standings.json`, pretty-printed.
pub fn standings_json(tournaments: &[TournamentStandings]) -> String {
    let file = StandingsFile {
        tournaments: tournaments.to_vec(),
    };
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `standings.csv`: one header line, then one line per bot per tournament, the tournament
/// name in the first column. Empty cells are `null`s of the JSON.
pub fn standings_csv(tournaments: &[TournamentStandings]) -> String {
    let mut out = String::from("tournament");
    for c in ROW_COLUMNS {
        out.push(',');
        out.push_str(c);
    }
    out.push('\n');
    for t in tournaments {
        for row in &t.rows {
            out.push_str(&csv_field(&t.name));
            for cell in cells(row, "") {
                out.push(',');
                out.push_str(&csv_field(&cell));
            }
            out.push('\n');
        }
    }
    out
}

fn markdown_cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// `standings.md`: a title, then per tournament a heading and a Markdown table.
pub fn standings_markdown(tournaments: &[TournamentStandings]) -> String {
    let mut out = String::from("# Standings\n");
    for t in tournaments {
        let status = if t.finished {
            "finished"
        } else {
            "in progress"
        };
        out.push_str(&format!(
            "\n## {} ({}, {})\n\n",
            markdown_cell(&t.name),
            markdown_cell(&t.game),
            status
        ));
        out.push_str(&format!("| {} |\n", ROW_COLUMNS.join(" | ")));
        out.push_str(&format!("|{}\n", " --- |".repeat(ROW_COLUMNS.len())));
        for row in &t.rows {
            let cells: Vec<String> = cells(row, "-").iter().map(|c| markdown_cell(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    out
}

/// The plain-text table for the terminal: aligned columns, names left, numbers right.
pub fn terminal_table(t: &TournamentStandings) -> String {
    let swiss = t.rows.iter().any(|r| r.buchholz.is_some());
    let mut header = vec![
        "#", "bot", "games", "W", "D", "L", "points", "h2h", "SB", "Elo", "95%", "time", "illegal",
        "disc", "forfeit", "think ms",
    ];
    if swiss {
        header.insert(9, "Buchholz");
    }
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in &t.rows {
        let mut line = vec![
            r.rank.to_string(),
            r.name.clone(),
            r.games.to_string(),
            r.wins.to_string(),
            r.draws.to_string(),
            r.losses.to_string(),
            number(r.points),
            number(r.head_to_head),
            number(r.sonneborn_berger),
            format!("{:.0}", r.elo),
            format!("{:.0}..{:.0}", r.elo_low, r.elo_high),
            r.timeout_losses.to_string(),
            r.illegal_move_losses.to_string(),
            r.disconnect_losses.to_string(),
            r.forfeit_losses.to_string(),
            r.mean_think_ms
                .map_or_else(|| "-".to_string(), |x| format!("{x:.1}")),
        ];
        if swiss {
            line.insert(9, r.buchholz.map_or_else(|| "-".to_string(), number));
        }
        table.push(line);
    }
    let width_count = table.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..width_count)
        .map(|c| {
            table
                .iter()
                .filter_map(|line| line.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let status = if t.finished {
        "finished"
    } else {
        "in progress"
    };
    let mut out = format!("{} ({}, {})\n", t.name, t.game, status);
    for line in &table {
        let mut text = String::new();
        for (c, (cell, width)) in line.iter().zip(&widths).enumerate() {
            if c > 0 {
                text.push_str("  ");
            }
            let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
            if c == 1 {
                text.push_str(cell);
                text.push_str(&pad);
            } else {
                text.push_str(&pad);
                text.push_str(cell);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// Replaces `path` with `bytes` so that a reader (or a crash) sees either the old or the new
/// file, never a mix: a temporary file in the same directory, written and fsynced, renamed over
/// `path`, then the directory fsynced.
///
/// Private stand-in for `crate::atomic_file::write_atomically` (being written on another
/// branch); switch to it once merged.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let temp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)?;
        // Make the rename itself durable.
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Writes `standings.json`, `standings.csv` and `standings.md` into `dir`, each atomically.
pub fn write_standings(dir: &Path, tournaments: &[TournamentStandings]) -> io::Result<()> {
    write_atomically(
        &dir.join("standings.json"),
        standings_json(tournaments).as_bytes(),
    )?;
    write_atomically(
        &dir.join("standings.csv"),
        standings_csv(tournaments).as_bytes(),
    )?;
    write_atomically(
        &dir.join("standings.md"),
        standings_markdown(tournaments).as_bytes(),
    )
}

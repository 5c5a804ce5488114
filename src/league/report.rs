//! The standings files (`standings.json`, `standings.csv`, `standings.md`, each replaced
//! atomically) and the plain-text table printed when a tournament ends.

use std::borrow::Borrow;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::standings::StandingRow;
use crate::atomic_file::{write_atomically, AtomicFileError};
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
pub const ROW_COLUMNS: [&str; 20] = [
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
    "suspensions",
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
        row.suspensions.to_string(),
    ]
}

/// `standings.json`, pretty-printed.
pub fn standings_json<T: Borrow<TournamentStandings>>(tournaments: &[T]) -> String {
    let mut text = Vec::new();
    push_standings_json(&mut text, tournaments);
    // `serde_json` writes UTF-8; the fallback only keeps this free of a panic path.
    String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `standings.json`'s text to `out`.
fn push_standings_json<T: Borrow<TournamentStandings>>(out: &mut Vec<u8>, tournaments: &[T]) {
    /// `StandingsFile`, borrowed: the server rewrites it as the league goes on.
    #[derive(Serialize)]
    struct Borrowed<'a> {
        tournaments: Vec<&'a TournamentStandings>,
    }
    let file = Borrowed {
        tournaments: tournaments.iter().map(Borrow::borrow).collect(),
    };
    let start = out.len();
    if serde_json::to_writer_pretty(&mut *out, &file).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"{}");
    }
    out.push(b'\n');
}

/// A CSV cell: quoted when it needs to be, and, when a spreadsheet would run it as a formula
/// (text starting with `=`, `+`, `-`, `@`, a tab or a carriage return), prefixed with `'`
/// (OWASP's guard against CSV injection). Numbers such as `-12.5` stay numbers.
fn csv_field(text: &str) -> String {
    let formula =
        text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.parse::<f64>().is_err();
    let text = if formula {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// `standings.csv`: one header line, then one line per bot per tournament, the tournament
/// name in the first column. Empty cells are `null`s of the JSON.
pub fn standings_csv<T: Borrow<TournamentStandings>>(tournaments: &[T]) -> String {
    let mut out = String::new();
    push_standings_csv(&mut out, tournaments);
    out
}

/// Appends `standings.csv`'s text to `out`.
fn push_standings_csv<T: Borrow<TournamentStandings>>(out: &mut String, tournaments: &[T]) {
    out.push_str("tournament");
    for c in ROW_COLUMNS {
        out.push(',');
        out.push_str(c);
    }
    out.push('\n');
    for t in tournaments.iter().map(Borrow::borrow) {
        for row in &t.rows {
            out.push_str(&csv_field(&t.name));
            for cell in cells(row, "") {
                out.push(',');
                out.push_str(&csv_field(&cell));
            }
            out.push('\n');
        }
    }
}

/// A Markdown table cell that shows `text` as written: HTML characters as entities (a name
/// cannot add markup to a rendered page), Markdown's inline punctuation escaped (no links,
/// images or emphasis), line breaks as spaces.
fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `standings.md`: a title, then per tournament a heading and a Markdown table.
pub fn standings_markdown<T: Borrow<TournamentStandings>>(tournaments: &[T]) -> String {
    let mut out = String::new();
    push_standings_markdown(&mut out, tournaments);
    out
}

/// Appends `standings.md`'s text to `out`.
fn push_standings_markdown<T: Borrow<TournamentStandings>>(out: &mut String, tournaments: &[T]) {
    out.push_str("# Standings\n");
    for t in tournaments.iter().map(Borrow::borrow) {
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
}

/// The plain-text table for the terminal: aligned columns, names left, numbers right.
pub fn terminal_table(t: &TournamentStandings) -> String {
    let swiss = t.rows.iter().any(|r| r.buchholz.is_some());
    let mut header = vec![
        "#",
        "bot",
        "games",
        "W",
        "D",
        "L",
        "byes",
        "points",
        "h2h",
        "SB",
        "Elo",
        "95%",
        "timeouts",
        "illegal",
        "disc",
        "forfeit",
        "think ms",
        "suspended",
    ];
    // Buchholz goes after SB, as in the standings files.
    let buchholz_column = 10;
    if swiss {
        header.insert(buchholz_column, "Buchholz");
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
            r.byes.to_string(),
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
            r.suspensions.to_string(),
        ];
        if swiss {
            line.insert(
                buchholz_column,
                r.buchholz.map_or_else(|| "-".to_string(), number),
            );
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

/// Writes `standings.json`, `standings.csv` and `standings.md` into `dir`, each atomically.
pub fn write_standings<T: Borrow<TournamentStandings>>(
    dir: &Path,
    tournaments: &[T],
) -> Result<(), AtomicFileError> {
    StandingsTexts::default().write(dir, tournaments)
}

/// The texts of the three standings files, kept from one rewrite to the next by a writer that
/// rewrites them as a league goes on. A league of 1,000 tournaments has about 2 MB of them; made
/// afresh at each rewrite, their growing buffers landed in memory the process had not touched
/// since (the allocator hands out fresh pages, or ones it gave back to the system), and a
/// profile put the kernel's zeroing of those pages at two thirds of the rewrites' CPU.
#[derive(Debug, Default)]
pub struct StandingsTexts {
    json: Vec<u8>,
    csv: String,
    markdown: String,
}

impl StandingsTexts {
    /// Writes `standings.json`, `standings.csv` and `standings.md` into `dir`, each atomically.
    pub fn write<T: Borrow<TournamentStandings>>(
        &mut self,
        dir: &Path,
        tournaments: &[T],
    ) -> Result<(), AtomicFileError> {
        self.json.clear();
        push_standings_json(&mut self.json, tournaments);
        write_atomically(&dir.join("standings.json"), &self.json)?;
        self.csv.clear();
        push_standings_csv(&mut self.csv, tournaments);
        write_atomically(&dir.join("standings.csv"), self.csv.as_bytes())?;
        self.markdown.clear();
        push_standings_markdown(&mut self.markdown, tournaments);
        write_atomically(&dir.join("standings.md"), self.markdown.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{EndReason, Side};
    use crate::league::standings::{compute_standings, GameResult, Points, ThinkTotal};
    use crate::league::EloOptions;
    use std::fs;

    fn sample() -> Vec<TournamentStandings> {
        let game = |first: &str, second: &str, winner: Option<Side>| GameResult {
            first: first.to_string(),
            second: second.to_string(),
            winner,
            reason: EndReason::Timeout,
            think: [
                ThinkTotal {
                    total_ms: 30,
                    moves: 2,
                },
                ThinkTotal {
                    total_ms: 10,
                    moves: 2,
                },
            ],
        };
        let bots: Vec<String> = ["alice", "bob, the \"bot\"", "c|d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let results = vec![
            game("alice", "bob, the \"bot\"", Some(Side::First)),
            game("c|d", "alice", None),
            game("bob, the \"bot\"", "c|d", Some(Side::Second)),
        ];
        let rr = compute_standings(
            &bots,
            &results,
            &[],
            &Points::default(),
            false,
            &EloOptions::default(),
        );
        let swiss = compute_standings(
            &bots[..2],
            &results[..1],
            &[],
            &Points::default(),
            true,
            &EloOptions::default(),
        );
        vec![
            TournamentStandings::new("hex-league", GameId::Hex, true, rr),
            TournamentStandings::new("c6-swiss", GameId::Connect6, false, swiss),
        ]
    }

    /// Splits one CSV line into fields (quotes and doubled quotes as RFC 4180).
    fn csv_fields(line: &str) -> Vec<String> {
        let mut fields = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    fields.last_mut().unwrap().push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(String::new()),
                (c, _) => fields.last_mut().unwrap().push(c),
            }
        }
        fields
    }

    #[test]
    fn json_reads_back_with_the_spec_fields() {
        let tournaments = sample();
        let text = standings_json(&tournaments);
        let back: StandingsFile = serde_json::from_str(&text).unwrap();
        assert_eq!(back.tournaments, tournaments);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let t = &value["tournaments"][0];
        assert_eq!(
            (
                t["name"].as_str(),
                t["game"].as_str(),
                t["finished"].as_bool()
            ),
            (Some("hex-league"), Some("hex"), Some(true))
        );
        let row = t["rows"][0].as_object().unwrap();
        for column in ROW_COLUMNS {
            assert!(row.contains_key(column), "{column}");
        }
        assert_eq!(row.len(), ROW_COLUMNS.len());
        assert!(t["rows"][0]["buchholz"].is_null());
        assert!(value["tournaments"][1]["rows"][0]["buchholz"].is_number());
    }

    #[test]
    fn csv_has_one_header_and_a_tournament_column_first() {
        let tournaments = sample();
        let text = standings_csv(&tournaments);
        let lines: Vec<&str> = text.lines().collect();
        let header = csv_fields(lines[0]);
        assert_eq!(header[0], "tournament");
        assert_eq!(&header[1..], &ROW_COLUMNS[..]);
        assert_eq!(lines.len(), 1 + 3 + 2);
        for line in &lines[1..] {
            assert_eq!(csv_fields(line).len(), header.len(), "{line}");
        }
        let names: Vec<String> = lines[1..4]
            .iter()
            .map(|l| csv_fields(l)[2].clone())
            .collect();
        let expected: Vec<String> = tournaments[0].rows.iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, expected);
        let first = csv_fields(lines[1]);
        assert_eq!(first[0], "hex-league");
        assert_eq!(first[3], tournaments[0].rows[0].games.to_string());
        assert_eq!(first[11], "", "buchholz is empty outside Swiss");
        assert_eq!(
            first[12].parse::<f64>().unwrap(),
            tournaments[0].rows[0].elo
        );
        assert_eq!(csv_fields(lines[4])[0], "c6-swiss");
    }

    #[test]
    fn markdown_has_a_heading_and_a_table_per_tournament() {
        let text = standings_markdown(&sample());
        assert!(text.contains("\n## hex-league (hex, finished)\n"));
        assert!(text.contains("\n## c6-swiss (connect6, in progress)\n"));
        let table_lines: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(table_lines.len(), 2 * 2 + 3 + 2);
        assert!(text.contains("c\\|d"), "a | in a name is escaped");
        for line in table_lines {
            let unescaped_bars = line.replace("\\|", "").matches('|').count();
            assert_eq!(unescaped_bars, ROW_COLUMNS.len() + 1, "{line}");
        }
    }

    #[test]
    fn terminal_table_is_aligned() {
        let tournaments = sample();
        for t in &tournaments {
            let text = terminal_table(t);
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[0].starts_with(&t.name));
            assert_eq!(lines.len(), 2 + t.rows.len());
            let width = lines[1].chars().count();
            assert!(
                lines[2..].iter().all(|l| l.chars().count() == width),
                "{text}"
            );
            assert_eq!(lines[1].contains("Buchholz"), t.rows[0].buchholz.is_some());
        }
    }

    #[test]
    fn terminal_table_shows_byes_and_names_timeout_losses() {
        let bots: Vec<String> = ["ann", "ben", "cat"].map(String::from).to_vec();
        let lost_on_time = GameResult {
            first: "ann".into(),
            second: "ben".into(),
            winner: Some(Side::First),
            reason: EndReason::Timeout,
            think: [ThinkTotal::default(), ThinkTotal::default()],
        };
        let rows = compute_standings(
            &bots,
            &[lost_on_time],
            &["cat".to_string(), "cat".to_string()],
            &Points::default(),
            true,
            &EloOptions::default(),
        );
        let t = TournamentStandings::new("swiss", GameId::Hex, false, rows);
        let text = terminal_table(&t);
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[1].split_whitespace().collect();
        let column = |name: &str| header.iter().position(|h| *h == name);
        assert!(column("time").is_none(), "{text}");
        let byes = column("byes").expect("a byes column");
        let timeouts = column("timeouts").expect("a timeouts column");
        let cell = |bot: &str, column: usize| {
            let line = lines[2..]
                .iter()
                .find(|l| l.split_whitespace().nth(1) == Some(bot))
                .expect("a line per bot");
            line.split_whitespace().nth(column).map(str::to_string)
        };
        assert_eq!(cell("cat", byes).as_deref(), Some("2"), "{text}");
        assert_eq!(cell("ann", byes).as_deref(), Some("0"), "{text}");
        assert_eq!(cell("ben", timeouts).as_deref(), Some("1"), "{text}");
        assert_eq!(cell("ann", timeouts).as_deref(), Some("0"), "{text}");
    }

    /// Texts kept from a rewrite of a larger league hold nothing of it at the next rewrite.
    #[test]
    fn kept_texts_write_exactly_the_newest_standings() {
        let dir = tempfile::tempdir().unwrap();
        let tournaments = sample();
        let mut texts = StandingsTexts::default();
        texts.write(dir.path(), &tournaments).unwrap();
        texts.write(dir.path(), &tournaments[..1]).unwrap();
        let read = |name: &str| fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(read("standings.json"), standings_json(&tournaments[..1]));
        assert_eq!(read("standings.csv"), standings_csv(&tournaments[..1]));
        assert_eq!(read("standings.md"), standings_markdown(&tournaments[..1]));
        assert_ne!(
            standings_json(&tournaments[..1]),
            standings_json(&tournaments)
        );
    }

    #[test]
    fn files_are_written_and_replaced_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let tournaments = sample();
        write_standings(dir.path(), &tournaments[..1]).unwrap();
        write_standings(dir.path(), &tournaments).unwrap();
        let json = fs::read_to_string(dir.path().join("standings.json")).unwrap();
        let back: StandingsFile = serde_json::from_str(&json).unwrap();
        assert_eq!(back.tournaments.len(), 2);
        assert_eq!(
            fs::read_to_string(dir.path().join("standings.csv")).unwrap(),
            standings_csv(&tournaments)
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("standings.md")).unwrap(),
            standings_markdown(&tournaments)
        );
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["standings.csv", "standings.json", "standings.md"]);
        assert!(write_standings(&dir.path().join("missing"), &tournaments).is_err());
    }

    #[test]
    fn csv_cells_a_spreadsheet_would_run_are_guarded_and_numbers_are_not() {
        assert_eq!(
            csv_field("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(csv_field("+1+1"), "'+1+1");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-bot"), "'-bot");
        assert_eq!(csv_field("\tx"), "'\tx");
        assert_eq!(csv_field("-12.5"), "-12.5");
        assert_eq!(csv_field("alice"), "alice");
    }

    #[test]
    fn markdown_cells_show_html_and_markdown_as_text() {
        assert_eq!(
            markdown_cell("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(
            markdown_cell("![t](http://evil/t.png) *b* a|b"),
            "\\!\\[t\\](http://evil/t.png) \\*b\\* a\\|b"
        );
        assert_eq!(markdown_cell("Tom & Jerry\nx"), "Tom &amp; Jerry x");
    }
}

//! The rules tools behind `arena perft`, `arena moves` and `arena replay`: each reads from any
//! `BufRead`, answers every input line as soon as it is read, and never stops on a bad line.

use std::io::{self, BufRead, Read, Write};

use crate::game::{self, GameId, PlayError};

/// Longest input line the tools accept; a longer one gets an error line.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// `arena perft GAME DEPTH`: one line `D COUNT` for each depth 1..=`depth`.
pub fn perft(
    game: GameId,
    rules: &serde_json::Value,
    depth: u32,
    out: &mut impl Write,
) -> io::Result<()> {
    let start = game::new_game(game, rules).map_err(io::Error::other)?;
    for d in 1..=depth {
        writeln!(out, "{d} {}", start.perft(d))?;
        out.flush()?;
    }
    Ok(())
}

/// Most complete moves `arena moves --expand` prints for one position; a position with more
/// gets an error line instead (the count is worked out first, without listing them).
pub const MAX_EXPANDED_MOVES: u64 = 100_000;

/// How `arena moves` writes a move that removes stones of the mover's choosing (Jiu squares).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Listing {
    /// Once, with one `+?` per square the move forms (`F7-F6+?+?`; the move itself names
    /// min(squares, enemy stones left) stones).
    #[default]
    Once,
    /// Once per choice of stones (`F7-F6+A1+B1`, …), up to `MAX_EXPANDED_MOVES` per position.
    Expanded,
}

/// `arena moves GAME`: for each position text read, one line listing the legal moves
/// (space separated), `-` for a position with none (the game is over), or `error WHY` for a
/// line that is not a position (or, expanded, whose moves are too many to print).
pub fn moves(
    game: GameId,
    rules: &serde_json::Value,
    listing: Listing,
    input: impl BufRead,
    out: &mut impl Write,
) -> io::Result<()> {
    for_each_line(
        input,
        out,
        |line, out| match game::game_from_position_text(game, line, rules) {
            Ok(position) => {
                let listed = match listing {
                    Listing::Once => Ok(position.move_listing()),
                    Listing::Expanded => expanded_moves(&*position),
                };
                match listed {
                    Err(why) => writeln!(out, "error {why}"),
                    Ok(moves) if moves.is_empty() || position.outcome().is_some() => {
                        writeln!(out, "-")
                    }
                    Ok(moves) => writeln!(out, "{}", moves.join(" ")),
                }
            }
            Err(e) => writeln!(out, "error {e}"),
        },
    )
}

/// Every complete legal move of `position`, once its count (worked out from the bounded
/// listing) is known to be at most `MAX_EXPANDED_MOVES`.
fn expanded_moves(position: &dyn game::AnyGame) -> Result<Vec<String>, String> {
    // Each listed entry stands for at least one move: a longer listing is too many already.
    let budget = usize::try_from(MAX_EXPANDED_MOVES)
        .unwrap_or(usize::MAX)
        .saturating_mul(200);
    let choices = position.move_choices(budget).map_err(|e| e.to_string())?;
    let count = choices
        .iter()
        .fold(0u64, |sum, c| sum.saturating_add(c.complete_moves()));
    if count > MAX_EXPANDED_MOVES {
        return Err(format!(
            "the position has {count} complete moves, more than the {MAX_EXPANDED_MOVES} --expand prints"
        ));
    }
    Ok(position.legal_move_texts())
}

/// `arena replay GAME`: for each game (moves separated by spaces), one line:
/// `first PLY REASON`, `second PLY REASON`, `draw PLY REASON`, `none PLY` or
/// `illegal PLY MOVE WHY…` (WHY is free text, possibly several words, after the three fields).
/// PLY is the number of moves played; for `illegal` it is the number of the refused move.
pub fn replay(
    game: GameId,
    rules: &serde_json::Value,
    input: impl BufRead,
    out: &mut impl Write,
) -> io::Result<()> {
    let start = game::new_game(game, rules).map_err(io::Error::other)?;
    for_each_line(input, out, |line, out| {
        writeln!(out, "{}", replay_line(&*start, line))
    })
}

/// The replay verdict for one game's move list.
pub fn replay_line(start: &dyn game::AnyGame, line: &str) -> String {
    let mut position = start.clone_box();
    let mut ply = 0usize;
    for text in line.split_whitespace() {
        if position.outcome().is_some() {
            return format!("illegal {} {text} the game is already over", ply + 1);
        }
        match position.play_text(text) {
            Ok(_) => ply += 1,
            Err(PlayError::Parse(e)) => {
                return format!(
                    "illegal {} {text} {} (at character {})",
                    ply + 1,
                    e.what,
                    e.at
                );
            }
            Err(PlayError::Illegal { why, .. }) => {
                return format!("illegal {} {text} {why}", ply + 1);
            }
        }
    }
    match position.outcome() {
        Some(outcome) => format!("{} {ply} {}", outcome.result_str(), outcome.reason),
        None => format!("none {ply}"),
    }
}

/// Runs `answer` on each input line (trailing `\r` and surrounding blanks removed), flushing
/// after each answer so that a pipe sees it at once. Lines that are not UTF-8 or are longer
/// than `MAX_LINE_BYTES` get an error line. A blank line is passed on like any other: for
/// `replay` it is a game with no moves (`none 0`), for `moves` an error line.
fn for_each_line<R: BufRead, W: Write>(
    mut input: R,
    out: &mut W,
    mut answer: impl FnMut(&str, &mut W) -> io::Result<()>,
) -> io::Result<()> {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = input
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE_BYTES {
            // Skip the rest of the oversized line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let m = input.by_ref().take(1 << 16).read_until(b'\n', &mut sink)?;
                if m == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            writeln!(out, "error line longer than {MAX_LINE_BYTES} bytes")?;
        } else {
            match std::str::from_utf8(&buf) {
                Ok(text) => answer(text.trim(), out)?,
                Err(e) => writeln!(
                    out,
                    "error line is not UTF-8 (byte {})",
                    e.valid_up_to() + 1
                )?,
            }
        }
        out.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_and_non_utf8_lines_get_error_lines() {
        let mut input = Vec::new();
        input.extend_from_slice(b"\xff\xfe\n");
        input.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES + 10));
        input.extend_from_slice(b"\n\n");
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for_each_line(&input[..], &mut out, |line, out| {
            seen.push(line.to_string());
            writeln!(out, "ok")
        })
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("error line is not UTF-8"));
        assert!(lines[1].starts_with("error line longer"));
        assert_eq!(lines[2], "ok");
        assert_eq!(seen, vec![String::new()]);
    }

    /// A Jiu battle: `x` on rows 14 and 12 and on `extra`, `o` on rows 1 and 3, x to move.
    fn jiu_battle(extra: &[&str]) -> String {
        let mut rows = vec![String::from(".............."); 14];
        rows[0] = "x".repeat(14);
        rows[2] = "x".repeat(14);
        rows[11] = "o".repeat(14);
        rows[13] = "o".repeat(14);
        for point in extra {
            let col = usize::from(point.as_bytes()[0] - b'A');
            let row: usize = point[1..].parse().unwrap();
            rows[14 - row].replace_range(col..col + 1, "x");
        }
        format!("{} x phase=battle quiet=0\n", rows.join("/"))
    }

    fn moves_out(listing: Listing, input: &str) -> String {
        let mut out = Vec::new();
        moves(
            GameId::Jiu,
            &serde_json::json!({}),
            listing,
            input.as_bytes(),
            &mut out,
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn moves_lists_a_capture_once_and_expand_prints_each_choice() {
        let input = jiu_battle(&["E5", "F5", "E6", "F7"]);
        let once = moves_out(Listing::Once, &input);
        assert!(once.split(' ').any(|m| m.trim() == "F7-F6+?"), "{once}");
        let expanded = moves_out(Listing::Expanded, &input);
        let captures = expanded
            .split_whitespace()
            .filter(|m| m.starts_with("F7-F6+"))
            .count();
        assert_eq!(captures, 28, "one per o stone");
    }

    #[test]
    fn expand_refuses_a_position_with_too_many_moves_without_listing_them() {
        // x has 11 stones (it flies) and a 3×3 block with a hole: flying into it removes four
        // of o's 42 stones, C(42, 4) = 111930 ways for each stone outside the block.
        let mut rows = vec![String::from(".............."); 14];
        for row in &mut rows[11..14] {
            *row = "o".repeat(14);
        }
        rows[0] = "xxx...........".to_string();
        for row in [4, 5, 6] {
            rows[14 - row] = if row == 5 {
                "...x.x........"
            } else {
                "...xxx........"
            }
            .to_string();
        }
        let input = format!("{} x phase=battle quiet=0\n", rows.join("/"));
        let expanded = moves_out(Listing::Expanded, &input);
        let head: String = expanded.chars().take(200).collect();
        assert!(expanded.starts_with("error the position has "), "{head}");
        assert!(expanded.contains("100000"), "{head}");
        let once = moves_out(Listing::Once, &input);
        assert!(once.contains("A14-E5+?+?+?+?"), "{once}");
    }
}

//! The JSON the web view answers with, shared by the live server and the static site: game
//! details with every position computed by the rules, legal move lists, the bots' status with
//! why each waits, games.jsonl and standings.json read back, record files served safely.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use chrono::{DateTime, FixedOffset};
use serde_json::{json, Value};

use super::live::{Live, LiveGame, MatchSpec, SharedMoveLog};
use crate::clock::{Clocks, ClocksMs};
use crate::config::Config;
use crate::game::{game_from_position_text, new_game, EndReason, GameId, Side};
use crate::game_line::GameLine;
use crate::protocol::ClockSpec;
use crate::server::registry::{BotStatus, Registry};
use crate::server::OutputFault;

use super::ApiError;

/// `/api/games/meta`: what the pages must know of each game to draw its board and build a move
/// from clicks (board size and drawing, each side's letter and stone colour, stones per turn,
/// marked points), all from the game's `Rules`, so the pages keep no per-game tables. (No match
/// id can be `meta`: every id has a `-`.)
pub fn games_meta() -> Value {
    let games: Vec<Value> = GameId::ALL
        .iter()
        .map(|&game| {
            let sides = [Side::First, Side::Second].map(|side| {
                json!({
                    "letter": game.colour_letter(side).to_string(),
                    "colour": game.stone_colour(side),
                })
            });
            json!({
                "id": game,
                "record_code": game.record_code(),
                "board_size": game.board_size(),
                "board": game.board_drawing(),
                "sides": sides,
                "stones_per_turn": game.stones_per_turn(),
                "star_points": game.star_points(),
            })
        })
        .collect();
    json!({ "games": games })
}

/// Every game of `out_dir/games.jsonl` that was played, in start order, as `/api/games` lists
/// games: by each line's `started` time (games that started at the same moment, and lines
/// whose time does not read, after the others, keep their order in the file, which is finish
/// order). A forfeit is left out: its game never started (a bot did not show up), so the live
/// view never lists it either; the standings still count it. Lines that are not a whole game
/// are skipped, as the server's own reader skips them, and a match's later lines too.
pub fn finished_games(out_dir: &Path) -> Vec<LiveGame> {
    let mut seen = BTreeSet::new();
    let mut lines: Vec<(Option<DateTime<FixedOffset>>, GameLine)> =
        GameLine::read_file(&out_dir.join("games.jsonl"))
            .filter(|line| seen.insert(line.match_id.clone()))
            .filter(|line| line.reason != EndReason::Forfeit)
            .map(|line| (DateTime::parse_from_rfc3339(&line.started).ok(), line))
            .collect();
    // Stable: equal times keep the file's order.
    lines.sort_by_key(|(started, _)| (started.is_none(), *started));
    lines.iter().map(|(_, line)| game_of_line(line)).collect()
}

/// Where each game's line is in a games.jsonl that only grows: match id → (offset, length).
/// A lookup reads one line; the file is scanned once overall, each new part when a game not
/// yet indexed is asked for. So a web request never re-reads the whole file.
#[derive(Debug)]
pub struct FinishedIndex {
    path: PathBuf,
    state: std::sync::Mutex<IndexState>,
}

#[derive(Debug, Default)]
struct IndexState {
    lines: std::collections::HashMap<String, (u64, usize)>,
    /// Bytes of the file indexed so far (up to the end of its last whole line).
    scanned: u64,
}

impl FinishedIndex {
    pub fn new(out_dir: &Path) -> FinishedIndex {
        FinishedIndex {
            path: out_dir.join("games.jsonl"),
            state: std::sync::Mutex::new(IndexState::default()),
        }
    }

    /// The finished game `match_id` (its first line), if the file has it. Blocking file I/O.
    pub fn game(&self, match_id: &str) -> Option<LiveGame> {
        use std::io::{Read, Seek, SeekFrom};
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.lines.contains_key(match_id) {
            self.scan_new_lines(&mut state);
        }
        let (offset, len) = *state.lines.get(match_id)?;
        drop(state);
        let mut file = std::fs::File::open(&self.path).ok()?;
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut text = vec![0; len];
        file.read_exact(&mut text).ok()?;
        let line = GameLine::from_text(std::str::from_utf8(&text).ok()?).ok()?;
        (line.match_id == match_id).then(|| game_of_line(&line))
    }

    /// Indexes the whole lines added since the last scan.
    fn scan_new_lines(&self, state: &mut IndexState) {
        use std::io::{BufRead, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        if file.seek(SeekFrom::Start(state.scanned)).is_err() {
            return;
        }
        let mut reader = std::io::BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let Ok(n) = reader.read_until(b'\n', &mut line) else {
                return;
            };
            if n == 0 || line.last() != Some(&b'\n') {
                // The end, or a line still being written: scanned again next time.
                return;
            }
            let offset = state.scanned;
            state.scanned += n as u64;
            let text = String::from_utf8_lossy(&line[..n - 1]);
            if let Ok(game) = GameLine::from_text(&text) {
                state.lines.entry(game.match_id).or_insert((offset, n - 1));
            }
        }
    }
}

/// A finished game from its games.jsonl line.
pub fn game_of_line(line: &GameLine) -> LiveGame {
    let clocks = clocks_after(
        line.game,
        &line.rules,
        &line.clock,
        &line.moves,
        &line.think_ms,
    );
    LiveGame {
        spec: Arc::new(MatchSpec {
            match_id: line.match_id.clone(),
            tournament: line.tournament.clone(),
            game: line.game,
            players: [line.first.clone(), line.second.clone()],
            rules: Arc::new(line.rules.clone()),
            clock: line.clock,
        }),
        moves: SharedMoveLog::of_finished(line.game, &line.moves, &line.think_ms, &line.lag_ms),
        clocks,
        result: Some(line.result),
        reason: Some(line.reason),
        record: (!line.record.is_empty()).then(|| line.record.clone()),
    }
}

/// Both clocks after `moves` with `think_ms` charged, in whole milliseconds.
fn clocks_after(
    game: GameId,
    rules: &Value,
    clock: &ClockSpec,
    moves: &[String],
    think_ms: &[u64],
) -> [u64; 2] {
    let mut clocks = Clocks::new(*clock);
    let Ok(mut position) = new_game(game, rules) else {
        return clocks.remaining_ms();
    };
    for (i, text) in moves.iter().enumerate() {
        let think = Duration::from_millis(think_ms.get(i).copied().unwrap_or(0));
        clocks.charge(position.turn(), think);
        if position.play_text(text).is_err() {
            break;
        }
    }
    clocks.remaining_ms()
}

/// The `/api/games/{match}` answer: the game with every position after each move.
pub fn game_detail(game: &LiveGame) -> Value {
    // Copied out first: the referee appends to the same log, and replaying takes a while.
    let (moves, think_ms): (Vec<String>, Vec<u64>) = game
        .moves
        .read()
        .texts_and_think()
        .map(|(text, think)| (text.to_string(), think))
        .unzip();
    let mut positions = Vec::with_capacity(moves.len() + 1);
    let spec = &game.spec;
    if let Ok(mut position) = new_game(spec.game, &spec.rules) {
        positions.push(position.position_text());
        for text in &moves {
            if position.play_text(text).is_err() {
                break;
            }
            positions.push(position.position_text());
        }
    }
    let clock = serde_json::to_value(spec.clock).unwrap_or(Value::Null);
    json!({
        "match": spec.match_id,
        "tournament": spec.tournament,
        "game": spec.game.as_str(),
        "first": spec.players[0],
        "second": spec.players[1],
        "rules": *spec.rules,
        "clock": clock,
        "status": if game.result.is_some() { "finished" } else { "playing" },
        "moves": moves,
        "think_ms": think_ms,
        "positions": positions,
        "clocks": ClocksMs::from(game.clocks),
        "result": game.result,
        "reason": game.reason,
        "record": game.record,
    })
}

/// Most entries plus removable stones one `/api/moves` answer lists (a crafted Jiu position
/// could otherwise ask for hundreds of millions of moves).
pub const MAX_LISTED_MOVES: usize = 50_000;

/// The `/api/moves` list of `position`: each legal move once, as `arena moves` prints it, except
/// that a move removing stones of the mover's choosing (Jiu squares) is an object
/// `{"move", "remove", "removable"}` the client completes with `+POINT` per removed stone.
/// Past `MAX_LISTED_MOVES` the answer is an error (422), never a longer list.
pub fn legal_moves(game: GameId, position: &str, rules: &Value) -> Result<Vec<Value>, ApiError> {
    let position = game_from_position_text(game, position, rules)
        .map_err(|e| ApiError::bad_request(format!("bad position: {e}")))?;
    let choices = position
        .move_choices(MAX_LISTED_MOVES)
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    Ok(choices
        .into_iter()
        .map(|choice| match choice.remove {
            0 => Value::String(choice.text),
            remove => json!({
                "move": choice.text,
                "remove": remove,
                "removable": choice.removable.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            }),
        })
        .collect())
}

/// `standings.json` as last written to `out_dir` (or an empty table before the first game).
pub fn standings_text(config: &Config) -> String {
    std::fs::read_to_string(config.server.out_dir.join("standings.json"))
        .ok()
        .filter(|text| serde_json::from_str::<Value>(text).is_ok())
        .unwrap_or_else(|| "{\"tournaments\": []}\n".to_string())
}

/// The `/api/bots` answer: each configured bot, whether it is connected, what it plays now and,
/// when it has games left but none running, why it waits; and `output`, the league's outputs
/// that cannot be written now (what, how much waits, why), empty while all is well.
pub fn bots(
    config: &Config,
    registry: &Registry,
    live: &Live,
    output_faults: &[OutputFault],
) -> Value {
    let schedule = live.schedule();
    let (waiting, progress) = (&schedule.waiting, &schedule.tournaments);
    let statuses = registry.statuses();
    let nobody = BotStatus::default();
    let status_of = |name: &str| statuses.get(name).unwrap_or(&nobody);
    let mut out = Vec::new();
    for bot in &config.bots {
        let status = status_of(&bot.name);
        let session = status.session.as_ref();
        let busy = status.busy;
        let playing = &status.playing;
        let mut hello_games: Vec<&str> = session
            .map(|(games, _)| games.iter().map(|g| g.as_str()).collect())
            .unwrap_or_default();
        hello_games.sort_unstable();
        let mut reasons: Vec<String> = Vec::new();
        for t in config
            .tournaments
            .iter()
            .filter(|t| t.bots.iter().any(|b| b == &bot.name))
        {
            let Some(p) = progress.iter().find(|p| *p.name == *t.name) else {
                continue;
            };
            if p.finished {
                continue;
            }
            let mine: Vec<_> = waiting
                .iter()
                .filter(|w| *w.tournament == *t.name && w.players.iter().any(|p| **p == *bot.name))
                .collect();
            if mine.is_empty() {
                if p.swiss {
                    reasons.push(format!(
                        "{}: the next Swiss round is not paired yet",
                        t.name
                    ));
                }
                continue;
            }
            let Some((session_games, max_games)) = session else {
                reasons.push(match &status.suspended {
                    Some(why) => format!("not connected: {why}"),
                    None => "not connected".to_string(),
                });
                continue;
            };
            if !session_games.contains(&t.game) {
                reasons.push(format!(
                    "{}: no game in common with its hello ({} is not among {})",
                    t.name,
                    t.game,
                    if hello_games.is_empty() {
                        "none".to_string()
                    } else {
                        hello_games.join(", ")
                    }
                ));
                continue;
            }
            if busy >= *max_games {
                reasons.push(format!("max_games ({max_games}) reached"));
                continue;
            }
            let mut blocked = false;
            for w in &mine {
                let Some(opponent) = w.players.iter().find(|p| ***p != *bot.name) else {
                    continue;
                };
                let them = status_of(opponent);
                match &them.session {
                    Some((games, max_games)) if games.contains(&t.game) => {
                        if them.busy >= *max_games {
                            let with_us = them.playing.iter().any(|id| playing.contains(id));
                            reasons.push(if with_us {
                                format!(
                                    "{}: the next game with {opponent} waits for the one they are playing now",
                                    t.name
                                )
                            } else {
                                format!("{}: opponent {opponent} is busy in other games", t.name)
                            });
                            blocked = true;
                        }
                    }
                    _ => {
                        reasons.push(format!("{}: opponent {opponent} is absent", t.name));
                        blocked = true;
                    }
                }
            }
            if !blocked && p.running >= p.concurrency {
                reasons.push(format!(
                    "{}: {} games already running (the tournament's concurrency)",
                    t.name, p.running
                ));
            }
        }
        reasons.dedup();
        let mut seen = BTreeSet::new();
        reasons.retain(|r| seen.insert(r.clone()));
        out.push(json!({
            "name": bot.name,
            "builtin": bot.builtin,
            "connected": session.is_some(),
            "games": hello_games,
            "max_games": session.map(|(_, max_games)| max_games),
            "suspended": status.suspended,
            "playing": playing,
            "waiting": if playing.is_empty() || !reasons.is_empty() { reasons } else { Vec::new() },
        }));
    }
    let output: Vec<Value> = output_faults
        .iter()
        .map(|f| json!({"what": f.what.as_str(), "waiting": f.waiting, "why": f.why}))
        .collect();
    json!({ "bots": out, "output": output })
}

/// Whether `name` is a plain file name (no folder part, not hidden).
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && Path::new(name).components().count() == 1
}

/// The bytes of record file `name` under `dir`.
pub async fn read_record(dir: &Path, name: &str) -> Result<Vec<u8>, ApiError> {
    if !is_plain_file_name(name) {
        return Err(ApiError::bad_request(format!(
            "{name:?} is not a record file name"
        )));
    }
    let path: PathBuf = dir.join(name);
    tokio::fs::read(&path)
        .await
        .map_err(|_| ApiError::not_found(format!("no record file {name:?}")))
}

/// A `Content-Disposition` value that downloads as `name` (an ASCII fallback plus the UTF-8
/// name, RFC 6266).
pub fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A games.jsonl line of a two-move Hex game `id` the first side won by resignation.
    fn hex_line(id: &str, moves: &[&str]) -> String {
        GameLine::from_json(&json!({
            "match": id, "tournament": "t", "game": "hex", "first": "a", "second": "b",
            "result": "first", "reason": "resign", "moves": moves, "think_ms": [5, 6],
            "lag_ms": [0, 0], "rules": {"swap": false},
            "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-22T21:00:00+00:00", "finished": "2026-11-22T21:01:00+00:00",
            "record": format!("{id}.txt"),
        }))
        .unwrap()
        .to_text()
    }

    /// `hex_line` started at `started`, ended by `reason`.
    fn line_started(id: &str, started: &str, reason: &str) -> String {
        let mut value: Value = serde_json::from_str(&hex_line(id, &["F6", "E7"])).unwrap();
        value["started"] = json!(started);
        value["reason"] = json!(reason);
        value.to_string()
    }

    #[test]
    fn games_read_back_are_in_start_order_without_the_forfeits_that_never_started() {
        let dir = tempfile::tempdir().unwrap();
        // In finish order, as the server appends them: "long" started first and finished
        // last; "forfeit" never started; "twin" started with "short", later in the file.
        let lines = [
            line_started("short", "2026-11-22T21:05:00+00:00", "resign"),
            line_started("forfeit", "2026-11-22T21:06:00+00:00", "forfeit"),
            // 21:04 UTC, written in another offset: compared as instants, not as text.
            line_started("other-zone", "2026-11-22T22:04:00+01:00", "resign"),
            line_started("twin", "2026-11-22T21:05:00+00:00", "resign"),
            line_started("unreadable", "yesterday", "resign"),
            line_started("long", "2026-11-22T21:00:00+00:00", "connection"),
            line_started("short", "2026-11-22T20:00:00+00:00", "resign"),
        ];
        std::fs::write(dir.path().join("games.jsonl"), lines.join("\n") + "\n").unwrap();
        let ids: Vec<String> = finished_games(dir.path())
            .iter()
            .map(|g| g.spec.match_id.clone())
            .collect();
        assert_eq!(ids, ["long", "other-zone", "short", "twin", "unreadable"]);
    }

    #[test]
    fn a_finished_game_is_read_back_from_games_jsonl_by_its_match_id() {
        let dir = tempfile::tempdir().unwrap();
        let line = hex_line;
        // A match id that is a prefix of another must not match it.
        let text = format!(
            "{}\n{}\n{{\"torn",
            line("t-g10", &["A1", "B2"]),
            line("t-g1", &["F6", "E7"])
        );
        std::fs::write(dir.path().join("games.jsonl"), text).unwrap();
        let index = FinishedIndex::new(dir.path());
        let game = index.game("t-g1").unwrap();
        assert_eq!(game.moves.read().texts_from(0), ["F6", "E7"]);
        assert_eq!(game.record.as_deref(), Some("t-g1.txt"));
        assert_eq!(game_detail(&game)["positions"].as_array().unwrap().len(), 3);
        assert!(index.game("t-g2").is_none());
    }

    #[test]
    fn record_names_with_folders_or_dots_are_refused() {
        assert!(is_plain_file_name(
            "C6-a B vs b W-先手胜-2026.01.01 10.00 x-y.txt"
        ));
        for bad in ["", "..", ".hidden", "a/b.txt", "..\\x", "a\0b"] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_download_name_keeps_the_utf8_name_and_an_ascii_fallback() {
        let value = content_disposition("C6-甲 B.txt");
        assert_eq!(
            value,
            "attachment; filename=\"C6-_ B.txt\"; filename*=UTF-8''C6-%E7%94%B2%20B.txt"
        );
    }

    #[test]
    fn moves_are_listed_as_the_tool_prints_them_and_bad_positions_refused() {
        let start = new_game(GameId::Connect6, &json!({}))
            .unwrap()
            .position_text();
        let listed = legal_moves(GameId::Connect6, &start, &json!({})).unwrap();
        assert_eq!(listed.len(), 361);
        assert!(legal_moves(GameId::Hex, "junk", &json!({})).is_err());
    }

    #[test]
    fn the_index_reads_one_line_and_scans_only_what_was_added() {
        let dir = tempfile::tempdir().unwrap();
        let line = |id: &str| hex_line(id, &["F6", "E7"]);
        let path = dir.path().join("games.jsonl");
        std::fs::write(&path, format!("{}\n{}\n{{\"torn", line("g1"), line("g2"))).unwrap();
        let index = FinishedIndex::new(dir.path());
        assert_eq!(index.game("g2").unwrap().spec.match_id, "g2");
        assert!(index.game("g3").is_none());
        // The torn line is completed and another game added: found on the next miss.
        let before = std::fs::read_to_string(&path).unwrap();
        let fixed = before.trim_end_matches("{\"torn").to_string();
        std::fs::write(&path, format!("{fixed}{}\n", line("g3"))).unwrap();
        assert_eq!(index.game("g3").unwrap().record.as_deref(), Some("g3.txt"));
        assert_eq!(index.game("g1").unwrap().spec.match_id, "g1");
    }
}

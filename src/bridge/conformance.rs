//! `arena connect --check`: the protocol conformance check a student runs first. No server: the
//! engine passes the start check (`check_engine`), then plays one short game as each side against
//! the built-in random engine through the same adapter the bridge uses, with every move judged by
//! the rules. Each step is reported as it happens, in the words of docs/bots.md ("Checking an
//! engine"), to a writer; the result is whether the engine did nothing wrong.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::time::Instant;

use super::{check_engine, BridgeError, ConnectOptions, Engine, EngineNews};
use crate::clock::Clocks;
use crate::engine::{new_engine, ClockView, SearchRequest};
use crate::game::{new_game, EndReason, GameId, Side};
use crate::log_text::peer_message;
use crate::program::EngineProtocol;
use crate::protocol::{BotMessage, BotResult, ClockSpec, RefereeMessage};

/// Plies after which a check game stops if it has not ended: the game is short by design.
pub const CHECK_PLIES: usize = 30;
/// The per-move limit the engine gets in a check game unless told otherwise (`--move-limit`).
pub const CHECK_MOVE_MS: u64 = 10_000;
/// The name the engine's opponent goes by (and the "server" a json engine is welcomed by).
const OPPONENT: &str = "random (arena connect --check)";

/// What went wrong in a check, counted for the verdict.
#[derive(Debug, Default)]
struct Tally {
    problems: usize,
    engine_moves: usize,
    chatter: u64,
}

/// Runs the check, each engine move limited to `move_limit_ms`, and writes its report to `out`.
/// `Ok(true)` if the engine did nothing wrong.
pub async fn run_check(
    options: &ConnectOptions,
    move_limit_ms: u64,
    out: &mut (dyn Write + Send),
) -> Result<bool, BridgeError> {
    let command = options.command.join(" ");
    say(
        out,
        format!(
            "checking `{command}` as a {} engine (one short game as each side against random)",
            options.protocol
        ),
    )?;
    let (engine, name) = match check_engine(options).await {
        Ok(checked) => checked,
        Err(BridgeError::EngineCheck {
            problem, printed, ..
        }) => {
            say(out, format!("FAIL start: {problem}; {printed}"))?;
            say(
                out,
                "FAIL: the engine does not start as its protocol needs (see docs/bots.md)",
            )?;
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let hello_games = engine.adapter.engine_games();
    engine.stop().await;
    match (&name, options.protocol) {
        (Some(name), _) => say(
            out,
            format!("ok   start: it runs and says its name is {name:?}"),
        )?,
        (None, EngineProtocol::Sau) => say(
            out,
            "ok   start: it stays up (it does not answer `name`, which is allowed)",
        )?,
        (None, _) => say(out, "ok   start: it runs")?,
    }
    let game = match options
        .games
        .clone()
        .or(hello_games)
        .or(options.protocol.default_games())
        .and_then(|games| games.into_iter().next())
    {
        Some(game) => game,
        None => {
            say(out, "FAIL start: the engine offers no game")?;
            return Ok(false);
        }
    };
    let game_id: GameId = match game.parse() {
        Ok(id) => id,
        Err(e) => {
            say(out, format!("FAIL start: {e}"))?;
            return Ok(false);
        }
    };
    let mut tally = Tally::default();
    for (number, side) in [(1u64, Side::First), (2, Side::Second)] {
        let game = CheckGame {
            game_id,
            side,
            number,
            move_limit_ms,
        };
        play_check_game(options, &game, &mut tally, out).await?;
    }
    if tally.chatter > 0 {
        say(
            out,
            format!(
                "note: {} other lines it printed were ignored (that is fine: only protocol lines count)",
                tally.chatter
            ),
        )?;
    }
    if tally.problems == 0 {
        say(
            out,
            format!(
                "PASS: {} moves, all in the protocol and legal; next, connect it to a server",
                tally.engine_moves
            ),
        )?;
    } else {
        say(
            out,
            format!(
                "FAIL: {} problem(s); each is explained in docs/bots.md",
                tally.problems
            ),
        )?;
    }
    Ok(tally.problems == 0)
}

fn say(out: &mut (dyn Write + Send), line: impl AsRef<str>) -> Result<(), BridgeError> {
    writeln!(out, "{}", line.as_ref()).map_err(BridgeError::Report)?;
    out.flush().map_err(BridgeError::Report)
}

/// Which check game to play.
struct CheckGame {
    game_id: GameId,
    /// The engine's side.
    side: Side,
    number: u64,
    move_limit_ms: u64,
}

/// One check game: the engine plays `side`, the random engine the other; every engine move is
/// reported. A problem ends the game.
async fn play_check_game(
    options: &ConnectOptions,
    check: &CheckGame,
    tally: &mut Tally,
    out: &mut (dyn Write + Send),
) -> Result<(), BridgeError> {
    let CheckGame {
        game_id,
        side,
        number,
        move_limit_ms,
    } = *check;
    let rules = serde_json::json!({});
    let Ok(mut game) = new_game(game_id, &rules) else {
        return Ok(());
    };
    let mut random = match new_engine("random", game_id, &rules, &serde_json::json!({}), number) {
        Ok(random) => Some(random),
        Err(e) => {
            say(out, format!("FAIL game {number}: {e}"))?;
            tally.problems += 1;
            return Ok(());
        }
    };
    let match_id = format!("check-{number}");
    say(
        out,
        format!(
            "game {number}: {game_id}, the engine plays {} ({})",
            side.as_str(),
            game_id.colour_letter(side)
        ),
    )?;
    let mut engine = match Engine::start(options, Some(OPPONENT)) {
        Ok(engine) => engine,
        Err(e) => {
            say(out, format!("FAIL game {number}: {e}"))?;
            tally.problems += 1;
            return Ok(());
        }
    };
    let clock = ClockSpec {
        initial_ms: move_limit_ms.saturating_mul(CHECK_PLIES as u64),
        increment_ms: 0,
        move_limit_ms: Some(move_limit_ms),
    };
    let start = RefereeMessage::Start {
        match_id: match_id.clone(),
        game: game_id.as_str().into(),
        side: side.as_str().into(),
        colour: game_id.colour_letter(side).to_string(),
        opponent: OPPONENT.into(),
        rules: game.rules_json(),
        clock,
        moves: Vec::new(),
    };
    let mut moves: Vec<String> = Vec::new();
    let mut since: Vec<String> = Vec::new();
    let mut problem = tell(&mut engine, &start).err();
    let mut resigned = false;
    while problem.is_none() && game.outcome().is_none() && moves.len() < CHECK_PLIES {
        let ply = moves.len() + 1;
        if game.turn() != side {
            let Some(mut engine_rs) = random.take() else {
                break;
            };
            let history = moves.clone();
            let chosen = tokio::task::spawn_blocking(move || {
                let abort = AtomicBool::new(false);
                let request = SearchRequest {
                    moves: &history,
                    clock: ClockView::unlimited(),
                    abort: &abort,
                };
                let mv = engine_rs.choose_move(&request);
                (engine_rs, mv)
            })
            .await;
            let Ok((engine_rs, Ok(mv))) = chosen else {
                break;
            };
            random = Some(engine_rs);
            match game.play_text(&mv) {
                Ok(played) => {
                    say(out, format!("ply {ply:>2}  random  {played}"))?;
                    since.push(played.clone());
                    moves.push(played);
                }
                Err(_) => break,
            }
            continue;
        }
        let turn = RefereeMessage::Turn {
            match_id: match_id.clone(),
            moves: std::mem::take(&mut since),
            ply: moves.len() as u32,
            clock: Clocks::new(clock).turn_clock(side, Duration::ZERO),
        };
        if let Err(why) = tell(&mut engine, &turn) {
            problem = Some(why);
            break;
        }
        let asked = Instant::now();
        match engine_answer(&mut engine, move_limit_ms, tally).await {
            Answer::Move(mv) => {
                let took = asked.elapsed();
                tally.engine_moves += 1;
                match game.play_text(&mv) {
                    Ok(played) => {
                        say(
                            out,
                            format!("ply {ply:>2}  engine  {played}  ok ({})", seconds(took)),
                        )?;
                        moves.push(played);
                    }
                    Err(e) => problem = Some(format!("ply {ply}: illegal move: {e}")),
                }
            }
            Answer::Resign => {
                say(
                    out,
                    format!(
                        "ply {ply:>2}  engine  resigns (allowed; against random it usually means \
                         the engine misread the position)"
                    ),
                )?;
                resigned = true;
                break;
            }
            Answer::Problem(why) => problem = Some(format!("ply {ply}: {why}")),
        }
    }
    let (result, reason) = match (game.outcome(), resigned) {
        (Some(o), _) => (BotResult::for_side(o.winner, side), o.reason),
        (None, true) => (BotResult::Loss, EndReason::Resign),
        (None, false) => (BotResult::Draw, EndReason::Stopped),
    };
    let end = RefereeMessage::End {
        match_id,
        result,
        reason,
        moves: moves.clone(),
    };
    if problem.is_none() {
        problem = tell(&mut engine, &end).err();
    }
    engine.stop().await;
    match problem {
        Some(why) => {
            tally.problems += 1;
            say(out, format!("FAIL {why}"))?;
        }
        None if game.outcome().is_some() || resigned => say(
            out,
            format!(
                "game {number}: over after {} plies, {result} by {reason}",
                moves.len()
            ),
        )?,
        None => say(
            out,
            format!(
                "game {number}: stopped after {} plies (a short game)",
                moves.len()
            ),
        )?,
    }
    Ok(())
}

/// Hands a referee message to the engine's adapter and sends what it says to the engine.
fn tell(engine: &mut Engine, msg: &RefereeMessage) -> Result<(), String> {
    let mut actions = Vec::new();
    engine
        .adapter
        .on_referee(msg, &msg.to_line(), Instant::now(), &mut actions)
        .map_err(|f| f.0)?;
    let to_referee = engine.send_lines(actions).map_err(|f| f.0)?;
    if to_referee.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the engine answered before it was asked to move: {}",
            to_referee[0].to_line()
        ))
    }
}

enum Answer {
    Move(String),
    Resign,
    Problem(String),
}

/// Waits for the engine's move (its adapter's deadline applies), reporting nothing but counting
/// chatter; a chatter line that looks like a botched move is a problem.
async fn engine_answer(engine: &mut Engine, move_limit_ms: u64, tally: &mut Tally) -> Answer {
    loop {
        let mut actions = Vec::new();
        let deadline = engine.deadline();
        let news = tokio::select! {
            news = engine.next_news(&mut actions) => news,
            _ = super::sleep_until_opt(deadline) => {
                return Answer::Problem(match engine.exited_at {
                    Some(_) => "the engine exited".to_string(),
                    None => format!(
                        "no move within {} (the move limit of this check; an engine that thinks \
                         longer by default may only need a larger --move-limit)",
                        seconds(Duration::from_millis(move_limit_ms))
                    ),
                });
            }
        };
        match news {
            Err(fault) => return Answer::Problem(fault.0),
            Ok(EngineNews::Chatter(line)) => {
                tally.chatter += 1;
                if engine.protocol == EngineProtocol::Sau && looks_like_a_move(&line) {
                    return Answer::Problem(format!(
                        "the engine printed {:?}, which is not a move line: a move is \
                         exactly `move XY` or `move XYXY`, letters A-S",
                        peer_message(&line)
                    ));
                }
            }
            Ok(EngineNews::Exited(_) | EngineNews::Protocol) => {}
        }
        let to_referee = match engine.send_lines(actions) {
            Ok(messages) => messages,
            Err(fault) => return Answer::Problem(fault.0),
        };
        if let Some(msg) = to_referee.into_iter().next() {
            return match msg {
                BotMessage::Move { mv, .. } => Answer::Move(mv),
                BotMessage::Resign { .. } => Answer::Resign,
                other => Answer::Problem(format!("the engine sent {}", other.to_line())),
            };
        }
    }
}

/// A sau chatter line that was probably meant as a move: two words, the first `move` in any
/// case (`move J10`, `Move JJ`, `move jjk`).
fn looks_like_a_move(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.len() == 2 && words[0].eq_ignore_ascii_case("move")
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

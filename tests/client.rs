//! The bot client against a scripted fake referee over real TCP, and the `arena engines` listing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arena::bot_connection::HandshakeError;
use arena::client::{run_bot, run_bot_with_factory, BotClientConfig, ClientError, EngineFactory};
use arena::engine::{Engine, EngineError, SearchRequest};
use arena::game::GameId;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Generous bound for anything the test waits on; a hang fails the test instead of blocking CI.
const WAIT: Duration = Duration::from_secs(20);

/// The referee side of one connection, driven line by line by the test.
struct FakeReferee {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl FakeReferee {
    async fn accept(listener: &TcpListener) -> FakeReferee {
        let (stream, _) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .expect("the client never connected")
            .unwrap();
        let (read, write) = stream.into_split();
        FakeReferee {
            lines: BufReader::new(read).lines(),
            write,
        }
    }

    /// Accepts the client, reads its hello, answers welcome; returns the hello.
    async fn handshake(listener: &TcpListener) -> (FakeReferee, Value) {
        let mut referee = FakeReferee::accept(listener).await;
        let hello = referee.recv().await;
        assert_eq!(hello["type"], "hello");
        referee
            .send(
                json!({"type": "welcome", "protocol": 1, "name": hello["name"], "server": "fake"}),
            )
            .await;
        (referee, hello)
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("no message from the client in time")
            .unwrap()
            .expect("the client closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("client sent {line:?}: {e}"))
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    async fn expect_eof(&mut self) {
        let next = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the client did not close the connection");
        assert!(matches!(next, Ok(None)), "expected EOF, got {next:?}");
    }

    async fn start(&mut self, match_id: &str, game: &str, moves: Value, move_limit_ms: Value) {
        self.send(json!({
            "type": "start", "match": match_id, "game": game, "side": "first", "colour": "B",
            "opponent": "fake", "rules": {},
            "clock": {"initial_ms": 600000, "increment_ms": 0, "move_limit_ms": move_limit_ms},
            "moves": moves,
        }))
        .await;
    }

    async fn turn(&mut self, match_id: &str, moves: Value, ply: usize) {
        self.send(json!({
            "type": "turn", "match": match_id, "moves": moves, "ply": ply,
            "clock": {"you_ms": 600000, "opponent_ms": 600000},
        }))
        .await;
    }
}

async fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    (listener, addr)
}

fn config(server: &str, games: Vec<GameId>, max_games: u32) -> BotClientConfig {
    BotClientConfig {
        server: server.to_string(),
        name: "tester".into(),
        token: "s3cret".into(),
        engine: "random".into(),
        engine_options: Value::Null,
        games,
        max_games,
        reconnect_for: Duration::ZERO,
        seed: 0,
    }
}

/// What the scripted engine does when asked for a move.
#[derive(Clone)]
enum Script {
    /// Answers `m<number of moves so far>` at once, recording the move list it was given.
    Count(Arc<Mutex<Vec<Vec<String>>>>),
    /// Waits until `release` is set (or the search is aborted), then answers like `Count`.
    /// `thinking` counts searches in progress.
    Hold {
        release: Arc<AtomicBool>,
        thinking: Arc<AtomicUsize>,
        saw_abort: Arc<AtomicBool>,
    },
    /// Finds no move.
    Fail,
    /// Panics (a bug in an engine must cost only its match).
    Panic,
}

struct ScriptedEngine(Script);

impl Engine for ScriptedEngine {
    fn choose_move(&mut self, request: &SearchRequest<'_>) -> Result<String, EngineError> {
        let answer = format!("m{}", request.moves.len());
        match &self.0 {
            Script::Count(log) => {
                log.lock().unwrap().push(request.moves.to_vec());
                Ok(answer)
            }
            Script::Hold {
                release,
                thinking,
                saw_abort,
            } => {
                thinking.fetch_add(1, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    if request.abort.load(Ordering::Relaxed) {
                        saw_abort.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                thinking.fetch_sub(1, Ordering::SeqCst);
                Ok(answer)
            }
            Script::Fail => Err(EngineError::NoMove),
            Script::Panic => panic!("scripted engine bug"),
        }
    }
}

/// Polls `condition` until it holds; fails the test after `WAIT`.
async fn wait_until(condition: impl Fn() -> bool, what: &str) {
    let waited = tokio::time::timeout(WAIT, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}");
}

/// The flags a `Hold` engine shares with its test. Dropping them sets the release flag, so that
/// a failing test does not leave a blocking thread spinning (the test runtime waits for blocking
/// threads when it shuts down).
struct HoldFlags {
    release: Arc<AtomicBool>,
    thinking: Arc<AtomicUsize>,
    saw_abort: Arc<AtomicBool>,
}

impl HoldFlags {
    fn new() -> HoldFlags {
        HoldFlags {
            release: Arc::new(AtomicBool::new(false)),
            thinking: Arc::new(AtomicUsize::new(0)),
            saw_abort: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A `Hold` script on these flags.
    fn script(&self) -> Script {
        Script::Hold {
            release: self.release.clone(),
            thinking: self.thinking.clone(),
            saw_abort: self.saw_abort.clone(),
        }
    }
}

impl Drop for HoldFlags {
    fn drop(&mut self) {
        self.release.store(true, Ordering::SeqCst);
    }
}

fn scripted(script: Script) -> EngineFactory {
    Arc::new(move |_game, _rules, _seed| {
        Ok(Box::new(ScriptedEngine(script.clone())) as Box<dyn Engine>)
    })
}

/// A bot client whose engine follows `script`, connected to a fake referee and welcomed: the
/// client's task, its shutdown token, the referee and the client's hello.
async fn connected_bot(
    games: Vec<GameId>,
    max_games: u32,
    script: Script,
) -> (
    JoinHandle<Result<(), ClientError>>,
    CancellationToken,
    FakeReferee,
    Value,
) {
    let (listener, addr) = listener().await;
    let shutdown = CancellationToken::new();
    let bot = tokio::spawn(run_bot_with_factory(
        config(&addr, games, max_games),
        scripted(script),
        shutdown.clone(),
    ));
    let (referee, hello) = FakeReferee::handshake(&listener).await;
    (bot, shutdown, referee, hello)
}

async fn finished(handle: JoinHandle<Result<(), ClientError>>) -> Result<(), ClientError> {
    tokio::time::timeout(WAIT, handle)
        .await
        .expect("the client did not stop")
        .unwrap()
}

#[tokio::test]
async fn hello_carries_the_configuration_and_a_refusal_is_reported() {
    let (listener, addr) = listener().await;
    let shutdown = CancellationToken::new();
    let bot = tokio::spawn(run_bot(
        config(&addr, vec![GameId::Hex, GameId::Jiu], 3),
        shutdown,
    ));
    let mut referee = FakeReferee::accept(&listener).await;
    let hello = referee.recv().await;
    assert_eq!(
        hello,
        json!({"type": "hello", "protocol": 1, "name": "tester", "token": "s3cret",
               "games": ["hex", "jiu"], "max_games": 3, "engine": "arena/random"})
    );
    referee
        .send(json!({"type": "error", "code": "auth_failed", "message": "unknown bot or wrong token"}))
        .await;
    match finished(bot).await {
        Err(ClientError::Handshake(HandshakeError::Refused(message))) => {
            assert!(message.contains("unknown bot or wrong token"), "{message}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn the_referees_text_in_an_error_is_shown_escaped() {
    let forged = "no\n2026-12-02 INFO forged line\u{1b}[31m";
    // Refused at login.
    let (listener, addr) = listener().await;
    let bot = tokio::spawn(run_bot(
        config(&addr, vec![GameId::Hex], 1),
        CancellationToken::new(),
    ));
    let mut referee = FakeReferee::accept(&listener).await;
    referee.recv().await;
    referee
        .send(json!({"type": "error", "code": "auth_failed", "message": forged}))
        .await;
    let refused = finished(bot).await.expect_err("the refusal is an error");
    let shown = refused.to_string();
    assert!(matches!(
        refused,
        ClientError::Handshake(HandshakeError::Refused(_))
    ));
    assert!(
        shown.contains(r"no\n2026-12-02 INFO forged line\u{1b}[31m"),
        "{shown}"
    );
    assert!(
        !shown.contains('\n') && !shown.contains('\u{1b}'),
        "{shown}"
    );

    // The league's end told during a session, as `arena bot` logs it.
    let bot = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "bot", "--server", &addr, "--name", "tester", "--token", "s3cret",
        ])
        .args(["--engine", "random", "--games", "hex"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (mut referee, _hello) = FakeReferee::handshake(&listener).await;
    // A match whose id, game and opponent carry the forged text: logged as it starts (of an
    // unknown game) and ends.
    referee
        .send(json!({
            "type": "start", "match": forged, "game": forged, "side": "first", "colour": "B",
            "opponent": forged, "rules": {},
            "clock": {"initial_ms": 600000, "increment_ms": 0, "move_limit_ms": null},
            "moves": [],
        }))
        .await;
    referee
        .send(json!({"type": "end", "match": forged, "result": "draw", "reason": "board_full", "moves": []}))
        .await;
    referee
        .send(json!({"type": "error", "code": "league_over", "message": forged}))
        .await;
    let out = tokio::time::timeout(WAIT, bot.wait_with_output())
        .await
        .expect("arena bot did not stop at the league's end")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let over = stderr
        .lines()
        .find(|l| l.contains("stopping"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        over.contains(r"no\n2026-12-02 INFO forged line\u{1b}[31m"),
        "{over}"
    );
    assert!(
        !stderr.lines().any(|l| l.starts_with("2026-12-02 INFO")),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    assert!(
        stderr.contains(r"match_id=no\n2026-12-02 INFO forged line\u{1b}[31m"),
        "the match's lines are logged, escaped: {stderr}"
    );
}

#[tokio::test]
async fn empty_game_list_offers_every_game_of_the_engine() {
    let (bot, shutdown, mut referee, hello) = connected_bot(vec![], 1, Script::Fail).await;
    assert_eq!(
        hello["games"],
        json!(["connect6", "hex", "surakarta", "jiu"])
    );
    // max_games 1 is the protocol default and may be left out.
    assert!(hello.get("max_games").is_none_or(|m| m == 1), "{hello}");
    shutdown.cancel();
    finished(bot).await.unwrap();
    referee.expect_eof().await;
}

#[tokio::test]
async fn turns_are_answered_with_the_move_list_kept_in_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (bot, _shutdown, mut referee, _) =
        connected_bot(vec![GameId::Hex], 1, Script::Count(log.clone())).await;
    // A resumed match: two moves already played.
    referee
        .start("g1", "hex", json!(["A1", "B2"]), Value::Null)
        .await;
    referee.turn("g1", json!([]), 2).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "move", "match": "g1", "move": "m2", "ply": 2})
    );
    referee.turn("g1", json!(["C3"]), 4).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "move", "match": "g1", "move": "m4", "ply": 4})
    );
    referee
        .send(json!({"type": "end", "match": "g1", "result": "win", "reason": "connection", "moves": []}))
        .await;
    // An error from the referee is logged and the client carries on.
    referee
        .send(json!({"type": "error", "code": "unknown_match", "message": "no such match"}))
        .await;
    referee.send(json!({"type": "ping", "id": 5})).await;
    assert_eq!(referee.recv().await, json!({"type": "pong", "id": 5}));
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            vec!["A1".to_string(), "B2".into()],
            vec!["A1".to_string(), "B2".into(), "m2".into(), "C3".into()],
        ]
    );
    // The referee closes with no match running: a clean end.
    drop(referee);
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn ping_is_answered_while_the_engine_thinks() {
    let flags = HoldFlags::new();
    let (bot, shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, flags.script()).await;
    referee.start("g1", "hex", json!([]), Value::Null).await;
    referee.turn("g1", json!([]), 0).await;
    referee.send(json!({"type": "ping", "id": 77})).await;
    // The engine cannot answer before it is released, so the pong comes first.
    assert_eq!(referee.recv().await, json!({"type": "pong", "id": 77}));
    wait_until(
        || flags.thinking.load(Ordering::SeqCst) == 1,
        "the search never started",
    )
    .await;
    flags.release.store(true, Ordering::SeqCst);
    assert_eq!(
        referee.recv().await,
        json!({"type": "move", "match": "g1", "move": "m0", "ply": 0})
    );
    assert!(!flags.saw_abort.load(Ordering::SeqCst));
    shutdown.cancel();
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn two_matches_think_at_once_and_both_are_answered() {
    let flags = HoldFlags::new();
    let (bot, shutdown, mut referee, hello) =
        connected_bot(vec![GameId::Hex, GameId::Connect6], 2, flags.script()).await;
    assert_eq!(hello["max_games"], 2);
    referee.start("a", "hex", json!([]), Value::Null).await;
    referee
        .start("b", "connect6", json!(["J10"]), Value::Null)
        .await;
    referee.turn("a", json!([]), 0).await;
    referee.turn("b", json!([]), 1).await;
    // Both searches must be running at the same time before either is released.
    wait_until(
        || flags.thinking.load(Ordering::SeqCst) == 2,
        "the two searches never ran at once",
    )
    .await;
    flags.release.store(true, Ordering::SeqCst);
    let mut answers = vec![referee.recv().await, referee.recv().await];
    answers.sort_by_key(|m| m["match"].as_str().map(String::from));
    assert_eq!(
        answers,
        vec![
            json!({"type": "move", "match": "a", "move": "m0", "ply": 0}),
            json!({"type": "move", "match": "b", "move": "m1", "ply": 1}),
        ]
    );
    shutdown.cancel();
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn the_hard_limit_aborts_a_long_search_and_the_move_is_still_sent() {
    // Not released while the test runs: only the abort flag ends this search.
    let flags = HoldFlags::new();
    let (bot, shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, flags.script()).await;
    referee.start("g1", "hex", json!([]), json!(400)).await;
    let asked = std::time::Instant::now();
    referee.turn("g1", json!([]), 0).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "move", "match": "g1", "move": "m0", "ply": 0})
    );
    println!(
        "move after {} ms under a 400 ms per-move limit",
        asked.elapsed().as_millis()
    );
    assert!(flags.saw_abort.load(Ordering::SeqCst));
    shutdown.cancel();
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn an_engine_without_a_move_resigns_that_match() {
    let (bot, shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, Script::Fail).await;
    referee.start("g1", "hex", json!([]), Value::Null).await;
    referee.turn("g1", json!([]), 0).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "resign", "match": "g1"})
    );
    // A game the client does not know is resigned too, without asking the engine.
    referee.start("g2", "chess", json!([]), Value::Null).await;
    referee.turn("g2", json!([]), 0).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "resign", "match": "g2"})
    );
    shutdown.cancel();
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn a_panicking_engine_resigns_its_match_and_garbage_lines_are_skipped() {
    let (bot, shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, Script::Panic).await;
    referee.write.write_all(b"not json\n").await.unwrap();
    let long_line = vec![b'x'; arena::protocol::MAX_LINE_BYTES + 10];
    referee.write.write_all(&long_line).await.unwrap();
    referee.write.write_all(b"\n\xff\xfe\n").await.unwrap();
    referee.send(json!({"type": "dance"})).await;
    referee.start("g1", "hex", json!([]), Value::Null).await;
    referee.turn("g1", json!([]), 0).await;
    assert_eq!(
        referee.recv().await,
        json!({"type": "resign", "match": "g1"})
    );
    referee.send(json!({"type": "ping", "id": 9})).await;
    assert_eq!(referee.recv().await, json!({"type": "pong", "id": 9}));
    shutdown.cancel();
    finished(bot).await.unwrap();
}

#[tokio::test]
async fn shutdown_ends_the_client_even_while_an_engine_thinks() {
    let flags = HoldFlags::new();
    let (bot, shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, flags.script()).await;
    referee.start("g1", "hex", json!([]), Value::Null).await;
    referee.turn("g1", json!([]), 0).await;
    wait_until(
        || flags.thinking.load(Ordering::SeqCst) == 1,
        "the search never started",
    )
    .await;
    shutdown.cancel();
    finished(bot).await.unwrap();
    referee.expect_eof().await;
    // The abandoned search was told to stop.
    wait_until(
        || flags.saw_abort.load(Ordering::SeqCst),
        "the engine was not aborted",
    )
    .await;
}

#[tokio::test]
async fn the_referee_closing_during_a_match_is_an_error() {
    let (bot, _shutdown, mut referee, _) = connected_bot(vec![GameId::Hex], 1, Script::Fail).await;
    referee.start("g1", "hex", json!([]), Value::Null).await;
    // Make sure the start was read before closing.
    referee.send(json!({"type": "ping", "id": 1})).await;
    assert_eq!(referee.recv().await["type"], "pong");
    drop(referee);
    assert!(matches!(
        finished(bot).await,
        Err(ClientError::ServerClosed(1))
    ));
}

#[tokio::test]
async fn no_referee_is_a_connect_error() {
    let (listener, addr) = listener().await;
    drop(listener);
    let result = run_bot(config(&addr, vec![], 1), CancellationToken::new()).await;
    assert!(
        matches!(
            result,
            Err(ClientError::Handshake(HandshakeError::Connect { .. }))
        ),
        "{result:?}"
    );
}

#[test]
fn engines_command_lists_random_with_its_games() {
    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .arg("engines")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let random = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("random"))
        .unwrap_or_else(|| panic!("no random engine in:\n{text}"));
    assert!(random.contains("connect6,hex,surakarta,jiu"), "{random}");

    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["engines", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let catalogue: Value = serde_json::from_slice(&output.stdout).unwrap();
    let random = catalogue
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "random")
        .unwrap();
    assert_eq!(
        random["games"],
        json!(["connect6", "hex", "surakarta", "jiu"])
    );
}

/// Plays one whole game of `game` between the `random` engine (through the client, as the
/// first side) and the fake referee (second side, always its first legal move), checking every
/// move the client sends against the real rules. Returns the longest think time seen and the
/// whole game's moves.
async fn play_a_game_against_the_referee(
    game: GameId,
    match_id: &str,
    move_limit_ms: u64,
) -> (Duration, Vec<String>) {
    let (listener, addr) = listener().await;
    let (bot, shutdown) = {
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(run_bot(config(&addr, vec![game], 1), shutdown.clone()));
        (handle, shutdown)
    };
    let (mut referee, _) = FakeReferee::handshake(&listener).await;
    let mut position = arena::game::new_game(game, &json!({})).unwrap();
    referee
        .start(match_id, game.as_str(), json!([]), json!(move_limit_ms))
        .await;
    let mut ply = 0;
    let mut unsent: Vec<String> = Vec::new();
    let mut longest = Duration::ZERO;
    let mut played = Vec::new();
    while position.outcome().is_none() {
        if position.turn() == arena::game::Side::First {
            let asked = std::time::Instant::now();
            referee
                .turn(match_id, json!(std::mem::take(&mut unsent)), ply)
                .await;
            let answer = referee.recv().await;
            longest = longest.max(asked.elapsed());
            assert_eq!(answer["type"], "move", "{answer}");
            assert_eq!(answer["match"], json!(match_id));
            let text = answer["move"].as_str().unwrap();
            if let Err(e) = position.play_text(text) {
                panic!("{game}: the client played {text:?} at ply {ply}: {e}");
            }
            played.push(text.to_string());
        } else {
            let reply = position.legal_move_texts().swap_remove(0);
            position.play_text(&reply).unwrap();
            played.push(reply.clone());
            unsent.push(reply);
        }
        ply += 1;
    }
    let outcome = position.outcome().unwrap();
    assert!(outcome.reason.is_board_result(), "{outcome:?}");
    referee
        .send(json!({"type": "end", "match": match_id, "result": "draw",
                     "reason": outcome.reason.as_str(), "moves": []}))
        .await;
    // The match is over, so the referee closing the connection is a clean end.
    drop(referee);
    finished(bot).await.unwrap();
    drop(shutdown);
    (longest, played)
}

#[tokio::test]
async fn the_random_engine_plays_whole_legal_games_in_every_game_within_a_short_move_limit() {
    let limit_ms = 300;
    for game in GameId::ALL {
        let (longest, _) = play_a_game_against_the_referee(game, "g-1", limit_ms).await;
        // Every move reached the referee before the per-move limit ran out (measured from
        // writing `turn` to reading the move, so it includes both sockets).
        assert!(
            longest < Duration::from_millis(limit_ms),
            "{game}: a move took {} ms under a {limit_ms} ms per-move limit",
            longest.as_millis()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_referee_that_never_answers_hello_times_out() {
    let (listener, addr) = listener().await;
    let bot = tokio::spawn(run_bot(config(&addr, vec![], 1), CancellationToken::new()));
    let mut referee = FakeReferee::accept(&listener).await;
    assert_eq!(referee.recv().await["type"], "hello");
    // No welcome: paused time runs on to the handshake timeout.
    match tokio::time::timeout(Duration::from_secs(60), bot).await {
        Ok(Ok(Err(ClientError::Handshake(HandshakeError::Timeout(waited))))) => {
            assert_eq!(waited, arena::client::HANDSHAKE_TIMEOUT)
        }
        other => panic!("expected a handshake timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn the_same_match_id_replays_the_same_game() {
    let (_, first) = play_a_game_against_the_referee(GameId::Hex, "r1-hex-3", 1000).await;
    let (_, again) = play_a_game_against_the_referee(GameId::Hex, "r1-hex-3", 1000).await;
    assert_eq!(first, again);
}

#[tokio::test]
async fn a_reconnect_sends_back_the_login_ticket_of_the_last_welcome() {
    let (listener, addr) = listener().await;
    let mut settings = config(&addr, vec![GameId::Hex], 1);
    settings.reconnect_for = Duration::from_secs(30);
    let shutdown = CancellationToken::new();
    let bot = tokio::spawn(run_bot(settings, shutdown.clone()));
    // The first hello has no ticket; the welcome gives one.
    let mut referee = FakeReferee::accept(&listener).await;
    let hello = referee.recv().await;
    assert_eq!(hello["type"], "hello");
    assert!(hello.get("ticket").is_none(), "{hello}");
    referee
        .send(json!({"type": "welcome", "protocol": 1, "name": "tester", "server": "fake", "ticket": "0123abcd"}))
        .await;
    referee.send(json!({"type": "ping", "id": 1})).await;
    assert_eq!(referee.recv().await["type"], "pong");
    // The referee goes away; the bot comes back with the ticket.
    drop(referee);
    let mut again = FakeReferee::accept(&listener).await;
    let hello = again.recv().await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["ticket"], "0123abcd", "{hello}");
    shutdown.cancel();
    let _ = finished(bot).await;
}

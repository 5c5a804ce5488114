//! `arena connect` through the real binary: a fake referee on 127.0.0.1:0 (using the library's
//! rules to check every move) plays scripted matches with the bridge and fake engines from
//! `tests/fixtures/bridge/` (json, GTP, and a Cloudict-like sau engine) or the example C engine
//! (sau); engines that crash, print garbage or hang must lose their game at once by `resign`, and
//! leave no process behind. Engines that print banners and chatter, need their own folder or spin
//! at the end of their input play as they are; engines that cannot start, exit at once or answer
//! `?` are refused before the bridge connects; `arena connect --check` judges a good and a broken
//! engine without a server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use arena::game::{new_game, AnyGame, EndReason, GameId, Side};
use arena::protocol::{
    parse_bot_line, BotMessage, BotResult, CappedLineCodec, ClockSpec, ErrorCode, Frame,
    RefereeMessage, TurnClock, MAX_LINE_BYTES,
};
use futures_util::{SinkExt, StreamExt};
use tokio::io::AsyncBufReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio_util::codec::Framed;

/// Upper bound for anything the bridge should do "at once"; far below the clocks used when a
/// test checks that a failure is noticed without waiting for the clock.
const WAIT: Duration = Duration::from_secs(20);
/// A clock so long that only a real failure can end a game in a test.
const LONG_CLOCK_MS: u64 = 600_000;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bridge")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

struct Referee {
    link: Framed<TcpStream, CappedLineCodec>,
    hello: BotMessage,
}

impl Referee {
    async fn recv(&mut self) -> BotMessage {
        loop {
            let frame = tokio::time::timeout(WAIT, self.link.next())
                .await
                .expect("the bridge said nothing in time")
                .expect("the bridge closed the connection")
                .expect("reading from the bridge failed");
            let Frame::Line(line) = frame else {
                panic!("bad frame from the bridge: {frame:?}");
            };
            match parse_bot_line(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}")) {
                BotMessage::Pong { .. } => continue,
                msg => return msg,
            }
        }
    }

    async fn send(&mut self, msg: RefereeMessage) {
        self.link.send(msg.to_line()).await.unwrap();
    }

    /// Sends a ping and returns the very next frame, unparsed (a pong is not skipped).
    async fn ping(&mut self, id: u64) -> Frame {
        self.send(RefereeMessage::Ping { id }).await;
        tokio::time::timeout(WAIT, self.link.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    }
}

/// Accepts the next client on `listener`, takes its hello and welcomes it as `name`.
async fn accept_client(listener: &TcpListener, name: &str) -> Referee {
    let (stream, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .expect("the client did not connect")
        .unwrap();
    let mut link = Framed::new(stream, CappedLineCodec::new(MAX_LINE_BYTES));
    let Some(Ok(Frame::Line(line))) = tokio::time::timeout(WAIT, link.next()).await.unwrap() else {
        panic!("no hello");
    };
    let hello = parse_bot_line(&line).unwrap();
    let mut referee = Referee { link, hello };
    referee
        .send(RefereeMessage::Welcome {
            protocol: 1,
            name: name.into(),
            server: "fake referee".into(),
            ticket: None,
        })
        .await;
    referee
}

/// Starts `arena connect` against a fresh listener, takes its hello and welcomes it.
async fn start_bridge(protocol: &str, extra: &[&str], engine: &[String]) -> (Child, Referee) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let bridge = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "connect", "--server", &addr, "--name", "bridged", "--token", "tok",
        ])
        .args(["--protocol", protocol])
        .args(extra)
        .arg("--")
        .args(engine)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let referee = accept_client(&listener, "bridged").await;
    (bridge, referee)
}

/// Starts the bridge on `tests/fixtures/bridge/json_engine.py` in `mode`, which keeps its pid
/// file and log in the returned directory.
async fn start_json_engine(mode: &str) -> (tempfile::TempDir, Child, Referee) {
    let dir = tempfile::tempdir().unwrap();
    let engine = python("json_engine.py", &[&dir_arg(&dir), mode]);
    let (bridge, referee) = start_bridge("json", &[], &engine).await;
    (dir, bridge, referee)
}

/// Closes the connection and waits for the bridge to exit; returns its stderr.
async fn finish(bridge: Child, referee: Referee) -> String {
    drop(referee);
    let output = tokio::time::timeout(WAIT, bridge.wait_with_output())
        .await
        .expect("the bridge did not exit after the referee closed")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "bridge failed: {stderr}");
    stderr
}

fn gone_or_zombie(pid: i32) -> bool {
    // SAFETY: signal 0 only checks whether the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.is_empty() || stat.contains(") Z ")
}

/// Waits until `pid` no longer exists at all (killed and reaped: no zombie).
async fn assert_reaped(pid: i32) {
    for _ in 0..100 {
        // SAFETY: as above.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("process {pid} still exists (alive or a zombie)");
}

/// Waits until `pid` is gone; a zombie counts as gone (an orphan is reaped by init, not us).
async fn assert_killed(pid: i32) {
    for _ in 0..100 {
        if gone_or_zombie(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("process {pid} is still running");
}

async fn read_pid(path: &Path) -> i32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no pid in {}", path.display());
}

/// How a refereed game ended.
#[derive(Debug)]
struct Played {
    moves: Vec<String>,
    /// The bridged side's moves.
    bridge_moves: Vec<String>,
    /// The game's own result, `None` if the bridge resigned.
    outcome: Option<arena::game::Outcome>,
}

/// A small deterministic generator for the referee's own moves.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// The referee's move: random empty point(s) for Connect6 and Hex.
fn opponent_move(game: &dyn AnyGame, rng: &mut Lcg) -> String {
    let mut empty = game.move_listing();
    let stones = if game.game() == GameId::Connect6 && !game.position_text().contains("stones=1") {
        2
    } else {
        1
    };
    let mut picked = Vec::new();
    for _ in 0..stones.min(empty.len()) {
        picked.push(empty.swap_remove(rng.below(empty.len())));
    }
    picked.join(",")
}

/// Who plays one side of a refereed game.
enum Player<'a> {
    /// A client on a link: it gets `start`, its `turn`s and `end`, and answers with moves.
    Link(&'a mut Referee),
    /// The referee itself, with random legal moves.
    Referee(Lcg),
}

/// The `start` message for `side` of a game of `game_id`.
fn start_message(
    match_id: &str,
    game_id: GameId,
    side: Side,
    opponent: &str,
    rules: serde_json::Value,
    you_ms: u64,
    moves: Vec<String>,
) -> RefereeMessage {
    RefereeMessage::Start {
        match_id: match_id.into(),
        game: game_id.as_str().into(),
        side: side.as_str().into(),
        colour: game_id.colour_letter(side).to_string(),
        opponent: opponent.into(),
        rules,
        clock: ClockSpec {
            initial_ms: you_ms,
            increment_ms: 0,
            move_limit_ms: None,
        },
        moves,
    }
}

/// A `turn` message with both clocks at `clock_ms`.
fn turn_message(match_id: &str, moves: Vec<String>, ply: usize, clock_ms: u64) -> RefereeMessage {
    RefereeMessage::Turn {
        match_id: match_id.into(),
        moves,
        ply: ply as u32,
        clock: TurnClock {
            you_ms: clock_ms,
            opponent_ms: clock_ms,
        },
    }
}

/// The fake referee's loop: `start` to every linked player (after `initial` moves), then a
/// `turn` to the linked player whose turn it is (with the moves since its last turn) or a random
/// move of the referee's own, every move checked by the library's rules, until the game ends or
/// a player resigns; then `end` to every linked player. Returns every move, each side's own
/// moves, and the outcome (`None` if a player resigned).
async fn referee_game(
    players: [Player<'_>; 2],
    match_id: &str,
    game_id: GameId,
    rules: &serde_json::Value,
    initial: &[&str],
    you_ms: u64,
) -> (Vec<String>, [Vec<String>; 2], Option<arena::game::Outcome>) {
    let mut players = players;
    let mut game = new_game(game_id, rules).unwrap();
    let mut moves: Vec<String> = Vec::new();
    for mv in initial {
        moves.push(game.play_text(mv).unwrap());
    }
    for side in [Side::First, Side::Second] {
        let opponent = match players[side.opponent().index()] {
            Player::Link(_) => "other",
            Player::Referee(_) => "referee",
        };
        if let Player::Link(link) = &mut players[side.index()] {
            let start = start_message(
                match_id,
                game_id,
                side,
                opponent,
                game.rules_json(),
                you_ms,
                moves.clone(),
            );
            link.send(start).await;
        }
    }
    let mut since: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut own: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut resigned = None;
    let outcome = loop {
        if let Some(outcome) = game.outcome() {
            break Some(outcome);
        }
        let side = game.turn();
        let mv = match &mut players[side.index()] {
            Player::Referee(rng) => opponent_move(game.as_ref(), rng),
            Player::Link(link) => {
                let seen = std::mem::take(&mut since[side.index()]);
                link.send(turn_message(match_id, seen, moves.len(), you_ms))
                    .await;
                match link.recv().await {
                    BotMessage::Move {
                        match_id: m, mv, ..
                    } => {
                        assert_eq!(m, match_id);
                        mv
                    }
                    BotMessage::Resign { match_id: m } => {
                        assert_eq!(m, match_id);
                        resigned = Some(side);
                        break None;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        };
        let played = game.play_text(&mv).unwrap_or_else(|e| {
            panic!("{game_id}: illegal move {mv} by {side:?} after {moves:?}: {e}")
        });
        since[side.opponent().index()].push(played.clone());
        own[side.index()].push(played.clone());
        moves.push(played);
    };
    for side in [Side::First, Side::Second] {
        let Player::Link(link) = &mut players[side.index()] else {
            continue;
        };
        let (result, reason) = match (&outcome, resigned) {
            (None, Some(r)) => (
                BotResult::for_side(Some(r.opponent()), side),
                EndReason::Resign,
            ),
            (None, None) => unreachable!("a game ends by its outcome or a resignation"),
            (Some(o), _) => (BotResult::for_side(o.winner, side), o.reason),
        };
        link.send(RefereeMessage::End {
            match_id: match_id.into(),
            result,
            reason,
            moves: moves.clone(),
        })
        .await;
    }
    (moves, own, outcome)
}

/// Plays one match with the bridge: `start` (after `initial` moves), then `turn`s for the
/// bridged side and the referee's own moves for the other, until the game ends or the bridge
/// resigns; then `end`.
async fn play_match(
    referee: &mut Referee,
    match_id: &str,
    game_id: GameId,
    rules: serde_json::Value,
    bridge_side: Side,
    initial: &[&str],
    you_ms: u64,
) -> Played {
    let rng = Player::Referee(Lcg(match_id.len() as u64 * 7919 + 17));
    let players = match bridge_side {
        Side::First => [Player::Link(referee), rng],
        Side::Second => [rng, Player::Link(referee)],
    };
    let (moves, mut own, outcome) =
        referee_game(players, match_id, game_id, &rules, initial, you_ms).await;
    Played {
        moves,
        bridge_moves: std::mem::take(&mut own[bridge_side.index()]),
        outcome,
    }
}

/// [`play_match`] of Hex with default rules from the start, on a long clock.
async fn play_hex(referee: &mut Referee, match_id: &str, bridge_side: Side) -> Played {
    play_match(
        referee,
        match_id,
        GameId::Hex,
        serde_json::json!({}),
        bridge_side,
        &[],
        LONG_CLOCK_MS,
    )
    .await
}

fn python(script: &str, args: &[&str]) -> Vec<String> {
    let mut v = vec!["python3".to_string(), fixture(script)];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

fn dir_arg(dir: &tempfile::TempDir) -> String {
    dir.path().to_string_lossy().into_owned()
}

/// What the referee says in an `error` reaches the bridge's log escaped and cut, so a referee
/// cannot forge log lines; the league's end is said as news, not as a warning.
#[tokio::test]
async fn the_referees_error_text_is_logged_escaped_and_the_leagues_end_as_news() {
    let (_dir, bridge, mut referee) = start_json_engine("normal").await;
    referee
        .send(RefereeMessage::Error {
            code: ErrorCode::BadJson,
            message: "line one\nWARN forged line\u{1b}[31m".into(),
            match_id: None,
        })
        .await;
    referee
        .send(RefereeMessage::Error {
            code: ErrorCode::LeagueOver,
            message: "the league is over".into(),
            match_id: None,
        })
        .await;
    let stderr = finish(bridge, referee).await;
    assert!(
        stderr.contains(r"the referee reports bad_json : line one\nWARN forged line\u{1b}[31m"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("WARN forged")),
        "{stderr}"
    );
    let over = stderr
        .lines()
        .find(|l| l.contains("the league is over"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(over.contains("INFO"), "{over}");
}

#[tokio::test]
async fn json_engine_is_relayed_for_whole_games_with_a_fresh_engine_each_match() {
    let (dir, bridge, mut referee) = start_json_engine("ok").await;
    // The games come from the engine's own hello; name and token from the command line.
    let BotMessage::Hello {
        name,
        token,
        games,
        max_games,
        ..
    } = &referee.hello
    else {
        panic!("{:?}", referee.hello)
    };
    assert_eq!((name.as_str(), token.as_str()), ("bridged", "tok"));
    assert_eq!(games, &["hex".to_string()]);
    assert_eq!(*max_games, 1);

    let pid_file = dir.path().join("pid");
    let first_pid = read_pid(&pid_file).await;
    let played = play_hex(&mut referee, "m1", Side::First).await;
    let outcome = played.outcome.expect("the json engine resigned");
    assert_eq!(outcome.reason.as_str(), "connection");
    assert_eq!(played.bridge_moves.first().map(String::as_str), Some("A1"));
    assert_reaped(first_pid).await;

    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let first_line = log.lines().next().unwrap();
    assert!(first_line.contains(r#""type":"welcome""#), "{first_line}");
    assert!(first_line.contains(r#""name":"bridged""#), "{first_line}");
    assert!(log.contains(r#""type":"start""#) && log.contains(r#""type":"end""#));
    assert!(!log.contains("ping"));

    // A second match gets a new engine process.
    std::fs::remove_file(&pid_file).unwrap();
    let played = play_hex(&mut referee, "m2", Side::Second).await;
    assert!(played.outcome.is_some());
    let second_pid = read_pid(&pid_file).await;
    assert_ne!(first_pid, second_pid);
    assert_reaped(second_pid).await;
    let stderr = finish(bridge, referee).await;
    assert!(stderr.contains("match m2 over"), "{stderr}");
}

#[tokio::test]
async fn pings_are_answered_by_the_bridge() {
    let (dir, bridge, mut referee) = start_json_engine("ok").await;
    let frame = referee.ping(42).await;
    let Frame::Line(line) = frame else {
        panic!("{frame:?}")
    };
    assert_eq!(parse_bot_line(&line).unwrap(), BotMessage::Pong { id: 42 });
    let pid = read_pid(&dir.path().join("pid")).await;
    finish(bridge, referee).await;
    assert_killed(pid).await;
}

/// The mapping the test expects, written independently of the bridge: contest (c, r) is GTP
/// (c, 12 − r), lower-case letters.
fn gtp_cell(contest: &str) -> String {
    let col = contest[..1].to_ascii_lowercase();
    let row: u32 = contest[1..].parse().unwrap();
    format!("{col}{}", 12 - row)
}

#[tokio::test]
async fn gtp_engine_gets_mapped_commands_and_its_moves_are_mapped_back() {
    let dir = tempfile::tempdir().unwrap();
    let (bridge, mut referee) = start_bridge(
        "gtp",
        &["--init", "name", "--init", "no_such_command"],
        &python("gtp_engine.py", &[&dir_arg(&dir)]),
    )
    .await;
    let BotMessage::Hello { games, .. } = &referee.hello else {
        panic!()
    };
    assert_eq!(games, &["hex".to_string()]);

    // Bridge second (GTP white): the referee's Red moves arrive as `play b`.
    let pid_file = dir.path().join("pid");
    let played = play_hex(&mut referee, "g1", Side::Second).await;
    assert!(played.outcome.is_some(), "the GTP engine resigned");
    assert_reaped(read_pid(&pid_file).await).await;
    std::fs::remove_file(&pid_file).unwrap();
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let all: Vec<&str> = log.lines().collect();
    // First the check before connecting (the init lines, then name, protocol_version and
    // boardsize, then quit), then the match's own engine.
    let quit = all.iter().position(|c| *c == "quit").unwrap();
    assert_eq!(
        &all[..=quit],
        [
            "name",
            "no_such_command",
            "name",
            "protocol_version",
            "boardsize 11",
            "quit"
        ]
    );
    let commands = &all[quit + 1..];
    assert_eq!(
        &commands[..4],
        ["name", "no_such_command", "boardsize 11", "clear_board"]
    );
    // GTP genmove order starts at a1, the top-left corner: contest A11.
    assert_eq!(played.bridge_moves[0], "A11");
    assert_eq!(played.bridge_moves.get(1).map(String::as_str), Some("B11"));
    let plays: Vec<String> = commands
        .iter()
        .filter(|c| c.starts_with("play "))
        .map(|c| c.to_string())
        .collect();
    let expected: Vec<String> = played
        .moves
        .iter()
        .step_by(2)
        .map(|m| format!("play b {}", gtp_cell(m)))
        .collect();
    // The referee's last move is never sent when it ends the game.
    assert!(plays.len() + 1 >= expected.len(), "{plays:?}");
    assert_eq!(plays[..], expected[..plays.len()]);
    assert!(
        commands
            .iter()
            .filter(|c| c.starts_with("genmove w"))
            .count()
            >= 5
    );
    assert_eq!(commands.last(), Some(&"quit"));

    // Resuming after a swap: the position is replayed, the swap as swap-pieces.
    let played = play_match(
        &mut referee,
        "g2",
        GameId::Hex,
        serde_json::json!({"swap": true}),
        Side::First,
        &["C2", "swap"],
        LONG_CLOCK_MS,
    )
    .await;
    assert!(played.outcome.is_some(), "the GTP engine resigned");
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert!(
        log.contains("play b c10\nplay w swap-pieces\ngenmove b\n"),
        "{log}"
    );
    finish(bridge, referee).await;
}

fn build_sau_engine(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("bots/c/connect6_sau.c");
    let binary = dir.join("connect6_sau");
    let status = std::process::Command::new("cc")
        .args(["-O2", "-std=c99", "-Wall", "-Werror", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("cc is needed to build bots/c/connect6_sau.c");
    assert!(status.success(), "connect6_sau.c does not compile");
    binary
}

#[tokio::test]
async fn sau_engine_plays_whole_connect6_games_as_black_and_white() {
    let dir = tempfile::tempdir().unwrap();
    let engine = build_sau_engine(dir.path());
    let (bridge, mut referee) =
        start_bridge("sau", &[], &[engine.to_string_lossy().into_owned()]).await;
    let BotMessage::Hello { games, .. } = &referee.hello else {
        panic!()
    };
    assert_eq!(games, &["connect6".to_string()]);
    // From the start, as both sides; then from openings (or a game resumed mid-way), set up
    // with `black`/`white` and `next`: the engine plays on from the position, as either side.
    let empty: &[&str] = &[];
    for (id, side, opening) in [
        ("c1", Side::First, empty),
        ("c2", Side::Second, empty),
        ("c3", Side::Second, &["J10", "A1,A2", "S19,S18"][..]),
        ("c4", Side::First, &["J10", "A1,A2"][..]),
        ("c5", Side::First, &["J10", "A1,A2", "S19,S18"][..]),
    ] {
        let played = play_match(
            &mut referee,
            id,
            GameId::Connect6,
            serde_json::json!({}),
            side,
            opening,
            LONG_CLOCK_MS,
        )
        .await;
        let outcome = played.outcome.expect("the sau engine resigned");
        assert!(outcome.reason.is_board_result(), "{id}: {outcome:?}");
        assert!(
            !played.bridge_moves.is_empty(),
            "{id}: the engine never moved"
        );
        assert_eq!(&played.moves[..opening.len()], opening, "{id}");
        if side == Side::First && opening.is_empty() {
            // Black's opening is one stone, the engine's centre: J10 (sau `JJ`).
            assert_eq!(played.bridge_moves[0], "J10");
        }
        println!("{id}: {} moves, {outcome:?}", played.moves.len());
    }
    finish(bridge, referee).await;
}

/// A json engine that fails on its first turn: the bridge resigns at once, kills the engine
/// (and what it started), says why, and keeps serving the connection.
async fn failing_engine_resigns(mode: &str, you_ms: u64, why: &str) {
    let (dir, bridge, mut referee) = start_json_engine(mode).await;
    let pid = read_pid(&dir.path().join("pid")).await;
    let played = play_match(
        &mut referee,
        "f1",
        GameId::Hex,
        serde_json::json!({}),
        Side::First,
        &[],
        you_ms,
    )
    .await;
    assert!(played.outcome.is_none(), "expected a resignation");
    assert_reaped(pid).await;
    if mode == "hang" {
        let grandchild = read_pid(&dir.path().join("grandchild")).await;
        assert_killed(grandchild).await;
    }
    // Still connected and answering.
    let frame = referee.ping(7).await;
    assert_eq!(frame, Frame::Line(r#"{"type":"pong","id":7}"#.into()));
    let stderr = finish(bridge, referee).await;
    assert!(stderr.contains(why), "stderr lacks {why:?}: {stderr}");
}

#[tokio::test]
async fn crashing_engine_resigns_without_waiting_for_the_clock() {
    failing_engine_resigns("crash", LONG_CLOCK_MS, "engine failed in match f1").await;
}

#[tokio::test]
async fn garbage_printing_engine_resigns() {
    failing_engine_resigns("garbage", LONG_CLOCK_MS, "this is not json").await;
}

#[tokio::test]
async fn hanging_engine_resigns_when_its_clock_runs_out_and_its_group_is_killed() {
    failing_engine_resigns("hang", 1_000, "did not answer in time").await;
}

/// Runs `arena connect` on an engine that fails its start check: it must exit non-zero without
/// ever connecting, naming the command. Returns its stderr.
async fn refused_before_connecting(protocol: &str, extra: &[&str], engine: &[String]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "connect", "--server", &addr, "--name", "refused", "--token", "tok",
        ])
        .args(["--protocol", protocol])
        .args(extra)
        .arg("--")
        .args(engine)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT, output)
        .await
        .expect("the bridge did not give up")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stderr}");
    // The bridge has exited: had it connected, its hello would be waiting. (Other tests' bots
    // that reconnect may reach this port once it is reused; they have other names.)
    while let Ok(Ok((stream, _))) =
        tokio::time::timeout(Duration::from_millis(200), listener.accept()).await
    {
        let mut link = Framed::new(stream, CappedLineCodec::new(MAX_LINE_BYTES));
        if let Ok(Some(Ok(Frame::Line(line)))) =
            tokio::time::timeout(Duration::from_millis(500), link.next()).await
        {
            assert!(
                !line.contains(r#""name":"refused""#),
                "the bridge connected although its engine failed the check"
            );
        }
    }
    assert!(stderr.contains("failed its start check"), "{stderr}");
    assert!(stderr.contains(&engine.join(" ")), "{stderr}");
    stderr
}

#[tokio::test]
async fn an_engine_that_cannot_start_is_refused_before_connecting() {
    let stderr =
        refused_before_connecting("gtp", &[], &["/nonexistent/engine-binary".to_string()]).await;
    assert!(stderr.contains("cannot start engine"), "{stderr}");
}

#[tokio::test]
async fn an_engine_that_exits_at_once_is_refused_quoting_what_it_printed() {
    let dir = sau_folder();
    let stderr = refused_before_connecting(
        "sau",
        &["--cwd", &dir_arg(&dir)],
        &python("sau_engine.py", &["exit"]),
    )
    .await;
    assert!(
        stderr.contains("On help for GameEngine FakeDict"),
        "{stderr}"
    );
}

#[tokio::test]
async fn an_engine_that_needs_its_folder_is_refused_without_it() {
    let stderr = refused_before_connecting("sau", &[], &python("sau_engine.py", &[])).await;
    assert!(stderr.contains("Can't open patterns.in"), "{stderr}");
}

#[tokio::test]
async fn a_gtp_engine_that_answers_question_marks_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = refused_before_connecting(
        "gtp",
        &[],
        &python("gtp_engine.py", &[&dir_arg(&dir), "refuse"]),
    )
    .await;
    assert!(stderr.contains("refused \"name\": not today"), "{stderr}");
    assert!(stderr.contains("`? not today`"), "{stderr}");
    let pid = read_pid(&dir.path().join("pid")).await;
    assert_reaped(pid).await;
}

/// A folder with the `patterns.in` the fake Cloudict needs.
fn sau_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("patterns.in"), "fake patterns\n").unwrap();
    dir
}

/// The fake Cloudict (banner, search chatter, `We loss!` without a newline, its own folder)
/// plays whole games as Black and White through `--protocol sau --cwd`; in `deaf` mode it also
/// ignores `quit` and spins at the end of its input, and is killed with its group.
async fn cloudict_like_engine_plays_whole_games(mode: &str) {
    let dir = sau_folder();
    let (bridge, mut referee) = start_bridge(
        "sau",
        &["--cwd", &dir_arg(&dir)],
        &python("sau_engine.py", &[mode]),
    )
    .await;
    for (id, side) in [("c1", Side::First), ("c2", Side::Second)] {
        let played = play_match(
            &mut referee,
            id,
            GameId::Connect6,
            serde_json::json!({}),
            side,
            &[],
            LONG_CLOCK_MS,
        )
        .await;
        let outcome = played.outcome.expect("the chatty sau engine resigned");
        assert!(outcome.reason.is_board_result(), "{outcome:?}");
        assert!(played.bridge_moves.len() >= 3, "{played:?}");
        // Each match's engine is gone once the match is over (quit, or killed if deaf).
        let pid = read_pid(&dir.path().join("pid")).await;
        assert_reaped(pid).await;
        std::fs::remove_file(dir.path().join("pid")).unwrap();
    }
    let stderr = finish(bridge, referee).await;
    assert!(!stderr.contains("resigning"), "{stderr}");
}

#[tokio::test]
async fn a_chatty_cloudict_like_engine_plays_whole_games_in_its_own_folder() {
    cloudict_like_engine_plays_whole_games("cloudict").await;
}

#[tokio::test]
async fn an_engine_that_spins_at_end_of_input_is_killed_after_each_game() {
    cloudict_like_engine_plays_whole_games("deaf").await;
}

#[tokio::test]
async fn a_chatty_gtp_engine_plays_and_a_resigning_one_resigns() {
    let dir = tempfile::tempdir().unwrap();
    let (bridge, mut referee) = start_bridge(
        "gtp",
        &[],
        &python("gtp_engine.py", &[&dir_arg(&dir), "chatty"]),
    )
    .await;
    let played = play_hex(&mut referee, "h1", Side::First).await;
    assert!(played.outcome.is_some(), "the chatty GTP engine resigned");
    finish(bridge, referee).await;

    let (bridge, mut referee) = start_bridge(
        "gtp",
        &[],
        &python("gtp_engine.py", &[&dir_arg(&dir), "resign"]),
    )
    .await;
    let played = play_hex(&mut referee, "h2", Side::First).await;
    assert!(played.outcome.is_none(), "= resign must resign");
    assert!(played.bridge_moves.is_empty());
    let stderr = finish(bridge, referee).await;
    assert!(stderr.contains("the engine resigns"), "{stderr}");
}

/// `arena connect --check`: no server; returns (exit success, stdout).
async fn conformance(protocol: &str, extra: &[&str], engine: &[String]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["connect", "--check", "--protocol", protocol])
        .args(extra)
        .arg("--")
        .args(engine)
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT * 3, output)
        .await
        .expect("the check did not finish")
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn conformance_check_passes_a_good_engine_and_names_a_broken_ones_faults() {
    let dir = sau_folder();
    let cwd = ["--cwd", &dir_arg(&dir)];
    let (ok, report) = conformance("sau", &cwd, &python("sau_engine.py", &[])).await;
    assert!(ok, "{report}");
    assert!(report.contains("says its name is \"FakeDict\""), "{report}");
    assert!(report.contains("ply  1  engine  J10  ok"), "{report}");
    assert!(report.contains("the engine plays second (W)"), "{report}");
    assert!(
        report.lines().last().unwrap().starts_with("PASS"),
        "{report}"
    );

    let (ok, report) = conformance("sau", &cwd, &python("sau_engine.py", &["letters"])).await;
    assert!(!ok, "{report}");
    assert!(
        report.contains("FAIL ply 1: the engine printed \"move J10\", which is not a move line"),
        "{report}"
    );
    assert!(
        report
            .lines()
            .last()
            .unwrap()
            .starts_with("FAIL: 2 problem"),
        "{report}"
    );

    let (ok, report) = conformance("sau", &cwd, &python("sau_engine.py", &["occupied"])).await;
    assert!(!ok, "{report}");
    assert!(report.contains("FAIL ply 3: illegal move"), "{report}");
    assert!(report.contains("J10 is already occupied"), "{report}");

    let (ok, report) = conformance("sau", &cwd, &python("sau_engine.py", &["exit"])).await;
    assert!(!ok, "{report}");
    assert!(report.contains("FAIL start:"), "{report}");

    let gtp_dir = tempfile::tempdir().unwrap();
    let (ok, report) = conformance(
        "gtp",
        &[],
        &python("gtp_engine.py", &[&dir_arg(&gtp_dir), "chatty"]),
    )
    .await;
    assert!(ok, "{report}");
    assert!(report.contains("says its name is \"fake-gtp\""), "{report}");
    let (ok, report) = conformance(
        "gtp",
        &[],
        &python("gtp_engine.py", &[&dir_arg(&gtp_dir), "refuse"]),
    )
    .await;
    assert!(!ok, "{report}");
    assert!(
        report.contains("FAIL start: the engine refused \"name\""),
        "{report}"
    );

    // An engine slower than the move limit fails, and the report says the limit may be all
    // that is wrong; --move-limit gives it the time.
    let slow = python("gtp_engine.py", &[&dir_arg(&gtp_dir), "slow"]);
    let (ok, report) = conformance("gtp", &["--move-limit", "100"], &slow).await;
    assert!(!ok, "{report}");
    assert!(
        report.contains("no move within 0.10 s (the move limit of this check; an engine that thinks longer by default may only need a larger --move-limit)"),
        "{report}"
    );
    let (ok, report) = conformance("gtp", &["--move-limit", "3000"], &slow).await;
    assert!(ok, "{report}");
}

/// The example Python bot (`bots/python/arena_random_bot.py`) against itself through a fake
/// referee that checks every move with the library's rules: a whole game of each game.
#[tokio::test]
async fn example_python_bot_plays_whole_legal_games_of_all_four() {
    for game_id in GameId::ALL {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let mut bots = Vec::new();
        let mut links = Vec::new();
        for (i, name) in ["alpha", "beta"].iter().enumerate() {
            let seed = (i + 1).to_string();
            bots.push(python_bot(
                &port,
                name,
                "t",
                &seed,
                &["--games", game_id.as_str(), "--reconnect-for-ms", "0"],
            ));
            // Accept in order so that links[i] is bots[i].
            let mut referee = accept_client(&listener, name).await;
            let BotMessage::Hello { name: n, games, .. } = &referee.hello else {
                panic!("{:?}", referee.hello)
            };
            assert_eq!(
                (n.as_str(), games.as_slice()),
                (*name, &[game_id.as_str().to_string()][..])
            );
            // A ping before the game: answered with a pong (which `recv` skips).
            referee.send(RefereeMessage::Ping { id: 1 }).await;
            links.push(referee);
        }
        let match_id = format!("py-{game_id}");
        let [first, second] = links.as_mut_slice() else {
            unreachable!("two bots")
        };
        let players = [Player::Link(first), Player::Link(second)];
        let rules = serde_json::json!({});
        let (moves, _, outcome) =
            referee_game(players, &match_id, game_id, &rules, &[], LONG_CLOCK_MS).await;
        let outcome =
            outcome.unwrap_or_else(|| panic!("{game_id}: a bot resigned after {moves:?}"));
        println!("{game_id}: {} moves, {outcome:?}", moves.len());
        drop(links);
        for bot in bots {
            let status = tokio::time::timeout(WAIT, bot.wait_with_output())
                .await
                .expect("the bot did not exit when the referee closed")
                .unwrap()
                .status;
            assert!(status.success(), "{game_id}: bot exited with {status}");
        }
    }
}

/// The example Python bot connects again when the referee goes away (a server restart), with
/// backoff, and gives up once the referee has been gone longer than `--reconnect-for-ms`.
#[tokio::test]
async fn example_python_bot_reconnects_when_the_referee_goes_away() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let bot = python_bot(&port, "alpha", "t", "1", &["--reconnect-for-ms", "3000"]);
    let first = accept_client(&listener, "alpha").await;
    // The referee goes away...
    drop(first);
    // ...and comes back: the bot says hello again on a new connection.
    let mut again = accept_client(&listener, "alpha").await;
    let BotMessage::Hello { name, .. } = &again.hello else {
        panic!("{:?}", again.hello)
    };
    assert_eq!(name, "alpha");
    again.send(RefereeMessage::Ping { id: 7 }).await;
    drop(again);
    // Gone for good: after 3 s of failed attempts, the bot stops by itself.
    drop(listener);
    let status = tokio::time::timeout(WAIT, bot.wait_with_output())
        .await
        .expect("the bot gives up")
        .unwrap()
        .status;
    assert!(status.success(), "{status}");
}

/// The example Python bot's path.
fn example_python_bot() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bots/python/arena_random_bot.py")
        .to_string_lossy()
        .into_owned()
}

/// Starts the example Python bot against 127.0.0.1:`port`, with `extra` arguments.
fn python_bot(port: &str, name: &str, token: &str, seed: &str, extra: &[&str]) -> Child {
    Command::new("python3")
        .arg(example_python_bot())
        .args([
            "--port", port, "--name", name, "--token", token, "--seed", seed,
        ])
        .args(extra)
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Runs `program` with `args` and `input` on its stdin; returns its stdout after checking that it
/// exited successfully.
fn run_piped(program: &str, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    // Written from a thread so that a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Jiu rules used to check the Python bot: the defaults, and single jumps kept with a longer
/// no-capture limit, so that games reach the flying stage and single jumps among small sides.
const PYTHON_JIU_RULES: [&str; 2] = [
    "{}",
    r#"{"flying_single_jump":true,"no_capture_limit":300}"#,
];

/// What kind of battle move a Jiu move text is: (fly, jump chain, square capture). A fly is a
/// shift to a point that is not a neighbour.
fn jiu_move_kind(text: &str) -> (bool, bool, bool) {
    let action = text.split('+').next().unwrap_or_default();
    let point = |p: &str| -> (i32, i32) {
        let col = i32::from(p.as_bytes()[0]) - i32::from(b'A');
        (col, p[1..].parse().unwrap())
    };
    let fly = action.split_once('-').is_some_and(|(a, b)| {
        let ((c1, r1), (c2, r2)) = (point(a), point(b));
        (c1 - c2).abs() + (r1 - r2).abs() > 1
    });
    (fly, action.matches('x').count() >= 2, text.contains('+'))
}

/// The example Python bot's `--selftest`: seeded random games of Jiu against itself, replayed by
/// `arena replay jiu`. Every move must be legal (flies, jump chains, square victims, under both
/// settings of `flying_single_jump`) and every game must end on the board exactly at its last
/// move, so the bot's own board and end checks agree with the rules.
#[test]
fn example_python_bot_selftest_plays_legal_jiu_to_the_end() {
    let bot = example_python_bot();
    let arena = env!("CARGO_BIN_EXE_arena");
    let (mut flies, mut chains, mut squares) = (0, 0, 0);
    for (rules, count, seed) in [(PYTHON_JIU_RULES[0], 3, "5"), (PYTHON_JIU_RULES[1], 2, "6")] {
        let count_text = count.to_string();
        let args = ["--selftest", &count_text, "--seed", seed, "--rules", rules];
        let games = run_piped("python3", &[&[bot.as_str()][..], &args].concat(), "");
        let results = run_piped(arena, &["replay", "jiu", "--rules", rules], &games);
        let games: Vec<&str> = games.lines().collect();
        let results: Vec<&str> = results.lines().collect();
        assert_eq!(
            (games.len(), results.len()),
            (count, count),
            "rules {rules}"
        );
        for (game, result) in games.iter().zip(&results) {
            let moves: Vec<&str> = game.split_whitespace().collect();
            let plies = moves.len().to_string();
            match result.split_whitespace().collect::<Vec<_>>().as_slice() {
                [winner, ply, reason] => {
                    assert!(["first", "second", "draw"].contains(winner), "{result}");
                    assert_eq!(*ply, plies, "rules {rules}: the game went on after its end");
                    let reason: arena::game::EndReason = reason.parse().unwrap();
                    assert!(reason.is_board_result(), "{result}");
                }
                _ => panic!("rules {rules}: {result} for the game {game}"),
            }
            for mv in moves.iter().skip(196) {
                let (fly, chain, square) = jiu_move_kind(mv);
                flies += usize::from(fly);
                chains += usize::from(chain);
                squares += usize::from(square);
            }
        }
    }
    println!("{flies} flies, {chains} jump chains, {squares} square captures");
    assert!(flies > 0 && chains > 0 && squares > 0);
}

/// Completeness of the example Python bot's Jiu battle moves: at sampled positions of its
/// self-play (`tests/fixtures/bridge/jiu_bot_listing.py`), the moves it finds are exactly the
/// ones `arena moves jiu` lists, `+?` victim counts included.
#[test]
fn example_python_bot_finds_exactly_the_legal_jiu_moves() {
    let bot = example_python_bot();
    let lister = fixture("jiu_bot_listing.py");
    let arena = env!("CARGO_BIN_EXE_arena");
    let (mut positions, mut flies, mut chains, mut squares) = (0, 0, 0, 0);
    for (rules, count, seed) in [
        (PYTHON_JIU_RULES[0], "2", "1"),
        (PYTHON_JIU_RULES[1], "1", "2"),
    ] {
        let listed = run_piped("python3", &[&lister, &bot, count, seed, "5", rules], "");
        let lines: Vec<(&str, &str)> = listed
            .lines()
            .map(|line| line.split_once('\t').unwrap_or((line, "")))
            .collect();
        let input: String = lines.iter().map(|(p, _)| format!("{p}\n")).collect();
        let referee = run_piped(arena, &["moves", "jiu", "--rules", rules], &input);
        let referee: Vec<&str> = referee.lines().collect();
        assert_eq!(referee.len(), lines.len(), "rules {rules}");
        for ((position, mine), theirs) in lines.iter().zip(&referee) {
            let mut mine: Vec<&str> = mine.split_whitespace().collect();
            let mut theirs: Vec<&str> = theirs.split_whitespace().collect();
            mine.sort_unstable();
            theirs.sort_unstable();
            assert!(
                !theirs.is_empty(),
                "rules {rules}: the game is over at {position}"
            );
            assert_eq!(mine, theirs, "rules {rules}: {position}");
            for mv in mine {
                let (fly, chain, square) = jiu_move_kind(mv);
                flies += usize::from(fly);
                chains += usize::from(chain);
                squares += usize::from(square);
            }
            positions += 1;
        }
    }
    println!("{positions} positions: {flies} flies, {chains} jump chains, {squares} with squares");
    assert!(positions > 100 && flies > 0 && chains > 0 && squares > 0);
}

#[tokio::test]
async fn ctrl_c_stops_the_bridge_and_its_engine() {
    let (dir, bridge, mut referee) = start_json_engine("hang").await;
    let pid = read_pid(&dir.path().join("pid")).await;
    // Mid-match, with the engine thinking (it ignores SIGTERM and has a grandchild).
    let rules = serde_json::json!({"swap": false});
    let start = start_message(
        "s1",
        GameId::Hex,
        Side::First,
        "referee",
        rules,
        LONG_CLOCK_MS,
        vec![],
    );
    referee.send(start).await;
    referee
        .send(turn_message("s1", vec![], 0, LONG_CLOCK_MS))
        .await;
    let grandchild = read_pid(&dir.path().join("grandchild")).await;
    let bridge_pid = bridge.id().unwrap() as i32;
    // SAFETY: sends SIGINT to the bridge process this test started.
    assert_eq!(unsafe { libc::kill(bridge_pid, libc::SIGINT) }, 0);
    let output = tokio::time::timeout(WAIT, bridge.wait_with_output())
        .await
        .expect("the bridge did not stop on SIGINT")
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    // The bridge reaped its engine before exiting; the grandchild was killed with the group.
    assert!(gone_or_zombie(pid), "engine {pid} survived");
    assert_killed(grandchild).await;
    drop(referee);
}

/// End to end through `arena serve`: two example Python bots play a whole game of each of the
/// four games, and the example C engine, bridged by `arena connect --protocol sau`, plays two
/// Connect6 games against one of them. Every game must end on the board (no forfeit, timeout,
/// illegal move or resignation).
#[tokio::test]
async fn served_tournaments_with_the_example_bots_and_a_bridged_engine() {
    let dir = tempfile::tempdir().unwrap();
    let sau_engine = build_sau_engine(dir.path());
    let out_dir = dir.path().join("out");
    let mut config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nout_dir = {:?}\nevent = \"bridge e2e\"\nplace = \"test\"\n\
         reconnect_grace_ms = 2000\nexit_when_done = true\n\n\
         [[bot]]\nname = \"alpha\"\ntoken = \"ta\"\nweak_token = true\n\n\
         [[bot]]\nname = \"beta\"\ntoken = \"tb\"\nweak_token = true\n\n\
         [[bot]]\nname = \"sau\"\ntoken = \"ts\"\nweak_token = true\n",
        out_dir.to_string_lossy()
    );
    let clock = "clock = { initial_ms = 600000, increment_ms = 0, move_limit_ms = 0 }";
    for game in GameId::ALL {
        config.push_str(&format!(
            "\n[[tournament]]\nname = \"t-{game}\"\ngame = \"{game}\"\nformat = \"round-robin\"\n\
             bots = [\"alpha\", \"beta\"]\ngames_per_pairing = 1\nconcurrency = 1\n{clock}\n"
        ));
    }
    config.push_str(&format!(
        "\n[[tournament]]\nname = \"t-bridge\"\ngame = \"connect6\"\nformat = \"round-robin\"\n\
         bots = [\"sau\", \"alpha\"]\ngames_per_pairing = 2\nconcurrency = 1\n{clock}\n"
    ));
    let config_path = dir.path().join("arena.toml");
    std::fs::write(&config_path, config).unwrap();

    let mut server = Command::new(env!("CARGO_BIN_EXE_arena"))
        .arg("serve")
        .arg("--config")
        .arg(&config_path)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("server.log")).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("the server printed nothing")
        .unwrap()
        .expect("the server closed its stdout");
    let addr = first
        .strip_prefix("arena listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .trim()
        .to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();

    let mut players = Vec::new();
    for (name, token, seed) in [("alpha", "ta", "1"), ("beta", "tb", "2")] {
        // When the finished league's server exits, the bots stop instead of reconnecting.
        let games = [
            "--games",
            "connect6,hex,surakarta,jiu",
            "--max-games",
            "4",
            "--reconnect-for-ms",
            "0",
        ];
        players.push(python_bot(&port, name, token, seed, &games));
    }
    let bridge = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args([
            "connect", "--server", &addr, "--name", "sau", "--token", "ts",
        ])
        .args(["--protocol", "sau", "--"])
        .arg(&sau_engine)
        .stderr(std::fs::File::create(dir.path().join("bridge.log")).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    // Keep reading the server's stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let Ok(status) = tokio::time::timeout(Duration::from_secs(180), server.wait()).await else {
        // Say where the league stood: the tail of each log names the game that hung.
        let tail = |name: &str| {
            let log = std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
            support::last_lines(&log, 60)
        };
        panic!(
            "the tournaments did not finish\n--- server.log (tail)\n{}\n--- bridge.log (tail)\n{}",
            tail("server.log"),
            tail("bridge.log")
        );
    };
    let status = status.unwrap();
    let server_log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
    assert!(status.success(), "server failed: {server_log}");

    let games: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("games.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(games.len(), 6, "{games:#?}\n{server_log}");
    for game in &games {
        let reason: arena::game::EndReason = game["reason"].as_str().unwrap().parse().unwrap();
        assert!(reason.is_board_result(), "{game}");
        println!(
            "{} {}: {} vs {}, {} by {} after {} moves",
            game["tournament"],
            game["game"],
            game["first"],
            game["second"],
            game["result"],
            game["reason"],
            game["moves"].as_array().map_or(0, Vec::len)
        );
    }
    for tournament in ["t-connect6", "t-hex", "t-surakarta", "t-jiu"] {
        assert_eq!(
            games
                .iter()
                .filter(|g| g["tournament"] == tournament)
                .count(),
            1,
            "{tournament}"
        );
    }
    let bridged: Vec<_> = games
        .iter()
        .filter(|g| g["tournament"] == "t-bridge")
        .collect();
    assert_eq!(bridged.len(), 2);
    assert!(bridged
        .iter()
        .all(|g| g["first"] == "sau" || g["second"] == "sau"));

    // The server is gone: every client exits by itself.
    let output = tokio::time::timeout(WAIT, bridge.wait_with_output())
        .await
        .expect("the bridge did not exit")
        .unwrap();
    let bridge_log = std::fs::read_to_string(dir.path().join("bridge.log")).unwrap_or_default();
    assert!(output.status.success(), "{bridge_log}");
    for player in players {
        let status = tokio::time::timeout(WAIT, player.wait_with_output())
            .await
            .expect("a Python bot did not exit")
            .unwrap()
            .status;
        assert!(status.success());
    }
}

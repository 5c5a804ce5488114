//! The referee server through real TCP on port 0: full games, every end reason, reconnection,
//! every error code, hostile input, the connection cap, and games.jsonl.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{spawn_server, two_bot_config, Client, TestServer};

const MATCH: &str = "t-r1-p1-g1";

/// Both bots log in and read their `start`; returns (first, second).
async fn two_players(server: &TestServer, game: &str) -> (Client, Client) {
    let mut a = Client::login(server.addr, "a", "ta", &[game]).await;
    let mut b = Client::login(server.addr, "b", "tb", &[game]).await;
    let sa = a.expect("start").await;
    let sb = b.expect("start").await;
    assert_eq!(sa["match"], MATCH);
    assert_eq!(sa["side"], "first");
    assert_eq!(sb["side"], "second");
    assert_eq!(sa["opponent"], "b");
    assert_eq!(sb["opponent"], "a");
    assert_eq!(sa["game"], game);
    assert_eq!(sa["moves"], json!([]));
    (a, b)
}

/// Plays `moves` alternately (first side first), each after reading that side's `turn` and
/// checking it carries the opponent's last move; returns both `end` messages.
async fn play_alternately(a: &mut Client, b: &mut Client, moves: &[&str]) -> (Value, Value) {
    for (i, mv) in moves.iter().enumerate() {
        let mover = if i % 2 == 0 { &mut *a } else { &mut *b };
        let turn = mover.expect("turn").await;
        assert_eq!(turn["ply"], i, "{turn}");
        let expected: Vec<&str> = if i == 0 { vec![] } else { vec![moves[i - 1]] };
        assert_eq!(turn["moves"], json!(expected), "{turn}");
        mover.play(MATCH, mv).await;
    }
    (a.expect("end").await, b.expect("end").await)
}

/// Plays `moves` with `mover(i)` (0 first, 1 second) making move `i`; checks each `turn` carries
/// exactly the moves its bot has not seen (the opponent's, since its previous turn).
async fn play_sequence(
    a: &mut Client,
    b: &mut Client,
    moves: &[String],
    mover: impl Fn(usize) -> usize,
) -> (Value, Value) {
    let mut seen = [0usize; 2];
    // How long each turn took to come, so that a game lost on time says where the time went.
    let mut waits: Vec<(usize, Duration)> = Vec::new();
    for (i, mv) in moves.iter().enumerate() {
        let side = mover(i);
        let client = if side == 0 { &mut *a } else { &mut *b };
        let asked = std::time::Instant::now();
        let turn = client.recv().await;
        waits.push((i, asked.elapsed()));
        if turn["type"] != "turn" {
            waits.sort_by_key(|(_, wait)| std::cmp::Reverse(*wait));
            waits.truncate(8);
            panic!(
                "expected a turn at ply {i}, got {turn}; the slowest turns (ply, wait): {waits:?}"
            );
        }
        assert_eq!(turn["ply"], i, "{turn}");
        assert_eq!(
            turn["moves"],
            json!(moves[seen[side]..i]),
            "ply {i}: {turn}"
        );
        client.play(MATCH, mv).await;
        seen[side] = i + 1;
    }
    (a.expect("end").await, b.expect("end").await)
}

/// `loser` plays the illegal `mv`: it gets `illegal_move` and an `end` by `illegal_move`, its
/// opponent `winner` an `end` with a win, and the server then finishes.
async fn illegal_move_loses(server: TestServer, loser: &mut Client, winner: &mut Client, mv: &str) {
    loser.play(MATCH, mv).await;
    loser.expect_error("illegal_move").await;
    assert_eq!(loser.expect("end").await["reason"], "illegal_move");
    assert_eq!(winner.expect("end").await["result"], "win");
    server.finished().await;
}

/// Both bots start a Hex match; `a` plays A1 and `b` drops its connection. Returns `a`.
async fn a_moves_then_b_leaves(server: &TestServer) -> Client {
    let (mut a, b) = two_players(server, "hex").await;
    a.expect("turn").await;
    a.play(MATCH, "A1").await;
    drop(b);
    a
}

fn hex_red_wins() -> Vec<&'static str> {
    // Red fills column A bottom to top; Blue plays column C out of the way.
    let red = [
        "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11",
    ];
    let blue = ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10"];
    let mut moves = Vec::new();
    for i in 0..11 {
        moves.push(red[i]);
        if i < 10 {
            moves.push(blue[i]);
        }
    }
    moves
}

#[tokio::test]
async fn a_full_hex_game_ends_by_connection_and_is_written() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    let moves = hex_red_wins();
    let (ea, eb) = play_alternately(&mut a, &mut b, &moves).await;
    assert_eq!(ea["result"], "win");
    assert_eq!(eb["result"], "loss");
    assert_eq!(ea["reason"], "connection");
    assert_eq!(ea["moves"].as_array().unwrap().len(), moves.len());
    let (summary, out_dir, _dir) = server.finished().await;
    assert!(summary.tournaments_finished);
    assert_eq!(summary.games.len(), 1);
    assert_eq!(summary.games[0].reason.as_str(), "connection");

    let games = support::read_games(&out_dir);
    assert_eq!(games.len(), 1);
    let g = &games[0];
    assert_eq!(g["match"], MATCH);
    assert_eq!(g["tournament"], "t");
    assert_eq!(g["game"], "hex");
    assert_eq!(g["first"], "a");
    assert_eq!(g["second"], "b");
    assert_eq!(g["result"], "first");
    assert_eq!(g["reason"], "connection");
    assert_eq!(g["moves"], json!(moves));
    assert_eq!(g["think_ms"].as_array().unwrap().len(), moves.len());
    assert_eq!(g["lag_ms"].as_array().unwrap().len(), moves.len());
    assert_eq!(g["rules"], json!({"swap": false}));
    assert_eq!(
        g["clock"],
        json!({"initial_ms": 60000, "increment_ms": 0, "move_limit_ms": null})
    );
    for key in ["started", "finished"] {
        let text = g[key].as_str().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(text).is_ok(),
            "{key}: {text}"
        );
    }
    let record = g["record"].as_str().unwrap();
    assert!(record.starts_with("HEX-a R vs b B-先手胜-"), "{record}");
    let text = std::fs::read_to_string(out_dir.join("records").join(record)).unwrap();
    assert!(text.starts_with("{[HEX][a R][b B][先手胜]"), "{text}");
    assert!(text.contains(";R(A,1);B(C,1);R(A,2)"), "{text}");
}

#[tokio::test]
async fn a_full_connect6_game_ends_by_six_in_row() {
    let server = TestServer::start(&two_bot_config("connect6", "", "")).await;
    let (mut a, mut b) = two_players(&server, "connect6").await;
    let moves = [
        "J10", "A1,C1", "K10,L10", "E1,G1", "M10,N10", "A3,C3", "O10,P10",
    ];
    let (ea, eb) = play_alternately(&mut a, &mut b, &moves).await;
    assert_eq!(ea["result"], "win");
    assert_eq!(eb["result"], "loss");
    assert_eq!(eb["reason"], "six_in_row");
    // The pair's second stone is not recorded once the first already made six.
    assert_eq!(ea["moves"].as_array().unwrap().last().unwrap(), "O10");
    let (_, out_dir, _dir) = server.finished().await;
    let games = support::read_games(&out_dir);
    assert_eq!(games[0]["result"], "first");
    assert_eq!(games[0]["reason"], "six_in_row");
    let record = games[0]["record"].as_str().unwrap();
    let text = std::fs::read_to_string(out_dir.join("records").join(record)).unwrap();
    assert!(
        text.contains(";B(J,10);W(A,1);W(C,1);B(K,10);B(L,10)"),
        "{text}"
    );
}

#[tokio::test]
async fn an_illegal_move_loses_and_is_reported() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    a.play(MATCH, "A1").await;
    b.expect("turn").await;
    b.play(MATCH, "A1").await; // occupied
    let err = b.expect_error("illegal_move").await;
    assert_eq!(err["match"], MATCH);
    let eb = b.expect("end").await;
    assert_eq!(eb["result"], "loss");
    assert_eq!(eb["reason"], "illegal_move");
    let ea = a.expect("end").await;
    assert_eq!(ea["result"], "win");
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games[0].result.as_str(), "first");
}

#[tokio::test]
async fn unparsable_move_text_loses_by_illegal_move() {
    let server = TestServer::start(&two_bot_config("connect6", "", "")).await;
    let (mut a, mut b) = two_players(&server, "connect6").await;
    a.expect("turn").await;
    illegal_move_loses(server, &mut a, &mut b, "Z99!").await;
}

#[tokio::test]
async fn resigning_ends_the_match_at_any_time() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    // b resigns while it is a's move.
    b.send(json!({"type":"resign","match":MATCH})).await;
    let eb = b.expect("end").await;
    assert_eq!(
        (eb["result"].as_str(), eb["reason"].as_str()),
        (Some("loss"), Some("resign"))
    );
    assert_eq!(a.expect("end").await["result"], "win");
    let (_, out_dir, _dir) = server.finished().await;
    assert_eq!(support::read_games(&out_dir)[0]["reason"], "resign");
}

#[tokio::test]
async fn a_move_for_a_finished_match_on_the_connection_that_played_it_is_refused() {
    let server = TestServer::start(
        &two_bot_config("hex", "exit_when_done = false", "").replace("exit_when_done = true\n", ""),
    )
    .await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    a.play(MATCH, "A1").await;
    b.expect("turn").await;
    b.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(a.expect("end").await["result"], "win");
    a.play(MATCH, "B2").await;
    let e = a.expect_error("unknown_match").await;
    assert_eq!(e["match"], MATCH, "{e}");
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn running_out_of_time_loses_at_the_exact_moment() {
    // No settle window: the loss is declared at the deadline itself (the window, which waits
    // for a move received in time but not yet read, has its own tests in the referee).
    let config = two_bot_config(
        "hex",
        "timeout_settle_ms = 0",
        "clock = { initial_ms = 1000, increment_ms = 250, move_limit_ms = 0 }",
    );
    let config = config.replace(
        "clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }\n",
        "",
    );
    let server = TestServer::start_virtual_clock(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    let t = a.expect("turn").await;
    assert_eq!(t["clock"], json!({"you_ms": 1000, "opponent_ms": 1000}));
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.play(MATCH, "A1").await;
    let t = b.expect("turn").await;
    assert_eq!(t["clock"], json!({"you_ms": 1000, "opponent_ms": 850}));
    // b never answers: it loses when its 1000 ms are gone, not later.
    let before = tokio::time::Instant::now();
    let eb = b.expect("end").await;
    let waited = before.elapsed();
    assert_eq!(eb["reason"], "timeout");
    assert_eq!(eb["result"], "loss");
    assert!(
        waited >= Duration::from_millis(999) && waited <= Duration::from_millis(1001),
        "{waited:?}"
    );
    assert_eq!(a.expect("end").await["result"], "win");
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["think_ms"], json!([400]));
    assert_eq!(g["lag_ms"], json!([0]));
    assert_eq!(g["reason"], "timeout");
}

/// Waits until this machine's kernel stamps received packets (Linux switches stamping on a
/// moment after the first socket of the machine asks for it), so that a server started next
/// stamps its first moves.
#[cfg(target_os = "linux")]
async fn wait_for_kernel_receive_stamps() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
    let mut client = client.expect("connect");
    let (read_half, _write_half) = accepted.expect("accept").0.into_split();
    let mut reader = arena::server::ArrivalStampedRead::new(read_half, true);
    let mut buf = [0u8; 8];
    for _ in 0..200 {
        client.write_all(b"w\n").await.expect("write");
        let _ = reader.read(&mut buf).await.expect("read");
        if reader.last_arrival().is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the kernel never stamped a read");
}

/// On real time, with kernel receive stamps: a move written in time, followed by a `pong` that
/// reaches the server after the deadline, while the server is too busy to read either. The
/// server's one read of both gets the `pong`'s late stamp; the move still counts, charged all
/// the time it had, because it was in the socket when the deadline came. (Linux: elsewhere the
/// server stamps lines when it reads them.)
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_move_read_together_with_a_later_line_keeps_its_own_arrival() {
    wait_for_kernel_receive_stamps().await;
    let config = two_bot_config("hex", "", "").replace("move_limit_ms = 0", "move_limit_ms = 300");
    let server = TestServer::start(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    // The server runs on this test's one thread: until the next `.await` it reads nothing.
    let writer = a.writer_mut();
    let wrote = writer
        .try_write(b"{\"type\":\"move\",\"match\":\"t-r1-p1-g1\",\"move\":\"A1\"}\n")
        .expect("write the move");
    assert!(wrote > 0);
    std::thread::sleep(Duration::from_millis(400));
    writer
        .try_write(b"{\"type\":\"pong\",\"id\":0}\n")
        .expect("write the pong");
    std::thread::sleep(Duration::from_millis(20));
    let t = b.expect("turn").await;
    assert_eq!(t["moves"], json!(["A1"]), "{t}");
    b.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(a.expect("end").await["result"], "win");
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["reason"], "resign");
    assert_eq!(g["think_ms"], json!([300]), "{g}");
}

/// On real time, with kernel receive stamps: a bot that sends nothing loses when the settle
/// window after its deadline closes. The referee waits longer (up to a second more) only while
/// the bot's connection may hold a move that reached the server in time and was not read yet;
/// a reader waiting on an empty socket says there is none. (It used to wait the whole second
/// for every silent bot, for a read that never came.)
#[tokio::test]
async fn a_silent_bot_loses_when_the_settle_window_closes_not_a_second_later() {
    let config = two_bot_config("hex", "timeout_settle_ms = 50", "")
        .replace("move_limit_ms = 0", "move_limit_ms = 300");
    let server = TestServer::start(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    a.play(MATCH, "A1").await;
    b.expect("turn").await;
    let turn_read = std::time::Instant::now();
    let eb = b.expect("end").await;
    let waited = turn_read.elapsed();
    assert_eq!(eb["reason"], "timeout", "{eb}");
    assert_eq!(eb["result"], "loss", "{eb}");
    // 300 ms of limit and 50 of settling; the old wait would have been 1,350 ms. The margin
    // is for a busy machine, not for the referee.
    assert!(
        waited >= Duration::from_millis(340) && waited < Duration::from_millis(1_000),
        "{waited:?}"
    );
    assert_eq!(a.expect("end").await["result"], "win");
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_per_move_limit_is_enforced() {
    let config = two_bot_config("hex", "", "").replace("move_limit_ms = 0", "move_limit_ms = 500");
    let server = TestServer::start_virtual_clock(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    let start_clock = {
        // The limit is announced in `start` (already read); check it via games.jsonl below.
        a.expect("turn").await
    };
    assert_eq!(start_clock["clock"]["you_ms"], 60000);
    tokio::time::sleep(Duration::from_millis(499)).await;
    a.play(MATCH, "A1").await;
    b.expect("turn").await;
    tokio::time::sleep(Duration::from_millis(501)).await;
    b.play(MATCH, "B1").await;
    let eb = b.expect("end").await;
    assert_eq!(eb["reason"], "timeout");
    assert_eq!(a.expect("end").await["result"], "win");
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["clock"]["move_limit_ms"], 500);
    assert_eq!(g["moves"], json!(["A1"]));
}

#[tokio::test(start_paused = true)]
async fn a_bot_that_stays_away_past_the_grace_loses_by_disconnect() {
    let server =
        TestServer::start_virtual_clock(&two_bot_config("hex", "reconnect_grace_ms = 2000", ""))
            .await;
    let mut a = a_moves_then_b_leaves(&server).await;
    let before = tokio::time::Instant::now();
    let ea = a.expect("end").await;
    assert_eq!(ea["result"], "win");
    assert_eq!(ea["reason"], "disconnect");
    let waited = before.elapsed();
    assert!(waited >= Duration::from_millis(1990), "{waited:?}");
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games[0].reason.as_str(), "disconnect");
}

#[tokio::test(start_paused = true)]
async fn a_clock_running_out_during_the_grace_loses_by_timeout() {
    let config = two_bot_config("hex", "reconnect_grace_ms = 30000", "")
        .replace("initial_ms = 60000", "initial_ms = 3000");
    let server = TestServer::start_virtual_clock(&config).await;
    let mut a = a_moves_then_b_leaves(&server).await;
    let ea = a.expect("end").await;
    assert_eq!(ea["reason"], "timeout");
    server.finished().await;
}

#[tokio::test(start_paused = true)]
async fn a_bot_that_returns_within_the_grace_resumes_with_its_clock_run_down() {
    let server =
        TestServer::start_virtual_clock(&two_bot_config("hex", "reconnect_grace_ms = 5000", ""))
            .await;
    let mut a = a_moves_then_b_leaves(&server).await;
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let start = b.expect("start").await;
    assert_eq!(start["moves"], json!(["A1"]));
    assert_eq!(start["side"], "second");
    let turn = b.expect("turn").await;
    assert_eq!(turn["ply"], 1);
    let you = turn["clock"]["you_ms"].as_u64().unwrap();
    assert!(
        (56_900..=57_000).contains(&you),
        "clock kept running: {you}"
    );
    b.play(MATCH, "C1").await;
    let turn = a.expect("turn").await;
    assert_eq!(turn["moves"], json!(["C1"]));
    a.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(b.expect("end").await["result"], "win");
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games[0].reason.as_str(), "resign");
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_after_the_grace_finds_the_match_lost() {
    let server = TestServer::start_virtual_clock(
        &two_bot_config(
            "hex",
            "reconnect_grace_ms = 1000\nexit_when_done = false",
            "",
        )
        .replace("exit_when_done = true\n", ""),
    )
    .await;
    let (mut a, b) = two_players(&server, "hex").await;
    a.expect("turn").await;
    drop(b);
    assert_eq!(a.expect("end").await["reason"], "disconnect");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The lost game was this league's only one: b is not given it back, it hears that the
    // league is over.
    let mut b = Client::hello(server.addr, 1, "b", "tb", &["hex"]).await;
    b.expect_error("league_over").await;
    assert!(
        b.until_closed().await.is_empty(),
        "no start: the match is lost"
    );
    let (summary, _, _dir) = server.stop().await;
    assert_eq!(summary.games.len(), 1);
}

#[tokio::test]
async fn every_error_code_is_sent_where_it_applies() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    // auth_failed: wrong token, then the connection closes.
    let mut bad = Client::hello(server.addr, 1, "a", "nope", &["hex"]).await;
    bad.expect_error("auth_failed").await;
    assert!(bad.until_closed().await.is_empty());
    // auth_failed: unknown name; and a wrong protocol version.
    let mut bad = Client::hello(server.addr, 1, "mallory", "ta", &["hex"]).await;
    bad.expect_error("auth_failed").await;
    let mut bad = Client::hello(server.addr, 2, "a", "ta", &["hex"]).await;
    bad.expect_error("auth_failed").await;

    let (a, mut b) = two_players(&server, "hex").await;
    // replaced: a second login of the same bot takes over; the older connection is told why
    // and closed (the newest login wins).
    let mut a_again = Client::hello(server.addr, 1, "a", "ta", &["hex"]).await;
    a_again.expect("welcome").await;
    let mut old = a;
    let mut before = old.recv().await;
    if before["type"] == "turn" {
        // The first turn was sent to the old connection before it was replaced.
        before = old.recv().await;
    }
    assert_eq!(before["code"], "replaced", "{before}");
    assert!(old.until_closed().await.is_empty(), "closed after replaced");
    let mut a = a_again;
    a.expect("start").await;
    a.expect("turn").await;
    // already_connected: a second hello on a connection that said hello.
    a.send(json!({"type":"hello","protocol":1,"name":"a","token":"ta","games":["hex"]}))
        .await;
    a.expect_error("already_connected").await;

    a.send_raw(b"this is not json\n").await;
    a.expect_error("bad_json").await;
    a.send_raw(b"[1,2,3]\n").await;
    a.expect_error("bad_json").await;
    a.send_raw(&[b'{'; 70_000]).await;
    a.send_raw(b"\n").await;
    a.expect_error("line_too_long").await;
    a.send(json!({"type":"dance"})).await;
    a.expect_error("unknown_type").await;
    a.send(json!({"type":"move","match":MATCH})).await;
    let e = a.expect_error("missing_field").await;
    assert_eq!(e["match"], MATCH, "{e}");
    assert!(e["message"].as_str().unwrap().contains("\"move\""), "{e}");
    a.send_raw(format!("{{\"type\":\"move\",\"match\":\"{MATCH}\",\"move\":A1}}\n").as_bytes())
        .await;
    let e = a.expect_error("bad_json").await;
    assert_eq!(e["match"], MATCH, "{e}");
    a.send(json!({"type":"move","match":"other-match","move":"A1"}))
        .await;
    let e = a.expect_error("unknown_match").await;
    assert_eq!(e["match"], "other-match");
    // A long text of the bot's own is quoted back cut, not whole.
    let long = "x".repeat(10_000);
    a.send(json!({"type":"move","match":long,"move":"A1"}))
        .await;
    let e = a.expect_error("unknown_match").await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.len() < 200 && message.ends_with("xx\"…"),
        "{message}"
    );
    a.send(json!({"type":long})).await;
    let e = a.expect_error("unknown_type").await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.len() < 200 && message.contains("xx\"…"),
        "{message}"
    );
    b.play(MATCH, "A1").await;
    let e = b.expect_error("not_your_turn").await;
    assert_eq!(e["match"], MATCH);
    // None of that cost a anything: its move still counts.
    a.play(MATCH, "A1").await;
    let turn = b.expect("turn").await;
    assert_eq!(turn["moves"], json!(["A1"]));
    illegal_move_loses(server, &mut b, &mut a, "A1").await;
}

#[tokio::test]
async fn speaking_before_hello_is_refused_and_closed() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let mut c = Client::connect(server.addr).await;
    c.send(json!({"type":"move","match":MATCH,"move":"A1"}))
        .await;
    c.expect_error("auth_failed").await;
    assert!(c.until_closed().await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_connection_that_keeps_sending_garbage_is_closed() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let mut c = Client::login(server.addr, "a", "ta", &["hex"]).await;
    c.send_raw(&b"garbage\n".repeat(12)).await;
    let seen = c.until_closed().await;
    let errors = seen.iter().filter(|v| v["code"] == "bad_json").count();
    assert_eq!(errors, 10, "{seen:?}");
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn no_hello_in_time_closes_the_connection() {
    let server =
        TestServer::start_virtual_clock(&two_bot_config("hex", "hello_timeout_ms = 10000", ""))
            .await;
    let mut c = Client::connect(server.addr).await;
    let before = tokio::time::Instant::now();
    let seen = c.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["code"], "auth_failed");
    assert!(
        seen[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no hello within 10000 ms"),
        "{seen:?}"
    );
    let waited = before.elapsed();
    assert!(waited >= Duration::from_millis(9_990), "{waited:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_hello_with_no_game_of_the_bots_tournaments_is_told_what_it_could_play() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let mut c = Client::hello(server.addr, 1, "a", "ta", &["chess", "connect6"]).await;
    let seen = c.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["code"], "unknown_game", "{seen:?}");
    let message = seen[0]["message"].as_str().unwrap_or("");
    assert!(message.contains("you could play: hex"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn a_move_naming_another_ply_is_refused_and_not_played() {
    let server = TestServer::start(&two_bot_config("hex", "", "")).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    assert_eq!(a.expect("turn").await["ply"], 0);
    a.send(json!({"type":"move","match":MATCH,"move":"F6","ply":3}))
        .await;
    let error = a.expect_error("not_your_turn").await;
    assert_eq!(error["match"], MATCH);
    a.send(json!({"type":"move","match":MATCH,"move":"E7","ply":0}))
        .await;
    let turn = b.expect("turn").await;
    assert_eq!(turn["moves"], json!(["E7"]));
    b.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(a.expect("end").await["moves"], json!(["E7"]));
    server.finished().await;
}

#[tokio::test]
async fn hostile_input_never_disturbs_a_running_match() {
    let server = TestServer::start(&two_bot_config("hex", "max_connections = 1024", "")).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    // 300 idle sockets, and noisy ones sending garbage, an oversized line, invalid UTF-8 and
    // a half-sent line.
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    let mut noisy = Vec::new();
    for i in 0..5 {
        let mut c = Client::connect(server.addr).await;
        match i {
            0 => c.send_raw(&[0u8, 1, 2, 255, 254, b'\n', 7, 7]).await,
            1 => c.send_raw(&vec![b'x'; 200_000]).await,
            2 => c.send_raw(b"\xc3\x28\xa0\xa1\n").await,
            3 => c.send_raw(b"{\"type\":\"hello\",\"proto").await,
            _ => c.send_raw(b"\n\n\n{}\n").await,
        }
        noisy.push(c);
    }
    let moves = hex_red_wins();
    let (ea, _) = play_alternately(&mut a, &mut b, &moves).await;
    assert_eq!(ea["reason"], "connection");
    drop(idle);
    drop(noisy);
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 1);
}

#[tokio::test]
async fn the_connection_cap_holds_extra_connections_back() {
    let server = TestServer::start(
        &two_bot_config("hex", "max_connections = 1\nexit_when_done = false", "")
            .replace("exit_when_done = true\n", ""),
    )
    .await;
    let first = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut second = Client::hello(server.addr, 1, "b", "tb", &["hex"]).await;
    // Not served while the only slot is taken...
    let waited = tokio::time::timeout(Duration::from_millis(300), second.try_recv()).await;
    assert!(waited.is_err(), "served beyond the cap: {waited:?}");
    // ...and served as soon as it frees.
    drop(first);
    let w = second.expect("welcome").await;
    assert_eq!(w["name"], "b");
    server.stop().await;
}

/// A Hex gauntlet of `a` against `b` and `c`, both games at once: `a` logs in with
/// `max_games` 2, then `b` and `c`.
async fn gauntlet_with_a_playing_two_at_once() -> (TestServer, Client, Client, Client) {
    let config = support::config(
        "",
        &["a", "b", "c"],
        "hex",
        "format = \"gauntlet\"\ngames_per_pairing = 1\nconcurrency = 2",
    );
    let server = TestServer::start(&config).await;
    let a = Client::login_with(server.addr, "a", "ta", &["hex"], 2).await;
    let b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    let c = Client::login(server.addr, "c", "tc", &["hex"]).await;
    (server, a, b, c)
}

/// Reads `client`'s next message: a `turn` in `match_id` reporting `moves`.
async fn expect_turn(client: &mut Client, match_id: &str, moves: Value) {
    let t = client.expect("turn").await;
    assert_eq!(
        (&t["match"], &t["moves"]),
        (&json!(match_id), &moves),
        "{t}"
    );
}

#[tokio::test]
async fn a_bot_with_max_games_two_plays_two_matches_at_once() {
    let (server, mut a, mut b, mut c) = gauntlet_with_a_playing_two_at_once().await;
    let mut starts = Vec::new();
    while starts.len() < 2 {
        let v = a.recv().await;
        if v["type"] == "start" {
            starts.push(v["match"].as_str().unwrap().to_string());
        } else {
            assert_eq!(v["type"], "turn", "{v}");
        }
    }
    starts.sort();
    assert_eq!(starts, ["t-r1-p1-g1", "t-r2-p1-g1"]);
    let sb = b.expect("start").await;
    let sc = c.expect("start").await;
    // b's match runs while c's waits on a; both independent.
    b.send(json!({"type":"resign","match":sb["match"]})).await;
    assert_eq!(b.expect("end").await["reason"], "resign");
    c.send(json!({"type":"resign","match":sc["match"]})).await;
    // c has the first move of its game, so a `turn` may come before the `end`.
    let end = loop {
        let v = c.recv().await;
        if v["type"] != "turn" {
            break v;
        }
    };
    assert_eq!(end["type"], "end", "{end}");
    assert_eq!(end["reason"], "resign");
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 2);
    // The gauntlet's head alternates colours: first in round 1, second in round 2.
    for g in &summary.games {
        let winner = if g.result.as_str() == "first" {
            &g.first
        } else {
            &g.second
        };
        assert_eq!(winner, "a", "{g:?}");
    }
}

/// A bot in two matches at once that moves in one, then the other, then the first again: each
/// move reaches its own match (the connection keeps the way to both referees), and one match
/// ending leaves the other going.
#[tokio::test]
async fn a_bot_alternating_between_two_matches_has_each_move_reach_its_own() {
    let (server, mut a, mut b, mut c) = gauntlet_with_a_playing_two_at_once().await;
    // a's two starts and the turn of the match it moves first in.
    let (mut a_first, mut a_second) = (None, None);
    let mut turns = 0;
    while a_first.is_none() || a_second.is_none() || turns < 1 {
        let v = a.recv().await;
        match v["type"].as_str() {
            Some("start") if v["side"] == "first" => a_first = Some(v),
            Some("start") => a_second = Some(v),
            Some("turn") => turns += 1,
            _ => panic!("unexpected {v}"),
        }
    }
    let (a_first, a_second) = (a_first.unwrap(), a_second.unwrap());
    let m1 = a_first["match"].as_str().unwrap().to_string();
    let m2 = a_second["match"].as_str().unwrap().to_string();
    // x: a's opponent where a moves first; y: where a moves second.
    let (x, y) = if a_first["opponent"] == "b" {
        (&mut b, &mut c)
    } else {
        (&mut c, &mut b)
    };
    assert_eq!(y.expect("start").await["match"], m2);
    assert_eq!(y.expect("turn").await["match"], m2);
    y.play(&m2, "A1").await;
    expect_turn(&mut a, &m2, json!(["A1"])).await;
    a.play(&m1, "B2").await;
    assert_eq!(x.expect("start").await["match"], m1);
    expect_turn(x, &m1, json!(["B2"])).await;
    a.play(&m2, "C3").await;
    expect_turn(y, &m2, json!(["C3"])).await;
    x.play(&m1, "D4").await;
    expect_turn(&mut a, &m1, json!(["D4"])).await;
    a.play(&m1, "E5").await;
    expect_turn(x, &m1, json!(["E5"])).await;
    y.play(&m2, "F6").await;
    expect_turn(&mut a, &m2, json!(["F6"])).await;
    a.play(&m2, "G7").await;
    expect_turn(y, &m2, json!(["G7"])).await;
    // The first match ends; the second goes on.
    x.send(json!({"type":"resign","match":m1})).await;
    assert_eq!(x.expect("end").await["result"], "loss");
    let end = a.expect("end").await;
    assert_eq!((&end["match"], &end["result"]), (&json!(m1), &json!("win")));
    y.play(&m2, "H8").await;
    expect_turn(&mut a, &m2, json!(["H8"])).await;
    a.play(&m2, "I9").await;
    expect_turn(y, &m2, json!(["I9"])).await;
    y.send(json!({"type":"resign","match":m2})).await;
    assert_eq!(y.expect("end").await["result"], "loss");
    let (summary, out_dir, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 2);
    let games = support::read_games(&out_dir);
    let moves_of = |id: &str| {
        games
            .iter()
            .find(|g| g["match"] == id)
            .map(|g| g["moves"].clone())
            .unwrap()
    };
    assert_eq!(moves_of(&m1), json!(["B2", "D4", "E5"]));
    assert_eq!(moves_of(&m2), json!(["A1", "C3", "F6", "G7", "H8", "I9"]));
}

#[tokio::test(start_paused = true)]
async fn a_bot_that_never_shows_up_forfeits() {
    let server =
        TestServer::start_virtual_clock(&two_bot_config("hex", "", "absent_forfeit_ms = 5000"))
            .await;
    let _a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let (summary, out_dir, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 1);
    assert_eq!(summary.games[0].reason.as_str(), "forfeit");
    assert_eq!(summary.games[0].result.as_str(), "first");
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["moves"], json!([]));
}

#[tokio::test]
async fn finished_matches_are_not_replayed_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        out.join("games.jsonl"),
        format!(
            "{}\n",
            json!({"match": MATCH, "tournament": "t", "game": "hex", "first": "a",
                "second": "b", "result": "draw", "reason": "resign", "moves": [],
                "think_ms": [], "lag_ms": [], "rules": {"swap": false},
                "clock": {"initial_ms": 60000, "increment_ms": 0, "move_limit_ms": null},
                "started": "2026-11-22T21:00:00+00:00",
                "finished": "2026-11-22T21:01:00+00:00", "record": ""})
        ),
    )
    .unwrap();
    let mut config = arena::config::Config::from_toml(&two_bot_config("hex", "", "")).unwrap();
    config.server.out_dir = out;
    let listener = arena::server::bind(&config, Some("127.0.0.1:0"))
        .await
        .unwrap();
    let summary = arena::server::run(config, listener, Default::default())
        .await
        .unwrap();
    assert!(summary.tournaments_finished);
    assert!(summary.games.is_empty());
}

#[tokio::test]
async fn a_full_surakarta_game_ends_by_the_no_capture_limit() {
    let server = TestServer::start(&two_bot_config(
        "surakarta",
        "",
        "rules = { no_capture_limit = 4 }",
    ))
    .await;
    let (mut a, mut b) = two_players(&server, "surakarta").await;
    let moves: Vec<String> = ["A2-A3", "A5-A4", "B2-B3", "B5-B4"]
        .map(String::from)
        .to_vec();
    let (ea, eb) = play_sequence(&mut a, &mut b, &moves, |i| i % 2).await;
    assert_eq!(ea["result"], "draw");
    assert_eq!(eb["result"], "draw");
    assert_eq!(ea["reason"], "move_limit");
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["result"], "draw");
    assert_eq!(g["rules"]["no_capture_limit"], 4);
    let text = std::fs::read_to_string(out_dir.join("records").join(g["record"].as_str().unwrap()))
        .unwrap();
    assert!(
        text.contains("[平局]") && text.contains(";B(A,2)-(A,3);W(A,5)-(A,4)"),
        "{text}"
    );
}

#[tokio::test]
async fn a_full_jiu_game_tells_white_both_of_blacks_moves_when_the_battle_begins() {
    let fixture = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/jiu/replay_limit2.in"),
    )
    .unwrap();
    let moves: Vec<String> = fixture
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .map(|m| m.to_uppercase())
        .collect();
    assert_eq!(moves.len(), 198);
    let server = TestServer::start(&two_bot_config(
        "jiu",
        "",
        "rules = { no_capture_limit = 2 }",
    ))
    .await;
    let (mut a, mut b) = two_players(&server, "jiu").await;
    // Placement alternates White, Black; Black makes the last placement and the first battle
    // move, so White's next turn carries both.
    let mover = |i: usize| if i < 196 { i % 2 } else { 1 - (i - 196) % 2 };
    let (ea, eb) = play_sequence(&mut a, &mut b, &moves, mover).await;
    assert_eq!(ea["reason"], "move_limit");
    assert_eq!(ea["result"], "draw");
    assert_eq!(eb["result"], "draw");
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    assert_eq!(g["moves"].as_array().unwrap().len(), 198);
    assert_eq!(g["game"], "jiu");
}

/// Who is connected is news the server tells its subscribers (the web view's bot list follows
/// it): a login, a bot leaving, and not a connection a newer login of the bot replaced.
#[tokio::test]
async fn bots_logging_in_and_leaving_are_told_to_subscribers() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let subscriber = arena::server::Subscriber::news(std::sync::Arc::new(
        move |event: &arena::server::ServerEvent<'_>| {
            use arena::server::ServerEvent;
            let told = match event {
                ServerEvent::BotConnected { bot, games } => format!("{bot} in {games:?}"),
                ServerEvent::BotDisconnected { bot } => format!("{bot} out"),
                _ => return,
            };
            let _ = tx.send(told);
        },
    ));
    let config = two_bot_config("hex", "", "").replace("exit_when_done = true", "");
    let server = TestServer::start_subscribed(&config, subscriber).await;
    async fn told(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("an event in time")
            .expect("the server runs")
    }
    let a = Client::login(server.addr, "a", "ta", &["hex", "chess"]).await;
    assert_eq!(told(&mut rx).await, "a in [Hex]");
    // A newer login of `a` replaces the first connection: `a` never left.
    let mut again = Client::login(server.addr, "a", "ta", &["hex"]).await;
    assert_eq!(told(&mut rx).await, "a in [Hex]");
    drop(a);
    let b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    assert_eq!(told(&mut rx).await, "b in [Hex]");
    again.expect("start").await;
    drop(again);
    assert_eq!(told(&mut rx).await, "a out");
    drop(b);
    assert_eq!(told(&mut rx).await, "b out");
    server.shutdown.cancel();
}

/// Issue: a bot that answered each ping late had its think time credited back as lag (up to
/// max_lag_ms) and never lost on time.
#[tokio::test(start_paused = true)]
async fn late_pongs_earn_no_lag_credit() {
    let config = two_bot_config("hex", "max_lag_ms = 500", "");
    let server = TestServer::start_virtual_clock(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    a.answer_pings = false;
    b.answer_pings = false;
    a.expect("turn").await;
    let ping = a.expect("ping").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.send(json!({"type":"pong","id":ping["id"]})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.play(MATCH, "A1").await;
    // b was pinged while a thought and answers only after its turn came: a round trip of
    // 1400 ms, credited at most 500.
    let ping = b.expect("ping").await;
    b.expect("turn").await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    b.send(json!({"type":"pong","id":ping["id"]})).await;
    b.play(MATCH, "C1").await;
    a.answer_pings = true;
    a.expect("turn").await;
    a.send(json!({"type":"resign","match":MATCH})).await;
    let (_, out_dir, _dir) = server.finished().await;
    let g = &support::read_games(&out_dir)[0];
    // Pongs answered late buy nothing: lag credit comes only from the kernel's round-trip
    // estimate of the connection, well under a millisecond on loopback. a used 1000 ms to the
    // first ping + 200 + 300 = 1500 ms, all of it charged.
    assert_eq!(g["lag_ms"], json!([0, 0]));
    assert_eq!(g["think_ms"][0], 1500);
}

#[tokio::test]
async fn a_bot_that_does_not_read_is_dropped_without_holding_up_its_opponent() {
    let server = TestServer::start(&two_bot_config(
        "hex",
        "write_queue_lines = 16\nreconnect_grace_ms = 300",
        "",
    ))
    .await;
    let (mut a, b) = two_players(&server, "hex").await;
    // b floods out-of-turn moves (each answered by an error line) and never reads a byte.
    let flood = tokio::spawn(async move {
        let mut b = b;
        let line = format!("{}\n", json!({"type":"move","match":MATCH,"move":"K11"}));
        let chunk = line.repeat(1000);
        for _ in 0..400 {
            if tokio::io::AsyncWriteExt::write_all(b.writer_mut(), chunk.as_bytes())
                .await
                .is_err()
            {
                return true;
            }
        }
        false
    });
    a.expect("turn").await;
    // b's connection is dropped once its queue is full; it then loses after the grace.
    let end = a.expect("end").await;
    assert_eq!(end["reason"], "disconnect");
    assert_eq!(end["result"], "win");
    assert!(
        flood.await.unwrap(),
        "the server closed the flooding connection"
    );
    server.finished().await;
}

/// Runs the real binary: `arena serve --config FILE --listen 127.0.0.1:0`, reads the bound
/// address it prints, plays a game through it, and checks it exits by itself.
#[tokio::test]
async fn the_binary_serves_a_config_and_exits_when_done() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("arena.toml");
    let out = dir.path().join("out");
    let config = two_bot_config("hex", &format!("out_dir = {:?}", out.to_str().unwrap()), "");
    std::fs::write(&config_path, config).unwrap();
    let child = spawn_server(&config_path).await;
    let addr = child.addr;
    let mut a = Client::login(addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(addr, "b", "tb", &["hex"]).await;
    a.expect("start").await;
    b.expect("start").await;
    a.expect("turn").await;
    b.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(a.expect("end").await["result"], "win");
    let (status, _) = child.exited(Duration::from_secs(30)).await;
    assert!(status.success());
    assert_eq!(support::read_games(&out).len(), 1);
}

#[tokio::test]
async fn the_binary_refuses_a_bad_config_naming_the_key() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config/unknown_bot_in_tournament.toml");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["serve", "--config"])
        .arg(&fixture)
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tournament[0].bots"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_engines_play_a_league_of_all_four_games_through_the_listener() {
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("arena.toml"),
    )
    .unwrap();
    // The demo's program bot runs sandboxed only under the real binary (tests/sandbox.rs
    // plays it there); this in-process server keeps the built-in bots.
    let mut config: toml::Table = shipped.parse().unwrap();
    let bots = config["bot"].as_array_mut().unwrap();
    let programs: Vec<toml::Value> = bots
        .iter()
        .filter(|b| b.get("program").is_some())
        .map(|b| b["name"].clone())
        .collect();
    assert!(!programs.is_empty(), "the demo has a program bot");
    bots.retain(|b| b.get("program").is_none());
    for tournament in config["tournament"].as_array_mut().unwrap() {
        let names = tournament["bots"].as_array_mut().unwrap();
        names.retain(|name| !programs.contains(name));
    }
    let server = TestServer::start(&toml::to_string(&config).unwrap()).await;
    let (summary, out_dir, _dir) = server.finished().await;
    assert!(summary.tournaments_finished);
    // connect6 4 + hex 2 (one game a leg) + surakarta gauntlet 2×2 + jiu Swiss 2 rounds of
    // one game.
    assert_eq!(summary.games.len(), 12);
    let games = support::read_games(&out_dir);
    assert_eq!(games.len(), 12);
    for g in &games {
        let reason = g["reason"].as_str().unwrap();
        let board = [
            "six_in_row",
            "board_full",
            "connection",
            "no_pieces",
            "move_limit",
            "no_moves",
            "few_stones",
        ];
        assert!(
            board.contains(&reason),
            "a built-in engine game ends on the board: {g}"
        );
        let record = out_dir.join("records").join(g["record"].as_str().unwrap());
        match arena::record::check_file(&record) {
            arena::record::CheckVerdict::Ok {
                reached: Some(outcome),
            } => {
                assert_eq!(outcome.reason.as_str(), reason);
            }
            other => panic!("{}: {other:?}", record.display()),
        }
    }
}

#[tokio::test]
async fn a_scripted_bot_plays_a_built_in_engine() {
    let config = support::config(
        "",
        &["a", "engine:random"],
        "hex",
        "games_per_pairing = 1\nclock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }",
    );
    let server = TestServer::start(&config).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let start = a.expect("start").await;
    assert_eq!(start["opponent"], "engine");
    a.expect("turn").await;
    a.play(MATCH, "F6").await;
    let turn = a.expect("turn").await;
    assert_eq!(turn["ply"], 2);
    assert_eq!(turn["moves"].as_array().unwrap().len(), 1);
    a.send(json!({"type":"resign","match":MATCH})).await;
    assert_eq!(a.expect("end").await["reason"], "resign");
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games[0].result.as_str(), "second");
}

#[test]
fn arena_token_prints_a_strong_random_token() {
    let token = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
            .arg("token")
            .output()
            .expect("run arena token");
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_string()
    };
    let (one, two) = (token(), token());
    assert_eq!(one.len(), 32, "{one}");
    assert!(one.bytes().all(|b| b.is_ascii_hexdigit()), "{one}");
    assert_ne!(one, two);
}

#[test]
fn short_tokens_are_refused_unless_the_bot_says_weak_token() {
    let text = two_bot_config("hex", "", "");
    let config = arena::config::Config::from_toml(&text).expect("config");
    // The test config's tokens ("ta", "tb") are far too short; it allows them for `a` and `b`.
    assert_eq!(
        config.bots_with_short_tokens(),
        (vec![], vec!["a".to_string(), "b".to_string()])
    );
    let strict = text.replace("weak_token = true\n", "");
    let config = arena::config::Config::from_toml(&strict).expect("config");
    assert_eq!(
        config.bots_with_short_tokens(),
        (vec!["a".to_string(), "b".to_string()], vec![])
    );
    // `arena serve` does not start with them, names the file and each key as every config
    // refusal does, and leaves nothing behind (no out_dir, no arena.log).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.toml");
    std::fs::write(&path, strict).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["serve", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let keys = format!("{}: bot[0].token, bot[1].token: ", path.display());
    assert!(stderr.contains(&keys), "{stderr}");
    assert!(stderr.contains("weak_token = true"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("arena.toml")]);
}

#[test]
fn arena_serve_errors_say_the_system_message_once() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["serve", "--config", "/no/such/arena.toml"])
        .output()
        .expect("run arena serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("os error 2").count(), 1, "{stderr}");
}

#[tokio::test]
async fn answering_pings_late_earns_no_lag_credit() {
    let server = TestServer::start(
        &two_bot_config(
            "hex",
            "max_lag_ms = 500",
            "clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 400 }",
        )
        .replace(
            "clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }\n",
            "",
        )
        .replace("ping_interval_ms = 1000", "ping_interval_ms = 100"),
    )
    .await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    a.answer_pings = false;
    // The bot answers its ping 600 ms late: an application round trip it controls.
    let ping = a.recv().await;
    assert_eq!(ping["type"], "ping", "{ping}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    a.send(json!({"type":"pong","id":ping["id"]})).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    b.expect("start").await;
    let turn = loop {
        let line = a.recv().await;
        if line["type"] == "turn" {
            break line;
        }
    };
    assert_eq!(turn["ply"], 0);
    // It thinks 650 ms against a 400 ms limit: no credit from its slow pong saves it.
    tokio::time::sleep(Duration::from_millis(650)).await;
    a.play(MATCH, "F6").await;
    let end = loop {
        let line = a.recv().await;
        if line["type"] == "end" {
            break line;
        }
    };
    assert_eq!(
        (end["result"].as_str(), end["reason"].as_str()),
        (Some("loss"), Some("timeout")),
        "{end}"
    );
    server.finished().await;
}

/// A hung bot is suspended after `suspend_after_faults` (3) losses on time in a row instead of
/// losing one game per move limit for the rest of the league; fixed and reconnected, it plays
/// on and loses nothing more. The journal, standings and `/api/bots`-facing registry say so.
#[tokio::test(start_paused = true)]
async fn a_hung_bot_is_suspended_after_three_timeouts_and_may_come_back() {
    let config = two_bot_config(
        "hex",
        "",
        "absent_forfeit_ms = 600000\ngames_per_pairing = 5",
    )
    .replace("games_per_pairing = 1\n", "")
    .replace("move_limit_ms = 0", "move_limit_ms = 500");
    let server = TestServer::start_virtual_clock(&config).await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    // Three games: `a` moves when it is its turn, `b` never answers.
    for game in 1..=3 {
        let start = a.expect("start").await;
        let id = start["match"].as_str().unwrap().to_string();
        assert_eq!(id, format!("t-r1-p1-g{game}"));
        if start["side"] == "first" {
            a.expect("turn").await;
            a.play(&id, "A1").await;
        }
        let end = a.expect("end").await;
        assert_eq!(
            (end["result"].clone(), end["reason"].clone()),
            (json!("win"), json!("timeout"))
        );
    }
    // `b` hears why and is disconnected.
    let mut suspended = None;
    for line in b.until_closed().await {
        if line["type"] == "error" && line["code"] == "suspended" {
            suspended = Some(line);
        }
    }
    let suspended = suspended.expect("an error suspended before the connection closes");
    let why = suspended["message"].as_str().unwrap();
    assert!(why.contains("3 losses in a row"), "{why}");
    assert!(why.contains("timeout in t-r1-p1-g3"), "{why}");
    assert!(why.contains("connect again"), "{why}");
    // No fourth game was lost meanwhile: the next game waits for `b`.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(server.games_jsonl_at_least(3).await.len(), 3);
    // Fixed, `b` comes back and plays: it resigns the two games left, which count normally.
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    for _ in 4..=5 {
        let start = b.expect("start").await;
        let id = start["match"].as_str().unwrap().to_string();
        a.expect("start").await;
        b.send(json!({"type":"resign","match":id})).await;
        // Either may have been given its first turn before `b` resigned.
        let end = loop {
            let line = b.recv().await;
            if line["type"] == "end" {
                break line;
            }
        };
        assert_eq!(end["reason"], "resign");
        while a.recv().await["type"] != "end" {}
    }
    let (summary, out_dir, _dir) = server.finished().await;
    let reasons: Vec<&str> = summary.games.iter().map(|g| g.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["timeout", "timeout", "timeout", "resign", "resign"]
    );
    let journal = std::fs::read_to_string(out_dir.join("journal.jsonl")).unwrap();
    let entries: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["kind"] == "suspended")
        .collect();
    assert_eq!(entries.len(), 1, "{journal}");
    assert_eq!(entries[0]["bot"], "b");
    let standings: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("standings.json")).unwrap())
            .unwrap();
    let row = |name: &str| {
        standings["tournaments"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(row("b")["suspensions"], 1);
    assert_eq!(row("b")["timeout_losses"], 3);
    assert_eq!(row("a")["suspensions"], 0);
}

/// Tokens cannot be guessed by trying: after five failed logins in a minute an address is
/// refused for a minute, even with the right token, and told so; then it may log in again.
#[tokio::test(start_paused = true)]
async fn failed_logins_are_limited_per_address() {
    let server =
        TestServer::start_virtual_clock(&two_bot_config("hex", "", "absent_forfeit_ms = 0")).await;
    for attempt in 1..=5 {
        // A second apart: faster guesses at one name meet the name's own limit first.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut c = Client::hello(server.addr, 1, "a", &format!("guess-{attempt}"), &["hex"]).await;
        let e = c.expect_error("auth_failed").await;
        let message = e["message"].as_str().unwrap();
        assert_eq!(
            message.contains("refused for 60 s"),
            attempt == 5,
            "attempt {attempt}: {message}"
        );
        assert!(c.until_closed().await.is_empty());
    }
    let mut c = Client::hello(server.addr, 1, "a", "ta", &["hex"]).await;
    let e = c.expect_error("too_many_failed_logins").await;
    assert!(
        e["message"].as_str().unwrap().contains("try again in 60 s"),
        "{e}"
    );
    assert!(c.until_closed().await.is_empty());
    tokio::time::sleep(Duration::from_secs(61)).await;
    let _a = Client::login(server.addr, "a", "ta", &["hex"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_league_is_over_bots_are_told_and_stop() {
    let config = support::config(
        "exit_when_done = false",
        &["a", "b"],
        "hex",
        "games_per_pairing = 1\nclock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }",
    );
    let server = TestServer::start(&config).await;
    let (mut a, mut b) = two_players(&server, "hex").await;
    play_alternately(&mut a, &mut b, &hex_red_wins()).await;
    // Both are told, then the connection closes.
    for client in [&mut a, &mut b] {
        let told = client.until_closed().await;
        let last = told.last().expect("a last message");
        assert_eq!(last["code"], "league_over", "{told:?}");
        assert!(last["message"].as_str().unwrap().contains("league is over"));
    }
    // A bot that comes later hears the same instead of `welcome`.
    let mut late = Client::hello(server.addr, 1, "a", "ta", &["hex"]).await;
    late.expect_error("league_over").await;
    assert!(late.until_closed().await.is_empty());

    // `arena bot` and the example Python bot say so and stop at once, with success.
    let addr = server.addr.to_string();
    let port = server.addr.port().to_string();
    let mut bot = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"));
    bot.args(["bot", "--server", &addr, "--name", "a", "--token", "ta"])
        .args(["--engine", "random", "--games", "hex"]);
    let python = support::python_bot(&["--port", &port, "--name", "b", "--token", "tb"]);
    for (mut command, what) in [(bot, "arena bot"), (python, "the example bot")] {
        let output = support::output_within(&mut command, Duration::from_secs(20), what).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{what}: {stderr}");
        assert!(stderr.contains("the league is over"), "{what}: {stderr}");
    }
    server.shutdown.cancel();
}

/// A bot that has answered a ping and then leaves one unanswered for `pong_timeout_ms` is
/// disconnected; one that never answered any is not (the protocol does not oblige a bot to).
/// Each logs in alone, so no game starts.
#[tokio::test(start_paused = true)]
async fn a_bot_that_stops_answering_pings_is_disconnected_one_that_never_did_is_not() {
    let server = TestServer::start_virtual_clock(
        &two_bot_config("hex", "pong_timeout_ms = 300", "")
            .replace("ping_interval_ms = 1000", "ping_interval_ms = 100"),
    )
    .await;
    let mut a = Client::login(server.addr, "a", "ta", &["hex"]).await;
    a.answer_pings = false;
    let first = a.expect("ping").await;
    a.send(json!({"type":"pong","id":first["id"]})).await;
    // Now `a` goes quiet: its next ping goes unanswered and it is dropped.
    let second = a.expect("ping").await;
    assert_ne!(second["id"], first["id"]);
    let quiet_since = tokio::time::Instant::now();
    let rest = a.until_closed().await;
    let waited = quiet_since.elapsed();
    assert!(rest.iter().all(|line| line["type"] == "ping"), "{rest:?}");
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_millis(1000),
        "dropped {waited:?} after the unanswered ping"
    );
    // `b` never answers its ping (and gets no other while it is outstanding): long after the
    // pong timeout it is still connected, and still answered.
    let mut b = Client::login(server.addr, "b", "tb", &["hex"]).await;
    b.answer_pings = false;
    b.expect("ping").await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    b.play("no-such-match", "A1").await;
    b.expect_error("unknown_match").await;
}

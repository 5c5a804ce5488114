//! The web view's JSON API, events, records and WebSocket seat, through real HTTP on port 0:
//! every route and every error, positions checked against the rules; and `arena serve --web`
//! and `arena site` through the real binary (the printed address, the static site written at
//! exit and on demand, a bad address refused).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
mod web_support;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use arena::game::{new_game, GameId, Side};
use support::Client;
use web_support::{percent_encode, request, request_with, Events, WebServer};

const HEX_LEAGUE: &str = r#"
[server]
listen = "127.0.0.1:0"
web_max_event_streams = 3
web_max_sockets = 2
ping_interval_ms = 60000
exit_when_done = false

[[bot]]
name = "alice"
token = "a-token"

[[bot]]
name = "bob"
token = "b-token"

[[tournament]]
name = "t"
game = "hex"
format = "round-robin"
bots = ["alice", "bob"]
games_per_pairing = 1
clock = { initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }
rules = { swap = false }
"#;

/// The moves of a quick Hex game the first side wins: it fills column A (rows 1 to 11, joined
/// bottom to top) while the second side fills column B.
fn column_game() -> Vec<String> {
    let mut moves = Vec::new();
    for row in 1..=11 {
        moves.push(format!("A{row}"));
        if row < 11 {
            moves.push(format!("B{row}"));
        }
    }
    moves
}

/// Plays `moves` for two clients already started (`players[0]` moves first).
async fn play_out(first: &mut impl Seat, second: &mut impl Seat, match_id: &str, moves: &[String]) {
    for (ply, mv) in moves.iter().enumerate() {
        if ply % 2 == 0 {
            first.expect_turn().await;
            first.play(match_id, mv).await;
        } else {
            second.expect_turn().await;
            second.play(match_id, mv).await;
        }
    }
}

/// A bot the test drives: over TCP or over the web view's WebSocket.
#[allow(async_fn_in_trait)]
trait Seat {
    async fn expect_turn(&mut self);
    async fn play(&mut self, match_id: &str, mv: &str);
}

impl Seat for Client {
    async fn expect_turn(&mut self) {
        self.expect("turn").await;
    }
    async fn play(&mut self, match_id: &str, mv: &str) {
        Client::play(self, match_id, mv).await;
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct WsBot {
    socket: Ws,
}

impl WsBot {
    async fn connect(server: &WebServer) -> WsBot {
        let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", server.web))
            .await
            .expect("WebSocket upgrade");
        WsBot { socket }
    }

    async fn send(&mut self, value: Value) {
        self.socket
            .send(Message::Text(value.to_string().into()))
            .await
            .expect("send frame");
    }

    /// The next message other than `ping` (answered), or `None` once the socket closes.
    async fn recv(&mut self) -> Option<Value> {
        loop {
            let frame =
                tokio::time::timeout(std::time::Duration::from_secs(20), self.socket.next())
                    .await
                    .expect("a frame in time");
            match frame {
                Some(Ok(Message::Text(text))) => {
                    let value: Value =
                        serde_json::from_str(text.as_str()).expect("frames are JSON");
                    if value["type"] == "ping" {
                        let id = value["id"].clone();
                        self.send(json!({"type": "pong", "id": id})).await;
                        continue;
                    }
                    return Some(value);
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => continue,
            }
        }
    }

    async fn expect(&mut self, kind: &str) -> Value {
        let value = self.recv().await.expect("socket open");
        assert_eq!(value["type"], kind, "expected {kind}, got {value}");
        value
    }
}

impl Seat for WsBot {
    async fn expect_turn(&mut self) {
        self.expect("turn").await;
    }
    async fn play(&mut self, match_id: &str, mv: &str) {
        self.send(json!({"type": "move", "match": match_id, "move": mv}))
            .await;
    }
}

/// Every position after each move, as the rules compute them.
fn positions_of(game: GameId, rules: &Value, moves: &[String]) -> Vec<String> {
    let mut position = new_game(game, rules).expect("rules");
    let mut out = vec![position.position_text()];
    for m in moves {
        position.play_text(m).expect("legal move");
        out.push(position.position_text());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_is_followed_through_every_route() {
    let server = WebServer::start(HEX_LEAGUE).await;

    // Before anyone connects: no game, and the bots wait because they are not connected.
    assert_eq!(server.get_json("/api/games").await, json!({"games": []}));
    let bots = server
        .wait_for("/api/bots", |v| {
            v["bots"][0]["waiting"]
                .as_array()
                .is_some_and(|w| w.iter().any(|r| r == "not connected"))
        })
        .await;
    assert_eq!(bots["bots"][0]["connected"], false);
    assert_eq!(bots["bots"][1]["name"], "bob");

    // Three event streams are allowed, the fourth is refused with a JSON error.
    let mut events = Events::open(server.web).await;
    assert_eq!(events.status, 200);
    assert!(
        events
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("content-type")
                && v.starts_with("text/event-stream"))
    );
    let second = Events::open(server.web).await;
    let third = Events::open(server.web).await;
    assert_eq!((second.status, third.status), (200, 200));
    let refused = server.get("/api/events").await;
    assert_eq!(refused.status, 503);
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("web_max_event_streams"));
    drop((second, third));

    let mut alice = Client::login(server.addr, "alice", "a-token", &["hex"]).await;
    let mut bob = Client::login(server.addr, "bob", "b-token", &["hex"]).await;
    let start = alice.expect("start").await;
    bob.expect("start").await;
    let match_id = start["match"].as_str().unwrap().to_string();
    let alice_first = start["side"] == "first";
    // One game's own stream: every event of it as it happens.
    let mut game_events =
        Events::open_path(server.web, &format!("/api/events?match={match_id}")).await;
    assert_eq!(game_events.status, 200);

    let games = server
        .wait_for("/api/games", |v| {
            v["games"].as_array().is_some_and(|g| g.len() == 1)
        })
        .await;
    let entry = &games["games"][0];
    assert_eq!(entry["match"], match_id.as_str());
    assert_eq!(entry["status"], "playing");
    assert_eq!(entry["tournament"], "t");
    assert_eq!(entry["game"], "hex");
    assert_eq!(entry["result"], Value::Null);
    let live = server.get_json(&format!("/api/games/{match_id}")).await;
    assert_eq!(live["status"], "playing");
    assert_eq!(live["positions"].as_array().unwrap().len(), 1);

    let moves = column_game();
    if alice_first {
        play_out(&mut alice, &mut bob, &match_id, &moves).await;
    } else {
        play_out(&mut bob, &mut alice, &match_id, &moves).await;
    }
    alice.expect("end").await;
    bob.expect("end").await;

    let games = server
        .wait_for("/api/games", |v| v["games"][0]["status"] == "finished")
        .await;
    assert_eq!(games["games"][0]["result"], "first");
    assert_eq!(games["games"][0]["reason"], "connection");
    assert_eq!(games["games"][0]["ply"], 21);

    // The game with every position, each as the rules compute it.
    let detail = server.get_json(&format!("/api/games/{match_id}")).await;
    let rules = json!({"swap": false});
    let expected = positions_of(GameId::Hex, &rules, &moves);
    assert_eq!(detail["positions"], json!(expected));
    assert_eq!(detail["moves"], json!(moves));
    assert_eq!(detail["think_ms"].as_array().unwrap().len(), moves.len());
    assert_eq!(detail["status"], "finished");
    assert_eq!(detail["result"], "first");
    assert_eq!(detail["reason"], "connection");
    assert_eq!(detail["rules"]["swap"], false);
    assert_eq!(detail["clock"]["initial_ms"], 60000);
    assert!(detail["clocks"]["first_ms"].as_u64().unwrap() <= 60000);
    let record = detail["record"].as_str().expect("record name").to_string();

    // The game's stream: one move per ply with the position after it, then the end.
    for ply in 1..=moves.len() {
        let (kind, data) = game_events.next().await.expect("move event");
        assert_eq!(kind, "move", "{data}");
        assert_eq!(data["match"], match_id.as_str());
        assert_eq!(data["ply"], ply);
        assert_eq!(data["move"], moves[ply - 1].as_str());
        assert_eq!(data["position"], expected[ply].as_str());
        assert!(data["clocks"]["first_ms"].is_u64());
        // The think time as the game's detail has it, so a live page shows it at once.
        assert_eq!(data["think_ms"], detail["think_ms"][ply - 1], "{data}");
    }
    let (kind, data) = game_events.next().await.expect("end event");
    assert_eq!(kind, "end");
    assert_eq!(data["record"], record.as_str());

    // The league's stream, in batches: both bots logging in, start, the game's latest moves
    // (each with the position after it, the last one included), end, standings.
    let mut logged_in = Vec::new();
    let (kind, data) = loop {
        let (kind, data) = events.next().await.expect("an event");
        if kind != "bots" {
            break (kind, data);
        }
        logged_in.push(data["bot"].as_str().unwrap().to_string());
    };
    // Both logins are told before the game starts (the bots leaving when the league ends
    // are told too, at a moment the reads below skip).
    logged_in.sort();
    assert_eq!(logged_in, ["alice", "bob"]);
    assert_eq!(
        (kind.as_str(), data["match"].as_str()),
        ("start", Some(match_id.as_str()))
    );
    let mut last_ply = 0;
    let (kind, data) = loop {
        let (kind, data) = events.next_skipping("bots").await.expect("an event");
        if kind != "move" {
            break (kind, data);
        }
        let ply = data["ply"].as_u64().unwrap() as usize;
        assert!(ply > last_ply, "plies only go forward: {data}");
        assert_eq!(data["position"], expected[ply].as_str());
        last_ply = ply;
    };
    assert_eq!(last_ply, moves.len(), "the last move is always sent");
    assert_eq!(kind, "end");
    assert_eq!(data["record"], record.as_str());
    assert_eq!(data["result"], "first");
    let (kind, data) = events.next_skipping("bots").await.expect("standings event");
    assert_eq!(
        (kind.as_str(), &data["tournament"]),
        ("standings", &json!("t"))
    );

    // The standings, as standings.json has them.
    let standings = server.get_json("/api/standings").await;
    let winner = if alice_first { "alice" } else { "bob" };
    assert_eq!(standings["tournaments"][0]["name"], "t");
    assert_eq!(standings["tournaments"][0]["rows"][0]["name"], winner);
    assert_eq!(standings["tournaments"][0]["rows"][0]["wins"], 1);

    // The record file, byte for byte, as a download.
    let response = server
        .get(&format!("/records/{}", percent_encode(&record)))
        .await;
    assert_eq!(response.status, 200);
    let on_disk = std::fs::read(server.out_dir.join("records").join(&record)).unwrap();
    assert_eq!(response.body, on_disk);
    let disposition = response.header("content-disposition").unwrap();
    assert!(
        disposition.starts_with("attachment; filename=\""),
        "{disposition}"
    );
    assert!(disposition.contains(&format!("filename*=UTF-8''{}", percent_encode(&record))));

    // The pages and their assets.
    for path in ["/", &format!("/games/{match_id}"), "/play"] {
        let page = server.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        assert!(page
            .header("content-type")
            .unwrap()
            .starts_with("text/html"));
        assert!(page.text().contains("/assets/board.js"));
    }
    for asset in ["style.css", "board.js", "app.js", "icon.svg"] {
        assert_eq!(server.get(&format!("/assets/{asset}")).await.status, 200);
    }
    // Browsers ask for /favicon.ico by themselves.
    let icon = server.get("/favicon.ico").await;
    assert_eq!(icon.status, 200);
    assert_eq!(icon.header("content-type"), Some("image/svg+xml"));
    // An unknown game's page is a 404 page that says so (the name escaped).
    let missing = server.get("/games/no-such-%3Cgame%3E").await;
    assert_eq!(missing.status, 404);
    assert!(missing
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(
        missing
            .text()
            .contains("No game no-such-&lt;game&gt; is known here"),
        "{}",
        missing.text()
    );

    // Every bad request: a 4xx with a JSON error, and the server carries on.
    for (path, status) in [
        ("/api/games/no-such-match", 404),
        ("/api/moves", 400),
        ("/api/moves?game=chess&position=x", 400),
        ("/api/moves?game=hex", 400),
        ("/api/moves?game=hex&position=not-a-position", 400),
        ("/api/moves?game=hex&position=x&rules=%5B%5D", 400),
        ("/records/no-such-record.txt", 404),
        ("/records/..%2Fgames.jsonl", 400),
        ("/records/.hidden", 400),
        ("/assets/nothing.js", 404),
        ("/no/such/page", 404),
    ] {
        let response = server.get(path).await;
        assert_eq!(response.status, status, "{path}: {}", response.text());
        assert!(response.json()["error"].is_string(), "{path}");
    }
    let post = request(server.web, "POST", "/api/games").await;
    assert_eq!(post.status, 405);
    assert!(post.json()["error"].is_string());

    server.shutdown.cancel();
    server.finished().await;
}

/// A games.jsonl line of Hex game `id` of tournament `t`, as the server writes it: `first`
/// played `moves` and won by `reason` (a forfeit has no moves), between `started` and
/// `finished` (RFC 3339).
fn hex_line(
    id: &str,
    players: [&str; 2],
    moves: &[String],
    reason: &str,
    times: [&str; 2],
) -> String {
    json!({
        "match": id, "tournament": "t", "game": "hex", "first": players[0], "second": players[1],
        "result": "first", "reason": reason, "moves": moves, "think_ms": vec![5; moves.len()],
        "lag_ms": vec![0; moves.len()], "rules": {"swap": false},
        "clock": {"initial_ms": 60000, "increment_ms": 0, "move_limit_ms": 0},
        "started": times[0], "finished": times[1], "record": format!("{id}.txt"),
    })
    .to_string()
}

/// After a restart the games of the earlier run are listed in the order they started (the
/// spec's order, as during the run), not in games.jsonl's finish order; a forfeit, which
/// never started, is not listed and has no game, as during the run; the static site agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_of_an_earlier_run_are_listed_in_start_order_without_forfeits() {
    let config = HEX_LEAGUE.replace("games_per_pairing = 1", "games_per_pairing = 3");
    let moves = column_game();
    // Appended as they finished: g2, the forfeit g3, then g1, which started first.
    let lines = [
        hex_line(
            "t-r1-p1-g2",
            ["bob", "alice"],
            &moves,
            "connection",
            ["2026-11-22T21:10:00+00:00", "2026-11-22T21:12:00+00:00"],
        ),
        hex_line(
            "t-r1-p1-g3",
            ["alice", "bob"],
            &[],
            "forfeit",
            ["2026-11-22T21:20:00+00:00", "2026-11-22T21:20:00+00:00"],
        ),
        hex_line(
            "t-r1-p1-g1",
            ["alice", "bob"],
            &moves,
            "connection",
            ["2026-11-22T21:00:00+00:00", "2026-11-22T21:30:00+00:00"],
        ),
    ];
    let server = WebServer::start_after(&config, |out| {
        std::fs::write(out.join("games.jsonl"), lines.join("\n") + "\n").unwrap();
    })
    .await;
    let ids = |games: &Value| -> Vec<String> {
        games["games"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["match"].as_str().unwrap().to_string())
            .collect()
    };
    let games = server.get_json("/api/games").await;
    assert_eq!(ids(&games), ["t-r1-p1-g1", "t-r1-p1-g2"], "{games}");
    let forfeit = server.get("/api/games/t-r1-p1-g3").await;
    assert_eq!(forfeit.status, 404, "{}", forfeit.text());
    // The message docs/web.md gives.
    let message = forfeit.json()["error"].as_str().unwrap().to_string();
    let docs = include_str!("../docs/web.md");
    assert!(
        docs.contains(&format!("`404 {{\"error\": \"{message}\"}}`")),
        "{message}"
    );
    assert_eq!(server.get("/games/t-r1-p1-g3").await.status, 404);

    // The static site: the same list, a page for each game listed and none for the forfeit.
    let site = server.dir.path().join("site");
    arena::web::site::write_site(&server.config, &site).unwrap();
    let read = |path: &str| -> Value {
        serde_json::from_slice(&std::fs::read(site.join(path)).unwrap()).unwrap()
    };
    assert_eq!(read("api/games.json"), games);
    for id in ["t-r1-p1-g1", "t-r1-p1-g2"] {
        assert!(site.join(format!("games/{id}.html")).exists(), "{id}");
        assert_eq!(
            read(&format!("api/games/{id}.json")),
            server.get_json(&format!("/api/games/{id}")).await
        );
    }
    assert!(!site.join("games/t-r1-p1-g3.html").exists());
    assert!(!site.join("api/games/t-r1-p1-g3.json").exists());
    server.shutdown.cancel();
    server.finished().await;
}

/// Requests that axum's own extractors refuse (a path or query that does not decode, `/ws`
/// without its WebSocket headers) get the API's JSON error too, with the security headers;
/// the game page's 404 stays a page for people.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_of_the_api_is_json_even_the_frameworks_own() {
    let server = WebServer::start(HEX_LEAGUE).await;
    let upgrade = [
        ("connection", "upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    let bad_version = [&upgrade[..], &[("sec-websocket-version", "12")]].concat();
    let no_key = [
        ("connection", "upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
    ];
    /// A request's path and headers, and a word its error must say.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 6] = [
        ("/ws", &[], "upgrade"),
        ("/ws", &bad_version, "version"),
        ("/ws", &no_key, "key"),
        ("/api/games/%FF", &[], "UTF-8"),
        ("/records/%FF", &[], "UTF-8"),
        ("/api/events?match=a&match=b", &[], "match"),
    ];
    for (path, headers, says) in cases {
        let response = request_with(server.web, "GET", path, headers).await;
        assert!(
            (400..500).contains(&response.status),
            "{path} {headers:?}: {} {}",
            response.status,
            response.text()
        );
        assert_eq!(
            response.header("content-type"),
            Some("application/json"),
            "{path} {headers:?}: {}",
            response.text()
        );
        let error = response.json()["error"].as_str().unwrap_or("").to_string();
        assert!(
            error.to_lowercase().contains(&says.to_lowercase()) && !error.is_empty(),
            "{path}: {error:?}"
        );
        assert!(
            response.header("content-security-policy").is_some(),
            "{path}"
        );
    }
    // A page for people keeps its HTML 404.
    let page = server.get("/games/no-such-game").await;
    assert_eq!(page.status, 404);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    server.shutdown.cancel();
    server.finished().await;
}

/// The pages draw every game from `/api/games/meta`: each game the server knows is there with
/// every fact, and the facts agree with the rules (a position text has `board_size` rows of
/// `board_size` points; the letters are the protocol's).
#[tokio::test]
async fn every_game_has_its_facts_in_the_meta_route() {
    let server = WebServer::start(HEX_LEAGUE).await;
    let meta = server.get_json("/api/games/meta").await;
    let listed = meta["games"].as_array().expect("games");
    assert_eq!(listed.len(), GameId::ALL.len(), "{meta}");
    for game in GameId::ALL {
        let facts = listed
            .iter()
            .find(|f| f["id"] == game.as_str())
            .unwrap_or_else(|| panic!("{game} missing from {meta}"));
        let size = facts["board_size"].as_u64().expect("board_size") as usize;
        let start = new_game(game, &json!({})).unwrap().position_text();
        let rows: Vec<&str> = start.split(' ').next().unwrap().split('/').collect();
        assert_eq!(rows.len(), size, "{game}: {start}");
        assert!(
            rows.iter().all(|r| r.chars().count() == size),
            "{game}: {start}"
        );
        assert!(
            ["lines", "circuits", "hexagons"].contains(&facts["board"].as_str().unwrap_or("")),
            "{facts}"
        );
        for (i, side) in [Side::First, Side::Second].into_iter().enumerate() {
            let s = &facts["sides"][i];
            assert_eq!(s["letter"], game.colour_letter(side).to_string(), "{facts}");
            assert!(
                ["black", "white", "red", "blue"].contains(&s["colour"].as_str().unwrap_or("")),
                "{facts}"
            );
        }
        assert_ne!(
            facts["sides"][0]["colour"], facts["sides"][1]["colour"],
            "{facts}"
        );
        assert_eq!(facts["stones_per_turn"], game.stones_per_turn(), "{facts}");
        assert_eq!(facts["record_code"], game.record_code(), "{facts}");
        for point in facts["star_points"].as_array().expect("star_points") {
            let name = point.as_str().unwrap();
            let col = (name.as_bytes()[0] - b'A') as usize;
            let row: usize = name[1..].parse().unwrap();
            assert!(col < size && (1..=size).contains(&row), "{game}: {name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legal_moves_are_listed_as_the_tool_prints_them_with_jiu_captures_once() {
    let server = WebServer::start(HEX_LEAGUE).await;
    for game in [
        GameId::Connect6,
        GameId::Hex,
        GameId::Surakarta,
        GameId::Jiu,
    ] {
        let start = new_game(game, &json!({})).unwrap();
        let answer = server
            .get_json(&format!(
                "/api/moves?game={game}&position={}",
                percent_encode(&start.position_text())
            ))
            .await;
        let listed: Vec<String> = serde_json::from_value(answer["moves"].clone()).unwrap();
        assert_eq!(listed, start.move_listing(), "{game}");
    }
    // Hex's swap is listed when the rules say so.
    let mut hex = new_game(GameId::Hex, &json!({"swap": true})).unwrap();
    hex.play_text("F6").unwrap();
    let path = format!(
        "/api/moves?game=hex&position={}&rules={}",
        percent_encode(&hex.position_text()),
        percent_encode(r#"{"swap":true}"#)
    );
    let answer = server.get_json(&path).await;
    assert!(answer["moves"].as_array().unwrap().contains(&json!("swap")));

    // A Jiu battle position where F7-F6 forms a square: one entry per stone it may remove.
    let mut rows = vec![String::from(".............."); 14];
    rows[0] = "x".repeat(14); // row 14
    rows[2] = "x".repeat(14); // row 12
    rows[11] = "o".repeat(14); // row 3
    rows[13] = "o".repeat(14); // row 1
    let set = |rows: &mut Vec<String>, point: &str| {
        let col = (point.as_bytes()[0] - b'A') as usize;
        let row: usize = point[1..].parse().unwrap();
        let line = &mut rows[14 - row];
        line.replace_range(col..col + 1, "x");
    };
    for p in ["E5", "F5", "E6", "F7"] {
        set(&mut rows, p);
    }
    let position = format!("{} x phase=battle quiet=0", rows.join("/"));
    let answer = server
        .get_json(&format!(
            "/api/moves?game=jiu&position={}",
            percent_encode(&position)
        ))
        .await;
    let listed = answer["moves"].as_array().unwrap();
    // F7-F6 is listed once, with the one stone it removes to choose among o's 28.
    let captures: Vec<&Value> = listed
        .iter()
        .filter(|m| m["move"] == "F7-F6" || m.as_str().is_some_and(|t| t.starts_with("F7-F6")))
        .collect();
    assert_eq!(captures.len(), 1, "{captures:?}");
    assert_eq!(captures[0]["remove"], 1);
    let removable = captures[0]["removable"].as_array().unwrap();
    assert_eq!(removable.len(), 28);
    assert!(removable.contains(&json!("A1")));
    // Every other entry is a plain move text; the entries match `arena moves` line for line.
    let rules_game =
        arena::game::game_from_position_text(GameId::Jiu, &position, &json!({})).unwrap();
    let as_listed: Vec<String> = listed
        .iter()
        .map(|m| match m.as_str() {
            Some(text) => text.to_string(),
            None => format!(
                "{}{}",
                m["move"].as_str().unwrap(),
                "+?".repeat(m["remove"].as_u64().unwrap() as usize)
            ),
        })
        .collect();
    assert_eq!(as_listed, rules_game.move_listing());
    // The full move a client builds from it is legal.
    assert!(rules_game.check_text("F7-F6+A1").is_ok());

    server.shutdown.cancel();
    server.finished().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_bot_plays_with_the_same_auth_errors_and_clocks_as_a_tcp_bot() {
    let config = HEX_LEAGUE.replace("exit_when_done = false", "exit_when_done = true");
    let server = WebServer::start(&config).await;

    // A wrong token is refused as over TCP, and the socket is closed.
    let mut intruder = WsBot::connect(&server).await;
    intruder
        .send(json!({"type": "hello", "protocol": 1, "name": "alice", "token": "wrong", "games": ["hex"]}))
        .await;
    let refused = intruder.expect("error").await;
    assert_eq!(refused["code"], "auth_failed");
    assert!(intruder.recv().await.is_none(), "closed after auth_failed");

    let mut alice = WsBot::connect(&server).await;
    // Garbage gets the protocol's errors.
    alice
        .socket
        .send(Message::Text("not json".into()))
        .await
        .unwrap();
    assert_eq!(alice.expect("error").await["code"], "bad_json");
    alice
        .send(json!({"type": "hello", "protocol": 1, "name": "alice", "token": "a-token", "games": ["hex"]}))
        .await;
    let welcome = alice.expect("welcome").await;
    assert_eq!(welcome["name"], "alice");

    // Only web_max_sockets (2) WebSockets at once.
    let _second = WsBot::connect(&server).await;
    let third = request(server.web, "GET", "/ws").await;
    assert!(third.status >= 400, "{}", third.status);

    // A second login of the same bot over TCP replaces the WebSocket one (the newest login
    // wins), and the WebSocket is told why.
    let mut twin = Client::hello(server.addr, 1, "alice", "a-token", &["hex"]).await;
    twin.expect("welcome").await;
    assert_eq!(alice.expect("error").await["code"], "replaced");
    assert!(alice.recv().await.is_none(), "closed after replaced");
    // And a WebSocket login takes the seat back from the TCP one (its slot is free once the
    // server has closed the replaced socket: tried a few times).
    let mut alice = None;
    for _ in 0..100 {
        match tokio_tungstenite::connect_async(format!("ws://{}/ws", server.web)).await {
            Ok((socket, _)) => {
                alice = Some(WsBot { socket });
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    let mut alice = alice.expect("a WebSocket slot frees up once the replaced one is closed");
    alice
        .send(json!({"type": "hello", "protocol": 1, "name": "alice", "token": "a-token", "games": ["hex"]}))
        .await;
    alice.expect("welcome").await;
    twin.expect_error("replaced").await;

    let mut bob = Client::login(server.addr, "bob", "b-token", &["hex"]).await;
    let start = alice.expect("start").await;
    bob.expect("start").await;
    let match_id = start["match"].as_str().unwrap().to_string();
    assert_eq!(start["clock"]["initial_ms"], 60000);
    let moves = column_game();
    if start["side"] == "first" {
        play_out(&mut alice, &mut bob, &match_id, &moves).await;
    } else {
        play_out(&mut bob, &mut alice, &match_id, &moves).await;
    }
    let end = alice.expect("end").await;
    assert_eq!(end["reason"], "connection");
    assert_eq!(end["moves"], json!(moves));
    assert_eq!(
        end["result"],
        if start["side"] == "first" {
            "win"
        } else {
            "loss"
        }
    );
    bob.expect("end").await;
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 1);
    assert_eq!(summary.games[0].reason.as_str(), "connection");
}

// `arena serve --web` and `arena site` through the real binary.

const LEAGUE: &str = r#"
[server]
listen = "127.0.0.1:0"
out_dir = "out"

[[bot]]
name = "greedy"
builtin = "greedy"

[[bot]]
name = "random"
builtin = "random"

[[tournament]]
name = "sur"
game = "surakarta"
bots = ["greedy", "random"]
games_per_pairing = 1
"#;

fn arena() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
}

#[test]
fn serve_prints_the_web_address_and_writes_the_site_when_done() {
    let dir = tempfile::tempdir().unwrap();
    // On one worker thread (`threads`), which the log's listening line confirms below.
    let config = LEAGUE.replace("[server]\n", "[server]\nthreads = 1\n");
    std::fs::write(dir.path().join("arena.toml"), config).unwrap();
    let serve = || {
        arena()
            .current_dir(dir.path())
            .args(["serve", "--web", "127.0.0.1:0"])
            .output()
            .expect("run arena serve")
    };
    let output = serve();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("web view: http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no web view line in {stdout}"));
    let port: u16 = line
        .trim_start_matches("web view: http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .expect("a port");
    assert_ne!(port, 0, "the bound port is printed");
    assert!(
        stdout.contains("static site written to out/site"),
        "{stdout}"
    );
    // The console is a person's view: progress lines and tables, no log lines; the whole log
    // is in out/arena.log.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains(" INFO "), "{stderr}");
    assert!(stdout.contains("sur 1/1"), "{stdout}");
    let log = std::fs::read_to_string(dir.path().join("out/arena.log")).unwrap();
    assert!(log.contains(" INFO "), "{log}");
    let listening = log
        .lines()
        .find(|l| l.contains("arena server listening"))
        .unwrap_or_else(|| panic!("no listening line in {log}"));
    assert!(listening.contains(" workers=1 "), "{listening}");

    // Started again, the finished league says so and exits, writing its site again (with the
    // game whose games.jsonl line the journal gives back: as if a crash had cut it off).
    let site = dir.path().join("out/site");
    std::fs::remove_dir_all(&site).unwrap();
    let games_jsonl = dir.path().join("out/games.jsonl");
    let line = std::fs::read_to_string(&games_jsonl).unwrap();
    std::fs::remove_file(&games_jsonl).unwrap();
    let again = serve();
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{text}");
    assert!(
        text.starts_with("this league is already finished (1 game,"),
        "{text}"
    );
    assert!(text.contains("static site written to out/site"), "{text}");
    assert!(!text.contains("web view:"), "{text}");
    assert_eq!(std::fs::read_to_string(&games_jsonl).unwrap(), line);
    for file in [
        "index.html",
        "api/standings.json",
        "api/games.json",
        "assets/board.js",
    ] {
        assert!(site.join(file).exists(), "{file}");
    }
    let games: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("api/games.json")).unwrap()).unwrap();
    let id = games["games"][0]["match"].as_str().expect("one game");
    assert!(site.join(format!("games/{id}.html")).exists());
    let detail: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join(format!("api/games/{id}.json"))).unwrap())
            .unwrap();
    let record = detail["record"].as_str().unwrap();
    assert_eq!(
        std::fs::read(site.join("records").join(record)).unwrap(),
        std::fs::read(dir.path().join("out/records").join(record)).unwrap()
    );
    let page = std::fs::read_to_string(site.join(format!("games/{id}.html"))).unwrap();
    assert!(page.contains("ARENA_STATIC = { root: \"../\" }"));
    assert!(page.contains("\"../assets/board.js\""));

    // `arena site` writes the same from the finished league, wherever asked.
    let elsewhere = dir.path().join("published");
    let output = arena()
        .current_dir(dir.path())
        .args(["site", "--out"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("static site written to"));
    assert_eq!(
        std::fs::read(elsewhere.join(format!("api/games/{id}.json"))).unwrap(),
        std::fs::read(site.join(format!("api/games/{id}.json"))).unwrap()
    );

    // From another folder, the config's `out_dir = "out"` is its own folder's `out`.
    let other = tempfile::tempdir().unwrap();
    let output = arena()
        .current_dir(other.path())
        .args(["site", "--config"])
        .arg(dir.path().join("arena.toml"))
        .args(["--out", "copy"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read(other.path().join(format!("copy/api/games/{id}.json"))).unwrap(),
        std::fs::read(site.join(format!("api/games/{id}.json"))).unwrap()
    );
}

#[test]
fn a_site_of_a_league_with_no_outputs_is_refused_saying_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("arena.toml"), LEAGUE).unwrap();
    let output = arena()
        .current_dir(dir.path())
        .arg("site")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no games.jsonl or journal.jsonl in out"),
        "{stderr}"
    );
    assert!(!dir.path().join("out/site").exists());
}

#[test]
fn a_config_syntax_error_names_the_file_line_and_column_with_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:0\"\n[[bot]\nname = \"a\"\n",
    )
    .unwrap();
    for command in ["serve", "site"] {
        let output = arena()
            .args([command, "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with(&format!("arena: {}:3:", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains("\n3 | [[bot]\n  | "), "{stderr}");
        assert!(stderr.trim_end().ends_with('^'), "{stderr}");
    }
    // A key's error names the file and the key, with the place of the value.
    std::fs::write(&path, "[server]\nlisten = 7\n").unwrap();
    let output = arena()
        .args(["serve", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!("arena: {}:2:", path.display())),
        "{stderr}"
    );
    assert!(stderr.contains(": server.listen: "), "{stderr}");
    assert!(stderr.contains("\n2 | listen = 7\n"), "{stderr}");
}

#[test]
fn a_bad_web_address_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("arena.toml"), LEAGUE).unwrap();
    let output = arena()
        .current_dir(dir.path())
        .args(["serve", "--web", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("server.web"), "{stderr}");
    let config = format!("{LEAGUE}\n").replace("[server]\n", "[server]\nweb = \"nowhere\"\n");
    assert!(arena::config::Config::from_toml(&config)
        .unwrap_err()
        .to_string()
        .starts_with("server.web:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_pointed_at_the_web_port_is_told_so_and_stops() {
    let server = WebServer::start(HEX_LEAGUE).await;
    let web = server.web.to_string();
    let port = server.web.port().to_string();
    let mut bot = tokio::process::Command::new(env!("CARGO_BIN_EXE_arena"));
    bot.args([
        "bot", "--server", &web, "--name", "alice", "--token", "a-token",
    ])
    .args(["--engine", "random"]);
    let python = support::python_bot(&["--port", &port, "--name", "alice", "--token", "a-token"]);
    for (mut command, what, status) in [(bot, "arena bot", 2), (python, "the example bot", 1)] {
        let limit = std::time::Duration::from_secs(20);
        let output = support::output_within(&mut command, limit, what).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(status), "{what}: {stderr}");
        assert!(stderr.contains("is a web server"), "{what}: {stderr}");
        assert!(stderr.contains("web view's port"), "{what}: {stderr}");
    }
    server.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_waiting_for_the_opponent_it_is_playing_is_told_so() {
    let two_tournaments = format!(
        "{HEX_LEAGUE}\n[[tournament]]\nname = \"u\"\ngame = \"hex\"\nbots = [\"alice\", \"bob\"]\n\
         games_per_pairing = 1\nclock = {{ initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }}\n"
    );
    let server = WebServer::start(&two_tournaments).await;
    let mut alice = Client::login_with(server.addr, "alice", "a-token", &["hex"], 2).await;
    let mut bob = Client::login(server.addr, "bob", "b-token", &["hex"]).await;
    alice.expect("start").await;
    bob.expect("start").await;
    let bots = server
        .wait_for("/api/bots", |v| {
            v["bots"][0]["waiting"]
                .as_array()
                .is_some_and(|w| !w.is_empty())
        })
        .await;
    let waiting = bots["bots"][0]["waiting"].to_string();
    assert!(
        waiting.contains("the next game with bob waits for the one they are playing now"),
        "{bots}"
    );
    assert!(!waiting.contains("is busy"), "{bots}");
    server.shutdown.cancel();
}

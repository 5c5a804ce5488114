//! The web view in a real browser: headless Chromium driven over WebDriver (chromedriver,
//! started by the test on a free port). A finished game's page draws every stone of its final
//! position; the static site's pages draw the same boards; a person logs in on `/play` and
//! plays by clicking points.
//!
//! Without chromedriver the tests say so and pass, except under CI (`CI` set), where a missing
//! driver fails them. With `ARENA_SCREENSHOTS=DIR` they save the pages' screenshots there (the
//! pictures in docs/web.md: `ARENA_SCREENSHOTS=docs/web cargo test --test web_browser`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod web_support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use web_support::{percent_encode as encode, WebServer};

/// A headless Chromium session and the chromedriver serving it.
struct Browser {
    client: Client,
    _driver: tokio::process::Child,
    _profile: tempfile::TempDir,
}

fn chromedriver() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("CHROMEDRIVER").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/chromedriver")),
        Some(PathBuf::from("/usr/lib/chromium/chromedriver")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

impl Browser {
    /// Starts chromedriver and a browser, or `None` (with a note) when they are not installed
    /// and this is not CI.
    async fn start() -> Option<Browser> {
        let (Some(driver), Some(browser)) = (chromedriver(), chromium()) else {
            if std::env::var_os("CI").is_some() {
                panic!("chromium and chromium-driver are required in CI (.ci/run installs them)");
            }
            eprintln!("skipping the browser test: install chromium and chromium-driver to run it");
            return None;
        };
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            probe.local_addr().expect("port").port()
        };
        let child = tokio::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().expect("profile dir");
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_string(),
            json!({
                "binary": browser,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "cannot start a browser session: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        Some(Browser {
            client,
            _driver: child,
            _profile: profile,
        })
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }

    async fn js(&self, script: &str) -> Value {
        self.client
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}: {script}"))
    }

    /// Clicks the element `css` selects.
    async fn click(&self, css: &str) {
        let element = self.client.find(Locator::Css(css)).await;
        let element = element.unwrap_or_else(|e| panic!("no {css}: {e}"));
        element
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Waits until `script` returns true.
    async fn wait_until(&self, script: &str, what: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while self.js(script).await != json!(true) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every stone the page's board draws: (point, side).
    async fn stones(&self) -> BTreeSet<(String, String)> {
        let value = self
            .js("return Array.from(document.querySelectorAll('svg.board .stone')).map(e => [e.getAttribute('data-point'), e.getAttribute('data-side')]);")
            .await;
        serde_json::from_value::<Vec<(String, String)>>(value)
            .expect("stone list")
            .into_iter()
            .collect()
    }

    async fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("ARENA_SCREENSHOTS") else {
            return;
        };
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
    }
}

/// The stones of a position text: (point, side) for every `x` and `o`.
fn stones_of(position: &str) -> BTreeSet<(String, String)> {
    let rows: Vec<&str> = position
        .split_whitespace()
        .next()
        .unwrap_or("")
        .split('/')
        .collect();
    let n = rows.len();
    let mut out = BTreeSet::new();
    for (i, row) in rows.iter().enumerate() {
        for (col, c) in row.chars().enumerate() {
            let side = match c {
                'x' => "first",
                'o' => "second",
                _ => continue,
            };
            let point = format!("{}{}", char::from(b'A' + col as u8), n - i);
            out.insert((point, side.to_string()));
        }
    }
    out
}

const ENGINE_LEAGUE: &str = r#"
[server]
listen = "127.0.0.1:0"
exit_when_done = false

[[bot]]
name = "greedy-a"
builtin = "greedy"
max_games = 4

[[bot]]
name = "greedy-b"
builtin = "greedy"
max_games = 4

[[tournament]]
name = "c6"
game = "connect6"
bots = ["greedy-a", "greedy-b"]
games_per_pairing = 1

[[tournament]]
name = "hex"
game = "hex"
bots = ["greedy-a", "greedy-b"]
games_per_pairing = 1

[[tournament]]
name = "sur"
game = "surakarta"
bots = ["greedy-a", "greedy-b"]
games_per_pairing = 1

[[tournament]]
name = "jiu"
game = "jiu"
bots = ["greedy-a", "greedy-b"]
games_per_pairing = 1
"#;

/// Serves the files under `dir` over HTTP (a plain static file server, as a web host would).
async fn serve_static(dir: PathBuf) -> std::net::SocketAddr {
    use axum::http::{header, StatusCode, Uri};
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let dir = dir.clone();
        async move {
            let path = uri.path().trim_start_matches('/');
            let path = if path.is_empty() { "index.html" } else { path };
            if path.split('/').any(|part| part == "..") {
                return StatusCode::BAD_REQUEST.into_response();
            }
            let file = dir.join(path);
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("json") => "application/json",
                _ => "text/plain; charset=utf-8",
            };
            match tokio::fs::read(&file).await {
                Ok(bytes) => ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Opens a game page and checks that its board draws exactly the stones of `position`.
async fn check_game_page(browser: &Browser, url: &str, game: &str, moves: usize, position: &str) {
    browser.client.goto(url).await.expect("open the game page");
    browser
        .wait_until(
            &format!(
                "var s = document.querySelector('svg.board[data-game={game}]'); var p = document.getElementById('ply'); return !!s && !!p && p.textContent === 'move {moves} of {moves}';"
            ),
            &format!("the {game} board at its last move"),
        )
        .await;
    let size = match game {
        "connect6" => 19,
        "hex" => 11,
        "surakarta" => 6,
        _ => 14,
    };
    let points = browser
        .js("return document.querySelectorAll('svg.board [data-point]:not(.stone)').length;")
        .await;
    assert_eq!(points, json!(size * size), "{game}: one element per point");
    let drawn = browser.stones().await;
    let expected = stones_of(position);
    assert!(!expected.is_empty());
    assert_eq!(
        drawn, expected,
        "{game}: the board draws every stone of the final position"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_games_and_their_static_copies_draw_every_stone() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let server = WebServer::start(ENGINE_LEAGUE).await;
    let games = server
        .wait_for("/api/games", |v| {
            v["games"]
                .as_array()
                .is_some_and(|g| g.len() == 4 && g.iter().all(|g| g["status"] == "finished"))
        })
        .await;
    // The league page lists every result.
    browser
        .client
        .goto(&format!("http://{}/", server.web))
        .await
        .unwrap();
    browser
        .wait_until(
            "return document.querySelectorAll('#results tbody tr').length === 4 && document.querySelectorAll('table.standings').length === 4;",
            "the league page's results and standings",
        )
        .await;
    browser.screenshot("league-finished").await;

    let site = server.dir.path().join("site");
    arena::web::site::write_site(&server.config, &site).expect("write the static site");
    let static_addr = serve_static(site.clone()).await;

    for entry in games["games"].as_array().unwrap() {
        let id = entry["match"].as_str().unwrap();
        let game = entry["game"].as_str().unwrap();
        let detail = server.get_json(&format!("/api/games/{id}")).await;
        let moves = detail["moves"].as_array().unwrap().len();
        let last = detail["positions"][moves].as_str().unwrap().to_string();
        check_game_page(
            &browser,
            &format!("http://{}/games/{id}", server.web),
            game,
            moves,
            &last,
        )
        .await;
        browser.screenshot(&format!("{game}-game")).await;
        // Stepping back with the arrow key shows the position before the last move.
        browser
            .client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .send_keys("\u{E012}")
            .await
            .unwrap();
        let before = detail["positions"][moves - 1].as_str().unwrap();
        browser
            .wait_until(
                &format!(
                    "return document.getElementById('ply').textContent === 'move {} of {moves}';",
                    moves - 1
                ),
                "one move back",
            )
            .await;
        assert_eq!(
            browser.stones().await,
            stones_of(before),
            "{game}: one move back"
        );

        // The static copy draws the same board.
        assert!(site.join(format!("games/{id}.html")).exists());
        check_game_page(
            &browser,
            &format!("http://{static_addr}/games/{id}.html"),
            game,
            moves,
            &last,
        )
        .await;
        let record = detail["record"].as_str().unwrap();
        let href = browser
            .js("return document.getElementById('record').getAttribute('href');")
            .await;
        assert!(href.as_str().unwrap().starts_with("../records/"), "{href}");
        assert!(site.join("records").join(record).exists());
    }
    browser
        .client
        .goto(&format!("http://{static_addr}/index.html"))
        .await
        .unwrap();
    browser
        .wait_until(
            "return document.querySelectorAll('#results tbody tr').length === 4;",
            "the static league page",
        )
        .await;
    browser.close().await;
    server.shutdown.cancel();
    server.finished().await;
}

/// The static site's league page links every finished game (the live page shows the latest
/// 30): it is the only way to reach their pages there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_static_league_page_links_every_finished_game() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = arena::config::Config::from_toml(ENGINE_LEAGUE).unwrap();
    config.server.out_dir = dir.path().join("out");
    std::fs::create_dir_all(&config.server.out_dir).unwrap();
    let count = 35;
    let lines: Vec<String> = (1..=count)
        .map(|g| {
            json!({
                "match": format!("hex-r1-p1-g{g}"), "tournament": "hex", "game": "hex",
                "first": "greedy-a", "second": "greedy-b", "result": "first", "reason": "resign",
                "moves": ["F6", "E7"], "think_ms": [5, 6], "lag_ms": [0, 0],
                "rules": {"swap": false},
                "clock": {"initial_ms": 60000, "increment_ms": 0, "move_limit_ms": null},
                "started": format!("2026-11-22T21:{g:02}:00+00:00"),
                "finished": format!("2026-11-22T21:{g:02}:30+00:00"),
                "record": "",
            })
            .to_string()
        })
        .collect();
    std::fs::write(
        config.server.out_dir.join("games.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let site = dir.path().join("site");
    arena::web::site::write_site(&config, &site).expect("write the static site");
    let addr = serve_static(site).await;
    browser
        .client
        .goto(&format!("http://{addr}/index.html"))
        .await
        .unwrap();
    browser
        .wait_until(
            &format!("return document.querySelectorAll('#results tbody tr a').length === {count};"),
            "a link to every finished game on the static league page",
        )
        .await;
    let first = browser
        .js("return document.querySelector('#results tbody tr a').getAttribute('href');")
        .await;
    assert_eq!(
        first,
        json!(format!("games/hex-r1-p1-g{count}.html")),
        "newest first"
    );
    browser.close().await;
}

/// On `/play` the page does not guess whose move it is when a game starts (it holds no rules):
/// the `turn` says so. And a turn whose legal moves cannot be loaded says that, instead of
/// "loading" for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_play_page_says_whose_move_it_is_only_when_the_server_does() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    // One Hex game, in which the person (listed first) moves first.
    let league = HUMAN_LEAGUE
        .split("[[tournament]]")
        .take(2)
        .collect::<Vec<_>>()
        .join("[[tournament]]");
    let server = WebServer::start(&league).await;
    browser
        .client
        .goto(&format!("http://{}/play", server.web))
        .await
        .unwrap();
    // Every text the status line shows, and a legal-move listing that fails.
    browser
        .js("window.statuses = []; \
             new MutationObserver(function (records) { records.forEach(function (r) { \
               r.addedNodes.forEach(function (n) { window.statuses.push(n.textContent); }); }); }) \
               .observe(document.getElementById('status'), {childList: true}); \
             var realFetch = window.fetch; \
             window.fetch = function (url) { \
               if (String(url).indexOf('/api/moves') >= 0) return Promise.reject(new TypeError('network down')); \
               return realFetch.apply(this, arguments); }; \
             return true;")
        .await;
    browser.js("document.getElementById('name').value = 'person'; document.getElementById('token').value = 'secret'; document.getElementById('login').click(); return true;").await;
    // The turn came (the page starts loading it): what did the start say before it?
    browser
        .wait_until(
            "return window.statuses.some(function (s) { return s.indexOf('loading your turn') === 0; });",
            "the person's first turn",
        )
        .await;
    let shown: Vec<String> =
        serde_json::from_value(browser.js("return window.statuses;").await).unwrap();
    let started = shown
        .iter()
        .find(|s| s.contains("against greedy"))
        .unwrap_or_else(|| panic!("no start in {shown:?}"));
    assert!(
        started.contains("waiting for the server") && !started.contains("to move"),
        "{shown:?}"
    );
    browser
        .wait_until(
            "return document.getElementById('status').textContent.indexOf('could not be loaded') >= 0;",
            "the status saying the legal moves could not be loaded",
        )
        .await;
    let shown: Vec<String> =
        serde_json::from_value(browser.js("return window.statuses;").await).unwrap();
    let last = shown.last().unwrap();
    assert!(
        last.starts_with(
            "your turn in hex-r1-p1-g1, but its legal moves could not be loaded (network down)"
        ),
        "{shown:?}"
    );
    assert!(
        !shown.iter().any(|s| s.starts_with("your turn (")),
        "{shown:?}"
    );
    browser.close().await;
    server.shutdown.cancel();
    server.finished().await;
}

const HUMAN_LEAGUE: &str = r#"
[server]
listen = "127.0.0.1:0"
exit_when_done = false

[[bot]]
name = "person"
token = "secret"

[[bot]]
name = "greedy"
builtin = "greedy"
max_games = 4

[[tournament]]
name = "hex"
game = "hex"
bots = ["person", "greedy"]
games_per_pairing = 1
clock = { initial_ms = 600000, increment_ms = 0, move_limit_ms = 0 }

[[tournament]]
name = "c6"
game = "connect6"
bots = ["person", "greedy"]
games_per_pairing = 1
clock = { initial_ms = 600000, increment_ms = 0, move_limit_ms = 0 }

[[tournament]]
name = "sur"
game = "surakarta"
bots = ["person", "greedy"]
games_per_pairing = 1
clock = { initial_ms = 600000, increment_ms = 0, move_limit_ms = 0 }

[[tournament]]
name = "jiu"
game = "jiu"
bots = ["person", "greedy"]
games_per_pairing = 1
clock = { initial_ms = 600000, increment_ms = 0, move_limit_ms = 0 }
"#;

/// The game `person` plays now, per the API: (match, game id).
async fn current_game(server: &WebServer) -> Option<(String, String)> {
    let games = server.get_json("/api/games").await;
    games["games"].as_array()?.iter().find_map(|g| {
        (g["status"] == "playing" && (g["first"] == "person" || g["second"] == "person")).then(
            || {
                (
                    g["match"].as_str().unwrap_or("").to_string(),
                    g["game"].as_str().unwrap_or("").to_string(),
                )
            },
        )
    })
}

/// A legal move in the current position of `match_id` (asked of the server, as the page does).
async fn a_legal_move(server: &WebServer, match_id: &str) -> String {
    let detail = server.get_json(&format!("/api/games/{match_id}")).await;
    let positions = detail["positions"].as_array().unwrap();
    let position = positions.last().unwrap().as_str().unwrap();
    let path = format!(
        "/api/moves?game={}&position={}&rules={}",
        detail["game"].as_str().unwrap(),
        encode(position),
        encode(&detail["rules"].to_string())
    );
    let moves = server.get_json(&path).await;
    let list = moves["moves"].as_array().unwrap();
    let game = detail["game"].as_str().unwrap();
    let pick = if game == "connect6" && !position.contains("stones=1") {
        // Two stones: the first two empty points listed.
        format!(
            "{},{}",
            list[0].as_str().unwrap(),
            list[1].as_str().unwrap()
        )
    } else {
        // Prefer a move of several points (Surakarta steps, Jiu moves) to exercise the clicks.
        list.iter()
            .filter_map(Value::as_str)
            .find(|m| m.contains('-'))
            .or_else(|| list.iter().filter_map(Value::as_str).find(|m| *m != "swap"))
            .unwrap()
            .to_string()
    };
    pick
}

/// The points a move text names, in order (`B2xE5` -> B2, E5).
fn move_points(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_uppercase() {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + 1 {
                out.push(text[i..j].to_string());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

async fn status(browser: &Browser) -> String {
    browser
        .js("return document.getElementById('status').textContent;")
        .await
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Waits for the person's turn in `match_id` (or the end of that game); returns whether it is
/// its turn. The page says "your turn" once it has the legal moves; whether the game is over is
/// asked of the server, since the page may still show an earlier game's turn or end when the
/// server has already finished this one and started the next.
async fn wait_for_turn_or_end(browser: &Browser, server: &WebServer, match_id: &str) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let detail = server.get_json(&format!("/api/games/{match_id}")).await;
        if detail["status"] == "finished" {
            return false;
        }
        let text = status(browser).await;
        if text.starts_with("your turn") && text.contains(match_id) {
            return true;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "stuck at status {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn click_point(browser: &Browser, point: &str) {
    let element = browser
        .client
        .find(Locator::Css(&format!(
            "svg.board [data-point='{point}']:not(.stone)"
        )))
        .await
        .unwrap_or_else(|e| panic!("no point {point}: {e}"));
    element
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {point}: {e}"));
}

/// Plays one move by clicking its points (the page sends it once the clicks pick one move).
async fn play_by_clicks(browser: &Browser, server: &WebServer, match_id: &str) {
    let mv = a_legal_move(server, match_id).await;
    let before = status(browser).await;
    for point in move_points(&mv) {
        click_point(browser, &point).await;
    }
    let mut clicked_again = false;
    // A move that is a prefix of a longer one (a Jiu jump chain) is confirmed with its button.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = status(browser).await;
        if now != before {
            break;
        }
        let button = browser
            .js(&format!(
                "var b = document.querySelector('#choice button[data-move=\"{mv}\"]'); if (b) {{ b.click(); return true; }} return false;"
            ))
            .await;
        if button == json!(true) {
            continue;
        }
        if !clicked_again && deadline - tokio::time::Instant::now() < Duration::from_secs(15) {
            // Once more from a clear selection.
            clicked_again = true;
            browser
                .js("document.getElementById('clear').click(); return true;")
                .await;
            for point in move_points(&mv) {
                click_point(browser, &point).await;
            }
        }
        let error = browser
            .js("return document.getElementById('error').textContent;")
            .await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "move {mv} was not sent (status {now:?}, error {error})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_logs_in_on_play_and_plays_by_clicking() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let Some(watcher) = Browser::start().await else {
        return;
    };
    let server = WebServer::start(HUMAN_LEAGUE).await;
    browser
        .client
        .goto(&format!("http://{}/play", server.web))
        .await
        .unwrap();
    browser
        .client
        .find(Locator::Css("#name"))
        .await
        .unwrap()
        .send_keys("person")
        .await
        .unwrap();
    browser
        .client
        .find(Locator::Css("#token"))
        .await
        .unwrap()
        .send_keys("secret")
        .await
        .unwrap();
    browser
        .client
        .find(Locator::Css("#login"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    let mut seen = BTreeSet::new();
    let mut finished_by_play = false;
    while seen.len() < 4 {
        // The next game.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let (match_id, game) = loop {
            if let Some(found) = current_game(&server).await {
                if !seen.contains(&found.0) {
                    break found;
                }
            }
            assert!(tokio::time::Instant::now() < deadline, "no next game");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        seen.insert(match_id.clone());
        let mut my_moves = 0;
        loop {
            if !wait_for_turn_or_end(&browser, &server, &match_id).await {
                break;
            }
            if my_moves == 0 {
                // The person's own clock runs on this page, and their side is marked to move.
                let clock = "var r = document.querySelector('.players div.to-move'); \
                             return r ? r.querySelector('.clock').textContent : null;";
                let before = browser.js(clock).await;
                assert!(before.is_string(), "no side marked to move: {before}");
                tokio::time::sleep(Duration::from_millis(1200)).await;
                let after = browser.js(clock).await;
                assert_ne!(before, after, "the clock of the side to move does not run");
            }
            play_by_clicks(&browser, &server, &match_id).await;
            my_moves += 1;
            if my_moves == 1 && game != "hex" {
                browser.screenshot(&format!("{game}-play")).await;
                watcher
                    .client
                    .goto(&format!("http://{}/", server.web))
                    .await
                    .unwrap();
                watcher
                    .wait_until(
                        &format!("return document.querySelector('#live svg.board[data-game={game}]') !== null;"),
                        "the live board on the league page",
                    )
                    .await;
                watcher.screenshot(&format!("{game}-league")).await;
                // Give up this one with the resign button, which asks first.
                browser.click("#resign").await;
                let asked = browser
                    .js("return [document.getElementById('resign-confirm').hidden, document.getElementById('resign-question').textContent];")
                    .await;
                assert_eq!(asked[0], false, "{asked}");
                assert!(asked[1].as_str().unwrap().contains(&match_id), "{asked}");
                tokio::time::sleep(Duration::from_millis(300)).await;
                let still = server.get_json(&format!("/api/games/{match_id}")).await;
                assert_eq!(still["status"], "playing", "nothing sent before yes");
                browser.click("#resign-yes").await;
                break;
            }
            if game == "hex" && my_moves == 5 {
                browser.screenshot("hex-play").await;
                watcher
                    .client
                    .goto(&format!("http://{}/", server.web))
                    .await
                    .unwrap();
                watcher
                    .wait_until(
                        "return document.querySelector('#live svg.board[data-game=hex]') !== null;",
                        "the live hex board on the league page",
                    )
                    .await;
                watcher.screenshot("hex-league").await;
            }
        }
        let detail = server
            .wait_for(&format!("/api/games/{match_id}"), |d| {
                d["status"] == "finished"
            })
            .await;
        if game == "hex" {
            // Played to the end by clicks: someone connected their edges.
            assert_eq!(detail["reason"], "connection", "{detail}");
            finished_by_play = true;
        } else {
            assert_eq!(detail["reason"], "resign", "{detail}");
        }
        // The result is shown, and stays in the list of the person's games.
        browser
            .wait_until(
                &format!("return document.querySelector('#my-games li[data-match=\"{match_id}\"]') !== null;"),
                "the finished game in the list of the person's games",
            )
            .await;
        let banner = browser
            .js("return document.getElementById('last-result').hidden ? '' : document.getElementById('last-result-text').textContent;")
            .await;
        assert!(
            banner.as_str().unwrap_or("").contains(&match_id),
            "the result banner shows the game until the person moves on: {banner}"
        );
    }
    assert!(finished_by_play);
    let listed = browser
        .js("return document.querySelectorAll('#my-games li').length;")
        .await;
    assert_eq!(listed, json!(4), "every game's result is kept");
    let text = browser
        .js("return document.getElementById('my-games').textContent;")
        .await;
    assert!(text.as_str().unwrap().contains("by resign"), "{text}");
    // Every game is played: the page says the league is over instead of waiting.
    browser
        .wait_until(
            "return document.getElementById('status').textContent.indexOf('the league is over') === 0;",
            "the page saying the league is over",
        )
        .await;

    // The league page at 400 px: nothing overflows sideways (tables scroll in their cards),
    // and the header says the page is connected.
    watcher.client.set_window_size(400, 800).await.unwrap();
    watcher
        .client
        .goto(&format!("http://{}/", server.web))
        .await
        .unwrap();
    watcher
        .wait_until(
            "return document.querySelectorAll('#standings table.standings').length === 4 \
             && document.getElementById('conn').className === 'conn on';",
            "the standings and the connection indicator",
        )
        .await;
    let widths = watcher
        .js("return [document.documentElement.scrollWidth, document.documentElement.clientWidth];")
        .await;
    assert!(
        widths[0].as_u64() <= widths[1].as_u64(),
        "overflows sideways: {widths}"
    );
    assert_eq!(
        watcher
            .js("return document.getElementById('conn').textContent;")
            .await,
        json!("live: connected")
    );
    browser.close().await;
    watcher.close().await;
    server.shutdown.cancel();
    let (summary, _, _dir) = server.finished().await;
    assert_eq!(summary.games.len(), 4);
}

//! `arena bench --web-load`: how much web visitors hammering every endpoint slow a live game.
//! One pair of bench bots plays game after game (thinking 0–20 ms a move) while the web view
//! serves; windows without and with `--hammer-clients` clients (default 8) alternate three
//! times each, and the report compares the live game's move latency (a bot writing its move →
//! the opponent reading the `turn` that relays it) between them. The clients run in a process
//! of their own (`arena bench --hammer-only`), one thread for all of them, each from its own
//! loopback address, one request per connection: the game list, finished and live games, the
//! standings, the bots, the pages and scripts, legal moves, record files, and event streams
//! read for a moment.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::time::Instant;

use super::load::{run_phase, BotsPriority, LoadPlan, LoadResult, Scratch};
use super::{BenchError, BenchOptions};

/// What `--hammer-only` is told.
#[derive(Debug, Clone, PartialEq)]
pub struct HammerOptions {
    pub web: SocketAddr,
    pub clients: usize,
    pub seconds: f64,
}

/// What the hammering clients did, printed by `--hammer-only` as one JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HammerReport {
    pub clients: usize,
    pub seconds: f64,
    /// Requests answered (any status).
    pub requests: u64,
    /// Requests that got no answer (refused, reset, timed out).
    pub failed: u64,
    /// Answers by endpoint.
    pub by_endpoint: BTreeMap<String, u64>,
    /// Answers by HTTP status.
    pub statuses: BTreeMap<String, u64>,
}

/// The endpoints each client cycles through.
const ENDPOINTS: [&str; 12] = [
    "games",
    "finished_game",
    "live_game",
    "standings",
    "bots",
    "index",
    "game_page",
    "moves",
    "record",
    "script",
    "events",
    "play_page",
];

/// Longest answer read; the rest is dropped with the connection.
const MAX_ANSWER_BYTES: usize = 8 << 20;
/// Longest wait for one answer.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);
/// How long an event stream is read before the client leaves.
const EVENTS_READ_FOR: Duration = Duration::from_millis(200);

/// What a client learnt about the league from earlier answers.
#[derive(Debug, Default)]
struct Seen {
    finished: Vec<String>,
    live: Vec<String>,
    records: Vec<String>,
    /// (game, position) pairs of finished games' last positions.
    positions: Vec<(String, String)>,
    turn: usize,
}

/// The next of `items` after `turn` (advanced), round robin.
fn pick<'a, T>(items: &'a [T], turn: &mut usize) -> Option<&'a T> {
    *turn = turn.wrapping_add(1);
    items.get(*turn % items.len().max(1))
}

impl Seen {
    fn path(&mut self, endpoint: &str) -> String {
        let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
        let turn = &mut self.turn;
        match endpoint {
            "finished_game" => match pick(&self.finished, turn) {
                Some(id) => format!("/api/games/{}", encode(id)),
                None => "/api/games".into(),
            },
            "live_game" => match pick(&self.live, turn) {
                Some(id) => format!("/api/games/{}", encode(id)),
                None => "/api/games".into(),
            },
            "game_page" => match pick(&self.finished, turn) {
                Some(id) => format!("/games/{}", encode(id)),
                None => "/".into(),
            },
            "record" => match pick(&self.records, turn) {
                Some(file) => format!("/records/{}", encode(file)),
                None => "/api/standings".into(),
            },
            "moves" => match pick(&self.positions, turn) {
                Some((game, position)) => format!(
                    "/api/moves?game={}&position={}",
                    encode(game),
                    encode(position)
                ),
                None => "/api/moves?game=hex&position=".into(),
            },
            "standings" => "/api/standings".into(),
            "bots" => "/api/bots".into(),
            "index" => "/".into(),
            "script" => "/app.js".into(),
            "events" => "/api/events".into(),
            "play_page" => "/play".into(),
            _ => "/api/games".into(),
        }
    }

    /// Learns match ids, records and positions from a JSON answer.
    fn learn(&mut self, endpoint: &str, body: &[u8]) {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
            return;
        };
        match endpoint {
            "games" => {
                let games = value["games"].as_array().cloned().unwrap_or_default();
                self.finished.clear();
                self.live.clear();
                for game in games.iter().rev().take(200) {
                    let Some(id) = game["match"].as_str() else {
                        continue;
                    };
                    if game["status"] == "finished" {
                        self.finished.push(id.to_string());
                    } else {
                        self.live.push(id.to_string());
                    }
                }
            }
            "finished_game" => {
                if let Some(record) = value["record"].as_str() {
                    if !self.records.iter().any(|r| r == record) && self.records.len() < 64 {
                        self.records.push(record.to_string());
                    }
                }
                let game = value["game"].as_str();
                let last = value["positions"].as_array().and_then(|p| p.last());
                if let (Some(game), Some(position)) = (game, last.and_then(|p| p.as_str())) {
                    if self.positions.len() < 64 {
                        self.positions
                            .push((game.to_string(), position.to_string()));
                    }
                }
            }
            _ => {}
        }
    }
}

/// One GET from `from`, `Connection: close`: the status and the body (for event streams, what
/// arrived in `EVENTS_READ_FOR`). `None` when no answer came.
async fn get(from: IpAddr, web: SocketAddr, path: &str) -> Option<(u16, Vec<u8>)> {
    let socket = TcpSocket::new_v4().ok()?;
    socket.bind(SocketAddr::new(from, 0)).ok()?;
    let mut stream = tokio::time::timeout(ANSWER_LIMIT, socket.connect(web))
        .await
        .ok()?
        .ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {web}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let limit = if path == "/api/events" {
        EVENTS_READ_FOR
    } else {
        ANSWER_LIMIT
    };
    let mut answer = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(buffer.get(..n).unwrap_or_default());
                if answer.len() > MAX_ANSWER_BYTES {
                    break;
                }
            }
        }
    }
    let status = std::str::from_utf8(answer.get(..12.min(answer.len()))?)
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let body = match answer.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => answer.split_off(end + 4),
        None => Vec::new(),
    };
    Some((status, body))
}

/// `arena bench --hammer-only`: `clients` clients hammer the web view for `seconds`, then one
/// JSON [`HammerReport`] goes to `out`.
pub fn run_hammer(options: &HammerOptions, out: &mut impl Write) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Setup(format!("hammer runtime: {e}")))?;
    let report = runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs_f64(options.seconds.max(0.0));
        let mut clients = tokio::task::JoinSet::new();
        for client in 0..options.clients {
            let web = options.web;
            // Each client from an address of its own, as eight visitors would be.
            let from = IpAddr::from([127, 0, 77, u8::try_from(client % 250 + 1).unwrap_or(1)]);
            clients.spawn(async move {
                let mut seen = Seen::default();
                let mut report = HammerReport::default();
                let mut turn = client;
                while Instant::now() < deadline {
                    let endpoint = ENDPOINTS[turn % ENDPOINTS.len()];
                    turn += 1;
                    let path = seen.path(endpoint);
                    match get(from, web, &path).await {
                        Some((status, body)) => {
                            report.requests += 1;
                            *report.by_endpoint.entry(endpoint.to_string()).or_default() += 1;
                            *report.statuses.entry(status.to_string()).or_default() += 1;
                            if status == 200 {
                                seen.learn(endpoint, &body);
                            }
                        }
                        None => report.failed += 1,
                    }
                }
                report
            });
        }
        let mut total = HammerReport {
            clients: options.clients,
            seconds: options.seconds,
            ..HammerReport::default()
        };
        while let Some(done) = clients.join_next().await {
            let Ok(one) = done else { continue };
            total.requests += one.requests;
            total.failed += one.failed;
            for (k, v) in one.by_endpoint {
                *total.by_endpoint.entry(k).or_default() += v;
            }
            for (k, v) in one.statuses {
                *total.statuses.entry(k).or_default() += v;
            }
        }
        total
    });
    serde_json::to_writer(&mut *out, &report).map_err(|e| BenchError::Setup(e.to_string()))?;
    writeln!(out).map_err(|e| BenchError::Setup(e.to_string()))?;
    Ok(())
}

/// One window of the web-load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebLoadWindow {
    pub hammer_clients: usize,
    pub moves: u64,
    pub relay_us_p50: u64,
    pub relay_us_p99: u64,
    pub relay_samples: usize,
    /// Requests the clients had answered per second (0 without them).
    pub requests_per_s: f64,
    pub failed_requests: u64,
    pub statuses: BTreeMap<String, u64>,
    pub server_cpu_ms: f64,
}

/// What `arena bench --web-load` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebLoadReport {
    pub date: String,
    /// The folder the windows' leagues wrote under (removed at the end).
    pub files_in: String,
    pub load_average: String,
    pub window_s: f64,
    pub windows: Vec<WebLoadWindow>,
    /// Medians over the windows without and with the clients.
    pub p99_without_us: u64,
    pub p99_with_us: u64,
    /// `p99_with_us - p99_without_us` (negative when the hammered windows were faster).
    pub p99_increase_us: i64,
    /// The goal: the clients raise the live game's p99 by at most 2 ms.
    pub goal_met: bool,
}

/// The goal on the p99 increase, in microseconds.
const GOAL_P99_INCREASE_US: i64 = 2_000;

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Runs the web-load windows (see the module header) and returns the report.
pub fn run(
    options: &BenchOptions,
    hammer_clients: usize,
    progress: &mut impl Write,
) -> Result<WebLoadReport, BenchError> {
    if options.split_cores {
        return Err(BenchError::Setup(
            "--split-cores is for the throughput run, not --web-load".into(),
        ));
    }
    let mut say = |text: &str| {
        let _ = writeln!(progress, "bench: {text}");
        let _ = progress.flush();
    };
    let date = chrono::Local::now().to_rfc3339();
    let load_average = super::load_average_now();
    let window = if options.quick {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(15)
    };
    let scratch = Scratch::create()?;
    let mut windows = Vec::new();
    for round in 0..3 {
        for hammer in [0, hammer_clients] {
            say(&format!(
                "web load, round {} of 3: a live game {} ({} s window)",
                round + 1,
                if hammer == 0 {
                    "alone with the web view".to_string()
                } else {
                    format!("with {hammer} clients hammering the web view")
                },
                window.as_secs_f64()
            ));
            let plan = LoadPlan {
                matches: 1,
                games_per_bot: 1,
                think_max_ms: 20,
                move_limit_ms: 0,
                warmup: Duration::from_millis(500),
                window,
                keep_think: false,
                seed: 3 + round,
                // One spectator following the events, so the web view is on in both.
                web_clients: 1,
                web_hammer: hammer,
                server_threads: options.server_threads,
                bots_priority: BotsPriority::Same,
                bots_cores: Vec::new(),
            };
            let result = run_phase(
                &scratch.phase_dir(&format!("web-{round}-{hammer}")),
                &plan,
                &options.exe,
            )?;
            windows.push(window_of(&result, hammer));
        }
    }
    let p99 = |hammered: bool| {
        median(
            windows
                .iter()
                .filter(|w| (w.hammer_clients > 0) == hammered)
                .map(|w| w.relay_us_p99)
                .collect(),
        )
    };
    let (without, with) = (p99(false), p99(true));
    let increase = i64::try_from(with).unwrap_or(i64::MAX) - i64::try_from(without).unwrap_or(0);
    Ok(WebLoadReport {
        date,
        files_in: super::load::files_root().display().to_string(),
        load_average,
        window_s: window.as_secs_f64(),
        windows,
        p99_without_us: without,
        p99_with_us: with,
        p99_increase_us: increase,
        goal_met: increase <= GOAL_P99_INCREASE_US,
    })
}

fn window_of(result: &LoadResult, hammer_clients: usize) -> WebLoadWindow {
    let hammer = result.hammer.clone().unwrap_or_default();
    WebLoadWindow {
        hammer_clients,
        moves: result.moves_in_window,
        relay_us_p50: result.bots.relay_us_p50,
        relay_us_p99: result.bots.relay_us_p99,
        relay_samples: result.bots.relay_samples,
        requests_per_s: if hammer.seconds > 0.0 {
            hammer.requests as f64 / hammer.seconds
        } else {
            0.0
        },
        failed_requests: hammer.failed,
        statuses: hammer.statuses,
        server_cpu_ms: result.server_cpu_us as f64 / 1000.0,
    }
}

impl WebLoadReport {
    /// The readable report.
    pub fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "web load: {} (load average {}), {} s windows, one live game (bots think 0-20 ms)",
            self.date, self.load_average, self.window_s
        )?;
        writeln!(
            out,
            "  {:>7} {:>7} {:>9} {:>9} {:>8} {:>10} {:>7} {:>10}",
            "clients", "moves", "p50 ms", "p99 ms", "samples", "requests/s", "failed", "server ms"
        )?;
        for w in &self.windows {
            writeln!(
                out,
                "  {:>7} {:>7} {:>9.3} {:>9.3} {:>8} {:>10.0} {:>7} {:>10.0}",
                w.hammer_clients,
                w.moves,
                w.relay_us_p50 as f64 / 1000.0,
                w.relay_us_p99 as f64 / 1000.0,
                w.relay_samples,
                w.requests_per_s,
                w.failed_requests,
                w.server_cpu_ms
            )?;
        }
        writeln!(
            out,
            "  goal: web clients raise a live game's move latency p99 by at most 2 ms: {} \
             (median p99 {:.3} ms without, {:.3} ms with: {:+.3} ms)",
            if self.goal_met { "met" } else { "MISSED" },
            self.p99_without_us as f64 / 1000.0,
            self.p99_with_us as f64 / 1000.0,
            self.p99_increase_us as f64 / 1000.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_web_load_run_refuses_split_cores_before_it_starts_anything() {
        let options = BenchOptions {
            quick: true,
            exe: std::path::PathBuf::from("/nonexistent/arena"),
            web_clients: 0,
            matches: None,
            games_per_bot: 1,
            hog: false,
            server_threads: 0,
            split_cores: true,
        };
        let mut progress = Vec::new();
        match run(&options, 1, &mut progress) {
            Err(BenchError::Setup(message)) => {
                assert!(message.contains("--split-cores"), "{message}")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert!(progress.is_empty(), "nothing was started");
    }

    #[test]
    fn paths_use_what_earlier_answers_said_and_encode_it() {
        let mut seen = Seen::default();
        assert_eq!(seen.path("finished_game"), "/api/games");
        seen.learn(
            "games",
            br#"{"games":[{"match":"m 1","status":"finished"},{"match":"m2","status":"playing"}]}"#,
        );
        assert_eq!(seen.path("finished_game"), "/api/games/m%201");
        assert_eq!(seen.path("live_game"), "/api/games/m2");
        seen.learn(
            "finished_game",
            r#"{"game":"hex","record":"HEX-a 先手胜.txt","positions":["start","after e5"]}"#
                .as_bytes(),
        );
        assert_eq!(
            seen.path("record"),
            "/records/HEX%2Da%20%E5%85%88%E6%89%8B%E8%83%9C%2Etxt"
        );
        assert_eq!(
            seen.path("moves"),
            "/api/moves?game=hex&position=after%20e5"
        );
    }

    #[test]
    fn the_goal_compares_medians_of_the_windows() {
        assert_eq!(median(vec![5, 1, 3]), 3);
        assert_eq!(median(Vec::new()), 0);
    }
}

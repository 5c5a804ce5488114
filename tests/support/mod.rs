//! Test helpers for the server: config text, an in-process server on port 0 or the real binary
//! (`arena serve`), and a scripted bot client that sends JSON lines and reads answers with a
//! timeout.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use arena::config::Config;
use arena::server::{ServerError, ServerSummary};

/// A server running in this test's runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    pub shutdown: CancellationToken,
    pub handle: JoinHandle<Result<ServerSummary, ServerError>>,
    pub out_dir: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server from config text; `server.out_dir` is set to a fresh temporary folder and
    /// the listener is bound to 127.0.0.1:0.
    pub async fn start(config_text: &str) -> TestServer {
        let config = Config::from_toml(config_text).expect("test config is valid");
        TestServer::start_config(config).await
    }

    /// Like `start`, for tests on paused tokio time: the kernel's receive stamps are wall-clock
    /// times, which paused time does not follow, so this server stamps each line when it reads
    /// it (`receive_timestamps = false`) and its clocks run on virtual time alone.
    pub async fn start_virtual_clock(config_text: &str) -> TestServer {
        let mut config = Config::from_toml(config_text).expect("test config is valid");
        config.server.receive_timestamps = false;
        TestServer::start_config(config).await
    }

    /// Like `start`, with `subscriber` told the server's events.
    pub async fn start_subscribed(
        config_text: &str,
        subscriber: arena::server::Subscriber,
    ) -> TestServer {
        let config = Config::from_toml(config_text).expect("test config is valid");
        TestServer::start_with(config, vec![subscriber]).await
    }

    async fn start_config(config: Config) -> TestServer {
        TestServer::start_with(config, Vec::new()).await
    }

    async fn start_with(
        mut config: Config,
        subscribers: Vec<arena::server::Subscriber>,
    ) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        config.server.out_dir = dir.path().join("out");
        let listener = arena::server::bind(&config, Some("127.0.0.1:0"))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(arena::server::run_with(
            config,
            listener,
            shutdown.clone(),
            subscribers,
            None,
        ));
        TestServer {
            addr,
            shutdown,
            handle,
            out_dir: dir.path().join("out"),
            _dir: dir,
        }
    }

    /// Waits for the server to exit by itself (every tournament done).
    pub async fn finished(self) -> (ServerSummary, PathBuf, tempfile::TempDir) {
        let summary = tokio::time::timeout(Duration::from_secs(600), self.handle)
            .await
            .expect("server exits")
            .expect("server task")
            .expect("server ok");
        (summary, self.out_dir, self._dir)
    }

    /// Stops the server and returns its summary.
    pub async fn stop(self) -> (ServerSummary, PathBuf, tempfile::TempDir) {
        self.shutdown.cancel();
        self.finished().await
    }

    pub fn games_jsonl(&self) -> Vec<Value> {
        read_games(&self.out_dir)
    }

    /// games.jsonl once it holds at least `n` games, or as it is after `READ_TIMEOUT` of real
    /// time. Its lines are written by the server's output thread, which a loaded machine can
    /// hold back; the wait runs on a blocking thread, so paused time does not jump meanwhile.
    pub async fn games_jsonl_at_least(&self, n: usize) -> Vec<Value> {
        let out_dir = self.out_dir.clone();
        tokio::task::spawn_blocking(move || {
            let give_up = std::time::Instant::now() + READ_TIMEOUT;
            loop {
                let games = read_games(&out_dir);
                if games.len() >= n || std::time::Instant::now() >= give_up {
                    return games;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .await
        .expect("games.jsonl reader")
    }
}

pub fn read_games(out_dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(out_dir.join("games.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("games.jsonl lines are JSON"))
        .collect()
}

/// How long a scripted client waits for a line before failing the test.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// A bot driven line by line by the test.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    /// Answer pings automatically (and skip them when reading).
    pub answer_pings: bool,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        Client::from_stream(TcpStream::connect(addr).await.expect("connect"))
    }

    /// A client on a connected stream (e.g. one bound to another loopback address).
    pub fn from_stream(stream: TcpStream) -> Client {
        // Without this, Nagle's algorithm holds a small line back until the previous one is
        // acknowledged, which under paused time lets the clock jump ahead meanwhile.
        stream.set_nodelay(true).expect("nodelay");
        let (r, w) = stream.into_split();
        Client {
            reader: BufReader::new(r),
            writer: w,
            answer_pings: true,
        }
    }

    /// Connects and sends `hello` with `protocol`, without reading the answer.
    pub async fn hello(
        addr: SocketAddr,
        protocol: u32,
        name: &str,
        token: &str,
        games: &[&str],
    ) -> Client {
        let mut c = Client::connect(addr).await;
        c.send(json!({"type":"hello","protocol":protocol,"name":name,"token":token,"games":games}))
            .await;
        c
    }

    /// Connects and says hello; expects `welcome`.
    pub async fn login(addr: SocketAddr, name: &str, token: &str, games: &[&str]) -> Client {
        Client::login_with(addr, name, token, games, 1).await
    }

    pub async fn login_with(
        addr: SocketAddr,
        name: &str,
        token: &str,
        games: &[&str],
        max_games: u32,
    ) -> Client {
        let mut c = Client::connect(addr).await;
        c.send(json!({"type":"hello","protocol":1,"name":name,"token":token,"games":games,"max_games":max_games}))
            .await;
        let w = c.recv().await;
        assert_eq!(w["type"], "welcome", "expected welcome, got {w}");
        assert_eq!(w["name"], name);
        c
    }

    /// The raw write half, for tests that write without the helper's pacing.
    pub fn writer_mut(&mut self) -> &mut OwnedWriteHalf {
        &mut self.writer
    }

    pub async fn send(&mut self, value: Value) {
        self.send_raw(format!("{value}\n").as_bytes()).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("write");
        // With paused time, a parked runtime jumps the clock to the next timer if the server's
        // socket is not readable yet; yielding polls I/O without advancing the clock, so the
        // server reads the line at the (paused) time it was sent.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
    }

    /// Sends a move for a match.
    pub async fn play(&mut self, match_id: &str, mv: &str) {
        self.send(json!({"type":"move","match":match_id,"move":mv}))
            .await;
    }

    /// The next message that is not a ping, or `None` when the server closed the connection.
    pub async fn try_recv(&mut self) -> Option<Value> {
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(READ_TIMEOUT, self.reader.read_line(&mut line))
                .await
                .expect("timed out waiting for a line from the server")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).expect("server lines are JSON");
            if v["type"] == "ping" && self.answer_pings {
                let id = v["id"].clone();
                self.send(json!({"type":"pong","id":id})).await;
                continue;
            }
            return Some(v);
        }
    }

    pub async fn recv(&mut self) -> Value {
        self.try_recv()
            .await
            .expect("connection closed unexpectedly")
    }

    /// The next message, which must be of `kind`.
    pub async fn expect(&mut self, kind: &str) -> Value {
        let v = self.recv().await;
        assert_eq!(v["type"], kind, "expected {kind}, got {v}");
        v
    }

    /// The next message, which must be an `error` with `code`.
    pub async fn expect_error(&mut self, code: &str) -> Value {
        let v = self.expect("error").await;
        assert_eq!(v["code"], code, "expected error {code}, got {v}");
        v
    }

    /// Reads until the server closes the connection; returns what came before.
    pub async fn until_closed(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(v) = self.try_recv().await {
            seen.push(v);
        }
        seen
    }
}

/// Config text: a `[server]` table with `ping_interval_ms = 1000` and the `server` lines, a
/// `[[bot]]` for each of `bots`, and one tournament `t` of `game` among all of them with the
/// `tournament` lines. A bot is third-party with token `t` + its name (`a` has `ta`, allowed
/// by `weak_token = true`), a built-in engine when written `name:builtin` (`engine:random`),
/// or, written as its name and then its own lines (`"p\nprogram = \"gtp:…\""`), a bot
/// with those keys.
pub fn config(server: &str, bots: &[&str], game: &str, tournament: &str) -> String {
    let mut text = format!("\n[server]\nping_interval_ms = 1000\n{server}\n");
    let mut names = Vec::new();
    for bot in bots {
        let (name, how) = match (bot.split_once('\n'), bot.split_once(':')) {
            (Some((name, keys)), _) => (name, keys.to_string()),
            (None, Some((name, builtin))) => (name, format!("builtin = \"{builtin}\"")),
            // Short tokens, so `weak_token` for `arena serve` to take them.
            (None, None) => (*bot, format!("token = \"t{bot}\"\nweak_token = true")),
        };
        text.push_str(&format!("\n[[bot]]\nname = \"{name}\"\n{how}\n"));
        names.push(format!("{name:?}"));
    }
    let names = names.join(", ");
    text.push_str(&format!(
        "\n[[tournament]]\nname = \"t\"\ngame = \"{game}\"\nbots = [{names}]\n{tournament}\n"
    ));
    text
}

/// Config text with two third-party bots `a` and `b` and one tournament of `game`.
pub fn two_bot_config(game: &str, extra_server: &str, extra_tournament: &str) -> String {
    config(
        &format!("exit_when_done = true\n{extra_server}"),
        &["a", "b"],
        game,
        &format!(
            "games_per_pairing = 1\nconcurrency = 1\n\
             clock = {{ initial_ms = 60000, increment_ms = 0, move_limit_ms = 0 }}\n\
             {extra_tournament}"
        ),
    )
}

/// The real binary, `arena serve --config CONFIG --listen 127.0.0.1:0`, with its stdout lines
/// collected after the first (the address it listens on).
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub stdout: JoinHandle<Vec<String>>,
}

/// The `arena serve` command line for `config` on 127.0.0.1:0.
fn serve_command(config: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_arena"));
    command
        .args(["serve", "--config"])
        .arg(config)
        .args(["--listen", "127.0.0.1:0"]);
    command
}

/// Starts `arena serve` on `config` and reads the address it prints.
pub async fn spawn_server(config: &Path) -> ServerProcess {
    let mut child = serve_command(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn arena");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server prints its address")
        .expect("read stdout")
        .expect("a first line");
    let addr = first
        .strip_prefix("arena listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .parse()
        .expect("an address");
    let stdout = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line);
        }
        seen
    });
    ServerProcess {
        child,
        addr,
        stdout,
    }
}

impl ServerProcess {
    /// Waits up to `limit` for the server to exit by itself; returns its status and the stdout
    /// lines after the first.
    pub async fn exited(self, limit: Duration) -> (ExitStatus, Vec<String>) {
        let ServerProcess {
            mut child, stdout, ..
        } = self;
        let status = tokio::time::timeout(limit, child.wait())
            .await
            .expect("the server exits by itself")
            .expect("wait for the server");
        (status, stdout.await.expect("stdout reader"))
    }
}

/// Runs `arena serve` on `config` to its end (for configs it refuses).
pub async fn serve_output(config: &Path) -> Output {
    serve_command(config).output().await.expect("run arena")
}

/// Processes whose command line mentions `needle` (Linux `/proc`).
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Runs `command` to its end, which must come within `limit` (`what` names it if not).
pub async fn output_within(command: &mut Command, limit: Duration, what: &str) -> Output {
    tokio::time::timeout(limit, command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not stop within {limit:?}"))
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// The example Python bot (`bots/python/arena_random_bot.py`) with `args`.
pub fn python_bot(args: &[&str]) -> Command {
    let mut command = Command::new("python3");
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bots/python/arena_random_bot.py"))
        .args(args);
    command
}

/// The last `lines` lines of `text` (a log to show when a test fails).
pub fn last_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

//! `arena connect`: plays an existing engine in the arena. The bridge connects to the referee
//! (protocol v1) under the command line's name and token, runs the engine as a child process for
//! each match (up to `max_games` matches at once, each in a task of its own with its own
//! engine process), and translates between the referee and the engine's own
//! protocol: `json` (protocol v1 itself, relayed), `gtp` (Hex, MoHex/Benzene family) or `sau`
//! (Connect6, the contest's common text protocol).
//!
//! Engines as they are: each adapter acts only on its protocol's lines; everything else an engine
//! prints (banners, help, search statistics) is chatter, logged at debug level up to
//! `CHATTER_LOG_BYTES` per engine run (then counted only), so a chatty engine fills neither disk
//! nor memory. Before connecting, the engine is started once and checked (`check_engine`): an
//! engine that cannot start, exits at once or refuses its protocol's first commands is refused
//! with a message naming the command and what it printed, before it costs a game.
//!
//! Failure policy: an engine that crashes, closes its output, prints a protocol line that is
//! wrong, refuses a command, or stalls past its clock loses the current game: the bridge
//! sends `resign` at once, says why on stderr, and ends the engine. Every wait for the engine
//! has a deadline: the clock of the last `turn` (plus `CLOCK_MARGIN`) while a move is due,
//! `setup_timeout` for anything else it must answer. After each match the engine gets its
//! protocol's `quit`, a bounded wait, then its whole process group is killed.
//!
//! Reads from the referee are capped at 64 KiB per line; the welcome is awaited at most
//! `WELCOME_TIMEOUT`, but afterwards there is no idle timeout, since between matches the
//! referee may stay silent for as long as its pairing takes (it pings to check on us).

pub mod child;
pub mod conformance;
pub mod gtp;
pub mod json;
pub mod sau;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::bot_connection::{connect_and_hello, HandshakeError, RefereeLink};
use crate::game::Side;
use crate::protocol::{
    self, parse_referee_line, BotMessage, ClockSpec, Frame, RefereeMessage, TurnClock,
    PROTOCOL_VERSION,
};
use child::{EngineEvent, EngineOutput, EngineProcess, SpawnError};

/// Time added to the clock before the bridge gives up on a move: the referee usually ends the
/// game by `timeout` first, and the bridge's `resign` only matters if it does not.
pub const CLOCK_MARGIN: Duration = Duration::from_millis(500);
/// How long the referee has to welcome the bridge.
pub const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an exited engine's remaining output is still read before the exit counts.
const EXIT_DRAIN: Duration = Duration::from_millis(300);
/// How long a sau engine that does not answer `name` must stay up, at the check before
/// connecting, to count as started (one that answers passes at once).
pub const SAU_ALIVE: Duration = Duration::from_secs(1);
/// How much of an engine run's chatter goes to the debug log; the rest is only counted.
pub const CHATTER_LOG_BYTES: usize = 16 * 1024;
/// Chatter lines are logged cut to this many characters.
pub const CHATTER_LINE_CHARS: usize = 200;
/// How many lines of output the start check quotes when it refuses an engine.
const QUOTED_LINES: usize = 6;

/// The protocol the engine speaks on its stdin/stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineProtocol {
    Json,
    Gtp,
    Sau,
}

impl EngineProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineProtocol::Json => "json",
            EngineProtocol::Gtp => "gtp",
            EngineProtocol::Sau => "sau",
        }
    }

    /// The games the bridge offers when `--games` is not given (json asks the engine).
    pub fn default_games(self) -> Option<Vec<String>> {
        match self {
            EngineProtocol::Json => None,
            EngineProtocol::Gtp => Some(vec!["hex".to_string()]),
            EngineProtocol::Sau => Some(vec!["connect6".to_string()]),
        }
    }
}

impl fmt::Display for EngineProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EngineProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(EngineProtocol::Json),
            "gtp" => Ok(EngineProtocol::Gtp),
            "sau" => Ok(EngineProtocol::Sau),
            _ => Err(format!(
                "unknown engine protocol {s:?} (expected json, gtp or sau)"
            )),
        }
    }
}

/// Everything `arena connect` needs.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The referee's address, `host:port`.
    pub server: String,
    pub name: String,
    pub token: String,
    pub protocol: EngineProtocol,
    /// The games to offer; by default `hex` for gtp, `connect6` for sau, the engine's own
    /// `hello` list for json.
    pub games: Option<Vec<String>>,
    /// Lines sent to the engine right after it starts (GTP: answers read and dropped).
    pub init: Vec<String>,
    /// The engine command and its arguments.
    pub command: Vec<String>,
    /// The folder the engine runs in (default: the bridge's own).
    pub cwd: Option<PathBuf>,
    /// The sandbox, limits and output cap each engine process starts under (the server's
    /// program bots); the default starts the command as it is.
    pub launch: child::Launch,
    /// Deadline for answers that are not moves (GTP setup, the json engine's `hello`).
    pub setup_timeout: Duration,
    /// Matches played at once, each against its own engine process (`hello`'s `max_games`).
    pub max_games: u32,
    /// Cancelled when whoever runs the bridge stops (the server, for its program bots): the
    /// bridge then ends its engines as at the end of a session (`quit`, a bounded wait, the
    /// process group killed and reaped) and returns `Interrupted`. `arena connect` never
    /// cancels it; it stops on SIGINT and SIGTERM.
    pub stop: tokio_util::sync::CancellationToken,
}

/// Why the bridge stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("cannot connect to the referee at {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("connection to the referee failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the referee refused the bridge: {0}")]
    Refused(String),
    #[error("the referee closed the connection before welcoming the bridge")]
    ClosedBeforeWelcome,
    #[error("no welcome from the referee within {0:?}")]
    NoWelcome(Duration),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("engine `{command}` failed its start check: {problem}; {printed}")]
    EngineCheck {
        command: String,
        problem: String,
        /// What it printed, quoted, or "it printed nothing".
        printed: String,
    },
    #[error("cannot write the report: {0}")]
    Report(std::io::Error),
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
}

/// An engine failure: it loses the current game. The text says what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault(pub String);

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a line the engine printed was to its adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// A line of the protocol (acted on).
    Protocol,
    /// Anything else: banners, help texts, search output. Logged, never acted on.
    Chatter,
}

/// What an adapter wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A line for the engine's stdin.
    Engine(String),
    /// A message for the referee.
    Server(BotMessage),
}

/// Translates between the referee and one engine protocol. Pure state machines: the bridge
/// loop does all I/O and timing, so adapters are tested without processes.
pub trait Adapter: Send {
    /// The engine has just started; `init` are the `--init` lines.
    fn on_spawn(&mut self, init: &[String], now: Instant, out: &mut Vec<Action>);
    /// The referee has welcomed the bridge (json engines get their own welcome then).
    fn on_welcome(&mut self, _server: &str, _out: &mut Vec<Action>) {}
    /// A referee message about the current match (`start`, `turn`, `end`, `error`); `raw` is
    /// the line as received.
    fn on_referee(
        &mut self,
        msg: &RefereeMessage,
        raw: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault>;
    /// A line the engine printed: a protocol line is acted on, anything else is chatter.
    fn on_engine_line(
        &mut self,
        line: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<Heard, Fault>;
    /// When the engine's pending answer is overdue, if it owes one.
    fn deadline(&self) -> Option<Instant>;
    /// The games of a json engine's `hello`, once said.
    fn engine_games(&self) -> Option<Vec<String>> {
        None
    }
    /// The line that asks the engine to exit, sent when a match is over.
    fn quit_command(&self) -> Option<&'static str> {
        None
    }
    /// The check before connecting: the commands that ask the engine who it is (GTP `name`,
    /// `protocol_version`, `boardsize`; sau `name`). A json engine's `hello` needs no asking.
    fn on_check(&mut self, _now: Instant, _out: &mut Vec<Action>) {}
    /// Every check command has been answered (json: the engine has said hello). A sau engine
    /// need not answer: staying up for `SAU_ALIVE` is enough too.
    fn check_answered(&self) -> bool {
        false
    }
    /// The engine's name, if it has said it.
    fn engine_name(&self) -> Option<String> {
        None
    }
}

/// The time the engine has for the move `turn` asks for: its remaining clock, or the per-move
/// limit if smaller, plus `CLOCK_MARGIN`.
pub fn move_budget(clock: &TurnClock, spec: Option<&ClockSpec>) -> Duration {
    let limit = spec
        .and_then(|s| s.move_limit_ms)
        .map_or(clock.you_ms, |l| l.min(clock.you_ms));
    Duration::from_millis(limit).saturating_add(CLOCK_MARGIN)
}

/// What a referee `start` tells an adapter whose engine plays one game only.
pub struct SingleGameStart<'a> {
    pub match_id: &'a str,
    /// `Second` if the `start` says so, otherwise `First`.
    pub side: Side,
    pub clock: ClockSpec,
    /// The moves already played (a resumed match).
    pub moves: &'a [String],
}

/// Reads `msg` if it is a `start`, for an adapter that plays only `game`: `None` for any other
/// message, a fault naming `engine` (e.g. "a GTP engine") if the match is of another game.
pub fn single_game_start<'a>(
    msg: &'a RefereeMessage,
    game: &str,
    engine: &str,
) -> Result<Option<SingleGameStart<'a>>, Fault> {
    let RefereeMessage::Start {
        match_id,
        game: started,
        side,
        clock,
        moves,
        ..
    } = msg
    else {
        return Ok(None);
    };
    if started != game {
        return Err(Fault(format!(
            "{engine} plays {game} only, not {started:?}"
        )));
    }
    Ok(Some(SingleGameStart {
        match_id,
        side: if side == "second" {
            Side::Second
        } else {
            Side::First
        },
        clock: *clock,
        moves,
    }))
}

/// Logs an engine's chatter at debug level, bounded: at most `CHATTER_LOG_BYTES` per engine
/// run, each line cut to `CHATTER_LINE_CHARS`; beyond that lines are only counted.
#[derive(Debug, Default)]
pub struct ChatterLog {
    logged_bytes: usize,
    lines: u64,
    unlogged: u64,
}

impl ChatterLog {
    pub fn note(&mut self, line: &str) {
        self.lines += 1;
        if self.logged_bytes >= CHATTER_LOG_BYTES {
            self.unlogged += 1;
            return;
        }
        let shown = cut(line, CHATTER_LINE_CHARS);
        self.logged_bytes += shown.len();
        tracing::debug!(
            "engine chatter (ignored): {}",
            crate::log_text::client_text(&shown)
        );
        if self.logged_bytes >= CHATTER_LOG_BYTES {
            tracing::debug!(
                "{CHATTER_LOG_BYTES} bytes of engine chatter logged; further lines are only counted"
            );
        }
    }

    /// Lines noted so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    fn summarise(&self) {
        if self.unlogged > 0 {
            tracing::debug!(
                "{} more lines of engine chatter were not logged",
                self.unlogged
            );
        }
    }
}

/// `line` cut to at most `chars` characters, with `…` when cut.
fn cut(line: &str, chars: usize) -> String {
    match line.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// A running engine and the adapter that speaks its protocol.
pub struct Engine {
    process: EngineProcess,
    adapter: Box<dyn Adapter>,
    protocol: EngineProtocol,
    /// It has been given a match (engines are not reused across matches).
    used: bool,
    /// When it exited; its remaining output is read for a moment before that counts.
    exited_at: Option<Instant>,
    chatter: ChatterLog,
    /// The first lines it printed (cut), quoted when the start check refuses it.
    first_lines: Vec<String>,
}

/// What the engine's output meant.
#[derive(Debug)]
pub enum EngineNews {
    /// A protocol line, acted on (the actions are in `out`).
    Protocol,
    /// A line that is not the protocol's (already logged).
    Chatter(String),
    /// The engine exited; its remaining output is still read for `EXIT_DRAIN`.
    Exited(String),
}

impl Engine {
    /// Starts the engine of `options` (in its folder) and sends its `--init` lines.
    pub fn start(options: &ConnectOptions, server: Option<&str>) -> Result<Engine, SpawnError> {
        let process = EngineProcess::spawn_launched(
            &options.command,
            options.cwd.as_deref(),
            protocol::MAX_LINE_BYTES,
            &options.launch,
        )?;
        let adapter: Box<dyn Adapter> = match options.protocol {
            EngineProtocol::Json => Box::new(json::JsonAdapter::new(
                &options.name,
                server.map(str::to_string),
                options.setup_timeout,
            )),
            EngineProtocol::Gtp => Box::new(gtp::GtpAdapter::new(options.setup_timeout)),
            EngineProtocol::Sau => Box::new(sau::SauAdapter::new()),
        };
        let mut engine = Engine {
            process,
            adapter,
            protocol: options.protocol,
            used: false,
            exited_at: None,
            chatter: ChatterLog::default(),
            first_lines: Vec::new(),
        };
        let mut out = Vec::new();
        engine
            .adapter
            .on_spawn(&options.init, Instant::now(), &mut out);
        if let Err(fault) = engine.send_lines(out) {
            // It is already gone: its closed output says so next.
            tracing::debug!("{fault}");
        }
        tracing::info!(
            pid = ?engine.process.pid(),
            "engine started: {}",
            options.command.join(" ")
        );
        Ok(engine)
    }

    /// Sends the engine lines among `actions`; returns the messages for the referee, or a
    /// fault if the engine no longer takes input.
    pub fn send_lines(&mut self, actions: Vec<Action>) -> Result<Vec<BotMessage>, Fault> {
        let mut to_referee = Vec::new();
        for action in actions {
            match action {
                Action::Engine(line) => {
                    if !self.process.send(&line) {
                        return Err(Fault("the engine closed its input".to_string()));
                    }
                }
                Action::Server(msg) => to_referee.push(msg),
            }
        }
        Ok(to_referee)
    }

    pub fn adapter(&mut self) -> &mut dyn Adapter {
        self.adapter.as_mut()
    }

    /// The next event, or never if the engine is gone.
    async fn next_event(engine: &mut Option<Engine>) -> EngineEvent {
        let Some(engine) = engine else {
            return std::future::pending().await;
        };
        engine.process.next_event().await
    }

    /// The next thing the engine did, read through its adapter; protocol actions go to `out`.
    /// A fault ends the engine's game. Cancel-safe.
    pub async fn next_news(&mut self, out: &mut Vec<Action>) -> Result<EngineNews, Fault> {
        let event = self.process.next_event().await;
        self.hear(event, Instant::now(), out)
    }

    fn hear(
        &mut self,
        event: EngineEvent,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<EngineNews, Fault> {
        let output = match event {
            EngineEvent::Exited(status) => {
                tracing::debug!("engine exited: {status}");
                self.exited_at = Some(now);
                return Ok(EngineNews::Exited(status));
            }
            EngineEvent::Output(output) => output,
        };
        let chatter = match output {
            EngineOutput::Line(line) => {
                if self.first_lines.len() < QUOTED_LINES && !line.trim().is_empty() {
                    self.first_lines.push(cut(&line, CHATTER_LINE_CHARS));
                }
                match self.adapter.on_engine_line(&line, now, out)? {
                    Heard::Protocol => {
                        tracing::debug!("from engine: {line}");
                        return Ok(EngineNews::Protocol);
                    }
                    Heard::Chatter => line,
                }
            }
            // Not a line of any protocol; a json engine must print JSON lines only.
            EngineOutput::TooLong if self.protocol != EngineProtocol::Json => {
                format!("(a line longer than {} bytes)", protocol::MAX_LINE_BYTES)
            }
            EngineOutput::NotUtf8 if self.protocol != EngineProtocol::Json => {
                "(a line that is not UTF-8)".to_string()
            }
            EngineOutput::TooLong => {
                return Err(Fault(format!(
                    "the engine printed a line longer than {} bytes",
                    protocol::MAX_LINE_BYTES
                )))
            }
            EngineOutput::NotUtf8 => {
                return Err(Fault(
                    "the engine printed a line that is not UTF-8".to_string(),
                ))
            }
            EngineOutput::Closed => {
                return Err(Fault(
                    "the engine closed its output (it exited or crashed)".to_string(),
                ))
            }
            EngineOutput::ReadError(e) => {
                return Err(Fault(format!("reading the engine's output failed: {e}")))
            }
        };
        self.chatter.note(&chatter);
        Ok(EngineNews::Chatter(chatter))
    }

    fn deadline(&self) -> Option<Instant> {
        let exit = self.exited_at.map(|t| t + EXIT_DRAIN);
        match (self.adapter.deadline(), exit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// "it printed: `a` | `b`" or "it printed nothing", then its last lines on stderr when
    /// they are captured ("its last lines on stderr: `c` | `d`").
    fn quoted_output(&self) -> String {
        let quote = |lines: &[String]| {
            let quoted: Vec<String> = lines.iter().map(|l| format!("`{l}`")).collect();
            quoted.join(" | ")
        };
        let printed = if self.first_lines.is_empty() {
            "it printed nothing".to_string()
        } else {
            format!("it printed: {}", quote(&self.first_lines))
        };
        let stderr = self.process.stderr_tail();
        if stderr.is_empty() {
            return printed;
        }
        format!("{printed}; its last lines on stderr: {}", quote(&stderr))
    }

    /// Ends the engine: its protocol's quit command, a bounded wait, then the process group
    /// is killed (see `EngineProcess::shutdown_with`).
    pub async fn stop(self) {
        self.chatter.summarise();
        let quit = self.adapter.quit_command();
        self.process.shutdown_with(quit).await;
    }
}

/// The check before connecting: starts the engine once and sees that it speaks its protocol
/// (GTP: answers `name`, `protocol_version`, `boardsize 11`; sau: answers `name`, or else stays
/// up for `SAU_ALIVE`; json: says hello within `setup_timeout`). Returns the engine
/// and its name, or an error naming the command and quoting what it printed.
pub async fn check_engine(
    options: &ConnectOptions,
) -> Result<(Engine, Option<String>), BridgeError> {
    let command = options.command.join(" ");
    let refuse = |problem: String, printed: String| BridgeError::EngineCheck {
        command: command.clone(),
        problem,
        printed,
    };
    let mut engine = Engine::start(options, None)
        .map_err(|e| refuse(e.to_string(), "it printed nothing".to_string()))?;
    let started = Instant::now();
    let mut out = Vec::new();
    engine.adapter.on_check(started, &mut out);
    if let Err(fault) = engine.send_lines(std::mem::take(&mut out)) {
        let printed = engine.quoted_output();
        engine.stop().await;
        return Err(refuse(fault.0, printed));
    }
    let sau = options.protocol == EngineProtocol::Sau;
    let answer_by = started + options.setup_timeout;
    let problem = loop {
        if engine.exited_at.is_none() {
            if sau && Instant::now() >= started + SAU_ALIVE {
                break None;
            }
            if engine.adapter.check_answered() {
                break None;
            }
        }
        let wake = if sau { started + SAU_ALIVE } else { answer_by };
        let wake = engine.exited_at.map_or(wake, |t| wake.min(t + EXIT_DRAIN));
        tokio::select! {
            news = engine.next_news(&mut out) => match news {
                Ok(EngineNews::Exited(status)) => {
                    tracing::debug!("engine exited during the check: {status}");
                }
                Ok(_) => {
                    if let Err(fault) = engine.send_lines(std::mem::take(&mut out)) {
                        break Some(fault.0);
                    }
                }
                Err(fault) => break Some(fault.0),
            },
            _ = tokio::time::sleep_until(wake) => {
                if engine.exited_at.is_some() {
                    break Some("the engine exited".to_string());
                }
                if !sau {
                    break Some(format!(
                        "no answer within {} ms (see --setup-timeout-ms)",
                        options.setup_timeout.as_millis()
                    ));
                }
            }
        }
    };
    if let Some(problem) = problem {
        let status = match engine.process.wait_exit_within(EXIT_DRAIN).await {
            Some(status) => format!(" ({status})"),
            None => String::new(),
        };
        let printed = engine.quoted_output();
        engine.stop().await;
        return Err(refuse(format!("{problem}{status}"), printed));
    }
    let name = engine.adapter.engine_name();
    tracing::info!(
        "engine `{command}` passed its start check{}",
        name.as_deref()
            .map(|n| format!(" (it says its name is {n:?})"))
            .unwrap_or_default()
    );
    Ok((engine, name))
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

type ServerLink = RefereeLink;

/// A referee message for one match, with the line it came in.
type MatchInput = (RefereeMessage, String);

/// Messages a match task queues for the referee before it waits for the link.
const TO_SERVER_QUEUE: usize = 256;
/// Referee messages queued for one match task (a `turn` at a time, plus pings' worth).
const MATCH_INBOX: usize = 64;
/// How long the bridge waits, when it stops, for its match tasks to end their engines.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The match being played.
struct CurrentMatch {
    id: String,
    /// The engine failed and the bridge resigned: later messages are not passed on.
    failed: bool,
}

/// One match and its own engine process, run as a task of its own: the bridge plays up to
/// `max_games` matches at once, each against a fresh engine child.
struct MatchRunner {
    options: ConnectOptions,
    server_name: String,
    engine: Option<Engine>,
    current: CurrentMatch,
    to_server: tokio::sync::mpsc::Sender<BotMessage>,
}

impl MatchRunner {
    /// Queues a message for the referee; false once the bridge has stopped.
    async fn send_server(&mut self, msg: BotMessage) -> bool {
        self.to_server.send(msg).await.is_ok()
    }

    /// Carries out adapter actions; a line the engine can no longer take is a fault.
    async fn apply(&mut self, actions: Vec<Action>) -> Result<(), Fault> {
        let Some(engine) = &mut self.engine else {
            return Ok(());
        };
        for msg in engine.send_lines(actions)? {
            self.send_server(msg).await;
        }
        Ok(())
    }

    /// The engine failed: resign the match (once), say why, stop the engine.
    async fn engine_failed(&mut self, fault: Fault) {
        if self.current.failed {
            tracing::error!("engine failed: {fault}");
        } else {
            self.current.failed = true;
            let match_id = self.current.id.clone();
            tracing::error!("engine failed in match {match_id}: {fault}; resigning");
            self.send_server(BotMessage::Resign { match_id }).await;
        }
        self.stop_engine().await;
    }

    async fn stop_engine(&mut self) {
        if let Some(engine) = self.engine.take() {
            engine.stop().await;
        }
    }

    async fn pass_to_adapter(&mut self, msg: &RefereeMessage, raw: &str) {
        let Some(engine) = &mut self.engine else {
            return;
        };
        let mut out = Vec::new();
        let result = engine
            .adapter
            .on_referee(msg, raw, Instant::now(), &mut out);
        let applied = self.apply(out).await;
        if let Err(fault) = result.and(applied) {
            self.engine_failed(fault).await;
        }
    }

    /// Handles one referee message of this match; returns whether the match is over.
    async fn on_message(&mut self, msg: RefereeMessage, raw: &str) -> bool {
        match &msg {
            RefereeMessage::Start { .. } => {
                if self.engine.is_none() {
                    match Engine::start(&self.options, Some(&self.server_name)) {
                        Ok(engine) => self.engine = Some(engine),
                        Err(e) => {
                            self.engine_failed(Fault(e.to_string())).await;
                            return false;
                        }
                    }
                }
                if let Some(engine) = &mut self.engine {
                    engine.used = true;
                }
                self.pass_to_adapter(&msg, raw).await;
                false
            }
            RefereeMessage::Turn { .. } => {
                if self.current.failed {
                    return false;
                }
                if self.engine.is_none() {
                    self.engine_failed(Fault("no engine is running".to_string()))
                        .await;
                    return false;
                }
                self.pass_to_adapter(&msg, raw).await;
                false
            }
            RefereeMessage::End { .. } => {
                self.pass_to_adapter(&msg, raw).await;
                true
            }
            RefereeMessage::Error { .. } => {
                if !self.current.failed {
                    self.pass_to_adapter(&msg, raw).await;
                }
                false
            }
            RefereeMessage::Ping { .. } | RefereeMessage::Welcome { .. } => false,
        }
    }

    async fn on_engine_event(&mut self, event: EngineEvent) {
        let Some(engine) = &mut self.engine else {
            return;
        };
        let mut out = Vec::new();
        let heard = engine.hear(event, Instant::now(), &mut out);
        let applied = self.apply(out).await;
        if let Err(fault) = heard.and(applied) {
            self.engine_failed(fault).await;
        }
    }

    async fn on_deadline(&mut self) {
        let fault = match &self.engine {
            Some(engine) if engine.exited_at.is_some() => Fault("the engine exited".to_string()),
            _ => Fault("the engine did not answer in time".to_string()),
        };
        self.engine_failed(fault).await;
    }

    /// Plays the match from its `start` until its `end`, or until the bridge stops (its inbox
    /// closes); the engine is ended either way.
    async fn run(mut self, start: MatchInput, mut inbox: tokio::sync::mpsc::Receiver<MatchInput>) {
        let (msg, raw) = start;
        let mut over = self.on_message(msg, &raw).await;
        while !over {
            let deadline = self.engine.as_ref().and_then(Engine::deadline);
            tokio::select! {
                input = inbox.recv() => match input {
                    Some((msg, raw)) => over = self.on_message(msg, &raw).await,
                    None => break,
                },
                event = Engine::next_event(&mut self.engine) => self.on_engine_event(event).await,
                _ = sleep_until_opt(deadline) => self.on_deadline().await,
            }
        }
        self.stop_engine().await;
    }
}

/// The bridge's state between events: the referee link and the match tasks.
struct Bridge {
    options: ConnectOptions,
    link: ServerLink,
    server_name: String,
    /// An engine already running (a json engine, checked and welcomed) for the next match.
    spare: Option<Engine>,
    /// Each running match's inbox.
    matches_on: std::collections::HashMap<String, tokio::sync::mpsc::Sender<MatchInput>>,
    tasks: tokio::task::JoinSet<()>,
    to_server: tokio::sync::mpsc::Sender<BotMessage>,
    from_matches: tokio::sync::mpsc::Receiver<BotMessage>,
    matches: u32,
}

impl Bridge {
    async fn send_server(&mut self, msg: &BotMessage) -> Result<(), BridgeError> {
        tracing::debug!("to referee: {}", msg.to_line());
        self.link.send(msg.to_line()).await?;
        Ok(())
    }

    /// Hands `input` to the task of match `match_id`, if it still runs.
    async fn route(&mut self, match_id: &str, input: MatchInput) {
        match self.matches_on.get(match_id) {
            Some(inbox) => {
                if inbox.send(input).await.is_err() {
                    // The task ended (its engine failed and it resigned): nothing to pass on.
                    self.matches_on.remove(match_id);
                }
            }
            None => {
                tracing::warn!("a message for match {match_id}, which the bridge is not playing")
            }
        }
    }

    async fn on_server_line(&mut self, line: &str) -> Result<(), BridgeError> {
        let msg = match parse_referee_line(line) {
            Ok(msg) => msg,
            Err(e) => {
                tracing::warn!("ignoring a referee line the bridge cannot read ({e}): {line:?}");
                return Ok(());
            }
        };
        tracing::debug!("from referee: {line}");
        match &msg {
            RefereeMessage::Ping { id } => self.send_server(&BotMessage::Pong { id: *id }).await,
            RefereeMessage::Welcome { .. } => Ok(()),
            RefereeMessage::Start {
                match_id,
                game,
                side,
                opponent,
                ..
            } => {
                tracing::info!("match {match_id}: {game}, playing {side} against {opponent}");
                let match_id = match_id.clone();
                if let Some(earlier) = self.matches_on.remove(&match_id) {
                    // Restarted by the referee (e.g. after its own restart): the old task ends.
                    drop(earlier);
                }
                let engine = self.spare.take().filter(|e| !e.used);
                let (inbox_tx, inbox) = tokio::sync::mpsc::channel(MATCH_INBOX);
                let runner = MatchRunner {
                    options: self.options.clone(),
                    server_name: self.server_name.clone(),
                    engine,
                    current: CurrentMatch {
                        id: match_id.clone(),
                        failed: false,
                    },
                    to_server: self.to_server.clone(),
                };
                self.matches += 1;
                self.matches_on.insert(match_id, inbox_tx);
                self.tasks.spawn(runner.run((msg, line.to_string()), inbox));
                Ok(())
            }
            RefereeMessage::Turn { match_id, .. } => {
                let match_id = match_id.clone();
                self.route(&match_id, (msg, line.to_string())).await;
                Ok(())
            }
            RefereeMessage::End {
                match_id,
                result,
                reason,
                moves,
            } => {
                tracing::info!(
                    "match {match_id} over: {result} by {reason} after {} moves",
                    moves.len()
                );
                let match_id = match_id.clone();
                self.route(&match_id, (msg, line.to_string())).await;
                self.matches_on.remove(&match_id);
                Ok(())
            }
            RefereeMessage::Error {
                code,
                message,
                match_id,
            } => {
                tracing::warn!(
                    "the referee reports {} {}: {message}",
                    code.as_str(),
                    match_id.as_deref().unwrap_or("")
                );
                match match_id.clone() {
                    Some(id) => self.route(&id, (msg, line.to_string())).await,
                    None => {
                        let inboxes: Vec<_> = self.matches_on.values().cloned().collect();
                        for inbox in inboxes {
                            let _ = inbox.send((msg.clone(), line.to_string())).await;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    async fn run(&mut self) -> Result<(), BridgeError> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        loop {
            tokio::select! {
                frame = self.link.next() => match frame {
                    Some(Ok(Frame::Line(line))) => self.on_server_line(&line).await?,
                    Some(Ok(Frame::TooLong)) => tracing::warn!("the referee sent an oversized line; ignored"),
                    Some(Ok(Frame::NotUtf8)) => tracing::warn!("the referee sent a line that is not UTF-8; ignored"),
                    Some(Err(e)) => return Err(e.into()),
                    None => {
                        if self.matches_on.is_empty() {
                            tracing::info!("the referee closed the connection");
                        } else {
                            let on: Vec<&String> = self.matches_on.keys().collect();
                            tracing::warn!("the referee closed the connection during match {on:?}");
                        }
                        return Ok(());
                    }
                },
                Some(msg) = self.from_matches.recv() => self.send_server(&msg).await?,
                Some(_) = self.tasks.join_next(), if !self.tasks.is_empty() => {}
                _ = interrupt.recv() => return Err(BridgeError::Interrupted("SIGINT")),
                _ = terminate.recv() => return Err(BridgeError::Interrupted("SIGTERM")),
                _ = self.options.stop.cancelled() => return Err(BridgeError::Interrupted("stop")),
            }
        }
    }

    /// Ends every match task (each ends its engine: `quit`, then its process group killed) and
    /// the spare engine.
    async fn stop(&mut self) {
        self.matches_on.clear();
        if let Some(engine) = self.spare.take() {
            engine.stop().await;
        }
        let tasks = &mut self.tasks;
        let ended = tokio::time::timeout(STOP_WAIT, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if ended.is_err() {
            // Dropping the tasks drops their engines, whose process groups are killed then.
            tracing::warn!("match tasks did not end within {STOP_WAIT:?}; aborting them");
            self.tasks.abort_all();
            while self.tasks.join_next().await.is_some() {}
        }
    }
}

/// Runs `arena connect` until the referee closes the connection. Returns the number of matches
/// played. The engine is checked before connecting (`check_engine`); no engine outlives this
/// call (nor a panic inside it).
pub async fn run(options: ConnectOptions) -> Result<u32, BridgeError> {
    // Stopped while checking the engine: dropping the check kills its process group.
    let (checked, _name) = tokio::select! {
        checked = check_engine(&options) => checked?,
        _ = options.stop.cancelled() => return Err(BridgeError::Interrupted("stop")),
    };
    let mut spare = None;
    let games = match (options.games.clone(), options.protocol.default_games()) {
        (Some(games), _) | (None, Some(games)) => {
            checked.stop().await;
            games
        }
        (None, None) => {
            let games = checked.adapter.engine_games().unwrap_or_default();
            // A json engine keeps running: it has said hello and waits for its welcome.
            spare = Some(checked);
            games
        }
    };
    let hello = BotMessage::Hello {
        protocol: PROTOCOL_VERSION,
        name: options.name.clone(),
        token: options.token.clone(),
        games,
        max_games: options.max_games.max(1),
        engine: Some(format!(
            "arena connect ({}): {}",
            options.protocol,
            options.command.first().map(String::as_str).unwrap_or("")
        )),
        ticket: None,
    };
    let (link, welcomed) = connect_and_hello(&options.server, &hello, WELCOME_TIMEOUT)
        .await
        .map_err(|e| match e {
            HandshakeError::Connect { server, error } => BridgeError::Connect {
                addr: server,
                source: error,
            },
            HandshakeError::Timeout(limit) => BridgeError::NoWelcome(limit),
            HandshakeError::Refused(message) | HandshakeError::Throttled(message) => {
                BridgeError::Refused(message)
            }
            HandshakeError::Closed => BridgeError::ClosedBeforeWelcome,
            HandshakeError::Protocol(message) => BridgeError::Refused(message),
            web @ HandshakeError::WebServer(_) => BridgeError::Refused(web.to_string()),
            HandshakeError::LeagueOver(message) => BridgeError::Refused(message),
            HandshakeError::Io(e) => BridgeError::Io(e),
        })?;
    let server_name = welcomed.server;
    tracing::info!("welcomed by {server_name} as {}", options.name);
    let (to_server, from_matches) = tokio::sync::mpsc::channel(TO_SERVER_QUEUE);
    let mut bridge = Bridge {
        options,
        link,
        server_name: server_name.clone(),
        spare,
        matches_on: std::collections::HashMap::new(),
        tasks: tokio::task::JoinSet::new(),
        to_server,
        from_matches,
        matches: 0,
    };
    if let Some(engine) = &mut bridge.spare {
        let mut out = Vec::new();
        engine.adapter.on_welcome(&server_name, &mut out);
        match engine.send_lines(out) {
            Ok(messages) => {
                for msg in messages {
                    bridge.send_server(&msg).await?;
                }
            }
            Err(fault) => {
                tracing::error!("engine failed: {fault}");
                if let Some(engine) = bridge.spare.take() {
                    engine.stop().await;
                }
            }
        }
    }
    let result = bridge.run().await;
    bridge.stop().await;
    result.map(|()| bridge.matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_the_clock_or_the_move_limit_plus_margin() {
        let clock = TurnClock {
            you_ms: 5000,
            opponent_ms: 1,
        };
        assert_eq!(move_budget(&clock, None), Duration::from_millis(5500));
        let spec = ClockSpec {
            initial_ms: 1,
            increment_ms: 0,
            move_limit_ms: Some(1000),
        };
        assert_eq!(
            move_budget(&clock, Some(&spec)),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn a_single_game_start_is_read_and_other_games_are_faults() {
        let start = |game: &str, side: &str| RefereeMessage::Start {
            match_id: "m".into(),
            game: game.into(),
            side: side.into(),
            colour: "W".into(),
            opponent: "o".into(),
            rules: serde_json::json!({}),
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: Some(300),
            },
            moves: vec!["F6".into()],
        };
        let msg = start("hex", "second");
        let read = single_game_start(&msg, "hex", "a GTP engine")
            .unwrap()
            .unwrap();
        assert_eq!(read.match_id, "m");
        assert_eq!(read.side, Side::Second);
        assert_eq!(read.clock.move_limit_ms, Some(300));
        assert_eq!(read.moves, ["F6".to_string()]);
        let msg = start("hex", "first");
        let read = single_game_start(&msg, "hex", "a GTP engine")
            .unwrap()
            .unwrap();
        assert_eq!(read.side, Side::First);
        assert_eq!(
            single_game_start(&start("jiu", "first"), "connect6", "a sau engine").err(),
            Some(Fault(
                "a sau engine plays connect6 only, not \"jiu\"".to_string()
            ))
        );
        let ping = RefereeMessage::Ping { id: 1 };
        assert!(single_game_start(&ping, "hex", "a GTP engine")
            .unwrap()
            .is_none());
    }

    #[test]
    fn chatter_logging_is_bounded_and_lines_are_cut() {
        let mut log = ChatterLog::default();
        let long = "x".repeat(5_000);
        for _ in 0..10_000 {
            log.note(&long);
        }
        assert_eq!(log.lines(), 10_000);
        assert!(log.logged_bytes < CHATTER_LOG_BYTES + CHATTER_LINE_CHARS * 4);
        assert!(log.unlogged > 9_000);
        assert_eq!(cut("ab", 5), "ab");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("六子棋联赛", 2), "六子…");
    }

    #[test]
    fn protocols_parse() {
        for p in [
            EngineProtocol::Json,
            EngineProtocol::Gtp,
            EngineProtocol::Sau,
        ] {
            assert_eq!(p.as_str().parse::<EngineProtocol>(), Ok(p));
        }
        assert!("uci".parse::<EngineProtocol>().is_err());
    }
}

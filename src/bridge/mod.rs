//! `arena connect`: plays an existing engine in the arena. The bridge connects to the referee
//! (protocol v1) under the command line's name and token, runs the engine as a child process for
//! each match (one match at a time), and translates between the referee and the engine's own
//! protocol: `json` (protocol v1 itself, relayed), `gtp` (Hex, MoHex/Benzene family) or `sau`
//! (Connect6, the contest's common text protocol).
//!
//! Failure policy: an engine that crashes, closes its output, prints something its protocol does
//! not allow, refuses a command, or stalls past its clock loses the current game: the bridge
//! sends `resign` at once, says why on stderr, and kills the engine's whole process group. Every
//! wait for the engine has a deadline: the clock of the last `turn` (plus `CLOCK_MARGIN`) while a
//! move is due, `setup_timeout` for anything else it must answer.
//!
//! Reads from the referee are capped at 64 KiB per line; the welcome is awaited at most
//! `WELCOME_TIMEOUT`, but afterwards there is no idle timeout, since between matches the
//! referee may stay silent for as long as its pairing takes (it pings to check on us).

pub mod child;
pub mod gtp;
pub mod json;
pub mod sau;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;
use tokio_util::codec::Framed;

use crate::game::Side;
use crate::protocol::{
    self, parse_referee_line, BotMessage, CappedLineCodec, ClockSpec, Frame, RefereeMessage,
    TurnClock, PROTOCOL_VERSION,
};
use child::{EngineEvent, EngineOutput, EngineProcess, SpawnError};

/// Time added to the clock before the bridge gives up on a move: the referee usually ends the
/// game by `timeout` first, and the bridge's `resign` only matters if it does not.
pub const CLOCK_MARGIN: Duration = Duration::from_millis(500);
/// How long the referee has to welcome the bridge.
pub const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an exited engine's remaining output is still read before the exit counts.
const EXIT_DRAIN: Duration = Duration::from_millis(300);

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
    fn default_games(self) -> Option<Vec<String>> {
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
    /// Deadline for answers that are not moves (GTP setup, the json engine's `hello`).
    pub setup_timeout: Duration,
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
    #[error("the engine did not say hello: {0}")]
    NoEngineHello(String),
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
    /// A line the engine printed.
    fn on_engine_line(
        &mut self,
        line: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault>;
    /// When the engine's pending answer is overdue, if it owes one.
    fn deadline(&self) -> Option<Instant>;
    /// The games of a json engine's `hello`, once said.
    fn engine_games(&self) -> Option<Vec<String>> {
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

/// A running engine and the adapter that speaks its protocol.
struct Engine {
    process: EngineProcess,
    adapter: Box<dyn Adapter>,
    /// It has been given a match (engines are not reused across matches).
    used: bool,
    /// When it exited; its remaining output is read for a moment before that counts.
    exited_at: Option<Instant>,
}

impl Engine {
    fn start(options: &ConnectOptions, server: Option<&str>) -> Result<Engine, SpawnError> {
        let process = EngineProcess::spawn(&options.command, protocol::MAX_LINE_BYTES)?;
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
            used: false,
            exited_at: None,
        };
        let mut out = Vec::new();
        engine
            .adapter
            .on_spawn(&options.init, Instant::now(), &mut out);
        for action in out {
            if let Action::Engine(line) = action {
                engine.process.send(&line);
            }
        }
        tracing::info!(
            pid = ?engine.process.pid(),
            "engine started: {}",
            options.command.join(" ")
        );
        Ok(engine)
    }

    /// The next event, or never if the engine is gone.
    async fn next_event(engine: &mut Option<Engine>) -> EngineEvent {
        let Some(engine) = engine else {
            return std::future::pending().await;
        };
        engine.process.next_event().await
    }

    fn deadline(&self) -> Option<Instant> {
        let exit = self.exited_at.map(|t| t + EXIT_DRAIN);
        match (self.adapter.deadline(), exit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

type ServerLink = Framed<TcpStream, CappedLineCodec>;

/// The match being played.
struct CurrentMatch {
    id: String,
    /// The engine failed and the bridge resigned: later messages are not passed on.
    failed: bool,
}

/// The bridge's state between events.
struct Bridge {
    options: ConnectOptions,
    link: ServerLink,
    server_name: String,
    engine: Option<Engine>,
    current: Option<CurrentMatch>,
    matches: u32,
}

impl Bridge {
    async fn send_server(&mut self, msg: &BotMessage) -> Result<(), BridgeError> {
        tracing::debug!("to referee: {}", msg.to_line());
        self.link.send(msg.to_line()).await?;
        Ok(())
    }

    /// Carries out adapter actions; a line the engine can no longer take is a fault.
    async fn apply(&mut self, actions: Vec<Action>) -> Result<Result<(), Fault>, BridgeError> {
        for action in actions {
            match action {
                Action::Engine(line) => {
                    if let Some(engine) = &self.engine {
                        if !engine.process.send(&line) {
                            return Ok(Err(Fault("the engine closed its input".to_string())));
                        }
                    }
                }
                Action::Server(msg) => self.send_server(&msg).await?,
            }
        }
        Ok(Ok(()))
    }

    /// The engine failed: resign the current match (once), say why, stop the engine.
    async fn engine_failed(&mut self, fault: Fault) -> Result<(), BridgeError> {
        match &mut self.current {
            Some(current) if !current.failed => {
                current.failed = true;
                let match_id = current.id.clone();
                tracing::error!("engine failed in match {match_id}: {fault}; resigning");
                self.send_server(&BotMessage::Resign { match_id }).await?;
            }
            _ => tracing::error!("engine failed: {fault}"),
        }
        if let Some(engine) = self.engine.take() {
            engine.process.shutdown().await;
        }
        Ok(())
    }

    async fn stop_engine(&mut self) {
        if let Some(engine) = self.engine.take() {
            engine.process.shutdown().await;
        }
    }

    async fn pass_to_adapter(
        &mut self,
        msg: &RefereeMessage,
        raw: &str,
    ) -> Result<(), BridgeError> {
        let Some(engine) = &mut self.engine else {
            return Ok(());
        };
        let mut out = Vec::new();
        let result = engine
            .adapter
            .on_referee(msg, raw, Instant::now(), &mut out);
        let applied = self.apply(out).await?;
        match result.and(applied) {
            Ok(()) => Ok(()),
            Err(fault) => self.engine_failed(fault).await,
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
                if let Some(current) = &self.current {
                    tracing::warn!(
                        "match {match_id} starts while {} is still on; the bridge plays one at a time",
                        current.id
                    );
                }
                if self.engine.as_ref().is_some_and(|e| e.used) {
                    self.stop_engine().await;
                }
                self.current = Some(CurrentMatch {
                    id: match_id.clone(),
                    failed: false,
                });
                self.matches += 1;
                if self.engine.is_none() {
                    match Engine::start(&self.options, Some(&self.server_name)) {
                        Ok(engine) => self.engine = Some(engine),
                        Err(e) => return self.engine_failed(Fault(e.to_string())).await,
                    }
                }
                if let Some(engine) = &mut self.engine {
                    engine.used = true;
                }
                self.pass_to_adapter(&msg, line).await
            }
            RefereeMessage::Turn { match_id, .. } => {
                match &self.current {
                    Some(current) if current.id == *match_id => {
                        if current.failed {
                            return Ok(());
                        }
                        if self.engine.is_none() {
                            return self
                                .engine_failed(Fault("no engine is running".to_string()))
                                .await;
                        }
                    }
                    _ => {
                        tracing::warn!(
                            "turn for match {match_id}, which the bridge is not playing"
                        );
                        return Ok(());
                    }
                }
                self.pass_to_adapter(&msg, line).await
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
                if self.current.as_ref().is_some_and(|c| c.id == *match_id) {
                    self.pass_to_adapter(&msg, line).await?;
                    self.current = None;
                    self.stop_engine().await;
                }
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
                if self.current.as_ref().is_some_and(|c| !c.failed) {
                    self.pass_to_adapter(&msg, line).await?;
                }
                Ok(())
            }
        }
    }

    async fn on_engine_event(&mut self, event: EngineEvent) -> Result<(), BridgeError> {
        let fault = match event {
            EngineEvent::Exited(status) => {
                tracing::debug!("engine exited: {status}");
                if let Some(engine) = &mut self.engine {
                    engine.exited_at = Some(Instant::now());
                }
                return Ok(());
            }
            EngineEvent::Output(EngineOutput::Line(line)) => {
                tracing::debug!("from engine: {line}");
                let Some(engine) = &mut self.engine else {
                    return Ok(());
                };
                let mut out = Vec::new();
                let result = engine
                    .adapter
                    .on_engine_line(&line, Instant::now(), &mut out);
                let applied = self.apply(out).await?;
                match result.and(applied) {
                    Ok(()) => return Ok(()),
                    Err(fault) => fault,
                }
            }
            EngineEvent::Output(EngineOutput::TooLong) => Fault(format!(
                "the engine printed a line longer than {} bytes",
                protocol::MAX_LINE_BYTES
            )),
            EngineEvent::Output(EngineOutput::NotUtf8) => {
                Fault("the engine printed a line that is not UTF-8".to_string())
            }
            EngineEvent::Output(EngineOutput::Closed) => {
                Fault("the engine closed its output (it exited or crashed)".to_string())
            }
            EngineEvent::Output(EngineOutput::ReadError(e)) => {
                Fault(format!("reading the engine's output failed: {e}"))
            }
        };
        self.engine_failed(fault).await
    }

    async fn on_deadline(&mut self) -> Result<(), BridgeError> {
        let fault = match &self.engine {
            Some(engine) if engine.exited_at.is_some() => Fault("the engine exited".to_string()),
            _ => Fault("the engine did not answer in time".to_string()),
        };
        self.engine_failed(fault).await
    }

    async fn run(&mut self) -> Result<(), BridgeError> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        loop {
            let deadline = self.engine.as_ref().and_then(Engine::deadline);
            tokio::select! {
                frame = self.link.next() => match frame {
                    Some(Ok(Frame::Line(line))) => self.on_server_line(&line).await?,
                    Some(Ok(Frame::TooLong)) => tracing::warn!("the referee sent an oversized line; ignored"),
                    Some(Ok(Frame::NotUtf8)) => tracing::warn!("the referee sent a line that is not UTF-8; ignored"),
                    Some(Err(e)) => return Err(e.into()),
                    None => {
                        match &self.current {
                            Some(current) => tracing::warn!("the referee closed the connection during match {}", current.id),
                            None => tracing::info!("the referee closed the connection"),
                        }
                        return Ok(());
                    }
                },
                event = Engine::next_event(&mut self.engine) => self.on_engine_event(event).await?,
                _ = sleep_until_opt(deadline) => self.on_deadline().await?,
                _ = interrupt.recv() => return Err(BridgeError::Interrupted("SIGINT")),
                _ = terminate.recv() => return Err(BridgeError::Interrupted("SIGTERM")),
            }
        }
    }
}

/// Starts a json engine and waits for its `hello` (for its games list).
async fn probe_json_engine(options: &ConnectOptions) -> Result<(Engine, Vec<String>), BridgeError> {
    let mut engine = Some(Engine::start(options, None)?);
    loop {
        let deadline = engine.as_ref().and_then(Engine::deadline);
        let event = tokio::select! {
            event = Engine::next_event(&mut engine) => event,
            _ = sleep_until_opt(deadline) => {
                return Err(BridgeError::NoEngineHello(format!(
                    "nothing within {:?}",
                    options.setup_timeout
                )))
            }
        };
        let Some(e) = &mut engine else {
            return Err(BridgeError::NoEngineHello("engine gone".to_string()));
        };
        match event {
            EngineEvent::Exited(status) => {
                e.exited_at = Some(Instant::now());
                tracing::debug!("engine exited: {status}");
            }
            EngineEvent::Output(EngineOutput::Line(line)) => {
                let mut out = Vec::new();
                e.adapter
                    .on_engine_line(&line, Instant::now(), &mut out)
                    .map_err(|f| BridgeError::NoEngineHello(f.0))?;
                if let Some(games) = e.adapter.engine_games() {
                    if let Some(e) = engine.take() {
                        return Ok((e, games));
                    }
                }
            }
            EngineEvent::Output(other) => {
                return Err(BridgeError::NoEngineHello(format!("{other:?}")));
            }
        }
    }
}

/// Runs `arena connect` until the referee closes the connection. Returns the number of matches
/// played. The engine never outlives this call (nor a panic inside it).
pub async fn run(options: ConnectOptions) -> Result<u32, BridgeError> {
    let mut engine = None;
    let games = match (options.games.clone(), options.protocol.default_games()) {
        (Some(games), _) | (None, Some(games)) => games,
        (None, None) => {
            let (probe, games) = probe_json_engine(&options).await?;
            engine = Some(probe);
            games
        }
    };
    let stream = TcpStream::connect(&options.server)
        .await
        .map_err(|source| BridgeError::Connect {
            addr: options.server.clone(),
            source,
        })?;
    // Moves are small lines: send each at once rather than waiting for earlier ACKs (Nagle).
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    let mut link = Framed::new(stream, CappedLineCodec::new(protocol::MAX_LINE_BYTES));
    let hello = BotMessage::Hello {
        protocol: PROTOCOL_VERSION,
        name: options.name.clone(),
        token: options.token.clone(),
        games,
        max_games: 1,
        engine: Some(format!(
            "arena connect ({}): {}",
            options.protocol,
            options.command.first().map(String::as_str).unwrap_or("")
        )),
    };
    link.send(hello.to_line()).await?;
    let server_name = tokio::time::timeout(WELCOME_TIMEOUT, wait_for_welcome(&mut link))
        .await
        .map_err(|_| BridgeError::NoWelcome(WELCOME_TIMEOUT))??;
    tracing::info!("welcomed by {server_name} as {}", options.name);
    let mut bridge = Bridge {
        options,
        link,
        server_name: server_name.clone(),
        engine,
        current: None,
        matches: 0,
    };
    if let Some(engine) = &mut bridge.engine {
        let mut out = Vec::new();
        engine.adapter.on_welcome(&server_name, &mut out);
        if let Err(fault) = bridge.apply(out).await? {
            bridge.engine_failed(fault).await?;
        }
    }
    let result = bridge.run().await;
    bridge.stop_engine().await;
    result.map(|()| bridge.matches)
}

async fn wait_for_welcome(link: &mut ServerLink) -> Result<String, BridgeError> {
    while let Some(frame) = link.next().await {
        let Frame::Line(line) = frame? else {
            continue;
        };
        match parse_referee_line(&line) {
            Ok(RefereeMessage::Welcome { server, .. }) => return Ok(server),
            Ok(RefereeMessage::Error { code, message, .. }) => {
                return Err(BridgeError::Refused(format!(
                    "{}: {message}",
                    code.as_str()
                )))
            }
            Ok(RefereeMessage::Ping { id }) => {
                link.send(BotMessage::Pong { id }.to_line()).await?;
            }
            Ok(other) => tracing::warn!("ignoring {other:?} before the welcome"),
            Err(e) => tracing::warn!("ignoring an unreadable referee line ({e}): {line:?}"),
        }
    }
    Err(BridgeError::ClosedBeforeWelcome)
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

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
//!
//! Files, by role: `engine` (one running engine and the adapter that speaks its protocol),
//! `check` (the start check before connecting), `runner` (one match against its own engine, as
//! a task), `session` (the referee link: connect, hello, route each match's messages, stop),
//! `child` (the engine's process: spawn, lines, group kill), `conformance` (`--check`). This file holds what they share: the options, the error, and the `Adapter` vocabulary the
//! sans-I/O adapters (`json`, `gtp`, `sau`) are written against.

mod check;
pub mod child;
pub mod conformance;
mod engine;
pub mod gtp;
pub mod json;
mod runner;
pub mod sau;
mod session;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::clock::Clocks;
use crate::game::Side;
use crate::program::EngineProtocol;
use crate::protocol::{BotMessage, ClockSpec, RefereeMessage, TurnClock};
use child::SpawnError;

pub use check::{check_engine, SAU_ALIVE};
pub use engine::{ChatterLog, Engine, EngineNews, CHATTER_LOG_BYTES};
pub use session::{run, WELCOME_TIMEOUT};

/// Time added to the clock before the bridge gives up on a move: the referee usually ends the
/// game by `timeout` first, and the bridge's `resign` only matters if it does not.
pub const CLOCK_MARGIN: Duration = Duration::from_millis(500);
/// Chatter lines are logged cut to this many characters.
pub const CHATTER_LINE_CHARS: usize = 200;

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
    /// The referee's answer to hello was an `error`; its text is shown escaped and cut.
    #[error("the referee refused the bridge: {}", crate::log_text::peer_message(.0))]
    Refused(String),
    /// The answer to hello was not the protocol's (a web server, another protocol version).
    #[error(transparent)]
    Handshake(crate::bot_connection::HandshakeError),
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
    // Without a `start` (no settings known) there is no per-move limit, as in the default.
    let spec = spec.copied().unwrap_or_default();
    let allowed = Clocks::seen_by(spec, Side::First, *clock).allowed(Side::First);
    allowed.saturating_add(CLOCK_MARGIN)
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

/// `line` cut to at most `chars` characters, with `…` when cut.
fn cut(line: &str, chars: usize) -> String {
    match line.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
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
}

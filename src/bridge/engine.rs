//! One running engine (`Engine`): its child process and the adapter that speaks its protocol,
//! its output read as protocol lines or chatter (logged, bounded, by `ChatterLog`), its end.

use std::time::Duration;

use tokio::time::Instant;

use super::child::{EngineEvent, EngineOutput, EngineProcess, SpawnError};
use super::{
    cut, gtp, json, sau, Action, Adapter, ConnectOptions, Fault, Heard, CHATTER_LINE_CHARS,
};
use crate::program::EngineProtocol;
use crate::protocol::{self, BotMessage};

/// How long an exited engine's remaining output is still read before the exit counts.
pub(super) const EXIT_DRAIN: Duration = Duration::from_millis(300);
/// How much of an engine run's chatter goes to the debug log; the rest is only counted.
pub const CHATTER_LOG_BYTES: usize = 16 * 1024;
/// How many lines of output the start check quotes when it refuses an engine.
const QUOTED_LINES: usize = 6;

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

/// A running engine and the adapter that speaks its protocol.
pub struct Engine {
    pub(super) process: EngineProcess,
    pub(super) adapter: Box<dyn Adapter>,
    pub(super) protocol: EngineProtocol,
    /// It has been given a match (engines are not reused across matches).
    pub(super) used: bool,
    /// When it exited; its remaining output is read for a moment before that counts.
    pub(super) exited_at: Option<Instant>,
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
    pub(super) async fn next_event(engine: &mut Option<Engine>) -> EngineEvent {
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

    pub(super) fn hear(
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
                        tracing::debug!("from engine: {}", crate::log_text::peer_message(&line));
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

    pub(super) fn deadline(&self) -> Option<Instant> {
        let exit = self.exited_at.map(|t| t + EXIT_DRAIN);
        match (self.adapter.deadline(), exit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// "it printed: `a` | `b`" or "it printed nothing", then its last lines on stderr when
    /// they are captured ("its last lines on stderr: `c` | `d`").
    pub(super) fn quoted_output(&self) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Engines that speak protocol v1 themselves (JSON lines on stdin/stdout): the relay adapter.
//! The engine's own `hello` is answered by the bridge (the bridge has already said hello to the
//! referee with the command line's name and token, so the engine's name and token are not
//! used); `ping` is answered by the bridge and the engine's `pong`s are dropped; everything
//! else is relayed line for line, referee messages verbatim, engine messages re-serialised after
//! they parse. Engine lines that do not start with `{` are chatter for the log; a line that
//! starts with `{` must be a protocol message.

use std::time::Duration;

use tokio::time::Instant;

use super::{move_budget, Action, Adapter, Fault, Heard};
use crate::log_text::peer_message;
use crate::protocol::{parse_bot_line, BotMessage, ClockSpec, RefereeMessage, PROTOCOL_VERSION};

/// Relays one protocol-v1 engine.
pub struct JsonAdapter {
    setup_timeout: Duration,
    /// The name the bridge is known by at the referee (the engine is told this one).
    bridge_name: String,
    /// The referee's `server` text, once the referee has welcomed the bridge.
    server: Option<String>,
    /// The games of the engine's `hello`, once it has said it.
    engine_games: Option<Vec<String>>,
    /// The name in the engine's `hello`.
    engine_name: Option<String>,
    hello_deadline: Option<Instant>,
    welcomed: bool,
    /// Referee lines held back until the engine has been welcomed.
    held: Vec<String>,
    clock: Option<ClockSpec>,
    awaiting: bool,
    move_deadline: Option<Instant>,
}

impl JsonAdapter {
    pub fn new(bridge_name: &str, server: Option<String>, setup_timeout: Duration) -> JsonAdapter {
        JsonAdapter {
            setup_timeout,
            bridge_name: bridge_name.to_string(),
            server,
            engine_games: None,
            engine_name: None,
            hello_deadline: None,
            welcomed: false,
            held: Vec::new(),
            clock: None,
            awaiting: false,
            move_deadline: None,
        }
    }

    fn maybe_welcome(&mut self, out: &mut Vec<Action>) {
        if self.welcomed || self.engine_games.is_none() {
            return;
        }
        let Some(server) = &self.server else {
            return;
        };
        let welcome = RefereeMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            name: self.bridge_name.clone(),
            server: server.clone(),
            ticket: None,
        };
        out.push(Action::Engine(welcome.to_line()));
        self.welcomed = true;
        out.extend(self.held.drain(..).map(Action::Engine));
    }
}

impl Adapter for JsonAdapter {
    fn on_spawn(&mut self, init: &[String], now: Instant, out: &mut Vec<Action>) {
        out.extend(init.iter().cloned().map(Action::Engine));
        self.hello_deadline = Some(now + self.setup_timeout);
    }

    fn on_welcome(&mut self, server: &str, out: &mut Vec<Action>) {
        self.server = Some(server.to_string());
        self.maybe_welcome(out);
    }

    fn on_referee(
        &mut self,
        msg: &RefereeMessage,
        raw: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault> {
        match msg {
            RefereeMessage::Welcome { .. } | RefereeMessage::Ping { .. } => return Ok(()),
            RefereeMessage::Start { clock, .. } => self.clock = Some(*clock),
            RefereeMessage::Turn { clock, .. } => {
                self.awaiting = true;
                self.move_deadline = Some(now + move_budget(clock, self.clock.as_ref()));
            }
            RefereeMessage::End { .. } => self.awaiting = false,
            RefereeMessage::Error { .. } => {}
        }
        if self.welcomed {
            out.push(Action::Engine(raw.to_string()));
        } else {
            self.held.push(raw.to_string());
        }
        Ok(())
    }

    fn on_engine_line(
        &mut self,
        line: &str,
        _now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<Heard, Fault> {
        if !line.trim_start().starts_with('{') {
            return Ok(Heard::Chatter);
        }
        let msg = parse_bot_line(line).map_err(|e| {
            Fault(format!(
                "the engine printed {:?}: {}",
                peer_message(line),
                e.message
            ))
        })?;
        match msg {
            BotMessage::Hello {
                protocol,
                games,
                name,
                ..
            } => {
                if self.engine_games.is_some() {
                    tracing::warn!("the engine said hello twice; ignored");
                    return Ok(Heard::Protocol);
                }
                if protocol != PROTOCOL_VERSION {
                    tracing::warn!("the engine asks for protocol {protocol}; the bridge speaks 1");
                }
                self.engine_games = Some(games);
                self.engine_name = Some(name);
                self.hello_deadline = None;
                self.maybe_welcome(out);
            }
            BotMessage::Pong { .. } => {}
            BotMessage::Move { .. } | BotMessage::Resign { .. } => {
                self.awaiting = false;
                self.move_deadline = None;
                out.push(Action::Server(msg));
            }
        }
        Ok(Heard::Protocol)
    }

    fn deadline(&self) -> Option<Instant> {
        if self.engine_games.is_none() {
            self.hello_deadline
        } else if self.awaiting {
            self.move_deadline
        } else {
            None
        }
    }

    fn engine_games(&self) -> Option<Vec<String>> {
        self.engine_games.clone()
    }

    fn check_answered(&self) -> bool {
        self.engine_games.is_some()
    }

    fn engine_name(&self) -> Option<String> {
        self.engine_name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TurnClock;

    #[test]
    fn hello_is_answered_locally_and_referee_lines_wait_for_it() {
        let now = Instant::now();
        let mut json = JsonAdapter::new("bridged", None, Duration::from_secs(3));
        let mut out = Vec::new();
        json.on_spawn(&[], now, &mut out);
        assert_eq!(json.deadline(), Some(now + Duration::from_secs(3)));
        json.on_engine_line(
            r#"{"type":"hello","protocol":1,"name":"x","token":"y","games":["hex","jiu"]}"#,
            now,
            &mut out,
        )
        .unwrap();
        assert_eq!(json.engine_games(), Some(vec!["hex".into(), "jiu".into()]));
        // No welcome yet: the referee has not welcomed the bridge.
        assert!(out.is_empty());
        let turn = RefereeMessage::Turn {
            match_id: "m".into(),
            moves: vec![],
            ply: 0,
            clock: TurnClock {
                you_ms: 500,
                opponent_ms: 500,
            },
        };
        json.on_referee(&turn, "TURN-LINE", now, &mut out).unwrap();
        assert!(out.is_empty());
        json.on_welcome("arena 0.1", &mut out);
        let Action::Engine(welcome) = &out[0] else {
            panic!("{out:?}")
        };
        assert!(welcome.contains(r#""name":"bridged""#), "{welcome}");
        assert_eq!(out[1], Action::Engine("TURN-LINE".into()));
        assert!(json.deadline().is_some());
        out.clear();
        json.on_engine_line(r#"{"type":"move","match":"m","move":"F6"}"#, now, &mut out)
            .unwrap();
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m".into(),
                mv: "F6".into(),
                ply: None
            })]
        );
        assert_eq!(json.deadline(), None);
        assert_eq!(
            json.on_engine_line("loading weights...", now, &mut out),
            Ok(Heard::Chatter)
        );
        assert!(json.on_engine_line("{garbage", now, &mut out).is_err());
        assert!(json
            .on_engine_line(r#"{"type":"dance"}"#, now, &mut out)
            .is_err());
    }

    #[test]
    fn an_unreadable_engine_line_is_quoted_escaped_and_cut() {
        let now = Instant::now();
        let mut json = JsonAdapter::new("bridged", None, Duration::from_secs(3));
        let mut out = Vec::new();
        let hostile = format!("{{\u{1b}[2J\r{}", "x".repeat(10_000));
        let Err(Fault(why)) = json.on_engine_line(&hostile, now, &mut out) else {
            panic!("an unreadable line must be a fault");
        };
        assert!(
            why.starts_with(r#"the engine printed "{\u{1b}[2J\r"#),
            "{why}"
        );
        assert!(!why.chars().any(char::is_control), "{why:?}");
        assert!(why.len() < 1_000, "not cut: {} bytes", why.len());
    }
}

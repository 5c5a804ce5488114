//! One match against its own engine process, run as a task of its own (`MatchRunner`): referee
//! messages in, the engine's answers out, and the engine's failures turned into a resignation.

use tokio::time::Instant;

use super::child::EngineEvent;
use super::{sleep_until_opt, Action, ConnectOptions, Engine, Fault};
use crate::protocol::{BotMessage, RefereeMessage};

/// A referee message for one match, with the line it came in.
pub(super) type MatchInput = (RefereeMessage, String);

/// Referee messages queued for one match task (a `turn` at a time, plus pings' worth).
pub(super) const MATCH_INBOX: usize = 64;

/// The match being played.
pub(super) struct CurrentMatch {
    pub(super) id: String,
    /// The engine failed and the bridge resigned: later messages are not passed on.
    pub(super) failed: bool,
}

/// One match and its own engine process, run as a task of its own: the bridge plays up to
/// `max_games` matches at once, each against a fresh engine child.
pub(super) struct MatchRunner {
    pub(super) options: ConnectOptions,
    pub(super) server_name: String,
    pub(super) engine: Option<Engine>,
    pub(super) current: CurrentMatch,
    pub(super) to_server: tokio::sync::mpsc::Sender<BotMessage>,
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
    pub(super) async fn run(
        mut self,
        start: MatchInput,
        mut inbox: tokio::sync::mpsc::Receiver<MatchInput>,
    ) {
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

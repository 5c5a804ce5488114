//! The bridge's session with the referee (`run`): the engine checked, the connection and its
//! hello, each match's messages routed to its own `MatchRunner` task, pings answered, and every
//! engine ended when the session stops.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::signal::unix::{signal, SignalKind};

use super::runner::{CurrentMatch, MatchInput, MatchRunner, MATCH_INBOX};
use super::{check_engine, BridgeError, ConnectOptions, Engine};
use crate::bot_connection::{connect_and_hello, HandshakeError, RefereeLink};
use crate::log_text::{client_text, peer_message};
use crate::protocol::{parse_referee_line, BotMessage, Frame, RefereeMessage};

/// How long the referee has to welcome the bridge.
pub const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);

type ServerLink = RefereeLink;

/// Messages a match task queues for the referee before it waits for the link.
const TO_SERVER_QUEUE: usize = 256;
/// How long the bridge waits, when it stops, for its match tasks to end their engines.
const STOP_WAIT: Duration = Duration::from_secs(10);

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
                tracing::warn!(
                    "ignoring a referee line the bridge cannot read ({}): {}",
                    peer_message(&e.to_string()),
                    peer_message(line)
                );
                return Ok(());
            }
        };
        tracing::debug!("from referee: {}", peer_message(line));
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
                // The league's end is news, not trouble: the referee closes the connection next.
                // The referee's text is shown escaped and cut, as every text from outside is.
                if *code == crate::protocol::ErrorCode::LeagueOver {
                    tracing::info!("the referee says the league is over; it closes the connection");
                } else {
                    tracing::warn!(
                        "the referee reports {} {}: {}",
                        code.as_str(),
                        client_text(match_id.as_deref().unwrap_or("")),
                        peer_message(message)
                    );
                }
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
    let hello = BotMessage::hello(
        options.name.as_str(),
        options.token.as_str(),
        games,
        options.max_games.max(1),
        Some(format!(
            "arena connect ({}): {}",
            options.protocol,
            options.command.first().map(String::as_str).unwrap_or("")
        )),
        None,
    );
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
            HandshakeError::LeagueOver(message) => BridgeError::Refused(message),
            other @ (HandshakeError::Protocol(_) | HandshakeError::WebServer(_)) => {
                BridgeError::Handshake(other)
            }
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

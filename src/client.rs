//! The bot client: connects a built-in engine to a referee over the wire protocol (`arena bot`,
//! and the server's `builtin` bots).
//!
//! One connection, several matches at once (up to `max_games`). The reader never waits for an
//! engine: each search runs on a blocking thread with its own abort flag, which a timer sets at
//! [`ClockView::hard_limit`]; the move is sent as soon as the engine returns. `ping` is answered
//! at once, whatever the engines are doing.
//!
//! Choices where docs/protocol.md is silent:
//! - Reconnecting: when the referee goes away (its connection closes or fails, or it cannot be
//!   reached), the bot connects again with backoff (0.25 s doubling to 5 s) for
//!   `reconnect_for` from the moment it lost the referee; the referee then resends `start` with
//!   the moves so far, so a server restart costs no game. A refusal (wrong token, protocol)
//!   is not retried. With `reconnect_for` zero, [`run_bot`] returns when the referee closes the
//!   connection (`Ok` when no match was running, [`ClientError::ServerClosed`] otherwise).
//! - Each engine is seeded from a hash (FNV-1a) of the match id, so a rerun of the same
//!   schedule plays the same moves.
//! - A `turn` whose `moves` do not bring the move list to its `ply` (which docs/protocol.md
//!   rules out: `turn.moves` are exactly the moves played since this bot's previous turn or
//!   `start`) is logged, and the list is kept.
//! - An engine that cannot be built or finds no move (or panics) makes the bot `resign` that
//!   match; lines from the referee that cannot be read are logged and skipped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

use crate::bot_connection::{connect_and_hello, hello_over, HandshakeError, LineLink};
use crate::clock::Clocks;
use crate::engine::{
    catalogue, new_engine, ClockView, Engine, EngineError, EngineInfo, SearchRequest,
};
use crate::game::GameId;
use crate::log_text::{client_text, peer_message};
use crate::options_text;
use crate::protocol::{
    self, parse_referee_line, BotMessage, CappedLineCodec, ClockSpec, ErrorCode, Frame,
    RefereeMessage, TurnClock,
};

/// How long the referee may take to accept the connection and answer `hello`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one write to the referee may take before the connection is given up.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What `run_bot` needs to know: where to connect, who to be, and which engine to run.
#[derive(Debug, Clone, PartialEq)]
pub struct BotClientConfig {
    /// `host:port` of the referee.
    pub server: String,
    pub name: String,
    pub token: String,
    /// A built-in engine id from [`catalogue`].
    pub engine: String,
    /// Engine options (a JSON object, or null for the defaults).
    pub engine_options: Value,
    /// The games to offer; empty means every game the engine plays.
    pub games: Vec<GameId>,
    /// How many matches the referee may run at once with this bot.
    pub max_games: u32,
    /// How long to keep trying to reconnect after losing the referee (zero: never).
    pub reconnect_for: Duration,
    /// Mixed into each match's engine seed (0: the match id alone decides it).
    pub seed: u64,
}

/// How long a shutdown lets a handshake under way finish.
const SHUTDOWN_HANDSHAKE_WAIT: Duration = Duration::from_millis(500);

/// The first wait before reconnecting; it doubles up to [`RECONNECT_BACKOFF_MAX`].
pub const RECONNECT_BACKOFF_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two reconnection attempts.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Why the bot client stopped. Connecting and logging in fail with the one bot-side
/// handshake's error, kept whole (`Handshake`); the rest can happen only once logged in.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("bad bot configuration: {0}")]
    Config(String),
    /// Connecting or logging in failed.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    /// The referee dropped the logged-in bot with an error (another connection of the same
    /// bot replaced this one).
    #[error("the referee refused the bot: {}", peer_message(message))]
    Refused { message: String },
    #[error("the referee closed the connection while {0} match(es) were running")]
    ServerClosed(usize),
    #[error("timed out after {0:?} writing to the referee")]
    WriteTimeout(Duration),
    #[error("connection error: {0}")]
    Io(std::io::Error),
    /// The referee said the league is over (`error` `league_over`): the bot stops.
    #[error("{}", peer_message(.0))]
    LeagueOver(String),
}

impl ClientError {
    /// The league-over message, whether the referee said it at login or later.
    fn league_over(&self) -> Option<&str> {
        match self {
            ClientError::LeagueOver(why)
            | ClientError::Handshake(HandshakeError::LeagueOver(why)) => Some(why),
            _ => None,
        }
    }

    /// Whether connecting again may help (not for a refusal, a wrong address or a bad
    /// configuration).
    fn worth_reconnecting(&self) -> bool {
        match self {
            ClientError::Handshake(e) => e.worth_retrying(),
            ClientError::Io(_) | ClientError::WriteTimeout(_) | ClientError::ServerClosed(_) => {
                true
            }
            ClientError::Refused { .. } | ClientError::Config(_) | ClientError::LeagueOver(_) => {
                false
            }
        }
    }
}

impl From<std::io::Error> for ClientError {
    fn from(error: std::io::Error) -> ClientError {
        ClientError::Io(error)
    }
}

/// Builds the engine for one match: `(game, rules, seed)`; `run_bot` uses [`new_engine`] with
/// the configured engine id and options.
pub type EngineFactory =
    Arc<dyn Fn(GameId, &Value, u64) -> Result<Box<dyn Engine>, EngineError> + Send + Sync>;

/// Runs a built-in engine as a bot until the referee closes the connection or `shutdown` is
/// cancelled. Does not reconnect.
pub async fn run_bot(
    config: BotClientConfig,
    shutdown: CancellationToken,
) -> Result<(), ClientError> {
    let factory = catalogue_factory(&config);
    run_bot_with_factory(config, factory, shutdown).await
}

/// Builds the configured engine from the catalogue for each match.
fn catalogue_factory(config: &BotClientConfig) -> EngineFactory {
    let engine_id = config.engine.clone();
    let options = config.engine_options.clone();
    let mixed_in = config.seed;
    Arc::new(move |game, rules, seed| {
        new_engine(&engine_id, game, rules, &options, seed ^ mixed_in)
    })
}

/// [`run_bot`] with engines built by `factory` instead of the catalogue (the hello still names
/// `config.engine`, whose catalogue entry gives the default game list). For tests and embedders.
pub async fn run_bot_with_factory(
    config: BotClientConfig,
    factory: EngineFactory,
    shutdown: CancellationToken,
) -> Result<(), ClientError> {
    let games = offered_games(&config)?;
    if config.max_games == 0 {
        return Err(ClientError::Config("max_games must be at least 1".into()));
    }
    let mut lost_since: Option<tokio::time::Instant> = None;
    let mut backoff = RECONNECT_BACKOFF_FIRST;
    // The login ticket of the last `welcome`: sent in every later `hello`, so that a
    // reconnect is never held back by a guessing attack on the bot's name.
    let mut ticket: Option<String> = None;
    loop {
        let mut welcomed = false;
        let result = one_session(
            &config,
            &games,
            factory.clone(),
            &shutdown,
            &mut welcomed,
            &mut ticket,
        )
        .await;
        if let Some(why) = result.as_ref().err().and_then(ClientError::league_over) {
            tracing::info!(server = %config.server, "{}; stopping", peer_message(why));
            return Ok(());
        }
        if shutdown.is_cancelled() || config.reconnect_for.is_zero() {
            return result;
        }
        let retry = result
            .as_ref()
            .err()
            .is_none_or(ClientError::worth_reconnecting);
        if !retry {
            return result;
        }
        if welcomed {
            lost_since = None;
            backoff = RECONNECT_BACKOFF_FIRST;
        }
        let now = tokio::time::Instant::now();
        let since = *lost_since.get_or_insert(now);
        if now.saturating_duration_since(since) >= config.reconnect_for {
            tracing::warn!(
                server = %config.server,
                "the referee has been gone for {:?}; giving up",
                config.reconnect_for
            );
            return result;
        }
        let why = match &result {
            Ok(()) => "the referee closed the connection".to_string(),
            Err(e) => e.to_string(),
        };
        tracing::warn!(server = %config.server, "{why}; reconnecting in {backoff:?}");
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
    }
}

/// One connection: connect, `hello` (with `ticket`, if an earlier `welcome` gave one), play
/// until the referee closes it or `shutdown`. Sets `welcomed` once the referee has accepted the
/// hello, and `ticket` to the one its `welcome` gave.
async fn one_session(
    config: &BotClientConfig,
    games: &[GameId],
    factory: EngineFactory,
    shutdown: &CancellationToken,
    welcomed: &mut bool,
    ticket: &mut Option<String>,
) -> Result<(), ClientError> {
    let hello = hello_message(config, games, ticket.clone());
    let handshake = connect_and_hello(&config.server, &hello, HANDSHAKE_TIMEOUT);
    tokio::pin!(handshake);
    let mut conn = tokio::select! {
        linked = &mut handshake => {
            let (conn, said) = linked?;
            if said.ticket.is_some() {
                *ticket = said.ticket;
            }
            conn
        }
        _ = shutdown.cancelled() => {
            // A handshake under way may finish for a moment, so that the connection closes
            // cleanly (an unread welcome would make the close a reset).
            if let Ok(Ok((mut link, _))) =
                tokio::time::timeout(SHUTDOWN_HANDSHAKE_WAIT, &mut handshake).await
            {
                close(&mut link).await;
            }
            return Ok(());
        }
    };
    *welcomed = true;
    tracing::info!(name = %config.name, server = %config.server, "bot connected");
    play(&mut conn, factory, config.max_games, shutdown).await
}

/// Plays the matches the referee starts on an open, welcomed link until the referee closes it
/// or `shutdown`.
async fn play<L: LineLink>(
    conn: &mut L,
    factory: EngineFactory,
    max_games: u32,
    shutdown: &CancellationToken,
) -> Result<(), ClientError> {
    let mut session = Session {
        factory,
        matches: HashMap::new(),
        max_games,
        next_search: 0,
        replaced: None,
    };
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<SearchDone>();
    let result = loop {
        tokio::select! {
            _ = shutdown.cancelled() => {
                tracing::info!("bot shutting down");
                close(conn).await;
                break Ok(());
            }
            Some(done) = done_rx.recv() => {
                if let Some(reply) = session.search_done(done, &done_tx) {
                    if let Err(e) = send(conn, &reply).await {
                        break Err(e);
                    }
                }
            }
            frame = conn.next() => {
                let line = match frame {
                    None => {
                        let running = session.matches.len();
                        break if running == 0 {
                            tracing::info!("referee closed the connection");
                            Ok(())
                        } else {
                            Err(ClientError::ServerClosed(running))
                        };
                    }
                    Some(Err(e)) => break Err(ClientError::Io(e)),
                    Some(Ok(Frame::Line(line))) => line,
                    Some(Ok(other)) => {
                        tracing::warn!(frame = ?other, "unreadable line from the referee skipped");
                        continue;
                    }
                };
                let message = match parse_referee_line(&line) {
                    Ok(RefereeMessage::Error {
                        code: protocol::ErrorCode::LeagueOver,
                        message,
                        ..
                    }) => {
                        close(conn).await;
                        break Err(ClientError::LeagueOver(message));
                    }
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(
                            error = %peer_message(&e.to_string()),
                            "unreadable message from the referee skipped"
                        );
                        continue;
                    }
                };
                if let Some(reply) = session.handle(message, &done_tx) {
                    if let Err(e) = send(conn, &reply).await {
                        break Err(e);
                    }
                }
                if let Some(message) = session.replaced.take() {
                    break Err(ClientError::Refused { message });
                }
            }
        }
    };
    session.abort_all();
    result
}

/// The bot's `hello`, with the login ticket of an earlier `welcome` if it has one.
fn hello_message(config: &BotClientConfig, games: &[GameId], ticket: Option<String>) -> BotMessage {
    BotMessage::hello(
        config.name.as_str(),
        config.token.as_str(),
        games.iter().map(|g| g.as_str().to_string()).collect(),
        config.max_games,
        Some(format!("arena/{}", config.engine)),
        ticket,
    )
}

/// Runs a built-in engine that speaks protocol v1 on stdin/stdout instead of over TCP, as a
/// `json:` program for a bridge (`arena match`, a league's `program` bots, `arena connect
/// --protocol json`): says `hello`, waits for `welcome`, then plays until stdin ends or
/// `shutdown`. `config.server` is not used. So that one build of the engines can play another
/// build's (a version kept for measuring against, say).
pub async fn run_stdio_bot(
    config: BotClientConfig,
    shutdown: CancellationToken,
) -> Result<(), ClientError> {
    let games = offered_games(&config)?;
    let factory = catalogue_factory(&config);
    let stdio = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
    let mut link = Framed::new(stdio, CappedLineCodec::new(protocol::MAX_LINE_BYTES));
    match hello_over(
        &mut link,
        &hello_message(&config, &games, None),
        HANDSHAKE_TIMEOUT,
    )
    .await
    {
        Ok(_) => {}
        // A bridge may start the engine only to read its `hello`, then close its stdin.
        Err(HandshakeError::Closed) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    play(&mut link, factory, config.max_games, &shutdown).await
}

/// The games to offer in `hello`: the configured ones, or every game the engine plays.
fn offered_games(config: &BotClientConfig) -> Result<Vec<GameId>, ClientError> {
    let info = engine_info(&config.engine).ok_or_else(|| {
        ClientError::Config(EngineError::UnknownEngine(config.engine.clone()).to_string())
    })?;
    if config.games.is_empty() {
        return Ok(info.games.to_vec());
    }
    for game in &config.games {
        if !info.games.contains(game) {
            return Err(ClientError::Config(
                EngineError::UnsupportedGame {
                    engine: config.engine.clone(),
                    game: *game,
                }
                .to_string(),
            ));
        }
    }
    Ok(config.games.clone())
}

fn engine_info(id: &str) -> Option<EngineInfo> {
    catalogue().into_iter().find(|e| e.id == id)
}

async fn send<L: LineLink>(conn: &mut L, message: &BotMessage) -> Result<(), ClientError> {
    let line = message.to_line();
    tracing::debug!(%line, "to referee");
    match tokio::time::timeout(WRITE_TIMEOUT, conn.send(line)).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ClientError::WriteTimeout(WRITE_TIMEOUT)),
    }
}

/// Flushes and shuts the connection down, bounded by the write timeout; errors no longer matter.
async fn close<L: LineLink>(conn: &mut L) {
    let _ = tokio::time::timeout(WRITE_TIMEOUT, SinkExt::<String>::close(conn)).await;
}

/// An engine's seed for a match: the FNV-1a hash of its id, stable across builds and platforms.
pub fn match_seed(match_id: &str) -> u64 {
    crate::hash::fnv1a64(match_id.as_bytes())
}

/// A `turn` waiting to be answered.
#[derive(Debug, Clone, Copy)]
struct PendingTurn {
    ply: u32,
    clock: TurnClock,
}

/// One running match.
struct MatchState {
    game: Option<GameId>,
    rules: Value,
    clock: ClockSpec,
    moves: Vec<String>,
    /// `None` until built (on the first search) and while a search holds it.
    engine: Option<Box<dyn Engine>>,
    /// The running search, if any: its id and abort flag.
    search: Option<(u64, Arc<AtomicBool>)>,
    /// A turn that arrived while a search was still running (answered when it finishes).
    queued: Option<PendingTurn>,
}

/// What a finished search hands back to the connection loop.
struct SearchDone {
    match_id: String,
    search: u64,
    engine: Option<Box<dyn Engine>>,
    result: Result<String, String>,
}

struct Session {
    factory: EngineFactory,
    matches: HashMap<String, MatchState>,
    max_games: u32,
    next_search: u64,
    /// Why the referee dropped this connection for a newer login of the same bot.
    replaced: Option<String>,
}

impl Session {
    /// Handles one message from the referee; returns the reply to send at once, if any.
    fn handle(
        &mut self,
        message: RefereeMessage,
        done_tx: &mpsc::UnboundedSender<SearchDone>,
    ) -> Option<BotMessage> {
        match message {
            RefereeMessage::Ping { id } => Some(BotMessage::Pong { id }),
            RefereeMessage::Welcome { .. } => {
                tracing::warn!("unexpected second welcome ignored");
                None
            }
            RefereeMessage::Error {
                code,
                message,
                match_id,
            } => {
                tracing::warn!(
                    code = code.as_str(),
                    match_id = %client_text(match_id.as_deref().unwrap_or("")),
                    message = %peer_message(&message),
                    "referee reported an error"
                );
                if code == ErrorCode::Replaced {
                    // Another copy of this bot logged in: it plays on; this one stops (and
                    // does not log in again, which would only take the seat back).
                    self.replaced = Some(message);
                }
                None
            }
            RefereeMessage::Start {
                match_id,
                game,
                rules,
                clock,
                moves,
                side,
                opponent,
                ..
            } => {
                let parsed = game.parse::<GameId>();
                if let Err(e) = &parsed {
                    tracing::error!(
                        match_id = %client_text(&match_id),
                        error = %peer_message(&e.to_string()),
                        "match of an unknown game: will resign"
                    );
                }
                if let Some(old) = self.matches.remove(&match_id) {
                    tracing::info!(match_id = %client_text(&match_id), "match restarted by the referee");
                    abort(&old);
                }
                if self.matches.len() >= self.max_games as usize {
                    tracing::warn!(match_id = %client_text(&match_id), max_games = self.max_games, "more matches than max_games");
                }
                tracing::info!(
                    match_id = %client_text(&match_id),
                    game = %client_text(&game),
                    side = %client_text(&side),
                    opponent = %client_text(&opponent),
                    ply = moves.len(),
                    "match started"
                );
                self.matches.insert(
                    match_id,
                    MatchState {
                        game: parsed.ok(),
                        rules,
                        clock,
                        moves,
                        engine: None,
                        search: None,
                        queued: None,
                    },
                );
                None
            }
            RefereeMessage::Turn {
                match_id,
                moves,
                ply,
                clock,
            } => {
                let Some(state) = self.matches.get_mut(&match_id) else {
                    tracing::warn!(match_id = %client_text(&match_id), "turn for a match that never started ignored");
                    return None;
                };
                append_moves(&match_id, state, moves, ply);
                let pending = PendingTurn { ply, clock };
                if let Some((_, flag)) = &state.search {
                    // Should not happen: the referee asks again before this bot answered.
                    // Stop the old search and answer the newest turn.
                    tracing::warn!(match_id = %client_text(&match_id), "turn while still thinking: restarting the search");
                    flag.store(true, Ordering::Relaxed);
                    state.queued = Some(pending);
                    return None;
                }
                self.start_search(&match_id, pending, done_tx)
            }
            RefereeMessage::End {
                match_id,
                result,
                reason,
                ..
            } => {
                if let Some(state) = self.matches.remove(&match_id) {
                    abort(&state);
                    tracing::info!(match_id = %client_text(&match_id), %result, %reason, "match over");
                } else {
                    tracing::warn!(match_id = %client_text(&match_id), "end of an unknown match ignored");
                }
                None
            }
        }
    }

    /// Starts a search for `match_id`; returns a `resign` at once if there is nothing to search with.
    fn start_search(
        &mut self,
        match_id: &str,
        turn: PendingTurn,
        done_tx: &mpsc::UnboundedSender<SearchDone>,
    ) -> Option<BotMessage> {
        self.next_search = self.next_search.wrapping_add(1);
        let search = self.next_search;
        let state = self.matches.get_mut(match_id)?;
        let Some(game) = state.game else {
            return Some(BotMessage::Resign {
                match_id: match_id.to_string(),
            });
        };
        let abort_flag = Arc::new(AtomicBool::new(false));
        state.search = Some((search, abort_flag.clone()));
        let clock = Clocks::view_of_turn(state.clock, turn.clock, turn.ply);
        let job = SearchJob {
            match_id: match_id.to_string(),
            search,
            engine: state.engine.take(),
            factory: self.factory.clone(),
            game,
            rules: state.rules.clone(),
            seed: match_seed(match_id),
            moves: state.moves.clone(),
            clock,
            abort: abort_flag,
        };
        let done_tx = done_tx.clone();
        tokio::spawn(async move {
            let done = job.run().await;
            // The loop may have ended (shutdown); then nobody wants the move.
            let _ = done_tx.send(done);
        });
        None
    }

    /// Takes a finished search back; returns the move (or resignation) to send.
    fn search_done(
        &mut self,
        done: SearchDone,
        done_tx: &mpsc::UnboundedSender<SearchDone>,
    ) -> Option<BotMessage> {
        let state = self.matches.get_mut(&done.match_id)?;
        match &state.search {
            Some((id, _)) if *id == done.search => {}
            // A search of an earlier incarnation of the match (restarted by `start`).
            _ => return None,
        }
        state.search = None;
        state.engine = done.engine;
        if let Some(turn) = state.queued.take() {
            return self.start_search(&done.match_id, turn, done_tx);
        }
        match done.result {
            Ok(mv) => {
                tracing::debug!(match_id = %client_text(&done.match_id), %mv, "engine moved");
                // The ply of the turn this answers: the server refuses the move if the game
                // has moved on meanwhile.
                let ply = u32::try_from(state.moves.len()).ok();
                state.moves.push(mv.clone());
                Some(BotMessage::Move {
                    match_id: done.match_id,
                    mv,
                    ply,
                })
            }
            Err(why) => {
                tracing::error!(match_id = %client_text(&done.match_id), %why, "engine found no move: resigning");
                Some(BotMessage::Resign {
                    match_id: done.match_id,
                })
            }
        }
    }

    fn abort_all(&self) {
        for state in self.matches.values() {
            abort(state);
        }
    }
}

fn abort(state: &MatchState) {
    if let Some((_, flag)) = &state.search {
        flag.store(true, Ordering::Relaxed);
    }
}

/// Appends a `turn`'s moves to the match's list (see the module notes on `ply`).
fn append_moves(match_id: &str, state: &mut MatchState, moves: Vec<String>, ply: u32) {
    state.moves.extend(moves);
    if state.moves.len() != ply as usize {
        tracing::warn!(match_id = %client_text(match_id), ply, known = state.moves.len(), "turn ply does not match the moves received");
    }
}

/// One search, ready to run off the async runtime.
struct SearchJob {
    match_id: String,
    search: u64,
    engine: Option<Box<dyn Engine>>,
    factory: EngineFactory,
    game: GameId,
    rules: Value,
    seed: u64,
    moves: Vec<String>,
    clock: ClockView,
    abort: Arc<AtomicBool>,
}

impl SearchJob {
    /// Runs the engine on a blocking thread, setting the abort flag at the clock's hard limit.
    async fn run(self) -> SearchDone {
        let SearchJob {
            match_id,
            search,
            engine,
            factory,
            game,
            rules,
            seed,
            moves,
            clock,
            abort,
        } = self;
        let flag = abort.clone();
        let mut blocking = tokio::task::spawn_blocking(move || {
            let mut engine = match engine {
                Some(engine) => engine,
                None => match factory(game, &rules, seed) {
                    Ok(engine) => engine,
                    Err(e) => return (None, Err(e.to_string())),
                },
            };
            let request = SearchRequest {
                moves: &moves,
                clock,
                abort: &flag,
            };
            let result = engine.choose_move(&request).map_err(|e| e.to_string());
            (Some(engine), result)
        });
        let deadline = tokio::time::sleep(clock.hard_limit());
        tokio::pin!(deadline);
        let joined = tokio::select! {
            joined = &mut blocking => joined,
            _ = &mut deadline => {
                tracing::debug!(match_id = %client_text(&match_id), "hard time limit reached: aborting the search");
                abort.store(true, Ordering::Relaxed);
                blocking.await
            }
        };
        let (engine, result) = match joined {
            Ok(pair) => pair,
            Err(e) => (None, Err(format!("engine failed: {e}"))),
        };
        SearchDone {
            match_id,
            search,
            engine,
            result,
        }
    }
}

/// Reads `--option KEY=VALUE` flags (one pair each: a value may hold commas) into the engine
/// options object: a value that is JSON (number, boolean, quoted string…) is taken as such,
/// anything else as a plain string. A key given twice is refused.
pub fn parse_engine_options(pairs: &[String]) -> Result<Value, ClientError> {
    let pairs = options_text::read_items(pairs.iter().enumerate().map(|(i, p)| (i, p.as_str())))
        .map_err(|e| ClientError::Config(format!("engine option: {e}")))?;
    Ok(options_text::json_object(&pairs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seeds_are_stable_and_differ_between_matches() {
        // FNV-1a of the empty string is the offset basis.
        assert_eq!(match_seed(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(match_seed("r1-hex-3"), match_seed("r1-hex-3"));
        assert_ne!(match_seed("r1-hex-3"), match_seed("r1-hex-4"));
    }

    #[test]
    fn engine_options_parse_json_values_and_plain_strings() {
        let options =
            parse_engine_options(&["depth=3".into(), "book=true".into(), "style= a,b".into()])
                .unwrap();
        assert_eq!(options, json!({"depth": 3, "book": true, "style": "a,b"}));
        assert!(parse_engine_options(&["depth".into()]).is_err());
        assert!(parse_engine_options(&["=3".into()]).is_err());
        let twice = parse_engine_options(&["depth=3".into(), "depth=4".into()]).unwrap_err();
        assert!(
            twice.to_string().contains("depth is given twice"),
            "{twice}"
        );
    }

    fn state_with(moves: &[&str]) -> MatchState {
        MatchState {
            game: Some(GameId::Hex),
            rules: Value::Null,
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: moves.iter().map(|m| m.to_string()).collect(),
            engine: None,
            search: None,
            queued: None,
        }
    }

    #[test]
    fn turn_moves_are_appended_after_the_own_move() {
        let mut state = state_with(&["F6"]);
        append_moves("m", &mut state, vec!["E7".into()], 2);
        assert_eq!(state.moves, ["F6", "E7"]);
        // Two opponent moves in a row (Jiu) are both kept.
        let mut state = state_with(&["A1", "B2"]);
        append_moves("m", &mut state, vec!["C3".into(), "D4".into()], 4);
        assert_eq!(state.moves, ["A1", "B2", "C3", "D4"]);
        // The first turn of a game carries none.
        let mut state = state_with(&[]);
        append_moves("m", &mut state, vec![], 0);
        assert!(state.moves.is_empty());
    }

    #[test]
    fn unknown_engines_and_games_are_refused_before_connecting() {
        let config = BotClientConfig {
            server: "127.0.0.1:1".into(),
            name: "b".into(),
            token: "t".into(),
            engine: "nope".into(),
            engine_options: Value::Null,
            games: vec![],
            max_games: 1,
            reconnect_for: Duration::ZERO,
            seed: 0,
        };
        assert!(matches!(
            offered_games(&config),
            Err(ClientError::Config(_))
        ));
        let random = BotClientConfig {
            engine: "random".into(),
            ..config
        };
        assert_eq!(offered_games(&random).unwrap(), GameId::ALL.to_vec());
    }
}

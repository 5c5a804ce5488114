//! One TCP connection: line framing with the 64 KiB cap, `hello` and authentication, routing
//! `move`/`resign` to referees, ping/pong round-trip measurement, refusing garbage, and a writer
//! task fed by a bounded queue so that a bot that does not read never blocks anyone.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use smallvec::SmallVec;
use subtle::ConstantTimeEq;
use tokio::net::TcpStream;
use tokio::time::{sleep_until, Instant};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use super::events::ServerEvent;
use super::reader_waits::{ReaderWaits, ReaderWake};
use crate::config::Config;
use crate::game::GameId;
use crate::log_text::client_text;
use crate::protocol::{
    read_bot_line, shown_text, BotLine, BotMessage, CappedLineCodec, ErrorCode, Frame,
    RefereeMessage, MAX_LINE_BYTES, PROTOCOL_VERSION,
};

use super::address::AddressShare;
use super::arrival::{ArrivalStampedRead, ReadProgress, SharedRead};
use super::link::{
    outbox, write_lines, BotLink, LineSink, LinkClose, MoveInput, RefereeInput, StreamSink, TcpSink,
};
use super::log_summary::LogSummary;
use super::login_guard::LoginGuard;
use super::registry::{Registry, Session};

/// The server's name in `welcome`.
pub const SERVER_NAME: &str = concat!("arena ", env!("CARGO_PKG_VERSION"));

/// Initial read buffer of a connection: a few of a bot's lines (`move` lines are under 100
/// bytes).
const CONNECTION_BUFFER_BYTES: usize = 256;

/// What every connection shares.
pub struct ConnectionContext {
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    /// Failed logins per client address (TCP and the web view's WebSocket alike).
    pub logins: LoginGuard,
    /// Refused connections and failed logins, summarised per address and minute in the log.
    pub refusals: Arc<LogSummary>,
    /// Bot name → token (third-party tokens from the config, generated ones for built-ins).
    pub tokens: HashMap<String, String>,
    /// The league's output writer (the web view shows its faults and the finished games that
    /// wait for it).
    pub(crate) output: Arc<super::output::Output>,
    /// Where bots logging in and leaving are told.
    pub events: super::events::Events,
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for ConnectionContext {
    /// Never shows the tokens.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionContext")
            .field("bots", &self.tokens.len())
            .field("logins", &self.logins)
            .finish_non_exhaustive()
    }
}

type LineStream<R> = FramedRead<R, CappedLineCodec>;

/// A bot's byte stream, and when the kernel received the bytes of the last read (if known).
pub trait BotRead: tokio::io::AsyncRead + Unpin + Send {
    fn last_arrival(&self) -> Option<Instant>;
    /// When the read that took the latest bytes ended, where the reader notes it: the moment
    /// its lines count as read (one clock read less a line than asking the clock again).
    fn last_read_at(&self) -> Option<Instant>;
    /// When the reader last emptied its socket, if it can tell (see `ReadProgress`).
    fn read_progress(&self) -> Option<Arc<ReadProgress>>;
    /// The kernel's round-trip estimate of the connection, the only source of lag credit
    /// (`None`: no credit); `now` is the caller's reading of the clock.
    fn kernel_rtt(&self, now: Instant) -> Option<std::time::Duration>;
    /// For a line the latest read completed, with `left` bytes after it still to decode: where
    /// it ends in the stream, if later bytes shared its read (its stamp is then theirs).
    fn shared_read(&self, left: usize) -> Option<SharedRead>;
}

impl BotRead for ArrivalStampedRead {
    fn last_arrival(&self) -> Option<Instant> {
        ArrivalStampedRead::last_arrival(self)
    }
    fn last_read_at(&self) -> Option<Instant> {
        self.last_read_ended()
    }
    fn read_progress(&self) -> Option<Arc<ReadProgress>> {
        self.progress()
    }
    fn kernel_rtt(&self, now: Instant) -> Option<std::time::Duration> {
        ArrivalStampedRead::kernel_rtt(self, now)
    }
    fn shared_read(&self, left: usize) -> Option<SharedRead> {
        ArrivalStampedRead::shared_read(self, left)
    }
}

/// A stream without kernel receive stamps (e.g. WebSocket frames bridged in memory): lines
/// are stamped when read.
pub struct UnstampedRead<R>(pub R);

impl<R: tokio::io::AsyncRead + Unpin + Send> tokio::io::AsyncRead for UnstampedRead<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<R: tokio::io::AsyncRead + Unpin + Send> BotRead for UnstampedRead<R> {
    fn last_arrival(&self) -> Option<Instant> {
        None
    }
    fn last_read_at(&self) -> Option<Instant> {
        None
    }
    fn read_progress(&self) -> Option<Arc<ReadProgress>> {
        None
    }
    /// A bridged stream (the web view's WebSocket) has no TCP connection of its own to ask, so
    /// it gets no lag credit.
    fn kernel_rtt(&self, _now: Instant) -> Option<std::time::Duration> {
        None
    }
    /// Lines are stamped when read: a stamp is each line's own.
    fn shared_read(&self, _left: usize) -> Option<SharedRead> {
        None
    }
}

/// When a line reached the server, as well as its read tells.
#[derive(Debug, Clone, Copy)]
struct Received {
    /// Never earlier than the line's arrival (the read's kernel stamp, or when it was read).
    by: Instant,
    /// Set when later bytes shared the line's read: `by` is then theirs.
    shared: Option<SharedRead>,
}

/// Serves one connection until it closes; logs why it closed.
pub async fn serve_connection(
    ctx: Arc<ConnectionContext>,
    socket: TcpStream,
    peer: SocketAddr,
    conn_id: u64,
    unauthenticated: AddressShare,
) {
    tracing::debug!(conn = conn_id, %peer, "connection accepted");
    let _ = socket.set_nodelay(true);
    // A bot whose network went away without a FIN (Wi-Fi, a NAT's timeout) is found by the
    // kernel's probes within about a minute, whatever its process does.
    if let Err(e) = socket2::SockRef::from(&socket).set_tcp_keepalive(&keepalive()) {
        tracing::debug!(conn = conn_id, error = %e, "cannot turn on TCP keepalive");
    }
    // Bots' lines are short: a small read buffer (grown on demand up to the line cap) instead
    // of the default 8 KiB, which reads cycle through and so keep resident. The socket's own
    // halves (not `Framed::split`) let the reader and the writer run without sharing a lock.
    let (read_half, write_half) = socket.into_split();
    let reader = ArrivalStampedRead::new(read_half, ctx.config.server.receive_timestamps);
    serve_lines(
        ctx,
        reader,
        TcpSink::new(write_half),
        peer,
        conn_id,
        Some(unauthenticated),
    )
    .await;
}

/// TCP keepalive of bot connections: first probe after 20 s of silence, then every 10 s; four
/// unanswered probes (about 60 s in all) close the connection as dead.
fn keepalive() -> socket2::TcpKeepalive {
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(20))
        .with_interval(Duration::from_secs(10));
    #[cfg(any(target_os = "linux", target_os = "macos", target_os = "freebsd"))]
    let keepalive = keepalive.with_retries(4);
    keepalive
}

/// Serves one bot over any byte stream (a TCP socket, or a WebSocket bridged in memory) until it
/// closes; logs why it closed. `conn_id` must be unique among live connections.
pub async fn serve_stream<
    R: BotRead + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
>(
    ctx: Arc<ConnectionContext>,
    reader: R,
    write_half: W,
    peer: SocketAddr,
    conn_id: u64,
) {
    serve_lines(ctx, reader, StreamSink(write_half), peer, conn_id, None).await;
}

/// Serves one bot whose lines go out through `sink` (see `serve_stream`).
async fn serve_lines<R: BotRead + 'static, S: LineSink>(
    ctx: Arc<ConnectionContext>,
    reader: R,
    sink: S,
    peer: SocketAddr,
    conn_id: u64,
    unauthenticated: Option<AddressShare>,
) {
    let progress = reader.read_progress();
    let lines = FramedRead::with_capacity(
        reader,
        CappedLineCodec::new(MAX_LINE_BYTES),
        CONNECTION_BUFFER_BYTES,
    );
    let (tx, rx) = outbox(ctx.config.server.write_queue_lines, sink.direct());
    let link_close = LinkClose::new(ctx.shutdown.child_token());
    let close = link_close.token().clone();
    let writer = tokio::spawn(write_lines(sink, rx, link_close.clone()));
    let link = BotLink::new(conn_id, tx, link_close).with_read_progress(progress);
    let mut connection = Connection {
        ctx: ctx.clone(),
        peer,
        link,
        name: None,
        bad_lines: 0,
        unauthenticated,
        playing: SmallVec::new(),
        playing_kept: 1,
    };
    let why = connection.read_loop(lines).await;
    if let Some(name) = &connection.name {
        if let Some(matches) = ctx.registry.unregister(name, conn_id) {
            ctx.events.publish(&ServerEvent::BotDisconnected {
                bot: name.to_string(),
            });
            for (side, door) in matches {
                let _ = door
                    .send(RefereeInput::Disconnected { side, conn_id })
                    .await;
            }
        }
    }
    close.cancel();
    drop(connection);
    let _ = writer.await;
    match &why.name {
        Some(name) => tracing::info!(
            conn = conn_id,
            %peer,
            bot = %name,
            why = %why.reason,
            "connection closed"
        ),
        None => {
            // Never logged in: one line per address and minute, whatever the number.
            tracing::debug!(conn = conn_id, %peer, why = %why.reason, "connection closed");
            ctx.refusals
                .note(peer.ip(), "connection closed without a successful hello");
        }
    }
}

/// Why a connection ended.
struct Closed {
    name: Option<String>,
    reason: String,
}

struct Connection {
    ctx: Arc<ConnectionContext>,
    /// The client's address (for the web view's WebSocket, the browser's).
    peer: SocketAddr,
    link: BotLink,
    /// The bot's name once authenticated (shared: each message borrows it).
    name: Option<Arc<str>>,
    bad_lines: u32,
    /// The address's share of connections that have not said `hello`, given back on login.
    unauthenticated: Option<AddressShare>,
    /// The matches this bot sent moves or resignations for lately, as the registry gave them,
    /// the latest last: the next line for one of them reaches its referee without the
    /// registry's lock and hash lookup, while that referee's task still runs. As many are
    /// kept as the bot plays games at once (its `max_games`, at most `PLAYING_KEPT`): with
    /// one kept, a bot playing two games missed at every move. No more than that, as a kept
    /// way holds its referee's state (the whole finished game) until it is let go. The first
    /// few are held in the connection itself, ids included: a move's lookup reads no heap
    /// block (among a thousand matches each is a cache miss).
    playing: SmallVec<[PlayingMatch; PLAYING_INLINE]>,
    /// How many of `playing` are kept: the bot's `max_games` once it logged in.
    playing_kept: usize,
}

/// Most matches a connection keeps the way to (see `Connection::playing`).
const PLAYING_KEPT: usize = 8;

/// Kept matches held in the connection itself rather than in a heap block.
const PLAYING_INLINE: usize = 2;

/// A match id held inline up to this length (longer ones live in a heap block).
const MATCH_ID_INLINE: usize = 32;

/// A match of this connection's bot and how to reach its referee.
struct PlayingMatch {
    match_id: SmallVec<[u8; MATCH_ID_INLINE]>,
    side: crate::game::Side,
    door: super::link::RefereeDoor,
}

impl PlayingMatch {
    /// Whether its referee still runs.
    fn is_running(&self) -> bool {
        self.door.is_running()
    }
}

/// What a connection's reader keeps between lines: its pings and the round-trip time it last
/// told the link.
#[derive(Default)]
struct ReaderState {
    ping_id: u64,
    ping_out: Option<(u64, Instant)>,
    /// Only a bot that has answered a ping can be closed for leaving one unanswered: the
    /// protocol does not oblige a bot to answer (TCP keepalive finds a dead network anyway).
    answers_pings: bool,
    /// The round-trip time last told to the link (`None` until the first line).
    rtt_told: Option<Option<Duration>>,
}

/// What the reader does after handling a line.
enum Next {
    Continue,
    Close(String),
}

impl Connection {
    fn error(&self, code: ErrorCode, message: impl Into<String>, match_id: Option<String>) {
        self.link.send(&RefereeMessage::Error {
            code,
            message: message.into(),
            match_id,
        });
    }

    /// Answers a refused line (about `match_id` when it named one); too many in a row closes
    /// the connection.
    fn refuse(&mut self, code: ErrorCode, message: String, match_id: Option<String>) -> Next {
        self.error(code, message, match_id);
        self.bad_lines += 1;
        if self.bad_lines >= self.ctx.config.server.max_bad_lines {
            Next::Close(format!("{} refused lines in a row", self.bad_lines))
        } else {
            Next::Continue
        }
    }

    async fn read_loop<R: BotRead>(&mut self, mut lines: LineStream<R>) -> Closed {
        let ctx = self.ctx.clone();
        let server = &ctx.config.server;
        let hello_deadline =
            sleep_until(Instant::now() + Duration::from_millis(server.hello_timeout_ms));
        let ping_every = Duration::from_millis(server.ping_interval_ms);
        let pong_timeout = Duration::from_millis(server.pong_timeout_ms);
        let mut reader = ReaderState::default();
        // The loop's two waits besides the lines, polled only after a waker of theirs fired
        // (see `ReaderWaits`): the loop goes round at every line, and polling them there cost
        // the reader more than its parsing (a cancellation wait takes two locks at each poll,
        // a timer registers its waker again). The link's token is a child of the server's shutdown token, so its
        // wait also ends the loop at shutdown (waiting on the shutdown token itself would lock
        // that token, shared by every connection, at every line).
        let mut waits = ReaderWaits::new(self.link.dropped(), Instant::now() + ping_every);
        tokio::pin!(hello_deadline);
        let reason = loop {
            let authed = self.name.is_some();
            // Lines first: a wait is polled only when no line is ready, once a move rather than
            // at every turn of the loop (even asking them touches memory no line needs). A bot
            // that floods lines cannot hold the waits off: its reads draw on the task's budget,
            // and once that is spent `lines` is pending for a turn.
            let frame = tokio::select! {
                biased;
                frame = lines.next() => frame,
                wake = waits.next() => match wake {
                    ReaderWake::Dropped => break match self.link.closed_because() {
                        Some(why) => format!("dropped by the server: {why}"),
                        // Its token is the shutdown's child: cancelled with it, without a reason.
                        None => "server shutting down".to_string(),
                    },
                    ReaderWake::PingDue => {
                        // The next ping is due a whole interval after this one was handled.
                        waits.ping_at(Instant::now() + ping_every);
                        if !authed {
                            continue;
                        }
                        match reader.ping_out {
                            Some((_, sent)) if reader.answers_pings && server.pong_timeout_ms > 0 && sent.elapsed() > pong_timeout => {
                                break "no pong in time".to_string();
                            }
                            Some(_) => {}
                            None => {
                                reader.ping_id += 1;
                                reader.ping_out = Some((reader.ping_id, Instant::now()));
                                self.link.send(&RefereeMessage::Ping { id: reader.ping_id });
                            }
                        }
                        continue;
                    }
                },
                _ = &mut hello_deadline, if !authed => {
                    self.error(
                        ErrorCode::AuthFailed,
                        format!("no hello within {} ms of connecting; closing", server.hello_timeout_ms),
                        None,
                    );
                    break "no hello in time".to_string();
                }
            };
            // When the line was read: the end of the read that completed it, where the reader
            // notes it, else now. The kernel's receive time of that read (see `arrival`): never
            // later than the read, and never earlier than the line's arrival.
            let now = lines.get_ref().last_read_at().unwrap_or_else(Instant::now);
            let received = lines
                .get_ref()
                .last_arrival()
                .map_or(now, |arrived| arrived.min(now));
            let next = match frame {
                None => Next::Close("closed by the bot".into()),
                Some(Err(e)) => Next::Close(format!("read error: {e}")),
                Some(Ok(Frame::TooLong)) => self.refuse(
                    ErrorCode::LineTooLong,
                    format!("line longer than {MAX_LINE_BYTES} bytes; skipped"),
                    None,
                ),
                Some(Ok(Frame::NotUtf8)) => {
                    self.refuse(ErrorCode::BadJson, "line is not valid UTF-8".into(), None)
                }
                Some(Ok(Frame::Line(line))) => {
                    // Most lines are the next move of the match last played: its referee's
                    // state is asked for now, to arrive while the line is read.
                    if let Some(latest) = self.playing.last() {
                        latest.door.prefetch();
                    }
                    let rtt = lines.get_ref().kernel_rtt(now);
                    let shared = lines.get_ref().shared_read(lines.read_buffer().len());
                    let received = Received {
                        by: received,
                        shared,
                    };
                    let next = self.line(&line, received, now, rtt, &mut reader).await;
                    // Its buffer carries the next line (one allocation less a move).
                    lines.decoder_mut().recycle(line);
                    next
                }
            };
            if let Next::Close(reason) = next {
                break reason;
            }
        };
        Closed {
            name: self.name.as_deref().map(str::to_string),
            reason,
        }
    }

    /// Handles one line of a bot: read at `now`, its last bytes received by `received`, with
    /// the kernel's round-trip estimate of the connection at hand (`rtt`).
    async fn line(
        &mut self,
        line: &str,
        received: Received,
        now: Instant,
        rtt: Option<Duration>,
        reader: &mut ReaderState,
    ) -> Next {
        if line.trim().is_empty() {
            return Next::Continue;
        }
        match read_bot_line(line) {
            Err(e) => self.refuse(e.code, e.message, e.match_id),
            Ok(BotLine::Message(BotMessage::Pong { .. })) if self.name.is_none() => {
                // As any other first line that is not `hello`.
                self.error(
                    ErrorCode::AuthFailed,
                    "the first message must be hello",
                    None,
                );
                Next::Close("spoke before hello".into())
            }
            Ok(BotLine::Message(BotMessage::Pong { id })) => {
                // Only a liveness signal: lag credit never comes from how fast the bot's
                // process answers (it could answer late on purpose).
                self.bad_lines = 0;
                if reader.ping_out.is_some_and(|(expected, _)| expected == id) {
                    reader.ping_out = None;
                    reader.answers_pings = true;
                }
                Next::Continue
            }
            Ok(message) => {
                self.bad_lines = 0;
                // Lag credit: the kernel's own round-trip estimate, from ACKs. Told to the
                // link only when it changes: the link's copy sits in memory the referee uses
                // from another core, and even a look at it cost the reader a cache miss at
                // every move (in the bench's profile).
                if reader.rtt_told != Some(rtt) {
                    match rtt {
                        Some(rtt) => self.link.set_rtt(rtt),
                        None => self.link.clear_rtt(),
                    }
                    reader.rtt_told = Some(rtt);
                }
                let next = match message {
                    // The common line, its fields borrowed from the line.
                    BotLine::Move { match_id, mv, ply } if self.name.is_some() => {
                        self.forward_move(match_id, mv, ply, received, now).await
                    }
                    other => self.handle(other.into_message(), received, now).await,
                };
                if self.name.is_some() {
                    self.unauthenticated = None;
                }
                next
            }
        }
    }

    async fn handle(&mut self, message: BotMessage, received: Received, read: Instant) -> Next {
        if self.name.is_none() {
            return match message {
                hello @ BotMessage::Hello { .. } => {
                    // Boxed: said once per connection, it would otherwise make every
                    // connection's reader task as large as its state for good.
                    Box::pin(self.hello(hello)).await
                }
                _ => {
                    self.error(
                        ErrorCode::AuthFailed,
                        "the first message must be hello",
                        None,
                    );
                    Next::Close("spoke before hello".into())
                }
            };
        }
        match message {
            BotMessage::Hello { .. } => {
                self.error(
                    ErrorCode::AlreadyConnected,
                    "this connection has already said hello",
                    None,
                );
                Next::Continue
            }
            BotMessage::Move { match_id, mv, ply } => {
                self.forward_move(&match_id, &mv, ply, received, read).await
            }
            BotMessage::Resign { match_id } => {
                let conn_id = self.link.conn_id;
                let Some(playing) = self.playing(&match_id) else {
                    return Next::Continue;
                };
                let (side, door) = (playing.side, playing.door.clone());
                self.hand_to_referee_task(&door, &match_id, RefereeInput::Resign { side, conn_id })
                    .await
            }
            BotMessage::Pong { .. } => Next::Continue,
        }
    }

    /// The match `match_id` this connection plays, found in the registry once and kept (made
    /// the latest of `self.playing`); `None` (and the bot told) if it plays no such match.
    fn playing(&mut self, match_id: &str) -> Option<&PlayingMatch> {
        let known = self
            .playing
            .iter()
            .position(|p| p.match_id.as_slice() == match_id.as_bytes());
        match known {
            Some(i) if self.playing[i].is_running() => {
                let latest = self.playing.len() - 1;
                self.playing.swap(i, latest);
            }
            _ => {
                // Finished matches (this one too, if its referee has ended) make room and let
                // their referees' state go; the registry is asked again.
                self.playing.retain(|p| p.is_running());
                let found = self
                    .name
                    .as_deref()
                    .and_then(|name| self.ctx.registry.match_for(match_id, name));
                let Some((side, door)) = found else {
                    self.error(
                        ErrorCode::UnknownMatch,
                        format!("you are not playing a match {}", shown_text(match_id)),
                        Some(match_id.to_string()),
                    );
                    return None;
                };
                if self.playing.len() >= self.playing_kept {
                    self.playing.remove(0);
                }
                self.playing.push(PlayingMatch {
                    match_id: SmallVec::from_slice(match_id.as_bytes()),
                    side,
                    door,
                });
            }
        }
        self.playing.last()
    }

    /// Hands a logged-in bot's move to the referee of its match `match_id`: played right here
    /// when the referee takes it directly (most moves: under the referee's lock, no hand-over
    /// to its task, the text not copied), through its inbox otherwise.
    async fn forward_move(
        &mut self,
        match_id: &str,
        text: &str,
        ply: Option<u32>,
        received: Received,
        read: Instant,
    ) -> Next {
        let conn_id = self.link.conn_id;
        let Some(playing) = self.playing(match_id) else {
            return Next::Continue;
        };
        let mv = MoveInput {
            side: playing.side,
            conn_id,
            text,
            ply,
            received: received.by,
            shared_read: received.shared,
            read,
        };
        if playing.door.try_direct(mv) {
            return Next::Continue;
        }
        let door = playing.door.clone();
        self.hand_to_referee_task(&door, match_id, mv.to_owned_input())
            .await
    }

    /// Hands `input` to the task of the referee behind `door`, of the match `match_id`.
    async fn hand_to_referee_task(
        &self,
        door: &super::link::RefereeDoor,
        match_id: &str,
        input: RefereeInput,
    ) -> Next {
        // The inbox almost always has room: handing the input over without building a send
        // future is the common path (the future showed in the bench's profile); only a full
        // inbox makes this reader wait.
        let sent = match door.try_send(input) {
            Ok(()) => Ok(()),
            Err(flume::TrySendError::Full(input)) => door.send(input).await.map_err(|_| ()),
            Err(flume::TrySendError::Disconnected(_)) => Err(()),
        };
        if sent.is_err() {
            self.error(
                ErrorCode::UnknownMatch,
                format!("match {} is over", shown_text(match_id)),
                Some(match_id.to_string()),
            );
        }
        Next::Continue
    }

    /// Tells a bot that logs in after the league ended that it is over, and closes.
    fn league_over(&self) -> Next {
        self.error(
            ErrorCode::LeagueOver,
            super::registry::LEAGUE_OVER_MESSAGE,
            None,
        );
        Next::Close("the league is over".into())
    }

    async fn hello(&mut self, hello: BotMessage) -> Next {
        let BotMessage::Hello {
            protocol,
            name,
            token,
            games,
            max_games,
            engine,
            ticket,
        } = hello
        else {
            return Next::Continue;
        };
        if protocol != PROTOCOL_VERSION {
            self.error(
                ErrorCode::AuthFailed,
                format!("protocol version {protocol} is not supported (this server speaks {PROTOCOL_VERSION})"),
                None,
            );
            return Next::Close(format!("unsupported protocol {protocol}"));
        }
        if let Err(blocked) = self.ctx.logins.check(self.peer.ip(), Instant::now()) {
            let seconds = blocked.seconds_left(Instant::now());
            self.ctx.refusals.note(
                self.peer.ip(),
                "login refused: too many failed logins from this address",
            );
            self.error(
                ErrorCode::TooManyFailedLogins,
                format!(
                    "too many failed logins from {}; try again in {seconds} s",
                    self.peer.ip()
                ),
                None,
            );
            return Next::Close("refused: too many failed logins from its address".into());
        }
        let configured = self.ctx.tokens.contains_key(&name).then_some(name.as_str());
        if let Err(throttled) = self.ctx.logins.check_name(
            configured,
            self.peer.ip(),
            ticket.as_deref(),
            Instant::now(),
        ) {
            let wait = throttled.until.saturating_duration_since(Instant::now());
            self.ctx.refusals.note(
                self.peer.ip(),
                "login refused: the bot name's token checks are used up for now",
            );
            self.error(
                ErrorCode::LoginThrottled,
                format!(
                    "logins to this bot name are being tried from elsewhere; try again in {} ms",
                    wait.as_millis().max(1)
                ),
                None,
            );
            return Next::Close("refused: the bot name's token checks are used up".into());
        }
        let token_ok = match self.ctx.tokens.get(&name) {
            Some(expected) => bool::from(expected.as_bytes().ct_eq(token.as_bytes())),
            None => {
                // Same work for unknown names, so timing does not tell which names exist.
                let _ = b"no-such-bot-token".ct_eq(token.as_bytes());
                false
            }
        };
        if !token_ok {
            let blocked = self.ctx.logins.failed(self.peer.ip(), Instant::now());
            // Summarised per address; the name tried is escaped and cut; the token never shows.
            self.ctx
                .refusals
                .note(self.peer.ip(), "failed login: unknown name or wrong token");
            tracing::debug!(conn = self.link.conn_id, peer = %self.peer, bot = %client_text(&name), "failed login");
            let message = match blocked {
                Some(blocked) => format!(
                    "unknown name or wrong token; too many failed logins from {}: refused for {} s",
                    self.peer.ip(),
                    blocked.seconds_left(Instant::now())
                ),
                None => "unknown name or wrong token".to_string(),
            };
            self.error(ErrorCode::AuthFailed, message, None);
            return Next::Close(format!(
                "authentication failed for \"{}\"",
                client_text(&name)
            ));
        }
        let ticket = self
            .ctx
            .logins
            .succeeded(&name, self.peer.ip(), Instant::now());
        let mut played = std::collections::HashSet::new();
        for g in &games {
            match g.parse::<GameId>() {
                Ok(id) => {
                    played.insert(id);
                }
                Err(_) => {
                    tracing::debug!(bot = %name, game = %client_text(g), "ignoring unknown game id in hello")
                }
            }
        }
        let mut could_play: Vec<&str> = self
            .ctx
            .config
            .tournaments
            .iter()
            .filter(|t| t.bots.contains(&name))
            .map(|t| t.game.as_str())
            .collect();
        could_play.sort_unstable();
        could_play.dedup();
        if !could_play.is_empty() && !could_play.iter().any(|g| games.iter().any(|h| h == g)) {
            let message = format!(
                "none of your games {games:?} is played by your tournaments here; you could play: {}",
                could_play.join(", ")
            );
            tracing::warn!(conn = self.link.conn_id, bot = %name, games = %client_text(&games.join(" ")), could_play = ?could_play, "hello lists no game of the bot's tournaments");
            self.error(ErrorCode::UnknownGame, message, None);
            return Next::Close(format!("{name:?} listed no game it is scheduled for"));
        }
        if self.ctx.registry.league_is_over() {
            return self.league_over();
        }
        let max_games = max_games.clamp(1, self.ctx.config.server.max_games_cap);
        let session = Session {
            link: self.link.clone(),
            games: played.clone(),
            max_games,
        };
        let welcome = RefereeMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            name: name.clone(),
            server: SERVER_NAME.to_string(),
            ticket,
        };
        // Told before the registry has it, so that no game of the bot can start (and be told)
        // before its login is.
        let mut games: Vec<GameId> = played.iter().copied().collect();
        games.sort_unstable();
        self.ctx.events.publish(&ServerEvent::BotConnected {
            bot: name.clone(),
            games,
        });
        let registered = self.ctx.registry.register(&name, session, &welcome);
        if let Some(old) = registered.replaced {
            tracing::info!(conn = self.link.conn_id, replaced = old, bot = %name, "a new login replaced the bot's older connection");
        }
        let resumed = registered.resumed;
        // The league may have ended while this bot registered (after `end_league` told the
        // others).
        if self.ctx.registry.league_is_over() {
            return self.league_over();
        }
        tracing::info!(
            conn = self.link.conn_id,
            bot = %name,
            engine = %client_text(engine.as_deref().unwrap_or("-")),
            max_games,
            games = ?played,
            "authenticated"
        );
        self.name = Some(Arc::from(name));
        self.playing_kept = usize::try_from(max_games)
            .unwrap_or(PLAYING_KEPT)
            .clamp(1, PLAYING_KEPT);
        for (side, door) in resumed {
            let _ = door
                .send(RefereeInput::Connected {
                    side,
                    link: self.link.clone(),
                })
                .await;
        }
        Next::Continue
    }
}

//! The load generator: `arena bench --bots-only` connects bots `b0..bN` to a referee and plays a
//! precomputed Connect6 game that fills the board to a draw (181 moves, so games are long and
//! moves cheap). Each bot replies to `turn` at once, or after a random sleep of up to
//! `think_max_ms` (counted from its kernel's receipt of `turn`) while still answering pings at
//! once. It runs in its own process so that bot work never shares the server's runtime, and
//! prints one JSON object (`BotsReport`) when the referee has closed every connection.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio::time::{sleep_until, timeout, Instant};
use tokio_util::codec::FramedRead;

use crate::bot_connection::{connect_and_hello, HandshakeError, RefereeLink};
use crate::game::connect6::SIZE;
use crate::game::{new_game, EndReason, GameId, Point};
use crate::protocol::{BotMessage, BotResult, CappedLineCodec, Frame, MAX_LINE_BYTES};
use crate::server::probe::monotonic_us;
use crate::server::ArrivalStampedRead;

use super::BenchError;

/// The token of bot `b{i}` in the generated configuration.
pub fn bot_token(i: usize) -> String {
    format!("bench-token-{i}")
}

/// A bot silent this long is given up (the referee pings every few seconds).
const IDLE_LIMIT: Duration = Duration::from_secs(60);
/// Connections opened at once while logging in (the listen queue is finite).
const CONNECTING_AT_ONCE: usize = 64;

/// What `--bots-only` is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotsOptions {
    pub server: String,
    pub bots: usize,
    /// Games each bot offers to play at once (its `hello`'s `max_games`).
    pub games_per_bot: usize,
    /// 0: reply at once; otherwise sleep a uniform random 0..=think_max_ms before replying.
    pub think_max_ms: u64,
    pub seed: u64,
    /// The web view to follow, and with how many `/api/events` streams (none: `None`).
    pub web_events: Option<(std::net::SocketAddr, usize)>,
}

/// What the load generator saw, printed as one JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BotsReport {
    pub bots: usize,
    pub logged_in: usize,
    pub moves_sent: u64,
    /// Bot-side time from a bot writing its move to its opponent reading the `turn` that relays
    /// it (both in this process): server overhead plus both loopback hops plus this process's
    /// own scheduling delays.
    pub relay_us_p50: u64,
    pub relay_us_p99: u64,
    pub relay_samples: usize,
    /// Bytes read from the web view's event streams (0 when none were followed).
    #[serde(default)]
    pub web_event_bytes: u64,
    pub games_ended: u64,
    pub timeouts_seen: u64,
    /// Games a bot lost on time having used at most `think_max_ms` (`TimedMove::used_us`: from
    /// its kernel receiving `turn` to writing its move, or to reading `end` if it had not
    /// written it yet): false timeouts.
    pub timeouts_within_plan: u64,
    /// Games a bot lost on time after using more than `think_max_ms` at the wire (its
    /// process was held up past its planned think time).
    pub timeouts_overran: u64,
    pub errors_seen: u64,
    /// Each game this process lost on time: the move it was on, with the time it had used by
    /// its own clock as `think_us` (to writing the move, or to reading `end` if it had not).
    pub lost_on_time: Vec<TimedMove>,
    /// Each timed move the bot made.
    pub think: Vec<TimedMove>,
}

/// One move made after a planned think time, as the bot saw it (machine-wide monotonic µs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedMove {
    pub match_id: String,
    pub ply: u32,
    /// True think time: from reading `turn` to the write of the move returning.
    pub think_us: u64,
    /// When the bot's process read `turn`.
    pub read_mono_us: u64,
    /// When the bot's kernel received the bytes that completed `turn` (the receive stamp of
    /// the read), if it stamped them: never earlier than the line's arrival.
    pub arrived_mono_us: Option<u64>,
}

impl TimedMove {
    /// The time the bot had used on the move at the wire: its think time plus, where its kernel
    /// stamped `turn`, the time `turn` waited in its socket before the read.
    pub fn used_us(&self) -> u64 {
        let in_socket = self
            .arrived_mono_us
            .map_or(0, |arrived| self.read_mono_us.saturating_sub(arrived));
        self.think_us.saturating_add(in_socket)
    }
}

/// The moves of a Connect6 game that fills the board without six in a row (a draw by full
/// board): stone colours follow `((col + 2·row) / 2) mod 2`, which has runs of at most two in
/// every direction. Checked against the rules before use.
pub fn connect6_draw_script() -> Result<Vec<String>, BenchError> {
    let mut colours: [Vec<Point>; 2] = [Vec::new(), Vec::new()];
    for row in 0..SIZE {
        for col in 0..SIZE {
            let colour = ((usize::from(col) + 2 * usize::from(row)) / 2) % 2;
            if let Some(points) = colours.get_mut(colour) {
                points.push(Point::new(col, row));
            }
        }
    }
    // The first player places one stone more (its single opening stone).
    let [a, b] = colours;
    let (first, second) = if a.len() > b.len() { (a, b) } else { (b, a) };
    let mut moves = Vec::new();
    let mut firsts = first.iter();
    let mut seconds = second.iter();
    if let Some(p) = firsts.next() {
        moves.push(p.to_string());
    }
    loop {
        let mut progressed = false;
        for stones in [&mut seconds, &mut firsts] {
            match (stones.next(), stones.next()) {
                (Some(p), Some(q)) => moves.push(format!("{p},{q}")),
                (Some(p), None) => moves.push(p.to_string()),
                _ => continue,
            }
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    let mut game = new_game(GameId::Connect6, &serde_json::Value::Null)
        .map_err(|e| BenchError::Setup(e.to_string()))?;
    for (i, mv) in moves.iter().enumerate() {
        if game.outcome().is_some() {
            return Err(BenchError::Setup(format!(
                "script game ends early at move {i}"
            )));
        }
        game.play_text(mv)
            .map_err(|e| BenchError::Setup(format!("script move {i} {mv}: {e}")))?;
    }
    match game.outcome() {
        Some(o) if o.reason == EndReason::BoardFull && o.winner.is_none() => Ok(moves),
        other => Err(BenchError::Setup(format!(
            "script game should end in a full-board draw, not {other:?}"
        ))),
    }
}

/// The fields of a referee line the bots look at (the rest is skipped unparsed).
#[derive(Debug, Deserialize)]
struct Incoming<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(rename = "match", default, borrow)]
    match_id: Option<&'a str>,
    #[serde(default)]
    ply: Option<u32>,
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    reason: Option<EndReason>,
    #[serde(default)]
    result: Option<BotResult>,
}

/// One bot's own tallies.
#[derive(Debug, Default)]
struct BotStats {
    logged_in: bool,
    moves_sent: u64,
    relay_us: Vec<u32>,
    games_ended: u64,
    timeouts_seen: u64,
    timeouts_within_plan: u64,
    timeouts_overran: u64,
    errors_seen: u64,
    think: Vec<TimedMove>,
    lost_on_time: Vec<TimedMove>,
}

/// A move waiting for its think time to pass.
struct Pending {
    due: Instant,
    read_at: Instant,
    read_mono_us: u64,
    arrived_mono_us: Option<u64>,
    match_id: String,
    ply: u32,
}

/// How many games a bot keeps per-game notes for (stamps, last moves): those it plays at
/// once and their successors, which may begin before an old game's last line is read.
fn games_remembered(games_per_bot: usize) -> usize {
    2 * games_per_bot.max(1) + 2
}

/// When a bot last wrote a move in each of its games (µs since the epoch), taken by its
/// opponent's next `turn` in that game. An entry is kept (its stamp 0 once taken) while its
/// game goes on, so a move costs no allocation; the oldest goes once more games than the bot
/// plays at once (and their successors) are listed.
struct SentStamps {
    stamps: std::sync::Mutex<Vec<(String, u64)>>,
    keep: usize,
}

impl SentStamps {
    fn new(games_per_bot: usize) -> SentStamps {
        SentStamps {
            stamps: std::sync::Mutex::new(Vec::new()),
            keep: games_remembered(games_per_bot),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, u64)>> {
        self.stamps.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn store(&self, match_id: &str, at: u64) {
        let mut stamps = self.lock();
        if let Some(entry) = stamps.iter_mut().find(|(id, _)| id == match_id) {
            entry.1 = at;
            return;
        }
        if stamps.len() >= self.keep {
            stamps.remove(0);
        }
        stamps.push((match_id.to_string(), at));
    }

    /// The stamp of `match_id`'s last move, if one was stored since the last take.
    fn take(&self, match_id: &str) -> Option<u64> {
        let mut stamps = self.lock();
        let entry = stamps.iter_mut().find(|(id, _)| id == match_id)?;
        Some(std::mem::take(&mut entry.1)).filter(|&at| at > 0)
    }
}

/// Microseconds since `epoch`, never 0 (0 means "no move sent yet").
fn stamp(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

struct Bot {
    index: usize,
    options: Arc<BotsOptions>,
    script: Arc<Vec<String>>,
    epoch: Instant,
    /// When this bot's opponent last wrote a move in each game (µs since `epoch`).
    opponent_sent: Arc<SentStamps>,
    /// When this bot last wrote a move in each game.
    own_sent: Arc<SentStamps>,
}

impl Bot {
    /// Connects and logs in through the one bot-side handshake, retrying a refused connection
    /// for a few seconds (the listen queue may be full while a thousand bots connect).
    async fn log_in(&self) -> Option<RefereeLink> {
        let hello = BotMessage::hello(
            format!("b{}", self.index),
            bot_token(self.index),
            vec!["connect6".to_string()],
            u32::try_from(self.options.games_per_bot.max(1)).unwrap_or(u32::MAX),
            Some("arena bench".to_string()),
            None,
        );
        for _ in 0..50 {
            match connect_and_hello(&self.options.server, &hello, IDLE_LIMIT).await {
                Ok((link, _)) => return Some(link),
                Err(HandshakeError::Connect { .. }) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => {
                    tracing::warn!(bot = self.index, error = %e, "bench bot could not log in");
                    return None;
                }
            }
        }
        None
    }

    /// Logs in (holding a connection slot until `welcome`), then plays until the referee closes
    /// the connection.
    async fn run(self, slots: Arc<Semaphore>) -> BotStats {
        let mut stats = BotStats::default();
        let permit = slots.acquire_owned().await.ok();
        let Some(link) = self.log_in().await else {
            return stats;
        };
        stats.logged_in = true;
        drop(permit);
        // Reading and writing go on at once: split the socket, keeping what was already read.
        // The handshake may have read past `welcome` (the first `turn` often comes in the same
        // packet): those bytes are read first. Copying them into a new `FramedRead`'s buffer
        // instead would leave them undecoded until the socket's next bytes, which held the
        // first turn of every game ~250 ms (false timeouts at ply 0).
        let parts = link.into_parts();
        let (read_half, mut write_half) = parts.io.into_split();
        let already_read = std::io::Cursor::new(parts.read_buf.to_vec());
        // The kernel stamps what it receives, so the clock figures can tell the time `turn`
        // waited in this process's socket from the referee's part.
        let read_half = ArrivalStampedRead::new(read_half, true);
        let mut lines = FramedRead::new(
            already_read.chain(read_half),
            CappedLineCodec::new(MAX_LINE_BYTES),
        );
        let mut rng = SmallRng::seed_from_u64(self.options.seed ^ (self.index as u64) << 20);
        // Moves waiting for their think time, one per game at most (a bot plays
        // `games_per_bot` games at once).
        let mut pending: Vec<Pending> = Vec::new();
        // The last move this bot wrote in each game (kept as `SentStamps` keeps its stamps).
        let mut last_moves: Vec<TimedMove> = Vec::new();
        let keep_last = games_remembered(self.options.games_per_bot);
        loop {
            let next_due = pending
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.due)
                .map(|(i, p)| (i, p.due));
            let frame = tokio::select! {
                frame = timeout(IDLE_LIMIT, lines.next()) => frame,
                _ = async { if let Some((_, at)) = next_due { sleep_until(at).await } }, if next_due.is_some() => {
                    if let Some((i, _)) = next_due {
                        let p = pending.swap_remove(i);
                        let sent = self.send_move(&mut write_half, &p.match_id, p.ply, &mut stats).await;
                        // Measured once the move is written: a process held up between its
                        // timer and its write has used that time too.
                        let think = u64::try_from(p.read_at.elapsed().as_micros()).unwrap_or(u64::MAX);
                        let made = TimedMove {
                            match_id: p.match_id,
                            ply: p.ply,
                            think_us: think,
                            read_mono_us: p.read_mono_us,
                            arrived_mono_us: p.arrived_mono_us,
                        };
                        stats.think.push(made.clone());
                        last_moves.retain(|m| m.match_id != made.match_id);
                        if last_moves.len() >= keep_last {
                            last_moves.remove(0);
                        }
                        last_moves.push(made);
                        if !sent {
                            break;
                        }
                    }
                    continue;
                }
            };
            let read_at = Instant::now();
            let read_mono_us = monotonic_us();
            let arrived_at = lines.get_ref().get_ref().1.last_arrival();
            let arrived_mono_us = arrived_at.map(|at| {
                let age = read_at.saturating_duration_since(at).as_micros();
                read_mono_us.saturating_sub(u64::try_from(age).unwrap_or(u64::MAX))
            });
            // A bot's planned sleep runs from its kernel's receipt of `turn`, as a bot process
            // that is not held up would see it: a wait in this crowded process's socket before
            // the read (the load generator's own scheduling, not the referee's) is spent from
            // the sleep instead of added to it.
            let began = arrived_at.map_or(read_at, |at| at.min(read_at));
            let line = match frame {
                Ok(Some(Ok(Frame::Line(line)))) => line,
                Ok(Some(Ok(_))) => continue,
                Ok(Some(Err(_))) | Ok(None) | Err(_) => break,
            };
            let Ok(message) = serde_json::from_str::<Incoming>(&line) else {
                stats.errors_seen += 1;
                continue;
            };
            match message.kind {
                "ping" => {
                    let pong =
                        format!(r#"{{"type":"pong","id":{}}}"#, message.id.unwrap_or(0)) + "\n";
                    if write_half.write_all(pong.as_bytes()).await.is_err() {
                        break;
                    }
                }
                "turn" => {
                    let (Some(match_id), Some(ply)) = (message.match_id, message.ply) else {
                        stats.errors_seen += 1;
                        continue;
                    };
                    if ply > 0 {
                        if let Some(sent) = self.opponent_sent.take(match_id) {
                            let now = stamp(self.epoch);
                            stats
                                .relay_us
                                .push(u32::try_from(now.saturating_sub(sent)).unwrap_or(u32::MAX));
                        }
                    }
                    if self.options.think_max_ms == 0 {
                        if !self
                            .send_move(&mut write_half, match_id, ply, &mut stats)
                            .await
                        {
                            break;
                        }
                    } else {
                        let think = planned_think_ms(
                            arrived_at.is_some(),
                            lines.get_ref().get_ref().1.is_stamping(),
                            self.options.think_max_ms,
                            &mut rng,
                        );
                        pending.retain(|p| p.match_id != match_id);
                        pending.push(Pending {
                            due: began + Duration::from_millis(think),
                            read_at,
                            read_mono_us,
                            arrived_mono_us,
                            match_id: match_id.to_string(),
                            ply,
                        });
                    }
                }
                "end" => {
                    stats.games_ended += 1;
                    let ended = message.match_id;
                    let waiting = pending
                        .iter()
                        .position(|p| Some(p.match_id.as_str()) == ended)
                        .map(|i| pending.swap_remove(i));
                    if message.reason == Some(EndReason::Timeout) {
                        stats.timeouts_seen += 1;
                        if message.result == Some(BotResult::Loss) {
                            let lost = match waiting {
                                Some(p) => Some(TimedMove {
                                    think_us: u64::try_from(
                                        read_at.saturating_duration_since(p.read_at).as_micros(),
                                    )
                                    .unwrap_or(u64::MAX),
                                    match_id: p.match_id,
                                    ply: p.ply,
                                    read_mono_us: p.read_mono_us,
                                    arrived_mono_us: p.arrived_mono_us,
                                }),
                                None => last_moves
                                    .iter()
                                    .position(|m| Some(m.match_id.as_str()) == ended)
                                    .map(|i| last_moves.swap_remove(i)),
                            };
                            let used_us = lost.as_ref().map_or(0, TimedMove::used_us);
                            if let Some(lost) = lost {
                                stats.lost_on_time.push(lost);
                            }
                            if used_us <= self.options.think_max_ms.saturating_mul(1000) {
                                stats.timeouts_within_plan += 1;
                            } else {
                                stats.timeouts_overran += 1;
                            }
                        }
                    }
                }
                "error" => stats.errors_seen += 1,
                _ => {}
            }
        }
        stats
    }

    /// Writes the script's move for `ply`; false when the connection is gone.
    async fn send_move(
        &self,
        write_half: &mut tokio::net::tcp::OwnedWriteHalf,
        match_id: &str,
        ply: u32,
        stats: &mut BotStats,
    ) -> bool {
        let Some(mv) = usize::try_from(ply).ok().and_then(|p| self.script.get(p)) else {
            stats.errors_seen += 1;
            return true;
        };
        let line = format!(r#"{{"type":"move","match":"{match_id}","move":"{mv}"}}"#) + "\n";
        self.own_sent.store(match_id, stamp(self.epoch));
        stats.moves_sent += 1;
        write_half.write_all(line.as_bytes()).await.is_ok()
    }
}

/// The value at quantile `q` of sorted samples.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let counted = sorted.iter().map(|&value| (value, 1));
    crate::quantile::nearest_rank(counted, sorted.len() as u64, q)
}

/// What the load generator writes on a line of its own once every web event stream is open
/// (before its bots connect); it then waits for a line on its input before starting them, so
/// that the server can measure what the open streams alone hold.
pub const WEB_STREAMS_OPEN: &str = "web streams open";

/// Puts the calling thread back to the normal scheduling policy. The web streams' thread calls
/// it: when the clock phase starts the load generator in real time, the browsers it stands for
/// must not run ahead of the server as its bots do. At the bots' real-time priority the
/// thread reading a thousand streams can hold the bots' threads off a core (round-robin slices
/// are 100 ms): in one run of two their `turn`s waited 4 ms p99 in their sockets. Lowering
/// needs no privilege; a refusal leaves the thread as it was. A generator raised by a lower
/// nice value instead (where real time is refused) keeps it here: the fair scheduler shares
/// the cores by weight, so this thread cannot hold the bots off for a whole slice.
fn at_normal_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes only the calling thread's policy (pid 0: the calling thread) and reads
    // nothing but `param`.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
    }
}

/// Opens `count` `/api/events` streams on `addr` from a thread of their own (browsers, as far
/// as the server can tell) and reads them until the server closes them; returns the bytes read
/// in all. Each stream sends one `()` on `opened` once the server's answer starts arriving.
fn follow_events(
    addr: std::net::SocketAddr,
    count: usize,
    opened: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        at_normal_priority();
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return 0;
        };
        runtime.block_on(async move {
            let mut readers = tokio::task::JoinSet::new();
            for _ in 0..count {
                let opened = opened.clone();
                readers.spawn(async move {
                    // The web view starts with the server: retry until it answers, for a while
                    // (a web view that never answers must not keep this process alive).
                    let mut attempts = 0;
                    let mut stream = loop {
                        match tokio::net::TcpStream::connect(addr).await {
                            Ok(s) => break s,
                            Err(_) if attempts < 200 => {
                                attempts += 1;
                                tokio::time::sleep(Duration::from_millis(50)).await
                            }
                            Err(_) => return 0u64,
                        }
                    };
                    let request = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
                    if stream.write_all(request.as_bytes()).await.is_err() {
                        return 0u64;
                    }
                    let mut buffer = vec![0u8; 16 * 1024];
                    let mut total = 0u64;
                    while let Ok(n) = stream.read(&mut buffer).await {
                        if n == 0 {
                            break;
                        }
                        if total == 0 {
                            let _ = opened.send(());
                        }
                        total += n as u64;
                    }
                    total
                });
            }
            drop(opened);
            let mut total = 0;
            while let Some(read) = readers.join_next().await {
                total += read.unwrap_or(0);
            }
            total
        })
    })
}

/// Waits until `count` streams have sent on `opened` (at most a minute).
fn wait_for_streams(
    opened: &std::sync::mpsc::Receiver<()>,
    count: usize,
) -> Result<(), BenchError> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    for open in 0..count {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if opened.recv_timeout(left).is_err() {
            return Err(BenchError::Setup(format!(
                "only {open} of {count} web event streams opened within a minute"
            )));
        }
    }
    Ok(())
}

/// Runs `options.bots` bots (bots `2k` and `2k+1` play each other) until the referee closes
/// every connection, and follows the web view's events if asked; writes a `BotsReport` as one
/// JSON line to `out`. With web events, the streams open first: then `WEB_STREAMS_OPEN` goes
/// to `out` and the bots start once a line (or the end) is read from `go`.
pub fn run_bots(
    options: BotsOptions,
    out: &mut impl Write,
    go: &mut impl std::io::BufRead,
) -> Result<(), BenchError> {
    let script = Arc::new(connect6_draw_script()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Setup(format!("bots runtime: {e}")))?;
    let web_streams = match options.web_events {
        Some((addr, count)) => {
            let (opened_tx, opened) = std::sync::mpsc::channel();
            let streams = follow_events(addr, count, opened_tx);
            wait_for_streams(&opened, count)?;
            writeln!(out, "{WEB_STREAMS_OPEN}").map_err(|e| BenchError::Setup(e.to_string()))?;
            out.flush().map_err(|e| BenchError::Setup(e.to_string()))?;
            let mut line = String::new();
            go.read_line(&mut line)
                .map_err(|e| BenchError::Setup(format!("waiting for the go line: {e}")))?;
            Some(streams)
        }
        None => None,
    };
    let options = Arc::new(options);
    let bots = options.bots;
    let stats: Vec<BotStats> = runtime.block_on(async {
        let epoch = Instant::now();
        let slots = Arc::new(Semaphore::new(CONNECTING_AT_ONCE));
        let mut tasks = Vec::with_capacity(bots);
        let sent: Vec<Arc<SentStamps>> = (0..bots)
            .map(|_| Arc::new(SentStamps::new(options.games_per_bot)))
            .collect();
        for index in 0..bots {
            let opponent = index ^ 1;
            let (Some(own_sent), Some(opponent_sent)) = (sent.get(index), sent.get(opponent))
            else {
                continue;
            };
            let bot = Bot {
                index,
                options: options.clone(),
                script: script.clone(),
                epoch,
                opponent_sent: opponent_sent.clone(),
                own_sent: own_sent.clone(),
            };
            tasks.push(tokio::spawn(bot.run(slots.clone())));
        }
        let mut all = Vec::with_capacity(bots);
        for task in tasks {
            if let Ok(s) = task.await {
                all.push(s);
            }
        }
        all
    });
    // The streams end with the server; how much they read shows they were live.
    let web_event_bytes = web_streams
        .and_then(|streams| streams.join().ok())
        .unwrap_or(0);
    let mut relay: Vec<u32> = stats
        .iter()
        .flat_map(|s| s.relay_us.iter().copied())
        .collect();
    relay.sort_unstable();
    let report = BotsReport {
        bots,
        logged_in: stats.iter().filter(|s| s.logged_in).count(),
        moves_sent: stats.iter().map(|s| s.moves_sent).sum(),
        relay_us_p50: quantile(&relay, 0.5).map_or(0, u64::from),
        relay_us_p99: quantile(&relay, 0.99).map_or(0, u64::from),
        relay_samples: relay.len(),
        web_event_bytes,
        games_ended: stats.iter().map(|s| s.games_ended).sum(),
        timeouts_seen: stats.iter().map(|s| s.timeouts_seen).sum(),
        timeouts_within_plan: stats.iter().map(|s| s.timeouts_within_plan).sum(),
        timeouts_overran: stats.iter().map(|s| s.timeouts_overran).sum(),
        errors_seen: stats.iter().map(|s| s.errors_seen).sum(),
        lost_on_time: stats
            .iter()
            .flat_map(|s| s.lost_on_time.iter().cloned())
            .collect(),
        think: stats.into_iter().flat_map(|s| s.think).collect(),
    };
    serde_json::to_writer(&mut *out, &report).map_err(|e| BenchError::Setup(e.to_string()))?;
    writeln!(out).map_err(|e| BenchError::Setup(e.to_string()))?;
    out.flush().map_err(|e| BenchError::Setup(e.to_string()))?;
    Ok(())
}

/// How long a bench bot sleeps before answering a `turn`, in ms: a random time up to
/// `think_max_ms`, except for a `turn` that came without a kernel stamp on a socket that
/// stamps. That one was read by the log-in together with `welcome` (the first turn of the
/// connection's first game): it may have waited in this crowded process for tens of ms before
/// that read, which a sleep planned from the read would add to its think time and turn into a
/// loss on time that the referee did not cause. It is answered at once.
fn planned_think_ms(
    stamped: bool,
    socket_stamps: bool,
    think_max_ms: u64,
    rng: &mut SmallRng,
) -> u64 {
    let read_by_log_in = !stamped && socket_stamps;
    if read_by_log_in {
        0
    } else {
        rng.gen_range(0..=think_max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy.
    fn own_policy() -> i32 {
        // SAFETY: reads the calling thread's policy only.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn the_web_streams_thread_leaves_real_time_to_the_bots() {
        let policies = std::thread::spawn(|| {
            let param = libc::sched_param {
                // SAFETY: reads a constant of the kernel.
                sched_priority: unsafe { libc::sched_get_priority_min(libc::SCHED_RR) },
            };
            // As the clock phase's generator runs where it may (root, as in CI); elsewhere the
            // thread is already at the normal policy and stays there.
            // SAFETY: changes only this test's own thread, which ends below.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) };
            let before = own_policy();
            at_normal_priority();
            (before, own_policy())
        })
        .join()
        .expect("thread");
        let (before, after) = policies;
        assert!(
            before == libc::SCHED_RR || before == libc::SCHED_OTHER,
            "{before}"
        );
        assert_eq!(after, libc::SCHED_OTHER);
    }

    #[test]
    fn the_script_fills_the_board_to_a_draw() {
        let script = connect6_draw_script().unwrap();
        assert_eq!(script.len(), 181);
        assert!(!script[0].contains(','), "the opening move is one stone");
        assert!(script[1].contains(','));
    }

    #[test]
    fn quantiles_of_sorted_samples() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&v, 0.0), Some(1));
        assert_eq!(quantile::<u32>(&[], 0.5), None);
    }

    #[test]
    fn referee_lines_are_read_without_their_bulky_fields() {
        let m: Incoming = serde_json::from_str(
            r#"{"type":"turn","match":"m1-r1-g1","moves":["A1"],"ply":3,"clock":{"you_ms":5,"opponent_ms":6}}"#,
        )
        .unwrap();
        assert_eq!(
            (m.kind, m.match_id, m.ply),
            ("turn", Some("m1-r1-g1"), Some(3))
        );
    }

    #[test]
    fn a_first_turn_read_with_welcome_is_answered_at_once_every_other_turn_thinks() {
        let mut rng = SmallRng::seed_from_u64(7);
        let think_max_ms = 1_000;
        // Unstamped on a stamping socket: read by the log-in, never slept on.
        for _ in 0..100 {
            assert_eq!(planned_think_ms(false, true, think_max_ms, &mut rng), 0);
        }
        // Stamped, or on a socket that cannot stamp: a random think time within the plan,
        // not always 0.
        for (stamped, socket_stamps) in [(true, true), (false, false)] {
            let thinks: Vec<u64> = (0..100)
                .map(|_| planned_think_ms(stamped, socket_stamps, think_max_ms, &mut rng))
                .collect();
            assert!(thinks.iter().all(|&t| t <= think_max_ms));
            assert!(thinks.iter().any(|&t| t > 0), "{thinks:?}");
        }
    }
}

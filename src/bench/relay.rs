//! The bench's ceiling: a rules-free line relay with the same bots, sockets and match count as
//! the referee phase. Each bot's `move` line is turned into its opponent's `turn` by finding the
//! move text in the bytes (no JSON parsing, no rules, no clocks, no journal), in the same shape
//! as the server: the reader of one bot's socket writes the opponent's line into its socket at
//! once, through the server's own outgoing queue (the connection's writer task takes only what
//! the socket cannot take now). What the referee adds on top of this is what the
//! `referee_to_relay_ratio` measures.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep, Instant};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::protocol::{CappedLineCodec, Frame, MAX_LINE_BYTES};
use crate::server::{outbox, write_lines, LineSink, LinkClose, OutboxSender, TcpSink};

use super::bots::connect6_draw_script;
use super::load::{bots_for, own_cpu_us, process_cpu_us, read_child_output, spawn_bots, LoadPlan};
use super::BenchError;

/// Lines queued for one bot before it is dropped (as the server's `write_queue_lines`).
const WRITE_QUEUE_LINES: usize = 1024;

/// What the relay phase measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelayResult {
    pub window_s: f64,
    pub moves_in_window: u64,
    pub relay_cpu_us: u64,
    pub bots_cpu_us: u64,
}

/// One pair of bots: their outgoing queues and, for each of the games they play at once (their
/// slots), its ply and how many games that slot began.
struct Pair {
    writers: [Option<OutboxSender>; 2],
    slots: Vec<Slot>,
}

#[derive(Default, Clone, Copy)]
struct Slot {
    ply: u32,
    game: u32,
}

struct Relay {
    pairs: Vec<Mutex<Pair>>,
    /// Moves of the scripted game: the game ends (and the next begins) after this many.
    plies_per_game: u32,
    moves: AtomicU64,
    /// Games begun by pairs whose bots are both in (each pair begins all its slots at once).
    games_playing: AtomicUsize,
}

/// The text between `"key":"` and the next `"` in `line`, if there is one.
fn quoted_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let rest = line.get(start..)?;
    Some(&rest[..rest.find('"')?])
}

fn match_id(pair: usize, slot: usize, game: u32) -> String {
    format!("relay-{pair}-{slot}-{game}")
}

fn turn_line(id: &str, moves: Option<&str>, ply: u32) -> String {
    let moves = moves.map_or_else(String::new, |m| format!("\"{m}\""));
    format!(
        "{{\"type\":\"turn\",\"match\":\"{id}\",\"moves\":[{moves}],\"ply\":{ply},\"clock\":{{\"you_ms\":600000,\"opponent_ms\":600000}}}}\n"
    )
}

/// The slot of a relay match id (`relay-PAIR-SLOT-GAME`).
fn slot_of(match_id: &str) -> Option<usize> {
    match_id.split('-').nth(2)?.parse().ok()
}

impl Relay {
    fn pair(&self, index: usize) -> Option<std::sync::MutexGuard<'_, Pair>> {
        self.pairs
            .get(index)
            .map(|p| p.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Registers bot `bot`'s queue; begins its pair's games once both are in.
    fn join(&self, bot: usize, writer: OutboxSender) {
        let Some(mut pair) = self.pair(bot / 2) else {
            return;
        };
        pair.writers[bot % 2] = Some(writer);
        if pair.writers.iter().all(Option::is_some) {
            self.games_playing
                .fetch_add(pair.slots.len(), Ordering::Relaxed);
            for (slot, state) in pair.slots.iter().enumerate() {
                let line = turn_line(&match_id(bot / 2, slot, state.game), None, 0);
                if let Some(first) = &pair.writers[0] {
                    let _ = first.push_line(line);
                }
            }
        }
    }

    /// Relays bot `bot`'s move `text` in the game of slot `slot` to its opponent as a `turn`;
    /// after the game's last move, ends it for both and begins the slot's next game.
    fn relay(&self, bot: usize, slot: usize, text: &str) {
        let Some(mut pair) = self.pair(bot / 2) else {
            return;
        };
        let Some(state) = pair.slots.get_mut(slot) else {
            return;
        };
        self.moves.fetch_add(1, Ordering::Relaxed);
        state.ply += 1;
        let Slot { ply, game } = *state;
        if ply >= self.plies_per_game {
            let id = match_id(bot / 2, slot, game);
            let end = format!(
                "{{\"type\":\"end\",\"match\":\"{id}\",\"result\":\"draw\",\"reason\":\"board_full\",\"moves\":[]}}\n"
            );
            for writer in pair.writers.iter().flatten() {
                let _ = writer.push_line(end.clone());
            }
            let next = Slot {
                ply: 0,
                game: game + 1,
            };
            if let Some(state) = pair.slots.get_mut(slot) {
                *state = next;
            }
            let line = turn_line(&match_id(bot / 2, slot, next.game), None, 0);
            if let Some(first) = &pair.writers[0] {
                let _ = first.push_line(line);
            }
            return;
        }
        let line = turn_line(&match_id(bot / 2, slot, game), Some(text), ply);
        if let Some(opponent) = &pair.writers[1 - bot % 2] {
            let _ = opponent.push_line(line);
        }
    }
}

/// Serves one bot until it or the relay closes.
async fn serve(relay: Arc<Relay>, socket: TcpStream, stop: CancellationToken) {
    let _ = socket.set_nodelay(true);
    let (read_half, write_half) = socket.into_split();
    let mut lines = FramedRead::with_capacity(read_half, CappedLineCodec::new(MAX_LINE_BYTES), 256);
    let sink = TcpSink::new(write_half);
    let (tx, rx) = outbox(WRITE_QUEUE_LINES, sink.direct());
    let writer = tokio::spawn(write_lines(sink, rx, LinkClose::new(stop.clone())));
    let mut bot = None;
    loop {
        let frame = tokio::select! {
            _ = stop.cancelled() => break,
            frame = lines.next() => frame,
        };
        let line = match frame {
            Some(Ok(Frame::Line(line))) => line,
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => break,
        };
        match bot {
            None => {
                let Some(index) =
                    quoted_after(&line, "\"name\":\"b").and_then(|n| n.parse::<usize>().ok())
                else {
                    break;
                };
                let welcome = format!(
                    "{{\"type\":\"welcome\",\"protocol\":1,\"name\":\"b{index}\",\"server\":\"relay\"}}\n"
                );
                tx.push_line(welcome);
                relay.join(index, tx.clone());
                bot = Some(index);
            }
            Some(index) => {
                let slot = quoted_after(&line, "\"match\":\"").and_then(slot_of);
                if let (Some(slot), Some(text)) = (slot, quoted_after(&line, "\"move\":\"")) {
                    relay.relay(index, slot, text);
                }
            }
        }
        // As the server's reader does: the ceiling gets every saving the referee's own
        // reading gets.
        lines.decoder_mut().recycle(line);
    }
    drop(tx);
    stop.cancel();
    let _ = writer.await;
}

async fn accept(
    listener: TcpListener,
    relay: Arc<Relay>,
    stop: CancellationToken,
) -> tokio::task::JoinSet<()> {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => {
                if let Ok((socket, _)) = accepted {
                    connections.spawn(serve(relay.clone(), socket, stop.child_token()));
                }
            }
        }
    }
    connections
}

/// Runs the relay phase of `plan` (its match count, warm-up and window) with the same load
/// generator as the referee phases.
pub fn run_relay_phase(plan: &LoadPlan, exe: &Path) -> Result<RelayResult, BenchError> {
    let runtime = crate::server::runtime(plan.server_threads)
        .map_err(|e| BenchError::Setup(format!("relay runtime: {e}")))?;
    runtime.block_on(measure(plan, exe))
}

async fn measure(plan: &LoadPlan, exe: &Path) -> Result<RelayResult, BenchError> {
    let plies_per_game = u32::try_from(connect6_draw_script()?.len()).unwrap_or(u32::MAX);
    let relay = Arc::new(Relay {
        pairs: (0..bots_for(plan.matches, plan.games_per_bot) / 2)
            .map(|_| {
                Mutex::new(Pair {
                    writers: [None, None],
                    slots: vec![Slot::default(); plan.games_per_bot.max(1)],
                })
            })
            .collect(),
        plies_per_game,
        moves: AtomicU64::new(0),
        games_playing: AtomicUsize::new(0),
    });
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::Setup(format!("relay listener: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::Setup(format!("relay listener: {e}")))?;
    let stop = CancellationToken::new();
    let acceptor = tokio::spawn(accept(listener, relay.clone(), stop.clone()));
    let mut child = spawn_bots(exe, &addr.to_string(), plan, None)?;
    let reader = read_child_output(child.stdout.take(), None);
    let outcome = async {
        let deadline = Instant::now() + Duration::from_secs(120);
        while relay.games_playing.load(Ordering::Relaxed) < plan.matches {
            if Instant::now() > deadline {
                return Err(BenchError::Setup(format!(
                    "only {} of {} relay games started within 2 minutes",
                    relay.games_playing.load(Ordering::Relaxed),
                    plan.matches
                )));
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(BenchError::Setup(format!(
                    "the load generator stopped early ({status})"
                )));
            }
            sleep(Duration::from_millis(50)).await;
        }
        sleep(plan.warmup).await;
        let before = relay.moves.load(Ordering::Relaxed);
        let cpu_before = (own_cpu_us(), process_cpu_us(child.id()));
        let started = Instant::now();
        sleep(plan.window).await;
        let moves_in_window = relay.moves.load(Ordering::Relaxed).saturating_sub(before);
        Ok(RelayResult {
            window_s: started.elapsed().as_secs_f64(),
            moves_in_window,
            relay_cpu_us: own_cpu_us().saturating_sub(cpu_before.0),
            bots_cpu_us: process_cpu_us(child.id()).saturating_sub(cpu_before.1),
        })
    }
    .await;
    stop.cancel();
    if let Ok(mut connections) = acceptor.await {
        while connections.join_next().await.is_some() {}
    }
    // The load generator ends once every connection is closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        sleep(Duration::from_millis(50)).await;
    }
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_names_and_slots_are_found_in_the_bytes() {
        let line = r#"{"type":"move","match":"relay-3-1-0","move":"J10,K11"}"#;
        assert_eq!(quoted_after(line, "\"move\":\""), Some("J10,K11"));
        assert_eq!(
            quoted_after(line, "\"match\":\"").and_then(slot_of),
            Some(1)
        );
        assert_eq!(slot_of("relay-3"), None);
        let hello = r#"{"type":"hello","protocol":1,"name":"b17","token":"t"}"#;
        assert_eq!(quoted_after(hello, "\"name\":\"b"), Some("17"));
        assert_eq!(
            quoted_after(r#"{"type":"pong","id":3}"#, "\"move\":\""),
            None
        );
    }

    #[test]
    fn a_move_becomes_the_opponents_turn_and_the_last_move_restarts_the_game() {
        let relay = Relay {
            pairs: vec![Mutex::new(Pair {
                writers: [None, None],
                slots: vec![Slot::default(); 2],
            })],
            plies_per_game: 2,
            moves: AtomicU64::new(0),
            games_playing: AtomicUsize::new(0),
        };
        // Without a socket, every line is queued for a writer: the test reads the queues.
        let (tx0, rx0) = outbox(8, None);
        let (tx1, rx1) = outbox(8, None);
        let line = |rx: &crate::server::OutboxReader| rx.try_recv().map(|o| o.line);
        relay.join(0, tx0);
        assert!(line(&rx0).is_none(), "no turn before both bots are in");
        relay.join(1, tx1);
        // Both slots' games begin, each with its own match id.
        assert_eq!(relay.games_playing.load(Ordering::Relaxed), 2);
        let first = line(&rx0).unwrap();
        assert!(
            first.contains("relay-0-0-0") && first.contains("\"ply\":0"),
            "{first}"
        );
        assert!(line(&rx0).unwrap().contains("relay-0-1-0"));
        relay.relay(0, 1, "J10");
        let turn = line(&rx1).unwrap();
        assert!(
            turn.contains("relay-0-1-0")
                && turn.contains("\"moves\":[\"J10\"]")
                && turn.contains("\"ply\":1"),
            "{turn}"
        );
        relay.relay(1, 1, "K10,K11");
        assert!(line(&rx0).unwrap().contains("\"type\":\"end\""));
        assert!(line(&rx1).unwrap().contains("\"type\":\"end\""));
        let next = line(&rx0).unwrap();
        assert!(
            next.contains("relay-0-1-1") && next.contains("\"ply\":0"),
            "{next}"
        );
        // Slot 0's game was not touched, and a move for a slot the pair lacks is ignored.
        relay.relay(0, 7, "A1");
        assert!(line(&rx1).is_none());
        assert_eq!(relay.moves.load(Ordering::Relaxed), 2);
    }
}

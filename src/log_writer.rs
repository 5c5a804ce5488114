//! Log output written by a thread of its own: a console or log file that cannot keep up (a
//! paused terminal, a slow pipe, a stalled disk) delays the log, never the server. Each log line
//! is formatted on the thread that logs it and handed over whole through a bounded queue; when
//! the queue is full the line is dropped and counted, and the writer says how many were dropped
//! before its next line. Lines are never cut or mixed. The writer takes lines in batches (up
//! to 4 KiB per write, at most a few batches a second while lines keep coming), so a busy
//! league's log costs no wake-up per line.
//!
//! Written because `tracing-appender`, which does the same, was not among the crates this
//! project could build with; its shape is the same (a `MakeWriter` and a guard that flushes).
//!
//! Why it matters: `arena bench` once ran its server with stderr read by a slow reader, and the
//! runtime's threads, waiting to write the league's log lines, relayed a third of the moves a
//! second they relayed with stderr in a file.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Log lines that may wait for the writer before new ones are dropped.
pub const QUEUED_LINES: usize = 10_000;

/// How long [`WriterThread::finish`] waits for the lines still queued to be written.
pub const FINISH_WAIT: Duration = Duration::from_secs(2);

enum Message {
    /// A line, and how many lines were dropped just before it.
    Line { bytes: Vec<u8>, dropped_before: u64 },
    /// Answered once every line queued before it is written and the output flushed; carries
    /// how many lines were dropped after the last one queued.
    Flush {
        done: SyncSender<()>,
        dropped_before: u64,
    },
}

/// Where log lines are handed to the writer thread: give it to a `tracing_subscriber::fmt`
/// layer as its writer.
#[derive(Clone)]
pub struct BackgroundWriter {
    queue: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

/// The writer thread, to be told to finish when the program ends.
pub struct WriterThread {
    queue: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

/// Starts a thread named `name` that writes what its [`BackgroundWriter`] is given into `out`,
/// holding at most `capacity` lines waiting.
pub fn spawn(
    name: &str,
    out: Box<dyn Write + Send>,
    capacity: usize,
) -> std::io::Result<(BackgroundWriter, WriterThread)> {
    let (queue, lines) = sync_channel(capacity.max(1));
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || write_lines(lines, out))?;
    let dropped = Arc::new(AtomicU64::new(0));
    Ok((
        BackgroundWriter {
            queue: queue.clone(),
            dropped: dropped.clone(),
        },
        WriterThread { queue, dropped },
    ))
}

/// Most bytes of whole lines gathered into one write: a write this small to a pipe is not
/// interleaved with another writer's (`PIPE_BUF`), so lines stay whole even on a shared stderr.
const BATCH_BYTES: usize = 4096;

/// How long the writer lets lines gather after writing a batch. While it waits, handing a line
/// over wakes nobody: a busy league costs the log a few wake-ups a second, not one per line
/// (that hand-over showed in the bench's profile). The log runs at most this far behind.
const GATHER: Duration = Duration::from_millis(20);

fn write_lines(lines: Receiver<Message>, mut out: Box<dyn Write + Send>) {
    let mut batch: Vec<u8> = Vec::with_capacity(BATCH_BYTES);
    let mut flushed: Vec<SyncSender<()>> = Vec::new();
    // Write errors are ignored, as a logger must: there is nowhere else to report them.
    let write = |out: &mut Box<dyn Write + Send>, batch: &mut Vec<u8>| {
        if !batch.is_empty() {
            let _ = out.write_all(batch);
            batch.clear();
        }
    };
    while let Ok(first) = lines.recv() {
        let mut next = Some(first);
        while let Some(message) = next.take() {
            let (bytes, dropped_before) = match message {
                Message::Line {
                    bytes,
                    dropped_before,
                } => (bytes, dropped_before),
                Message::Flush {
                    done,
                    dropped_before,
                } => {
                    flushed.push(done);
                    (Vec::new(), dropped_before)
                }
            };
            let notice = (dropped_before > 0).then(|| {
                format!("[{dropped_before} log line(s) dropped here: the log output could not keep up]\n")
            });
            for piece in [notice.as_deref().unwrap_or("").as_bytes(), &bytes] {
                if batch.len() + piece.len() > BATCH_BYTES {
                    write(&mut out, &mut batch);
                }
                batch.extend_from_slice(piece);
            }
            next = lines.try_recv().ok();
        }
        write(&mut out, &mut batch);
        let _ = out.flush();
        for done in flushed.drain(..) {
            let _ = done.send(());
        }
        std::thread::sleep(GATHER);
    }
}

impl BackgroundWriter {
    fn hand_over(&self, bytes: Vec<u8>) {
        // The lines dropped since the last one queued travel with the next one, so the notice
        // stands where they were lost; given back if this one is dropped too.
        let dropped_before = self.dropped.swap(0, Ordering::Relaxed);
        let line = Message::Line {
            bytes,
            dropped_before,
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.queue.try_send(line)
        {
            self.dropped
                .fetch_add(dropped_before + 1, Ordering::Relaxed);
        }
    }
}

impl WriterThread {
    /// Waits up to `wait` for every line queued so far to be written (the program is ending);
    /// returns whether they were.
    pub fn finish(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        let (done, written) = sync_channel(1);
        loop {
            let dropped_before = self.dropped.swap(0, Ordering::Relaxed);
            let flush = Message::Flush {
                done: done.clone(),
                dropped_before,
            };
            match self.queue.try_send(flush) {
                Ok(()) => break,
                Err(TrySendError::Full(_)) if Instant::now() < until => {
                    self.dropped.fetch_add(dropped_before, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return false,
            }
        }
        written
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .is_ok()
    }
}

/// One log line being formatted; handed over whole when the formatter is done with it.
pub struct LineWriter<'a> {
    to: &'a BackgroundWriter,
    bytes: Vec<u8>,
}

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter<'_> {
    fn drop(&mut self) {
        if !self.bytes.is_empty() {
            self.to.hand_over(std::mem::take(&mut self.bytes));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BackgroundWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> LineWriter<'a> {
        LineWriter {
            to: self,
            bytes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Condvar, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    /// An output that takes nothing until it is opened (as a paused terminal), then keeps
    /// what it is given.
    #[derive(Clone, Default)]
    struct Gate(Arc<(Mutex<GateState>, Condvar)>);

    /// Whether the gate is open, and what went through it.
    type GateState = (bool, Vec<u8>);

    impl Gate {
        fn open(&self) {
            self.0 .0.lock().unwrap().0 = true;
            self.0 .1.notify_all();
        }

        fn text(&self) -> String {
            String::from_utf8(self.0 .0.lock().unwrap().1.clone()).unwrap()
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, opened) = &*self.0;
            let mut state = lock.lock().unwrap();
            // Bounded: a writer that never opens fails the test below rather than hanging it.
            let until = Instant::now() + Duration::from_secs(20);
            while !state.0 && Instant::now() < until {
                state = opened
                    .wait_timeout(state, Duration::from_millis(50))
                    .unwrap()
                    .0;
            }
            state.1.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_line(writer: &BackgroundWriter, text: &str) {
        let mut line = writer.make_writer();
        // Written in pieces, as a formatter writes a line's fields.
        for piece in text.split_inclusive(' ') {
            line.write_all(piece.as_bytes()).unwrap();
        }
        line.write_all(b"\n").unwrap();
    }

    #[test]
    fn a_stalled_output_drops_lines_beyond_the_queue_and_says_how_many() {
        let gate = Gate::default();
        let (writer, thread) = spawn("log-test", Box::new(gate.clone()), 3).unwrap();
        // The output takes nothing meanwhile: were logging to wait for it, this would not
        // return before the gate opened (it opens only after).
        for i in 0..1000 {
            log_line(&writer, &format!("line {i} of the log"));
        }
        gate.open();
        assert!(thread.finish(Duration::from_secs(20)));
        let text = gate.text();
        let lines: Vec<&str> = text.lines().collect();
        // At most the queue's three lines and a batch at the gate (4 KiB) were kept; the rest
        // were dropped, and the notice stands where they were lost, before the next line kept.
        assert_eq!(lines.first(), Some(&"line 0 of the log"), "{text}");
        assert!(lines.len() < 300, "{text}");
        log_line(&writer, "after");
        assert!(thread.finish(Duration::from_secs(20)));
        let text = gate.text();
        // The writer may drain the queue for a while before its write stalls, so lines can be
        // lost in more than one stretch, each with its own notice; together they count every
        // line not kept.
        let dropped_counts: Vec<usize> = text
            .lines()
            .filter_map(|l| l.strip_prefix('['))
            .map(|l| {
                l.strip_suffix(" log line(s) dropped here: the log output could not keep up]")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("not a drop notice: [{l}"))
            })
            .collect();
        assert!(!dropped_counts.is_empty(), "no notice in {text}");
        let kept = text.lines().filter(|l| l.starts_with("line ")).count();
        assert_eq!(dropped_counts.iter().sum::<usize>(), 1000 - kept, "{text}");
        // The last loss (while the output stalled) is told right before "after".
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[lines.len() - 2].contains("dropped here"), "{text}");
        assert_eq!(lines[lines.len() - 1], "after", "{text}");
        // Every line kept is whole and in order.
        let numbers: Vec<usize> = text
            .lines()
            .filter_map(|l| l.strip_prefix("line "))
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn finish_waits_for_every_queued_line() {
        let gate = Gate::default();
        gate.open();
        let (writer, thread) = spawn("log-test", Box::new(gate.clone()), QUEUED_LINES).unwrap();
        for i in 0..1000 {
            log_line(&writer, &format!("line {i}"));
        }
        assert!(thread.finish(FINISH_WAIT * 10));
        assert_eq!(gate.text().lines().count(), 1000);
    }
}

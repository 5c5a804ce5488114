//! The engine child process: spawning it in its own process group (in its own folder if asked),
//! reading its stdout as capped lines (a last line without a newline included) and writing its
//! stdin without ever blocking the bridge, and ending it on every exit path, a panic included:
//! its quit command, a bounded wait, then SIGTERM and SIGKILL to the whole group, and reaping.
//! A `Launch` puts the engine in the server's sandbox (`crate::sandbox`) and caps what it may
//! print: stdout and stderr together, counted as they are read; a flood is cut (the engine is
//! stopped) and logged, never buffered. Its stderr is then captured rather than passed
//! through: logged at debug level, its last lines kept to quote when the engine fails.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, FramedRead};

use crate::protocol::{CappedLineCodec, Frame};

/// How long the engine may take to exit by itself after its quit command and the end of its
/// input, and again after SIGTERM, before the next step. Engines that loop forever at the end
/// of their input (Cloudict does, at full CPU) are killed after this.
pub const EXIT_GRACE: Duration = Duration::from_millis(300);

/// How many of the engine's last stderr lines are kept to quote when it fails.
pub const STDERR_TAIL_LINES: usize = 6;

/// How the bridge starts each engine beyond its command (`arena connect` uses the default:
/// the command alone, stderr passed through, no output cap).
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// Words put before the engine's command: `arena engine-exec LIMITS --`, or the sandbox's
    /// `bwrap … -- /.arena/arena engine-exec LIMITS --`.
    pub wrapper: Vec<String>,
    /// The sandbox, whose user and open folders the spawn sets up.
    pub jail: Option<Arc<crate::sandbox::Jail>>,
    /// Most bytes the engine may print on stdout and stderr together in one run; with a cap,
    /// stderr is captured instead of passed through.
    pub output_cap: Option<u64>,
}

/// Something the engine printed, or why its output stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineOutput {
    Line(String),
    /// A line longer than the cap (skipped).
    TooLong,
    /// A line that is not UTF-8 (skipped).
    NotUtf8,
    /// The engine closed its stdout (it exited or crashed, usually).
    Closed,
    /// Reading failed.
    ReadError(String),
}

/// What `next_event` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    Output(EngineOutput),
    /// The engine process exited (the text describes its status).
    Exited(String),
}

/// Why the engine could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("no engine command given (put it after `--`)")]
    NoCommand,
    #[error("cannot start engine {command:?}: {source}")]
    Io {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot start engine {command:?}: its folder {} is not a folder", .dir.display())]
    NoFolder { command: String, dir: PathBuf },
}

/// A running engine. Dropping it kills its process group; `shutdown` does it politely first.
pub struct EngineProcess {
    child: Child,
    /// The process group id (the child's pid, as it leads its own group).
    pgid: Option<i32>,
    output: mpsc::Receiver<EngineOutput>,
    input: Option<mpsc::UnboundedSender<String>>,
    /// Set once `child.wait()` has returned: the child is reaped.
    exit: Option<ExitStatus>,
    /// Its last lines on stderr, when stderr is captured.
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl EngineProcess {
    /// Starts `command[0]` in the current folder; see `spawn_in`.
    pub fn spawn(command: &[String], max_line: usize) -> Result<EngineProcess, SpawnError> {
        EngineProcess::spawn_in(command, None, max_line)
    }

    /// Starts `command[0]` with the remaining arguments, stdin/stdout piped, stderr passed
    /// through, in a new process group, in folder `cwd` if given (a relative program path
    /// with a `/`, like `./engine`, is then taken from that folder). Lines longer than
    /// `max_line` bytes are reported as `TooLong`.
    pub fn spawn_in(
        command: &[String],
        cwd: Option<&Path>,
        max_line: usize,
    ) -> Result<EngineProcess, SpawnError> {
        EngineProcess::spawn_launched(command, cwd, max_line, &Launch::default())
    }

    /// `spawn_in` with `launch`'s wrapper before the command (then `cwd` is the wrapper's
    /// business and not used), its sandbox set up, and its output cap.
    pub fn spawn_launched(
        command: &[String],
        cwd: Option<&Path>,
        max_line: usize,
        launch: &Launch,
    ) -> Result<EngineProcess, SpawnError> {
        if command.is_empty() {
            return Err(SpawnError::NoCommand);
        }
        let line: Vec<String> = launch.wrapper.iter().chain(command).cloned().collect();
        let cwd = if launch.wrapper.is_empty() { cwd } else { None };
        let (program, args) = line.split_first().ok_or(SpawnError::NoCommand)?;
        let mut cmd = match cwd {
            Some(dir) => {
                if !dir.is_dir() {
                    return Err(SpawnError::NoFolder {
                        command: command.join(" "),
                        dir: dir.to_path_buf(),
                    });
                }
                let path = Path::new(program);
                let mut cmd = if path.is_relative() && program.contains('/') {
                    Command::new(dir.join(path))
                } else {
                    Command::new(program)
                };
                cmd.current_dir(dir);
                cmd
            }
            None => Command::new(program),
        };
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if launch.output_cap.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .kill_on_drop(true)
            .process_group(0);
        if let Some(jail) = &launch.jail {
            jail.prepare(&mut cmd);
        }
        let mut child = cmd.spawn().map_err(|source| SpawnError::Io {
            command: command.join(" "),
            source,
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let printed = Arc::new(AtomicU64::new(0));
        let cap = launch.output_cap.unwrap_or(u64::MAX);
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let (out_tx, output) = mpsc::channel(64);
        if let Some(stdout) = child.stdout.take() {
            let stdout = Counted::new(stdout, printed.clone(), cap);
            tokio::spawn(read_lines(stdout, max_line, out_tx));
        }
        if let Some(stderr) = child.stderr.take() {
            let stderr = Counted::new(stderr, printed, cap);
            tokio::spawn(read_stderr(stderr, max_line, stderr_tail.clone(), pgid));
        }
        let input = child.stdin.take().map(|stdin| {
            let (in_tx, in_rx) = mpsc::unbounded_channel();
            tokio::spawn(write_lines(stdin, in_rx));
            in_tx
        });
        tracing::debug!(?pgid, "started engine {:?}", command.join(" "));
        Ok(EngineProcess {
            child,
            pgid,
            output,
            input,
            exit: None,
            stderr_tail,
        })
    }

    /// Its last lines on stderr (cut), oldest first, when stderr is captured.
    pub fn stderr_tail(&self) -> Vec<String> {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect()
    }

    /// The engine's pid (also its process group id).
    pub fn pid(&self) -> Option<i32> {
        self.pgid
    }

    /// Queues one line (a `\n` is added) for the engine's stdin. Never blocks: a writer task
    /// does the writing. Returns false if the engine's stdin is already closed.
    pub fn send(&self, line: &str) -> bool {
        tracing::trace!("to engine: {line}");
        match &self.input {
            Some(tx) => tx.send(format!("{line}\n")).is_ok(),
            None => false,
        }
    }

    /// The next thing the engine printed. Cancel-safe. After `Closed` it keeps returning
    /// `Closed`.
    pub async fn next_output(&mut self) -> EngineOutput {
        self.output.recv().await.unwrap_or(EngineOutput::Closed)
    }

    /// The next output line, or the engine's exit (reported once; output that is still
    /// buffered keeps coming afterwards). Cancel-safe.
    pub async fn next_event(&mut self) -> EngineEvent {
        if self.exit.is_some() {
            return EngineEvent::Output(self.next_output().await);
        }
        tokio::select! {
            biased;
            output = self.output.recv() => EngineEvent::Output(output.unwrap_or(EngineOutput::Closed)),
            status = self.child.wait() => match status {
                Ok(status) => {
                    self.exit = Some(status);
                    EngineEvent::Exited(status.to_string())
                }
                Err(e) => EngineEvent::Exited(e.to_string()),
            },
        }
    }

    /// Waits for the engine to exit (and reaps it). Cancel-safe.
    pub async fn wait_exit(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.exit {
            return Ok(status);
        }
        let status = self.child.wait().await?;
        self.exit = Some(status);
        Ok(status)
    }

    /// Its exit status if it exits within `wait` (reaped), else `None`.
    pub async fn wait_exit_within(&mut self, wait: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(wait, self.wait_exit())
            .await
            .ok()?
            .ok()
    }

    /// Ends the engine without a quit command; see `shutdown_with`.
    pub async fn shutdown(self) {
        self.shutdown_with(None).await;
    }

    /// Ends the engine: sends `quit` (its protocol's quit command, if it has one) and closes
    /// its stdin, gives it `EXIT_GRACE` to exit, sends SIGTERM to its group, waits
    /// `EXIT_GRACE` again, then SIGKILLs the group, and reaps the child. Whatever else is left
    /// in the group (grandchildren) is killed too. Bounded in time.
    pub async fn shutdown_with(mut self, quit: Option<&str>) {
        if let (Some(line), None) = (quit, self.exit) {
            self.send(line);
        }
        self.input = None;
        if self.exit.is_none() {
            if let Ok(Ok(status)) = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
                self.exit = Some(status);
            }
        }
        if self.exit.is_none() {
            self.signal_group(libc::SIGTERM);
            if let Ok(Ok(status)) = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
                self.exit = Some(status);
            }
        }
        // Even when the leader is gone, members it left behind are still in the group.
        self.signal_group(libc::SIGKILL);
        if self.exit.is_none() {
            match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
                Ok(Ok(status)) => self.exit = Some(status),
                Ok(Err(e)) => tracing::warn!("waiting for the engine failed: {e}"),
                Err(_) => tracing::warn!("the engine did not exit even after SIGKILL"),
            }
        }
        tracing::debug!(pgid = ?self.pgid, status = ?self.exit, "engine stopped");
        // Reaped: nothing left for Drop to do.
        self.pgid = None;
    }

    fn signal_group(&self, signal: libc::c_int) {
        if let Some(pgid) = self.pgid {
            if pgid > 1 {
                // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH,
                // which is fine to ignore.
                unsafe {
                    libc::killpg(pgid, signal);
                }
            }
        }
    }
}

impl Drop for EngineProcess {
    /// The guard for every path that does not call `shutdown` (errors, panics): SIGKILL the
    /// whole group at once. `kill_on_drop` kills the child too, and tokio reaps it in the
    /// background.
    fn drop(&mut self) {
        self.signal_group(libc::SIGKILL);
        if self.exit.is_none() {
            let _ = self.child.start_kill();
            // Reap right away if it is already gone; otherwise tokio's orphan reaper does.
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exit = Some(status);
            }
        }
    }
}

/// A pipe from the engine whose bytes are added to a count shared by its stdout and stderr;
/// past the cap, reading fails with an error that says so.
struct Counted<R> {
    inner: R,
    printed: Arc<AtomicU64>,
    cap: u64,
}

impl<R> Counted<R> {
    fn new(inner: R, printed: Arc<AtomicU64>, cap: u64) -> Counted<R> {
        Counted {
            inner,
            printed,
            cap,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let read = (buf.filled().len() - before) as u64;
            let printed = self.printed.fetch_add(read, Ordering::Relaxed) + read;
            if printed > self.cap {
                return Poll::Ready(Err(std::io::Error::other(format!(
                    "the engine printed more than its {} MiB of output (stdout and stderr); cut",
                    self.cap >> 20
                ))));
            }
        }
        polled
    }
}

/// Reads the engine's stderr: each line logged at debug level and kept among the last
/// `STDERR_TAIL_LINES`; past the output cap the engine's process group is killed.
async fn read_stderr<R: AsyncRead + Unpin>(
    stderr: R,
    max_line: usize,
    tail: Arc<Mutex<VecDeque<String>>>,
    pgid: Option<i32>,
) {
    let mut frames = FramedRead::new(stderr, EngineLineCodec::new(max_line));
    while let Some(frame) = frames.next().await {
        let line = match frame {
            Ok(Frame::Line(line)) => super::cut(&line, super::CHATTER_LINE_CHARS),
            Ok(Frame::TooLong) => format!("(a line longer than {max_line} bytes)"),
            Ok(Frame::NotUtf8) => "(a line that is not UTF-8)".to_string(),
            Err(e) => {
                tracing::warn!(?pgid, "{e}; the engine is stopped");
                if let Some(pgid) = pgid.filter(|&p| p > 1) {
                    // SAFETY: killpg only sends a signal to the engine's own group.
                    unsafe {
                        libc::killpg(pgid, libc::SIGKILL);
                    }
                }
                return;
            }
        };
        tracing::debug!("engine stderr: {}", crate::log_text::client_text(&line));
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

async fn read_lines<R: AsyncRead + Unpin>(
    stdout: R,
    max_line: usize,
    tx: mpsc::Sender<EngineOutput>,
) {
    let mut frames = FramedRead::new(stdout, EngineLineCodec::new(max_line));
    loop {
        let item = match frames.next().await {
            Some(Ok(Frame::Line(line))) => EngineOutput::Line(line),
            Some(Ok(Frame::TooLong)) => EngineOutput::TooLong,
            Some(Ok(Frame::NotUtf8)) => EngineOutput::NotUtf8,
            Some(Err(e)) => EngineOutput::ReadError(e.to_string()),
            None => EngineOutput::Closed,
        };
        let last = matches!(item, EngineOutput::Closed | EngineOutput::ReadError(_));
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

/// Capped lines like the referee link's, except that a last line the engine ends without a
/// newline (Cloudict's `We loss!`) still counts when its output closes.
struct EngineLineCodec {
    lines: CappedLineCodec,
    max_line: usize,
}

impl EngineLineCodec {
    fn new(max_line: usize) -> EngineLineCodec {
        EngineLineCodec {
            lines: CappedLineCodec::new(max_line),
            max_line,
        }
    }
}

impl Decoder for EngineLineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        self.lines.decode(buf)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.lines.decode(buf)? {
            return Ok(Some(frame));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // The unterminated rest: end it with a newline and let the line codec judge it.
        if buf.len() > self.max_line {
            buf.clear();
            self.lines = CappedLineCodec::new(self.max_line);
            return Ok(Some(Frame::TooLong));
        }
        buf.extend_from_slice(b"\n");
        let frame = self.lines.decode(buf)?;
        buf.clear();
        Ok(frame)
    }
}

async fn write_lines(mut stdin: ChildStdin, mut rx: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = rx.recv().await {
        if let Err(e) = stdin.write_all(line.as_bytes()).await {
            tracing::debug!("writing to the engine failed: {e}");
            return;
        }
        if stdin.flush().await.is_err() {
            return;
        }
    }
    // Channel closed: dropping stdin closes the engine's input.
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[tokio::test]
    async fn lines_round_trip_and_shutdown_kills_the_group() {
        let cmd: Vec<String> = [
            "sh",
            "-c",
            "sleep 1000 & echo $!; while read l; do echo \"got $l\"; done; sleep 1000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut engine = EngineProcess::spawn(&cmd, 1024).unwrap();
        let pid = engine.pid().unwrap();
        let EngineOutput::Line(grandchild) = engine.next_output().await else {
            panic!("expected the grandchild's pid");
        };
        let grandchild: i32 = grandchild.trim().parse().unwrap();
        assert!(engine.send("hi"));
        assert_eq!(
            engine.next_output().await,
            EngineOutput::Line("got hi".into())
        );
        assert!(alive(pid) && alive(grandchild));
        engine.shutdown().await;
        assert!(!alive(pid), "engine still there");
        // The grandchild is not our child: once killed, it is init's to reap (and init may
        // take its time), so a zombie counts as gone.
        let running = |pid: i32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            alive(pid) && !stat.is_empty() && !stat.contains(") Z ")
        };
        for _ in 0..50 {
            if !running(grandchild) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!running(grandchild), "grandchild still running");
    }

    #[tokio::test]
    async fn dropping_kills_the_group() {
        let cmd: Vec<String> = ["sh", "-c", "echo ready; sleep 1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut engine = EngineProcess::spawn(&cmd, 1024).unwrap();
        let pid = engine.pid().unwrap();
        assert_eq!(
            engine.next_output().await,
            EngineOutput::Line("ready".into())
        );
        drop(engine);
        let mut gone = false;
        for _ in 0..100 {
            // After SIGKILL the child is a zombie until reaped; waitpid here would race tokio's
            // reaper, so accept either "gone" or "zombie" via /proc.
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty() || state.contains(") Z ") {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "engine survived its drop");
    }

    #[tokio::test]
    async fn a_last_line_without_newline_counts_and_the_folder_is_the_engines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.in"), "from its folder\n").unwrap();
        std::fs::write(
            dir.path().join("engine.sh"),
            "cat data.in; printf 'We loss!'",
        )
        .unwrap();
        let cmd: Vec<String> = ["sh", "./engine.sh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut engine = EngineProcess::spawn_in(&cmd, Some(dir.path()), 1024).unwrap();
        assert_eq!(
            engine.next_output().await,
            EngineOutput::Line("from its folder".into())
        );
        assert_eq!(
            engine.next_output().await,
            EngineOutput::Line("We loss!".into())
        );
        assert_eq!(engine.next_output().await, EngineOutput::Closed);
        engine.shutdown_with(Some("quit")).await;
        // A relative program path is taken from the engine's folder, as `./gameEngine` is.
        use std::os::unix::fs::PermissionsExt;
        let program = dir.path().join("engine.sh");
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(&program, "#!/bin/sh\ncat data.in\n").unwrap();
        let relative = vec!["./engine.sh".to_string()];
        let mut engine = EngineProcess::spawn_in(&relative, Some(dir.path()), 1024).unwrap();
        assert_eq!(
            engine.next_output().await,
            EngineOutput::Line("from its folder".into())
        );
        engine.shutdown().await;
        let missing = dir.path().join("missing");
        assert!(matches!(
            EngineProcess::spawn_in(&cmd, Some(&missing), 1024),
            Err(SpawnError::NoFolder { .. })
        ));
    }

    #[tokio::test]
    async fn quit_is_sent_before_the_input_closes() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let script = format!(
            "while read l; do echo \"$l\" >> {}; done; exit 0",
            log.display()
        );
        let cmd: Vec<String> = vec!["sh".into(), "-c".into(), script];
        let engine = EngineProcess::spawn(&cmd, 1024).unwrap();
        engine.shutdown_with(Some("quit")).await;
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "quit\n");
    }

    #[tokio::test]
    async fn oversized_and_closed_output_is_reported() {
        let cmd: Vec<String> = ["sh", "-c", "printf '%0100d\\nok\\n' 0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut engine = EngineProcess::spawn(&cmd, 10).unwrap();
        assert_eq!(engine.next_output().await, EngineOutput::TooLong);
        assert_eq!(engine.next_output().await, EngineOutput::Line("ok".into()));
        assert_eq!(engine.next_output().await, EngineOutput::Closed);
        assert_eq!(engine.next_output().await, EngineOutput::Closed);
        assert!(engine.wait_exit().await.unwrap().success());
        engine.shutdown().await;
    }
}

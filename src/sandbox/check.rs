//! `arena sandbox-check`: runs one engine command in the sandbox a `program` bot gets (same
//! namespaces, filesystem and limits), its stdin passed through and its output shown, for a
//! bounded time, then reports what it could not do: files it was denied or that are not in the
//! sandbox, network it tried to reach, limits it hit (each failed call traced with `strace`
//! when it is installed), and how it ended.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Sandbox, SandboxError, SandboxLimits};

/// Most findings reported (the rest are counted).
const MOST_FINDINGS: usize = 40;
/// Most bytes of strace output read.
const MOST_TRACE_BYTES: usize = 16 << 20;
/// Folders whose missing files are the system's own lookups (libraries, Python's search
/// path, its user site in `HOME=/tmp`), not something the engine was refused.
const SYSTEM_PREFIXES: [&str; 10] = [
    "/usr/",
    "/lib",
    "/etc/",
    "/proc/",
    "/sys/",
    "/dev/",
    "/bin/",
    "/sbin/",
    "/.arena/",
    "/tmp/.local/",
];

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub command: Vec<String>,
    /// The engine's folder (shown at `/engine`).
    pub dir: Option<PathBuf>,
    pub limits: SandboxLimits,
    /// How long it may run before it is stopped.
    pub time_limit: Duration,
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// How it ended ("exited with status 0", "killed by signal 25 (SIGXFSZ: …)", …).
    pub ended: String,
    /// One line per thing it could not do, in the order first seen.
    pub findings: Vec<String>,
    /// Findings beyond `MOST_FINDINGS`, not listed.
    pub more: usize,
    /// Whether its calls were traced (strace found); without, only limits that end it show.
    pub traced: bool,
}

/// Runs the check: the command in `sandbox` (with `exe`'s `engine-exec` setting the limits),
/// stdin from ours, stdout and stderr shown on ours up to the output cap.
pub async fn run(
    sandbox: &Sandbox,
    exe: &Path,
    options: &CheckOptions,
) -> Result<CheckReport, SandboxError> {
    let limits = &options.limits;
    let inside = crate::program::Limits {
        dir: options.dir.clone(),
        memory_mb: Some(limits.memory_mb),
        processes: Some(limits.processes),
        file_size_mb: Some(limits.file_size_mb),
        open_files: Some(limits.open_files),
        ..Default::default()
    };
    let jail = sandbox.jail(Some(exe), &inside, limits.scratch_mb, limits.tmp_mb)?;
    let spawn_error = |source: std::io::Error| SandboxError::Open {
        path: sandbox.bwrap().to_path_buf(),
        source,
    };
    let strace =
        super::find_on_path("strace").filter(|p| p.starts_with("/usr") || p.starts_with("/bin"));
    let trace_pipe = match &strace {
        Some(_) => Some(trace_pipe().map_err(spawn_error)?),
        None => None,
    };
    let mut line: Vec<String> = jail.wrapper().to_vec();
    if let (Some(strace), Some((_, write))) = (&strace, &trace_pipe) {
        line.push(strace.display().to_string());
        line.extend(
            ["-f", "-qq", "-e", "status=failed", "-o"]
                .iter()
                .map(|w| w.to_string()),
        );
        line.push(format!("/dev/fd/{}", write.as_raw_fd()));
        line.push("--".into());
    }
    line.extend(options.command.iter().cloned());
    let mut command = tokio::process::Command::new(&line[0]);
    command
        .args(&line[1..])
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    jail.prepare(&mut command);
    if let Some((_, write)) = &trace_pipe {
        let fd = write.as_raw_fd();
        // SAFETY: fcntl is async-signal-safe; the descriptor stays open until the spawn.
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = command.spawn().map_err(spawn_error)?;
    let trace = trace_pipe.map(|(read, write)| {
        drop(write);
        tokio::spawn(read_trace(read))
    });
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    let cap = limits.output_bytes();
    let stdout = child
        .stdout
        .take()
        .map(|out| tokio::spawn(copy_capped(out, tokio::io::stdout(), cap)));
    let stderr = child
        .stderr
        .take()
        .map(|err| tokio::spawn(copy_capped(err, tokio::io::stderr(), cap)));
    let mut findings = Findings::default();
    let status = match tokio::time::timeout(options.time_limit, child.wait()).await {
        Ok(status) => Some(status.map_err(spawn_error)?),
        Err(_) => None,
    };
    let stopped = status.is_none();
    if let Some(group) = group.filter(|&g| g > 1) {
        // SAFETY: killpg only sends a signal to the sandbox's own group.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
    let status = match status {
        Some(status) => status,
        None => child.wait().await.map_err(spawn_error)?,
    };
    for copy in [stdout, stderr].into_iter().flatten() {
        if let Ok(true) = copy.await {
            findings.add(format!(
                "output: it printed more than {} MiB on stdout and stderr (the output limit): a game would stop it there",
                limits.output_mb
            ));
        }
    }
    let traced = trace.is_some();
    if let Some(trace) = trace {
        for line in trace.await.unwrap_or_default().lines() {
            if let Some(finding) = classify(line, limits) {
                findings.add(finding);
            }
        }
    }
    // bwrap exits with 128 + the signal that ended the engine.
    let signal = status
        .signal()
        .or_else(|| status.code().filter(|&c| c > 128).map(|c| c - 128));
    let ended = match (stopped, signal, status.code()) {
        (true, _, _) => format!(
            "still running after {} s: stopped (an engine waiting for its input is normal)",
            options.time_limit.as_secs()
        ),
        (false, Some(signal), _) => {
            format!("killed by signal {signal}{}", signal_meaning(signal))
        }
        (false, None, Some(code)) => format!("exited with status {code}"),
        (false, None, None) => status.to_string(),
    };
    Ok(CheckReport {
        ended,
        more: findings.more,
        findings: findings.list,
        traced,
    })
}

/// What a signal that ended an engine usually means in the sandbox.
fn signal_meaning(signal: i32) -> &'static str {
    match signal {
        libc::SIGXFSZ => " (SIGXFSZ: it wrote a file larger than the file size limit)",
        libc::SIGSEGV => " (SIGSEGV: a crash, or memory it could not get under the memory limit)",
        libc::SIGABRT => {
            " (SIGABRT: it aborted, often after an allocation failed under the memory limit)"
        }
        libc::SIGPIPE => " (SIGPIPE: it wrote to a closed pipe)",
        _ => "",
    }
}

/// The findings so far, without repeats, at most `MOST_FINDINGS` listed.
#[derive(Default)]
struct Findings {
    seen: BTreeSet<String>,
    list: Vec<String>,
    more: usize,
}

impl Findings {
    fn add(&mut self, finding: String) {
        if !self.seen.insert(finding.clone()) {
            return;
        }
        if self.list.len() < MOST_FINDINGS {
            self.list.push(finding);
        } else {
            self.more += 1;
        }
    }
}

/// A pipe for strace's report: its write end readable and writable by anyone, since the
/// unprivileged sandbox user reopens it through `/dev/fd`.
fn trace_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors it is given; each is owned once wrapped.
    let (read, write) = unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    // SAFETY: fchmod only changes the mode of the pipe just made.
    if unsafe { libc::fchmod(write.as_raw_fd(), 0o666) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((read, write))
}

/// strace's whole report (up to `MOST_TRACE_BYTES`).
async fn read_trace(read: OwnedFd) -> String {
    let mut text = Vec::new();
    let file = tokio::fs::File::from_std(std::fs::File::from(read));
    let _ = file
        .take(MOST_TRACE_BYTES as u64)
        .read_to_end(&mut text)
        .await;
    String::from_utf8_lossy(&text).into_owned()
}

/// Copies `from` to `to` until the end or the cap; returns whether the cap was reached.
async fn copy_capped(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    cap: u64,
) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    let mut copied = 0u64;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        copied += n as u64;
        if copied > cap {
            return true;
        }
        if to.write_all(&buf[..n]).await.is_err() || to.flush().await.is_err() {
            return false;
        }
    }
}

/// What one line of strace's report (a failed call) says the engine could not do, if it is
/// worth telling.
fn classify(line: &str, limits: &SandboxLimits) -> Option<String> {
    let (call, rest) = line
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ')
        .split_once('(')?;
    let errno = rest
        .rsplit_once("= -1 ")?
        .1
        .split_whitespace()
        .next()?
        .to_string();
    let path = rest.split('"').nth(1).unwrap_or("");
    let file_call = matches!(
        call,
        "open"
            | "openat"
            | "openat2"
            | "creat"
            | "mkdir"
            | "mkdirat"
            | "unlink"
            | "unlinkat"
            | "rename"
            | "renameat"
            | "renameat2"
            | "execve"
            | "stat"
            | "newfstatat"
            | "statx"
            | "access"
            | "faccessat"
            | "faccessat2"
            | "chdir"
            | "readlink"
            | "truncate"
    );
    match errno.as_str() {
        "EACCES" | "EPERM" | "EROFS" if file_call => Some(format!(
            "file: {call} {path:?} refused ({errno}): {}",
            if errno == "EROFS" {
                "read-only in the sandbox (a writable copy of the folder needs `scratch_mb`)"
            } else {
                "not readable or writable by the sandbox's user"
            }
        )),
        "ENOENT"
            if file_call
                && !path.is_empty()
                && !SYSTEM_PREFIXES.iter().any(|p| path.starts_with(p)) =>
        {
            Some(format!(
                "file: {call} {path:?}: not found (the sandbox shows only the system's folders, the engine's folder at /engine and a private /tmp)"
            ))
        }
        "ENETUNREACH" | "ECONNREFUSED" | "EHOSTUNREACH" | "EADDRNOTAVAIL" | "EAFNOSUPPORT"
            if matches!(call, "connect" | "sendto" | "sendmsg" | "bind" | "socket") =>
        {
            Some(format!(
                "network: {call} {} failed ({errno}): the sandbox has no network",
                address_in(rest)
            ))
        }
        "EAGAIN" if matches!(call, "clone" | "clone3" | "fork" | "vfork") => Some(format!(
            "limit: a new process or thread was refused ({call}: EAGAIN): the process limit is {}",
            limits.processes
        )),
        "ENOMEM" if matches!(call, "mmap" | "brk" | "mremap" | "clone" | "clone3") => {
            Some(format!(
                "limit: memory refused ({call}: ENOMEM): the memory limit is {} MiB",
                limits.memory_mb
            ))
        }
        "EFBIG" => Some(format!(
            "limit: a file grew past the file size limit of {} MiB ({call}: EFBIG)",
            limits.file_size_mb
        )),
        "ENOSPC" => Some(format!(
            "limit: its writable folder or /tmp is full ({call}: ENOSPC; /tmp holds {} MiB)",
            limits.tmp_mb
        )),
        "EMFILE" => Some(format!(
            "limit: too many open files ({call}: EMFILE): the limit is {}",
            limits.open_files
        )),
        _ => None,
    }
}

/// The address in a traced `connect`/`sendto` (`127.0.0.1:7878`), or "".
fn address_in(args: &str) -> String {
    let port = args
        .split("htons(")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or("");
    let host = args
        .split("inet_addr(\"")
        .nth(1)
        .or_else(|| args.split("inet_pton(AF_INET6, \"").nth(1))
        .and_then(|r| r.split('"').next())
        .unwrap_or("");
    match (host.is_empty(), port.is_empty()) {
        (false, false) => format!("to {host}:{port}"),
        (false, true) => format!("to {host}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SandboxLimits {
        crate::config::ProgramsConfig::default().default_limits()
    }

    #[test]
    fn failed_calls_are_told_as_what_the_engine_could_not_do() {
        let l = limits();
        let said = |line: &str| classify(line, &l);
        assert_eq!(
            said(r#"12 openat(AT_FDCWD, "/root/arena.toml", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)"#).unwrap(),
            "file: openat \"/root/arena.toml\": not found (the sandbox shows only the system's folders, the engine's folder at /engine and a private /tmp)"
        );
        assert!(said(r#"openat(AT_FDCWD, "out.txt", O_WRONLY|O_CREAT, 0666) = -1 EROFS (Read-only file system)"#)
            .unwrap()
            .contains("scratch_mb"));
        assert_eq!(
            said(r#"7 connect(3, {sa_family=AF_INET, sin_port=htons(7878), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ECONNREFUSED (Connection refused)"#).unwrap(),
            "network: connect to 127.0.0.1:7878 failed (ECONNREFUSED): the sandbox has no network"
        );
        assert!(said("9 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = -1 EAGAIN (Resource temporarily unavailable)")
            .unwrap()
            .contains("the process limit is 64"));
        assert!(said("mmap(NULL, 10737422336, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = -1 ENOMEM (Cannot allocate memory)")
            .unwrap()
            .contains("memory limit is 2048 MiB"));
        // The system's own lookups are not findings.
        assert_eq!(
            said(
                r#"openat(AT_FDCWD, "/usr/lib/python311.zip", O_RDONLY) = -1 ENOENT (No such file or directory)"#
            ),
            None
        );
        assert_eq!(said("+++ exited with 0 +++"), None);
    }
}

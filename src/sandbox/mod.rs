//! The sandbox `program` bots run in (docs/security.md): bubblewrap (`bwrap`) starts each
//! engine process in namespaces of its own (user, PID, network, IPC, UTS, mount), as an
//! unprivileged user, on a minimal read-only filesystem (the system's programs and libraries,
//! its own folder, a small private `/tmp`), and `arena engine-exec` inside sets the limits
//! (memory, processes, file size, open files) before it executes the engine. This module probes
//! the machine (`Sandbox::probe`) and builds one bot's sandbox (`Jail`); spawning the engine,
//! capping its output and capturing its stderr are the bridge's (`crate::bridge::child`);
//! `check` is `arena sandbox-check`.

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;

use crate::program::Limits;

pub mod check;

/// Which sandbox runs `program` bots (`[programs] sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// The best this machine offers (today: bubblewrap); the server refuses to start program
    /// bots when there is none.
    #[default]
    Auto,
    /// Bubblewrap.
    Bwrap,
    /// No sandbox: programs run with the server's rights (warned about at every start).
    None,
}

impl SandboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::Auto => "auto",
            SandboxKind::Bwrap => "bwrap",
            SandboxKind::None => "none",
        }
    }
}

impl fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxKind {
    type Err = String;
    fn from_str(s: &str) -> Result<SandboxKind, String> {
        match s {
            "auto" => Ok(SandboxKind::Auto),
            "bwrap" => Ok(SandboxKind::Bwrap),
            "none" => Ok(SandboxKind::None),
            _ => Err(format!(
                "unknown sandbox {s:?} (expected auto, bwrap or none)"
            )),
        }
    }
}

/// Why a sandbox cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "program bots run in a sandbox, and its tool, bubblewrap (`bwrap`), is not installed: \
         install it (Debian, Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install \
         bubblewrap`; Arch: `pacman -S bubblewrap`), or write `sandbox = \"none\"` in the \
         config's [programs] table to run the programs unconfined"
    )]
    NoBwrap,
    #[error(
        "bubblewrap ({bwrap}) cannot make a sandbox on this machine: {why}. It needs user \
         namespaces: check `sysctl user.max_user_namespaces` (above 0), \
         `kernel.unprivileged_userns_clone` (1, older Debian) and, on Ubuntu 24.04 and later, \
         the AppArmor profile that lets bwrap use them \
         (`kernel.apparmor_restrict_unprivileged_userns`); inside a container, run it with \
         user namespaces allowed. Or write `sandbox = \"none\"` in [programs] to run the \
         programs unconfined"
    )]
    Unusable { bwrap: String, why: String },
    #[error("cannot open {} for the sandbox: {source}", .path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The limits one engine runs under in the sandbox (defaults in `[programs]`, per bot
/// overrides in `[[bot]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    pub memory_mb: u64,
    pub processes: u64,
    pub file_size_mb: u64,
    pub open_files: u64,
    /// Stdout and stderr together, per engine run.
    pub output_mb: u64,
    /// The private `/tmp`.
    pub tmp_mb: u64,
    /// A private writable copy of the engine's folder of this size, if given.
    pub scratch_mb: Option<u64>,
}

impl SandboxLimits {
    /// The output cap in bytes.
    pub fn output_bytes(&self) -> u64 {
        self.output_mb.saturating_mul(1 << 20)
    }
}

/// The user a sandboxed engine runs as when the server is root: `nobody`.
pub const UNPRIVILEGED_ID: u32 = 65534;
/// Where the engine's folder is inside the sandbox.
pub const ENGINE_DIR: &str = "/engine";
/// Where the `arena` binary (for `engine-exec`) is inside the sandbox.
const INSIDE_EXE: &str = "/.arena/arena";
/// Where a writable folder's original is, read-only, while it is copied.
const INSIDE_ORIGINAL: &str = "/.arena/original";
/// How long the probe's trial sandbox may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The system folders the sandbox shows (read-only; a symbolic link stays a link).
const SYSTEM_DIRS: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Entries of `/etc` the dynamic loader and interpreters need (Debian's `java` is a link
/// through `/etc/alternatives`); names starting with `java` or `python` are shown too.
const ETC_ENTRIES: [&str; 6] = [
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "mime.types",
];

/// A usable sandbox on this machine.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: PathBuf,
    /// The user and group bwrap is started as: `nobody` when the server is root, so that
    /// the engine is an unprivileged user outside its namespace too.
    user: Option<(u32, u32)>,
}

impl Sandbox {
    /// The sandbox `kind` asks for, tried once with `true` inside: `None` for `none`, an error
    /// saying what is missing and how to install it when this machine has none.
    pub async fn probe(kind: SandboxKind) -> Result<Option<Sandbox>, SandboxError> {
        if kind == SandboxKind::None {
            return Ok(None);
        }
        let bwrap = find_on_path("bwrap").ok_or(SandboxError::NoBwrap)?;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let sandbox = Sandbox {
            bwrap,
            user: root.then_some((UNPRIVILEGED_ID, UNPRIVILEGED_ID)),
        };
        let unusable = |why: String| SandboxError::Unusable {
            bwrap: sandbox.bwrap.display().to_string(),
            why,
        };
        let jail = sandbox.jail(None, &Limits::default(), None, 1)?;
        let mut command = tokio::process::Command::new(&sandbox.bwrap);
        command
            .args(&jail.arguments)
            .args(["--", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        jail.prepare(&mut command);
        let output = tokio::time::timeout(PROBE_TIMEOUT, command.output())
            .await
            .map_err(|_| {
                unusable(format!(
                    "a trial sandbox did not end within {PROBE_TIMEOUT:?}"
                ))
            })?
            .map_err(|e| unusable(e.to_string()))?;
        if !output.status.success() {
            let said = String::from_utf8_lossy(&output.stderr);
            return Err(unusable(format!(
                "a trial sandbox failed ({}): {}",
                output.status,
                said.trim()
            )));
        }
        Ok(Some(sandbox))
    }

    /// The path of the `bwrap` program used.
    pub fn bwrap(&self) -> &Path {
        &self.bwrap
    }

    /// One bot's sandbox: `exe` (this program, for `engine-exec`; `None`: the command runs
    /// directly, as the probe's `true`) with the engine's `dir` shown at `/engine` (read-only,
    /// or copied into a private folder of `scratch_mb`), a private `/tmp` of `tmp_mb`, and
    /// `limits` set inside. The folders are opened here, as the server's user, so that the
    /// unprivileged sandbox reaches them whatever the permissions of the folders above them.
    pub fn jail(
        &self,
        exe: Option<&Path>,
        limits: &Limits,
        scratch_mb: Option<u64>,
        tmp_mb: u64,
    ) -> Result<Jail, SandboxError> {
        let open = |path: &Path| {
            std::fs::File::open(path)
                .map(OwnedFd::from)
                .map_err(|source| SandboxError::Open {
                    path: path.to_path_buf(),
                    source,
                })
        };
        let mut args: Vec<String> = Vec::new();
        let mut push = |words: &[&str]| args.extend(words.iter().map(|w| w.to_string()));
        let id = UNPRIVILEGED_ID.to_string();
        push(&["--unshare-all", "--unshare-user", "--disable-userns"]);
        push(&["--uid", &id, "--gid", &id]);
        push(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
        push(&[
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
        ]);
        push(&["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]);
        push(&["--setenv", "LANG", "C.UTF-8"]);
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        push(&["--symlink", &target.display().to_string(), dir]);
                    }
                }
                Ok(meta) if meta.is_dir() => push(&["--ro-bind", dir, dir]),
                _ => {}
            }
        }
        for entry in etc_entries() {
            push(&["--ro-bind-try", &entry, &entry]);
        }
        let tmp = (tmp_mb.saturating_mul(1 << 20)).to_string();
        push(&["--dev", "/dev", "--proc", "/proc"]);
        push(&["--size", &tmp, "--tmpfs", "/tmp"]);
        push(&[
            "--size",
            &tmp,
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
        ]);
        let mut fds = Vec::new();
        let mut inside = Limits {
            dir: None,
            copy_from: None,
            ..limits.clone()
        };
        if let Some(exe) = exe {
            let fd = open(exe)?;
            push(&["--ro-bind-fd", &fd.as_raw_fd().to_string(), INSIDE_EXE]);
            fds.push(fd);
        }
        match &limits.dir {
            Some(dir) => {
                let fd = open(dir)?;
                let number = fd.as_raw_fd().to_string();
                fds.push(fd);
                match scratch_mb {
                    Some(mb) => {
                        push(&["--ro-bind-fd", &number, INSIDE_ORIGINAL]);
                        let size = mb.saturating_mul(1 << 20).to_string();
                        push(&["--size", &size, "--tmpfs", ENGINE_DIR]);
                        inside.copy_from = Some(PathBuf::from(INSIDE_ORIGINAL));
                    }
                    None => push(&["--ro-bind-fd", &number, ENGINE_DIR]),
                }
                push(&["--chdir", ENGINE_DIR]);
                inside.dir = Some(PathBuf::from(ENGINE_DIR));
            }
            None => push(&["--chdir", "/tmp"]),
        }
        push(&["--remount-ro", "/"]);
        let mut wrapper = vec![self.bwrap.display().to_string()];
        wrapper.extend(args.iter().cloned());
        wrapper.push("--".to_string());
        if exe.is_some() {
            let mut exec = inside.wrap(Path::new(INSIDE_EXE), &[]);
            if exec.is_empty() {
                exec = vec![INSIDE_EXE.to_string(), "engine-exec".into(), "--".into()];
            }
            wrapper.extend(exec);
        }
        Ok(Jail {
            arguments: args,
            wrapper,
            fds,
            user: self.user,
        })
    }
}

/// One bot's sandbox: the command line that goes before the engine's command, and what the
/// spawn must set on the process (the user it drops to, the folders it hands in as open
/// files).
#[derive(Debug)]
pub struct Jail {
    /// bwrap's arguments alone.
    arguments: Vec<String>,
    /// `bwrap ARGUMENTS -- /.arena/arena engine-exec LIMITS --`.
    wrapper: Vec<String>,
    /// The open folders and binary bwrap binds (kept open for the bot's life).
    fds: Vec<OwnedFd>,
    user: Option<(u32, u32)>,
}

impl Jail {
    /// The words that go before the engine's command.
    pub fn wrapper(&self) -> &[String] {
        &self.wrapper
    }

    /// Sets on `command` (which starts `wrapper()`) what the sandbox needs: the unprivileged
    /// user (supplementary groups dropped) and the open folders handed to bwrap.
    pub fn prepare(&self, command: &mut tokio::process::Command) {
        if let Some((uid, gid)) = self.user {
            command.uid(uid).gid(gid);
        }
        let fds: Vec<i32> = self.fds.iter().map(AsRawFd::as_raw_fd).collect();
        // SAFETY: the closure only calls fcntl, which is async-signal-safe, on descriptors
        // this Jail keeps open; it allocates nothing.
        unsafe {
            command.pre_exec(move || {
                for &fd in &fds {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

/// The `/etc` entries a sandbox shows (those that exist).
fn etc_entries() -> Vec<String> {
    let mut entries: Vec<String> = ETC_ENTRIES.iter().map(|e| format!("/etc/{e}")).collect();
    if let Ok(dir) = std::fs::read_dir("/etc") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("java") || name.starts_with("python") {
                entries.push(format!("/etc/{name}"));
            }
        }
    }
    entries.sort();
    entries
}

/// `program` found on `PATH`, if it is there and executable.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_display() {
        for kind in [SandboxKind::Auto, SandboxKind::Bwrap, SandboxKind::None] {
            assert_eq!(kind.as_str().parse::<SandboxKind>(), Ok(kind));
        }
        assert!("nsjail".parse::<SandboxKind>().is_err());
    }

    #[test]
    fn a_jail_hides_everything_but_the_system_and_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            user: Some((UNPRIVILEGED_ID, UNPRIVILEGED_ID)),
        };
        let limits = Limits {
            dir: Some(dir.path().to_path_buf()),
            memory_mb: Some(100),
            processes: Some(8),
            ..Limits::default()
        };
        let exe = std::env::current_exe().unwrap();
        let jail = sandbox.jail(Some(&exe), &limits, Some(5), 3).unwrap();
        let line = jail.wrapper().join(" ");
        for expected in [
            "--unshare-all --unshare-user --disable-userns",
            "--uid 65534 --gid 65534",
            "--die-with-parent --new-session",
            "--size 3145728 --tmpfs /tmp",
            "--size 5242880 --tmpfs /engine",
            "--chdir /engine",
            "--remount-ro / --",
            "/.arena/arena engine-exec --dir /engine --memory-mb 100 --processes 8 --copy-from /.arena/original --",
        ] {
            assert!(line.contains(expected), "{expected:?} missing in {line}");
        }
        // Neither the server's folder nor the engine's real path is shown.
        assert!(!line.contains(&dir.path().display().to_string()), "{line}");
        assert!(!line.contains("--bind /"), "{line}");
        assert_eq!(jail.fds.len(), 2);
        let missing = Limits {
            dir: Some(dir.path().join("missing")),
            ..Limits::default()
        };
        assert!(matches!(
            sandbox.jail(None, &missing, None, 1),
            Err(SandboxError::Open { .. })
        ));
    }
}

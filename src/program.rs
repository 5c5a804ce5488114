//! Program engines: the protocol an engine speaks on stdin/stdout (`EngineProtocol`), the
//! `PROTOCOL:COMMAND` specs (`sau:./team7/engine`, `gtp:./mohex --quiet`) that `arena match`
//! and league `program` bots run through the bridge, and the limits a child engine runs under
//! (its folder, an address-space cap, the cores it may use). The limits are applied by
//! `arena engine-exec`, a hidden subcommand that sets them on itself and then executes the
//! engine in place (same pid, same process group, so the bridge's group kill still reaches it).
//! Inside the sandbox (`crate::sandbox`) the same subcommand also sets the process, file-size
//! and open-file limits and makes the private copy of a writable folder.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The protocol the engine speaks on its stdin/stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineProtocol {
    Json,
    Gtp,
    Sau,
}

impl EngineProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineProtocol::Json => "json",
            EngineProtocol::Gtp => "gtp",
            EngineProtocol::Sau => "sau",
        }
    }

    /// The games the bridge offers when `--games` is not given (json asks the engine).
    pub fn default_games(self) -> Option<Vec<String>> {
        match self {
            EngineProtocol::Json => None,
            EngineProtocol::Gtp => Some(vec!["hex".to_string()]),
            EngineProtocol::Sau => Some(vec!["connect6".to_string()]),
        }
    }
}

impl fmt::Display for EngineProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EngineProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(EngineProtocol::Json),
            "gtp" => Ok(EngineProtocol::Gtp),
            "sau" => Ok(EngineProtocol::Sau),
            _ => Err(format!(
                "unknown engine protocol {s:?} (expected json, gtp or sau)"
            )),
        }
    }
}

/// Why a program spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgramSpecError {
    #[error("{0:?}: expected PROTOCOL:COMMAND with PROTOCOL gtp, sau or json (e.g. \"sau:./engine --fast\")")]
    NoProtocol(String),
    #[error("{spec:?}: {message}")]
    Protocol { spec: String, message: String },
    #[error("{0:?}: the command is empty or its quotes do not match")]
    Command(String),
}

/// A program and the protocol it speaks on stdin/stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramSpec {
    pub protocol: EngineProtocol,
    /// The command and its arguments, split as a POSIX shell splits words (quotes and
    /// backslashes; no variables, globs or redirections).
    pub command: Vec<String>,
}

impl FromStr for ProgramSpec {
    type Err = ProgramSpecError;
    fn from_str(spec: &str) -> Result<ProgramSpec, ProgramSpecError> {
        let (protocol, command) = spec
            .split_once(':')
            .ok_or_else(|| ProgramSpecError::NoProtocol(spec.to_string()))?;
        let protocol =
            protocol
                .parse::<EngineProtocol>()
                .map_err(|message| ProgramSpecError::Protocol {
                    spec: spec.to_string(),
                    message,
                })?;
        let command = shlex::split(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| ProgramSpecError::Command(spec.to_string()))?;
        Ok(ProgramSpec { protocol, command })
    }
}

impl fmt::Display for ProgramSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self
            .command
            .iter()
            .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
            .collect();
        write!(f, "{}:{}", self.protocol, words.join(" "))
    }
}

/// What a child engine runs under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// The working folder (the command is looked up from there when it is a relative path).
    pub dir: Option<PathBuf>,
    /// Address-space limit (RLIMIT_AS) in MiB.
    pub memory_mb: Option<u64>,
    /// CPU cores the engine may run on (empty: any).
    pub cpus: Vec<usize>,
    /// Processes and threads (RLIMIT_NPROC; counted per user namespace inside the sandbox).
    pub processes: Option<u64>,
    /// Largest file it may write (RLIMIT_FSIZE), in MiB.
    pub file_size_mb: Option<u64>,
    /// Files it may have open at once (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
    /// A folder copied into `dir` before the engine starts (its private writable copy).
    pub copy_from: Option<PathBuf>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }

    /// The command line the bridge starts: `command` itself, or, with limits, `exe
    /// engine-exec [--dir D] [--memory-mb M] [--cpus 0,1] -- command…` (`exe` being this
    /// program, `arena`).
    pub fn wrap(&self, exe: &Path, command: &[String]) -> Vec<String> {
        if self.is_empty() {
            return command.to_vec();
        }
        let mut line = vec![exe.display().to_string(), "engine-exec".to_string()];
        if let Some(dir) = &self.dir {
            line.push("--dir".into());
            line.push(dir.display().to_string());
        }
        for (flag, value) in [
            ("--memory-mb", self.memory_mb),
            ("--processes", self.processes),
            ("--file-size-mb", self.file_size_mb),
            ("--open-files", self.open_files),
        ] {
            if let Some(value) = value {
                line.push(flag.into());
                line.push(value.to_string());
            }
        }
        if let Some(from) = &self.copy_from {
            line.push("--copy-from".into());
            line.push(from.display().to_string());
        }
        if !self.cpus.is_empty() {
            line.push("--cpus".into());
            line.push(
                self.cpus
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        line.push("--".into());
        line.extend(command.iter().cloned());
        line
    }

    /// Applies the limits to this process, then replaces it with `command`. Returns only on
    /// failure. The resource limits are set last, as `command` replaces this process: this
    /// program's own address space (its allocator reserves a gigabyte up front) must not meet
    /// the engine's cap while this program still allocates, and a thread of it still starting
    /// then would fail to get its stack (so `engine-exec` starts none: main.rs).
    pub fn exec(&self, command: &[String]) -> std::io::Error {
        use std::os::unix::process::CommandExt;
        let Some((program, args)) = command.split_first() else {
            return std::io::Error::other("no engine command");
        };
        if let (Some(from), Some(dir)) = (&self.copy_from, &self.dir) {
            if let Err(e) = copy_tree(from, dir) {
                return std::io::Error::new(
                    e.kind(),
                    format!("copying the folder into its writable copy: {e}"),
                );
            }
        }
        if let Some(dir) = &self.dir {
            if let Err(e) = std::env::set_current_dir(dir) {
                return std::io::Error::new(e.kind(), format!("folder {}: {e}", dir.display()));
            }
        }
        if !self.cpus.is_empty() {
            if let Err(e) = set_affinity(&self.cpus) {
                // Not fatal: an engine without pinning still plays.
                tracing::warn!(cpus = ?self.cpus, error = %e, "cannot pin the engine to its cores");
            }
        }
        let mib = |mb: u64| mb.saturating_mul(1 << 20);
        let limits: Vec<_> = [
            (libc::RLIMIT_AS, self.memory_mb.map(mib)),
            (libc::RLIMIT_NPROC, self.processes),
            (libc::RLIMIT_FSIZE, self.file_size_mb.map(mib)),
            (libc::RLIMIT_NOFILE, self.open_files),
            // No core dumps: a crash must not write its memory into the engine's folder.
            (libc::RLIMIT_CORE, self.is_sandboxed().then_some(0)),
        ]
        .into_iter()
        .filter_map(|(resource, value)| Some((resource, value? as libc::rlim_t)))
        .collect();
        let mut command = std::process::Command::new(program);
        command.args(args);
        // The limits are set in the last step before the engine replaces this process, when the
        // command is ready and nothing here allocates or starts a thread any more: this
        // program's own reserved address space (its allocator's, a thread's stack) must not
        // meet the engine's address-space cap.
        // SAFETY: the hook only calls setrlimit, which reads the structs passed and allocates
        // nothing.
        unsafe {
            command.pre_exec(move || {
                for &(resource, value) in &limits {
                    let limit = libc::rlimit {
                        rlim_cur: value,
                        rlim_max: value,
                    };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        command.exec()
    }
}

impl Limits {
    /// Whether these are a sandbox's limits (it sets the process limit, which only counts the
    /// engine's own processes inside the sandbox's user namespace).
    fn is_sandboxed(&self) -> bool {
        self.processes.is_some()
    }
}

/// Copies the folder `from` into the existing folder `to`: files with their permissions,
/// folders, symbolic links as links. Fails on the first error (a full scratch folder gives
/// "No space left on device").
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
            std::fs::set_permissions(&target, entry.metadata()?.permissions())?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Pins the calling thread (and the processes it starts later) to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    set_thread_affinity(0, cpus)
}

/// Pins thread `tid` of this process (0: the calling thread) to `cpus`; threads and processes
/// it starts later inherit it. Allocates nothing (it may run in a `pre_exec` hook).
#[cfg(target_os = "linux")]
pub fn set_thread_affinity(tid: libc::pid_t, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it for indices below
    // CPU_SETSIZE (checked), and sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut set);
            }
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Pins thread `tid` of this process (0: the calling thread) to `cpus`.
#[cfg(not(target_os = "linux"))]
pub fn set_thread_affinity(_tid: i32, _cpus: &[usize]) -> std::io::Result<()> {
    Err(std::io::Error::other("CPU affinity is only set on Linux"))
}

/// The cores this process may use, in order (at least one entry; `[0]` when unknown).
pub fn available_cores() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_getaffinity fills the zeroed set it is given; CPU_ISSET reads inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let cores: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
            if !cores.is_empty() {
                return cores;
            }
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_split_as_a_shell_does_and_round_trip() {
        let spec: ProgramSpec = "gtp:./mohex --quiet 'two words'".parse().unwrap();
        assert_eq!(spec.protocol, EngineProtocol::Gtp);
        assert_eq!(spec.command, ["./mohex", "--quiet", "two words"]);
        assert_eq!(spec.to_string().parse::<ProgramSpec>().unwrap(), spec);
        let spec: ProgramSpec = "sau:python3 bot.py".parse().unwrap();
        assert_eq!(spec.protocol, EngineProtocol::Sau);
        assert_eq!(spec.command, ["python3", "bot.py"]);
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(matches!(
            "./engine".parse::<ProgramSpec>(),
            Err(ProgramSpecError::NoProtocol(_))
        ));
        assert!(matches!(
            "uci:./engine".parse::<ProgramSpec>(),
            Err(ProgramSpecError::Protocol { .. })
        ));
        assert!(matches!(
            "sau:".parse::<ProgramSpec>(),
            Err(ProgramSpecError::Command(_))
        ));
        assert!(matches!(
            "sau:./engine 'unclosed".parse::<ProgramSpec>(),
            Err(ProgramSpecError::Command(_))
        ));
    }

    #[test]
    fn limits_wrap_the_command_only_when_set() {
        let command = vec!["./engine".to_string(), "-x".to_string()];
        let exe = Path::new("/bin/arena");
        assert_eq!(Limits::default().wrap(exe, &command), command);
        let limits = Limits {
            dir: Some(PathBuf::from("team7")),
            memory_mb: Some(512),
            cpus: vec![0, 1],
            ..Limits::default()
        };
        assert_eq!(
            limits.wrap(exe, &command),
            [
                "/bin/arena",
                "engine-exec",
                "--dir",
                "team7",
                "--memory-mb",
                "512",
                "--cpus",
                "0,1",
                "--",
                "./engine",
                "-x"
            ]
        );
    }

    #[test]
    fn a_folder_is_copied_with_its_files_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        std::fs::create_dir(from.path().join("data")).unwrap();
        std::fs::write(from.path().join("data/book.txt"), "opening").unwrap();
        std::fs::write(from.path().join("engine"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            from.path().join("engine"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("data/book.txt", from.path().join("book")).unwrap();
        copy_tree(from.path(), to.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.path().join("book")).unwrap(),
            "opening"
        );
        let mode = std::fs::metadata(to.path().join("engine"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(std::fs::symlink_metadata(to.path().join("book"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn this_process_has_a_core() {
        assert!(!available_cores().is_empty());
    }

    #[test]
    fn protocols_parse() {
        for p in [
            EngineProtocol::Json,
            EngineProtocol::Gtp,
            EngineProtocol::Sau,
        ] {
            assert_eq!(p.as_str().parse::<EngineProtocol>(), Ok(p));
        }
        assert!("uci".parse::<EngineProtocol>().is_err());
    }
}

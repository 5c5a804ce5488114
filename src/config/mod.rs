//! The arena configuration (`arena.toml`, docs/config.md): reading it, filling in defaults, and
//! refusing a bad one at start with a message that names the offending key. The cross-key
//! checks are in `validate`.

mod validate;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::game::GameId;
use crate::protocol::ClockSpec;

/// Why a configuration was refused. Every message names the file (when read from one) and the
/// key it concerns; a syntax error also its line and column, with the line and a caret.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}{}{message}\n{excerpt}", place(file, Some((*line, *column))), key_part(key))]
    Syntax {
        file: Option<PathBuf>,
        line: usize,
        column: usize,
        /// Empty when the text is not TOML at all (no key to name).
        key: String,
        message: String,
        /// The offending line and a caret under the column.
        excerpt: String,
    },
    #[error("{}{key}: {message}", place(file, None))]
    Invalid {
        file: Option<PathBuf>,
        key: String,
        message: String,
    },
}

/// `FILE:LINE:COLUMN: ` (or `FILE: `, `line L, column C: `), the way compilers name a place.
fn place(file: &Option<PathBuf>, at: Option<(usize, usize)>) -> String {
    match (file, at) {
        (Some(file), Some((line, column))) => format!("{}:{line}:{column}: ", file.display()),
        (Some(file), None) => format!("{}: ", file.display()),
        (None, Some((line, column))) => format!("line {line}, column {column}: "),
        (None, None) => String::new(),
    }
}

fn key_part(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}: ")
    }
}

/// Line and column (1-based, in characters) of byte `offset` in `text`, and the line shown
/// with a caret under that column.
fn locate(text: &str, offset: usize) -> (usize, usize, String) {
    let offset = offset.min(text.len());
    let offset = (0..=offset)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = text[..offset].matches('\n').count() + 1;
    let column = text[start..offset].chars().count() + 1;
    let shown = text[start..end].trim_end_matches('\r');
    let number = line.to_string();
    let excerpt = format!(
        "{pad} |\n{number} | {shown}\n{pad} | {caret:>column$}",
        pad = " ".repeat(number.len()),
        caret = "^"
    );
    (line, column, excerpt)
}

impl ConfigError {
    fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            file: None,
            key: key.into(),
            message: message.into(),
        }
    }

    /// The key the error is about (`server.listen`, `tournament[0].bots`, ...), if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Read { .. } => None,
            ConfigError::Syntax { key, .. } | ConfigError::Invalid { key, .. } => {
                Some(key.as_str()).filter(|k| !k.is_empty())
            }
        }
    }

    /// The same error, naming the file it came from.
    pub fn in_file(mut self, path: &Path) -> ConfigError {
        if let ConfigError::Syntax { file, .. } | ConfigError::Invalid { file, .. } = &mut self {
            *file = Some(path.to_path_buf());
        }
        self
    }
}

/// The text encoding of record files (`utf-8` or `gb2312`).
pub use crate::record::RecordEncoding;
pub use validate::MAX_DURATION_MS;

/// Highest `server.timeout_settle_ms` accepted.
pub const MAX_TIMEOUT_SETTLE_MS: u64 = 1000;

/// Highest `server.threads` accepted.
pub const MAX_SERVER_THREADS: usize = 256;

/// Most characters in a tournament name: it is part of every match id, and so of every record
/// file name, which must stay within the file system's 255 bytes.
pub const MAX_TOURNAMENT_NAME_CHARS: usize = 40;

/// A token shorter than this can be guessed by trying: `arena serve` refuses it unless the bot
/// says `weak_token = true`.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The `[server]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Where bots connect (an IP address and port, e.g. `127.0.0.1:7878`).
    pub listen: String,
    pub out_dir: PathBuf,
    pub event: String,
    pub place: String,
    pub reconnect_grace_ms: u64,
    pub max_lag_ms: u64,
    pub exit_when_done: bool,
    pub record_encoding: RecordEncoding,
    /// Our addition: most simultaneous connections (others wait in the accept queue).
    pub max_connections: usize,
    /// Our addition: worker threads of the server's runtime (0: one per core). Built-in
    /// engines and program bots search in threads and processes of their own either way.
    pub threads: usize,
    /// Our addition: a connection that has not sent `hello` this long after connecting is closed.
    pub hello_timeout_ms: u64,
    /// Our addition: how often each connection is pinged (a liveness check only: lag credit
    /// comes from the kernel's TCP round-trip estimate).
    pub ping_interval_ms: u64,
    /// Our addition: a connection that has answered a ping before and leaves one unanswered
    /// this long is closed as hung (0: never). Bots that never answer pings are not closed for
    /// it (the protocol does not oblige them); TCP keepalive finds their dead networks.
    pub pong_timeout_ms: u64,
    /// Our addition: consecutive refused lines after which a connection is closed.
    pub max_bad_lines: u32,
    /// Our addition: lines queued for a bot that is not reading its socket before it is dropped.
    pub write_queue_lines: usize,
    /// Our addition: highest `max_games` a bot may ask for in `hello` (larger values are capped).
    pub max_games_cap: u32,
    /// Our addition: print a progress line per finished game and each tournament's table on
    /// stdout (off for embedded servers such as `arena bench`'s).
    pub progress: bool,
    /// Our addition: stop a move's clock at the kernel's receive time of the line (Linux
    /// `SO_TIMESTAMPNS`) instead of when the server's reader got to it.
    pub receive_timestamps: bool,
    /// Our addition: when a clock runs out, how long the referee still waits for a move the
    /// kernel received before the deadline but the server had not read yet.
    pub timeout_settle_ms: u64,
    /// Our addition: the web view's address (`HOST:PORT`); empty: no web view.
    pub web: String,
    /// Our addition: most browsers following the live events at once (`/api/events`).
    pub web_max_event_streams: usize,
    /// Our addition: most WebSocket bots (`/ws`, the `/play` page) at once.
    pub web_max_sockets: usize,
    /// Our addition: consecutive losses by timeout or illegal move after which a bot is
    /// suspended (told so and disconnected; it may reconnect at once). 0: never.
    pub suspend_after_faults: u32,
    /// Our addition: failed logins (`hello` with a wrong name or token, over TCP or the web
    /// view's WebSocket) one client address may make per minute before it is refused.
    pub max_failed_logins_per_minute: u32,
    /// Our addition: how long an address that made too many failed logins is refused.
    pub failed_login_block_ms: u64,
    // Limits against hostile visitors and bots (docs/security.md). "Per address": an IPv6
    // address counts as its /64.
    /// Our addition: web connections open at once (more wait in the accept queue).
    pub web_max_connections: usize,
    /// Our addition: web connections one address may hold open.
    pub web_max_connections_per_address: usize,
    /// Our addition: time a web client has to send a request's headers; also how long a
    /// keep-alive connection may sit idle between requests.
    pub web_header_timeout_ms: u64,
    /// Our addition: a web connection whose socket takes no bytes for this long is dropped
    /// (event streams and WebSockets whose reader stopped).
    pub web_write_timeout_ms: u64,
    /// Our addition: largest request head (request line and headers), in bytes.
    pub web_max_request_bytes: usize,
    /// Our addition: `/api/events` streams one address may hold open.
    pub web_max_event_streams_per_address: usize,
    /// Our addition: `/ws` WebSockets one address may hold open.
    pub web_max_sockets_per_address: usize,
    /// Our addition: bot-port connections one address may hold open before they say `hello`.
    pub max_unauthenticated_per_address: usize,
    /// Our addition: page origins (`https://league.example.org`) besides the web view's own
    /// that may open `/ws`.
    pub web_allowed_origins: Vec<String>,
    /// Our addition: reverse proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:7878".into(),
            out_dir: PathBuf::from("out"),
            event: "arena".into(),
            place: String::new(),
            reconnect_grace_ms: 30_000,
            max_lag_ms: 500,
            exit_when_done: true,
            record_encoding: RecordEncoding::Utf8,
            max_connections: 1024,
            threads: 0,
            hello_timeout_ms: 10_000,
            ping_interval_ms: 5_000,
            pong_timeout_ms: 120_000,
            max_bad_lines: 10,
            write_queue_lines: 1024,
            max_games_cap: 64,
            progress: true,
            receive_timestamps: true,
            timeout_settle_ms: 50,
            web: String::new(),
            web_max_event_streams: 100,
            web_max_sockets: 32,
            suspend_after_faults: 3,
            max_failed_logins_per_minute: 5,
            failed_login_block_ms: 60_000,
            web_max_connections: 512,
            web_max_connections_per_address: 64,
            web_header_timeout_ms: 10_000,
            web_write_timeout_ms: 20_000,
            web_max_request_bytes: 16 * 1024,
            web_max_event_streams_per_address: 8,
            web_max_sockets_per_address: 4,
            max_unauthenticated_per_address: 16,
            web_allowed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
        }
    }
}

/// One `[[bot]]`: a third-party bot (with `token`), a built-in engine (with `builtin`) or a
/// program the server runs itself through the bridge (with `program`). Its `Debug` form hides
/// the token, so that no log line can show it.
#[derive(Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotConfig {
    pub name: String,
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default)]
    pub builtin: Option<String>,
    /// Engine options (built-in engines only).
    #[serde(default)]
    pub options: serde_json::Value,
    /// Our addition: matches a built-in engine plays at once (its `max_games`).
    #[serde(default = "one")]
    pub max_games: u32,
    /// A program the server starts for each game, `PROTOCOL:COMMAND` (`sau:./team7/engine`).
    #[serde(default)]
    pub program: Option<String>,
    /// The program's working folder.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Lines sent to the program right after it starts.
    #[serde(default)]
    pub init: Vec<String>,
    /// Address-space limit of the program's process, in MiB.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Sandbox limits of this program bot (default: the `[programs]` table's).
    #[serde(default)]
    pub processes: Option<u64>,
    #[serde(default)]
    pub file_size_mb: Option<u64>,
    #[serde(default)]
    pub open_files: Option<u64>,
    #[serde(default)]
    pub output_mb: Option<u64>,
    /// A private writable copy of `dir` per game, of at most this many MiB (default: none,
    /// the folder is read-only).
    #[serde(default)]
    pub scratch_mb: Option<u64>,
    /// Our addition: lets `arena serve` start with this bot's token shorter than 16
    /// characters (classroom demos); otherwise such a token is refused.
    #[serde(default)]
    pub weak_token: bool,
    /// Our addition: a built-in engine's seed in each match is the match id's hash mixed with
    /// this (`arena duel --seed`); none: the match id alone decides it.
    #[serde(default)]
    pub seed: Option<u64>,
}

impl std::fmt::Debug for BotConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotConfig")
            .field("name", &self.name)
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("builtin", &self.builtin)
            .field("options", &self.options)
            .field("max_games", &self.max_games)
            .field("program", &self.program)
            .field("dir", &self.dir)
            .field("init", &self.init)
            .field("memory_mb", &self.memory_mb)
            .field("processes", &self.processes)
            .field("file_size_mb", &self.file_size_mb)
            .field("open_files", &self.open_files)
            .field("output_mb", &self.output_mb)
            .field("scratch_mb", &self.scratch_mb)
            .field("weak_token", &self.weak_token)
            .field("seed", &self.seed)
            .finish()
    }
}

impl BotConfig {
    /// The program spec of a `program` bot, parsed (validated at load).
    pub fn program_spec(&self) -> Option<crate::program::ProgramSpec> {
        self.program.as_deref().and_then(|p| p.parse().ok())
    }
}

fn one() -> u32 {
    1
}

/// Tournament formats: the league library's (one definition for the config, the pairings and
/// the journal).
pub use crate::league::Format;

/// Points for each result.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PointsConfig {
    pub win: f64,
    pub draw: f64,
    pub loss: f64,
}

impl PointsConfig {
    /// The standings' points table.
    pub fn points(&self) -> crate::league::Points {
        crate::league::Points {
            win: self.win,
            draw: self.draw,
            loss: self.loss,
        }
    }
}

impl Default for PointsConfig {
    fn default() -> Self {
        PointsConfig {
            win: 1.0,
            draw: 0.5,
            loss: 0.0,
        }
    }
}

/// One `[[tournament]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TournamentConfig {
    pub name: String,
    #[serde(deserialize_with = "game_id")]
    pub game: GameId,
    #[serde(default = "default_format")]
    pub format: Format,
    pub bots: Vec<String>,
    #[serde(default = "default_games_per_pairing")]
    pub games_per_pairing: u32,
    #[serde(default = "default_rounds")]
    pub rounds: u32,
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    /// `move_limit_ms = 0` means no per-move limit.
    #[serde(default, with = "crate::clock_settings::table")]
    pub clock: ClockSpec,
    /// Every rule option in force (defaults filled in once the config is loaded).
    #[serde(default)]
    pub rules: serde_json::Value,
    #[serde(default)]
    pub points: PointsConfig,
    #[serde(default = "default_absent_forfeit_ms")]
    pub absent_forfeit_ms: u64,
    /// Openings (moves separated by spaces): games 2k−1 and 2k of each pairing start from
    /// opening k (cycling), colours reversed between the two.
    #[serde(default)]
    pub openings: Vec<String>,
}

impl TournamentConfig {
    /// The opening game `match_id` starts from (`…-gN`: opening (N−1)/2, cycling), if any.
    pub fn opening_of(&self, match_id: &str) -> Vec<String> {
        if self.openings.is_empty() {
            return Vec::new();
        }
        let game = match_id
            .rsplit_once("-g")
            .and_then(|(_, n)| n.parse::<usize>().ok())
            .unwrap_or(1);
        let index = (game.saturating_sub(1) / 2) % self.openings.len();
        self.openings[index]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }
}

fn default_format() -> Format {
    Format::RoundRobin
}
fn default_games_per_pairing() -> u32 {
    2
}
fn default_rounds() -> u32 {
    5
}
fn default_concurrency() -> u32 {
    8
}
fn default_absent_forfeit_ms() -> u64 {
    60_000
}

fn game_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<GameId, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

/// The `[programs]` table (ours): the sandbox `program` bots run in, the default limits each
/// bot may override, and how many failed starts in a row make a program bot absent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProgramsConfig {
    pub sandbox: crate::sandbox::SandboxKind,
    /// Memory of one engine process (and its children), in MiB.
    pub memory_mb: u64,
    /// Processes and threads one engine may run at once.
    pub processes: u64,
    /// Largest file one engine may write, in MiB.
    pub file_size_mb: u64,
    /// Files one engine process may have open at once.
    pub open_files: u64,
    /// What one engine may print on stdout and stderr together in one game, in MiB.
    pub output_mb: u64,
    /// The size of each engine's private `/tmp`, in MiB.
    pub tmp_mb: u64,
    /// Failed starts in a row after which a program bot is absent (its due games forfeited).
    pub failed_starts: u32,
}

impl Default for ProgramsConfig {
    fn default() -> Self {
        ProgramsConfig {
            sandbox: crate::sandbox::SandboxKind::Auto,
            memory_mb: 2048,
            processes: 64,
            file_size_mb: 64,
            open_files: 256,
            output_mb: 16,
            tmp_mb: 64,
            failed_starts: 3,
        }
    }
}

impl ProgramsConfig {
    /// The limits of a program bot that sets none of its own.
    pub fn default_limits(&self) -> crate::sandbox::SandboxLimits {
        crate::sandbox::SandboxLimits {
            memory_mb: self.memory_mb,
            processes: self.processes,
            file_size_mb: self.file_size_mb,
            open_files: self.open_files,
            output_mb: self.output_mb,
            tmp_mb: self.tmp_mb,
            scratch_mb: None,
        }
    }

    /// The limits `bot` runs under: its own where given, else these defaults.
    pub fn limits_for(&self, bot: &BotConfig) -> crate::sandbox::SandboxLimits {
        let defaults = self.default_limits();
        crate::sandbox::SandboxLimits {
            memory_mb: bot.memory_mb.unwrap_or(defaults.memory_mb),
            processes: bot.processes.unwrap_or(defaults.processes),
            file_size_mb: bot.file_size_mb.unwrap_or(defaults.file_size_mb),
            open_files: bot.open_files.unwrap_or(defaults.open_files),
            output_mb: bot.output_mb.unwrap_or(defaults.output_mb),
            scratch_mb: bot.scratch_mb,
            ..defaults
        }
    }

    fn validate(&self, bots: &[BotConfig]) -> Result<(), ConfigError> {
        for (key, value) in [
            ("programs.memory_mb", self.memory_mb),
            ("programs.processes", self.processes),
            ("programs.file_size_mb", self.file_size_mb),
            ("programs.open_files", self.open_files),
            ("programs.output_mb", self.output_mb),
            ("programs.tmp_mb", self.tmp_mb),
            ("programs.failed_starts", u64::from(self.failed_starts)),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(key, "must be at least 1"));
            }
        }
        for (i, bot) in bots.iter().enumerate() {
            for (field, value) in [
                ("processes", bot.processes),
                ("file_size_mb", bot.file_size_mb),
                ("open_files", bot.open_files),
                ("output_mb", bot.output_mb),
                ("scratch_mb", bot.scratch_mb),
            ] {
                let key = format!("bot[{i}].{field}");
                match value {
                    Some(_) if bot.program.is_none() => {
                        return Err(ConfigError::invalid(key, "only for `program` bots"))
                    }
                    Some(0) => return Err(ConfigError::invalid(key, "must be at least 1")),
                    _ => {}
                }
            }
            if bot.scratch_mb.is_some() && bot.dir.is_none() {
                return Err(ConfigError::invalid(
                    format!("bot[{i}].scratch_mb"),
                    "a writable copy of the program's folder needs `dir`",
                ));
            }
        }
        Ok(())
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default, rename = "bot")]
    pub bots: Vec<BotConfig>,
    #[serde(default, rename = "tournament")]
    pub tournaments: Vec<TournamentConfig>,
    /// Our addition: the sandbox of `program` bots and its default limits.
    #[serde(default)]
    pub programs: ProgramsConfig,
}

impl Config {
    /// Reads and checks a configuration file. Relative paths in it (`server.out_dir`, a bot's
    /// `dir`) are taken from the file's folder, and a `program` bot without `dir` runs there.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Config::parse(&text).map_err(|e| e.in_file(path))?;
        config.resolve_paths(path.parent().unwrap_or(Path::new("")));
        config.validate().map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// Parses and checks configuration text.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::parse(text)?;
        config.validate()?;
        Ok(config)
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let deserializer = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let key = e.path().to_string();
            let error = e.into_inner();
            let (line, column, excerpt) = locate(text, error.span().map_or(0, |s| s.start));
            ConfigError::Syntax {
                file: None,
                line,
                column,
                key: if key == "." { String::new() } else { key },
                message: error.message().trim().to_string(),
                excerpt,
            }
        })
    }

    /// Makes relative paths relative to `base` (the config file's folder).
    fn resolve_paths(&mut self, base: &Path) {
        if base.as_os_str().is_empty() {
            return;
        }
        if !self.server.out_dir.as_os_str().is_empty() {
            self.server.out_dir = base.join(&self.server.out_dir);
        }
        for bot in &mut self.bots {
            if let Some(dir) = &bot.dir {
                bot.dir = Some(base.join(dir));
            } else if bot.program.is_some() {
                bot.dir = Some(base.to_path_buf());
            }
        }
    }

    /// The listen address, parsed.
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.server.listen.parse().map_err(|_| {
            ConfigError::invalid(
                "server.listen",
                format!(
                    "{:?} is not an address such as 127.0.0.1:7878",
                    self.server.listen
                ),
            )
        })
    }

    /// The web view's address, parsed (`None`: no web view).
    pub fn web_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        let text = self.server.web.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|_| {
            ConfigError::invalid(
                "server.web",
                format!("{text:?} is not an address such as 127.0.0.1:8080"),
            )
        })
    }

    /// The bot called `name`.
    pub fn bot(&self, name: &str) -> Option<&BotConfig> {
        self.bots.iter().find(|b| b.name == name)
    }

    /// The configured bots whose token is shorter than [`MIN_TOKEN_CHARS`]: those `arena serve`
    /// refuses to start with, and those it only warns about (`weak_token = true`).
    pub fn bots_with_short_tokens(&self) -> (Vec<String>, Vec<String>) {
        let (refused, allowed): (Vec<_>, Vec<_>) = self
            .bots
            .iter()
            .filter(|b| {
                b.token
                    .as_ref()
                    .is_some_and(|t| t.chars().count() < MIN_TOKEN_CHARS)
            })
            .partition(|b| !b.weak_token);
        let names = |bots: Vec<&BotConfig>| bots.iter().map(|b| b.name.clone()).collect();
        (names(refused), names(allowed))
    }

    /// What `arena serve` checks before anything starts (not part of loading: other commands
    /// read a league whatever its tokens): a bot's `token` must be at least
    /// [`MIN_TOKEN_CHARS`] characters unless the bot says `weak_token = true`.
    /// Refuses naming each short `bot[i].token` (one error, its key the list of them:
    /// `bot[0].token, bot[3].token`; the file with [`ConfigError::in_file`]); otherwise gives
    /// the names of the bots allowed a short one, to warn about.
    pub fn check_token_lengths(&self) -> Result<Vec<String>, ConfigError> {
        let (refused, weak) = self.bots_with_short_tokens();
        if refused.is_empty() {
            return Ok(weak);
        }
        // Bot names are unique (checked at load), so each refused name is one `[[bot]]`.
        let keys: Vec<String> = self
            .bots
            .iter()
            .enumerate()
            .filter(|(_, bot)| refused.contains(&bot.name))
            .map(|(i, _)| format!("bot[{i}].token"))
            .collect();
        Err(ConfigError::invalid(
            keys.join(", "),
            format!(
                "shorter than {} characters, which can be guessed by trying: give each bot a \
                 strong token (`arena token` prints one), or set `weak_token = true` on it for \
                 a classroom demo",
                MIN_TOKEN_CHARS
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_output_never_shows_a_token() {
        let config = Config::from_toml(
            "[[bot]]\nname = \"alice\"\ntoken = \"s3cret-token-of-alice\"\n\n\
             [[bot]]\nname = \"bob\"\ntoken = \"s3cret-token-of-bob\"\n\n\
             [[tournament]]\nname = \"t\"\ngame = \"hex\"\nbots = [\"alice\", \"bob\"]\n",
        )
        .expect("valid");
        let shown = format!("{config:?} {:#?}", config.bots);
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/config")
            .join(name)
    }

    /// The key named by the error that refuses config `text`.
    fn refused_key(text: &str) -> Option<String> {
        Config::from_toml(text)
            .unwrap_err()
            .key()
            .map(str::to_string)
    }

    fn key_of(name: &str) -> String {
        let err = Config::load(&fixture(name)).unwrap_err();
        let text = err.to_string();
        let key = err.key().unwrap_or_default().to_string();
        assert!(text.contains(&key), "{text} should name {key}");
        key
    }

    #[test]
    fn a_time_too_large_for_the_clocks_is_refused_naming_its_key() {
        let base = std::fs::read_to_string(fixture("full.toml")).unwrap();
        let text = base.replacen(
            "absent_forfeit_ms = 60000",
            "absent_forfeit_ms = 9223372036854775000",
            1,
        );
        let err = Config::from_toml(&text).unwrap_err();
        assert_eq!(err.key(), Some("tournament[0].absent_forfeit_ms"), "{err}");
        assert!(err.to_string().contains("too long for the clocks"), "{err}");
        let text = base.replacen("max_lag_ms = 500", "max_lag_ms = 9223372036854775000", 1);
        let err = Config::from_toml(&text).unwrap_err();
        assert_eq!(err.key(), Some("server.max_lag_ms"), "{err}");
    }

    #[test]
    fn the_server_threads_default_to_one_per_core_and_too_many_are_refused() {
        let base = std::fs::read_to_string(fixture("full.toml")).unwrap();
        assert_eq!(Config::from_toml(&base).unwrap().server.threads, 0);
        let with = |threads: &str| {
            base.replacen("[server]\n", &format!("[server]\nthreads = {threads}\n"), 1)
        };
        assert_eq!(Config::from_toml(&with("1")).unwrap().server.threads, 1);
        assert_eq!(refused_key(&with("257")).as_deref(), Some("server.threads"));
        assert!(Config::from_toml(&with("-1")).is_err());
    }

    #[test]
    fn the_full_example_loads_with_every_value() {
        let config = Config::load(&fixture("full.toml")).unwrap();
        assert_eq!(config.server.listen, "127.0.0.1:7878");
        assert_eq!(config.server.event, "CCGC practice league");
        assert_eq!(config.server.record_encoding, RecordEncoding::Gb2312);
        assert_eq!(config.bots.len(), 2);
        assert_eq!(config.bots[1].builtin.as_deref(), Some("random"));
        let t = &config.tournaments[0];
        assert_eq!(t.game, GameId::Hex);
        assert_eq!(t.format, Format::DoubleRoundRobin);
        assert_eq!(t.concurrency, 8);
        assert_eq!(t.clock.move_limit_ms, None);
        assert_eq!(t.points.draw, 0.5);
        assert!(t.rules.is_object());
    }

    #[test]
    fn the_full_example_s_tournament_values_are_the_defaults() {
        // The full example's tournament values (but its format) are the contract's defaults,
        // `concurrency = 8` included: leaving them out changes nothing.
        let full = std::fs::read_to_string(fixture("full.toml")).unwrap();
        let bare: String = full
            .lines()
            .filter(|line| {
                ![
                    "games_per_pairing",
                    "rounds",
                    "concurrency",
                    "clock",
                    "rules",
                    "points",
                    "absent_forfeit_ms",
                ]
                .iter()
                .any(|key| line.starts_with(&format!("{key} =")))
            })
            .map(|line| format!("{line}\n"))
            .collect();
        assert!(!bare.contains("concurrency"), "{bare}");
        let full = Config::from_toml(&full).unwrap();
        let bare = Config::from_toml(&bare).unwrap();
        assert_eq!(bare.tournaments, full.tournaments);
        assert_eq!(bare.tournaments[0].concurrency, 8);
    }

    #[test]
    fn short_tokens_are_refused_naming_the_file_and_each_key() {
        let config = |weak: &str| {
            format!(
                "[[bot]]\nname = \"alice\"\ntoken = \"s3cr\"\n{weak}\n\
                 [[bot]]\nname = \"bob\"\ntoken = \"0123456789abcdef\"\n\n\
                 [[bot]]\nname = \"engine\"\nbuiltin = \"random\"\n\n\
                 [[bot]]\nname = \"carol\"\ntoken = \"0123456789abcde\"\n"
            )
        };
        let strict = Config::from_toml(&config("")).unwrap();
        let err = strict
            .check_token_lengths()
            .unwrap_err()
            .in_file(Path::new("season.toml"));
        assert_eq!(err.key(), Some("bot[0].token, bot[3].token"));
        let text = err.to_string();
        assert!(
            text.starts_with("season.toml: bot[0].token, bot[3].token: shorter than 16 characters"),
            "{text}"
        );
        assert!(text.contains("weak_token = true"), "{text}");
        assert!(text.contains("arena token"), "{text}");
        assert!(
            !text.contains("s3cr"),
            "the message never shows a token: {text}"
        );
        // A bot that says `weak_token = true` is allowed, and named to be warned about.
        let text = config("weak_token = true\n").replace(
            "token = \"0123456789abcde\"\n",
            "token = \"0123456789abcde\"\nweak_token = true\n",
        );
        let lenient = Config::from_toml(&text).unwrap();
        assert_eq!(
            lenient.check_token_lengths().unwrap(),
            vec!["alice".to_string(), "carol".to_string()]
        );
    }

    #[test]
    fn an_empty_config_takes_every_default() {
        let config = Config::from_toml("").unwrap();
        assert_eq!(config.server, ServerConfig::default());
        assert_eq!(config.server.max_connections, 1024);
        assert_eq!(config.server.hello_timeout_ms, 10_000);
        assert!(config.bots.is_empty());
    }

    #[test]
    fn move_limit_zero_means_none_and_other_values_carry() {
        #[derive(Deserialize)]
        struct Table {
            #[serde(with = "crate::clock_settings::table")]
            clock: ClockSpec,
        }
        let clock = |limit: u64| {
            let text = format!(
                "clock = {{ initial_ms = 1000, increment_ms = 10, move_limit_ms = {limit} }}"
            );
            toml::from_str::<Table>(&text).unwrap().clock
        };
        assert_eq!(clock(300).move_limit_ms, Some(300));
        assert_eq!(clock(0).move_limit_ms, None);
    }

    #[test]
    fn errors_name_the_key() {
        assert_eq!(key_of("typo_server_key.toml"), "server.listn");
        assert_eq!(key_of("bad_listen.toml"), "server.listen");
        assert_eq!(key_of("unknown_game.toml"), "tournament[0].game");
        assert_eq!(key_of("duplicate_bot.toml"), "bot[1].name");
        assert_eq!(
            key_of("unknown_bot_in_tournament.toml"),
            "tournament[0].bots"
        );
        assert_eq!(key_of("bot_without_token.toml"), "bot[0].token");
        assert_eq!(key_of("bot_with_token_and_builtin.toml"), "bot[0].builtin");
        assert_eq!(key_of("zero_concurrency.toml"), "tournament[0].concurrency");
        assert_eq!(key_of("bad_encoding.toml"), "server.record_encoding");
        assert_eq!(
            key_of("long_timeout_settle.toml"),
            "server.timeout_settle_ms"
        );
        assert_eq!(key_of("unknown_engine.toml"), "bot[0].builtin");
        // Engine options are checked at load, not when the first game resigns.
        assert_eq!(key_of("engine_option_typo.toml"), "bot[0].options.tim_ms");
        assert_eq!(
            key_of("engine_option_out_of_range.toml"),
            "bot[0].options.depth"
        );
        assert_eq!(
            key_of("bad_rule_option.toml"),
            "tournament[0].rules.nonsense"
        );
        assert_eq!(key_of("typo_clock_key.toml"), "tournament[0].clock.initial");
    }

    #[test]
    fn the_shipped_demo_config_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("arena.toml");
        let config = Config::load(&path).unwrap();
        assert_eq!(config.tournaments.len(), 4);
        // Built-in engines, and one student-style program the server runs in its sandbox: the
        // demo needs no bot of anyone's to connect.
        assert!(config
            .bots
            .iter()
            .all(|b| b.builtin.is_some() || b.program.is_some()));
        assert!(config.bots.iter().any(|b| b.program.is_some()));
        assert_eq!(config.programs.sandbox, crate::sandbox::SandboxKind::Auto);
    }

    #[test]
    fn program_bots_and_openings_are_checked() {
        let base = |bot: &str, openings: &str| {
            format!(
                "[[bot]]\nname = \"a\"\n{bot}\n[[bot]]\nname = \"b\"\nbuiltin = \"random\"\n\
                 [[tournament]]\nname = \"t\"\ngame = \"hex\"\nbots = [\"a\", \"b\"]\nopenings = [{openings}]\n"
            )
        };
        let config = Config::from_toml(&base(
            "program = \"sau:./engine --fast\"\ndir = \"team7\"\nmemory_mb = 512\ninit = [\"x\"]",
            "\"A1 B2\"",
        ))
        .unwrap();
        let spec = config.bots[0].program_spec().unwrap();
        assert_eq!(spec.command, ["./engine", "--fast"]);
        assert_eq!(config.tournaments[0].opening_of("t-r1-p1-g2"), ["A1", "B2"]);
        assert_eq!(
            refused_key(&base("program = \"uci:./e\"", "")).as_deref(),
            Some("bot[0].program")
        );
        assert_eq!(
            refused_key(&base("program = \"sau:./e\"\ntoken = \"t\"", "")).as_deref(),
            Some("bot[0].program")
        );
        assert_eq!(
            refused_key(&base("token = \"t\"\nmemory_mb = 5", "")).as_deref(),
            Some("bot[0].memory_mb")
        );
        assert_eq!(
            refused_key(&base("program = \"sau:./e\"\nmemory_mb = 0", "")).as_deref(),
            Some("bot[0].memory_mb")
        );
        assert_eq!(
            refused_key(&base("token = \"t\"", "\"A1 A1\"")).as_deref(),
            Some("tournament[0].openings")
        );
    }

    #[test]
    fn the_programs_table_and_per_bot_limits_are_checked() {
        let text = |programs: &str, bot: &str| {
            format!(
                "[programs]\n{programs}\n[[bot]]\nname = \"a\"\n{bot}\n\
                 [[bot]]\nname = \"b\"\nbuiltin = \"random\"\n"
            )
        };
        let config = Config::from_toml(&text(
            "sandbox = \"none\"\nmemory_mb = 512",
            "program = \"sau:./e\"\ndir = \"t\"\nprocesses = 8\nscratch_mb = 4",
        ))
        .unwrap();
        assert_eq!(config.programs.sandbox, crate::sandbox::SandboxKind::None);
        let limits = config.programs.limits_for(&config.bots[0]);
        assert_eq!((limits.memory_mb, limits.processes), (512, 8));
        assert_eq!((limits.open_files, limits.scratch_mb), (256, Some(4)));
        assert_eq!(
            Config::from_toml("").unwrap().programs.sandbox,
            crate::sandbox::SandboxKind::Auto
        );
        assert_eq!(
            refused_key(&text("sandbox = \"docker\"", "token = \"t\"")).as_deref(),
            Some("programs.sandbox")
        );
        assert_eq!(
            refused_key(&text("failed_starts = 0", "token = \"t\"")).as_deref(),
            Some("programs.failed_starts")
        );
        assert_eq!(
            refused_key(&text("", "token = \"t\"\nprocesses = 3")).as_deref(),
            Some("bot[0].processes")
        );
        assert_eq!(
            refused_key(&text("", "program = \"sau:./e\"\noutput_mb = 0")).as_deref(),
            Some("bot[0].output_mb")
        );
        assert_eq!(
            refused_key(&text("", "program = \"sau:./e\"\nscratch_mb = 4")).as_deref(),
            Some("bot[0].scratch_mb")
        );
    }

    #[test]
    fn a_syntax_error_gives_the_file_line_column_and_a_caret() {
        let err = Config::from_toml("[server]\nevent = \"x\"\n[[bot]\n").unwrap_err();
        let ConfigError::Syntax { line, excerpt, .. } = &err else {
            panic!("a syntax error: {err}");
        };
        assert_eq!(*line, 3);
        assert!(excerpt.starts_with("  |\n3 | [[bot]\n  | "), "{excerpt}");
        assert_eq!(err.key(), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typo.toml");
        std::fs::write(&path, "[server]\n  listn = 1\n").unwrap();
        let text = Config::load(&path).unwrap_err().to_string();
        assert!(
            text.starts_with(&format!(
                "{}:2:3: server.listn: unknown field",
                path.display()
            )),
            "{text}"
        );
        assert!(text.ends_with("\n2 |   listn = 1\n  |   ^"), "{text}");
        // Columns count characters, not bytes.
        assert_eq!(
            locate("a\nüb = ?", 6),
            (2, 4, "  |\n2 | üb = ?\n  |    ^".to_string())
        );
    }

    #[test]
    fn relative_paths_are_taken_from_the_config_files_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("league.toml");
        std::fs::write(
            &path,
            "[server]\nout_dir = \"results\"\n[[bot]]\nname = \"a\"\nprogram = \"sau:./engine\"\n\
             [[bot]]\nname = \"b\"\nprogram = \"sau:./engine\"\ndir = \"team-b\"\n\
             [[bot]]\nname = \"c\"\nprogram = \"sau:/opt/engine\"\ndir = \"/opt\"\n",
        )
        .unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.server.out_dir, dir.path().join("results"));
        assert_eq!(config.bots[0].dir.as_deref(), Some(dir.path()));
        assert_eq!(config.bots[1].dir, Some(dir.path().join("team-b")));
        assert_eq!(config.bots[2].dir, Some(PathBuf::from("/opt")));
        // A config in the current folder keeps its paths as written.
        let mut here = Config::from_toml("[server]\nout_dir = \"out\"\n").unwrap();
        here.resolve_paths(Path::new(""));
        assert_eq!(here.server.out_dir, PathBuf::from("out"));
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let err = Config::load(&fixture("no-such-file.toml")).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }));
    }
}

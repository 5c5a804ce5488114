//! `arena match`: engine-versus-engine testing on one machine, as cutechess-cli and fastchess
//! do for chess. A match is a one-tournament league (two bots, `games` games, colours
//! alternating, game pairs sharing an opening) run by the arena's own server on a loopback
//! port: built-in engines connect as clients, programs through the bridge, exactly as in a
//! league. This module turns the command line's plan into that configuration, runs the server,
//! follows games.jsonl as games finish (the tally), stops early when the SPRT decides, and
//! builds the report (`stats` does the arithmetic).

pub mod settings;
pub mod stats;

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{BotConfig, Config, Format, PointsConfig, ServerConfig, TournamentConfig};
use crate::game::{GameId, Side};
use crate::game_line::GameLine;
use crate::program::ProgramSpec;
use crate::protocol::ClockSpec;
use crate::quantile::nearest_rank;
use stats::{EloEstimate, Moments, Pentanomial, SprtResult, SprtSpec, Wdl};

/// The tournament name a match runs under (match ids are `match-r1-p1-gN`).
pub const TOURNAMENT: &str = "match";

/// Why a match could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error("--engine {spec:?}: {message}")]
    Engine { spec: String, message: String },
    #[error("{0}")]
    Plan(String),
    #[error(
        "{} holds a match started with another command: {}; run the command it was started with, or give another --out",
        dir.display(),
        changes.join("; ")
    )]
    Changed { dir: PathBuf, changes: Vec<String> },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Server(#[from] crate::server::ServerError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What plays: a built-in engine with its options, or a program and its protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineKind {
    Builtin { engine: String, options: Value },
    Program(ProgramSpec),
}

impl FromStr for EngineKind {
    type Err = MatchError;
    /// `builtin:ENGINE[:KEY=VALUE,…]`, `gtp:COMMAND`, `sau:COMMAND` or `json:COMMAND`.
    fn from_str(spec: &str) -> Result<EngineKind, MatchError> {
        let err = |message: String| MatchError::Engine {
            spec: spec.to_string(),
            message,
        };
        if let Some(rest) = spec.strip_prefix("builtin:") {
            let (engine, options) = rest.split_once(':').unwrap_or((rest, ""));
            let engine = engine.trim();
            if !crate::engine::catalogue().iter().any(|e| e.id == engine) {
                return Err(err(format!(
                    "unknown built-in engine {engine:?} (see `arena engines`)"
                )));
            }
            let pairs: Vec<String> = options
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
            let options =
                crate::client::parse_engine_options(&pairs).map_err(|e| err(e.to_string()))?;
            return Ok(EngineKind::Builtin {
                engine: engine.to_string(),
                options,
            });
        }
        spec.parse::<ProgramSpec>()
            .map(EngineKind::Program)
            .map_err(|e| MatchError::Plan(format!("--engine {e}; or builtin:ENGINE")))
    }
}

/// One `--engine` with the settings that follow it on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineEntry {
    pub kind: EngineKind,
    /// Display name (also the name in records); by default the engine id or the program's
    /// file name.
    pub name: Option<String>,
    /// Working folder of a program.
    pub dir: Option<PathBuf>,
    /// Lines sent to a program right after it starts.
    pub init: Vec<String>,
}

impl EngineEntry {
    pub fn new(kind: EngineKind) -> EngineEntry {
        EngineEntry {
            kind,
            name: None,
            dir: None,
            init: Vec::new(),
        }
    }

    fn default_name(&self) -> String {
        match &self.kind {
            EngineKind::Builtin { engine, .. } => engine.clone(),
            EngineKind::Program(p) => p
                .command
                .first()
                .and_then(|c| Path::new(c).file_name())
                .map_or_else(
                    || "engine".to_string(),
                    |n| n.to_string_lossy().into_owned(),
                ),
        }
    }
}

/// Everything `arena match` is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchPlan {
    pub game: GameId,
    pub engines: [EngineEntry; 2],
    pub games: u32,
    pub concurrency: u32,
    pub clock: ClockSpec,
    /// Rule options (defaults filled in when the config is checked).
    pub rules: Value,
    /// Openings, each as its moves; game pair k plays opening k (cycling).
    pub openings: Vec<Vec<String>>,
    pub sprt: Option<SprtSpec>,
    /// Records, games.jsonl and the journal.
    pub out_dir: PathBuf,
    /// Address-space limit of each program engine, in MiB.
    pub memory_mb: Option<u64>,
}

/// Parses `--clock INITIAL+INC` in seconds (`10+0.1`, `60`) into milliseconds.
pub fn parse_clock(text: &str) -> Result<(u64, u64), MatchError> {
    let bad = || {
        MatchError::Plan(format!(
            "--clock {text:?}: expected INITIAL+INCREMENT in seconds, e.g. 10+0.1"
        ))
    };
    let (initial, increment) = text.split_once('+').unwrap_or((text, "0"));
    let seconds = |s: &str| -> Result<u64, MatchError> {
        let v: f64 = s.trim().parse().map_err(|_| bad())?;
        if !v.is_finite() || !(0.0..=1e7).contains(&v) {
            return Err(bad());
        }
        Ok((v * 1000.0).round() as u64)
    };
    let initial = seconds(initial)?;
    if initial == 0 {
        return Err(bad());
    }
    Ok((initial, seconds(increment)?))
}

/// Parses `--rules swap=true,…` (or a JSON object) into a rules object.
pub fn parse_rules(text: &str) -> Result<Value, MatchError> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| MatchError::Plan(format!("--rules {text:?} is not a JSON object")));
    }
    let pairs: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    crate::client::parse_engine_options(&pairs)
        .map_err(|e| MatchError::Plan(format!("--rules: {e}")))
}

/// The two display names: as given, or the defaults made distinct (`hex`, `hex-2`).
pub fn engine_names(engines: &[EngineEntry; 2]) -> Result<[String; 2], MatchError> {
    let mut names = [0, 1].map(|i| {
        engines[i]
            .name
            .clone()
            .unwrap_or_else(|| engines[i].default_name())
    });
    if names[0] == names[1] {
        if engines[1].name.is_some() && engines[0].name.is_some() {
            return Err(MatchError::Plan(format!(
                "both engines are named {:?}; give different names",
                names[0]
            )));
        }
        let i = if engines[1].name.is_none() { 1 } else { 0 };
        names[i] = format!("{}-{}", names[i], i + 1);
    }
    Ok(names)
}

impl MatchPlan {
    /// The arena configuration that plays this match.
    pub fn config(&self) -> Result<Config, MatchError> {
        if self.games == 0 {
            return Err(MatchError::Plan("--games must be at least 1".into()));
        }
        if self.concurrency == 0 {
            return Err(MatchError::Plan("--concurrency must be at least 1".into()));
        }
        let names = engine_names(&self.engines)?;
        let bots = self
            .engines
            .iter()
            .zip(&names)
            .map(|(entry, name)| {
                let mut bot = BotConfig {
                    name: name.clone(),
                    token: None,
                    builtin: None,
                    options: Value::Null,
                    max_games: 1,
                    ..BotConfig::default()
                };
                match &entry.kind {
                    EngineKind::Builtin { engine, options } => {
                        bot.builtin = Some(engine.clone());
                        bot.options = options.clone();
                        bot.max_games = self.concurrency;
                    }
                    EngineKind::Program(spec) => {
                        bot.program = Some(spec.to_string());
                        // Each game gets its own engine process.
                        bot.max_games = self.concurrency;
                        bot.dir = entry.dir.clone();
                        bot.init = entry.init.clone();
                        bot.memory_mb = self.memory_mb;
                    }
                }
                bot
            })
            .collect();
        let mut config = Config {
            server: ServerConfig {
                listen: "127.0.0.1:0".into(),
                out_dir: self.out_dir.clone(),
                event: "arena match".into(),
                exit_when_done: true,
                progress: false,
                ..ServerConfig::default()
            },
            bots,
            tournaments: vec![TournamentConfig {
                name: TOURNAMENT.into(),
                game: self.game,
                format: Format::RoundRobin,
                bots: names.to_vec(),
                games_per_pairing: self.games,
                rounds: 1,
                concurrency: self.concurrency,
                clock: self.clock,
                rules: self.rules.clone(),
                points: PointsConfig::default(),
                absent_forfeit_ms: 60_000,
                openings: self.openings.iter().map(|o| o.join(" ")).collect(),
            }],
            // The person running a match runs their own engines: unconfined, as
            // `arena connect` runs them.
            programs: crate::config::ProgramsConfig {
                sandbox: crate::sandbox::SandboxKind::None,
                ..Default::default()
            },
        };
        for entry in &self.engines {
            if let EngineKind::Builtin { engine, .. } = &entry.kind {
                let plays = crate::engine::catalogue()
                    .into_iter()
                    .find(|e| e.id == engine)
                    .map(|e| e.games)
                    .unwrap_or_default();
                if !plays.contains(&self.game) {
                    let plays: Vec<&str> = plays.iter().map(|g| g.as_str()).collect();
                    return Err(MatchError::Plan(format!(
                        "--engine {} does not play {} (it plays {}; `arena engines` lists each engine's games)",
                        entry.kind,
                        self.game,
                        plays.join(", ")
                    )));
                }
            }
        }
        config
            .validate()
            .map_err(|e| self.in_command_line_words(e))?;
        // Built-in options are checked now rather than by a client that would retry forever.
        for entry in &self.engines {
            if let EngineKind::Builtin { engine, options } = &entry.kind {
                crate::engine::new_engine(
                    engine,
                    self.game,
                    &config.tournaments[0].rules,
                    options,
                    1,
                )
                .map_err(|e| MatchError::Plan(format!("--engine {}: {e}", entry.kind)))?;
            }
        }
        Ok(config)
    }

    /// A refusal of the league config this plan becomes, said with the option it came from
    /// (`--clock`, `--engine builtin:hex:…`) instead of the config's key.
    fn in_command_line_words(&self, error: crate::config::ConfigError) -> MatchError {
        use crate::config::ConfigError;
        let key = error.key().unwrap_or_default().to_string();
        let message = match &error {
            ConfigError::Invalid { message, .. } | ConfigError::Syntax { message, .. } => {
                message.clone()
            }
            ConfigError::Read { .. } => error.to_string(),
        };
        let engine = |index: &str| {
            index
                .parse::<usize>()
                .ok()
                .and_then(|i| self.engines.get(i))
                .map(|e| e.kind.to_string())
        };
        let option = if let Some((index, field)) = key
            .strip_prefix("bot[")
            .and_then(|rest| rest.split_once("]."))
        {
            let spec = engine(index).unwrap_or_default();
            match field {
                "memory_mb" => "--memory-mb".to_string(),
                "name" => format!("--name (of --engine {spec})"),
                "dir" => format!("--dir (of --engine {spec})"),
                "init" => format!("--init (of --engine {spec})"),
                field => match field.strip_prefix("options.") {
                    Some(option) => format!("--engine {spec}: option {option}"),
                    None => format!("--engine {spec}"),
                },
            }
        } else {
            let field = key.strip_prefix("tournament[0].").unwrap_or(&key);
            match field {
                "clock.move_limit_ms" => "--move-limit".to_string(),
                f if f.starts_with("clock") => "--clock".to_string(),
                f if f.starts_with("rules") => "--rules".to_string(),
                "openings" => "--openings".to_string(),
                "games_per_pairing" => "--games".to_string(),
                "concurrency" => "--concurrency".to_string(),
                other => other.to_string(),
            }
        };
        MatchError::Plan(format!("{option}: {message}"))
    }
}

/// One finished game as the tally needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameResult {
    /// 1-based game number in the match (`…-gN`).
    pub number: u32,
    /// Whether the first engine (`--engine` #1) moved first.
    pub first_engine_first: bool,
    /// `first`, `second` or `draw`.
    pub result: String,
    pub reason: String,
    /// Each engine's think time per move (first engine, second engine), in milliseconds, as
    /// the referee charged it; the opening's moves, which neither engine played, left out.
    pub think_ms: [Vec<u64>; 2],
}

impl GameResult {
    /// Reads a games.jsonl line of this match (`None` for a match id not of the form `…-gN`);
    /// its first `opening_plies` moves are the opening.
    pub fn from_line(
        line: &GameLine,
        first_engine: &str,
        opening_plies: usize,
    ) -> Option<GameResult> {
        let number = line.match_id.rsplit_once("-g")?.1.parse().ok()?;
        let first_engine_first = line.first == first_engine;
        let mut think_ms = [Vec::new(), Vec::new()];
        for (index, &ms) in line.think_ms.iter().enumerate().skip(opening_plies) {
            let first_moved = line.game.mover_of_ply(index + 1) == Side::First;
            think_ms[usize::from(first_moved != first_engine_first)].push(ms);
        }
        Some(GameResult {
            number,
            first_engine_first,
            result: line.result.as_str().to_string(),
            reason: line.reason.as_str().to_string(),
            think_ms,
        })
    }

    /// The first engine's points: 1, 0.5 or 0.
    pub fn points(&self) -> f64 {
        match (self.result.as_str(), self.first_engine_first) {
            ("draw", _) => 0.5,
            ("first", true) | ("second", false) => 1.0,
            _ => 0.0,
        }
    }

    /// Which engine lost (0 or 1), `None` for a draw.
    pub fn loser(&self) -> Option<usize> {
        match self.points() {
            p if p >= 1.0 => Some(1),
            p if p <= 0.0 => Some(0),
            _ => None,
        }
    }
}

/// The running count of a match, from the first engine's side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub wdl: Wdl,
    /// Points of the first engine in each game of each pair (pair k: games 2k+1, 2k+2).
    pairs: HashMap<u32, [Option<f64>; 2]>,
    /// End reason → games lost by each engine (draws in `draws`).
    pub reasons: BTreeMap<String, ReasonCount>,
    /// Each engine's think times per move over the games so far: milliseconds → moves (a
    /// count per distinct time, so that a match of many fast games stays cheap to summarise).
    think_ms: [BTreeMap<u64, u64>; 2],
}

/// How many games ended for one reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReasonCount {
    /// Games the first / second engine lost this way.
    pub lost_by: [u32; 2],
    pub draws: u32,
}

impl ReasonCount {
    pub fn total(&self) -> u32 {
        self.lost_by[0] + self.lost_by[1] + self.draws
    }
}

impl Tally {
    pub fn add(&mut self, game: &GameResult) {
        let points = game.points();
        match game.loser() {
            Some(1) => self.wdl.wins += 1,
            Some(_) => self.wdl.losses += 1,
            None => self.wdl.draws += 1,
        }
        let entry = self.reasons.entry(game.reason.clone()).or_default();
        match game.loser() {
            Some(i) => entry.lost_by[i] += 1,
            None => entry.draws += 1,
        }
        let pair = game.number.saturating_sub(1) / 2;
        let slot = usize::from(game.number.is_multiple_of(2));
        self.pairs.entry(pair).or_default()[slot] = Some(points);
        for (counts, this_game) in self.think_ms.iter_mut().zip(&game.think_ms) {
            for &ms in this_game {
                *counts.entry(ms).or_default() += 1;
            }
        }
    }

    /// Each engine's time per move so far (`None` for an engine that has made no move).
    pub fn move_times(&self) -> [Option<MoveTimes>; 2] {
        [
            MoveTimes::of(&self.think_ms[0]),
            MoveTimes::of(&self.think_ms[1]),
        ]
    }

    pub fn games(&self) -> u32 {
        self.wdl.games()
    }

    /// Complete pairs by the first engine's points in the pair: [0, ½, 1, 1½, 2].
    pub fn pentanomial(&self) -> Pentanomial {
        let mut counts = [0u32; 5];
        for pair in self.pairs.values() {
            if let [Some(a), Some(b)] = pair {
                let index = ((a + b) * 2.0).round() as usize;
                if let Some(c) = counts.get_mut(index) {
                    *c += 1;
                }
            }
        }
        counts
    }

    /// Elo difference with its interval: from the pairs when there are complete pairs (their
    /// spread is what the openings leave), else from the games.
    /// When the pairs show no spread at all (every pair scored alike), the interval comes from
    /// the counts regularised as the SPRT does (each empty count as 0.001 pairs), so that it is
    /// not a single point.
    pub fn elo(&self) -> Option<EloEstimate> {
        let pairs = self.pentanomial();
        match Moments::pentanomial(&pairs) {
            Some(m) if m.variance > 0.0 => Some(EloEstimate::of(m)),
            Some(m) => Moments::regularized(&pairs).map(|r| EloEstimate {
                elo: stats::elo_of_score(m.mean),
                ..EloEstimate::of(r)
            }),
            None => Moments::trinomial(self.wdl).map(EloEstimate::of),
        }
    }
}

/// The SPRT part of the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SprtReport {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    /// `"H0"`, `"H1"` or null while undecided.
    pub decision: Option<&'static str>,
}

impl SprtReport {
    fn of(spec: &SprtSpec, result: SprtResult) -> SprtReport {
        SprtReport {
            elo0: spec.elo0,
            elo1: spec.elo1,
            alpha: spec.alpha,
            beta: spec.beta,
            llr: result.llr,
            lower: result.lower,
            upper: result.upper,
            decision: result.decision.map(|h1| if h1 { "H1" } else { "H0" }),
        }
    }
}

/// How long one engine thought per move, as the referee charged it: whether two engines had
/// equal time is read here, since a program may think longer than it was told to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoveTimes {
    pub moves: u64,
    pub mean_ms: f64,
    /// The time 90% of the moves stayed within.
    pub p90_ms: u64,
    pub max_ms: u64,
}

impl MoveTimes {
    /// From think times in milliseconds, each with its number of moves.
    fn of(counts: &BTreeMap<u64, u64>) -> Option<MoveTimes> {
        let (&max_ms, _) = counts.last_key_value()?;
        let moves: u64 = counts.values().sum();
        let total: u64 = counts.iter().map(|(&ms, &n)| ms.saturating_mul(n)).sum();
        // The smallest time at least 90% of the moves stayed within.
        let p90_ms =
            nearest_rank(counts.iter().map(|(&ms, &n)| (ms, n)), moves, 0.9).unwrap_or(max_ms);
        Some(MoveTimes {
            moves,
            mean_ms: total as f64 / moves as f64,
            p90_ms,
            max_ms,
        })
    }
}

/// The final (or current) state of a match, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchReport {
    pub game: String,
    pub engines: [String; 2],
    pub games: u32,
    pub planned: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Points of the first engine over games, 0 to 1.
    pub score: f64,
    /// Null when undefined (no games, or every game won or lost).
    pub elo: Option<f64>,
    pub elo_ci95: [Option<f64>; 2],
    pub los: Option<f64>,
    /// Game pairs by the first engine's points: [0, ½, 1, 1½, 2].
    pub pentanomial: Pentanomial,
    /// End reason → games.
    pub reasons: BTreeMap<String, u32>,
    /// End reason → games lost by each engine and draws.
    pub reasons_detail: BTreeMap<String, ReasonCount>,
    /// Each engine's think time per move (null before its first move).
    pub move_times: [Option<MoveTimes>; 2],
    pub sprt: Option<SprtReport>,
    /// Stopped by ctrl-c before the planned games (resumable with the same command and --out).
    pub interrupted: bool,
    /// Games already in the output folder when this run started.
    pub resumed_games: u32,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl MatchReport {
    pub fn of(
        plan_game: GameId,
        names: &[String; 2],
        planned: u32,
        tally: &Tally,
        sprt: Option<&SprtSpec>,
    ) -> MatchReport {
        let elo = tally.elo();
        let pentanomial = tally.pentanomial();
        MatchReport {
            game: plan_game.as_str().to_string(),
            engines: names.clone(),
            games: tally.games(),
            planned,
            wins: tally.wdl.wins,
            draws: tally.wdl.draws,
            losses: tally.wdl.losses,
            score: tally.wdl.score(),
            elo: elo.and_then(|e| finite(e.elo)),
            elo_ci95: [
                elo.and_then(|e| finite(e.low)),
                elo.and_then(|e| finite(e.high)),
            ],
            los: elo.map(|e| e.los),
            pentanomial,
            reasons: tally
                .reasons
                .iter()
                .map(|(k, v)| (k.clone(), v.total()))
                .collect(),
            reasons_detail: tally.reasons.clone(),
            move_times: tally.move_times(),
            sprt: sprt.map(|s| SprtReport::of(s, s.result(&pentanomial))),
            interrupted: false,
            resumed_games: 0,
        }
    }

    /// The one-line progress: `[=====>    ] 12/20  A 7.5/12 (62.5%)  Elo +87 [-20, +200]  ETA 0:35`.
    pub fn progress_line(&self, eta: Option<Duration>) -> String {
        const WIDTH: usize = 20;
        let done = if self.planned == 0 {
            WIDTH
        } else {
            (self.games as usize * WIDTH / self.planned as usize).min(WIDTH)
        };
        let bar: String = (0..WIDTH)
            .map(|i| {
                if i < done {
                    '='
                } else if i == done {
                    '>'
                } else {
                    ' '
                }
            })
            .collect();
        let points = f64::from(self.wins) + 0.5 * f64::from(self.draws);
        let mut line = format!(
            "[{bar}] {}/{}  {} {points}/{} ({:.1}%)  Elo {}",
            self.games,
            self.planned,
            self.engines[0],
            self.games,
            100.0 * self.score,
            elo_text(self.games, self.score, self.elo, self.elo_ci95),
        );
        if let Some(sprt) = &self.sprt {
            line.push_str(&format!(
                "  LLR {:.2} ({:.2}, {:.2})",
                sprt.llr, sprt.lower, sprt.upper
            ));
        }
        if let Some(eta) = eta {
            let s = eta.as_secs();
            line.push_str(&format!(
                "  ETA {}:{:02}:{:02}",
                s / 3600,
                s / 60 % 60,
                s % 60
            ));
        }
        line
    }

    /// The final table.
    pub fn write_table(&self, out: &mut impl Write) -> io::Result<()> {
        let [a, b] = &self.engines;
        writeln!(out, "{} match: {a} vs {b}", self.game)?;
        writeln!(
            out,
            "games       {}{}",
            self.games,
            if self.games < self.planned {
                format!(" of {}", self.planned)
            } else {
                String::new()
            }
        )?;
        writeln!(
            out,
            "{a}: W {} D {} L {}   score {:.1}%",
            self.wins,
            self.draws,
            self.losses,
            100.0 * self.score
        )?;
        writeln!(
            out,
            "Elo         {} (95%)",
            elo_text(self.games, self.score, self.elo, self.elo_ci95)
        )?;
        if let Some(los) = self.los {
            writeln!(out, "LOS         {:.1}%", 100.0 * los)?;
        }
        let p = self.pentanomial;
        writeln!(
            out,
            "pairs       [{}, {}, {}, {}, {}]  ({a}'s points per pair: 0, ½, 1, 1½, 2)",
            p[0], p[1], p[2], p[3], p[4]
        )?;
        let width = a.chars().count().max(b.chars().count());
        for (i, (name, times)) in self.engines.iter().zip(&self.move_times).enumerate() {
            let Some(t) = times else { continue };
            let seconds = |ms: f64| format!("{:.2} s", ms / 1000.0);
            writeln!(
                out,
                "{:<12}{:<width$}  mean {}, 90% within {}, longest {} ({} moves)",
                if i == 0 { "move time" } else { "" },
                format!("{name}:"),
                seconds(t.mean_ms),
                seconds(t.p90_ms as f64),
                seconds(t.max_ms as f64),
                t.moves,
                width = width + 1,
            )?;
        }
        if let Some(s) = &self.sprt {
            writeln!(
                out,
                "SPRT        elo0={} elo1={} alpha={} beta={}: LLR {:.2} [{:.2}, {:.2}] {}",
                s.elo0,
                s.elo1,
                s.alpha,
                s.beta,
                s.llr,
                s.lower,
                s.upper,
                match s.decision {
                    Some("H1") => format!("H1 accepted ({a} is stronger by at least elo1)"),
                    Some(_) => format!("H0 accepted ({a} is not stronger by elo1)"),
                    None => "undecided".to_string(),
                }
            )?;
        }
        writeln!(out, "end reasons (lost by {a} / lost by {b} / draws):")?;
        for (reason, count) in &self.reasons_detail {
            let note = match reason.as_str() {
                "timeout" => "  (out of time)",
                "illegal_move" => "  (illegal move)",
                "resign" => "  (resigned; a crashed program resigns through the bridge)",
                "disconnect" => "  (connection lost: crashed or killed)",
                "forfeit" => "  (did not show up)",
                _ => "",
            };
            writeln!(
                out,
                "  {reason:<13} {:>4} / {:>4} / {:>4}{note}",
                count.lost_by[0], count.lost_by[1], count.draws
            )?;
        }
        if self.interrupted {
            writeln!(
                out,
                "interrupted: run the same command (same --out) to play the remaining games"
            )?;
        }
        Ok(())
    }
}

fn signed(x: f64) -> String {
    format!("{x:+.1}")
}

/// `+87.3 [-20.1, +201.5]`; a score of 1 or 0 is `+inf` or `-inf`.
fn elo_text(games: u32, score: f64, elo: Option<f64>, ci: [Option<f64>; 2]) -> String {
    let infinite = |x: f64| if x > 0.5 { "+inf" } else { "-inf" };
    let bound = |x: Option<f64>, inf: &str| x.map_or_else(|| inf.to_string(), signed);
    if games == 0 {
        return "n/a".to_string();
    }
    let centre = elo.map_or_else(|| infinite(score).to_string(), signed);
    format!(
        "{centre} [{}, {}]",
        bound(ci[0], "-inf"),
        bound(ci[1], "+inf")
    )
}

/// What `run` tells its caller as games finish.
pub trait MatchObserver {
    /// After each finished game (and once at start with the games found in the folder).
    fn progress(&mut self, report: &MatchReport, eta: Option<Duration>);
}

impl<F: FnMut(&MatchReport, Option<Duration>)> MatchObserver for F {
    fn progress(&mut self, report: &MatchReport, eta: Option<Duration>) {
        self(report, eta)
    }
}

/// What `run` hears from its server.
enum Heard {
    /// The server holds the output folder: games.jsonl is as the start left it (repaired from
    /// the journal if it had to be).
    Ready,
    Finished(std::sync::Arc<crate::server::events::GameFinished>),
}

/// Plays the match: starts the server on a loopback port (its engines connect to it), tallies
/// the games as the server tells they finish, stops when every game is played, the SPRT
/// decides, or `shutdown` is cancelled (then `interrupted` is set: the same plan resumes from
/// `out_dir`, whose games.jsonl gives the games played before). With `web`, that companion
/// (the web view) runs beside the server while the games run.
pub async fn run(
    plan: &MatchPlan,
    web: Option<crate::server::Companion>,
    shutdown: CancellationToken,
    observer: &mut impl MatchObserver,
) -> Result<MatchReport, MatchError> {
    use crate::server::{ServerEvent, Subscriber};
    let config = plan.config()?;
    settings::check_and_record(plan, &config)?;
    let names = engine_names(&plan.engines)?;
    let listener = crate::server::bind(&config, None).await?;
    // Which opening each game was given (its moves are no engine's).
    let openings = config.tournaments[0].clone();
    let games_file = config.server.out_dir.join("games.jsonl");
    let mut tally = Tally::default();
    let mut seen = std::collections::HashSet::new();
    let add_lines = |lines: &mut dyn Iterator<Item = &GameLine>,
                     tally: &mut Tally,
                     seen: &mut std::collections::HashSet<u32>| {
        let mut added = 0u32;
        for line in lines {
            if line.tournament != TOURNAMENT {
                continue;
            }
            let opening_plies = openings.opening_of(&line.match_id).len();
            if let Some(game) = GameResult::from_line(line, &names[0], opening_plies) {
                if seen.insert(game.number) {
                    tally.add(&game);
                    added += 1;
                }
            }
        }
        added
    };
    let played_before: Vec<GameLine> = GameLine::read_file(&games_file).collect();
    let resumed = add_lines(&mut played_before.iter(), &mut tally, &mut seen);
    drop(played_before);
    let report_now = |tally: &Tally| {
        let mut r = MatchReport::of(plan.game, &names, plan.games, tally, plan.sprt.as_ref());
        r.resumed_games = resumed;
        r
    };
    let mut report = report_now(&tally);
    observer.progress(&report, None);
    let stop = CancellationToken::new();
    let decided = report.sprt.is_some_and(|s| s.decision.is_some());
    // Holds at most one `Ready` and one entry per game of the plan.
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let mut server = None;
    if !decided && report.games < plan.games {
        let tell = Subscriber::news(std::sync::Arc::new(move |event: &ServerEvent<'_>| {
            let _ = match event {
                ServerEvent::Ready { .. } => heard_tx.send(Heard::Ready),
                ServerEvent::GameFinished(game) => heard_tx.send(Heard::Finished(game.clone())),
                _ => Ok(()),
            };
        }));
        server = Some(tokio::spawn(crate::server::run_with(
            config,
            listener,
            stop.clone(),
            vec![tell],
            web,
        )));
    } else {
        drop(heard_tx);
    }
    let began = tokio::time::Instant::now();
    let mut interrupted = false;
    let mut server_done = server.is_none();
    loop {
        let heard_now = tokio::select! {
            _ = shutdown.cancelled(), if !interrupted && !server_done => {
                interrupted = true;
                stop.cancel();
                continue;
            }
            done = async { server.as_mut()?.await.ok() }, if !server_done => {
                server_done = true;
                if let Some(done) = done {
                    done?;
                } else {
                    return Err(MatchError::Plan("the server task failed".to_string()));
                }
                // What it told before it ended is still queued: taken below.
                continue;
            }
            heard_now = heard.recv() => match heard_now {
                Some(heard_now) => heard_now,
                // The server has ended and everything it told is taken.
                None => break,
            },
        };
        let added = match heard_now {
            // Games its start wrote again from the journal were played before this run.
            Heard::Ready => add_lines(
                &mut GameLine::read_file(&games_file).collect::<Vec<_>>().iter(),
                &mut tally,
                &mut seen,
            ),
            Heard::Finished(game) => {
                add_lines(&mut std::iter::once(&game.line), &mut tally, &mut seen)
            }
        };
        if added > 0 {
            report = report_now(&tally);
            let played = tally.games().saturating_sub(resumed);
            let eta = (played > 0).then(|| {
                began.elapsed().mul_f64(
                    f64::from(plan.games.saturating_sub(tally.games())) / f64::from(played),
                )
            });
            observer.progress(&report, eta);
            if report.sprt.is_some_and(|s| s.decision.is_some()) {
                stop.cancel();
            }
        }
    }
    report = report_now(&tally);
    report.interrupted = interrupted && report.games < plan.games;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(number: u32, first_engine_first: bool, result: &str, reason: &str) -> GameResult {
        GameResult {
            number,
            first_engine_first,
            result: result.into(),
            reason: reason.into(),
            think_ms: [Vec::new(), Vec::new()],
        }
    }

    #[test]
    fn engine_specs_parse() {
        let kind: EngineKind = "builtin:hex:time_ms=2000,playouts=0".parse().unwrap();
        assert_eq!(
            kind,
            EngineKind::Builtin {
                engine: "hex".into(),
                options: serde_json::json!({"time_ms": 2000, "playouts": 0}),
            }
        );
        let kind: EngineKind = "builtin:greedy".parse().unwrap();
        assert!(
            matches!(kind, EngineKind::Builtin { ref options, .. } if options == &serde_json::json!({}))
        );
        let kind: EngineKind = "gtp:./mohex --quiet".parse().unwrap();
        let EngineKind::Program(p) = kind else {
            panic!("a program")
        };
        assert_eq!(p.command, ["./mohex", "--quiet"]);
        assert!("builtin:nonesuch".parse::<EngineKind>().is_err());
        assert!("./engine".parse::<EngineKind>().is_err());
        assert!("builtin:hex:oops".parse::<EngineKind>().is_err());
    }

    #[test]
    fn clocks_and_rules_parse() {
        assert_eq!(parse_clock("10+0.1").unwrap(), (10_000, 100));
        assert_eq!(parse_clock("2.5").unwrap(), (2_500, 0));
        assert!(parse_clock("0+1").is_err());
        assert!(parse_clock("x+1").is_err());
        assert_eq!(
            parse_rules("swap=true").unwrap(),
            serde_json::json!({"swap": true})
        );
        assert_eq!(
            parse_rules(r#"{"swap":false}"#).unwrap(),
            serde_json::json!({"swap": false})
        );
        assert!(parse_rules("swap").is_err());
    }

    #[test]
    fn default_names_are_made_distinct() {
        let hex = EngineEntry::new("builtin:hex".parse().unwrap());
        let names = engine_names(&[hex.clone(), hex.clone()]).unwrap();
        assert_eq!(names, ["hex".to_string(), "hex-2".to_string()]);
        let program = EngineEntry::new("sau:./bots/v2/engine --fast".parse().unwrap());
        assert_eq!(
            engine_names(&[program, hex.clone()]).unwrap(),
            ["engine".to_string(), "hex".to_string()]
        );
        let mut named = hex.clone();
        named.name = Some("hex".into());
        let mut other = hex;
        other.name = Some("hex".into());
        assert!(engine_names(&[named, other]).is_err());
    }

    #[test]
    fn the_tally_counts_games_pairs_and_reasons_from_the_first_engine() {
        let mut tally = Tally::default();
        // Pair 0: A wins with first, draws with second → 1½.
        tally.add(&result(1, true, "first", "connection"));
        tally.add(&result(2, false, "draw", "board_full"));
        // Pair 1: A loses both (once on time) → 0.
        tally.add(&result(3, true, "second", "connection"));
        tally.add(&result(4, false, "first", "timeout"));
        // Pair 2: only the first game so far (A wins as second).
        tally.add(&result(5, false, "second", "illegal_move"));
        assert_eq!(
            tally.wdl,
            Wdl {
                wins: 2,
                draws: 1,
                losses: 2
            }
        );
        assert_eq!(tally.pentanomial(), [1, 0, 0, 1, 0]);
        assert_eq!(tally.reasons["timeout"].lost_by, [1, 0]);
        assert_eq!(tally.reasons["illegal_move"].lost_by, [0, 1]);
        assert_eq!(tally.reasons["connection"].lost_by, [1, 1]);
        assert_eq!(tally.reasons["board_full"].draws, 1);
        let report = MatchReport::of(GameId::Hex, &["a".into(), "b".into()], 10, &tally, None);
        assert_eq!(report.games, 5);
        assert!((report.score - 0.5).abs() < 1e-12);
        assert_eq!(report.reasons["connection"], 2);
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "games",
            "wins",
            "draws",
            "losses",
            "score",
            "elo",
            "elo_ci95",
            "pentanomial",
            "reasons",
            "sprt",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        let mut table = Vec::new();
        report.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("a: W 2 D 1 L 2"), "{table}");
        assert!(table.contains("pairs       [1, 0, 0, 1, 0]"), "{table}");
        assert!(report.progress_line(None).contains("5/10"));
    }

    #[test]
    fn a_game_line_is_read_from_the_first_engines_side() {
        let line = GameLine::from_json(&serde_json::json!({
            "match": "match-r1-p1-g4", "tournament": "match", "game": "hex", "first": "b",
            "second": "a", "result": "second", "reason": "resign", "moves": ["A1"],
            "think_ms": [5], "lag_ms": [0], "rules": {"swap": false},
            "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-23T00:00:00Z", "finished": "2026-11-23T00:00:01Z",
            "record": "r.txt"
        }))
        .unwrap();
        let game = GameResult::from_line(&line, "a", 0).unwrap();
        assert_eq!(game.number, 4);
        assert!(!game.first_engine_first);
        assert_eq!(game.points(), 1.0);
        assert_eq!(game.loser(), Some(1));
    }

    #[test]
    fn think_times_are_each_engines_own_moves_after_the_opening() {
        // Hex, a two-move opening, then engine "a" (second player) and "b" alternate.
        let line = GameLine::from_json(&serde_json::json!({
            "match": "match-r1-p1-g2", "tournament": "match", "game": "hex", "first": "b",
            "second": "a", "result": "first", "reason": "connection",
            "moves": ["A1", "B2", "C3", "D4", "E5", "F6"],
            "think_ms": [0, 0, 300, 1000, 500, 3000], "lag_ms": [0, 0, 0, 0, 0, 0],
            "rules": {"swap": false},
            "clock": {"initial_ms": 1000, "increment_ms": 0, "move_limit_ms": null},
            "started": "2026-11-23T00:00:00Z", "finished": "2026-11-23T00:00:01Z",
            "record": "r.txt"
        }))
        .unwrap();
        let game = GameResult::from_line(&line, "a", 2).unwrap();
        assert_eq!(game.think_ms, [vec![1000, 3000], vec![300, 500]]);
        let mut tally = Tally::default();
        tally.add(&game);
        let mut again = game.clone();
        again.number = 3;
        again.think_ms = [vec![2000], vec![]];
        tally.add(&again);
        let [a, b] = tally.move_times();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.moves, a.p90_ms, a.max_ms), (3, 3000, 3000));
        assert!((a.mean_ms - 2000.0).abs() < 1e-9);
        assert_eq!((b.moves, b.p90_ms, b.max_ms), (2, 500, 500));
        let report = MatchReport::of(GameId::Hex, &["a".into(), "bb".into()], 4, &tally, None);
        let mut table = Vec::new();
        report.write_table(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            table.contains(
                "move time   a:   mean 2.00 s, 90% within 3.00 s, longest 3.00 s (3 moves)\n\
                 \x20           bb:  mean 0.40 s, 90% within 0.50 s, longest 0.50 s (2 moves)\n"
            ),
            "{table}"
        );
        assert!(serde_json::to_value(&report).unwrap()["move_times"][0]["p90_ms"] == 3000);
        // No moves yet: no line.
        let empty = MatchReport::of(
            GameId::Hex,
            &["a".into(), "b".into()],
            4,
            &Tally::default(),
            None,
        );
        let mut table = Vec::new();
        empty.write_table(&mut table).unwrap();
        assert!(!String::from_utf8(table).unwrap().contains("move time"));
    }

    #[test]
    fn a_p90_is_the_nearest_rank() {
        let counts = |times: &[u64]| {
            let mut map = BTreeMap::new();
            for &ms in times {
                *map.entry(ms).or_insert(0) += 1;
            }
            map
        };
        let twenty: Vec<u64> = (1..=20).collect();
        assert_eq!(MoveTimes::of(&counts(&twenty)).unwrap().p90_ms, 18);
        let repeated = MoveTimes::of(&counts(&[5, 5, 5, 5, 5, 5, 5, 5, 5, 100])).unwrap();
        assert_eq!(
            (repeated.moves, repeated.p90_ms, repeated.max_ms),
            (10, 5, 100)
        );
        assert!((repeated.mean_ms - 14.5).abs() < 1e-9);
        assert_eq!(MoveTimes::of(&counts(&[7])).unwrap().p90_ms, 7);
        assert_eq!(MoveTimes::of(&BTreeMap::new()), None);
    }

    /// A Hex match of `engines` (specs), 4 games at 10+0.1, openings A1 and B2, into `out_dir`.
    pub(super) fn hex_plan(engines: [&str; 2], out_dir: &Path) -> MatchPlan {
        MatchPlan {
            game: GameId::Hex,
            engines: engines.map(|spec| EngineEntry::new(spec.parse().unwrap())),
            games: 4,
            concurrency: 2,
            clock: ClockSpec {
                initial_ms: 10_000,
                increment_ms: 100,
                move_limit_ms: None,
            },
            rules: Value::Null,
            openings: vec![vec!["A1".into()], vec!["B2".into()]],
            sprt: None,
            out_dir: out_dir.to_path_buf(),
            memory_mb: None,
        }
    }

    #[test]
    fn the_plan_becomes_a_valid_league_with_openings() {
        let plan = hex_plan(
            ["builtin:hex:time_ms=50", "builtin:greedy"],
            Path::new("out"),
        );
        let config = plan.config().unwrap();
        let t = &config.tournaments[0];
        assert_eq!(t.bots, ["hex", "greedy"]);
        assert_eq!(config.bots[0].max_games, 2);
        assert_eq!(t.opening_of("match-r1-p1-g1"), ["A1"]);
        assert_eq!(t.opening_of("match-r1-p1-g2"), ["A1"]);
        assert_eq!(t.opening_of("match-r1-p1-g3"), ["B2"]);
        assert_eq!(t.opening_of("match-r1-p1-g5"), ["A1"]);
        let mut bad = plan.clone();
        bad.engines[0] = EngineEntry::new("builtin:hex:nonsense=1".parse().unwrap());
        assert!(bad.config().is_err());
    }

    #[test]
    fn a_refused_plan_is_told_in_command_line_words() {
        let plan = hex_plan(["builtin:jiu", "builtin:greedy"], Path::new("out"));
        let err = plan.config().unwrap_err().to_string();
        assert!(
            err.starts_with("--engine builtin:jiu does not play hex (it plays jiu"),
            "{err}"
        );
        let mut slow = plan.clone();
        slow.engines[0] = EngineEntry::new("builtin:hex".parse().unwrap());
        slow.clock.initial_ms = crate::config::MAX_DURATION_MS + 1;
        let err = slow.config().unwrap_err().to_string();
        assert!(err.starts_with("--clock: "), "{err}");
        assert!(!err.contains("tournament"), "{err}");
        slow.clock.initial_ms = 1000;
        slow.clock.move_limit_ms = Some(crate::config::MAX_DURATION_MS + 1);
        assert!(slow
            .config()
            .unwrap_err()
            .to_string()
            .starts_with("--move-limit: "));
        let mut option = plan;
        option.engines[0] = EngineEntry::new("builtin:hex:time_ms=-5".parse().unwrap());
        let err = option.config().unwrap_err().to_string();
        assert!(
            err.starts_with("--engine builtin:hex:time_ms=-5: "),
            "{err}"
        );
    }
}

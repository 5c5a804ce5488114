//! The match as a league (`MatchPlan::config`): the plan `arena match` was given becomes a
//! one-tournament arena configuration (two bots, the games, the clock, the openings), refused
//! in the command line's words when it cannot be played.

use std::path::PathBuf;

use serde_json::Value;

use super::spec::{engine_names, EngineEntry, EngineKind};
use super::stats::SprtSpec;
use super::MatchError;
use crate::config::{BotConfig, Config, Format, PointsConfig, ServerConfig, TournamentConfig};
use crate::game::GameId;
use crate::protocol::ClockSpec;

/// The tournament name a match runs under (match ids are `match-r1-p1-gN`).
pub const TOURNAMENT: &str = "match";

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
    /// Mixed into the built-in engines' seeds (`arena duel --seed`); none: each game's match
    /// id alone decides them.
    pub seed: Option<u64>,
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
                        bot.seed = self.seed;
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::path::Path;

    /// A Hex match of `engines` (specs), 4 games at 10+0.1, openings A1 and B2, into `out_dir`.
    pub(in crate::matches) fn hex_plan(engines: [&str; 2], out_dir: &Path) -> MatchPlan {
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
            seed: None,
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

//! What `arena match` is asked to play, parsed from the command line's words: the engines
//! (`builtin:ENGINE[:KEY=VALUE,…]` or a program spec, with the `--name`, `--dir` and `--init`
//! that follow each), their display names, the clock and the rule options, and the whole
//! command (`MatchCommand`, also what `arena duel` stands for) checked into a `MatchPlan`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::Value;

use super::{MatchError, MatchPlan};
use crate::game::GameId;
use crate::options_text;
use crate::program::ProgramSpec;
use crate::protocol::ClockSpec;

/// What plays: a built-in engine with its options, or a program and its protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineKind {
    Builtin { engine: String, options: Value },
    Program(ProgramSpec),
}

impl EngineKind {
    /// Built-in engine `engine` with `options` (checked when the plan becomes a config).
    pub fn builtin(engine: &str, options: Value) -> Result<EngineKind, String> {
        if !crate::engine::catalogue().iter().any(|e| e.id == engine) {
            return Err(format!(
                "unknown built-in engine {engine:?} (see `arena engines`)"
            ));
        }
        Ok(EngineKind::Builtin {
            engine: engine.to_string(),
            options,
        })
    }
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
            let pairs = options_text::read_list(options).map_err(|e| err(e.to_string()))?;
            return EngineKind::builtin(engine.trim(), options_text::json_object(&pairs))
                .map_err(err);
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
    let pairs =
        options_text::read_list(text).map_err(|e| MatchError::Plan(format!("--rules: {e}")))?;
    Ok(options_text::json_object(&pairs))
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

/// The per-engine flags of `arena match` (`--name`, `--dir`, `--init`), each with its position
/// among the command line's arguments, and the positions of the `--engine`s they follow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineFlags {
    /// Where each `--engine` stands.
    pub engines_at: Vec<usize>,
    /// Each `--name` (display name).
    pub names: Vec<(usize, String)>,
    /// Each `--dir` (a program's working folder).
    pub dirs: Vec<(usize, PathBuf)>,
    /// Each `--init` (a line sent to a program right after it starts).
    pub inits: Vec<(usize, String)>,
}

/// The `--engine` specs as entries, each `--name`, `--dir` and `--init` of `flags` attached to
/// the `--engine` before it on the command line (`None`: no per-engine settings).
pub fn engine_entries(
    specs: &[String],
    flags: Option<&EngineFlags>,
) -> Result<Vec<EngineEntry>, MatchError> {
    let mut entries = specs
        .iter()
        .map(|spec| Ok(EngineEntry::new(spec.parse()?)))
        .collect::<Result<Vec<_>, MatchError>>()?;
    let Some(flags) = flags else {
        return Ok(entries);
    };
    let owner = |index: usize, flag: &str| -> Result<usize, MatchError> {
        flags
            .engines_at
            .iter()
            .rposition(|&at| at < index)
            .ok_or_else(|| MatchError::Plan(format!("{flag} must follow the --engine it is for")))
    };
    for (index, name) in &flags.names {
        let e = owner(*index, "--name")?;
        entries[e].name = Some(name.clone());
    }
    for (index, dir) in &flags.dirs {
        let e = owner(*index, "--dir")?;
        entries[e].dir = Some(dir.clone());
    }
    for (index, line) in &flags.inits {
        let e = owner(*index, "--init")?;
        entries[e].init.push(line.clone());
    }
    Ok(entries)
}

/// `arena match` as its command line gives it, before it is checked: the engines with their
/// settings and the other options as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchCommand {
    /// The game.
    pub game: GameId,
    /// The `--engine`s with their settings (a plan needs exactly two).
    pub engines: Vec<EngineEntry>,
    /// `--games`: games to play.
    pub games: u32,
    /// `--concurrency`: games played at once.
    pub concurrency: u32,
    /// `--clock`: INITIAL+INCREMENT in seconds.
    pub clock: String,
    /// `--move-limit` in milliseconds (0: none).
    pub move_limit: u64,
    /// `--rules`: KEY=VALUE,… or a JSON object.
    pub rules: String,
    /// `--openings`: the openings file (default: the game's built-in set).
    pub openings: Option<PathBuf>,
    /// `--sprt`: elo0=…,elo1=…,alpha=…,beta=….
    pub sprt: Option<String>,
    /// `--memory-mb`: the address-space limit of each program engine, in MiB.
    pub memory_mb: Option<u64>,
    /// `arena duel --seed`: mixed into the built-in engines' seeds.
    pub seed: Option<u64>,
}

impl MatchCommand {
    /// `arena duel GAME A B`, the old name of a match between two built-in engines: engine `a`
    /// with its options against `b` with its, `games` games under a per-move limit of
    /// `move_ms` and a clock too long to matter, one game at a time, `seed` mixed into the
    /// engines' seeds.
    #[allow(clippy::too_many_arguments)]
    pub fn duel(
        game: GameId,
        a: &str,
        a_options: &Value,
        b: &str,
        b_options: &Value,
        games: u32,
        move_ms: u64,
        rules: String,
        seed: u64,
    ) -> Result<MatchCommand, MatchError> {
        let entry = |id: &str, options: &Value| {
            EngineKind::builtin(id, options.clone())
                .map(EngineEntry::new)
                .map_err(|message| MatchError::Engine {
                    spec: format!("builtin:{id}"),
                    message,
                })
        };
        Ok(MatchCommand {
            game,
            engines: vec![entry(a, a_options)?, entry(b, b_options)?],
            games,
            concurrency: 1,
            clock: "3600".into(),
            move_limit: move_ms,
            rules,
            openings: None,
            sprt: None,
            memory_mb: None,
            seed: Some(seed),
        })
    }

    /// The plan: exactly two engines (a built-in one without program settings), the clock,
    /// rules, openings and SPRT read and checked; the match's files go to `out_dir`.
    pub fn plan(self, out_dir: PathBuf) -> Result<MatchPlan, MatchError> {
        let engines: [EngineEntry; 2] = self
            .engines
            .try_into()
            .map_err(|_| MatchError::Plan("give exactly two --engine".to_string()))?;
        for entry in &engines {
            if matches!(entry.kind, EngineKind::Builtin { .. })
                && (entry.dir.is_some() || !entry.init.is_empty())
            {
                return Err(MatchError::Plan(
                    "--dir and --init are for program engines, not built-in ones".to_string(),
                ));
            }
        }
        let rules = parse_rules(&self.rules)?;
        let (initial_ms, increment_ms) = parse_clock(&self.clock)?;
        let normalized = crate::game::normalize_rules(self.game, &rules)
            .map_err(|e| MatchError::Plan(format!("--rules: {}", e.message)))?;
        let openings = match &self.openings {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    MatchError::Plan(format!("cannot read {}: {e}", path.display()))
                })?;
                crate::openings::parse_openings(self.game, &normalized, &text)
                    .map_err(|e| MatchError::Plan(format!("{}: {e}", path.display())))?
            }
            None => crate::openings::builtin_openings(self.game, &normalized)?,
        };
        let sprt = self.sprt.as_deref().map(str::parse).transpose()?;
        Ok(MatchPlan {
            game: self.game,
            engines,
            games: self.games,
            concurrency: self.concurrency,
            clock: ClockSpec {
                initial_ms,
                increment_ms,
                move_limit_ms: (self.move_limit > 0).then_some(self.move_limit),
            },
            rules,
            openings,
            sprt,
            out_dir,
            memory_mb: self.memory_mb,
            seed: self.seed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn flags_attach_to_the_engine_before_them() {
        let specs = ["builtin:hex".to_string(), "sau:./engine".to_string()];
        let flags = EngineFlags {
            engines_at: vec![2, 6],
            names: vec![(4, "first".into()), (8, "second".into())],
            dirs: vec![(10, PathBuf::from("team7"))],
            inits: vec![(12, "a".into()), (14, "b".into())],
        };
        let entries = engine_entries(&specs, Some(&flags)).unwrap();
        assert_eq!(entries[0].name.as_deref(), Some("first"));
        assert_eq!(entries[1].name.as_deref(), Some("second"));
        assert_eq!(entries[1].dir.as_deref(), Some(Path::new("team7")));
        assert_eq!(entries[1].init, ["a", "b"]);
        let early = EngineFlags {
            names: vec![(1, "x".into())],
            ..flags
        };
        let err = engine_entries(&specs, Some(&early)).unwrap_err();
        assert_eq!(err.to_string(), "--name must follow the --engine it is for");
        assert_eq!(engine_entries(&specs, None).unwrap()[0].name, None);
    }

    #[test]
    fn a_duel_is_a_match_of_two_builtin_engines_with_their_options() {
        let command = MatchCommand::duel(
            GameId::Hex,
            "hex",
            &serde_json::json!({"time_ms": 50}),
            "greedy",
            &serde_json::json!({}),
            4,
            200,
            String::new(),
            7,
        )
        .unwrap();
        assert_eq!(
            command.engines[0].kind,
            "builtin:hex:time_ms=50".parse().unwrap()
        );
        assert_eq!(command.engines[1].kind, "builtin:greedy".parse().unwrap());
        let plan = command.plan(PathBuf::from("out")).unwrap();
        assert_eq!(plan.clock.move_limit_ms, Some(200));
        assert_eq!((plan.games, plan.concurrency), (4, 1));
        assert_eq!(plan.seed, Some(7));
        let config = plan.config().unwrap();
        assert!(config.bots.iter().all(|b| b.seed == Some(7)));
    }

    #[test]
    fn a_duel_option_value_with_a_comma_survives() {
        let options = serde_json::json!({"style": "sharp, then calm", "depth": 3});
        let command = MatchCommand::duel(
            GameId::Hex,
            "random",
            &options,
            "greedy",
            &serde_json::json!({}),
            2,
            100,
            String::new(),
            1,
        )
        .unwrap();
        assert_eq!(
            command.engines[0].kind,
            EngineKind::Builtin {
                engine: "random".into(),
                options
            }
        );
        let unknown = MatchCommand::duel(
            GameId::Hex,
            "nope",
            &serde_json::json!({}),
            "greedy",
            &serde_json::json!({}),
            2,
            100,
            String::new(),
            1,
        );
        assert!(matches!(unknown, Err(MatchError::Engine { .. })));
    }
}

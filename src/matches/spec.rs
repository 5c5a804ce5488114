//! What `arena match` is asked to play, parsed from the command line's words: the engines
//! (`builtin:ENGINE[:KEY=VALUE,…]` or a program spec, with the `--name`, `--dir` and `--init`
//! that follow each), their display names, the clock and the rule options.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::Value;

use super::MatchError;
use crate::program::ProgramSpec;

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
}

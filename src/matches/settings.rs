//! `match.json` in an `arena match --out` folder: the command a match was started with (game,
//! engines with their names, folders and init lines, games, clock, rules, openings), so that a
//! later run with another command is refused, finished or not, with the difference said in the
//! command line's words. Folders written before this file existed are checked against the
//! journal's fingerprint (everything but the engines' specs).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::journal::{JournalEntry, TournamentFingerprint, JOURNAL_FILE};
use crate::protocol::ClockSpec;

use super::{EngineKind, MatchError, MatchPlan, TOURNAMENT};

/// The file's name inside `--out`.
pub const SETTINGS_FILE: &str = "match.json";

/// Longest `match.json` (or first journal line) read: far more than any command line.
const MAX_BYTES: u64 = 1 << 20;

/// One `--engine` as the match was started with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// The spec as `--engine` takes it, options sorted (`builtin:hex:time_ms=50`).
    pub spec: String,
    #[serde(default)]
    pub dir: Option<PathBuf>,
    #[serde(default)]
    pub init: Vec<String>,
}

/// What a match's games depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchSettings {
    pub game: String,
    /// Display names (the names in records).
    pub names: [String; 2],
    /// `None` when known only from the journal.
    #[serde(default)]
    pub engines: Option<[EngineSettings; 2]>,
    pub games: u32,
    pub clock: ClockSpec,
    /// Every rule option in force.
    pub rules: Value,
    pub openings: Vec<String>,
}

/// Seconds as `--clock` takes them: `10`, `0.1`.
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        (ms / 1000).to_string()
    } else {
        (ms as f64 / 1000.0).to_string()
    }
}

impl MatchSettings {
    /// The settings of `plan`, with the checked `config` it becomes (its names and rules).
    pub fn of(plan: &MatchPlan, config: &Config) -> MatchSettings {
        let t = &config.tournaments[0];
        let engines = plan.engines.clone().map(|e| EngineSettings {
            spec: e.kind.to_string(),
            dir: e.dir,
            init: e.init,
        });
        MatchSettings {
            game: plan.game.as_str().to_string(),
            names: [t.bots[0].clone(), t.bots[1].clone()],
            engines: Some(engines),
            games: plan.games,
            clock: t.clock,
            rules: t.rules.clone(),
            openings: t.openings.clone(),
        }
    }

    fn of_fingerprint(t: &TournamentFingerprint) -> Option<MatchSettings> {
        let [a, b] = t.bots.as_slice() else {
            return None;
        };
        Some(MatchSettings {
            game: t.game.clone(),
            names: [a.clone(), b.clone()],
            engines: None,
            games: t.games_per_pairing,
            clock: t.clock,
            rules: t.rules.clone(),
            openings: t.openings.clone(),
        })
    }

    /// What `now` changes of these settings (the ones the folder was started with), one clause
    /// per difference in the command line's words; empty when nothing that matters changed.
    pub fn changes(&self, now: &MatchSettings) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |option: &str, then: String, now: String| {
            if then != now {
                out.push(format!(
                    "{option}{now} but this --out was started with {then}"
                ));
            }
        };
        differ("GAME ", self.game.clone(), now.game.clone());
        if let (Some(then), Some(engines)) = (&self.engines, &now.engines) {
            for (then, now) in then.iter().zip(engines) {
                differ("--engine ", then.spec.clone(), now.spec.clone());
                let dir = |d: &Option<PathBuf>| {
                    d.as_ref()
                        .map_or_else(|| "none".to_string(), |d| d.display().to_string())
                };
                differ(
                    &format!("--dir (of {}) ", now.spec),
                    dir(&then.dir),
                    dir(&now.dir),
                );
                differ(
                    &format!("--init (of {}) ", now.spec),
                    format!("{:?}", then.init),
                    format!("{:?}", now.init),
                );
            }
        }
        for (then, now) in self.names.iter().zip(&now.names) {
            differ("--name ", then.clone(), now.clone());
        }
        differ("--games ", self.games.to_string(), now.games.to_string());
        let clock =
            |c: &ClockSpec| format!("{}+{}", seconds(c.initial_ms), seconds(c.increment_ms));
        differ("--clock ", clock(&self.clock), clock(&now.clock));
        let limit = |c: &ClockSpec| c.move_limit_ms.unwrap_or(0).to_string();
        differ("--move-limit ", limit(&self.clock), limit(&now.clock));
        if self.rules != now.rules {
            differ("--rules ", self.rules.to_string(), now.rules.to_string());
        }
        if self.openings != now.openings {
            out.push(format!(
                "--openings gives {} openings (or other moves) but this --out was started with {}",
                now.openings.len(),
                self.openings.len()
            ));
        }
        out
    }

    /// The settings `dir` was started with: its `match.json`, else the journal's fingerprint;
    /// `None` for a folder with neither (a new match).
    pub fn read(dir: &Path) -> Result<Option<MatchSettings>, MatchError> {
        let io_error = |path: PathBuf| move |source| MatchError::Io { path, source };
        let path = dir.join(SETTINGS_FILE);
        if let Some(text) = read_capped(&path).map_err(io_error(path.clone()))? {
            let settings = serde_json::from_str(&text).map_err(|e| MatchError::Io {
                path: path.clone(),
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            })?;
            return Ok(Some(settings));
        }
        let journal = dir.join(JOURNAL_FILE);
        let Some(text) = read_capped(&journal).map_err(io_error(journal))? else {
            return Ok(None);
        };
        let first = text.lines().next().unwrap_or_default();
        Ok(match serde_json::from_str(first) {
            Ok(JournalEntry::Config { tournaments, .. }) => tournaments
                .iter()
                .find(|t| t.name == TOURNAMENT)
                .and_then(MatchSettings::of_fingerprint),
            _ => None,
        })
    }

    /// Writes `dir/match.json` (creating `dir`), replacing any older one atomically.
    pub fn write(&self, dir: &Path) -> Result<(), MatchError> {
        let path = dir.join(SETTINGS_FILE);
        std::fs::create_dir_all(dir).map_err(|source| MatchError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        crate::atomic_file::write_atomically(&path, text.as_bytes()).map_err(|e| MatchError::Io {
            path,
            source: io::Error::other(e),
        })
    }
}

/// The text of `path` up to [`MAX_BYTES`]; `None` when it does not exist.
fn read_capped(path: &Path) -> io::Result<Option<String>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut bytes)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Refuses to run `plan` in a folder started with other settings, and records the settings of
/// a new match (or of a folder that predates `match.json`).
pub fn check_and_record(plan: &MatchPlan, config: &Config) -> Result<(), MatchError> {
    let now = MatchSettings::of(plan, config);
    match MatchSettings::read(&plan.out_dir)? {
        Some(then) => {
            let changes = then.changes(&now);
            if !changes.is_empty() {
                return Err(MatchError::Changed {
                    dir: plan.out_dir.clone(),
                    changes,
                });
            }
            if then.engines.is_none() {
                now.write(&plan.out_dir)?;
            }
            Ok(())
        }
        None => now.write(&plan.out_dir),
    }
}

impl std::fmt::Display for EngineKind {
    /// As `--engine` takes it: `builtin:ENGINE[:KEY=VALUE,…]` (options sorted) or the program's
    /// `PROTOCOL:COMMAND`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineKind::Builtin { engine, options } => {
                write!(f, "builtin:{engine}")?;
                let mut pairs: Vec<String> = options
                    .as_object()
                    .map(|o| o.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                pairs.sort();
                if !pairs.is_empty() {
                    write!(f, ":{}", pairs.join(","))?;
                }
                Ok(())
            }
            EngineKind::Program(spec) => write!(f, "{spec}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matches::EngineEntry;

    fn plan(out_dir: &Path) -> MatchPlan {
        let mut plan = super::super::plan::tests::hex_plan(
            ["builtin:hex:time_ms=50", "builtin:greedy"],
            out_dir,
        );
        plan.concurrency = 1;
        plan.openings.truncate(1);
        plan
    }

    fn check(plan: &MatchPlan) -> Result<(), MatchError> {
        check_and_record(plan, &plan.config().unwrap())
    }

    #[test]
    fn a_changed_command_is_refused_in_command_line_words() {
        let dir = tempfile::tempdir().unwrap();
        let first = plan(dir.path());
        check(&first).unwrap();
        check(&first).unwrap();
        let mut other = first.clone();
        other.engines[1] = EngineEntry::new("builtin:random".parse().unwrap());
        other.clock.initial_ms = 60_000;
        other.clock.increment_ms = 1000;
        other.games = 24;
        let err = check(&other).unwrap_err().to_string();
        for clause in [
            "--engine builtin:random but this --out was started with builtin:greedy",
            "--name random but this --out was started with greedy",
            "--clock 60+1 but this --out was started with 10+0.1",
            "--games 24 but this --out was started with 4",
        ] {
            assert!(err.contains(clause), "{clause}: {err}");
        }
        // Options are part of the engine; their order is not.
        let mut options = first.clone();
        options.engines[0] = EngineEntry::new("builtin:hex:time_ms=500".parse().unwrap());
        let err = check(&options).unwrap_err().to_string();
        assert!(err.contains("--engine builtin:hex:time_ms=500"), "{err}");
        let mut rules = first.clone();
        rules.rules = serde_json::json!({"swap": true});
        assert!(check(&rules).unwrap_err().to_string().contains("--rules"));
        let mut openings = first.clone();
        openings.openings = vec![vec!["B2".into()]];
        assert!(check(&openings)
            .unwrap_err()
            .to_string()
            .contains("--openings"));
        // What does not change the games may change.
        let mut faster = first;
        faster.concurrency = 2;
        faster.sprt = Some("elo0=0,elo1=10,alpha=0.05,beta=0.05".parse().unwrap());
        check(&faster).unwrap();
    }

    #[test]
    fn a_folder_without_match_json_is_checked_against_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        let first = plan(dir.path());
        let config = first.config().unwrap();
        let t = &config.tournaments[0];
        let entry = JournalEntry::Config {
            hash: String::new(),
            tournaments: vec![TournamentFingerprint {
                name: TOURNAMENT.into(),
                game: "hex".into(),
                format: "round_robin".into(),
                bots: t.bots.clone(),
                games_per_pairing: 4,
                rounds: None,
                clock: t.clock,
                rules: t.rules.clone(),
                openings: t.openings.clone(),
            }],
        };
        let line = serde_json::to_string(&entry).unwrap();
        std::fs::write(dir.path().join(JOURNAL_FILE), line + "\n").unwrap();
        let mut more = first.clone();
        more.games = 6;
        let err = check(&more).unwrap_err().to_string();
        assert!(
            err.contains("--games 6 but this --out was started with 4"),
            "{err}"
        );
        check(&first).unwrap();
        assert!(dir.path().join(SETTINGS_FILE).exists());
    }
}

//! The configuration's checks (`Config::validate`): every cross-key rule of `arena.toml`
//! (addresses, limits, names, bots and tournaments that refer to each other, rule and engine
//! options) checked after parsing, each refusal naming the key it concerns, and every rule
//! option's default filled in.

use std::collections::HashSet;

use super::{
    Config, ConfigError, MAX_SERVER_THREADS, MAX_TIMEOUT_SETTLE_MS, MAX_TOURNAMENT_NAME_CHARS,
};
use crate::game::normalize_rules;

impl Config {
    /// Checks every cross-key rule and fills in every rule option's default.
    pub fn validate(&mut self) -> Result<(), ConfigError> {
        self.listen_addr()?;
        self.web_addr()?;
        let s = &self.server;
        for (key, value) in [
            ("server.max_connections", s.max_connections as u64),
            ("server.hello_timeout_ms", s.hello_timeout_ms),
            ("server.ping_interval_ms", s.ping_interval_ms),
            ("server.max_bad_lines", u64::from(s.max_bad_lines)),
            ("server.write_queue_lines", s.write_queue_lines as u64),
            ("server.max_games_cap", u64::from(s.max_games_cap)),
            (
                "server.web_max_event_streams",
                s.web_max_event_streams as u64,
            ),
            ("server.web_max_sockets", s.web_max_sockets as u64),
            (
                "server.max_failed_logins_per_minute",
                u64::from(s.max_failed_logins_per_minute),
            ),
            ("server.web_max_connections", s.web_max_connections as u64),
            (
                "server.web_max_connections_per_address",
                s.web_max_connections_per_address as u64,
            ),
            ("server.web_header_timeout_ms", s.web_header_timeout_ms),
            ("server.web_write_timeout_ms", s.web_write_timeout_ms),
            (
                "server.web_max_request_bytes",
                s.web_max_request_bytes as u64,
            ),
            (
                "server.web_max_event_streams_per_address",
                s.web_max_event_streams_per_address as u64,
            ),
            (
                "server.web_max_sockets_per_address",
                s.web_max_sockets_per_address as u64,
            ),
            (
                "server.max_unauthenticated_per_address",
                s.max_unauthenticated_per_address as u64,
            ),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(key, "must be at least 1"));
            }
        }
        for (key, value) in [
            ("server.reconnect_grace_ms", s.reconnect_grace_ms),
            ("server.max_lag_ms", s.max_lag_ms),
            ("server.hello_timeout_ms", s.hello_timeout_ms),
            ("server.ping_interval_ms", s.ping_interval_ms),
            ("server.pong_timeout_ms", s.pong_timeout_ms),
            ("server.failed_login_block_ms", s.failed_login_block_ms),
            ("server.web_header_timeout_ms", s.web_header_timeout_ms),
            ("server.web_write_timeout_ms", s.web_write_timeout_ms),
        ] {
            check_duration_ms(key, value)?;
        }
        if s.timeout_settle_ms > MAX_TIMEOUT_SETTLE_MS {
            return Err(ConfigError::invalid(
                "server.timeout_settle_ms",
                format!("at most {MAX_TIMEOUT_SETTLE_MS} (it delays every loss on time)"),
            ));
        }
        if s.threads > MAX_SERVER_THREADS {
            return Err(ConfigError::invalid(
                "server.threads",
                format!("at most {MAX_SERVER_THREADS} (0: one per core)"),
            ));
        }
        if s.out_dir.as_os_str().is_empty() {
            return Err(ConfigError::invalid("server.out_dir", "must not be empty"));
        }
        self.programs.validate(&self.bots)?;
        let engines = crate::engine::catalogue();
        let mut names = HashSet::new();
        for (i, bot) in self.bots.iter().enumerate() {
            let key = |field: &str| format!("bot[{i}].{field}");
            if bot.name.trim().is_empty() || bot.name.chars().any(char::is_control) {
                return Err(ConfigError::invalid(
                    key("name"),
                    "a bot needs a non-empty name without control characters",
                ));
            }
            if !names.insert(bot.name.as_str()) {
                return Err(ConfigError::invalid(
                    key("name"),
                    format!("duplicate bot name {:?}", bot.name),
                ));
            }
            let kinds = usize::from(bot.token.is_some())
                + usize::from(bot.builtin.is_some())
                + usize::from(bot.program.is_some());
            if kinds == 0 {
                return Err(ConfigError::invalid(
                    key("token"),
                    format!(
                        "bot {:?} needs `token` (a bot that connects), `builtin` (an engine id) or `program` (PROTOCOL:COMMAND)",
                        bot.name
                    ),
                ));
            }
            if kinds > 1 {
                let field = if bot.program.is_some() {
                    "program"
                } else {
                    "builtin"
                };
                return Err(ConfigError::invalid(
                    key(field),
                    format!(
                        "bot {:?} has more than one of `token`, `builtin` and `program`; give one",
                        bot.name
                    ),
                ));
            }
            if bot.token.as_ref().is_some_and(String::is_empty) {
                return Err(ConfigError::invalid(key("token"), "must not be empty"));
            }
            if let Some(id) = &bot.builtin {
                if !engines.iter().any(|e| e.id == id) {
                    return Err(ConfigError::invalid(
                        key("builtin"),
                        format!(
                            "unknown engine {id:?} (known: {})",
                            engines.iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            if let Some(program) = &bot.program {
                if let Err(e) = program.parse::<crate::program::ProgramSpec>() {
                    return Err(ConfigError::invalid(key("program"), e.to_string()));
                }
            } else {
                for (field, set) in [
                    ("dir", bot.dir.is_some()),
                    ("init", !bot.init.is_empty()),
                    ("memory_mb", bot.memory_mb.is_some()),
                ] {
                    if set {
                        return Err(ConfigError::invalid(key(field), "only for `program` bots"));
                    }
                }
            }
            if bot.memory_mb == Some(0) {
                return Err(ConfigError::invalid(key("memory_mb"), "must be at least 1"));
            }
            if bot.builtin.is_none() && !bot.options.is_null() {
                return Err(ConfigError::invalid(
                    key("options"),
                    "engine options are only for built-in bots",
                ));
            }
            if bot.builtin.is_none() && bot.seed.is_some() {
                return Err(ConfigError::invalid(
                    key("seed"),
                    "a seed is only for built-in bots",
                ));
            }
            if !bot.options.is_null() && !bot.options.is_object() {
                return Err(ConfigError::invalid(key("options"), "must be a table"));
            }
            if let Some(id) = &bot.builtin {
                match crate::engine::check_options(id, &bot.options) {
                    Ok(()) => {}
                    Err(crate::engine::EngineError::BadOption { name, why }) => {
                        return Err(ConfigError::invalid(
                            format!("{}.{name}", key("options")),
                            why,
                        ));
                    }
                    Err(e) => return Err(ConfigError::invalid(key("options"), e.to_string())),
                }
            }
            if bot.max_games == 0 {
                return Err(ConfigError::invalid(key("max_games"), "must be at least 1"));
            }
        }
        let mut tournament_names = HashSet::new();
        for (i, t) in self.tournaments.iter_mut().enumerate() {
            let key = |field: &str| format!("tournament[{i}].{field}");
            if t.name.chars().count() > MAX_TOURNAMENT_NAME_CHARS {
                return Err(ConfigError::invalid(
                    key("name"),
                    format!(
                        "a tournament name is at most {MAX_TOURNAMENT_NAME_CHARS} characters (it is part of match ids and record file names)"
                    ),
                ));
            }
            if t.name.trim().is_empty()
                || !t
                    .name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.')
            {
                return Err(ConfigError::invalid(
                    key("name"),
                    format!(
                        "{:?}: a tournament name is letters, digits, '-', '_' or '.' (it is part of match ids)",
                        t.name
                    ),
                ));
            }
            if !tournament_names.insert(t.name.clone()) {
                return Err(ConfigError::invalid(
                    key("name"),
                    format!("duplicate tournament name {:?}", t.name),
                ));
            }
            if t.bots.len() < 2 {
                return Err(ConfigError::invalid(
                    key("bots"),
                    format!("tournament {:?} needs at least two bots", t.name),
                ));
            }
            let mut seen = HashSet::new();
            for name in &t.bots {
                let Some(bot) = self.bots.iter().find(|b| &b.name == name) else {
                    return Err(ConfigError::invalid(
                        key("bots"),
                        format!("tournament {:?} names unknown bot {name:?}", t.name),
                    ));
                };
                if !seen.insert(name.as_str()) {
                    return Err(ConfigError::invalid(
                        key("bots"),
                        format!("tournament {:?} names bot {name:?} twice", t.name),
                    ));
                }
                if let Some(id) = &bot.builtin {
                    if let Some(info) = engines.iter().find(|e| e.id == id) {
                        if !info.games.contains(&t.game) {
                            return Err(ConfigError::invalid(
                                key("bots"),
                                format!("bot {name:?} (engine {id}) does not play {}", t.game),
                            ));
                        }
                    }
                }
            }
            if t.games_per_pairing == 0 {
                return Err(ConfigError::invalid(
                    key("games_per_pairing"),
                    "must be at least 1",
                ));
            }
            if t.concurrency == 0 {
                return Err(ConfigError::invalid(
                    key("concurrency"),
                    "must be at least 1",
                ));
            }
            if t.rounds == 0 {
                return Err(ConfigError::invalid(key("rounds"), "must be at least 1"));
            }
            for (field, value) in [
                ("clock.initial_ms", t.clock.initial_ms),
                ("clock.increment_ms", t.clock.increment_ms),
                ("clock.move_limit_ms", t.clock.move_limit_ms.unwrap_or(0)),
                ("absent_forfeit_ms", t.absent_forfeit_ms),
            ] {
                check_duration_ms(&key(field), value)?;
            }
            if t.clock.initial_ms == 0 {
                return Err(ConfigError::invalid(
                    key("clock.initial_ms"),
                    "must be at least 1",
                ));
            }
            for (field, value) in [
                ("win", t.points.win),
                ("draw", t.points.draw),
                ("loss", t.points.loss),
            ] {
                if !value.is_finite() {
                    return Err(ConfigError::invalid(
                        key(&format!("points.{field}")),
                        "must be a finite number",
                    ));
                }
            }
            t.rules = normalize_rules(t.game, &t.rules).map_err(|e| {
                ConfigError::invalid(
                    format!("{}.{}", key("rules"), option_name(&e.message)),
                    e.message.clone(),
                )
            })?;
            if !t.openings.is_empty() {
                crate::openings::parse_openings(t.game, &t.rules, &t.openings.join("\n"))
                    .map_err(|e| ConfigError::invalid(key("openings"), e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// The option an `OptionsError` message names (the text before its first `:`), or `?`.
fn option_name(message: &str) -> String {
    match message.split_once(':') {
        Some((name, _)) if !name.contains(' ') => name.to_string(),
        _ => "?".to_string(),
    }
}

/// Longest time any `_ms` key may give (30 days): the clocks add these to the current instant,
/// and a value near `u64::MAX` would overflow there.
pub const MAX_DURATION_MS: u64 = 30 * 24 * 60 * 60 * 1000;

fn check_duration_ms(key: &str, value: u64) -> Result<(), ConfigError> {
    if value > MAX_DURATION_MS {
        return Err(ConfigError::invalid(
            key,
            format!("{value} ms is too long for the clocks (at most {MAX_DURATION_MS}, 30 days)"),
        ));
    }
    Ok(())
}

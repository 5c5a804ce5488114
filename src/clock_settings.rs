//! The clock settings of a match (`ClockSpec`): one type for the protocol's `start`, games.jsonl,
//! the journal's fingerprint and arena.toml's `clock` table, with the two ways they write "no
//! per-move limit" (JSON null in messages and games.jsonl, `0` in arena.toml and the journal).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration in whole milliseconds, as clocks, the journal and games.jsonl count them
/// (saturating at `u64::MAX`).
pub fn whole_ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A match's clock: starting time, increment per move and the optional per-move limit (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSpec {
    pub initial_ms: u64,
    pub increment_ms: u64,
    /// `None` when there is no per-move limit: written as JSON null; read from null, a missing
    /// field or 0.
    #[serde(default, deserialize_with = "zero_means_none")]
    pub move_limit_ms: Option<u64>,
}

/// Ten minutes each, no increment, no per-move limit (arena.toml's defaults).
impl Default for ClockSpec {
    fn default() -> Self {
        ClockSpec {
            initial_ms: 600_000,
            increment_ms: 0,
            move_limit_ms: None,
        }
    }
}

fn zero_means_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<u64>::deserialize(deserializer)?.filter(|&ms| ms > 0))
}

/// The table form of arena.toml and the journal: every key optional (defaults as
/// `ClockSpec::default`), unknown keys refused, `move_limit_ms = 0` for no limit.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Table {
    initial_ms: u64,
    increment_ms: u64,
    move_limit_ms: u64,
}

impl Default for Table {
    fn default() -> Self {
        Table::from(ClockSpec::default())
    }
}

impl From<ClockSpec> for Table {
    fn from(c: ClockSpec) -> Self {
        Table {
            initial_ms: c.initial_ms,
            increment_ms: c.increment_ms,
            move_limit_ms: c.move_limit_ms.unwrap_or(0),
        }
    }
}

/// `#[serde(with = "crate::clock_settings::table")]`: a `ClockSpec` written and read in the
/// table form (arena.toml's `clock`, the journal's fingerprint).
pub mod table {
    use super::*;

    pub fn serialize<S: Serializer>(clock: &ClockSpec, serializer: S) -> Result<S::Ok, S::Error> {
        Table::from(*clock).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ClockSpec, D::Error> {
        let t = Table::deserialize(deserializer)?;
        Ok(ClockSpec {
            initial_ms: t.initial_ms,
            increment_ms: t.increment_ms,
            move_limit_ms: (t.move_limit_ms > 0).then_some(t.move_limit_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct InTable {
        #[serde(with = "table")]
        clock: ClockSpec,
    }

    #[test]
    fn no_limit_is_null_in_json_and_zero_in_tables() {
        let clock = ClockSpec {
            initial_ms: 1000,
            increment_ms: 10,
            move_limit_ms: None,
        };
        let json = serde_json::to_string(&clock).unwrap();
        assert_eq!(
            json,
            r#"{"initial_ms":1000,"increment_ms":10,"move_limit_ms":null}"#
        );
        assert_eq!(serde_json::from_str::<ClockSpec>(&json).unwrap(), clock);
        let zero = r#"{"initial_ms":1000,"increment_ms":10,"move_limit_ms":0}"#;
        assert_eq!(serde_json::from_str::<ClockSpec>(zero).unwrap(), clock);
        let tabled = serde_json::to_string(&InTable { clock }).unwrap();
        assert!(tabled.contains(r#""move_limit_ms":0"#), "{tabled}");
        assert_eq!(
            serde_json::from_str::<InTable>(&tabled).unwrap().clock,
            clock
        );
    }

    #[test]
    fn tables_take_defaults_and_refuse_unknown_keys() {
        let read = |s: &str| serde_json::from_str::<InTable>(s).map(|t| t.clock);
        assert_eq!(
            read(r#"{"clock":{"move_limit_ms":300}}"#).unwrap(),
            ClockSpec {
                move_limit_ms: Some(300),
                ..ClockSpec::default()
            }
        );
        let err = read(r#"{"clock":{"inital_ms":5}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("inital_ms"), "{err}");
    }
}

//! Engine options: each engine reads its options table into its own typed options in one step
//! (`parse`), as a game reads its rule options (`game::parse_options`). An unknown key is
//! refused with the engine's own list of keys; a bad value is refused naming its key and what
//! it must be. Whole numbers (`Whole`) come as JSON numbers or as strings of digits, as
//! `arena match` specs and `--option` flags give them.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::EngineError;

/// A whole-number option from `LO` to `HI`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Whole<const LO: u64, const HI: u64>(u64);

impl<const LO: u64, const HI: u64> Whole<LO, HI> {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<const LO: u64, const HI: u64> fmt::Display for Whole<LO, HI> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de, const LO: u64, const HI: u64> Deserialize<'de> for Whole<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let number = match &value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        match number {
            Some(n) if (LO..=HI).contains(&n) => Ok(Whole(n)),
            _ => Err(serde::de::Error::custom(format!(
                "must be a whole number from {LO} to {HI}, found {value}"
            ))),
        }
    }
}

/// Reads an engine's options table (`null`: none given) into its typed options `T`, whose
/// deserialisation refuses unknown fields.
pub fn parse<T: DeserializeOwned + Default>(options: &Value) -> Result<T, EngineError> {
    if options.is_null() {
        return Ok(T::default());
    }
    // A struct would also be read from a list, its fields in order: only a table names them.
    if !options.is_object() {
        return Err(EngineError::BadOption {
            name: "options".to_string(),
            why: format!("must be a table, found {options}"),
        });
    }
    serde_path_to_error::deserialize(options).map_err(|e| {
        let path = e.path().to_string();
        EngineError::BadOption {
            name: if path == "." {
                "options".to_string()
            } else {
                path
            },
            why: e.inner().to_string(),
        }
    })
}

/// Options of an engine that has none (`random`, `greedy`): an empty table or nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Sample {
        depth: Option<Whole<1, 20>>,
        time_ms: Option<Whole<0, 1000>>,
    }

    fn read(options: Value) -> Result<Sample, EngineError> {
        parse(&options)
    }

    #[test]
    fn numbers_and_strings_of_digits_are_read_in_one_step() {
        let sample = read(json!({"depth": 3, "time_ms": " 50 "})).unwrap();
        assert_eq!(sample.depth.map(Whole::get), Some(3));
        assert_eq!(sample.time_ms.map(Whole::get), Some(50));
        assert_eq!(read(Value::Null).unwrap(), Sample::default());
        assert_eq!(read(json!({"depth": null})).unwrap(), Sample::default());
    }

    #[test]
    fn a_bad_value_is_refused_naming_its_key_and_range() {
        for bad in [
            json!(0),
            json!(21),
            json!(-1),
            json!(2.5),
            json!("x"),
            json!(true),
        ] {
            match read(json!({ "depth": bad })) {
                Err(EngineError::BadOption { name, why }) => {
                    assert_eq!(name, "depth", "{bad}");
                    assert!(why.contains("from 1 to 20"), "{bad}: {why}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_engines_own_list() {
        let e = read(json!({"dpth": 3})).unwrap_err();
        assert!(
            matches!(&e, EngineError::BadOption { name, .. } if name == "dpth"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("depth") && e.contains("time_ms"), "{e}");
        let e = parse::<NoOptions>(&json!({"depth": 3})).unwrap_err();
        assert!(e.to_string().contains("depth"), "{e}");
        assert_eq!(parse::<NoOptions>(&json!({})).unwrap(), NoOptions {});
        for not_a_table in [json!("depth=3"), json!([3, 50])] {
            let e = read(not_a_table).unwrap_err();
            assert!(
                matches!(&e, EngineError::BadOption { name, .. } if name == "options"),
                "{e}"
            );
        }
    }
}

//! The one reader of `KEY=VALUE` text: a list `KEY=VALUE[,KEY=VALUE…]` (engine options in a
//! `builtin:` spec, `--rules`, `--sprt`, repeated `--option` flags) or items the caller has
//! already split (the `key=value` tokens of a position text). What the keys mean and what
//! their values must be is the caller's to check; this only finds the pairs, refusing an item
//! without `=`, an empty key and a key given twice. Pure: no I/O.

use serde_json::Value;

use crate::log_text::client_text;

/// One `KEY=VALUE` item: the key and the value with the spaces around them dropped (the value
/// is everything after the first `=`, so it may hold `=` itself), and where the item starts in
/// the caller's unit (a byte offset for `read_list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub at: usize,
}

/// Text that is not a list of `KEY=VALUE` pairs. The messages show the item escaped and cut
/// (`log_text::client_text`): the text may come from a web visitor or a bot, and an item can be
/// kilobytes long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error("expected key=value, found \"{}\"", client_text(.item))]
    NoEquals { item: String, at: usize },
    #[error("\"{}\" has no key before its =", client_text(.item))]
    NoKey { item: String, at: usize },
    #[error("{} is given twice", client_text(.key))]
    Duplicate { key: String, at: usize },
}

impl PairError {
    /// Where the item at fault starts, in the unit its position was given in.
    pub fn at(&self) -> usize {
        match self {
            PairError::NoEquals { at, .. }
            | PairError::NoKey { at, .. }
            | PairError::Duplicate { at, .. } => *at,
        }
    }
}

/// Reads items that must each be `KEY=VALUE`, each with its position: the pairs in order. Keys
/// are compared without regard to ASCII case when looking for one given twice.
pub fn read_items<'a>(
    items: impl IntoIterator<Item = (usize, &'a str)>,
) -> Result<Vec<Pair<'a>>, PairError> {
    let mut pairs: Vec<Pair<'a>> = Vec::new();
    // Keys seen so far, lower-cased: one look per item, not a scan of the pairs (position
    // texts from web visitors may hold a couple of thousand items).
    let mut seen = std::collections::HashSet::new();
    for (at, item) in items {
        let Some((key, value)) = item.split_once('=') else {
            return Err(PairError::NoEquals {
                item: item.to_string(),
                at,
            });
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(PairError::NoKey {
                item: item.to_string(),
                at,
            });
        }
        if !seen.insert(key.to_ascii_lowercase()) {
            return Err(PairError::Duplicate {
                key: key.to_string(),
                at,
            });
        }
        pairs.push(Pair {
            key,
            value: value.trim(),
            at,
        });
    }
    Ok(pairs)
}

/// Reads `KEY=VALUE[,KEY=VALUE…]`: items separated by commas, spaces around them ignored,
/// empty items (an empty text, a trailing comma) skipped. Positions are byte offsets.
pub fn read_list(text: &str) -> Result<Vec<Pair<'_>>, PairError> {
    let mut items = Vec::new();
    let mut start = 0;
    for item in text.split(',') {
        let trimmed = item.trim_start();
        let at = start + (item.len() - trimmed.len());
        start += item.len() + 1;
        let trimmed = trimmed.trim_end();
        if !trimmed.is_empty() {
            items.push((at, trimmed));
        }
    }
    read_items(items)
}

/// A value as a command line gives it: JSON when it reads as JSON (a number, `true`, a quoted
/// string…), otherwise the text itself as a string.
pub fn json_value(value: &str) -> Value {
    serde_json::from_str::<Value>(value).unwrap_or_else(|_| Value::String(value.to_string()))
}

/// The pairs as a JSON object of `json_value`s (engine options, rule options).
pub fn json_object(pairs: &[Pair<'_>]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|p| (p.key.to_string(), json_value(p.value)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys_and_values(text: &str) -> Vec<(&str, &str)> {
        read_list(text)
            .unwrap()
            .into_iter()
            .map(|p| (p.key, p.value))
            .collect()
    }

    #[test]
    fn a_list_is_read_in_order_with_spaces_dropped() {
        assert_eq!(
            keys_and_values(" depth = 3,time_ms=50 ,  book=a b "),
            [("depth", "3"), ("time_ms", "50"), ("book", "a b")]
        );
    }

    #[test]
    fn a_value_may_hold_an_equals_sign() {
        assert_eq!(
            keys_and_values("expr=a=b,x=="),
            [("expr", "a=b"), ("x", "=")]
        );
    }

    #[test]
    fn empty_text_and_empty_items_are_no_pairs_but_an_empty_value_is_kept() {
        assert!(read_list("").unwrap().is_empty());
        assert!(read_list(" , ,").unwrap().is_empty());
        assert_eq!(keys_and_values("a=1,,b=,"), [("a", "1"), ("b", "")]);
    }

    #[test]
    fn an_item_without_equals_or_key_is_refused_where_it_starts() {
        assert_eq!(
            read_list("a=1, depth").unwrap_err(),
            PairError::NoEquals {
                item: "depth".into(),
                at: 5
            }
        );
        let e = read_list("a=1,=3").unwrap_err();
        assert_eq!(e.at(), 4);
        assert!(e.to_string().contains("no key"), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_refused_whatever_its_case() {
        let e = read_list("depth=1,time_ms=2,Depth=3").unwrap_err();
        assert_eq!(
            e,
            PairError::Duplicate {
                key: "Depth".into(),
                at: 18
            }
        );
        assert_eq!(e.to_string(), "Depth is given twice");
    }

    #[test]
    fn items_split_by_the_caller_keep_the_callers_positions() {
        let pairs = read_items([(7, "phase=battle"), (20, "quiet=3")]).unwrap();
        assert_eq!(pairs[1].at, 20);
        assert_eq!(read_items([(7, "x"), (9, "y=1")]).unwrap_err().at(), 7);
    }

    #[test]
    fn values_are_json_when_they_read_as_json() {
        let pairs = read_list(r#"depth=3,book=true,style=sharp,name="a,b""#);
        // The comma splits the quoted string: a list cannot hold a comma in a value.
        assert!(pairs.is_err());
        let pairs = read_list("depth=3,book=true,style=sharp,ratio=0.5").unwrap();
        assert_eq!(
            json_object(&pairs),
            json!({"depth": 3, "book": true, "style": "sharp", "ratio": 0.5})
        );
        assert_eq!(json_value("\"quoted\""), json!("quoted"));
    }

    #[test]
    fn a_long_or_hostile_item_is_shown_escaped_and_cut() {
        let long = format!("{}\u{202e}\nforged", "x".repeat(4000));
        let message = read_list(&long).unwrap_err().to_string();
        assert!(message.len() < 200, "{message}");
        assert!(message.contains("bytes)"), "{message}");
        let message = read_list("a\nb").unwrap_err().to_string();
        assert_eq!(message, "expected key=value, found \"a\\nb\"");
        let message = read_list("=1").unwrap_err().to_string();
        assert_eq!(message, "\"=1\" has no key before its =");
    }
}

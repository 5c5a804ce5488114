//! Writing the two JSON lines the referee writes at every move (the `turn` line and the
//! journal's `move` entry), and the move list of a game's `end` lines, straight into a byte
//! buffer, byte for byte as `serde_json` writes them, without its serializer: a profile of the
//! move path put `serde_json`'s key and string writing at about 5% of the server's CPU per
//! move. Strings that need no escaping (every key, and nearly every match id and move text) are
//! copied as they are; any other string is written by `serde_json`, so escaping stays exactly
//! its own.

/// Appends `text` as a JSON string, quotes included.
pub fn push_str(out: &mut Vec<u8>, text: &str) {
    let plain = text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, text).is_err() {
        // Writing a string into a vector cannot fail; an empty string keeps the line valid.
        out.extend_from_slice(b"\"\"");
    }
}

/// Appends `texts` as JSON strings separated by commas (a list's items, brackets not included).
pub fn push_str_items<'a>(out: &mut Vec<u8>, texts: impl IntoIterator<Item = &'a str>) {
    for (i, text) in texts.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_str(out, text);
    }
}

/// Appends an unsigned number.
pub fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends `,"key":` (or `"key":` at `first`), for a key that needs no escaping.
pub fn push_key(out: &mut Vec<u8>, key: &str, first: bool) {
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Strings with every kind of byte `serde_json` treats specially.
    pub(crate) const AWKWARD: &[&str] = &[
        "",
        "J10",
        "t-r1-p2-g3",
        "quote\"inside",
        "back\\slash",
        "new\nline\ttab\rcr",
        "\u{0}\u{1f}\u{7f}",
        "六子棋 ☃ é",
        "slash/es",
    ];

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for text in AWKWARD {
            let mut out = Vec::new();
            push_str(&mut out, text);
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                serde_json::to_string(text).expect("json"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        for n in [0, 7, 10, 999, 1_000_000, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).expect("json"));
        }
    }
}

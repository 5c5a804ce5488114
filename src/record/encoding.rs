//! The character encodings of record files: writing UTF-8 or GB2312 (GB18030 for characters
//! outside GB2312), and reading either (strict UTF-8 first, BOM tolerated, else GB18030).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The encoding record files are written in (`record_encoding` in arena.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum RecordEncoding {
    /// UTF-8 without a byte-order mark (the default).
    #[default]
    #[serde(rename = "utf-8", alias = "utf8", alias = "UTF-8")]
    Utf8,
    /// GB2312, as the contest standard asks; characters outside GB2312 (names such as 喆 or 镕)
    /// are written in GB18030, of which GB2312 is a subset, so every name survives.
    #[serde(rename = "gb2312", alias = "GB2312", alias = "gb18030", alias = "gbk")]
    Gb2312,
}

impl RecordEncoding {
    /// `utf-8` or `gb2312`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordEncoding::Utf8 => "utf-8",
            RecordEncoding::Gb2312 => "gb2312",
        }
    }

    /// The bytes of `text` in this encoding. Never fails: GB18030 encodes all of Unicode, and
    /// for a character of GB2312 its bytes are GB2312's.
    pub fn encode(self, text: &str) -> Vec<u8> {
        match self {
            RecordEncoding::Utf8 => text.as_bytes().to_vec(),
            RecordEncoding::Gb2312 => {
                let (bytes, _, _) = encoding_rs::GB18030.encode(text);
                bytes.into_owned()
            }
        }
    }
}

impl fmt::Display for RecordEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record encoding name that is not `utf-8` or `gb2312`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown record encoding {0:?} (expected utf-8 or gb2312)")]
pub struct UnknownEncodingError(pub String);

impl FromStr for RecordEncoding {
    type Err = UnknownEncodingError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Ok(RecordEncoding::Utf8),
            "gb2312" | "gb18030" | "gbk" => Ok(RecordEncoding::Gb2312),
            _ => Err(UnknownEncodingError(s.to_string())),
        }
    }
}

/// Bytes that are neither UTF-8 nor GB18030.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not text in UTF-8 or GB2312/GB18030 (bad bytes at byte {byte})")]
pub struct DecodeError {
    /// 1-based offset of the first byte GB18030 could not decode.
    pub byte: usize,
}

/// Which encoding `decode` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectedEncoding {
    Utf8,
    Gb18030,
}

/// Decodes a record file: strict UTF-8 (a leading byte-order mark is dropped), else GB18030
/// (which reads GB2312 and GBK too). Nothing is replaced: undecodable bytes are an error.
pub fn decode(bytes: &[u8]) -> Result<(String, DetectedEncoding), DecodeError> {
    let without_bom = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Ok(text) = std::str::from_utf8(without_bom) {
        return Ok((text.to_string(), DetectedEncoding::Utf8));
    }
    let mut decoder = encoding_rs::GB18030.new_decoder_without_bom_handling();
    let capacity = decoder
        .max_utf8_buffer_length_without_replacement(bytes.len())
        .unwrap_or(bytes.len().saturating_mul(3).saturating_add(16));
    let mut text = String::with_capacity(capacity);
    let (result, read) = decoder.decode_to_string_without_replacement(bytes, &mut text, true);
    match result {
        encoding_rs::DecoderResult::InputEmpty => Ok((text, DetectedEncoding::Gb18030)),
        encoding_rs::DecoderResult::Malformed(bad, after) => Err(DecodeError {
            byte: read
                .saturating_sub(bad as usize + after as usize)
                .saturating_add(1),
        }),
        encoding_rs::DecoderResult::OutputFull => Err(DecodeError { byte: read + 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gb2312_characters_get_their_gb2312_bytes() {
        // 先手胜 平局 后手胜 重庆 in GB2312 (from the GB2312 code table, via Python's codec).
        let expected: &[u8] = &[
            0xcf, 0xc8, 0xca, 0xd6, 0xca, 0xa4, b' ', 0xc6, 0xbd, 0xbe, 0xd6, b' ', 0xba, 0xf3,
            0xca, 0xd6, 0xca, 0xa4, b' ', 0xd6, 0xd8, 0xc7, 0xec,
        ];
        assert_eq!(
            RecordEncoding::Gb2312.encode("先手胜 平局 后手胜 重庆"),
            expected
        );
    }

    #[test]
    fn characters_outside_gb2312_fall_back_to_gb18030() {
        // 喆 and 镕 are GBK two-byte codes; 𠀀 needs GB18030's four bytes.
        assert_eq!(RecordEncoding::Gb2312.encode("喆"), [0x86, 0xb4]);
        assert_eq!(RecordEncoding::Gb2312.encode("镕"), [0xe9, 0x46]);
        assert_eq!(
            RecordEncoding::Gb2312.encode("𠀀"),
            [0x95, 0x32, 0x82, 0x36]
        );
        let text = "{[HEX][喆队 R][𠀀 B]}";
        let (back, found) = decode(&RecordEncoding::Gb2312.encode(text)).unwrap();
        assert_eq!((back.as_str(), found), (text, DetectedEncoding::Gb18030));
    }

    #[test]
    fn decode_prefers_utf8_and_drops_a_bom() {
        let (text, found) = decode("\u{feff}{[C6]先手胜}".as_bytes()).unwrap();
        assert_eq!(
            (text.as_str(), found),
            ("{[C6]先手胜}", DetectedEncoding::Utf8)
        );
        let (text, found) = decode(b"ascii").unwrap();
        assert_eq!((text.as_str(), found), ("ascii", DetectedEncoding::Utf8));
    }

    #[test]
    fn undecodable_bytes_are_an_error_with_their_offset() {
        // 0xFF is never valid in GB18030 (nor in UTF-8).
        assert_eq!(decode(b"ab\xffcd").unwrap_err(), DecodeError { byte: 3 });
        assert_eq!(
            decode(b"\xa1\xa1\xff").unwrap_err(),
            DecodeError { byte: 3 }
        );
    }

    #[test]
    fn encoding_names_parse_and_deserialize() {
        for (name, enc) in [
            ("utf-8", RecordEncoding::Utf8),
            ("UTF8", RecordEncoding::Utf8),
            ("gb2312", RecordEncoding::Gb2312),
            ("GB18030", RecordEncoding::Gb2312),
        ] {
            assert_eq!(name.parse::<RecordEncoding>().unwrap(), enc);
        }
        assert!("latin1".parse::<RecordEncoding>().is_err());
        let enc: RecordEncoding = serde_json::from_str("\"gb2312\"").unwrap();
        assert_eq!(enc, RecordEncoding::Gb2312);
        assert_eq!(
            serde_json::to_string(&RecordEncoding::Utf8).unwrap(),
            "\"utf-8\""
        );
        assert!(serde_json::from_str::<RecordEncoding>("\"latin1\"").is_err());
    }
}

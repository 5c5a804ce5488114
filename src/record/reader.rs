//! The record reader: bytes → decoded text → header fields and move tokens → a `Record`, with
//! each move's written colour and token number kept for `arena check`.
//!
//! Tolerated (real records vary): a UTF-8 byte-order mark; GB2312/GBK/GB18030 bytes; blanks
//! and line breaks between the header fields, between the header and the moves, around `;`,
//! inside the brackets' edges and inside tokens; lower-case letters; a `;` right before `}`
//! (an empty last token); no `;` between the header and the first token; anything after a
//! token's last `)` up to the next `;` (e.g. `MARK[1]` in Connect6 files); blanks after `}`.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::encoding::{decode, DecodeError};
use super::tokens::read_token;
use super::{Record, RecordResult};
use crate::game::{GameId, Side};

/// The largest record file the reader accepts (a long Jiu game is a few tens of kilobytes).
pub const MAX_RECORD_BYTES: usize = 4 << 20;

/// The six header fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderField {
    GameCode,
    FirstTeam,
    SecondTeam,
    Result,
    DateTimePlace,
    Event,
}

impl HeaderField {
    const ALL: [HeaderField; 6] = [
        HeaderField::GameCode,
        HeaderField::FirstTeam,
        HeaderField::SecondTeam,
        HeaderField::Result,
        HeaderField::DateTimePlace,
        HeaderField::Event,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HeaderField::GameCode => "game code",
            HeaderField::FirstTeam => "first team",
            HeaderField::SecondTeam => "second team",
            HeaderField::Result => "result",
            HeaderField::DateTimePlace => "date, time and place",
            HeaderField::Event => "event",
        }
    }
}

impl std::fmt::Display for HeaderField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why bytes are not a record. Character positions are 1-based, in the decoded text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordParseError {
    #[error("the file is too large ({size} bytes; a record has at most {max})")]
    TooLarge { size: usize, max: usize },
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("character {at}: {what}")]
    Syntax { at: usize, what: String },
    #[error("header field {field} (character {at}): {what}")]
    Header {
        field: HeaderField,
        at: usize,
        what: String,
    },
    #[error("token {token} {text:?} (character {at}): {what}")]
    Token {
        /// 1-based number of the move token.
        token: usize,
        /// The token as written, blanks removed (at most 40 characters).
        text: String,
        at: usize,
        what: String,
    },
}

/// One move as read: its text, the side its colour letter names, and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadMove {
    /// Move text (a Connect6 two-stone turn is `J10,K11`).
    pub text: String,
    /// The side named by the colour letter of the move's tokens.
    pub side: Side,
    /// The colour letter as written (upper case).
    pub colour: char,
    /// 1-based number of the move's first token.
    pub token: usize,
    /// How many tokens the move spans (2 for a Connect6 two-stone turn, else 1).
    pub token_count: usize,
    /// The move's tokens as written, blanks removed, each cut to 40 characters, joined by `;`.
    pub written: String,
    /// 1-based character position of the move's first token.
    pub at: usize,
}

/// A record as read from a file, with each move's written colour and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRecord {
    pub record: Record,
    /// One per entry of `record.moves`.
    pub moves: Vec<ReadMove>,
}

/// Reads a record file's bytes (see the module doc for what is tolerated).
pub fn parse_record(bytes: &[u8]) -> Result<ParsedRecord, RecordParseError> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(RecordParseError::TooLarge {
            size: bytes.len(),
            max: MAX_RECORD_BYTES,
        });
    }
    let (text, _) = decode(bytes)?;
    let chars: Vec<char> = text.chars().collect();
    Reader {
        chars: &chars,
        i: 0,
    }
    .record()
}

struct Reader<'a> {
    chars: &'a [char],
    i: usize,
}

fn syntax(at: usize, what: impl Into<String>) -> RecordParseError {
    RecordParseError::Syntax {
        at: at + 1,
        what: what.into(),
    }
}

fn header_error(field: HeaderField, at: usize, what: impl Into<String>) -> RecordParseError {
    RecordParseError::Header {
        field,
        at: at + 1,
        what: what.into(),
    }
}

fn describe(c: Option<&char>) -> String {
    match c {
        Some(c) => format!("{c:?}"),
        None => "the end of the file".to_string(),
    }
}

fn shorten(chars: &[char]) -> String {
    let mut s: String = chars.iter().take(40).collect();
    if chars.len() > 40 {
        s.push('…');
    }
    s
}

impl Reader<'_> {
    fn skip_blanks(&mut self) {
        while self.chars.get(self.i).is_some_and(|c| c.is_whitespace()) {
            self.i += 1;
        }
    }

    fn record(mut self) -> Result<ParsedRecord, RecordParseError> {
        self.skip_blanks();
        if self.chars.get(self.i) != Some(&'{') {
            return Err(syntax(
                self.i,
                format!(
                    "a record starts with '{{', found {}",
                    describe(self.chars.get(self.i))
                ),
            ));
        }
        self.i += 1;
        let mut fields: Vec<(String, usize)> = Vec::with_capacity(6);
        for field in HeaderField::ALL {
            self.skip_blanks();
            match self.chars.get(self.i) {
                Some('[') => {}
                other => {
                    return Err(header_error(
                        field,
                        self.i,
                        format!(
                            "expected '[' opening the {field} field, found {}",
                            describe(other)
                        ),
                    ))
                }
            }
            let start = self.i + 1;
            let Some(len) = self.chars[start..].iter().position(|&c| c == ']') else {
                return Err(header_error(
                    field,
                    self.i,
                    "'[' without its ']' (the record is cut short?)",
                ));
            };
            let content: String = self.chars[start..start + len].iter().collect();
            fields.push((content, start));
            self.i = start + len + 1;
        }
        let header = Header::read(&fields)?;
        let moves = self.moves(header.game)?;
        let texts: Vec<String> = moves.iter().map(|m| m.text.clone()).collect();
        let rules = header.game.rules_required_by(&texts);
        let record = Record {
            game: header.game,
            first: header.first,
            second: header.second,
            result: header.result,
            played_at: header.played_at,
            place: header.place,
            event: header.event,
            moves: moves.iter().map(|m| m.text.clone()).collect(),
            rules,
        };
        Ok(ParsedRecord { record, moves })
    }

    /// The move tokens after the header, through the closing `}` and the blanks after it.
    fn moves(&mut self, game: GameId) -> Result<Vec<ReadMove>, RecordParseError> {
        self.skip_blanks();
        if self.chars.get(self.i) == Some(&';') {
            self.i += 1;
        }
        let mut stones: Vec<ReadMove> = Vec::new();
        loop {
            let start = self.i;
            let Some(len) = self.chars[start..]
                .iter()
                .position(|&c| c == ';' || c == '}')
            else {
                return Err(syntax(
                    self.chars.len(),
                    "the record has no closing '}' (it is cut short?)",
                ));
            };
            let end = start + len;
            let closing = self.chars[end] == '}';
            // The token's characters without blanks, each with its position in the file.
            let (compact, positions): (Vec<char>, Vec<usize>) = (start..end)
                .filter(|&k| !self.chars[k].is_whitespace())
                .map(|k| (self.chars[k], k))
                .unzip();
            let number = stones.len() + 1;
            if compact.is_empty() {
                if !closing {
                    return Err(RecordParseError::Token {
                        token: number,
                        text: String::new(),
                        at: start + 1,
                        what: "empty token (two ';' in a row)".to_string(),
                    });
                }
            } else {
                let token = read_token(game, &compact).map_err(|e| RecordParseError::Token {
                    token: number,
                    text: shorten(&compact),
                    at: positions
                        .get(e.at)
                        .or(positions.last())
                        .map_or(start, |p| *p)
                        + 1,
                    what: e.what,
                })?;
                stones.push(ReadMove {
                    text: token.text,
                    side: token.side,
                    colour: token.colour,
                    token: number,
                    token_count: 1,
                    written: shorten(&compact),
                    at: positions.first().map_or(start, |p| *p) + 1,
                });
            }
            self.i = end + 1;
            if closing {
                break;
            }
        }
        self.skip_blanks();
        if let Some(c) = self.chars.get(self.i) {
            return Err(syntax(
                self.i,
                format!("unexpected {c:?} after the record's closing '}}'"),
            ));
        }
        Ok(if game.stones_per_turn() > 1 {
            group_connect6_turns(stones)
        } else {
            stones
        })
    }
}

/// Connect6: consecutive stones of one colour form one turn, two stones at most; the first
/// stone (the opening) is a turn of its own.
fn group_connect6_turns(stones: Vec<ReadMove>) -> Vec<ReadMove> {
    let mut turns: Vec<ReadMove> = Vec::with_capacity(stones.len() / 2 + 1);
    for stone in stones {
        match turns.last_mut() {
            Some(turn) if turn.side == stone.side && turn.token_count == 1 && turn.token > 1 => {
                turn.text.push(',');
                turn.text.push_str(&stone.text);
                turn.written.push(';');
                turn.written.push_str(&stone.written);
                turn.token_count = 2;
            }
            _ => turns.push(stone),
        }
    }
    turns
}

struct Header {
    game: GameId,
    first: String,
    second: String,
    result: RecordResult,
    played_at: NaiveDateTime,
    place: String,
    event: String,
}

impl Header {
    /// `fields`: the six fields' contents, each with the position of its first character.
    fn read(fields: &[(String, usize)]) -> Result<Header, RecordParseError> {
        let field = |k: usize| fields.get(k).map_or(("", 0), |(s, at)| (s.as_str(), *at));
        let (code, at) = field(0);
        let Some(game) = GameId::from_record_code(code.trim()) else {
            return Err(header_error(
                HeaderField::GameCode,
                at,
                format!("unknown game code {code:?} (expected C6, HEX, SUR or JIU)"),
            ));
        };
        let (first_text, first_at) = field(1);
        let first = team(game, Side::First, first_text, first_at)?;
        let (second_text, second_at) = field(2);
        let second = team(game, Side::Second, second_text, second_at)?;
        let (result_text, result_at) = field(3);
        let Some(result) = RecordResult::from_contest_str(result_text.trim()) else {
            return Err(header_error(
                HeaderField::Result,
                result_at,
                format!(
                    "expected 先手胜, 后手胜 or 平局, found {:?}",
                    result_text.trim()
                ),
            ));
        };
        let (when_text, when_at) = field(4);
        let (played_at, place) = date_time_place(when_text, when_at)?;
        let (event, _) = field(5);
        Ok(Header {
            game,
            first,
            second,
            result,
            played_at,
            place,
            event: event.trim().to_string(),
        })
    }
}

/// `TEAM NAME C` → `TEAM NAME`, checking that C is `side`'s colour letter.
fn team(game: GameId, side: Side, text: &str, at: usize) -> Result<String, RecordParseError> {
    let field = match side {
        Side::First => HeaderField::FirstTeam,
        Side::Second => HeaderField::SecondTeam,
    };
    let expected = game.colour_letter(side);
    let trimmed = text.trim();
    let mut chars = trimmed.chars();
    let last = chars.next_back();
    let name = chars.as_str();
    let ends_word = name.is_empty() || name.ends_with(char::is_whitespace);
    match last {
        Some(c) if c.eq_ignore_ascii_case(&expected) && ends_word => Ok(name.trim().to_string()),
        _ => Err(header_error(
            field,
            at,
            format!(
                "expected the team name followed by the colour letter {expected}, found {trimmed:?}"
            ),
        )),
    }
}

/// `yyyy.mm.dd HH:MM PLACE` (also `-` or `/` in the date, seconds allowed, place optional).
fn date_time_place(text: &str, at: usize) -> Result<(NaiveDateTime, String), RecordParseError> {
    let bad = |what: String| header_error(HeaderField::DateTimePlace, at, what);
    let mut words = text.trim().splitn(3, char::is_whitespace);
    let date_text = words.next().unwrap_or("");
    let time_text = words.next().unwrap_or("").trim();
    let place = words.next().unwrap_or("").trim().to_string();
    let numbers = |s: &str, seps: &[char]| -> Option<Vec<u32>> {
        s.split(seps)
            .map(|n| {
                if n.is_empty() || n.len() > 4 {
                    None
                } else {
                    n.parse::<u32>().ok()
                }
            })
            .collect()
    };
    let date = match numbers(date_text, &['.', '-', '/']).as_deref() {
        Some(&[y, m, d]) => i32::try_from(y)
            .ok()
            .and_then(|y| NaiveDate::from_ymd_opt(y, m, d)),
        _ => None,
    }
    .ok_or_else(|| bad(format!("expected a date yyyy.mm.dd, found {date_text:?}")))?;
    let time = match numbers(time_text, &[':']).as_deref() {
        Some(&[h, m]) => NaiveTime::from_hms_opt(h, m, 0),
        Some(&[h, m, s]) => NaiveTime::from_hms_opt(h, m, s),
        _ => None,
    }
    .ok_or_else(|| bad(format!("expected a time HH:MM, found {time_text:?}")))?;
    Ok((NaiveDateTime::new(date, time), place))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ParsedRecord, RecordParseError> {
        parse_record(text.as_bytes())
    }

    const HEX: &str = "{[HEX][先手参赛队 R][后手参赛队 B][先手胜][2017.07.29 14:00 重庆][2017 CCGC];R(E,7);B(E,6);R(F,7)}";

    #[test]
    fn reads_the_hex_example_of_the_standard() {
        let parsed = parse(HEX).unwrap();
        let r = &parsed.record;
        assert_eq!(r.game, GameId::Hex);
        assert_eq!(
            (r.first.as_str(), r.second.as_str()),
            ("先手参赛队", "后手参赛队")
        );
        assert_eq!(r.result, RecordResult::First);
        assert_eq!(r.played_at.to_string(), "2017-07-29 14:00:00");
        assert_eq!((r.place.as_str(), r.event.as_str()), ("重庆", "2017 CCGC"));
        assert_eq!(r.moves, ["E7", "E6", "F7"]);
        assert_eq!(r.rules, serde_json::Value::Null);
        let sides: Vec<Side> = parsed.moves.iter().map(|m| m.side).collect();
        assert_eq!(sides, [Side::First, Side::Second, Side::First]);
        assert_eq!(parsed.moves[1].token, 2);
        assert_eq!(
            parsed.moves[1].at,
            HEX.find("B(E,6)")
                .map(|b| HEX[..b].chars().count() + 1)
                .unwrap()
        );
    }

    #[test]
    fn tolerates_blanks_line_breaks_case_and_a_trailing_semicolon() {
        let messy = "\u{feff}\r\n { [ hex ]\r\n[ 先手参赛队  r ] [后手参赛队 b]\n[ 先手胜 ][2017.7.29 14:00  重庆 ] [ 2017 CCGC ]\r\n ; r( e , 7 ) ;\r\n b(E,6)MARK[1] ;\nR(F,7);\r\n}\r\n";
        let a = parse(messy).unwrap().record;
        let b = parse(HEX).unwrap().record;
        assert_eq!(a, b);
        // No ';' between the header and the first move, and no moves at all.
        let c = parse("{[HEX][a R][b B][后手胜][2017.07.29 14:00 重庆][e]R(E,7)}").unwrap();
        assert_eq!(c.record.moves, ["E7"]);
        let d = parse("{[HEX][a R][b B][后手胜][2017.07.29 14:00][e]}").unwrap();
        assert!(d.record.moves.is_empty());
        assert_eq!(d.record.place, "");
    }

    #[test]
    fn connect6_groups_same_colour_stones_into_turns() {
        let text = "{[C6][甲 B][乙 W][先手胜][2024.05.01 09:30 北京][联赛];B(J,10);W(K,10);W(K,11)MARK[1];B(A,1);B(A,2);W(S,19)}";
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.record.moves, ["J10", "K10,K11", "A1,A2", "S19"]);
        let tokens: Vec<(usize, usize)> = parsed
            .moves
            .iter()
            .map(|m| (m.token, m.token_count))
            .collect();
        assert_eq!(tokens, [(1, 1), (2, 2), (4, 2), (6, 1)]);
        // The opening stands alone; three stones of one colour make a turn of two and one.
        let opening = "{[C6][甲 B][乙 W][先手胜][2024.05.01 09:30][e];B(J,10);B(K,10);B(K,11)}";
        assert_eq!(parse(opening).unwrap().record.moves, ["J10", "K10,K11"]);
        let three =
            "{[C6][甲 B][乙 W][先手胜][2024.05.01 09:30][e];B(J,10);W(K,10);W(K,11);W(K,12)}";
        assert_eq!(
            parse(three).unwrap().record.moves,
            ["J10", "K10,K11", "K12"]
        );
    }

    #[test]
    fn hex_swap_turns_the_swap_option_on() {
        let text = "{[HEX][a R][b B][后手胜][2020.01.02 03:04 x][e];R(A,1);B(swap);R(C,3)}";
        let record = parse(text).unwrap().record;
        assert_eq!(record.moves, ["A1", "swap", "C3"]);
        assert_eq!(record.rules, serde_json::json!({"swap": true}));
    }

    #[test]
    fn errors_say_what_and_where() {
        let cases: &[(&str, &str)] = &[
            ("", "character 1: a record starts with '{'"),
            ("{[HEX][a R]", "header field second team (character 12): expected '['"),
            ("{[HEX][a R][b B][先手胜][2017.07.29 14:00 重庆][e", "header field event (character 43): '[' without"),
            ("{[GO][a R][b B][先手胜][2017.07.29 14:00][e]}", "header field game code (character 3): unknown game code \"GO\""),
            ("{[HEX][a B][b R][先手胜][2017.07.29 14:00][e]}", "header field first team (character 8): expected the team name followed by the colour letter R"),
            ("{[HEX][aR][b B][先手胜][2017.07.29 14:00][e]}", "first team"),
            ("{[HEX][a R][b B][赢][2017.07.29 14:00][e]}", "header field result"),
            ("{[HEX][a R][b B][先手胜][2017.13.29 14:00][e]}", "expected a date"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 24:00][e]}", "expected a time"),
            ("{[HEX][a R][b B][先手胜][2017.12.29][e]}", "expected a time"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 10:00][e];R(E,7);B(E,", "character 55: the record has no closing '}'"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 10:00][e];R(E,7);;B(E,6)}", "token 2 \"\" (character 51): empty token"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 10:00][e];R(E,7);W(E,6)}", "token 2 \"W(E,6)\" (character 51): expected a colour letter (R or B in HEX)"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 10:00][e];R(E,7);B(E 6)}", "token 2 \"B(E6)\" (character 55): expected ','"),
            ("{[HEX][a R][b B][先手胜][2017.12.29 10:00][e];R(E,7)} x", "character 52: unexpected 'x' after the record's closing '}'"),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.starts_with(expected) || err.contains(expected),
                "{text}\n got {err}\nwant {expected}"
            );
        }
        assert!(matches!(
            parse_record(b"\xff\xff"),
            Err(RecordParseError::Decode(_))
        ));
        let big = vec![b' '; MAX_RECORD_BYTES + 1];
        assert!(matches!(
            parse_record(&big),
            Err(RecordParseError::TooLarge { .. })
        ));
    }
}

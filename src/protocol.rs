//! Wire protocol v1 (docs/protocol.md): the messages bots and the referee exchange, how a received line
//! is classified (bad JSON, unknown type, missing field), and the line codec with its 64 KiB cap.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::game::EndReason;
use crate::game::Side;
pub use bytes_codec::CappedLineCodec;

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Longest line (without its `\n`) either side accepts.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The `error` codes of docs/protocol.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadJson,
    LineTooLong,
    UnknownType,
    MissingField,
    AuthFailed,
    AlreadyConnected,
    UnknownMatch,
    NotYourTurn,
    IllegalMove,
    /// A `hello` whose `games` include none of the games of the bot's tournaments.
    UnknownGame,
    /// The bot lost `suspend_after_faults` games in a row by timeout or illegal move and is
    /// disconnected; it may connect again once fixed.
    Suspended,
    /// Too many failed logins from this address: refused for a while.
    TooManyFailedLogins,
    /// A newer login of the same bot took its place: this connection is closed, and the bot's
    /// matches go on on the newer one (the newest login wins).
    Replaced,
    /// Every tournament of the league is finished: nothing more to play here; the connection
    /// is closed (sent to every bot when the league ends, and in answer to a later `hello`).
    LeagueOver,
    /// The bot name's token checks are used up for a moment (someone is guessing): try again
    /// in a second.
    LoginThrottled,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadJson => "bad_json",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::UnknownType => "unknown_type",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::AuthFailed => "auth_failed",
            ErrorCode::AlreadyConnected => "already_connected",
            ErrorCode::UnknownMatch => "unknown_match",
            ErrorCode::NotYourTurn => "not_your_turn",
            ErrorCode::IllegalMove => "illegal_move",
            ErrorCode::UnknownGame => "unknown_game",
            ErrorCode::Suspended => "suspended",
            ErrorCode::TooManyFailedLogins => "too_many_failed_logins",
            ErrorCode::Replaced => "replaced",
            ErrorCode::LeagueOver => "league_over",
            ErrorCode::LoginThrottled => "login_throttled",
        }
    }
}

/// A message from a bot to the referee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BotMessage {
    Hello {
        protocol: u32,
        name: String,
        token: String,
        games: Vec<String>,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        max_games: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        engine: Option<String>,
        /// The `ticket` of an earlier `welcome` to this bot name (optional): a login that
        /// carries it is never held back by the per-name limit on token checks, so a bot that
        /// reconnects during a guessing attack on its name gets in at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
    },
    Move {
        #[serde(rename = "match")]
        match_id: String,
        #[serde(rename = "move")]
        mv: String,
        /// The `ply` of the `turn` this move answers (optional): a move for another ply is
        /// refused with `not_your_turn`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ply: Option<u32>,
    },
    Resign {
        #[serde(rename = "match")]
        match_id: String,
    },
    Pong {
        id: u64,
    },
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The clock settings of a match, as `start` carries them (one type with arena.toml's and
/// games.jsonl's clock).
pub use crate::clock_settings::ClockSpec;

/// Both sides' remaining time, as `turn` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnClock {
    pub you_ms: u64,
    pub opponent_ms: u64,
}

/// A game's result from one side's point of view, as `end` carries it: `win`, `loss` or
/// `draw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BotResult {
    Win,
    Loss,
    Draw,
}

impl BotResult {
    /// The result for `side` of a game that `winner` won (`None`: a draw).
    pub fn for_side(winner: Option<Side>, side: Side) -> BotResult {
        match winner {
            None => BotResult::Draw,
            Some(w) if w == side => BotResult::Win,
            Some(_) => BotResult::Loss,
        }
    }

    /// `win`, `loss` or `draw`, as the protocol writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BotResult::Win => "win",
            BotResult::Loss => "loss",
            BotResult::Draw => "draw",
        }
    }
}

impl std::fmt::Display for BotResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message from the referee to a bot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RefereeMessage {
    Welcome {
        protocol: u32,
        name: String,
        server: String,
        /// A login ticket for this bot name while this server runs: sent back in a later
        /// `hello`, it skips the per-name limit on token checks (the token is still checked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
    },
    Start {
        #[serde(rename = "match")]
        match_id: String,
        game: String,
        side: String,
        colour: String,
        opponent: String,
        rules: Value,
        clock: ClockSpec,
        moves: Vec<String>,
    },
    Turn {
        #[serde(rename = "match")]
        match_id: String,
        moves: Vec<String>,
        ply: u32,
        clock: TurnClock,
    },
    End {
        #[serde(rename = "match")]
        match_id: String,
        /// From the receiving bot's point of view.
        result: BotResult,
        reason: EndReason,
        moves: Vec<String>,
    },
    Error {
        code: ErrorCode,
        message: String,
        #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
        match_id: Option<String>,
    },
    Ping {
        id: u64,
    },
}

/// Room for a typical outgoing line (a `turn` with one or two moves is 130–200 bytes).
const WIRE_LINE_CAPACITY: usize = 256;

impl RefereeMessage {
    /// The message as one JSON line, without the trailing `\n`.
    pub fn to_line(&self) -> String {
        // Serialising these plain structs cannot fail (string keys, no maps with other keys).
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// The message as it goes on the wire: one JSON line with its `\n`.
    pub fn to_wire_line(&self) -> String {
        // Written into a buffer sized for a `turn` line, so that the common lines take one
        // allocation rather than growing (and again for the `\n`).
        let mut line = Vec::with_capacity(WIRE_LINE_CAPACITY);
        if serde_json::to_writer(&mut line, self).is_err() {
            line.clear();
            line.extend_from_slice(b"{}");
        }
        line.push(b'\n');
        String::from_utf8(line).unwrap_or_else(|_| String::from("{}\n"))
    }
}

/// A game's two `end` lines, the first side's and the second's: byte for byte what
/// `RefereeMessage::End { .. }.to_wire_line()` gives for each, with the game's move texts
/// escaped once for both rather than by `serde_json` for each side (a long game's texts are
/// most of the line, and this ran once a game for every game of a league).
pub fn end_wire_lines(
    match_id: &str,
    results: [BotResult; 2],
    reason: EndReason,
    moves: &[String],
) -> [String; 2] {
    let mut texts = Vec::with_capacity(moves.iter().map(|m| m.len() + 3).sum());
    crate::json_out::push_str_items(&mut texts, moves.iter().map(String::as_str));
    results.map(|result| {
        // The message without its moves, by `serde_json` (its fields and their order), ends in
        // `"moves":[]}`: the texts go between the brackets.
        let mut line = RefereeMessage::End {
            match_id: match_id.to_string(),
            result,
            reason,
            moves: Vec::new(),
        }
        .to_wire_line()
        .into_bytes();
        if !line.ends_with(b"[]}\n") {
            // Not the shape this relies on: the whole message through `serde_json`.
            return RefereeMessage::End {
                match_id: match_id.to_string(),
                result,
                reason,
                moves: moves.to_vec(),
            }
            .to_wire_line();
        }
        line.truncate(line.len() - b"]}\n".len());
        line.reserve(texts.len() + 3);
        line.extend_from_slice(&texts);
        line.extend_from_slice(b"]}\n");
        String::from_utf8(line).unwrap_or_else(|_| String::from("{}\n"))
    })
}

/// The `turn` lines of one match, encoded into a buffer kept between turns: byte for byte what
/// `RefereeMessage::Turn { .. }.to_wire_line()` gives for the same fields, without building the
/// message or running `serde_json`'s serializer (the referee sends one per move; see
/// `json_out`). The part no turn changes, up to the match id, is written once: a move then
/// neither reads the id nor escapes it again.
#[derive(Debug, Clone)]
pub struct TurnLine {
    line: Vec<u8>,
    /// The length of `{"type":"turn","match":"ID","moves":[`, kept at the start of `line`.
    prefix: usize,
}

impl TurnLine {
    pub fn new(match_id: &str) -> TurnLine {
        use crate::json_out::{push_key, push_str};
        let mut line = Vec::new();
        line.extend_from_slice(b"{\"type\":\"turn\"");
        push_key(&mut line, "match", false);
        push_str(&mut line, match_id);
        push_key(&mut line, "moves", false);
        line.push(b'[');
        let prefix = line.len();
        TurnLine { line, prefix }
    }

    /// The line as last encoded (its start, up to the match id, is kept between moves).
    pub fn bytes(&self) -> &[u8] {
        &self.line
    }

    /// The `turn` line, with its `\n`, reporting `moves` at `ply` with `clock`.
    pub fn encode<'a>(
        &mut self,
        moves: impl Iterator<Item = &'a str>,
        ply: u32,
        clock: TurnClock,
    ) -> &str {
        use crate::json_out::{push_key, push_str_items, push_u64};
        let line = &mut self.line;
        line.truncate(self.prefix);
        push_str_items(line, moves);
        line.push(b']');
        push_key(line, "ply", false);
        push_u64(line, u64::from(ply));
        push_key(line, "clock", false);
        line.push(b'{');
        push_key(line, "you_ms", true);
        push_u64(line, clock.you_ms);
        push_key(line, "opponent_ms", false);
        push_u64(line, clock.opponent_ms);
        line.extend_from_slice(b"}}\n");
        // JSON text from `&str`s is UTF-8: this never falls back.
        std::str::from_utf8(line).unwrap_or("{}\n")
    }
}

impl BotMessage {
    /// The `hello` of this protocol version, the one way every client of this crate builds it:
    /// bot `name` with `token`, offering `games` (protocol ids), playing at most `max_games`
    /// at once, `engine` saying what it is, `ticket` from an earlier `welcome`.
    pub fn hello(
        name: impl Into<String>,
        token: impl Into<String>,
        games: Vec<String>,
        max_games: u32,
        engine: Option<String>,
        ticket: Option<String>,
    ) -> BotMessage {
        BotMessage::Hello {
            protocol: PROTOCOL_VERSION,
            name: name.into(),
            token: token.into(),
            games,
            max_games,
            engine,
            ticket,
        }
    }

    /// The message as one JSON line, without the trailing `\n`.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// Why a received line was refused, with the protocol error code to answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct LineError {
    pub code: ErrorCode,
    pub message: String,
    /// The `match` the refused line named, when it named one (even in broken JSON), so that
    /// the `error` can say which match it was about.
    pub match_id: Option<String>,
}

impl LineError {
    fn new(code: ErrorCode, message: impl Into<String>) -> LineError {
        LineError {
            code,
            message: message.into(),
            match_id: None,
        }
    }

    fn about(mut self, match_id: Option<String>) -> LineError {
        self.match_id = match_id;
        self
    }
}

const BOT_TYPES: [&str; 4] = ["hello", "move", "resign", "pong"];

/// What a field of a bot message must hold.
#[derive(Clone, Copy)]
enum FieldKind {
    Text,
    /// A whole number from 0 to `u32::MAX`.
    Count,
    /// A whole number from 0 to `u64::MAX`.
    Id,
    TextList,
}

impl FieldKind {
    fn holds(self, value: &Value) -> bool {
        match self {
            FieldKind::Text => value.is_string(),
            FieldKind::Count => value.as_u64().is_some_and(|n| u32::try_from(n).is_ok()),
            FieldKind::Id => value.is_u64(),
            FieldKind::TextList => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            FieldKind::Text => "a string",
            FieldKind::Count => "a whole number from 0 to 4294967295",
            FieldKind::Id => "a whole number from 0",
            FieldKind::TextList => "a list of strings",
        }
    }
}

/// Whether a bot message must carry a field.
#[derive(Clone, Copy, PartialEq)]
enum Presence {
    Required,
    /// May be left out (a default applies), but not `null`.
    Defaulted,
    /// May be left out or `null` (an `Option`).
    Optional,
}

/// The fields of each bot message type: name, kind, presence. Every field of [`BotMessage`]
/// must be here (a test checks it): a wrong-typed field missing from this list would be
/// refused with serde's message, which does not name it.
fn fields_of(message_type: &str) -> &'static [(&'static str, FieldKind, Presence)] {
    use FieldKind::*;
    use Presence::*;
    match message_type {
        "hello" => &[
            ("protocol", Count, Required),
            ("name", Text, Required),
            ("token", Text, Required),
            ("games", TextList, Required),
            ("max_games", Count, Defaulted),
            ("engine", Text, Optional),
            ("ticket", Text, Optional),
        ],
        "move" => &[
            ("match", Text, Required),
            ("move", Text, Required),
            ("ply", Count, Optional),
        ],
        "resign" => &[("match", Text, Required)],
        "pong" => &[("id", Id, Required)],
        _ => &[],
    }
}

/// A `move` line's fields, borrowed from the line; other fields are ignored, as [`BotMessage`]
/// ignores them. A string with an escape in it cannot be borrowed: such a line fails here and
/// is read the full way. (`Option<Cow<str>>` would not do: serde borrows into a `Cow` only when
/// it is the field's whole type, and copied every move's two strings.)
#[derive(Deserialize)]
struct MoveFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(rename = "match", borrow, default)]
    match_id: Option<&'a str>,
    #[serde(rename = "move", borrow, default)]
    mv: Option<&'a str>,
    #[serde(default)]
    ply: Option<u32>,
}

/// The `match` a line that is not valid JSON seems to name (`"match":"…"`), if any: a best
/// effort, so that a bot whose JSON is broken still learns which match it was about.
fn match_in_broken_json(line: &str) -> Option<String> {
    let after_key = &line[line.find("\"match\"")? + "\"match\"".len()..];
    let value = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = value.strip_prefix('"')?;
    let end = value.find(['"', '\\'])?;
    (value.as_bytes().get(end) == Some(&b'"') && end <= 200).then(|| value[..end].to_string())
}

/// Classifies one line from a bot: `bad_json` if it is not a JSON object, `unknown_type` if its
/// `type` is missing or unknown, `missing_field` if a field is absent or of the wrong kind (the
/// message names the field). The error carries the line's `match` when it named one. Unknown
/// extra fields are ignored.
pub fn parse_bot_line(line: &str) -> Result<BotMessage, LineError> {
    read_bot_line(line).map(BotLine::into_message)
}

/// A line from a bot as the server reads it: a `move` whose strings hold no escape keeps them
/// borrowed from the line (the referee's direct path then copies nothing but what it keeps);
/// anything else, a move with escapes included, is a [`BotMessage`].
#[derive(Debug, Clone, PartialEq)]
pub enum BotLine<'a> {
    Move {
        match_id: &'a str,
        mv: &'a str,
        ply: Option<u32>,
    },
    Message(BotMessage),
}

impl BotLine<'_> {
    /// The line as an owned message.
    pub fn into_message(self) -> BotMessage {
        match self {
            BotLine::Move { match_id, mv, ply } => BotMessage::Move {
                match_id: match_id.to_string(),
                mv: mv.to_string(),
                ply,
            },
            BotLine::Message(message) => message,
        }
    }
}

/// [`parse_bot_line`] without copying a move's fields out of the line.
pub fn read_bot_line(line: &str) -> Result<BotLine<'_>, LineError> {
    // Most lines are moves: read into borrowed fields in one pass, without the buffering of
    // every field that a tagged enum needs. Anything else, or a move line this cannot take
    // whole, is read as below, which decides what it is.
    if let Ok(fields) = serde_json::from_str::<MoveFields>(line) {
        if let (true, Some(match_id), Some(mv)) =
            (fields.kind == "move", fields.match_id, fields.mv)
        {
            return Ok(BotLine::Move {
                match_id,
                mv,
                ply: fields.ply,
            });
        }
    }
    // A well-formed line (nearly every line) is read in one pass; only a refused one is read
    // again as a JSON value to say exactly what is wrong with it.
    if let Ok(message) = serde_json::from_str::<BotMessage>(line) {
        return Ok(BotLine::Message(message));
    }
    let value: Value = serde_json::from_str(line).map_err(|e| {
        LineError::new(ErrorCode::BadJson, format!("not valid JSON: {e}"))
            .about(match_in_broken_json(line))
    })?;
    let Value::Object(object) = &value else {
        return Err(LineError::new(
            ErrorCode::BadJson,
            "a message must be a JSON object",
        ));
    };
    let match_id = object
        .get("match")
        .and_then(Value::as_str)
        .map(str::to_string);
    let message_type = match object.get("type") {
        Some(Value::String(t)) if BOT_TYPES.contains(&t.as_str()) => t.as_str(),
        Some(Value::String(t)) => {
            return Err(LineError::new(
                ErrorCode::UnknownType,
                format!(
                    "unknown message type {} (expected hello, move, resign or pong)",
                    shown_text(t)
                ),
            )
            .about(match_id))
        }
        Some(_) => {
            return Err(
                LineError::new(ErrorCode::UnknownType, "field \"type\" must be a string")
                    .about(match_id),
            )
        }
        None => {
            return Err(
                LineError::new(ErrorCode::UnknownType, "missing field \"type\"").about(match_id),
            )
        }
    };
    for &(field, kind, presence) in fields_of(message_type) {
        let problem = match object.get(field) {
            None if presence == Presence::Required => {
                format!("{message_type} needs field \"{field}\"")
            }
            Some(Value::Null) if presence == Presence::Optional => continue,
            Some(v) if !kind.holds(v) => format!(
                "field \"{field}\" of {message_type} must be {}, not {}",
                kind.describe(),
                shown_value(v)
            ),
            _ => continue,
        };
        return Err(LineError::new(ErrorCode::MissingField, problem).about(match_id));
    }
    // What serde says can quote the line's own text (an unknown variant, say): cut like it.
    serde_json::from_value(value)
        .map(BotLine::Message)
        .map_err(|e| {
            LineError::new(
                ErrorCode::MissingField,
                cut_owned(e.to_string(), MAX_REASON_CHARS),
            )
            .about(match_id)
        })
}

/// Most characters of a bot's own text that an error message quotes back.
const MAX_QUOTED_CHARS: usize = 40;

/// Most characters of a parser's own explanation an error message passes on.
const MAX_REASON_CHARS: usize = 200;

/// Where `text` is cut to keep its first `max_chars` characters, if it is longer.
fn cut_at(text: &str, max_chars: usize) -> Option<usize> {
    text.char_indices().nth(max_chars).map(|(at, _)| at)
}

/// `text` cut to its first `max_chars` characters, marked with `…` when cut.
fn cut_owned(mut text: String, max_chars: usize) -> String {
    if let Some(at) = cut_at(&text, max_chars) {
        text.truncate(at);
        text.push('…');
    }
    text
}

/// A refused field's value as an error message quotes it: cut to `MAX_QUOTED_CHARS`
/// characters, so that a long wrong value is not sent back whole.
fn shown_value(value: &Value) -> String {
    cut_owned(value.to_string(), MAX_QUOTED_CHARS)
}

/// A bot's string as an error message to it quotes it: in quotes and escaped, cut like
/// [`shown_value`].
pub fn shown_text(text: &str) -> String {
    match cut_at(text, MAX_QUOTED_CHARS) {
        Some(at) => format!("{:?}…", &text[..at]),
        None => format!("{text:?}"),
    }
}

/// Classifies one line from the referee (used by clients such as `arena bot`).
pub fn parse_referee_line(line: &str) -> Result<RefereeMessage, LineError> {
    serde_json::from_str(line).map_err(|e| LineError::new(ErrorCode::BadJson, e.to_string()))
}

/// What the line codec yields: a line, or a framing problem that the connection reports and
/// survives (the codec has already skipped the bad bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Line(String),
    TooLong,
    NotUtf8,
}

mod bytes_codec {
    //! The newline-delimited codec with a length cap; oversized and non-UTF-8 lines are
    //! reported as items so that the stream keeps going.

    use tokio_util::bytes::{Buf, BufMut, BytesMut};
    use tokio_util::codec::{Decoder, Encoder};

    use super::Frame;

    /// Splits a byte stream into `\n`-terminated lines of at most `max` bytes (a trailing `\r`
    /// is dropped, and not counted). A longer line is skipped up to its `\n` and reported once
    /// as `TooLong`.
    #[derive(Debug, Clone)]
    pub struct CappedLineCodec {
        max: usize,
        /// Bytes of the current buffer already searched for `\n`.
        searched: usize,
        /// Inside an oversized line, throwing bytes away until the next `\n`.
        discarding: bool,
        /// A line handed back by its reader (see [`CappedLineCodec::recycle`]): the next line
        /// is copied into it instead of a new allocation.
        spare: String,
    }

    /// The largest line buffer [`CappedLineCodec::recycle`] keeps: a move line fits (about 60
    /// bytes), and a connection that once sent a longer line (its `hello`) does not hold it:
    /// the buffer is part of every connection's memory.
    const SPARE_MAX_BYTES: usize = 128;

    impl CappedLineCodec {
        pub fn new(max: usize) -> CappedLineCodec {
            CappedLineCodec {
                max,
                searched: 0,
                discarding: false,
                spare: String::new(),
            }
        }

        /// Hands a line back once it has been read, so that the next line reuses its buffer
        /// (a busy server reads a line per move; each was an allocation and a free). Kept
        /// only while small.
        pub fn recycle(&mut self, line: String) {
            if line.capacity() <= SPARE_MAX_BYTES {
                self.spare = line;
            }
        }
    }

    impl Decoder for CappedLineCodec {
        type Item = Frame;
        type Error = std::io::Error;

        fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
            loop {
                let newline = buf[self.searched..].iter().position(|&b| b == b'\n');
                match (self.discarding, newline) {
                    (true, Some(i)) => {
                        buf.advance(self.searched + i + 1);
                        self.searched = 0;
                        self.discarding = false;
                        // Reported when the discarding started; keep looking for a line.
                    }
                    (true, None) => {
                        buf.advance(buf.len());
                        self.searched = 0;
                        return Ok(None);
                    }
                    (false, Some(i)) => {
                        let end = self.searched + i;
                        self.searched = 0;
                        // The `\r` of a `\r\n` is not part of the line, nor of its length.
                        let cr = end > 0 && buf[end - 1] == b'\r';
                        if end - usize::from(cr) > self.max {
                            buf.advance(end + 1);
                            return Ok(Some(Frame::TooLong));
                        }
                        // Copied out, then skipped: splitting the line off would make the
                        // buffer shared (an allocation) and keep it from being reused in place.
                        let bytes = &buf[..end - usize::from(cr)];
                        let frame = match std::str::from_utf8(bytes) {
                            Ok(s) => {
                                let mut line = std::mem::take(&mut self.spare);
                                line.clear();
                                line.push_str(s);
                                Frame::Line(line)
                            }
                            Err(_) => Frame::NotUtf8,
                        };
                        buf.advance(end + 1);
                        return Ok(Some(frame));
                    }
                    (false, None) => {
                        // Too long already, unless all that is past the cap is the `\r` of a
                        // `\r\n` whose `\n` is still on its way.
                        let waiting_cr = buf.len() == self.max + 1 && buf[self.max] == b'\r';
                        if buf.len() > self.max && !waiting_cr {
                            buf.advance(buf.len());
                            self.searched = 0;
                            self.discarding = true;
                            return Ok(Some(Frame::TooLong));
                        }
                        self.searched = buf.len();
                        return Ok(None);
                    }
                }
            }
        }

        fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
            match self.decode(buf)? {
                Some(frame) => Ok(Some(frame)),
                None => {
                    // A half-sent last line is dropped: a message counts only once its `\n` arrives.
                    buf.clear();
                    self.searched = 0;
                    Ok(None)
                }
            }
        }
    }

    impl<T: AsRef<str>> Encoder<T> for CappedLineCodec {
        type Error = std::io::Error;

        fn encode(&mut self, line: T, buf: &mut BytesMut) -> Result<(), std::io::Error> {
            let line = line.as_ref();
            buf.reserve(line.len() + 1);
            buf.put(line.as_bytes());
            buf.put_u8(b'\n');
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::bytes::BytesMut;
    use tokio_util::codec::Decoder;

    fn decode_all(codec: &mut CappedLineCodec, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(frame) = codec.decode(&mut buf).unwrap() {
                out.push(frame);
            }
        }
        while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    #[test]
    fn codec_splits_lines_across_chunks_and_drops_cr() {
        let mut codec = CappedLineCodec::new(16);
        let frames = decode_all(&mut codec, &[b"ab", b"c\r\nde\n", b"f"]);
        assert_eq!(
            frames,
            vec![Frame::Line("abc".into()), Frame::Line("de".into())]
        );
    }

    #[test]
    fn codec_reports_oversized_lines_once_and_recovers() {
        let mut codec = CappedLineCodec::new(8);
        let long = [b'x'; 30];
        let frames = decode_all(
            &mut codec,
            &[&long[..10], &long[10..], b"yy\nok\n", b"123456789\nfine\n"],
        );
        assert_eq!(
            frames,
            vec![
                Frame::TooLong,
                Frame::Line("ok".into()),
                Frame::TooLong,
                Frame::Line("fine".into())
            ]
        );
    }

    #[test]
    fn a_recycled_line_buffer_carries_the_next_line_and_nothing_of_the_last() {
        let mut codec = CappedLineCodec::new(1024);
        let mut buf = BytesMut::from(&b"{\"type\":\"move\",\"move\":\"J10,K11\"}\nab\n"[..]);
        let Some(Frame::Line(first)) = codec.decode(&mut buf).unwrap() else {
            panic!("expected a line");
        };
        let reused = first.as_ptr();
        codec.recycle(first);
        let Some(Frame::Line(second)) = codec.decode(&mut buf).unwrap() else {
            panic!("expected a line");
        };
        assert_eq!(second, "ab");
        assert_eq!(second.as_ptr(), reused, "the handed-back buffer is reused");
        // A buffer grown past the cap is not kept: the next line gets a fresh one.
        let mut big = String::with_capacity(4096);
        big.push_str("old");
        codec.recycle(big);
        buf.extend_from_slice(b"cd\n");
        let Some(Frame::Line(third)) = codec.decode(&mut buf).unwrap() else {
            panic!("expected a line");
        };
        assert_eq!(third, "cd");
        assert!(third.capacity() < 4096, "a large buffer is not kept");
    }

    #[test]
    fn the_cr_of_a_crlf_does_not_count_toward_the_cap() {
        let full = vec![b'x'; MAX_LINE_BYTES];
        let line = String::from_utf8(full.clone()).unwrap();
        for ending in [&b"\n"[..], b"\r\n"] {
            let mut codec = CappedLineCodec::new(MAX_LINE_BYTES);
            let mut bytes = full.clone();
            bytes.extend_from_slice(ending);
            bytes.extend_from_slice(b"ok\r\n");
            // Whole, and with the line end arriving in pieces (the `\r` before the `\n`).
            assert_eq!(
                decode_all(&mut codec, &[&bytes]),
                vec![Frame::Line(line.clone()), Frame::Line("ok".into())]
            );
            let (body, rest) = bytes.split_at(MAX_LINE_BYTES);
            let (first, rest) = rest.split_at(1);
            assert_eq!(
                decode_all(&mut codec, &[body, first, rest]),
                vec![Frame::Line(line.clone()), Frame::Line("ok".into())]
            );
        }
        // One byte more is too long, with or without the `\r`, whole or in pieces.
        for ending in [&b"\n"[..], b"\r\n"] {
            let mut codec = CappedLineCodec::new(MAX_LINE_BYTES);
            let mut bytes = vec![b'x'; MAX_LINE_BYTES + 1];
            bytes.extend_from_slice(ending);
            bytes.extend_from_slice(b"ok\n");
            assert_eq!(
                decode_all(&mut codec, &[&bytes]),
                vec![Frame::TooLong, Frame::Line("ok".into())]
            );
            let (body, rest) = bytes.split_at(MAX_LINE_BYTES + 1);
            assert_eq!(
                decode_all(&mut codec, &[body, rest]),
                vec![Frame::TooLong, Frame::Line("ok".into())]
            );
        }
        // A `\r` that turns out not to end the line is part of it, and counts.
        let mut codec = CappedLineCodec::new(4);
        assert_eq!(
            decode_all(&mut codec, &[b"abcd\r", b"e\nok\n"]),
            vec![Frame::TooLong, Frame::Line("ok".into())]
        );
        assert_eq!(
            decode_all(&mut codec, &[b"abc\r", b"\r\nok\n"]),
            vec![Frame::Line("abc\r".into()), Frame::Line("ok".into())]
        );
        // An empty line of just `\r\n` is an empty line.
        assert_eq!(
            decode_all(&mut codec, &[b"\r\n"]),
            vec![Frame::Line(String::new())]
        );
    }

    #[test]
    fn codec_reports_invalid_utf8_and_recovers() {
        let mut codec = CappedLineCodec::new(64);
        let frames = decode_all(&mut codec, &[b"\xff\xfe\n{}\n"]);
        assert_eq!(frames, vec![Frame::NotUtf8, Frame::Line("{}".into())]);
    }

    #[test]
    fn refused_lines_name_the_field_and_carry_their_match() {
        let refused = |line: &str| parse_bot_line(line).unwrap_err();
        let e = refused(r#"{"type":"move","match":"m1"}"#);
        assert_eq!(e.code, ErrorCode::MissingField);
        assert!(e.message.contains("\"move\""), "{}", e.message);
        assert_eq!(e.match_id.as_deref(), Some("m1"));
        let e = refused(r#"{"type":"move","match":"m1","move":"A1","ply":-3}"#);
        assert!(e.message.contains("\"ply\""), "{}", e.message);
        assert_eq!(e.match_id.as_deref(), Some("m1"));
        let e = refused(r#"{"type":"resign"}"#);
        assert!(e.message.contains("\"match\""), "{}", e.message);
        assert_eq!(e.match_id, None);
        let e = refused(r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":"hex"}"#);
        assert!(e.message.contains("\"games\""), "{}", e.message);
        let e = refused(r#"{"type":"pong","id":"7"}"#);
        assert!(e.message.contains("\"id\""), "{}", e.message);
        // Broken JSON: the match is still found when the line names one.
        let e = refused(r#"{"type":"move","match" : "r1-hex-3","move":F6}"#);
        assert_eq!(e.code, ErrorCode::BadJson);
        assert_eq!(e.match_id.as_deref(), Some("r1-hex-3"));
        assert_eq!(refused(r#"{"type":"move","match":F6"#).match_id, None);
        assert_eq!(refused("not json").match_id, None);
    }

    /// A valid line of each bot message type, every field given.
    const FULL_BOT_LINES: [&str; 4] = [
        r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":["hex"],"max_games":2,"engine":"e","ticket":"0123"}"#,
        r#"{"type":"move","match":"m1","move":"A1","ply":3}"#,
        r#"{"type":"resign","match":"m1"}"#,
        r#"{"type":"pong","id":7}"#,
    ];

    #[test]
    fn every_field_of_every_bot_message_is_checked_by_name() {
        for line in FULL_BOT_LINES {
            let message = parse_bot_line(line).unwrap();
            let Value::Object(written) = serde_json::to_value(&message).unwrap() else {
                panic!("{message:?} is not written as an object");
            };
            let message_type = written["type"].as_str().unwrap().to_string();
            let mut fields: Vec<&str> = written
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "type")
                .collect();
            let mut checked: Vec<&str> = fields_of(&message_type).iter().map(|f| f.0).collect();
            fields.sort_unstable();
            checked.sort_unstable();
            assert_eq!(fields, checked, "fields_of({message_type:?})");
        }
    }

    #[test]
    fn a_wrong_typed_field_is_refused_naming_it_and_its_kind() {
        for line in FULL_BOT_LINES {
            let Value::Object(object) = serde_json::from_str::<Value>(line).unwrap() else {
                panic!("{line}");
            };
            let message_type = object["type"].as_str().unwrap().to_string();
            for &(field, kind, _) in fields_of(&message_type) {
                let wrong = match kind {
                    FieldKind::Text | FieldKind::TextList => serde_json::json!(5),
                    FieldKind::Count | FieldKind::Id => serde_json::json!("first"),
                };
                let mut broken = object.clone();
                broken.insert(field.to_string(), wrong);
                let broken = Value::Object(broken).to_string();
                let e = parse_bot_line(&broken).unwrap_err();
                assert_eq!(e.code, ErrorCode::MissingField, "{broken}: {e}");
                let expected = format!(
                    "field \"{field}\" of {message_type} must be {}, not ",
                    kind.describe()
                );
                assert!(e.message.starts_with(&expected), "{broken}: {}", e.message);
            }
        }
        // The audit's two lines, and `name`, refused the same way.
        let refused = |line: &str| parse_bot_line(line).unwrap_err();
        let e = refused(
            r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":["hex"],"ticket":5}"#,
        );
        assert_eq!(e.code, ErrorCode::MissingField);
        assert_eq!(
            e.message,
            "field \"ticket\" of hello must be a string, not 5"
        );
        let e = refused(r#"{"type":"hello","protocol":1,"name":5,"token":"t","games":["hex"]}"#);
        assert_eq!(e.code, ErrorCode::MissingField);
        assert_eq!(e.message, "field \"name\" of hello must be a string, not 5");
        let e = refused(r#"{"type":"move","match":"m1","move":"A1","ply":"first"}"#);
        assert_eq!(e.code, ErrorCode::MissingField);
        assert_eq!(
            e.message,
            "field \"ply\" of move must be a whole number from 0 to 4294967295, not \"first\""
        );
        assert_eq!(e.match_id.as_deref(), Some("m1"));
        // A long wrong value is quoted cut short.
        let long = "x".repeat(1000);
        let e = refused(&format!(
            r#"{{"type":"move","match":"m1","move":"A1","ply":"{long}"}}"#
        ));
        assert!(e.message.contains("\"ply\""), "{}", e.message);
        assert!(e.message.len() < 200, "{}", e.message);
    }

    #[test]
    fn null_is_absent_for_optional_fields_only() {
        assert_eq!(
            parse_bot_line(
                r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":[],"engine":null,"ticket":null}"#
            ),
            Ok(BotMessage::hello("a", "t", vec![], 1, None, None))
        );
        // With another field wrong, a null optional field is not the one blamed.
        let e = parse_bot_line(
            r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":[],"engine":null,"ticket":5}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("\"ticket\""), "{}", e.message);
        // `max_games` has a default but is not an option: null is refused naming it.
        let e = parse_bot_line(
            r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":[],"max_games":null}"#,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::MissingField);
        assert!(e.message.contains("\"max_games\""), "{}", e.message);
        let e = parse_bot_line(r#"{"type":"resign","match":null}"#).unwrap_err();
        assert!(e.message.contains("\"match\""), "{}", e.message);
    }

    #[test]
    fn an_unknown_type_is_quoted_back_cut_and_escaped() {
        let e = parse_bot_line(r#"{"type":"dance"}"#).unwrap_err();
        assert_eq!(
            e.message,
            r#"unknown message type "dance" (expected hello, move, resign or pong)"#
        );
        let long = format!(r#"{{"type":"\u001b[2J{}"}}"#, "x".repeat(10_000));
        let e = parse_bot_line(&long).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownType);
        assert!(
            e.message
                .starts_with(r#"unknown message type "\u{1b}[2Jxxx"#),
            "{}",
            e.message
        );
        assert!(e.message.contains("x\"…"), "{}", e.message);
        assert!(e.message.len() < 200, "not cut: {} bytes", e.message.len());
        assert!(!e.message.chars().any(char::is_control), "{}", e.message);
    }

    #[test]
    fn bot_lines_are_classified_by_error_code() {
        let code = |line: &str| parse_bot_line(line).unwrap_err().code;
        assert_eq!(code("not json"), ErrorCode::BadJson);
        assert_eq!(code("[1,2]"), ErrorCode::BadJson);
        assert_eq!(code(r#"{"no_type":1}"#), ErrorCode::UnknownType);
        assert_eq!(code(r#"{"type":"dance"}"#), ErrorCode::UnknownType);
        assert_eq!(
            code(r#"{"type":"move","match":"m1"}"#),
            ErrorCode::MissingField
        );
        assert_eq!(
            code(r#"{"type":"move","match":"m1","move":7}"#),
            ErrorCode::MissingField
        );
        let hello = parse_bot_line(
            r#"{"type":"hello","protocol":1,"name":"a","token":"t","games":["hex"],"extra":true}"#,
        )
        .unwrap();
        assert_eq!(
            hello,
            BotMessage::Hello {
                protocol: 1,
                name: "a".into(),
                token: "t".into(),
                games: vec!["hex".into()],
                max_games: 1,
                engine: None,
                ticket: None,
            }
        );
    }

    #[test]
    fn a_turn_written_from_borrowed_parts_is_the_turn_message_byte_for_byte() {
        let cases = [
            vec![],
            vec!["E7"],
            vec!["J10", "K11", "a \"quoted\" \u{e9}"],
            crate::json_out::tests::AWKWARD.to_vec(),
        ];
        for moves in &cases {
            let id = moves.last().copied().unwrap_or("t-r1-p2-g3");
            // One line kept through turns of every length, as a referee keeps it: a longer
            // turn before must leave nothing behind in a shorter one after.
            let mut turns = TurnLine::new(id);
            for (ply, moves) in [(41, moves), (7, &cases[2]), (41, moves)] {
                let clock = TurnClock {
                    you_ms: 599_000,
                    opponent_ms: u64::from(ply),
                };
                let message = RefereeMessage::Turn {
                    match_id: id.into(),
                    moves: moves.iter().map(|m| m.to_string()).collect(),
                    ply,
                    clock,
                };
                assert_eq!(
                    turns.encode(moves.iter().copied(), ply, clock),
                    message.to_wire_line()
                );
            }
        }
    }

    #[test]
    fn move_lines_read_on_the_fast_path_are_what_the_full_reading_gives() {
        for line in [
            r#"{"type":"move","match":"m1","move":"J10"}"#,
            r#"{"move":"J10","ply":4,"match":"m1","type":"move","extra":[1,{"a":2}]}"#,
            r#"{"type":"move","match":"m\"1","move":"J\u0031 0","ply":null}"#,
            r#"{"type":"mo\u0076e","match":"m1","move":"J10"}"#,
        ] {
            let fast = parse_bot_line(line).unwrap();
            let full = serde_json::from_str::<BotMessage>(line).unwrap();
            assert_eq!(fast, full, "{line}");
            assert_eq!(read_bot_line(line).unwrap().into_message(), full, "{line}");
        }
        // A move with nothing to unescape is read without copying its fields out of the line.
        match read_bot_line(r#"{"type":"move","match":"m1","move":"J10","ply":4}"#).unwrap() {
            BotLine::Move { match_id, mv, ply } => {
                assert_eq!((match_id, mv, ply), ("m1", "J10", Some(4)));
            }
            other => panic!("not read as a move: {other:?}"),
        }
        // Lines the fast path cannot take whole are refused as before, naming what is wrong.
        for (line, code) in [
            (r#"{"type":"move","match":"m1"}"#, ErrorCode::MissingField),
            (
                r#"{"type":"move","match":"m1","move":"J10","ply":-1}"#,
                ErrorCode::MissingField,
            ),
            (
                r#"{"type":"moves","match":"m1","move":"J10"}"#,
                ErrorCode::UnknownType,
            ),
        ] {
            let refused = match parse_bot_line(line) {
                Ok(message) => panic!("{line} was taken as {message:?}"),
                Err(refused) => refused,
            };
            assert_eq!(refused.code, code, "{line}: {refused}");
        }
        // A repeated key is read as its last value, as a browser's JSON.parse reads it.
        assert_eq!(
            parse_bot_line(r#"{"type":"move","match":"a","match":"b","move":"J10"}"#).unwrap(),
            BotMessage::Move {
                match_id: "b".into(),
                mv: "J10".into(),
                ply: None
            }
        );
        assert_eq!(
            parse_bot_line(r#"{"type":"resign","match":"m1","move":"J10"}"#).unwrap(),
            BotMessage::Resign {
                match_id: "m1".into()
            }
        );
    }

    #[test]
    fn messages_round_trip_as_lines() {
        let messages = vec![
            RefereeMessage::Welcome {
                protocol: 1,
                name: "a".into(),
                server: "arena".into(),
                ticket: Some("0123".into()),
            },
            RefereeMessage::Turn {
                match_id: "m".into(),
                moves: vec!["E7".into()],
                ply: 2,
                clock: TurnClock {
                    you_ms: 5,
                    opponent_ms: 6,
                },
            },
            RefereeMessage::Error {
                code: ErrorCode::NotYourTurn,
                message: "wait".into(),
                match_id: None,
            },
            RefereeMessage::End {
                match_id: "m".into(),
                result: BotResult::Draw,
                reason: EndReason::MoveLimit,
                moves: vec!["E7".into()],
            },
        ];
        for m in messages {
            assert_eq!(parse_referee_line(&m.to_line()).unwrap(), m);
            assert_eq!(m.to_wire_line(), format!("{}\n", m.to_line()));
        }
        let start = RefereeMessage::Start {
            match_id: "r1-hex-3".into(),
            game: "hex".into(),
            side: "first".into(),
            colour: "R".into(),
            opponent: "mohex".into(),
            rules: serde_json::json!({"swap": false}),
            clock: ClockSpec {
                initial_ms: 600000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: vec![],
        };
        assert_eq!(
            start.to_line(),
            r#"{"type":"start","match":"r1-hex-3","game":"hex","side":"first","colour":"R","opponent":"mohex","rules":{"swap":false},"clock":{"initial_ms":600000,"increment_ms":0,"move_limit_ms":null},"moves":[]}"#
        );
    }

    #[test]
    fn an_end_is_written_with_the_protocol_strings() {
        for (winner, side, result) in [
            (Some(Side::First), Side::First, "win"),
            (Some(Side::First), Side::Second, "loss"),
            (None, Side::Second, "draw"),
        ] {
            let end = RefereeMessage::End {
                match_id: "m1".into(),
                result: BotResult::for_side(winner, side),
                reason: EndReason::SixInRow,
                moves: vec!["J10".into()],
            };
            assert_eq!(
                end.to_line(),
                format!(
                    r#"{{"type":"end","match":"m1","result":"{result}","reason":"six_in_row","moves":["J10"]}}"#
                )
            );
        }
    }

    #[test]
    fn end_lines_are_what_serde_json_writes_for_each_side() {
        let many: Vec<String> = (0..181).map(|i| format!("A{i}")).collect();
        let odd = vec![
            "J10".to_string(),
            "q\"uo\\te\u{1}".to_string(),
            "六".to_string(),
        ];
        for (match_id, moves) in [
            ("m1", Vec::new()),
            ("m1", vec!["J10".to_string()]),
            ("r2-\"x]}", odd),
            ("league-7", many),
        ] {
            let results = [BotResult::Win, BotResult::Loss];
            let lines = end_wire_lines(match_id, results, EndReason::SixInRow, &moves);
            for (line, result) in lines.iter().zip(results) {
                let by_serde = RefereeMessage::End {
                    match_id: match_id.to_string(),
                    result,
                    reason: EndReason::SixInRow,
                    moves: moves.clone(),
                }
                .to_wire_line();
                assert_eq!(line, &by_serde);
            }
        }
    }

    #[test]
    fn an_end_with_an_unknown_result_or_reason_is_a_parse_error() {
        let line = |result: &str, reason: &str| {
            format!(
                r#"{{"type":"end","match":"m1","result":"{result}","reason":"{reason}","moves":[]}}"#
            )
        };
        assert!(matches!(
            parse_referee_line(&line("loss", "resign")),
            Ok(RefereeMessage::End {
                result: BotResult::Loss,
                reason: EndReason::Resign,
                ..
            })
        ));
        let e = parse_referee_line(&line("loss", "fell_asleep")).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadJson);
        assert!(e.message.contains("fell_asleep"), "{}", e.message);
        let e = parse_referee_line(&line("first", "resign")).unwrap_err();
        assert!(e.message.contains("first"), "{}", e.message);
    }

    #[test]
    fn the_one_hello_is_written_as_the_protocol_says() {
        let hello = BotMessage::hello("alice", "s3cret", vec!["hex".into()], 1, None, None);
        assert_eq!(
            hello.to_line(),
            r#"{"type":"hello","protocol":1,"name":"alice","token":"s3cret","games":["hex"]}"#
        );
        let again = BotMessage::hello(
            "alice",
            "s3cret",
            vec!["hex".into(), "jiu".into()],
            4,
            Some("arena/hex".into()),
            Some("0123".into()),
        );
        assert_eq!(parse_bot_line(&again.to_line()), Ok(again));
    }
}

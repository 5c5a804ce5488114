//! Contest game records (中国大学生计算机博弈大赛 棋谱标准): the `Record` value, its text form
//! `{[CODE][FIRST C1][SECOND C2][RESULT][yyyy.mm.dd HH:MM PLACE][EVENT];M;M;...}`, its file
//! name, its encodings (UTF-8, GB2312/GB18030), the tolerant reader, crash-safe writing, and
//! the verdicts of `arena check`.

pub mod check;
pub mod encoding;
pub mod reader;
pub mod tokens;

use std::fmt;
use std::path::{Path, PathBuf};

use chrono::{Datelike, NaiveDateTime, Timelike};

use crate::atomic_file::{self, AtomicFileError};
use crate::game::{self, GameId, OptionsError, Outcome, PlayError, Side};

pub use check::{
    check_bytes, check_bytes_with_rules, check_file, check_files, check_line, CheckFailure,
    CheckVerdict,
};
pub use encoding::RecordEncoding;
pub use reader::{parse_record, ParsedRecord, ReadMove, RecordParseError, MAX_RECORD_BYTES};

/// The result a record states: `先手胜` (first won), `后手胜` (second won) or `平局` (draw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordResult {
    First,
    Second,
    Draw,
}

impl RecordResult {
    /// The result of a game that ended with `winner` (`None`: a draw).
    pub fn from_winner(winner: Option<Side>) -> RecordResult {
        match winner {
            Some(Side::First) => RecordResult::First,
            Some(Side::Second) => RecordResult::Second,
            None => RecordResult::Draw,
        }
    }

    /// The result of an ended game.
    pub fn from_outcome(outcome: &Outcome) -> RecordResult {
        RecordResult::from_winner(outcome.winner)
    }

    /// The header text: `先手胜`, `后手胜` or `平局`.
    pub fn contest_str(self) -> &'static str {
        match self {
            RecordResult::First => "先手胜",
            RecordResult::Second => "后手胜",
            RecordResult::Draw => "平局",
        }
    }

    /// Reads a header result: `先手胜`, `后手胜`, `平局`, and the variants `先胜`, `后胜`,
    /// `和局`, `和棋` seen in hand-made records.
    pub fn from_contest_str(text: &str) -> Option<RecordResult> {
        match text {
            "先手胜" | "先胜" => Some(RecordResult::First),
            "后手胜" | "后胜" => Some(RecordResult::Second),
            "平局" | "和局" | "和棋" => Some(RecordResult::Draw),
            _ => None,
        }
    }

    /// `first`, `second` or `draw`, as in the protocol and `arena check`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordResult::First => "first",
            RecordResult::Second => "second",
            RecordResult::Draw => "draw",
        }
    }
}

impl fmt::Display for RecordResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finished game as the contest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub game: GameId,
    /// The first side's team (bot) name.
    pub first: String,
    /// The second side's team (bot) name.
    pub second: String,
    pub result: RecordResult,
    /// When the game was played; the record keeps it to the minute.
    pub played_at: NaiveDateTime,
    pub place: String,
    pub event: String,
    /// Move texts as `AnyGame::play_text` returns them (`J10,K11`, `B2xE5`, `swap`, ...).
    pub moves: Vec<String>,
    /// The rule options the game was played under (`null` for the defaults). Not written in
    /// the text (the format has no place for it) but needed to replay the moves: a Hex `swap`
    /// is only legal with `{"swap": true}`. The reader sets exactly that when it sees a swap.
    pub rules: serde_json::Value,
}

/// Why a record cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record rules: {0}")]
    Options(#[from] OptionsError),
    #[error("move {number} {text:?} cannot be replayed: {why}")]
    Replay {
        /// 1-based move number.
        number: usize,
        text: String,
        why: String,
    },
    #[error(transparent)]
    File(#[from] AtomicFileError),
}

/// How the record writer learns which side made each move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveSides {
    /// By replaying the moves from the start position, which also checks every move (a record
    /// from anywhere: a file, a person, another program).
    Replayed,
    /// From each move's number (`GameId::mover_of_ply`), without replaying: for the moves of a
    /// game this referee played, each checked and written in its recorded form as it was
    /// played. Each text is still read as notation, so a text that is not a move is refused.
    Refereed,
}

/// Characters that may not appear in a file name on common systems.
const UNSAFE_IN_FILE_NAMES: [char; 9] = ['/', '\\', ':', '*', '?', '"', '<', '>', '|'];
/// Each free-text part of a file name (team, place, event) is cut to this many characters.
const MAX_FILE_NAME_PART_CHARS: usize = 48;
/// The file name without `.txt` and the ` (N)` suffix is cut to this many bytes (file systems
/// allow 255).
const MAX_FILE_STEM_BYTES: usize = 200;
/// A whole record file name is at most this many bytes (file systems allow 255).
const MAX_FILE_NAME_BYTES: usize = 250;

impl Record {
    /// Reads a record file's bytes (UTF-8 or GB2312/GBK/GB18030); see `reader` for what is
    /// tolerated.
    pub fn parse(bytes: &[u8]) -> Result<Record, RecordParseError> {
        parse_record(bytes).map(|parsed| parsed.record)
    }

    /// The record text: header, then one token per stone or move, each prefixed by the colour
    /// letter of the side that made it, found by replaying the moves from the start position
    /// (sides need not alternate: Black moves twice when Jiu's battle begins).
    ///
    /// Brackets in names are written as parentheses and line breaks or other control
    /// characters as blanks, so that the header stays readable.
    pub fn to_text(&self) -> Result<String, RecordError> {
        self.to_text_with(MoveSides::Replayed)
    }

    /// The record text, each move's side found as `sides` says.
    pub fn to_text_with(&self, sides: MoveSides) -> Result<String, RecordError> {
        let mut text = format!(
            "{{[{code}][{first} {c1}][{second} {c2}][{result}][{when}][{event}]",
            code = self.game.record_code(),
            first = header_text(&self.first),
            c1 = self.game.colour_letter(Side::First),
            second = header_text(&self.second),
            c2 = self.game.colour_letter(Side::Second),
            result = self.result.contest_str(),
            when = join_nonempty(
                &date_time_text(&self.played_at, ':'),
                &header_text(&self.place)
            ),
            event = header_text(&self.event),
        );
        // About a token and a half per move (Connect6 turns have two), `;B(J,10)` each.
        text.reserve(self.moves.len() * 12);
        let each = |token: &str| {
            text.push(';');
            text.push_str(token);
        };
        match sides {
            MoveSides::Replayed => self.for_each_token(each)?,
            MoveSides::Refereed => self.for_each_refereed_token(each)?,
        }
        text.push('}');
        Ok(text)
    }

    /// The move tokens, in order, each with its mover's colour letter.
    pub fn tokens(&self) -> Result<Vec<String>, RecordError> {
        let mut out = Vec::with_capacity(self.moves.len() + self.moves.len() / 2);
        self.for_each_token(|token| out.push(token.to_string()))?;
        Ok(out)
    }

    /// Replays the moves from the start position and calls `each` with every token in order.
    fn for_each_token(&self, mut each: impl FnMut(&str)) -> Result<(), RecordError> {
        let mut position = game::new_game(self.game, &self.rules)?;
        let mut scratch = String::new();
        for (k, mv) in self.moves.iter().enumerate() {
            let replay_error = |why: String| RecordError::Replay {
                number: k + 1,
                text: mv.clone(),
                why,
            };
            if let Some(outcome) = position.outcome() {
                return Err(replay_error(format!(
                    "the game already ended ({} by {})",
                    outcome.result_str(),
                    outcome.reason
                )));
            }
            let mover = position.turn();
            let played = position.play_text(mv).map_err(|e| match e {
                PlayError::Parse(e) => replay_error(e.to_string()),
                PlayError::Illegal { why, .. } => replay_error(why),
            })?;
            tokens::for_each_token(self.game, mover, &played, &mut scratch, &mut each)
                .map_err(|e| replay_error(e.to_string()))?;
        }
        Ok(())
    }

    /// [`Record::for_each_token`] for the moves of a refereed game ([`MoveSides::Refereed`]):
    /// each side from the move's number, no replay.
    fn for_each_refereed_token(&self, mut each: impl FnMut(&str)) -> Result<(), RecordError> {
        let mut scratch = String::new();
        for (k, mv) in self.moves.iter().enumerate() {
            let mover = self.game.mover_of_ply(k + 1);
            tokens::for_each_token(self.game, mover, mv, &mut scratch, &mut each).map_err(|e| {
                RecordError::Replay {
                    number: k + 1,
                    text: mv.clone(),
                    why: e.to_string(),
                }
            })?;
        }
        Ok(())
    }

    /// The record text in `encoding`, each move's side found by replaying the moves.
    pub fn encode(&self, encoding: RecordEncoding) -> Result<Vec<u8>, RecordError> {
        self.encode_with(encoding, MoveSides::Replayed)
    }

    /// The record text in `encoding`, each move's side found as `sides` says.
    pub fn encode_with(
        &self,
        encoding: RecordEncoding,
        sides: MoveSides,
    ) -> Result<Vec<u8>, RecordError> {
        Ok(encoding.encode(&self.to_text_with(sides)?))
    }

    /// `CODE-FIRST C1 vs SECOND C2-RESULT-yyyy.mm.dd HH.MM PLACE-EVENT.txt`, with the
    /// characters `/ \ : * ? " < > |` and control characters replaced by `_`, each name, the
    /// place and the event cut to 48 characters, and the whole before `.txt` to 200 bytes.
    pub fn file_name(&self) -> String {
        self.file_name_numbered(1)
    }

    /// The file name for the `n`th game that would have the same name: `file_name()` for
    /// `n <= 1`, else with ` (n)` before `.txt` (`... (2).txt`).
    pub fn file_name_numbered(&self, n: u32) -> String {
        let stem = format!(
            "{code}-{first} {c1} vs {second} {c2}-{result}-{when}-{event}",
            code = self.game.record_code(),
            first = file_name_part(&self.first),
            c1 = self.game.colour_letter(Side::First),
            second = file_name_part(&self.second),
            c2 = self.game.colour_letter(Side::Second),
            result = self.result.contest_str(),
            when = join_nonempty(
                &date_time_text(&self.played_at, '.'),
                &file_name_part(&self.place)
            ),
            event = file_name_part(&self.event),
        );
        let stem = cut_to_bytes(&stem, MAX_FILE_STEM_BYTES);
        if n <= 1 {
            format!("{stem}.txt")
        } else {
            format!("{stem} ({n}).txt")
        }
    }

    /// The file name of the record of league game `match_id`: the standard name with the
    /// match id in parentheses before `.txt` (`... (hex-league-r1-p2-g1).txt`). A league's match
    /// ids are unique, so no two of its games ever share a name, whatever the disk holds. The
    /// stem is cut so that the whole name stays within `MAX_FILE_NAME_BYTES`; the match id
    /// (safe characters only: it is made of a tournament name and numbers) is never cut.
    pub fn file_name_for_match(&self, match_id: &str) -> String {
        let id = file_name_part_uncut(match_id);
        let suffix = format!(" ({id}).txt");
        let room = MAX_FILE_NAME_BYTES
            .saturating_sub(suffix.len())
            .min(MAX_FILE_STEM_BYTES);
        let stem = self.file_name_numbered(1);
        let stem = stem.strip_suffix(".txt").unwrap_or(&stem);
        format!("{}{suffix}", cut_to_bytes(stem, room))
    }
}

/// Writes `record` into `dir` in `encoding`, atomically, under `record.file_name()` or, when a
/// file of that name exists, the first free `... (N).txt` (never replacing a file, even when
/// two writers race). Returns the path written.
pub fn write_record(
    dir: &Path,
    record: &Record,
    encoding: RecordEncoding,
) -> Result<PathBuf, RecordError> {
    let bytes = record.encode(encoding)?;
    let names = (1..).map(|n| record.file_name_numbered(n));
    Ok(atomic_file::write_new_atomically(dir, names, &bytes)?)
}

/// `yyyy.mm.dd HH:MM` (or `HH.MM` in file names).
fn date_time_text(t: &NaiveDateTime, time_sep: char) -> String {
    format!(
        "{:04}.{:02}.{:02} {:02}{time_sep}{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    )
}

fn join_nonempty(a: &str, b: &str) -> String {
    if b.is_empty() {
        a.to_string()
    } else {
        format!("{a} {b}")
    }
}

/// A header field's text: brackets become parentheses, control characters blanks, trimmed.
fn header_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect::<String>()
        .trim()
        .to_string()
}

/// A free-text part of a file name: unsafe characters become `_`, cut to 48 characters.
fn file_name_part(s: &str) -> String {
    s.trim()
        .chars()
        .take(MAX_FILE_NAME_PART_CHARS)
        .map(file_name_char)
        .collect()
}

/// `c`, or `_` where a file name may not hold it.
fn file_name_char(c: char) -> char {
    if c.is_control() || UNSAFE_IN_FILE_NAMES.contains(&c) {
        '_'
    } else {
        c
    }
}

/// `s` with the characters a file name may not hold replaced by `_`, not cut.
fn file_name_part_uncut(s: &str) -> String {
    s.chars().map(file_name_char).collect()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut_to_bytes(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn record(first: &str, second: &str, place: &str, event: &str) -> Record {
        Record {
            game: GameId::Hex,
            first: first.to_string(),
            second: second.to_string(),
            result: RecordResult::First,
            played_at: NaiveDate::from_ymd_opt(2017, 7, 29)
                .and_then(|d| d.and_hms_opt(14, 5, 59))
                .unwrap(),
            place: place.to_string(),
            event: event.to_string(),
            moves: Vec::new(),
            rules: serde_json::Value::Null,
        }
    }

    /// A game of random legal moves (a small linear congruential generator picks them), its
    /// moves as the referee keeps them (`play_text`'s recorded texts), `forced` played first.
    fn random_refereed_game(
        game: GameId,
        rules: serde_json::Value,
        forced: &[&str],
        seed: u64,
    ) -> Record {
        let mut position = game::new_game(game, &rules).unwrap();
        let mut moves = Vec::new();
        for text in forced {
            moves.push(position.play_text(text).unwrap());
        }
        let mut state = seed;
        while position.outcome().is_none() && moves.len() < 600 {
            let legal = position.legal_move_texts();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = &legal[(state >> 33) as usize % legal.len()];
            moves.push(position.play_text(pick).unwrap());
        }
        Record {
            game,
            moves,
            rules,
            ..record("a", "b", "", "")
        }
    }

    #[test]
    fn refereed_moves_give_the_tokens_a_replay_gives() {
        let mut longest_jiu = 0;
        for game in GameId::ALL {
            for seed in 1..=3 {
                let played = random_refereed_game(game, serde_json::Value::Null, &[], seed);
                if game == GameId::Jiu {
                    longest_jiu = longest_jiu.max(played.moves.len());
                }
                assert_eq!(
                    played.to_text_with(MoveSides::Refereed).unwrap(),
                    played.to_text().unwrap(),
                    "{game:?}, seed {seed}"
                );
            }
        }
        // Past Jiu's last placement, where Black moves twice in a row.
        assert!(longest_jiu > 197, "{longest_jiu}");
        let swapped = random_refereed_game(
            GameId::Hex,
            serde_json::json!({"swap": true}),
            &["C3", "swap"],
            7,
        );
        let text = swapped.to_text_with(MoveSides::Refereed).unwrap();
        assert_eq!(text, swapped.to_text().unwrap());
        assert!(text.contains(";B(swap)"), "{text}");
    }

    #[test]
    fn refereed_moves_that_are_not_notation_are_refused() {
        let mut bad = record("a", "b", "", "");
        bad.moves = vec!["C3".to_string(), "3C".to_string()];
        let error = bad.to_text_with(MoveSides::Refereed).unwrap_err();
        assert!(
            matches!(&error, RecordError::Replay { number: 2, text, .. } if text == "3C"),
            "{error}"
        );
    }

    #[test]
    fn file_names_follow_the_standard() {
        let r = record("先手参赛队", "后手参赛队", "重庆", "2017 CCGC");
        assert_eq!(
            r.file_name(),
            "HEX-先手参赛队 R vs 后手参赛队 B-先手胜-2017.07.29 14.05 重庆-2017 CCGC.txt"
        );
        assert_eq!(
            r.file_name_numbered(2),
            "HEX-先手参赛队 R vs 后手参赛队 B-先手胜-2017.07.29 14.05 重庆-2017 CCGC (2).txt"
        );
        let no_place = record("a", "b", "", "e");
        assert_eq!(
            no_place.file_name(),
            "HEX-a R vs b B-先手胜-2017.07.29 14.05-e.txt"
        );
    }

    #[test]
    fn file_names_replace_unsafe_characters_and_stay_short() {
        let r = record("a/b\\c:d", "e*f?g\"h", "<i>|\n\t", "..");
        assert_eq!(
            r.file_name(),
            "HEX-a_b_c_d R vs e_f_g_h B-先手胜-2017.07.29 14.05 _i__-...txt"
        );
        let long = "长".repeat(300);
        let r = record(&long, &long, &long, &long);
        let name = r.file_name_numbered(99);
        assert!(
            name.len() <= MAX_FILE_STEM_BYTES + " (99).txt".len(),
            "{}",
            name.len()
        );
        assert!(name.ends_with(" (99).txt"));
        assert!(!name.contains('/'));
    }

    #[test]
    fn a_league_game_is_named_by_its_match_id_which_is_never_cut() {
        let r = record("先手参赛队", "后手参赛队", "重庆", "2017 CCGC");
        assert_eq!(
            r.file_name_for_match("hex-league-r1-p2-g1"),
            "HEX-先手参赛队 R vs 后手参赛队 B-先手胜-2017.07.29 14.05 重庆-2017 CCGC (hex-league-r1-p2-g1).txt"
        );
        // Two games alike in every part of the standard name still get two names.
        assert_ne!(
            r.file_name_for_match("t-r1-p1-g1"),
            r.file_name_for_match("t-r1-p1-g2")
        );
        let long = "长".repeat(300);
        let r = record(&long, &long, &long, &long);
        let id = format!("{}-r12-p345-g2", "久".repeat(40));
        let name = r.file_name_for_match(&id);
        assert!(name.len() <= MAX_FILE_NAME_BYTES, "{}", name.len());
        assert!(name.ends_with(&format!(" ({id}).txt")), "{name}");
    }

    #[test]
    fn header_text_keeps_the_header_readable() {
        assert_eq!(header_text(" a[b]c\nd "), "a(b)c d");
        let r = record("x]y", "b", "p", "e\r\n");
        let text = r.to_text().unwrap();
        assert_eq!(text, "{[HEX][x)y R][b B][先手胜][2017.07.29 14:05 p][e]}");
        let back = Record::parse(text.as_bytes()).unwrap();
        assert_eq!(back.first, "x)y");
        assert_eq!(back.event, "e");
    }

    #[test]
    fn results_read_and_write() {
        for r in [
            RecordResult::First,
            RecordResult::Second,
            RecordResult::Draw,
        ] {
            assert_eq!(RecordResult::from_contest_str(r.contest_str()), Some(r));
        }
        assert_eq!(
            RecordResult::from_contest_str("和棋"),
            Some(RecordResult::Draw)
        );
        assert_eq!(RecordResult::from_contest_str("赢"), None);
        assert_eq!(
            RecordResult::from_winner(Some(Side::Second)),
            RecordResult::Second
        );
    }

    #[test]
    fn write_record_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let r = record("甲", "乙", "重庆", "e");
        let a = write_record(dir.path(), &r, RecordEncoding::Utf8).unwrap();
        let b = write_record(dir.path(), &r, RecordEncoding::Gb2312).unwrap();
        assert_eq!(a, dir.path().join(r.file_name()));
        assert_eq!(b, dir.path().join(r.file_name_numbered(2)));
        let a_bytes = std::fs::read(&a).unwrap();
        let b_bytes = std::fs::read(&b).unwrap();
        assert_ne!(a_bytes, b_bytes);
        assert_eq!(
            Record::parse(&a_bytes).unwrap(),
            Record::parse(&b_bytes).unwrap()
        );
    }
}

//! `arena check`: reads record files, replays their moves with the rules, and says for each
//! file `ok RESULT FILE` or `invalid WHY FILE`.
//!
//! A record is valid when it parses, every move is legal, each move's colour letter names the
//! side to move, no move follows the end of the game (one exception: the second stone of a
//! Connect6 record's last turn, when the first already made six, is ignored), and the stated
//! result agrees with the result the moves reach. When the moves end nothing (RESULT `none`),
//! the stated result must have come from a clock, a resignation or a forfeit, and is accepted
//! as it stands.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::reader::{parse_record, ReadMove, RecordParseError, MAX_RECORD_BYTES};
use super::RecordResult;
use crate::game::{self, OptionsError, Outcome, PlayError};

/// What `arena check` says about one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckVerdict {
    /// The record is consistent; `reached` is the result its moves reach (`None`: the moves
    /// end nothing and the stated result came from outside the board).
    Ok {
        reached: Option<Outcome>,
    },
    Invalid(CheckFailure),
}

impl CheckVerdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, CheckVerdict::Ok { .. })
    }
}

/// Why a record is invalid. Each message starts with a one-word kind: `unreadable`,
/// `unparsable`, `bad-move`, `illegal`, `wrong-colour`, `after-end` or `contradicts`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFailure {
    #[error("unreadable: {0}")]
    Unreadable(String),
    #[error("unparsable: {0}")]
    Unparsable(#[from] RecordParseError),
    #[error("unparsable: {0}")]
    Rules(#[from] OptionsError),
    #[error("bad-move: move {number}, token {token} {text:?}: {why}")]
    BadMove {
        number: usize,
        token: usize,
        text: String,
        why: String,
    },
    #[error("illegal: move {number}, token {token} {text:?}: {why}")]
    Illegal {
        number: usize,
        token: usize,
        text: String,
        why: String,
    },
    #[error("wrong-colour: move {number}, token {token} {text:?}: {found} moves, but it is {expected}'s turn")]
    WrongColour {
        number: usize,
        token: usize,
        text: String,
        found: char,
        expected: char,
    },
    #[error("after-end: token {token} {text:?} follows the end of the game at move {after_move} ({}, {})", .outcome.result_str(), .outcome.reason)]
    AfterEnd {
        token: usize,
        text: String,
        outcome: Outcome,
        after_move: usize,
    },
    #[error("contradicts: the record says {} ({stated}), the moves reach {} by {}", .stated.contest_str(), .reached.result_str(), .reached.reason)]
    Contradicts {
        stated: RecordResult,
        reached: Outcome,
    },
}

/// Checks a record file's bytes under the default rules of its game (with Hex's swap rule on
/// when the record contains a swap).
pub fn check_bytes(bytes: &[u8]) -> CheckVerdict {
    check_bytes_with_rules(bytes, None)
}

/// Checks a record file's bytes under the rule options `rules` (a JSON object for the record's
/// game), or, for `None`, the defaults as `check_bytes` does. Records do not say which options
/// a game was played under; a caller that knows them (the server checking its own records)
/// passes them here.
pub fn check_bytes_with_rules(bytes: &[u8], rules: Option<&serde_json::Value>) -> CheckVerdict {
    match check_parsed(bytes, rules) {
        Ok(reached) => CheckVerdict::Ok { reached },
        Err(failure) => CheckVerdict::Invalid(failure),
    }
}

/// Checks a record file; a file that cannot be read (or is larger than any record) is invalid.
pub fn check_file(path: &Path) -> CheckVerdict {
    check_file_with_rules(path, None)
}

/// Like `check_file`, replaying under the given rule options instead of the defaults.
pub fn check_file_with_rules(path: &Path, rules: Option<&serde_json::Value>) -> CheckVerdict {
    match read_capped(path) {
        Ok(bytes) => check_bytes_with_rules(&bytes, rules),
        Err(e) => CheckVerdict::Invalid(CheckFailure::Unreadable(e.to_string())),
    }
}

/// One output line of `arena check` (without the line break): `ok RESULT FILE` or
/// `invalid WHY FILE`. Control characters in WHY become blanks, so the line stays one line.
pub fn check_line(verdict: &CheckVerdict, file: &Path) -> String {
    let file = file.display();
    match verdict {
        CheckVerdict::Ok { reached } => {
            let result = reached.as_ref().map_or("none", Outcome::result_str);
            format!("ok {result} {file}")
        }
        CheckVerdict::Invalid(why) => {
            let why: String = why
                .to_string()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            format!("invalid {why} {file}")
        }
    }
}

/// `arena check FILE...`: one line per file, in order. Returns whether every file was valid.
pub fn check_files(
    files: &[PathBuf],
    rules: Option<&serde_json::Value>,
    out: &mut impl Write,
) -> io::Result<bool> {
    let mut all_ok = true;
    for file in files {
        let verdict = check_file_with_rules(file, rules);
        all_ok &= verdict.is_ok();
        writeln!(out, "{}", check_line(&verdict, file))?;
        out.flush()?;
    }
    Ok(all_ok)
}

impl fmt::Display for CheckVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckVerdict::Ok { reached: Some(o) } => write!(f, "ok {}", o.result_str()),
            CheckVerdict::Ok { reached: None } => f.write_str("ok none"),
            CheckVerdict::Invalid(why) => write!(f, "invalid {why}"),
        }
    }
}

fn read_capped(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(MAX_RECORD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn check_parsed(
    bytes: &[u8],
    rules: Option<&serde_json::Value>,
) -> Result<Option<Outcome>, CheckFailure> {
    let parsed = parse_record(bytes)?;
    let record = &parsed.record;
    let mut position = game::new_game(record.game, rules.unwrap_or(&record.rules))?;
    for (k, mv) in parsed.moves.iter().enumerate() {
        let number = k + 1;
        if let Some(outcome) = position.outcome() {
            return Err(CheckFailure::AfterEnd {
                token: mv.token,
                text: mv.written.clone(),
                outcome,
                after_move: k,
            });
        }
        let expected = record.game.colour_letter(position.turn());
        if mv.colour != expected {
            return Err(CheckFailure::WrongColour {
                number,
                token: mv.token,
                text: mv.written.clone(),
                found: mv.colour,
                expected,
            });
        }
        let canonical = match position.check_text(&mv.text) {
            Ok(canonical) => canonical,
            Err(e) => return Err(play_failure(number, mv, e)),
        };
        let played = position
            .play_text(&mv.text)
            .map_err(|e| play_failure(number, mv, e))?;
        if played != canonical {
            // Connect6: the pair's first stone already won. In the record's last turn its
            // second stone is ignored (as the server ignores it in a bot's `J10,K11`); before
            // any later move it is a stone after the end.
            let last = number == parsed.moves.len();
            if let (Some(outcome), false) = (position.outcome(), last) {
                return Err(CheckFailure::AfterEnd {
                    token: mv.token + mv.token_count.saturating_sub(1),
                    text: mv.written.rsplit(';').next().unwrap_or("").to_string(),
                    outcome,
                    after_move: number,
                });
            }
        }
    }
    let reached = position.outcome();
    if let Some(outcome) = reached {
        if RecordResult::from_outcome(&outcome) != record.result {
            return Err(CheckFailure::Contradicts {
                stated: record.result,
                reached: outcome,
            });
        }
    }
    Ok(reached)
}

fn play_failure(number: usize, mv: &ReadMove, e: PlayError) -> CheckFailure {
    match e {
        PlayError::Parse(e) => CheckFailure::BadMove {
            number,
            token: mv.token,
            text: mv.written.clone(),
            why: format!("{} (at character {} of {:?})", e.what, e.at, e.text),
        },
        PlayError::Illegal { why, .. } => CheckFailure::Illegal {
            number,
            token: mv.token,
            text: mv.written.clone(),
            why,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_and_unparsable_files_are_invalid_lines() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.txt");
        let line = check_line(&check_file(&missing), &missing);
        assert!(line.starts_with("invalid unreadable: "), "{line}");
        assert!(line.ends_with(&format!(" {}", missing.display())), "{line}");
        let garbage = dir.path().join("garbage.txt");
        std::fs::write(&garbage, b"\xff\xfe\x00garbage").unwrap();
        let line = check_line(&check_file(&garbage), &garbage);
        assert!(line.starts_with("invalid unparsable: not text"), "{line}");
    }

    #[test]
    fn a_record_without_moves_is_ok_none_whatever_it_states() {
        for result in ["先手胜", "后手胜", "平局"] {
            let text = format!("{{[HEX][a R][b B][{result}][2024.01.01 10:00][e]}}");
            assert_eq!(
                check_bytes(text.as_bytes()),
                CheckVerdict::Ok { reached: None }
            );
        }
    }

    #[test]
    fn rules_given_by_the_caller_replace_the_defaults() {
        let swap = "{[HEX][a R][b B][后手胜][2024.01.01 10:00][e];R(A,1);B(swap)}";
        assert!(check_bytes(swap.as_bytes()).is_ok());
        let off = serde_json::json!({"swap": false});
        let verdict = check_bytes_with_rules(swap.as_bytes(), Some(&off));
        assert!(
            matches!(
                verdict,
                CheckVerdict::Invalid(CheckFailure::Illegal { number: 2, .. })
            ),
            "{verdict}"
        );
        let unknown = serde_json::json!({"no_such_option": 1});
        let verdict = check_bytes_with_rules(swap.as_bytes(), Some(&unknown));
        assert!(
            matches!(verdict, CheckVerdict::Invalid(CheckFailure::Rules(_))),
            "{verdict}"
        );
    }

    #[test]
    fn only_the_last_connect6_turn_may_carry_a_stone_after_six() {
        let head = "{[C6][a B][b W][先手胜][2024.01.01 10:00][e];B(J,10);W(A,1);W(A,2);B(J,11);\
                    B(J,12);W(A,3);W(A,4);B(J,13);B(J,14);W(B,1);W(B,2)";
        let ignored = format!("{head};B(J,15);B(J,9)}}");
        assert!(check_bytes(ignored.as_bytes()).is_ok(), "{ignored}");
        let followed = format!("{head};B(J,15);B(J,9);W(C,1)}}");
        assert!(matches!(
            check_bytes(followed.as_bytes()),
            CheckVerdict::Invalid(CheckFailure::AfterEnd { token: 13, .. })
        ));
        // A lone winning stone followed by a stone of the same side is not a pair of the last
        // turn either way: three black stones make a pair and a lone stone after the end.
        let three = format!("{head};B(J,15);B(J,9);B(C,3)}}");
        assert!(!check_bytes(three.as_bytes()).is_ok());
    }

    #[test]
    fn check_files_reports_every_file_and_whether_all_were_ok() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.txt");
        std::fs::write(&good, "{[HEX][a R][b B][平局][2024.01.01 10:00][e];}").unwrap();
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, "{[HEX][a R][b B][平局]").unwrap();
        let mut out = Vec::new();
        assert!(check_files(std::slice::from_ref(&good), None, &mut out).unwrap());
        assert!(!check_files(&[good.clone(), bad.clone()], None, &mut out).unwrap());
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], format!("ok none {}", good.display()));
        assert_eq!(lines[1], lines[0]);
        assert!(
            lines[2].starts_with("invalid unparsable: header field date"),
            "{}",
            lines[2]
        );
    }
}

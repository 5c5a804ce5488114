//! Contest records end to end: the fixture files under `tests/fixtures/records/` read back,
//! written again byte for byte, round-tripped through both encodings and the file system, and
//! judged by the real `arena check` binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use arena::game::GameId;
use arena::record::{self, Record, RecordEncoding, RecordResult};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/records")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap()
}

fn parse_fixture(name: &str) -> Record {
    Record::parse(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (file name, expected start of its `arena check` line), from `expected.txt`.
fn expected_lines() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(fixture_dir().join("expected.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, expect) = l.split_once('\t').unwrap();
            (file.to_string(), expect.to_string())
        })
        .collect()
}

fn run_check(files: &[PathBuf]) -> (Vec<String>, Option<i32>) {
    let output = Command::new(env!("CARGO_BIN_EXE_arena"))
        .arg("check")
        .args(files)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    (
        stdout.lines().map(str::to_string).collect(),
        output.status.code(),
    )
}

#[test]
fn check_prints_the_expected_line_for_every_fixture_and_fails_on_any_invalid() {
    let expected = expected_lines();
    assert!(expected.len() >= 20, "{} fixtures", expected.len());
    let files: Vec<PathBuf> = expected
        .iter()
        .map(|(f, _)| fixture_dir().join(f))
        .collect();
    let (lines, status) = run_check(&files);
    assert_eq!(lines.len(), files.len(), "{lines:#?}");
    for ((file, expect), (line, path)) in expected.iter().zip(lines.iter().zip(&files)) {
        assert!(
            line.starts_with(expect.as_str()),
            "{file}: expected a line starting {expect:?}, got {line:?}"
        );
        assert!(
            line.ends_with(&format!(" {}", path.display())),
            "{file}: the line should end with the path: {line:?}"
        );
        assert!(!line.contains('\n'));
    }
    assert_eq!(status, Some(1));
}

#[test]
fn check_exits_zero_when_every_file_is_valid() {
    let valid: Vec<PathBuf> = expected_lines()
        .into_iter()
        .filter(|(_, expect)| expect.starts_with("ok "))
        .map(|(f, _)| fixture_dir().join(f))
        .collect();
    assert!(valid.len() >= 8);
    let (lines, status) = run_check(&valid);
    assert_eq!(lines.len(), valid.len());
    assert!(lines.iter().all(|l| l.starts_with("ok ")), "{lines:#?}");
    assert_eq!(status, Some(0));
}

#[test]
fn check_calls_an_unreadable_file_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no such record.txt");
    let good = fixture_dir().join("hex-utf8.txt");
    let (lines, status) = run_check(&[good.clone(), missing.clone(), dir.path().to_path_buf()]);
    assert_eq!(lines[0], format!("ok first {}", good.display()));
    assert!(lines[1].starts_with("invalid unreadable: "), "{}", lines[1]);
    assert!(lines[1].ends_with(&format!(" {}", missing.display())));
    assert!(lines[2].starts_with("invalid unreadable: "), "{}", lines[2]);
    assert_eq!(status, Some(1));
}

#[test]
fn the_same_game_reads_alike_from_utf8_and_gb2312_bytes() {
    let utf8 = parse_fixture("hex-utf8.txt");
    let gb = parse_fixture("hex-gb2312.txt");
    assert_eq!(utf8, gb);
    assert_eq!(utf8.first, "先手参赛队");
    assert_eq!(utf8.place, "重庆");
    assert_eq!(utf8.moves.len(), 21);
    // The GB2312 file holds 先手胜 as GB2312's bytes CF C8 CA D6 CA A4.
    let bytes = fixture("hex-gb2312.txt");
    let known: &[u8] = &[0xcf, 0xc8, 0xca, 0xd6, 0xca, 0xa4];
    assert!(bytes.windows(known.len()).any(|w| w == known));
}

#[test]
fn names_outside_gb2312_survive_in_gb18030() {
    let r = parse_fixture("c6-gb18030.txt");
    assert_eq!((r.first.as_str(), r.second.as_str()), ("喆队", "镕队"));
    assert_eq!(r.event, "六子棋联赛");
    assert_eq!(r.moves[..3], ["J10", "A1,A2", "J11,J12"]);
    assert_eq!(r.moves.last().map(String::as_str), Some("J15"));
}

#[test]
fn tolerated_variations_read_as_the_plain_record() {
    // MARK[1] suffixes, a line break after the header, a trailing ';' and CRLF.
    let marked = parse_fixture("c6-mark-suffix.txt");
    let plain = parse_fixture("c6-gb18030.txt");
    assert_eq!(marked.moves, plain.moves);
    // Blanks everywhere and lower case, against the compact UTF-8 file with a BOM.
    let spaced = parse_fixture("sur-spaced-lowercase.txt");
    let compact = parse_fixture("sur-utf8-bom.txt");
    assert_eq!(spaced.moves, compact.moves);
    assert_eq!(spaced.moves, ["B2-B3", "A5-A4", "B3-B4", "A4-A3", "B4xD6"]);
    assert_eq!(spaced.first, "Team One");
    assert_eq!(spaced.event, "CCGC 2023");
}

/// Writing a record read from a canonical fixture gives the fixture back, byte for byte: the
/// colour letters come from replaying the moves (in Jiu, Black places last and moves first).
#[test]
fn to_text_reproduces_canonical_fixtures_in_their_encoding() {
    for (name, encoding) in [
        ("hex-utf8.txt", RecordEncoding::Utf8),
        ("hex-gb2312.txt", RecordEncoding::Gb2312),
        ("hex-swap.txt", RecordEncoding::Utf8),
        ("c6-gb18030.txt", RecordEncoding::Gb2312),
        ("sur-illegal.txt", RecordEncoding::Utf8),
        ("jiu-gb2312.txt", RecordEncoding::Gb2312),
        ("jiu-placement.txt", RecordEncoding::Utf8),
    ] {
        let bytes = fixture(name);
        let record = Record::parse(&bytes).unwrap();
        if name == "sur-illegal.txt" {
            // Its only move is illegal: the writer refuses to replay it.
            let err = record.to_text().unwrap_err();
            assert!(
                matches!(err, record::RecordError::Replay { number: 1, .. }),
                "{err}"
            );
            continue;
        }
        assert_eq!(
            record.encode(encoding).unwrap(),
            bytes,
            "{name}: {}",
            record.to_text().unwrap()
        );
    }
}

#[test]
fn jiu_battle_starts_with_black_moving_twice() {
    let record = parse_fixture("jiu-gb2312.txt");
    let tokens = record.tokens().unwrap();
    assert_eq!(tokens.len(), 199);
    assert_eq!(tokens[0], "W(G,7)");
    assert_eq!(tokens[195], "B(N,14)");
    assert_eq!(
        tokens[196..],
        ["B(F,7)-(G,7)", "W(G,8)-(H,8)", "B(D,7)x(F,7)"]
    );
}

fn sample(game: GameId, moves: &[&str], rules: serde_json::Value) -> Record {
    Record {
        game,
        first: "先手队 Alpha".to_string(),
        second: "喆 Beta".to_string(),
        result: RecordResult::Second,
        played_at: chrono::NaiveDate::from_ymd_opt(2025, 8, 3)
            .and_then(|d| d.and_hms_opt(9, 7, 0))
            .unwrap(),
        place: "重庆 Chongqing".to_string(),
        event: "2025 CCGC".to_string(),
        moves: moves.iter().map(|m| m.to_string()).collect(),
        rules,
    }
}

#[test]
fn records_of_all_four_games_round_trip_through_text_encodings_and_files() {
    let null = serde_json::Value::Null;
    let records = [
        sample(
            GameId::Connect6,
            &["J10", "K10,K11", "A1,S19", "J9,H9"],
            null.clone(),
        ),
        sample(
            GameId::Hex,
            &["C2", "swap", "F6"],
            serde_json::json!({"swap": true}),
        ),
        sample(GameId::Hex, &["F6", "E7", "A11"], null.clone()),
        sample(
            GameId::Surakarta,
            &["B2-B3", "A5-A4", "B3-B4", "A4-A3", "B4xD6"],
            null.clone(),
        ),
        sample(GameId::Jiu, &["H8", "G7", "A1", "N14"], null.clone()),
    ];
    for r in &records {
        let dir = tempfile::tempdir().unwrap();
        let text = r.to_text().unwrap();
        assert!(text.starts_with(&format!("{{[{}][先手队 Alpha ", r.game.record_code())));
        for encoding in [RecordEncoding::Utf8, RecordEncoding::Gb2312] {
            let back = Record::parse(&r.encode(encoding).unwrap()).unwrap();
            assert_eq!(&back, r, "{text}");
        }
        let a = record::write_record(dir.path(), r, RecordEncoding::Gb2312).unwrap();
        let b = record::write_record(dir.path(), r, RecordEncoding::Utf8).unwrap();
        assert_ne!(
            a, b,
            "a second game of the same name must not overwrite the first"
        );
        assert_eq!(a.file_name().unwrap().to_str().unwrap(), r.file_name());
        assert_eq!(
            b.file_name().unwrap().to_str().unwrap(),
            r.file_name_numbered(2)
        );
        assert_eq!(&Record::parse(&std::fs::read(&a).unwrap()).unwrap(), r);
        assert_eq!(&Record::parse(&std::fs::read(&b).unwrap()).unwrap(), r);
        assert_eq!(
            record::check_file(&a),
            record::check_file(&b),
            "{}",
            a.display()
        );
    }
    let texts: Vec<String> = records.iter().map(|r| r.to_text().unwrap()).collect();
    assert!(texts[0].ends_with(";B(J,10);W(K,10);W(K,11);B(A,1);B(S,19);W(J,9);W(H,9)}"));
    assert!(texts[1].ends_with(";R(C,2);B(swap);R(F,6)}"));
    assert!(texts[3].ends_with(";W(A,4)-(A,3);B(B,4)x(D,6)}"));
    assert!(texts[4].ends_with(";W(H,8);B(G,7);W(A,1);B(N,14)}"));
}

/// Plays a seeded random game to its end (or `max_plies`), returning the move texts as
/// `play_text` records them and the outcome. `second_move` replaces the second move (a swap).
fn random_game(
    game: GameId,
    rules: &serde_json::Value,
    seed: u64,
    max_plies: usize,
    second_move: Option<&str>,
) -> (Vec<String>, Option<arena::game::Outcome>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut position = arena::game::new_game(game, rules).unwrap();
    let mut moves = Vec::new();
    while position.outcome().is_none() && moves.len() < max_plies {
        let mut legal = position.legal_move_texts();
        let count = legal.len();
        assert!(count > 0, "{game}: no legal move but no outcome");
        let text = match second_move {
            Some(mv) if moves.len() == 1 => mv.to_string(),
            _ => legal.swap_remove(rng.gen_range(0..count)),
        };
        moves.push(position.play_text(&text).unwrap());
    }
    (moves, position.outcome())
}

/// Random games of every game, to the end: the record written from them reads back to the same
/// record, and `check` reaches the game's own result.
#[test]
fn random_games_write_read_back_and_check_to_their_result() {
    let mut tokens_seen = String::new();
    for game in GameId::ALL {
        let rules = if game == GameId::Hex {
            serde_json::json!({"swap": true})
        } else {
            serde_json::Value::Null
        };
        for seed in 0..4u64 {
            let swap = (game == GameId::Hex && seed % 2 == 0).then_some("swap");
            let (moves, outcome) = random_game(game, &rules, seed, 3000, swap);
            let mut record = sample(game, &[], rules.clone());
            record.moves = moves;
            record.result = outcome
                .as_ref()
                .map_or(RecordResult::Draw, RecordResult::from_outcome);
            let text = record.to_text().unwrap();
            tokens_seen.push_str(&text);
            for encoding in [RecordEncoding::Utf8, RecordEncoding::Gb2312] {
                let bytes = record.encode(encoding).unwrap();
                let mut back = Record::parse(&bytes).unwrap();
                if !back.moves.iter().any(|m| m == "swap") {
                    back.rules = rules.clone(); // the reader only knows swap is on when it is used
                }
                assert_eq!(back, record, "{game} seed {seed}");
                assert_eq!(
                    record::check_bytes(&bytes),
                    record::CheckVerdict::Ok { reached: outcome },
                    "{game} seed {seed}: {text}"
                );
            }
        }
    }
    // The random games exercise the token forms beyond single points.
    for form in [")-(", ")x(", ")+(", ";B(swap);R("] {
        assert!(
            tokens_seen.contains(form),
            "no {form:?} in the random records"
        );
    }
}

#[test]
fn to_text_refuses_moves_after_the_end_and_drops_a_winning_pairs_second_stone() {
    let mut record = parse_fixture("c6-gb18030.txt");
    let won = record.to_text().unwrap();
    assert!(won.ends_with(";W(B,1);W(B,2);B(J,15)}"), "{won}");
    // The same last turn given as a pair: the second stone is not written.
    if let Some(last) = record.moves.last_mut() {
        *last = "J15,J9".to_string();
    }
    assert_eq!(record.to_text().unwrap(), won);
    record.moves.push("A9,A10".to_string());
    let err = record.to_text().unwrap_err();
    assert!(
        matches!(err, record::RecordError::Replay { number: 8, .. }),
        "{err}"
    );
}

/// Mutated fixtures (bytes replaced, inserted, deleted; record punctuation favoured) never make
/// the reader or `check` panic, and whatever `check` accepts is written back by `to_text` as a
/// record that reads the same.
#[test]
fn mutated_records_are_judged_without_panics_and_accepted_ones_round_trip() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(20260522);
    let punctuation = b"{}[]();,-x+ \r\nRBWrbw0123456789swapMARK";
    let (mut accepted, mut refused) = (0usize, 0usize);
    for (name, _) in expected_lines() {
        let original = fixture(&name);
        for _ in 0..300 {
            let mut bytes = original.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..=bytes.len());
                let byte = if rng.gen_bool(0.7) {
                    punctuation[rng.gen_range(0..punctuation.len())]
                } else {
                    rng.gen()
                };
                match rng.gen_range(0..3) {
                    0 if at < bytes.len() => bytes[at] = byte,
                    1 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, byte),
                }
            }
            match record::check_bytes(&bytes) {
                record::CheckVerdict::Ok { .. } => {
                    accepted += 1;
                    let read = Record::parse(&bytes).unwrap();
                    let text = read.to_text().unwrap();
                    let again = Record::parse(text.as_bytes()).unwrap();
                    // The writer writes the moves as played: a last Connect6 pair whose first
                    // stone already won comes back as that stone alone.
                    let mut position = arena::game::new_game(read.game, &read.rules).unwrap();
                    let played: Vec<String> = read
                        .moves
                        .iter()
                        .map(|m| position.play_text(m).unwrap())
                        .collect();
                    assert_eq!(again.moves, played, "{name}: {text}");
                    assert_eq!(again.result, read.result);
                }
                record::CheckVerdict::Invalid(why) => {
                    refused += 1;
                    assert!(!why.to_string().is_empty());
                }
            }
        }
    }
    println!("mutated records: {accepted} accepted, {refused} refused");
    assert!(accepted > 0 && refused > 0);
}

#[test]
fn check_replays_under_the_rule_options_given_with_rules() {
    // Four quiet plies: nothing under the default no-capture limit (the stated draw is then
    // accepted as coming from outside the board), a move_limit draw under a limit of 4.
    let file = fixture_dir().join("options").join("sur-limit4.txt");
    let run = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_arena"))
            .arg("check")
            .args(extra)
            .arg(&file)
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    };
    assert!(run(&[]).starts_with("ok none "));
    assert!(run(&["--rules", r#"{"no_capture_limit":4}"#]).starts_with("ok draw "));
}

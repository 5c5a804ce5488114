//! The rules tools' streaming contract, run through the real binary: each input line is answered
//! as soon as it is read (before stdin closes), 100,000-line inputs work, and bad lines get
//! error lines instead of stopping the tool.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use super::common::arena_command as arena;

#[test]
fn a_reader_that_stops_early_ends_the_tool_quietly() {
    let mut child = arena()
        .args(["moves", "surakarta"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "oooooo/oooooo/....../....../xxxxxx/xxxxxx x").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.split_whitespace().count(), 16, "{line}");
    // Like `| head -1`: the reader goes away, then more input comes.
    drop(stdout);
    for _ in 0..1000 {
        if writeln!(stdin, "oooooo/oooooo/....../....../xxxxxx/xxxxxx x").is_err() {
            break;
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no error message");
}

#[test]
fn moves_answers_each_line_before_stdin_closes() {
    let mut child = arena()
        .args(["moves", "surakarta"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..3 {
        writeln!(stdin, "oooooo/oooooo/....../....../xxxxxx/xxxxxx x").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.split_whitespace().count(), 16, "{line}");
    }
    writeln!(stdin, "not a position").unwrap();
    stdin.flush().unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("error "), "{line}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn replay_handles_a_hundred_thousand_lines() {
    const LINES: usize = 100_000;
    let mut child = arena()
        .args(["replay", "hex"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut input = String::new();
        for i in 0..LINES {
            match i % 4 {
                0 => input.push_str("F6 E7 G5\n"),
                1 => input.push_str("F6 F6\n"),
                2 => input.push('\n'),
                _ => input.push_str("Z99\n"),
            }
        }
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), LINES);
    for (i, line) in lines.iter().enumerate() {
        let expected = match i % 4 {
            0 => "none 3",
            1 => "illegal 2 F6 F6 is already occupied",
            2 => "none 0",
            _ => "illegal 1 Z99 column Z is off the board (A-K) (at character 1)",
        };
        assert_eq!(*line, expected, "line {}", i + 1);
    }
}

#[test]
fn perft_prints_one_line_per_depth_for_every_game() {
    for (game, first) in [
        ("connect6", "1 361"),
        ("hex", "1 121"),
        ("surakarta", "1 16"),
        ("jiu", "1 2"),
    ] {
        let output = arena().args(["perft", game, "2"]).output().unwrap();
        assert!(output.status.success(), "{game}");
        let text = String::from_utf8(output.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{game}: {text}");
        assert_eq!(lines[0], first, "{game}");
        assert!(lines[1].starts_with("2 "), "{game}: {text}");
    }
}

#[test]
fn perft_to_depth_zero_is_refused() {
    let output = arena().args(["perft", "hex", "0"]).output().unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid value '0'"), "{stderr}");
}

#[test]
fn unknown_game_and_bad_rules_are_refused_with_a_message() {
    let output = arena().args(["perft", "chess", "1"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown game"));
    let output = arena()
        .args(["perft", "hex", "1", "--rules", r#"{"swop":true}"#])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("swop"), "{stderr}");
}

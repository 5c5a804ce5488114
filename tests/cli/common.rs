//! Helpers shared by the command-line tests: fixture files and running the built binary.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The text of `tests/fixtures/<path>`.
pub fn fixture(path: &str) -> String {
    let full: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", path]
        .iter()
        .collect();
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// A command for the built `arena` binary.
pub fn arena_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_arena"))
}

/// Runs `arena ARGS` with `input` on stdin.
pub fn run(args: &[&str], input: &str) -> Output {
    let mut child = arena_command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start arena");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("run arena")
}

/// Runs `arena ARGS` with `input` on stdin and returns stdout; the run must succeed.
pub fn stdout_of(args: &[&str], input: &str) -> String {
    let output = run(args, input);
    assert!(
        output.status.success(),
        "arena {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

//! The command-line contract of the rules tools (`perft`, `moves`, `replay`), run through the
//! built `arena` binary on the fixtures under `tests/fixtures/`: one integration binary, one
//! module per game family, one perft harness for all games, plus the streaming contract shared
//! by all.
//!
//! Fixtures: `tests/fixtures/<game>/<tool>[_<variant>].in` is a tool's input and
//! `<tool>[_<variant>].expected` its expected output; perft fixtures have no input (see
//! `perft.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod connect6_hex;
mod jiu;
mod perft;
mod surakarta;
mod tools;

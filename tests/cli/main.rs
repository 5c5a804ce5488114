//! The command-line contract of the rules tools (`perft`, `moves`, `replay`), run through the
//! built `arena` binary on the fixtures under `tests/fixtures/`: one integration binary, one
//! module per game family plus the streaming contract shared by all.

mod common;
mod connect6_hex;
mod jiu;
mod surakarta;
mod tools;

//! arena: the referee server and bot arena for Connect6, Hex, Surakarta and Tibetan Jiu.
//! The library does the work; `src/main.rs` only wires the command line to it.
//!
//! # Layout
//!
//! Layers, lowest first; a module may import its own layer and those below, never one above:
//!
//! 1. **Rules and players**: `game` (pure: no I/O, clocks or randomness), `engine` (the
//!    built-in players, on `game`), and the leaf helpers `hash`, `quantile`, `atomic_file`,
//!    `fanout`, `console`, `log_text`, `options_text` (the one `KEY=VALUE` reader).
//! 2. **Formats**: `protocol`, `clock_settings` with `clock` (both clocks of a match, pure),
//!    `game_line`, `journal`, `record`, `openings`,
//!    `league` (standings), `config`, `program`/`sandbox` (how a student's program is named
//!    and fenced).
//! 3. **A bot's side**: `bot_connection`, `client`, `bridge` (a program or engine behind the
//!    protocol), `duel` (engines against each other in-process).
//! 4. **`server`**: the referee server. What happens in it leaves only as typed
//!    `server::ServerEvent`s to the subscribers its caller brings; it knows nothing of the web
//!    view, `arena match` or the terminal.
//! 5. **Users of a server**: `web` (the web view: a `server::Companion` whose read model is
//!    built from events), `matches` (`arena match`: tallies from events), `bench`, `audit`,
//!    `tools`. They import the server and the layers below, not each other (`main.rs` hands
//!    `matches` the web view as a companion), except `bench`, which measures the web view.
//! 6. **`main.rs`**: parses the command line, wires a server with its subscribers (the
//!    console's lines are formatted there) and companions, and decides what a person sees.

pub mod atomic_file;
pub mod audit;
pub mod bench;
pub mod bot_connection;
pub mod bridge;
pub mod client;
pub mod clock;
pub mod clock_settings;
pub mod config;
pub mod console;
pub mod duel;
pub mod engine;
pub mod fanout;
pub mod game;
pub mod game_line;
pub mod hash;
pub mod journal;
pub mod league;
pub mod log_text;
pub mod matches;
pub mod openings;
pub mod options_text;
pub mod program;
pub mod protocol;
pub mod quantile;
pub mod record;
pub mod sandbox;
pub mod server;
pub mod tools;
pub mod web;

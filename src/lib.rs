//! arena: the referee server and bot arena for Connect6, Hex, Surakarta and Tibetan Jiu.
//! The library does the work; `src/main.rs` only wires the command line to it.

pub mod atomic_file;
pub mod audit;
pub mod bench;
pub mod bot_connection;
pub mod bridge;
pub mod client;
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
pub mod program;
pub mod protocol;
pub mod quantile;
pub mod record;
pub mod sandbox;
pub mod server;
pub mod tools;
pub mod web;

//! arena: the referee server and bot arena for Connect6, Hex, Surakarta and Tibetan Jiu.
//! The library does the work; `src/main.rs` only wires the command line to it.
//!
//! # Layout
//!
//! Layers, lowest first; a module may import its own layer and those below, never one above:
//!
//! 1. **Rules and players**: `game` (pure: no I/O, clocks or randomness), `engine` (the
//!    built-in players, on `game`), and the leaf helpers `hash`, `quantile`, `atomic_file`,
//!    `fanout`, `console`, `log_text`, `log_writer` (log output on a thread of its own),
//!    `options_text` (the one `KEY=VALUE` reader),
//!    `json_out` (the JSON lines written at every move, without `serde_json`'s serializer),
//!    `heap_count` (the heap in use, counted by the allocator wrapper `main.rs` installs).
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
pub mod heap_count;
pub mod journal;
pub mod json_out;
pub mod league;
pub mod log_text;
pub mod log_writer;
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

#[cfg(test)]
mod layout_tests {
    //! The layering above, checked: every `crate::MODULE` path in a module's code (its unit
    //! tests and doc comments left out) names a module of its own layer or a lower one.

    use std::path::Path;

    /// Each top-level module's layer, as the "Layout" section states them.
    const LAYERS: &[(&str, u8)] = &[
        ("game", 1),
        ("engine", 1),
        ("hash", 1),
        ("quantile", 1),
        ("atomic_file", 1),
        ("fanout", 1),
        ("console", 1),
        ("log_text", 1),
        ("log_writer", 1),
        ("options_text", 1),
        ("json_out", 1),
        ("heap_count", 1),
        ("protocol", 2),
        ("clock_settings", 2),
        ("clock", 2),
        ("game_line", 2),
        ("journal", 2),
        ("record", 2),
        ("openings", 2),
        ("league", 2),
        ("config", 2),
        ("program", 2),
        ("sandbox", 2),
        ("bot_connection", 3),
        ("client", 3),
        ("bridge", 3),
        ("duel", 3),
        ("server", 4),
        ("web", 5),
        ("matches", 5),
        ("bench", 5),
        ("audit", 5),
        ("tools", 5),
    ];

    fn layer(module: &str) -> Option<u8> {
        LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, l)| l)
    }

    /// The file's code without its unit tests (from the first `#[cfg(test)]` followed by a
    /// `mod`) and without comment lines.
    fn code_of(text: &str) -> String {
        let mut code = String::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let trimmed = line.trim_start();
            if trimmed == "#[cfg(test)]"
                && lines
                    .peek()
                    .is_some_and(|next| next.trim_start().starts_with("mod "))
            {
                break;
            }
            if !trimmed.starts_with("//") {
                code.push_str(line);
                code.push('\n');
            }
        }
        code
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn no_module_imports_a_layer_above_its_own() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut wrong = Vec::new();
        for path in files {
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let top = first.to_str().unwrap().trim_end_matches(".rs");
            if top == "lib" || top == "main" || relative.ends_with("tests.rs") {
                continue;
            }
            let own = layer(top).unwrap_or_else(|| panic!("module {top} has no layer in lib.rs"));
            let code = code_of(&std::fs::read_to_string(&path).unwrap());
            for (at, _) in code.match_indices("crate::") {
                let used: String = code[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if layer(&used).is_some_and(|l| l > own) {
                    wrong.push(format!("{} uses crate::{used}", relative.display()));
                }
            }
        }
        assert!(wrong.is_empty(), "imports of a higher layer: {wrong:#?}");
    }

    #[test]
    fn the_layout_check_sees_an_import_from_above_and_skips_tests_and_comments() {
        let text = "use crate::game::Side;\n// crate::web in a comment\nfn f() { crate::server::run(); }\n#[cfg(test)]\nmod tests { use crate::web; }\n";
        let code = code_of(text);
        assert!(code.contains("crate::server"));
        assert!(!code.contains("crate::web"));
        assert_eq!(layer("server"), Some(4));
        assert!(layer("server") > layer("game"));
    }
}

//! The catalogue of built-in engines as `arena engines` lists it: an aligned table (id, games,
//! description, then each option with its default) or JSON. Written to a writer or returned as
//! data; the caller decides where it goes.

use std::io::Write;

use serde_json::{json, Value};

use super::{catalogue, level, EngineInfo, EngineOption};

/// An option's text as the listing shows it: a `level` option of an engine with a shared level
/// table gets each level's limits appended.
pub fn option_about(info: &EngineInfo, option: &EngineOption) -> String {
    match info.levels {
        Some(levels) if option.name == "level" => {
            format!("{}: {}", option.about, level::describe(levels))
        }
        _ => option.about.to_string(),
    }
}

/// The catalogue as JSON (`arena engines --json`).
pub fn engines_json() -> Value {
    Value::Array(
        catalogue()
            .iter()
            .map(|info| {
                json!({
                    "id": info.id,
                    "games": info.games.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
                    "about": info.about,
                    "options": info.options.iter().map(|o| json!({
                        "name": o.name,
                        "default": o.default,
                        "about": option_about(info, o),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// Writes the catalogue as an aligned table (`arena engines`): id, games, description, then
/// one indented line per option with its default.
pub fn write_engine_table(out: &mut impl Write) -> std::io::Result<()> {
    write_engine_table_of(&catalogue(), out)
}

/// [`write_engine_table`] for any list of engines.
pub fn write_engine_table_of(engines: &[EngineInfo], out: &mut impl Write) -> std::io::Result<()> {
    let rows: Vec<(String, String, String)> = engines
        .iter()
        .map(|info| {
            let games: Vec<&str> = info.games.iter().map(|g| g.as_str()).collect();
            (info.id.to_string(), games.join(","), info.about.to_string())
        })
        .collect();
    let id_width = rows.iter().map(|r| r.0.len()).chain([6]).max().unwrap_or(6);
    let games_width = rows.iter().map(|r| r.1.len()).chain([5]).max().unwrap_or(5);
    writeln!(
        out,
        "{:id_width$}  {:games_width$}  DESCRIPTION",
        "ENGINE", "GAMES"
    )?;
    for (info, (id, games, about)) in engines.iter().zip(&rows) {
        writeln!(out, "{id:id_width$}  {games:games_width$}  {about}")?;
        let name_width = info
            .options
            .iter()
            .map(|o| o.name.len() + o.default.len() + 1)
            .max()
            .unwrap_or(0);
        for option in info.options {
            let setting = format!("{}={}", option.name, option.default);
            writeln!(
                out,
                "{:id_width$}  {:games_width$}  --option {setting:name_width$}  {}",
                "",
                "",
                option_about(info, option)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameId;

    #[test]
    fn engine_table_aligns_columns_and_lists_options_with_defaults() {
        use crate::engine::EngineOption;
        let engines = [
            EngineInfo {
                id: "a",
                games: &[GameId::Hex],
                about: "first",
                levels: None,
                options: &[
                    EngineOption {
                        name: "depth",
                        default: "3",
                        about: "search depth",
                    },
                    EngineOption {
                        name: "book",
                        default: "true",
                        about: "opening book",
                    },
                ],
            },
            EngineInfo {
                id: "longer-id",
                games: &[GameId::Connect6, GameId::Jiu],
                about: "second",
                options: &[],
                levels: None,
            },
        ];
        let mut out = Vec::new();
        write_engine_table_of(&engines, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "ENGINE     GAMES         DESCRIPTION\n\
             a          hex           first\n\
             \x20                        --option depth=3    search depth\n\
             \x20                        --option book=true  opening book\n\
             longer-id  connect6,jiu  second\n"
        );
    }

    #[test]
    fn engine_table_lists_every_engine() {
        let mut out = Vec::new();
        write_engine_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for info in catalogue() {
            assert!(text.lines().any(|l| l.starts_with(info.id)), "{text}");
        }
    }
}

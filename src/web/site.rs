//! `arena site`: the static copy of a league for publishing. From `out_dir` (a running or a
//! finished league) it writes `index.html`, one `games/{match}.html` per finished game, the
//! API's JSON under `api/`, the records under `records/` and the shared assets: the same pages
//! as the live view, reading those files instead of the live API.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::atomic_file::write_atomically;
use crate::config::Config;

use super::api::{finished_games, game_detail, games_meta, is_plain_file_name, standings_text};
use super::assets;

/// Why the site could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error(
        "no games.jsonl or journal.jsonl in {} (the league's out_dir): nothing to publish; check `out_dir` in the config (a relative one is taken from the config's folder)",
        .0.display()
    )]
    NoOutputs(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SiteError> {
    let fail = |source| SiteError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    write_atomically(path, bytes).map_err(|e| SiteError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

/// A page of the live view made static: `root` is the way from the page's folder to the
/// site's top (`""` or `"../"`).
pub fn static_page(html: &str, root: &str) -> String {
    html.replace("\"/assets/", &format!("\"{root}assets/"))
        .replace(
            "<!--static-->",
            &format!("<script>var ARENA_STATIC = {{ root: \"{root}\" }};</script>"),
        )
}

/// Writes the static site of `config`'s league into `dir`.
pub fn write_site(config: &Config, dir: &Path) -> Result<(), SiteError> {
    let out_dir = &config.server.out_dir;
    if !["games.jsonl", crate::journal::JOURNAL_FILE]
        .iter()
        .any(|file| out_dir.join(file).exists())
    {
        return Err(SiteError::NoOutputs(out_dir.clone()));
    }
    let games = finished_games(out_dir);
    write(
        &dir.join("api/standings.json"),
        standings_text(config).as_bytes(),
    )?;
    let summaries: Vec<_> = games.iter().map(|g| g.summary()).collect();
    write(
        &dir.join("api/games.json"),
        json!({ "games": summaries }).to_string().as_bytes(),
    )?;
    write(
        &dir.join("api/games/meta.json"),
        games_meta().to_string().as_bytes(),
    )?;
    for game in games
        .iter()
        .filter(|g| is_plain_file_name(&g.spec.match_id) && g.spec.match_id != "meta")
    {
        write(
            &dir.join(format!("api/games/{}.json", game.spec.match_id)),
            game_detail(game).to_string().as_bytes(),
        )?;
        write(
            &dir.join(format!("games/{}.html", game.spec.match_id)),
            static_page(assets::GAME_HTML, "../").as_bytes(),
        )?;
        if let Some(record) = game.record.as_deref().filter(|r| is_plain_file_name(r)) {
            let from = out_dir.join("records").join(record);
            match std::fs::read(&from) {
                Ok(bytes) => write(&dir.join("records").join(record), &bytes)?,
                Err(e) => {
                    tracing::warn!(path = %from.display(), error = %e, "record file missing from the site")
                }
            }
        }
    }
    write(
        &dir.join("index.html"),
        static_page(assets::INDEX_HTML, "").as_bytes(),
    )?;
    for (name, _, text) in assets::ALL {
        write(&dir.join("assets").join(name), text.as_bytes())?;
    }
    Ok(())
}

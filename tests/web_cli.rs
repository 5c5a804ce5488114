//! `arena serve --web` and `arena site` through the real binary: the printed address, the static
//! site written at exit and on demand, a bad address refused.

use std::process::Command;

const LEAGUE: &str = r#"
[server]
listen = "127.0.0.1:0"
out_dir = "out"

[[bot]]
name = "greedy"
builtin = "greedy"

[[bot]]
name = "random"
builtin = "random"

[[tournament]]
name = "sur"
game = "surakarta"
bots = ["greedy", "random"]
games_per_pairing = 1
"#;

fn arena() -> Command {
    Command::new(env!("CARGO_BIN_EXE_arena"))
}

#[test]
fn serve_prints_the_web_address_and_writes_the_site_when_done() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("arena.toml"), LEAGUE).unwrap();
    let output = arena()
        .current_dir(dir.path())
        .args(["serve", "--web", "127.0.0.1:0"])
        .output()
        .expect("run arena serve");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("web view: http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no web view line in {stdout}"));
    let port: u16 = line
        .trim_start_matches("web view: http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .expect("a port");
    assert_ne!(port, 0, "the bound port is printed");
    assert!(
        stdout.contains("static site written to out/site"),
        "{stdout}"
    );
    let site = dir.path().join("out/site");
    for file in [
        "index.html",
        "api/standings.json",
        "api/games.json",
        "assets/board.js",
    ] {
        assert!(site.join(file).exists(), "{file}");
    }
    let games: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("api/games.json")).unwrap()).unwrap();
    let id = games["games"][0]["match"].as_str().expect("one game");
    assert!(site.join(format!("games/{id}.html")).exists());
    let detail: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join(format!("api/games/{id}.json"))).unwrap())
            .unwrap();
    let record = detail["record"].as_str().unwrap();
    assert_eq!(
        std::fs::read(site.join("records").join(record)).unwrap(),
        std::fs::read(dir.path().join("out/records").join(record)).unwrap()
    );
    let page = std::fs::read_to_string(site.join(format!("games/{id}.html"))).unwrap();
    assert!(page.contains("ARENA_STATIC = { root: \"../\" }"));
    assert!(page.contains("\"../assets/board.js\""));

    // `arena site` writes the same from the finished league, wherever asked.
    let elsewhere = dir.path().join("published");
    let output = arena()
        .current_dir(dir.path())
        .args(["site", "--out"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("static site written to"));
    assert_eq!(
        std::fs::read(elsewhere.join(format!("api/games/{id}.json"))).unwrap(),
        std::fs::read(site.join(format!("api/games/{id}.json"))).unwrap()
    );
}

#[test]
fn a_bad_web_address_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("arena.toml"), LEAGUE).unwrap();
    let output = arena()
        .current_dir(dir.path())
        .args(["serve", "--web", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("server.web"), "{stderr}");
    let config = format!("{LEAGUE}\n").replace("[server]\n", "[server]\nweb = \"nowhere\"\n");
    assert!(arena::config::Config::from_toml(&config)
        .unwrap_err()
        .to_string()
        .starts_with("server.web:"));
}

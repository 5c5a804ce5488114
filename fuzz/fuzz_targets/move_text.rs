//! Fuzz target: any text as a move of any game parses and checks without panicking, and an
//! accepted move's canonical text is accepted again unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let game = arena::game::GameId::ALL[selector as usize % 4];
    let start = arena::game::new_game(game, &serde_json::Value::Null).expect("default rules");
    if let Ok(canonical) = start.check_text(text) {
        assert_eq!(start.check_text(&canonical), Ok(canonical.clone()));
    }
});

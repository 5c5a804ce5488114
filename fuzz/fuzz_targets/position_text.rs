//! Fuzz target: any text as a position of any game reads without panicking; a position that
//! reads writes back to text that reads to the same position, and its moves can be listed.
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
    let rules = serde_json::Value::Null;
    if let Ok(position) = arena::game::game_from_position_text(game, text, &rules) {
        let again = arena::game::game_from_position_text(game, &position.position_text(), &rules)
            .expect("own position text reads back");
        assert_eq!(again.position_text(), position.position_text());
        let _ = position.move_listing();
    }
});

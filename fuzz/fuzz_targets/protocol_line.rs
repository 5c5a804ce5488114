//! Fuzz target: any bytes as a line from a bot must classify without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(line) = std::str::from_utf8(data) {
        if let Ok(message) = arena::protocol::parse_bot_line(line) {
            assert_eq!(arena::protocol::parse_bot_line(&message.to_line()), Ok(message));
        }
    }
});

//! Fuzz target: any bytes as a contest record file (UTF-8 or GB18030) read and checked without
//! panicking; a record that reads writes back to text that reads to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = arena::record::check_bytes(data);
    if let Ok(record) = arena::record::Record::parse(data) {
        if let Ok(text) = record.to_text() {
            let again = arena::record::Record::parse(text.as_bytes()).expect("own text reads back");
            assert_eq!(again.moves, record.moves);
        }
    }
});

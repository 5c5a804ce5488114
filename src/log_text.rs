//! Client-supplied text in log lines: the one helper every log line that shows a name, a game
//! id, an engine string or any other text from a bot or a browser goes through. It escapes
//! control characters (no forged lines, no terminal escape codes) and cuts the text to
//! `MAX_LOGGED_CHARS`, so a visitor can neither forge nor flood the log.

use std::fmt;

/// Most characters of one client-supplied text a log line shows.
pub const MAX_LOGGED_CHARS: usize = 64;

/// `text` as a log line may show it (see the module's documentation).
pub fn client_text(text: &str) -> ClientText<'_> {
    ClientText(text)
}

/// Displays its text escaped and cut; build it with [`client_text`].
#[derive(Debug, Clone, Copy)]
pub struct ClientText<'a>(&'a str);

impl fmt::Display for ClientText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        for c in chars.by_ref().take(MAX_LOGGED_CHARS) {
            if c.is_control() || c == '\\' || c == '"' || is_invisible(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            write!(f, "…({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// Characters that change how the rest of a line reads without showing themselves:
/// bidirectional overrides and isolates, zero-width characters, line and paragraph separators.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_and_terminal_escapes_are_escaped() {
        let shown = client_text("bob\n2026-01-01 INFO forged\x1b[31m").to_string();
        assert!(!shown.contains('\n') && !shown.contains('\x1b'), "{shown}");
        assert_eq!(shown, "bob\\n2026-01-01 INFO forged\\u{1b}[31m");
        assert_eq!(client_text("a\u{202E}b").to_string(), "a\\u{202e}b");
    }

    #[test]
    fn long_text_is_cut_to_64_characters_with_its_size() {
        let long = "名".repeat(60_000);
        let shown = client_text(&long).to_string();
        assert_eq!(
            shown.chars().count(),
            MAX_LOGGED_CHARS + "…(180000 bytes)".chars().count()
        );
        assert!(shown.ends_with("…(180000 bytes)"), "{shown}");
        assert_eq!(client_text("alice").to_string(), "alice");
    }
}

//! Client-supplied text in log lines: the one helper every log line that shows a name, a game
//! id, an engine string or any other text from a bot or a browser goes through. It escapes
//! control characters (no forged lines, no terminal escape codes) and cuts the text to
//! `MAX_LOGGED_CHARS` (a sentence from the other side, such as the referee's error message to a
//! bot, to `MAX_LOGGED_MESSAGE_CHARS`), so a visitor can neither forge nor flood the log.

use std::fmt;

/// Most characters of one client-supplied text a log line shows.
pub const MAX_LOGGED_CHARS: usize = 64;

/// Most characters of one message (a sentence, not a name) from the other side a log line shows.
pub const MAX_LOGGED_MESSAGE_CHARS: usize = 400;

/// `text` as a log line may show it (see the module's documentation).
pub fn client_text(text: &str) -> ClientText<'_> {
    ClientText {
        text,
        max_chars: MAX_LOGGED_CHARS,
    }
}

/// A message from the other side (the referee's `error` text to a bot, say) as a log line may
/// show it: escaped like [`client_text`], cut at `MAX_LOGGED_MESSAGE_CHARS`.
pub fn peer_message(text: &str) -> ClientText<'_> {
    ClientText {
        text,
        max_chars: MAX_LOGGED_MESSAGE_CHARS,
    }
}

/// Displays its text escaped and cut, in `{}` and `{:?}` alike (quoted in the latter); build
/// it with [`client_text`] or [`peer_message`].
#[derive(Clone, Copy)]
pub struct ClientText<'a> {
    text: &'a str,
    max_chars: usize,
}

impl fmt::Debug for ClientText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl fmt::Display for ClientText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.text.chars();
        for c in chars.by_ref().take(self.max_chars) {
            if c.is_control() || c == '\\' || c == '"' || is_invisible(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            write!(f, "…({} bytes)", self.text.len())?;
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

    #[test]
    fn debug_shows_the_same_escaped_and_cut_text_quoted() {
        let long = "a\n".repeat(100);
        let shown = format!("{:?}", Some(client_text(&long)));
        assert_eq!(shown, format!("Some(\"{}\")", client_text(&long)));
        assert!(
            shown.contains("…(200 bytes)") && !shown.contains('\n'),
            "{shown}"
        );
    }

    #[test]
    fn a_message_is_escaped_alike_and_cut_later() {
        let sentence = "the league is over: every tournament is finished, there is nothing more";
        assert!(sentence.chars().count() > MAX_LOGGED_CHARS);
        assert_eq!(peer_message(sentence).to_string(), sentence);
        assert_eq!(peer_message("a\nb\u{1b}").to_string(), "a\\nb\\u{1b}");
        let long = "x".repeat(1000);
        assert!(peer_message(&long).to_string().ends_with("…(1000 bytes)"));
        assert_eq!(
            peer_message(&long).to_string().chars().count(),
            MAX_LOGGED_MESSAGE_CHARS + "…(1000 bytes)".chars().count()
        );
    }
}

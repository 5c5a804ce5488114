//! The status lines a command keeps at the bottom of a terminal (one per running tournament of
//! `arena serve`, the progress line of `arena match`), redrawn in place under the lines that
//! stay (progress, tables, notices); on anything else (a pipe, a file) each status is written
//! as a plain line instead. It writes to the writer it is given; the binary decides which.

use std::io::{self, Write};

/// Status lines under the permanent output.
pub struct StatusBoard<W: Write> {
    out: W,
    /// Redraw in place (a terminal) or write plain lines.
    terminal: bool,
    /// Columns a status line may use (longer ones are cut, so that each takes one row).
    width: usize,
    /// (key, line) in the order the keys first came.
    lines: Vec<(String, String)>,
    /// Status rows on the screen now, under the cursor's row.
    shown: usize,
}

impl<W: Write> StatusBoard<W> {
    pub fn new(out: W, terminal: bool, width: usize) -> StatusBoard<W> {
        StatusBoard {
            out,
            terminal,
            width: width.max(10),
            lines: Vec::new(),
            shown: 0,
        }
    }

    /// Writes `text` (one or more lines) where it stays: above the status lines.
    pub fn print(&mut self, text: &str) -> io::Result<()> {
        self.clear()?;
        writeln!(self.out, "{text}")?;
        self.draw()
    }

    /// Sets the status line of `key` (a new key goes last). Not on a terminal, the line is
    /// written as a plain line at once.
    pub fn set(&mut self, key: &str, line: &str) -> io::Result<()> {
        if !self.terminal {
            writeln!(self.out, "{line}")?;
            return self.out.flush();
        }
        match self.lines.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => *old = line.to_string(),
            None => self.lines.push((key.to_string(), line.to_string())),
        }
        self.clear()?;
        self.draw()
    }

    /// Takes the status line of `key` away (its tournament is over).
    pub fn remove(&mut self, key: &str) -> io::Result<()> {
        if !self.lines.iter().any(|(k, _)| k == key) {
            return Ok(());
        }
        self.clear()?;
        self.lines.retain(|(k, _)| k != key);
        self.draw()
    }

    /// Moves up over the status rows and clears them and everything below.
    fn clear(&mut self) -> io::Result<()> {
        if self.shown > 0 {
            write!(self.out, "\x1b[{}A\r\x1b[J", self.shown)?;
            self.shown = 0;
        }
        Ok(())
    }

    fn draw(&mut self) -> io::Result<()> {
        if self.terminal {
            for (_, line) in &self.lines {
                let cut: String = line.chars().take(self.width - 1).collect();
                writeln!(self.out, "{cut}")?;
            }
            self.shown = self.lines.len();
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_a_terminal_status_lines_are_redrawn_under_the_lines_that_stay() {
        let mut board = StatusBoard::new(Vec::new(), true, 20);
        board.set("hex", "hex 1/4").unwrap();
        board
            .set("c6", "c6 1/2 and a line longer than the screen")
            .unwrap();
        board.set("hex", "hex 2/4").unwrap();
        board.print("a table").unwrap();
        board.remove("hex").unwrap();
        let text = String::from_utf8(board.out).unwrap();
        assert_eq!(
            text,
            "hex 1/4\n\
             \x1b[1A\r\x1b[Jhex 1/4\nc6 1/2 and a line l\n\
             \x1b[2A\r\x1b[Jhex 2/4\nc6 1/2 and a line l\n\
             \x1b[2A\r\x1b[Ja table\nhex 2/4\nc6 1/2 and a line l\n\
             \x1b[2A\r\x1b[Jc6 1/2 and a line l\n"
        );
    }

    #[test]
    fn elsewhere_each_status_is_a_plain_line() {
        let mut board = StatusBoard::new(Vec::new(), false, 20);
        board
            .set("hex", "hex 1/4 with more words than the width")
            .unwrap();
        board.print("a table").unwrap();
        board.set("hex", "hex 2/4").unwrap();
        board.remove("hex").unwrap();
        let text = String::from_utf8(board.out).unwrap();
        assert_eq!(
            text,
            "hex 1/4 with more words than the width\na table\nhex 2/4\n"
        );
    }
}

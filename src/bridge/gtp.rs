//! GTP engines for Hex (the MoHex/Benzene family): the coordinate and colour mapping between the
//! contest's Hex and GTP, and the adapter that turns `start`/`turn` into `boardsize`,
//! `clear_board`, `play` and `genmove` commands and reads the `=`/`?` answers. An answer starts
//! with `=` or `?` and ends at a blank line; lines before an answer starts (banners, debug output
//! some engines print on stdout) are chatter for the log. `= resign` resigns the game. Before
//! the first match the engine is checked with `name`, `protocol_version` and `boardsize 11`; at
//! the end it gets `quit`.
//!
//! Mapping (docs/rules.md, Hex): contest cell (c, r), rows numbered from the bottom, is GTP cell
//! (c, 12 − r), GTP rows numbered from the top (a1 is the top-left corner); column letters are
//! the same (a–k, `i` included, as Benzene names cells). Red, who moves first and joins the
//! bottom and top edges, is GTP `black` (Benzene's first player, who joins north and south);
//! Blue is `white` (east–west). The swap move is `swap-pieces` in GTP (also accepted: `swap`).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::{move_budget, single_game_start, Action, Adapter, Fault, Heard};
use crate::game::coord::parse_point;
use crate::game::{Point, Side};
use crate::protocol::{BotMessage, ClockSpec, RefereeMessage};

/// Hex board size.
const SIZE: u8 = 11;

/// The GTP name of a contest cell, e.g. contest `A1` (bottom-left) is GTP `a11`.
pub fn cell_to_gtp(p: Point) -> String {
    let gtp_row = u32::from(SIZE) - u32::from(p.row);
    format!("{}{}", (b'a' + p.col) as char, gtp_row)
}

/// The contest cell of a GTP cell name (case-insensitive), e.g. GTP `a1` (top-left) is contest
/// `A11`. `None` unless it names a cell of the 11×11 board.
pub fn cell_from_gtp(text: &str) -> Option<Point> {
    let mut chars = text.chars();
    let letter = chars.next()?.to_ascii_lowercase();
    if !letter.is_ascii_lowercase() {
        return None;
    }
    let col = letter as u32 - 'a' as u32;
    let digits = chars.as_str();
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let gtp_row: u32 = digits.parse().ok()?;
    let size = u32::from(SIZE);
    if col >= size || gtp_row == 0 || gtp_row > size {
        return None;
    }
    // contest row number = 12 − GTP row, 0-based row = 11 − GTP row.
    Some(Point::new(col as u8, (size - gtp_row) as u8))
}

/// A contest Hex move text (`F6`, `swap`) as a GTP move (`f6`… mapped, `swap-pieces`).
pub fn move_to_gtp(text: &str) -> Result<String, Fault> {
    if text.trim().eq_ignore_ascii_case("swap") {
        return Ok("swap-pieces".to_string());
    }
    let p = parse_point(text.trim(), SIZE).map_err(|e| {
        Fault(format!(
            "the referee sent a move the bridge cannot map: {e}"
        ))
    })?;
    Ok(cell_to_gtp(p))
}

/// What a GTP engine's `genmove` answer means for the referee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GtpMove {
    Move(String),
    Resign,
}

/// Reads a `genmove` answer: a cell, `swap-pieces`/`swap`, or `resign`.
pub fn move_from_gtp(answer: &str) -> Option<GtpMove> {
    let word = answer.split_whitespace().next()?;
    if word.eq_ignore_ascii_case("resign") {
        return Some(GtpMove::Resign);
    }
    if word.eq_ignore_ascii_case("swap-pieces") || word.eq_ignore_ascii_case("swap") {
        return Some(GtpMove::Move("swap".to_string()));
    }
    cell_from_gtp(word).map(|p| GtpMove::Move(p.to_string()))
}

/// The GTP colour of the side that plays ply `ply` (0-based): Hex sides alternate strictly.
fn colour_of_ply(ply: usize) -> &'static str {
    if ply.is_multiple_of(2) {
        "b"
    } else {
        "w"
    }
}

fn colour_of_side(side: Side) -> &'static str {
    match side {
        Side::First => "b",
        Side::Second => "w",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An `--init` line: the answer is read and dropped, even an error.
    Init,
    /// Setup (`boardsize`, `clear_board`, `play`): an error answer is a failure.
    Setup,
    /// `genmove`: the answer is our move.
    Genmove,
    /// The check before connecting: an error answer is a failure; `name`'s answer is kept.
    Check,
}

struct Sent {
    expect: Expect,
    command: String,
}

/// Drives one GTP engine through one Hex match.
pub struct GtpAdapter {
    setup_timeout: Duration,
    sent: VecDeque<Sent>,
    /// Lines of the answer being read (until its blank line).
    answer: Vec<String>,
    /// Refreshed whenever a setup command is sent or an answer arrives.
    setup_deadline: Option<Instant>,
    /// Set when `genmove` is sent, from the clock in `turn`.
    move_deadline: Option<Instant>,
    match_id: Option<String>,
    side: Side,
    clock: Option<ClockSpec>,
    /// The answer to `name` during the check.
    name: Option<String>,
    /// Check commands still unanswered.
    checks_pending: usize,
}

impl GtpAdapter {
    pub fn new(setup_timeout: Duration) -> GtpAdapter {
        GtpAdapter {
            setup_timeout,
            sent: VecDeque::new(),
            answer: Vec::new(),
            setup_deadline: None,
            move_deadline: None,
            match_id: None,
            side: Side::First,
            clock: None,
            name: None,
            checks_pending: 0,
        }
    }

    fn command(&mut self, command: String, expect: Expect, now: Instant, out: &mut Vec<Action>) {
        if expect != Expect::Genmove {
            self.setup_deadline = Some(now + self.setup_timeout);
        }
        out.push(Action::Engine(command.clone()));
        self.sent.push_back(Sent { expect, command });
    }

    fn play_moves(
        &mut self,
        moves: &[String],
        first_ply: usize,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault> {
        for (i, text) in moves.iter().enumerate() {
            let gtp = move_to_gtp(text)?;
            let colour = colour_of_ply(first_ply + i);
            self.command(format!("play {colour} {gtp}"), Expect::Setup, now, out);
        }
        Ok(())
    }

    fn finish_answer(&mut self, now: Instant, out: &mut Vec<Action>) -> Result<(), Fault> {
        let lines = std::mem::take(&mut self.answer);
        let first = lines.first().map(String::as_str).unwrap_or("");
        let Some(sent) = self.sent.pop_front() else {
            return Err(Fault(format!(
                "the engine answered {first:?} to no command"
            )));
        };
        self.setup_deadline = Some(now + self.setup_timeout);
        // "=text", "= text", "=12 text": status, optional id, text.
        let status = first.chars().next().unwrap_or(' ');
        let rest = first
            .get(status.len_utf8()..)
            .unwrap_or("")
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim();
        match (status, sent.expect) {
            ('?', Expect::Init) => {
                tracing::warn!("engine refused init line {:?}: {rest}", sent.command);
            }
            ('?', _) => {
                return Err(Fault(format!(
                    "the engine refused {:?}: {rest}",
                    sent.command
                )))
            }
            (_, Expect::Init) | (_, Expect::Setup) => {}
            (_, Expect::Check) => {
                self.checks_pending = self.checks_pending.saturating_sub(1);
                if sent.command == "name" {
                    self.name = Some(rest.to_string());
                }
            }
            (_, Expect::Genmove) => {
                self.move_deadline = None;
                let match_id = self.match_id.clone().unwrap_or_default();
                match move_from_gtp(rest) {
                    Some(GtpMove::Move(mv)) => out.push(Action::Server(BotMessage::Move {
                        match_id,
                        mv,
                        ply: None,
                    })),
                    Some(GtpMove::Resign) => {
                        tracing::info!("the engine resigns");
                        out.push(Action::Server(BotMessage::Resign { match_id }))
                    }
                    None => {
                        return Err(Fault(format!(
                            "the engine answered genmove with {rest:?}, which is not a Hex move"
                        )))
                    }
                }
            }
        }
        if self.sent.is_empty() {
            self.setup_deadline = None;
        }
        Ok(())
    }
}

impl Adapter for GtpAdapter {
    fn on_spawn(&mut self, init: &[String], now: Instant, out: &mut Vec<Action>) {
        for line in init {
            self.command(line.clone(), Expect::Init, now, out);
        }
    }

    fn on_referee(
        &mut self,
        msg: &RefereeMessage,
        _raw: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault> {
        if let Some(start) = single_game_start(msg, "hex", "a GTP engine")? {
            self.match_id = Some(start.match_id.to_string());
            self.side = start.side;
            self.clock = Some(start.clock);
            self.command(format!("boardsize {SIZE}"), Expect::Setup, now, out);
            self.command("clear_board".to_string(), Expect::Setup, now, out);
            return self.play_moves(start.moves, 0, now, out);
        }
        // `end` needs nothing here: the bridge sends `quit` when it stops the engine.
        if let RefereeMessage::Turn {
            moves, ply, clock, ..
        } = msg
        {
            let first_ply = (*ply as usize).checked_sub(moves.len()).ok_or_else(|| {
                Fault(format!(
                    "turn says ply {ply} but lists {} moves",
                    moves.len()
                ))
            })?;
            self.play_moves(moves, first_ply, now, out)?;
            let colour = colour_of_side(self.side);
            self.move_deadline = Some(now + move_budget(clock, self.clock.as_ref()));
            self.command(format!("genmove {colour}"), Expect::Genmove, now, out);
        }
        Ok(())
    }

    fn on_engine_line(
        &mut self,
        line: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<Heard, Fault> {
        let trimmed = line.trim();
        if self.answer.is_empty() {
            if trimmed.is_empty() {
                return Ok(Heard::Protocol);
            }
            if !(trimmed.starts_with('=') || trimmed.starts_with('?')) {
                return Ok(Heard::Chatter);
            }
            self.answer.push(trimmed.to_string());
            return Ok(Heard::Protocol);
        }
        if trimmed.is_empty() {
            self.finish_answer(now, out)?;
            return Ok(Heard::Protocol);
        }
        self.answer.push(trimmed.to_string());
        if self.answer.len() > 10_000 {
            return Err(Fault("the engine's answer never ends".to_string()));
        }
        Ok(Heard::Protocol)
    }

    fn deadline(&self) -> Option<Instant> {
        if self.sent.iter().any(|s| s.expect == Expect::Genmove) {
            self.move_deadline
        } else if self.sent.is_empty() {
            None
        } else {
            self.setup_deadline
        }
    }

    fn quit_command(&self) -> Option<&'static str> {
        Some("quit")
    }

    fn on_check(&mut self, now: Instant, out: &mut Vec<Action>) {
        for command in ["name", "protocol_version", "boardsize 11"] {
            self.checks_pending += 1;
            self.command(command.to_string(), Expect::Check, now, out);
        }
    }

    fn check_answered(&self) -> bool {
        self.checks_pending == 0
    }

    fn engine_name(&self) -> Option<String> {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TurnClock;

    #[test]
    fn corners_map_as_the_rules_say() {
        // Contest A1 is the bottom-left corner: GTP a11. Contest A11 is the top-left: GTP a1.
        assert_eq!(cell_to_gtp(Point::new(0, 0)), "a11");
        assert_eq!(cell_to_gtp(Point::new(0, 10)), "a1");
        assert_eq!(cell_to_gtp(Point::new(10, 10)), "k1");
        assert_eq!(cell_to_gtp(Point::new(5, 5)), "f6");
        assert_eq!(move_to_gtp("F6").unwrap(), "f6");
        assert_eq!(move_to_gtp("c2").unwrap(), "c10");
        assert_eq!(move_to_gtp("swap").unwrap(), "swap-pieces");
        assert_eq!(cell_from_gtp("K11"), Some(Point::new(10, 0)));
        assert_eq!(move_from_gtp("e4"), Some(GtpMove::Move("E8".to_string())));
        assert_eq!(move_from_gtp("RESIGN"), Some(GtpMove::Resign));
        assert_eq!(
            move_from_gtp("swap-pieces"),
            Some(GtpMove::Move("swap".into()))
        );
    }

    #[test]
    fn every_cell_round_trips() {
        let mut seen = std::collections::HashSet::new();
        for col in 0..SIZE {
            for row in 0..SIZE {
                let p = Point::new(col, row);
                let gtp = cell_to_gtp(p);
                assert!(seen.insert(gtp.clone()), "{gtp} twice");
                assert_eq!(cell_from_gtp(&gtp), Some(p), "{p} -> {gtp}");
                assert_eq!(move_to_gtp(&p.to_string()).unwrap(), gtp);
            }
        }
        assert_eq!(seen.len(), 121);
    }

    #[test]
    fn neighbours_and_swap_keep_their_meaning() {
        // The rules: (c, r) touches (c+1, r+1); in GTP that is (x+1, y−1), Benzene's neighbour.
        let p = Point::new(3, 4);
        let q = Point::new(4, 5);
        let (gp, gq) = (cell_to_gtp(p), cell_to_gtp(q));
        assert_eq!((gp.as_str(), gq.as_str()), ("d7", "e6"));
        // Swap: contest (c, r) -> (12 − r, 12 − c) is GTP (x, y) -> (y, x).
        let swapped = crate::game::hex::swapped_point(Point::new(2, 1)); // C2 -> J9
        assert_eq!(swapped.to_string(), "J9");
        assert_eq!(cell_to_gtp(Point::new(2, 1)), "c10");
        assert_eq!(cell_to_gtp(swapped), "j3");
    }

    #[test]
    fn bad_gtp_cells_are_refused() {
        for bad in ["", "a", "a0", "a12", "l1", "1a", "a1x", "aa1", "a001", "é1"] {
            assert_eq!(cell_from_gtp(bad), None, "{bad:?}");
        }
        assert_eq!(move_from_gtp("pass"), None);
    }

    fn lines(out: &[Action]) -> Vec<String> {
        out.iter()
            .filter_map(|a| match a {
                Action::Engine(l) => Some(l.clone()),
                Action::Server(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_match_becomes_gtp_commands_and_answers() {
        let now = Instant::now();
        let mut gtp = GtpAdapter::new(Duration::from_secs(5));
        let mut out = Vec::new();
        gtp.on_spawn(&["param x 1".to_string()], now, &mut out);
        let start = RefereeMessage::Start {
            match_id: "m1".into(),
            game: "hex".into(),
            side: "first".into(),
            colour: "R".into(),
            opponent: "o".into(),
            rules: serde_json::json!({"swap": true}),
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: vec!["A1".into(), "swap".into()],
        };
        gtp.on_referee(&start, "", now, &mut out).unwrap();
        assert_eq!(
            lines(&out),
            [
                "param x 1",
                "boardsize 11",
                "clear_board",
                "play b a11",
                "play w swap-pieces"
            ]
        );
        assert_eq!(gtp.deadline(), Some(now + Duration::from_secs(5)));
        // The init line's refusal is dropped; the others succeed.
        for answer in ["? unknown command", "=", "= ", "=3", "="] {
            gtp.on_engine_line(answer, now, &mut out).unwrap();
            gtp.on_engine_line("", now, &mut out).unwrap();
        }
        assert_eq!(gtp.deadline(), None);
        out.clear();
        let turn = RefereeMessage::Turn {
            match_id: "m1".into(),
            moves: vec![],
            ply: 2,
            clock: TurnClock {
                you_ms: 700,
                opponent_ms: 1000,
            },
        };
        gtp.on_referee(&turn, "", now, &mut out).unwrap();
        assert_eq!(lines(&out), ["genmove b"]);
        assert!(gtp.deadline().unwrap() >= now + Duration::from_millis(700));
        out.clear();
        gtp.on_engine_line("= K1", now, &mut out).unwrap();
        gtp.on_engine_line("", now, &mut out).unwrap();
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m1".into(),
                mv: "K11".into(),
                ply: None
            })]
        );
        // Stray lines outside an answer are chatter; refusals are faults.
        assert_eq!(
            gtp.on_engine_line("hello there", now, &mut out),
            Ok(Heard::Chatter)
        );
        let turn = RefereeMessage::Turn {
            match_id: "m1".into(),
            moves: vec!["B2".into()],
            ply: 4,
            clock: TurnClock {
                you_ms: 700,
                opponent_ms: 1000,
            },
        };
        out.clear();
        gtp.on_referee(&turn, "", now, &mut out).unwrap();
        assert_eq!(lines(&out), ["play w b10", "genmove b"]);
        gtp.on_engine_line("? illegal move", now, &mut out).unwrap();
        assert!(gtp.on_engine_line("", now, &mut out).is_err());
    }

    #[test]
    fn the_check_asks_name_version_and_size_and_a_refusal_fails_it() {
        let now = Instant::now();
        let mut gtp = GtpAdapter::new(Duration::from_secs(5));
        let mut out = Vec::new();
        gtp.on_check(now, &mut out);
        assert_eq!(lines(&out), ["name", "protocol_version", "boardsize 11"]);
        assert!(!gtp.check_answered());
        for line in ["MoHex 2.0 starting", "= MoHex", "", "= 2", ""] {
            gtp.on_engine_line(line, now, &mut out).unwrap();
        }
        assert!(!gtp.check_answered());
        assert_eq!(gtp.engine_name().as_deref(), Some("MoHex"));
        gtp.on_engine_line("? unacceptable size", now, &mut out)
            .unwrap();
        let fault = gtp.on_engine_line("", now, &mut out).unwrap_err();
        assert!(fault.0.contains("boardsize 11"), "{fault}");
    }

    #[test]
    fn resign_answers_resign_the_game() {
        let now = Instant::now();
        let mut gtp = GtpAdapter::new(Duration::from_secs(5));
        let mut out = Vec::new();
        let start = RefereeMessage::Start {
            match_id: "m2".into(),
            game: "hex".into(),
            side: "second".into(),
            colour: "B".into(),
            opponent: "o".into(),
            rules: serde_json::json!({}),
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: vec![],
        };
        gtp.on_referee(&start, "", now, &mut out).unwrap();
        for line in ["=", "", "=", ""] {
            gtp.on_engine_line(line, now, &mut out).unwrap();
        }
        let turn = RefereeMessage::Turn {
            match_id: "m2".into(),
            moves: vec!["F6".into()],
            ply: 1,
            clock: TurnClock {
                you_ms: 700,
                opponent_ms: 1000,
            },
        };
        gtp.on_referee(&turn, "", now, &mut out).unwrap();
        out.clear();
        for line in ["=", "", "= resign", ""] {
            gtp.on_engine_line(line, now, &mut out).unwrap();
        }
        assert_eq!(
            out,
            [Action::Server(BotMessage::Resign {
                match_id: "m2".into()
            })]
        );
    }
}

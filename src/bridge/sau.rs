//! Connect6 engines speaking the contest's common text protocol ("sau"): the point mapping and
//! the adapter. The engine gets `new black` or `new white`, then `move XY` (one stone) or
//! `move XYXY` (two stones) for each opponent turn, and answers with its own `move ...` line
//! whenever it is its turn (Black answers `new black` with its opening stone). Only a line that
//! is exactly `move XY`/`move XYXY` (or `name NAME`, the answer to `name`) counts: engines print
//! banners, help texts and search statistics between their moves, and all of that is chatter for
//! the log. A `move` line whose letters are not points A–S is a fault. At the end the engine
//! gets `quit`. A game that starts with moves (an opening, or a resumed game) is set up with
//! `new white`, then `black XXXX`/`white XXXX` for each turn so far (stones placed without a
//! search, as Cloudict and the engines built on its command set do), and `next` when it is the
//! engine's move.
//!
//! A point is two letters A–S, column then row, row A at the bottom: contest `J10` is `JJ`
//! (column letters are the contest's, row number r is letter 'A' + r − 1).

use std::collections::VecDeque;

use tokio::time::Instant;

use super::{move_budget, single_game_start, Action, Adapter, Fault, Heard};
use crate::game::coord::parse_point;
use crate::game::{GameId, Point, Side};
use crate::log_text::peer_message;
use crate::protocol::{BotMessage, ClockSpec, RefereeMessage};

/// Connect6 board size.
const SIZE: u8 = 19;

/// The sau name of a point: contest `J10` is `JJ`, `A1` is `AA`, `S19` is `SS`.
pub fn point_to_sau(p: Point) -> String {
    format!("{}{}", (b'A' + p.col) as char, (b'A' + p.row) as char)
}

/// The point named by two sau letters (case-insensitive), if on the board.
pub fn point_from_sau(letters: &[u8]) -> Option<Point> {
    let [col, row] = letters else {
        return None;
    };
    let index = |b: u8| {
        let b = b.to_ascii_uppercase();
        (b.is_ascii_uppercase() && b - b'A' < SIZE).then(|| b - b'A')
    };
    Some(Point::new(index(*col)?, index(*row)?))
}

/// A contest Connect6 move (`J10` or `J10,K11`) as sau letters (`JJ`, `JJKK`).
pub fn move_to_sau(text: &str) -> Result<String, Fault> {
    let mut letters = String::new();
    let stones: Vec<&str> = text.split(',').collect();
    if stones.is_empty() || stones.len() > 2 {
        return Err(Fault(format!(
            "the referee sent {text:?}, not a Connect6 move of one or two stones"
        )));
    }
    for stone in stones {
        let p = parse_point(stone.trim(), SIZE).map_err(|e| {
            Fault(format!(
                "the referee sent a move the bridge cannot map: {e}"
            ))
        })?;
        letters.push_str(&point_to_sau(p));
    }
    Ok(letters)
}

/// Sau letters (`JJ`, `JJKK`) as a contest move (`J10`, `J10,K11`).
pub fn move_from_sau(letters: &str) -> Option<String> {
    let bytes = letters.trim().as_bytes();
    match bytes.len() {
        2 => point_from_sau(bytes).map(|p| p.to_string()),
        4 => {
            let a = point_from_sau(bytes.get(..2)?)?;
            let b = point_from_sau(bytes.get(2..)?)?;
            Some(format!("{a},{b}"))
        }
        _ => None,
    }
}

/// Drives one sau engine through one Connect6 match.
pub struct SauAdapter {
    match_id: Option<String>,
    clock: Option<ClockSpec>,
    /// Engine moves owed: one after `new black`, one after each opponent move sent.
    owed: u32,
    /// Engine moves that arrived before the referee's `turn` asked for them.
    early: VecDeque<String>,
    /// A `turn` is waiting for the engine's move.
    awaiting: bool,
    move_deadline: Option<Instant>,
    /// What the engine answered to `name`.
    name: Option<String>,
    /// A game set up mid-way with the engine to move: its first `turn` is answered by `next`.
    owes_next: bool,
}

impl SauAdapter {
    pub fn new() -> SauAdapter {
        SauAdapter {
            match_id: None,
            clock: None,
            owed: 0,
            early: VecDeque::new(),
            awaiting: false,
            move_deadline: None,
            name: None,
            owes_next: false,
        }
    }

    fn send_move(&mut self, mv: String, out: &mut Vec<Action>) {
        self.awaiting = false;
        self.move_deadline = None;
        out.push(Action::Server(BotMessage::Move {
            match_id: self.match_id.clone().unwrap_or_default(),
            mv,
            ply: None,
        }));
    }
}

impl Default for SauAdapter {
    fn default() -> Self {
        SauAdapter::new()
    }
}

impl Adapter for SauAdapter {
    fn on_spawn(&mut self, init: &[String], _now: Instant, out: &mut Vec<Action>) {
        out.extend(init.iter().cloned().map(Action::Engine));
    }

    fn on_referee(
        &mut self,
        msg: &RefereeMessage,
        _raw: &str,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<(), Fault> {
        if let Some(start) = single_game_start(msg, "connect6", "a sau engine")? {
            self.match_id = Some(start.match_id.to_string());
            self.clock = Some(start.clock);
            if !start.moves.is_empty() {
                // An opening or a resumed game: set the stones up with `black`/`white`
                // (which place stones without searching), and if it is the engine's move,
                // `next` makes it search for the side that did not place the last stones.
                out.push(Action::Engine("new white".to_string()));
                // `mover_of_ply` counts moves from 1.
                let mover = |index: usize| GameId::Connect6.mover_of_ply(index + 1);
                for (index, mv) in start.moves.iter().enumerate() {
                    let colour = match mover(index) {
                        Side::First => "black",
                        Side::Second => "white",
                    };
                    out.push(Action::Engine(format!("{colour} {}", move_to_sau(mv)?)));
                }
                self.owes_next = mover(start.moves.len()) == start.side;
                return Ok(());
            }
            if start.side == Side::Second {
                out.push(Action::Engine("new white".to_string()));
            } else {
                out.push(Action::Engine("new black".to_string()));
                self.owed += 1;
            }
            return Ok(());
        }
        // `end` needs nothing here: the bridge sends `quit` when it stops the engine.
        if let RefereeMessage::Turn { moves, clock, .. } = msg {
            if std::mem::take(&mut self.owes_next) && moves.is_empty() {
                out.push(Action::Engine("next".to_string()));
                self.owed += 1;
            }
            for mv in moves {
                out.push(Action::Engine(format!("move {}", move_to_sau(mv)?)));
                self.owed += 1;
            }
            if let Some(mv) = self.early.pop_front() {
                self.send_move(mv, out);
            } else {
                self.awaiting = true;
                self.move_deadline = Some(now + move_budget(clock, self.clock.as_ref()));
            }
        }
        Ok(())
    }

    fn on_engine_line(
        &mut self,
        line: &str,
        _now: Instant,
        out: &mut Vec<Action>,
    ) -> Result<Heard, Fault> {
        let line = line.trim();
        let mut words = line.split_whitespace();
        // Two words exactly: Cloudict's help text has a line starting `name        - print`.
        let (Some(word), Some(letters), None) = (words.next(), words.next(), words.next()) else {
            return Ok(Heard::Chatter);
        };
        if word == "name" {
            self.name = Some(letters.to_string());
            return Ok(Heard::Protocol);
        }
        let looks_like_points =
            matches!(letters.len(), 2 | 4) && letters.bytes().all(|b| b.is_ascii_alphabetic());
        if word != "move" || !looks_like_points {
            return Ok(Heard::Chatter);
        }
        let Some(mv) = move_from_sau(letters) else {
            return Err(Fault(format!(
                "the engine printed {:?}: {letters:?} is not one or two points A-S",
                peer_message(line)
            )));
        };
        if self.owed == 0 {
            return Err(Fault(format!(
                "the engine printed {:?} when it was not its turn",
                peer_message(line)
            )));
        }
        self.owed -= 1;
        if self.awaiting {
            self.send_move(mv, out);
        } else {
            self.early.push_back(mv);
        }
        Ok(Heard::Protocol)
    }

    fn deadline(&self) -> Option<Instant> {
        if self.awaiting {
            self.move_deadline
        } else {
            None
        }
    }

    fn quit_command(&self) -> Option<&'static str> {
        Some("quit")
    }

    fn on_check(&mut self, _now: Instant, out: &mut Vec<Action>) {
        out.push(Action::Engine("name".to_string()));
    }

    fn check_answered(&self) -> bool {
        self.name.is_some()
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
    fn points_map_as_the_protocol_says() {
        assert_eq!(point_to_sau(Point::new(9, 9)), "JJ");
        assert_eq!(move_to_sau("J10").unwrap(), "JJ");
        assert_eq!(move_to_sau("a1,s19").unwrap(), "AASS");
        assert_eq!(move_to_sau("K3").unwrap(), "KC");
        assert_eq!(move_from_sau("kc"), Some("K3".to_string()));
        assert_eq!(move_from_sau("JJKK"), Some("J10,K11".to_string()));
        for bad in ["", "J", "JT", "TJ", "JJK", "JJKKL", "J1", "é"] {
            assert_eq!(move_from_sau(bad), None, "{bad:?}");
        }
        assert!(move_to_sau("T1").is_err());
        assert!(move_to_sau("A1,B2,C3").is_err());
    }

    #[test]
    fn every_point_round_trips() {
        let mut seen = std::collections::HashSet::new();
        for col in 0..SIZE {
            for row in 0..SIZE {
                let p = Point::new(col, row);
                let sau = point_to_sau(p);
                assert!(seen.insert(sau.clone()));
                assert_eq!(point_from_sau(sau.as_bytes()), Some(p));
                assert_eq!(move_from_sau(&sau), Some(p.to_string()));
                assert_eq!(move_to_sau(&p.to_string()).unwrap(), sau);
            }
        }
        assert_eq!(seen.len(), 361);
    }

    fn turn(moves: &[&str]) -> RefereeMessage {
        RefereeMessage::Turn {
            match_id: "m".into(),
            moves: moves.iter().map(|m| m.to_string()).collect(),
            ply: 0,
            clock: TurnClock {
                you_ms: 1000,
                opponent_ms: 1000,
            },
        }
    }

    /// A `start` of match `m`, a fresh Connect6 game unless `moves` are given.
    fn start(side: &str, colour: &str, moves: &[&str]) -> RefereeMessage {
        RefereeMessage::Start {
            match_id: "m".into(),
            game: "connect6".into(),
            side: side.into(),
            colour: colour.into(),
            opponent: "o".into(),
            rules: serde_json::json!({}),
            clock: ClockSpec {
                initial_ms: 1000,
                increment_ms: 0,
                move_limit_ms: None,
            },
            moves: moves.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn black_answers_new_black_and_early_moves_wait_for_the_turn() {
        let now = Instant::now();
        let mut sau = SauAdapter::new();
        let mut out = Vec::new();
        let start = start("first", "B", &[]);
        sau.on_referee(&start, "", now, &mut out).unwrap();
        assert_eq!(out, [Action::Engine("new black".into())]);
        out.clear();
        sau.on_engine_line("move JJ", now, &mut out).unwrap();
        assert!(out.is_empty());
        sau.on_referee(&turn(&[]), "", now, &mut out).unwrap();
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m".into(),
                mv: "J10".into(),
                ply: None
            })]
        );
        out.clear();
        sau.on_referee(&turn(&["K10,K11"]), "", now, &mut out)
            .unwrap();
        assert_eq!(out, [Action::Engine("move KJKK".into())]);
        assert!(sau.deadline().is_some());
        out.clear();
        sau.on_engine_line("move LLMM", now, &mut out).unwrap();
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m".into(),
                mv: "L12,M13".into(),
                ply: None
            })]
        );
        assert_eq!(sau.deadline(), None);
        // A move nobody asked for, or a move off the board, is a fault.
        assert!(sau.on_engine_line("move AA", now, &mut out).is_err());
        assert!(sau.on_engine_line("move ZZ", now, &mut out).is_err());
    }

    #[test]
    fn only_exact_move_and_name_lines_count_the_rest_is_chatter() {
        let now = Instant::now();
        let mut sau = SauAdapter::new();
        let mut out = Vec::new();
        sau.on_referee(&start("second", "W", &[]), "", now, &mut out)
            .unwrap();
        assert_eq!(out, [Action::Engine("new white".into())]);
        out.clear();
        for chatter in [
            "On help for GameEngine Cloudict.Connect6",
            "            move XXXX   - tell the engine that the opponent take the move XXXX,",
            "VCF time : 0.001",
            "AB Time :\t0.152",
            "Node :\t1234",
            "",
            "We loss!",
            "move",
            "moves JJ",
            "move J10",
            "move JJ KK",
            "Move JJ",
            "            name        - print the name of the Game Engine.",
        ] {
            assert_eq!(
                sau.on_engine_line(chatter, now, &mut out),
                Ok(Heard::Chatter),
                "{chatter:?}"
            );
        }
        assert!(out.is_empty());
        assert_eq!(
            sau.on_engine_line("name Cloudict.Connect6", now, &mut out),
            Ok(Heard::Protocol)
        );
        assert_eq!(sau.engine_name().as_deref(), Some("Cloudict.Connect6"));
        sau.on_referee(&turn(&["J10"]), "", now, &mut out).unwrap();
        out.clear();
        assert_eq!(
            sau.on_engine_line("  move KKLL  ", now, &mut out),
            Ok(Heard::Protocol)
        );
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m".into(),
                mv: "K11,L12".into(),
                ply: None
            })]
        );
    }

    #[test]
    fn a_game_started_mid_way_is_set_up_stone_by_stone_then_next() {
        let now = Instant::now();
        let engine = |s: &str| Action::Engine(s.to_string());
        // White to move after an opening of two turns: set up, then `next` at the turn.
        let mut sau = SauAdapter::new();
        let mut out = Vec::new();
        sau.on_referee(
            &start("second", "W", &["J10", "K10,K11", "L12,M13"]),
            "",
            now,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            [
                engine("new white"),
                engine("black JJ"),
                engine("white KJKK"),
                engine("black LLMM")
            ]
        );
        out.clear();
        sau.on_referee(&turn(&[]), "", now, &mut out).unwrap();
        assert_eq!(out, [engine("next")]);
        out.clear();
        sau.on_engine_line("move NNOO", now, &mut out).unwrap();
        assert_eq!(
            out,
            [Action::Server(BotMessage::Move {
                match_id: "m".into(),
                mv: "N14,O15".into(),
                ply: None
            })]
        );
        // The opponent to move: the engine waits for its move as usual.
        let mut sau = SauAdapter::new();
        out.clear();
        sau.on_referee(&start("first", "B", &["J10", "K10,K11"]), "", now, &mut out)
            .unwrap();
        assert_eq!(out.len(), 3);
        out.clear();
        sau.on_referee(&turn(&["L12,M13"]), "", now, &mut out)
            .unwrap();
        assert_eq!(out, [engine("move LLMM")]);
        assert!(sau.deadline().is_some());
    }
}

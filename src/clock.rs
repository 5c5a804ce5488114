//! Both sides' clocks of a match as plain numbers (`Clocks`): the clock settings and each
//! side's time left, with what the referee, the engines and the web view do with them —
//! charge a move (lag credit off, increment on), the time a move may take, the time left a
//! given while after a turn began, and the views a side is given (`TurnClock` on the wire,
//! `ClockView` for an engine). Pure: when a turn began is the caller's to know (no `Instant`
//! here); every duration is passed in.

use std::time::Duration;

use serde::Serialize;

use crate::clock_settings::{whole_ms, ClockSpec};
use crate::engine::ClockView;
use crate::game::Side;
use crate::protocol::TurnClock;

/// A match's clocks: its settings and both sides' time left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    spec: ClockSpec,
    /// Indexed by `Side::index`.
    remaining: [Duration; 2],
}

/// What a move is charged: the time since its turn began less the lag credit (which is at most
/// that time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveCharge {
    pub think: Duration,
    pub credit: Duration,
}

/// A move that took longer than its side was allowed: the side has lost on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("out of time: thought {think:?}, allowed {allowed:?}")]
pub struct OutOfTime {
    pub think: Duration,
    pub allowed: Duration,
}

/// Both clocks in whole milliseconds as the web view's JSON writes them
/// (`{"first_ms": …, "second_ms": …}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClocksMs {
    pub first_ms: u64,
    pub second_ms: u64,
}

impl From<[u64; 2]> for ClocksMs {
    fn from([first_ms, second_ms]: [u64; 2]) -> Self {
        ClocksMs {
            first_ms,
            second_ms,
        }
    }
}

impl Clocks {
    /// Both sides with the starting time of `spec`.
    pub fn new(spec: ClockSpec) -> Clocks {
        let initial = Duration::from_millis(spec.initial_ms);
        Clocks {
            spec,
            remaining: [initial; 2],
        }
    }

    /// Clocks as they stood after some moves: `remaining_ms` for the first and second side
    /// (a journal's record of them, when a match resumes).
    pub fn with_remaining_ms(spec: ClockSpec, remaining_ms: [u64; 2]) -> Clocks {
        Clocks {
            spec,
            remaining: remaining_ms.map(Duration::from_millis),
        }
    }

    /// The clocks as a side's `turn` tells them: `turn.you_ms` is `side`'s time.
    pub fn seen_by(spec: ClockSpec, side: Side, turn: TurnClock) -> Clocks {
        let mut remaining_ms = [turn.you_ms; 2];
        remaining_ms[side.opponent().index()] = turn.opponent_ms;
        Clocks::with_remaining_ms(spec, remaining_ms)
    }

    pub fn spec(&self) -> ClockSpec {
        self.spec
    }

    /// `side`'s time left before its current move.
    pub fn remaining(&self, side: Side) -> Duration {
        self.remaining[side.index()]
    }

    /// Both sides' time left, first side first.
    pub fn remaining_both(&self) -> [Duration; 2] {
        self.remaining
    }

    /// Both sides' time left in whole milliseconds, first side first.
    pub fn remaining_ms(&self) -> [u64; 2] {
        self.remaining.map(whole_ms)
    }

    /// `side`'s time left `elapsed` after its turn began.
    pub fn left_after(&self, side: Side, elapsed: Duration) -> Duration {
        self.remaining(side).saturating_sub(elapsed)
    }

    /// The most think time `side` may use on its current move: its time left, cut to the
    /// per-move limit.
    pub fn allowed(&self, side: Side) -> Duration {
        let left = self.remaining(side);
        match self.spec.move_limit_ms {
            Some(limit) => left.min(Duration::from_millis(limit)),
            None => left,
        }
    }

    /// What a move of `side` that came `elapsed` after its turn began is charged, with up to
    /// `lag_credit` of that time credited for the network; `OutOfTime` when the rest is more
    /// than `allowed`. Changes nothing: `charge` does, once the move is accepted.
    pub fn charge_for(
        &self,
        side: Side,
        elapsed: Duration,
        lag_credit: Duration,
    ) -> Result<MoveCharge, OutOfTime> {
        let credit = lag_credit.min(elapsed);
        let think = elapsed.saturating_sub(credit);
        let allowed = self.allowed(side);
        if think > allowed {
            return Err(OutOfTime { think, allowed });
        }
        Ok(MoveCharge { think, credit })
    }

    /// Charges `side` for a move it thought `think` about: the time comes off its clock and
    /// the increment goes on.
    pub fn charge(&mut self, side: Side, think: Duration) {
        let slot = &mut self.remaining[side.index()];
        *slot = slot
            .saturating_sub(think)
            .saturating_add(Duration::from_millis(self.spec.increment_ms));
    }

    /// The clocks a `turn` to `side` carries, `elapsed` after its turn began.
    pub fn turn_clock(&self, side: Side, elapsed: Duration) -> TurnClock {
        TurnClock {
            you_ms: whole_ms(self.left_after(side, elapsed)),
            opponent_ms: whole_ms(self.remaining(side.opponent())),
        }
    }

    /// What an engine is shown on a `turn` it was sent under `spec`, at ply `ply` (a client
    /// knows only its own and its opponent's time, which is all a view needs).
    pub fn view_of_turn(spec: ClockSpec, turn: TurnClock, ply: u32) -> ClockView {
        Clocks::seen_by(spec, Side::First, turn).view(Side::First, Duration::ZERO, ply)
    }

    /// What an engine playing `side` is shown at ply `ply`, `elapsed` after its turn began.
    pub fn view(&self, side: Side, elapsed: Duration, ply: u32) -> ClockView {
        let turn = self.turn_clock(side, elapsed);
        ClockView {
            you_ms: turn.you_ms,
            opponent_ms: turn.opponent_ms,
            increment_ms: self.spec.increment_ms,
            move_limit_ms: self.spec.move_limit_ms,
            ply,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn spec(initial_ms: u64, increment_ms: u64, move_limit_ms: Option<u64>) -> ClockSpec {
        ClockSpec {
            initial_ms,
            increment_ms,
            move_limit_ms,
        }
    }

    #[test]
    fn a_move_is_charged_its_think_time_less_lag_and_gains_the_increment() {
        let mut clocks = Clocks::new(spec(1000, 50, None));
        let charge = clocks.charge_for(Side::First, MS(300), MS(20)).unwrap();
        assert_eq!(
            charge,
            MoveCharge {
                think: MS(280),
                credit: MS(20)
            }
        );
        clocks.charge(Side::First, charge.think);
        assert_eq!(clocks.remaining_ms(), [770, 1000]);
        // The credit is never more than the time the move took.
        let charge = clocks.charge_for(Side::Second, MS(5), MS(20)).unwrap();
        assert_eq!((charge.think, charge.credit), (MS(0), MS(5)));
    }

    #[test]
    fn a_move_past_its_time_or_the_move_limit_is_out_of_time() {
        let clocks = Clocks::with_remaining_ms(spec(1000, 0, Some(200)), [150, 1000]);
        assert_eq!(clocks.allowed(Side::First), MS(150), "time left is less");
        assert_eq!(
            clocks.allowed(Side::Second),
            MS(200),
            "the move limit is less"
        );
        assert!(clocks.charge_for(Side::First, MS(150), MS(0)).is_ok());
        assert_eq!(
            clocks.charge_for(Side::First, MS(151), MS(0)),
            Err(OutOfTime {
                think: MS(151),
                allowed: MS(150)
            })
        );
        // Lag credit can save a move that arrived late by the network's fault.
        assert!(clocks.charge_for(Side::Second, MS(230), MS(30)).is_ok());
        assert!(clocks.charge_for(Side::Second, MS(231), MS(30)).is_err());
    }

    #[test]
    fn each_side_sees_its_own_time_first_and_an_engine_sees_the_settings() {
        let clocks = Clocks::with_remaining_ms(spec(1000, 10, Some(300)), [900, 400]);
        assert_eq!(
            clocks.turn_clock(Side::Second, MS(100)),
            TurnClock {
                you_ms: 300,
                opponent_ms: 900
            }
        );
        assert_eq!(
            clocks.turn_clock(Side::First, MS(2000)),
            TurnClock {
                you_ms: 0,
                opponent_ms: 400
            }
        );
        assert_eq!(
            clocks.view(Side::First, MS(0), 7),
            ClockView {
                you_ms: 900,
                opponent_ms: 400,
                increment_ms: 10,
                move_limit_ms: Some(300),
                ply: 7
            }
        );
        // A client rebuilds the clocks from its turn: the same view.
        let seen = Clocks::seen_by(
            clocks.spec(),
            Side::Second,
            clocks.turn_clock(Side::Second, MS(0)),
        );
        assert_eq!(seen, clocks);
        assert_eq!(seen.left_after(Side::Second, MS(150)), MS(250));
        let turn = clocks.turn_clock(Side::Second, MS(0));
        assert_eq!(
            Clocks::view_of_turn(clocks.spec(), turn, 7),
            clocks.view(Side::Second, MS(0), 7)
        );
    }

    #[test]
    fn clocks_are_written_as_first_ms_and_second_ms() {
        let json = serde_json::to_string(&ClocksMs::from([5, 6])).unwrap();
        assert_eq!(json, r#"{"first_ms":5,"second_ms":6}"#);
    }
}

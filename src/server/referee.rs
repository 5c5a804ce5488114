//! One referee task per match: sends `start`/`turn`/`end`, validates moves through `AnyGame`,
//! runs both clocks (with lag credit and the per-move limit), and handles resignation,
//! disconnection and reconnection within the grace period.

use std::time::Duration;

use chrono::{DateTime, Local};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::config::ClockConfig;
use crate::game::{new_game, AnyGame, EndReason, GameId, Outcome, Side};
use crate::protocol::{ErrorCode, RefereeMessage, TurnClock};

use super::probe;
use super::registry::BotLink;

/// What reaches a referee from the connections of its two players.
#[derive(Debug)]
pub enum RefereeInput {
    /// A `move` line, stamped with the moment it was read.
    Move {
        side: Side,
        conn_id: u64,
        text: String,
        received: Instant,
    },
    Resign {
        side: Side,
        conn_id: u64,
    },
    /// The connection of `side` closed.
    Disconnected {
        side: Side,
        conn_id: u64,
    },
    /// `side` connected (again): it gets `start` with every move so far, then `turn` if it is
    /// its move.
    Connected {
        side: Side,
        link: BotLink,
    },
}

/// What a match is: everything fixed before its first move.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchSpec {
    pub match_id: String,
    pub tournament: String,
    pub game: GameId,
    /// Every rule option in force.
    pub rules: Value,
    pub clock: ClockConfig,
    /// Bot names: `[first, second]`.
    pub players: [String; 2],
}

/// Arena-wide settings a referee applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefereeSettings {
    pub max_lag: Duration,
    pub reconnect_grace: Duration,
}

/// A finished match, as games.jsonl and the record file keep it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedGame {
    pub spec: MatchSpec,
    pub outcome: Outcome,
    /// Move texts as records keep them.
    pub moves: Vec<String>,
    /// Who made each move (Jiu's Black moves twice in a row when the battle begins).
    pub movers: Vec<Side>,
    /// Think time charged for each move, after lag credit.
    pub think_ms: Vec<u64>,
    /// Lag credited back for each move.
    pub lag_ms: Vec<u64>,
    pub started: DateTime<Local>,
    pub finished: DateTime<Local>,
}

impl FinishedGame {
    /// A game that never started because a bot did not show up.
    pub fn forfeit(spec: MatchSpec, winner: Option<Side>) -> FinishedGame {
        let now = Local::now();
        FinishedGame {
            spec,
            outcome: Outcome {
                winner,
                reason: EndReason::Forfeit,
            },
            moves: Vec::new(),
            movers: Vec::new(),
            think_ms: Vec::new(),
            lag_ms: Vec::new(),
            started: now,
            finished: now,
        }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The state of one running match.
struct Referee {
    spec: MatchSpec,
    settings: RefereeSettings,
    game: Box<dyn AnyGame>,
    links: [Option<BotLink>; 2],
    /// When each side's connection went away (`None` while connected).
    gone_since: [Option<Instant>; 2],
    remaining: [Duration; 2],
    /// How many moves each side has been told about (or made itself).
    reported: [usize; 2],
    turn_started: Instant,
    moves: Vec<String>,
    movers: Vec<Side>,
    think_ms: Vec<u64>,
    lag_ms: Vec<u64>,
}

impl Referee {
    fn send(&self, side: Side, message: &RefereeMessage) {
        if let Some(link) = &self.links[side.index()] {
            link.send(message);
        }
    }

    fn send_error(&self, side: Side, code: ErrorCode, message: String) {
        self.send(
            side,
            &RefereeMessage::Error {
                code,
                message,
                match_id: Some(self.spec.match_id.clone()),
            },
        );
    }

    fn send_start(&mut self, side: Side) {
        let message = RefereeMessage::Start {
            match_id: self.spec.match_id.clone(),
            game: self.spec.game.as_str().to_string(),
            side: side.as_str().to_string(),
            colour: self.spec.game.colour_letter(side).to_string(),
            opponent: self.spec.players[side.opponent().index()].clone(),
            rules: self.spec.rules.clone(),
            clock: self.spec.clock.spec(),
            moves: self.moves.clone(),
        };
        self.send(side, &message);
        self.reported[side.index()] = self.moves.len();
    }

    /// Sends `turn` to the side to move, with its time left now.
    fn send_turn(&mut self, side: Side) {
        let elapsed = Instant::now().saturating_duration_since(self.turn_started);
        let you = self.remaining[side.index()].saturating_sub(elapsed);
        let from = self.reported[side.index()].min(self.moves.len());
        let message = RefereeMessage::Turn {
            match_id: self.spec.match_id.clone(),
            moves: self.moves[from..].to_vec(),
            ply: u32::try_from(self.moves.len()).unwrap_or(u32::MAX),
            clock: TurnClock {
                you_ms: ms(you),
                opponent_ms: ms(self.remaining[side.opponent().index()]),
            },
        };
        self.send(side, &message);
        self.reported[side.index()] = self.moves.len();
    }

    /// The most think time the side to move may use on this move.
    fn allowed(&self, side: Side) -> Duration {
        let left = self.remaining[side.index()];
        match self.spec.clock.spec().move_limit_ms {
            Some(limit) => left.min(Duration::from_millis(limit)),
            None => left,
        }
    }

    /// Lag credited to `side` for a move: its connection's last round-trip time, at most
    /// `max_lag`.
    fn lag_credit(&self, side: Side) -> Duration {
        self.links[side.index()]
            .as_ref()
            .and_then(BotLink::rtt)
            .unwrap_or(Duration::ZERO)
            .min(self.settings.max_lag)
    }

    /// The earliest end of a disconnected side's grace period.
    fn grace_end(&self) -> Option<(Instant, Side)> {
        [Side::First, Side::Second]
            .into_iter()
            .filter_map(|s| {
                self.gone_since[s.index()].map(|t| (t + self.settings.reconnect_grace, s))
            })
            .min_by_key(|(t, _)| *t)
    }

    /// Handles one input; returns the outcome if it ends the match.
    fn handle(&mut self, input: RefereeInput) -> Option<Outcome> {
        let mover = self.game.turn();
        match input {
            RefereeInput::Move {
                side,
                conn_id,
                text,
                received,
            } => {
                if !self.is_current(side, conn_id) {
                    return None;
                }
                if side != mover {
                    self.send_error(
                        side,
                        ErrorCode::NotYourTurn,
                        format!(
                            "it is {}'s move, not yours",
                            self.spec.players[mover.index()]
                        ),
                    );
                    return None;
                }
                let elapsed = received.saturating_duration_since(self.turn_started);
                let credit = self.lag_credit(side).min(elapsed);
                let think = elapsed.saturating_sub(credit);
                if think > self.allowed(side) {
                    return Some(Outcome::win(side.opponent(), EndReason::Timeout));
                }
                match self.game.play_text(&text) {
                    Err(e) => {
                        self.send_error(side, ErrorCode::IllegalMove, e.to_string());
                        tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], error = %e, "illegal move");
                        Some(Outcome::win(side.opponent(), EndReason::IllegalMove))
                    }
                    Ok(recorded) => {
                        self.moves.push(recorded);
                        self.movers.push(side);
                        self.think_ms.push(ms(think));
                        self.lag_ms.push(ms(credit));
                        let left = self.remaining[side.index()].saturating_sub(think)
                            + Duration::from_millis(self.spec.clock.increment_ms);
                        self.remaining[side.index()] = left;
                        self.reported[side.index()] = self.moves.len();
                        self.turn_started = Instant::now();
                        let ply = self.moves.len().saturating_sub(1);
                        if let Some(outcome) = self.game.outcome() {
                            probe::move_accepted(
                                &self.spec.match_id,
                                ply,
                                received,
                                elapsed,
                                think,
                                false,
                            );
                            return Some(outcome);
                        }
                        let next = self.game.turn();
                        self.send_turn(next);
                        probe::move_accepted(
                            &self.spec.match_id,
                            ply,
                            received,
                            elapsed,
                            think,
                            true,
                        );
                        None
                    }
                }
            }
            RefereeInput::Resign { side, conn_id } => self
                .is_current(side, conn_id)
                .then(|| Outcome::win(side.opponent(), EndReason::Resign)),
            RefereeInput::Disconnected { side, conn_id } => {
                if self.is_current(side, conn_id) {
                    tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], "player disconnected; grace period running");
                    self.links[side.index()] = None;
                    self.gone_since[side.index()] = Some(Instant::now());
                }
                None
            }
            RefereeInput::Connected { side, link } => {
                if self.links[side.index()]
                    .as_ref()
                    .is_some_and(|l| l.conn_id == link.conn_id)
                {
                    return None;
                }
                if self.gone_since[side.index()].is_some() {
                    tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], "player reconnected; resuming");
                }
                self.links[side.index()] = Some(link);
                self.gone_since[side.index()] = None;
                self.send_start(side);
                if side == mover {
                    self.send_turn(side);
                }
                None
            }
        }
    }

    fn is_current(&self, side: Side, conn_id: u64) -> bool {
        self.links[side.index()]
            .as_ref()
            .is_some_and(|l| l.conn_id == conn_id)
    }
}

/// Plays one match to its end. `links` are the players' connections when the match is created
/// (`None` for one that is not connected: its grace period starts now). Returns `None` if the
/// server shuts down first, or the rules cannot be set up.
pub async fn run_match(
    spec: MatchSpec,
    settings: RefereeSettings,
    links: [Option<BotLink>; 2],
    mut inbox: mpsc::Receiver<RefereeInput>,
    shutdown: CancellationToken,
) -> Option<FinishedGame> {
    let _running = probe::RunningMatch::start();
    let game = match new_game(spec.game, &spec.rules) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(match_id = %spec.match_id, error = %e, "cannot set up the game");
            return None;
        }
    };
    let started = Local::now();
    let now = Instant::now();
    let initial = Duration::from_millis(spec.clock.initial_ms);
    let gone_since = [
        links[0].is_none().then_some(now),
        links[1].is_none().then_some(now),
    ];
    let mut referee = Referee {
        spec,
        settings,
        game,
        links,
        gone_since,
        remaining: [initial; 2],
        reported: [0; 2],
        turn_started: now,
        moves: Vec::new(),
        movers: Vec::new(),
        think_ms: Vec::new(),
        lag_ms: Vec::new(),
    };
    tracing::info!(
        match_id = %referee.spec.match_id,
        game = %referee.spec.game,
        first = %referee.spec.players[0],
        second = %referee.spec.players[1],
        "match started"
    );
    referee.send_start(Side::First);
    referee.send_start(Side::Second);

    let outcome = 'play: {
        if let Some(outcome) = referee.game.outcome() {
            break 'play outcome;
        }
        let first_mover = referee.game.turn();
        referee.turn_started = Instant::now();
        referee.send_turn(first_mover);
        // One wait for the whole match rather than a fresh one per move (see connection.rs).
        let shutting_down = shutdown.cancelled();
        tokio::pin!(shutting_down);
        loop {
            let mover = referee.game.turn();
            let clock_end =
                referee.turn_started + referee.allowed(mover) + referee.lag_credit(mover);
            let grace = referee.grace_end();
            tokio::select! {
                biased;
                _ = &mut shutting_down => return None,
                input = inbox.recv() => {
                    let input = input?;
                    if let Some(outcome) = referee.handle(input) {
                        break 'play outcome;
                    }
                    // A stream of other input must not hold the mover's clock back.
                    if referee.game.outcome().is_none() {
                        let m = referee.game.turn();
                        if Instant::now() > referee.turn_started + referee.allowed(m) + referee.lag_credit(m) {
                            break 'play Outcome::win(m.opponent(), EndReason::Timeout);
                        }
                    }
                }
                _ = sleep_until(clock_end) => {
                    break 'play Outcome::win(mover.opponent(), EndReason::Timeout);
                }
                _ = async { if let Some((at, _)) = grace { sleep_until(at).await } }, if grace.is_some() => {
                    if let Some((_, side)) = grace {
                        break 'play Outcome::win(side.opponent(), EndReason::Disconnect);
                    }
                }
            }
        }
    };

    for side in [Side::First, Side::Second] {
        let result = match outcome.winner {
            None => "draw",
            Some(w) if w == side => "win",
            Some(_) => "loss",
        };
        referee.send(
            side,
            &RefereeMessage::End {
                match_id: referee.spec.match_id.clone(),
                result: result.to_string(),
                reason: outcome.reason.as_str().to_string(),
                moves: referee.moves.clone(),
            },
        );
    }
    tracing::info!(
        match_id = %referee.spec.match_id,
        result = outcome.result_str(),
        reason = %outcome.reason,
        moves = referee.moves.len(),
        "match ended"
    );
    Some(FinishedGame {
        spec: referee.spec,
        outcome,
        moves: referee.moves,
        movers: referee.movers,
        think_ms: referee.think_ms,
        lag_ms: referee.lag_ms,
        started,
        finished: Local::now(),
    })
}

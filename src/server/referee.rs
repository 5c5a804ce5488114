//! One referee per match: sends `start`/`turn`/`end`, validates moves through `AnyGame`, runs
//! both clocks (with lag credit and the per-move limit), and handles resignation, disconnection
//! and reconnection within the grace period. Its state sits behind one lock (`Desk`): the
//! players' connections play moves under it on their own tasks, and the match's task keeps the
//! clocks' verdicts, the rare inputs of its inbox and the game's end. With journaling, every
//! accepted move is queued to the journal (group-committed, write-behind) before the opponent
//! hears of it, and a match cut off by a crash resumes from its last journaled move.
//!
//! Why it is longer than 800 lines: every path that starts, stops or charges a clock is here
//! (the state machine, the direct path under the `Desk` lock, the match task's verdicts and
//! the resume from the journal), and they share the referee's private state and its fairness
//! rules (write stamps, kernel receive stamps, lag credit, the refusal of moves sent before
//! their turn). Kept in one file, a change to any of them can be checked against the others.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Local};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::game::{new_game, AnyGame, EndReason, Outcome, Side};
use crate::journal::JournalMove;
use crate::protocol::{end_wire_lines, BotResult, ErrorCode, RefereeMessage, TurnLine};

use super::arrival::SocketLook;
use super::journaling::MoveJournal;
use super::link::{
    BotLink, DirectMoves, MoveInput, RefereeDoor, RefereeInbox, RefereeInput, WriteStamp,
};
use super::match_spec::MatchSpec;
use super::move_log::SharedMoveLog;
use super::probe;
use crate::clock::{Clocks, MoveCharge};
use crate::clock_settings::whole_ms as ms;

/// After the settle window, how long a loss on time still waits for the mover's connection
/// to read what reached the server before the deadline (a server starved of CPU can take
/// longer than the window to get round to it).
const READER_WAIT_MAX: Duration = Duration::from_secs(1);
/// How often the referee looks again while it waits for that reader.
const READER_RECHECK: Duration = Duration::from_millis(5);
/// How much earlier than the start of its `turn`'s writing a move may seem to have arrived and
/// still answer it. A kernel receive stamp is a wall-clock time turned into a monotonic
/// instant (`arrival`), which can be off by some microseconds; without this slack a bot that
/// answers at once could have its move refused as sent ahead of its turn, and lose on time.
/// A move sent ahead by less than this gains nothing a clock in whole milliseconds shows.
const ANSWER_ORDER_SLACK: Duration = Duration::from_micros(100);

/// Arena-wide settings a referee applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefereeSettings {
    pub max_lag: Duration,
    pub reconnect_grace: Duration,
    /// After a clock runs out, how long the referee still waits for a move that reached the
    /// server before the deadline but was not read in time (`server.timeout_settle_ms`).
    pub timeout_settle: Duration,
}

/// A finished match, as games.jsonl and the record file keep it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedGame {
    pub spec: Arc<MatchSpec>,
    pub outcome: Outcome,
    /// Move texts as records keep them.
    pub moves: Vec<String>,
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
            spec: Arc::new(spec),
            outcome: Outcome {
                winner,
                reason: EndReason::Forfeit,
            },
            moves: Vec::new(),
            think_ms: Vec::new(),
            lag_ms: Vec::new(),
            started: now,
            finished: now,
        }
    }

    /// A game cut off by a crash that cannot go on because a player did not come back within
    /// `absent_forfeit_ms` of the restart: the journaled moves, think times and original start
    /// are kept, and each absent player loses by `disconnect` (it was in the game). Both absent
    /// is a draw by `disconnect`. A game the journaled moves had already ended keeps its result.
    pub fn abandoned(spec: MatchSpec, resume: &ResumePoint, absent: [bool; 2]) -> FinishedGame {
        let (moves, think_ms, lag_ms, outcome) = match new_game(spec.game, &spec.rules) {
            Ok(mut game) => {
                let replayed = replay(&spec, &mut game, resume);
                let (moves, _, think_ms, lag_ms) = replayed.moves.read().columns();
                (moves, think_ms, lag_ms, game.outcome())
            }
            Err(e) => {
                tracing::error!(match_id = %spec.match_id, error = %e, "cannot set up the game to replay it");
                (Vec::new(), Vec::new(), Vec::new(), None)
            }
        };
        let outcome = outcome.unwrap_or(Outcome {
            winner: match absent {
                [true, false] => Some(Side::Second),
                [false, true] => Some(Side::First),
                _ => None,
            },
            reason: EndReason::Disconnect,
        });
        FinishedGame {
            spec: Arc::new(spec),
            outcome,
            moves,
            think_ms,
            lag_ms,
            started: resume.started,
            finished: Local::now(),
        }
    }
}

/// Where a match resumes after a restart: the moves journaled before the crash (each with its
/// think time, lag credit and both clocks after it) and when the game first started.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumePoint {
    pub moves: Vec<JournalMove>,
    pub started: DateTime<Local>,
}

/// How a match is journaled: where it resumes from (if it was cut off by a crash) and the
/// journal each accepted move is queued to before the game goes on.
#[derive(Debug, Default)]
pub struct MatchJournaling {
    pub resume: Option<ResumePoint>,
    pub journal: Option<MoveJournal>,
    /// Moves played before the first turn (an opening, `arena match`): journaled and recorded
    /// as ordinary moves with no think time. On a resume, those already journaled are skipped.
    pub opening: Vec<String>,
    /// Where the game's start and moves are told.
    pub events: super::events::Events,
}

/// What an input that reaches the referee after the mover's deadline does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LateInput {
    /// A move the kernel received before the deadline, or the waiting side doing something
    /// that cannot end the game: handled as usual.
    Handle,
    /// The waiting side resigning once the mover's time had run out: too late, ignored.
    Ignore,
    /// Anything else from the mover: its time ran out first.
    Timeout,
}

impl LateInput {
    /// What an input other than a move does once the mover's deadline has passed (a move is
    /// judged by when it arrived: [`Referee::accept_move`]).
    fn of(input: &RefereeInput, mover: Side) -> LateInput {
        match input {
            RefereeInput::Move { .. } => LateInput::Handle,
            RefereeInput::Resign { side, .. } if *side != mover => LateInput::Ignore,
            RefereeInput::Disconnected { side, .. } | RefereeInput::Connected { side, .. } => {
                if *side == mover {
                    LateInput::Timeout
                } else {
                    LateInput::Handle
                }
            }
            RefereeInput::Resign { .. } => LateInput::Timeout,
        }
    }
}

/// What one input did to the match.
enum Handled {
    /// Nothing that changes whose move it is.
    Nothing,
    /// The mover's move was accepted (it may have ended the game).
    Moved(MoveTimes),
    Ended(Outcome),
}

/// When an accepted move arrived and was read, the time since its `turn` and the think time
/// charged (for the bench probe).
struct MoveTimes {
    received: Instant,
    read: Instant,
    elapsed: Duration,
    think: Duration,
}

/// The referee's look at the mover's socket when the mover's time runs out: which bytes of
/// its stream had arrived by the deadline (see [`Referee::arrived_by`]).
#[derive(Debug, Clone, Copy)]
enum DeadlineLook {
    /// Not taken yet in this turn.
    Due,
    /// Taken on the connection `conn_id`: what its socket had received (`None` where the
    /// kernel or a busy reader did not let it tell).
    Taken {
        conn_id: u64,
        seen: Option<SocketLook>,
    },
}

/// The state of one running match.
struct Referee {
    /// Shared with the web view's entry for the game and the finished game.
    spec: Arc<MatchSpec>,
    settings: RefereeSettings,
    game: Box<dyn AnyGame>,
    links: [Option<BotLink>; 2],
    /// When each side's connection went away (`None` while connected).
    gone_since: [Option<Instant>; 2],
    /// Both clocks before the current move.
    clocks: Clocks,
    /// How many moves each side has been told about (or made itself).
    reported: [usize; 2],
    /// When the current turn began: its `turn` was queued.
    turn_started: Instant,
    /// When each side's latest starting `turn` line reached its socket (the mover's clock runs
    /// from then; a busy server's own delay in writing it is not the bot's time). One per side,
    /// so that a line of the previous turn written late cannot restart the current one.
    turn_written: [Arc<WriteStamp>; 2],
    moves: SharedMoveLog,
    /// Set while a loss on time waits for the mover's reader (see `time_is_up`).
    recheck_at: Option<Instant>,
    /// The look at the mover's socket at its deadline, in the current turn.
    deadline_look: DeadlineLook,
    /// Whether the players' connections may play moves directly now (see [`Desk`]): only
    /// while the referee's task waits with nothing half done.
    direct_open: bool,
    /// How the game ended, when a move played directly ended it: the task finishes it.
    ended: Option<Outcome>,
    /// The `turn` line being sent, kept between moves (one is encoded at every move).
    turn_line: TurnLine,
    /// The canonical text of the move being played, kept between moves like `turn_line`.
    recorded: String,
    /// The number of moves in the log when `recorded` was appended to it as the last one (0:
    /// none was): while the log still has that many moves, `recorded` is its last move's
    /// text, and a `turn` that reports only that move is written without locking the log.
    recorded_as_move: usize,
}

impl Referee {
    /// Asks for the blocks a move reads and writes beyond the referee's own state, all at
    /// once before any is needed: the board, both write stamps, both links (round-trip time,
    /// outgoing queue), the move log and the `turn` line's buffer.
    fn prefetch_move_blocks(&self) {
        use super::prefetch;
        prefetch::value(&*self.game);
        for stamp in &self.turn_written {
            prefetch::value(&**stamp);
        }
        for link in self.links.iter().flatten() {
            link.prefetch();
        }
        self.moves.prefetch();
        prefetch::value(self.turn_line.bytes());
        prefetch::value(self.recorded.as_bytes());
    }

    fn send(&self, side: Side, message: &RefereeMessage) {
        if let Some(link) = &self.links[side.index()] {
            link.send(message);
        }
    }

    /// Sends `side` a line already encoded, with its `\n`.
    fn send_line(&self, side: Side, line: &str) {
        if let Some(link) = &self.links[side.index()] {
            link.send_line(line);
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

    /// The game at its start (or resumption): its moves are this referee's log, shared.
    fn started_event(&self) -> super::events::GameStarted {
        super::events::GameStarted {
            spec: self.spec.clone(),
            moves: self.moves.clone(),
            clocks: self.clocks.remaining_ms(),
        }
    }

    /// Tells `events` of the move just accepted (only when someone takes moves: otherwise no
    /// event is made).
    fn publish_last_move(&self, events: &super::events::Events) {
        if !events.is_followed_live() {
            return;
        }
        let moves = self.moves.read();
        if let Some((text, think_ms, _)) = moves.last() {
            let position = || self.game.position_text();
            events.publish(&super::events::ServerEvent::MovePlayed(
                super::events::MovePlayed::new(
                    &self.spec.match_id,
                    moves.len(),
                    text,
                    think_ms,
                    self.clocks.remaining_ms(),
                    &position,
                ),
            ));
        }
    }

    fn send_start(&mut self, side: Side) {
        let message = RefereeMessage::Start {
            match_id: self.spec.match_id.clone(),
            game: self.spec.game.as_str().to_string(),
            side: side.as_str().to_string(),
            colour: self.spec.game.colour_letter(side).to_string(),
            opponent: self.spec.players[side.opponent().index()].clone(),
            rules: Value::clone(&self.spec.rules),
            clock: self.spec.clock,
            moves: self.moves.read().texts_from(0),
        };
        self.send(side, &message);
        self.reported[side.index()] = self.moves.len();
    }

    /// Starts `side`'s turn now: its clock runs from the moment its `turn` line is written.
    fn begin_turn(&mut self, side: Side) {
        let now = Instant::now();
        self.turn_started = now;
        self.deadline_look = DeadlineLook::Due;
        self.turn_written[side.index()].clear();
        self.send_turn(side, true, now);
    }

    /// When the current turn's clock started: when its `turn` was written, or, until the writer
    /// says so (or if the mover was away), when it was queued.
    fn turn_start(&self) -> Instant {
        let queued = self.turn_started;
        self.turn_written[self.game.turn().index()]
            .get()
            .map_or(queued, |w| w.max(queued))
    }

    /// When `side`'s time for the current move runs out (lag credit included).
    fn deadline(&self, side: Side) -> Instant {
        self.turn_start() + self.clocks.allowed(side) + self.lag_credit(side)
    }

    /// When a loss on time is declared: the deadline plus the settle window, in which a move
    /// the kernel received in time but a busy server had not read yet still counts.
    fn verdict_at(&self, side: Side) -> Instant {
        self.deadline(side) + self.settings.timeout_settle
    }

    /// Whether `side`'s time is up at `now`: past `verdict_at`, and its connection's reader has
    /// read everything that reached the server before the deadline (a server too busy to
    /// read a move that arrived in time must not declare it missing), or has been waited for
    /// `READER_WAIT_MAX` beyond the settle window.
    fn time_is_up(&self, side: Side, now: Instant) -> bool {
        let verdict = self.verdict_at(side);
        if now < verdict {
            return false;
        }
        let deadline = self.deadline(side);
        let read = self.links[side.index()]
            .as_ref()
            .is_none_or(|link| link.read_everything_before(deadline));
        read || now >= verdict + READER_WAIT_MAX
    }

    /// Sends `turn` to the side to move, with its time left at `now`; `stamped` for the line
    /// that starts the turn (not one sent again after a reconnect: the clock kept running).
    fn send_turn(&mut self, side: Side, stamped: bool, now: Instant) {
        let elapsed = now.saturating_duration_since(self.turn_started);
        let clock = self.clocks.turn_clock(side, elapsed);
        let played = self.moves.len();
        let (line, ply) =
            if self.recorded_as_move == played && self.reported[side.index()] + 1 == played {
                // The usual turn: it reports the one move just played, whose text is at hand.
                let texts = std::iter::once(self.recorded.as_str());
                let ply32 = u32::try_from(played).unwrap_or(u32::MAX);
                (self.turn_line.encode(texts, ply32, clock), played)
            } else {
                let log = self.moves.read();
                let from = self.reported[side.index()].min(log.len());
                let ply = u32::try_from(log.len()).unwrap_or(u32::MAX);
                let texts = (from..log.len()).filter_map(|i| log.text(i));
                (self.turn_line.encode(texts, ply, clock), log.len())
            };
        if let Some(link) = &self.links[side.index()] {
            if stamped {
                link.send_line_stamped(line, &self.turn_written[side.index()], now);
            } else {
                link.send_line(line);
            }
        }
        self.reported[side.index()] = ply;
    }

    /// Lag credited to `side` for a move: its connection's last round-trip time, at most
    /// `max_lag`, in whole milliseconds, so that what is credited is exactly what is recorded
    /// (a 60 µs loopback RTT credits nothing rather than shaving a millisecond off the think
    /// time while the record says 0).
    fn lag_credit(&self, side: Side) -> Duration {
        let rtt = self.links[side.index()]
            .as_ref()
            .and_then(BotLink::rtt)
            .unwrap_or(Duration::ZERO)
            .min(self.settings.max_lag);
        Duration::from_millis(ms(rtt))
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

    /// Takes one input from a player's connection: one that comes after the mover's deadline
    /// is judged by [`LateInput`], the rest by [`Referee::handle`]; a stream of other input
    /// does not hold the mover's clock back.
    fn accept(&mut self, input: RefereeInput) -> Handled {
        if let Some(mv) = input.as_move() {
            return self.accept_move(mv);
        }
        if let Some(handled) = self.late_verdict(|mover| LateInput::of(&input, mover)) {
            return handled;
        }
        let handled = self.handle(input);
        self.unless_time_is_up(handled)
    }

    /// [`Referee::accept`] for a move (borrowed from the line its connection read). Whether a
    /// move is late is told by when it was received, never after now, so unlike other input
    /// it needs no look at the clock: a move received in time is handled however late it is
    /// read, and one received after the deadline is late whenever it is read.
    fn accept_move(&mut self, mv: MoveInput<'_>) -> Handled {
        let mover = self.game.turn();
        let mut mv = mv;
        if mv.side == mover {
            let deadline = self.deadline(mover);
            if !self.arrived_by(&mv, deadline) {
                return Handled::Ended(Outcome::win(mover.opponent(), EndReason::Timeout));
            }
            if mv.received > deadline {
                // Counted as arriving in time: it is charged no more than the time it had.
                probe::shared_read_move_in_time();
                mv.received = deadline;
            }
        }
        let handled = self.handle_move(mv);
        self.unless_time_is_up(handled)
    }

    /// Whether the mover's move `mv` counts as arriving by `deadline`. Its kernel stamp says
    /// so; or the stamp is of later bytes that shared its read (the kernel keeps one stamp a
    /// read, and merges packets that wait unread), and nothing shows the move came after the
    /// deadline: neither a read that found the socket empty after the deadline and before it
    /// came, nor the referee's look at the socket at the deadline, taken before its bytes had
    /// arrived. A move that was waiting in the socket when the referee looked is in time.
    fn arrived_by(&self, mv: &MoveInput<'_>, deadline: Instant) -> bool {
        if mv.received <= deadline {
            return true;
        }
        let Some(shared) = mv.shared_read else {
            return false;
        };
        if shared.after.is_some_and(|empty| empty >= deadline) {
            return false;
        }
        match self.deadline_look {
            DeadlineLook::Taken {
                conn_id,
                seen: Some(look),
            } if conn_id == mv.conn_id && look.at >= deadline => {
                shared.end_byte <= look.received_bytes
            }
            _ => true,
        }
    }

    /// Looks at the mover's socket once its time has run out at `now` (see
    /// [`Referee::arrived_by`]), if that is due in this turn.
    fn look_at_deadline(&mut self, now: Instant) {
        if !matches!(self.deadline_look, DeadlineLook::Due) {
            return;
        }
        let mover = self.game.turn();
        if now < self.deadline(mover) {
            return;
        }
        if let Some(link) = &self.links[mover.index()] {
            self.deadline_look = DeadlineLook::Taken {
                conn_id: link.conn_id,
                seen: link.look_at_socket(),
            };
        }
    }

    /// Whether the look at the mover's socket is still to be taken in this turn.
    fn deadline_look_due(&self) -> bool {
        matches!(self.deadline_look, DeadlineLook::Due)
            && self.links[self.game.turn().index()]
                .as_ref()
                .is_some_and(BotLink::counts_its_stream)
    }

    /// What an input does that came once the mover's deadline had passed (`late` says, given
    /// the mover); `None` if it came in time or is handled as usual.
    fn late_verdict(&self, late: impl FnOnce(Side) -> LateInput) -> Option<Handled> {
        let mover = self.game.turn();
        // Fresh: the writer may have stamped the turn since the timer was set.
        let clock_end = self.deadline(mover);
        if Instant::now() <= clock_end {
            return None;
        }
        match late(mover) {
            LateInput::Handle => None,
            LateInput::Ignore => Some(Handled::Nothing),
            LateInput::Timeout => Some(Handled::Ended(Outcome::win(
                mover.opponent(),
                EndReason::Timeout,
            ))),
        }
    }

    /// An input that did not move the game on still ends it if the mover's time is up.
    fn unless_time_is_up(&self, handled: Handled) -> Handled {
        match handled {
            Handled::Nothing => {
                let m = self.game.turn();
                if self.time_is_up(m, Instant::now()) {
                    Handled::Ended(Outcome::win(m.opponent(), EndReason::Timeout))
                } else {
                    Handled::Nothing
                }
            }
            handled => handled,
        }
    }

    /// After an accepted move is journaled: tells `events`, and starts the next turn or
    /// returns how the game ended.
    fn go_on(&mut self, times: MoveTimes, events: &super::events::Events) -> Option<Outcome> {
        self.recheck_at = None;
        self.publish_last_move(events);
        let ply = self.moves.len().saturating_sub(1);
        let game_over = self.game.outcome();
        if game_over.is_none() {
            let next = self.game.turn();
            self.begin_turn(next);
        }
        probe::move_accepted(
            || self.spec.match_id.clone(),
            ply,
            times.received,
            times.read,
            times.elapsed,
            times.think,
            game_over.is_none(),
        );
        game_over
    }

    /// When the referee's task must look at the clocks next: the mover's verdict (or the next
    /// look at its reader), but no later than the soonest verdict of any turn that begins
    /// from `now` on. Moves played directly never wake the task, and this bound is why they
    /// need not: a turn begun at `t >= now` has its verdict at `t` plus that side's time plus
    /// the settle window, and a side's time only grows when it moves.
    fn wake_at(&self, now: Instant) -> Instant {
        let mover = self.game.turn();
        let verdict = match self.recheck_at {
            Some(again) => self.verdict_at(mover).max(again),
            None => self.verdict_at(mover),
        };
        let shortest = self
            .clocks
            .allowed(Side::First)
            .min(self.clocks.allowed(Side::Second));
        // A turn's look at its mover's socket is due at its deadline, the settle window before
        // its verdict.
        if self.links.iter().flatten().any(BotLink::counts_its_stream) {
            let next = if self.deadline_look_due() {
                self.deadline(mover).min(verdict)
            } else {
                verdict
            };
            return next.min(now + shortest);
        }
        verdict.min(now + shortest + self.settings.timeout_settle)
    }

    /// Handles a move: accepted, refused, or the match over.
    fn handle_move(&mut self, mv: MoveInput<'_>) -> Handled {
        let (side, received) = (mv.side, mv.received);
        let mover = self.game.turn();
        if !self.is_current(side, mv.conn_id) {
            return Handled::Nothing;
        }
        if side == mover {
            if let Some(why) = self.answers_another_turn(mv.ply, received) {
                tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], why = %why, "move refused: not an answer to the current turn");
                self.send_error(side, ErrorCode::NotYourTurn, why);
                return Handled::Nothing;
            }
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
            return Handled::Nothing;
        }
        let elapsed = received.saturating_duration_since(self.turn_start());
        let Ok(MoveCharge { think, credit }) =
            self.clocks.charge_for(side, elapsed, self.lag_credit(side))
        else {
            return Handled::Ended(Outcome::win(side.opponent(), EndReason::Timeout));
        };
        match self.game.play_text_into(mv.text, &mut self.recorded) {
            Err(e) => {
                self.send_error(side, ErrorCode::IllegalMove, e.to_string());
                // The error quotes the bot's move text: escaped and cut for the log.
                tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], error = %crate::log_text::client_text(&e.to_string()), "illegal move");
                Handled::Ended(Outcome::win(side.opponent(), EndReason::IllegalMove))
            }
            Ok(()) => {
                self.moves.push(&self.recorded, side, ms(think), ms(credit));
                self.recorded_as_move = self.moves.len();
                self.clocks.charge(side, think);
                self.reported[side.index()] = self.moves.len();
                Handled::Moved(MoveTimes {
                    received,
                    read: mv.read,
                    elapsed,
                    think,
                })
            }
        }
    }

    /// Handles one input: a move accepted, the match over, or nothing that moves it on.
    fn handle(&mut self, input: RefereeInput) -> Handled {
        let mover = self.game.turn();
        match input {
            RefereeInput::Move { .. } => match input.as_move() {
                Some(mv) => self.handle_move(mv),
                None => Handled::Nothing,
            },
            RefereeInput::Resign { side, conn_id } => {
                if self.is_current(side, conn_id) {
                    Handled::Ended(Outcome::win(side.opponent(), EndReason::Resign))
                } else {
                    Handled::Nothing
                }
            }
            RefereeInput::Disconnected { side, conn_id } => {
                if self.is_current(side, conn_id) {
                    tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], "player disconnected; grace period running");
                    self.links[side.index()] = None;
                    self.gone_since[side.index()] = Some(Instant::now());
                }
                Handled::Nothing
            }
            RefereeInput::Connected { side, link } => {
                if self.links[side.index()]
                    .as_ref()
                    .is_some_and(|l| l.conn_id == link.conn_id)
                {
                    return Handled::Nothing;
                }
                if self.gone_since[side.index()].is_some() {
                    tracing::info!(match_id = %self.spec.match_id, bot = %self.spec.players[side.index()], "player reconnected; resuming");
                }
                self.links[side.index()] = Some(link);
                self.gone_since[side.index()] = None;
                self.send_start(side);
                if side == mover {
                    // A turn begun while the side was away was never written: its answers
                    // can come from now on.
                    let now = Instant::now();
                    self.turn_written[side.index()].begin(now);
                    self.send_turn(side, false, now);
                }
                Handled::Nothing
            }
        }
    }

    /// Why a move of the side to move cannot be an answer to its current `turn`: it names
    /// another `ply`, or it reached the server before that `turn` was being written (a move
    /// sent ahead, meant for an earlier turn or guessed in advance).
    fn answers_another_turn(&self, ply: Option<u32>, received: Instant) -> Option<String> {
        let current = self.moves.len();
        if let Some(ply) = ply {
            if usize::try_from(ply).ok() != Some(current) {
                return Some(format!(
                    "this move answers ply {ply}, but the game is at ply {current}"
                ));
            }
        }
        let writing_began = self.turn_written[self.game.turn().index()].begun();
        match writing_began {
            Some(began) if received + ANSWER_ORDER_SLACK >= began => None,
            _ => Some(format!(
                "this move arrived before the turn for ply {current} was sent; a move must answer its turn"
            )),
        }
    }

    fn is_current(&self, side: Side, conn_id: u64) -> bool {
        self.links[side.index()]
            .as_ref()
            .is_some_and(|l| l.conn_id == conn_id)
    }
}

/// A match's referee state, shared by its task and its players' connections: a connection
/// plays a move directly under this lock (journaled, the next `turn` sent) without handing
/// it to the task, which then only watches the clocks, takes the rare inputs that come
/// through the inbox, and finishes the game.
struct Desk {
    referee: Mutex<Referee>,
    /// Rung when a move played directly ended the game.
    ended: Notify,
    journal: Option<MoveJournal>,
    events: super::events::Events,
}

impl Desk {
    fn lock(&self) -> MutexGuard<'_, Referee> {
        self.referee.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After a move `referee` accepted: journals it behind (the caller has seen that the
    /// journal is not backed up) and goes on with the game.
    fn journal_and_go_on(&self, referee: &mut Referee, times: MoveTimes) -> Option<Outcome> {
        if let Some(journal) = &self.journal {
            journal.record_last_move_behind(&referee.moves, referee.clocks.remaining_both());
        }
        referee.go_on(times, &self.events)
    }
}

impl DirectMoves for Desk {
    /// The desk itself, the referee's state inline: asked for when a line arrives on a
    /// player's connection.
    fn prefetch(&self) {
        super::prefetch::value(self);
    }

    fn try_play(&self, mv: MoveInput<'_>) -> bool {
        // A backed-up journal makes a move wait for the disk, which only the task can do.
        if self.journal.as_ref().is_some_and(MoveJournal::is_backed_up) {
            return false;
        }
        let mut referee = self.lock();
        if !referee.direct_open {
            return false;
        }
        referee.prefetch_move_blocks();
        let outcome = match referee.accept_move(mv) {
            Handled::Nothing => None,
            Handled::Ended(outcome) => Some(outcome),
            Handled::Moved(times) => self.journal_and_go_on(&mut referee, times),
        };
        if let Some(outcome) = outcome {
            referee.direct_open = false;
            referee.ended = Some(outcome);
            drop(referee);
            self.ended.notify_one();
        }
        true
    }
}

/// Shuts the direct path when the referee's task ends, however it ends.
struct DirectShut(Arc<Desk>);

impl Drop for DirectShut {
    fn drop(&mut self) {
        self.0.lock().direct_open = false;
    }
}

/// Replays journaled moves into a fresh game: the moves made, their movers, think and lag
/// times, and both clocks after the last one. Stops at the first move the rules refuse (which
/// a journal written by this server never holds).
#[derive(Default)]
struct Replayed {
    moves: SharedMoveLog,
    /// Both clocks after the last move replayed.
    clocks: Option<[u64; 2]>,
}

fn replay(spec: &MatchSpec, game: &mut Box<dyn AnyGame>, resume: &ResumePoint) -> Replayed {
    let mut out = Replayed::default();
    for m in &resume.moves {
        let mover = game.turn();
        match game.play_text(&m.text) {
            Ok(recorded) => {
                out.moves.push(&recorded, mover, m.think_ms, m.lag_ms);
                out.clocks = Some([m.first_clock_ms, m.second_clock_ms]);
            }
            Err(e) => {
                tracing::error!(match_id = %spec.match_id, ply = m.ply, error = %e, "a journaled move does not replay; resuming before it");
                break;
            }
        }
        if game.outcome().is_some() {
            break;
        }
    }
    out
}

/// Plays one match to its end. `links` are the players' connections when the match is created
/// (`None` for one that is not connected: its grace period starts now). Returns `None` if the
/// server shuts down first, or the rules cannot be set up. With journaling, each accepted move is queued to `journaling.journal` (written
/// behind, group-committed) before the opponent hears of it, and a match cut off by a crash continues from
/// `journaling.resume`: the journaled moves are replayed, each clock is set to what the journal
/// says it had left after the last of them, and both bots get `start` with the moves so far,
/// then the mover `turn`. Once the game is under way the referee opens `door`'s direct path:
/// connections then play moves under the referee's lock (see [`Desk`]).
pub async fn run_journaled_match(
    spec: MatchSpec,
    settings: RefereeSettings,
    links: [Option<BotLink>; 2],
    inbox: RefereeInbox,
    door: Option<&RefereeDoor>,
    shutdown: CancellationToken,
    journaling: MatchJournaling,
) -> Option<FinishedGame> {
    let _running = probe::RunningMatch::start();
    let mut game = match new_game(spec.game, &spec.rules) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(match_id = %spec.match_id, error = %e, "cannot set up the game");
            return None;
        }
    };
    let mut started = Local::now();
    let mut replayed = Replayed::default();
    let mut clocks = Clocks::new(spec.clock);
    if let Some(resume) = &journaling.resume {
        replayed = replay(&spec, &mut game, resume);
        if let Some(remaining_ms) = replayed.clocks {
            clocks = Clocks::with_remaining_ms(spec.clock, remaining_ms);
        }
        started = resume.started;
        tracing::info!(match_id = %spec.match_id, moves = replayed.moves.len(), "resuming the match from the journal");
    }
    for text in journaling.opening.iter().skip(replayed.moves.len()) {
        if game.outcome().is_some() {
            break;
        }
        let mover = game.turn();
        match game.play_text(text) {
            Ok(recorded) => {
                replayed.moves.push(&recorded, mover, 0, 0);
                if let Some(journal) = &journaling.journal {
                    journal
                        .record_last_move(&replayed.moves, clocks.remaining_both())
                        .await;
                }
            }
            Err(e) => {
                tracing::error!(match_id = %spec.match_id, move = %text, error = %e, "an opening move is illegal; the game starts after the moves before it");
                break;
            }
        }
    }
    let now = Instant::now();
    let gone_since = [
        links[0].is_none().then_some(now),
        links[1].is_none().then_some(now),
    ];
    let turn_line = TurnLine::new(&spec.match_id);
    let referee = Referee {
        spec: Arc::new(spec),
        settings,
        game,
        links,
        gone_since,
        clocks,
        reported: [0; 2],
        turn_started: now,
        turn_written: [Arc::new(WriteStamp::new()), Arc::new(WriteStamp::new())],
        moves: replayed.moves,
        recheck_at: None,
        deadline_look: DeadlineLook::Due,
        direct_open: false,
        turn_line,
        recorded: String::new(),
        recorded_as_move: 0,
        ended: None,
    };
    let desk = Arc::new(Desk {
        referee: Mutex::new(referee),
        ended: Notify::new(),
        journal: journaling.journal,
        events: journaling.events,
    });
    let _shut = DirectShut(desk.clone());
    {
        let mut referee = desk.lock();
        tracing::info!(
            match_id = %referee.spec.match_id,
            game = %referee.spec.game,
            first = %referee.spec.players[0],
            second = %referee.spec.players[1],
            "match started"
        );
        referee.send_start(Side::First);
        referee.send_start(Side::Second);
        if desk.events.is_followed() {
            desk.events
                .publish(&super::events::ServerEvent::GameStarted(
                    referee.started_event(),
                ));
        }
    }

    // Whether a loss on time was declared because no move had come when the settle window
    // closed (rather than a move received after the deadline).
    let mut no_move_by_verdict = false;
    let outcome = 'play: {
        {
            let mut referee = desk.lock();
            if let Some(outcome) = referee.game.outcome() {
                break 'play outcome;
            }
            let first_mover = referee.game.turn();
            referee.begin_turn(first_mover);
        }
        if let Some(door) = door {
            door.open_direct(desk.clone());
        }
        // One wait for the whole match rather than a fresh one per move (see connection.rs).
        let shutting_down = shutdown.cancelled();
        tokio::pin!(shutting_down);
        loop {
            let (wake_at, grace) = {
                let mut referee = desk.lock();
                if let Some(outcome) = referee.ended.take() {
                    break 'play outcome;
                }
                referee.direct_open = true;
                (referee.wake_at(Instant::now()), referee.grace_end())
            };
            tokio::select! {
                biased;
                _ = &mut shutting_down => return None,
                // A move played directly ended the game: taken at the top of the loop.
                _ = desk.ended.notified() => {}
                input = inbox.recv() => {
                    let input = input?;
                    let step = {
                        let mut referee = desk.lock();
                        if let Some(outcome) = referee.ended.take() {
                            break 'play outcome;
                        }
                        let times = match referee.accept(input) {
                            Handled::Nothing => continue,
                            Handled::Ended(outcome) => break 'play outcome,
                            Handled::Moved(times) => times,
                        };
                        if desk.journal.as_ref().is_some_and(MoveJournal::is_backed_up) {
                            // Waits for the disk below, with the lock let go and the direct
                            // path shut: nothing moves the game on meanwhile.
                            referee.direct_open = false;
                            Err((times, referee.moves.clone(), referee.clocks.remaining_both()))
                        } else {
                            Ok(desk.journal_and_go_on(&mut referee, times))
                        }
                    };
                    let game_over = match step {
                        Ok(game_over) => game_over,
                        Err((times, moves, remaining)) => {
                            if let Some(journal) = &desk.journal {
                                journal.record_last_move(&moves, remaining).await;
                            }
                            desk.lock().go_on(times, &desk.events)
                        }
                    };
                    if let Some(outcome) = game_over {
                        break 'play outcome;
                    }
                }
                _ = sleep_until(wake_at) => {
                    let mut referee = desk.lock();
                    if let Some(outcome) = referee.ended.take() {
                        break 'play outcome;
                    }
                    // The turn may have been written (and its clock started) after the timer
                    // was set, or moves played directly since: then this is not the end yet.
                    let mover = referee.game.turn();
                    let now = Instant::now();
                    referee.look_at_deadline(now);
                    if now < referee.verdict_at(mover) {
                        continue;
                    }
                    if !referee.time_is_up(mover, now) {
                        referee.recheck_at = Some(now + READER_RECHECK);
                        continue;
                    }
                    no_move_by_verdict = true;
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

    let mut referee = desk.lock();
    referee.direct_open = false;
    if outcome.reason == EndReason::Timeout {
        probe::timed_out(
            &referee.spec.match_id,
            referee.moves.len(),
            referee.turn_start(),
            no_move_by_verdict,
        );
    }
    // Who made each move follows from the game (`GameId::mover_of_ply`): not kept.
    let (moves, _, think_ms, lag_ms) = referee.moves.read().columns();
    // Both sides' lines, told apart by their results: the game's move texts are encoded once.
    let end_lines = end_wire_lines(
        &referee.spec.match_id,
        [Side::First, Side::Second].map(|side| BotResult::for_side(outcome.winner, side)),
        outcome.reason,
        &moves,
    );
    for (side, line) in [Side::First, Side::Second].into_iter().zip(&end_lines) {
        referee.send_line(side, line);
    }
    tracing::info!(
        match_id = %referee.spec.match_id,
        result = outcome.result_str(),
        reason = %outcome.reason,
        moves = referee.moves.len(),
        "match ended"
    );
    if desk.events.is_followed_live() {
        // A live view (the web's) keeps the latest finished games' logs for a while.
        referee.moves.shrink_to_fit();
    }
    Some(FinishedGame {
        spec: referee.spec.clone(),
        outcome,
        moves,
        think_ms,
        lag_ms,
        started,
        finished: Local::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameId;
    use crate::protocol::ClockSpec;
    use crate::server::arrival::{ReadProgress, SharedRead};
    use crate::server::link::{outbox, referee_door, LinkClose, OutboxReader, Outgoing};

    const LIMIT: Duration = Duration::from_millis(200);
    const SETTLE: Duration = Duration::from_millis(50);

    /// A Hex match with a 200 ms per-move limit, driven as its connections drive it: moves
    /// through its door (played directly where the referee takes them), the rest through its
    /// inbox.
    struct Harness {
        door: RefereeDoor,
        /// What the referee queued for each side's connection writer.
        lines: [OutboxReader; 2],
        referee: tokio::task::JoinHandle<Option<FinishedGame>>,
    }

    impl Harness {
        fn start() -> Harness {
            Harness::start_reading(None)
        }

        /// As `start`, with the first player's connection reporting its reads to `reading`.
        fn start_reading(reading: Option<Arc<ReadProgress>>) -> Harness {
            Harness::start_with(
                ClockSpec {
                    initial_ms: 60_000,
                    increment_ms: 0,
                    move_limit_ms: Some(u64::try_from(LIMIT.as_millis()).expect("small")),
                },
                reading,
            )
        }

        fn start_with(clock: ClockSpec, reading: Option<Arc<ReadProgress>>) -> Harness {
            let spec = MatchSpec {
                match_id: "t-r1-p1-g1".into(),
                tournament: "t".into(),
                game: GameId::Hex,
                rules: crate::game::normalize_rules(GameId::Hex, &Value::Null)
                    .expect("rules")
                    .into(),
                clock,
                players: ["a".into(), "b".into()],
            };
            let settings = RefereeSettings {
                max_lag: Duration::ZERO,
                reconnect_grace: Duration::from_secs(30),
                timeout_settle: SETTLE,
            };
            let (tx_a, rx_a) = outbox(64, None);
            let (tx_b, rx_b) = outbox(64, None);
            let links = [
                Some(
                    BotLink::new(1, tx_a, LinkClose::new(CancellationToken::new()))
                        .with_read_progress(reading),
                ),
                Some(BotLink::new(
                    2,
                    tx_b,
                    LinkClose::new(CancellationToken::new()),
                )),
            ];
            let (door, rx) = referee_door(8);
            let task_door = door.clone();
            let referee = tokio::spawn(async move {
                run_journaled_match(
                    spec,
                    settings,
                    links,
                    rx,
                    Some(&task_door),
                    CancellationToken::new(),
                    MatchJournaling::default(),
                )
                .await
            });
            Harness {
                door,
                lines: [rx_a, rx_b],
                referee,
            }
        }

        /// Takes `side`'s next queued line without writing it (no write stamp is set).
        async fn next_queued(&mut self, side: Side) -> (Value, Outgoing) {
            let outgoing = self.lines[side.index()].recv().await;
            let message = serde_json::from_str(&outgoing.line).expect("JSON");
            (message, outgoing)
        }

        /// Reads `side`'s lines up to the next one of `kind`, each written (stamped) as it is
        /// read, as a connection's writer would.
        async fn expect(&mut self, side: Side, kind: &str) -> Value {
            loop {
                let (message, outgoing) = self.next_queued(side).await;
                if let Some(written) = &outgoing.written {
                    written.set(Instant::now());
                }
                if message["type"] == kind {
                    return message;
                }
            }
        }

        /// Hands `input` over as a connection does: directly if the referee takes it so,
        /// through the inbox otherwise.
        async fn send(&self, input: RefereeInput) {
            if input.as_move().is_some_and(|mv| self.door.try_direct(mv)) {
                return;
            }
            self.send_to_task(input).await;
        }

        /// Hands `input` to the referee's task through its inbox.
        async fn send_to_task(&self, input: RefereeInput) {
            self.door.send(input).await.expect("referee running");
        }

        /// `side` resigns (the harness gives First connection 1, Second connection 2).
        async fn resign(&self, side: Side) {
            let conn_id = match side {
                Side::First => 1,
                Side::Second => 2,
            };
            self.send(RefereeInput::Resign { side, conn_id }).await;
        }

        async fn first_move(&self, text: &str, received: Instant) {
            self.send(move_received(Side::First, text, received)).await;
        }

        async fn finished(self) -> FinishedGame {
            self.referee.await.expect("task").expect("a finished game")
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_received_in_time_counts_even_when_read_after_the_deadline() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        // The server got to the line 20 ms after the deadline; the kernel had it 1 ms before.
        tokio::time::sleep(LIMIT + Duration::from_millis(20)).await;
        h.first_move("F6", turn_sent + LIMIT - Duration::from_millis(1))
            .await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        let game = h.finished().await;
        assert_eq!(game.outcome.reason, EndReason::Resign);
        assert_eq!(game.think_ms, vec![199]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_clock_starts_when_turn_is_written_not_when_it_is_queued() {
        let mut h = Harness::start();
        let (turn, outgoing) = h.next_queued(Side::First).await;
        assert_eq!(turn["type"], "start");
        let (turn, outgoing_turn) = h.next_queued(Side::First).await;
        drop(outgoing);
        assert_eq!(turn["type"], "turn");
        let written_stamp = outgoing_turn.written.expect("a turn carries a write stamp");
        // The server's writer gets to the line 30 ms late; then the bot thinks 190 ms.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let written = Instant::now();
        written_stamp.set(written);
        tokio::time::sleep(Duration::from_millis(190)).await;
        h.first_move("F6", Instant::now()).await;
        h.expect(Side::Second, "turn").await;
        h.resign(Side::Second).await;
        let game = h.finished().await;
        assert_eq!(game.outcome.reason, EndReason::Resign, "not a timeout");
        assert_eq!(game.think_ms, vec![190]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_write_of_the_previous_turn_does_not_restart_the_current_one() {
        let mut h = Harness::start();
        h.next_queued(Side::First).await;
        // First's turn line is still waiting for its writer when First's move arrives (a bot
        // that answered before reading it).
        let (_, first_turn) = h.next_queued(Side::First).await;
        let first_turn = first_turn.written.expect("stamp");
        first_turn.begin(Instant::now());
        h.first_move("F6", Instant::now()).await;
        let (turn, second_turn) = h.next_queued(Side::Second).await;
        assert_eq!(turn["type"], "start");
        let (turn, second_turn_line) = h.next_queued(Side::Second).await;
        drop(second_turn);
        assert_eq!(turn["type"], "turn");
        second_turn_line.written.expect("stamp").set(Instant::now());
        tokio::time::sleep(Duration::from_millis(30)).await;
        // Now First's old line is written: Second's clock must not start again.
        first_turn.set(Instant::now());
        tokio::time::sleep(Duration::from_millis(160)).await;
        h.send(move_of(Side::Second, "E7")).await;
        h.expect(Side::First, "turn").await;
        h.resign(Side::First).await;
        let game = h.finished().await;
        assert_eq!(game.think_ms, vec![0, 190]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_written_late_moves_the_timeout_back_by_as_much() {
        let mut h = Harness::start();
        h.next_queued(Side::First).await;
        let (_, outgoing_turn) = h.next_queued(Side::First).await;
        let queued = Instant::now();
        tokio::time::sleep(Duration::from_millis(40)).await;
        outgoing_turn.written.expect("stamp").set(Instant::now());
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        assert_eq!(
            Instant::now().duration_since(queued),
            Duration::from_millis(40) + LIMIT + SETTLE
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_that_arrived_before_its_turn_was_written_is_refused_not_applied() {
        let mut h = Harness::start();
        h.next_queued(Side::First).await;
        let (_, first_turn) = h.next_queued(Side::First).await;
        // The bot's move reaches the server while its `turn` still waits for the writer.
        let sent_ahead = Instant::now();
        tokio::time::sleep(Duration::from_millis(5)).await;
        first_turn.written.expect("stamp").set(Instant::now());
        h.first_move("F6", sent_ahead).await;
        let error = h.expect(Side::First, "error").await;
        assert_eq!(error["code"], "not_your_turn", "{error}");
        assert_eq!(error["match"], "t-r1-p1-g1");
        // The same move, sent after the turn was written, is played.
        h.first_move("F6", Instant::now()).await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        let game = h.finished().await;
        assert_eq!(game.moves, vec!["F6".to_string()]);
        assert_eq!(game.think_ms, vec![0]);
    }

    /// A receive stamp turned into an instant can be some microseconds off (see
    /// `ANSWER_ORDER_SLACK`): a move that seems to have arrived just before its turn's writing
    /// began still answers it, and one that seems to by more than the slack does not.
    #[tokio::test(start_paused = true)]
    async fn a_move_stamped_a_few_microseconds_before_its_turn_still_answers_it() {
        let mut h = Harness::start();
        h.next_queued(Side::First).await;
        let (_, first_turn) = h.next_queued(Side::First).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let began = Instant::now();
        first_turn.written.expect("stamp").set(began);
        h.first_move("F6", began - ANSWER_ORDER_SLACK - Duration::from_micros(1))
            .await;
        let error = h.expect(Side::First, "error").await;
        assert_eq!(error["code"], "not_your_turn", "{error}");
        h.first_move("F6", began - ANSWER_ORDER_SLACK).await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        assert_eq!(h.finished().await.moves, vec!["F6".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_naming_another_ply_is_refused_not_applied() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        h.send(RefereeInput::Move {
            side: Side::First,
            conn_id: 1,
            text: "F6".into(),
            ply: Some(1),
            received: Instant::now(),
            shared_read: None,
            read: Instant::now(),
        })
        .await;
        let error = h.expect(Side::First, "error").await;
        assert_eq!(error["code"], "not_your_turn", "{error}");
        h.send(RefereeInput::Move {
            side: Side::First,
            conn_id: 1,
            text: "E7".into(),
            ply: Some(0),
            received: Instant::now(),
            shared_read: None,
            read: Instant::now(),
        })
        .await;
        h.expect(Side::Second, "turn").await;
        h.resign(Side::Second).await;
        assert_eq!(h.finished().await.moves, vec!["E7".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_received_after_the_deadline_loses_on_time_at_once() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        tokio::time::sleep(LIMIT + Duration::from_millis(10)).await;
        h.first_move("F6", turn_sent + LIMIT + Duration::from_millis(1))
            .await;
        let end = h.expect(Side::First, "end").await;
        assert_eq!(
            (end["result"].as_str(), end["reason"].as_str()),
            (Some("loss"), Some("timeout"))
        );
        assert!(
            Instant::now() < turn_sent + LIMIT + SETTLE,
            "no wait for a late move"
        );
        assert_eq!(h.finished().await.moves, Vec::<String>::new());
    }

    /// A connected socket pair whose accepting side holds `unread` bytes nobody reads, and the
    /// progress of a reader of it said to have taken `consumed` bytes already (the client
    /// socket is returned to keep the connection open).
    fn socket_holding(
        unread: usize,
        consumed: u64,
    ) -> (std::net::TcpStream, std::net::TcpStream, Arc<ReadProgress>) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        client.write_all(&vec![b'x'; unread]).expect("write");
        let progress = Arc::new(ReadProgress::of_socket_read_to(
            server.as_raw_fd(),
            consumed,
        ));
        let all = consumed + u64::try_from(unread).expect("small");
        for _ in 0..400 {
            if progress.look().map(|l| l.received_bytes) == Some(all) {
                return (client, server, progress);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("the bytes never arrived");
    }

    /// The first player's move `text`, its read stamped `received` by the kernel but shared
    /// with later bytes: it ends at `end_byte` of the stream, and came after `after`.
    fn move_sharing_its_read(
        text: &str,
        received: Instant,
        after: Option<Instant>,
        end_byte: u64,
    ) -> RefereeInput {
        RefereeInput::Move {
            side: Side::First,
            conn_id: 1,
            text: text.into(),
            ply: None,
            received,
            shared_read: Some(SharedRead { after, end_byte }),
            read: Instant::now(),
        }
    }

    /// A match of `reading`'s first player (see `Harness::start_reading`), past its deadline:
    /// once the referee has had its look at the deadline, the first player's move `F6` comes,
    /// its line ending at `end_byte` of the stream, read together with later bytes whose
    /// arrival `stamped_late` after the deadline is the read's stamp, after the socket was last
    /// found empty `empty_after_turn` after the `turn`.
    async fn move_past_the_deadline_sharing_its_read(
        reading: Option<Arc<ReadProgress>>,
        stamped_late: Duration,
        empty_after_turn: Duration,
        end_byte: u64,
    ) -> Harness {
        let mut h = Harness::start_reading(reading);
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        tokio::time::sleep(LIMIT + stamped_late + Duration::from_millis(1)).await;
        h.send(move_sharing_its_read(
            "F6",
            turn_sent + LIMIT + stamped_late,
            Some(turn_sent + empty_after_turn),
            end_byte,
        ))
        .await;
        h
    }

    #[cfg(target_os = "linux")]
    #[tokio::test(start_paused = true)]
    async fn a_move_waiting_in_the_socket_at_the_deadline_is_in_time_though_its_read_was_stamped_later(
    ) {
        // 100 bytes read, 10 waiting: the move's line ends at byte 105.
        let (_client, _server, reading) = socket_holding(10, 100);
        let mut h = move_past_the_deadline_sharing_its_read(
            Some(reading),
            Duration::from_millis(4),
            Duration::from_millis(1),
            105,
        )
        .await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        let game = h.finished().await;
        assert_eq!(game.outcome.reason, EndReason::Resign);
        assert_eq!(game.think_ms, vec![200], "charged all its time, no more");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test(start_paused = true)]
    async fn a_move_not_yet_in_the_socket_at_the_deadline_is_late_whatever_shared_its_read() {
        let (_client, _server, reading) = socket_holding(10, 100);
        // The line ends beyond the 110 bytes the socket had received at the deadline.
        let mut h = move_past_the_deadline_sharing_its_read(
            Some(reading),
            Duration::from_millis(4),
            Duration::from_millis(1),
            115,
        )
        .await;
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        assert_eq!(h.finished().await.moves, Vec::<String>::new());
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_after_the_socket_was_found_empty_past_the_deadline_is_late() {
        let mut h = move_past_the_deadline_sharing_its_read(
            None,
            Duration::from_millis(5),
            LIMIT + Duration::from_millis(1),
            50,
        )
        .await;
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_sharing_its_read_counts_in_time_when_nothing_shows_it_came_late() {
        // No reader's count to look at: only the stamp of the later bytes speaks against it.
        let mut h = move_past_the_deadline_sharing_its_read(
            None,
            Duration::from_millis(5),
            Duration::ZERO,
            50,
        )
        .await;
        h.expect(Side::Second, "turn").await;
        h.resign(Side::Second).await;
        assert_eq!(h.finished().await.think_ms, vec![200]);
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_move_the_loss_is_declared_when_the_settle_window_closes() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        assert_eq!(Instant::now().duration_since(turn_sent), LIMIT + SETTLE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_loss_on_time_waits_until_the_movers_reader_has_read_past_the_deadline() {
        let reading = Arc::new(ReadProgress::default());
        let mut h = Harness::start_reading(Some(reading.clone()));
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        reading.drained_at(turn_sent);
        // The settle window closes, but the busy server has not read the socket since before
        // the deadline: no verdict yet.
        tokio::time::sleep(LIMIT + SETTLE + Duration::from_millis(100)).await;
        assert!(h.lines[0].is_empty(), "no end while the reader is behind");
        // The reader gets to it: a move the kernel received before the deadline.
        reading.drained_at(Instant::now());
        h.first_move("F6", turn_sent + LIMIT - Duration::from_millis(2))
            .await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        let game = h.finished().await;
        assert_eq!(game.outcome.reason, EndReason::Resign);
        assert_eq!(game.think_ms, vec![198]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_that_never_catches_up_is_waited_for_a_bounded_time() {
        let reading = Arc::new(ReadProgress::default());
        let mut h = Harness::start_reading(Some(reading.clone()));
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        let waited = Instant::now().duration_since(turn_sent);
        assert!(
            waited >= LIMIT + SETTLE + READER_WAIT_MAX
                && waited <= LIMIT + SETTLE + READER_WAIT_MAX + READER_RECHECK,
            "declared after {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_that_has_read_past_the_deadline_lets_the_verdict_come_on_time() {
        let reading = Arc::new(ReadProgress::default());
        let mut h = Harness::start_reading(Some(reading.clone()));
        h.expect(Side::First, "turn").await;
        let turn_sent = Instant::now();
        tokio::time::sleep(LIMIT + Duration::from_millis(10)).await;
        reading.drained_at(Instant::now());
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        assert_eq!(Instant::now().duration_since(turn_sent), LIMIT + SETTLE);
    }

    #[tokio::test(start_paused = true)]
    async fn the_waiting_side_cannot_resign_after_the_movers_time_ran_out() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        tokio::time::sleep(LIMIT + Duration::from_millis(5)).await;
        h.resign(Side::Second).await;
        let end = h.expect(Side::Second, "end").await;
        assert_eq!(
            (end["result"].as_str(), end["reason"].as_str()),
            (Some("win"), Some("timeout"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_mover_resigning_after_its_deadline_has_lost_on_time() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        tokio::time::sleep(LIMIT + Duration::from_millis(5)).await;
        h.resign(Side::First).await;
        assert_eq!(h.finished().await.outcome.reason, EndReason::Timeout);
    }

    /// `side`'s move `text`, received and read now (the harness gives First connection 1,
    /// Second connection 2).
    fn move_of(side: Side, text: &str) -> RefereeInput {
        move_received(side, text, Instant::now())
    }

    /// `side`'s move `text` as a connection offers it to the direct path, received and read
    /// now.
    fn direct_move(side: Side, text: &str) -> MoveInput<'_> {
        let now = Instant::now();
        MoveInput {
            side,
            conn_id: match side {
                Side::First => 1,
                Side::Second => 2,
            },
            text,
            ply: None,
            received: now,
            shared_read: None,
            read: now,
        }
    }

    /// `side`'s move `text`, received by the kernel at `received` and read now.
    fn move_received(side: Side, text: &str, received: Instant) -> RefereeInput {
        RefereeInput::Move {
            side,
            conn_id: match side {
                Side::First => 1,
                Side::Second => 2,
            },
            text: text.into(),
            ply: None,
            received,
            shared_read: None,
            read: Instant::now(),
        }
    }

    /// Lets the referee's task run until it waits (it opens the direct path there).
    async fn let_the_task_settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_played_directly_reaches_the_opponent_before_the_call_returns() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let_the_task_settle().await;
        let taken = h.door.try_direct(direct_move(Side::First, "F6"));
        assert!(taken, "the referee takes a move directly while it waits");
        // No await since: the opponent's turn was queued on this task.
        let mut queued = Vec::new();
        while let Some(outgoing) = h.lines[1].try_recv() {
            if let Some(written) = &outgoing.written {
                written.set(Instant::now());
            }
            let message: Value = serde_json::from_str(&outgoing.line).expect("JSON");
            queued.push(message);
        }
        let turn = queued
            .iter()
            .find(|m| m["type"] == "turn")
            .expect("turn queued");
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        assert_eq!(h.finished().await.moves, vec!["F6".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_is_not_taken_directly_past_an_input_waiting_in_the_inbox() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let_the_task_settle().await;
        // An input waits in the inbox (the task has not run since): a move taken directly now
        // would overtake it, so it is not taken; it follows through the inbox.
        h.door
            .try_send(move_of(Side::Second, "E7"))
            .expect("room in the inbox");
        assert!(!h.door.try_direct(direct_move(Side::First, "F6")));
        h.send_to_task(direct_move(Side::First, "F6").to_owned_input())
            .await;
        let turn = h.expect(Side::Second, "turn").await;
        assert_eq!(turn["moves"], serde_json::json!(["F6"]));
        h.resign(Side::Second).await;
        assert_eq!(h.finished().await.moves, vec!["F6".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_illegal_move_played_directly_ends_the_match() {
        let mut h = Harness::start();
        h.expect(Side::First, "turn").await;
        let_the_task_settle().await;
        assert!(h.door.try_direct(direct_move(Side::First, "F6")));
        h.expect(Side::Second, "turn").await;
        // F6 is taken.
        assert!(h.door.try_direct(direct_move(Side::Second, "F6")));
        let end = h.expect(Side::Second, "end").await;
        assert_eq!(
            (end["result"].as_str(), end["reason"].as_str()),
            (Some("loss"), Some("illegal_move"))
        );
        let door = h.door.clone();
        let game = h.finished().await;
        assert_eq!(game.outcome.reason, EndReason::IllegalMove);
        // The match is over: a later move is not taken, for the inbox to refuse.
        assert!(!door.try_direct(direct_move(Side::First, "E7")));
    }

    #[tokio::test(start_paused = true)]
    async fn after_moves_played_directly_a_side_with_less_time_still_loses_on_time_when_due() {
        // No per-move limit: First spends 800 of its 1,000 ms (its move taken by the task,
        // which then sleeps through Second's turn), then Second answers at once, directly.
        // The task must still declare First's loss 200 ms (plus the settle window) after
        // First's next turn, not when Second's 1,000 ms would have run out.
        let clock = ClockSpec {
            initial_ms: 1_000,
            increment_ms: 0,
            move_limit_ms: None,
        };
        let mut h = Harness::start_with(clock, None);
        h.expect(Side::First, "turn").await;
        tokio::time::sleep(Duration::from_millis(800)).await;
        h.send_to_task(move_of(Side::First, "F6")).await;
        h.expect(Side::Second, "turn").await;
        let_the_task_settle().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            h.door.try_direct(direct_move(Side::Second, "E7")),
            "played directly"
        );
        let first_turn = Instant::now();
        let end = h.expect(Side::First, "end").await;
        assert_eq!(end["reason"], "timeout");
        assert_eq!(
            Instant::now().duration_since(first_turn),
            Duration::from_millis(200) + SETTLE
        );
    }
}

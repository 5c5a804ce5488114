//! The game-agnostic rules interface: the `Rules` trait every game implements, the shared
//! vocabulary (sides, outcomes, end reasons, errors), and the one place that dispatches on a game id.
//!
//! Everything under `src/game/` is pure: no I/O, no clocks, no randomness, no tokio.

pub mod connect6;
pub mod coord;
pub mod hex;
pub mod jiu;
pub mod position_text;
pub mod surakarta;
#[cfg(test)]
pub(crate) mod test_support;

use std::fmt;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use coord::Point;

/// The four games, by their protocol id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GameId {
    Connect6,
    Hex,
    Surakarta,
    Jiu,
}

impl GameId {
    pub const ALL: [GameId; 4] = [
        GameId::Connect6,
        GameId::Hex,
        GameId::Surakarta,
        GameId::Jiu,
    ];

    /// The per-game entry points: the one place that dispatches on a game id. Everything else
    /// about a game is on its `Rules` implementation.
    fn entry(self) -> &'static GameEntry {
        static CONNECT6: GameEntry = GameEntry::of::<connect6::Connect6>();
        static HEX: GameEntry = GameEntry::of::<hex::Hex>();
        static SURAKARTA: GameEntry = GameEntry::of::<surakarta::Surakarta>();
        static JIU: GameEntry = GameEntry::of::<jiu::Jiu>();
        match self {
            GameId::Connect6 => &CONNECT6,
            GameId::Hex => &HEX,
            GameId::Surakarta => &SURAKARTA,
            GameId::Jiu => &JIU,
        }
    }

    /// The protocol id: `connect6`, `hex`, `surakarta`, `jiu` (`Rules::ID`).
    pub fn as_str(self) -> &'static str {
        self.entry().id
    }

    /// The contest record code: `C6`, `HEX`, `SUR`, `JIU` (`Rules::RECORD_CODE`).
    pub fn record_code(self) -> &'static str {
        self.entry().record_code
    }

    /// The game whose record code is `code` (case-insensitive).
    pub fn from_record_code(code: &str) -> Option<GameId> {
        GameId::ALL
            .into_iter()
            .find(|g| g.record_code().eq_ignore_ascii_case(code))
    }

    /// The colour letter of a side in protocol messages and records
    /// (Connect6 B/W, Hex R/B, Surakarta B/W, Jiu W/B; `Rules::COLOURS`).
    pub fn colour_letter(self, side: Side) -> char {
        self.entry().colours[side.index()]
    }

    /// Points (or cells) along one side of the board (`Rules::BOARD_SIZE`).
    pub fn board_size(self) -> u8 {
        self.entry().board_size
    }

    /// How the web view draws the board (`Rules::BOARD_DRAWING`).
    pub fn board_drawing(self) -> BoardDrawing {
        self.entry().board_drawing
    }

    /// The colour of each side's stones (`Rules::STONE_COLOURS`).
    pub fn stone_colour(self, side: Side) -> StoneColour {
        self.entry().stone_colours[side.index()]
    }

    /// The points a board marks with a dot, as point names (`Rules::STAR_POINTS`).
    pub fn star_points(self) -> &'static [&'static str] {
        self.entry().star_points
    }

    /// The side that makes move number `ply` (1-based) of a game from the start position
    /// (`Rules::mover_of_ply`).
    pub fn mover_of_ply(self, ply: usize) -> Side {
        (self.entry().mover_of_ply)(ply)
    }

    /// Stones one turn may place (`Rules::STONES_PER_TURN`: 2 for Connect6, else 1); a record
    /// writes each stone as its own token.
    pub fn stones_per_turn(self) -> usize {
        self.entry().stones_per_turn
    }

    /// Moves in each built-in opening (`Rules::BUILTIN_OPENING_PLIES`).
    pub fn builtin_opening_plies(self) -> usize {
        self.entry().builtin_opening_plies
    }

    /// Whether the built-in opening sets may play the move `text` (`Rules::builtin_opening_move`;
    /// false for a text that is not a move).
    pub fn builtin_opening_move(self, text: &str) -> bool {
        (self.entry().builtin_opening_move)(text)
    }

    /// The rule options a game with these moves must have been played under
    /// (`Rules::rules_required_by`), `null` when the moves imply none.
    pub fn rules_required_by(self, moves: &[String]) -> serde_json::Value {
        (self.entry().rules_required_by)(moves)
    }

    /// The side whose colour letter is `letter` (case-insensitive) in this game.
    pub fn side_of_colour(self, letter: char) -> Option<Side> {
        let letter = letter.to_ascii_uppercase();
        [Side::First, Side::Second]
            .into_iter()
            .find(|&s| self.colour_letter(s) == letter)
    }
}

/// How a board is drawn: the web view has one drawing function for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardDrawing {
    /// A square grid of lines; stones stand on the intersections (Connect6, Jiu).
    Lines,
    /// A square grid of lines with Surakarta's two circuits of corner loops.
    Circuits,
    /// A rhombus of hexagonal cells, each side's two edges in its colour (Hex).
    Hexagons,
}

/// The colour of a side's stones, by name (the web view picks the paint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoneColour {
    Black,
    White,
    Red,
    Blue,
}

/// One game's facts and constructors, taken from its `Rules` implementation.
struct GameEntry {
    id: &'static str,
    record_code: &'static str,
    colours: [char; 2],
    board_size: u8,
    board_drawing: BoardDrawing,
    stone_colours: [StoneColour; 2],
    star_points: &'static [&'static str],
    mover_of_ply: fn(usize) -> Side,
    stones_per_turn: usize,
    builtin_opening_plies: usize,
    builtin_opening_move: fn(&str) -> bool,
    rules_required_by: fn(&[String]) -> serde_json::Value,
    start: StartFn,
    from_text: FromTextFn,
}

/// Builds a game's start position from its rule options.
type StartFn = fn(&serde_json::Value) -> Result<Box<dyn AnyGame>, OptionsError>;
/// Reads a game's position text under its rule options.
type FromTextFn = fn(&str, &serde_json::Value) -> Result<Box<dyn AnyGame>, NewGameError>;

impl GameEntry {
    const fn of<R: Rules>() -> GameEntry {
        GameEntry {
            id: R::ID,
            record_code: R::RECORD_CODE,
            colours: R::COLOURS,
            board_size: R::BOARD_SIZE,
            board_drawing: R::BOARD_DRAWING,
            stone_colours: R::STONE_COLOURS,
            star_points: R::STAR_POINTS,
            mover_of_ply: R::mover_of_ply,
            stones_per_turn: R::STONES_PER_TURN,
            builtin_opening_plies: R::BUILTIN_OPENING_PLIES,
            builtin_opening_move: builtin_opening_text::<R>,
            rules_required_by: R::rules_required_by,
            start: boxed::<R>,
            from_text: boxed_from_text::<R>,
        }
    }
}

/// `Rules::builtin_opening_move` of a move text.
fn builtin_opening_text<R: Rules>(text: &str) -> bool {
    R::parse_move(text).is_ok_and(|mv| R::builtin_opening_move(&mv))
}

/// Sides alternate, first side first: the first side makes the odd plies (1-based).
pub fn alternating_mover(ply: usize) -> Side {
    if ply % 2 == 1 {
        Side::First
    } else {
        Side::Second
    }
}

impl fmt::Display for GameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Written and read as the protocol id (`"hex"`).
impl Serialize for GameId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for GameId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_deserialized(deserializer)
    }
}

/// Reads a string and parses it with `FromStr` (the serde form of ids and reasons).
fn parse_deserialized<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

/// A game id that names none of the four games.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown game {0:?} (expected connect6, hex, surakarta or jiu)")]
pub struct UnknownGameError(pub String);

impl FromStr for GameId {
    type Err = UnknownGameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GameId::ALL
            .into_iter()
            .find(|g| g.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownGameError(s.to_string()))
    }
}

/// `First` makes the first move of the game; `Second` is the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    First,
    Second,
}

impl Side {
    pub fn opponent(self) -> Side {
        match self {
            Side::First => Side::Second,
            Side::Second => Side::First,
        }
    }

    /// `first` or `second`, as in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::First => "first",
            Side::Second => "second",
        }
    }

    /// 0 for `First`, 1 for `Second`: an index into per-side arrays.
    pub fn index(self) -> usize {
        match self {
            Side::First => 0,
            Side::Second => 1,
        }
    }

    /// The position-text character: `x` for the first side, `o` for the second.
    pub fn position_char(self) -> char {
        match self {
            Side::First => 'x',
            Side::Second => 'o',
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a game ended. Every game end has exactly one reason; the strings are the protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    SixInRow,
    Connection,
    NoPieces,
    FewStones,
    NoMoves,
    MoveLimit,
    BoardFull,
    Timeout,
    IllegalMove,
    Resign,
    Disconnect,
    Forfeit,
    /// The game was stopped before it ended, with no winner: `arena check-engine` stops its
    /// test games after a fixed number of plies and tells the engine so. No league game ends
    /// this way.
    Stopped,
}

impl EndReason {
    pub const ALL: [EndReason; 13] = [
        EndReason::SixInRow,
        EndReason::Connection,
        EndReason::NoPieces,
        EndReason::FewStones,
        EndReason::NoMoves,
        EndReason::MoveLimit,
        EndReason::BoardFull,
        EndReason::Timeout,
        EndReason::IllegalMove,
        EndReason::Resign,
        EndReason::Disconnect,
        EndReason::Forfeit,
        EndReason::Stopped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::SixInRow => "six_in_row",
            EndReason::Connection => "connection",
            EndReason::NoPieces => "no_pieces",
            EndReason::FewStones => "few_stones",
            EndReason::NoMoves => "no_moves",
            EndReason::MoveLimit => "move_limit",
            EndReason::BoardFull => "board_full",
            EndReason::Timeout => "timeout",
            EndReason::IllegalMove => "illegal_move",
            EndReason::Resign => "resign",
            EndReason::Disconnect => "disconnect",
            EndReason::Forfeit => "forfeit",
            EndReason::Stopped => "stopped",
        }
    }

    /// True for the reasons the rules themselves produce (as opposed to clocks, bots or the referee).
    pub fn is_board_result(self) -> bool {
        matches!(
            self,
            EndReason::SixInRow
                | EndReason::Connection
                | EndReason::NoPieces
                | EndReason::FewStones
                | EndReason::NoMoves
                | EndReason::MoveLimit
                | EndReason::BoardFull
        )
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ordered by name, as tables and maps keyed by reason list them.
impl Ord for EndReason {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for EndReason {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for EndReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EndReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown end reason {s:?}"))
    }
}

/// Written and read as the protocol string (`"resign"`).
impl Serialize for EndReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_deserialized(deserializer)
    }
}

/// How a game ended: the winner (`None` for a draw) and the one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    pub winner: Option<Side>,
    pub reason: EndReason,
}

impl Outcome {
    pub fn win(side: Side, reason: EndReason) -> Outcome {
        Outcome {
            winner: Some(side),
            reason,
        }
    }

    pub fn draw(reason: EndReason) -> Outcome {
        Outcome {
            winner: None,
            reason,
        }
    }

    /// `first`, `second` or `draw`.
    pub fn result_str(&self) -> &'static str {
        match self.winner {
            Some(side) => side.as_str(),
            None => "draw",
        }
    }
}

/// Move text that is not a well-formed move of the game (parse step, before legality).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad move text {text:?}: {what} (at character {at})")]
pub struct ParseMoveError {
    /// The text as given.
    pub text: String,
    /// What is wrong, e.g. "expected a row number 1-19".
    pub what: String,
    /// 1-based character position where the problem was found.
    pub at: usize,
}

impl ParseMoveError {
    pub fn new(text: &str, at: usize, what: impl Into<String>) -> ParseMoveError {
        ParseMoveError {
            text: text.to_string(),
            what: what.into(),
            at,
        }
    }
}

/// Position text that cannot be read (see docs/rules.md, "Position text").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad position text: {what} (at character {at})")]
pub struct ParsePositionError {
    pub what: String,
    /// 1-based character position where the problem was found.
    pub at: usize,
}

impl ParsePositionError {
    pub fn new(at: usize, what: impl Into<String>) -> ParsePositionError {
        ParsePositionError {
            what: what.into(),
            at,
        }
    }
}

/// A rule-option table that names an unknown option or gives a bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rules for {game}: {message}")]
pub struct OptionsError {
    pub game: GameId,
    /// Names the option, e.g. "swap: invalid type: string \"yes\", expected a boolean".
    pub message: String,
}

/// The rules of one game. Implementations are pure values: cloning a position is cheap and
/// nothing here does I/O.
pub trait Rules: Clone + Send + Sync + fmt::Debug + 'static {
    /// One complete turn of the side to move (a Connect6 turn places all its stones).
    type Move: Clone + PartialEq + Eq + std::hash::Hash + fmt::Debug + fmt::Display + Send + Sync;
    /// The rule options of docs/rules.md, with their defaults from `Default`. Deserialising must
    /// refuse unknown fields.
    type Options: Clone
        + Default
        + PartialEq
        + fmt::Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync;
    /// Why a well-formed move is not legal here.
    type Illegal: std::error::Error + Clone + PartialEq + Send + Sync + 'static;

    const GAME: GameId;
    /// The protocol id (`connect6`, `hex`, ...).
    const ID: &'static str;
    /// The contest record code (`C6`, `HEX`, ...).
    const RECORD_CODE: &'static str;
    /// The colour letters of the first and the second side in protocol messages and records.
    const COLOURS: [char; 2];
    /// Points (or cells) along one side of the square or rhombic board.
    const BOARD_SIZE: u8;
    /// How the web view draws the board.
    const BOARD_DRAWING: BoardDrawing;
    /// The colours of the first and the second side's stones.
    const STONE_COLOURS: [StoneColour; 2];
    /// Points the board marks with a dot (Connect6's star points), as point names.
    const STAR_POINTS: &'static [&'static str] = &[];

    /// The side that makes move number `ply` (1-based) of a game from the start position.
    /// By default sides alternate, first side first.
    fn mover_of_ply(ply: usize) -> Side {
        alternating_mover(ply)
    }
    /// Stones one turn may place; move text joins them with `,` (Connect6: 2).
    const STONES_PER_TURN: usize = 1;
    /// Moves in each opening of the built-in opening sets (`arena match`).
    const BUILTIN_OPENING_PLIES: usize;
    /// Whether the built-in opening sets may play `mv` (their random walks keep to moves a
    /// contest opening would have); every move by default.
    fn builtin_opening_move(_mv: &Self::Move) -> bool {
        true
    }
    /// The rule options that a game with these moves (texts) must have been played under, for
    /// reading records that do not state their options; `null` by default (Hex: `swap` on when a
    /// move is `swap`).
    fn rules_required_by(_moves: &[String]) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The start position.
    fn start(options: &Self::Options) -> Self;
    /// The options this position is played under.
    fn options(&self) -> &Self::Options;

    /// Reads position text (docs/rules.md).
    fn from_position_text(text: &str, options: &Self::Options) -> Result<Self, ParsePositionError>;
    /// Writes position text; `from_position_text` reads it back to an equal position.
    fn position_text(&self) -> String;

    /// Reads move text, case-insensitively. Syntax only: legality is `check_move`'s job.
    fn parse_move(text: &str) -> Result<Self::Move, ParseMoveError>;

    /// The side to move.
    fn turn(&self) -> Side;
    /// The result if the game is over.
    fn outcome(&self) -> Option<Outcome>;

    /// Appends every legal move to `out` (nothing when the game is over). Each move once.
    fn legal_moves(&self, out: &mut Vec<Self::Move>);
    /// Whether `mv` is legal here, and if not, why.
    fn check_move(&self, mv: &Self::Move) -> Result<(), Self::Illegal>;
    /// Plays a move known to be legal. Behaviour for an illegal move is unspecified but must not
    /// be undefined (it may panic in debug builds).
    fn play_unchecked(&mut self, mv: &Self::Move);

    /// The move as records and the move list keep it once played. By default the move itself;
    /// Connect6 drops a pair's second stone when the first stone already wins.
    fn recorded_move(&self, mv: &Self::Move) -> Self::Move {
        mv.clone()
    }

    fn is_legal(&self, mv: &Self::Move) -> bool {
        self.check_move(mv).is_ok()
    }

    /// Checks then plays a move.
    fn play(&mut self, mv: &Self::Move) -> Result<(), Self::Illegal> {
        self.check_move(mv)?;
        self.play_unchecked(mv);
        Ok(())
    }

    /// The lines the `arena moves` tool prints for this position (docs/rules.md): by default every
    /// legal move's text. Connect6 lists the empty points; Jiu lists square captures with `+?`.
    fn move_listing(&self) -> Vec<String> {
        self.legal_move_texts()
    }

    /// The text of every legal move, in `legal_moves` order.
    fn legal_move_texts(&self) -> Vec<String> {
        let mut moves = Vec::new();
        self.legal_moves(&mut moves);
        moves.iter().map(|m| m.to_string()).collect()
    }

    /// The moves a person picks among in the web view (it builds a move from them by
    /// clicking), each listed once: `move_listing` by default; Jiu lists a move that forms
    /// squares once, with how many enemy stones it removes and which may be chosen. Stops with
    /// an error once the entries plus their removable stones pass `budget`, so that the work is
    /// bounded whatever the position.
    fn move_choices(&self, budget: usize) -> Result<Vec<MoveChoice>, ListingTooLarge> {
        let listing = self.move_listing();
        if listing.len() > budget {
            return Err(ListingTooLarge { budget });
        }
        Ok(listing.into_iter().map(MoveChoice::plain).collect())
    }

    /// A rough static score of this position for `side` (higher is better) from material,
    /// lines or connection distance, for baseline engines. It never decides a game.
    fn heuristic(&self, side: Side) -> i64;

    /// Whether `mv` lies close to the play so far; engines that cannot afford every move try
    /// these. By default every move does (Connect6: stones near a stone already down).
    fn is_local(&self, _mv: &Self::Move) -> bool {
        true
    }

    /// The moves a simple engine chooses among: by default every legal move. A game whose
    /// moves carry combinatorial choices (Jiu's square victims) fills each choice with
    /// `pick(n)`, an index below `n`, so the list stays short. Every returned move is legal.
    fn sample_moves(&self, _pick: &mut dyn FnMut(usize) -> usize) -> Vec<Self::Move> {
        let mut moves = Vec::new();
        self.legal_moves(&mut moves);
        moves
    }

    /// Number of leaf positions `depth` plies below this one, counted in bulk at the last ply.
    fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let mut moves = Vec::new();
        self.legal_moves(&mut moves);
        if depth == 1 {
            return moves.len() as u64;
        }
        moves
            .iter()
            .map(|mv| {
                let mut child = self.clone();
                child.play_unchecked(mv);
                child.perft(depth - 1)
            })
            .sum()
    }
}

/// Reads a rule-option table (JSON; TOML tables convert to it) into a game's typed options.
/// An unknown option or a bad value is an error naming it. `null` means all defaults.
pub fn parse_options<R: Rules>(value: &serde_json::Value) -> Result<R::Options, OptionsError> {
    if value.is_null() {
        return Ok(R::Options::default());
    }
    serde_path_to_error::deserialize(value.clone()).map_err(|e| OptionsError {
        game: R::GAME,
        message: if e.path().to_string() == "." {
            e.inner().to_string()
        } else {
            format!("{}: {}", e.path(), e.inner())
        },
    })
}

/// One entry of the web view's move list (`Rules::move_choices`): a move, and for a move that
/// removes stones of the mover's choosing (Jiu's square victims), how many and among which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveChoice {
    /// The move text, without the stones it removes.
    pub text: String,
    /// How many stones the mover names after `text` (`+B3` each); 0 for most moves.
    pub remove: usize,
    /// The stones it may name, in canonical order (empty when `remove` is 0).
    pub removable: Vec<Point>,
}

impl MoveChoice {
    /// A move with nothing left to choose.
    pub fn plain(text: String) -> MoveChoice {
        MoveChoice {
            text,
            remove: 0,
            removable: Vec::new(),
        }
    }

    /// How many complete moves this entry stands for: one per choice of `remove` stones among
    /// `removable` (saturating).
    pub fn complete_moves(&self) -> u64 {
        let n = self.removable.len() as u128;
        let k = self.remove.min(self.removable.len()) as u128;
        let mut count: u128 = 1;
        for i in 0..k {
            count = count * (n - i) / (i + 1);
            if count > u128::from(u64::MAX) {
                return u64::MAX;
            }
        }
        u64::try_from(count).unwrap_or(u64::MAX)
    }
}

/// A move listing that would pass its budget (`Rules::move_choices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the position has more moves to list than the limit of {budget} entries and stones")]
pub struct ListingTooLarge {
    pub budget: usize,
}

/// Why a move text cannot be played: it does not parse, or it is not legal here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    #[error(transparent)]
    Parse(#[from] ParseMoveError),
    #[error("illegal move {text:?}: {why}")]
    Illegal { text: String, why: String },
}

/// A game of any of the four kinds, driven by move text. This is what the referee, the tools and
/// the records use; engines use the concrete `Rules` types. Every `Rules` type is an `AnyGame`.
pub trait AnyGame: Send + Sync + fmt::Debug {
    fn game(&self) -> GameId;
    fn turn(&self) -> Side;
    fn outcome(&self) -> Option<Outcome>;
    /// Every rule option in force, defaults included (the protocol's `start.rules`).
    fn rules_json(&self) -> serde_json::Value;
    fn position_text(&self) -> String;
    /// Parses and checks a move without playing it; returns its canonical (upper-case) text.
    fn check_text(&self, text: &str) -> Result<String, PlayError>;
    /// Parses, checks and plays a move; returns its canonical text as records keep it
    /// (see `Rules::recorded_move`).
    fn play_text(&mut self, text: &str) -> Result<String, PlayError>;
    /// [`AnyGame::play_text`] writing the canonical text into `recorded` (emptied first): a
    /// caller that plays many moves keeps one buffer instead of allocating a string per move.
    fn play_text_into(&mut self, text: &str, recorded: &mut String) -> Result<(), PlayError>;
    /// What `arena moves` prints for this position.
    fn move_listing(&self) -> Vec<String>;
    /// `Rules::move_choices`: what the web view offers a person to click.
    fn move_choices(&self, budget: usize) -> Result<Vec<MoveChoice>, ListingTooLarge>;
    /// The text of every legal move, in `Rules::legal_moves` order.
    fn legal_move_texts(&self) -> Vec<String>;
    fn perft(&self, depth: u32) -> u64;
    /// `Rules::heuristic`.
    fn heuristic(&self, side: Side) -> i64;
    /// `Rules::is_local` of a move text (false if it does not parse).
    fn is_local_text(&self, text: &str) -> bool;
    /// The texts of `Rules::sample_moves`.
    fn sample_move_texts(&self, pick: &mut dyn FnMut(usize) -> usize) -> Vec<String>;
    fn clone_box(&self) -> Box<dyn AnyGame>;
}

impl<R: Rules> AnyGame for R {
    fn game(&self) -> GameId {
        R::GAME
    }
    fn turn(&self) -> Side {
        Rules::turn(self)
    }
    fn outcome(&self) -> Option<Outcome> {
        Rules::outcome(self)
    }
    fn rules_json(&self) -> serde_json::Value {
        serde_json::to_value(self.options()).unwrap_or(serde_json::Value::Null)
    }
    fn position_text(&self) -> String {
        Rules::position_text(self)
    }
    fn check_text(&self, text: &str) -> Result<String, PlayError> {
        let mv = R::parse_move(text)?;
        self.check_move(&mv).map_err(|e| PlayError::Illegal {
            text: text.to_string(),
            why: e.to_string(),
        })?;
        Ok(mv.to_string())
    }
    fn play_text(&mut self, text: &str) -> Result<String, PlayError> {
        let mut recorded = String::new();
        self.play_text_into(text, &mut recorded)?;
        Ok(recorded)
    }
    fn play_text_into(&mut self, text: &str, recorded: &mut String) -> Result<(), PlayError> {
        use std::fmt::Write;
        let mv = R::parse_move(text)?;
        self.check_move(&mv).map_err(|e| PlayError::Illegal {
            text: text.to_string(),
            why: e.to_string(),
        })?;
        recorded.clear();
        // Writing into a string cannot fail.
        let _ = write!(recorded, "{}", self.recorded_move(&mv));
        self.play_unchecked(&mv);
        Ok(())
    }
    fn move_listing(&self) -> Vec<String> {
        Rules::move_listing(self)
    }
    fn move_choices(&self, budget: usize) -> Result<Vec<MoveChoice>, ListingTooLarge> {
        Rules::move_choices(self, budget)
    }
    fn legal_move_texts(&self) -> Vec<String> {
        Rules::legal_move_texts(self)
    }
    fn perft(&self, depth: u32) -> u64 {
        Rules::perft(self, depth)
    }
    fn heuristic(&self, side: Side) -> i64 {
        Rules::heuristic(self, side)
    }
    fn is_local_text(&self, text: &str) -> bool {
        R::parse_move(text).is_ok_and(|mv| self.is_local(&mv))
    }
    fn sample_move_texts(&self, pick: &mut dyn FnMut(usize) -> usize) -> Vec<String> {
        self.sample_moves(pick)
            .iter()
            .map(|m| m.to_string())
            .collect()
    }
    fn clone_box(&self) -> Box<dyn AnyGame> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn AnyGame> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

fn boxed<R: Rules>(rules: &serde_json::Value) -> Result<Box<dyn AnyGame>, OptionsError> {
    Ok(Box::new(R::start(&parse_options::<R>(rules)?)))
}

fn boxed_from_text<R: Rules>(
    text: &str,
    rules: &serde_json::Value,
) -> Result<Box<dyn AnyGame>, NewGameError> {
    let options = parse_options::<R>(rules)?;
    Ok(Box::new(R::from_position_text(text, &options)?))
}

/// Why a game could not be set up from options and position text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NewGameError {
    #[error(transparent)]
    Options(#[from] OptionsError),
    #[error(transparent)]
    Position(#[from] ParsePositionError),
}

/// The start position of `game` under the rule options `rules` (`null` or `{}` for defaults).
pub fn new_game(game: GameId, rules: &serde_json::Value) -> Result<Box<dyn AnyGame>, OptionsError> {
    (game.entry().start)(rules)
}

/// A position of `game` read from position text.
pub fn game_from_position_text(
    game: GameId,
    text: &str,
    rules: &serde_json::Value,
) -> Result<Box<dyn AnyGame>, NewGameError> {
    (game.entry().from_text)(text, rules)
}

/// Checks a rule-option table for `game` and returns it with every default filled in.
pub fn normalize_rules(
    game: GameId,
    rules: &serde_json::Value,
) -> Result<serde_json::Value, OptionsError> {
    Ok(new_game(game, rules)?.rules_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn game_ids_round_trip() {
        for g in GameId::ALL {
            assert_eq!(g.as_str().parse::<GameId>().unwrap(), g);
            assert_eq!(GameId::from_record_code(g.record_code()), Some(g));
            for side in [Side::First, Side::Second] {
                assert_eq!(g.side_of_colour(g.colour_letter(side)), Some(side));
            }
        }
        assert!("chess".parse::<GameId>().is_err());
    }

    #[test]
    fn mover_of_ply_matches_the_rules() {
        // Play each game by its first legal move and compare who moved with `turn()`.
        for g in GameId::ALL {
            let mut position = new_game(g, &serde_json::Value::Null).unwrap();
            let mut ply = 0;
            while position.outcome().is_none() && ply < 260 {
                ply += 1;
                assert_eq!(g.mover_of_ply(ply), position.turn(), "{g} ply {ply}");
                let mv = position.legal_move_texts().swap_remove(0);
                position.play_text(&mv).unwrap();
            }
            assert!(ply > 0);
        }
    }

    #[test]
    fn playing_into_a_kept_buffer_records_what_play_text_returns() {
        for g in GameId::ALL {
            let mut by_string = new_game(g, &serde_json::Value::Null).unwrap();
            let mut by_buffer = by_string.clone_box();
            // Left over from another move: emptied, not appended to.
            let mut recorded = String::from("leftover text");
            let mut played = 0;
            for ply in 0..40 {
                if by_string.outcome().is_some() {
                    break;
                }
                // The last legal move, in lower case where the game allows it: the canonical
                // text differs from what was sent.
                let mv = by_string.legal_move_texts().pop().unwrap().to_lowercase();
                let expected = by_string.play_text(&mv);
                let got = by_buffer.play_text_into(&mv, &mut recorded);
                assert_eq!(expected.is_ok(), got.is_ok(), "{g} ply {ply} {mv}");
                if let Ok(text) = expected {
                    assert_eq!(recorded, text, "{g} ply {ply}");
                    played += 1;
                }
                assert_eq!(by_buffer.position_text(), by_string.position_text());
            }
            assert!(played >= 10, "{g}: only {played} moves played");
            let before = by_buffer.position_text();
            assert!(by_buffer
                .play_text_into("not a move", &mut recorded)
                .is_err());
            assert_eq!(
                by_buffer.position_text(),
                before,
                "{g}: a refused move changes nothing"
            );
        }
    }

    #[test]
    fn record_facts_come_from_each_game() {
        let moves = |texts: &[&str]| texts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        for g in GameId::ALL {
            let several = g == GameId::Connect6;
            assert_eq!(g.stones_per_turn(), if several { 2 } else { 1 }, "{g}");
            assert_eq!(
                g.rules_required_by(&moves(&["F6"])),
                serde_json::Value::Null
            );
        }
        assert_eq!(
            GameId::Hex.rules_required_by(&moves(&["F6", "swap"])),
            serde_json::json!({"swap": true})
        );
    }

    #[test]
    fn end_reasons_round_trip() {
        for r in EndReason::ALL {
            assert_eq!(r.as_str().parse::<EndReason>().unwrap(), r);
        }
    }
}

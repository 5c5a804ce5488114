//! What a match is before its first move (`MatchSpec`): made by the scheduler, played by a
//! referee, shown by the web view and written with the finished game, all sharing one copy.

use std::sync::Arc;

use serde_json::Value;

use crate::game::GameId;
use crate::protocol::ClockSpec;

/// What a match is: everything fixed before its first move. Shared (`Arc`) by its referee, the
/// web view's entry for it and the finished game.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchSpec {
    pub match_id: String,
    pub tournament: String,
    pub game: GameId,
    /// Every rule option in force: shared by every game of its tournament (a JSON map is a few
    /// hundred bytes).
    pub rules: Arc<Value>,
    pub clock: ClockSpec,
    /// Bot names: `[first, second]`.
    pub players: [String; 2],
}

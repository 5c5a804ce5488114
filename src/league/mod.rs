//! The league library: pairings (`pairing`), standings with tie-breaks (`standings`), the Elo
//! model (`elo`) and the standings files and terminal table (`report`).
//!
//! Everything here is pure computation over plain values (plus the file writing in `report`):
//! no tokio, no sockets, no clocks. The referee server decides what to schedule when, feeds
//! finished results back in, and persists progress with `crate::journal`.
//! See `docs/leagues.md` for the rules these modules implement.

pub mod elo;
pub mod pairing;
pub mod report;
pub mod standings;

pub use elo::{EloEstimate, EloOptions};
pub use pairing::{fixed_schedule, swiss_round, Format, PairingError, ScheduledGame, SwissRound};
pub use report::{write_standings, TournamentStandings};
pub use standings::{compute_standings, GameResult, Points, StandingRow, ThinkTotal};

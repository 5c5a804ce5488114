//! Whether the league's outputs (the journal, the games' record files and games.jsonl lines,
//! the standings files) are being written. Every writer retries a write that fails instead of
//! dropping it; this is where they say so, and the caller hears once when an output falls
//! behind (what waits, and why) and once when it has caught up. The web view reads the same
//! state.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::events::{Events, ServerEvent};

/// One of the league's outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutputKind {
    /// `journal.jsonl`: moves and results, written first.
    Journal,
    /// The finished games' record files and games.jsonl lines, in finishing order.
    Games,
    /// `standings.json`, `.csv` and `.md`.
    Standings,
}

impl OutputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Journal => "journal",
            OutputKind::Games => "game records and games.jsonl",
            OutputKind::Standings => "standings files",
        }
    }
}

impl std::fmt::Display for OutputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An output that is failing now: how much waits for it and the last error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFault {
    pub what: OutputKind,
    /// Journal entries, or finished games, waiting to be written (1 for the standings).
    pub waiting: usize,
    pub why: String,
}

/// The outputs failing now, shared by their writers (threads and tasks alike; the lock is
/// never held across an `.await`).
pub struct OutputHealth {
    failing: Mutex<BTreeMap<OutputKind, OutputFault>>,
    events: Events,
}

impl std::fmt::Debug for OutputHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputHealth")
            .field("failing", &self.faults())
            .finish_non_exhaustive()
    }
}

impl Default for OutputHealth {
    fn default() -> OutputHealth {
        OutputHealth::new(Events::default())
    }
}

impl OutputHealth {
    /// Health that tells `events` when an output falls behind and when it catches up.
    pub fn new(events: Events) -> OutputHealth {
        OutputHealth {
            failing: Mutex::new(BTreeMap::new()),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<OutputKind, OutputFault>> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A write of `what` failed with `why`, `waiting` things waiting for it. The first failure
    /// of a run of them is told (and logged); later ones only update what the web view shows.
    pub fn failed(&self, what: OutputKind, why: &str, waiting: usize) {
        let fault = OutputFault {
            what,
            waiting,
            why: why.to_string(),
        };
        let first = self.lock().insert(what, fault.clone()).is_none();
        if first {
            tracing::error!(output = %what, waiting, error = %why, "writing failed; retrying until it works (nothing is dropped)");
            self.events.publish(&ServerEvent::OutputBehind(fault));
        }
    }

    /// `what` was written again after failing: told once.
    pub fn recovered(&self, what: OutputKind) {
        if self.lock().remove(&what).is_some() {
            tracing::info!(output = %what, "writing works again; caught up");
            self.events.publish(&ServerEvent::OutputCaughtUp(what));
        }
    }

    /// The outputs failing now.
    pub fn faults(&self) -> Vec<OutputFault> {
        self.lock().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_run_of_failures_is_told_once_and_its_end_once() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        let health = OutputHealth::new(crate::server::Events::new([
            crate::server::Subscriber::news(Arc::new(
                move |event: &crate::server::ServerEvent<'_>| {
                    sink.lock().unwrap().push(format!("{event:?}"));
                },
            )),
        ]));
        health.recovered(OutputKind::Games);
        assert!(told.lock().unwrap().is_empty(), "nothing failed yet");
        health.failed(OutputKind::Games, "Read-only file system", 1);
        health.failed(OutputKind::Games, "Read-only file system", 3);
        assert_eq!(
            health.faults(),
            vec![OutputFault {
                what: OutputKind::Games,
                waiting: 3,
                why: "Read-only file system".into()
            }]
        );
        health.recovered(OutputKind::Games);
        health.recovered(OutputKind::Games);
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 2, "{told:?}");
        assert!(told[0].contains("OutputBehind") && told[0].contains("waiting: 1"));
        assert!(told[1].contains("OutputCaughtUp"));
        assert!(health.faults().is_empty());
    }
}

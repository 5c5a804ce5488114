//! The league's live event stream, made once for every browser: one task follows the referees'
//! events and, every `BATCH_EVERY`, writes what happened as one chunk of Server-Sent Events,
//! keeping only the latest `move` of each game it got (and the latest `standings` of each
//! tournament), which every `/api/events` stream then sends as it is. Referees publish a game's
//! first move after each batch (`Live::next_batch`) and every move only of games someone
//! follows, so a thousand games moving thousands of times a second cost each browser a few
//! writes a second and the referees a thousand position texts a second. A stream that follows
//! one game (`/api/events?match=ID`) gets every event of that game as it happens instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::live::{Live, LiveEvent};
use crate::fanout::{Fanout, WhenFull};

/// How often the league stream sends what happened.
pub const BATCH_EVERY: Duration = Duration::from_millis(1000);
/// Batches a stream may fall behind by before it is dropped as too slow.
const BATCH_QUEUE: usize = 4;

/// One event as Server-Sent Events text: `event: KIND`, `data: DATA`, a blank line.
pub fn sse_text(kind: &str, data: &str) -> String {
    let mut text = String::with_capacity(sse_len(kind, data));
    push_sse(&mut text, kind, data);
    text
}

/// The length of `sse_text(kind, data)`.
fn sse_len(kind: &str, data: &str) -> usize {
    "event: \ndata: \n\n".len() + kind.len() + data.len()
}

/// Appends `sse_text(kind, data)` to `text`.
fn push_sse(text: &mut String, kind: &str, data: &str) {
    text.push_str("event: ");
    text.push_str(kind);
    text.push_str("\ndata: ");
    // JSON as the server writes it has no line breaks; a data line must not have any.
    for (i, line) in data.split(['\n', '\r']).enumerate() {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(line);
    }
    text.push_str("\n\n");
}

/// The match an event is about (its data's leading `"match"` field), if any.
fn match_of(data: &str) -> Option<&str> {
    let start = data.find("\"match\":\"")? + "\"match\":\"".len();
    let rest = data.get(start..)?;
    Some(&rest[..rest.find('"')?])
}

/// The events of one batch in order, with a game's later moves replacing its earlier ones.
#[derive(Default)]
struct Batch {
    entries: Vec<Arc<LiveEvent>>,
    /// Index in `entries` of the latest `move` of each match, while nothing else of that match
    /// came after it (a `start` or `end` keeps the order of what happened).
    pending_move: HashMap<String, usize>,
    /// Index of the latest `standings` of each tournament.
    pending_standings: HashMap<String, usize>,
}

impl Batch {
    fn add(&mut self, event: Arc<LiveEvent>) {
        let key = match_of(&event.data).map(str::to_string);
        match (event.kind, key) {
            ("move", Some(id)) => {
                if let Some(&at) = self.pending_move.get(&id) {
                    self.entries[at] = event;
                    return;
                }
                self.pending_move.insert(id, self.entries.len());
            }
            ("standings", _) => {
                let tournament = event.data.clone();
                if let Some(&at) = self.pending_standings.get(&tournament) {
                    self.entries[at] = event;
                    return;
                }
                self.pending_standings
                    .insert(tournament, self.entries.len());
            }
            (_, Some(id)) => {
                self.pending_move.remove(&id);
            }
            _ => {}
        }
        self.entries.push(event);
    }

    fn take_text(&mut self) -> Option<Bytes> {
        if self.entries.is_empty() {
            return None;
        }
        // Sized exactly: a thousand games' positions make a text of some hundred KB, which
        // every stream holds until written.
        let len = self.entries.iter().map(|e| sse_len(e.kind, &e.data)).sum();
        let mut text = String::with_capacity(len);
        for event in self.entries.drain(..) {
            push_sse(&mut text, event.kind, &event.data);
        }
        self.pending_move.clear();
        self.pending_standings.clear();
        Some(Bytes::from(text))
    }
}

/// The league stream's batches (cheap to clone). A batch is freed once every stream has
/// taken it.
#[derive(Debug, Clone)]
pub struct EventFeed {
    batches: Arc<Fanout<Bytes>>,
}

impl Default for EventFeed {
    fn default() -> Self {
        EventFeed {
            batches: Arc::new(Fanout::new("league event streams")),
        }
    }
}

impl EventFeed {
    /// A receiver of every batch from now on, dropped if it falls `BATCH_QUEUE` batches behind.
    pub fn subscribe(&self) -> mpsc::Receiver<Bytes> {
        self.batches.subscribe(None, BATCH_QUEUE, WhenFull::Drop)
    }

    /// Follows `live` until `stop`, sending a batch every `BATCH_EVERY` when something happened
    /// and someone listens.
    pub async fn run(self, live: Live, stop: CancellationToken) {
        let mut events = live.subscribe_league();
        let mut batch = Batch::default();
        let mut tick = tokio::time::interval(BATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                // Events missed while this task was a whole queue behind are simply not in
                // the batch: browsers resynchronise from the API when plies are missing.
                received = events.recv() => match received {
                    Some(event) => batch.add(event),
                    None => return,
                },
                _ = tick.tick() => {
                    live.next_batch();
                    if let Some(text) = batch.take_text() {
                        if self.batches.has_subscribers() {
                            self.batches.send(None, text);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &'static str, data: &str) -> Arc<LiveEvent> {
        Arc::new(LiveEvent {
            kind,
            data: data.to_string(),
        })
    }

    #[test]
    fn a_batch_keeps_each_games_latest_move_in_the_order_things_happened() {
        let mut batch = Batch::default();
        batch.add(event("start", r#"{"match":"g1","ply":0}"#));
        batch.add(event("move", r#"{"match":"g1","ply":1,"move":"A1"}"#));
        batch.add(event("move", r#"{"match":"g2","ply":5,"move":"C3"}"#));
        batch.add(event("move", r#"{"match":"g1","ply":2,"move":"B2"}"#));
        batch.add(event("standings", r#"{"tournament":"t"}"#));
        batch.add(event("end", r#"{"match":"g2","result":"first"}"#));
        batch.add(event("move", r#"{"match":"g1","ply":3,"move":"C4"}"#));
        batch.add(event("standings", r#"{"tournament":"t"}"#));
        let text = String::from_utf8(batch.take_text().unwrap().to_vec()).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("data")).collect();
        assert_eq!(
            lines,
            [
                r#"data: {"match":"g1","ply":0}"#,
                r#"data: {"match":"g1","ply":3,"move":"C4"}"#,
                r#"data: {"match":"g2","ply":5,"move":"C3"}"#,
                r#"data: {"tournament":"t"}"#,
                r#"data: {"match":"g2","result":"first"}"#,
            ]
        );
        assert!(text.starts_with("event: start\n"), "{text}");
        assert!(batch.take_text().is_none(), "a batch is sent once");
    }

    #[test]
    fn an_event_is_one_data_line_whatever_its_text() {
        assert_eq!(
            sse_text("end", r#"{"a":1}"#),
            "event: end\ndata: {\"a\":1}\n\n"
        );
        let text = sse_text("move", "{\"a\":\n1,\r\n\"b\":2}");
        assert_eq!(text, "event: move\ndata: {\"a\": 1,  \"b\":2}\n\n");
        assert_eq!(text.len(), sse_len("move", "{\"a\":\n1,\r\n\"b\":2}"));
    }

    #[test]
    fn events_are_matched_to_their_game() {
        assert_eq!(
            match_of(r#"{"match":"hex-r1-p1-g1","ply":1}"#),
            Some("hex-r1-p1-g1")
        );
        assert_eq!(match_of(r#"{"tournament":"t"}"#), None);
    }
}

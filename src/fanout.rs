//! `Fanout`: one value sent to many bounded receivers, each with its own queue, and no copy
//! kept once every receiver has taken it.
//!
//! tokio's `broadcast` channel keeps the last N values in its ring until newer ones overwrite
//! them, even after every receiver has read them: with the web view's events (a position text
//! each) and league batches (tens of kilobytes each) that is memory held for nothing. Here each
//! receiver has a tokio `mpsc` queue of its own, a value lives only while some queue holds it,
//! a receiver may ask for one topic only (the events of one game), and the sender never waits:
//! a full queue either drops its receiver or loses the value, as the receiver chose.

use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc;

/// What a full queue does with the next value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// The receiver is too slow: it is dropped (it reads what it has queued, then the end).
    Drop,
    /// The value is lost for this receiver, which stays (for a receiver that must not end).
    Skip,
}

struct Subscriber<T> {
    /// Only values sent with this topic (all values when `None`).
    topic: Option<String>,
    when_full: WhenFull,
    queue: mpsc::Sender<T>,
}

/// One sender's receivers (see the module's note).
pub struct Fanout<T> {
    /// What the logs call this fan-out's receivers.
    name: &'static str,
    subscribers: Mutex<Vec<Subscriber<T>>>,
}

impl<T> std::fmt::Debug for Fanout<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout").field("name", &self.name).finish()
    }
}

impl<T: Clone> Fanout<T> {
    pub fn new(name: &'static str) -> Fanout<T> {
        Fanout {
            name,
            subscribers: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Subscriber<T>>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver of the values sent from now on (of `topic` only, if given), with room for
    /// `capacity` of them.
    pub fn subscribe(
        &self,
        topic: Option<&str>,
        capacity: usize,
        when_full: WhenFull,
    ) -> mpsc::Receiver<T> {
        let (queue, receiver) = mpsc::channel(capacity.max(1));
        self.lock().push(Subscriber {
            topic: topic.map(str::to_string),
            when_full,
            queue,
        });
        receiver
    }

    /// Whether any receiver is still there (so that a value is worth making).
    pub fn has_subscribers(&self) -> bool {
        let mut subscribers = self.lock();
        subscribers.retain(|s| !s.queue.is_closed());
        !subscribers.is_empty()
    }

    /// Queues `value` for every receiver of all values and of `topic`; never waits.
    pub fn send(&self, topic: Option<&str>, value: T) {
        let name = self.name;
        self.lock().retain(|s| {
            if s.topic.is_some() && s.topic.as_deref() != topic {
                return !s.queue.is_closed();
            }
            match s.queue.try_send(value.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Closed(_)) => false,
                Err(mpsc::error::TrySendError::Full(_)) => match s.when_full {
                    WhenFull::Drop => {
                        tracing::info!(
                            receivers = name,
                            "dropping a receiver a whole queue behind"
                        );
                        false
                    }
                    WhenFull::Skip => {
                        tracing::debug!(
                            receivers = name,
                            "a receiver a whole queue behind misses a value"
                        );
                        true
                    }
                },
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn every_receiver_gets_every_value_of_its_topic_in_order() {
        let fanout = Fanout::new("test");
        let mut all = fanout.subscribe(None, 8, WhenFull::Drop);
        let mut of_a = fanout.subscribe(Some("a"), 8, WhenFull::Drop);
        fanout.send(Some("a"), 1);
        fanout.send(Some("b"), 2);
        fanout.send(None, 3);
        fanout.send(Some("a"), 4);
        let drain = |r: &mut mpsc::Receiver<i32>| {
            std::iter::from_fn(|| r.try_recv().ok()).collect::<Vec<_>>()
        };
        assert_eq!(drain(&mut all), vec![1, 2, 3, 4]);
        assert_eq!(drain(&mut of_a), vec![1, 4]);
    }

    #[test]
    fn a_value_is_freed_once_every_receiver_has_taken_it() {
        let fanout = Fanout::new("test");
        let mut first = fanout.subscribe(None, 8, WhenFull::Drop);
        let mut second = fanout.subscribe(None, 8, WhenFull::Drop);
        let value = Arc::new(String::from("a position"));
        let watch = Arc::downgrade(&value);
        fanout.send(None, value);
        drop(first.try_recv());
        assert!(
            watch.upgrade().is_some(),
            "the second receiver still holds it"
        );
        drop(second.try_recv());
        assert!(
            watch.upgrade().is_none(),
            "nothing keeps a value every receiver took"
        );
    }

    #[test]
    fn a_full_receiver_that_asked_to_be_dropped_reads_its_queue_then_ends() {
        let fanout = Fanout::new("test");
        let mut slow = fanout.subscribe(None, 2, WhenFull::Drop);
        for value in 0..5 {
            fanout.send(None, value);
        }
        assert!(!fanout.has_subscribers());
        assert_eq!(slow.try_recv(), Ok(0));
        assert_eq!(slow.try_recv(), Ok(1));
        assert_eq!(
            slow.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        );
    }

    #[test]
    fn a_full_receiver_that_asked_to_skip_misses_values_and_stays() {
        let fanout = Fanout::new("test");
        let mut steady = fanout.subscribe(None, 2, WhenFull::Skip);
        for value in 0..5 {
            fanout.send(None, value);
        }
        assert_eq!(steady.try_recv(), Ok(0));
        assert_eq!(steady.try_recv(), Ok(1));
        fanout.send(None, 9);
        assert_eq!(steady.try_recv(), Ok(9));
        assert!(fanout.has_subscribers());
    }

    #[test]
    fn receivers_that_went_away_are_forgotten() {
        let fanout = Fanout::new("test");
        let gone = fanout.subscribe(Some("a"), 2, WhenFull::Drop);
        assert!(fanout.has_subscribers());
        drop(gone);
        fanout.send(Some("b"), 1);
        assert!(!fanout.has_subscribers());
    }
}

//! A connection reader's waits besides its lines (its link dropped, its next ping due), polled
//! only after one of them woke the reader: asking whether either did reads one small block.
//!
//! The reader asks at every move (whenever no line is ready). Among a thousand matches every
//! heap block that question touches is a cache miss; a `FuturesUnordered` of the two waits read
//! three (its task list, its ready queue, its waker), this reads one.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use tokio::time::{sleep_until, Instant, Sleep};

/// What woke a reader besides a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderWake {
    /// The connection was dropped by the server, or the server is stopping.
    Dropped,
    /// A ping interval has passed.
    PingDue,
}

/// Whether a wait's waker fired since the reader last looked, and the reader's own waker.
#[derive(Default)]
struct Woken {
    fired: AtomicBool,
    reader: AtomicWaker,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.reader.wake();
    }
}

/// The waits: `dropped` completes when the link is dropped; the ping is a timer the reader sets
/// again after each one. A wait that is over stays over: every later look reports it again (the
/// drop first), until the ping is set again.
pub struct ReaderWaits<D> {
    /// `None` once it completed: a finished future is never polled again.
    dropped: Option<Pin<Box<D>>>,
    ping: Pin<Box<Sleep>>,
    woken: Arc<Woken>,
}

impl<D: Future<Output = ()>> ReaderWaits<D> {
    pub fn new(dropped: D, first_ping: Instant) -> ReaderWaits<D> {
        let woken = Arc::new(Woken::default());
        // Both are polled at the first look, which hands them their waker.
        woken.fired.store(true, Ordering::Relaxed);
        ReaderWaits {
            dropped: Some(Box::pin(dropped)),
            ping: Box::pin(sleep_until(first_ping)),
            woken,
        }
    }

    /// Sets the next ping for `at` (after a [`ReaderWake::PingDue`]).
    pub fn ping_at(&mut self, at: Instant) {
        self.ping.as_mut().reset(at);
        // Polled at the next look, so that the timer knows its new deadline.
        self.woken.fired.store(true, Ordering::Release);
    }

    /// Completes with the wait that is over; pending while neither is.
    pub async fn next(&mut self) -> ReaderWake {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<ReaderWake> {
        // Registered before the flag is read: a wait that fires in between wakes this waker.
        self.woken.reader.register(cx.waker());
        let Some(dropped) = self.dropped.as_mut() else {
            return Poll::Ready(ReaderWake::Dropped);
        };
        if !self.woken.fired.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let waker = Waker::from(self.woken.clone());
        let mut own = Context::from_waker(&waker);
        if dropped.as_mut().poll(&mut own).is_ready() {
            self.dropped = None;
            return Poll::Ready(ReaderWake::Dropped);
        }
        if self.ping.as_mut().poll(&mut own).is_ready() {
            // Looked at again next time: an elapsed timer stays ready until it is set again.
            self.woken.fired.store(true, Ordering::Release);
            return Poll::Ready(ReaderWake::PingDue);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;
    use tokio::time::timeout;
    use tokio_util::sync::CancellationToken;

    #[tokio::test(start_paused = true)]
    async fn a_ping_is_due_at_its_instant_and_again_once_set_again() {
        let token = CancellationToken::new();
        let start = Instant::now();
        let mut waits = ReaderWaits::new(token.cancelled_owned(), start + Duration::from_secs(1));
        assert!(timeout(Duration::from_millis(999), waits.next())
            .await
            .is_err());
        assert_eq!(waits.next().await, ReaderWake::PingDue);
        assert_eq!(Instant::now(), start + Duration::from_secs(1));
        waits.ping_at(Instant::now() + Duration::from_secs(2));
        assert!(timeout(Duration::from_millis(1999), waits.next())
            .await
            .is_err());
        assert_eq!(waits.next().await, ReaderWake::PingDue);
        assert_eq!(Instant::now(), start + Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_link_ends_the_wait_before_its_ping() {
        let token = CancellationToken::new();
        let mut waits = ReaderWaits::new(
            token.clone().cancelled_owned(),
            Instant::now() + Duration::from_secs(60),
        );
        let cancel = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            token.cancel();
        });
        assert_eq!(waits.next().await, ReaderWake::Dropped);
        cancel.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_that_is_over_is_reported_again_without_polling_it_again() {
        // A look that reports nothing would wait for ever: each is bounded.
        async fn look<D: Future<Output = ()>>(waits: &mut ReaderWaits<D>) -> ReaderWake {
            timeout(Duration::from_secs(10), waits.next())
                .await
                .expect("a wait that is over is reported at once")
        }
        // An `async` block panics if it is polled after it completed.
        let mut waits = ReaderWaits::new(async {}, Instant::now() + Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(look(&mut waits).await, ReaderWake::Dropped);
        }
        let token = CancellationToken::new();
        let start = Instant::now();
        let mut waits = ReaderWaits::new(token.cancelled_owned(), start + Duration::from_secs(1));
        assert_eq!(look(&mut waits).await, ReaderWake::PingDue);
        // Not set again: still due, at once.
        assert_eq!(look(&mut waits).await, ReaderWake::PingDue);
        assert_eq!(Instant::now(), start + Duration::from_secs(1));
    }

    /// A wait that never ends and counts how often it was polled.
    struct Counted(Arc<AtomicUsize>);

    impl Future for Counted {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Poll::Pending
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_look_that_nothing_woke_polls_no_wait() {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut waits = ReaderWaits::new(
            Counted(polls.clone()),
            Instant::now() + Duration::from_secs(60),
        );
        for _ in 0..5 {
            assert!(futures_util::poll!(Box::pin(waits.next())).is_pending());
        }
        // Polled once, at the first look, and never again until a waker fires.
        assert_eq!(polls.load(Ordering::Relaxed), 1);
        waits.ping_at(Instant::now() + Duration::from_secs(1));
        assert!(futures_util::poll!(Box::pin(waits.next())).is_pending());
        assert_eq!(polls.load(Ordering::Relaxed), 2);
        assert_eq!(waits.next().await, ReaderWake::PingDue);
    }
}

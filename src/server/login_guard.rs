//! Failed-login limits per client address: after `max_failed_logins_per_minute` failed
//! `hello`s (wrong name or token) within a minute, an address is refused for
//! `failed_login_block_ms`, so that tokens cannot be guessed by trying. Shared by every way a
//! bot logs in (TCP and the web view's WebSocket).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The window failed logins are counted in.
const WINDOW: Duration = Duration::from_secs(60);

/// Most addresses remembered at once; beyond it, the entries that no longer matter are dropped
/// first, so a flood of addresses cannot grow memory without bound.
const MAX_ADDRESSES: usize = 10_000;

/// An address refused until `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    pub until: Instant,
}

impl Blocked {
    /// Whole seconds left, rounded up (at least 1).
    pub fn seconds_left(&self, now: Instant) -> u64 {
        let left = self.until.saturating_duration_since(now);
        left.as_millis().div_ceil(1000).max(1) as u64
    }
}

#[derive(Debug, Default)]
struct AddressRecord {
    /// When each failed login of the current window happened, oldest first.
    failures: Vec<Instant>,
    blocked_until: Option<Instant>,
}

impl AddressRecord {
    fn forget_before(&mut self, now: Instant) {
        self.failures
            .retain(|&at| now.saturating_duration_since(at) < WINDOW);
        if self.blocked_until.is_some_and(|until| until <= now) {
            self.blocked_until = None;
        }
    }

    fn is_idle(&self) -> bool {
        self.failures.is_empty() && self.blocked_until.is_none()
    }
}

/// The failed logins of each client address, behind its own lock (never held across an
/// `.await`).
#[derive(Debug)]
pub struct LoginGuard {
    max_failures: usize,
    block: Duration,
    addresses: Mutex<HashMap<IpAddr, AddressRecord>>,
}

impl LoginGuard {
    /// Refuses an address for `block` after `max_failures_per_minute` failed logins in a minute.
    pub fn new(max_failures_per_minute: u32, block: Duration) -> LoginGuard {
        LoginGuard {
            max_failures: usize::try_from(max_failures_per_minute.max(1)).unwrap_or(usize::MAX),
            block,
            addresses: Mutex::new(HashMap::new()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, AddressRecord>> {
        self.addresses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Err` while `ip` is refused: no login from it is even checked.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Blocked> {
        let mut table = self.table();
        let Some(record) = table.get_mut(&ip) else {
            return Ok(());
        };
        record.forget_before(now);
        match record.blocked_until {
            Some(until) => Err(Blocked { until }),
            None => Ok(()),
        }
    }

    /// Counts a failed login from `ip`; returns the block it brought about, if this failure
    /// reached the limit.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> Option<Blocked> {
        let mut table = self.table();
        if table.len() >= MAX_ADDRESSES && !table.contains_key(&ip) {
            table.retain(|_, record| {
                record.forget_before(now);
                !record.is_idle()
            });
            if table.len() >= MAX_ADDRESSES {
                // Still full of live entries: forget those that are not blocked.
                table.retain(|_, record| record.blocked_until.is_some());
            }
        }
        let record = table.entry(ip).or_default();
        record.forget_before(now);
        record.failures.push(now);
        if record.failures.len() >= self.max_failures {
            let until = now + self.block;
            record.blocked_until = Some(until);
            record.failures.clear();
            return Some(Blocked { until });
        }
        None
    }

    /// Addresses remembered now (for tests of the memory bound).
    pub fn remembered(&self) -> usize {
        self.table().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn five_failures_in_a_minute_block_the_address_for_the_block_time() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..4 {
            assert_eq!(guard.failed(ip(1), t0 + Duration::from_secs(i)), None);
            assert!(guard.check(ip(1), t0 + Duration::from_secs(i)).is_ok());
        }
        let blocked = guard
            .failed(ip(1), t0 + Duration::from_secs(4))
            .expect("the fifth failure blocks");
        assert_eq!(blocked.until, t0 + Duration::from_secs(64));
        assert_eq!(
            guard.check(ip(1), t0 + Duration::from_secs(30)),
            Err(blocked)
        );
        assert_eq!(blocked.seconds_left(t0 + Duration::from_secs(30)), 34);
        // Other addresses are not affected.
        assert!(guard.check(ip(2), t0 + Duration::from_secs(30)).is_ok());
        // The block ends.
        assert!(guard.check(ip(1), t0 + Duration::from_secs(64)).is_ok());
    }

    #[test]
    fn failures_spread_over_more_than_a_minute_do_not_block() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..20 {
            let at = t0 + Duration::from_secs(15 * i);
            assert_eq!(guard.failed(ip(1), at), None, "failure {i}");
            assert!(guard.check(ip(1), at).is_ok());
        }
    }

    #[test]
    fn memory_stays_bounded_under_a_flood_of_addresses() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..(MAX_ADDRESSES as u32 + 500) {
            let address = IpAddr::from(i.to_be_bytes());
            guard.failed(address, t0);
        }
        assert!(
            guard.remembered() <= MAX_ADDRESSES,
            "{}",
            guard.remembered()
        );
    }
}

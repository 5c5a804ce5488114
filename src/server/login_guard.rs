//! Login limits, so that tokens cannot be guessed by trying. Per client address (IPv6: its
//! /64): after `max_failed_logins_per_minute` failed `hello`s (wrong name or token) within a
//! minute, the address is refused for `failed_login_block_ms`. Per bot name, across every
//! address: tokens are checked at most `NAME_CHECKS_PER_SECOND` a second (a burst of
//! `NAME_CHECK_BURST`), except for logins a guesser cannot make: from the addresses the bot
//! last logged in from, or carrying the login ticket the server gave the bot in an earlier
//! `welcome` (what OWASP calls a device cookie). So the right token gets in at once during an
//! attack from the bot's usual address or from a client that kept its ticket (`arena bot` and
//! the example bots do), and otherwise within a second or two of retrying while the attacker
//! does not happen to take every check. No limit can do better for a client the server has
//! never seen: its first guess looks like the attacker's. Shared by every way a bot logs in
//! (TCP and the web view's WebSocket).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use rand::RngCore;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

use super::address::address_group;

/// The window failed logins are counted in.
const WINDOW: Duration = Duration::from_secs(60);

/// Most addresses remembered at once; beyond it, the entries that no longer matter are dropped
/// first, so a flood of addresses cannot grow memory without bound.
const MAX_ADDRESSES: usize = 10_000;

/// Token checks per second for one bot name from addresses it has not logged in from.
pub const NAME_CHECKS_PER_SECOND: u32 = 1;
/// Checks one bot name may take at once before the rate applies.
const NAME_CHECK_BURST: u32 = 2;
/// Addresses remembered per bot name as ones it logged in from (the latest ones).
const KNOWN_ADDRESSES_PER_NAME: usize = 4;
/// Most bot names tracked (configured names; every unknown name shares one entry).
const MAX_NAMES: usize = 10_000;

/// A bot name whose token checks are used up for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub until: Instant,
}

/// One bot name's token bucket and the addresses it logged in from.
#[derive(Debug)]
struct NameRecord {
    /// Checks available (fractional refill), at most `NAME_CHECK_BURST`.
    checks: f64,
    refilled: Instant,
    known: Vec<IpAddr>,
    /// The login ticket given in this name's `welcome`s (made at its first login).
    ticket: Option<String>,
}

impl NameRecord {
    fn new(now: Instant) -> NameRecord {
        NameRecord {
            checks: f64::from(NAME_CHECK_BURST),
            refilled: now,
            known: Vec::new(),
            ticket: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.refilled).as_secs_f64()
            * f64::from(NAME_CHECKS_PER_SECOND);
        self.checks = (self.checks + gained).min(f64::from(NAME_CHECK_BURST));
        self.refilled = now;
    }
}

/// A fresh login ticket: 128 random bits from the operating system, as 32 hex digits.
fn new_ticket() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

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
    names: Mutex<HashMap<String, NameRecord>>,
}

impl LoginGuard {
    /// Refuses an address for `block` after `max_failures_per_minute` failed logins in a minute.
    pub fn new(max_failures_per_minute: u32, block: Duration) -> LoginGuard {
        LoginGuard {
            max_failures: usize::try_from(max_failures_per_minute.max(1)).unwrap_or(usize::MAX),
            block,
            addresses: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
        }
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<String, NameRecord>> {
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one token check for bot `name` (`None`: a name no bot has) tried from `ip` with
    /// `ticket` (from an earlier `welcome`, if the client kept one), or says until when the
    /// name's checks are used up. Addresses the bot logged in from lately, and the name's own
    /// ticket, check without taking one.
    pub fn check_name(
        &self,
        name: Option<&str>,
        ip: IpAddr,
        ticket: Option<&str>,
        now: Instant,
    ) -> Result<(), Throttled> {
        let group = address_group(ip);
        let mut names = self.names();
        let key = name.unwrap_or("");
        if !names.contains_key(key) && names.len() >= MAX_NAMES {
            names.retain(|_, record| !record.known.is_empty());
        }
        let record = names
            .entry(key.to_string())
            .or_insert_with(|| NameRecord::new(now));
        if name.is_some() && record.known.contains(&group) {
            return Ok(());
        }
        if let (Some(_), Some(given), Some(issued)) = (name, ticket, record.ticket.as_deref()) {
            if bool::from(given.as_bytes().ct_eq(issued.as_bytes())) {
                return Ok(());
            }
        }
        record.refill(now);
        if record.checks >= 1.0 {
            record.checks -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - record.checks) / f64::from(NAME_CHECKS_PER_SECOND);
        Err(Throttled {
            until: now + Duration::from_secs_f64(wait),
        })
    }

    /// Remembers that bot `name` logged in from `ip` (its checks from there skip the rate), and
    /// returns the name's login ticket for its `welcome` (`None` only when the table of names
    /// is full).
    pub fn succeeded(&self, name: &str, ip: IpAddr, now: Instant) -> Option<String> {
        let group = address_group(ip);
        let mut names = self.names();
        if !names.contains_key(name) && names.len() >= MAX_NAMES {
            return None;
        }
        let record = names
            .entry(name.to_string())
            .or_insert_with(|| NameRecord::new(now));
        record.known.retain(|&known| known != group);
        record.known.push(group);
        if record.known.len() > KNOWN_ADDRESSES_PER_NAME {
            record.known.remove(0);
        }
        Some(record.ticket.get_or_insert_with(new_ticket).clone())
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, AddressRecord>> {
        self.addresses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Err` while `ip` is refused: no login from it is even checked.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Blocked> {
        let ip = address_group(ip);
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
        let ip = address_group(ip);
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

    #[test]
    fn an_ipv6_attacker_rotating_through_its_slash_64_is_blocked_as_one_address() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        let v6 = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 7, 0, 0, 0, last]);
        for i in 0..4 {
            assert_eq!(guard.failed(v6(i), t0), None);
        }
        assert!(guard.failed(v6(99), t0).is_some());
        assert!(guard.check(v6(1234), t0).is_err());
        assert!(guard
            .check(IpAddr::from([0x2001, 0xdb8, 0, 8, 0, 0, 0, 1]), t0)
            .is_ok());
    }

    #[test]
    fn one_name_is_checked_about_once_a_second_across_all_addresses() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        let mut checked = 0;
        // Ten seconds of guesses from 10 000 addresses, 100 a second.
        for i in 0..1000u32 {
            let at = t0 + Duration::from_millis(u64::from(i) * 10);
            if guard
                .check_name(Some("alice"), IpAddr::from((i + 1).to_be_bytes()), None, at)
                .is_ok()
            {
                checked += 1;
            }
        }
        assert!(
            (10..=12).contains(&checked),
            "{checked} checks in 10 s (burst 2, then 1 a second)"
        );
        // Another name has its own checks.
        assert!(guard.check_name(Some("bob"), ip(1), None, t0).is_ok());
    }

    #[test]
    fn the_bots_usual_address_is_checked_at_once_during_an_attack_and_a_new_one_soon() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        let _ = guard.succeeded("alice", ip(7), t0);
        let attacker = |i: u32| IpAddr::from((1000 + i).to_be_bytes());
        for i in 0..100 {
            let _ = guard.check_name(Some("alice"), attacker(i), None, t0);
        }
        assert!(guard
            .check_name(Some("alice"), attacker(100), None, t0)
            .is_err());
        // From where it logged in before: no wait at all.
        assert!(guard.check_name(Some("alice"), ip(7), None, t0).is_ok());
        // From a new address: refused with a wait of at most a second, then checked when the
        // attacker happens not to have taken that second's check.
        let throttled = guard
            .check_name(Some("alice"), ip(8), None, t0)
            .expect_err("used up");
        assert!(throttled.until <= t0 + Duration::from_secs(1));
        assert!(guard
            .check_name(Some("alice"), ip(8), None, throttled.until)
            .is_ok());
    }

    #[test]
    fn the_ticket_of_an_earlier_welcome_is_checked_at_once_from_any_address_during_an_attack() {
        let guard = LoginGuard::new(5, Duration::from_secs(60));
        let t0 = Instant::now();
        let ticket = guard.succeeded("alice", ip(7), t0).expect("a ticket");
        assert_eq!(ticket.len(), 32);
        // The same ticket for the name while the server runs; other names get their own.
        assert_eq!(guard.succeeded("alice", ip(9), t0), Some(ticket.clone()));
        let bobs = guard.succeeded("bob", ip(7), t0).expect("a ticket");
        assert_ne!(bobs, ticket);
        let attacker = |i: u32| IpAddr::from((1000 + i).to_be_bytes());
        for i in 0..100 {
            let _ = guard.check_name(Some("alice"), attacker(i), None, t0);
        }
        // A guessed or another name's ticket does not help.
        assert!(guard
            .check_name(
                Some("alice"),
                ip(8),
                Some("0123456789abcdef0123456789abcdef"),
                t0
            )
            .is_err());
        assert!(guard
            .check_name(Some("alice"), ip(8), Some(&bobs), t0)
            .is_err());
        // Alice's own ticket from a new address: no wait at all.
        assert!(guard
            .check_name(Some("alice"), ip(8), Some(&ticket), t0)
            .is_ok());
        // A name no bot has never skips the rate, whatever it carries.
        for i in 0..10 {
            let _ = guard.check_name(None, attacker(i), Some(&ticket), t0);
        }
        assert!(guard.check_name(None, ip(8), Some(&ticket), t0).is_err());
    }
}

//! Log lines a visitor cannot multiply: the first refused connection or failed login of a kind
//! from an address (IPv6: its /64) is logged, the rest of that minute are counted and
//! summarised in one line. At most `MAX_ADDRESS_LINES` addresses a minute get lines of their
//! own; refusals from further addresses that minute (a crowd, or one attacker rotating through
//! addresses) are counted together in one line. So a flood grows the log by a bounded amount a
//! minute, however many addresses it comes from.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::address::address_group;

/// The window events of one kind from one address are summarised over.
const WINDOW: Duration = Duration::from_secs(60);
/// Most (address, kind) pairs counted at once; beyond it, events are only counted in total.
const MAX_ENTRIES: usize = 10_000;
/// Most (address, kind) pairs given lines of their own in one window; the events of further
/// pairs are counted together.
const MAX_ADDRESS_LINES: usize = 50;

#[derive(Debug)]
struct Entry {
    since: Instant,
    more: u64,
    /// Counted in the crowd's line, not given lines of its own.
    in_crowd: bool,
}

/// The refusals of the window's addresses beyond `MAX_ADDRESS_LINES`.
#[derive(Debug, Default)]
struct Crowd {
    /// When the window of the address-line budget began.
    since: Option<Instant>,
    /// Pairs given lines of their own in this window.
    address_lines: usize,
    /// Events and pairs counted in the crowd in this window.
    events: u64,
    addresses: u64,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<(IpAddr, &'static str), Entry>,
    /// Events not counted per address because the table was full.
    unattributed: u64,
    crowd: Crowd,
}

/// Per-address, per-minute summaries of one server's refusals (behind its own lock, never held
/// across an `.await` or while logging).
#[derive(Debug, Default)]
pub struct LogSummary {
    table: Mutex<Table>,
}

/// A line to log once the lock is released.
enum Line {
    First(IpAddr, &'static str),
    More(IpAddr, &'static str, u64),
    Unattributed(u64),
    /// Events from this many addresses beyond those logged one by one.
    Crowd {
        events: u64,
        addresses: u64,
    },
}

impl LogSummary {
    pub fn new() -> LogSummary {
        LogSummary::default()
    }

    /// Records one event `what` (a fixed text, never client text) from `ip`: logged at once if
    /// it is the first from that address this minute, else counted for the summary.
    pub fn note(&self, ip: IpAddr, what: &'static str) {
        let lines = self.record(address_group(ip), what, Instant::now());
        for line in lines {
            match line {
                Line::First(peer, what) => {
                    tracing::warn!(%peer, "{what} (more from this address are summarised each minute)")
                }
                Line::More(peer, what, count) => {
                    tracing::warn!(%peer, count, "{what}: {count} more from this address in the last minute")
                }
                Line::Unattributed(count) => {
                    tracing::warn!(
                        count,
                        "{count} more refusals from addresses beyond the {MAX_ENTRIES} tracked"
                    )
                }
                Line::Crowd { events, addresses } => log_crowd(events, addresses),
            }
        }
    }

    /// Logs the summaries of every window that has ended.
    pub fn flush(&self) {
        let lines = self.take_ended(Instant::now());
        for line in lines {
            match line {
                Line::More(peer, what, count) => {
                    tracing::warn!(%peer, count, "{what}: {count} more from this address in the last minute")
                }
                Line::Crowd { events, addresses } => log_crowd(events, addresses),
                Line::First(..) | Line::Unattributed(_) => {}
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take_ended(&self, now: Instant) -> Vec<Line> {
        let mut table = self.lock();
        let mut lines = Vec::new();
        table.entries.retain(|&(peer, what), entry| {
            if now.saturating_duration_since(entry.since) < WINDOW {
                return true;
            }
            if entry.more > 0 && !entry.in_crowd {
                lines.push(Line::More(peer, what, entry.more));
            }
            false
        });
        let crowd = &mut table.crowd;
        if crowd
            .since
            .is_some_and(|since| now.saturating_duration_since(since) >= WINDOW)
        {
            if crowd.events > 0 {
                lines.push(Line::Crowd {
                    events: crowd.events,
                    addresses: crowd.addresses,
                });
            }
            *crowd = Crowd::default();
        }
        lines
    }

    fn record(&self, group: IpAddr, what: &'static str, now: Instant) -> Vec<Line> {
        let mut lines = self.take_ended(now);
        let mut table = self.lock();
        if let Some(entry) = table.entries.get_mut(&(group, what)) {
            entry.more += 1;
            if entry.in_crowd {
                table.crowd.events += 1;
            }
            return lines;
        }
        if table.entries.len() >= MAX_ENTRIES {
            table.unattributed += 1;
            if table.unattributed.is_power_of_two() {
                lines.push(Line::Unattributed(table.unattributed));
            }
            return lines;
        }
        let crowd = &mut table.crowd;
        crowd.since.get_or_insert(now);
        let in_crowd = crowd.address_lines >= MAX_ADDRESS_LINES;
        if in_crowd {
            crowd.events += 1;
            crowd.addresses += 1;
        } else {
            crowd.address_lines += 1;
            lines.push(Line::First(group, what));
        }
        table.entries.insert(
            (group, what),
            Entry {
                since: now,
                more: 0,
                in_crowd,
            },
        );
        lines
    }
}

fn log_crowd(events: u64, addresses: u64) {
    tracing::warn!(
        events,
        addresses,
        "{events} refused connections or failed logins from {addresses} more addresses in the \
         last minute (beyond the {MAX_ADDRESS_LINES} addresses a minute logged one by one)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHAT: &str = "failed login";

    fn count_lines(lines: &[Line]) -> (usize, u64) {
        let firsts = lines
            .iter()
            .filter(|l| matches!(l, Line::First(..)))
            .count();
        let more = lines
            .iter()
            .map(|l| match l {
                Line::More(_, _, n) => *n,
                _ => 0,
            })
            .sum();
        (firsts, more)
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_from_one_address_logs_one_line_then_one_summary_a_minute() {
        let summary = LogSummary::new();
        let ip: IpAddr = "2001:db8::1".parse().unwrap();
        let t0 = Instant::now();
        let mut lines = Vec::new();
        for i in 0..1000u64 {
            // Rotating through its /64 changes nothing.
            let ip = IpAddr::V6(format!("2001:db8::{:x}", i + 1).parse().unwrap());
            lines.extend(summary.record(address_group(ip), WHAT, t0));
        }
        assert_eq!(count_lines(&lines), (1, 0));
        let later = summary.record(address_group(ip), WHAT, t0 + WINDOW);
        assert_eq!(count_lines(&later), (1, 999));
        // Another address has its own first line.
        let other = summary.record("10.0.0.1".parse().unwrap(), WHAT, t0);
        assert_eq!(count_lines(&other), (1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn memory_stays_bounded_under_a_flood_of_addresses() {
        let summary = LogSummary::new();
        let t0 = Instant::now();
        let mut logged = 0;
        for i in 0..(MAX_ENTRIES as u32 + 5000) {
            logged += summary
                .record(IpAddr::from(i.to_be_bytes()), WHAT, t0)
                .len();
        }
        assert!(summary.lock().entries.len() <= MAX_ENTRIES);
        // Lines for the first addresses of the minute, and only a handful for the rest.
        assert!(logged <= MAX_ADDRESS_LINES + 16, "{logged}");
    }

    #[tokio::test(start_paused = true)]
    async fn addresses_beyond_the_minutes_budget_are_summarised_in_one_line() {
        let summary = LogSummary::new();
        let t0 = Instant::now();
        let mut lines = Vec::new();
        // 2,000 addresses, three failures each, within the minute.
        for round in 0..3u64 {
            for i in 0..2000u32 {
                let at = t0 + Duration::from_millis(round * 1000);
                lines.extend(summary.record(IpAddr::from((i + 1).to_be_bytes()), WHAT, at));
            }
        }
        assert_eq!(count_lines(&lines), (MAX_ADDRESS_LINES, 0));
        assert_eq!(lines.len(), MAX_ADDRESS_LINES);
        // A minute on: one line per address that had lines of its own and more events, and one
        // for the crowd.
        let later = summary.take_ended(t0 + WINDOW + Duration::from_secs(3));
        let crowd: Vec<(u64, u64)> = later
            .iter()
            .filter_map(|l| match l {
                Line::Crowd { events, addresses } => Some((*events, *addresses)),
                _ => None,
            })
            .collect();
        assert_eq!(crowd, vec![(3 * 1950, 1950)]);
        assert_eq!(count_lines(&later), (0, 2 * MAX_ADDRESS_LINES as u64));
        assert_eq!(later.len(), MAX_ADDRESS_LINES + 1);
        // A new minute has a new budget.
        let next = summary.record("10.9.9.9".parse().unwrap(), WHAT, t0 + WINDOW * 2);
        assert_eq!(count_lines(&next), (1, 0));
    }
}

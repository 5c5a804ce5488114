//! Log lines a visitor cannot multiply: the first refused connection or failed login of a kind
//! from an address (IPv6: its /64) is logged, the rest of that minute are counted and
//! summarised in one line, so a flood grows the log by a bounded amount.

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

#[derive(Debug)]
struct Entry {
    since: Instant,
    more: u64,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<(IpAddr, &'static str), Entry>,
    /// Events not counted per address because the table was full.
    unattributed: u64,
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
            }
        }
    }

    /// Logs the summaries of every window that has ended.
    pub fn flush(&self) {
        let lines = self.take_ended(Instant::now());
        for line in lines {
            if let Line::More(peer, what, count) = line {
                tracing::warn!(%peer, count, "{what}: {count} more from this address in the last minute");
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
            if entry.more > 0 {
                lines.push(Line::More(peer, what, entry.more));
            }
            false
        });
        lines
    }

    fn record(&self, group: IpAddr, what: &'static str, now: Instant) -> Vec<Line> {
        let mut lines = self.take_ended(now);
        let mut table = self.lock();
        if let Some(entry) = table.entries.get_mut(&(group, what)) {
            entry.more += 1;
            return lines;
        }
        if table.entries.len() >= MAX_ENTRIES {
            table.unattributed += 1;
            if table.unattributed.is_power_of_two() {
                lines.push(Line::Unattributed(table.unattributed));
            }
            return lines;
        }
        table.entries.insert(
            (group, what),
            Entry {
                since: now,
                more: 0,
            },
        );
        lines.push(Line::First(group, what));
        lines
    }
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
        // One line per tracked address, and only a handful for the rest.
        assert!(logged <= MAX_ENTRIES + 16, "{logged}");
    }
}

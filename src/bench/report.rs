//! The bench's report (`BenchReport`): every figure of a run with its rounds, as `--json`
//! prints it, the readable text (`write_text`), and each goal checked against its figure.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::load::Scheduling;
use super::TurnDelay;

/// How the readable report says the clock phase's bots were scheduled, with a caveat unless
/// they ran in real time.
fn bots_scheduling_text(scheduling: Option<Scheduling>) -> String {
    const CAVEAT: &str = "(not in real time: on a busy machine the clock error includes the bots' own waits for a core)";
    match scheduling {
        Some(real_time @ Scheduling::RealTime { .. }) => real_time.to_string(),
        Some(other) => format!("{other} {CAVEAT}"),
        None => format!("unknown {CAVEAT}"),
    }
}

/// Every figure, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub date: String,
    pub quick: bool,
    /// Clients following the web view's live events during the load phases (0: web view off).
    pub web_clients: usize,
    /// Bytes those clients read from their event streams in the throughput phase.
    pub web_event_bytes: u64,
    pub cores: usize,
    /// /proc/loadavg when the bench started (other work on the machine skews every figure).
    pub load_average: String,
    pub open_files_limit: u64,
    pub perft_surakarta_6_s: f64,
    pub perft_surakarta_6_nodes: u64,
    /// Game → leaf nodes per second.
    pub perft_nps: BTreeMap<String, f64>,
    /// Game → the depth timed.
    pub perft_depth: BTreeMap<String, u32>,
    pub bots_run_in: String,
    /// The folder under which the load phases wrote their leagues' records and journals.
    pub files_in: String,
    /// Mean time to create one record-sized file there just before the load phases (each
    /// finished game creates one; see docs/benchmarks.md on ext4 without a journal).
    pub file_create_us: f64,
    /// The same when the bench started: a full run waits up to 75 s for it to fall below
    /// 50 µs (the penalty of recent deletions, as by a previous run, fading).
    pub file_create_us_at_start: f64,
    /// How long the bench waited for that.
    pub disk_wait_s: f64,
    pub matches: usize,
    /// Games each bot played at once over its one connection (1: two connections a match).
    pub games_per_bot: usize,
    /// Matches running on average during the throughput window (the others were between two
    /// games).
    pub matches_running_mean: f64,
    pub window_s: f64,
    /// The interleaved windows, in the order they ran: referee, relay, referee, relay, ...
    pub rounds: Vec<Round>,
    /// Medians over `rounds` from here to `relay_cpu_us_per_move`.
    pub referee_moves_per_s: f64,
    /// The same bots, sockets and match count through a rules-free line relay (no JSON
    /// parsing, no rules, clocks or journal): the ceiling the referee is measured against.
    pub relay_moves_per_s: f64,
    /// Per round, the referee's moves per second over the relay's (the two windows next to
    /// each other): the median, the lowest and the highest. It depends on how the two cores
    /// are shared at that moment.
    pub referee_to_relay_ratio: f64,
    pub referee_to_relay_ratio_min: f64,
    pub referee_to_relay_ratio_max: f64,
    /// Per round, the relay's CPU per move over the referee's server CPU per move (the goal):
    /// the median, the lowest and the highest.
    pub cpu_ratio: f64,
    pub cpu_ratio_min: f64,
    pub cpu_ratio_max: f64,
    /// CPU time per move of the relay process during its window.
    pub relay_cpu_us_per_move: f64,
    /// Whether a spinning child process held one core during the load phases (`--hog`).
    pub hog: bool,
    /// Whether the server ran on one core and the load generator on the others
    /// (`--split-cores`: not the goals' setting).
    pub split_cores: bool,
    /// Worker threads the server's runtime ran on (one per core, or `--server-threads`; the
    /// relay's runtime has as many).
    pub server_workers: usize,
    pub move_overhead_us_p50: u64,
    pub move_overhead_us_p99: u64,
    pub move_overhead_samples: u64,
    /// How long moves waited in the socket before the server's reader got to them (kernel
    /// receive time → read), with 1,000 matches: the queueing the clocks no longer charge.
    pub socket_wait_us_p50: u64,
    pub socket_wait_us_p99: u64,
    /// Whether the kernel stamped received moves (`SO_TIMESTAMPNS`); if not, clocks stop when
    /// the server reads a move and the socket wait is 0.
    pub kernel_receive_timestamps: bool,
    /// CPU time per move during the window: the server process, and the load generator.
    pub server_cpu_us_per_move: f64,
    pub bots_cpu_us_per_move: f64,
    /// Share of all cores the two processes got during the window (the rest went to other work
    /// or idled).
    pub cpu_share: f64,
    pub relay_latency_us_p50: u64,
    pub relay_latency_us_p99: u64,
    /// With the web view on, taken with its event streams open (and no game running).
    pub rss_idle_mib: f64,
    pub rss_loaded_mib: f64,
    /// What opening the web view's event streams added to the idle server, before any game
    /// (0 without the web view): not counted in the per-match figures, which grow with games.
    pub web_streams_heap_kib: f64,
    pub web_streams_rss_kib: f64,
    pub rss_per_match_kib: f64,
    /// Heap in use per match (mean over the window − idle, over the matches running then):
    /// the live data alone, without the freed memory the allocator keeps, so it varies less
    /// between runs than `rss_per_match_kib`. 0 where the allocator does not tell.
    pub heap_per_match_kib: f64,
    pub timed_think_max_ms: u64,
    pub timed_move_limit_ms: u64,
    pub timed_moves: usize,
    /// How the clock phase's load generator was scheduled (`None`: it could not be read): it
    /// asks for real time (see `load::BotsPriority::Raised`). At the bench's own priority,
    /// under `--hog` the clock error includes the generator's own waits for a core.
    pub clock_bots_scheduling: Option<Scheduling>,
    pub clock_error_ms_p50: f64,
    pub clock_error_ms_p99: f64,
    pub clock_error_ms_max: f64,
    /// Without the lag credit: move received time minus `turn`-written time, minus true think
    /// time.
    pub clock_error_uncredited_ms_p99: f64,
    /// The two halves of the uncredited error: `turn` written by the server -> read by the bot,
    /// and move written by the bot -> received by the server (machine-wide monotonic clock).
    pub clock_turn_to_bot_ms_p99: f64,
    pub clock_move_to_server_ms_p99: f64,
    /// Part of `clock_turn_to_bot_ms`: how long `turn` sat in the bot's socket after the bot's
    /// kernel received it, before the bot's process read it (the bot machine's scheduling,
    /// which no referee can see).
    pub clock_turn_waited_in_bot_ms_p99: f64,
    /// The clock error without that wait: what the referee charged minus the time from `turn`
    /// reaching the bot's kernel to the move being written.
    pub clock_error_referee_ms_p99: f64,
    /// Moves in those two figures (those whose `turn` the bot's kernel stamped).
    pub bot_stamped_moves: usize,
    /// The clock goal's figure: the charged error at the wire over every move, from the bot's
    /// kernel receiving `turn` to its move being written (as `clock_error_referee_ms_p99`), or
    /// from the bot's read where its kernel gave no stamp. The same point the false timeouts
    /// are judged from.
    pub clock_error_at_wire_ms_p99: f64,
    /// In the clock phase: how long moves waited in the socket before being read (not charged).
    pub clock_socket_wait_ms_p99: f64,
    /// Clock phase: games a bot lost on time although it had used at most 90% of the limit on
    /// that move at the wire (from its kernel receiving `turn` to writing its move).
    pub false_timeouts: u64,
    /// For each false timeout, how long its `turn` took from the referee writing it to the
    /// bot's kernel receiving it and to the bot's process reading it (null where the referee's
    /// stamp is missing): a bot reading its socket late loses time the referee cannot see.
    pub false_timeout_turn_delays: Vec<Option<TurnDelay>>,
    /// Clock phase: every game that ended on time, as the referees recorded them.
    pub timeouts_total: usize,
    /// Clock phase: games lost on time by a bot that had itself used more than 90% at the wire
    /// (the load generator's process was held up past its planned sleep).
    pub timeouts_bot_overran: u64,
    /// Moves counted in time although the kernel stamp of their read was past the deadline:
    /// later bytes (another game's line) shared the read, and the referee's look at the
    /// socket at the deadline found the move already there (every phase).
    pub shared_read_moves_in_time: u64,
    pub bot_errors_seen: u64,
    pub total_s: f64,
    /// Every goal with its figure and whether it is met (as the readable report prints them).
    pub goals: Vec<GoalCheck>,
}

/// One round of the interleaved windows: a referee window, then a relay window right after it.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// /proc/loadavg when the round began.
    pub load_average: String,
    pub referee_moves_per_s: f64,
    pub server_cpu_us_per_move: f64,
    pub bots_cpu_us_per_move: f64,
    /// The bench's own looks at the server's memory during the referee window, per move: left
    /// out of `server_cpu_us_per_move` (the relay's window has none).
    pub memory_looks_cpu_us_per_move: f64,
    pub relay_moves_per_s: f64,
    pub relay_cpu_us_per_move: f64,
    /// `referee_moves_per_s / relay_moves_per_s`.
    pub throughput_ratio: f64,
    /// `relay_cpu_us_per_move / server_cpu_us_per_move`.
    pub cpu_ratio: f64,
}

/// A goal, its figure in this run, and whether the figure meets it.
#[derive(Debug, Clone, Serialize)]
pub struct GoalCheck {
    pub name: String,
    pub figure: String,
    pub goal: String,
    pub met: bool,
}

impl BenchReport {
    /// The readable report.
    pub fn write_text(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "arena bench{}{}{}{} — {} — {} cores, server on {} worker thread{}, load average {} at start, open-files limit {}",
            if self.quick {
                " --quick (smoke test, not a measurement)"
            } else {
                ""
            },
            if self.hog {
                " --hog (one core kept busy by a spinning process)"
            } else {
                ""
            },
            if self.split_cores {
                " --split-cores (server on one core, bots on the others: not the goals' setting)"
            } else {
                ""
            },
            if self.web_clients > 0 {
                format!(
                    " --web-clients {} (web view on, that many live event streams)",
                    self.web_clients
                )
            } else {
                String::new()
            },
            self.date,
            self.cores,
            self.server_workers,
            if self.server_workers == 1 { "" } else { "s" },
            self.load_average,
            self.open_files_limit
        )?;
        writeln!(out, "rules")?;
        writeln!(
            out,
            "  Surakarta perft 6: {:.3} s",
            self.perft_surakarta_6_s
        )?;
        for (game, nps) in &self.perft_nps {
            let depth = self.perft_depth.get(game).copied().unwrap_or(0);
            writeln!(
                out,
                "  perft {game:<10} depth {depth}: {:>8.2} M leaf nodes/s",
                nps / 1e6
            )?;
        }
        writeln!(
            out,
            "referee under load: {} concurrent Connect6 matches over loopback TCP ({} game{} per bot connection), {:.1} s window",
            self.matches,
            self.games_per_bot,
            if self.games_per_bot == 1 { "" } else { "s" },
            self.window_s
        )?;
        writeln!(out, "  bots: {}", self.bots_run_in)?;
        writeln!(
            out,
            "  records and journals written under {} (set TMPDIR to choose)",
            self.files_in
        )?;
        writeln!(
            out,
            "  creating a record file there took {:.0} µs before the load phases (each finished game makes one); {:.0} µs at start, then waited {:.0} s",
            self.file_create_us, self.file_create_us_at_start, self.disk_wait_s
        )?;
        writeln!(
            out,
            "  matches running during the window: {:.0} on average (the rest between two games)",
            self.matches_running_mean
        )?;
        writeln!(
            out,
            "  interleaved windows, referee then the rules-free line relay (same bots and sockets), {} rounds:",
            self.rounds.len()
        )?;
        for (i, round) in self.rounds.iter().enumerate() {
            writeln!(
                out,
                "    round {} (load {}): referee {:.0} /s at {:.1} us CPU per move (+{:.2} us the bench's memory looks); relay {:.0} /s at {:.1} us; throughput ratio {:.2}, CPU ratio {:.2}",
                i + 1,
                round.load_average,
                round.referee_moves_per_s,
                round.server_cpu_us_per_move,
                round.memory_looks_cpu_us_per_move,
                round.relay_moves_per_s,
                round.relay_cpu_us_per_move,
                round.throughput_ratio,
                round.cpu_ratio
            )?;
        }
        writeln!(
            out,
            "  medians: referee {:.0} /s, relay {:.0} /s; CPU per move: server {:.1} us, relay {:.1} us",
            self.referee_moves_per_s,
            self.relay_moves_per_s,
            self.server_cpu_us_per_move,
            self.relay_cpu_us_per_move
        )?;
        writeln!(
            out,
            "  CPU ratio (relay / referee CPU per move) {:.2}, spread {:.2}-{:.2}; throughput ratio {:.2}, spread {:.2}-{:.2}",
            self.cpu_ratio,
            self.cpu_ratio_min,
            self.cpu_ratio_max,
            self.referee_to_relay_ratio,
            self.referee_to_relay_ratio_min,
            self.referee_to_relay_ratio_max
        )?;
        writeln!(
            out,
            "  overhead read move -> turn queued: p50 {} us, p99 {} us",
            self.move_overhead_us_p50, self.move_overhead_us_p99
        )?;
        writeln!(
            out,
            "  moves waiting in the socket before the server read them (kernel stamps: {}): p50 {} us, p99 {} us",
            if self.kernel_receive_timestamps { "on" } else { "refused" },
            self.socket_wait_us_p50,
            self.socket_wait_us_p99
        )?;
        writeln!(
            out,
            "  CPU per move (medians): server {:.1} us, bots {:.1} us; the two processes got {:.0}% of {} cores",
            self.server_cpu_us_per_move,
            self.bots_cpu_us_per_move,
            self.cpu_share * 100.0,
            self.cores
        )?;
        writeln!(
            out,
            "  bot-seen relay (move written -> turn read) p50 {} us, p99 {} us",
            self.relay_latency_us_p50, self.relay_latency_us_p99
        )?;
        if self.web_clients > 0 {
            writeln!(
                out,
                "  web view: {} event streams read {:.1} MB (in the load generator's process)",
                self.web_clients,
                self.web_event_bytes as f64 / 1e6
            )?;
            writeln!(
                out,
                "  web view: opening them, before any game, took {:.0} KiB of heap ({:.1} KiB a \
                 stream) and {:.0} KiB resident; the idle figures below include them, the \
                 per-match figures do not",
                self.web_streams_heap_kib,
                self.web_streams_heap_kib / self.web_clients as f64,
                self.web_streams_rss_kib
            )?;
        }
        writeln!(
            out,
            "  memory per match: heap in use {:.1} KiB, resident {:.1} KiB (server process {:.1} MiB idle, {:.1} MiB loaded)",
            self.heap_per_match_kib, self.rss_per_match_kib, self.rss_idle_mib, self.rss_loaded_mib
        )?;
        writeln!(
            out,
            "clocks: {} matches of bots sleeping 0-{} ms, move limit {} ms, {} moves compared; the bots' process scheduled {}",
            self.matches,
            self.timed_think_max_ms,
            self.timed_move_limit_ms,
            self.timed_moves,
            bots_scheduling_text(self.clock_bots_scheduling)
        )?;
        writeln!(
            out,
            "  clock error (charged - true) p99 {:.3} ms, p50 {:.3} ms, max {:.3} ms; before lag credit p99 {:.3} ms",
            self.clock_error_ms_p99,
            self.clock_error_ms_p50,
            self.clock_error_ms_max,
            self.clock_error_uncredited_ms_p99
        )?;
        writeln!(
            out,
            "  where it goes (p99): turn written -> bot read it {:.3} ms; move written -> server received it {:.3} ms",
            self.clock_turn_to_bot_ms_p99, self.clock_move_to_server_ms_p99
        )?;
        writeln!(
            out,
            "  turn waited in the bot's socket (its process's delay) p99 {:.3} ms; clock error without it p99 {:.3} ms ({} moves)",
            self.clock_turn_waited_in_bot_ms_p99,
            self.clock_error_referee_ms_p99,
            self.bot_stamped_moves
        )?;
        writeln!(
            out,
            "  clock error at the wire (the goal's figure: from the bot's kernel, or its read where unstamped), every move: p99 {:.3} ms",
            self.clock_error_at_wire_ms_p99
        )?;
        writeln!(
            out,
            "  not charged: moves waited in the socket before being read, p99 {:.3} ms",
            self.clock_socket_wait_ms_p99
        )?;
        writeln!(out, "  false timeouts: {}", self.false_timeouts)?;
        if !self.false_timeout_turn_delays.is_empty() {
            let delays: Vec<String> = self
                .false_timeout_turn_delays
                .iter()
                .map(|d| match d {
                    None => "?".to_string(),
                    Some(d) => format!(
                        "{}/{:.1}/{:.1}/{:.1}{}",
                        d.received_ms.map_or("?".to_string(), |r| format!("{r:.1}")),
                        d.read_ms,
                        // The bot's own clock runs from its kernel's receipt where stamped.
                        d.received_ms.unwrap_or(d.read_ms) + d.used_ms,
                        d.declared_ms,
                        if d.no_move_read {
                            " (no move read)"
                        } else {
                            ""
                        }
                    ),
                })
                .collect();
            writeln!(
                out,
                "  each false timeout, ms after its turn was written: received by the bot's kernel / read by the bot / move written / loss declared: {}",
                delays.join(", ")
            )?;
        }
        writeln!(
            out,
            "  games lost on time: {} in all; {} of them by a bot that had used more than 90% at the wire (its process was held up)",
            self.timeouts_total, self.timeouts_bot_overran
        )?;
        writeln!(
            out,
            "  moves in time though their read was stamped past the deadline (a later line shared the read; found in the socket at the deadline): {}",
            self.shared_read_moves_in_time
        )?;
        writeln!(
            out,
            "goals (throughput figures are medians of the {} rounds; cost per move from 1,000 to 10,000 matches is compared across runs with --matches)",
            self.rounds.len()
        )?;
        for check in &self.goals {
            writeln!(
                out,
                "  {:<44} {:>12}   goal {:<12} {}",
                check.name,
                check.figure,
                check.goal,
                if check.met { "met" } else { "MISSED" }
            )?;
        }
        writeln!(
            out,
            "total {:.0} s; the machine is shared, so every figure is noisy",
            self.total_s
        )
    }

    /// Every goal with this run's figure.
    pub fn goal_checks(&self) -> Vec<GoalCheck> {
        let check = |name: &str, figure: String, goal: &str, met: bool| GoalCheck {
            name: name.to_string(),
            figure,
            goal: goal.to_string(),
            met,
        };
        vec![
            check(
                "Surakarta perft 6",
                format!("{:.3} s", self.perft_surakarta_6_s),
                "<= 3 s",
                self.perft_surakarta_6_s <= 3.0,
            ),
            check(
                "cpu_ratio: relay / referee CPU per move",
                format!("{:.2}", self.cpu_ratio),
                ">= 0.7",
                self.cpu_ratio >= 0.7,
            ),
            check(
                "throughput ratio: referee / relay moves/s",
                format!("{:.2}", self.referee_to_relay_ratio),
                ">= 0.75",
                self.referee_to_relay_ratio >= 0.75,
            ),
            check(
                "moves validated and relayed",
                format!("{:.0} /s", self.referee_moves_per_s),
                ">= 50000 /s",
                self.referee_moves_per_s >= 50_000.0,
            ),
            check(
                "overhead read move -> turn queued p99",
                format!("{} us", self.move_overhead_us_p99),
                "<= 1000 us",
                self.move_overhead_us_p99 <= 1000,
            ),
            check(
                "memory per match (heap in use)",
                format!("{:.1} KiB", self.heap_per_match_kib),
                "<= 24 KiB",
                self.heap_per_match_kib <= 24.0,
            ),
            check(
                "resident memory per match",
                format!("{:.1} KiB", self.rss_per_match_kib),
                "<= 64 KiB",
                self.rss_per_match_kib <= 64.0,
            ),
            check(
                "clock error at the wire (charged - true) p99",
                format!("{:.3} ms", self.clock_error_at_wire_ms_p99),
                "<= 1 ms",
                self.clock_error_at_wire_ms_p99 <= 1.0,
            ),
            check(
                "false timeouts",
                self.false_timeouts.to_string(),
                "0",
                self.false_timeouts == 0,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bots_not_in_real_time_come_with_a_caveat() {
        assert_eq!(
            bots_scheduling_text(Some(Scheduling::RealTime { priority: 1 })),
            "real-time (SCHED_RR 1)"
        );
        for (scheduling, starts) in [
            (Some(Scheduling::Nice(-10)), "nice -10 "),
            (Some(Scheduling::Nice(0)), "nice 0 "),
            (None, "unknown "),
        ] {
            let text = bots_scheduling_text(scheduling);
            assert!(
                text.starts_with(starts) && text.contains("not in real time"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_json_gives_how_the_bots_were_scheduled_as_text() {
        let json = |s: Option<Scheduling>| serde_json::to_string(&s).expect("json");
        assert_eq!(
            json(Some(Scheduling::RealTime { priority: 1 })),
            r#""real-time (SCHED_RR 1)""#
        );
        assert_eq!(json(Some(Scheduling::Nice(-10))), r#""nice -10""#);
        assert_eq!(json(None), "null");
    }
}

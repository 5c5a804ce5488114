//! The server's open files: the soft `RLIMIT_NOFILE` raised to the hard limit at start, and
//! the connection caps fitted under it with room kept for what must never fail for want of a
//! file descriptor (the journal, record files, standings, games.jsonl, built-in engines).

/// File descriptors kept out of every connection cap: outputs, the journal, the listeners,
/// built-in bots (two each: both ends of their loopback connection), engines' pipes. At least
/// this many, or an eighth of the limit when that is more.
pub const RESERVED_FDS: u64 = 64;

/// How the open-files limit is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFilesBudget {
    /// The soft limit in force (after raising it), if it could be read.
    pub limit: Option<u64>,
    /// The most connections the bot port holds at once.
    pub bot_connections: usize,
    /// The most connections the web port holds at once.
    pub web_connections: usize,
}

impl OpenFilesBudget {
    /// Fits the configured caps under `limit`: what is left after the reserve goes two thirds
    /// to the bot port and one third to the web port, each never above its configured cap.
    pub fn fit(limit: Option<u64>, bot_cap: usize, web_cap: usize) -> OpenFilesBudget {
        let Some(limit) = limit else {
            return OpenFilesBudget {
                limit,
                bot_connections: bot_cap,
                web_connections: web_cap,
            };
        };
        let reserved = RESERVED_FDS.max(limit / 8);
        let left = limit.saturating_sub(reserved);
        let share = |part: u64| usize::try_from(part).unwrap_or(usize::MAX).max(1);
        OpenFilesBudget {
            limit: Some(limit),
            bot_connections: bot_cap.min(share(left * 2 / 3)),
            web_connections: web_cap.min(share(left / 3)),
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (a server started from a shell often
/// inherits 1,024 while the system allows far more) and returns the soft limit now in force;
/// `None` where it cannot be read.
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given, which lives for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit only reads the struct it is given.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit = raised;
            } else {
                tracing::warn!(
                    soft = limit.rlim_cur,
                    hard = limit.rlim_max,
                    "cannot raise the open-files limit"
                );
            }
        }
        Some(limit.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_fit_under_the_limit_with_room_kept_for_output() {
        let big = OpenFilesBudget::fit(Some(1 << 20), 1024, 200);
        assert_eq!((big.bot_connections, big.web_connections), (1024, 200));
        let small = OpenFilesBudget::fit(Some(256), 1024, 200);
        assert_eq!(small.bot_connections, 128);
        assert_eq!(small.web_connections, 64);
        assert!(
            (small.bot_connections + small.web_connections) as u64 + RESERVED_FDS <= 256,
            "{small:?}"
        );
        let unknown = OpenFilesBudget::fit(None, 10, 20);
        assert_eq!((unknown.bot_connections, unknown.web_connections), (10, 20));
        assert_eq!(OpenFilesBudget::fit(Some(10), 5, 5).bot_connections, 1);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let limit = raise_open_files_limit().expect("readable on unix");
        let mut now = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut now) }, 0);
        assert_eq!(limit, now.rlim_cur);
        assert_eq!(now.rlim_cur, now.rlim_max);
    }
}

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
    /// Fits the configured caps under `limit`, after the reserve: when both caps fit in what is
    /// left, each port gets its cap; otherwise the bot port gets two thirds and the web port a
    /// third, and a port that needs less than its share leaves the rest to the other (a league
    /// without a web view, `web_cap` 0, gives every file to its bots).
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
        let want = |cap: usize| u64::try_from(cap).unwrap_or(u64::MAX).min(left);
        let (bots_want, web_want) = (want(bot_cap), want(web_cap));
        let (bots, web) = if bots_want.saturating_add(web_want) <= left {
            (bots_want, web_want)
        } else {
            let web = web_want.min((left / 3).max(left - bots_want));
            (bots_want.min(left - web), web)
        };
        let count = |part: u64| usize::try_from(part).unwrap_or(usize::MAX);
        OpenFilesBudget {
            limit: Some(limit),
            bot_connections: count(bots).max(1),
            web_connections: count(web).max(usize::from(web_cap > 0)),
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
        // A port that needs less than its share leaves the rest to the other.
        let few_browsers = OpenFilesBudget::fit(Some(20_000), 19_900, 512);
        assert_eq!(few_browsers.web_connections, 512);
        assert_eq!(few_browsers.bot_connections, 20_000 - 2_500 - 512);
        let no_web_view = OpenFilesBudget::fit(Some(20_000), 19_900, 0);
        assert_eq!(
            (no_web_view.bot_connections, no_web_view.web_connections),
            (17_500, 0)
        );
        let few_bots = OpenFilesBudget::fit(Some(20_000), 100, 50_000);
        assert_eq!(
            (few_bots.bot_connections, few_bots.web_connections),
            (100, 17_400)
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

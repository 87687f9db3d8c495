//! The log rate limit of server code: one token bucket per module, shared by the Lua,
//! JavaScript and native loggers (they all write through [`Nk::log`](crate::Nk::log)).
//!
//! A module may write `burst` lines at once and `lines_per_second` lines a second after that;
//! excess lines are dropped and counted (`metafi_runtime_log_lines_dropped_total{module}`),
//! and the first line written after drops is preceded by one summary line
//! ("module X dropped N log lines in the last T s"), at most one a [`SUMMARY_INTERVAL`] so a
//! sustained flood adds one line a second, not one per line let through. A script logging in
//! a loop therefore cannot fill the disk or starve the logging of the rest of the server.
//!
//! Sans-IO: [`LogLimiter::admit`] takes `now`, so tests drive it with their own clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Most modules tracked one by one; further names (code built with `eval` under invented
/// file names) share one bucket, so the table cannot grow without bound.
const MAX_TRACKED_MODULES: usize = 4096;

/// Least time between two summaries of one module.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(1);

/// Bucket of the modules past [`MAX_TRACKED_MODULES`].
const OVERFLOW_MODULE: &str = "(other modules)";

/// The limit (`runtime.log_lines_per_second`, `runtime.log_burst_lines`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimit {
    /// Sustained lines per second per module; 0 turns the limit off.
    pub lines_per_second: u32,
    /// Lines a module may write at once after being quiet (the bucket's size), at least 1.
    pub burst: u32,
}

impl Default for LogLimit {
    fn default() -> LogLimit {
        LogLimit {
            lines_per_second: 100,
            burst: 1000,
        }
    }
}

impl LogLimit {
    /// No limit at all.
    pub const UNLIMITED: LogLimit = LogLimit {
        lines_per_second: 0,
        burst: 0,
    };

    fn is_unlimited(&self) -> bool {
        self.lines_per_second == 0
    }
}

/// Whether a line may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Write,
    /// Write it, after a summary of the lines dropped since the first drop, `over` ago.
    WriteAfterDrops {
        dropped: u64,
        over: Duration,
    },
    Drop,
}

/// Token buckets by module name.
#[derive(Debug)]
pub struct LogLimiter {
    limit: LogLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled: Instant,
    dropped: u64,
    /// When the first line not yet summarised was dropped (the summary's "in the last T s").
    first_drop: Option<Instant>,
}

impl LogLimiter {
    pub fn new(limit: LogLimit) -> LogLimiter {
        LogLimiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    pub fn limit(&self) -> LogLimit {
        self.limit
    }

    /// Takes a token from `module`'s bucket if it has one.
    pub fn admit(&self, module: &str, now: Instant) -> Admit {
        self.admit_keyed(module, now).0
    }

    /// [`admit`](Self::admit), and the name of the bucket that answered: `module`, or
    /// `"(other modules)"` past `MAX_TRACKED_MODULES`. Label drop metrics with it, not with
    /// `module`, so invented module names cannot grow the metric series without bound.
    pub fn admit_keyed<'m>(&self, module: &'m str, now: Instant) -> (Admit, &'m str) {
        if self.limit.is_unlimited() {
            return (Admit::Write, module);
        }
        let mut buckets = self.buckets.lock();
        let key = if buckets.contains_key(module) || buckets.len() < MAX_TRACKED_MODULES {
            module
        } else {
            OVERFLOW_MODULE
        };
        if !buckets.contains_key(key) {
            buckets.insert(
                key.to_owned(),
                Bucket {
                    tokens: f64::from(self.limit.burst.max(1)),
                    refilled: now,
                    dropped: 0,
                    first_drop: None,
                },
            );
        }
        let Some(bucket) = buckets.get_mut(key) else {
            // Inserted just above.
            return (Admit::Write, key);
        };
        let elapsed = now.saturating_duration_since(bucket.refilled).as_secs_f64();
        bucket.refilled = bucket.refilled.max(now);
        bucket.tokens = (bucket.tokens + elapsed * f64::from(self.limit.lines_per_second))
            .min(f64::from(self.limit.burst.max(1)));
        if bucket.tokens < 1.0 {
            bucket.dropped += 1;
            bucket.first_drop.get_or_insert(now);
            return (Admit::Drop, key);
        }
        bucket.tokens -= 1.0;
        let admit = match bucket.first_drop {
            Some(since) if now.saturating_duration_since(since) >= SUMMARY_INTERVAL => {
                bucket.first_drop = None;
                Admit::WriteAfterDrops {
                    dropped: std::mem::take(&mut bucket.dropped),
                    over: now.saturating_duration_since(since),
                }
            }
            _ => Admit::Write,
        };
        (admit, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(lines_per_second: u32, burst: u32) -> LogLimiter {
        LogLimiter::new(LogLimit {
            lines_per_second,
            burst,
        })
    }

    #[test]
    fn a_burst_passes_then_excess_lines_are_dropped() {
        let limiter = limiter(100, 1000);
        let now = Instant::now();
        let written = (0..100_000)
            .filter(|_| limiter.admit("chatty", now) != Admit::Drop)
            .count();
        assert_eq!(written, 1000, "the burst, and nothing more at one instant");
    }

    #[test]
    fn the_rate_refills_and_the_first_line_after_drops_carries_the_summary() {
        let limiter = limiter(100, 10);
        let start = Instant::now();
        for _ in 0..10 {
            assert_eq!(limiter.admit("m", start), Admit::Write);
        }
        for _ in 0..5 {
            assert_eq!(limiter.admit("m", start), Admit::Drop);
        }
        // 100 lines a second: one token every 10 ms. Within the summary interval the lines
        // let through carry no summary.
        let later = start + Duration::from_millis(25);
        assert_eq!(limiter.admit("m", later), Admit::Write);
        assert_eq!(limiter.admit("m", later), Admit::Write);
        assert_eq!(limiter.admit("m", later), Admit::Drop);
        let resumed = start + Duration::from_millis(1500);
        assert_eq!(
            limiter.admit("m", resumed),
            Admit::WriteAfterDrops {
                dropped: 6,
                over: Duration::from_millis(1500)
            }
        );
        assert_eq!(limiter.admit("m", resumed), Admit::Write);
        // Quiet refills the bucket to its burst, not beyond.
        let quiet = resumed + Duration::from_secs(60);
        let written = (0..100)
            .filter(|_| limiter.admit("m", quiet) != Admit::Drop)
            .count();
        assert_eq!(written, 10);
    }

    #[test]
    fn modules_have_their_own_buckets() {
        let limiter = limiter(1, 2);
        let now = Instant::now();
        assert_eq!(limiter.admit("a", now), Admit::Write);
        assert_eq!(limiter.admit("a", now), Admit::Write);
        assert_eq!(limiter.admit("a", now), Admit::Drop);
        assert_eq!(
            limiter.admit("b", now),
            Admit::Write,
            "a noisy module does not silence another"
        );
    }

    #[test]
    fn a_zero_rate_means_no_limit() {
        let limiter = LogLimiter::new(LogLimit::UNLIMITED);
        let now = Instant::now();
        assert!((0..10_000).all(|_| limiter.admit("m", now) == Admit::Write));
    }

    #[test]
    fn invented_module_names_share_one_bucket_past_the_table_size() {
        let limiter = limiter(1, 1);
        let now = Instant::now();
        for i in 0..MAX_TRACKED_MODULES {
            assert_eq!(limiter.admit(&format!("m{i}"), now), Admit::Write);
        }
        assert_eq!(limiter.admit("new-1", now), Admit::Write);
        assert_eq!(
            limiter.admit("new-2", now),
            Admit::Drop,
            "shares the overflow bucket"
        );
        assert_eq!(limiter.buckets.lock().len(), MAX_TRACKED_MODULES + 1);
    }

    #[test]
    fn drops_of_invented_module_names_are_labelled_with_the_shared_bucket() {
        let limiter = limiter(1, 1);
        let now = Instant::now();
        for i in 0..MAX_TRACKED_MODULES {
            let module = format!("m{i}");
            assert_eq!(
                limiter.admit_keyed(&module, now),
                (Admit::Write, module.as_str())
            );
        }
        assert_eq!(limiter.admit_keyed("m0", now), (Admit::Drop, "m0"));
        assert_eq!(
            limiter.admit_keyed("new-1", now),
            (Admit::Write, OVERFLOW_MODULE)
        );
        assert_eq!(
            limiter.admit_keyed("new-2", now),
            (Admit::Drop, OVERFLOW_MODULE),
            "one label for every name past the table size, not one series each"
        );
    }
}

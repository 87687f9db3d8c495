//! The one checker every section validates with: it collects problems (so an operator sees all
//! of them at once, one per line) and turns bounded raw integers into the types components take,
//! with each key named once.

use std::net::IpAddr;
use std::time::Duration;

/// One hour in milliseconds, the usual ceiling of a `_ms` key.
pub(super) const HOUR_MS: i64 = 3_600_000;

/// Collects configuration problems. A failed check records its problem and hands back the
/// lowest allowed value, so validation goes on and reports the rest.
#[derive(Debug, Default)]
pub(super) struct Checker {
    problems: Vec<String>,
}

/// A TCP or UDP port number: a raw key checked to 0..=65535, so no `as u16` can wrap it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Port(u16);

impl Port {
    pub(super) fn get(self) -> u16 {
        self.0
    }
}

/// The cores this process may use (1 when unknown): what a count of 0 scales with, for keys where
/// 0 means "per core".
pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Checker {
    /// Records a problem that is not a bound (a bad name, a missing pair, …).
    pub(super) fn problem(&mut self, text: impl Into<String>) {
        self.problems.push(text.into());
    }

    /// `value` if it lies in `min..=max`; otherwise records
    /// "`key` = value: must be between min and max" and returns `min`.
    pub(super) fn range(&mut self, key: &str, value: i64, min: i64, max: i64) -> i64 {
        if (min..=max).contains(&value) {
            value
        } else {
            self.problem(format!("{key} = {value}: must be between {min} and {max}"));
            min
        }
    }

    /// A count, size or capacity in `min..=max` (`min` ≥ 0).
    pub(super) fn count(&mut self, key: &str, value: i64, min: i64, max: i64) -> usize {
        usize::try_from(self.range(key, value, min, max)).unwrap_or(0)
    }

    /// A count that fits a `u32`, in `min..=max` (`min` ≥ 0, `max` ≤ `u32::MAX`).
    pub(super) fn count_u32(&mut self, key: &str, value: i64, min: i64, max: i64) -> u32 {
        u32::try_from(self.range(key, value, min, max)).unwrap_or(0)
    }

    /// A `_ms` key in `min..=max` milliseconds, as a [`Duration`].
    pub(super) fn millis(&mut self, key: &str, value: i64, min: i64, max: i64) -> Duration {
        Duration::from_millis(u64::try_from(self.range(key, value, min, max)).unwrap_or(0))
    }

    /// A `_sec` key in `min..=max` seconds, as a [`Duration`].
    pub(super) fn secs(&mut self, key: &str, value: i64, min: i64, max: i64) -> Duration {
        Duration::from_secs(u64::try_from(self.range(key, value, min, max)).unwrap_or(0))
    }

    /// A port key, 0 (any free port) to 65535.
    pub(super) fn port(&mut self, key: &str, value: i64) -> Port {
        Port(u16::try_from(self.range(key, value, 0, 65_535)).unwrap_or(0))
    }

    /// An IP address key; `None` (and a problem) when it does not parse.
    pub(super) fn ip(&mut self, key: &str, text: &str) -> Option<IpAddr> {
        match text.parse() {
            Ok(ip) => Some(ip),
            Err(_) => {
                self.problem(format!(
                    "{key} = \"{text}\": not an IP address (for example 127.0.0.1 or 0.0.0.0)"
                ));
                None
            }
        }
    }

    /// The problems so far, in the order found (for tests of one section).
    #[cfg(test)]
    pub(super) fn problems(&self) -> &[String] {
        &self.problems
    }

    /// `Ok` when nothing was wrong; otherwise every problem, one per line.
    pub(super) fn finish(self) -> anyhow::Result<()> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            anyhow::bail!(
                "invalid configuration:\n  - {}",
                self.problems.join("\n  - ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_names_the_key_once_and_keeps_going() {
        let mut check = Checker::default();
        assert_eq!(check.port("socket.port", 70_000), Port(0));
        assert_eq!(
            check.millis("socket.pong_wait_ms", 5, 20, HOUR_MS),
            Duration::from_millis(20)
        );
        assert_eq!(check.count("match.input_queue_size", 8, 1, 16), 8);
        let error = check.finish().unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid configuration:\n  - socket.port = 70000: must be between 0 and 65535\n  - socket.pong_wait_ms = 5: must be between 20 and 3600000"
        );
    }
}

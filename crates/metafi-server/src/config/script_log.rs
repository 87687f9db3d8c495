//! The `runtime.log_*` keys: the per-module log rate limit of server code, checked.

use metafi_runtime::LogLimit;

use super::RawConfig;

/// Most lines a second (and at once) a limit may allow; beyond it there is no limit worth the
/// name, and 0 says so plainly.
const MAX_LINES: i64 = 1_000_000;

pub(super) fn log_limit(raw: &RawConfig, problems: &mut Vec<String>) -> LogLimit {
    let r = &raw.runtime;
    let mut lines = |key: &str, value: i64, min: i64| -> u32 {
        if (min..=MAX_LINES).contains(&value) {
            value as u32
        } else {
            problems.push(format!(
                "{key} = {value}: must be between {min} and {MAX_LINES}"
            ));
            min as u32
        }
    };
    LogLimit {
        lines_per_second: lines("runtime.log_lines_per_second", r.log_lines_per_second, 0),
        burst: lines("runtime.log_burst_lines", r.log_burst_lines, 1),
    }
}

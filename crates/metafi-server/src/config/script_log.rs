//! The `runtime.log_*` keys: the per-module log rate limit of server code, checked.

use metafi_runtime::LogLimit;

use super::check::Checker;
use super::raw::RawRuntime;

/// Most lines a second (and at once) a limit may allow; beyond it there is no limit worth the
/// name, and 0 says so plainly.
const MAX_LINES: i64 = 1_000_000;

pub(super) fn validate(r: &RawRuntime, check: &mut Checker) -> LogLimit {
    LogLimit {
        lines_per_second: check.count_u32(
            "runtime.log_lines_per_second",
            r.log_lines_per_second,
            0,
            MAX_LINES,
        ),
        burst: check.count_u32("runtime.log_burst_lines", r.log_burst_lines, 1, MAX_LINES),
    }
}

//! The `[shutdown]` keys, checked.

use std::time::Duration;

use super::check::Checker;
use super::raw::RawShutdown;

/// How long in-flight work may take to finish after a shutdown signal.
pub(super) fn validate(s: &RawShutdown, check: &mut Checker) -> Duration {
    check.secs("shutdown.grace_period_sec", s.grace_period_sec, 0, 3600)
}

//! The `[signin_throttle]` keys, checked: failed sign-ins per account and address.

use metafi_core::SignInThrottleConfig;

use super::check::Checker;
use super::raw::RawSignInThrottle;

/// The most failures a throttle may allow before it refuses.
const MAX_FAILURES: i64 = 1_000_000;

pub(super) fn validate(t: &RawSignInThrottle, check: &mut Checker) -> SignInThrottleConfig {
    SignInThrottleConfig {
        max_failures_per_account: check.count_u32(
            "signin_throttle.max_failures_per_account",
            t.max_failures_per_account,
            0,
            MAX_FAILURES,
        ),
        max_failures_per_address: check.count_u32(
            "signin_throttle.max_failures_per_address",
            t.max_failures_per_address,
            0,
            MAX_FAILURES,
        ),
        window: check.secs("signin_throttle.window_sec", t.window_sec, 1, 86_400),
        max_entries: check.count("signin_throttle.max_entries", t.max_entries, 1, 10_000_000),
    }
}

//! The `[accounts]` keys, checked: password hashing cost and concurrency, export size.

use metafi_core::AccountsConfig;

use super::check::{Checker, cores};
use super::raw::RawAccounts;

pub(super) fn validate(a: &RawAccounts, check: &mut Checker) -> AccountsConfig {
    let bcrypt_cost = check.count_u32("accounts.bcrypt_cost", a.bcrypt_cost, 4, 31);
    let hashes = check.count(
        "accounts.max_concurrent_hashes",
        a.max_concurrent_hashes,
        0,
        1024,
    );
    let max_exported_objects = check.count(
        "accounts.max_exported_objects",
        a.max_exported_objects,
        1,
        1_000_000,
    );
    AccountsConfig {
        bcrypt_cost,
        max_exported_objects,
        // 0: one per core.
        max_concurrent_hashes: if hashes == 0 { cores() } else { hashes },
    }
}

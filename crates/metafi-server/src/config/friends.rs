//! The `[friends]` keys, checked: the bound on one user's relationships.

use metafi_core::FriendsConfig;

use super::check::Checker;
use super::raw::RawFriends;

/// The largest `friends.max_friends` accepted.
const MAX_FRIENDS: i64 = 1_000_000;

pub(super) fn validate(f: &RawFriends, check: &mut Checker) -> FriendsConfig {
    FriendsConfig {
        max_friends: check.count("friends.max_friends", f.max_friends, 1, MAX_FRIENDS),
    }
}

//! The `[notification]` keys, checked: the bounds of the notifications service.

use metafi_core::NotificationsConfig;

use super::check::Checker;
use super::raw::RawNotification;

pub(super) fn validate(n: &RawNotification, check: &mut Checker) -> NotificationsConfig {
    NotificationsConfig {
        max_per_send: check.count("notification.max_per_send", n.max_per_send, 1, 100_000),
        send_all_batch: check.count("notification.send_all_batch", n.send_all_batch, 1, 100_000),
    }
}

//! [`NotificationPush`]: how the notifications service reaches open sockets. The realtime layer
//! implements it over its session registry and message router (`metafi-realtime`'s
//! `SessionPush`); core never sees a socket.

use std::fmt;

use metafi_proto::api::Notification;
use uuid::Uuid;

/// Delivers notifications live. Never waits on a socket: an implementation only queues the
/// message in each session's bounded outbox.
pub trait NotificationPush: Send + Sync + fmt::Debug {
    /// Pushes `notifications` (one `notifications` envelope) to every open socket of
    /// `user_id`; returns how many sockets took it.
    fn push(&self, user_id: Uuid, notifications: Vec<Notification>) -> usize;

    /// Pushes one notification to every open socket of every user (Nakama's non-persistent
    /// `notification_send_all`); returns how many sockets took it.
    fn push_all(&self, notification: Notification) -> usize;
}

/// Pushes nothing: a server without sockets, or tests that only look at storage.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPush;

impl NotificationPush for NoPush {
    fn push(&self, _: Uuid, _: Vec<Notification>) -> usize {
        0
    }

    fn push_all(&self, _: Notification) -> usize {
        0
    }
}

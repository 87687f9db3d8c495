//! [`Notifications`]: Nakama's in-app notifications. Sending stores the persistent ones in one
//! write and pushes every one live to each open socket of its receiver ([`NotificationPush`]);
//! receivers list theirs with Nakama's cacheable cursor and delete them; server code also reads,
//! updates and deletes them by id and sends to every user. It implements [`Notifier`], the seam
//! other features (friends, groups, chat) notify users through.
//!
//! Files: this one (sending, listing, the receiver's deletes), `by_id.rs` (server code's reads,
//! updates and deletes by id), `broadcast.rs` (`send_all`), `cursor.rs`, `push.rs`.

mod broadcast;
mod by_id;
mod cursor;
mod push;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use metafi_proto::api::Notification;
use metafi_proto::wkt::Timestamp;
use metafi_storage::{Storage, StorageError, StoredNotification};
use uuid::Uuid;

pub use broadcast::Broadcast;
pub use push::{NoPush, NotificationPush};

use crate::notify::{NewNotification, Notifier};
use crate::{Clock, CoreError};

/// Limits of the notifications service (`[notification]` in the server config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationsConfig {
    /// Most notifications one send may carry (`notification.max_per_send`).
    pub max_per_send: usize,
    /// Users one page of a persistent send to everyone stores at a time
    /// (`notification.send_all_batch`; Nakama pages by 10,000).
    pub send_all_batch: usize,
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        NotificationsConfig {
            max_per_send: 1000,
            send_all_batch: 10_000,
        }
    }
}

/// Most notifications one listing may return (server code's limit; clients get 100).
pub const MAX_LIST_LIMIT: usize = 1000;

/// A page of a user's notifications.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotificationPage {
    pub notifications: Vec<Notification>,
    /// Where the next listing resumes; empty when there is none to hand out.
    pub cursor: String,
}

/// Notifications: send (store + push), list, delete.
#[derive(Debug)]
pub struct Notifications {
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    push: Arc<dyn NotificationPush>,
    config: NotificationsConfig,
}

impl Notifications {
    pub fn new(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        push: Arc<dyn NotificationPush>,
        config: NotificationsConfig,
    ) -> Notifications {
        Notifications {
            store,
            clock,
            push,
            config,
        }
    }

    pub fn config(&self) -> NotificationsConfig {
        self.config
    }

    /// Sends notifications: checks them all first (nothing is sent if one is refused), stores
    /// the persistent ones in one write (all or none), then pushes each receiver's to every
    /// socket they have open, in the order given. Returns them as sent.
    pub async fn send(
        &self,
        notifications: Vec<NewNotification>,
    ) -> Result<Vec<Notification>, CoreError> {
        if notifications.len() > self.config.max_per_send {
            return Err(CoreError::invalid(format!(
                "Too many notifications: at most {} per send (notification.max_per_send).",
                self.config.max_per_send
            )));
        }
        for n in &notifications {
            check(&n.subject, &n.content)?;
        }
        let now_ms = self.clock.now_ms();
        let stored: Vec<(StoredNotification, bool)> = notifications
            .into_iter()
            .map(|n| {
                let record = StoredNotification {
                    // Version 7 ids rise within a process, so notifications sent in the same
                    // millisecond list in the order they were sent and a kept cursor misses
                    // none of them.
                    id: Uuid::now_v7(),
                    user_id: n.user_id,
                    subject: n.subject,
                    content: n.content,
                    code: n.code,
                    sender_id: n.sender_id.unwrap_or(Uuid::nil()),
                    create_time_ms: now_ms,
                };
                (record, n.persistent)
            })
            .collect();
        let persistent: Vec<StoredNotification> = stored
            .iter()
            .filter(|(_, persistent)| *persistent)
            .map(|(n, _)| n.clone())
            .collect();
        if !persistent.is_empty() {
            self.store
                .insert_notifications(persistent)
                .await
                .map_err(send_error)?;
        }
        let sent: Vec<(Uuid, Notification)> = stored
            .iter()
            .map(|(n, persistent)| (n.user_id, wire(n, *persistent)))
            .collect();
        self.push_grouped(&sent);
        Ok(sent.into_iter().map(|(_, n)| n).collect())
    }

    /// One `notifications` envelope per receiver, with theirs in the order sent.
    fn push_grouped(&self, sent: &[(Uuid, Notification)]) {
        let mut order: Vec<Uuid> = Vec::new();
        let mut by_user: HashMap<Uuid, Vec<Notification>> = HashMap::new();
        for (user, n) in sent {
            by_user
                .entry(*user)
                .or_insert_with(|| {
                    order.push(*user);
                    Vec::new()
                })
                .push(n.clone());
        }
        for user in order {
            if let Some(ns) = by_user.remove(&user) {
                self.push.push(user, ns);
            }
        }
    }

    /// A user's notifications, oldest first, after `cursor` (empty: from the start).
    ///
    /// `cacheable` (clients, Nakama's `cacheable_cursor`): the cursor always comes back, at
    /// the last notification listed — or, for an empty page, the cursor sent (or a "from the
    /// start" cursor) — so a client that keeps it later sees only newer ones. Otherwise (server
    /// code) a cursor comes back only when more follow. A cursor that does not decode is
    /// `InvalidArgument` "Malformed cursor was used.".
    pub async fn list(
        &self,
        user_id: Uuid,
        limit: usize,
        cursor: &str,
        cacheable: bool,
    ) -> Result<NotificationPage, CoreError> {
        let limit = limit.clamp(1, MAX_LIST_LIMIT);
        let after = if cursor.is_empty() {
            None
        } else {
            cursor::decode(cursor).map_err(|()| CoreError::invalid("Malformed cursor was used."))?
        };
        let mut rows = self
            .store
            .list_notifications(user_id, after, limit + 1)
            .await
            .map_err(|e| CoreError::storage("listing notifications", e))?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let cursor = match rows.last() {
            None if cacheable && cursor.is_empty() => cursor::encode(None),
            None if cacheable => cursor.to_owned(),
            None => String::new(),
            Some(last) if cacheable || more => cursor::encode(Some(last.position())),
            Some(_) => String::new(),
        };
        Ok(NotificationPage {
            notifications: rows.iter().map(|n| wire(n, true)).collect(),
            cursor,
        })
    }

    /// Deletes the user's own notifications with these ids; other ids are ignored.
    pub async fn delete(&self, user_id: Uuid, ids: &[Uuid]) -> Result<(), CoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.store
            .delete_notifications(ids, Some(user_id))
            .await
            .map_err(|e| CoreError::storage("deleting notifications", e))?;
        Ok(())
    }
}

#[async_trait]
impl Notifier for Notifications {
    async fn notify(&self, notifications: Vec<NewNotification>) -> Result<(), CoreError> {
        self.send(notifications).await.map(|_| ())
    }
}

/// Nakama's rules for what a notification carries: a subject, and content that is a JSON
/// object.
fn check(subject: &str, content: &str) -> Result<(), CoreError> {
    if subject.is_empty() {
        return Err(CoreError::invalid(
            "expects subject to be provided and to be non-empty",
        ));
    }
    match serde_json::from_str::<serde_json::Value>(content) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err(CoreError::invalid(
            "expects content to be provided and be valid JSON",
        )),
    }
}

fn send_error(e: StorageError) -> CoreError {
    match e {
        StorageError::NotFound { .. } => {
            CoreError::not_found("A notification's receiver does not exist.")
        }
        other => CoreError::storage("storing notifications", other),
    }
}

/// A notification as clients see it: times in whole seconds (Nakama keeps only the seconds),
/// the system's sender as the nil UUID, as Nakama.
pub(crate) fn wire(n: &StoredNotification, persistent: bool) -> Notification {
    Notification {
        id: n.id.to_string(),
        subject: n.subject.clone(),
        content: n.content.clone(),
        code: n.code,
        // The system's sender is the nil UUID, shown as Nakama shows it (pinned against Nakama
        // 3.40 by tests/compat/notification.test.mjs).
        sender_id: n.sender_id.to_string(),
        create_time: Some(Timestamp::from_millis(
            n.create_time_ms.div_euclid(1000).saturating_mul(1000),
        )),
        persistent,
    }
}

//! `send_all`: one notification to every user (Nakama's `notification_send_all`). Not
//! persistent: pushed to every open socket, nothing stored. Persistent: stored for every
//! account, page by page in id order (`notification.send_all_batch` users at a time), each
//! page pushed live to its users' sockets once it is stored.

use metafi_storage::StoredNotification;
use uuid::Uuid;

use super::{Notifications, check, send_error, wire};
use crate::CoreError;

/// What `send_all` sends: Nakama's system notification (no sender).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broadcast {
    pub subject: String,
    /// A JSON object, as text.
    pub content: String,
    pub code: i32,
    pub persistent: bool,
}

impl Notifications {
    /// Sends `broadcast` to every user; returns how many accounts (persistent) or sockets
    /// (not persistent) it reached. Unlike Nakama, which stores in the background and answers
    /// at once, this returns when every page is stored, so a failure reaches the caller.
    pub async fn send_all(&self, broadcast: Broadcast) -> Result<usize, CoreError> {
        check(&broadcast.subject, &broadcast.content)?;
        let now_ms = self.clock.now_ms();
        let template = StoredNotification {
            id: Uuid::now_v7(),
            user_id: Uuid::nil(),
            subject: broadcast.subject,
            content: broadcast.content,
            code: broadcast.code,
            sender_id: Uuid::nil(),
            create_time_ms: now_ms,
        };
        if !broadcast.persistent {
            return Ok(self.push.push_all(wire(&template, false)));
        }
        let batch = self.config.send_all_batch.max(1);
        let mut after = Uuid::nil();
        let mut reached = 0;
        loop {
            let users = self
                .store
                .users_after(after, batch)
                .await
                .map_err(|e| CoreError::storage("listing users to notify", e))?;
            let Some(last) = users.last() else {
                break;
            };
            after = last.id;
            let page: Vec<StoredNotification> = users
                .iter()
                .map(|user| StoredNotification {
                    id: Uuid::now_v7(),
                    user_id: user.id,
                    ..template.clone()
                })
                .collect();
            match self.store.insert_notifications(page.clone()).await {
                Ok(()) => {}
                // An account deleted between the listing and the insert: store the page
                // without it rather than fail everyone.
                Err(metafi_storage::StorageError::NotFound { .. }) => {
                    self.insert_existing(page.clone()).await?;
                }
                Err(e) => return Err(send_error(e)),
            }
            for n in &page {
                self.push.push(n.user_id, vec![wire(n, true)]);
            }
            reached += page.len();
            if users.len() < batch {
                break;
            }
        }
        Ok(reached)
    }

    /// Inserts one by one, skipping receivers that no longer exist.
    async fn insert_existing(&self, page: Vec<StoredNotification>) -> Result<(), CoreError> {
        for n in page {
            match self.store.insert_notifications(vec![n]).await {
                Ok(()) | Err(metafi_storage::StorageError::NotFound { .. }) => {}
                Err(e) => return Err(send_error(e)),
            }
        }
        Ok(())
    }
}

//! What server code does to stored notifications by id (`nk.notifications_get_id`,
//! `notifications_delete_id`, `notifications_update`): any user's, or one user's when a user
//! id is given.

use metafi_storage::{NotificationUpdate, StoredNotification};
use uuid::Uuid;

use super::Notifications;
use crate::CoreError;

impl Notifications {
    /// The stored notifications with these ids (unknown ids left out), only `user_id`'s when
    /// given.
    pub async fn by_id(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<Vec<StoredNotification>, CoreError> {
        self.check_count(ids.len())?;
        self.store
            .notifications_by_id(ids, user_id)
            .await
            .map_err(|e| CoreError::storage("reading notifications", e))
    }

    /// Deletes the notifications with these ids, only `user_id`'s when given.
    pub async fn delete_by_id(&self, ids: &[Uuid], user_id: Option<Uuid>) -> Result<(), CoreError> {
        self.check_count(ids.len())?;
        self.store
            .delete_notifications(ids, user_id)
            .await
            .map_err(|e| CoreError::storage("deleting notifications", e))?;
        Ok(())
    }

    /// Changes stored notifications (all in one write); unknown ids change nothing. A new
    /// subject must not be empty and new content must be a JSON object.
    pub async fn update(&self, updates: Vec<NotificationUpdate>) -> Result<(), CoreError> {
        self.check_count(updates.len())?;
        for u in &updates {
            if u.subject.as_deref() == Some("") {
                return Err(CoreError::invalid(
                    "expects subject to be a non-empty string",
                ));
            }
            if let Some(content) = &u.content
                && !matches!(
                    serde_json::from_str::<serde_json::Value>(content),
                    Ok(serde_json::Value::Object(_))
                )
            {
                return Err(CoreError::invalid("expects content to be a JSON object"));
            }
        }
        self.store
            .update_notifications(updates)
            .await
            .map_err(|e| CoreError::storage("updating notifications", e))
    }

    /// One call names at most `notification.max_per_send` notifications.
    pub(super) fn check_count(&self, count: usize) -> Result<(), CoreError> {
        if count > self.config.max_per_send {
            return Err(CoreError::invalid(format!(
                "Too many notifications: at most {} per call (notification.max_per_send).",
                self.config.max_per_send
            )));
        }
        Ok(())
    }
}

//! Persistent notifications of users (Nakama's `notification` table): stored when a
//! notification is sent with `persistent`, listed by the receiver in `(create_time, id)`
//! order, deleted by the receiver or by server code, removed with the account.

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// Nakama's column width of `subject` (`VARCHAR(255)`), in characters.
pub const MAX_SUBJECT_CHARS: usize = 255;

/// A stored notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNotification {
    pub id: Uuid,
    /// The receiver; the row goes when the account does.
    pub user_id: Uuid,
    pub subject: String,
    /// A JSON object, as text.
    pub content: String,
    /// Nakama's `SMALLINT`: within `i16`, below zero reserved for the server.
    pub code: i32,
    /// The nil UUID for the system (Nakama's convention; shown as an empty sender).
    pub sender_id: Uuid,
    pub create_time_ms: i64,
}

/// Where a listing resumes: strictly after this `(create_time, id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotificationPosition {
    pub create_time_ms: i64,
    pub id: Uuid,
}

impl StoredNotification {
    /// The position right after this notification.
    pub fn position(&self) -> NotificationPosition {
        NotificationPosition {
            create_time_ms: self.create_time_ms,
            id: self.id,
        }
    }
}

/// A change server code makes to a stored notification; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationUpdate {
    pub id: Uuid,
    /// A JSON object, as text.
    pub content: Option<String>,
    pub subject: Option<String>,
    pub sender_id: Option<Uuid>,
}

/// Persistent notifications.
#[async_trait]
pub trait NotificationStore: Send + Sync {
    /// Stores every notification in one transaction: all or none. `NotFound { what: "user" }`
    /// when a receiver does not exist (nothing is stored then); `Invalid` for a code outside
    /// `i16` or an id stored before.
    async fn insert_notifications(
        &self,
        notifications: Vec<StoredNotification>,
    ) -> Result<(), StorageError>;

    /// Up to `limit` of `user_id`'s notifications after `after` (from the first without), in
    /// `(create_time, id)` order.
    async fn list_notifications(
        &self,
        user_id: Uuid,
        after: Option<NotificationPosition>,
        limit: usize,
    ) -> Result<Vec<StoredNotification>, StorageError>;

    /// The notifications with these ids (in no particular order; unknown ids are left out),
    /// only `user_id`'s when it is given.
    async fn notifications_by_id(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<Vec<StoredNotification>, StorageError>;

    /// Deletes the notifications with these ids, only `user_id`'s when it is given; unknown
    /// ids (or other users') are ignored. Returns how many went.
    async fn delete_notifications(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<u64, StorageError>;

    /// Applies every update in one transaction; updates of unknown ids change nothing.
    async fn update_notifications(
        &self,
        updates: Vec<NotificationUpdate>,
    ) -> Result<(), StorageError>;
}

/// The checks both backends make before touching the database: no NUL in text, subject
/// within Nakama's column, code within `SMALLINT`.
pub fn check_notifications(notifications: &[StoredNotification]) -> Result<(), StorageError> {
    for n in notifications {
        crate::text::check_text("subject", &n.subject, MAX_SUBJECT_CHARS)?;
        crate::text::refuse_nul("content", &n.content)?;
        check_code(n.code)?;
    }
    Ok(())
}

/// The checks of [`check_notifications`] for updates.
pub fn check_updates(updates: &[NotificationUpdate]) -> Result<(), StorageError> {
    for u in updates {
        if let Some(subject) = &u.subject {
            crate::text::check_text("subject", subject, MAX_SUBJECT_CHARS)?;
        }
        if let Some(content) = &u.content {
            crate::text::refuse_nul("content", content)?;
        }
    }
    Ok(())
}

fn check_code(code: i32) -> Result<(), StorageError> {
    if i16::try_from(code).is_err() {
        return Err(StorageError::Invalid {
            message: format!("notification code {code} is outside -32768..=32767"),
        });
    }
    Ok(())
}

//! Persistent notifications in SQLite: a user's are listed along the primary key
//! `(user_id, create_time, id)`; ids are unique on their own for lookups and deletes.

use async_trait::async_trait;
use metafi_storage::{
    NotificationPosition, NotificationStore, NotificationUpdate, StorageError, StoredNotification,
    check_notification_updates, check_notifications,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::{SqliteStorage, db};

macro_rules! columns {
    () => {
        "id, user_id, subject, content, code, sender_id, create_time"
    };
}

#[async_trait]
impl NotificationStore for SqliteStorage {
    async fn insert_notifications(
        &self,
        notifications: Vec<StoredNotification>,
    ) -> Result<(), StorageError> {
        check_notifications(&notifications)?;
        if notifications.is_empty() {
            return Ok(());
        }
        self.writer
            .submit(move |conn| insert(conn, &notifications))
            .await
    }

    async fn list_notifications(
        &self,
        user_id: Uuid,
        after: Option<NotificationPosition>,
        limit: usize,
    ) -> Result<Vec<StoredNotification>, StorageError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.readers
            .read(move |conn| list(conn, user_id, after, limit))
            .await
    }

    async fn notifications_by_id(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<Vec<StoredNotification>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| by_id(conn, &ids, user_id))
            .await
    }

    async fn delete_notifications(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<u64, StorageError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = ids.to_vec();
        self.writer
            .submit(move |conn| delete(conn, &ids, user_id))
            .await
    }

    async fn update_notifications(
        &self,
        updates: Vec<NotificationUpdate>,
    ) -> Result<(), StorageError> {
        check_notification_updates(&updates)?;
        if updates.is_empty() {
            return Ok(());
        }
        self.writer.submit(move |conn| update(conn, &updates)).await
    }
}

/// Inserts all or none (the request's savepoint is rolled back on an error).
fn insert(conn: &Connection, notifications: &[StoredNotification]) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("insert notifications", e);
    let mut user_exists = conn
        .prepare_cached("SELECT 1 FROM users WHERE id = ?1")
        .map_err(fail)?;
    let mut statement = conn
        .prepare_cached(concat!(
            "INSERT INTO notification (",
            columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING"
        ))
        .map_err(fail)?;
    for n in notifications {
        let exists = user_exists
            .query_row([n.user_id], |_| Ok(()))
            .optional()
            .map_err(fail)?
            .is_some();
        if !exists {
            return Err(StorageError::NotFound { what: "user" });
        }
        let inserted = statement
            .execute(params![
                n.id,
                n.user_id,
                n.subject,
                n.content,
                n.code,
                n.sender_id,
                n.create_time_ms
            ])
            .map_err(fail)?;
        if inserted == 0 {
            return Err(StorageError::Invalid {
                message: "a notification with this id already exists".to_owned(),
            });
        }
    }
    Ok(())
}

fn list(
    conn: &Connection,
    user_id: Uuid,
    after: Option<NotificationPosition>,
    limit: usize,
) -> Result<Vec<StoredNotification>, StorageError> {
    let fail = |e| StorageError::backend("list notifications", e);
    let limit = db::int(limit);
    match after {
        None => conn
            .prepare_cached(concat!(
                "SELECT ",
                columns!(),
                " FROM notification WHERE user_id = ?1 ",
                "ORDER BY create_time ASC, id ASC LIMIT ?2"
            ))
            .and_then(|mut s| s.query_map(params![user_id, limit], row)?.collect()),
        Some(p) => conn
            .prepare_cached(concat!(
                "SELECT ",
                columns!(),
                " FROM notification WHERE user_id = ?1 AND (create_time, id) > (?2, ?3) ",
                "ORDER BY create_time ASC, id ASC LIMIT ?4"
            ))
            .and_then(|mut s| {
                s.query_map(params![user_id, p.create_time_ms, p.id, limit], row)?
                    .collect()
            }),
    }
    .map_err(fail)
}

fn by_id(
    conn: &Connection,
    ids: &[Uuid],
    user_id: Option<Uuid>,
) -> Result<Vec<StoredNotification>, StorageError> {
    let fail = |e| StorageError::backend("read notifications", e);
    let mut statement = conn
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM notification WHERE id = ?1"
        ))
        .map_err(fail)?;
    let mut found = Vec::with_capacity(ids.len());
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    for id in ids {
        if !seen.insert(*id) {
            continue;
        }
        let Some(n) = statement.query_row([id], row).optional().map_err(fail)? else {
            continue;
        };
        if user_id.is_none_or(|user| user == n.user_id) {
            found.push(n);
        }
    }
    Ok(found)
}

fn delete(conn: &Connection, ids: &[Uuid], user_id: Option<Uuid>) -> Result<u64, StorageError> {
    let fail = |e| StorageError::backend("delete notifications", e);
    let mut deleted = 0u64;
    match user_id {
        Some(user) => {
            let mut statement = conn
                .prepare_cached("DELETE FROM notification WHERE id = ?1 AND user_id = ?2")
                .map_err(fail)?;
            for id in ids {
                deleted += statement.execute(params![id, user]).map_err(fail)? as u64;
            }
        }
        None => {
            let mut statement = conn
                .prepare_cached("DELETE FROM notification WHERE id = ?1")
                .map_err(fail)?;
            for id in ids {
                deleted += statement.execute([id]).map_err(fail)? as u64;
            }
        }
    }
    Ok(deleted)
}

fn update(conn: &Connection, updates: &[NotificationUpdate]) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("update notifications", e);
    let mut statement = conn
        .prepare_cached(
            "UPDATE notification SET content = coalesce(?2, content), \
             subject = coalesce(?3, subject), sender_id = coalesce(?4, sender_id) WHERE id = ?1",
        )
        .map_err(fail)?;
    for u in updates {
        statement
            .execute(params![u.id, u.content, u.subject, u.sender_id])
            .map_err(fail)?;
    }
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<StoredNotification> {
    Ok(StoredNotification {
        id: r.get(0)?,
        user_id: r.get(1)?,
        subject: r.get(2)?,
        content: r.get(3)?,
        code: r.get(4)?,
        sender_id: r.get(5)?,
        create_time_ms: r.get(6)?,
    })
}

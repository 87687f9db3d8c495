//! Persistent notifications in PostgreSQL: a user's are listed along the primary key
//! `(user_id, create_time, id)`; ids are unique on their own for lookups and deletes. Every
//! write is one statement that answers expected outcomes (unknown receiver, id taken) instead
//! of failing, as the group-commit writer needs.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::{
    NotificationPosition, NotificationStore, NotificationUpdate, StorageError, StoredNotification,
    check_notification_updates, check_notifications,
};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db::{self, Outcome};
use crate::writer::WriteFn;

const COLUMNS: &str = "id, user_id, subject, content, code, sender_id, create_time";

#[async_trait]
impl NotificationStore for PostgresStorage {
    async fn insert_notifications(
        &self,
        notifications: Vec<StoredNotification>,
    ) -> Result<(), StorageError> {
        check_notifications(&notifications)?;
        if notifications.is_empty() {
            return Ok(());
        }
        let rows = Arc::new(Columns::from(&notifications));
        let op: WriteFn<()> = Box::new(move |client| {
            let rows = Arc::clone(&rows);
            Box::pin(async move { insert(client, &rows).await })
        });
        self.writers.submit(op).await
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
        list(&*(self.client().await?), user_id, after, limit).await
    }

    async fn notifications_by_id(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<Vec<StoredNotification>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let fail = db::read_failed("read notifications");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM notification \
                 WHERE id = ANY($1) AND ($2::uuid IS NULL OR user_id = $2)"
            ))
            .await
            .map_err(&fail)?;
        let ids = ids.to_vec();
        let rows = client
            .query(&statement, &[&ids, &user_id])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(row)
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn delete_notifications(
        &self,
        ids: &[Uuid],
        user_id: Option<Uuid>,
    ) -> Result<u64, StorageError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = Arc::new(ids.to_vec());
        let op: WriteFn<u64> = Box::new(move |client| {
            let ids = Arc::clone(&ids);
            Box::pin(async move { delete(client, &ids, user_id).await })
        });
        self.writers.submit(op).await
    }

    async fn update_notifications(
        &self,
        updates: Vec<NotificationUpdate>,
    ) -> Result<(), StorageError> {
        check_notification_updates(&updates)?;
        if updates.is_empty() {
            return Ok(());
        }
        let updates = Arc::new(merged(updates));
        let op: WriteFn<()> = Box::new(move |client| {
            let updates = Arc::clone(&updates);
            Box::pin(async move { update(client, &updates).await })
        });
        self.writers.submit(op).await
    }
}

/// Notifications as one array per column, for `unnest`.
struct Columns {
    ids: Vec<Uuid>,
    users: Vec<Uuid>,
    subjects: Vec<String>,
    contents: Vec<String>,
    codes: Vec<i16>,
    senders: Vec<Uuid>,
    times: Vec<i64>,
}

impl From<&Vec<StoredNotification>> for Columns {
    fn from(notifications: &Vec<StoredNotification>) -> Columns {
        Columns {
            ids: notifications.iter().map(|n| n.id).collect(),
            users: notifications.iter().map(|n| n.user_id).collect(),
            subjects: notifications.iter().map(|n| n.subject.clone()).collect(),
            contents: notifications.iter().map(|n| n.content.clone()).collect(),
            // In range: `check_notifications` refused any other code.
            codes: notifications
                .iter()
                .map(|n| i16::try_from(n.code).unwrap_or_default())
                .collect(),
            senders: notifications.iter().map(|n| n.sender_id).collect(),
            times: notifications.iter().map(|n| n.create_time_ms).collect(),
        }
    }
}

/// Inserts all or none: nothing when a receiver does not exist or an id is taken.
const INSERT: &str = "
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::smallint[],
                         $6::uuid[], $7::bigint[])
        AS t (id, user_id, subject, content, code, sender_id, create_time)
), missing AS (
    SELECT 1 FROM input WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = input.user_id)
    LIMIT 1
), taken AS (
    SELECT 1 FROM input JOIN notification n ON n.id = input.id LIMIT 1
), inserted AS (
    INSERT INTO notification (id, user_id, subject, content, code, sender_id, create_time)
    SELECT id, user_id, subject, content, code, sender_id, create_time FROM input
    WHERE NOT EXISTS (SELECT 1 FROM missing) AND NOT EXISTS (SELECT 1 FROM taken)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM missing), (SELECT count(*) FROM inserted)";

async fn insert(client: &ClientWrapper, c: &Columns) -> Outcome<()> {
    let statement = client.prepare_cached(INSERT).await?;
    let row = client
        .query_one(
            &statement,
            &[
                &c.ids,
                &c.users,
                &c.subjects,
                &c.contents,
                &c.codes,
                &c.senders,
                &c.times,
            ],
        )
        .await?;
    let missing: bool = row.try_get(0)?;
    let inserted: i64 = row.try_get(1)?;
    Ok(if missing {
        Err(StorageError::NotFound { what: "user" })
    } else if usize::try_from(inserted).ok() != Some(c.ids.len()) {
        Err(StorageError::Invalid {
            message: "a notification with this id already exists".to_owned(),
        })
    } else {
        Ok(())
    })
}

async fn list(
    client: &ClientWrapper,
    user_id: Uuid,
    after: Option<NotificationPosition>,
    limit: usize,
) -> Result<Vec<StoredNotification>, StorageError> {
    let fail = db::read_failed("list notifications");
    let limit = db::int(limit);
    let rows = match after {
        None => {
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM notification WHERE user_id = $1 \
                     ORDER BY create_time ASC, id ASC LIMIT $2"
                ))
                .await
                .map_err(&fail)?;
            client.query(&statement, &[&user_id, &limit]).await
        }
        Some(p) => {
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM notification WHERE user_id = $1 \
                     AND (create_time, id) > ($2, $3) ORDER BY create_time ASC, id ASC LIMIT $4"
                ))
                .await
                .map_err(&fail)?;
            client
                .query(&statement, &[&user_id, &p.create_time_ms, &p.id, &limit])
                .await
        }
    }
    .map_err(&fail)?;
    rows.iter()
        .map(row)
        .collect::<Result<_, _>>()
        .map_err(&fail)
}

async fn delete(client: &ClientWrapper, ids: &[Uuid], user_id: Option<Uuid>) -> Outcome<u64> {
    let statement = client
        .prepare_cached(
            "DELETE FROM notification WHERE id = ANY($1) AND ($2::uuid IS NULL OR user_id = $2)",
        )
        .await?;
    let ids = ids.to_vec();
    let deleted = client.execute(&statement, &[&ids, &user_id]).await?;
    Ok(Ok(deleted))
}

/// One update per id, later fields over earlier ones (as running them in order would give):
/// a single `UPDATE … FROM` changes each row at most once.
fn merged(updates: Vec<NotificationUpdate>) -> Vec<NotificationUpdate> {
    let mut out: Vec<NotificationUpdate> = Vec::with_capacity(updates.len());
    for u in updates {
        match out.iter_mut().find(|o| o.id == u.id) {
            Some(o) => {
                o.content = u.content.or(o.content.take());
                o.subject = u.subject.or(o.subject.take());
                o.sender_id = u.sender_id.or(o.sender_id);
            }
            None => out.push(u),
        }
    }
    out
}

const UPDATE: &str = "
UPDATE notification n SET
    content = coalesce(u.content, n.content),
    subject = coalesce(u.subject, n.subject),
    sender_id = coalesce(u.sender_id, n.sender_id)
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[]) AS u (id, content, subject, sender_id)
WHERE n.id = u.id";

async fn update(client: &ClientWrapper, updates: &[NotificationUpdate]) -> Outcome<()> {
    let ids: Vec<Uuid> = updates.iter().map(|u| u.id).collect();
    let contents: Vec<Option<&str>> = updates.iter().map(|u| u.content.as_deref()).collect();
    let subjects: Vec<Option<&str>> = updates.iter().map(|u| u.subject.as_deref()).collect();
    let senders: Vec<Option<Uuid>> = updates.iter().map(|u| u.sender_id).collect();
    let statement = client.prepare_cached(UPDATE).await?;
    client
        .execute(&statement, &[&ids, &contents, &subjects, &senders])
        .await?;
    Ok(Ok(()))
}

fn row(r: &Row) -> Result<StoredNotification, tokio_postgres::Error> {
    let code: i16 = r.try_get(4)?;
    Ok(StoredNotification {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        subject: r.try_get(2)?,
        content: r.try_get(3)?,
        code: i32::from(code),
        sender_id: r.try_get(5)?,
        create_time_ms: r.try_get(6)?,
    })
}

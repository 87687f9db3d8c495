//! The console's users and audit log in SQLite (migration 0013), and the collection listing.

use async_trait::async_trait;
use metafi_storage::{AuditEntry, ConsoleStore, ConsoleUser, StorageError};
use rusqlite::{OptionalExtension as _, params};

use crate::SqliteStorage;

#[async_trait]
impl ConsoleStore for SqliteStorage {
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError> {
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO console_user (username, password_hash, role, create_time)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (username) DO NOTHING",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        user.username,
                        user.password_hash,
                        user.role,
                        user.create_time_ms
                    ])
                })
                .map(|n| n == 1)
                .map_err(|e| StorageError::backend("seed a console user", e))
            })
            .await
    }

    async fn console_user(&self, username: &str) -> Result<Option<ConsoleUser>, StorageError> {
        let username = username.to_owned();
        self.readers
            .read(move |conn| {
                conn.prepare_cached(
                    "SELECT username, password_hash, role, create_time FROM console_user
                     WHERE username = ?1",
                )
                .and_then(|mut s| {
                    s.query_row([&username], |r| {
                        Ok(ConsoleUser {
                            username: r.get(0)?,
                            password_hash: r.get(1)?,
                            role: r.get(2)?,
                            create_time_ms: r.get(3)?,
                        })
                    })
                    .optional()
                })
                .map_err(|e| StorageError::backend("read a console user", e))
            })
            .await
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<i64, StorageError> {
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO console_audit (time, username, action, target, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                )
                .and_then(|mut s| {
                    s.query_row(
                        params![
                            entry.time_ms,
                            entry.username,
                            entry.action,
                            entry.target,
                            entry.detail
                        ],
                        |r| r.get(0),
                    )
                })
                .map_err(|e| StorageError::backend("append to the audit log", e))
            })
            .await
    }

    async fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StorageError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let before = before.unwrap_or(i64::MAX);
        self.readers
            .read(move |conn| {
                let mut statement = conn
                    .prepare_cached(
                        "SELECT id, time, username, action, target, detail FROM console_audit
                         WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
                    )
                    .map_err(|e| StorageError::backend("read the audit log", e))?;
                let rows = statement
                    .query_map(params![before, limit], |r| {
                        Ok(AuditEntry {
                            id: r.get(0)?,
                            time_ms: r.get(1)?,
                            username: r.get(2)?,
                            action: r.get(3)?,
                            target: r.get(4)?,
                            detail: r.get(5)?,
                        })
                    })
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| StorageError::backend("read the audit log", e))?;
                Ok(rows)
            })
            .await
    }

    async fn storage_collections(&self, limit: usize) -> Result<Vec<String>, StorageError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.readers
            .read(move |conn| {
                let mut statement = conn
                    .prepare_cached(
                        "SELECT DISTINCT collection FROM storage ORDER BY collection LIMIT ?1",
                    )
                    .map_err(|e| StorageError::backend("list collections", e))?;
                statement
                    .query_map([limit], |r| r.get(0))
                    .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
                    .map_err(|e| StorageError::backend("list collections", e))
            })
            .await
    }
}

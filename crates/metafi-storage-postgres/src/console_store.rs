//! The console's users and audit log in PostgreSQL (migration 0014), and the collection
//! listing. Each write is one statement, as the group-commit writer needs.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::{AuditEntry, ConsoleStore, ConsoleUser, StorageError};

use crate::PostgresStorage;
use crate::db;
use crate::writer::WriteFn;

#[async_trait]
impl ConsoleStore for PostgresStorage {
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError> {
        let user = Arc::new(user);
        let op: WriteFn<bool> = Box::new(move |client| {
            let user = Arc::clone(&user);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "INSERT INTO console_user (username, password_hash, role, create_time)
                         VALUES ($1, $2, $3, $4) ON CONFLICT (username) DO NOTHING",
                    )
                    .await?;
                let added = client
                    .execute(
                        &statement,
                        &[
                            &user.username,
                            &user.password_hash,
                            &i16::from(user.role),
                            &user.create_time_ms,
                        ],
                    )
                    .await?;
                Ok(Ok(added == 1))
            })
        });
        self.writers.submit(op).await
    }

    async fn console_user(&self, username: &str) -> Result<Option<ConsoleUser>, StorageError> {
        let fail = db::read_failed("read a console user");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "SELECT username, password_hash, role, create_time FROM console_user
                 WHERE username = $1",
            )
            .await
            .map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&username])
            .await
            .map_err(&fail)?;
        row.map(|r| {
            Ok(ConsoleUser {
                username: r.try_get(0)?,
                password_hash: r.try_get(1)?,
                role: u8::try_from(r.try_get::<_, i16>(2)?).unwrap_or(4),
                create_time_ms: r.try_get(3)?,
            })
        })
        .transpose()
        .map_err(&fail)
    }

    async fn append_audit(&self, entry: AuditEntry) -> Result<i64, StorageError> {
        let entry = Arc::new(entry);
        let op: WriteFn<i64> = Box::new(move |client| {
            let entry = Arc::clone(&entry);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "INSERT INTO console_audit (time, username, action, target, detail)
                         VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    )
                    .await?;
                let row = client
                    .query_one(
                        &statement,
                        &[
                            &entry.time_ms,
                            &entry.username,
                            &entry.action,
                            &entry.target,
                            &entry.detail,
                        ],
                    )
                    .await?;
                Ok(Ok(row.try_get(0)?))
            })
        });
        self.writers.submit(op).await
    }

    async fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StorageError> {
        let fail = db::read_failed("read the audit log");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "SELECT id, time, username, action, target, detail FROM console_audit
                 WHERE id < $1 ORDER BY id DESC LIMIT $2",
            )
            .await
            .map_err(&fail)?;
        let rows = client
            .query(&statement, &[&before.unwrap_or(i64::MAX), &db::int(limit)])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(|r| {
                Ok(AuditEntry {
                    id: r.try_get(0)?,
                    time_ms: r.try_get(1)?,
                    username: r.try_get(2)?,
                    action: r.try_get(3)?,
                    target: r.try_get(4)?,
                    detail: r.try_get(5)?,
                })
            })
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn storage_collections(&self, limit: usize) -> Result<Vec<String>, StorageError> {
        let fail = db::read_failed("list collections");
        let client = self.client().await?;
        let statement = client
            .prepare_cached("SELECT DISTINCT collection FROM storage ORDER BY collection LIMIT $1")
            .await
            .map_err(&fail)?;
        let rows = client
            .query(&statement, &[&db::int(limit)])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }
}

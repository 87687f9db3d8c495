//! The console's users (migrations 0014, 0015), sign-outs and audit log in PostgreSQL, and the
//! collection listing. Each write is one statement, as the group-commit writer needs.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::{
    AuditEntry, ConsoleMfaUpdate, ConsoleStore, ConsoleUser, ConsoleUserChange, StorageError,
};

use crate::PostgresStorage;
use crate::db;
use crate::writer::WriteFn;

const USER_COLUMNS: &str = "id, username, email, password_hash, role, mfa_secret, \
    mfa_recovery_codes, mfa_required, session_key, create_time, update_time";

fn user_row(r: &tokio_postgres::Row) -> Result<ConsoleUser, tokio_postgres::Error> {
    Ok(ConsoleUser {
        id: r.try_get(0)?,
        username: r.try_get(1)?,
        email: r.try_get(2)?,
        password_hash: r.try_get(3)?,
        role: u8::try_from(r.try_get::<_, i16>(4)?).unwrap_or(4),
        mfa_secret: r.try_get(5)?,
        mfa_recovery_codes: r.try_get(6)?,
        mfa_required: r.try_get(7)?,
        session_key: r.try_get(8)?,
        create_time_ms: r.try_get(9)?,
        update_time_ms: r.try_get(10)?,
    })
}

/// The outcome of a guarded change from the target's row count and the changed row count.
fn change(found: i64, changed: i64) -> ConsoleUserChange {
    match (found, changed) {
        (_, 1..) => ConsoleUserChange::Done,
        (0, _) => ConsoleUserChange::NotFound,
        _ => ConsoleUserChange::LastAdmin,
    }
}

#[async_trait]
impl ConsoleStore for PostgresStorage {
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError> {
        let user = Arc::new(user);
        let op: WriteFn<bool> = Box::new(move |client| {
            let user = Arc::clone(&user);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "INSERT INTO console_user (id, username, email, password_hash, role,
                             mfa_secret, mfa_recovery_codes, mfa_required, session_key,
                             create_time, update_time)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                         ON CONFLICT DO NOTHING",
                    )
                    .await?;
                let added = client
                    .execute(
                        &statement,
                        &[
                            &user.id,
                            &user.username,
                            &user.email,
                            &user.password_hash,
                            &i16::from(user.role),
                            &user.mfa_secret,
                            &user.mfa_recovery_codes,
                            &user.mfa_required,
                            &user.session_key,
                            &user.create_time_ms,
                            &user.update_time_ms,
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
            .prepare_cached(&format!(
                "SELECT {USER_COLUMNS} FROM console_user WHERE username = $1"
            ))
            .await
            .map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&username])
            .await
            .map_err(&fail)?;
        row.as_ref().map(user_row).transpose().map_err(&fail)
    }

    async fn console_users(&self) -> Result<Vec<ConsoleUser>, StorageError> {
        let fail = db::read_failed("list console users");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {USER_COLUMNS} FROM console_user ORDER BY username"
            ))
            .await
            .map_err(&fail)?;
        let rows = client.query(&statement, &[]).await.map_err(&fail)?;
        rows.iter()
            .map(user_row)
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn delete_console_user(&self, username: &str) -> Result<ConsoleUserChange, StorageError> {
        let username: Arc<str> = Arc::from(username);
        let op: WriteFn<ConsoleUserChange> = Box::new(move |client| {
            let username = Arc::clone(&username);
            Box::pin(async move {
                // The admins' rows are locked first: a concurrent delete or demotion of another
                // admin waits, then counts again without the row it removed.
                let statement = client
                    .prepare_cached(
                        "WITH admins AS (
                             SELECT username FROM console_user WHERE role = 1 FOR UPDATE
                         ), target AS (
                             SELECT role FROM console_user WHERE username = $1
                         ), gone AS (
                             DELETE FROM console_user WHERE username = $1
                               AND (role <> 1 OR (SELECT count(*) FROM admins) > 1)
                             RETURNING 1
                         )
                         SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM gone)",
                    )
                    .await?;
                let row = client.query_one(&statement, &[&&*username]).await?;
                Ok(Ok(change(row.try_get(0)?, row.try_get(1)?)))
            })
        });
        self.writers.submit(op).await
    }

    async fn set_console_user_role(
        &self,
        username: &str,
        role: u8,
        session_key: String,
        now_ms: i64,
    ) -> Result<ConsoleUserChange, StorageError> {
        let args = Arc::new((username.to_owned(), i16::from(role), session_key, now_ms));
        let op: WriteFn<ConsoleUserChange> = Box::new(move |client| {
            let args = Arc::clone(&args);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "WITH admins AS (
                             SELECT username FROM console_user WHERE role = 1 FOR UPDATE
                         ), target AS (
                             SELECT role FROM console_user WHERE username = $1
                         ), changed AS (
                             UPDATE console_user
                             SET role = $2::smallint, session_key = $3, update_time = $4
                             WHERE username = $1
                               AND ($2::smallint = 1 OR role <> 1
                                    OR (SELECT count(*) FROM admins) > 1)
                             RETURNING 1
                         )
                         SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM changed)",
                    )
                    .await?;
                let row = client
                    .query_one(&statement, &[&args.0, &args.1, &args.2, &args.3])
                    .await?;
                Ok(Ok(change(row.try_get(0)?, row.try_get(1)?)))
            })
        });
        self.writers.submit(op).await
    }

    async fn set_console_user_mfa_required(
        &self,
        username: &str,
        required: bool,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        let username: Arc<str> = Arc::from(username);
        let op: WriteFn<bool> = Box::new(move |client| {
            let username = Arc::clone(&username);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "UPDATE console_user SET mfa_required = $2, update_time = $3
                         WHERE username = $1",
                    )
                    .await?;
                let n = client
                    .execute(&statement, &[&&*username, &required, &now_ms])
                    .await?;
                Ok(Ok(n == 1))
            })
        });
        self.writers.submit(op).await
    }

    async fn set_console_user_mfa(
        &self,
        username: &str,
        update: ConsoleMfaUpdate,
    ) -> Result<bool, StorageError> {
        let args = Arc::new((username.to_owned(), update));
        let op: WriteFn<bool> = Box::new(move |client| {
            let args = Arc::clone(&args);
            Box::pin(async move {
                let (username, update) = &*args;
                let statement = client
                    .prepare_cached(
                        "UPDATE console_user SET mfa_secret = $2, mfa_recovery_codes = $3,
                             update_time = $4
                         WHERE username = $1 AND update_time <= $5",
                    )
                    .await?;
                let n = client
                    .execute(
                        &statement,
                        &[
                            username,
                            &update.secret,
                            &update.recovery_codes,
                            &update.now_ms,
                            &update.not_updated_after_ms.unwrap_or(i64::MAX),
                        ],
                    )
                    .await?;
                Ok(Ok(n == 1))
            })
        });
        self.writers.submit(op).await
    }

    async fn replace_console_recovery_codes(
        &self,
        username: &str,
        old: Vec<u8>,
        new: Vec<u8>,
    ) -> Result<bool, StorageError> {
        let args = Arc::new((username.to_owned(), old, new));
        let op: WriteFn<bool> = Box::new(move |client| {
            let args = Arc::clone(&args);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "UPDATE console_user SET mfa_recovery_codes = $3
                         WHERE username = $1 AND mfa_recovery_codes = $2",
                    )
                    .await?;
                let n = client
                    .execute(&statement, &[&args.0, &args.1, &args.2])
                    .await?;
                Ok(Ok(n == 1))
            })
        });
        self.writers.submit(op).await
    }

    async fn revoke_console_session(
        &self,
        session_id: &str,
        expire_ms: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let session_id: Arc<str> = Arc::from(session_id);
        let op: WriteFn<()> = Box::new(move |client| {
            let session_id = Arc::clone(&session_id);
            Box::pin(async move {
                let statement = client
                    .prepare_cached(
                        "WITH purged AS (
                             DELETE FROM console_session_revoked WHERE expire_time <= $3::bigint
                         )
                         INSERT INTO console_session_revoked (session_id, expire_time)
                         SELECT $1::text, $2::bigint WHERE $2::bigint > $3::bigint
                         ON CONFLICT DO NOTHING",
                    )
                    .await?;
                client
                    .execute(&statement, &[&&*session_id, &expire_ms, &now_ms])
                    .await?;
                Ok(Ok(()))
            })
        });
        self.writers.submit(op).await
    }

    async fn console_session_revoked(&self, session_id: &str) -> Result<bool, StorageError> {
        let fail = db::read_failed("read console sign-outs");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM console_session_revoked WHERE session_id = $1)",
            )
            .await
            .map_err(&fail)?;
        let row = client
            .query_one(&statement, &[&session_id])
            .await
            .map_err(&fail)?;
        row.try_get(0).map_err(&fail)
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

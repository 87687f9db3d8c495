//! The console's users (migrations 0013, 0014), sign-outs and audit log in SQLite, and the
//! collection listing.

use async_trait::async_trait;
use metafi_storage::{
    AuditEntry, ConsoleMfaUpdate, ConsoleStore, ConsoleUser, ConsoleUserChange, StorageError,
};
use rusqlite::{OptionalExtension as _, params};

use crate::SqliteStorage;

const USER_COLUMNS: &str = "id, username, email, password_hash, role, mfa_secret, \
    mfa_recovery_codes, mfa_required, session_key, create_time, update_time";

fn user_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConsoleUser> {
    Ok(ConsoleUser {
        id: r.get(0)?,
        username: r.get(1)?,
        email: r.get(2)?,
        password_hash: r.get(3)?,
        role: r.get(4)?,
        mfa_secret: r.get(5)?,
        mfa_recovery_codes: r.get(6)?,
        mfa_required: r.get(7)?,
        session_key: r.get(8)?,
        create_time_ms: r.get(9)?,
        update_time_ms: r.get(10)?,
    })
}

fn role_of(conn: &rusqlite::Connection, username: &str) -> rusqlite::Result<Option<u8>> {
    conn.prepare_cached("SELECT role FROM console_user WHERE username = ?1")?
        .query_row([username], |r| r.get(0))
        .optional()
}

fn admin_count(conn: &rusqlite::Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT count(*) FROM console_user WHERE role = 1")?
        .query_row([], |r| r.get(0))
}

#[async_trait]
impl ConsoleStore for SqliteStorage {
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError> {
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO console_user (id, username, email, password_hash, role,
                         mfa_secret, mfa_recovery_codes, mfa_required, session_key,
                         create_time, update_time)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT DO NOTHING",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        user.id,
                        user.username,
                        user.email,
                        user.password_hash,
                        user.role,
                        user.mfa_secret,
                        user.mfa_recovery_codes,
                        user.mfa_required,
                        user.session_key,
                        user.create_time_ms,
                        user.update_time_ms,
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
                conn.prepare_cached(&format!(
                    "SELECT {USER_COLUMNS} FROM console_user WHERE username = ?1"
                ))
                .and_then(|mut s| s.query_row([&username], user_row).optional())
                .map_err(|e| StorageError::backend("read a console user", e))
            })
            .await
    }

    async fn console_users(&self) -> Result<Vec<ConsoleUser>, StorageError> {
        self.readers
            .read(move |conn| {
                conn.prepare_cached(&format!(
                    "SELECT {USER_COLUMNS} FROM console_user ORDER BY username"
                ))
                .and_then(|mut s| {
                    s.query_map([], user_row)
                        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                })
                .map_err(|e| StorageError::backend("list console users", e))
            })
            .await
    }

    async fn delete_console_user(&self, username: &str) -> Result<ConsoleUserChange, StorageError> {
        let username = username.to_owned();
        self.writer
            .submit(move |conn| {
                let fail = |e| StorageError::backend("delete a console user", e);
                // One closure is one savepoint on the single writer: read and delete are atomic.
                let Some(role) = role_of(conn, &username).map_err(fail)? else {
                    return Ok(ConsoleUserChange::NotFound);
                };
                if role == 1 && admin_count(conn).map_err(fail)? <= 1 {
                    return Ok(ConsoleUserChange::LastAdmin);
                }
                conn.prepare_cached("DELETE FROM console_user WHERE username = ?1")
                    .and_then(|mut s| s.execute([&username]))
                    .map_err(fail)?;
                Ok(ConsoleUserChange::Done)
            })
            .await
    }

    async fn set_console_user_role(
        &self,
        username: &str,
        role: u8,
        session_key: String,
        now_ms: i64,
    ) -> Result<ConsoleUserChange, StorageError> {
        let username = username.to_owned();
        self.writer
            .submit(move |conn| {
                let fail = |e| StorageError::backend("change a console user's role", e);
                let Some(old) = role_of(conn, &username).map_err(fail)? else {
                    return Ok(ConsoleUserChange::NotFound);
                };
                if old == 1 && role != 1 && admin_count(conn).map_err(fail)? <= 1 {
                    return Ok(ConsoleUserChange::LastAdmin);
                }
                conn.prepare_cached(
                    "UPDATE console_user SET role = ?2, session_key = ?3, update_time = ?4
                     WHERE username = ?1",
                )
                .and_then(|mut s| s.execute(params![username, role, session_key, now_ms]))
                .map_err(fail)?;
                Ok(ConsoleUserChange::Done)
            })
            .await
    }

    async fn set_console_user_mfa_required(
        &self,
        username: &str,
        required: bool,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        let username = username.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "UPDATE console_user SET mfa_required = ?2, update_time = ?3
                     WHERE username = ?1",
                )
                .and_then(|mut s| s.execute(params![username, required, now_ms]))
                .map(|n| n == 1)
                .map_err(|e| StorageError::backend("set a console user's MFA requirement", e))
            })
            .await
    }

    async fn set_console_user_mfa(
        &self,
        username: &str,
        update: ConsoleMfaUpdate,
    ) -> Result<bool, StorageError> {
        let username = username.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "UPDATE console_user SET mfa_secret = ?2, mfa_recovery_codes = ?3,
                         update_time = ?4
                     WHERE username = ?1 AND update_time <= ?5",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        username,
                        update.secret,
                        update.recovery_codes,
                        update.now_ms,
                        update.not_updated_after_ms.unwrap_or(i64::MAX),
                    ])
                })
                .map(|n| n == 1)
                .map_err(|e| StorageError::backend("set a console user's MFA", e))
            })
            .await
    }

    async fn replace_console_recovery_codes(
        &self,
        username: &str,
        old: Vec<u8>,
        new: Vec<u8>,
    ) -> Result<bool, StorageError> {
        let username = username.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "UPDATE console_user SET mfa_recovery_codes = ?3
                     WHERE username = ?1 AND mfa_recovery_codes = ?2",
                )
                .and_then(|mut s| s.execute(params![username, old, new]))
                .map(|n| n == 1)
                .map_err(|e| StorageError::backend("use a console recovery code", e))
            })
            .await
    }

    async fn revoke_console_session(
        &self,
        session_id: &str,
        expire_ms: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let session_id = session_id.to_owned();
        self.writer
            .submit(move |conn| {
                let fail = |e| StorageError::backend("record a console sign-out", e);
                conn.prepare_cached("DELETE FROM console_session_revoked WHERE expire_time <= ?1")
                    .and_then(|mut s| s.execute([now_ms]))
                    .map_err(fail)?;
                if expire_ms > now_ms {
                    conn.prepare_cached(
                        "INSERT INTO console_session_revoked (session_id, expire_time)
                         VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                    )
                    .and_then(|mut s| s.execute(params![session_id, expire_ms]))
                    .map_err(fail)?;
                }
                Ok(())
            })
            .await
    }

    async fn console_session_revoked(&self, session_id: &str) -> Result<bool, StorageError> {
        let session_id = session_id.to_owned();
        self.readers
            .read(move |conn| {
                conn.prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM console_session_revoked WHERE session_id = ?1)",
                )
                .and_then(|mut s| s.query_row([&session_id], |r| r.get(0)))
                .map_err(|e| StorageError::backend("read console sign-outs", e))
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

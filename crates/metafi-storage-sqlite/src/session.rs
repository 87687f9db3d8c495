//! Session revocations in SQLite.

use metafi_storage::{Revocation, StorageError, UserRevocation};
use rusqlite::{Connection, params};

pub(crate) fn revoke(conn: &Connection, revocations: &[Revocation]) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("revoke sessions", e);
    let mut statement = conn
        .prepare_cached(
            "INSERT INTO session_revocation (session_id, user_id, expires_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)",
        )
        .map_err(fail)?;
    for r in revocations {
        statement
            .execute(params![r.session_id, r.user_id, r.expires_at_ms])
            .map_err(fail)?;
    }
    Ok(())
}

pub(crate) fn active(conn: &Connection, now_ms: i64) -> Result<Vec<Revocation>, StorageError> {
    conn.prepare_cached(
        "SELECT session_id, user_id, expires_at FROM session_revocation
         WHERE expires_at > ?1 ORDER BY expires_at",
    )
    .and_then(|mut s| {
        s.query_map([now_ms], |r| {
            Ok(Revocation {
                session_id: r.get(0)?,
                user_id: r.get(1)?,
                expires_at_ms: r.get(2)?,
            })
        })?
        .collect()
    })
    .map_err(|e| StorageError::backend("read revocations", e))
}

pub(crate) fn revoke_user(conn: &Connection, r: &UserRevocation) -> Result<(), StorageError> {
    conn.prepare_cached(
        "INSERT INTO user_revocation (user_id, issued_before, expires_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (user_id) DO UPDATE SET
             issued_before = max(issued_before, excluded.issued_before),
             expires_at = max(expires_at, excluded.expires_at)",
    )
    .and_then(|mut s| s.execute(params![r.user_id, r.issued_before_secs, r.expires_at_ms]))
    .map(|_| ())
    .map_err(|e| StorageError::backend("revoke user sessions", e))
}

pub(crate) fn active_users(
    conn: &Connection,
    now_ms: i64,
) -> Result<Vec<UserRevocation>, StorageError> {
    conn.prepare_cached(
        "SELECT user_id, issued_before, expires_at FROM user_revocation
         WHERE expires_at > ?1 ORDER BY expires_at",
    )
    .and_then(|mut s| {
        s.query_map([now_ms], |r| {
            Ok(UserRevocation {
                user_id: r.get(0)?,
                issued_before_secs: r.get(1)?,
                expires_at_ms: r.get(2)?,
            })
        })?
        .collect()
    })
    .map_err(|e| StorageError::backend("read user revocations", e))
}

/// Removes expired session and user-wide revocations.
pub(crate) fn purge(conn: &Connection, now_ms: i64) -> Result<u64, StorageError> {
    let mut removed = 0;
    for sql in [
        "DELETE FROM session_revocation WHERE expires_at <= ?1",
        "DELETE FROM user_revocation WHERE expires_at <= ?1",
    ] {
        removed += conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute([now_ms]))
            .map_err(|e| StorageError::backend("purge revocations", e))? as u64;
    }
    Ok(removed)
}

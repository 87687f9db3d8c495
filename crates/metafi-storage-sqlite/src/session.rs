//! Session revocations in SQLite.

use metafi_storage::{Revocation, StorageError};
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

pub(crate) fn purge(conn: &Connection, now_ms: i64) -> Result<u64, StorageError> {
    conn.prepare_cached("DELETE FROM session_revocation WHERE expires_at <= ?1")
        .and_then(|mut s| s.execute([now_ms]))
        .map(|n| n as u64)
        .map_err(|e| StorageError::backend("purge revocations", e))
}

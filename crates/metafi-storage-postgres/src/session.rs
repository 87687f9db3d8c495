//! Session revocations in PostgreSQL.

use deadpool_postgres::ClientWrapper;
use metafi_storage::{Revocation, StorageError, UserRevocation};
use uuid::Uuid;

use crate::db::{self, Outcome};

const REVOKE: &str = "
INSERT INTO session_revocation (session_id, user_id, expires_at)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[])
ON CONFLICT (session_id) DO UPDATE
    SET expires_at = greatest(session_revocation.expires_at, excluded.expires_at)";

/// `revocations` must not name a session twice (one statement may not update a row twice).
pub(crate) async fn revoke(client: &ClientWrapper, revocations: &[Revocation]) -> Outcome<()> {
    let sessions: Vec<Uuid> = revocations.iter().map(|r| r.session_id).collect();
    let users: Vec<Uuid> = revocations.iter().map(|r| r.user_id).collect();
    let expiries: Vec<i64> = revocations.iter().map(|r| r.expires_at_ms).collect();
    let statement = client.prepare_cached(REVOKE).await?;
    client
        .execute(&statement, &[&sessions, &users, &expiries])
        .await?;
    Ok(Ok(()))
}

const REVOKE_USER: &str = "
INSERT INTO user_revocation (user_id, issued_before, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET
    issued_before = greatest(user_revocation.issued_before, excluded.issued_before),
    expires_at = greatest(user_revocation.expires_at, excluded.expires_at)";

pub(crate) async fn revoke_user(client: &ClientWrapper, r: &UserRevocation) -> Outcome<()> {
    let statement = client.prepare_cached(REVOKE_USER).await?;
    client
        .execute(
            &statement,
            &[&r.user_id, &r.issued_before_secs, &r.expires_at_ms],
        )
        .await?;
    Ok(Ok(()))
}

/// Removes expired session and user-wide revocations in one statement.
pub(crate) async fn purge(client: &ClientWrapper, now_ms: i64) -> Outcome<u64> {
    let statement = client
        .prepare_cached(
            "WITH s AS (DELETE FROM session_revocation WHERE expires_at <= $1 RETURNING 1),
                  u AS (DELETE FROM user_revocation WHERE expires_at <= $1 RETURNING 1)
             SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM u)",
        )
        .await?;
    let row = client.query_one(&statement, &[&now_ms]).await?;
    let removed: i64 = row.try_get(0)?;
    Ok(Ok(removed.max(0) as u64))
}

pub(crate) async fn active_users(
    client: &ClientWrapper,
    now_ms: i64,
) -> Result<Vec<UserRevocation>, StorageError> {
    let fail = db::read_failed("read user revocations");
    let statement = client
        .prepare_cached(
            "SELECT user_id, issued_before, expires_at FROM user_revocation
             WHERE expires_at > $1 ORDER BY expires_at",
        )
        .await
        .map_err(&fail)?;
    let rows = client.query(&statement, &[&now_ms]).await.map_err(&fail)?;
    rows.iter()
        .map(|r| {
            Ok(UserRevocation {
                user_id: r.try_get(0)?,
                issued_before_secs: r.try_get(1)?,
                expires_at_ms: r.try_get(2)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(&fail)
}

pub(crate) async fn active(
    client: &ClientWrapper,
    now_ms: i64,
) -> Result<Vec<Revocation>, StorageError> {
    let fail = db::read_failed("read revocations");
    let statement = client
        .prepare_cached(
            "SELECT session_id, user_id, expires_at FROM session_revocation
             WHERE expires_at > $1 ORDER BY expires_at",
        )
        .await
        .map_err(&fail)?;
    let rows = client.query(&statement, &[&now_ms]).await.map_err(&fail)?;
    rows.iter()
        .map(|r| {
            Ok(Revocation {
                session_id: r.try_get(0)?,
                user_id: r.try_get(1)?,
                expires_at_ms: r.try_get(2)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(&fail)
}

//! Session revocations in PostgreSQL.

use deadpool_postgres::ClientWrapper;
use metafi_storage::{Revocation, StorageError};
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

pub(crate) async fn purge(client: &ClientWrapper, now_ms: i64) -> Outcome<u64> {
    let statement = client
        .prepare_cached("DELETE FROM session_revocation WHERE expires_at <= $1")
        .await?;
    Ok(Ok(client.execute(&statement, &[&now_ms]).await?))
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

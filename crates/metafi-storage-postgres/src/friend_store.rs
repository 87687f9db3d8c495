//! Friend relationships in PostgreSQL: the `user_edge` table, two rows per relationship. Each
//! write is one statement (a plpgsql function for add and block, a CTE for delete), so a
//! multi-user request is atomic and fits the group-commit writer.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::{
    AddOutcome, EdgeWrite, Friend, FriendCursor, FriendOfFriend, FriendPage, FriendState,
    FriendStore, StorageError, distinct_ids,
};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::PostgresStorage;
use crate::account::user_row;
use crate::db::{self, Outcome};
use crate::writer::WriteFn;

/// Wraps a re-runnable statement (a failed batch re-runs each request alone) for the writer.
fn write_fn<A, T, F>(args: A, op: F) -> WriteFn<T>
where
    A: Send + Sync + 'static,
    T: Send + 'static,
    F: for<'a> Fn(&'a ClientWrapper, Arc<A>) -> futures_util::future::BoxFuture<'a, Outcome<T>>
        + Send
        + Sync
        + 'static,
{
    let args = Arc::new(args);
    Box::new(move |client| op(client, Arc::clone(&args)))
}

const ADD: &str = "SELECT friend_id, outcome FROM metafi_friends_add($1, $2, $3, $4, $5)";
const BLOCK: &str = "SELECT metafi_friends_block($1, $2, $3, $4)";
const DELETE: &str = "
WITH removed AS (
    DELETE FROM user_edge
    WHERE (source_id = $1 AND destination_id = ANY($2))
       OR (destination_id = $1 AND source_id = ANY($2) AND state <> 3)
    RETURNING CASE WHEN source_id = $1 THEN destination_id ELSE source_id END AS other
)
SELECT other FROM removed GROUP BY other HAVING count(*) = 2";

const FRIEND_COLUMNS: &str = "u.id, u.username, u.display_name, u.avatar_url, u.lang_tag, \
     u.location, u.timezone, u.metadata, u.wallet, u.email, u.custom_id, u.create_time, \
     u.update_time, u.verify_time, u.disable_time, u.apple_id, u.facebook_id, \
     u.facebook_instant_game_id, u.gamecenter_id, u.google_id, u.steam_id, \
     e.state, e.position, e.update_time, e.metadata";

const OF_FRIENDS: &str = "
SELECT f.source_id, f.destination_id
FROM user_edge mine JOIN user_edge f ON f.source_id = mine.destination_id
WHERE mine.source_id = $1 AND mine.state = 0 AND f.state = 0
  AND f.destination_id <> $1
  AND NOT EXISTS (SELECT 1 FROM user_edge o WHERE o.source_id = $1
                  AND o.destination_id = f.destination_id AND o.state = 0)
  AND ($3::uuid IS NULL OR (f.source_id, f.destination_id) > ($3::uuid, $4::uuid))
ORDER BY f.source_id, f.destination_id LIMIT $2";

fn limit(value: usize) -> i64 {
    db::int(value)
}

#[async_trait]
impl FriendStore for PostgresStorage {
    async fn add_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        metadata: &str,
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<Vec<(Uuid, AddOutcome)>>, StorageError> {
        let args = (distinct_ids(ids), metadata.to_owned());
        self.writers
            .submit(write_fn(args, move |client, args| {
                Box::pin(async move {
                    let statement = client.prepare_cached(ADD).await?;
                    let rows = client
                        .query(
                            &statement,
                            &[&user_id, &args.0, &args.1, &now_ms, &limit(max_edges)],
                        )
                        .await?;
                    let mut outcomes = Vec::with_capacity(rows.len());
                    for row in rows {
                        let id: Option<Uuid> = row.try_get(0)?;
                        let outcome: i32 = row.try_get(1)?;
                        let Some(id) = id else {
                            return Ok(Ok(EdgeWrite::OverLimit));
                        };
                        let outcome = match outcome {
                            1 => AddOutcome::Invited,
                            2 => AddOutcome::Accepted,
                            _ => AddOutcome::Unchanged,
                        };
                        outcomes.push((id, outcome));
                    }
                    Ok(Ok(EdgeWrite::Done(outcomes)))
                })
            }))
            .await
    }

    async fn delete_friends(&self, user_id: Uuid, ids: &[Uuid]) -> Result<Vec<Uuid>, StorageError> {
        let ids = distinct_ids(ids);
        let mut told = self
            .writers
            .submit(write_fn(ids.clone(), move |client, ids| {
                Box::pin(async move {
                    let statement = client.prepare_cached(DELETE).await?;
                    let rows = client.query(&statement, &[&user_id, &*ids]).await?;
                    let told = rows
                        .iter()
                        .map(|r| r.try_get::<_, Uuid>(0))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Ok(told))
                })
            }))
            .await?;
        // In the order asked, as SQLite answers.
        told.sort_by_key(|id| ids.iter().position(|asked| asked == id));
        Ok(told)
    }

    async fn block_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<()>, StorageError> {
        self.writers
            .submit(write_fn(distinct_ids(ids), move |client, ids| {
                Box::pin(async move {
                    let statement = client.prepare_cached(BLOCK).await?;
                    let row = client
                        .query_one(&statement, &[&user_id, &*ids, &now_ms, &limit(max_edges)])
                        .await?;
                    let done: bool = row.try_get(0)?;
                    Ok(Ok(if done {
                        EdgeWrite::Done(())
                    } else {
                        EdgeWrite::OverLimit
                    }))
                })
            }))
            .await
    }

    async fn update_friend_metadata(
        &self,
        user_id: Uuid,
        friend_id: Uuid,
        metadata: &str,
    ) -> Result<bool, StorageError> {
        self.writers
            .submit(write_fn(metadata.to_owned(), move |client, metadata| {
                Box::pin(async move {
                    let statement = client
                        .prepare_cached(
                            "UPDATE user_edge SET metadata = $3 \
                             WHERE source_id = $1 AND destination_id = $2",
                        )
                        .await?;
                    let changed = client
                        .execute(&statement, &[&user_id, &friend_id, &*metadata])
                        .await?;
                    Ok(Ok(changed > 0))
                })
            }))
            .await
    }

    async fn list_friends(
        &self,
        user_id: Uuid,
        state: Option<FriendState>,
        limit: usize,
        after: Option<FriendCursor>,
    ) -> Result<FriendPage, StorageError> {
        let mut sql = format!(
            "SELECT {FRIEND_COLUMNS} FROM user_edge e JOIN users u ON u.id = e.destination_id \
             WHERE e.source_id = $1"
        );
        let fetch = db::int(limit.saturating_add(1));
        let state_number = state.map(FriendState::number);
        let (after_state, after_position, after_id) = (
            after.map(|c| c.state.number()),
            after.map(|c| c.position),
            after.map(|c| c.user_id),
        );
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&user_id, &fetch];
        if state.is_some() {
            sql.push_str(" AND e.state = $3");
            params.push(&state_number);
        }
        if after.is_some() {
            let n = params.len();
            sql.push_str(&format!(
                " AND (e.state, e.position, e.destination_id) > (${}, ${}, ${})",
                n + 1,
                n + 2,
                n + 3
            ));
            params.push(&after_state);
            params.push(&after_position);
            params.push(&after_id);
        }
        sql.push_str(" ORDER BY e.state, e.position, e.destination_id LIMIT $2");
        let fail = db::read_failed("list friends");
        let client = self.client().await?;
        let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
        let rows = client.query(&statement, &params).await.map_err(&fail)?;
        let mut friends = rows
            .iter()
            .map(friend_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(&fail)?;
        let next = if friends.len() > limit {
            friends.truncate(limit);
            friends.last().map(|f| FriendCursor {
                state: f.state,
                position: f.position,
                user_id: f.user.id,
            })
        } else {
            None
        };
        Ok(FriendPage { friends, next })
    }

    async fn friends_by_id(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
    ) -> Result<Vec<Friend>, StorageError> {
        let sql = format!(
            "SELECT {FRIEND_COLUMNS} FROM user_edge e JOIN users u ON u.id = e.destination_id \
             WHERE e.source_id = $1 AND e.destination_id = ANY($2)"
        );
        let ids = distinct_ids(ids);
        let fail = db::read_failed("read friends");
        let client = self.client().await?;
        let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
        let rows = client
            .query(&statement, &[&user_id, &ids])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(friend_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(&fail)
    }

    async fn friends_of_friends(
        &self,
        user_id: Uuid,
        limit: usize,
        after: Option<FriendOfFriend>,
    ) -> Result<Vec<FriendOfFriend>, StorageError> {
        let fail = db::read_failed("list friends of friends");
        let (referrer, user) = after.map(|a| (a.referrer, a.user_id)).unzip();
        let client = self.client().await?;
        let statement = client.prepare_cached(OF_FRIENDS).await.map_err(&fail)?;
        let rows = client
            .query(&statement, &[&user_id, &db::int(limit), &referrer, &user])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(|r| {
                Ok(FriendOfFriend {
                    referrer: r.try_get(0)?,
                    user_id: r.try_get(1)?,
                })
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(&fail)
    }
}

fn friend_row(r: &Row) -> Result<Friend, tokio_postgres::Error> {
    // The edge's columns follow the user's.
    let edge = crate::account::USER_COLUMN_COUNT;
    let state: i32 = r.try_get(edge)?;
    Ok(Friend {
        user: user_row(r)?,
        // The column's CHECK keeps it in 0..=3.
        state: FriendState::from_number(i64::from(state)).unwrap_or(FriendState::Blocked),
        position: r.try_get(edge + 1)?,
        update_time_ms: r.try_get(edge + 2)?,
        metadata: r.try_get(edge + 3)?,
    })
}

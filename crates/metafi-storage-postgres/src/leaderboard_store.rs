//! Leaderboards and records in PostgreSQL. A record write is one upsert whose `DO UPDATE`
//! applies the operator and whose `WHERE` skips submissions that change nothing (Nakama's
//! statement); an unchanged record is then read back in the same transaction.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::text;
use metafi_storage::{
    Leaderboard, LeaderboardRecord, LeaderboardStore, Operator, RankEntry, RecordQuery,
    RecordWrite, RecordWritten, SortOrder, StorageError, initial_scores,
};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db::{self, Outcome};
use crate::writer::WriteFn;

macro_rules! board_columns {
    () => {
        "id, authoritative, sort_order, operator, reset_schedule, metadata, create_time, \
         enable_ranks, category, description, duration, start_time, end_time, join_required, \
         max_size, max_num_score, title"
    };
}

macro_rules! record_columns {
    () => {
        "leaderboard_id, owner_id, username, score, subscore, num_score, max_num_score, \
         metadata, create_time, update_time, expiry_time"
    };
}

/// The upsert of a submission; `{op}` and `{filter}` are one of the pairs of [`operator_sql`].
macro_rules! upsert {
    ($op:literal, $filter:literal) => {
        concat!(
            "INSERT INTO leaderboard_record (leaderboard_id, expiry_time, owner_id, username, ",
            "score, subscore, num_score, max_num_score, metadata, create_time, update_time) ",
            "VALUES ($1, $2, $3, $4, $5, $6, 1, 0, COALESCE($7, '{}'), $8, $8) ",
            "ON CONFLICT (leaderboard_id, expiry_time, owner_id) DO UPDATE SET ",
            $op,
            ", num_score = leaderboard_record.num_score + 1, ",
            "metadata = COALESCE($7, leaderboard_record.metadata), ",
            "username = COALESCE($4, leaderboard_record.username), update_time = $8 ",
            $filter,
            " RETURNING ",
            record_columns!()
        )
    };
}

/// Builds a [`WriteFn`] from owned arguments (a request may run twice: in its batch, then
/// alone if the batch failed).
fn op<A, T, F>(args: A, f: F) -> WriteFn<T>
where
    A: Send + Sync + 'static,
    T: Send + 'static,
    F: for<'a> Fn(&'a ClientWrapper, Arc<A>) -> futures_util::future::BoxFuture<'a, Outcome<T>>
        + Send
        + Sync
        + 'static,
{
    let args = Arc::new(args);
    Box::new(move |client| f(client, Arc::clone(&args)))
}

#[async_trait]
impl LeaderboardStore for PostgresStorage {
    async fn create_leaderboard(
        &self,
        board: Leaderboard,
    ) -> Result<(Leaderboard, bool), StorageError> {
        check_board(&board)?;
        self.writers
            .submit(op(board, |client, board| {
                Box::pin(async move { create(client, &board).await })
            }))
            .await
    }

    async fn delete_leaderboard(&self, id: &str) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", id)?;
        self.writers
            .submit(op(id.to_owned(), |client, id| {
                Box::pin(async move {
                    let s = client
                        .prepare_cached("DELETE FROM leaderboard WHERE id = $1")
                        .await?;
                    Ok(Ok(client.execute(&s, &[&*id]).await? > 0))
                })
            }))
            .await
    }

    async fn leaderboards(&self) -> Result<Vec<Leaderboard>, StorageError> {
        let fail = db::read_failed("list leaderboards");
        let client = self.client().await?;
        let s = client
            .prepare_cached(concat!(
                "SELECT ",
                board_columns!(),
                " FROM leaderboard ORDER BY create_time, id"
            ))
            .await
            .map_err(&fail)?;
        let rows = client.query(&s, &[]).await.map_err(&fail)?;
        rows.iter()
            .map(board_row)
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn disable_leaderboard_ranks(&self, id: &str) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", id)?;
        self.writers
            .submit(op(id.to_owned(), |client, id| {
                Box::pin(async move {
                    let s = client
                        .prepare_cached("UPDATE leaderboard SET enable_ranks = false WHERE id = $1")
                        .await?;
                    Ok(Ok(client.execute(&s, &[&*id]).await? > 0))
                })
            }))
            .await
    }

    async fn write_record(&self, write: RecordWrite) -> Result<RecordWritten, StorageError> {
        check_write(&write)?;
        self.writers
            .submit(op(write, |client, w| {
                Box::pin(async move { write_record(client, &w).await })
            }))
            .await
    }

    async fn delete_record(
        &self,
        leaderboard_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
    ) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", leaderboard_id)?;
        self.writers
            .submit(op(leaderboard_id.to_owned(), move |client, id| {
                Box::pin(async move {
                    let s = client
                        .prepare_cached(
                            "DELETE FROM leaderboard_record \
                             WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3",
                        )
                        .await?;
                    Ok(Ok(client
                        .execute(&s, &[&*id, &expiry_time, &owner_id])
                        .await?
                        > 0))
                })
            }))
            .await
    }

    async fn list_records(&self, q: RecordQuery) -> Result<Vec<LeaderboardRecord>, StorageError> {
        text::refuse_nul("leaderboard id", &q.leaderboard_id)?;
        if q.limit == 0 {
            return Ok(Vec::new());
        }
        let fail = db::read_failed("list leaderboard records");
        let client = self.client().await?;
        let limit = db::int(q.limit);
        let rows = match q.after {
            None => {
                let sql = if q.ascending {
                    concat!(
                        "SELECT ",
                        record_columns!(),
                        " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 ",
                        "ORDER BY score ASC, subscore ASC, owner_id ASC LIMIT $3"
                    )
                } else {
                    concat!(
                        "SELECT ",
                        record_columns!(),
                        " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 ",
                        "ORDER BY score DESC, subscore DESC, owner_id DESC LIMIT $3"
                    )
                };
                let s = client.prepare_cached(sql).await.map_err(&fail)?;
                client
                    .query(&s, &[&q.leaderboard_id, &q.expiry_time, &limit])
                    .await
            }
            Some((score, subscore, owner)) => {
                let sql = if q.ascending {
                    concat!(
                        "SELECT ",
                        record_columns!(),
                        " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 ",
                        "AND (score, subscore, owner_id) > ($3, $4, $5) ",
                        "ORDER BY score ASC, subscore ASC, owner_id ASC LIMIT $6"
                    )
                } else {
                    concat!(
                        "SELECT ",
                        record_columns!(),
                        " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 ",
                        "AND (score, subscore, owner_id) < ($3, $4, $5) ",
                        "ORDER BY score DESC, subscore DESC, owner_id DESC LIMIT $6"
                    )
                };
                let s = client.prepare_cached(sql).await.map_err(&fail)?;
                client
                    .query(
                        &s,
                        &[
                            &q.leaderboard_id,
                            &q.expiry_time,
                            &score,
                            &subscore,
                            &owner,
                            &limit,
                        ],
                    )
                    .await
            }
        }
        .map_err(&fail)?;
        rows.iter()
            .map(record_row)
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn records_of_owners(
        &self,
        leaderboard_id: &str,
        expiry_time: i64,
        owners: &[Uuid],
    ) -> Result<Vec<LeaderboardRecord>, StorageError> {
        text::refuse_nul("leaderboard id", leaderboard_id)?;
        if owners.is_empty() {
            return Ok(Vec::new());
        }
        let fail = db::read_failed("read leaderboard records");
        let client = self.client().await?;
        let s = client
            .prepare_cached(concat!(
                "SELECT ",
                record_columns!(),
                " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 ",
                "AND owner_id = ANY($3::uuid[])"
            ))
            .await
            .map_err(&fail)?;
        let rows = client
            .query(&s, &[&leaderboard_id, &expiry_time, &owners])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(record_row)
            .collect::<Result<_, _>>()
            .map_err(&fail)
    }

    async fn rank_entries(
        &self,
        leaderboard_id: &str,
        now_s: i64,
    ) -> Result<Vec<RankEntry>, StorageError> {
        text::refuse_nul("leaderboard id", leaderboard_id)?;
        let fail = db::read_failed("read leaderboard ranks");
        let client = self.client().await?;
        let s = client
            .prepare_cached(
                "SELECT owner_id, score, subscore, expiry_time FROM leaderboard_record \
                 WHERE leaderboard_id = $1 AND (expiry_time = 0 OR expiry_time > $2)",
            )
            .await
            .map_err(&fail)?;
        let rows = client
            .query(&s, &[&leaderboard_id, &now_s])
            .await
            .map_err(&fail)?;
        rows.iter()
            .map(|r| {
                Ok(RankEntry {
                    owner_id: r.try_get(0)?,
                    score: r.try_get(1)?,
                    subscore: r.try_get(2)?,
                    expiry_time: r.try_get(3)?,
                })
            })
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(&fail)
    }
}

fn check_board(board: &Leaderboard) -> Result<(), StorageError> {
    text::check_text("leaderboard id", &board.id, 128)?;
    text::check_text("reset schedule", &board.reset_schedule, 64)?;
    text::refuse_nul("metadata", &board.metadata)?;
    text::refuse_nul("description", &board.description)?;
    text::refuse_nul("title", &board.title)
}

pub(crate) fn check_write(write: &RecordWrite) -> Result<(), StorageError> {
    text::refuse_nul("leaderboard id", &write.leaderboard_id)?;
    if let Some(username) = &write.username {
        text::check_text("username", username, 128)?;
    }
    if let Some(metadata) = &write.metadata {
        text::refuse_nul("metadata", metadata)?;
    }
    Ok(())
}

async fn create(client: &ClientWrapper, b: &Leaderboard) -> Outcome<(Leaderboard, bool)> {
    let s = client
        .prepare_cached(concat!(
            "INSERT INTO leaderboard (",
            board_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
             ON CONFLICT (id) DO NOTHING"
        ))
        .await?;
    let inserted = client
        .execute(
            &s,
            &[
                &b.id,
                &b.authoritative,
                &b.sort_order.code(),
                &b.operator.code(),
                &b.reset_schedule,
                &b.metadata,
                &b.create_time_ms,
                &b.enable_ranks,
                &b.category,
                &b.description,
                &b.duration,
                &b.start_time,
                &b.end_time,
                &b.join_required,
                &b.max_size,
                &b.max_num_score,
                &b.title,
            ],
        )
        .await?;
    if inserted > 0 {
        return Ok(Ok((b.clone(), true)));
    }
    let s = client
        .prepare_cached(concat!(
            "SELECT ",
            board_columns!(),
            " FROM leaderboard WHERE id = $1"
        ))
        .await?;
    let row = client.query_one(&s, &[&b.id]).await?;
    Ok(Ok((board_row(&row)?, false)))
}

async fn write_record(client: &ClientWrapper, w: &RecordWrite) -> Outcome<RecordWritten> {
    let sql = match (w.operator, w.sort_order) {
        (Operator::Increment, _) => upsert!(
            "score = leaderboard_record.score + $9, subscore = leaderboard_record.subscore + $10",
            "WHERE $9::bigint <> 0 OR $10::bigint <> 0"
        ),
        (Operator::Decrement, _) => upsert!(
            "score = GREATEST(leaderboard_record.score - $9, 0), \
             subscore = GREATEST(leaderboard_record.subscore - $10, 0)",
            "WHERE $9::bigint <> 0 OR $10::bigint <> 0"
        ),
        (Operator::Set, _) => upsert!(
            "score = $9, subscore = $10",
            "WHERE leaderboard_record.score <> $9 OR leaderboard_record.subscore <> $10"
        ),
        (Operator::Best, SortOrder::Ascending) => upsert!(
            "score = LEAST(leaderboard_record.score, $9), \
             subscore = LEAST(leaderboard_record.subscore, $10)",
            "WHERE leaderboard_record.score > $9 OR leaderboard_record.subscore > $10"
        ),
        (Operator::Best, SortOrder::Descending) => upsert!(
            "score = GREATEST(leaderboard_record.score, $9), \
             subscore = GREATEST(leaderboard_record.subscore, $10)",
            "WHERE leaderboard_record.score < $9 OR leaderboard_record.subscore < $10"
        ),
    };
    let (score, subscore) = initial_scores(w.operator, (w.score, w.subscore));
    if score < 0 || subscore < 0 {
        return Ok(Err(StorageError::Invalid {
            message: "scores must not be negative".to_owned(),
        }));
    }
    let s = client.prepare_cached(sql).await?;
    let row = client
        .query_opt(
            &s,
            &[
                &w.leaderboard_id,
                &w.expiry_time,
                &w.owner_id,
                &w.username,
                &score,
                &subscore,
                &w.metadata,
                &w.now_ms,
                &w.score,
                &w.subscore,
            ],
        )
        .await?;
    if let Some(row) = row {
        return Ok(Ok(RecordWritten {
            record: record_row(&row)?,
            changed: true,
        }));
    }
    let s = client
        .prepare_cached(concat!(
            "SELECT ",
            record_columns!(),
            " FROM leaderboard_record ",
            "WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3"
        ))
        .await?;
    let row = client
        .query_one(&s, &[&w.leaderboard_id, &w.expiry_time, &w.owner_id])
        .await?;
    Ok(Ok(RecordWritten {
        record: record_row(&row)?,
        changed: false,
    }))
}

fn board_row(r: &Row) -> Result<Leaderboard, tokio_postgres::Error> {
    Ok(Leaderboard {
        id: r.try_get(0)?,
        authoritative: r.try_get(1)?,
        sort_order: SortOrder::from_code(r.try_get(2)?),
        operator: Operator::from_code(r.try_get(3)?),
        reset_schedule: r.try_get(4)?,
        metadata: r.try_get(5)?,
        create_time_ms: r.try_get(6)?,
        enable_ranks: r.try_get(7)?,
        category: r.try_get(8)?,
        description: r.try_get(9)?,
        duration: r.try_get(10)?,
        start_time: r.try_get(11)?,
        end_time: r.try_get(12)?,
        join_required: r.try_get(13)?,
        max_size: r.try_get(14)?,
        max_num_score: r.try_get(15)?,
        title: r.try_get(16)?,
    })
}

pub(crate) fn record_row(r: &Row) -> Result<LeaderboardRecord, tokio_postgres::Error> {
    Ok(LeaderboardRecord {
        leaderboard_id: r.try_get(0)?,
        owner_id: r.try_get(1)?,
        username: r.try_get(2)?,
        score: r.try_get(3)?,
        subscore: r.try_get(4)?,
        num_score: r.try_get(5)?,
        max_num_score: r.try_get(6)?,
        metadata: r.try_get(7)?,
        create_time_ms: r.try_get(8)?,
        update_time_ms: r.try_get(9)?,
        expiry_time: r.try_get(10)?,
    })
}

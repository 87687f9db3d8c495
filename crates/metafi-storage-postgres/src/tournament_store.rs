//! Tournament writes, joins and sizes in PostgreSQL. A write request locks the owner's record
//! (`FOR UPDATE`), decides with [`plan_tournament_write`], takes a place in a full-able
//! tournament with a guarded `UPDATE … WHERE size < max_size` (the row lock orders concurrent
//! entrants, on any node) and only then writes, so a refusal leaves nothing behind.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::text;
use metafi_storage::{
    JoinOutcome, StorageError, TournamentPlan, TournamentRefusal, TournamentStore, TournamentWrite,
    TournamentWritten, plan_tournament_write,
};
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db::{self, Outcome};
use crate::leaderboard_store::{check_write, record_row};
use crate::writer::WriteFn;

const RECORD_COLUMNS: &str = "leaderboard_id, owner_id, username, score, subscore, num_score, \
     max_num_score, metadata, create_time, update_time, expiry_time";

#[async_trait]
impl TournamentStore for PostgresStorage {
    async fn join_tournament(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        username: Option<String>,
        max_num_score: i32,
        has_max_size: bool,
        now_ms: i64,
    ) -> Result<JoinOutcome, StorageError> {
        text::refuse_nul("tournament id", tournament_id)?;
        if let Some(username) = &username {
            text::check_text("username", username, 128)?;
        }
        let args = (tournament_id.to_owned(), username);
        self.writers
            .submit(write_op!(args, |client, a| async move {
                let (id, username) = &*a;
                let exists = client
                    .prepare_cached(
                        "SELECT 1 FROM leaderboard_record \
                         WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3 \
                         FOR UPDATE",
                    )
                    .await?;
                if client
                    .query_opt(&exists, &[id, &expiry_time, &owner_id])
                    .await?
                    .is_some()
                {
                    return Ok(Ok(JoinOutcome::AlreadyJoined));
                }
                if has_max_size && !take_place(client, id).await? {
                    return Ok(Ok(JoinOutcome::Full));
                }
                let insert = client
                    .prepare_cached(
                        "INSERT INTO leaderboard_record (leaderboard_id, expiry_time, owner_id, \
                         username, score, subscore, num_score, max_num_score, metadata, \
                         create_time, update_time) \
                         VALUES ($1, $2, $3, $4, 0, 0, 0, $5, '{}', $6, $6)",
                    )
                    .await?;
                client
                    .execute(
                        &insert,
                        &[
                            id,
                            &expiry_time,
                            &owner_id,
                            username,
                            &max_num_score,
                            &now_ms,
                        ],
                    )
                    .await?;
                Ok(Ok(JoinOutcome::Joined))
            }))
            .await
    }

    async fn write_tournament_record(
        &self,
        write: TournamentWrite,
    ) -> Result<TournamentWritten, StorageError> {
        check_write(&write.write)?;
        self.writers
            .submit(write_op!(write, |client, w| write_record(client, &w)))
            .await
    }

    async fn add_tournament_attempts(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        count: i32,
    ) -> Result<bool, StorageError> {
        text::refuse_nul("tournament id", tournament_id)?;
        self.writers
            .submit(write_op!(
                tournament_id.to_owned(),
                |client, id| async move {
                    let s = client
                        .prepare_cached(
                            "UPDATE leaderboard_record SET max_num_score = max_num_score + $4 \
                         WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3",
                        )
                        .await?;
                    Ok(Ok(client
                        .execute(&s, &[&*id, &expiry_time, &owner_id, &count])
                        .await?
                        > 0))
                }
            ))
            .await
    }

    async fn delete_tournament_record(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        has_max_size: bool,
    ) -> Result<bool, StorageError> {
        text::refuse_nul("tournament id", tournament_id)?;
        self.writers
            .submit(write_op!(
                tournament_id.to_owned(),
                |client, id| async move {
                    let s = client
                        .prepare_cached(
                            "DELETE FROM leaderboard_record \
                         WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3",
                        )
                        .await?;
                    let deleted = client.execute(&s, &[&*id, &expiry_time, &owner_id]).await? > 0;
                    if deleted && has_max_size {
                        let s = client
                            .prepare_cached("UPDATE leaderboard SET size = size - 1 WHERE id = $1")
                            .await?;
                        client.execute(&s, &[&*id]).await?;
                    }
                    Ok(Ok(deleted))
                }
            ))
            .await
    }

    async fn tournament_sizes(&self, ids: &[String]) -> Result<HashMap<String, i32>, StorageError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        for id in ids {
            text::refuse_nul("tournament id", id)?;
        }
        let fail = db::read_failed("read tournament sizes");
        let client = self.client().await?;
        let s = client
            .prepare_cached("SELECT id, size FROM leaderboard WHERE id = ANY($1)")
            .await
            .map_err(&fail)?;
        let rows = client.query(&s, &[&ids]).await.map_err(&fail)?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(&fail)
    }

    async fn reset_tournament_size(&self, tournament_id: &str) -> Result<(), StorageError> {
        text::refuse_nul("tournament id", tournament_id)?;
        self.writers
            .submit(write_op!(
                tournament_id.to_owned(),
                |client, id| async move {
                    let s = client
                        .prepare_cached("UPDATE leaderboard SET size = 0 WHERE id = $1")
                        .await?;
                    client.execute(&s, &[&*id]).await?;
                    Ok(Ok(()))
                }
            ))
            .await
    }
}

/// Takes a place in a tournament with a max size; false when it is full.
async fn take_place(client: &ClientWrapper, id: &str) -> Result<bool, tokio_postgres::Error> {
    let s = client
        .prepare_cached("UPDATE leaderboard SET size = size + 1 WHERE id = $1 AND size < max_size")
        .await?;
    Ok(client.execute(&s, &[&id]).await? > 0)
}

async fn write_record(client: &ClientWrapper, t: &TournamentWrite) -> Outcome<TournamentWritten> {
    let w = &t.write;
    let select = client
        .prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM leaderboard_record \
             WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3 FOR UPDATE"
        ))
        .await?;
    let current = match client
        .query_opt(&select, &[&w.leaderboard_id, &w.expiry_time, &w.owner_id])
        .await?
    {
        Some(row) => Some(record_row(&row)?),
        None => None,
    };
    let plan = plan_tournament_write(
        t,
        current
            .as_ref()
            .map(|r| (r.score, r.subscore, r.num_score, r.max_num_score)),
    );
    let negative = || StorageError::Invalid {
        message: "scores must not be negative".to_owned(),
    };
    match (plan, current) {
        (TournamentPlan::Refuse(refusal), _) => Ok(Ok(Err(refusal))),
        (TournamentPlan::Keep, Some(current)) => Ok(Ok(Ok(current))),
        (
            TournamentPlan::Insert {
                score,
                subscore,
                grow_size,
            },
            None,
        ) => {
            if score < 0 || subscore < 0 {
                return Ok(Err(negative()));
            }
            if grow_size && !take_place(client, &w.leaderboard_id).await? {
                return Ok(Ok(Err(TournamentRefusal::MaxSizeReached)));
            }
            let s = client
                .prepare_cached(&format!(
                    "INSERT INTO leaderboard_record (leaderboard_id, expiry_time, owner_id, \
                     username, score, subscore, num_score, max_num_score, metadata, \
                     create_time, update_time) \
                     VALUES ($1, $2, $3, $4, $5, $6, 1, $7, COALESCE($8, '{{}}'), $9, $9) \
                     RETURNING {RECORD_COLUMNS}"
                ))
                .await?;
            let row = client
                .query_one(
                    &s,
                    &[
                        &w.leaderboard_id,
                        &w.expiry_time,
                        &w.owner_id,
                        &w.username,
                        &score,
                        &subscore,
                        &t.max_num_score,
                        &w.metadata,
                        &w.now_ms,
                    ],
                )
                .await?;
            Ok(Ok(Ok(record_row(&row)?)))
        }
        (
            TournamentPlan::Update {
                score,
                subscore,
                grow_size,
            },
            Some(_),
        ) => {
            if score < 0 || subscore < 0 {
                return Ok(Err(negative()));
            }
            if grow_size && !take_place(client, &w.leaderboard_id).await? {
                return Ok(Ok(Err(TournamentRefusal::MaxSizeReached)));
            }
            let s = client
                .prepare_cached(&format!(
                    "UPDATE leaderboard_record SET score = $4, subscore = $5, \
                     num_score = num_score + 1, username = COALESCE($6, username), \
                     metadata = COALESCE($7, metadata), update_time = $8 \
                     WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3 \
                     RETURNING {RECORD_COLUMNS}"
                ))
                .await?;
            let row = client
                .query_one(
                    &s,
                    &[
                        &w.leaderboard_id,
                        &w.expiry_time,
                        &w.owner_id,
                        &score,
                        &subscore,
                        &w.username,
                        &w.metadata,
                        &w.now_ms,
                    ],
                )
                .await?;
            Ok(Ok(Ok(record_row(&row)?)))
        }
        // The plan follows `current`: an insert without one, the rest with one.
        (_, _) => Ok(Err(StorageError::Invalid {
            message: "tournament write plan does not match the stored record".to_owned(),
        })),
    }
}

//! Tournament writes, joins and sizes in SQLite: each operation is one closure on the writer
//! (read the owner's record, decide with [`plan_tournament_write`], take a place, write), so
//! it is atomic under the single writer.

use std::collections::HashMap;

use async_trait::async_trait;
use metafi_storage::text;
use metafi_storage::{
    JoinOutcome, StorageError, TournamentPlan, TournamentRefusal, TournamentStore, TournamentWrite,
    TournamentWritten, plan_tournament_write,
};
use rusqlite::{Connection, params};
use uuid::Uuid;

use crate::SqliteStorage;
use crate::leaderboard_store::{
    check_write, insert_record, negative, new_record, record, update_record,
};

#[async_trait]
impl TournamentStore for SqliteStorage {
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
        let id = tournament_id.to_owned();
        self.writer
            .submit(move |conn| {
                let fail = |e| StorageError::backend("join tournament", e);
                if record(conn, &id, expiry_time, owner_id)?.is_some() {
                    return Ok(JoinOutcome::AlreadyJoined);
                }
                if has_max_size && !take_place(conn, &id)? {
                    return Ok(JoinOutcome::Full);
                }
                conn.prepare_cached(
                    "INSERT INTO leaderboard_record (leaderboard_id, expiry_time, owner_id, \
                     username, score, subscore, num_score, max_num_score, metadata, \
                     create_time, update_time) \
                     VALUES (?1, ?2, ?3, ?4, 0, 0, 0, ?5, '{}', ?6, ?6)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        id,
                        expiry_time,
                        owner_id,
                        username,
                        max_num_score,
                        now_ms
                    ])
                })
                .map_err(fail)?;
                Ok(JoinOutcome::Joined)
            })
            .await
    }

    async fn write_tournament_record(
        &self,
        write: TournamentWrite,
    ) -> Result<TournamentWritten, StorageError> {
        check_write(&write.write)?;
        self.writer
            .submit(move |conn| write_record(conn, &write))
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
        let id = tournament_id.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "UPDATE leaderboard_record SET max_num_score = max_num_score + ?4 \
                     WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
                )
                .and_then(|mut s| s.execute(params![id, expiry_time, owner_id, count]))
                .map(|n| n > 0)
                .map_err(|e| StorageError::backend("add tournament attempts", e))
            })
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
        let id = tournament_id.to_owned();
        self.writer
            .submit(move |conn| {
                let fail = |e| StorageError::backend("delete tournament record", e);
                let deleted = conn
                    .prepare_cached(
                        "DELETE FROM leaderboard_record \
                         WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
                    )
                    .and_then(|mut s| s.execute(params![id, expiry_time, owner_id]))
                    .map_err(fail)?
                    > 0;
                if deleted && has_max_size {
                    conn.prepare_cached("UPDATE leaderboard SET size = size - 1 WHERE id = ?1")
                        .and_then(|mut s| s.execute(params![id]))
                        .map_err(fail)?;
                }
                Ok(deleted)
            })
            .await
    }

    async fn tournament_sizes(&self, ids: &[String]) -> Result<HashMap<String, i32>, StorageError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        for id in ids {
            text::refuse_nul("tournament id", id)?;
        }
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| {
                let mut sizes = HashMap::with_capacity(ids.len());
                let mut s = conn
                    .prepare_cached("SELECT size FROM leaderboard WHERE id = ?1")
                    .map_err(|e| StorageError::backend("read tournament sizes", e))?;
                for id in ids {
                    let size: Option<i32> = s
                        .query_row(params![id], |r| r.get(0))
                        .map(Some)
                        .or_else(|e| match e {
                            rusqlite::Error::QueryReturnedNoRows => Ok(None),
                            e => Err(e),
                        })
                        .map_err(|e| StorageError::backend("read tournament sizes", e))?;
                    if let Some(size) = size {
                        sizes.insert(id, size);
                    }
                }
                Ok(sizes)
            })
            .await
    }

    async fn reset_tournament_size(&self, tournament_id: &str) -> Result<(), StorageError> {
        text::refuse_nul("tournament id", tournament_id)?;
        let id = tournament_id.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("UPDATE leaderboard SET size = 0 WHERE id = ?1")
                    .and_then(|mut s| s.execute(params![id]))
                    .map(|_| ())
                    .map_err(|e| StorageError::backend("reset tournament size", e))
            })
            .await
    }
}

/// Takes a place in a tournament with a max size; false when it is full.
fn take_place(conn: &Connection, id: &str) -> Result<bool, StorageError> {
    conn.prepare_cached("UPDATE leaderboard SET size = size + 1 WHERE id = ?1 AND size < max_size")
        .and_then(|mut s| s.execute(params![id]))
        .map(|n| n > 0)
        .map_err(|e| StorageError::backend("update tournament size", e))
}

fn write_record(conn: &Connection, t: &TournamentWrite) -> Result<TournamentWritten, StorageError> {
    let w = &t.write;
    let current = record(conn, &w.leaderboard_id, w.expiry_time, w.owner_id)?;
    let plan = plan_tournament_write(
        t,
        current
            .as_ref()
            .map(|r| (r.score, r.subscore, r.num_score, r.max_num_score)),
    );
    match (plan, current) {
        (TournamentPlan::Refuse(refusal), _) => Ok(Err(refusal)),
        (TournamentPlan::Keep, Some(current)) => Ok(Ok(current)),
        (
            TournamentPlan::Insert {
                score,
                subscore,
                grow_size,
            },
            None,
        ) => {
            if score < 0 || subscore < 0 {
                return Err(negative());
            }
            if grow_size && !take_place(conn, &w.leaderboard_id)? {
                return Ok(Err(TournamentRefusal::MaxSizeReached));
            }
            let record = new_record(w, (score, subscore), t.max_num_score);
            insert_record(conn, &record)?;
            Ok(Ok(record))
        }
        (
            TournamentPlan::Update {
                score,
                subscore,
                grow_size,
            },
            Some(current),
        ) => {
            if score < 0 || subscore < 0 {
                return Err(negative());
            }
            if grow_size && !take_place(conn, &w.leaderboard_id)? {
                return Ok(Err(TournamentRefusal::MaxSizeReached));
            }
            let record = update_record(conn, current, w, (score, subscore))?;
            Ok(Ok(record))
        }
        // The plan follows `current`: an insert without one, the rest with one.
        (_, _) => Err(StorageError::Invalid {
            message: "tournament write plan does not match the stored record".to_owned(),
        }),
    }
}

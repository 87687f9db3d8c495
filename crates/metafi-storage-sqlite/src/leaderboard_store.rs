//! Leaderboards and records in SQLite. A record write is one closure on the writer: read the
//! owner's record, combine with the operator, write — atomic under the single writer.

use async_trait::async_trait;
use metafi_storage::text;
use metafi_storage::{
    Leaderboard, LeaderboardRecord, LeaderboardStore, Operator, RankEntry, RecordQuery,
    RecordWrite, RecordWritten, SortOrder, StorageError, apply_operator, initial_scores,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::{SqliteStorage, db};

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

#[async_trait]
impl LeaderboardStore for SqliteStorage {
    async fn create_leaderboard(
        &self,
        board: Leaderboard,
    ) -> Result<(Leaderboard, bool), StorageError> {
        check_board(&board)?;
        self.writer.submit(move |conn| create(conn, &board)).await
    }

    async fn delete_leaderboard(&self, id: &str) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", id)?;
        let id = id.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("DELETE FROM leaderboard WHERE id = ?1")
                    .and_then(|mut s| s.execute(params![id]))
                    .map(|n| n > 0)
                    .map_err(|e| StorageError::backend("delete leaderboard", e))
            })
            .await
    }

    async fn leaderboards(&self) -> Result<Vec<Leaderboard>, StorageError> {
        self.readers
            .read(|conn| {
                conn.prepare_cached(concat!(
                    "SELECT ",
                    board_columns!(),
                    " FROM leaderboard ORDER BY create_time, id"
                ))
                .and_then(|mut s| s.query_map([], board_row)?.collect())
                .map_err(|e| StorageError::backend("list leaderboards", e))
            })
            .await
    }

    async fn disable_leaderboard_ranks(&self, id: &str) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", id)?;
        let id = id.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("UPDATE leaderboard SET enable_ranks = 0 WHERE id = ?1")
                    .and_then(|mut s| s.execute(params![id]))
                    .map(|n| n > 0)
                    .map_err(|e| StorageError::backend("disable leaderboard ranks", e))
            })
            .await
    }

    async fn write_record(&self, write: RecordWrite) -> Result<RecordWritten, StorageError> {
        check_write(&write)?;
        self.writer
            .submit(move |conn| write_record(conn, &write))
            .await
    }

    async fn delete_record(
        &self,
        leaderboard_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
    ) -> Result<bool, StorageError> {
        text::refuse_nul("leaderboard id", leaderboard_id)?;
        let id = leaderboard_id.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "DELETE FROM leaderboard_record \
                     WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
                )
                .and_then(|mut s| s.execute(params![id, expiry_time, owner_id]))
                .map(|n| n > 0)
                .map_err(|e| StorageError::backend("delete leaderboard record", e))
            })
            .await
    }

    async fn list_records(
        &self,
        query: RecordQuery,
    ) -> Result<Vec<LeaderboardRecord>, StorageError> {
        text::refuse_nul("leaderboard id", &query.leaderboard_id)?;
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        self.readers.read(move |conn| list(conn, &query)).await
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
        let id = leaderboard_id.to_owned();
        let owners = owners.to_vec();
        self.readers
            .read(move |conn| {
                let mut out = Vec::with_capacity(owners.len());
                for owner in owners {
                    if let Some(record) = record(conn, &id, expiry_time, owner)? {
                        out.push(record);
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn rank_entries(
        &self,
        leaderboard_id: &str,
        now_s: i64,
    ) -> Result<Vec<RankEntry>, StorageError> {
        text::refuse_nul("leaderboard id", leaderboard_id)?;
        let id = leaderboard_id.to_owned();
        self.readers
            .read(move |conn| {
                conn.prepare_cached(
                    "SELECT owner_id, score, subscore, expiry_time FROM leaderboard_record \
                     WHERE leaderboard_id = ?1 AND (expiry_time = 0 OR expiry_time > ?2)",
                )
                .and_then(|mut s| {
                    s.query_map(params![id, now_s], |r| {
                        Ok(RankEntry {
                            owner_id: r.get(0)?,
                            score: r.get(1)?,
                            subscore: r.get(2)?,
                            expiry_time: r.get(3)?,
                        })
                    })?
                    .collect()
                })
                .map_err(|e| StorageError::backend("read leaderboard ranks", e))
            })
            .await
    }
}

/// Refuses what PostgreSQL could not store, on both backends alike.
pub(crate) fn check_board(board: &Leaderboard) -> Result<(), StorageError> {
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

fn create(conn: &Connection, board: &Leaderboard) -> Result<(Leaderboard, bool), StorageError> {
    let fail = |e| StorageError::backend("create leaderboard", e);
    let inserted = conn
        .prepare_cached(concat!(
            "INSERT INTO leaderboard (",
            board_columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) \
             ON CONFLICT (id) DO NOTHING"
        ))
        .and_then(|mut s| {
            s.execute(params![
                board.id,
                board.authoritative,
                board.sort_order.code(),
                board.operator.code(),
                board.reset_schedule,
                board.metadata,
                board.create_time_ms,
                board.enable_ranks,
                board.category,
                board.description,
                board.duration,
                board.start_time,
                board.end_time,
                board.join_required,
                board.max_size,
                board.max_num_score,
                board.title
            ])
        })
        .map_err(fail)?;
    if inserted > 0 {
        return Ok((board.clone(), true));
    }
    let existing = conn
        .prepare_cached(concat!(
            "SELECT ",
            board_columns!(),
            " FROM leaderboard WHERE id = ?1"
        ))
        .and_then(|mut s| s.query_row(params![board.id], board_row))
        .map_err(fail)?;
    Ok((existing, false))
}

fn write_record(conn: &Connection, w: &RecordWrite) -> Result<RecordWritten, StorageError> {
    let current = record(conn, &w.leaderboard_id, w.expiry_time, w.owner_id)?;
    let Some(current) = current else {
        let (score, subscore) = initial_scores(w.operator, (w.score, w.subscore));
        if score < 0 || subscore < 0 {
            return Err(negative());
        }
        let record = new_record(w, (score, subscore), 0);
        insert_record(conn, &record)?;
        return Ok(RecordWritten {
            record,
            changed: true,
        });
    };
    let Some((score, subscore)) = apply_operator(
        w.operator,
        w.sort_order,
        (current.score, current.subscore),
        (w.score, w.subscore),
    ) else {
        return Ok(RecordWritten {
            record: current,
            changed: false,
        });
    };
    if score < 0 || subscore < 0 {
        return Err(negative());
    }
    let record = update_record(conn, current, w, (score, subscore))?;
    Ok(RecordWritten {
        record,
        changed: true,
    })
}

/// A score below zero breaks the table's check (as Nakama's); nothing is written.
/// A first record of `w`'s owner with these scores (one score so far).
pub(crate) fn new_record(
    w: &RecordWrite,
    (score, subscore): (i64, i64),
    max_num_score: i32,
) -> LeaderboardRecord {
    LeaderboardRecord {
        leaderboard_id: w.leaderboard_id.clone(),
        owner_id: w.owner_id,
        username: w.username.clone(),
        score,
        subscore,
        num_score: 1,
        max_num_score,
        metadata: w.metadata.clone().unwrap_or_else(|| "{}".to_owned()),
        create_time_ms: w.now_ms,
        update_time_ms: w.now_ms,
        expiry_time: w.expiry_time,
    }
}

/// Stores a record that did not exist (boards and tournaments alike).
pub(crate) fn insert_record(
    conn: &Connection,
    record: &LeaderboardRecord,
) -> Result<(), StorageError> {
    conn.prepare_cached(concat!(
        "INSERT INTO leaderboard_record (",
        record_columns!(),
        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))
    .and_then(|mut s| {
        s.execute(params![
            record.leaderboard_id,
            record.owner_id,
            record.username,
            record.score,
            record.subscore,
            record.num_score,
            record.max_num_score,
            record.metadata,
            record.create_time_ms,
            record.update_time_ms,
            record.expiry_time
        ])
    })
    .map_err(|e| StorageError::backend("insert leaderboard record", e))?;
    Ok(())
}

/// Stores `current` with new scores: one more score, the write's time, and the write's
/// username and metadata where it has them (boards and tournaments alike).
pub(crate) fn update_record(
    conn: &Connection,
    current: LeaderboardRecord,
    w: &RecordWrite,
    (score, subscore): (i64, i64),
) -> Result<LeaderboardRecord, StorageError> {
    let record = LeaderboardRecord {
        username: w.username.clone().or(current.username),
        score,
        subscore,
        num_score: current.num_score.saturating_add(1),
        metadata: w.metadata.clone().unwrap_or(current.metadata),
        update_time_ms: w.now_ms,
        ..current
    };
    conn.prepare_cached(
        "UPDATE leaderboard_record SET username = ?4, score = ?5, subscore = ?6, \
         num_score = ?7, metadata = ?8, update_time = ?9 \
         WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
    )
    .and_then(|mut s| {
        s.execute(params![
            record.leaderboard_id,
            record.expiry_time,
            record.owner_id,
            record.username,
            record.score,
            record.subscore,
            record.num_score,
            record.metadata,
            record.update_time_ms
        ])
    })
    .map_err(|e| StorageError::backend("update leaderboard record", e))?;
    Ok(record)
}

pub(crate) fn negative() -> StorageError {
    StorageError::Invalid {
        message: "scores must not be negative".to_owned(),
    }
}

pub(crate) fn record(
    conn: &Connection,
    leaderboard_id: &str,
    expiry_time: i64,
    owner_id: Uuid,
) -> Result<Option<LeaderboardRecord>, StorageError> {
    conn.prepare_cached(concat!(
        "SELECT ",
        record_columns!(),
        " FROM leaderboard_record \
         WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3"
    ))
    .and_then(|mut s| {
        s.query_row(params![leaderboard_id, expiry_time, owner_id], record_row)
            .optional()
    })
    .map_err(|e| StorageError::backend("read leaderboard record", e))
}

fn list(conn: &Connection, q: &RecordQuery) -> Result<Vec<LeaderboardRecord>, StorageError> {
    let sql = match (q.after.is_some(), q.ascending) {
        (false, true) => concat!(
            "SELECT ",
            record_columns!(),
            " FROM leaderboard_record WHERE leaderboard_id = ?1 AND expiry_time = ?2 ",
            "ORDER BY score ASC, subscore ASC, owner_id ASC LIMIT ?6"
        ),
        (false, false) => concat!(
            "SELECT ",
            record_columns!(),
            " FROM leaderboard_record WHERE leaderboard_id = ?1 AND expiry_time = ?2 ",
            "ORDER BY score DESC, subscore DESC, owner_id DESC LIMIT ?6"
        ),
        (true, true) => concat!(
            "SELECT ",
            record_columns!(),
            " FROM leaderboard_record WHERE leaderboard_id = ?1 AND expiry_time = ?2 ",
            "AND (score, subscore, owner_id) > (?3, ?4, ?5) ",
            "ORDER BY score ASC, subscore ASC, owner_id ASC LIMIT ?6"
        ),
        (true, false) => concat!(
            "SELECT ",
            record_columns!(),
            " FROM leaderboard_record WHERE leaderboard_id = ?1 AND expiry_time = ?2 ",
            "AND (score, subscore, owner_id) < (?3, ?4, ?5) ",
            "ORDER BY score DESC, subscore DESC, owner_id DESC LIMIT ?6"
        ),
    };
    let (score, subscore, owner) = match q.after {
        Some((a, b, c)) => (Some(a), Some(b), Some(c)),
        None => (None, None, None),
    };
    conn.prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(
                params![
                    q.leaderboard_id,
                    q.expiry_time,
                    score,
                    subscore,
                    owner,
                    db::int(q.limit)
                ],
                record_row,
            )?
            .collect()
        })
        .map_err(|e| StorageError::backend("list leaderboard records", e))
}

fn board_row(r: &Row<'_>) -> rusqlite::Result<Leaderboard> {
    Ok(Leaderboard {
        id: r.get(0)?,
        authoritative: r.get(1)?,
        sort_order: SortOrder::from_code(r.get(2)?),
        operator: Operator::from_code(r.get(3)?),
        reset_schedule: r.get(4)?,
        metadata: r.get(5)?,
        create_time_ms: r.get(6)?,
        enable_ranks: r.get(7)?,
        category: r.get(8)?,
        description: r.get(9)?,
        duration: r.get(10)?,
        start_time: r.get(11)?,
        end_time: r.get(12)?,
        join_required: r.get(13)?,
        max_size: r.get(14)?,
        max_num_score: r.get(15)?,
        title: r.get(16)?,
    })
}

fn record_row(r: &Row<'_>) -> rusqlite::Result<LeaderboardRecord> {
    Ok(LeaderboardRecord {
        leaderboard_id: r.get(0)?,
        owner_id: r.get(1)?,
        username: r.get(2)?,
        score: r.get(3)?,
        subscore: r.get(4)?,
        num_score: r.get(5)?,
        max_num_score: r.get(6)?,
        metadata: r.get(7)?,
        create_time_ms: r.get(8)?,
        update_time_ms: r.get(9)?,
        expiry_time: r.get(10)?,
    })
}

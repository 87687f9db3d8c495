//! Channel messages in SQLite, listed along the `(channel_id, create_time, id)` index.

use metafi_storage::support::MessageQuery;
use metafi_storage::{ChannelMessage, StorageError};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::db;

macro_rules! columns {
    () => {
        "id, channel_id, code, sender_id, username, content, create_time, update_time"
    };
}

pub(crate) fn insert(conn: &Connection, m: &ChannelMessage) -> Result<(), StorageError> {
    let inserted = conn
        .prepare_cached(concat!(
            "INSERT INTO message (",
            columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING"
        ))
        .and_then(|mut s| {
            s.execute(params![
                m.id,
                m.channel_id,
                m.code,
                m.sender_id,
                m.username,
                m.content,
                m.create_time_ms,
                m.update_time_ms
            ])
        })
        .map_err(|e| StorageError::backend("insert message", e))?;
    if inserted == 0 {
        return Err(StorageError::Invalid {
            message: "a message with this id already exists".to_owned(),
        });
    }
    Ok(())
}

pub(crate) fn update(
    conn: &Connection,
    channel_id: &str,
    id: Uuid,
    sender_id: Uuid,
    content: &str,
    now_ms: i64,
) -> Result<ChannelMessage, StorageError> {
    conn.prepare_cached(concat!(
        "UPDATE message SET content = ?4, update_time = ?5 ",
        "WHERE id = ?1 AND channel_id = ?2 AND sender_id = ?3 RETURNING ",
        columns!()
    ))
    .and_then(|mut s| {
        s.query_row(
            params![id, channel_id, sender_id, content, now_ms],
            message_row,
        )
        .optional()
    })
    .map_err(|e| StorageError::backend("update message", e))?
    .ok_or(StorageError::NotFound { what: "message" })
}

pub(crate) fn remove(
    conn: &Connection,
    channel_id: &str,
    id: Uuid,
    sender_id: Uuid,
) -> Result<ChannelMessage, StorageError> {
    conn.prepare_cached(concat!(
        "DELETE FROM message WHERE id = ?1 AND channel_id = ?2 AND sender_id = ?3 RETURNING ",
        columns!()
    ))
    .and_then(|mut s| {
        s.query_row(params![id, channel_id, sender_id], message_row)
            .optional()
    })
    .map_err(|e| StorageError::backend("remove message", e))?
    .ok_or(StorageError::NotFound { what: "message" })
}

pub(crate) fn list(
    conn: &Connection,
    channel_id: &str,
    query: &MessageQuery,
) -> Result<Vec<ChannelMessage>, StorageError> {
    let sql = match (query.after.is_some(), query.ascending) {
        (false, true) => concat!(
            "SELECT ",
            columns!(),
            " FROM message WHERE channel_id = ?1 ",
            "ORDER BY create_time ASC, id ASC LIMIT ?4"
        ),
        (false, false) => concat!(
            "SELECT ",
            columns!(),
            " FROM message WHERE channel_id = ?1 ",
            "ORDER BY create_time DESC, id DESC LIMIT ?4"
        ),
        (true, true) => concat!(
            "SELECT ",
            columns!(),
            " FROM message WHERE channel_id = ?1 ",
            "AND (create_time, id) > (?2, ?3) ORDER BY create_time ASC, id ASC LIMIT ?4"
        ),
        (true, false) => concat!(
            "SELECT ",
            columns!(),
            " FROM message WHERE channel_id = ?1 ",
            "AND (create_time, id) < (?2, ?3) ORDER BY create_time DESC, id DESC LIMIT ?4"
        ),
    };
    let (time, id) = query.after.unzip();
    conn.prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(
                params![channel_id, time, id, db::int(query.fetch)],
                message_row,
            )?
            .collect()
        })
        .map_err(|e| StorageError::backend("list messages", e))
}

fn message_row(r: &Row<'_>) -> rusqlite::Result<ChannelMessage> {
    Ok(ChannelMessage {
        id: r.get(0)?,
        channel_id: r.get(1)?,
        code: r.get(2)?,
        sender_id: r.get(3)?,
        username: r.get(4)?,
        content: r.get(5)?,
        create_time_ms: r.get(6)?,
        update_time_ms: r.get(7)?,
    })
}

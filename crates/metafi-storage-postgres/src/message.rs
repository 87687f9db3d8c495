//! Channel messages in PostgreSQL, listed along the `(channel_id, create_time, id)` index.

use deadpool_postgres::ClientWrapper;
use metafi_storage::support::MessageQuery;
use metafi_storage::{ChannelMessage, StorageError};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::db::{self, Outcome};

macro_rules! columns {
    () => {
        "id, channel_id, code, sender_id, username, content, create_time, update_time"
    };
}

pub(crate) async fn insert(client: &ClientWrapper, m: &ChannelMessage) -> Outcome<()> {
    let statement = client
        .prepare_cached(concat!(
            "INSERT INTO message (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING"
        ))
        .await?;
    let inserted = client
        .execute(
            &statement,
            &[
                &m.id,
                &m.channel_id,
                &m.code,
                &m.sender_id,
                &m.username,
                &m.content,
                &m.create_time_ms,
                &m.update_time_ms,
            ],
        )
        .await?;
    Ok(if inserted == 0 {
        Err(StorageError::Invalid {
            message: "a message with this id already exists".to_owned(),
        })
    } else {
        Ok(())
    })
}

pub(crate) async fn update(
    client: &ClientWrapper,
    channel_id: &str,
    id: Uuid,
    sender_id: Uuid,
    content: &str,
    now_ms: i64,
) -> Outcome<ChannelMessage> {
    let statement = client
        .prepare_cached(concat!(
            "UPDATE message SET content = $4, update_time = $5 ",
            "WHERE id = $1 AND channel_id = $2 AND sender_id = $3 RETURNING ",
            columns!()
        ))
        .await?;
    let row = client
        .query_opt(
            &statement,
            &[&id, &channel_id, &sender_id, &content, &now_ms],
        )
        .await?;
    found(row)
}

pub(crate) async fn remove(
    client: &ClientWrapper,
    channel_id: &str,
    id: Uuid,
    sender_id: Uuid,
) -> Outcome<ChannelMessage> {
    let statement = client
        .prepare_cached(concat!(
            "DELETE FROM message WHERE id = $1 AND channel_id = $2 AND sender_id = $3 RETURNING ",
            columns!()
        ))
        .await?;
    let row = client
        .query_opt(&statement, &[&id, &channel_id, &sender_id])
        .await?;
    found(row)
}

fn found(row: Option<Row>) -> Outcome<ChannelMessage> {
    Ok(match row {
        Some(row) => Ok(message_row(&row)?),
        None => Err(StorageError::NotFound { what: "message" }),
    })
}

pub(crate) async fn list(
    client: &ClientWrapper,
    channel_id: &str,
    query: &MessageQuery,
) -> Result<Vec<ChannelMessage>, StorageError> {
    let fail = db::read_failed("list messages");
    let fetch = db::int(query.fetch);
    let rows = match query.after {
        None => {
            let sql = if query.ascending {
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM message WHERE channel_id = $1 ",
                    "ORDER BY create_time ASC, id ASC LIMIT $2"
                )
            } else {
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM message WHERE channel_id = $1 ",
                    "ORDER BY create_time DESC, id DESC LIMIT $2"
                )
            };
            let statement = client.prepare_cached(sql).await.map_err(&fail)?;
            client.query(&statement, &[&channel_id, &fetch]).await
        }
        Some((time, id)) => {
            let sql = if query.ascending {
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM message WHERE channel_id = $1 ",
                    "AND (create_time, id) > ($2, $3) ORDER BY create_time ASC, id ASC LIMIT $4"
                )
            } else {
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM message WHERE channel_id = $1 ",
                    "AND (create_time, id) < ($2, $3) ORDER BY create_time DESC, id DESC LIMIT $4"
                )
            };
            let statement = client.prepare_cached(sql).await.map_err(&fail)?;
            client
                .query(&statement, &[&channel_id, &time, &id, &fetch])
                .await
        }
    }
    .map_err(&fail)?;
    rows.iter()
        .map(message_row)
        .collect::<Result<_, _>>()
        .map_err(&fail)
}

fn message_row(r: &Row) -> Result<ChannelMessage, tokio_postgres::Error> {
    Ok(ChannelMessage {
        id: r.try_get(0)?,
        channel_id: r.try_get(1)?,
        code: r.try_get(2)?,
        sender_id: r.try_get(3)?,
        username: r.try_get(4)?,
        content: r.try_get(5)?,
        create_time_ms: r.try_get(6)?,
        update_time_ms: r.try_get(7)?,
    })
}

//! Friends imported from a social provider, in SQLite: the reset, the look-up of the
//! provider's ids and the new edges run in one closure on the writer (one savepoint), so an
//! import is atomic and cannot race another write.

use async_trait::async_trait;
use metafi_storage::{
    FriendImport, FriendImportStore, StorageError, import_metadata, lookup_social_ids,
};
use rusqlite::{Connection, OptionalExtension as _, params};
use uuid::Uuid;

use crate::SqliteStorage;

#[async_trait]
impl FriendImportStore for SqliteStorage {
    async fn import_friends(&self, import: FriendImport) -> Result<Vec<Uuid>, StorageError> {
        self.writer
            .submit(move |conn| {
                run(conn, &import).map_err(|e| StorageError::backend("import friends", e))
            })
            .await
    }
}

fn run(conn: &Connection, import: &FriendImport) -> rusqlite::Result<Vec<Uuid>> {
    let user = import.user_id;
    if import.reset {
        // Nakama's resetUserFriends: every relationship but blocks, either way.
        conn.prepare_cached("DELETE FROM user_edge WHERE source_id = ?1 AND state <> 3")?
            .execute([user])?;
        conn.prepare_cached("DELETE FROM user_edge WHERE destination_id = ?1 AND state <> 3")?
            .execute([user])?;
    }
    let metadata = import_metadata(import.provider);
    // Static column name (never input); the column's unique index serves each look-up.
    let find = format!(
        "SELECT id FROM users WHERE {} = ?1",
        import.provider.column()
    );
    let mut imported = Vec::new();
    for provider_id in lookup_social_ids(&import.provider_ids) {
        let friend: Option<Uuid> = conn
            .prepare_cached(&find)?
            .query_row([&provider_id], |r| r.get(0))
            .optional()?;
        let Some(friend) = friend.filter(|id| *id != user) else {
            continue;
        };
        if befriend(conn, import, friend, &metadata)? {
            imported.push(friend);
        }
    }
    Ok(imported)
}

/// Makes `friend` the importer's friend when the rules allow; true when it did.
fn befriend(
    conn: &Connection,
    import: &FriendImport,
    friend: Uuid,
    metadata: &str,
) -> rusqlite::Result<bool> {
    let user = import.user_id;
    match (state(conn, user, friend)?, state(conn, friend, user)?) {
        // An invite either way: accepted, the provider merged into both edges' metadata.
        (Some(1), Some(2)) | (Some(2), Some(1)) => {
            let mut accept = conn.prepare_cached(
                "UPDATE user_edge SET state = 0, update_time = ?3, metadata = (
                     SELECT json_group_object(key, CASE
                         WHEN type = 'text' THEN value
                         WHEN type IN ('true', 'false', 'null') THEN json(type)
                         ELSE json(value) END)
                     FROM (
                         SELECT key, value, type FROM json_each(user_edge.metadata)
                         WHERE key NOT IN (SELECT key FROM json_each(?4))
                         UNION ALL SELECT key, value, type FROM json_each(?4)))
                 WHERE source_id = ?1 AND destination_id = ?2",
            )?;
            accept.execute(params![user, friend, import.now_ms, metadata])?;
            accept.execute(params![friend, user, import.now_ms, metadata])?;
            Ok(true)
        }
        (None, None) => {
            if edges(conn, user)? >= import.max_edges || edges(conn, friend)? >= import.max_edges {
                return Ok(false);
            }
            let mut insert = conn.prepare_cached(
                "INSERT INTO user_edge
                     (source_id, destination_id, state, position, update_time, metadata)
                 VALUES (?1, ?2, 0, ?3, ?3, ?4)",
            )?;
            insert.execute(params![user, friend, import.now_ms, metadata])?;
            insert.execute(params![friend, user, import.now_ms, metadata])?;
            Ok(true)
        }
        // Already friends, or a block either way.
        _ => Ok(false),
    }
}

fn state(conn: &Connection, source: Uuid, destination: Uuid) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT state FROM user_edge WHERE source_id = ?1 AND destination_id = ?2")?
        .query_row(params![source, destination], |r| r.get(0))
        .optional()
}

fn edges(conn: &Connection, user: Uuid) -> rusqlite::Result<usize> {
    let count: i64 = conn
        .prepare_cached("SELECT count(*) FROM user_edge WHERE source_id = ?1")?
        .query_row([user], |r| r.get(0))?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

//! Storage objects in SQLite. The rules (permissions, versions) are the shared ones of
//! `metafi_storage::support`; the writer thread is the only writer, so reading a row, checking
//! it and writing it cannot race.

use metafi_storage::support::{
    Current, ListScope, ObjectCursor, check_delete, check_write, may_read, object_order,
    object_page, object_version,
};
use metafi_storage::{
    Caller, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectWrite, StorageError, StorageObject,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::db;

/// The current row's version, write permission and create time.
type CurrentRow = (String, u8, i64);

fn current(
    conn: &Connection,
    collection: &str,
    key: &str,
    user_id: Uuid,
) -> rusqlite::Result<Option<CurrentRow>> {
    conn.prepare_cached(
        "SELECT version, write, create_time FROM storage
         WHERE collection = ?1 AND user_id = ?2 AND key = ?3",
    )?
    .query_row(params![collection, user_id, key], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}

/// Applies a validated write batch; on rejection returns early and the request's savepoint
/// rolls back what it had written.
pub(crate) fn write(
    conn: &Connection,
    caller: Caller,
    writes: &[ObjectWrite],
    now_ms: i64,
) -> Result<Vec<ObjectAck>, StorageError> {
    let fail = |e| StorageError::backend("write objects", e);
    let mut acks = Vec::with_capacity(writes.len());
    for (index, w) in writes.iter().enumerate() {
        let row = current(conn, &w.collection, &w.key, w.user_id).map_err(fail)?;
        let found = row.as_ref().map(|(version, write, _)| Current {
            version,
            permission_write: *write,
        });
        check_write(caller, w, found).map_err(|reject| reject.at(index))?;
        let version = object_version(&w.value);
        conn.prepare_cached(
            "INSERT INTO storage
                 (collection, user_id, key, value, version, read, write, create_time, update_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
             ON CONFLICT (collection, user_id, key) DO UPDATE SET
                 value = excluded.value, version = excluded.version, read = excluded.read,
                 write = excluded.write, update_time = excluded.update_time",
        )
        .and_then(|mut s| {
            s.execute(params![
                w.collection,
                w.user_id,
                w.key,
                w.value,
                version,
                w.permission_read,
                w.permission_write,
                now_ms
            ])
        })
        .map_err(fail)?;
        acks.push(ObjectAck {
            collection: w.collection.clone(),
            key: w.key.clone(),
            user_id: w.user_id,
            version,
            create_time_ms: row.map_or(now_ms, |(_, _, created)| created),
            update_time_ms: now_ms,
        });
    }
    Ok(acks)
}

/// Applies a validated delete batch, like [`write`].
pub(crate) fn delete(
    conn: &Connection,
    caller: Caller,
    deletes: &[ObjectDelete],
) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("delete objects", e);
    for (index, d) in deletes.iter().enumerate() {
        let row = current(conn, &d.collection, &d.key, d.user_id).map_err(fail)?;
        let found = row.as_ref().map(|(version, write, _)| Current {
            version,
            permission_write: *write,
        });
        if check_delete(caller, d, found).map_err(|reject| reject.at(index))? {
            conn.prepare_cached(
                "DELETE FROM storage WHERE collection = ?1 AND user_id = ?2 AND key = ?3",
            )
            .and_then(|mut s| s.execute(params![d.collection, d.user_id, d.key]))
            .map_err(fail)?;
        }
    }
    Ok(())
}

const OBJECT_COLUMNS: &str =
    "collection, key, user_id, value, version, read, write, create_time, update_time";

pub(crate) fn read(
    conn: &Connection,
    caller: Caller,
    ids: &[ObjectId],
) -> Result<Vec<StorageObject>, StorageError> {
    let fail = |e| StorageError::backend("read objects", e);
    let sql = format!(
        "SELECT {OBJECT_COLUMNS} FROM storage WHERE collection = ?1 AND user_id = ?2 AND key = ?3"
    );
    let mut statement = conn.prepare_cached(&sql).map_err(fail)?;
    let mut objects = Vec::with_capacity(ids.len());
    for id in ids {
        let object = statement
            .query_row(params![id.collection, id.user_id, id.key], object_row)
            .optional()
            .map_err(fail)?;
        if let Some(object) = object
            && may_read(caller, object.user_id, object.permission_read)
        {
            objects.push(object);
        }
    }
    Ok(objects)
}

pub(crate) fn list(
    conn: &Connection,
    scope: ListScope,
    collection: &str,
    owner: Option<Uuid>,
    limit: usize,
    cursor: Option<ObjectCursor>,
) -> Result<ObjectPage, StorageError> {
    let mut sql = format!("SELECT {OBJECT_COLUMNS} FROM storage WHERE collection = ?1");
    sql.push_str(match scope {
        ListScope::All => "",
        ListScope::Public => " AND read = 2",
        ListScope::OwnerReadable => " AND read >= 1",
    });
    if owner.is_some() {
        sql.push_str(" AND user_id = ?2");
    }
    // Nakama's order `read, key, user_id` (see `ObjectCursor`), without the columns the filter
    // fixes. Parameters: ?3 read, ?4 key, ?5 user_id of the cursor.
    let order = object_order(scope, owner);
    let placeholder = |column: &str| match column {
        "read" => "?3",
        "key" => "?4",
        _ => "?5",
    };
    if cursor.is_some() {
        let after: Vec<&str> = order.iter().map(|c| placeholder(c)).collect();
        sql.push_str(&format!(
            " AND ({}) > ({})",
            order.join(", "),
            after.join(", ")
        ));
    }
    sql.push_str(&format!(" ORDER BY {} LIMIT ?6", order.join(", ")));
    let (after_read, after_key, after_user) = match cursor {
        Some(c) => (Some(c.permission_read), Some(c.key), Some(c.user_id)),
        None => (None, None, None),
    };
    let fetch = db::int(limit.saturating_add(1));
    let objects = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(
                params![collection, owner, after_read, after_key, after_user, fetch],
                object_row,
            )?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| StorageError::backend("list objects", e))?;
    Ok(object_page(objects, limit))
}

pub(crate) fn of_user(
    conn: &Connection,
    owner: Uuid,
    limit: usize,
) -> Result<Vec<StorageObject>, StorageError> {
    let sql = format!(
        "SELECT {OBJECT_COLUMNS} FROM storage WHERE user_id = ?1 ORDER BY collection, key LIMIT ?2"
    );
    conn.prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params![owner, db::int(limit)], object_row)?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| StorageError::backend("read objects of a user", e))
}

fn object_row(r: &Row<'_>) -> rusqlite::Result<StorageObject> {
    Ok(StorageObject {
        collection: r.get(0)?,
        key: r.get(1)?,
        user_id: r.get(2)?,
        value: r.get(3)?,
        version: r.get(4)?,
        permission_read: r.get(5)?,
        permission_write: r.get(6)?,
        create_time_ms: r.get(7)?,
        update_time_ms: r.get(8)?,
    })
}

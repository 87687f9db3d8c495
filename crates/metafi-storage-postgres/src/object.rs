//! Storage objects in PostgreSQL. A write or delete batch is one call of a plpgsql function
//! (see the migration) that checks Nakama's rules for every operation before writing any.

use deadpool_postgres::ClientWrapper;
use metafi_storage::support::{
    ListScope, ObjectCursor, Reject, may_read, object_order, object_page, object_version,
};
use metafi_storage::{
    Caller, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectWrite, StorageError,
    StorageObject, VersionCheck,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use crate::db::{self, Outcome};

fn caller_param(caller: Caller) -> Option<Uuid> {
    match caller {
        Caller::Server => None,
        Caller::User(user) => Some(user),
    }
}

fn rejected(status: i16, index: i32) -> StorageError {
    let index = usize::try_from(index).unwrap_or(0);
    match status {
        1 => Reject::Version.at(index),
        3 => Reject::Missing.at(index),
        _ => Reject::Permission.at(index),
    }
}

/// Writes a validated batch (no object twice, permissions in range).
pub(crate) async fn write(
    client: &ClientWrapper,
    caller: Caller,
    writes: &[ObjectWrite],
    now_ms: i64,
) -> Outcome<Vec<ObjectAck>> {
    let collections: Vec<&str> = writes.iter().map(|w| w.collection.as_str()).collect();
    let users: Vec<Uuid> = writes.iter().map(|w| w.user_id).collect();
    let keys: Vec<&str> = writes.iter().map(|w| w.key.as_str()).collect();
    let values: Vec<&str> = writes.iter().map(|w| w.value.as_str()).collect();
    let versions: Vec<String> = writes.iter().map(|w| object_version(&w.value)).collect();
    let checks: Vec<i16> = writes
        .iter()
        .map(|w| match w.version {
            VersionCheck::Any => 0,
            VersionCheck::Absent => 1,
            VersionCheck::Matches(_) => 2,
        })
        .collect();
    let expected: Vec<Option<&str>> = writes
        .iter()
        .map(|w| match &w.version {
            VersionCheck::Matches(v) => Some(v.as_str()),
            _ => None,
        })
        .collect();
    let reads: Vec<i16> = writes
        .iter()
        .map(|w| i16::from(w.permission_read))
        .collect();
    let write_perms: Vec<i16> = writes
        .iter()
        .map(|w| i16::from(w.permission_write))
        .collect();
    let statement = client
        .prepare_cached(
            "SELECT status, idx, created FROM metafi_write_objects(
                 $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .await?;
    let params: [&(dyn ToSql + Sync); 11] = [
        &caller_param(caller),
        &collections,
        &users,
        &keys,
        &values,
        &versions,
        &checks,
        &expected,
        &reads,
        &write_perms,
        &now_ms,
    ];
    let rows = client.query(&statement, &params).await?;
    let mut created = vec![now_ms; writes.len()];
    for row in &rows {
        let status: i16 = row.try_get(0)?;
        let index: i32 = row.try_get(1)?;
        if status != 0 {
            return Ok(Err(rejected(status, index)));
        }
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| created.get_mut(i)) {
            *slot = row.try_get(2)?;
        }
    }
    let acks = writes
        .iter()
        .zip(versions)
        .zip(created)
        .map(|((w, version), create_time_ms)| ObjectAck {
            collection: w.collection.clone(),
            key: w.key.clone(),
            user_id: w.user_id,
            version,
            create_time_ms,
            update_time_ms: now_ms,
        })
        .collect();
    Ok(Ok(acks))
}

/// Deletes a validated batch (no object twice).
pub(crate) async fn delete(
    client: &ClientWrapper,
    caller: Caller,
    deletes: &[ObjectDelete],
) -> Outcome<()> {
    let collections: Vec<&str> = deletes.iter().map(|d| d.collection.as_str()).collect();
    let users: Vec<Uuid> = deletes.iter().map(|d| d.user_id).collect();
    let keys: Vec<&str> = deletes.iter().map(|d| d.key.as_str()).collect();
    let versions: Vec<Option<&str>> = deletes.iter().map(|d| d.version.as_deref()).collect();
    let statement = client
        .prepare_cached("SELECT status, idx FROM metafi_delete_objects($1, $2, $3, $4, $5)")
        .await?;
    let row = client
        .query_one(
            &statement,
            &[
                &caller_param(caller),
                &collections,
                &users,
                &keys,
                &versions,
            ],
        )
        .await?;
    let status: i16 = row.try_get(0)?;
    let index: i32 = row.try_get(1)?;
    Ok(if status == 0 {
        Ok(())
    } else {
        Err(rejected(status, index))
    })
}

const OBJECT_COLUMNS: &str = "s.collection, s.key, s.user_id, s.value, s.version, s.read, s.write, s.create_time, s.update_time";

pub(crate) async fn read(
    client: &ClientWrapper,
    caller: Caller,
    ids: &[ObjectId],
) -> Result<Vec<StorageObject>, StorageError> {
    let fail = db::read_failed("read objects");
    let collections: Vec<&str> = ids.iter().map(|i| i.collection.as_str()).collect();
    let users: Vec<Uuid> = ids.iter().map(|i| i.user_id).collect();
    let keys: Vec<&str> = ids.iter().map(|i| i.key.as_str()).collect();
    let sql = format!(
        "SELECT {OBJECT_COLUMNS} FROM unnest($1::text[], $2::uuid[], $3::text[])
             WITH ORDINALITY AS o (c, u, k, n)
         JOIN storage s ON s.collection = o.c AND s.user_id = o.u AND s.key = o.k
         ORDER BY o.n"
    );
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    let rows = client
        .query(&statement, &[&collections, &users, &keys])
        .await
        .map_err(&fail)?;
    let mut objects = Vec::with_capacity(rows.len());
    for row in &rows {
        let object = object_row(row).map_err(&fail)?;
        if may_read(caller, object.user_id, object.permission_read) {
            objects.push(object);
        }
    }
    Ok(objects)
}

pub(crate) async fn list(
    client: &ClientWrapper,
    scope: ListScope,
    collection: &str,
    owner: Option<Uuid>,
    limit: usize,
    cursor: Option<ObjectCursor>,
) -> Result<ObjectPage, StorageError> {
    let fail = db::read_failed("list objects");
    let fetch = db::int(limit.saturating_add(1));
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&collection];
    let mut sql = format!("SELECT {OBJECT_COLUMNS} FROM storage s WHERE s.collection = $1");
    sql.push_str(match scope {
        ListScope::All => "",
        ListScope::Public => " AND s.read = 2",
        ListScope::OwnerReadable => " AND s.read >= 1",
    });
    if let Some(owner) = &owner {
        params.push(owner);
        sql.push_str(&format!(" AND s.user_id = ${}", params.len()));
    }
    // Nakama's order `read, key, user_id` (see `ObjectCursor`), without the columns the filter
    // fixes.
    let order = object_order(scope, owner);
    let columns: Vec<String> = order.iter().map(|c| format!("s.{c}")).collect();
    let after_read = cursor.as_ref().map(|c| i16::from(c.permission_read));
    if let (Some(cursor), Some(read)) = (&cursor, &after_read) {
        let mut after = Vec::with_capacity(order.len());
        for column in order {
            params.push(match *column {
                "read" => read,
                "key" => &cursor.key,
                _ => &cursor.user_id,
            });
            after.push(format!("${}", params.len()));
        }
        sql.push_str(&format!(
            " AND ({}) > ({})",
            columns.join(", "),
            after.join(", ")
        ));
    }
    params.push(&fetch);
    sql.push_str(&format!(
        " ORDER BY {} LIMIT ${}",
        columns.join(", "),
        params.len()
    ));
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    let rows = client.query(&statement, &params).await.map_err(&fail)?;
    let objects = rows
        .iter()
        .map(object_row)
        .collect::<Result<Vec<_>, _>>()
        .map_err(&fail)?;
    Ok(object_page(objects, limit))
}

pub(crate) async fn of_user(
    client: &ClientWrapper,
    owner: Uuid,
    limit: usize,
) -> Result<Vec<StorageObject>, StorageError> {
    let fail = db::read_failed("read objects of a user");
    let sql = format!(
        "SELECT {OBJECT_COLUMNS} FROM storage s WHERE s.user_id = $1
         ORDER BY s.collection, s.key LIMIT $2"
    );
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    let rows = client
        .query(&statement, &[&owner, &db::int(limit)])
        .await
        .map_err(&fail)?;
    rows.iter()
        .map(object_row)
        .collect::<Result<Vec<_>, _>>()
        .map_err(&fail)
}

fn object_row(r: &Row) -> Result<StorageObject, tokio_postgres::Error> {
    let read: i16 = r.try_get(5)?;
    let write: i16 = r.try_get(6)?;
    Ok(StorageObject {
        collection: r.try_get(0)?,
        key: r.try_get(1)?,
        user_id: r.try_get(2)?,
        value: r.try_get(3)?,
        version: r.try_get(4)?,
        // The table's CHECK constraints keep both within 0..=2.
        permission_read: u8::try_from(read).unwrap_or(0),
        permission_write: u8::try_from(write).unwrap_or(0),
        create_time_ms: r.try_get(7)?,
        update_time_ms: r.try_get(8)?,
    })
}

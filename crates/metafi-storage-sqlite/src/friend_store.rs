//! Friend relationships in SQLite: the `user_edge` table, two rows per relationship, written
//! in one closure on the writer (one savepoint: every multi-user request is atomic).

use async_trait::async_trait;
use metafi_storage::{
    AddOutcome, EdgeWrite, Friend, FriendCursor, FriendOfFriend, FriendPage, FriendState,
    FriendStore, StorageError, distinct_ids,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::{SqliteStorage, account, db};

#[async_trait]
impl FriendStore for SqliteStorage {
    async fn add_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        metadata: &str,
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<Vec<(Uuid, AddOutcome)>>, StorageError> {
        let ids = distinct_ids(ids);
        let metadata = metadata.to_owned();
        self.writer
            .submit(move |conn| add(conn, user_id, &ids, &metadata, now_ms, max_edges))
            .await
    }

    async fn delete_friends(&self, user_id: Uuid, ids: &[Uuid]) -> Result<Vec<Uuid>, StorageError> {
        let ids = distinct_ids(ids);
        self.writer
            .submit(move |conn| delete(conn, user_id, &ids))
            .await
    }

    async fn block_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<()>, StorageError> {
        let ids = distinct_ids(ids);
        self.writer
            .submit(move |conn| block(conn, user_id, &ids, now_ms, max_edges))
            .await
    }

    async fn update_friend_metadata(
        &self,
        user_id: Uuid,
        friend_id: Uuid,
        metadata: &str,
    ) -> Result<bool, StorageError> {
        let metadata = metadata.to_owned();
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(
                    "UPDATE user_edge SET metadata = ?3 WHERE source_id = ?1 AND destination_id = ?2",
                )
                .and_then(|mut update| update.execute(params![user_id, friend_id, metadata]))
                .map(|changed| changed > 0)
                .map_err(fail("update friend metadata"))
            })
            .await
    }

    async fn list_friends(
        &self,
        user_id: Uuid,
        state: Option<FriendState>,
        limit: usize,
        after: Option<FriendCursor>,
    ) -> Result<FriendPage, StorageError> {
        self.readers
            .read(move |conn| list(conn, user_id, state, limit, after))
            .await
    }

    async fn friends_by_id(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
    ) -> Result<Vec<Friend>, StorageError> {
        let ids = distinct_ids(ids);
        self.readers
            .read(move |conn| by_id(conn, user_id, &ids))
            .await
    }

    async fn friends_of_friends(
        &self,
        user_id: Uuid,
        limit: usize,
        after: Option<FriendOfFriend>,
    ) -> Result<Vec<FriendOfFriend>, StorageError> {
        self.readers
            .read(move |conn| of_friends(conn, user_id, limit, after))
            .await
    }
}

fn fail(operation: &'static str) -> impl Fn(rusqlite::Error) -> StorageError {
    move |e| StorageError::backend(operation, e)
}

/// The state of the edge `source → destination`, if there is one.
fn edge_state(conn: &Connection, source: Uuid, destination: Uuid) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT state FROM user_edge WHERE source_id = ?1 AND destination_id = ?2")?
        .query_row(params![source, destination], |r| r.get(0))
        .optional()
}

fn edge_count(conn: &Connection, user_id: Uuid) -> rusqlite::Result<usize> {
    let count: i64 = conn
        .prepare_cached("SELECT count(*) FROM user_edge WHERE source_id = ?1")?
        .query_row([user_id], |r| r.get(0))?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

fn user_exists(conn: &Connection, id: Uuid) -> rusqlite::Result<bool> {
    db::exists(conn, "SELECT 1 FROM users WHERE id = ?1", [id])
}

/// How many of `ids` have no edge from `user_id` yet (and exist): the edges a request adds.
fn new_edges(conn: &Connection, user_id: Uuid, ids: &[Uuid]) -> rusqlite::Result<usize> {
    let mut count = 0;
    for &id in ids {
        if edge_state(conn, user_id, id)?.is_none() && user_exists(conn, id)? {
            count += 1;
        }
    }
    Ok(count)
}

fn add(
    conn: &Connection,
    user_id: Uuid,
    ids: &[Uuid],
    metadata: &str,
    now_ms: i64,
    max_edges: usize,
) -> Result<EdgeWrite<Vec<(Uuid, AddOutcome)>>, StorageError> {
    let fail = fail("add friends");
    let held = edge_count(conn, user_id).map_err(&fail)?;
    if held.saturating_add(new_edges(conn, user_id, ids).map_err(&fail)?) > max_edges {
        return Ok(EdgeWrite::OverLimit);
    }
    let mut outcomes = Vec::with_capacity(ids.len());
    for &id in ids {
        let outcome = add_one(conn, user_id, id, metadata, now_ms, max_edges).map_err(&fail)?;
        outcomes.push((id, outcome));
    }
    Ok(EdgeWrite::Done(outcomes))
}

fn add_one(
    conn: &Connection,
    user_id: Uuid,
    id: Uuid,
    metadata: &str,
    now_ms: i64,
    max_edges: usize,
) -> rusqlite::Result<AddOutcome> {
    let mine = edge_state(conn, user_id, id)?;
    let theirs = edge_state(conn, id, user_id)?;
    match (mine, theirs) {
        (Some(2), Some(1)) => {
            // Accept: both edges become friends; the caller's metadata is merged into theirs
            // top-level key by top-level key (PostgreSQL's jsonb `||`).
            conn.prepare_cached(
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
            )?
            .execute(params![user_id, id, now_ms, metadata])?;
            conn.prepare_cached(
                "UPDATE user_edge SET state = 0, update_time = ?3
                 WHERE source_id = ?1 AND destination_id = ?2",
            )?
            .execute(params![id, user_id, now_ms])?;
            Ok(AddOutcome::Accepted)
        }
        (None, None) => {
            if !user_exists(conn, id)? || edge_count(conn, id)? >= max_edges {
                return Ok(AddOutcome::Unchanged);
            }
            let mut insert = conn.prepare_cached(
                "INSERT INTO user_edge
                     (source_id, destination_id, state, position, update_time, metadata)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            )?;
            insert.execute(params![user_id, id, 1, now_ms, metadata])?;
            insert.execute(params![id, user_id, 2, now_ms, "{}"])?;
            Ok(AddOutcome::Invited)
        }
        // Already friends or invited, blocked by either side.
        _ => Ok(AddOutcome::Unchanged),
    }
}

fn delete(conn: &Connection, user_id: Uuid, ids: &[Uuid]) -> Result<Vec<Uuid>, StorageError> {
    let fail = fail("delete friends");
    let mut told = Vec::new();
    for &id in ids {
        let removed = conn
            .prepare_cached(
                "DELETE FROM user_edge WHERE (source_id = ?1 AND destination_id = ?2)
                 OR (source_id = ?2 AND destination_id = ?1 AND state <> 3)",
            )
            .and_then(|mut s| s.execute(params![user_id, id]))
            .map_err(&fail)?;
        if removed == 2 {
            told.push(id);
        }
    }
    Ok(told)
}

fn block(
    conn: &Connection,
    user_id: Uuid,
    ids: &[Uuid],
    now_ms: i64,
    max_edges: usize,
) -> Result<EdgeWrite<()>, StorageError> {
    let fail = fail("block friends");
    let held = edge_count(conn, user_id).map_err(&fail)?;
    if held.saturating_add(new_edges(conn, user_id, ids).map_err(&fail)?) > max_edges {
        return Ok(EdgeWrite::OverLimit);
    }
    for &id in ids {
        block_one(conn, user_id, id, now_ms).map_err(&fail)?;
    }
    Ok(EdgeWrite::Done(()))
}

fn block_one(conn: &Connection, user_id: Uuid, id: Uuid, now_ms: i64) -> rusqlite::Result<()> {
    let updated = conn
        .prepare_cached(
            "UPDATE user_edge SET state = 3, update_time = ?3
             WHERE source_id = ?1 AND destination_id = ?2",
        )?
        .execute(params![user_id, id, now_ms])?;
    if updated == 0 {
        if !user_exists(conn, id)? {
            return Ok(());
        }
        conn.prepare_cached(
            "INSERT INTO user_edge
                 (source_id, destination_id, state, position, update_time, metadata)
             VALUES (?1, ?2, 3, ?3, ?3, '{}')",
        )?
        .execute(params![user_id, id, now_ms])?;
    }
    conn.prepare_cached(
        "DELETE FROM user_edge WHERE source_id = ?1 AND destination_id = ?2 AND state <> 3",
    )?
    .execute(params![id, user_id])?;
    Ok(())
}

/// The user columns `account::user_row` decodes, then the edge's.
macro_rules! friend_select {
    ($rest:literal) => {
        concat!(
            "SELECT u.id, u.username, u.display_name, u.avatar_url, u.lang_tag, u.location, ",
            "u.timezone, u.metadata, u.wallet, u.email, u.custom_id, u.create_time, ",
            "u.update_time, u.verify_time, u.disable_time, u.apple_id, u.facebook_id, ",
            "u.facebook_instant_game_id, u.gamecenter_id, u.google_id, u.steam_id, ",
            "e.state, e.position, e.update_time, e.metadata ",
            "FROM user_edge e JOIN users u ON u.id = e.destination_id WHERE e.source_id = ?1 ",
            $rest
        )
    };
}

fn list(
    conn: &Connection,
    user_id: Uuid,
    state: Option<FriendState>,
    limit: usize,
    after: Option<FriendCursor>,
) -> Result<FriendPage, StorageError> {
    let sql = match (state.is_some(), after.is_some()) {
        (false, false) => friend_select!("ORDER BY e.state, e.position, e.destination_id LIMIT ?2"),
        (true, false) => friend_select!(
            "AND e.state = ?3 ORDER BY e.state, e.position, e.destination_id LIMIT ?2"
        ),
        (false, true) => friend_select!(
            "AND ?3 IS NULL AND (e.state, e.position, e.destination_id) > (?4, ?5, ?6) \
             ORDER BY e.state, e.position, e.destination_id LIMIT ?2"
        ),
        (true, true) => friend_select!(
            "AND e.state = ?3 AND (e.state, e.position, e.destination_id) > (?4, ?5, ?6) \
             ORDER BY e.state, e.position, e.destination_id LIMIT ?2"
        ),
    };
    let fetch = db::int(limit.saturating_add(1));
    let state_number = state.map(FriendState::number);
    let (after_state, after_position, after_id) = (
        after.map(|c| c.state.number()),
        after.map(|c| c.position),
        after.map(|c| c.user_id),
    );
    // Each variant binds only the parameters its SQL names (rusqlite counts them).
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&user_id, &fetch];
    if state.is_some() || after.is_some() {
        bound.push(&state_number);
    }
    if after.is_some() {
        bound.extend([
            &after_state as &dyn rusqlite::ToSql,
            &after_position,
            &after_id,
        ]);
    }
    let mut friends = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(bound.as_slice(), friend_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(fail("list friends"))?;
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

fn by_id(conn: &Connection, user_id: Uuid, ids: &[Uuid]) -> Result<Vec<Friend>, StorageError> {
    let fail = fail("read friends");
    let mut statement = conn
        .prepare_cached(friend_select!("AND e.destination_id = ?2"))
        .map_err(&fail)?;
    let mut friends = Vec::new();
    for id in ids {
        if let Some(friend) = statement
            .query_row(params![user_id, id], friend_row)
            .optional()
            .map_err(&fail)?
        {
            friends.push(friend);
        }
    }
    Ok(friends)
}

fn of_friends(
    conn: &Connection,
    user_id: Uuid,
    limit: usize,
    after: Option<FriendOfFriend>,
) -> Result<Vec<FriendOfFriend>, StorageError> {
    let (referrer, user) = after.map(|a| (a.referrer, a.user_id)).unzip();
    conn.prepare_cached(
        "SELECT f.source_id, f.destination_id
         FROM user_edge mine JOIN user_edge f ON f.source_id = mine.destination_id
         WHERE mine.source_id = ?1 AND mine.state = 0 AND f.state = 0
           AND f.destination_id <> ?1
           AND NOT EXISTS (SELECT 1 FROM user_edge o WHERE o.source_id = ?1
                           AND o.destination_id = f.destination_id AND o.state = 0)
           AND (?3 IS NULL OR (f.source_id, f.destination_id) > (?3, ?4))
         ORDER BY f.source_id, f.destination_id LIMIT ?2",
    )
    .and_then(|mut s| {
        s.query_map(params![user_id, db::int(limit), referrer, user], |r| {
            Ok(FriendOfFriend {
                referrer: r.get(0)?,
                user_id: r.get(1)?,
            })
        })?
        .collect()
    })
    .map_err(fail("list friends of friends"))
}

fn friend_row(r: &Row<'_>) -> rusqlite::Result<Friend> {
    // The edge's columns follow the user's.
    let edge = account::USER_COLUMN_COUNT;
    let state: i64 = r.get(edge)?;
    Ok(Friend {
        user: account::user_row(r)?,
        state: FriendState::from_number(state)
            .ok_or(rusqlite::Error::IntegralValueOutOfRange(edge, state))?,
        position: r.get(edge + 1)?,
        update_time_ms: r.get(edge + 2)?,
        metadata: r.get(edge + 3)?,
    })
}

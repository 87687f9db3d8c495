//! Groups and memberships in SQLite. Every write runs in the single writer, so a membership
//! batch's checks (the member count against `max_count`, the last superadmin) and its writes
//! cannot interleave with another request's.

use std::collections::HashMap;

use async_trait::async_trait;
use metafi_storage::group_support::{
    self, EdgeCursor, EdgeQuery, GroupCursor, check_group_update, check_new_group, edge_query,
    group_page, plan_changes,
};
use metafi_storage::{
    Conflict, Group, GroupFilter, GroupMember, GroupMemberPage, GroupPage, GroupStore, GroupUpdate,
    MemberChange, MembershipOutcome, MembershipRefusal, NewGroup, StorageError, UserGroup,
    UserGroupPage, text,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension as _, Row, params, params_from_iter};
use uuid::Uuid;

use crate::{SqliteStorage, account, db};

macro_rules! group_columns {
    () => {
        "id, creator_id, name, description, avatar_url, lang_tag, metadata, open, edge_count, \
         max_count, create_time, update_time"
    };
}

#[async_trait]
impl GroupStore for SqliteStorage {
    async fn create_group(&self, group: NewGroup) -> Result<Group, StorageError> {
        check_new_group(&group)?;
        self.writer.submit(move |conn| create(conn, &group)).await
    }

    async fn update_group(
        &self,
        group_id: Uuid,
        update: GroupUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        check_group_update(&update)?;
        self.writer
            .submit(move |conn| update_group(conn, group_id, &update, now_ms))
            .await
    }

    async fn delete_group(&self, group_id: Uuid) -> Result<bool, StorageError> {
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("DELETE FROM groups WHERE id = ?1")
                    .and_then(|mut s| s.execute([group_id]))
                    .map(|n| n > 0)
                    .map_err(|e| StorageError::backend("delete group", e))
            })
            .await
    }

    async fn groups_by_id(&self, ids: &[Uuid]) -> Result<Vec<Group>, StorageError> {
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| {
                let mut found = Vec::with_capacity(ids.len());
                for id in ids {
                    if let Some(group) = group_by_id(conn, id)? {
                        found.push(group);
                    }
                }
                Ok(found)
            })
            .await
    }

    async fn random_groups(&self, count: usize) -> Result<Vec<Group>, StorageError> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let start = Uuid::new_v4();
        self.readers
            .read(move |conn| {
                let sql = concat!(
                    "SELECT ",
                    group_columns!(),
                    " FROM groups WHERE id > ?1 ORDER BY id LIMIT ?2"
                );
                let fetch = |after: Uuid| -> Result<Vec<Group>, StorageError> {
                    conn.prepare_cached(sql)
                        .and_then(|mut s| {
                            s.query_map(params![after, db::int(count)], group_row)?
                                .collect()
                        })
                        .map_err(|e| StorageError::backend("random groups", e))
                };
                let mut groups = fetch(start)?;
                if groups.len() < count {
                    for group in fetch(Uuid::nil())? {
                        if groups.len() >= count {
                            break;
                        }
                        if !groups.iter().any(|g| g.id == group.id) {
                            groups.push(group);
                        }
                    }
                }
                Ok(groups)
            })
            .await
    }

    async fn list_groups(
        &self,
        filter: &GroupFilter,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<GroupPage, StorageError> {
        for text in [&filter.name, &filter.lang_tag].into_iter().flatten() {
            text::refuse_nul("group filter", text)?;
        }
        let after = group_support::group_cursor(filter, cursor)?;
        let filter = filter.clone();
        let by_name = filter.name.is_some();
        let rows = self
            .readers
            .read(move |conn| list_groups(conn, &filter, after.as_ref(), limit))
            .await?;
        Ok(group_page(rows, limit, by_name))
    }

    async fn member_state(
        &self,
        group_id: Uuid,
        user_id: Uuid,
    ) -> Result<Option<i32>, StorageError> {
        self.readers
            .read(move |conn| state_of(conn, group_id, user_id))
            .await
    }

    async fn list_group_members(
        &self,
        group_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<GroupMemberPage, StorageError> {
        let query = edge_query(state, limit, cursor)?;
        self.readers
            .read(move |conn| {
                let edges = edges(conn, Side::Group, group_id, &query)?;
                let ids: Vec<Uuid> = edges.iter().map(|e| e.id).collect();
                let users = account::users_by_id(conn, &ids)?;
                let rows = edges
                    .into_iter()
                    .filter_map(|edge| {
                        let user = users.iter().find(|u| u.id == edge.id)?.clone();
                        Some((
                            GroupMember {
                                user,
                                state: edge.state,
                            },
                            edge,
                        ))
                    })
                    .collect();
                let (members, cursor) = group_support::edge_page(rows, limit);
                Ok(GroupMemberPage { members, cursor })
            })
            .await
    }

    async fn list_user_groups(
        &self,
        user_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<UserGroupPage, StorageError> {
        let query = edge_query(state, limit, cursor)?;
        self.readers
            .read(move |conn| {
                let edges = edges(conn, Side::User, user_id, &query)?;
                let mut rows = Vec::with_capacity(edges.len());
                for edge in edges {
                    if let Some(group) = group_by_id(conn, edge.id)? {
                        rows.push((
                            UserGroup {
                                group,
                                state: edge.state,
                            },
                            edge,
                        ));
                    }
                }
                let (groups, cursor) = group_support::edge_page(rows, limit);
                Ok(UserGroupPage { groups, cursor })
            })
            .await
    }

    async fn member_ids_in_states(
        &self,
        group_id: Uuid,
        states: &[i32],
    ) -> Result<Vec<Uuid>, StorageError> {
        let states = states.to_vec();
        self.readers
            .read(move |conn| {
                let mut ids = Vec::new();
                let mut statement = conn
                    .prepare_cached(
                        "SELECT user_id FROM group_edge WHERE group_id = ?1 AND state = ?2 \
                         ORDER BY position, user_id",
                    )
                    .map_err(|e| StorageError::backend("list group member ids", e))?;
                for state in states {
                    let found: Vec<Uuid> = statement
                        .query_map(params![group_id, state], |r| r.get(0))
                        .and_then(|rows| rows.collect())
                        .map_err(|e| StorageError::backend("list group member ids", e))?;
                    ids.extend(found);
                }
                Ok(ids)
            })
            .await
    }

    async fn change_members(
        &self,
        group_id: Uuid,
        changes: Vec<MemberChange>,
        now_ms: i64,
    ) -> Result<MembershipOutcome, StorageError> {
        self.writer
            .submit(move |conn| change_members(conn, group_id, &changes, now_ms))
            .await
    }
}

fn create(conn: &Connection, group: &NewGroup) -> Result<Group, StorageError> {
    let fail = |e| StorageError::backend("create group", e);
    let inserted = conn
        .prepare_cached(concat!(
            "INSERT INTO groups (",
            group_columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?10, ?10) ",
            "ON CONFLICT (name) DO NOTHING"
        ))
        .and_then(|mut s| {
            s.execute(params![
                group.id,
                group.creator_id,
                group.name,
                group.description,
                group.avatar_url,
                group.lang_tag,
                group.metadata,
                group.open,
                group.max_count,
                group.now_ms
            ])
        })
        .map_err(fail)?;
    if inserted == 0 {
        return Err(StorageError::Conflict {
            what: Conflict::GroupName,
        });
    }
    conn.prepare_cached(
        "INSERT INTO group_edge (group_id, user_id, state, position, update_time) \
         VALUES (?1, ?2, 0, ?3, ?3)",
    )
    .and_then(|mut s| s.execute(params![group.id, group.superadmin_id, group.now_ms]))
    .map_err(fail)?;
    group_by_id(conn, group.id)?.ok_or(StorageError::NotFound { what: "group" })
}

fn update_group(
    conn: &Connection,
    group_id: Uuid,
    update: &GroupUpdate,
    now_ms: i64,
) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("update group", e);
    if let Some(name) = &update.name {
        let taken = db::exists(
            conn,
            "SELECT 1 FROM groups WHERE name = ?1 AND id <> ?2",
            params![name, group_id],
        )
        .map_err(fail)?;
        if taken {
            return Err(StorageError::Conflict {
                what: Conflict::GroupName,
            });
        }
    }
    let mut sets = vec!["update_time = ?".to_owned()];
    let mut values: Vec<Value> = vec![Value::Integer(now_ms)];
    let mut set = |column: &str, value: Value| {
        sets.push(format!("{column} = ?"));
        values.push(value);
    };
    if let Some(v) = update.creator_id {
        set("creator_id", Value::Blob(v.as_bytes().to_vec()));
    }
    for (column, value) in [
        ("name", &update.name),
        ("description", &update.description),
        ("avatar_url", &update.avatar_url),
        ("lang_tag", &update.lang_tag),
        ("metadata", &update.metadata),
    ] {
        if let Some(v) = value {
            set(column, Value::Text(v.clone()));
        }
    }
    if let Some(v) = update.open {
        set("open", Value::Integer(i64::from(v)));
    }
    if let Some(v) = update.max_count {
        set("max_count", Value::Integer(i64::from(v)));
    }
    values.push(Value::Blob(group_id.as_bytes().to_vec()));
    let sql = format!("UPDATE groups SET {} WHERE id = ?", sets.join(", "));
    let changed = conn
        .prepare_cached(&sql)
        .and_then(|mut s| s.execute(params_from_iter(values)))
        .map_err(fail)?;
    if changed == 0 {
        return Err(StorageError::NotFound { what: "group" });
    }
    Ok(())
}

fn list_groups(
    conn: &Connection,
    filter: &GroupFilter,
    after: Option<&GroupCursor>,
    limit: usize,
) -> Result<Vec<Group>, StorageError> {
    let mut conditions: Vec<&str> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    let order;
    if let Some(name) = &filter.name {
        conditions.push("name LIKE ?");
        values.push(Value::Text(group_support::name_pattern(name)));
        if let Some(GroupCursor::Name(last)) = after {
            conditions.push("name > ?");
            values.push(Value::Text(last.clone()));
        }
        order = "name";
    } else {
        if let Some(lang) = &filter.lang_tag {
            conditions.push("lang_tag = ?");
            values.push(Value::Text(lang.clone()));
        }
        if let Some(open) = filter.open {
            conditions.push("open = ?");
            values.push(Value::Integer(i64::from(open)));
        }
        if let Some(max) = filter.max_members {
            conditions.push("edge_count <= ?");
            values.push(Value::Integer(i64::from(max)));
        }
        if let Some(GroupCursor::Time { update_time_ms, id }) = after {
            conditions.push("(update_time, id) > (?, ?)");
            values.push(Value::Integer(*update_time_ms));
            values.push(Value::Blob(id.as_bytes().to_vec()));
        }
        order = "update_time, id";
    }
    let mut sql = concat!("SELECT ", group_columns!(), " FROM groups").to_owned();
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(&format!(" ORDER BY {order} LIMIT ?"));
    values.push(Value::Integer(db::int(limit.saturating_add(1))));
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.query_map(params_from_iter(values), group_row)?.collect())
        .map_err(|e| StorageError::backend("list groups", e))
}

#[derive(Clone, Copy)]
enum Side {
    /// Listing a group's users.
    Group,
    /// Listing a user's groups.
    User,
}

fn edges(
    conn: &Connection,
    side: Side,
    owner: Uuid,
    query: &EdgeQuery,
) -> Result<Vec<EdgeCursor>, StorageError> {
    let (sql_start, sql_after) = match side {
        Side::Group => (
            "SELECT user_id, state, position FROM group_edge WHERE group_id = ?1 \
             AND state BETWEEN ?2 AND ?3 ORDER BY state, position, user_id LIMIT ?4",
            "SELECT user_id, state, position FROM group_edge WHERE group_id = ?1 \
             AND state BETWEEN ?2 AND ?3 AND (state, position, user_id) > (?5, ?6, ?7) \
             ORDER BY state, position, user_id LIMIT ?4",
        ),
        Side::User => (
            "SELECT group_id, state, position FROM group_edge WHERE user_id = ?1 \
             AND state BETWEEN ?2 AND ?3 ORDER BY state, position, group_id LIMIT ?4",
            "SELECT group_id, state, position FROM group_edge WHERE user_id = ?1 \
             AND state BETWEEN ?2 AND ?3 AND (state, position, group_id) > (?5, ?6, ?7) \
             ORDER BY state, position, group_id LIMIT ?4",
        ),
    };
    let row = |r: &Row<'_>| {
        Ok(EdgeCursor {
            id: r.get(0)?,
            state: r.get(1)?,
            position: r.get(2)?,
        })
    };
    let fetch = db::int(query.fetch);
    match query.after {
        None => conn.prepare_cached(sql_start).and_then(|mut s| {
            s.query_map(params![owner, query.min_state, query.max_state, fetch], row)?
                .collect()
        }),
        Some(after) => conn.prepare_cached(sql_after).and_then(|mut s| {
            s.query_map(
                params![
                    owner,
                    query.min_state,
                    query.max_state,
                    fetch,
                    after.state,
                    after.position,
                    after.id
                ],
                row,
            )?
            .collect()
        }),
    }
    .map_err(|e| StorageError::backend("list group edges", e))
}

fn change_members(
    conn: &Connection,
    group_id: Uuid,
    changes: &[MemberChange],
    now_ms: i64,
) -> Result<MembershipOutcome, StorageError> {
    let fail = |e| StorageError::backend("change group members", e);
    let Some((edge_count, max_count)) = conn
        .prepare_cached("SELECT edge_count, max_count FROM groups WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row([group_id], |r| {
                Ok((r.get::<_, i32>(0)?, r.get::<_, i32>(1)?))
            })
            .optional()
        })
        .map_err(fail)?
    else {
        return Ok(MembershipOutcome::Refused(MembershipRefusal::GroupNotFound));
    };
    let superadmins: i64 = conn
        .prepare_cached("SELECT count(*) FROM group_edge WHERE group_id = ?1 AND state = 0")
        .and_then(|mut s| s.query_row([group_id], |r| r.get(0)))
        .map_err(fail)?;
    let mut current = HashMap::with_capacity(changes.len());
    for change in changes {
        if let Some(state) = state_of(conn, group_id, change.user_id)? {
            current.insert(change.user_id, state);
        }
    }
    let plan = match plan_changes(
        edge_count,
        max_count,
        usize::try_from(superadmins).unwrap_or(0),
        current,
        changes,
    ) {
        Ok(plan) => plan,
        Err(refusal) => return Ok(MembershipOutcome::Refused(refusal)),
    };
    for write in plan.writes.iter().flatten() {
        match write.to {
            None => conn
                .prepare_cached("DELETE FROM group_edge WHERE group_id = ?1 AND user_id = ?2")
                .and_then(|mut s| s.execute(params![group_id, write.user_id])),
            Some(to) => conn
                .prepare_cached(
                    "INSERT INTO group_edge (group_id, user_id, state, position, update_time) \
                     VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (group_id, user_id) DO UPDATE \
                     SET state = excluded.state, position = excluded.position, \
                     update_time = excluded.update_time",
                )
                .and_then(|mut s| s.execute(params![group_id, write.user_id, to, now_ms])),
        }
        .map_err(fail)?;
    }
    if plan.edge_count != edge_count {
        conn.prepare_cached("UPDATE groups SET edge_count = ?2, update_time = ?3 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![group_id, plan.edge_count, now_ms]))
            .map_err(fail)?;
    }
    Ok(MembershipOutcome::Applied(
        plan.writes.iter().map(Option::is_some).collect(),
    ))
}

fn state_of(conn: &Connection, group_id: Uuid, user_id: Uuid) -> Result<Option<i32>, StorageError> {
    conn.prepare_cached("SELECT state FROM group_edge WHERE group_id = ?1 AND user_id = ?2")
        .and_then(|mut s| {
            s.query_row(params![group_id, user_id], |r| r.get(0))
                .optional()
        })
        .map_err(|e| StorageError::backend("read group membership", e))
}

fn group_by_id(conn: &Connection, id: Uuid) -> Result<Option<Group>, StorageError> {
    conn.prepare_cached(concat!(
        "SELECT ",
        group_columns!(),
        " FROM groups WHERE id = ?1"
    ))
    .and_then(|mut s| s.query_row([id], group_row).optional())
    .map_err(|e| StorageError::backend("read group", e))
}

fn group_row(r: &Row<'_>) -> rusqlite::Result<Group> {
    Ok(Group {
        id: r.get(0)?,
        creator_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        avatar_url: r.get(4)?,
        lang_tag: r.get(5)?,
        metadata: r.get(6)?,
        open: r.get(7)?,
        edge_count: r.get(8)?,
        max_count: r.get(9)?,
        create_time_ms: r.get(10)?,
        update_time_ms: r.get(11)?,
    })
}

//! Groups and memberships in PostgreSQL.
//!
//! Unlike the pipelined single-statement writes of the writer tasks, a group write is a short
//! transaction of its own on a pooled connection: a membership batch locks its group's row
//! (`SELECT … FOR UPDATE`), reads the states it changes, plans them with the rules both
//! backends share ([`plan_changes`]) and writes. The row lock serializes every membership
//! change of one group across connections and nodes, so concurrent joins never push a group
//! past its `max_count`. Commits are durable (`synchronous_commit = on`).

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
use tokio_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use crate::{PostgresStorage, account, db};

const GROUP_COLUMNS: &str = "id, creator_id, name, description, avatar_url, lang_tag, metadata, \
                             open, edge_count, max_count, create_time, update_time";

type Param = Box<dyn ToSql + Sync + Send>;

#[async_trait]
impl GroupStore for PostgresStorage {
    async fn create_group(&self, group: NewGroup) -> Result<Group, StorageError> {
        check_new_group(&group)?;
        let fail = |e| StorageError::backend("create group", e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        let sql = format!(
            "INSERT INTO groups ({GROUP_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, $10) \
             ON CONFLICT (name) DO NOTHING RETURNING {GROUP_COLUMNS}"
        );
        let row = tx
            .query_opt(
                &sql,
                &[
                    &group.id,
                    &group.creator_id,
                    &group.name,
                    &group.description,
                    &group.avatar_url,
                    &group.lang_tag,
                    &group.metadata,
                    &group.open,
                    &group.max_count,
                    &group.now_ms,
                ],
            )
            .await
            .map_err(fail)?;
        let Some(row) = row else {
            return Err(StorageError::Conflict {
                what: Conflict::GroupName,
            });
        };
        let created = group_row(&row).map_err(fail)?;
        tx.execute(
            "INSERT INTO group_edge (group_id, user_id, state, position, update_time) \
             VALUES ($1, $2, 0, $3, $3)",
            &[&group.id, &group.superadmin_id, &group.now_ms],
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(created)
    }

    async fn update_group(
        &self,
        group_id: Uuid,
        update: GroupUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        check_group_update(&update)?;
        let mut sets = vec!["update_time = $2".to_owned()];
        let mut values: Vec<Param> = vec![Box::new(group_id), Box::new(now_ms)];
        let mut set = |column: &str, value: Param| {
            values.push(value);
            sets.push(format!("{column} = ${}", values.len()));
        };
        if let Some(v) = update.creator_id {
            set("creator_id", Box::new(v));
        }
        for (column, value) in [
            ("name", &update.name),
            ("description", &update.description),
            ("avatar_url", &update.avatar_url),
            ("lang_tag", &update.lang_tag),
            ("metadata", &update.metadata),
        ] {
            if let Some(v) = value {
                set(column, Box::new(v.clone()));
            }
        }
        if let Some(v) = update.open {
            set("open", Box::new(v));
        }
        if let Some(v) = update.max_count {
            set("max_count", Box::new(v));
        }
        let sql = format!("UPDATE groups SET {} WHERE id = $1", sets.join(", "));
        let params: Vec<&(dyn ToSql + Sync)> =
            values.iter().map(|v| &**v as &(dyn ToSql + Sync)).collect();
        let client = self.client().await?;
        match client.execute(&sql, &params).await {
            Ok(0) => Err(StorageError::NotFound { what: "group" }),
            Ok(_) => Ok(()),
            Err(e) if is_name_conflict(&e) => Err(StorageError::Conflict {
                what: Conflict::GroupName,
            }),
            Err(e) => Err(StorageError::backend("update group", e)),
        }
    }

    async fn delete_group(&self, group_id: Uuid) -> Result<bool, StorageError> {
        let client = self.client().await?;
        client
            .execute("DELETE FROM groups WHERE id = $1", &[&group_id])
            .await
            .map(|n| n > 0)
            .map_err(|e| StorageError::backend("delete group", e))
    }

    async fn groups_by_id(&self, ids: &[Uuid]) -> Result<Vec<Group>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let sql = format!("SELECT {GROUP_COLUMNS} FROM groups WHERE id = ANY($1)");
        groups_where(&**client, &sql, &[&ids]).await
    }

    async fn random_groups(&self, count: usize) -> Result<Vec<Group>, StorageError> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let sql = format!("SELECT {GROUP_COLUMNS} FROM groups WHERE id > $1 ORDER BY id LIMIT $2");
        let fetch = db::int(count);
        let mut groups = groups_where(&**client, &sql, &[&Uuid::new_v4(), &fetch]).await?;
        if groups.len() < count {
            for group in groups_where(&**client, &sql, &[&Uuid::nil(), &fetch]).await? {
                if groups.len() >= count {
                    break;
                }
                if !groups.iter().any(|g| g.id == group.id) {
                    groups.push(group);
                }
            }
        }
        Ok(groups)
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
        let mut conditions: Vec<String> = Vec::new();
        let mut values: Vec<Param> = Vec::new();
        let mut push = |condition: &str, value: Param| {
            values.push(value);
            conditions.push(condition.replace('?', &format!("${}", values.len())));
        };
        let order;
        if let Some(name) = &filter.name {
            push("name ILIKE ?", Box::new(group_support::name_pattern(name)));
            if let Some(GroupCursor::Name(last)) = &after {
                push("name > ?", Box::new(last.clone()));
            }
            order = "name";
        } else {
            if let Some(lang) = &filter.lang_tag {
                push("lang_tag = ?", Box::new(lang.clone()));
            }
            if let Some(open) = filter.open {
                push("open = ?", Box::new(open));
            }
            if let Some(max) = filter.max_members {
                push("edge_count <= ?", Box::new(max));
            }
            if let Some(GroupCursor::Time { update_time_ms, id }) = &after {
                push("update_time >= ?", Box::new(*update_time_ms));
                let n = values.len();
                values.push(Box::new(*id));
                conditions.push(format!("(update_time, id) > (${n}, ${})", n + 1));
            }
            order = "update_time, id";
        }
        let mut sql = format!("SELECT {GROUP_COLUMNS} FROM groups");
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        values.push(Box::new(db::int(limit.saturating_add(1))));
        sql.push_str(&format!(" ORDER BY {order} LIMIT ${}", values.len()));
        let params: Vec<&(dyn ToSql + Sync)> =
            values.iter().map(|v| &**v as &(dyn ToSql + Sync)).collect();
        let client = self.client().await?;
        let rows = groups_where(&**client, &sql, &params).await?;
        Ok(group_page(rows, limit, filter.name.is_some()))
    }

    async fn member_state(
        &self,
        group_id: Uuid,
        user_id: Uuid,
    ) -> Result<Option<i32>, StorageError> {
        let client = self.client().await?;
        state_of(&**client, group_id, user_id).await
    }

    async fn list_group_members(
        &self,
        group_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<GroupMemberPage, StorageError> {
        let query = edge_query(state, limit, cursor)?;
        let client = self.client().await?;
        let edges = edges(&**client, Side::Group, group_id, &query).await?;
        let ids: Vec<Uuid> = edges.iter().map(|e| e.id).collect();
        let users = if ids.is_empty() {
            Vec::new()
        } else {
            account::users_by_id(&client, &ids).await?
        };
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
    }

    async fn list_user_groups(
        &self,
        user_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<UserGroupPage, StorageError> {
        let query = edge_query(state, limit, cursor)?;
        let client = self.client().await?;
        let edges = edges(&**client, Side::User, user_id, &query).await?;
        let ids: Vec<Uuid> = edges.iter().map(|e| e.id).collect();
        let groups = if ids.is_empty() {
            Vec::new()
        } else {
            let sql = format!("SELECT {GROUP_COLUMNS} FROM groups WHERE id = ANY($1)");
            groups_where(&**client, &sql, &[&ids]).await?
        };
        let rows = edges
            .into_iter()
            .filter_map(|edge| {
                let group = groups.iter().find(|g| g.id == edge.id)?.clone();
                Some((
                    UserGroup {
                        group,
                        state: edge.state,
                    },
                    edge,
                ))
            })
            .collect();
        let (groups, cursor) = group_support::edge_page(rows, limit);
        Ok(UserGroupPage { groups, cursor })
    }

    async fn member_ids_in_states(
        &self,
        group_id: Uuid,
        states: &[i32],
    ) -> Result<Vec<Uuid>, StorageError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT user_id FROM group_edge WHERE group_id = $1 AND state = ANY($2) \
                 ORDER BY state, position, user_id",
                &[&group_id, &states],
            )
            .await
            .map_err(|e| StorageError::backend("list group member ids", e))?;
        rows.iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(|e| StorageError::backend("list group member ids", e))
    }

    async fn change_members(
        &self,
        group_id: Uuid,
        changes: Vec<MemberChange>,
        now_ms: i64,
    ) -> Result<MembershipOutcome, StorageError> {
        let fail = |e| StorageError::backend("change group members", e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        let Some(row) = tx
            .query_opt(
                "SELECT edge_count, max_count FROM groups WHERE id = $1 FOR UPDATE",
                &[&group_id],
            )
            .await
            .map_err(fail)?
        else {
            return Ok(MembershipOutcome::Refused(MembershipRefusal::GroupNotFound));
        };
        let edge_count: i32 = row.try_get(0).map_err(fail)?;
        let max_count: i32 = row.try_get(1).map_err(fail)?;
        let superadmins: i64 = tx
            .query_one(
                "SELECT count(*) FROM group_edge WHERE group_id = $1 AND state = 0",
                &[&group_id],
            )
            .await
            .and_then(|r| r.try_get(0))
            .map_err(fail)?;
        let ids: Vec<Uuid> = changes.iter().map(|c| c.user_id).collect();
        let mut current = HashMap::with_capacity(changes.len());
        for row in tx
            .query(
                "SELECT user_id, state FROM group_edge WHERE group_id = $1 AND user_id = ANY($2)",
                &[&group_id, &ids],
            )
            .await
            .map_err(fail)?
        {
            current.insert(
                row.try_get::<_, Uuid>(0).map_err(fail)?,
                row.try_get::<_, i32>(1).map_err(fail)?,
            );
        }
        let plan = match plan_changes(
            edge_count,
            max_count,
            usize::try_from(superadmins).unwrap_or(0),
            current,
            &changes,
        ) {
            Ok(plan) => plan,
            Err(refusal) => return Ok(MembershipOutcome::Refused(refusal)),
        };
        for write in plan.writes.iter().flatten() {
            match write.to {
                None => {
                    tx.execute(
                        "DELETE FROM group_edge WHERE group_id = $1 AND user_id = $2",
                        &[&group_id, &write.user_id],
                    )
                    .await
                }
                Some(to) => {
                    tx.execute(
                        "INSERT INTO group_edge (group_id, user_id, state, position, update_time) \
                         VALUES ($1, $2, $3, $4, $4) ON CONFLICT (group_id, user_id) DO UPDATE \
                         SET state = excluded.state, position = excluded.position, \
                         update_time = excluded.update_time",
                        &[&group_id, &write.user_id, &to, &now_ms],
                    )
                    .await
                }
            }
            .map_err(fail)?;
        }
        if plan.edge_count != edge_count {
            tx.execute(
                "UPDATE groups SET edge_count = $2, update_time = $3 WHERE id = $1",
                &[&group_id, &plan.edge_count, &now_ms],
            )
            .await
            .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)?;
        Ok(MembershipOutcome::Applied(
            plan.writes.iter().map(Option::is_some).collect(),
        ))
    }
}

fn is_name_conflict(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::UNIQUE_VIOLATION && db.constraint() == Some("groups_name_key")
    })
}

#[derive(Clone, Copy)]
enum Side {
    /// Listing a group's users.
    Group,
    /// Listing a user's groups.
    User,
}

async fn edges(
    client: &impl GenericClient,
    side: Side,
    owner: Uuid,
    query: &EdgeQuery,
) -> Result<Vec<EdgeCursor>, StorageError> {
    let (owner_column, other_column) = match side {
        Side::Group => ("group_id", "user_id"),
        Side::User => ("user_id", "group_id"),
    };
    let fetch = db::int(query.fetch);
    let fail = db::read_failed("list group edges");
    let rows = match query.after {
        None => {
            let sql = format!(
                "SELECT {other_column}, state, position FROM group_edge WHERE {owner_column} = $1 \
                 AND state BETWEEN $2 AND $3 ORDER BY state, position, {other_column} LIMIT $4"
            );
            client
                .query(&sql, &[&owner, &query.min_state, &query.max_state, &fetch])
                .await
                .map_err(fail)?
        }
        Some(after) => {
            let sql = format!(
                "SELECT {other_column}, state, position FROM group_edge WHERE {owner_column} = $1 \
                 AND state BETWEEN $2 AND $3 AND (state, position, {other_column}) > ($5, $6, $7) \
                 ORDER BY state, position, {other_column} LIMIT $4"
            );
            client
                .query(
                    &sql,
                    &[
                        &owner,
                        &query.min_state,
                        &query.max_state,
                        &fetch,
                        &after.state,
                        &after.position,
                        &after.id,
                    ],
                )
                .await
                .map_err(fail)?
        }
    };
    rows.iter()
        .map(|r| {
            Ok(EdgeCursor {
                id: r.try_get(0)?,
                state: r.try_get(1)?,
                position: r.try_get(2)?,
            })
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(|e| StorageError::backend("list group edges", e))
}

async fn state_of(
    client: &impl GenericClient,
    group_id: Uuid,
    user_id: Uuid,
) -> Result<Option<i32>, StorageError> {
    let row = client
        .query_opt(
            "SELECT state FROM group_edge WHERE group_id = $1 AND user_id = $2",
            &[&group_id, &user_id],
        )
        .await
        .map_err(|e| StorageError::backend("read group membership", e))?;
    row.map(|r| r.try_get(0))
        .transpose()
        .map_err(|e| StorageError::backend("read group membership", e))
}

async fn groups_where(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Group>, StorageError> {
    let fail = |e| StorageError::backend("read groups", e);
    let rows = client.query(sql, params).await.map_err(fail)?;
    rows.iter()
        .map(group_row)
        .collect::<Result<_, _>>()
        .map_err(fail)
}

fn group_row(r: &Row) -> Result<Group, tokio_postgres::Error> {
    Ok(Group {
        id: r.try_get(0)?,
        creator_id: r.try_get(1)?,
        name: r.try_get(2)?,
        description: r.try_get(3)?,
        avatar_url: r.try_get(4)?,
        lang_tag: r.try_get(5)?,
        metadata: r.try_get(6)?,
        open: r.try_get(7)?,
        edge_count: r.try_get(8)?,
        max_count: r.try_get(9)?,
        create_time_ms: r.try_get(10)?,
        update_time_ms: r.try_get(11)?,
    })
}

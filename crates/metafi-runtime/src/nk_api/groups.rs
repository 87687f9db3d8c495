//! Groups: `group_create`, `group_update`, `group_delete`, `groups_get_id`, `groups_list`,
//! `groups_get_random`, `group_user_join`, `group_user_leave`, `group_users_add` / `_kick` /
//! `_ban` / `_promote` / `_demote`, `group_users_list`, `user_groups_list`, over
//! `metafi_core::Groups` (the service of `/v2/group`). Server code acts as Nakama's nil caller
//! unless a caller id is given: every permission granted.

use metafi_core::{Actor, CreateGroup, ListGroups};
use metafi_storage::{Group, GroupUpdate};
use uuid::Uuid;

use super::accounts::{metadata_text, user_value};
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

macro_rules! row {
    ($lua:literal, $js:literal, $f:expr) => {
        NkFunction {
            lua: Some($lua),
            js: Some($js),
            call: NkCall::Async($f),
        }
    };
}

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row!("group_create", "groupCreate", group_create),
    row!("group_update", "groupUpdate", group_update),
    row!("group_delete", "groupDelete", group_delete),
    row!("groups_get_id", "groupsGetId", groups_get_id),
    row!("groups_list", "groupsList", groups_list),
    row!("groups_get_random", "groupsGetRandom", groups_get_random),
    row!("group_user_join", "groupUserJoin", group_user_join),
    row!("group_user_leave", "groupUserLeave", group_user_leave),
    row!("group_users_add", "groupUsersAdd", group_users_add),
    row!("group_users_kick", "groupUsersKick", group_users_kick),
    row!("group_users_ban", "groupUsersBan", group_users_ban),
    row!(
        "group_users_promote",
        "groupUsersPromote",
        group_users_promote
    ),
    row!("group_users_demote", "groupUsersDemote", group_users_demote),
    row!("group_users_list", "groupUsersList", group_users_list),
    row!("user_groups_list", "userGroupsList", user_groups_list),
];

/// A group as Nakama's runtimes show it (`groupToLuaTable`, `getJsGroupData`): times in
/// seconds, metadata as a map.
fn group_value(group: &Group) -> NkValue {
    let metadata = match NkValue::from_json_text(&group.metadata) {
        NkValue::Nil => NkValue::Map(NkMap::new()),
        value => value,
    };
    NkMap::with_capacity(12)
        .with("id", group.id.to_string())
        .with("creator_id", group.creator_id.to_string())
        .with("name", group.name.as_str())
        .with("description", group.description.as_str())
        .with("avatar_url", group.avatar_url.as_str())
        .with("lang_tag", group.lang_tag.as_str())
        .with("open", group.open)
        .with("edge_count", i64::from(group.edge_count))
        .with("max_count", i64::from(group.max_count))
        .with("create_time", group.create_time_ms / 1000)
        .with("update_time", group.update_time_ms / 1000)
        .with("metadata", metadata)
        .into()
}

fn ready(result: Result<NkValue, NkError>) -> NkFuture {
    Box::pin(std::future::ready(result))
}

/// A required id argument.
fn id(arg: &Arg<'_>, message: &'static str) -> Result<Uuid, NkError> {
    let text = arg.string(message)?;
    Uuid::parse_str(text).map_err(|_| arg.error(message))
}

/// An optional id argument: nil or empty is `None`.
fn opt_id(arg: &Arg<'_>, message: &'static str) -> Result<Option<Uuid>, NkError> {
    match arg.opt_string(message)? {
        None | Some("") => Ok(None),
        Some(text) => Uuid::parse_str(text)
            .map(Some)
            .map_err(|_| arg.error(message)),
    }
}

fn group_create(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let user_id = id(&args.at(1), "expects user ID to be a valid identifier")?;
        let name = args.at(2).string(if js {
            "expects group name to not be empty"
        } else {
            "expects group name not be empty"
        })?;
        if name.is_empty() {
            return Err(args.at(2).error(if js {
                "expects group name to not be empty"
            } else {
                "expects group name not be empty"
            }));
        }
        let creator_id = opt_id(&args.at(3), "expects owner ID to be a valid identifier")?
            .unwrap_or_else(Uuid::nil);
        let text = |n: usize, what: &'static str| -> Result<String, NkError> {
            Ok(args.at(n).opt_string(what)?.unwrap_or_default().to_owned())
        };
        let lang_tag = text(4, "expects lang tag to be a string")?;
        let description = text(5, "expects description to be a string")?;
        let avatar_url = text(6, "expects avatar url to be a string")?;
        let open = args
            .at(7)
            .opt_bool("expects open to be a boolean")?
            .unwrap_or(false);
        let metadata = metadata_text(&args.at(8), js)?.unwrap_or_default();
        let max_count = args
            .at(9)
            .opt_integer("expects max_count to be >= 1")?
            .unwrap_or(100);
        if max_count < 1 {
            return Err(args.at(9).error("expects max_count to be >= 1"));
        }
        let max_count = i32::try_from(max_count)
            .map_err(|_| args.at(9).error("expects max_count to be >= 1"))?;
        Ok((
            user_id,
            creator_id,
            CreateGroup {
                name: name.to_owned(),
                description,
                lang_tag,
                avatar_url,
                metadata,
                open,
                max_count,
            },
        ))
    })();
    let (user_id, creator_id, request) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let groups = nk.group_service("group_create")?;
        match groups.create(user_id, creator_id, request).await {
            Ok(group) => {
                let id = Uuid::parse_str(&group.id)
                    .map_err(|_| NkError::failed("error while trying to create group"))?;
                let stored = groups
                    .stored_by_id(&[id])
                    .await
                    .map_err(|e| NkError::core("error while trying to create group", e))?;
                stored
                    .first()
                    .map(group_value)
                    .ok_or_else(|| NkError::failed("error while trying to create group"))
            }
            Err(e) if e.code() == metafi_proto::Code::AlreadyExists => Err(NkError::failed(
                "did not create group as a group already exists with the same name",
            )),
            Err(e) => Err(NkError::core("error while trying to create group", e)),
        }
    })
}

fn group_update(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let group_id = id(&args.at(1), "expects group ID to be a valid identifier")?;
        let user_id = opt_id(&args.at(2), "expects user ID to be a valid identifier")?;
        // Lua and JS both treat an empty string as "leave it".
        let text = |n: usize, what: &'static str| -> Result<Option<String>, NkError> {
            Ok(args
                .at(n)
                .opt_string(what)?
                .filter(|t| !t.is_empty())
                .map(str::to_owned))
        };
        let name = text(3, "expects name to be a string")?;
        let creator_id = opt_id(&args.at(4), "expects creator ID to be a valid identifier")?;
        let lang_tag = text(5, "expects lang tag to be a string")?;
        let description = text(6, "expects description to be a string")?;
        let avatar_url = text(7, "expects avatar url to be a string")?;
        let open = args.at(8).opt_bool("expects open to be a boolean")?;
        let metadata = metadata_text(&args.at(9), js)?;
        let max_count = args
            .at(10)
            .opt_integer("expects max count to be a number")?
            .filter(|n| *n > 0)
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX));
        Ok((
            group_id,
            user_id,
            GroupUpdate {
                creator_id,
                name,
                description,
                avatar_url,
                lang_tag,
                metadata,
                open,
                max_count,
            },
        ))
    })();
    let (group_id, user_id, update) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let actor = user_id
            .filter(|u| !u.is_nil())
            .map_or(Actor::Server, Actor::User);
        nk.group_service("group_update")?
            .update(actor, group_id, update)
            .await
            .map_err(|e| NkError::core("error while trying to update group", e))?;
        Ok(NkValue::Nil)
    })
}

fn group_delete(nk: Nk, args: NkArgs) -> NkFuture {
    let group_id = match id(&args.at(1), "expects group ID to be a valid identifier") {
        Ok(id) => id,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        nk.group_service("group_delete")?
            .delete(Actor::Server, group_id)
            .await
            .map_err(|e| NkError::core("error while trying to delete group", e))?;
        Ok(NkValue::Nil)
    })
}

fn groups_get_id(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let arg = args.at(1);
        let items = arg.list(if js {
            "expects an array of group ids"
        } else {
            "invalid group id list"
        })?;
        items
            .iter()
            .map(|item| {
                let text = item.string(if js {
                    "expects group id to be a string"
                } else {
                    "each group id must be a string"
                })?;
                Uuid::parse_str(text).map_err(|_| {
                    item.error(if js {
                        "expects group id to be a valid identifier"
                    } else {
                        "each group id must be a valid id string"
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()
    })();
    let ids = match parsed {
        Ok(ids) => ids,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        if ids.is_empty() {
            return Ok(NkValue::List(Vec::new()));
        }
        let groups = nk
            .group_service("groups_get_id")?
            .stored_by_id(&ids)
            .await
            .map_err(|e| NkError::core("failed to get groups", e))?;
        Ok(groups.iter().map(group_value).collect::<Vec<_>>().into())
    })
}

fn groups_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let name = args.at(1).opt_string("expects name to be a string")?;
        let lang_tag = args.at(2).opt_string("expects lang tag to be a string")?;
        let open = args.at(3).opt_bool("expects open true/false or nil")?;
        let members = args
            .at(4)
            .opt_integer("expects members to be a number")?
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX));
        let limit = args
            .at(5)
            .opt_integer("expects limit to be a number")?
            .unwrap_or(100);
        let cursor = args.at(6).opt_string("expects cursor to be a string")?;
        Ok(ListGroups {
            name: name.unwrap_or_default().to_owned(),
            lang_tag: lang_tag.unwrap_or_default().to_owned(),
            open,
            members,
            limit: Some(i32::try_from(limit).unwrap_or(i32::MAX)),
            cursor: cursor.unwrap_or_default().to_owned(),
        })
    })();
    let request = match parsed {
        Ok(r) => r,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let service = nk.group_service("groups_list")?;
        let list = service
            .list(request)
            .await
            .map_err(|e| NkError::core("error listing groups", e))?;
        let ids: Vec<Uuid> = list
            .groups
            .iter()
            .filter_map(|g| Uuid::parse_str(&g.id).ok())
            .collect();
        let stored = service
            .stored_by_id(&ids)
            .await
            .map_err(|e| NkError::core("error listing groups", e))?;
        // Keep the listing's order.
        let groups: Vec<NkValue> = ids
            .iter()
            .filter_map(|id| stored.iter().find(|g| g.id == *id))
            .map(group_value)
            .collect();
        let cursor: NkValue = Some(list.cursor).filter(|c| !c.is_empty()).into();
        Ok(paged(js, "groups", groups, cursor))
    })
}

/// Lua returns `(items, cursor)`; JavaScript `{ field: items, cursor }`.
fn paged(js: bool, field: &'static str, items: Vec<NkValue>, cursor: NkValue) -> NkValue {
    if js {
        NkMap::new()
            .with(field, items)
            .with("cursor", cursor)
            .into()
    } else {
        NkValue::Multi(vec![items.into(), cursor])
    }
}

fn groups_get_random(nk: Nk, args: NkArgs) -> NkFuture {
    let count = match args.at(1).opt_integer("count must be 0-1000") {
        Ok(Some(n @ 0..=1000)) => n,
        Ok(None) => 0,
        Ok(Some(_)) => return ready(Err(args.at(1).error("count must be 0-1000"))),
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let groups = nk
            .group_service("groups_get_random")?
            .random(usize::try_from(count).unwrap_or(0))
            .await
            .map_err(|e| NkError::core("failed to get groups", e))?;
        let ids: Vec<Uuid> = groups
            .iter()
            .filter_map(|g| Uuid::parse_str(&g.id).ok())
            .collect();
        let stored = nk
            .group_service("groups_get_random")?
            .stored_by_id(&ids)
            .await
            .map_err(|e| NkError::core("failed to get groups", e))?;
        Ok(stored.iter().map(group_value).collect::<Vec<_>>().into())
    })
}

/// `(group_id, user_id, username)` of join and leave.
fn member_args(args: &NkArgs) -> Result<(Uuid, Uuid, String), NkError> {
    let group_id = id(&args.at(1), "expects group ID to be a valid identifier")?;
    let user_id = id(&args.at(2), "expects user ID to be a valid identifier")?;
    let username = args.at(3).non_empty("expects username string")?;
    Ok((group_id, user_id, username.to_owned()))
}

fn group_user_join(nk: Nk, args: NkArgs) -> NkFuture {
    let (group_id, user_id, username) = match member_args(&args) {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        nk.group_service("group_user_join")?
            .join(user_id, &username, group_id)
            .await
            .map_err(|e| NkError::core("error while trying to join a group", e))?;
        Ok(NkValue::Nil)
    })
}

fn group_user_leave(nk: Nk, args: NkArgs) -> NkFuture {
    let (group_id, user_id, _username) = match member_args(&args) {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        nk.group_service("group_user_leave")?
            .leave(user_id, group_id)
            .await
            .map_err(|e| NkError::core("error while trying to leave a group", e))?;
        Ok(NkValue::Nil)
    })
}

#[derive(Debug, Clone, Copy)]
enum UsersAction {
    Add,
    Kick,
    Ban,
    Promote,
    Demote,
}

impl UsersAction {
    fn name(self) -> &'static str {
        match self {
            UsersAction::Add => "group_users_add",
            UsersAction::Kick => "group_users_kick",
            UsersAction::Ban => "group_users_ban",
            UsersAction::Promote => "group_users_promote",
            UsersAction::Demote => "group_users_demote",
        }
    }

    fn failed(self) -> &'static str {
        match self {
            UsersAction::Add => "error while trying to add users into a group",
            UsersAction::Kick => "error while trying to kick users from a group",
            UsersAction::Ban => "error while trying to ban users from a group",
            UsersAction::Promote => "error while trying to promote users in a group",
            UsersAction::Demote => "error while trying to demote users in a group",
        }
    }

    fn root(self) -> &'static str {
        match self {
            UsersAction::Add => "cannot add the root user",
            UsersAction::Kick => "cannot kick the root user",
            UsersAction::Ban => "cannot ban the root user",
            UsersAction::Promote => "cannot promote the root user",
            UsersAction::Demote => "cannot demote the root user",
        }
    }
}

fn group_users_add(nk: Nk, args: NkArgs) -> NkFuture {
    act_on_users(UsersAction::Add, nk, args)
}

fn group_users_kick(nk: Nk, args: NkArgs) -> NkFuture {
    act_on_users(UsersAction::Kick, nk, args)
}

fn group_users_ban(nk: Nk, args: NkArgs) -> NkFuture {
    act_on_users(UsersAction::Ban, nk, args)
}

fn group_users_promote(nk: Nk, args: NkArgs) -> NkFuture {
    act_on_users(UsersAction::Promote, nk, args)
}

fn group_users_demote(nk: Nk, args: NkArgs) -> NkFuture {
    act_on_users(UsersAction::Demote, nk, args)
}

/// `(group_id, user_ids, caller_id?)`: the caller, when given, must have the rank a client
/// would need; without it server code acts with every permission.
fn act_on_users(action: UsersAction, nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let group_id = id(&args.at(1), "expects group ID to be a valid identifier")?;
        let list = args.at(2);
        let items = list.list(if js {
            "expects an array of user ids"
        } else {
            "expects user IDs to be a table"
        })?;
        let mut user_ids = Vec::with_capacity(items.len());
        for item in &items {
            let text = item.string(if js {
                "expects an array of strings"
            } else {
                "expects each user ID to be a string"
            })?;
            let user_id = Uuid::parse_str(text).map_err(|_| {
                item.error(if js {
                    "expects user id to be valid identifier"
                } else {
                    "expects each user ID to be a valid identifier"
                })
            })?;
            if user_id.is_nil() {
                return Err(item.error(action.root()));
            }
            user_ids.push(user_id);
        }
        let caller = opt_id(
            &args.at(3),
            if js {
                "expects caller id to be valid identifier"
            } else {
                "expects caller ID to be empty or a valid identifier"
            },
        )?;
        Ok((group_id, user_ids, caller))
    })();
    let (group_id, user_ids, caller) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        if user_ids.is_empty() {
            return Ok(NkValue::Nil);
        }
        let groups = nk.group_service(action.name())?;
        let actor = caller
            .filter(|c| !c.is_nil())
            .map_or(Actor::Server, Actor::User);
        match action {
            UsersAction::Add => groups.add(actor, group_id, &user_ids).await,
            UsersAction::Kick => groups.kick(actor, group_id, &user_ids).await,
            UsersAction::Ban => groups.ban(actor, group_id, &user_ids).await,
            UsersAction::Promote => groups.promote(actor, group_id, &user_ids).await,
            UsersAction::Demote => groups.demote(actor, group_id, &user_ids).await,
        }
        .map_err(|e| NkError::core(action.failed(), e))?;
        Ok(NkValue::Nil)
    })
}

/// `(id, limit, state, cursor)` of the membership listings; `max_limit` is Nakama's bound.
fn listing_args(
    args: &NkArgs,
    id_message: &'static str,
    max_limit: i64,
    limit_message: &'static str,
) -> Result<(Uuid, usize, Option<i32>, String), NkError> {
    let owner = id(&args.at(1), id_message)?;
    let limit = args.at(2).opt_integer(limit_message)?.unwrap_or(100);
    if !(1..=max_limit).contains(&limit) {
        return Err(args.at(2).error(limit_message));
    }
    let state = match args.at(3).opt_integer("expects state to be 0-4")? {
        None | Some(-1) => None,
        Some(s @ 0..=4) => Some(i32::try_from(s).unwrap_or(0)),
        Some(_) => return Err(args.at(3).error("expects state to be 0-4")),
    };
    let cursor = args
        .at(4)
        .opt_string("expects cursor to be a string")?
        .unwrap_or_default()
        .to_owned();
    Ok((owner, usize::try_from(limit).unwrap_or(100), state, cursor))
}

fn group_users_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = listing_args(
        &args,
        "expects group ID to be a valid identifier",
        10_000,
        "expects limit to be 1-10000",
    );
    let (group_id, limit, state, cursor) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let groups = nk.group_service("group_users_list")?;
        let page = groups
            .member_page(group_id, state, limit, &cursor)
            .await
            .map_err(|e| NkError::core("error while trying to list users in a group", e))?;
        let items = page
            .members
            .iter()
            .map(|m| {
                NkMap::new()
                    .with("user", user_value(&m.user, groups.is_online(m.user.id)))
                    .with("state", i64::from(m.state))
                    .into()
            })
            .collect();
        Ok(paged(js, "group_users", items, page.cursor.into()))
    })
}

fn user_groups_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = listing_args(
        &args,
        "expects user ID to be a valid identifier",
        100,
        "expects limit to be 1-100",
    );
    let (user_id, limit, state, cursor) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let page = nk
            .group_service("user_groups_list")?
            .user_group_page(user_id, state, limit, &cursor)
            .await
            .map_err(|e| NkError::core("error while trying to list groups for a user", e))?;
        let items = page
            .groups
            .iter()
            .map(|g| {
                NkMap::new()
                    .with("group", group_value(&g.group))
                    .with("state", i64::from(g.state))
                    .into()
            })
            .collect();
        Ok(paged(js, "user_groups", items, page.cursor.into()))
    })
}

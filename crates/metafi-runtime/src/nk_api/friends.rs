//! Friends: `friends_list`, `friends_of_friends_list`, `friends_add`, `friends_delete`,
//! `friends_block`, `users_get_friend_status`, `friend_metadata_update`, over `metafi_core::Friends` (the service of
//! `/v2/friend`). Arguments are checked with each runtime's words (Nakama's Lua and JavaScript
//! APIs word the same rules differently); the rules themselves live in the service.

use metafi_core::CoreError;
use metafi_core::friends::{Actor, FriendView, RUNTIME_NOTHING_VALID, Targets};
use metafi_storage::FriendState;
use uuid::Uuid;

use super::accounts::{opt_list, user_value};
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("friends_list"),
        js: Some("friendsList"),
        call: NkCall::Async(friends_list),
    },
    NkFunction {
        lua: Some("friends_of_friends_list"),
        js: Some("friendsOfFriendsList"),
        call: NkCall::Async(friends_of_friends_list),
    },
    NkFunction {
        lua: Some("friends_add"),
        js: Some("friendsAdd"),
        call: NkCall::Async(friends_add),
    },
    NkFunction {
        lua: Some("friends_delete"),
        js: Some("friendsDelete"),
        call: NkCall::Async(friends_delete),
    },
    NkFunction {
        lua: Some("friends_block"),
        js: Some("friendsBlock"),
        call: NkCall::Async(friends_block),
    },
    NkFunction {
        lua: Some("users_get_friend_status"),
        js: Some("usersGetFriendStatus"),
        call: NkCall::Async(users_get_friend_status),
    },
    NkFunction {
        lua: Some("friend_metadata_update"),
        js: Some("friendMetadataUpdate"),
        call: NkCall::Async(friend_metadata_update),
    },
];

/// The default page of both listings in the runtimes (Nakama's), and their bound.
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 1000;

/// A relationship as the runtimes show it: `state`, `update_time` (seconds), `user`, and the
/// edge's `metadata` as a map.
fn friend_value(view: &FriendView) -> NkValue {
    let friend = &view.friend;
    let metadata = match NkValue::from_json_text(&friend.metadata) {
        NkValue::Map(map) => NkValue::Map(map),
        _ => NkValue::Map(NkMap::new()),
    };
    NkMap::new()
        .with("state", i64::from(friend.state.number()))
        .with("update_time", friend.update_time_ms.div_euclid(1000))
        .with("user", user_value(&friend.user, view.online))
        .with("metadata", metadata)
        .into()
}

/// Argument 1: the user acting or listed.
fn user_id(args: &NkArgs) -> Result<Uuid, NkError> {
    let arg = args.at(1);
    if args.is_js() && matches!(arg.value.as_str(), None | Some("")) {
        return Err(arg.error("expects a user ID string"));
    }
    arg.uuid("expects user ID to be a valid identifier")
}

/// An optional limit (default 100) in 1..=1000.
fn limit(arg: Arg<'_>) -> Result<usize, NkError> {
    const MESSAGE: &str = "expects limit to be 1-1000";
    let limit = arg.opt_integer(MESSAGE)?.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(arg.error(MESSAGE));
    }
    Ok(usize::try_from(limit).unwrap_or(1))
}

fn cursor(arg: Arg<'_>) -> Result<String, NkError> {
    Ok(arg
        .opt_string("expects cursor to be a string")?
        .unwrap_or_default()
        .to_owned())
}

/// A listing's failure: an unreadable cursor reads as Nakama's `friend cursor invalid`.
fn list_failed(what: &str, error: CoreError) -> NkError {
    if matches!(error, CoreError::InvalidArgument { .. }) {
        return NkError::failed(format!("{what}: friend cursor invalid"));
    }
    NkError::core(what, error)
}

/// `(user_id, limit = 100, state = nil, cursor = "")`: Lua returns `friends, cursor`,
/// JavaScript `{friends, cursor}`.
fn friends_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let user = user_id(&args)?;
        let limit = limit(args.at(2))?;
        let state_arg = args.at(3);
        let state = match state_arg.opt_integer("expects state to be 0-3")? {
            None | Some(-1) => None,
            Some(n) => Some(
                FriendState::from_number(n)
                    .ok_or_else(|| state_arg.error("expects state to be 0-3"))?,
            ),
        };
        let cursor = cursor(args.at(4))?;
        let listing = nk
            .friends("friends_list")?
            .list(user, limit, state, &cursor)
            .await
            .map_err(|e| list_failed("error while trying to list friends for a user", e))?;
        let friends: NkValue = listing
            .friends
            .iter()
            .map(friend_value)
            .collect::<Vec<_>>()
            .into();
        Ok(page(js, "friends", friends, listing.cursor))
    })
}

/// Lua: `items, cursor` (nil when there is no next page); JavaScript: `{field, cursor}`
/// (without `cursor` on the last page).
fn page(js: bool, field: &'static str, items: NkValue, cursor: String) -> NkValue {
    let cursor: NkValue = Some(cursor).filter(|c| !c.is_empty()).into();
    if js {
        let map = NkMap::new().with(field, items);
        if cursor.is_nil() {
            map.into()
        } else {
            map.with("cursor", cursor).into()
        }
    } else {
        NkValue::Multi(vec![items, cursor])
    }
}

/// `(user_id, limit = 100, cursor = "")`.
fn friends_of_friends_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let user = user_id(&args)?;
        let limit = limit(args.at(2))?;
        let cursor = cursor(args.at(3))?;
        let what = if js {
            "error while trying to list friends for a user"
        } else {
            "error while trying to list friends of friends for a user"
        };
        let listing = nk
            .friends("friends_of_friends_list")?
            .friends_of_friends(user, limit, &cursor)
            .await
            .map_err(|e| list_failed(what, e))?;
        let items: NkValue = listing
            .friends_of_friends
            .iter()
            .map(|f| {
                NkMap::new()
                    .with("referrer", f.referrer.to_string())
                    .with("user", user_value(&f.user, f.online))
                    .into()
            })
            .collect::<Vec<NkValue>>()
            .into();
        Ok(page(js, "friends_of_friends", items, listing.cursor))
    })
}

/// Which call, for its words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Add,
    Delete,
    Block,
}

impl Change {
    fn verb(self) -> &'static str {
        match self {
            Change::Add => "add",
            Change::Delete => "delete",
            Change::Block => "block",
        }
    }

    fn self_message(self) -> &'static str {
        match self {
            Change::Add => "cannot add self as friend",
            Change::Delete => "cannot delete self",
            Change::Block => "cannot block self",
        }
    }

    /// Lua's wording of a failed call (`error adding friends: …`).
    fn lua_failure(self) -> &'static str {
        match self {
            Change::Add => "error adding friends",
            Change::Delete => "error deleting friends",
            Change::Block => "error blocking friends",
        }
    }
}

/// `(user_id, username, user_ids, usernames)`: the actor and the checked targets, or `None`
/// when both lists are empty (nothing to do).
fn change_args(args: &NkArgs, change: Change) -> Result<Option<(Actor, Targets)>, NkError> {
    let js = args.is_js();
    let user = args
        .at(1)
        .uuid("expects user ID to be a valid identifier")?;
    let username_arg = args.at(2);
    let username = username_arg
        .non_empty(if js {
            "expects a username string"
        } else {
            "expects username string"
        })?
        .to_owned();
    let id_items = opt_list(
        &args.at(3),
        if js {
            "expects an array of strings"
        } else {
            "invalid user ids list"
        },
    )?;
    let mut ids = Vec::with_capacity(id_items.len());
    for item in &id_items {
        let text = if js {
            item.string("expects an array of strings")?
        } else {
            item.non_empty("each user id must be a string")?
        };
        let id = match Uuid::parse_str(text) {
            Ok(id) if !id.is_nil() => id,
            _ if js => return Err(item.error(format!("invalid user id: {text}"))),
            _ => return Err(item.error(format!("invalid user ID {text}"))),
        };
        if id == user {
            return Err(item.error(change.self_message()));
        }
        ids.push(id);
    }
    let name_items = opt_list(
        &args.at(4),
        if js {
            "expects an array of strings"
        } else {
            "invalid username list"
        },
    )?;
    let mut usernames = Vec::with_capacity(name_items.len());
    for item in &name_items {
        let name = if js {
            let name = item.string("expects an array of strings")?;
            if name.is_empty() {
                return Err(item.error(format!("username to {} must not be empty", change.verb())));
            }
            name
        } else {
            item.non_empty("each username must be a non-empty string")?
        };
        if name == username {
            return Err(item.error(change.self_message()));
        }
        usernames.push(name.to_owned());
    }
    if ids.is_empty() && usernames.is_empty() {
        return Ok(None);
    }
    Ok(Some((
        Actor { id: user, username },
        Targets::checked(ids, usernames),
    )))
}

/// A failed add, delete or block: "no valid ID or username was provided" alone, as Nakama
/// raises it; anything else prefixed with the call's wording.
fn change_failed(js: bool, change: Change, error: CoreError) -> NkError {
    let message = error.client_message();
    if message == RUNTIME_NOTHING_VALID {
        return NkError::failed(RUNTIME_NOTHING_VALID);
    }
    if js {
        return NkError::core(
            &format!("error while trying to {} friends", change.verb()),
            error,
        );
    }
    NkError::core(change.lua_failure(), error)
}

/// `(user_id, username, user_ids, usernames, metadata)`.
fn friends_add(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let Some((actor, targets)) = change_args(&args, Change::Add)? else {
            return Ok(NkValue::Nil);
        };
        let metadata_arg = args.at(5);
        let metadata = match metadata_arg.value {
            NkValue::Nil => String::new(),
            NkValue::Map(map) if map.is_empty() => String::new(),
            NkValue::List(items) if items.is_empty() => String::new(),
            NkValue::Map(_) => metadata_arg
                .value
                .to_json(metadata_arg.naming)
                .map(|json| json.to_string())
                .map_err(|e| NkError::failed(format!("error marshalling metadata: {e}")))?,
            _ if js => return Err(metadata_arg.error("invalid metadata: must be an object")),
            _ => return Err(metadata_arg.error("table expected")),
        };
        nk.friends("friends_add")?
            .add(&actor, targets, &metadata)
            .await
            .map_err(|e| change_failed(js, Change::Add, e))?;
        Ok(NkValue::Nil)
    })
}

fn friends_delete(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let Some((actor, targets)) = change_args(&args, Change::Delete)? else {
            return Ok(NkValue::Nil);
        };
        nk.friends("friends_delete")?
            .delete(&actor, targets)
            .await
            .map_err(|e| change_failed(js, Change::Delete, e))?;
        Ok(NkValue::Nil)
    })
}

fn friends_block(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let Some((actor, targets)) = change_args(&args, Change::Block)? else {
            return Ok(NkValue::Nil);
        };
        nk.friends("friends_block")?
            .block(&actor, targets)
            .await
            .map_err(|e| change_failed(js, Change::Block, e))?;
        Ok(NkValue::Nil)
    })
}

/// `(user_id, user_ids)`: the user's relationship with each of them that has one.
fn users_get_friend_status(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let user = args.at(1).uuid("invalid user id")?;
        let list_arg = args.at(2);
        let items = list_arg.list(if js {
            "expects an array of strings"
        } else {
            "invalid user ids list"
        })?;
        let mut ids = Vec::with_capacity(items.len());
        for item in &items {
            let text = if js {
                item.string("expects an array of strings")?
            } else {
                item.non_empty("each user id must be a string")?
            };
            ids.push(Uuid::parse_str(text).map_err(|_| item.error("invalid user id"))?);
        }
        let what = if js {
            "failed to get user friends status"
        } else {
            "failed to get users friend status"
        };
        let friends = nk
            .friends("users_get_friend_status")?
            .statuses(user, &ids)
            .await
            .map_err(|e| NkError::core(what, e))?;
        Ok(friends.iter().map(friend_value).collect::<Vec<_>>().into())
    })
}

/// `(user_id, friend_user_id, metadata)`: replaces the metadata of the user's edge to the
/// friend (any state; none is not an error). Returns nothing. Lua takes any table (one that is
/// not a map stores `{}`, as Nakama's conversion gives no map); JavaScript an object.
fn friend_metadata_update(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        const BAD_ID: &str = "expects user ID to be a valid identifier";
        let user = args.at(1).uuid(BAD_ID)?;
        let friend = args.at(2).uuid(BAD_ID)?;
        let metadata_arg = args.at(3);
        let metadata = match metadata_arg.value {
            NkValue::Map(_) => metadata_arg
                .value
                .to_json(metadata_arg.naming)
                .map(|json| json.to_string())
                .map_err(|e| NkError::failed(format!("error marshalling metadata: {e}")))?,
            NkValue::List(_) if !js => "{}".to_owned(),
            _ if js => return Err(metadata_arg.error("expects metadata to be an object")),
            _ => return Err(metadata_arg.error("table expected")),
        };
        // Nakama's words, its JavaScript typo included.
        let what = if js {
            "error updating froind metadata"
        } else {
            "error updating friends metadata"
        };
        nk.friends("friend_metadata_update")?
            .update_metadata(user, friend, &metadata)
            .await
            .map_err(|e| NkError::core(what, e))?;
        Ok(NkValue::Nil)
    })
}

#[cfg(test)]
#[path = "friends_tests.rs"]
mod tests;

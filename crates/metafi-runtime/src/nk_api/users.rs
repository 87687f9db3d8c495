//! Other users: `users_get_id`, `users_get_username`, `users_get_random`, `users_ban_id`,
//! `users_unban_id`, over `metafi_core::Users` (the service of `GET /v2/user`) and
//! `metafi_core::Accounts`.

use metafi_core::UserLookup;
use metafi_storage::User;
use uuid::Uuid;

use super::accounts::{opt_list, user_value};
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkValue};
use crate::nk::{AccountServices, Nk};

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("users_get_id"),
        js: Some("usersGetId"),
        call: NkCall::Async(users_get_id),
    },
    NkFunction {
        lua: Some("users_get_username"),
        js: Some("usersGetUsername"),
        call: NkCall::Async(users_get_username),
    },
    NkFunction {
        lua: Some("users_get_random"),
        js: Some("usersGetRandom"),
        call: NkCall::Async(users_get_random),
    },
    NkFunction {
        lua: Some("users_ban_id"),
        js: Some("usersBanId"),
        call: NkCall::Async(users_ban_id),
    },
    NkFunction {
        lua: Some("users_unban_id"),
        js: Some("usersUnbanId"),
        call: NkCall::Async(users_unban_id),
    },
];

/// Most users `users_get_random` returns (Nakama's bound).
const MAX_RANDOM_USERS: i64 = 1000;

fn users_list(services: &AccountServices, users: &[User]) -> NkValue {
    users
        .iter()
        .map(|user| user_value(user, services.users.is_online(user.id)))
        .collect::<Vec<_>>()
        .into()
}

/// A list of user ids with Nakama's messages: Lua `each user id must be a string` / `… a
/// valid id string`, JavaScript `expects an array of strings` / `invalid user id: X`.
fn user_ids(items: &[Arg<'_>], js: bool) -> Result<Vec<Uuid>, NkError> {
    let not_string = if js {
        "expects an array of strings"
    } else {
        "each user id must be a string"
    };
    items
        .iter()
        .map(|item| {
            let text = item.string(not_string)?;
            if text.is_empty() && !js {
                return Err(item.error(not_string));
            }
            Uuid::parse_str(text).map_err(|_| {
                if js {
                    item.error(format!("invalid user id: {text}"))
                } else {
                    item.error("each user id must be a valid id string")
                }
            })
        })
        .collect()
}

/// `(user_ids, facebook_ids)`: the users with those ids and those linked to those Facebook
/// ids, each once.
fn users_get_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let list_message = if js {
            "expects an array of strings"
        } else {
            "invalid user ids list"
        };
        let ids = user_ids(&opt_list(&args.at(1), list_message)?, js)?;
        let facebook_message = if js {
            "expects an array of strings"
        } else {
            "each facebook id must be a string"
        };
        let mut facebook_ids = Vec::new();
        for item in opt_list(&args.at(2), facebook_message)? {
            facebook_ids.push(item.non_empty(facebook_message)?.to_owned());
        }
        if ids.is_empty() && facebook_ids.is_empty() {
            return Ok(NkValue::List(Vec::new()));
        }
        let services = nk.account_services("users_get_id")?;
        let lookup = UserLookup {
            ids: ids.iter().map(Uuid::to_string).collect(),
            facebook_ids,
            ..UserLookup::default()
        };
        let users = services
            .users
            .stored_users(lookup)
            .await
            .map_err(|e| NkError::core("failed to get users", e))?;
        Ok(users_list(services, &users))
    })
}

fn users_get_username(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let arg = args.at(1);
        let (missing, not_string) = if js {
            (
                "expects an array of usernames",
                "expects an array of strings",
            )
        } else {
            ("invalid username list", "each username must be a string")
        };
        if arg.is_nil() {
            return Err(arg.error(missing));
        }
        let mut usernames = Vec::new();
        for item in arg.list(if js {
            not_string
        } else {
            "invalid username data"
        })? {
            let name = item.string(not_string)?;
            if name.is_empty() && !js {
                return Err(item.error(not_string));
            }
            usernames.push(name.to_owned());
        }
        if usernames.is_empty() {
            return Ok(NkValue::List(Vec::new()));
        }
        let services = nk.account_services("users_get_username")?;
        let lookup = UserLookup {
            usernames,
            ..UserLookup::default()
        };
        let users = services
            .users
            .stored_users(lookup)
            .await
            .map_err(|e| NkError::core("failed to get users", e))?;
        Ok(users_list(services, &users))
    })
}

/// `count` (Lua: default 0) users picked at random.
fn users_get_random(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let arg = args.at(1);
        let count = if args.is_js() {
            arg.integer("count must be 0-1000")?
        } else {
            arg.opt_integer("count must be 0-1000")?.unwrap_or(0)
        };
        if !(0..=MAX_RANDOM_USERS).contains(&count) {
            return Err(arg.error("count must be 0-1000"));
        }
        let services = nk.account_services("users_get_random")?;
        // In range 0..=1000 by the check above.
        let count = usize::try_from(count).unwrap_or(0);
        let users = services
            .users
            .random(count)
            .await
            .map_err(|e| NkError::core("failed to get users", e))?;
        Ok(users_list(services, &users))
    })
}

/// The ids `users_ban_id` and `users_unban_id` take; an empty list does nothing.
fn ban_ids(args: &NkArgs) -> Result<Vec<Uuid>, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    if arg.is_nil() {
        return Err(arg.error(if js {
            "expects array of user ids"
        } else {
            "invalid user id list"
        }));
    }
    let items = arg.list(if js {
        "expects an array of strings"
    } else {
        "invalid user id data"
    })?;
    user_ids(&items, js)
}

/// Bans users: they can no longer sign in, and their sessions end (as Nakama's console ban).
fn users_ban_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let ids = ban_ids(&args)?;
        if ids.is_empty() {
            return Ok(NkValue::Nil);
        }
        let services = nk.account_services("users_ban_id")?;
        services
            .accounts
            .ban(&services.sessions, &nk, &ids)
            .await
            .map_err(|e| NkError::core("failed to ban users", e))?;
        Ok(NkValue::Nil)
    })
}

fn users_unban_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let ids = ban_ids(&args)?;
        if ids.is_empty() {
            return Ok(NkValue::Nil);
        }
        let services = nk.account_services("users_unban_id")?;
        services
            .accounts
            .unban(&ids)
            .await
            .map_err(|e| NkError::core("failed to unban users", e))?;
        Ok(NkValue::Nil)
    })
}

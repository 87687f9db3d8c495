//! Accounts by id: `account_get_id`, `accounts_get_id`, `account_update_id`,
//! `account_delete_id`, `account_export_id` (and `account_import_id`, not served), over
//! `metafi_core::Accounts` — the service `GET /v2/account` and `PUT /v2/account` use.

use metafi_core::CoreError;
use metafi_storage::{Account, AccountUpdate, User};
use uuid::Uuid;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue, Unserved};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("account_get_id"),
        js: Some("accountGetId"),
        call: NkCall::Async(account_get_id),
    },
    NkFunction {
        lua: Some("accounts_get_id"),
        js: Some("accountsGetId"),
        call: NkCall::Async(accounts_get_id),
    },
    NkFunction {
        lua: Some("account_update_id"),
        js: Some("accountUpdateId"),
        call: NkCall::Async(account_update_id),
    },
    NkFunction {
        lua: Some("account_delete_id"),
        js: Some("accountDeleteId"),
        call: NkCall::Async(account_delete_id),
    },
    NkFunction {
        lua: Some("account_export_id"),
        js: Some("accountExportId"),
        call: NkCall::Async(account_export_id),
    },
    NkFunction {
        lua: Some("account_import_id"),
        js: Some("accountImportId"),
        call: NkCall::Unserved(Unserved::Never {
            why: "importing Nakama account exports would need friends, groups, leaderboard \
                  records, notifications and wallet ledgers MetaFi does not keep; create the \
                  account with nk.authenticate_* and write its storage objects instead",
        }),
    },
];

/// A user as Nakama's runtimes show it (`userToLuaTable`, `userToJsObject`): times in seconds.
pub(super) fn user_value(user: &User, online: bool) -> NkValue {
    let mut map = NkMap::with_capacity(12);
    user_fields(&mut map, user, online);
    map.into()
}

fn user_fields(map: &mut NkMap, user: &User, online: bool) {
    map.insert("user_id", user.id.to_string());
    map.insert("username", user.username.as_str());
    map.insert("display_name", user.display_name.as_str());
    map.insert("avatar_url", user.avatar_url.as_str());
    map.insert("lang_tag", user.lang_tag.as_str());
    map.insert("location", user.location.as_str());
    map.insert("timezone", user.timezone.as_str());
    map.insert("online", online);
    // MetaFi has no friends yet: nobody has edges.
    map.insert("edge_count", 0i64);
    map.insert("create_time", user.create_time_ms / 1000);
    map.insert("update_time", user.update_time_ms / 1000);
    map.insert("metadata", json_object(&user.metadata));
}

/// A stored JSON object as a value; an empty map for empty or broken text.
fn json_object(text: &str) -> NkValue {
    match NkValue::from_json_text(text) {
        NkValue::Nil => NkValue::Map(NkMap::new()),
        value => value,
    }
}

/// An account as Nakama's runtimes show it. Lua repeats the user's fields at the top level
/// (`accountGetId` in `runtime_lua_nakama.go`); JavaScript has them under `user` only.
fn account_value(account: &Account, online: bool, js: bool) -> NkValue {
    let user = &account.user;
    let mut map = NkMap::with_capacity(20);
    if !js {
        user_fields(&mut map, user, online);
    }
    map.insert("user", user_value(user, online));
    map.insert("wallet", json_object(&user.wallet));
    if let Some(email) = &user.email {
        map.insert("email", email.as_str());
    }
    if !account.device_ids.is_empty() {
        let devices: Vec<NkValue> = account
            .device_ids
            .iter()
            .map(|id| NkMap::new().with("id", id.as_str()).into())
            .collect();
        map.insert("devices", devices);
    }
    if let Some(custom_id) = &user.custom_id {
        map.insert("custom_id", custom_id.as_str());
    }
    if let Some(ms) = user.verify_time_ms {
        map.insert("verify_time", ms / 1000);
    }
    if let Some(ms) = user.disable_time_ms {
        map.insert("disable_time", ms / 1000);
    }
    map.into()
}

/// The user id most account functions take first: Lua says `expects user ID to be a valid
/// identifier`, JavaScript `js_message`.
fn account_user_id(args: &NkArgs, js_message: &'static str) -> Result<Uuid, NkError> {
    let message = if args.is_js() {
        js_message
    } else {
        "expects user ID to be a valid identifier"
    };
    args.at(1).uuid(message)
}

fn account_get_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        const NAME: &str = "account_get_id";
        let arg = args.at(1);
        if args.is_js() && arg.value.as_str().is_none() {
            // Nakama's `getJsString`.
            return Err(arg.error("expects string"));
        }
        let id = arg.non_empty("expects user id")?;
        let id = Uuid::parse_str(id).map_err(|_| arg.error("invalid user id"))?;
        let services = nk.account_services(NAME)?;
        let account = services.accounts.stored_account(id).await.map_err(|e| {
            // Nakama's runtime text for an unknown user (its `ErrAccountNotFound`), not the
            // REST one.
            let e = match e {
                CoreError::NotFound { .. } => CoreError::not_found("account not found"),
                other => other,
            };
            if args.is_js() {
                NkError::core("error getting account", e)
            } else {
                NkError::core(&format!("failed to get account for user_id {id}"), e)
            }
        })?;
        let online = services.users.is_online(id);
        Ok(account_value(&account, online, args.is_js()))
    })
}

fn accounts_get_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let (not_string, invalid) = if js {
            ("expects an array of strings", None)
        } else {
            (
                "user id must be a string",
                Some("user id must be a valid identifier string"),
            )
        };
        let mut user_ids = Vec::new();
        for item in opt_list(&args.at(1), not_string)? {
            let text = item.string(not_string)?;
            let id = Uuid::parse_str(text).map_err(|_| {
                item.error(match invalid {
                    Some(message) => std::borrow::Cow::Borrowed(message),
                    None => std::borrow::Cow::Owned(format!("invalid user id: {text}")),
                })
            })?;
            user_ids.push(id);
        }
        let device_message = if js {
            "expects an array of strings"
        } else {
            "device id must be a string"
        };
        let mut device_ids = Vec::new();
        for item in opt_list(&args.at(2), device_message)? {
            device_ids.push(item.string(device_message)?.to_owned());
        }
        let services = nk.account_services("accounts_get_id")?;
        let accounts = services
            .accounts
            .stored_accounts(&user_ids, &device_ids)
            .await
            .map_err(|e| NkError::core("failed to get accounts", e))?;
        Ok(accounts
            .iter()
            .map(|account| {
                let online = services.users.is_online(account.user.id);
                account_value(account, online, js)
            })
            .collect::<Vec<_>>()
            .into())
    })
}

/// A list argument's items; none for nil.
pub(super) fn opt_list<'a>(arg: &Arg<'a>, message: &'static str) -> Result<Vec<Arg<'a>>, NkError> {
    if arg.is_nil() {
        return Ok(Vec::new());
    }
    arg.list(message)
}

/// Lua: `(user_id, metadata, username, display_name, timezone, location, lang_tag,
/// avatar_url)`, empty strings leaving a field as it is. JavaScript: `(userId, username,
/// displayName, timezone, location, langTag, avatarUrl, metadata)`, where only null or
/// undefined leave a field as it is (an empty string clears it).
fn account_update_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let user_id = account_user_id(&args, "expects a valid user id")?;
        let (metadata_at, first_text) = if js { (8, 2) } else { (2, 3) };
        let text = |offset: usize| -> Result<Option<String>, NkError> {
            let value = args
                .at(first_text + offset)
                .opt_string("expects a string")?;
            Ok(match value {
                Some("") if !js || offset == 0 => None,
                other => other.map(str::to_owned),
            })
        };
        let update = AccountUpdate {
            username: text(0)?,
            display_name: text(1)?,
            timezone: text(2)?,
            location: text(3)?,
            lang_tag: text(4)?,
            avatar_url: text(5)?,
            metadata: metadata_text(&args.at(metadata_at), js)?,
            wallet: None,
        };
        let services = nk.account_services("account_update_id")?;
        services
            .accounts
            .update_account_as_server(user_id, update)
            .await
            .map_err(|e| {
                let what = if js {
                    "error trying to update user"
                } else {
                    "error while trying to update user"
                };
                NkError::core(what, e)
            })?;
        Ok(NkValue::Nil)
    })
}

/// Metadata to store: a map (an empty table counts) as JSON object text; `None` for nil.
pub(super) fn metadata_text(arg: &Arg<'_>, js: bool) -> Result<Option<String>, NkError> {
    let message = if js {
        "expects metadata to be an object"
    } else {
        "expects metadata to be a table"
    };
    match arg.value {
        NkValue::Nil => Ok(None),
        NkValue::Map(map) if map.is_empty() => Ok(Some("{}".to_owned())),
        NkValue::List(items) if items.is_empty() => Ok(Some("{}".to_owned())),
        NkValue::Map(_) => arg
            .value
            .to_json(arg.naming)
            .map(|json| Some(json.to_string()))
            .map_err(|e| NkError::failed(format!("error encoding metadata: {e}"))),
        _ => Err(arg.error(message)),
    }
}

fn account_delete_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = account_user_id(&args, "invalid user id")?;
        // Nakama's `recorded` writes a tombstone of the user for its console's data
        // deletion log; MetaFi keeps none, so the flag is checked and has no further effect.
        args.at(2).opt_bool("expects recorded to be a boolean")?;
        let services = nk.account_services("account_delete_id")?;
        services
            .accounts
            .delete(&services.sessions, &nk, user_id)
            .await
            .map_err(|e| NkError::core("error while trying to delete account", e))?;
        Ok(NkValue::Nil)
    })
}

/// The export as JSON text, in the shape of Nakama's `AccountExport` (protobuf JSON names):
/// `account` and `objects`; MetaFi keeps none of the other parts (friends, groups, …).
fn account_export_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = account_user_id(&args, "invalid user id")?;
        let services = nk.account_services("account_export_id")?;
        let (account, objects) = services
            .accounts
            .export(user_id)
            .await
            .map_err(|e| NkError::core("error exporting account", e))?;
        let export = serde_json::json!({ "account": account, "objects": objects });
        Ok(export.to_string().into())
    })
}

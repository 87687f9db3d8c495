//! Notifications: `notification_send`, `notifications_send`, `notification_send_all`,
//! `notifications_list`, `notifications_delete`, `notifications_get_id`,
//! `notifications_delete_id`, `notifications_update`, over `metafi_core::Notifications` — the
//! service `/v2/notification` uses. Arguments, defaults, result shapes and error texts are
//! Nakama's (`runtime_lua_nakama.go`, `runtime_javascript_nakama.go`), which differ between
//! the two languages in places; each difference is marked.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::notifications::Broadcast;
use metafi_core::{CoreError, NewNotification, Notifications};
use metafi_storage::{NotificationUpdate, StoredNotification};
use uuid::Uuid;

use super::storage::ready;
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("notification_send"),
        js: Some("notificationSend"),
        call: NkCall::Async(notification_send),
    },
    NkFunction {
        lua: Some("notifications_send"),
        js: Some("notificationsSend"),
        call: NkCall::Async(notifications_send),
    },
    NkFunction {
        lua: Some("notification_send_all"),
        js: Some("notificationSendAll"),
        call: NkCall::Async(notification_send_all),
    },
    NkFunction {
        lua: Some("notifications_list"),
        js: Some("notificationsList"),
        call: NkCall::Async(notifications_list),
    },
    NkFunction {
        lua: Some("notifications_delete"),
        js: Some("notificationsDelete"),
        call: NkCall::Async(notifications_delete),
    },
    NkFunction {
        lua: Some("notifications_get_id"),
        js: Some("notificationsGetId"),
        call: NkCall::Async(notifications_get_id),
    },
    NkFunction {
        lua: Some("notifications_delete_id"),
        js: Some("notificationsDeleteId"),
        call: NkCall::Async(notifications_delete_id),
    },
    NkFunction {
        lua: Some("notifications_update"),
        js: Some("notificationsUpdate"),
        call: NkCall::Async(notifications_update),
    },
];

/// Lua `(user_id, subject, content, code, sender_id?, persistent?)`; JavaScript the same in
/// camelCase. Codes must be positive, or in Nakama's -2000..=-1000 band of custom system codes.
fn notification_send(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let js = args.is_js();
        let user_id = args.at(1).uuid(if js {
            "expects valid user id"
        } else {
            "expects user_id to be a valid UUID"
        })?;
        let subject = args.at(2).non_empty(if js {
            "expects subject to be a non empty string"
        } else {
            "expects subject to be a non-empty string"
        })?;
        let content = content_text(&args.at(3), js)?;
        let code = code_arg(&args.at(4), js)?;
        let sender_arg = args.at(5);
        let sender_message = if js {
            "expects senderId to either be not set, empty string or a valid UUID"
        } else {
            "expects sender_id to either be not set, empty string or a valid UUID"
        };
        let sender_id = match sender_arg.value {
            // JavaScript parses any string given, the empty one included.
            NkValue::Str(text) if js => {
                Some(Uuid::parse_str(text).map_err(|_| sender_arg.error(sender_message))?)
            }
            _ => sender_arg.opt_uuid(sender_message)?,
        }
        .filter(|id| !id.is_nil());
        let persistent = args
            .at(6)
            .opt_bool(if js {
                "expects boolean"
            } else {
                "expects persistent to be a boolean"
            })?
            .unwrap_or(false);
        Ok(NewNotification {
            user_id,
            subject: subject.to_owned(),
            content,
            code,
            sender_id,
            persistent,
        })
    })();
    let what = "failed to send notifications";
    call_with(
        nk,
        "notification_send",
        what,
        parsed,
        |service, n| async move { service.send(vec![n]).await },
    )
}

/// A list of `{user_id, subject, content, code, sender_id?, persistent?}` (JavaScript:
/// `userId`, `senderId`).
fn notifications_send(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = send_list(&args);
    let what = "failed to send notifications";
    call_with(
        nk,
        "notifications_send",
        what,
        parsed,
        |service, n| async move { service.send(n).await },
    )
}

/// Runs a call that answers nothing: the arguments are read first (their errors come before
/// those of a server without notifications), then `call` runs on the service, its failure
/// reported as `what`.
fn call_with<T, R, Fut>(
    nk: Nk,
    name: &'static str,
    what: &'static str,
    parsed: Result<T, NkError>,
    call: impl FnOnce(Arc<Notifications>, T) -> Fut + Send + 'static,
) -> NkFuture
where
    T: Send + 'static,
    Fut: Future<Output = Result<R, CoreError>> + Send,
{
    let input = match parsed {
        Ok(input) => input,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let service = Arc::clone(nk.notifications(name)?);
        call(service, input)
            .await
            .map_err(|e| NkError::core(what, e))?;
        Ok(NkValue::Multi(Vec::new()))
    })
}

fn send_list(args: &NkArgs) -> Result<Vec<NewNotification>, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    let items = match arg.value {
        NkValue::List(_) => arg.list("expects a valid set of notifications")?,
        // An empty Lua table or JS object: nothing to send.
        NkValue::Map(map) if map.is_empty() => Vec::new(),
        NkValue::Nil if js => return Err(arg.error("expects a valid array of notifications")),
        _ if js => return Err(arg.error("expects notifications to be an array")),
        _ => return Err(arg.error("expects a valid set of notifications")),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let map = item.map(if js {
            "expects notifications to be an array"
        } else {
            "expects a valid set of notifications"
        })?;
        let persistent = match map.get("persistent").value {
            NkValue::Nil => false,
            NkValue::Bool(b) => *b,
            _ if js => return Err(map.error("expects 'persistent' value to be a boolean")),
            _ => return Err(map.error("expects persistent to be boolean")),
        };
        let subject = match map.get("subject").value {
            NkValue::Nil => String::new(),
            NkValue::Str(s) => s.clone(),
            _ if js => return Err(map.error("expects 'subject' value to be a string")),
            _ => return Err(map.error("expects subject to be string")),
        };
        let content_field = map.get("content");
        let content = if content_field.is_nil() {
            None
        } else {
            Some(content_text(&content_field, js).map_err(|_| {
                map.error(if js {
                    "expects 'content' value to be an object"
                } else {
                    "expects content to be a table"
                })
            })?)
        };
        let code_field = map.get("code");
        let code = if code_field.is_nil() {
            0
        } else if js {
            let code = code_field
                .integer("expects 'code' value to be a number")
                .map_err(|e| map.error(arg_message(e)))?;
            if !code_allowed(code) {
                return Err(map.error("expects 'code' value to be a positive integer."));
            }
            code
        } else {
            let code = code_field
                .number("expects code to be number")
                .map_err(|e| map.error(arg_message(e)))?
                .trunc() as i64;
            // Nakama's Lua form admits no negative band here.
            if code <= 0 {
                return Err(map.error("expects code to number above 0"));
            }
            code
        };
        let user_id = map.opt_uuid("user_id")?;
        let sender_id = map.opt_uuid("sender_id")?;
        if subject.is_empty() {
            return Err(map.error("expects subject to be provided and to be non-empty"));
        }
        let Some(content) = content else {
            return Err(map.error("expects content to be provided and be valid JSON"));
        };
        let user_id = match user_id {
            Some(id) if !id.is_nil() => id,
            _ if js => {
                return Err(map.error("expects userId to be provided and be a valid UUID"));
            }
            _ => return Err(map.error("expects user_id to be provided and be a valid UUID")),
        };
        if code == 0 {
            return Err(map.error("expects code to be provided and be a number above 0"));
        }
        out.push(NewNotification {
            user_id,
            subject,
            content,
            code: code_i32(code),
            sender_id: sender_id.filter(|id| !id.is_nil()),
            persistent,
        });
    }
    Ok(out)
}

/// `(subject, content, code, persistent?)`: to every user; stored for every account when
/// persistent, else pushed to every open socket.
fn notification_send_all(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let js = args.is_js();
        let subject = args.at(1).non_empty(if js {
            "expects subject to be a non empty string"
        } else {
            "expects subject to be a non-empty string"
        })?;
        let content = content_text(&args.at(2), js)?;
        let code_arg = args.at(3);
        let code = code_arg.integer("expects code number to be a positive integer")?;
        if code <= 0 {
            return Err(if js {
                NkError::failed("expects code number to be a positive integer")
            } else {
                code_arg.error("expects code number to be a positive integer")
            });
        }
        let persistent = args
            .at(4)
            .opt_bool(if js {
                "expects boolean"
            } else {
                "expects persistent to be a boolean"
            })?
            .unwrap_or(false);
        Ok(Broadcast {
            subject: subject.to_owned(),
            content,
            code: code_i32(code),
            persistent,
        })
    })();
    let what = "failed to send notification";
    call_with(
        nk,
        "notification_send_all",
        what,
        parsed,
        |service, b| async move { service.send_all(b).await },
    )
}

/// `(user_id, limit = 100, cursor = "")`, limit 1..=1000. Lua returns `notifications, cursor`
/// (nil when no more follow), JavaScript `{notifications, cursor}`. Each notification as
/// Nakama's runtimes show it: `id, subject, content` (JSON text), `code, senderId,
/// persistent, createTime` (seconds) — camelCase in Lua too.
fn notifications_list(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let js = args.is_js();
        let user_arg = args.at(1);
        let user_id = if js {
            let text = user_arg.non_empty("expects user id")?;
            Uuid::parse_str(text).map_err(|_| user_arg.error("invalid user id"))?
        } else {
            user_arg.uuid("expects user_id to be a valid uuid")?
        };
        let limit_message = if js {
            "expects limit between 1 and 1000"
        } else {
            "expects limit to be value between 1 and 1000"
        };
        let limit_arg = args.at(2);
        let limit = limit_arg.opt_integer(limit_message)?.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            return Err(limit_arg.error(limit_message));
        }
        let cursor = args
            .at(3)
            .opt_string("expects cursor to be a string")?
            .unwrap_or_default()
            .to_owned();
        Ok((user_id, limit as usize, cursor))
    })();
    let (user_id, limit, cursor) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    let js = args.is_js();
    Box::pin(async move {
        let service = nk.notifications("notifications_list")?;
        let page = service
            .list(user_id, limit, &cursor, false)
            .await
            .map_err(|e| NkError::core("failed to list notifications", e))?;
        let notifications: Vec<NkValue> = page
            .notifications
            .iter()
            .map(|n| {
                let mut map = NkMap::with_capacity(7);
                map.insert_data("id", n.id.as_str());
                map.insert_data("subject", n.subject.as_str());
                map.insert_data("content", n.content.as_str());
                map.insert_data("code", i64::from(n.code));
                // Clients see the system's sender as the nil UUID; Nakama's server-code list
                // shows it empty (both checked against a running Nakama 3.40).
                let sender = if n.sender_id == NIL_SENDER {
                    ""
                } else {
                    n.sender_id.as_str()
                };
                map.insert_data("senderId", sender);
                map.insert_data("persistent", n.persistent);
                map.insert_data(
                    "createTime",
                    n.create_time.as_ref().map_or(0, |t| t.as_millis() / 1000),
                );
                map.into()
            })
            .collect();
        let cursor: NkValue = if page.cursor.is_empty() {
            NkValue::Nil
        } else {
            page.cursor.into()
        };
        Ok(if js {
            let mut out = NkMap::with_capacity(2);
            out.insert_data("notifications", notifications);
            out.insert_data("cursor", cursor);
            out.into()
        } else {
            NkValue::Multi(vec![notifications.into(), cursor])
        })
    })
}

/// A list of `{user_id, notification_id}` (JavaScript `userId`, `notificationId`): each
/// deletes that user's notification, if it is theirs.
fn notifications_delete(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let js = args.is_js();
        let arg = args.at(1);
        let items = match arg.value {
            NkValue::List(_) => arg.list("expects a valid set of notifications")?,
            NkValue::Map(map) if map.is_empty() => Vec::new(),
            NkValue::Nil if js => {
                return Err(arg.error("expects a valid array of notifications"));
            }
            _ if js => return Err(arg.error("expects notifications to be an array")),
            _ => return Err(arg.error("expects a valid set of notifications")),
        };
        let mut by_user: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for item in items {
            let map = item.map(if js {
                "expects notifications to be an array"
            } else {
                "expects a valid set of notifications"
            })?;
            let user_id = map.opt_uuid("user_id")?;
            let id = map.opt_uuid("notification_id")?;
            // Without a user (Nakama: the nil user) or an id, nothing can match.
            if let (Some(user), Some(id)) = (user_id, id) {
                by_user.entry(user).or_default().push(id);
            }
        }
        Ok(by_user)
    })();
    let by_user = match parsed {
        Ok(b) => b,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let service = nk.notifications("notifications_delete")?;
        for (user, ids) in by_user {
            service
                .delete_by_id(&ids, Some(user))
                .await
                .map_err(|e| NkError::core("failed to delete notifications", e))?;
        }
        Ok(NkValue::Multi(Vec::new()))
    })
}

/// `(ids, user_id?)`: the notifications with these ids, only that user's when given. Lua shows
/// each as `{code, content, sender_id?, subject, user_id, create_time, persistent}` (no id, as
/// Nakama), JavaScript as `{id, userId, subject, persistent, content, code, sender,
/// createTime}`; content is a table/object.
fn notifications_get_id(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = ids_and_user(&args);
    let (ids, user_id) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    let js = args.is_js();
    Box::pin(async move {
        let service = nk.notifications("notifications_get_id")?;
        let found = service.by_id(&ids, user_id).await.map_err(|e| {
            let what = if js {
                "failed to get notifications by id"
            } else {
                "failed to get notifications"
            };
            NkError::core(what, e)
        })?;
        Ok(found
            .iter()
            .map(|n| stored_value(n, js))
            .collect::<Vec<_>>()
            .into())
    })
}

/// The system's sender as clients see it.
const NIL_SENDER: &str = "00000000-0000-0000-0000-000000000000";

fn stored_value(n: &StoredNotification, js: bool) -> NkValue {
    let content = match NkValue::from_json_text(&n.content) {
        NkValue::Nil => NkValue::Map(NkMap::new()),
        value => value,
    };
    let sender = if n.sender_id.is_nil() {
        String::new()
    } else {
        n.sender_id.to_string()
    };
    let mut map = NkMap::with_capacity(8);
    if js {
        map.insert_data("id", n.id.to_string());
        map.insert_data("userId", n.user_id.to_string());
        map.insert_data("subject", n.subject.as_str());
        map.insert_data("persistent", true);
        map.insert_data("content", content);
        map.insert_data("code", i64::from(n.code));
        map.insert_data("sender", sender);
        map.insert_data("createTime", n.create_time_ms.div_euclid(1000));
    } else {
        map.insert_data("code", i64::from(n.code));
        map.insert_data("content", content);
        if !sender.is_empty() {
            map.insert_data("sender_id", sender);
        }
        map.insert_data("subject", n.subject.as_str());
        map.insert_data("user_id", n.user_id.to_string());
        map.insert_data("create_time", n.create_time_ms.div_euclid(1000));
        map.insert_data("persistent", true);
    }
    map.into()
}

/// `(ids, user_id?)`: deletes the notifications with these ids, only that user's when given.
fn notifications_delete_id(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = ids_and_user(&args);
    let (ids, user_id) = match parsed {
        Ok(p) => p,
        Err(e) => return ready(Err(e)),
    };
    let js = args.is_js();
    Box::pin(async move {
        let service = nk.notifications("notifications_delete_id")?;
        service.delete_by_id(&ids, user_id).await.map_err(|e| {
            // Nakama's JavaScript text says "get" here too.
            let what = if js {
                "failed to get notifications by id"
            } else {
                "failed to delete notifications"
            };
            NkError::core(what, e)
        })?;
        Ok(NkValue::Multi(Vec::new()))
    })
}

/// The ids list and optional user id of `notifications_get_id` / `notifications_delete_id`.
fn ids_and_user(args: &NkArgs) -> Result<(Vec<Uuid>, Option<Uuid>), NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    let items = match arg.value {
        NkValue::List(_) => arg.list("invalid user ids list")?,
        NkValue::Map(map) if map.is_empty() => Vec::new(),
        NkValue::Nil if js => return Err(arg.error("expects an array of ids")),
        _ if js => return Err(arg.error("expects an array of strings")),
        _ => return Err(arg.error("invalid user ids list")),
    };
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        let id = if js {
            let text = item.string("expects an array of strings")?;
            Uuid::parse_str(text).map_err(|_| item.error(format!("invalid user id: {text}")))?
        } else {
            let text = item.non_empty("each notification id must be a string")?;
            Uuid::parse_str(text)
                .map_err(|_| item.error("each notification id must be a valid id"))?
        };
        ids.push(id);
    }
    let user_arg = args.at(2);
    let user_id = match user_arg.opt_string("expects user id to be a string")? {
        None | Some("") => None,
        // Nakama hands the text to the database, which refuses anything but a UUID.
        Some(text) => Some(Uuid::parse_str(text).map_err(|_| {
            NkError::core(
                "failed to get notifications",
                CoreError::invalid("expects user id to be a valid UUID"),
            )
        })?),
    };
    Ok((ids, user_id))
}

/// A list of `{id, content?, subject?, sender?}`: fields given replace the stored ones.
fn notifications_update(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = update_list(&args);
    let what = "failed to update notifications";
    call_with(
        nk,
        "notifications_update",
        what,
        parsed,
        |service, u| async move { service.update(u).await },
    )
}

fn update_list(args: &NkArgs) -> Result<Vec<NotificationUpdate>, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    let items = match arg.value {
        NkValue::List(_) => arg.list("expects a valid set of data")?,
        NkValue::Map(map) if map.is_empty() => Vec::new(),
        _ if js => {
            return Err(arg.error("expects an array of notification updates objects"));
        }
        _ => return Err(arg.error("table expected")),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let map = item.map(if js {
            "expects an array of notification updates objects"
        } else {
            "expects a valid set of data"
        })?;
        let id = match map.get("id").value {
            // Lua: an update without an id names the nil id, which matches nothing.
            NkValue::Nil if !js => Uuid::nil(),
            NkValue::Nil => return Err(map.error("expects 'id' value to be set")),
            NkValue::Str(s) if js && s.is_empty() => {
                return Err(map.error("expects 'id' value to be a non-empty string"));
            }
            NkValue::Str(s) => match Uuid::parse_str(s) {
                Ok(id) => id,
                Err(_) if js => return Err(NkError::failed("expects 'id' value to be a valid id")),
                Err(_) => return Err(map.error("expects user_id to be a valid ID")),
            },
            _ if js => return Err(map.error("expects 'id' value to be a non-empty string")),
            _ => return Err(map.error("expects id to be string")),
        };
        let content_field = map.get("content");
        let content = match content_field.value {
            NkValue::Nil => None,
            _ => Some(content_text(&content_field, js).map_err(|_| {
                map.error(if js {
                    "expects 'content' value to be a non-empty map"
                } else {
                    "expects content to be table"
                })
            })?),
        };
        let subject = match map.get("subject").value {
            NkValue::Nil => None,
            NkValue::Str(s) if !s.is_empty() => Some(s.clone()),
            NkValue::Str(_) if !js => {
                return Err(map.error("expects subject to be a non-empty string"));
            }
            _ if js => return Err(map.error("expects 'subject' value to be a non-empty string")),
            _ => return Err(map.error("expects subject to be string")),
        };
        let sender_id = match map.get("sender").value {
            NkValue::Nil => None,
            NkValue::Str(s) if !s.is_empty() => Some(Uuid::parse_str(s).map_err(|_| {
                // Nakama hands the text to the database, which refuses anything but a UUID.
                NkError::core(
                    "failed to update notifications",
                    CoreError::invalid("sender must be a valid UUID"),
                )
            })?),
            NkValue::Str(_) if !js => {
                return Err(map.error("expects sender to be a non-empty string"));
            }
            _ if js => return Err(map.error("expects 'sender' value to be a non-empty string")),
            _ => return Err(map.error("expects sender to be string")),
        };
        out.push(NotificationUpdate {
            id,
            content,
            subject,
            sender_id,
        });
    }
    Ok(out)
}

/// Content: a table (Lua) or object (JavaScript), as JSON object text the way Nakama's Go
/// encoder writes it.
fn content_text(arg: &Arg<'_>, js: bool) -> Result<String, NkError> {
    match arg.value {
        NkValue::Map(map) if map.is_empty() => Ok("{}".to_owned()),
        NkValue::List(items) if items.is_empty() => Ok("{}".to_owned()),
        NkValue::Map(_) => arg
            .value
            .to_go_json(arg.naming)
            .map(|json| json.to_string())
            .map_err(|e| NkError::failed(format!("failed to convert content: {e}"))),
        NkValue::Nil if js => Err(arg.error("expects content")),
        _ if js => Err(arg.error("expects content to be an object")),
        _ => Err(arg.error("table expected")),
    }
}

/// `code` of the single sends: positive, or Nakama's -2000..=-1000 band.
fn code_arg(arg: &Arg<'_>, js: bool) -> Result<i32, NkError> {
    let code = arg.integer("number expected")?;
    if !code_allowed(code) {
        return Err(if js {
            NkError::failed("expects code number to be a positive integer")
        } else {
            arg.error("expects code number to be a positive integer")
        });
    }
    Ok(code_i32(code))
}

fn code_allowed(code: i64) -> bool {
    code > 0 || (-2000..=-1000).contains(&code)
}

/// Codes past `i32` saturate; the service refuses anything outside Nakama's `SMALLINT`.
fn code_i32(code: i64) -> i32 {
    i32::try_from(code).unwrap_or(if code < 0 { i32::MIN } else { i32::MAX })
}

fn arg_message(e: NkError) -> String {
    match e {
        NkError::Arg { message, .. } => message.into_owned(),
        NkError::Failed { message } => message,
    }
}

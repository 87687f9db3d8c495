//! Storage objects: `storage_read`, `storage_write`, `storage_list`, `storage_delete`.
//!
//! Server code acts as the server (any owner, no permission checks) unless `storage_list` is
//! given a caller id. Lua and JavaScript word their argument errors differently in Nakama
//! (`expects a valid set of keys` / `expects an array of keys`); each language gets its own.

use metafi_core::objects::{DeleteInput, WriteInput};
use metafi_storage::{ObjectAck, ObjectId, StorageObject};
use uuid::Uuid;

use super::{Arg, MapArg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("storage_read"),
        js: Some("storageRead"),
        call: NkCall::Async(storage_read),
    },
    NkFunction {
        lua: Some("storage_write"),
        js: Some("storageWrite"),
        call: NkCall::Async(storage_write),
    },
    NkFunction {
        lua: Some("storage_list"),
        js: Some("storageList"),
        call: NkCall::Async(storage_list),
    },
    NkFunction {
        lua: Some("storage_delete"),
        js: Some("storageDelete"),
        call: NkCall::Async(storage_delete),
    },
];

/// A future that is already done (an argument error found before any IO).
pub(super) fn ready(result: Result<NkValue, NkError>) -> NkFuture {
    Box::pin(std::future::ready(result))
}

fn storage_read(nk: Nk, args: NkArgs) -> NkFuture {
    let ids = match read_ids(&args) {
        Ok(ids) => ids,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let objects = nk
            .storage_read(ids)
            .await
            .map_err(|e| NkError::core("failed to read storage objects", e))?;
        Ok(objects.iter().map(object_value).collect::<Vec<_>>().into())
    })
}

pub(super) fn read_ids(args: &NkArgs) -> Result<Vec<ObjectId>, NkError> {
    let message = if args.is_js() {
        "expects an array of keys"
    } else {
        "expects a valid set of keys"
    };
    entries(args, 1, message)?
        .into_iter()
        .map(|entry| {
            Ok(ObjectId {
                collection: required(&entry, "collection", Batch::Read)?,
                key: required(&entry, "key", Batch::Read)?,
                user_id: owner(&entry)?,
            })
        })
        .collect()
}

fn storage_write(nk: Nk, args: NkArgs) -> NkFuture {
    let writes = match writes(&args) {
        Ok(writes) => writes,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let acks = nk
            .storage_write(writes)
            .await
            .map_err(|e| NkError::core("failed to write storage objects", e))?;
        Ok(acks.iter().map(ack_value).collect::<Vec<_>>().into())
    })
}

fn writes(args: &NkArgs) -> Result<Vec<WriteInput>, NkError> {
    let message = if args.is_js() {
        if args.at(1).is_nil() {
            return Err(args.at(1).error("expects a valid array of data"));
        }
        "expects an array of storage write objects"
    } else {
        "expects a valid set of data"
    };
    entries(args, 1, message)?.iter().map(write_input).collect()
}

/// One storage write of a batch (`storage_write`, `multi_update`).
pub(super) fn write_input(entry: &MapArg<'_>) -> Result<WriteInput, NkError> {
    let collection = required(entry, "collection", Batch::Write)?;
    let key = required(entry, "key", Batch::Write)?;
    let user_id = owner(entry)?;
    Ok(WriteInput {
        collection,
        key,
        user_id,
        value: object_value_text(entry)?,
        version: version(entry)?,
        permission_read: permission(entry, "permission_read")?,
        permission_write: permission(entry, "permission_write")?,
    })
}

/// The `value` of a write as JSON text: a table in Lua, an object in JavaScript.
fn object_value_text(entry: &MapArg<'_>) -> Result<String, NkError> {
    let value = entry.get("value");
    let js = entry.naming == super::Naming::Camel;
    let accepted = match value.value {
        NkValue::Map(_) => true,
        NkValue::List(_) => !js,
        NkValue::Nil if !js => return Err(entry.error("expects value to be supplied")),
        _ => false,
    };
    if !accepted {
        return Err(entry.error(if js {
            "expects 'value' value to be an object"
        } else {
            "expects value to be table"
        }));
    }
    let json = value
        .value
        .to_json(entry.naming)
        .map_err(|e| entry.error(format!("failed to convert value: {e}")))?;
    Ok(json.to_string())
}

fn storage_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let owner = opt_id(
            args.at(1),
            js,
            if js {
                "expects empty or valid user id"
            } else {
                "expects empty or a valid user ID"
            },
        )?;
        let collection = match args.at(2).value {
            NkValue::Nil => String::new(),
            NkValue::Str(s) => s.clone(),
            _ => {
                return Err(args.at(2).error(if js {
                    "expects string"
                } else {
                    "string expected"
                }));
            }
        };
        let limit = args.at(3);
        let limit = match limit.value {
            // JavaScript's limit is optional (Nakama's default 100); Lua's is required.
            NkValue::Nil if js => 100,
            value => match value.as_f64() {
                Some(n) if n < 0.0 => return Err(limit.error("limit must not be negative")),
                Some(_) if js && value.as_i64().is_none() => {
                    return Err(limit.error("expects number"));
                }
                Some(n) => n as usize,
                None => {
                    return Err(limit.error(if js {
                        "expects number"
                    } else {
                        "number expected"
                    }));
                }
            },
        };
        let cursor = match args.at(4).value {
            NkValue::Str(s) => Some(s.clone()),
            NkValue::Nil => None,
            _ if js => return Err(args.at(4).error("expects string")),
            _ => None,
        };
        let caller = opt_id(
            args.at(5),
            js,
            if js {
                "expects caller id to be valid identifier"
            } else {
                "expects caller ID to be empty or a valid identifier"
            },
        )?;
        Ok((owner, collection, limit, cursor, caller))
    })();
    let (owner, collection, limit, cursor, caller) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let page = nk
            .storage_list(caller, owner, &collection, limit, cursor.as_deref())
            .await
            .map_err(|e| NkError::core("failed to list storage objects", e))?;
        let objects: NkValue = page
            .objects
            .iter()
            .map(object_value)
            .collect::<Vec<_>>()
            .into();
        let cursor: NkValue = page.cursor.filter(|c| !c.is_empty()).into();
        // Lua returns two values (`objects, cursor`), JavaScript one object.
        Ok(if js {
            NkMap::new()
                .with("objects", objects)
                .with("cursor", cursor)
                .into()
        } else {
            NkValue::Multi(vec![objects, cursor])
        })
    })
}

fn storage_delete(nk: Nk, args: NkArgs) -> NkFuture {
    let deletes = match deletes(&args) {
        Ok(deletes) => deletes,
        Err(e) => return ready(Err(e)),
    };
    let what = if args.is_js() {
        "failed to remove storage"
    } else {
        "failed to delete storage objects"
    };
    Box::pin(async move {
        nk.storage_delete(deletes)
            .await
            .map_err(|e| NkError::core(what, e))?;
        Ok(NkValue::Multi(Vec::new()))
    })
}

fn deletes(args: &NkArgs) -> Result<Vec<DeleteInput>, NkError> {
    let message = if args.is_js() {
        "expects an array of keys"
    } else {
        "expects a valid set of object IDs"
    };
    entries(args, 1, message)?
        .iter()
        .map(delete_input)
        .collect()
}

/// One storage delete of a batch (`storage_delete`, `multi_update`).
pub(super) fn delete_input(entry: &MapArg<'_>) -> Result<DeleteInput, NkError> {
    let version = version(entry)?;
    Ok(DeleteInput {
        collection: required(entry, "collection", Batch::Delete)?,
        key: required(entry, "key", Batch::Delete)?,
        user_id: owner(entry)?,
        version,
    })
}

/// The maps of argument `position`, a list of maps (Lua: any table of tables; JavaScript: an
/// array of objects); `message` otherwise.
pub(super) fn entries<'a>(
    args: &'a NkArgs,
    position: usize,
    message: &'static str,
) -> Result<Vec<MapArg<'a>>, NkError> {
    let arg = args.at(position);
    let items: Vec<Arg<'a>> = match arg.value {
        NkValue::Map(map) if !args.is_js() => map
            .iter()
            .map(|(_, value)| Arg {
                value,
                position: 1,
                naming: arg.naming,
            })
            .collect(),
        _ => arg.list(message)?,
    };
    items.iter().map(|item| item.map(message)).collect()
}

/// An optional string field; a type error names the field as the caller spells it.
fn opt_field(entry: &MapArg<'_>, field: &'static str) -> Result<Option<String>, NkError> {
    match entry.get(field).value {
        NkValue::Nil => Ok(None),
        NkValue::Str(s) => Ok(Some(s.clone())),
        _ => Err(entry.error(if entry.naming == super::Naming::Camel {
            format!("expects '{}' value to be a string", entry.name(field))
        } else {
            format!("expects {field} to be string")
        })),
    }
}

/// Which batch a field belongs to: Nakama words the errors of each a little differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    Read,
    Write,
    Delete,
}

/// A required non-empty string field, with Nakama's errors for an empty and a missing one.
fn required(entry: &MapArg<'_>, field: &'static str, batch: Batch) -> Result<String, NkError> {
    let js = entry.naming == super::Naming::Camel;
    match opt_field(entry, field)? {
        Some(s) if !s.is_empty() => Ok(s),
        // JavaScript's storageRead has one message for both.
        _ if js && batch == Batch::Read => Err(entry.error(format!(
            "expects '{}' value to be a non empty string",
            entry.name(field)
        ))),
        Some(_) if js => Err(entry.error(format!(
            "expects '{}' value to be non-empty",
            entry.name(field)
        ))),
        Some(_) => Err(entry.error(format!("expects {field} to be a non-empty string"))),
        None => Err(entry.error(format!("expects {field} to be supplied"))),
    }
}

/// `user_id` of an object: the nil UUID (system-owned) when absent, as in Nakama.
fn owner(entry: &MapArg<'_>) -> Result<Uuid, NkError> {
    match opt_field(entry, "user_id")? {
        None => Ok(Uuid::nil()),
        Some(s) => Uuid::parse_str(&s).map_err(|_| {
            entry.error(if entry.naming == super::Naming::Camel {
                "expects 'userId' value to be a valid id"
            } else {
                "expects user_id to be a valid ID"
            })
        }),
    }
}

/// `version`: absent (any version) or a non-empty string.
fn version(entry: &MapArg<'_>) -> Result<String, NkError> {
    match opt_field(entry, "version")? {
        Some(v) if v.is_empty() => Err(entry.error(if entry.naming == super::Naming::Camel {
            "expects 'version' value to be a non-empty string"
        } else {
            "expects version to be a non-empty string"
        })),
        other => Ok(other.unwrap_or_default()),
    }
}

fn permission(entry: &MapArg<'_>, field: &'static str) -> Result<Option<i32>, NkError> {
    let value = entry.get(field).value;
    let js = entry.naming == super::Naming::Camel;
    let number = match value {
        NkValue::Nil => return Ok(None),
        // Lua numbers are truncated, as gopher-lua's `int(LNumber)`.
        _ if !js => value.as_f64().map(|n| n as i32),
        _ => value.as_i64().and_then(|n| i32::try_from(n).ok()),
    };
    number.map(Some).ok_or_else(|| {
        entry.error(if js {
            format!("expects '{}' value to be a number", entry.name(field))
        } else {
            format!("expects {field} to be number")
        })
    })
}

/// `None` for nil or `""`, else a UUID or `message`.
fn opt_id(arg: Arg<'_>, js: bool, message: &'static str) -> Result<Option<Uuid>, NkError> {
    match arg.value {
        NkValue::Nil => Ok(None),
        NkValue::Str(s) if s.is_empty() => Ok(None),
        NkValue::Str(s) => Uuid::parse_str(s).map(Some).map_err(|_| arg.error(message)),
        _ if js => Err(arg.error("expects string")),
        _ => Err(arg.error(message)),
    }
}

/// A storage object as scripts see it (times in seconds, `value` decoded).
pub(super) fn object_value(object: &StorageObject) -> NkValue {
    NkMap::with_capacity(9)
        .with("key", object.key.as_str())
        .with("collection", object.collection.as_str())
        .with("user_id", object.user_id.to_string())
        .with("version", object.version.as_str())
        .with("permission_read", i64::from(object.permission_read))
        .with("permission_write", i64::from(object.permission_write))
        .with("create_time", object.create_time_ms / 1000)
        .with("update_time", object.update_time_ms / 1000)
        .with("value", json_object(&object.value))
        .into()
}

/// Stored JSON text as a value; an empty text is an empty map.
pub(super) fn json_object(text: &str) -> NkValue {
    if text.trim().is_empty() {
        return NkMap::new().into();
    }
    NkValue::from_json_text(text)
}

pub(super) fn ack_value(ack: &ObjectAck) -> NkValue {
    NkMap::with_capacity(4)
        .with("key", ack.key.as_str())
        .with("collection", ack.collection.as_str())
        .with("user_id", ack.user_id.to_string())
        .with("version", ack.version.as_str())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::Naming;

    fn list(items: Vec<NkValue>) -> NkValue {
        NkValue::List(items)
    }

    fn map(pairs: &[(&str, NkValue)]) -> NkValue {
        let mut m = NkMap::new();
        for (k, v) in pairs {
            m.insert_data(*k, v.clone());
        }
        m.into()
    }

    #[test]
    fn read_ids_default_to_system_owned_and_errors_follow_each_language() {
        let args = NkArgs::new(
            Naming::Snake,
            vec![list(vec![map(&[
                ("collection", "c".into()),
                ("key", "k".into()),
            ])])],
        );
        let ids = read_ids(&args).unwrap();
        assert_eq!(ids[0].user_id, Uuid::nil());

        let bad = vec![list(vec![map(&[
            ("collection", "c".into()),
            ("key", "k".into()),
            ("user_id", "nope".into()),
        ])])];
        let lua = read_ids(&NkArgs::new(Naming::Snake, bad.clone())).unwrap_err();
        assert_eq!(
            lua.lua_message("storage_read"),
            "bad argument #1 to storage_read (expects user_id to be a valid ID)"
        );
        let js = NkArgs::new(
            Naming::Camel,
            vec![list(vec![map(&[
                ("collection", "c".into()),
                ("key", "k".into()),
                ("userId", "nope".into()),
            ])])],
        );
        assert_eq!(
            read_ids(&js).unwrap_err(),
            NkError::Arg {
                position: 1,
                message: "expects 'userId' value to be a valid id".into()
            }
        );
        let not_a_list = NkArgs::new(Naming::Camel, vec![NkValue::from("x")]);
        assert_eq!(
            read_ids(&not_a_list).unwrap_err().lua_message("f"),
            "bad argument #1 to f (expects an array of keys)"
        );
    }

    #[test]
    fn missing_and_empty_fields_have_each_languages_message() {
        let delete = |naming, pairs: &[(&str, NkValue)]| {
            deletes(&NkArgs::new(naming, vec![list(vec![map(pairs)])]))
                .unwrap_err()
                .lua_message("d")
        };
        assert_eq!(
            delete(Naming::Snake, &[("key", "k".into())]),
            "bad argument #1 to d (expects collection to be supplied)"
        );
        assert_eq!(
            delete(Naming::Snake, &[("collection", "".into())]),
            "bad argument #1 to d (expects collection to be a non-empty string)"
        );
        assert_eq!(
            delete(
                Naming::Camel,
                &[("collection", "c".into()), ("key", "".into())]
            ),
            "bad argument #1 to d (expects 'key' value to be non-empty)"
        );
        assert_eq!(
            delete(
                Naming::Snake,
                &[
                    ("collection", "c".into()),
                    ("key", "k".into()),
                    ("version", "".into())
                ]
            ),
            "bad argument #1 to d (expects version to be a non-empty string)"
        );
        let read = NkArgs::new(Naming::Camel, vec![list(vec![map(&[("key", "k".into())])])]);
        assert_eq!(
            read_ids(&read).unwrap_err().lua_message("r"),
            "bad argument #1 to r (expects 'collection' value to be a non empty string)"
        );
    }

    #[test]
    fn a_javascript_write_value_must_be_an_object_a_lua_one_a_table() {
        let entry = |value: NkValue, user_key: &str| {
            list(vec![map(&[
                ("collection", "c".into()),
                ("key", "k".into()),
                (user_key, NkValue::Nil),
                ("value", value),
            ])])
        };
        let js = NkArgs::new(
            Naming::Camel,
            vec![entry(list(vec![1i64.into()]), "userId")],
        );
        assert_eq!(
            writes(&js).unwrap_err().lua_message("w"),
            "bad argument #1 to w (expects 'value' value to be an object)"
        );
        let lua = NkArgs::new(Naming::Snake, vec![entry(NkValue::Nil, "user_id")]);
        assert_eq!(
            writes(&lua).unwrap_err().lua_message("storage_write"),
            "bad argument #1 to storage_write (expects value to be supplied)"
        );
        let ok = NkArgs::new(
            Naming::Snake,
            vec![entry(map(&[("my_key", 1i64.into())]), "user_id")],
        );
        assert_eq!(writes(&ok).unwrap()[0].value, r#"{"my_key":1}"#);
    }
}

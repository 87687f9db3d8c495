//! The `nk` argument: Nakama's JavaScript server API (`runtime_javascript_nakama.go`) over
//! [`Nk`](metafi_runtime::Nk) — names, argument shapes, returned object shapes (camelCase
//! fields, times in seconds) and `TypeError` messages as Nakama has them.
//!
//! Every function is synchronous from the script's point of view, as in Nakama: one that does
//! IO blocks the VM thread until the answer arrives or the call's deadline passes (`io.rs`).
//! A failed `nk` call throws an `Error` reading `failed to read storage objects: <reason>`;
//! uncaught, the client gets code 13 with that message.

use std::rc::Rc;

use metafi_core::objects::{DeleteInput, WriteInput};
use metafi_runtime::{MatchInfo, MatchListQuery};
use metafi_storage::{ObjectId, StorageObject, User};
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Value};
use uuid::Uuid;

use crate::convert::{self, arg, is_nullish};
use crate::vm::{self, Shared};

type Native = for<'js> fn(&Ctx<'js>, &Shared, &[Value<'js>]) -> rquickjs::Result<Value<'js>>;

/// The functions of `nk`, by Nakama's names.
const FUNCTIONS: [(&str, Native); 12] = [
    ("uuidv4", uuidv4),
    ("storageRead", storage_read),
    ("storageWrite", storage_write),
    ("storageList", storage_list),
    ("storageDelete", storage_delete),
    ("accountGetId", account_get_id),
    ("usersGetId", users_get_id),
    ("matchCreate", match_create),
    ("matchGet", match_get),
    ("matchList", match_list),
    ("matchSignal", match_signal),
    ("notificationSend", notification_send),
];

/// Builds the `nk` object of a VM.
pub(crate) fn object<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let nk = Object::new(ctx.clone())?;
    for (name, native) in FUNCTIONS {
        let shared = shared.clone();
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            native(&ctx, &shared, &args.0)
        })?
        .with_name(name)?;
        nk.set(name, function)?;
    }
    Ok(nk)
}

fn text<'js>(ctx: &Ctx<'js>, s: &str) -> rquickjs::Result<Value<'js>> {
    Ok(rquickjs::String::from_str(ctx.clone(), s)?.into_value())
}

/// A JS number for an integer (exact up to 2^53, as every JS number).
fn number<'js>(ctx: &Ctx<'js>, n: i64) -> Value<'js> {
    match i32::try_from(n) {
        Ok(i) => Value::new_int(ctx.clone(), i),
        Err(_) => Value::new_number(ctx.clone(), n as f64),
    }
}

fn type_error(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_type(ctx, message)
}

/// Argument `index` as a string, as Nakama's `getJsString` (anything else: "expects string").
fn string_arg(ctx: &Ctx<'_>, args: &[Value<'_>], index: usize) -> rquickjs::Result<String> {
    arg(args, index)
        .and_then(convert::string)
        .ok_or_else(|| type_error(ctx, "expects string"))
}

/// Property `name` of `object`; `None` when it is `undefined` or `null`.
fn field<'js>(object: &Object<'js>, name: &str) -> rquickjs::Result<Option<Value<'js>>> {
    let value: Value<'js> = object.get(name)?;
    Ok((!value.is_undefined() && !value.is_null()).then_some(value))
}

/// An optional string property: "expects '<name>' value to be a string" for other types.
fn string_field(
    ctx: &Ctx<'_>,
    object: &Object<'_>,
    name: &str,
) -> rquickjs::Result<Option<String>> {
    match field(object, name)? {
        None => Ok(None),
        Some(value) => convert::string(&value)
            .map(Some)
            .ok_or_else(|| type_error(ctx, &format!("expects '{name}' value to be a string"))),
    }
}

/// A required non-empty string property.
fn required_field(ctx: &Ctx<'_>, object: &Object<'_>, name: &str) -> rquickjs::Result<String> {
    match string_field(ctx, object, name)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(type_error(
            ctx,
            &format!("expects '{name}' value to be a non empty string"),
        )),
    }
}

/// `userId` of an object id: the nil UUID (system-owned) when absent, as in Nakama.
fn user_id_field(ctx: &Ctx<'_>, object: &Object<'_>) -> rquickjs::Result<Uuid> {
    match string_field(ctx, object, "userId")? {
        None => Ok(Uuid::nil()),
        Some(s) => Uuid::parse_str(&s)
            .map_err(|_| type_error(ctx, "expects 'userId' value to be a valid id")),
    }
}

fn permission_field(
    ctx: &Ctx<'_>,
    object: &Object<'_>,
    name: &str,
) -> rquickjs::Result<Option<i32>> {
    match field(object, name)? {
        None => Ok(None),
        Some(value) => convert::integer(&value)
            .and_then(|i| i32::try_from(i).ok())
            .map(Some)
            .ok_or_else(|| type_error(ctx, &format!("expects '{name}' value to be a number"))),
    }
}

/// The objects of an array argument; `message` for a missing argument, a non-array or a
/// non-object element.
fn object_list<'js>(
    ctx: &Ctx<'js>,
    args: &[Value<'js>],
    message: &str,
) -> rquickjs::Result<Vec<Object<'js>>> {
    let Some(list) = arg(args, 0).filter(|v| !v.is_null()) else {
        return Err(type_error(ctx, message));
    };
    let Some(items) = convert::array_items(list) else {
        return Err(type_error(ctx, message));
    };
    items?
        .into_iter()
        .map(|item| match convert::plain_object(&item) {
            Some(object) => Ok(object.clone()),
            None => Err(type_error(ctx, message)),
        })
        .collect()
}

/// Runs an `nk` future, raising its failure as `what: reason`.
fn call<'js, T, F>(ctx: &Ctx<'js>, shared: &Shared, what: &str, future: F) -> rquickjs::Result<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, metafi_core::CoreError>> + Send + 'static,
{
    match shared.wait(future) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(vm::nk_error(ctx, what, &error)),
        Err(error) => Err(vm::wait_error(ctx, what, error)),
    }
}

fn uuidv4<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    _args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    text(ctx, &shared.nk.uuid_v4())
}

fn storage_object<'js>(ctx: &Ctx<'js>, object: &StorageObject) -> rquickjs::Result<Value<'js>> {
    let out = Object::new(ctx.clone())?;
    out.set("key", object.key.as_str())?;
    out.set("collection", object.collection.as_str())?;
    out.set("userId", object.user_id.to_string())?;
    out.set("version", object.version.as_str())?;
    out.set("permissionRead", i32::from(object.permission_read))?;
    out.set("permissionWrite", i32::from(object.permission_write))?;
    out.set("createTime", number(ctx, object.create_time_ms / 1000))?;
    out.set("updateTime", number(ctx, object.update_time_ms / 1000))?;
    out.set("value", convert::from_json_text(ctx, &object.value)?)?;
    Ok(out.into_value())
}

fn storage_read<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let mut ids = Vec::new();
    for entry in object_list(ctx, args, "expects an array of keys")? {
        ids.push(ObjectId {
            collection: required_field(ctx, &entry, "collection")?,
            key: required_field(ctx, &entry, "key")?,
            user_id: user_id_field(ctx, &entry)?,
        });
    }
    let nk = shared.nk.clone();
    let objects = call(ctx, shared, "failed to read storage objects", async move {
        nk.storage_read(ids).await
    })?;
    convert::array_of(ctx, &objects, |o| storage_object(ctx, o))
}

fn storage_write<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    if is_nullish(arg(args, 0)) {
        return Err(type_error(ctx, "expects a valid array of data"));
    }
    let mut writes = Vec::new();
    for entry in object_list(ctx, args, "expects an array of storage write objects")? {
        let collection = required_field(ctx, &entry, "collection")?;
        let key = required_field(ctx, &entry, "key")?;
        let user_id = user_id_field(ctx, &entry)?;
        let value = field(&entry, "value")?
            .filter(|v| convert::plain_object(v).is_some())
            .ok_or_else(|| type_error(ctx, "expects 'value' value to be an object"))?;
        let value = convert::to_json_text(ctx, value)?
            .ok_or_else(|| type_error(ctx, "expects 'value' value to be an object"))?;
        let version = match string_field(ctx, &entry, "version")? {
            Some(v) if v.is_empty() => {
                return Err(type_error(
                    ctx,
                    "expects 'version' value to be a non-empty string",
                ));
            }
            other => other.unwrap_or_default(),
        };
        writes.push(WriteInput {
            collection,
            key,
            user_id,
            value,
            version,
            permission_read: permission_field(ctx, &entry, "permissionRead")?,
            permission_write: permission_field(ctx, &entry, "permissionWrite")?,
        });
    }
    let nk = shared.nk.clone();
    let acks = call(ctx, shared, "failed to write storage objects", async move {
        nk.storage_write(writes).await
    })?;
    convert::array_of(ctx, &acks, |ack| {
        let out = Object::new(ctx.clone())?;
        out.set("key", ack.key.as_str())?;
        out.set("collection", ack.collection.as_str())?;
        out.set("userId", ack.user_id.to_string())?;
        out.set("version", ack.version.as_str())?;
        Ok(out.into_value())
    })
}

/// An optional user id argument: `null`, `undefined` and `""` mean none.
fn opt_uuid_arg(
    ctx: &Ctx<'_>,
    args: &[Value<'_>],
    index: usize,
    message: &str,
) -> rquickjs::Result<Option<Uuid>> {
    let Some(value) = arg(args, index).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match convert::string(value) {
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => Uuid::parse_str(&s)
            .map(Some)
            .map_err(|_| type_error(ctx, message)),
        None => Err(type_error(ctx, "expects string")),
    }
}

fn storage_list<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let owner = opt_uuid_arg(ctx, args, 0, "expects empty or valid user id")?;
    let collection = match arg(args, 1).filter(|v| !v.is_null()) {
        None => String::new(),
        Some(_) => string_arg(ctx, args, 1)?,
    };
    let limit = match arg(args, 2).filter(|v| !v.is_null()) {
        None => 100,
        Some(value) => match convert::integer(value) {
            Some(n) if n < 0 => return Err(type_error(ctx, "limit must not be negative")),
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => return Err(type_error(ctx, "expects number")),
        },
    };
    let cursor = match arg(args, 3).filter(|v| !v.is_null()) {
        None => None,
        Some(_) => Some(string_arg(ctx, args, 3)?),
    };
    let caller = opt_uuid_arg(ctx, args, 4, "expects caller id to be valid identifier")?;
    let nk = shared.nk.clone();
    let page = call(ctx, shared, "failed to list storage objects", async move {
        nk.storage_list(caller, owner, &collection, limit, cursor.as_deref())
            .await
    })?;
    let out = Object::new(ctx.clone())?;
    out.set(
        "objects",
        convert::array_of(ctx, &page.objects, |o| storage_object(ctx, o))?,
    )?;
    match &page.cursor {
        Some(cursor) => out.set("cursor", cursor.as_str())?,
        None => out.set("cursor", Value::new_null(ctx.clone()))?,
    }
    Ok(out.into_value())
}

fn storage_delete<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let mut deletes = Vec::new();
    for entry in object_list(ctx, args, "expects an array of keys")? {
        let version = match string_field(ctx, &entry, "version")? {
            Some(v) if v.is_empty() => {
                return Err(type_error(
                    ctx,
                    "expects 'version' value to be a non-empty string",
                ));
            }
            other => other.unwrap_or_default(),
        };
        deletes.push(DeleteInput {
            collection: required_field(ctx, &entry, "collection")?,
            key: required_field(ctx, &entry, "key")?,
            user_id: user_id_field(ctx, &entry)?,
            version,
        });
    }
    let nk = shared.nk.clone();
    call(ctx, shared, "failed to remove storage", async move {
        nk.storage_delete(deletes).await
    })?;
    Ok(Value::new_undefined(ctx.clone()))
}

fn user_object<'js>(ctx: &Ctx<'js>, user: &User) -> rquickjs::Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    out.set("userId", user.id.to_string())?;
    out.set("username", user.username.as_str())?;
    out.set("displayName", user.display_name.as_str())?;
    out.set("avatarUrl", user.avatar_url.as_str())?;
    out.set("langTag", user.lang_tag.as_str())?;
    out.set("location", user.location.as_str())?;
    out.set("timezone", user.timezone.as_str())?;
    // Presence and friends are not tracked by this server yet.
    out.set("online", false)?;
    out.set("edgeCount", 0)?;
    out.set("createTime", number(ctx, user.create_time_ms / 1000))?;
    out.set("updateTime", number(ctx, user.update_time_ms / 1000))?;
    out.set("metadata", convert::from_json_text(ctx, &user.metadata)?)?;
    Ok(out)
}

fn account_get_id<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let id = string_arg(ctx, args, 0)?;
    if id.is_empty() {
        return Err(type_error(ctx, "expects user id"));
    }
    let id = Uuid::parse_str(&id).map_err(|_| type_error(ctx, "invalid user id"))?;
    let nk = shared.nk.clone();
    let account = call(ctx, shared, "error getting account", async move {
        nk.account_get_id(id).await
    })?;
    let user = &account.user;
    let out = Object::new(ctx.clone())?;
    out.set("user", user_object(ctx, user)?)?;
    out.set("wallet", convert::from_json_text(ctx, &user.wallet)?)?;
    if let Some(email) = &user.email {
        out.set("email", email.as_str())?;
    }
    if !account.device_ids.is_empty() {
        let devices = convert::array_of(ctx, &account.device_ids, |device| {
            let entry = Object::new(ctx.clone())?;
            entry.set("id", device.as_str())?;
            Ok(entry.into_value())
        })?;
        out.set("devices", devices)?;
    }
    if let Some(custom_id) = &user.custom_id {
        out.set("customId", custom_id.as_str())?;
    }
    if let Some(ms) = user.verify_time_ms {
        out.set("verifyTime", number(ctx, ms / 1000))?;
    }
    if let Some(ms) = user.disable_time_ms {
        out.set("disableTime", number(ctx, ms / 1000))?;
    }
    Ok(out.into_value())
}

/// A list argument of strings; `None` when `null`/`undefined`.
fn string_list(
    ctx: &Ctx<'_>,
    args: &[Value<'_>],
    index: usize,
) -> rquickjs::Result<Option<Vec<String>>> {
    let Some(value) = arg(args, index).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let items = convert::array_items(value)
        .ok_or_else(|| type_error(ctx, "expects an array of strings"))??;
    items
        .iter()
        .map(|item| {
            convert::string(item).ok_or_else(|| type_error(ctx, "expects an array of strings"))
        })
        .collect::<rquickjs::Result<Vec<_>>>()
        .map(Some)
}

fn users_get_id<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let mut ids = Vec::new();
    for id in string_list(ctx, args, 0)?.unwrap_or_default() {
        let parsed =
            Uuid::parse_str(&id).map_err(|_| type_error(ctx, &format!("invalid user id: {id}")))?;
        ids.push(parsed);
    }
    // Argument 2 (Facebook ids) is checked for shape but matches nobody: this server has no
    // Facebook sign-in.
    string_list(ctx, args, 1)?;
    let nk = shared.nk.clone();
    let users = call(ctx, shared, "failed to get users", async move {
        nk.users_get_id(ids).await
    })?;
    convert::array_of(ctx, &users, |user| Ok(user_object(ctx, user)?.into_value()))
}

fn match_object<'js>(ctx: &Ctx<'js>, info: &MatchInfo) -> rquickjs::Result<Value<'js>> {
    let out = Object::new(ctx.clone())?;
    out.set("matchId", info.match_id.as_str())?;
    out.set("authoritative", info.authoritative)?;
    out.set("size", info.size)?;
    match &info.label {
        Some(label) => out.set("label", label.as_str())?,
        None => out.set("label", Value::new_null(ctx.clone()))?,
    }
    // Beyond Nakama's four fields, as the Lua runtime shows them.
    match info.tick_rate {
        Some(rate) => out.set("tickRate", rate)?,
        None => out.set("tickRate", Value::new_null(ctx.clone()))?,
    }
    match &info.handler_name {
        Some(name) => out.set("handlerName", name.as_str())?,
        None => out.set("handlerName", Value::new_null(ctx.clone()))?,
    }
    Ok(out.into_value())
}

fn match_create<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let module = string_arg(ctx, args, 0)?;
    if module.is_empty() {
        return Err(type_error(ctx, "expects module name"));
    }
    let params = match args.get(1).filter(|v| !v.is_undefined()) {
        None => serde_json::Map::new(),
        Some(value) if convert::plain_object(value).is_some() => {
            convert::to_json_object(ctx, value.clone(), "params")?
        }
        Some(_) => return Err(type_error(ctx, "expects params to be an object")),
    };
    let nk = shared.nk.clone();
    let id = call(ctx, shared, "error creating match", async move {
        nk.match_create(&module, params).await
    })?;
    text(ctx, &id)
}

fn match_get<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let id = string_arg(ctx, args, 0)?;
    let nk = shared.nk.clone();
    let found = call(ctx, shared, "failed to get match", async move {
        nk.match_get(&id).await
    })?;
    match found {
        Some(info) => match_object(ctx, &info),
        None => Ok(Value::new_null(ctx.clone())),
    }
}

fn match_list<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let present = |index: usize| arg(args, index).filter(|v| !v.is_null());
    let int = |index: usize| -> rquickjs::Result<Option<i64>> {
        match present(index) {
            None => Ok(None),
            Some(value) => convert::integer(value)
                .map(Some)
                .ok_or_else(|| type_error(ctx, "expects number")),
        }
    };
    let string = |index: usize| -> rquickjs::Result<Option<String>> {
        match present(index) {
            None => Ok(None),
            Some(_) => string_arg(ctx, args, index).map(Some),
        }
    };
    let authoritative = match present(1) {
        None => None,
        Some(value) => Some(
            value
                .as_bool()
                .ok_or_else(|| type_error(ctx, "expects boolean"))?,
        ),
    };
    let clamp = |n: i64| i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX });
    let query = MatchListQuery {
        limit: usize::try_from(int(0)?.unwrap_or(1).max(0)).unwrap_or(usize::MAX),
        authoritative,
        label: string(2)?,
        min_size: int(3)?.map(clamp),
        max_size: int(4)?.map(clamp),
        query: string(5)?,
    };
    let nk = shared.nk.clone();
    let matches = call(ctx, shared, "failed to list matches", async move {
        nk.match_list(query).await
    })?;
    convert::array_of(ctx, &matches, |info| match_object(ctx, info))
}

fn match_signal<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let id = string_arg(ctx, args, 0)?;
    let data = match arg(args, 1) {
        None => String::new(),
        Some(_) => string_arg(ctx, args, 1)?,
    };
    let nk = shared.nk.clone();
    let reply = call(ctx, shared, "failed to signal match", async move {
        nk.match_signal(&id, data).await
    })?;
    text(ctx, &reply)
}

fn notification_send<'js>(
    ctx: &Ctx<'js>,
    _shared: &Shared,
    _args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    Err(Exception::throw_message(
        ctx,
        "nk.notificationSend is not available: this server has no notifications yet",
    ))
}

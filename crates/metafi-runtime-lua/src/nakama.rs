//! The `nakama` module (`local nk = require("nakama")`): Nakama's Lua function names, argument
//! shapes, return shapes and error texts, over [`Nk`](metafi_runtime::Nk). Argument errors read
//! `bad argument #N to 'name' (…)` as in gopher-lua; failed `nk` calls raise a string error
//! (`failed to read storage objects: …`), which is code 13 unless the script catches it.

use std::collections::HashMap;

use metafi_core::CoreError;
use metafi_core::objects::{DeleteInput, WriteInput};
use metafi_runtime::context::{CallContext, ExecutionMode};
use metafi_runtime::match_host::{MatchInfo, MatchListQuery};
use metafi_runtime::nk::{LogLevel, Nk};
use metafi_storage::ObjectId;
use mlua::{Lua, Table, Value};
use serde_json::Value as Json;
use uuid::Uuid;

use super::VmShared;
use super::convert::{self, json_text_to_table};

/// Puts the `nakama` module in `package.preload`.
pub(super) fn install(lua: &Lua) -> mlua::Result<()> {
    let nk = lua.create_table()?;
    nk.raw_set("register_rpc", located(lua, register_rpc)?)?;
    super::registrations::install(lua, &nk)?;
    nk.raw_set(
        "register_matchmaker_matched",
        located(lua, super::lua_match_handler::register_matchmaker_matched)?,
    )?;
    nk.raw_set("run_once", located_async(lua, run_once)?)?;
    nk.raw_set(
        "uuid_v4",
        located(lua, |lua, ()| Ok(shared_nk(lua)?.uuid_v4()))?,
    )?;
    nk.raw_set("time", located(lua, time)?)?;
    nk.raw_set("json_encode", located(lua, json_encode)?)?;
    nk.raw_set("json_decode", located(lua, json_decode)?)?;
    for (name, level) in [
        ("logger_debug", LogLevel::Debug),
        ("logger_info", LogLevel::Info),
        ("logger_warn", LogLevel::Warn),
        ("logger_error", LogLevel::Error),
    ] {
        let function = located(lua, move |lua, message: Value| {
            let message = match message {
                Value::String(s) if !s.as_bytes().is_empty() => s.to_string_lossy(),
                _ => return Err(arg_error(1, name, "expects message string")),
            };
            log(lua, level, &message);
            Ok(message)
        })?;
        nk.raw_set(name, function)?;
    }
    nk.raw_set("storage_read", located_async(lua, storage_read)?)?;
    nk.raw_set("storage_write", located_async(lua, storage_write)?)?;
    nk.raw_set("storage_list", located_async(lua, storage_list)?)?;
    nk.raw_set("storage_delete", located_async(lua, storage_delete)?)?;
    nk.raw_set("account_get_id", located_async(lua, account_get_id)?)?;
    nk.raw_set("users_get_id", located_async(lua, users_get_id)?)?;
    nk.raw_set("match_create", located_async(lua, match_create)?)?;
    nk.raw_set("match_get", located_async(lua, match_get)?)?;
    nk.raw_set("match_list", located_async(lua, match_list)?)?;
    nk.raw_set("match_signal", located_async(lua, match_signal)?)?;
    nk.raw_set(
        "notification_send",
        lua.create_function(|_, _: mlua::MultiValue| -> mlua::Result<()> {
            Err(mlua::Error::runtime(
                "nk.notification_send is not available: this server has no notifications yet",
            ))
        })?,
    )?;

    let loader = lua.create_function(move |_, _: mlua::MultiValue| Ok(nk.clone()))?;
    let package: Table = lua.globals().raw_get("package")?;
    let preload: Table = package.raw_get("preload")?;
    preload.raw_set("nakama", loader)
}

/// The `ctx` table of a call, with Nakama's field names.
pub(super) fn context_table(lua: &Lua, ctx: &CallContext) -> mlua::Result<Table> {
    let shared = shared(lua)?;
    let request = &ctx.request;
    let table = lua.create_table_with_capacity(0, 12)?;
    table.raw_set("env", shared.env.clone())?;
    table.raw_set("execution_mode", ctx.mode.as_str())?;
    table.raw_set("node", &*ctx.node)?;
    table.raw_set("version", ctx.version)?;
    table.raw_set("headers", string_lists(lua, &request.headers)?)?;
    table.raw_set("query_params", string_lists(lua, &request.query)?)?;
    if let Some(user) = &request.user {
        table.raw_set("user_id", user.user_id.to_string())?;
        table.raw_set("username", user.username.as_str())?;
        let vars = lua.create_table_with_capacity(0, user.vars.len())?;
        for (k, v) in &user.vars {
            vars.raw_set(k.as_str(), v.as_str())?;
        }
        table.raw_set("vars", vars)?;
        table.raw_set("user_session_exp", user.expires_at)?;
        if !user.session_id.is_nil() {
            table.raw_set("session_id", user.session_id.to_string())?;
        }
    }
    if let Some(ip) = request.client_ip {
        table.raw_set("client_ip", ip.to_string())?;
    }
    Ok(table)
}

/// Logs a script line with the module that is running.
pub(super) fn log(lua: &Lua, level: LogLevel, message: &str) {
    let Ok(shared) = shared(lua) else {
        return;
    };
    let source = lua
        .inspect_stack(1, |debug| {
            debug
                .source()
                .source
                .map(|s| s.trim_start_matches('@').to_owned())
        })
        .flatten()
        .unwrap_or_default();
    let module = shared
        .modules_by_path
        .get(&source)
        .map(String::as_str)
        .unwrap_or(source.as_str());
    shared.nk.log(level, "lua", module, message);
}

/// A Rust function whose runtime errors carry the calling Lua position (`path:line: `), as
/// gopher-lua's `RaiseError` does; the host strips it again for clients.
fn located<A, R, F>(lua: &Lua, function: F) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
    F: Fn(&Lua, A) -> mlua::Result<R> + 'static,
{
    lua.create_function(move |lua, args: A| {
        super::check_deadline(lua)?;
        function(lua, args).map_err(|e| locate(lua, e))
    })
}

fn located_async<A, R, F, Fut>(lua: &Lua, function: F) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti + 'static,
    R: mlua::IntoLuaMulti + 'static,
    F: Fn(Lua, A) -> Fut + 'static,
    Fut: std::future::Future<Output = mlua::Result<R>> + 'static,
{
    lua.create_async_function(move |lua: Lua, args: A| {
        let due = super::check_deadline(&lua);
        let call = function(lua.clone(), args);
        async move {
            due?;
            call.await.map_err(|e| locate(&lua, e))
        }
    })
}

fn locate(lua: &Lua, error: mlua::Error) -> mlua::Error {
    let mlua::Error::RuntimeError(message) = &error else {
        return error;
    };
    match script_position(lua) {
        Some(position) => mlua::Error::RuntimeError(format!("{position}{message}")),
        None => error,
    }
}

/// `file:line: ` of the innermost script frame calling the host function: the direct caller,
/// or the script line that handed the function to `pcall` and the like (C frames and the
/// sandbox's wrappers are skipped), as Nakama positions errors.
fn script_position(lua: &Lua) -> Option<String> {
    /// Frames looked through: the caller, then a few wrappers (`pcall`, the sandbox's).
    const FRAMES: usize = 4;
    (1..=FRAMES).find_map(|level| {
        lua.inspect_stack(level, |debug| {
            let source = debug.source();
            let file = source
                .source
                .map(|s| s.trim_start_matches('@').to_owned())
                .unwrap_or_default();
            debug.current_line().map(|line| format!("{file}:{line}: "))
        })
        .flatten()
        .filter(|position| !file_is_internal(position))
    })
}

fn file_is_internal(position: &str) -> bool {
    position.starts_with("=metafi-sandbox")
        || position.starts_with("=[C]")
        || position.starts_with("=")
}

fn shared(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, VmShared>> {
    lua.app_data_ref::<VmShared>()
        .ok_or_else(|| mlua::Error::runtime("the nakama module is not bound to this VM"))
}

fn shared_nk(lua: &Lua) -> mlua::Result<Nk> {
    Ok(shared(lua)?.nk.clone())
}

fn arg_error(position: usize, function: &str, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!(
        "bad argument #{position} to '{function}' ({message})"
    ))
}

fn nk_error(what: &str, error: CoreError) -> mlua::Error {
    if error.is_server_fault() {
        tracing::error!(error = %error, source = ?std::error::Error::source(&error), "nk call failed in a Lua function");
    }
    mlua::Error::runtime(format!("{what}: {}", error.client_message()))
}

fn register_rpc(lua: &Lua, (function, id): (Value, Value)) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(arg_error(1, "register_rpc", "function expected"));
    };
    let id = match id {
        Value::String(s) if !s.as_bytes().is_empty() => s.to_string_lossy().to_lowercase(),
        _ => return Err(arg_error(2, "register_rpc", "expects rpc id")),
    };
    let shared = shared(lua)?;
    let mut registry = shared.registry.borrow_mut();
    let Some(module) = registry.loading.clone() else {
        return Err(mlua::Error::runtime(
            "nk.register_rpc can only be called while modules load (at the top level of a module)",
        ));
    };
    registry.rpcs.insert(id, (function, module));
    Ok(())
}

async fn run_once(lua: Lua, function: Value) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(arg_error(1, "run_once", "expects a function"));
    };
    let (nk, ctx) = {
        let shared = shared(&lua)?;
        let ctx = CallContext::load(shared.nk.node().clone(), shared.nk.env().clone());
        (shared.nk.clone(), ctx)
    };
    if !nk.claim_run_once("lua") {
        return Ok(());
    }
    let ctx = context_table(
        &lua,
        &CallContext {
            mode: ExecutionMode::RunOnce,
            ..ctx
        },
    )?;
    function
        .call_async::<()>(ctx)
        .await
        .map_err(|e| mlua::Error::runtime(format!("error in run_once function: {e}")))
}

fn time(lua: &Lua, args: mlua::MultiValue) -> mlua::Result<i64> {
    if !args.is_empty() {
        return Err(arg_error(
            1,
            "time",
            "a date table is not supported; use os.time(table) * 1000",
        ));
    }
    Ok(shared_nk(lua)?.time_ms())
}

fn json_encode(_: &Lua, value: Value) -> mlua::Result<String> {
    let json = convert::to_json(&value)
        .map_err(|e| mlua::Error::runtime(format!("error encoding to JSON: {e}")))?;
    serde_json::to_string(&json)
        .map_err(|e| mlua::Error::runtime(format!("error encoding to JSON: {e}")))
}

fn json_decode(lua: &Lua, text: Value) -> mlua::Result<Value> {
    let text = match text {
        Value::String(s) if !s.as_bytes().is_empty() => s,
        _ => return Err(arg_error(1, "json_decode", "expects JSON string")),
    };
    let json: Json = serde_json::from_slice(&text.as_bytes())
        .map_err(|e| mlua::Error::runtime(format!("not a valid JSON string: {e}")))?;
    convert::from_json(lua, &json)
}

/// Reads `table[field]` as an optional string, with Nakama's type errors.
fn opt_string(table: &Table, field: &str, function: &str) -> mlua::Result<Option<String>> {
    match table.raw_get::<Value>(field)? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_string_lossy())),
        _ => Err(arg_error(
            1,
            function,
            &format!("expects {field} to be string"),
        )),
    }
}

fn required_string(table: &Table, field: &str, function: &str) -> mlua::Result<String> {
    match opt_string(table, field, function)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(arg_error(
            1,
            function,
            &format!("expects {field} to be a non-empty string"),
        )),
    }
}

fn opt_user_id(table: &Table, function: &str) -> mlua::Result<Uuid> {
    match opt_string(table, "user_id", function)? {
        None => Ok(Uuid::nil()),
        Some(s) => Uuid::parse_str(&s)
            .map_err(|_| arg_error(1, function, "expects user_id to be a valid ID")),
    }
}

fn opt_permission(table: &Table, field: &str, function: &str) -> mlua::Result<Option<i32>> {
    match table.raw_get::<Value>(field)? {
        Value::Nil => Ok(None),
        Value::Integer(i) => Ok(Some(i as i32)),
        Value::Number(n) => Ok(Some(n as i32)),
        _ => Err(arg_error(
            1,
            function,
            &format!("expects {field} to be number"),
        )),
    }
}

/// The entries of an array-like argument, each a table.
fn entries(value: Value, function: &str, what: &str) -> mlua::Result<Vec<Table>> {
    let Value::Table(list) = value else {
        return Err(arg_error(
            1,
            function,
            &format!("expects a valid set of {what}"),
        ));
    };
    let mut out = Vec::new();
    for pair in list.pairs::<Value, Value>() {
        match pair? {
            (_, Value::Table(entry)) => out.push(entry),
            _ => {
                return Err(arg_error(
                    1,
                    function,
                    &format!("expects a valid set of {what}"),
                ));
            }
        }
    }
    Ok(out)
}

fn object_table(lua: &Lua, object: &metafi_storage::StorageObject) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 9)?;
    table.raw_set("key", object.key.as_str())?;
    table.raw_set("collection", object.collection.as_str())?;
    table.raw_set("user_id", object.user_id.to_string())?;
    table.raw_set("version", object.version.as_str())?;
    table.raw_set("permission_read", i64::from(object.permission_read))?;
    table.raw_set("permission_write", i64::from(object.permission_write))?;
    table.raw_set("create_time", object.create_time_ms / 1000)?;
    table.raw_set("update_time", object.update_time_ms / 1000)?;
    table.raw_set("value", json_text_to_table(lua, &object.value)?)?;
    Ok(table)
}

async fn storage_read(lua: Lua, keys: Value) -> mlua::Result<Table> {
    const NAME: &str = "storage_read";
    let mut ids = Vec::new();
    for entry in entries(keys, NAME, "keys")? {
        ids.push(ObjectId {
            collection: required_string(&entry, "collection", NAME)?,
            key: required_string(&entry, "key", NAME)?,
            user_id: opt_user_id(&entry, NAME)?,
        });
    }
    let objects = shared_nk(&lua)?
        .storage_read(ids)
        .await
        .map_err(|e| nk_error("failed to read storage objects", e))?;
    let list = lua.create_table_with_capacity(objects.len(), 0)?;
    for (i, object) in objects.iter().enumerate() {
        list.raw_set(i + 1, object_table(&lua, object)?)?;
    }
    Ok(list)
}

async fn storage_write(lua: Lua, objects: Value) -> mlua::Result<Table> {
    const NAME: &str = "storage_write";
    let mut writes = Vec::new();
    for entry in entries(objects, NAME, "data")? {
        let value = match entry.raw_get::<Value>("value")? {
            Value::Table(t) => convert::to_json(&Value::Table(t))
                .map_err(|e| arg_error(1, NAME, &format!("failed to convert value: {e}")))?,
            Value::Nil => return Err(arg_error(1, NAME, "expects value to be supplied")),
            _ => return Err(arg_error(1, NAME, "expects value to be table")),
        };
        writes.push(WriteInput {
            collection: required_string(&entry, "collection", NAME)?,
            key: required_string(&entry, "key", NAME)?,
            user_id: opt_user_id(&entry, NAME)?,
            value: value.to_string(),
            version: opt_string(&entry, "version", NAME)?.unwrap_or_default(),
            permission_read: opt_permission(&entry, "permission_read", NAME)?,
            permission_write: opt_permission(&entry, "permission_write", NAME)?,
        });
    }
    let acks = shared_nk(&lua)?
        .storage_write(writes)
        .await
        .map_err(|e| nk_error("failed to write storage objects", e))?;
    let list = lua.create_table_with_capacity(acks.len(), 0)?;
    for (i, ack) in acks.iter().enumerate() {
        let table = lua.create_table_with_capacity(0, 4)?;
        table.raw_set("key", ack.key.as_str())?;
        table.raw_set("collection", ack.collection.as_str())?;
        table.raw_set("user_id", ack.user_id.to_string())?;
        table.raw_set("version", ack.version.as_str())?;
        list.raw_set(i + 1, table)?;
    }
    Ok(list)
}

fn opt_uuid_arg(
    value: &Value,
    position: usize,
    function: &str,
    message: &str,
) -> mlua::Result<Option<Uuid>> {
    match value {
        Value::Nil => Ok(None),
        Value::String(s) if s.as_bytes().is_empty() => Ok(None),
        Value::String(s) => Uuid::parse_str(&s.to_string_lossy())
            .map(Some)
            .map_err(|_| arg_error(position, function, message)),
        _ => Err(arg_error(position, function, message)),
    }
}

async fn storage_list(
    lua: Lua,
    (user_id, collection, limit, cursor, caller_id): (Value, Value, Value, Value, Value),
) -> mlua::Result<(Table, Value)> {
    const NAME: &str = "storage_list";
    let owner = opt_uuid_arg(&user_id, 1, NAME, "expects empty or a valid user ID")?;
    let collection = match collection {
        Value::Nil => String::new(),
        Value::String(s) => s.to_string_lossy(),
        _ => return Err(arg_error(2, NAME, "string expected")),
    };
    let limit = match limit {
        Value::Integer(i) if i >= 0 => i as usize,
        Value::Number(n) if n >= 0.0 => n as usize,
        Value::Integer(_) | Value::Number(_) => {
            return Err(arg_error(3, NAME, "limit must not be negative"));
        }
        _ => return Err(arg_error(3, NAME, "number expected")),
    };
    let cursor = match cursor {
        Value::String(s) => Some(s.to_string_lossy()),
        _ => None,
    };
    let caller = opt_uuid_arg(
        &caller_id,
        5,
        NAME,
        "expects caller ID to be empty or a valid identifier",
    )?;
    let page = shared_nk(&lua)?
        .storage_list(caller, owner, &collection, limit, cursor.as_deref())
        .await
        .map_err(|e| nk_error("failed to list storage objects", e))?;
    let list = lua.create_table_with_capacity(page.objects.len(), 0)?;
    for (i, object) in page.objects.iter().enumerate() {
        list.raw_set(i + 1, object_table(&lua, object)?)?;
    }
    let cursor = match page.cursor {
        Some(c) if !c.is_empty() => Value::String(lua.create_string(c)?),
        _ => Value::Nil,
    };
    Ok((list, cursor))
}

async fn storage_delete(lua: Lua, keys: Value) -> mlua::Result<()> {
    const NAME: &str = "storage_delete";
    let mut deletes = Vec::new();
    for entry in entries(keys, NAME, "object IDs")? {
        deletes.push(DeleteInput {
            collection: required_string(&entry, "collection", NAME)?,
            key: required_string(&entry, "key", NAME)?,
            user_id: opt_user_id(&entry, NAME)?,
            version: opt_string(&entry, "version", NAME)?.unwrap_or_default(),
        });
    }
    shared_nk(&lua)?
        .storage_delete(deletes)
        .await
        .map_err(|e| nk_error("failed to delete storage objects", e))
}

fn user_table(lua: &Lua, user: &metafi_storage::User) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 12)?;
    table.raw_set("user_id", user.id.to_string())?;
    table.raw_set("username", user.username.as_str())?;
    table.raw_set("display_name", user.display_name.as_str())?;
    table.raw_set("avatar_url", user.avatar_url.as_str())?;
    table.raw_set("lang_tag", user.lang_tag.as_str())?;
    table.raw_set("location", user.location.as_str())?;
    table.raw_set("timezone", user.timezone.as_str())?;
    table.raw_set("online", false)?;
    table.raw_set("edge_count", 0)?;
    table.raw_set("create_time", user.create_time_ms / 1000)?;
    table.raw_set("update_time", user.update_time_ms / 1000)?;
    table.raw_set("metadata", json_text_to_table(lua, &user.metadata)?)?;
    Ok(table)
}

fn user_id_arg(value: &Value, position: usize, function: &str) -> mlua::Result<Uuid> {
    match value {
        Value::String(s) if !s.as_bytes().is_empty() => Uuid::parse_str(&s.to_string_lossy())
            .map_err(|_| arg_error(position, function, "invalid user id")),
        _ => Err(arg_error(position, function, "expects user id")),
    }
}

async fn account_get_id(lua: Lua, user_id: Value) -> mlua::Result<Table> {
    let id = user_id_arg(&user_id, 1, "account_get_id")?;
    let account = shared_nk(&lua)?
        .account_get_id(id)
        .await
        .map_err(|e| nk_error(&format!("failed to get account for user_id {id}"), e))?;
    let user = &account.user;
    // The account table repeats the user's fields at the top level, as Nakama's does.
    let table = user_table(&lua, user)?;
    table.raw_set("user", user_table(&lua, user)?)?;
    table.raw_set("wallet", json_text_to_table(&lua, &user.wallet)?)?;
    if let Some(email) = &user.email {
        table.raw_set("email", email.as_str())?;
    }
    if !account.device_ids.is_empty() {
        let devices = lua.create_table_with_capacity(account.device_ids.len(), 0)?;
        for (i, device) in account.device_ids.iter().enumerate() {
            let entry = lua.create_table_with_capacity(0, 1)?;
            entry.raw_set("id", device.as_str())?;
            devices.raw_set(i + 1, entry)?;
        }
        table.raw_set("devices", devices)?;
    }
    if let Some(custom_id) = &user.custom_id {
        table.raw_set("custom_id", custom_id.as_str())?;
    }
    if let Some(ms) = user.verify_time_ms {
        table.raw_set("verify_time", ms / 1000)?;
    }
    if let Some(ms) = user.disable_time_ms {
        table.raw_set("disable_time", ms / 1000)?;
    }
    Ok(table)
}

async fn users_get_id(lua: Lua, (user_ids, _facebook_ids): (Value, Value)) -> mlua::Result<Table> {
    const NAME: &str = "users_get_id";
    let mut ids = Vec::new();
    match user_ids {
        Value::Nil => {}
        Value::Table(list) => {
            for pair in list.pairs::<Value, Value>() {
                let (_, value) = pair?;
                let Value::String(s) = value else {
                    return Err(arg_error(1, NAME, "each user id must be a string"));
                };
                let id = Uuid::parse_str(&s.to_string_lossy())
                    .map_err(|_| arg_error(1, NAME, "each user id must be a valid id string"))?;
                ids.push(id);
            }
        }
        _ => return Err(arg_error(1, NAME, "invalid user ids list")),
    }
    // Facebook ids (argument 2) never match: this server has no Facebook sign-in.
    let users = shared_nk(&lua)?
        .users_get_id(ids)
        .await
        .map_err(|e| nk_error("failed to get users", e))?;
    let list = lua.create_table_with_capacity(users.len(), 0)?;
    for (i, user) in users.iter().enumerate() {
        list.raw_set(i + 1, user_table(&lua, user)?)?;
    }
    Ok(list)
}

fn match_table(lua: &Lua, info: &MatchInfo) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 6)?;
    table.raw_set("match_id", info.match_id.as_str())?;
    table.raw_set("authoritative", info.authoritative)?;
    table.raw_set("label", info.label.as_deref())?;
    table.raw_set("size", info.size)?;
    table.raw_set("tick_rate", info.tick_rate)?;
    table.raw_set("handler_name", info.handler_name.as_deref())?;
    Ok(table)
}

async fn match_create(lua: Lua, (module, params): (Value, Value)) -> mlua::Result<String> {
    const NAME: &str = "match_create";
    let module = match module {
        Value::String(s) if !s.as_bytes().is_empty() => s.to_string_lossy(),
        _ => return Err(arg_error(1, NAME, "expects module name")),
    };
    let params = match &params {
        Value::Nil => serde_json::Map::new(),
        Value::Table(_) => match convert::to_json(&params)? {
            Json::Object(map) => map,
            _ => {
                return Err(arg_error(
                    2,
                    NAME,
                    "expects params to be nil or a table of key-value pairs",
                ));
            }
        },
        _ => {
            return Err(arg_error(
                2,
                NAME,
                "expects params to be nil or a table of key-value pairs",
            ));
        }
    };
    shared_nk(&lua)?
        .match_create(&module, params)
        .await
        .map_err(|e| nk_error("error creating match", e))
}

async fn match_get(lua: Lua, id: Value) -> mlua::Result<Value> {
    let Value::String(id) = id else {
        return Err(arg_error(1, "match_get", "string expected"));
    };
    let found = shared_nk(&lua)?
        .match_get(&id.to_string_lossy())
        .await
        .map_err(|e| nk_error("failed to get match", e))?;
    match found {
        Some(info) => Ok(Value::Table(match_table(&lua, &info)?)),
        None => Ok(Value::Nil),
    }
}

async fn match_list(
    lua: Lua,
    (limit, authoritative, label, min_size, max_size, query): (
        Value,
        Value,
        Value,
        Value,
        Value,
        Value,
    ),
) -> mlua::Result<Table> {
    const NAME: &str = "match_list";
    let number = |value: &Value, position: usize, what: &str| -> mlua::Result<Option<i64>> {
        match value {
            Value::Nil => Ok(None),
            Value::Integer(i) => Ok(Some(*i)),
            Value::Number(n) => Ok(Some(*n as i64)),
            _ => Err(arg_error(
                position,
                NAME,
                &format!("expects {what} number or nil"),
            )),
        }
    };
    let text = |value: &Value, position: usize, what: &str| -> mlua::Result<Option<String>> {
        match value {
            Value::Nil => Ok(None),
            Value::String(s) => Ok(Some(s.to_string_lossy())),
            _ => Err(arg_error(
                position,
                NAME,
                &format!("expects {what} string or nil"),
            )),
        }
    };
    let query = MatchListQuery {
        limit: number(&limit, 1, "limit")?.unwrap_or(1).max(0) as usize,
        authoritative: match authoritative {
            Value::Nil => None,
            Value::Boolean(b) => Some(b),
            _ => {
                return Err(arg_error(
                    2,
                    NAME,
                    "expects authoritative true/false or nil",
                ));
            }
        },
        label: text(&label, 3, "label")?,
        min_size: number(&min_size, 4, "minimum size")?.map(|n| n as i32),
        max_size: number(&max_size, 5, "maximum size")?.map(|n| n as i32),
        query: text(&query, 6, "query")?,
    };
    let matches = shared_nk(&lua)?
        .match_list(query)
        .await
        .map_err(|e| nk_error("failed to list matches", e))?;
    let list = lua.create_table_with_capacity(matches.len(), 0)?;
    for (i, info) in matches.iter().enumerate() {
        list.raw_set(i + 1, match_table(&lua, info)?)?;
    }
    Ok(list)
}

async fn match_signal(lua: Lua, (id, data): (Value, Value)) -> mlua::Result<String> {
    let Value::String(id) = id else {
        return Err(arg_error(1, "match_signal", "string expected"));
    };
    let data = match data {
        Value::String(s) => s.to_string_lossy(),
        _ => String::new(),
    };
    shared_nk(&lua)?
        .match_signal(&id.to_string_lossy(), data)
        .await
        .map_err(|e| nk_error("failed to signal match", e))
}

pub(super) fn string_lists(lua: &Lua, map: &HashMap<String, Vec<String>>) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, map.len())?;
    for (key, values) in map {
        let list = lua.create_table_with_capacity(values.len(), 0)?;
        for (i, value) in values.iter().enumerate() {
            list.raw_set(i + 1, value.as_str())?;
        }
        table.raw_set(key.as_str(), list)?;
    }
    Ok(table)
}

//! The `nakama` module's hook registrations: `register_req_before`, `register_req_after`,
//! `register_rt_before`, `register_rt_after`, `register_shutdown`,
//! `register_leaderboard_reset`, `register_tournament_end` and `register_tournament_reset`,
//! `register_storage_index` and `register_storage_index_filter`, with Nakama's argument
//! errors.
//!
//! A hook is stored like an RPC, under a reserved id ([`hook_key`]). The host calls it with
//! the request (and answer) as values (`EngineVm::call_hook`): they become tables straight
//! away, the module's function is called with `(context, payload)` (after hooks: `(context,
//! output, input)`, as Nakama) and what a before hook returns is read back as a value
//! (nothing drops the call). Called as an RPC with JSON text, a small Lua wrapper does the same
//! through text.

use metafi_core::HookKind;
use metafi_core::storage_index::IndexDefinition;
use metafi_runtime::hooks::{
    HookMode, LEADERBOARD_RESET_KEY, SHUTDOWN_KEY, TOURNAMENT_END_KEY, TOURNAMENT_RESET_KEY,
    hook_key,
};
use metafi_runtime::host::RegisteredIndex;
use metafi_runtime::nk_api::Naming;
use metafi_runtime::storage_indexes::filter_key;
use mlua::{Function, Lua, Table, Value};

use super::VmShared;
use super::convert;

/// Adds the registration functions to the `nakama` module table.
pub(super) fn install(lua: &Lua, nk: &Table) -> mlua::Result<()> {
    for (name, mode, kind) in [
        ("register_req_before", HookMode::Before, HookKind::Api),
        ("register_req_after", HookMode::After, HookKind::Api),
        ("register_rt_before", HookMode::Before, HookKind::Rt),
        ("register_rt_after", HookMode::After, HookKind::Rt),
    ] {
        let function = lua.create_function(move |lua, (function, id): (Value, Value)| {
            register_hook(lua, name, mode, kind, function, id)
        })?;
        nk.raw_set(name, function)?;
    }
    nk.raw_set(
        "register_shutdown",
        lua.create_function(|lua, function: Value| register_shutdown(lua, function))?,
    )?;
    nk.raw_set(
        "register_leaderboard_reset",
        lua.create_function(|lua, function: Value| register_leaderboard_reset(lua, function))?,
    )?;
    for (name, key) in [
        ("register_tournament_end", TOURNAMENT_END_KEY),
        ("register_tournament_reset", TOURNAMENT_RESET_KEY),
    ] {
        let function = lua.create_function(move |lua, function: Value| {
            register_tournament_function(lua, name, key, function)
        })?;
        nk.raw_set(name, function)?;
    }
    nk.raw_set(
        "register_storage_index",
        lua.create_function(|lua, args: mlua::MultiValue| register_storage_index(lua, &args))?,
    )?;
    nk.raw_set(
        "register_storage_index_filter",
        lua.create_function(|lua, (name, function): (Value, Value)| {
            register_storage_index_filter(lua, name, function)
        })?,
    )?;
    Ok(())
}

fn arg_error(position: usize, function: &str, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!(
        "bad argument #{position} to {function} ({message})"
    ))
}

fn shared(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, VmShared>> {
    lua.app_data_ref::<VmShared>()
        .ok_or_else(|| mlua::Error::runtime("the nakama module is not set up in this Lua state"))
}

/// The module being loaded, or Nakama's error for a registration made later.
fn loading_module(lua: &Lua, function: &str) -> mlua::Result<String> {
    shared(lua)?
        .registry
        .borrow()
        .loading
        .clone()
        .ok_or_else(|| {
            mlua::Error::runtime(format!(
                "nk.{function} can only be called while modules load (at the top level of a module)"
            ))
        })
}

fn register_hook(
    lua: &Lua,
    name: &'static str,
    mode: HookMode,
    kind: HookKind,
    function: Value,
    id: Value,
) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(arg_error(1, name, "function expected"));
    };
    let id = match id {
        Value::String(s) if !s.as_bytes().is_empty() => s.to_string_lossy(),
        _ => {
            let what = match kind {
                HookKind::Api => "expects method name",
                HookKind::Rt => "expects message name",
            };
            return Err(arg_error(2, name, what));
        }
    };
    let module = loading_module(lua, name)?;
    let wrapper = wrap(lua, mode, function.clone())?;
    let shared = shared(lua)?;
    let key = hook_key(mode, kind, &id);
    let mut registry = shared.registry.borrow_mut();
    // The function itself, for the host's hook calls (`LuaVm::run_hook`: values in, values
    // out); the wrapper serves the same hook called as an RPC with JSON text.
    registry.hooks.insert(key.clone(), (function, mode));
    registry.rpcs.insert(key, (wrapper, module));
    Ok(())
}

fn register_shutdown(lua: &Lua, function: Value) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(arg_error(1, "register_shutdown", "function expected"));
    };
    let module = loading_module(lua, "register_shutdown")?;
    let wrapper: Function = lua
        .load("local fn = ...\nreturn function(ctx, payload)\n  fn(ctx)\n  return ''\nend")
        .set_name("=metafi-shutdown")
        .call(function)?;
    shared(lua)?
        .registry
        .borrow_mut()
        .rpcs
        .insert(SHUTDOWN_KEY.to_owned(), (wrapper, module));
    Ok(())
}

/// `register_leaderboard_reset(fn)`: `fn(context, leaderboard, reset)` when a leaderboard's
/// period ends; the host passes `[leaderboard, reset]` as JSON.
fn register_leaderboard_reset(lua: &Lua, function: Value) -> mlua::Result<()> {
    let name = "register_leaderboard_reset";
    let Value::Function(function) = function else {
        return Err(arg_error(1, name, "function expected"));
    };
    let module = loading_module(lua, name)?;
    let decode = lua.create_function(|lua, text: mlua::LuaString| {
        let json: serde_json::Value =
            serde_json::from_str(&text.to_string_lossy()).map_err(|e| {
                mlua::Error::runtime(format!("failed to decode the reset payload: {e}"))
            })?;
        convert::from_json(lua, &json)
    })?;
    let wrapper: Function = lua
        .load("local decode, fn = ...\nreturn function(ctx, payload)\n  local both = decode(payload)\n  fn(ctx, both[1], both[2])\n  return ''\nend")
        .set_name("=metafi-leaderboard-reset")
        .call((decode, function))?;
    shared(lua)?
        .registry
        .borrow_mut()
        .rpcs
        .insert(LEADERBOARD_RESET_KEY.to_owned(), (wrapper, module));
    Ok(())
}

/// `register_tournament_end(fn)` / `register_tournament_reset(fn)`: `fn(context, tournament,
/// end, reset)` when a tournament's active window / period ends; the host passes
/// `[tournament, end, reset]` as JSON.
fn register_tournament_function(
    lua: &Lua,
    name: &'static str,
    key: &'static str,
    function: Value,
) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(arg_error(1, name, "function expected"));
    };
    let module = loading_module(lua, name)?;
    let decode = lua.create_function(|lua, text: mlua::LuaString| {
        let json: serde_json::Value =
            serde_json::from_str(&text.to_string_lossy()).map_err(|e| {
                mlua::Error::runtime(format!("failed to decode the tournament payload: {e}"))
            })?;
        convert::from_json(lua, &json)
    })?;
    let wrapper: Function = lua
        .load("local decode, fn = ...\nreturn function(ctx, payload)\n  local all = decode(payload)\n  fn(ctx, all[1], all[2], all[3])\n  return ''\nend")
        .set_name("=metafi-tournament-callback")
        .call((decode, function))?;
    shared(lua)?
        .registry
        .borrow_mut()
        .rpcs
        .insert(key.to_owned(), (wrapper, module));
    Ok(())
}

/// The wrapper the host calls: JSON text in, JSON text (or `""` for nil) out.
fn wrap(lua: &Lua, mode: HookMode, function: Function) -> mlua::Result<Function> {
    let decode = lua.create_function(|lua, text: mlua::LuaString| {
        let json: serde_json::Value = serde_json::from_str(&text.to_string_lossy())
            .map_err(|e| mlua::Error::runtime(format!("failed to decode the hook payload: {e}")))?;
        convert::from_json(lua, &json)
    })?;
    let encode = lua.create_function(|_, value: Value| {
        let json = super::nk_value::to_nk(
            &value,
            0,
            &mut metafi_runtime::nk_api::ValueBudget::default(),
        )?
        .to_go_json(Naming::Snake)
        .map_err(mlua::Error::runtime)?;
        Ok(json.to_string())
    })?;
    let source = match mode {
        HookMode::Before => {
            "local decode, encode, fn = ...\nreturn function(ctx, payload)\n  local result = fn(ctx, decode(payload))\n  if result == nil then return '' end\n  return encode(result)\nend"
        }
        HookMode::After => {
            "local decode, encode, fn = ...\nreturn function(ctx, payload)\n  local both = decode(payload)\n  fn(ctx, both[1], both[2])\n  return ''\nend"
        }
    };
    lua.load(source)
        .set_name("=metafi-hook")
        .call((decode, encode, function))
}

/// `register_storage_index(name, collection, key, fields, sortable_fields, max_entries,
/// index_only?)`, Nakama's argument checks; the index is created once every runtime loaded.
fn register_storage_index(lua: &Lua, args: &mlua::MultiValue) -> mlua::Result<()> {
    let name = "register_storage_index";
    let string = |position: usize| match args.get(position - 1) {
        Some(Value::String(s)) => Ok(s.to_string_lossy()),
        _ => Err(arg_error(position, name, "string expected")),
    };
    let strings = |position: usize| -> mlua::Result<Vec<String>> {
        let Some(Value::Table(table)) = args.get(position - 1) else {
            return Err(arg_error(position, name, "table expected"));
        };
        let mut out = Vec::new();
        for pair in table.pairs::<Value, Value>() {
            match pair?.1 {
                Value::String(s) => out.push(s.to_string_lossy()),
                _ => return Err(arg_error(position, name, "expects each field to be string")),
            }
        }
        Ok(out)
    };
    let index = string(1)?;
    let collection = string(2)?;
    let key = string(3)?;
    let fields = strings(4)?;
    let sortable_fields = strings(5)?;
    let max_entries = match args.get(5) {
        Some(Value::Integer(n)) => *n,
        Some(Value::Number(n)) if n.fract() == 0.0 => *n as i64,
        _ => return Err(arg_error(6, name, "number expected")),
    };
    let index_only = match args.get(6) {
        None | Some(Value::Nil) => false,
        Some(Value::Boolean(b)) => *b,
        _ => return Err(arg_error(7, name, "boolean expected")),
    };
    let module = loading_module(lua, name)?;
    let definition = IndexDefinition {
        name: index,
        collection,
        key,
        fields,
        sortable_fields,
        max_entries,
        index_only,
    };
    let mut problem = definition.check().err();
    let shared = shared(lua)?;
    let mut registry = shared.registry.borrow_mut();
    if problem.is_none()
        && registry
            .storage_indexes
            .iter()
            .any(|r| r.definition.name == definition.name)
    {
        problem = Some(format!(
            "cannot create index: index with name {:?} already exists",
            definition.name
        ));
    }
    if let Some(problem) = problem {
        return Err(mlua::Error::runtime(format!(
            "failed to create storage index: {problem}"
        )));
    }
    registry
        .storage_indexes
        .push(RegisteredIndex { definition, module });
    Ok(())
}

/// `register_storage_index_filter(name, fn)`: `fn(context, write)` returns whether the object
/// enters index `name`. The host passes the write as JSON; the wrapper answers `"true"`,
/// `"false"`, `""` (nothing returned) or `"?"` (not a boolean).
fn register_storage_index_filter(lua: &Lua, index: Value, function: Value) -> mlua::Result<()> {
    let name = "register_storage_index_filter";
    let Value::String(index) = index else {
        return Err(arg_error(1, name, "string expected"));
    };
    let Value::Function(function) = function else {
        return Err(arg_error(2, name, "function expected"));
    };
    let module = loading_module(lua, name)?;
    let decode = lua.create_function(|lua, text: mlua::LuaString| {
        let json: serde_json::Value =
            serde_json::from_str(&text.to_string_lossy()).map_err(|e| {
                mlua::Error::runtime(format!("failed to decode the storage write: {e}"))
            })?;
        convert::from_json(lua, &json)
    })?;
    let wrapper: Function = lua
        .load("local decode, fn = ...\nreturn function(ctx, payload)\n  local r = fn(ctx, decode(payload))\n  if r == nil then return '' end\n  if type(r) ~= 'boolean' then return '?' end\n  return r and 'true' or 'false'\nend")
        .set_name("=metafi-storage-index-filter")
        .call((decode, function))?;
    shared(lua)?
        .registry
        .borrow_mut()
        .rpcs
        .insert(filter_key(&index.to_string_lossy()), (wrapper, module));
    Ok(())
}

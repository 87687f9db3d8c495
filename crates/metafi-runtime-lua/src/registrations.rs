//! The `nakama` module's hook registrations: `register_req_before`, `register_req_after`,
//! `register_rt_before`, `register_rt_after`, `register_shutdown`,
//! `register_leaderboard_reset`, `register_tournament_end` and `register_tournament_reset`,
//! with Nakama's argument errors, and the registrations of features MetaFi does not serve yet
//! (storage index filters), which load fine and are reported once at start.
//!
//! A hook is stored like an RPC, under a reserved id ([`hook_key`]) the host calls with the
//! request as JSON; a small Lua wrapper decodes it into a table, calls the module's function
//! with `(context, payload)` (after hooks: `(context, output, input)`, as Nakama) and encodes
//! what a before hook returns (nothing: `""`, which drops the call).

use metafi_core::HookKind;
use metafi_runtime::hooks::{
    HookMode, LEADERBOARD_RESET_KEY, SHUTDOWN_KEY, TOURNAMENT_END_KEY, TOURNAMENT_RESET_KEY,
    hook_key, warn_unserved_once,
};
use metafi_runtime::nk_api::Naming;
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
    // `register_storage_index_filter(name, fn)` takes the function second.
    let name = "register_storage_index_filter";
    let function = lua.create_function(move |lua, args: mlua::MultiValue| {
        if !matches!(args.get(1), Some(Value::Function(_))) {
            return Err(arg_error(2, name, "function expected"));
        }
        unserved(lua, name, "storage index filters")
    })?;
    nk.raw_set(name, function)?;
    nk.raw_set(
        "register_storage_index",
        lua.create_function(|lua, args: mlua::MultiValue| {
            let name = "register_storage_index";
            for (position, expected) in [(1, "string"), (2, "string"), (3, "string")] {
                if !matches!(args.get(position - 1), Some(Value::String(_))) {
                    return Err(arg_error(position, name, &format!("{expected} expected")));
                }
            }
            if !matches!(args.get(3), Some(Value::Table(_))) {
                return Err(arg_error(4, name, "table expected"));
            }
            unserved(lua, name, "storage indexes")
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
    let wrapper = wrap(lua, mode, function)?;
    let shared = shared(lua)?;
    shared
        .registry
        .borrow_mut()
        .rpcs
        .insert(hook_key(mode, kind, &id), (wrapper, module));
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

/// A registration of a feature MetaFi does not serve: accepted, reported once.
fn unserved(lua: &Lua, registration: &'static str, feature: &'static str) -> mlua::Result<()> {
    let module = loading_module(lua, registration)?;
    warn_unserved_once("lua", &module, registration, feature);
    Ok(())
}

//! The `nakama` module (`local nk = require("nakama")`): the functions that need this engine's
//! state (registrations, `run_once`, the logger), then every row of the host's `nk` binding
//! table (`nk_binding.rs`). Argument errors read `bad argument #N to name (…)` as in
//! gopher-lua; failed `nk` calls raise a string error (`failed to read storage objects: …`),
//! which is code 13 unless the script catches it.

use std::rc::Rc;

use metafi_runtime::context::{CallContext, ExecutionMode};
use metafi_runtime::nk::{LogLevel, Nk};
use mlua::{Lua, Table, Value};

use super::VmShared;

/// Puts the `nakama` module in `package.preload`; `deadline` is the VM's deadline cell, which
/// the `nk` functions check.
pub(super) fn install(lua: &Lua, deadline: &Rc<crate::budget::Deadline>) -> mlua::Result<()> {
    let nk = lua.create_table()?;
    nk.raw_set("register_rpc", located(lua, register_rpc)?)?;
    super::registrations::install(lua, &nk)?;
    nk.raw_set(
        "register_matchmaker_matched",
        located(lua, super::lua_match_handler::register_matchmaker_matched)?,
    )?;
    nk.raw_set("run_once", located_async(lua, run_once)?)?;
    nk.raw_set("storage_write_retry", super::storage_retry::function(lua)?)?;
    nk.raw_set("get_context", located(lua, get_context)?)?;
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
    // The binding table last: a row replaces an engine function of the same name.
    crate::nk_binding::install(lua, &nk, deadline)?;
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
    let headers = &request.headers;
    table.raw_set("headers", string_lists(lua, headers.len(), headers.iter())?)?;
    let query = &request.query;
    table.raw_set("query_params", string_lists(lua, query.len(), query)?)?;
    if let Some(user) = &request.user {
        table.raw_set("user_id", user.user_id.to_string())?;
        table.raw_set("username", user.username.as_str())?;
        // No `vars` for a session without any, as Nakama's (its tokens leave them out).
        if !user.vars.is_empty() {
            let vars = lua.create_table_with_capacity(0, user.vars.len())?;
            for (k, v) in &user.vars {
                vars.raw_set(k.as_str(), v.as_str())?;
            }
            table.raw_set("vars", vars)?;
        }
        table.raw_set("user_session_exp", user.expires_at)?;
        if !user.session_id.is_nil() {
            table.raw_set("session_id", user.session_id.to_string())?;
            table.raw_set("lang", request.lang())?;
        }
    }
    if let Some(ip) = request.client_ip {
        table.raw_set("client_ip", ip.to_string())?;
    }
    if let Some(port) = request.client_port {
        table.raw_set("client_port", metafi_runtime::port_text(port, &mut [0; 5]))?;
    }
    if let Some(trace_id) = request.trace_id {
        table.raw_set("trace_id", trace_id.to_string())?;
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
    // Lua calls interleave on one VM (each a coroutine), so a line cannot tell which call
    // wrote it from VM state as the JavaScript engine does; it names the module only.
    shared.nk.log(level, "lua", module, None, message);
}

/// A Rust function whose runtime errors carry the calling Lua position (`path:line: `), as
/// gopher-lua's `RaiseError` does; the host strips it again for clients.
pub(crate) fn located<A, R, F>(lua: &Lua, function: F) -> mlua::Result<mlua::Function>
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

pub(crate) fn located_async<A, R, F, Fut>(lua: &Lua, function: F) -> mlua::Result<mlua::Function>
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

/// Frames looked through for the script's position: the caller, then a few wrappers
/// (`pcall`, the sandbox's).
const SCRIPT_FRAMES: usize = 4;

/// `file:line: ` of the innermost script frame calling the host function: the direct caller,
/// or the script line that handed the function to `pcall` and the like (C frames and the
/// sandbox's wrappers are skipped), as Nakama positions errors.
fn script_position(lua: &Lua) -> Option<String> {
    (1..=SCRIPT_FRAMES).find_map(|level| {
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

/// [`script_position`] for a C function running on `state` (the innermost frame, level 0,
/// is the C function itself, as a Rust callback's is in mlua).
///
/// # Safety
/// `state` is the state of a running C function; only its call stack is read.
#[allow(unsafe_code)]
pub(crate) unsafe fn script_position_raw(state: *mut mlua::ffi::lua_State) -> Option<String> {
    use mlua::ffi;
    (1..=SCRIPT_FRAMES as std::ffi::c_int).find_map(|level| {
        // SAFETY: `lua_getstack` and `lua_getinfo` read the call stack into `debug`; the
        // strings it points to are static or owned by the state, copied before it goes on.
        unsafe {
            let mut debug: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(state, level, &mut debug) == 0
                || ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut debug) == 0
                || debug.currentline < 0
            {
                return None;
            }
            let file = if debug.source.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(debug.source)
                    .to_string_lossy()
                    .trim_start_matches('@')
                    .to_owned()
            };
            Some(format!("{file}:{}: ", debug.currentline))
        }
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

pub(crate) fn shared_nk(lua: &Lua) -> mlua::Result<Nk> {
    Ok(shared(lua)?.nk.clone())
}

fn arg_error(position: usize, function: &str, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!(
        "bad argument #{position} to {function} ({message})"
    ))
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

/// `nk.get_context()`: a context as module loading sees it (node, version, env, mode
/// `run_once`, no user), as Nakama builds it; not the context of the call in progress.
fn get_context(lua: &Lua, _: mlua::MultiValue) -> mlua::Result<Table> {
    let ctx = {
        let shared = shared(lua)?;
        CallContext::load(shared.nk.node().clone(), shared.nk.env().clone())
    };
    context_table(lua, &ctx)
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

/// Headers or query parameters as `ctx` shows them: a table of name → list of values.
pub(super) fn string_lists<K, L, V>(
    lua: &Lua,
    names: usize,
    entries: impl IntoIterator<Item = (K, L)>,
) -> mlua::Result<Table>
where
    K: AsRef<str>,
    L: AsRef<[V]>,
    V: AsRef<str>,
{
    let table = lua.create_table_with_capacity(0, names)?;
    for (key, values) in entries {
        let values = values.as_ref();
        let list = lua.create_table_with_capacity(values.len(), 0)?;
        for (i, value) in values.iter().enumerate() {
            list.raw_set(i + 1, value.as_ref())?;
        }
        table.raw_set(key.as_ref(), list)?;
    }
    Ok(table)
}

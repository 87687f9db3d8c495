//! What Lua scripts may touch. Loaded libraries: base, table, string, math, bit, package, and
//! an `os` cut down to `time`, `clock`, `date`, `difftime` (as Nakama keeps). Not loaded: `io`,
//! `debug`, `ffi`, `jit`. Removed: `dofile`, `loadfile`, `package.loadlib`, `string.dump`, file
//! and C searchers of `require` (only `package.preload`, which holds the modules of
//! `runtime.path` and `nakama`). `load`/`loadstring` accept source text only: LuaJIT does not
//! verify bytecode. `print` writes to the server log.
//!
//! Budget: `pcall`, `xpcall` and `coroutine.resume` are wrapped so that an error caught after
//! the running call's deadline is raised again; a script cannot swallow its own timeout.

use mlua::{Function, Lua, Table, Value};

/// Applies the sandbox and returns the call entry `(fn, payload, ctx fields…) → ok, result`
/// (see `WRAPPERS`), which calls with the original `pcall` so that error tables
/// (`error({msg, code})`) reach the host intact. `over_deadline` says whether the running call
/// is past its deadline.
pub(super) fn apply(
    lua: &Lua,
    over_deadline: impl Fn() -> bool + 'static,
) -> mlua::Result<Function> {
    let globals = lua.globals();
    for name in ["dofile", "loadfile"] {
        globals.raw_set(name, Value::Nil)?;
    }

    let os: Table = globals.raw_get("os")?;
    let safe_os = lua.create_table()?;
    for name in ["time", "clock", "date", "difftime"] {
        safe_os.raw_set(name, os.raw_get::<Value>(name)?)?;
    }
    globals.raw_set("os", safe_os)?;

    let string: Table = globals.raw_get("string")?;
    string.raw_set("dump", Value::Nil)?;

    let package: Table = globals.raw_get("package")?;
    package.raw_set("path", "")?;
    package.raw_set("cpath", "")?;
    package.raw_set("loadlib", Value::Nil)?;
    let loaders: Table = package.raw_get("loaders")?;
    let preload_searcher: Value = loaders.raw_get(1)?;
    let only_preload = lua.create_table()?;
    only_preload.raw_set(1, preload_searcher)?;
    package.raw_set("loaders", only_preload)?;

    let print = lua.create_function(|lua, args: mlua::Variadic<Value>| {
        let text = args
            .iter()
            .map(|v| match v {
                Value::String(s) => s.to_string_lossy(),
                other => other
                    .to_string()
                    .unwrap_or_else(|_| other.type_name().to_owned()),
            })
            .collect::<Vec<_>>()
            .join("\t");
        super::nakama::log(lua, crate::nk::LogLevel::Info, &text);
        Ok(())
    })?;
    globals.raw_set("print", print)?;

    let over = lua.create_function(move |_, ()| Ok(over_deadline()))?;
    lua.load(WRAPPERS)
        .set_name("=metafi-sandbox")
        .call::<Function>(over)
}

/// Runs once per VM with the deadline check as its argument; returns the call entry.
const WRAPPERS: &str = r#"
local over = ...
local raw_pcall, raw_xpcall, raw_error = pcall, xpcall, error
local raw_resume = coroutine.resume
local raw_load, raw_loadstring = load, loadstring
local type, sub = type, string.sub

local function check(ok, ...)
  if not ok and over() then raw_error((...), 0) end
  return ok, ...
end

pcall = function(f, ...) return check(raw_pcall(f, ...)) end
xpcall = function(f, handler, ...) return check(raw_xpcall(f, handler, ...)) end
coroutine.resume = function(co, ...) return check(raw_resume(co, ...)) end

local function text_only(chunk)
  if type(chunk) == "string" and sub(chunk, 1, 1) == "\27" then
    return nil, "binary chunks are not allowed"
  end
  return chunk
end

loadstring = function(chunk, name)
  local ok, why = text_only(chunk)
  if not ok then return nil, why end
  return raw_loadstring(chunk, name)
end

load = function(chunk, name, mode, env)
  if type(chunk) == "string" then
    local ok, why = text_only(chunk)
    if not ok then return nil, why end
    return raw_load(chunk, name, "t", env)
  end
  return raw_load(chunk, name, "t", env)
end

-- Builds the call's ctx in Lua (one table constructor instead of a host call per field) and
-- calls the function with the original pcall, so error tables reach the host intact.
return function(fn, payload, env, mode, node, version, headers, query, user_id, username, vars,
                session_exp, session_id, client_ip)
  local ctx = {
    env = env, execution_mode = mode, node = node, version = version,
    headers = headers or {}, query_params = query or {},
    user_id = user_id, username = username, vars = vars, user_session_exp = session_exp,
    session_id = session_id, client_ip = client_ip,
  }
  return raw_pcall(fn, ctx, payload)
end
"#;

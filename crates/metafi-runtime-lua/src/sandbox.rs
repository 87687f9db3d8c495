//! What Lua scripts may touch. Loaded libraries: base, table, string, math, bit, package, and
//! an `os` cut down to `time`, `clock`, `date`, `difftime` (as Nakama keeps). Not loaded: `io`,
//! `debug`, `ffi`, `jit`. Removed: `dofile`, `loadfile`, `package.loadlib`, `string.dump`, file
//! and C searchers of `require` (only `package.preload`, which holds the modules of
//! `runtime.path` and `nakama`). `load`/`loadstring` accept source text only: LuaJIT does not
//! verify bytecode. `print` writes to the server log.
//!
//! Also removed: `newproxy` (its `__gc` finalisers run with the budget hook off, so a looping
//! finaliser could never be stopped). `collectgarbage` accepts only `"collect"`, `"count"` and
//! `"step"`: a call cannot stop or retune the collector for the calls after it.
//!
//! Budget: `pcall`, `xpcall` and `coroutine.resume` are wrapped so that an error caught after
//! the running call's deadline is raised again; a script cannot swallow its own timeout. An
//! `xpcall` message handler is not called once the deadline has passed (LuaJIT runs a handler
//! for an error raised by the budget hook with the hook off, so a loop in it would never end).
//! The pattern functions of `string` are replaced by a bounded matcher (`super::strings`).
//! The standard C functions whose running time grows with their input check the deadline
//! when called (`super::c_functions`), so a loop of long C calls stops within one call.
//!
//! Frozen state ([`freeze`], after every module has loaded): the standard library tables
//! (`string`, `table`, `math`, `os`, `bit`, `coroutine`, `package` with `loaded`, `preload` and
//! `loaders`), the `nakama` module, the string metatable and every global that existed before
//! the modules loaded (the library functions) are read-only; writing to them raises
//! "cannot set '…': read-only". Globals the modules created stay writable, as in Nakama.
//! `setfenv(0, …)` (the running coroutine's globals, and coroutines are reused) is refused.

use mlua::{Function, Lua, Table, Value};

/// Applies the sandbox and returns the maker of the call entry: `(env, node, version) →
/// entry`, the entry being `(fn, mode, payload, after, input, ctx fields…) → ok, result` (see
/// `WRAPPERS` and `call_entry.rs`), which calls with the original `pcall` so that error tables
/// (`error({msg, code})`) reach the host intact. `over_deadline` says whether the running call
/// is past its deadline.
pub(super) fn apply(
    lua: &Lua,
    over_deadline: super::strings::OverDeadline,
) -> mlua::Result<Function> {
    let globals = lua.globals();
    for name in ["dofile", "loadfile", "newproxy"] {
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
        super::nakama::log(lua, metafi_runtime::nk::LogLevel::Info, &text);
        Ok(())
    })?;
    globals.raw_set("print", print)?;

    let over = lua.create_function(move |_, ()| Ok((*over_deadline)()))?;
    let plain = lua.create_function(|lua, value: Value| plain_error(lua, value))?;
    lua.load(WRAPPERS)
        .set_name("=metafi-sandbox")
        .call::<Function>((over, plain))
}

/// What a script's `pcall`, `xpcall` handler or `coroutine.resume` sees of an error raised by
/// a host function (`nk.json_decode`, a bad argument): its message, one line with the script's
/// position (`m.lua:8: not a valid JSON string: …`), as in Nakama — not mlua's error object,
/// whose text carries a multi-line stack traceback that would reach clients when re-raised.
/// Memory errors stay objects, so a re-raised one is still reported as out of memory.
fn plain_error(lua: &Lua, value: Value) -> mlua::Result<Value> {
    match &value {
        Value::Error(error) if !is_memory_error(error) => Ok(Value::String(
            lua.create_string(super::innermost_message(error))?,
        )),
        _ => Ok(value),
    }
}

fn is_memory_error(error: &mlua::Error) -> bool {
    match error {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            is_memory_error(cause)
        }
        mlua::Error::MemoryError(_) => true,
        _ => false,
    }
}

/// Runs once per VM with the deadline check as its argument; returns the call entry.
const WRAPPERS: &str = r#"
local over, plain = ...
local raw_pcall, raw_xpcall, raw_error = pcall, xpcall, error
local raw_resume = coroutine.resume
local raw_load, raw_loadstring = load, loadstring
local type, sub = type, string.sub

local function check(ok, ...)
  if not ok then
    if over() then raw_error((...), 0) end
    return ok, plain((...))
  end
  return ok, ...
end

pcall = function(f, ...) return check(raw_pcall(f, ...)) end
xpcall = function(f, handler, ...)
  if type(handler) ~= "function" then return check(raw_xpcall(f, handler, ...)) end
  local function guarded(e)
    if over() then return e end
    return handler(plain(e))
  end
  return check(raw_xpcall(f, guarded, ...))
end
coroutine.resume = function(co, ...) return check(raw_resume(co, ...)) end

local raw_collectgarbage, tostring = collectgarbage, tostring
collectgarbage = function(option, arg)
  if option == nil or option == "collect" or option == "count" or option == "step" then
    return raw_collectgarbage(option, arg)
  end
  raw_error("bad argument #1 to 'collectgarbage' (option '" .. tostring(option)
    .. "' is not allowed: use \"collect\", \"count\" or \"step\")", 2)
end

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

-- Given what every call's ctx shares on this VM (env, node, version: upvalues, not arguments
-- pushed per call), returns the call entry. It builds the call's ctx in Lua (one table
-- constructor instead of a host call per field; a fresh table per call, as Nakama gives) and
-- calls the function with the original pcall, so error tables reach the host intact. An after
-- hook (`after` true) is called with two values, the answer and the request.
return function(env, node, version)
  return function(fn, mode, payload, after, input, headers, query, user_id, username, vars,
                  session_exp, session_id, lang, client_ip, client_port, trace_id)
    local ctx = {
      env = env, execution_mode = mode, node = node, version = version,
      headers = headers or {}, query_params = query or {},
      user_id = user_id, username = username, vars = vars, user_session_exp = session_exp,
      session_id = session_id, lang = lang, client_ip = client_ip, client_port = client_port,
      trace_id = trace_id,
    }
    if after then return raw_pcall(fn, ctx, payload, input) end
    return raw_pcall(fn, ctx, payload)
  end
end
"#;

/// Makes the library read-only (see the module documentation). Runs once, after the modules
/// have loaded; `library` names the globals that existed before they did.
pub(super) fn freeze(lua: &Lua, library: Vec<String>) -> mlua::Result<()> {
    let names = lua.create_sequence_from(library)?;
    lua.load(FREEZE)
        .set_name("=metafi-freeze")
        .call::<()>(names)
}

/// Read-only tables: the contents move to a hidden table the proxy's `__index` reads;
/// `__newindex` refuses writes and `__metatable` hides the metatable. `rawset` is wrapped so it
/// cannot go around the proxy.
const FREEZE: &str = r#"
local library = ...
local G = _G
local next, type, tostring, error, rawget = next, type, tostring, error, rawget
local raw_rawset, raw_setmetatable, raw_getmetatable = rawset, setmetatable, getmetatable
local require = require
local frozen = raw_setmetatable({}, { __mode = "k" })
local why = "': the standard library and the nakama module are read-only once modules have loaded"

local function refuse(name, key)
  error("cannot set '" .. name .. tostring(key) .. why, 3)
end

local function freeze(t, name)
  if type(t) ~= "table" or frozen[t] or raw_getmetatable(t) ~= nil then return end
  local backing = {}
  for k, v in next, t do backing[k] = v end
  for k in next, backing do raw_rawset(t, k, nil) end
  frozen[t] = name
  raw_setmetatable(t, {
    __index = backing,
    __newindex = function(_, k) refuse(name, k) end,
    __metatable = false,
  })
  return backing
end

pcall(require, "nakama")
local package = G.package
local string_backing = freeze(G.string, "string.")
for _, lib in next, { "table", "math", "os", "bit", "coroutine" } do
  freeze(G[lib], lib .. ".")
end
freeze(package.loaded.nakama, "nakama.")
freeze(package.loaded, "package.loaded.")
freeze(package.preload, "package.preload.")
freeze(package.loaders, "package.loaders.")
freeze(package, "package.")

-- The metatable itself is out of reach (scripts see a stand-in), so strings may index the
-- contents of `string` directly: a method call (`s:sub(i, j)`) skips the proxy's `__index`
-- fallback, which cost about as much as the call itself. No script can reach that table.
local string_mt = raw_getmetatable("")
if string_mt and string_backing then string_mt.__index = string_backing end
if string_mt then string_mt.__metatable = raw_setmetatable({}, {
  __index = { __index = G.string },
  __newindex = function(_, k) refuse("string metatable.", k) end,
  __metatable = false,
}) end

-- setfenv(0, t) would change the globals of the (pooled, reused) coroutine for later calls.
local raw_setfenv = setfenv
setfenv = function(f, t)
  if f == 0 then
    error("setfenv(0, ...) is not allowed: it would change the globals of later calls", 2)
  end
  -- A level counts from the caller, one frame further away than this wrapper.
  if type(f) == "number" and f > 0 then f = f + 1 end
  local result = raw_setfenv(f, t)
  return result
end

local globals = {}
rawset = function(t, k, v)
  local name = frozen[t]
  if name then refuse(name, k) end
  if t == G and rawget(globals, k) ~= nil then refuse("", k) end
  return raw_rawset(t, k, v)
end
setmetatable = function(t, mt)
  if frozen[t] then refuse(frozen[t], "metatable") end
  return raw_setmetatable(t, mt)
end
for _, name in next, library do
  globals[name] = rawget(G, name)
  raw_rawset(G, name, nil)
end
raw_setmetatable(G, {
  __index = globals,
  __newindex = function(t, k, v)
    if rawget(globals, k) ~= nil then refuse("", k) end
    raw_rawset(t, k, v)
  end,
  __metatable = false,
})
"#;

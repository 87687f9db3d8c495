//! MetaFi's Lua runtime: Nakama-compatible Lua modules on LuaJIT in interpreter mode (the JIT
//! library is never opened, so the JIT compiler stays off: compiled traces would not run the
//! budget hook that enforces the time budget, `budget.rs`), with Lua 5.1 semantics as Nakama's
//! gopher-lua, and a `nakama` module as Nakama's, plugged into the script host of
//! `metafi-runtime` through its engine interface.
//!
//! - [`LuaEngine`] is the [`EngineFactory`] the server registers
//!   (`RuntimeBuilder::engine(Arc::new(LuaEngine::new()))`); it loads `*.lua` under
//!   `runtime.path`.
//! - [`LuaVm`] is one Lua state per VM thread. Modules are loaded into `package.preload` under
//!   their module names and then run in path order (skipping those another module already
//!   `require`d), as Nakama does. Each RPC and hook runs as its own coroutine (`call_entry`:
//!   resumed directly, and by mlua's async machinery once it waits), so a call that awaits an
//!   `nk` IO call lets other calls on the same VM run.
//!
//! Design and numbers: `docs/RUNTIME.md`, "Lua engine".
//!
//! Must not depend on: the transport, the REST API, the server binary, a storage backend, the
//! JavaScript engine (only `metafi_runtime`'s public engine interface).
//! Key types: [`LuaEngine`], [`LuaVm`].

mod budget;
mod c_functions;
mod call_entry;
mod convert;
mod field_keys;
mod json_text;
mod lua_match_handler;
mod match_tables;
mod nakama;
mod nk_binding;
mod nk_value;
mod pattern;
mod raw_push;
mod raw_read;
mod registrations;
mod sandbox;
mod storage_retry;
mod strings;
mod table_serializer;
mod tape;
#[cfg(test)]
mod test_support;

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use metafi_runtime::HookValue;
use metafi_runtime::error::{LoadError, ScriptError, code_from_number};
use metafi_runtime::host::{
    EngineFactory, EngineVm, HookArgs, LocalFuture, ModuleSource, Registered, Registrations,
    RpcCall, VmSetup,
};
use metafi_runtime::nk::Nk;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};
use rustc_hash::FxHashMap;

use crate::call_entry::{Outcome, Returned};

/// Finished coroutines kept for reuse per Lua state. Every call (an RPC, a match callback) runs
/// as a coroutine; reusing them spares a coroutine and its stack per call, garbage the
/// collector would otherwise trace and sweep (`docs/RUNTIME.md`, "Garbage collection").
const COROUTINE_POOL: usize = 32;

/// The Lua engine (`*.lua` modules).
#[derive(Debug, Default)]
pub struct LuaEngine {
    /// Where match handlers' Lua states live (`docs/MATCHES.md`, "Script VMs").
    match_vms: metafi_runtime::match_host::MatchVms,
}

impl LuaEngine {
    pub fn new() -> LuaEngine {
        LuaEngine::default()
    }

    /// Runs match handlers in their own Lua state each, or in one state per executor thread.
    pub fn with_match_vms(mut self, vms: metafi_runtime::match_host::MatchVms) -> LuaEngine {
        self.match_vms = vms;
        self
    }
}

impl EngineFactory for LuaEngine {
    fn name(&self) -> &'static str {
        "lua"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["lua"]
    }

    fn create_vm(&self, setup: VmSetup) -> LocalFuture<Result<Rc<dyn EngineVm>, LoadError>> {
        Box::pin(async move {
            let vm = LuaVm::create(setup).await?;
            Ok(Rc::new(vm) as Rc<dyn EngineVm>)
        })
    }

    fn has_match(&self, setup: &VmSetup, _registrations: &Registrations, name: &str) -> bool {
        lua_match_handler::has_match(setup, name)
    }

    fn create_match(
        &self,
        setup: VmSetup,
        name: &str,
    ) -> Result<Box<dyn metafi_match::MatchHandler>, metafi_match::HandlerError> {
        lua_match_handler::create(setup, name, self.match_vms)
    }
}

/// Raised by the budget hook and the bounded string functions; recognised when the call's
/// error comes back.
#[derive(Debug, thiserror::Error)]
#[error("the call ran past its time budget")]
pub(crate) struct BudgetExceeded;

/// What the modules of this VM registered, filled while they load.
#[derive(Default)]
pub(crate) struct Registry {
    rpcs: HashMap<String, (Function, String)>,
    /// The hooks' own functions by reserved id, for [`LuaVm::run_hook`] (`rpcs` holds their
    /// JSON-text wrappers under the same ids). Looked up on every hook call: FxHash reads the
    /// id a word at a time where SipHash took ≈ 200 instructions a lookup, and the ids are the
    /// server's own (`hook_key`), so there is nothing to flood.
    hooks: FxHashMap<String, (Function, metafi_runtime::hooks::HookMode)>,
    /// The module being loaded; `None` outside loading, when registering is refused.
    loading: Option<String>,
    /// `register_storage_index` calls, in order.
    storage_indexes: Vec<metafi_runtime::host::RegisteredIndex>,
}

/// State shared by the `nakama` functions of one VM (mlua app data).
pub(crate) struct VmShared {
    pub(crate) nk: Nk,
    /// `ctx.env`, built once per VM as Nakama does.
    pub(crate) env: Table,
    pub(crate) registry: RefCell<Registry>,
    /// Maps chunk names (`@path`) back to module names for log lines.
    pub(crate) modules_by_path: HashMap<String, String>,
}

/// Whether the running call is past its deadline (mlua app data), for the Rust functions a
/// script calls: the budget hook is set only once the watcher sees a call overdue
/// (`budget.rs`), so these check at once instead.
pub(crate) struct DeadlineCheck(strings::OverDeadline);

/// Raises the budget error if the running call is past its deadline.
pub(crate) fn check_deadline(lua: &Lua) -> mlua::Result<()> {
    match lua.app_data_ref::<DeadlineCheck>() {
        Some(check) if (check.0)() => Err(mlua::Error::external(BudgetExceeded)),
        _ => Ok(()),
    }
}

/// One Lua state with every module loaded.
pub struct LuaVm {
    lua: Lua,
    /// Deadline of the call whose code is running now; watched by the budget watcher.
    deadline: Rc<budget::Deadline>,
    /// Starts RPCs and hooks (`call_entry.rs`): a `pcall`-based entry that returns
    /// `(ok, result_or_error)` so error tables survive.
    entry: Rc<call_entry::CallEntry>,
}

impl LuaVm {
    async fn create(setup: VmSetup) -> Result<LuaVm, LoadError> {
        let engine_error = |message: String| LoadError::Engine {
            engine: "lua",
            message,
        };
        let lua = Lua::new_with(
            StdLib::TABLE
                | StdLib::STRING
                | StdLib::MATH
                | StdLib::OS
                | StdLib::PACKAGE
                | StdLib::BIT,
            LuaOptions::new().thread_pool_size(COROUTINE_POOL),
        )
        .map_err(|e| engine_error(format!("cannot create a Lua state: {e}")))?;
        lua.set_memory_limit(setup.limits.memory_limit_bytes)
            .map_err(|e| engine_error(format!("cannot cap Lua memory: {e}")))?;

        let deadline = Rc::new(
            budget::Deadline::new(&lua)
                .map_err(|e| engine_error(format!("cannot watch the time budget: {e}")))?,
        );

        c_functions::install(&lua, &deadline)
            .map_err(|e| engine_error(format!("cannot guard the C functions: {e}")))?;
        let over_deadline: strings::OverDeadline = {
            let deadline = deadline.clone();
            Rc::new(move || deadline.is_over())
        };
        let make_entry = sandbox::apply(&lua, over_deadline.clone())
            .map_err(|e| engine_error(format!("cannot set up the Lua sandbox: {e}")))?;
        lua.set_app_data(DeadlineCheck(over_deadline.clone()));
        strings::install(&lua, over_deadline, setup.limits.memory_limit_bytes)
            .map_err(|e| engine_error(format!("cannot bind the string functions: {e}")))?;

        let env = lua
            .create_table()
            .and_then(|t| {
                for (k, v) in setup.nk.env().iter() {
                    t.raw_set(k.as_str(), v.as_str())?;
                }
                Ok(t)
            })
            .map_err(|e| engine_error(format!("cannot build ctx.env: {e}")))?;
        lua.set_app_data(VmShared {
            nk: setup.nk.clone(),
            env: env.clone(),
            registry: RefCell::new(Registry::default()),
            modules_by_path: setup
                .modules
                .iter()
                .map(|m| (m.path.display().to_string(), m.name.clone()))
                .collect(),
        });
        nakama::install(&lua, &deadline)
            .map_err(|e| engine_error(format!("cannot bind the nakama module: {e}")))?;

        let entry = make_entry
            .call::<Function>((env, &**setup.nk.node(), env!("CARGO_PKG_VERSION")))
            .map_err(|e| engine_error(format!("cannot make the call entry: {e}")))?;
        let entry = call_entry::CallEntry::new(&lua, entry)
            .map_err(|e| engine_error(format!("cannot make the call entry: {e}")))?;
        let vm = LuaVm {
            lua,
            deadline,
            entry,
        };
        let library = vm
            .lua
            .globals()
            .pairs::<Value, Value>()
            .filter_map(|pair| match pair {
                Ok((Value::String(name), _)) => Some(name.to_string_lossy()),
                _ => None,
            })
            .collect::<Vec<_>>();
        vm.load_modules(&setup.modules, setup.limits.load_timeout)
            .await?;
        sandbox::freeze(&vm.lua, library)
            .map_err(|e| engine_error(format!("cannot freeze the Lua library: {e}")))?;
        Ok(vm)
    }

    /// Compiles every module into `package.preload`, then runs each one not yet loaded.
    async fn load_modules(
        &self,
        modules: &[ModuleSource],
        budget: std::time::Duration,
    ) -> Result<(), LoadError> {
        let lua = &self.lua;
        let internal = |path: &Path, e: mlua::Error| LoadError::Module {
            path: path.to_owned(),
            line: 0,
            message: e.to_string(),
        };
        let package: Table = lua
            .globals()
            .raw_get("package")
            .map_err(|e| internal(Path::new("package"), e))?;
        let preload: Table = package
            .raw_get("preload")
            .map_err(|e| internal(Path::new("package"), e))?;
        let loaded: Table = package
            .raw_get("loaded")
            .map_err(|e| internal(Path::new("package"), e))?;
        let mut chunks = Vec::with_capacity(modules.len());
        for module in modules {
            let chunk = lua
                .load(&*module.text)
                .set_name(format!("@{}", module.path.display()))
                .into_function()
                .map_err(|e| module_error(&module.path, &e))?;
            preload
                .raw_set(module.name.as_str(), chunk.clone())
                .map_err(|e| internal(&module.path, e))?;
            chunks.push(chunk);
        }
        for (module, chunk) in modules.iter().zip(chunks) {
            let already: Value = loaded
                .raw_get(module.name.as_str())
                .map_err(|e| internal(&module.path, e))?;
            if !matches!(already, Value::Nil | Value::Boolean(false)) {
                continue;
            }
            self.shared().registry.borrow_mut().loading = Some(module.name.clone());
            let deadline = Instant::now() + budget;
            let run = chunk.call_async::<Value>(module.name.as_str());
            let outcome = tokio::time::timeout_at(
                deadline.into(),
                WithDeadline::new(Box::pin(run), deadline, self.deadline.clone()),
            )
            .await;
            self.shared().registry.borrow_mut().loading = None;
            let result = match outcome {
                Ok(Ok(value)) => value,
                Ok(Err(e)) if is_budget(&e) || Instant::now() >= deadline => {
                    return Err(LoadError::Module {
                        path: module.path.clone(),
                        line: 0,
                        message: format!(
                            "loading took longer than runtime.load_timeout_ms ({} ms)",
                            budget.as_millis()
                        ),
                    });
                }
                Ok(Err(e)) => return Err(module_error(&module.path, &e)),
                Err(_) => {
                    return Err(LoadError::Module {
                        path: module.path.clone(),
                        line: 0,
                        message: format!(
                            "loading took longer than runtime.load_timeout_ms ({} ms)",
                            budget.as_millis()
                        ),
                    });
                }
            };
            let already: Value = loaded
                .raw_get(module.name.as_str())
                .map_err(|e| internal(&module.path, e))?;
            if matches!(already, Value::Nil) {
                let value = if matches!(result, Value::Nil) {
                    Value::Boolean(true)
                } else {
                    result
                };
                loaded
                    .raw_set(module.name.as_str(), value)
                    .map_err(|e| internal(&module.path, e))?;
            }
        }
        lua.gc_collect().map_err(|e| internal(Path::new("gc"), e))?;
        Ok(())
    }

    fn shared(&self) -> mlua::AppDataRef<'_, VmShared> {
        // Invariant: `create` stores VmShared before anything can call this.
        #[allow(clippy::expect_used)]
        self.lua
            .app_data_ref::<VmShared>()
            .expect("VmShared is set at VM creation")
    }

    async fn run(self: Rc<Self>, call: RpcCall) -> Result<String, ScriptError> {
        let function = {
            let shared = self.shared();
            let registry = shared.registry.borrow();
            match registry.rpcs.get(&*call.id) {
                Some((function, _)) => function.clone(),
                None => {
                    return Err(ScriptError::Failed {
                        message: "RPC function not found".into(),
                        detail: format!("RPC '{}' is not registered on this VM", call.id),
                    });
                }
            }
        };
        let started = self.start(&function, call_entry::Payload::Text(&call.payload), &call);
        let outcome = match started {
            Ok(started) => {
                started
                    .finish(&self.lua, call.deadline, &self.deadline)
                    .await
            }
            Err(e) => return Err(failed(&e)),
        };
        let timed_out = Instant::now() >= call.deadline;
        match outcome {
            Outcome::Returned(Returned::Text(text)) => Ok(text),
            Outcome::Returned(Returned::Other(other)) => Err(ScriptError::BadResult {
                found: other.type_name().to_owned(),
            }),
            // Invariant: `CallEntry::start` reads a `Payload::Text` call's result as text.
            Outcome::Returned(Returned::Json(_) | Returned::Nothing) => {
                unreachable!("an RPC's result is read as text")
            }
            Outcome::Raised(error) => Err(self.script_error(error, timed_out)),
            Outcome::Failed(e) => Err(self.mlua_error(&e, timed_out)),
        }
    }

    /// Starts `function` through the call entry with the call's deadline set, so its first run
    /// (the whole call, unless it waits) is under the budget hook.
    fn start(
        &self,
        function: &Function,
        payload: call_entry::Payload<'_>,
        call: &RpcCall,
    ) -> mlua::Result<call_entry::Started> {
        let previous = self.deadline.replace(Some(call.deadline));
        let started = self.entry.start(&self.lua, function, payload, &call.ctx);
        self.deadline.set(previous);
        started
    }

    /// Runs the hook stored under `call.id` with `args` turned into tables straight away (no
    /// JSON text), and reads a before hook's result back as a value in proto names.
    async fn run_hook(
        self: Rc<Self>,
        call: RpcCall,
        args: HookArgs,
    ) -> Result<Option<HookValue>, ScriptError> {
        let function = {
            let shared = self.shared();
            let registry = shared.registry.borrow();
            match registry.hooks.get(&*call.id) {
                Some((function, _)) => function.clone(),
                None => {
                    return Err(ScriptError::Failed {
                        message: "RPC function not found".into(),
                        detail: format!("hook '{}' is not registered on this VM", call.id),
                    });
                }
            }
        };
        let payload = match &args {
            HookArgs::Before(input) => call_entry::Payload::Before(input.as_ref()),
            HookArgs::After { output, input } => call_entry::Payload::After {
                output: output.as_ref(),
                input: input.as_ref(),
            },
        };
        let started = self.start(&function, payload, &call);
        drop(args);
        let outcome = match started {
            Ok(started) => {
                started
                    .finish(&self.lua, call.deadline, &self.deadline)
                    .await
            }
            Err(e) => return Err(failed(&e)),
        };
        let timed_out = Instant::now() >= call.deadline;
        match outcome {
            // An after hook's result is ignored, as Nakama does.
            Outcome::Returned(Returned::Json(json)) => Ok(json.map(HookValue::Json)),
            Outcome::Returned(Returned::Nothing) => Ok(None),
            // Invariant: `CallEntry::start` reads a before hook's result as JSON, an after
            // hook's not at all.
            Outcome::Returned(Returned::Text(_) | Returned::Other(_)) => {
                unreachable!("a hook's result is read as JSON or not at all")
            }
            Outcome::Raised(error) => Err(self.script_error(error, timed_out)),
            Outcome::Failed(e) => Err(self.mlua_error(&e, timed_out)),
        }
    }

    /// Classifies the error value a call raised.
    fn script_error(&self, error: Value, timed_out: bool) -> ScriptError {
        match error {
            Value::Table(table) => raised_table(&table),
            Value::Error(e) => self.mlua_error(&e, timed_out),
            _ if timed_out => ScriptError::Timeout,
            Value::String(s) => {
                let text = s.to_string_lossy();
                if text.contains("not enough memory") {
                    self.after_out_of_memory();
                    return ScriptError::OutOfMemory;
                }
                ScriptError::Failed {
                    message: strip_position(&text).to_owned(),
                    detail: text,
                }
            }
            other => ScriptError::Failed {
                message: format!("error object of type {}", other.type_name()),
                detail: format!("{other:?}"),
            },
        }
    }

    fn mlua_error(&self, error: &mlua::Error, timed_out: bool) -> ScriptError {
        if is_budget(error) || timed_out {
            return ScriptError::Timeout;
        }
        if error.chain().any(|e| {
            matches!(
                e.downcast_ref::<mlua::Error>(),
                Some(mlua::Error::MemoryError(_))
            )
        }) || matches!(error, mlua::Error::MemoryError(_))
        {
            self.after_out_of_memory();
            return ScriptError::OutOfMemory;
        }
        let text = innermost_message(error);
        ScriptError::Failed {
            message: strip_position(&text).to_owned(),
            detail: error.to_string(),
        }
    }

    /// Frees what the failed call left behind, so the VM is usable again.
    fn after_out_of_memory(&self) {
        if let Err(e) = self.lua.gc_collect() {
            tracing::warn!(error = %e, "Lua garbage collection after an out-of-memory error failed");
        }
    }
}

impl EngineVm for LuaVm {
    fn registrations(&self) -> Registrations {
        let shared = self.shared();
        let registry = shared.registry.borrow();
        let mut rpcs: Vec<Registered> = registry
            .rpcs
            .iter()
            .map(|(id, (_, module))| Registered {
                id: id.clone(),
                module: module.clone(),
            })
            .collect();
        rpcs.sort_by(|a, b| a.id.cmp(&b.id));
        Registrations {
            rpcs,
            matches: Vec::new(),
            storage_indexes: registry.storage_indexes.clone(),
        }
    }

    fn call_rpc(self: Rc<Self>, call: RpcCall) -> LocalFuture<Result<String, ScriptError>> {
        Box::pin(self.run(call))
    }

    fn call_hook(
        self: Rc<Self>,
        call: RpcCall,
        args: HookArgs,
    ) -> LocalFuture<Result<Option<HookValue>, ScriptError>> {
        Box::pin(self.run_hook(call, args))
    }
}

/// `error({message, code})`: Nakama reads element 1 as the message and element 2 as the code;
/// a table without a numeric code is an Internal error with that message.
fn raised_table(table: &Table) -> ScriptError {
    let message: Value = table.raw_get(1).unwrap_or(Value::Nil);
    let message = match message {
        Value::String(s) => s.to_string_lossy(),
        Value::Nil => String::new(),
        other => format!("{other:?}"),
    };
    let code: Value = table.raw_get(2).unwrap_or(Value::Nil);
    let code = match code {
        Value::Integer(i) => Some(i),
        Value::Number(n) => Some(n as i64),
        _ => None,
    };
    match code {
        Some(code) => ScriptError::Raised {
            code: code_from_number(code),
            message,
        },
        None => ScriptError::Failed {
            detail: message.clone(),
            message,
        },
    }
}

fn failed(error: &mlua::Error) -> ScriptError {
    ScriptError::Failed {
        message: "RPC function could not be called.".into(),
        detail: error.to_string(),
    }
}

pub(crate) fn is_budget(error: &mlua::Error) -> bool {
    error.downcast_ref::<BudgetExceeded>().is_some()
        || error
            .chain()
            .any(|e| e.downcast_ref::<BudgetExceeded>().is_some())
}

/// The message of the deepest cause: what the script (or the `nk` call) said, without
/// mlua's wrapping and traceback.
pub(crate) fn innermost_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => innermost_message(cause),
        mlua::Error::WithContext { cause, .. } => innermost_message(cause),
        mlua::Error::RuntimeError(message) | mlua::Error::MemoryError(message) => message.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    }
}

/// `path/to/m.lua:12: message` → `message`, as Nakama strips the source prefix for clients.
fn strip_position(text: &str) -> &str {
    let first_line = text.lines().next().unwrap_or(text);
    if let Some(at) = first_line.find(".lua:") {
        let rest = &first_line[at + 5..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0
            && let Some(message) = rest[digits..].strip_prefix(": ")
        {
            return message;
        }
    }
    first_line
}

/// A load failure as `path:line: message`. Lua shortens long chunk names (`...s/m.lua:3:`), so
/// the position is found by the file name.
fn module_error(path: &Path, error: &mlua::Error) -> LoadError {
    let text = innermost_message(error);
    let full = error.to_string();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let line = find_line(&text, &file)
        .or_else(|| find_line(&full, &file))
        .unwrap_or(0);
    let message = match text.find(&format!("{file}:")) {
        Some(at) => strip_position(&text[at..]).to_owned(),
        None => text.lines().next().unwrap_or_default().to_owned(),
    };
    LoadError::Module {
        path: path.to_owned(),
        line,
        message,
    }
}

/// The line number after the first `file:` in `text`.
fn find_line(text: &str, file: &str) -> Option<u32> {
    let needle = format!("{file}:");
    let at = text.find(&needle)?;
    let rest = &text[at + needle.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Puts `deadline` in the hook's cell while the inner future runs, and restores the previous
/// one after each poll: calls interleaved on one VM each see their own deadline.
struct WithDeadline<F> {
    inner: Pin<Box<F>>,
    deadline: Instant,
    cell: Rc<budget::Deadline>,
}

impl<F> WithDeadline<F> {
    fn new(inner: Pin<Box<F>>, deadline: Instant, cell: Rc<budget::Deadline>) -> Self {
        WithDeadline {
            inner,
            deadline,
            cell,
        }
    }
}

impl<F: Future> Future for WithDeadline<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let previous = self.cell.replace(Some(self.deadline));
        let result = self.inner.as_mut().poll(cx);
        self.cell.set(previous);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_stripped_for_clients() {
        assert_eq!(strip_position("data/modules/a.lua:12: boom"), "boom");
        assert_eq!(strip_position("boom"), "boom");
        assert_eq!(strip_position("x.lua:nope"), "x.lua:nope");
    }

    #[test]
    fn lines_are_found_after_the_path() {
        assert_eq!(find_line("...m/bad.lua:7: oops", "bad.lua"), Some(7));
        assert_eq!(find_line("oops", "bad.lua"), None);
    }
}

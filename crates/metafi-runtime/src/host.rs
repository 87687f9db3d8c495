//! The engine interface: what a script engine (Lua here, JavaScript in `metafi-runtime-js`)
//! implements so the host can load its modules, route RPCs to it and enforce budgets.
//!
//! The host owns threads, queues, budgets' wall clock, metrics and error mapping; an engine
//! owns one language: building a VM with the modules loaded, collecting what the modules
//! registered, running one call, and stopping a call that overruns its deadline or memory.
//!
//! Threading contract: [`EngineFactory::create_vm`] runs **on the VM's own thread**, and the
//! returned [`EngineVm`] never leaves it (VMs need not be `Send`). Each VM thread runs a
//! current-thread tokio runtime with a `LocalSet`, so several calls may be in flight on one VM
//! at once while their `nk` calls await IO; only one of them executes script code at any
//! instant. See `docs/RUNTIME.md`, "Engine interface".

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_core::HookValue;
use serde_json::Value as Json;

use crate::context::CallContext;
use crate::error::{LoadError, ScriptError};
use crate::nk::Nk;

/// A future that stays on its VM thread.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T> + 'static>>;

/// One script language. Registered with [`crate::RuntimeBuilder::engine`]; shared by all the
/// engine's VM threads.
pub trait EngineFactory: Send + Sync + 'static {
    /// Short name used in logs, metrics and `runtime.*` keys: `"lua"`, `"js"`.
    fn name(&self) -> &'static str;

    /// File extensions (without the dot) whose modules this engine loads: `["lua"]`.
    fn extensions(&self) -> &'static [&'static str];

    /// Builds one VM on the calling thread: a fresh interpreter with the sandbox applied, the
    /// `nk` API bound, every module of `setup.modules` evaluated (Lua: each file in order, as
    /// `require` would; JS: the bundle, then `InitModule`). Async because module code may call
    /// `nk` functions that do IO (seeding storage at start is common); the future runs on the
    /// VM thread's `LocalSet`. A module that fails to parse or raises at load time is a
    /// [`LoadError::Module`] naming its file and line; the server does not start.
    fn create_vm(&self, setup: VmSetup) -> LocalFuture<Result<Rc<dyn EngineVm>, LoadError>>;

    /// Whether `name` is an authoritative match handler of this engine (Lua: a module name;
    /// JS: a name given to `initializer.registerMatch`). `registrations` are VM 0's. Default:
    /// none (see `docs/MATCHES.md`, "Handlers in each runtime").
    fn has_match(&self, setup: &VmSetup, registrations: &Registrations, name: &str) -> bool {
        let _ = (setup, registrations, name);
        false
    }

    /// Builds the handler of match `name` **on the calling thread**, a match executor thread
    /// where it stays for the match's life (script VMs need not be `Send`). Called inside the
    /// server's tokio context (timers and IO work), outside any runtime's `block_on`; an engine
    /// that must wait for IO blocks with [`crate::block_on_until`]. Default: not supported.
    fn create_match(
        &self,
        setup: VmSetup,
        name: &str,
    ) -> Result<Box<dyn metafi_match::MatchHandler>, metafi_match::HandlerError> {
        let _ = setup;
        Err(metafi_match::HandlerError::failed(format!(
            "the {} runtime does not run match handlers (asked for '{name}')",
            self.name()
        )))
    }
}

/// Everything a VM needs at creation.
#[derive(Debug, Clone)]
pub struct VmSetup {
    /// This engine's modules, sorted by path.
    pub modules: Arc<[ModuleSource]>,
    /// The `nk` API to bind.
    pub nk: Nk,
    /// Per-call and per-VM limits to enforce.
    pub limits: VmLimits,
    /// 0 for the first VM of the engine. Every VM loads every module (globals are per VM, as
    /// in Nakama); `nk.run_once` runs once per process (see [`Nk::claim_run_once`]).
    pub index: usize,
}

/// One module file as discovered under `runtime.path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSource {
    /// Lua-style module name: the path relative to `runtime.path` without extension, with
    /// separators as dots (`games/chess.lua` → `games.chess`).
    pub name: String,
    /// The file, for error messages (`path:line: message`).
    pub path: PathBuf,
    pub text: Arc<str>,
}

/// Limits an engine enforces inside its VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmLimits {
    /// Wall-clock budget of one call, counted from the moment it starts executing. The host
    /// also drops a call that is still awaiting when its deadline passes; the engine must stop
    /// script code that runs past [`RpcCall::deadline`] without awaiting (Lua: instruction
    /// hook; QuickJS: interrupt handler) and report [`ScriptError::Timeout`].
    pub call_timeout: Duration,
    /// Heap cap of one VM in bytes; an allocation past it fails the running call with
    /// [`ScriptError::OutOfMemory`] (the VM stays usable).
    pub memory_limit_bytes: usize,
    /// Budget of module loading (top-level code, `InitModule`, `run_once`), per module.
    pub load_timeout: Duration,
}

/// What the modules of one VM registered. Every VM of an engine must register the same RPC
/// ids (the host checks against VM 0), since any VM may serve any call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registrations {
    /// RPC ids, lower case, with the module that registered each (for logs and errors).
    pub rpcs: Vec<Registered>,
    /// Match handler names (JS `initializer.registerMatch`; Lua uses module names instead and
    /// registers nothing). Not served before the match engine exists; see `docs/RUNTIME.md`.
    pub matches: Vec<Registered>,
    /// Storage indexes (`register_storage_index`), in registration order; the host defines
    /// them in the node's [`metafi_core::storage_index::StorageIndexes`] once VM 0 loaded.
    pub storage_indexes: Vec<RegisteredIndex>,
}

/// A storage index and the module that registered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredIndex {
    pub definition: metafi_core::storage_index::IndexDefinition,
    pub module: String,
}

/// A registered name and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub id: String,
    /// Module name (or file) that registered it.
    pub module: String,
}

/// One RPC invocation handed to a VM.
#[derive(Debug, Clone)]
pub struct RpcCall {
    /// The RPC id, lower case.
    pub id: Arc<str>,
    pub ctx: Arc<CallContext>,
    pub payload: String,
    /// When the call must be stopped.
    pub deadline: Instant,
}

/// One VM of an engine, owned by one thread.
pub trait EngineVm {
    /// What this VM's modules registered.
    fn registrations(&self) -> Registrations;

    /// Runs RPC `call.id` and resolves to its result string (`""` when the function returned
    /// nothing). Called only with ids from [`EngineVm::registrations`]. The future may be
    /// dropped at the deadline while it awaits an `nk` call; the VM must stay usable after
    /// that, after a timeout and after an out-of-memory error.
    fn call_rpc(self: Rc<Self>, call: RpcCall) -> LocalFuture<Result<String, ScriptError>>;

    /// Runs the hook stored under `call.id` (a [`crate::hook_key`]) with `args`, and resolves
    /// to what a before hook returned (`None` for nothing, and always for an after hook).
    /// `call.payload` is empty. An engine converts the values straight into its own, in the
    /// naming its scripts see, and reads a before hook's result as [`HookValue::Json`] in
    /// proto field names (the edge reads its request struct from that). The
    /// default runs the hook through [`EngineVm::call_rpc`] with the values as JSON text in
    /// proto names (before: the request; after: `[output, input]`) and reads the result as
    /// JSON text.
    fn call_hook(
        self: Rc<Self>,
        mut call: RpcCall,
        args: HookArgs,
    ) -> LocalFuture<Result<Option<HookValue>, ScriptError>> {
        call.payload = match args.into_text() {
            Ok(text) => text,
            Err(e) => return Box::pin(async move { Err(crate::hooks::unencodable(&e)) }),
        };
        let call = self.call_rpc(call);
        Box::pin(async move {
            let result = call.await?;
            if result.is_empty() {
                return Ok(None);
            }
            match serde_json::from_str::<Json>(&result) {
                Ok(Json::Null) => Ok(None),
                Ok(value) => Ok(Some(HookValue::Json(value))),
                Err(e) => Err(ScriptError::BadResult {
                    found: format!("text that is not JSON ({e})"),
                }),
            }
        })
    }
}

/// What a hook is called with: the request and answer in proto field names, `None` standing for
/// no value (`nil` / `null`), as the edges hand them ([`metafi_core::Hooks::before_value`]).
#[derive(Debug)]
pub enum HookArgs {
    /// A before hook: the request (`None` for calls without input, such as `GetAccount`).
    Before(Option<HookValue>),
    /// An after hook: the answer and the request.
    After {
        output: Option<HookValue>,
        input: Option<HookValue>,
    },
}

impl HookArgs {
    /// The arguments as one JSON text in proto names (`null` fields left out): the request,
    /// or `[output, input]` for an after hook. What engines without [`EngineVm::call_hook`]
    /// of their own receive as the payload.
    pub fn into_text(self) -> serde_json::Result<String> {
        let view = |value: Option<HookValue>| -> serde_json::Result<Json> {
            Ok(match value {
                Some(value) => crate::hooks::lua_view(value.into_json()?),
                None => Json::Null,
            })
        };
        Ok(match self {
            HookArgs::Before(input) => view(input)?.to_string(),
            HookArgs::After { output, input } => {
                Json::Array(vec![view(output)?, view(input)?]).to_string()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hook_arguments_as_text_are_proto_names_without_nulls() {
        let before = HookArgs::Before(Some(json!({"account": {"id": "d"}, "create": null}).into()));
        assert_eq!(before.into_text().unwrap(), r#"{"account":{"id":"d"}}"#);
        assert_eq!(HookArgs::Before(None).into_text().unwrap(), "null");
        let after = HookArgs::After {
            output: Some(json!({"token": "t", "created": false}).into()),
            input: None,
        };
        assert_eq!(
            after.into_text().unwrap(),
            r#"[{"created":false,"token":"t"},null]"#
        );
    }
}

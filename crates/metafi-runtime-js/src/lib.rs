//! MetaFi's JavaScript runtime: Nakama-compatible JavaScript modules on QuickJS (rquickjs),
//! plugged into the script host of `metafi-runtime` through its engine interface.
//!
//! - [`JsEngine`] is the [`EngineFactory`] the server registers
//!   (`RuntimeBuilder::engine(Arc::new(JsEngine::new()))`); it loads `*.js` under
//!   `runtime.path`.
//! - [`JsVm`] is one QuickJS runtime + context with every module evaluated and its
//!   `InitModule(ctx, logger, nk, initializer)` run; it serves RPCs registered with
//!   `initializer.registerRpc` and records match handlers from `initializer.registerMatch`.
//! - `nk` has Nakama's JavaScript names and shapes (`nk.storageRead`, `nk.matchCreate`, …);
//!   `JSON` is QuickJS's own.
//!
//! Budgets: every call runs under its deadline (QuickJS interrupt handler; an `nk` call that
//! waits past it is cancelled; a promise that never settles waits it out) and every VM under
//! `runtime.memory_limit_mb` (QuickJS's allocator limit). Either failure ends the call, not the
//! VM — except a flood of promise jobs no budget can drain, after which the RPC VM is rebuilt
//! (`rpc_vm.rs`). Array built-ins QuickJS runs as uninterruptible C loops are bounded
//! (`array_bounds.rs`), and the intrinsics are frozen once the modules are loaded
//! (`freeze.rs`), so no call changes them for the next caller.
//!
//! Threads: VMs live on the host's VM threads (`metafi-js-<n>`); `nk` functions are
//! synchronous, as in Nakama, and block their VM thread while a dedicated `metafi-js-io`
//! runtime drives the IO. Design and numbers: `docs/RUNTIME.md`, "JavaScript engine".
//!
//! Must not depend on: the transport, the REST API, the server binary, a storage backend, the
//! Lua engine's internals (only `metafi_runtime`'s public engine interface).
//! Key types: [`JsEngine`], [`JsVm`].

mod alloc;
mod array_bounds;
mod binary;
mod budget;
mod context;
mod convert;
mod freeze;
mod hook_result;
mod hook_value;
mod hooks;
mod initializer;
mod io;
mod js_match_handler;
mod logger;
mod match_values;
mod nakama;
mod nk_binding;
mod nk_value;
mod object_serializer;
mod rpc_vm;
mod storage_index;
mod storage_retry;
#[cfg(test)]
mod test_support;
mod vm;

use std::rc::Rc;
use std::sync::OnceLock;

use metafi_runtime::{EngineFactory, EngineVm, LoadError, LocalFuture, Registrations, VmSetup};

pub use vm::JsVm;

/// The JavaScript engine (`*.js` modules).
#[derive(Debug, Default)]
pub struct JsEngine {
    /// Drives the futures of `nk` calls for every VM of this engine; started with the first VM.
    io: OnceLock<Result<io::IoRuntime, String>>,
    /// Where match handlers' VMs live (`js_match_handler.rs`).
    match_vms: metafi_runtime::MatchVms,
    /// Leave the intrinsics writable after load (`runtime.js_read_only_globals = false`);
    /// frozen by default (`freeze.rs`).
    mutable_intrinsics: bool,
}

impl JsEngine {
    pub fn new() -> JsEngine {
        JsEngine::default()
    }

    /// Runs match handlers in their own VM each, or in one VM per executor thread.
    pub fn with_match_vms(mut self, vms: metafi_runtime::MatchVms) -> JsEngine {
        self.match_vms = vms;
        self
    }

    /// Whether the intrinsics are frozen once the modules are loaded (`freeze.rs`; on by
    /// default, as Nakama's `runtime.js_read_only_globals`).
    pub fn with_read_only_globals(mut self, read_only: bool) -> JsEngine {
        self.mutable_intrinsics = !read_only;
        self
    }

    fn io(&self) -> Result<tokio::runtime::Handle, LoadError> {
        match self
            .io
            .get_or_init(|| io::IoRuntime::start().map_err(|e| e.to_string()))
        {
            Ok(io) => Ok(io.handle()),
            Err(e) => Err(LoadError::Engine {
                engine: "js",
                message: format!("cannot start the metafi-js-io thread: {e}"),
            }),
        }
    }
}

impl EngineFactory for JsEngine {
    fn name(&self) -> &'static str {
        "js"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["js"]
    }

    fn has_match(&self, _setup: &VmSetup, registrations: &Registrations, name: &str) -> bool {
        js_match_handler::has_match(registrations, name)
    }

    fn create_match(
        &self,
        setup: VmSetup,
        name: &str,
    ) -> Result<Box<dyn metafi_match::MatchHandler>, metafi_match::HandlerError> {
        let io = self
            .io()
            .map_err(|e| metafi_match::HandlerError::failed(e.to_string()))?;
        js_match_handler::create(setup, io, name, self.match_vms, !self.mutable_intrinsics)
    }

    fn create_vm(&self, setup: VmSetup) -> LocalFuture<Result<Rc<dyn EngineVm>, LoadError>> {
        let io = self.io();
        let freeze = !self.mutable_intrinsics;
        Box::pin(async move {
            let io = io?;
            let vm = JsVm::create(setup.clone(), io.clone(), freeze)?;
            Ok(Rc::new(rpc_vm::RpcVm::new(vm, setup, io, freeze)) as Rc<dyn EngineVm>)
        })
    }
}

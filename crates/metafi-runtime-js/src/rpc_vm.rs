//! The VM an RPC pool thread owns: a [`JsVm`] that is replaced when a call leaves it unusable.
//!
//! A script that queues promise jobs faster than the budget can interrupt them (every job
//! queues two more) leaves jobs in QuickJS's queue when its call is abandoned at the deadline;
//! QuickJS cannot empty the queue, and those jobs would run — and time out — in every later
//! call on the VM. Such a VM is dropped (freeing its runtime frees the jobs) and a fresh one is
//! built from the same modules, as at start, before the next call.

use std::cell::RefCell;
use std::rc::Rc;

use metafi_runtime::{
    EngineVm, HookArgs, HookValue, LocalFuture, Registrations, RpcCall, ScriptError, VmSetup,
};
use tokio::runtime::Handle;

use crate::vm::{JsVm, Outcome};

pub(crate) struct RpcVm {
    vm: RefCell<Rc<JsVm>>,
    /// How to build a replacement: the same modules and limits.
    setup: VmSetup,
    io: Handle,
    freeze: bool,
}

impl RpcVm {
    pub(crate) fn new(vm: JsVm, setup: VmSetup, io: Handle, freeze: bool) -> RpcVm {
        RpcVm {
            vm: RefCell::new(Rc::new(vm)),
            setup,
            io,
            freeze,
        }
    }

    fn current(&self) -> Rc<JsVm> {
        self.vm.borrow().clone()
    }

    /// Replaces the VM if a call poisoned it. On failure (a module's load-time `nk` call
    /// failing now) the old VM keeps serving: its calls may time out, but the pool keeps
    /// its thread.
    fn replace_if_poisoned(&self) {
        if !self.current().is_poisoned() {
            return;
        }
        match JsVm::create(self.setup.clone(), self.io.clone(), self.freeze) {
            Ok(fresh) => {
                *self.vm.borrow_mut() = Rc::new(fresh);
                metrics::counter!("metafi_runtime_vm_replacements_total", "runtime" => "js")
                    .increment(1);
                tracing::warn!(
                    engine = "js",
                    vm = self.setup.index,
                    "replaced a JavaScript VM: a script flooded its promise job queue past its deadline"
                );
            }
            Err(e) => tracing::error!(
                engine = "js",
                vm = self.setup.index,
                error = %e,
                "cannot replace a JavaScript VM whose promise job queue a script flooded; keeping it"
            ),
        }
    }
}

impl EngineVm for RpcVm {
    fn registrations(&self) -> Registrations {
        self.current().registrations()
    }

    fn call_hook(
        self: Rc<Self>,
        call: RpcCall,
        args: HookArgs,
    ) -> LocalFuture<Result<Option<HookValue>, ScriptError>> {
        // As `call_rpc`: one poll, unless a returned promise never settles.
        Box::pin(async move {
            let outcome = self.current().run_hook(&call, args);
            self.replace_if_poisoned();
            match outcome {
                // The result in proto names: the edge reads it into its request.
                Outcome::Done(result) => result.map(|value| value.map(HookValue::Json)),
                Outcome::Pending => {
                    tracing::warn!(
                        engine = "js",
                        hook = %call.id.trim_start_matches('\u{1}'),
                        "hook function returned a Promise that never settles (nothing left to run could settle it); the call ends at its time budget"
                    );
                    tokio::time::sleep_until(call.deadline.into()).await;
                    Err(ScriptError::Timeout)
                }
            }
        })
    }

    fn call_rpc(self: Rc<Self>, call: RpcCall) -> LocalFuture<Result<String, ScriptError>> {
        // The call runs in one poll: `nk` functions block this VM thread (see `io.rs`), so
        // there is nothing to interleave. A promise left pending waits out the budget without
        // using the CPU; the host's deadline ends the wait.
        Box::pin(async move {
            let outcome = self.current().run(&call);
            self.replace_if_poisoned();
            match outcome {
                Outcome::Done(result) => result,
                Outcome::Pending => {
                    tracing::warn!(
                        engine = "js",
                        rpc = %call.id,
                        "RPC function returned a Promise that never settles (nothing left to run could settle it); the call ends at its time budget"
                    );
                    tokio::time::sleep_until(call.deadline.into()).await;
                    Err(ScriptError::Timeout)
                }
            }
        })
    }
}

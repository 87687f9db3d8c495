//! One QuickJS VM: a runtime with its memory cap and interrupt handler, one context with the
//! modules evaluated and their `InitModule` run, and the functions they registered.
//!
//! Every JavaScript value the Rust side keeps (registered functions, the `nk` object, …)
//! lives in [`Shared`] as a `Persistent` and is released in [`JsVm`]'s `Drop` before the
//! context and the runtime: QuickJS aborts the process if a value outlives its runtime.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_runtime::{
    HookArgs, HookValue, LoadError, LogCall, ModuleSource, Nk, Registered, Registrations, RpcCall,
    ScriptError, VmSetup, code_from_number,
};
use rquickjs::context::EvalOptions;
use rquickjs::{
    Coerced, Context, Ctx, Exception, Function, Object, Persistent, Runtime, Value, qjs,
};
use rustc_hash::FxBuildHasher;
use serde_json::Value as Json;
use tokio::runtime::Handle;
use uuid::Uuid;

use crate::alloc::QuickJsAllocator;
use crate::budget::Budget;
use crate::context::CallContexts;
use crate::hook_result::{self, Walk};
use crate::hook_value::{self, FieldNames};
use crate::io::{self, WaitError};
use crate::logger::CallLoggers;
use crate::match_values::MatchValues;
use crate::{array_bounds, context, convert, freeze, initializer, logger, nakama};

/// QuickJS's limit on the native stack a script may use (its default). Deep recursion past it
/// is a `RangeError` the script can catch, not a crash; VM threads have 2 MiB stacks, so this
/// leaves ample room for the Rust frames of `nk` calls.
pub(crate) const MAX_STACK_BYTES: usize = 256 * 1024;

/// How long promise jobs may keep running after a call's deadline before the VM gives up on
/// them (a script that keeps queueing work from `then` callbacks forever). Past the deadline
/// each job is interrupted by the budget within a few thousand instructions, but a legitimate
/// deep `await` chain still unwinds one job per level: a time bound, not a job count, tells the
/// two apart (a count flagged deep chains as floods on a slow machine).
const JOB_DRAIN_GRACE: Duration = Duration::from_millis(500);

/// What the Rust side of one VM shares with its native functions (`nk`, `logger`,
/// `initializer`), which hold it through an `Rc`.
pub(crate) struct Shared {
    pub(crate) nk: Nk,
    io: Handle,
    pub(crate) budget: Rc<Budget>,
    /// QuickJS file names (module paths as displayed) → module names, for log lines.
    modules_by_file: HashMap<String, String>,
    /// The module whose `InitModule` is running; registering is refused outside of it.
    pub(crate) loading: RefCell<Option<String>>,
    /// Lower-case RPC id → function.
    pub(crate) rpcs: RefCell<HashMap<String, Registration<Function<'static>>>>,
    /// The hooks' own functions by reserved id (`rpcs` holds their JSON-text wrappers under
    /// the same ids), for [`JsVm::run_hook`].
    /// Hashed with FxHash (as the Lua engine's hooks): the ids are the host's reserved hook ids,
    /// looked up on every call; SipHash's flood resistance is not needed for names the server chose.
    pub(crate) hooks: RefCell<HashMap<String, Persistent<Function<'static>>, FxBuildHasher>>,
    /// Match handler name → handler object (the seven functions, validated), run by the
    /// match engine through `js_match_handler.rs`.
    pub(crate) matches: RefCell<BTreeMap<String, Registration<Object<'static>>>>,
    /// `initializer.registerStorageIndex` calls, in order.
    pub(crate) storage_indexes: RefCell<Vec<metafi_runtime::host::RegisteredIndex>>,
    /// Per-VM objects built once: `nk`, the logger prototype, `ctx.env`.
    pub(crate) cached: RefCell<Option<Cached>>,
    /// The atoms of proto field names, for hook values in and out.
    pub(crate) names: FieldNames,
    /// The atoms and strings every RPC's and hook's `ctx` shares.
    pub(crate) contexts: CallContexts,
    /// What every logger handed to a script shares.
    pub(crate) loggers: CallLoggers,
    /// The atoms of the objects a match's callbacks exchange (`match_values.rs`).
    pub(crate) match_values: MatchValues,
    /// The RPC or hook running on this VM (its id and trace id), which its log lines name
    /// as Nakama's do; `None` between calls. Set by [`Shared::enter`].
    pub(crate) running: RefCell<Option<(Arc<str>, Option<Uuid>)>>,
}

/// A call running on a VM ([`Shared::enter`]); no call runs once dropped.
pub(crate) struct Entered<'a>(&'a Shared);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.running.borrow_mut().take();
    }
}

pub(crate) struct Registration<T> {
    pub(crate) value: Persistent<T>,
    pub(crate) module: String,
}

pub(crate) struct Cached {
    pub(crate) nk: Persistent<Object<'static>>,
    pub(crate) logger: Persistent<Object<'static>>,
    pub(crate) env: Persistent<Object<'static>>,
    /// The same three objects as raw values, borrowed from the persistent references above:
    /// what every call passes on ([`cached_raw`]), with no reference taken and dropped.
    raw: [qjs::JSValue; 3],
}

impl Shared {
    /// Marks `call` as running until the answer is dropped: the script's log lines name it.
    pub(crate) fn enter(&self, call: &RpcCall) -> Entered<'_> {
        *self.running.borrow_mut() = Some((call.id.clone(), call.ctx.request.trace_id));
        Entered(self)
    }

    /// The running call, for a log line.
    pub(crate) fn log_call<T>(&self, write: impl FnOnce(Option<LogCall<'_>>) -> T) -> T {
        let running = self.running.borrow();
        write(running.as_ref().map(|(id, trace_id)| LogCall {
            id,
            trace_id: *trace_id,
        }))
    }

    /// The module whose code is calling a native function (for log lines); the file name if
    /// it is not a module (code built with `eval`).
    pub(crate) fn calling_module(&self, ctx: &Ctx<'_>) -> String {
        let file = ctx
            .script_or_module_name(0)
            .and_then(|atom| atom.to_string().ok())
            .unwrap_or_default();
        match self.modules_by_file.get(&file) {
            Some(module) => module.clone(),
            None => file,
        }
    }

    /// Runs an `nk` future to completion on the IO runtime, blocking this VM thread, within
    /// the running call's deadline. Past the deadline the future is cancelled and the call is
    /// marked as timed out.
    pub(crate) fn wait<T, F>(&self, future: F) -> Result<T, WaitError>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        // On an IO worker running an inline call, the worker's other tasks move to another
        // thread first (`metafi_runtime::may_block`).
        let outcome =
            metafi_runtime::may_block(|| io::block_on(&self.io, self.budget.deadline(), future));
        if matches!(outcome, Err(WaitError::Deadline)) {
            self.budget.expire();
        }
        outcome
    }

    /// Releases every JavaScript value held from Rust.
    fn release(&self) {
        self.rpcs.borrow_mut().clear();
        self.hooks.borrow_mut().clear();
        self.matches.borrow_mut().clear();
        self.cached.borrow_mut().take();
    }
}

impl<T> Clone for Registration<T>
where
    T: Clone,
{
    fn clone(&self) -> Self {
        Registration {
            value: self.value.clone(),
            module: self.module.clone(),
        }
    }
}

/// One JavaScript VM with every module loaded. Lives on one VM thread.
pub struct JsVm {
    shared: Rc<Shared>,
    // Declared after `shared` and dropped in this order: context, then runtime.
    context: Context,
    runtime: Runtime,
}

impl Drop for JsVm {
    fn drop(&mut self) {
        self.shared.release();
        self.context.with(|ctx| {
            self.shared.names.release(&ctx);
            self.shared.contexts.release(&ctx);
            self.shared.loggers.release(&ctx);
            self.shared.match_values.release(&ctx);
        });
        // Collect cycles that went through the released values before the context goes.
        self.runtime.run_gc();
    }
}

impl JsVm {
    /// Builds the VM: sandboxed context, limits, `nk`, then every module and its `InitModule`;
    /// then, if `freeze`, freezes the intrinsics and the shared objects (`freeze.rs`).
    pub(crate) fn create(setup: VmSetup, io: Handle, freeze: bool) -> Result<JsVm, LoadError> {
        let engine_error = |message: String| LoadError::Engine {
            engine: "js",
            message,
        };
        let runtime = Runtime::new_with_alloc(QuickJsAllocator)
            .map_err(|e| engine_error(format!("cannot create a QuickJS runtime: {e}")))?;
        runtime.set_memory_limit(setup.limits.memory_limit_bytes);
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        let budget = Rc::new(Budget::default());
        let interrupt = budget.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt.interrupt())));
        // QuickJS itself has no filesystem, process, network or timer API; the standard
        // library (`std`/`os` modules of quickjs-libc) is not part of rquickjs, and no module
        // loader is installed, so `import` finds nothing. What scripts can reach is `nk`.
        let context = Context::full(&runtime)
            .map_err(|e| engine_error(format!("cannot create a QuickJS context: {e}")))?;
        let shared = Rc::new(Shared {
            nk: setup.nk.clone(),
            io,
            budget,
            modules_by_file: setup
                .modules
                .iter()
                .map(|m| (m.path.display().to_string(), m.name.clone()))
                .collect(),
            loading: RefCell::new(None),
            rpcs: RefCell::new(HashMap::new()),
            hooks: RefCell::new(HashMap::default()),
            matches: RefCell::new(BTreeMap::new()),
            storage_indexes: RefCell::new(Vec::new()),
            cached: RefCell::new(None),
            names: FieldNames::default(),
            running: RefCell::new(None),
            contexts: CallContexts::default(),
            loggers: CallLoggers::default(),
            match_values: MatchValues::default(),
        });
        let vm = JsVm {
            shared,
            context,
            runtime,
        };
        vm.context.with(|ctx| {
            let intrinsics = freeze::intrinsic_names(&ctx).map_err(|e| {
                engine_error(format!("cannot list the intrinsics: {}", describe(&ctx, e)))
            })?;
            array_bounds::install(&ctx, setup.limits.memory_limit_bytes).map_err(|e| {
                engine_error(format!(
                    "cannot bound the array built-ins: {}",
                    describe(&ctx, e)
                ))
            })?;
            install(&ctx, &vm.shared).map_err(|e| {
                engine_error(format!("cannot bind the nk API: {}", describe(&ctx, e)))
            })?;
            load_modules(&ctx, &vm.shared, &setup.modules, setup.limits.load_timeout)?;
            if !freeze {
                return Ok(());
            }
            // Nothing a call does to the intrinsics or the shared objects outlives it.
            let (nk, logger_proto, env) = cached(&ctx, &vm.shared).map_err(|e| {
                engine_error(format!("cannot read the nk API: {}", describe(&ctx, e)))
            })?;
            freeze::freeze(&ctx, &intrinsics, vec![nk, logger_proto, env]).map_err(|e| {
                engine_error(format!(
                    "cannot freeze the intrinsics after InitModule: {}",
                    describe(&ctx, e)
                ))
            })
        })?;
        vm.runtime.run_gc();
        Ok(vm)
    }

    /// The VM's shared state (match handlers run in their own VM: `js_match_handler.rs`).
    pub(crate) fn shared(&self) -> &Rc<Shared> {
        &self.shared
    }

    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// Whether a call left promise jobs in this VM's queue that nothing can drain: the
    /// VM must be replaced (`rpc_vm.rs`; match VMs are evicted, `js_match_handler.rs`).
    pub(crate) fn is_poisoned(&self) -> bool {
        self.shared.budget.jobs_left()
    }

    pub(crate) fn registrations(&self) -> Registrations {
        let mut rpcs: Vec<Registered> = self
            .shared
            .rpcs
            .borrow()
            .iter()
            .map(|(id, r)| Registered {
                id: id.clone(),
                module: r.module.clone(),
            })
            .collect();
        rpcs.sort_by(|a, b| a.id.cmp(&b.id));
        let matches = self
            .shared
            .matches
            .borrow()
            .iter()
            .map(|(name, r)| Registered {
                id: name.clone(),
                module: r.module.clone(),
            })
            .collect();
        Registrations {
            rpcs,
            matches,
            storage_indexes: self.shared.storage_indexes.borrow().clone(),
        }
    }

    pub(crate) fn run(&self, call: &RpcCall) -> Outcome {
        let Some(rpc) = self.shared.rpcs.borrow().get(&*call.id).cloned() else {
            return Outcome::Done(Err(ScriptError::Failed {
                message: "RPC function not found".into(),
                detail: format!("RPC '{}' is not registered on this VM", call.id),
            }));
        };
        let _entered = self.shared.enter(call);
        let budget = &self.shared.budget;
        budget.start(call.deadline);
        let outcome = self.context.with(|ctx| {
            let result = invoke(&ctx, &self.shared, &rpc, call);
            run_jobs(&ctx, budget);
            match result {
                Ok(value) => settle(&ctx, &self.shared, value),
                Err(e) => Outcome::Done(Err(classify(&ctx, &self.shared, e))),
            }
        });
        budget.stop();
        outcome
    }
}

/// Runs the hook stored under `call.id` with `args` as JavaScript values built straight from
/// the JSON values (names in `lowerCamelCase`, as Nakama's JavaScript runtime shows them; no
/// JSON text), and reads a before hook's result back in proto names.
impl JsVm {
    pub(crate) fn run_hook(&self, call: &RpcCall, args: HookArgs) -> Outcome<Option<Json>> {
        let Some(function) = self.shared.hooks.borrow().get(&*call.id).cloned() else {
            return Outcome::Done(Err(ScriptError::Failed {
                message: "RPC function not found".into(),
                detail: format!("hook '{}' is not registered on this VM", call.id),
            }));
        };
        let _entered = self.shared.enter(call);
        let budget = &self.shared.budget;
        budget.start(call.deadline);
        let after = matches!(args, HookArgs::After { .. });
        let outcome = self.context.with(|ctx| {
            let result = invoke_hook(&ctx, &self.shared, function, call, args);
            run_jobs(&ctx, budget);
            let value = match result {
                Ok(value) => value,
                Err(e) => return Outcome::Done(Err(classify(&ctx, &self.shared, e))),
            };
            if budget.expired() {
                return Outcome::Done(Err(ScriptError::Timeout));
            }
            let value = match settled(&ctx, &self.shared, value) {
                Settled::Value(value) => value,
                Settled::Failed(e) => return Outcome::Done(Err(e)),
                Settled::Pending => return Outcome::Pending,
            };
            // An after hook's result is ignored, as Nakama does.
            if after || value.is_undefined() || value.is_null() {
                return Outcome::Done(Ok(None));
            }
            // Plain data straight into proto names; anything else through JSON.stringify.
            match hook_result::read(&value, &self.shared.names) {
                Ok(Walk::Plain(json)) => return Outcome::Done(Ok(Some(json))),
                Ok(Walk::Unplain) => {}
                Err(e) => return Outcome::Done(Err(classify(&ctx, &self.shared, e))),
            }
            match convert::to_json_text(&ctx, value) {
                Ok(None) => Outcome::Done(Ok(None)),
                Ok(Some(text)) => {
                    Outcome::Done(convert::hook_result(&text).map(Some).map_err(|e| {
                        ScriptError::BadResult {
                            found: format!("text that is not JSON ({e})"),
                        }
                    }))
                }
                Err(e) => Outcome::Done(Err(classify(&ctx, &self.shared, e))),
            }
        });
        budget.stop();
        outcome
    }
}

/// Calls a hook function with `(ctx, logger, nk, data)`, or `(ctx, logger, nk, output,
/// input)` after.
fn invoke_hook<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    function: Persistent<Function<'static>>,
    call: &RpcCall,
    args: HookArgs,
) -> rquickjs::Result<Value<'js>> {
    let value = |value: Option<HookValue>| match value {
        Some(value) => hook_value::build_value(ctx, &shared.names, value),
        None => Ok(Value::new_null(ctx.clone())),
    };
    let (data, input) = match args {
        HookArgs::Before(input) => (value(input)?, None),
        HookArgs::After { output, input } => (value(output)?, Some(value(input)?)),
    };
    call_with_context(ctx, shared, function.restore(ctx)?, call, data, input)
}

/// `function(ctx, logger, nk, data[, input])` with `call`'s context and a new logger: how
/// every RPC and hook is called.
fn call_with_context<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    function: Function<'js>,
    call: &RpcCall,
    data: Value<'js>,
    input: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let [nk, logger_proto, env] = cached_raw(ctx, shared)?;
    let context = shared.contexts.build(ctx, &shared.names, env, &call.ctx)?;
    let logger = shared.loggers.build(ctx, &shared.names, logger_proto)?;
    let argv = [
        context.as_raw(),
        logger.as_raw(),
        nk,
        data.as_raw(),
        input.as_ref().map_or(qjs::JS_UNDEFINED, Value::as_raw),
    ];
    call_raw(ctx, &function, &argv[..if input.is_some() { 5 } else { 4 }])
}

/// `function(...argv)` with `this` undefined, through QuickJS's C API: rquickjs's argument
/// list allocates and converts per value.
#[allow(unsafe_code)] // the one raw call of this module; see the SAFETY notes
fn call_raw<'js>(
    ctx: &Ctx<'js>,
    function: &Function<'js>,
    args: &[qjs::JSValue],
) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    let mut argv = [qjs::JS_UNDEFINED; 16];
    let argv = &mut argv[..args.len()];
    argv.copy_from_slice(args);
    // SAFETY: the function and every argument are live values of `ctx` (borrowed: `JS_Call`
    // does not take ownership of them); the answer is owned or `JS_EXCEPTION`.
    let result = unsafe {
        qjs::JS_Call(
            raw,
            function.as_raw(),
            qjs::JS_UNDEFINED,
            argv.len() as _,
            argv.as_mut_ptr(),
        )
    };
    if unsafe { qjs::JS_IsException(result) } {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: owned, from `ctx`'s runtime.
    Ok(unsafe { Value::from_raw(ctx.clone(), result) })
}

/// How a call left the VM.
pub(crate) enum Outcome<T = String> {
    Done(Result<T, ScriptError>),
    /// The function returned a promise that is still pending although the job queue ran dry:
    /// the call is not done, and nothing in the VM can finish it (`nk` is synchronous and
    /// there are no timers), so it runs until its deadline like any other call that does not
    /// end.
    Pending,
}

/// Builds the per-VM objects: `nk`, the logger prototype and `ctx.env`.
fn install<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<()> {
    let nk = nakama::object(ctx, shared)?;
    let logger = logger::prototype(ctx, shared)?;
    let env = convert::string_map(ctx, shared.nk.env().iter())?;
    let raw = [nk.as_raw(), logger.as_raw(), env.as_raw()];
    *shared.cached.borrow_mut() = Some(Cached {
        raw,
        nk: Persistent::save(ctx, nk),
        logger: Persistent::save(ctx, logger),
        env: Persistent::save(ctx, env),
    });
    Ok(())
}

/// The cached `nk` object, logger prototype and `env`, restored into `ctx`.
pub(crate) fn cached<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
) -> rquickjs::Result<(Object<'js>, Object<'js>, Object<'js>)> {
    let cached = shared.cached.borrow();
    let Some(cached) = cached.as_ref() else {
        return Err(Exception::throw_internal(
            ctx,
            "the nk API is not bound to this VM",
        ));
    };
    Ok((
        cached.nk.clone().restore(ctx)?,
        cached.logger.clone().restore(ctx)?,
        cached.env.clone().restore(ctx)?,
    ))
}

/// The cached `nk` object, logger prototype and `env` as raw values of `ctx`, borrowed: live
/// while the VM is (`Shared::cached` is only emptied when the VM goes), so a call passes them
/// on without a reference of its own.
fn cached_raw(ctx: &Ctx<'_>, shared: &Shared) -> rquickjs::Result<[qjs::JSValue; 3]> {
    match shared.cached.borrow().as_ref() {
        Some(cached) => Ok(cached.raw),
        None => Err(Exception::throw_internal(
            ctx,
            "the nk API is not bound to this VM",
        )),
    }
}

/// Evaluates each module in path order as a classic script in the shared global scope (as if
/// the files were concatenated, which is how Nakama bundles are built), and runs the
/// `InitModule` each one defines. A module that defines none is a library for the others.
fn load_modules<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    modules: &[ModuleSource],
    budget: Duration,
) -> Result<(), LoadError> {
    let mut last_init: Option<Function<'js>> = None;
    for module in modules {
        shared.budget.start(Instant::now() + budget);
        let outcome = load_module(ctx, shared, module, &mut last_init);
        run_jobs(ctx, &shared.budget);
        let expired = shared.budget.expired();
        shared.budget.stop();
        *shared.loading.borrow_mut() = None;
        match outcome {
            Ok(()) if !expired => {}
            Ok(()) => return Err(load_timeout(&module.path, budget)),
            Err(e) => return Err(load_error(ctx, shared, modules, module, e, budget)),
        }
    }
    if last_init.is_none()
        && let Some(first) = modules.first()
    {
        return Err(LoadError::Module {
            path: first.path.clone(),
            line: 0,
            message: "InitModule function not found. Define `function InitModule(ctx, logger, nk, initializer)` at the top level of a module.".into(),
        });
    }
    Ok(())
}

fn load_module<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    module: &ModuleSource,
    last_init: &mut Option<Function<'js>>,
) -> rquickjs::Result<()> {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some(module.path.display().to_string());
    ctx.eval_with_options::<Value<'js>, _>(module.text.as_bytes(), options)?;

    let init: Value<'js> = ctx.eval("typeof InitModule === 'function' ? InitModule : undefined")?;
    let Some(init) = init.into_function() else {
        return Ok(());
    };
    if last_init.as_ref() == Some(&init) {
        // This module did not define its own InitModule; the global one already ran.
        return Ok(());
    }
    *last_init = Some(init.clone());
    *shared.loading.borrow_mut() = Some(module.name.clone());
    let (nk, logger_proto, env) = cached(ctx, shared)?;
    let init_ctx = context::init_object(ctx, shared, env)?;
    let logger = shared
        .loggers
        .build(ctx, &shared.names, logger_proto.as_raw())?;
    let initializer = initializer::object(ctx, shared)?;
    let result: Value<'js> = init.call((init_ctx, logger, nk, initializer))?;
    if let Some(promise) = result.as_promise() {
        run_jobs(ctx, &shared.budget);
        // A rejected InitModule fails the load like a throwing one; one that can never settle
        // would leave the module half initialised.
        match promise.result::<Value<'js>>() {
            Some(Err(e)) => return Err(e),
            Some(Ok(_)) => {}
            None if shared.budget.expired() => {}
            None => {
                return Err(Exception::throw_message(
                    ctx,
                    "InitModule returned a Promise that never settles (nothing left to run could settle it)",
                ));
            }
        }
    }
    Ok(())
}

/// Calls the RPC function with `(ctx, logger, nk, payload)`.
fn invoke<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    rpc: &Registration<Function<'static>>,
    call: &RpcCall,
) -> rquickjs::Result<Value<'js>> {
    let function = rpc.value.clone().restore(ctx)?;
    let payload = rquickjs::String::from_str(ctx.clone(), &call.payload)?.into_value();
    call_with_context(ctx, shared, function, call, payload, None)
}

/// Runs queued promise jobs (the script's microtasks) until none is left, as a JavaScript
/// host does after each task. Past the deadline each job is interrupted quickly; a script that
/// still has jobs queued [`JOB_DRAIN_GRACE`] after its deadline is abandoned, and the jobs it
/// left mark the VM for replacement ([`Budget::jobs_left`]): QuickJS has no way to empty the
/// queue.
pub(crate) fn run_jobs(ctx: &Ctx<'_>, budget: &Budget) {
    let mut past_deadline = 0_u64;
    while ctx.execute_pending_job() {
        if budget.is_over() {
            budget.expire();
            past_deadline += 1;
            let abandoned = budget
                .deadline()
                .is_some_and(|at| Instant::now() >= at + JOB_DRAIN_GRACE);
            if abandoned {
                tracing::warn!(
                    engine = "js",
                    jobs = past_deadline,
                    "a script keeps queueing promise jobs past its deadline; its VM will be replaced"
                );
                budget.leave_jobs();
                return;
            }
        }
    }
}

/// The outcome of a call whose function returned `value` (after its jobs ran).
fn settle<'js>(ctx: &Ctx<'js>, shared: &Shared, value: Value<'js>) -> Outcome {
    if shared.budget.expired() {
        return Outcome::Done(Err(ScriptError::Timeout));
    }
    let value = match settled(ctx, shared, value) {
        Settled::Value(value) => value,
        Settled::Failed(e) => return Outcome::Done(Err(e)),
        Settled::Pending => return Outcome::Pending,
    };
    Outcome::Done(result_string(value))
}

/// A callback's return value with a promise unwrapped (after the job queue ran dry).
pub(crate) enum Settled<'js> {
    Value(Value<'js>),
    Failed(ScriptError),
    /// A promise still pending: nothing left in the VM can settle it.
    Pending,
}

/// Unwraps a returned promise: its value, its rejection as the call's error, or `Pending`.
pub(crate) fn settled<'js>(ctx: &Ctx<'js>, shared: &Shared, value: Value<'js>) -> Settled<'js> {
    let Some(promise) = value.as_promise() else {
        return Settled::Value(value);
    };
    match promise.result::<Value<'js>>() {
        Some(Ok(value)) => Settled::Value(value),
        Some(Err(e)) => Settled::Failed(classify(ctx, shared, e)),
        None => Settled::Pending,
    }
}

/// An RPC function's result: a string, or nothing (`""`).
fn result_string(value: Value<'_>) -> Result<String, ScriptError> {
    if value.is_undefined() || value.is_null() {
        return Ok(String::new());
    }
    match value.as_string() {
        Some(text) => text.to_string().map_err(|e| ScriptError::Failed {
            message: "RPC function returned a string that is not valid Unicode (a lone surrogate)."
                .into(),
            detail: e.to_string(),
        }),
        None => Err(ScriptError::BadResult {
            found: value.type_name().to_owned(),
        }),
    }
}

/// Turns a failed call into the host's error.
pub(crate) fn classify(ctx: &Ctx<'_>, shared: &Shared, error: rquickjs::Error) -> ScriptError {
    let thrown = matches!(error, rquickjs::Error::Exception).then(|| ctx.catch());
    if shared.budget.expired() {
        return ScriptError::Timeout;
    }
    match thrown {
        Some(value) if is_out_of_memory(&value) => {
            ctx.run_gc();
            ScriptError::OutOfMemory
        }
        Some(value) => thrown_error(ctx, value),
        None if matches!(error, rquickjs::Error::Allocation) => {
            ctx.run_gc();
            ScriptError::OutOfMemory
        }
        None => ScriptError::Failed {
            message: "RPC function could not be called.".into(),
            detail: error.to_string(),
        },
    }
}

/// QuickJS reports an allocation past the memory cap as an `InternalError` "out of memory",
/// with an empty message when the message could not be allocated, and throws `null` when not
/// even the error object could be. (A script that throws `null` itself is therefore reported
/// as out of memory too; nothing else distinguishes the two.)
fn is_out_of_memory(value: &Value<'_>) -> bool {
    if value.is_null() {
        return true;
    }
    if !value.is_error() {
        return false;
    }
    let Some(object) = value.as_object() else {
        return false;
    };
    let name = object.get::<_, Option<String>>("name").ok().flatten();
    let message = object.get::<_, Option<String>>("message").ok().flatten();
    name.as_deref() == Some("InternalError")
        && matches!(message.as_deref(), None | Some("") | Some("out of memory"))
}

/// What a thrown value means, as Nakama reads it: an object with a numeric `code` is a
/// deliberate error with that gRPC code and its `message`; anything else is an uncaught
/// error (code 13) whose message goes to the client and whose stack goes to the log.
fn thrown_error<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> ScriptError {
    let Some(object) = value.as_object() else {
        let message = display(ctx, &value);
        return ScriptError::Failed {
            detail: message.clone(),
            message,
        };
    };
    let message = property(ctx, object, "message").and_then(|m| convert::string(&m));
    if let Some(code) = property(ctx, object, "code").and_then(|c| convert::integer(&c)) {
        return ScriptError::Raised {
            code: code_from_number(code),
            message: message.unwrap_or_default(),
        };
    }
    let stack = property(ctx, object, "stack").and_then(|s| convert::string(&s));
    let message = message.unwrap_or_else(|| display(ctx, &value));
    let detail = match (value.is_error(), stack) {
        (true, Some(stack)) => {
            let name = property(ctx, object, "name")
                .and_then(|n| convert::string(&n))
                .unwrap_or_else(|| "Error".into());
            format!("{name}: {message}\n{stack}")
        }
        _ => message.clone(),
    };
    ScriptError::Failed { message, detail }
}

/// `object[key]`, or `None` if reading it threw (a getter, a proxy).
fn property<'js>(ctx: &Ctx<'js>, object: &Object<'js>, key: &str) -> Option<Value<'js>> {
    match object.get::<_, Value<'js>>(key) {
        Ok(value) if !value.is_undefined() => Some(value),
        Ok(_) => None,
        Err(_) => {
            ctx.catch();
            None
        }
    }
}

/// `String(value)`, or its type if even that throws.
pub(crate) fn display<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    match value.get::<Coerced<String>>() {
        Ok(text) => text.0,
        Err(_) => {
            ctx.catch();
            format!("a thrown {}", value.type_name())
        }
    }
}

/// A Rust-side error while binding, as text.
fn describe(ctx: &Ctx<'_>, error: rquickjs::Error) -> String {
    match error {
        rquickjs::Error::Exception => {
            let value = ctx.catch();
            display(ctx, &value)
        }
        other => other.to_string(),
    }
}

fn load_timeout(path: &Path, budget: Duration) -> LoadError {
    LoadError::Module {
        path: path.to_owned(),
        line: 0,
        message: format!(
            "loading took longer than runtime.load_timeout_ms ({} ms)",
            budget.as_millis()
        ),
    }
}

/// A module that failed to load, as `path:line: message`. The position is the innermost
/// stack frame in one of the modules (an error may come from a helper in another file).
fn load_error(
    ctx: &Ctx<'_>,
    shared: &Shared,
    modules: &[ModuleSource],
    module: &ModuleSource,
    error: rquickjs::Error,
    budget: Duration,
) -> LoadError {
    let thrown = matches!(error, rquickjs::Error::Exception).then(|| ctx.catch());
    if shared.budget.expired() {
        return load_timeout(&module.path, budget);
    }
    let Some(value) = thrown else {
        return LoadError::Module {
            path: module.path.clone(),
            line: 0,
            message: match error {
                rquickjs::Error::Allocation => {
                    "loading ran out of memory (runtime.memory_limit_mb)".into()
                }
                rquickjs::Error::InvalidString(_) => "the module contains a NUL character".into(),
                other => other.to_string(),
            },
        };
    };
    if is_out_of_memory(&value) {
        return LoadError::Module {
            path: module.path.clone(),
            line: 0,
            message: "loading ran out of memory (runtime.memory_limit_mb)".into(),
        };
    }
    let (message, stack) = match value.as_object() {
        Some(object) if value.is_error() => {
            let name = property(ctx, object, "name")
                .and_then(|n| convert::string(&n))
                .unwrap_or_else(|| "Error".into());
            let message = property(ctx, object, "message")
                .and_then(|m| convert::string(&m))
                .unwrap_or_default();
            let stack = property(ctx, object, "stack")
                .and_then(|s| convert::string(&s))
                .unwrap_or_default();
            (format!("{name}: {message}"), stack)
        }
        Some(object) => {
            let message = property(ctx, object, "message")
                .and_then(|m| convert::string(&m))
                .unwrap_or_else(|| display(ctx, &value));
            (message, String::new())
        }
        None => (display(ctx, &value), String::new()),
    };
    let (path, line) = stack_position(&stack, modules).unwrap_or((module.path.clone(), 0));
    LoadError::Module {
        path,
        line,
        message,
    }
}

/// The first frame of a QuickJS stack trace (`    at f (path:line:column)` or
/// `    at path:line:column`) that lies in one of `modules`.
fn stack_position(stack: &str, modules: &[ModuleSource]) -> Option<(PathBuf, u32)> {
    stack.lines().find_map(|frame| {
        let frame = frame.trim().strip_prefix("at ")?;
        let location = match (frame.rfind('('), frame.ends_with(')')) {
            (Some(open), true) => &frame[open + 1..frame.len() - 1],
            _ => frame,
        };
        let mut parts = location.rsplitn(3, ':');
        let _column = parts.next()?;
        let line: u32 = parts.next()?.parse().ok()?;
        let file = parts.next()?;
        modules
            .iter()
            .find(|m| m.path.display().to_string() == file)
            .map(|m| (m.path.clone(), line))
    })
}

/// Raises a failed wait into the script.
pub(crate) fn wait_error(ctx: &Ctx<'_>, what: &str, error: WaitError) -> rquickjs::Error {
    match error {
        WaitError::Deadline => Exception::throw_message(
            ctx,
            &format!("{what}: the call ran out of time while waiting (runtime.call_timeout_ms)"),
        ),
        WaitError::Lost => {
            Exception::throw_message(ctx, &format!("{what}: the server is stopping"))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn module(path: &str) -> ModuleSource {
        ModuleSource {
            name: "m".into(),
            path: PathBuf::from(path),
            text: Arc::from(""),
        }
    }

    #[test]
    fn stack_positions_name_the_innermost_module_frame() {
        let modules = [module("mods/a.js"), module("mods/b.js")];
        let stack =
            "    at helper (native)\n    at f (mods/b.js:12:3)\n    at <eval> (mods/a.js:4:1)\n";
        assert_eq!(
            stack_position(stack, &modules),
            Some((PathBuf::from("mods/b.js"), 12))
        );
        assert_eq!(
            stack_position("    at mods/a.js:3:5\n", &modules),
            Some((PathBuf::from("mods/a.js"), 3))
        );
        assert_eq!(
            stack_position("    at f (eval_script:1:2)\n", &modules),
            None
        );
        assert_eq!(stack_position("", &modules), None);
    }
}

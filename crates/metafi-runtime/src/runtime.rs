//! The runtime: loads native modules and script modules at start, routes each RPC id to the
//! runtime that registered it, enforces the call budget, and turns every outcome into the
//! caller's result, a log line and metrics.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt;
use metafi_core::{CoreError, RpcContext, RpcDispatch};
use metafi_match::MatchmakerHook;
use metafi_proto::Code;

use crate::context::{CallContext, ExecutionMode};
use crate::error::{LoadError, ScriptError};
use crate::hooks::{
    HOOK_KEY_PREFIX, HookRegistry, HookTarget, LEADERBOARD_RESET_KEY, Registered as RegisteredHook,
    RuntimeHooks, SHUTDOWN_KEY, TOURNAMENT_END_KEY, TOURNAMENT_RESET_KEY, is_notification_key,
    parse_hook_key,
};
use crate::host::{EngineFactory, VmLimits, VmSetup};
use crate::log_limit::LogLimit;
use crate::match_host::{
    EngineMatches, MATCHMAKER_MATCHED_HOOK, MatchHandlers, NativeHook, PoolHook,
};
use crate::modules;
use crate::native::{NativeInitializer, NativeModule, NativeRpc};
use crate::nk::{Nk, RuntimeServices};
use crate::pool::{DispatchError, InlineConfig, PoolConfig, VmPool};
use crate::storage_indexes::IndexSetup;

/// The validated `[runtime]` settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory of script modules (`runtime.path`).
    pub path: PathBuf,
    /// Node name, shown to scripts as `ctx.node`.
    pub node: String,
    /// `runtime.env`: strings every script sees as `ctx.env`.
    pub env: HashMap<String, String>,
    /// Budget of one call, in every runtime (native included).
    pub call_timeout: Duration,
    /// Budget of module loading, per module.
    pub load_timeout: Duration,
    /// Heap cap of one script VM.
    pub memory_limit_bytes: usize,
    /// Pool sizes by engine name; an engine without an entry gets [`RuntimeConfig::default_pool`].
    pub pools: HashMap<String, PoolConfig>,
}

impl RuntimeConfig {
    /// One VM per core, 64 calls in flight per VM, 64 queued calls per VM.
    pub fn default_pool() -> PoolConfig {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        PoolConfig {
            vms: cores,
            max_calls_per_vm: 64,
            queue_capacity: 64 * cores,
        }
    }
}

/// Builds a [`Runtime`]: services, native modules and script engines, then [`start`].
///
/// [`start`]: RuntimeBuilder::start
pub struct RuntimeBuilder {
    config: RuntimeConfig,
    services: RuntimeServices,
    natives: Vec<Arc<dyn NativeModule>>,
    engines: Vec<Arc<dyn EngineFactory>>,
    watchdog_grace: Duration,
    log_limit: LogLimit,
    inline_vms: usize,
    errors: Option<Arc<metafi_core::ModuleErrors>>,
}

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("config", &self.config)
            .field(
                "natives",
                &self.natives.iter().map(|n| n.name()).collect::<Vec<_>>(),
            )
            .field(
                "engines",
                &self.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl RuntimeBuilder {
    pub fn new(config: RuntimeConfig, services: RuntimeServices) -> RuntimeBuilder {
        RuntimeBuilder {
            config,
            services,
            natives: Vec::new(),
            engines: Vec::new(),
            watchdog_grace: crate::DEFAULT_WATCHDOG_GRACE,
            log_limit: LogLimit::default(),
            inline_vms: default_inline_vms(),
            errors: None,
        }
    }

    /// Where failed RPCs and hooks are recorded, per module (the console's last errors; the
    /// node shares it with the match engine). Default: a log of its own keeping
    /// [`metafi_core::module_errors::DEFAULT_ERRORS_PER_MODULE`] per module.
    pub fn error_log(mut self, errors: Arc<metafi_core::ModuleErrors>) -> RuntimeBuilder {
        self.errors = Some(errors);
        self
    }

    /// Most VMs each script engine may build on IO threads to run calls there without a
    /// thread hop (`runtime.inline_vms`; `docs/RUNTIME.md`, "Calls without thread hops").
    /// 0 sends every call through the engine's VM pool. Default: two per core.
    pub fn inline_vms(mut self, max_vms: usize) -> RuntimeBuilder {
        self.inline_vms = max_vms;
        self
    }

    /// How long a call may keep its VM thread busy past its deadline before the VM is declared
    /// wedged and replaced (`runtime.watchdog_grace_ms`; see `crate::watchdog`).
    pub fn watchdog_grace(mut self, grace: Duration) -> RuntimeBuilder {
        self.watchdog_grace = grace;
        self
    }

    /// The per-module log rate limit of every runtime's logger (default: [`LogLimit::default`]).
    pub fn log_limit(mut self, limit: LogLimit) -> RuntimeBuilder {
        self.log_limit = limit;
        self
    }

    /// Adds a native module (compiled into the binary).
    pub fn native(mut self, module: Arc<dyn NativeModule>) -> RuntimeBuilder {
        self.natives.push(module);
        self
    }

    /// Adds a script engine; it loads the files under `runtime.path` with its extensions.
    pub fn engine(mut self, engine: Arc<dyn EngineFactory>) -> RuntimeBuilder {
        self.engines.push(engine);
        self
    }

    /// Initialises native modules, then starts each engine that has modules (its VM threads
    /// load every module). Any failure is returned and nothing keeps running.
    pub async fn start(self) -> Result<Runtime, LoadError> {
        let config = self.config;
        let node: Arc<str> = Arc::from(config.node.as_str());
        let env = Arc::new(config.env.clone());
        let mut services = self.services;
        // `nk.file_read` reads under the module directory unless the server chose a root.
        services
            .utilities
            .modules_root
            .get_or_insert_with(|| config.path.clone());
        let nk = Nk::with_log_limit(services, node.clone(), env.clone(), self.log_limit);
        let mut routes: HashMap<String, Route> = HashMap::new();
        // Match handlers and the matchmaker hook (docs/MATCHES.md).
        let mut native_matches = Vec::new();
        let mut native_hook = None;
        let mut engine_matches = Vec::new();
        let mut hook_pool: Option<Arc<VmPool>> = None;
        let errors = self.errors.clone().unwrap_or_else(|| {
            Arc::new(metafi_core::ModuleErrors::new(
                metafi_core::module_errors::DEFAULT_ERRORS_PER_MODULE,
                Arc::new(metafi_core::SystemClock),
            ))
        });
        let mut hooks = HookRegistry::default();
        let mut storage_indexes = IndexSetup::default();

        for module in &self.natives {
            let mut initializer = NativeInitializer::new(nk.clone());
            module
                .init(&mut initializer)
                .map_err(|e| LoadError::Native {
                    module: module.name(),
                    message: e.to_string(),
                })?;
            if let Some(problem) = initializer.problems.first() {
                return Err(LoadError::Native {
                    module: module.name(),
                    message: problem.clone(),
                });
            }
            for (id, function) in initializer.rpcs {
                let route =
                    Route::new("native", Arc::from(module.name()), Target::Native(function));
                insert_route(&mut routes, id, route)?;
            }
            native_matches.extend(initializer.matches);
            storage_indexes.add_native(
                module.name(),
                initializer.storage_indexes,
                initializer.index_filters,
            );
            let module_name: Arc<str> = Arc::from(module.name());
            let native = |target| RegisteredHook {
                runtime: "native",
                module: module_name.clone(),
                target,
            };
            for (mode, kind, name, target) in initializer.hooks {
                hooks.add(mode, kind, &name, native(target));
            }
            if let Some(function) = initializer.shutdown {
                hooks.add_shutdown(native(HookTarget::NativeShutdown(function)));
            }
            if let Some(hook) = initializer.matchmaker_matched {
                native_hook = Some(hook);
            }
            if let Some(events) = nk.events() {
                for function in initializer.events {
                    let nk = nk.clone();
                    let base = CallContext {
                        mode: ExecutionMode::Event,
                        ..CallContext::load(node.clone(), env.clone())
                    };
                    events.register(Arc::new(move |request, event| {
                        let ctx = Arc::new(CallContext {
                            request,
                            ..base.clone()
                        });
                        function(ctx, nk.clone(), event)
                    }));
                }
            }
        }

        let limits = VmLimits {
            call_timeout: config.call_timeout,
            memory_limit_bytes: config.memory_limit_bytes,
            load_timeout: config.load_timeout,
        };
        let mut pools: Vec<Arc<VmPool>> = Vec::new();
        for engine in self.engines {
            let found = modules::discover(&config.path, engine.extensions())?;
            if found.is_empty() {
                continue;
            }
            let count = found.len();
            let setup = VmSetup {
                modules: Arc::from(found),
                nk: nk.clone(),
                limits,
                index: 0,
            };
            let pool_config = config
                .pools
                .get(engine.name())
                .copied()
                .unwrap_or_else(RuntimeConfig::default_pool);
            let match_setup = setup.clone();
            let inline = InlineConfig {
                max_vms: self.inline_vms,
            };
            let pool = match VmPool::start(
                engine.clone(),
                setup,
                pool_config,
                self.watchdog_grace,
                inline,
            )
            .await
            {
                Ok(pool) => Arc::new(pool),
                Err(e) => {
                    for pool in &pools {
                        pool.shutdown(Duration::from_secs(5)).await;
                    }
                    return Err(e);
                }
            };
            tracing::info!(
                engine = pool.engine(),
                modules = count,
                vms = pool_config.vms,
                rpcs = ?pool.registrations().rpcs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
                "script modules loaded"
            );
            pools.push(pool.clone());
            // Storage index filters run on a VM of their own: a call that writes an indexed
            // object waits for its filter, and a JavaScript VM blocks while it waits (one call
            // per VM), so the filter must never need the caller's pool.
            let filter_pool = if IndexSetup::has_filters(pool.registrations()) {
                let filter_config = PoolConfig {
                    vms: 1,
                    ..pool_config
                };
                // Never inline: the filter's VM is this pool's own, whatever thread writes.
                match VmPool::start(
                    engine.clone(),
                    match_setup.clone(),
                    filter_config,
                    self.watchdog_grace,
                    InlineConfig { max_vms: 0 },
                )
                .await
                {
                    Ok(filter_pool) => {
                        let filter_pool = Arc::new(filter_pool);
                        pools.push(filter_pool.clone());
                        filter_pool
                    }
                    Err(e) => {
                        for pool in &pools {
                            pool.shutdown(Duration::from_secs(5)).await;
                        }
                        return Err(e);
                    }
                }
            } else {
                pool.clone()
            };
            storage_indexes.add_pool(&filter_pool, pool.registrations());
            engine_matches.push(EngineMatches {
                factory: engine.clone(),
                setup: match_setup,
                registrations: pool.registrations().clone(),
            });
            for registered in &pool.registrations().rpcs {
                if registered.id == MATCHMAKER_MATCHED_HOOK {
                    // A hook, not an RPC: never reachable by clients.
                    hook_pool.get_or_insert_with(|| pool.clone());
                    continue;
                }
                if registered.id.starts_with(HOOK_KEY_PREFIX) {
                    // Before/after hooks and the shutdown function: never reachable by clients.
                    let hook = RegisteredHook {
                        runtime: pool.engine(),
                        module: Arc::from(registered.module.as_str()),
                        target: HookTarget::Pool {
                            pool: pool.clone(),
                            key: Arc::from(registered.id.as_str()),
                        },
                    };
                    if registered.id == SHUTDOWN_KEY {
                        hooks.add_shutdown(hook);
                    } else if registered.id == LEADERBOARD_RESET_KEY {
                        hooks.add_leaderboard_reset(hook);
                    } else if registered.id == TOURNAMENT_END_KEY {
                        hooks.add_tournament_end(hook);
                    } else if registered.id == TOURNAMENT_RESET_KEY {
                        hooks.add_tournament_reset(hook);
                    } else if is_notification_key(&registered.id) {
                        hooks.add_notification(&registered.id, hook);
                    } else if let Some((mode, kind, name)) = parse_hook_key(&registered.id) {
                        hooks.add(mode, kind, name, hook);
                    }
                    continue;
                }
                let route = Route::new(
                    pool.engine(),
                    Arc::from(registered.module.as_str()),
                    Target::Pool(pool.clone()),
                );
                if let Err(e) = insert_route(&mut routes, registered.id.clone(), route) {
                    for pool in &pools {
                        pool.shutdown(Duration::from_secs(5)).await;
                    }
                    return Err(e);
                }
            }
        }

        let matchmaker_hook: Option<Arc<dyn MatchmakerHook>> = match (native_hook, hook_pool) {
            (Some(function), _) => Some(Arc::new(NativeHook {
                function,
                nk: nk.clone(),
                timeout: config.call_timeout,
            })),
            (None, Some(pool)) => Some(Arc::new(PoolHook {
                pool,
                ctx: Arc::new(CallContext {
                    mode: ExecutionMode::Matchmaker,
                    ..CallContext::load(node.clone(), env.clone())
                }),
            })),
            (None, None) => None,
        };
        let index_context = Arc::new(CallContext::load(node.clone(), env.clone()));
        if let Err(e) = storage_indexes
            .install(&nk, config.call_timeout, index_context)
            .await
        {
            for pool in &pools {
                pool.shutdown(Duration::from_secs(5)).await;
            }
            return Err(e);
        }
        let hooks = hooks.finish(
            nk.clone(),
            Arc::new(CallContext::load(node.clone(), env.clone())),
            config.call_timeout,
            errors.clone(),
        );
        Ok(Runtime {
            errors,
            hooks: Arc::new(hooks),
            match_handlers: Arc::new(MatchHandlers::new(native_matches, engine_matches)),
            matchmaker_hook,
            routes: routes
                .into_iter()
                .map(|(id, route)| (id.clone(), (Arc::from(id.as_str()), route)))
                .collect(),
            pools,
            nk,
            node,
            env,
            call_timeout: config.call_timeout,
        })
    }
}

fn insert_route(
    routes: &mut HashMap<String, Route>,
    id: String,
    route: Route,
) -> Result<(), LoadError> {
    if let Some(existing) = routes.get(&id) {
        return Err(LoadError::DuplicateRpc {
            id,
            first: format!("{} module {}", existing.runtime, existing.module),
            second: format!("{} module {}", route.runtime, route.module),
        });
    }
    routes.insert(id, route);
    Ok(())
}

/// Where an RPC id runs.
struct Route {
    runtime: &'static str,
    module: Arc<str>,
    target: Target,
    /// The id's duration histogram and its `outcome="ok"` counter, each resolved on first use:
    /// the `histogram!`/`counter!` macros build the labelled key and look it up in the
    /// registry on every call, which was two lookups per RPC. Resolved lazily, not at load, so
    /// a series appears in `/metrics` only once it has something to count (as before) and the
    /// handles come from the recorder installed by then. Other outcomes are rare and keep the
    /// macro.
    duration: OnceLock<metrics::Histogram>,
    ok: OnceLock<metrics::Counter>,
}

impl Route {
    fn new(runtime: &'static str, module: Arc<str>, target: Target) -> Route {
        Route {
            runtime,
            module,
            target,
            duration: OnceLock::new(),
            ok: OnceLock::new(),
        }
    }

    fn duration(&self, id: &Arc<str>) -> &metrics::Histogram {
        self.duration.get_or_init(|| {
            metrics::histogram!("metafi_runtime_rpc_duration_seconds", "id" => id.clone(), "runtime" => self.runtime)
        })
    }

    fn ok(&self, id: &Arc<str>) -> &metrics::Counter {
        self.ok.get_or_init(|| {
            metrics::counter!("metafi_runtime_rpc_calls_total", "id" => id.clone(), "runtime" => self.runtime, "outcome" => "ok")
        })
    }
}

enum Target {
    Native(NativeRpc),
    Pool(Arc<VmPool>),
}

/// The started runtime: implements [`RpcDispatch`] for the REST and socket edges.
pub struct Runtime {
    /// Lower-case id → (shared id, route).
    routes: HashMap<String, (Arc<str>, Route)>,
    pools: Vec<Arc<VmPool>>,
    nk: Nk,
    node: Arc<str>,
    env: Arc<HashMap<String, String>>,
    call_timeout: Duration,
    /// Match handler names of every runtime, for `nk.match_create`.
    match_handlers: Arc<MatchHandlers>,
    /// The `matchmaker_matched` hook, if a module registered one.
    matchmaker_hook: Option<Arc<dyn MatchmakerHook>>,
    /// Before/after hooks on client calls and the shutdown function.
    hooks: Arc<RuntimeHooks>,
    /// The last errors of each module (the console).
    errors: Arc<metafi_core::ModuleErrors>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("rpcs", &self.rpc_ids())
            .field("pools", &self.pools)
            .finish()
    }
}

impl Runtime {
    /// Registered RPC ids with the runtime serving each, sorted by id.
    pub fn rpc_ids(&self) -> Vec<(String, &'static str)> {
        let mut ids: Vec<_> = self
            .routes
            .iter()
            .map(|(id, (_, route))| (id.clone(), route.runtime))
            .collect();
        ids.sort();
        ids
    }

    /// The last errors of each module: failed RPCs, hooks and match handlers.
    pub fn errors(&self) -> &Arc<metafi_core::ModuleErrors> {
        &self.errors
    }

    /// The `nk` API the runtime's functions use.
    pub fn nk(&self) -> &Nk {
        &self.nk
    }

    /// The match handlers every runtime registered; install them in the
    /// [`EngineMatchHost`](crate::EngineMatchHost) once the runtime has started.
    pub fn match_handlers(&self) -> Arc<MatchHandlers> {
        self.match_handlers.clone()
    }

    /// The `matchmaker_matched` hook (native first, else the first script engine that
    /// registered one), for the matchmaker.
    pub fn matchmaker_hook(&self) -> Option<Arc<dyn MatchmakerHook>> {
        self.matchmaker_hook.clone()
    }

    /// The before/after hooks every runtime registered, for the REST and realtime edges.
    pub fn hooks(&self) -> Arc<RuntimeHooks> {
        self.hooks.clone()
    }

    /// The modules' leaderboard reset and tournament end/reset functions, for the
    /// scheduler; `None` when no module registered any.
    pub fn leaderboard_reset_listener(
        &self,
    ) -> Option<Arc<dyn metafi_core::leaderboards::ResetListener>> {
        if self.hooks.has_scheduled_functions() {
            Some(self.hooks.clone())
        } else {
            None
        }
    }

    /// What the purchase service reports App Store and Google Play notifications to (the modules'
    /// notification functions).
    pub fn purchase_notification_listener(
        &self,
    ) -> Arc<dyn metafi_core::iap::NotificationListener> {
        self.hooks.clone()
    }

    /// Runs the shutdown function (within `grace`), then stops taking script calls, lets
    /// calls in flight finish and stops the VM threads, waiting at most `grace`.
    /// How many calls of `engine` ran on the IO thread that received them (without a thread
    /// hop; `docs/RUNTIME.md`, "Calls without thread hops") since start, and how many VMs that
    /// path holds now. `(0, 0)` for an engine without modules.
    pub fn inline_stats(&self, engine: &str) -> (u64, usize) {
        self.pools
            .iter()
            .find(|pool| pool.engine() == engine)
            .map_or((0, 0), |pool| pool.inline_stats())
    }

    pub async fn shutdown(&self, grace: Duration) {
        self.hooks.shutdown(grace).await;
        let all = self.pools.iter().map(|pool| pool.shutdown(grace));
        futures_util::future::join_all(all).await;
    }

    async fn run(
        &self,
        id: &Arc<str>,
        route: &Route,
        ctx: Arc<CallContext>,
        payload: String,
    ) -> Result<String, RunError> {
        match &route.target {
            Target::Native(function) => {
                let call = function(ctx, self.nk.clone(), payload);
                match tokio::time::timeout(self.call_timeout, AssertUnwindSafe(call).catch_unwind())
                    .await
                {
                    Ok(Ok(Ok(result))) => Ok(result),
                    Ok(Ok(Err(error))) => Err(RunError::Script(ScriptError::Raised {
                        code: error.code,
                        message: error.message,
                    })),
                    Ok(Err(panic)) => Err(RunError::Script(ScriptError::Failed {
                        message: "RPC function failed.".into(),
                        detail: panic_text(panic.as_ref()),
                    })),
                    Err(_) => Err(RunError::Script(ScriptError::Timeout)),
                }
            }
            Target::Pool(pool) => match pool.call(id.clone(), ctx, payload).await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(error)) => Err(RunError::Script(error)),
                Err(e) => Err(RunError::Dispatch(e)),
            },
        }
    }
}

enum RunError {
    Script(ScriptError),
    Dispatch(DispatchError),
}

#[async_trait]
impl RpcDispatch for Runtime {
    async fn call(&self, id: &str, ctx: RpcContext, payload: String) -> Result<String, CoreError> {
        let lower;
        let key = if id.bytes().any(|b| b.is_ascii_uppercase()) || !id.is_ascii() {
            lower = id.to_lowercase();
            lower.as_str()
        } else {
            id
        };
        let Some((id, route)) = self.routes.get(key) else {
            return Err(CoreError::not_found("RPC function not found"));
        };
        let ctx = Arc::new(CallContext {
            mode: ExecutionMode::Rpc,
            node: self.node.clone(),
            version: env!("CARGO_PKG_VERSION"),
            env: self.env.clone(),
            request: ctx,
        });
        let started = Instant::now();
        let outcome = self.run(id, route, ctx, payload).await;
        let runtime = route.runtime;
        if let Err(RunError::Script(error)) = &outcome {
            let function = format!("rpc {id}");
            crate::last_errors::record(&self.errors, &route.module, runtime, &function, error);
        }
        route.duration(id).record(started.elapsed().as_secs_f64());
        let label = match &outcome {
            Ok(_) => None,
            Err(RunError::Script(e)) => Some(e.kind()),
            Err(RunError::Dispatch(DispatchError::QueueFull)) => Some("queue_full"),
            Err(RunError::Dispatch(DispatchError::Stopped)) => Some("stopped"),
        };
        match label {
            None => route.ok(id).increment(1),
            Some(label) => metrics::counter!("metafi_runtime_rpc_calls_total", "id" => id.clone(), "runtime" => runtime, "outcome" => label)
                .increment(1),
        }
        outcome.map_err(|e| self.caller_error(id, route, e))
    }
}

impl Runtime {
    /// The caller's error for a failed call, logged with the module and function.
    fn caller_error(&self, id: &str, route: &Route, error: RunError) -> CoreError {
        let runtime = route.runtime;
        let module = &*route.module;
        match error {
            RunError::Script(ScriptError::Raised { code, message }) => {
                tracing::debug!(rpc = id, runtime, module, code = code.as_i32(), %message, "RPC function returned an error");
                CoreError::Status { code, message }
            }
            RunError::Script(ScriptError::Failed { message, detail }) => {
                tracing::error!(rpc = id, runtime, module, %detail, "RPC function raised an error");
                CoreError::Status {
                    code: Code::Internal,
                    message,
                }
            }
            RunError::Script(ScriptError::Timeout) => {
                let budget_ms = self.call_timeout.as_millis();
                tracing::warn!(
                    rpc = id,
                    runtime,
                    module,
                    budget_ms,
                    "RPC function stopped: it ran past its time budget (runtime.call_timeout_ms)"
                );
                metrics::counter!("metafi_runtime_budget_overruns_total", "runtime" => runtime, "budget" => "time").increment(1);
                CoreError::Status {
                    code: Code::DeadlineExceeded,
                    message: format!(
                        "RPC function '{id}' exceeded its time budget of {budget_ms} ms."
                    ),
                }
            }
            RunError::Script(ScriptError::OutOfMemory) => {
                tracing::warn!(
                    rpc = id,
                    runtime,
                    module,
                    "RPC function stopped: its VM reached the memory cap (runtime.memory_limit_mb)"
                );
                metrics::counter!("metafi_runtime_budget_overruns_total", "runtime" => runtime, "budget" => "memory").increment(1);
                CoreError::ResourceExhausted {
                    message: format!("RPC function '{id}' exceeded the script memory limit.")
                        .into(),
                }
            }
            RunError::Script(ScriptError::BadResult { found }) => {
                tracing::error!(rpc = id, runtime, module, %found, "RPC function returned something other than a string");
                CoreError::Status {
                    code: Code::Internal,
                    message: "Runtime function returned invalid data - only allowed one return value of type String/Byte.".into(),
                }
            }
            RunError::Dispatch(DispatchError::QueueFull) => {
                tracing::warn!(rpc = id, runtime, "RPC refused: every VM queue is full");
                CoreError::ResourceExhausted {
                    message: format!("The {runtime} runtime is at capacity; retry shortly.").into(),
                }
            }
            RunError::Dispatch(DispatchError::Stopped) => CoreError::Unavailable {
                operation: "an RPC call (the runtime is stopping)",
            },
        }
    }
}

/// Default of [`RuntimeBuilder::inline_vms`]: two per core.
pub fn default_inline_vms() -> usize {
    2 * std::thread::available_parallelism().map_or(1, usize::from)
}

pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

//! Native Rust modules: server code compiled into the binary, MetaFi's equivalent of Nakama's
//! Go runtime and the fastest path (no VM, no queue: a native RPC runs on the IO runtime as an
//! ordinary async function).
//!
//! A module implements [`NativeModule`]; the server registers it with
//! [`crate::RuntimeBuilder::native`], and at start its [`NativeModule::init`] registers
//! functions on a [`NativeInitializer`], like Go's `InitModule(ctx, logger, db, nk,
//! initializer)`.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use metafi_core::{Hook, HookKind};
use serde_json::Value as Json;

use crate::context::CallContext;
use crate::error::RpcError;
use crate::hooks::{HookMode, HookTarget, NativeShutdown};
use crate::nk::Nk;

/// The error a module's `init` returns; it stops the server with the module's name.
pub type InitError = Box<dyn std::error::Error + Send + Sync>;

/// A native RPC function: `(context, nk, payload) → result`.
pub type NativeRpc = Arc<
    dyn Fn(Arc<CallContext>, Nk, String) -> BoxFuture<'static, Result<String, RpcError>>
        + Send
        + Sync,
>;

/// Builds a native match handler; called on the match executor thread that runs the match
/// (`nk.match_create(name, params)` with a name given to
/// [`NativeInitializer::register_match`]). The handler is `Send`: when its executor thread runs
/// late the match may be handed off to another thread at a tick boundary.
pub type NativeMatch = Arc<dyn Fn() -> Box<dyn metafi_match::MatchHandler + Send> + Send + Sync>;

/// A native `matchmaker_matched` hook: the matched players in, the id of the authoritative
/// match they should join out (`None`: the server hands out a token for a relayed match).
pub type NativeMatchmakerMatched = Arc<
    dyn Fn(
            Nk,
            Vec<metafi_match::MatchedEntry>,
        ) -> BoxFuture<'static, Result<Option<String>, RpcError>>
        + Send
        + Sync,
>;

/// A native event processor: each event of `POST /v2/event` and `nk.event` (Go's
/// `RegisterEvent`); the context names the client that sent it (no user for `nk.event`).
pub type NativeEvent = Arc<
    dyn Fn(Arc<CallContext>, Nk, metafi_proto::api::Event) -> BoxFuture<'static, ()> + Send + Sync,
>;

/// A set of native functions compiled into the server.
pub trait NativeModule: Send + Sync + 'static {
    /// Name used in logs, metrics and errors (`"examples"`).
    fn name(&self) -> &'static str;

    /// Registers the module's functions. Runs once at start, before any call.
    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError>;
}

/// What a native module registers at start.
pub struct NativeInitializer {
    nk: Nk,
    pub(crate) rpcs: Vec<(String, NativeRpc)>,
    /// Match handlers by name (`register_match`).
    pub(crate) matches: Vec<(String, NativeMatch)>,
    /// The `matchmaker_matched` hook, if registered.
    pub(crate) matchmaker_matched: Option<NativeMatchmakerMatched>,
    /// Before/after hooks: mode, kind, Nakama's name, function.
    pub(crate) hooks: Vec<(HookMode, HookKind, String, HookTarget)>,
    /// The shutdown function, if registered.
    pub(crate) shutdown: Option<NativeShutdown>,
    /// Event processors (`register_event`), in registration order.
    pub(crate) events: Vec<NativeEvent>,
    /// Registration mistakes (an empty id); reported as the module's init error.
    pub(crate) problems: Vec<String>,
    /// Storage indexes (`register_storage_index`), in order.
    pub(crate) storage_indexes: Vec<metafi_core::storage_index::IndexDefinition>,
    /// Storage index filters by index name.
    pub(crate) index_filters: Vec<(String, crate::storage_indexes::NativeIndexFilter)>,
}

impl std::fmt::Debug for NativeInitializer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeInitializer")
            .field(
                "rpcs",
                &self.rpcs.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl NativeInitializer {
    pub(crate) fn new(nk: Nk) -> NativeInitializer {
        NativeInitializer {
            nk,
            rpcs: Vec::new(),
            matches: Vec::new(),
            matchmaker_matched: None,
            hooks: Vec::new(),
            shutdown: None,
            events: Vec::new(),
            problems: Vec::new(),
            storage_indexes: Vec::new(),
            index_filters: Vec::new(),
        }
    }

    /// Registers a storage index (Go's `RegisterStorageIndex`), checked with Nakama's words;
    /// it is created and filled from storage once every runtime started. See
    /// `docs/STORAGE.md`, "Storage indexes".
    pub fn register_storage_index(
        &mut self,
        definition: metafi_core::storage_index::IndexDefinition,
    ) -> Result<(), String> {
        definition.check()?;
        self.storage_indexes.push(definition);
        Ok(())
    }

    /// Registers the filter of storage index `name` (Go's `RegisterStorageIndexFilter`): it
    /// sees each object about to enter the index; `false` keeps it out (and removes an entry
    /// it had).
    pub fn register_storage_index_filter<F, Fut>(&mut self, name: &str, function: F)
    where
        F: Fn(Arc<CallContext>, Nk, metafi_storage::StorageObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.index_filters
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.index_filters.push((
            name.to_owned(),
            Arc::new(move |ctx, nk, object| Box::pin(function(ctx, nk, object))),
        ));
    }

    /// The `nk` API, for work at init time; functions receive their own handle per call.
    pub fn nk(&self) -> &Nk {
        &self.nk
    }

    /// Registers RPC `id` (case-insensitive, as in Nakama). Registering an id twice keeps the
    /// later function.
    pub fn register_rpc<F, Fut>(&mut self, id: &str, function: F)
    where
        F: Fn(Arc<CallContext>, Nk, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, RpcError>> + Send + 'static,
    {
        let id = id.to_lowercase();
        if id.is_empty() {
            self.problems.push("register_rpc: expects an RPC id".into());
            return;
        }
        let function: NativeRpc =
            Arc::new(move |ctx, nk, payload| Box::pin(function(ctx, nk, payload)));
        self.rpcs.retain(|(existing, _)| *existing != id);
        self.rpcs.push((id, function));
    }

    /// Registers an authoritative match handler: `nk.match_create(name, params)` (from any
    /// runtime) starts a match whose handler `factory` builds, on the match's executor thread.
    /// Registering a name twice keeps the later factory. The handler must be `Send`: when its
    /// executor thread runs late the match may be handed off to another thread at a tick
    /// boundary (`docs/MATCHES.md`, "Hand-off").
    pub fn register_match<F>(&mut self, name: &str, factory: F)
    where
        F: Fn() -> Box<dyn metafi_match::MatchHandler + Send> + Send + Sync + 'static,
    {
        if name.is_empty() {
            self.problems
                .push("register_match: expects a match name".into());
            return;
        }
        self.matches.retain(|(existing, _)| existing != name);
        self.matches.push((name.to_owned(), Arc::new(factory)));
    }

    /// Registers the `matchmaker_matched` hook: called with each group the matchmaker forms;
    /// returning `Some(match_id)` (usually from `nk.match_create`) sends the players to that
    /// match instead of giving them a token.
    pub fn register_matchmaker_matched<F, Fut>(&mut self, hook: F)
    where
        F: Fn(Nk, Vec<metafi_match::MatchedEntry>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<String>, RpcError>> + Send + 'static,
    {
        self.matchmaker_matched = Some(Arc::new(move |nk, entries| Box::pin(hook(nk, entries))));
    }

    /// Registers a before hook on `hook` (Go's `RegisterBefore<Name>`, Lua's
    /// `register_req_before` / `register_rt_before`): `function` receives the request as JSON
    /// with Nakama's proto field names (`None` for calls without input, such as `GetAccount`)
    /// and returns the request to serve, possibly changed, or `None` to drop the call (the
    /// client gets "Requested resource was not found."). An error goes to the client with its
    /// code. Registering a hook twice keeps the later function.
    pub fn register_before<F, Fut>(&mut self, hook: Hook, function: F)
    where
        F: Fn(Arc<CallContext>, Nk, Option<Json>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Json>, RpcError>> + Send + 'static,
    {
        let target = HookTarget::NativeBefore(Arc::new(move |ctx, nk, input| {
            Box::pin(function(ctx, nk, input))
        }));
        self.add_hook(HookMode::Before, hook.kind(), hook.name(), target);
    }

    /// Registers an after hook on `hook`: `function` receives the answer (`None` when the
    /// call answers nothing) and the request; it cannot change the answer, and its error is
    /// only logged.
    pub fn register_after<F, Fut>(&mut self, hook: Hook, function: F)
    where
        F: Fn(Arc<CallContext>, Nk, Option<Json>, Option<Json>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), RpcError>> + Send + 'static,
    {
        let target = HookTarget::NativeAfter(Arc::new(move |ctx, nk, output, input| {
            Box::pin(function(ctx, nk, output, input))
        }));
        self.add_hook(HookMode::After, hook.kind(), hook.name(), target);
    }

    /// Registers the shutdown function: called once when the server stops, within the stop's
    /// grace period, before the script runtimes stop.
    pub fn register_shutdown<F, Fut>(&mut self, function: F)
    where
        F: Fn(Arc<CallContext>, Nk) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shutdown = Some(Arc::new(move |ctx, nk| Box::pin(function(ctx, nk))));
    }

    /// Registers an event processor (Go's `RegisterEvent`): it receives every event clients
    /// send with `POST /v2/event` and server code with `nk.event`, from a bounded queue
    /// (`runtime.event_queue_size`), off the caller's path. Several may be registered.
    pub fn register_event<F, Fut>(&mut self, function: F)
    where
        F: Fn(Arc<CallContext>, Nk, metafi_proto::api::Event) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.events.push(Arc::new(move |ctx, nk, event| {
            Box::pin(function(ctx, nk, event))
        }));
    }

    fn add_hook(&mut self, mode: HookMode, kind: HookKind, name: &str, target: HookTarget) {
        self.hooks
            .retain(|(m, k, n, _)| !(*m == mode && *k == kind && n == name));
        self.hooks.push((mode, kind, name.to_owned(), target));
    }
}

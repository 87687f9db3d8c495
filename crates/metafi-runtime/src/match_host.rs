//! The match host: what `nk.match_*` needs from the match engine ([`MatchHost`], in the match
//! engine's own [`ListQuery`] and [`MatchInfo`]), and its implementation over
//! the engine: which runtime runs a handler name ([`MatchHandlers`]), the [`MatchHost`] over the
//! match registry ([`EngineMatchHost`]), and the `matchmaker_matched` hook of whichever runtime
//! registered one. [`NoMatches`] is the host of a runtime built without the match engine.
//!
//! A name given to `nk.match_create` is looked up in this order, as Nakama does: native
//! (`NativeInitializer::register_match`), then each script engine in the order the server
//! added them (Lua: a module name; JS: `initializer.registerMatch`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use metafi_core::CoreError;
use metafi_match::{
    Dispatcher, Flow, HandlerError, HookResult, JoinRequest, JoinVerdict, ListQuery, MatchContext,
    MatchHandler, MatchInfo, MatchInit, MatchMessage, MatchSpec, MatchedEntry, Matches,
    MatchmakerHook, Movable, Params, Presence, PresenceReason,
};
use metafi_proto::Code;
use serde_json::{Map, Value, json};
use tokio::runtime::Handle;

use crate::host::{EngineFactory, Registrations, VmSetup};
use crate::native::{NativeMatch, NativeMatchmakerMatched};
use crate::nk::Nk;

/// The match registry as server code sees it.
#[async_trait]
pub trait MatchHost: Send + Sync + std::fmt::Debug {
    /// Starts an authoritative match run by handler `module` with `params`; returns its id.
    async fn create(&self, module: &str, params: Map<String, Value>) -> Result<String, CoreError>;
    /// Lists matches that pass the filters, at most `query.limit`.
    async fn list(&self, query: ListQuery) -> Result<Vec<MatchInfo>, CoreError>;
    /// One match, or `None` if there is no such match.
    async fn get(&self, id: &str) -> Result<Option<MatchInfo>, CoreError>;
    /// Calls the match's `match_signal` handler with `data`; returns its reply.
    async fn signal(&self, id: &str, data: String) -> Result<String, CoreError>;
    /// Finds a match of handler `module` that passes `query` with fewer than `seats` seats
    /// taken and reserves one for `user_id`, or creates one (with `params`) holding that seat
    /// (`docs/MATCHES.md`, "Seats"). Returns the match id.
    async fn find_seat(
        &self,
        _module: &str,
        _params: Map<String, Value>,
        _query: ListQuery,
        _user_id: uuid::Uuid,
        _seats: u32,
    ) -> Result<String, CoreError> {
        Err(NoMatches::unavailable())
    }
    /// Reserves a seat for `user_id` in match `id` (on any node of a cluster) if fewer than
    /// `seats` are taken; false when it is full, ended or its node is gone.
    async fn reserve_seat(
        &self,
        _id: &str,
        _user_id: uuid::Uuid,
        _seats: u32,
    ) -> Result<bool, CoreError> {
        Err(NoMatches::unavailable())
    }
}

/// The match host of a server without the match engine: every call is Unimplemented.
#[derive(Debug, Default)]
pub struct NoMatches;

impl NoMatches {
    fn unavailable() -> CoreError {
        CoreError::Status {
            code: Code::Unimplemented,
            message: "Authoritative matches are not available yet in this server; nk.match_* functions will work once the match engine ships.".into(),
        }
    }
}

#[async_trait]
impl MatchHost for NoMatches {
    async fn create(
        &self,
        _module: &str,
        _params: Map<String, Value>,
    ) -> Result<String, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn list(&self, _query: ListQuery) -> Result<Vec<MatchInfo>, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn get(&self, _id: &str) -> Result<Option<MatchInfo>, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn signal(&self, _id: &str, _data: String) -> Result<String, CoreError> {
        Err(NoMatches::unavailable())
    }
}

/// Where a script engine keeps the VMs of match handlers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MatchVms {
    /// One VM per match, with every module loaded: Nakama's model. Module-level variables are
    /// per match; creating a match loads every module (milliseconds, on the executor thread).
    #[default]
    PerMatch,
    /// One VM per executor thread shared by the matches it runs: a match starts in
    /// microseconds and costs only its state, but module-level variables are shared by the
    /// matches of a thread and they share its memory cap.
    PerThread,
}

/// The reserved RPC id under which a script engine registers its `matchmaker_matched` hook
/// (never routed to clients; the payload is the matched entries as JSON).
pub const MATCHMAKER_MATCHED_HOOK: &str = "\u{1}matchmaker_matched";

/// A script engine whose VMs may run match handlers.
pub(crate) struct EngineMatches {
    pub(crate) factory: Arc<dyn EngineFactory>,
    pub(crate) setup: VmSetup,
    pub(crate) registrations: Registrations,
}

/// Every match handler name the runtimes know, and how to build each.
pub struct MatchHandlers {
    natives: Vec<(String, NativeMatch)>,
    engines: Vec<EngineMatches>,
    /// The server's runtime, entered around every handler call so `nk` IO works on executor
    /// threads.
    handle: Option<Handle>,
}

impl std::fmt::Debug for MatchHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchHandlers")
            .field(
                "natives",
                &self.natives.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field(
                "engines",
                &self
                    .engines
                    .iter()
                    .map(|e| e.factory.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl MatchHandlers {
    pub(crate) fn new(
        natives: Vec<(String, NativeMatch)>,
        engines: Vec<EngineMatches>,
    ) -> MatchHandlers {
        MatchHandlers {
            natives,
            engines,
            handle: Handle::try_current().ok(),
        }
    }

    /// How to start match `name` with `params`; `None` when no runtime has that handler.
    pub fn spec(&self, name: &str, params: Params) -> Option<MatchSpec> {
        let handle = self.handle.clone();
        if let Some((_, factory)) = self.natives.iter().find(|(n, _)| n == name) {
            let factory = factory.clone();
            return Some(MatchSpec {
                handler_name: Arc::from(name),
                runtime: "native",
                // Native handlers are `Send`: their matches may be handed off between
                // executor threads when one runs late (`docs/MATCHES.md`, "Hand-off").
                factory: Box::new(Movable(
                    move |_: &MatchContext| -> Result<Box<dyn MatchHandler + Send>, HandlerError> {
                        Ok(InRuntime::wrap_movable(handle, factory()))
                    },
                )),
                params,
            });
        }
        let engine = self
            .engines
            .iter()
            .find(|e| e.factory.has_match(&e.setup, &e.registrations, name))?;
        let factory = engine.factory.clone();
        let setup = engine.setup.clone();
        let owned = name.to_owned();
        Some(MatchSpec {
            handler_name: Arc::from(name),
            runtime: factory.name(),
            factory: Box::new(
                move |_: &MatchContext| -> Result<Box<dyn MatchHandler>, HandlerError> {
                    let _entered = handle.as_ref().map(Handle::enter);
                    let handler = factory.create_match(setup, &owned)?;
                    Ok(InRuntime::wrap(handle.clone(), handler))
                },
            ),
            params,
        })
    }
}

/// Enters the server's tokio context around each callback, so handler code calling `nk`
/// functions can use timers and IO from an executor thread.
/// Generic over the handler so a native (`Send`) handler stays `Send` and its match can be
/// handed off between executor threads; a script VM's is not and stays on its thread.
struct InRuntime<H: ?Sized> {
    handle: Option<Handle>,
    inner: Box<H>,
}

impl InRuntime<dyn MatchHandler> {
    fn wrap(handle: Option<Handle>, inner: Box<dyn MatchHandler>) -> Box<dyn MatchHandler> {
        Box::new(InRuntime { handle, inner })
    }
}

impl InRuntime<dyn MatchHandler + Send> {
    fn wrap_movable(
        handle: Option<Handle>,
        inner: Box<dyn MatchHandler + Send>,
    ) -> Box<dyn MatchHandler + Send> {
        Box::new(InRuntime { handle, inner })
    }
}

impl<H: MatchHandler + ?Sized> MatchHandler for InRuntime<H> {
    fn input_tap(&self) -> Option<Arc<dyn metafi_match::InputTap>> {
        self.inner.input_tap()
    }

    fn init(&mut self, ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.init(ctx, params)
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.join_attempt(ctx, d, tick, request)
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.join(ctx, d, tick, presences)
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.leave(ctx, d, tick, presences, reason)
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.tick(ctx, d, tick, messages)
    }

    fn terminate(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.terminate(ctx, d, tick, grace_seconds)
    }

    fn signal(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        let _entered = self.handle.as_ref().map(Handle::enter);
        self.inner.signal(ctx, d, tick, data)
    }
}

/// [`MatchHost`] over the match registry. Built before the runtime (whose `nk` needs it); the
/// runtime's handlers are installed once every module has loaded, so `nk.match_create` at
/// module load time is refused with a message saying so.
#[derive(Debug)]
pub struct EngineMatchHost {
    matches: Matches,
    handlers: OnceLock<Arc<MatchHandlers>>,
}

impl EngineMatchHost {
    pub fn new(matches: Matches) -> EngineMatchHost {
        EngineMatchHost {
            matches,
            handlers: OnceLock::new(),
        }
    }

    /// What starts a match of handler `module`.
    fn spec(&self, module: &str, params: Map<String, Value>) -> Result<MatchSpec, CoreError> {
        let Some(handlers) = self.handlers.get() else {
            return Err(CoreError::Status {
                code: Code::Unavailable,
                message: "match handlers are not available while modules load; create matches from RPCs, hooks or run_once callbacks that run later".into(),
            });
        };
        handlers.spec(module, params).ok_or_else(|| {
            CoreError::from(metafi_match::MatchError::HandlerNotFound {
                name: module.to_owned(),
            })
        })
    }

    /// Makes the runtimes' match handlers available to `nk.match_create`, and to other nodes
    /// of a cluster that ask this one for a seat (`Matches::find_seat_here`).
    pub fn install(&self, handlers: Arc<MatchHandlers>) {
        let specs = handlers.clone();
        self.matches
            .set_specs(Arc::new(move |name: &str, params: Params| {
                specs.spec(name, params)
            }));
        let _ = self.handlers.set(handlers);
    }
}

#[async_trait]
impl MatchHost for EngineMatchHost {
    async fn create(&self, module: &str, params: Map<String, Value>) -> Result<String, CoreError> {
        let spec = self.spec(module, params)?;
        let id = self.matches.create(spec).await?;
        Ok(id.to_string())
    }

    async fn list(&self, query: ListQuery) -> Result<Vec<MatchInfo>, CoreError> {
        Ok(self.matches.list(&query)?)
    }

    async fn get(&self, id: &str) -> Result<Option<MatchInfo>, CoreError> {
        Ok(self.matches.get(id)?)
    }

    async fn signal(&self, id: &str, data: String) -> Result<String, CoreError> {
        Ok(self.matches.signal(id, data).await?)
    }

    async fn find_seat(
        &self,
        module: &str,
        params: Map<String, Value>,
        query: ListQuery,
        user_id: uuid::Uuid,
        seats: u32,
    ) -> Result<String, CoreError> {
        let spec = self.spec(module, params)?;
        let id = self.matches.find_seat(&query, user_id, seats, spec).await?;
        Ok(id.to_string())
    }

    async fn reserve_seat(
        &self,
        id: &str,
        user_id: uuid::Uuid,
        seats: u32,
    ) -> Result<bool, CoreError> {
        Ok(self
            .matches
            .reserve_seat_anywhere(id, user_id, seats)
            .await?)
    }
}

/// The matched entries as script hooks receive them: Nakama's `presence`, `properties`
/// (string and numeric properties together) and `party_id`.
pub(crate) fn entries_json(entries: &[MatchedEntry]) -> String {
    let list: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut properties = Map::new();
            for (k, v) in &e.string_properties {
                properties.insert(k.clone(), Value::String(v.clone()));
            }
            for (k, v) in &e.numeric_properties {
                properties.insert(k.clone(), json!(v));
            }
            let mut entry = json!({
                "presence": {
                    "user_id": e.presence.user_id.to_string(),
                    "session_id": e.presence.session_id.to_string(),
                    "username": &*e.presence.username,
                    "node": &*e.presence.node,
                },
                "properties": properties,
                "ticket": e.ticket,
            });
            if !e.party_id.is_empty() {
                entry["party_id"] = Value::String(e.party_id.clone());
            }
            entry
        })
        .collect();
    Value::Array(list).to_string()
}

/// A native `matchmaker_matched` hook, with the runtime's call budget.
pub(crate) struct NativeHook {
    pub(crate) function: NativeMatchmakerMatched,
    pub(crate) nk: Nk,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for NativeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeHook").finish_non_exhaustive()
    }
}

impl MatchmakerHook for NativeHook {
    fn matched(
        &self,
        entries: Vec<MatchedEntry>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = HookResult> + Send + '_>> {
        let call = (self.function)(self.nk.clone(), entries);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, call).await {
                Ok(Ok(id)) => Ok(id),
                Ok(Err(e)) => Err(format!("native matchmaker_matched hook failed: {e}")),
                Err(_) => {
                    Err("native matchmaker_matched hook ran past runtime.call_timeout_ms".into())
                }
            }
        })
    }
}

/// A script engine's `matchmaker_matched` hook, run on its VM pool like an RPC.
pub(crate) struct PoolHook {
    pub(crate) pool: Arc<crate::pool::VmPool>,
    pub(crate) ctx: Arc<crate::context::CallContext>,
}

impl std::fmt::Debug for PoolHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolHook")
            .field("engine", &self.pool.engine())
            .finish()
    }
}

impl MatchmakerHook for PoolHook {
    fn matched(
        &self,
        entries: Vec<MatchedEntry>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = HookResult> + Send + '_>> {
        Box::pin(async move {
            let engine = self.pool.engine();
            let outcome = self
                .pool
                .call(
                    Arc::from(MATCHMAKER_MATCHED_HOOK),
                    self.ctx.clone(),
                    entries_json(&entries),
                )
                .await;
            match outcome {
                Ok(Ok(id)) if id.is_empty() => Ok(None),
                Ok(Ok(id)) => match metafi_match::MatchId::parse(&id) {
                    Ok(_) => Ok(Some(id)),
                    Err(_) => Err(format!(
                        "{engine} matchmaker_matched hook returned '{id}', which is not a match id"
                    )),
                },
                Ok(Err(error)) => Err(format!(
                    "{engine} matchmaker_matched hook failed: {error:?}"
                )),
                Err(_) => Err(format!(
                    "{engine} runtime refused the matchmaker_matched hook call (queue full or stopping)"
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_the_match_engine_every_call_says_so() {
        let host = NoMatches;
        let error = host.create("lobby", Map::new()).await.unwrap_err();
        assert_eq!(error.code(), Code::Unimplemented);
        assert!(error.client_message().contains("not available yet"));
        assert_eq!(host.get("x").await.unwrap_err().code(), Code::Unimplemented);
        assert_eq!(
            host.list(ListQuery::default()).await.unwrap_err().code(),
            Code::Unimplemented
        );
        assert_eq!(
            host.signal("x", String::new()).await.unwrap_err().code(),
            Code::Unimplemented
        );
    }
}

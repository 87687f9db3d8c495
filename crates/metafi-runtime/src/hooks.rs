//! Before/after hooks and the shutdown function, run like RPCs: the same VM pools, budgets,
//! logs and metrics (`metafi_runtime_hook_*`). [`RuntimeHooks`] implements
//! [`metafi_core::Hooks`] for the REST and realtime edges.
//!
//! Script engines store a hook like an RPC, under a reserved id ([`hook_key`]) that no client
//! can call; the host finds those ids in each VM's registrations. Requests travel as JSON with
//! Nakama's proto field names; each engine sees them as Nakama shows them: Lua with proto names
//! (`null` fields left out, [`lua_view`]), JavaScript with `lowerCamelCase` names
//! ([`to_js_names`]), and the hook's result is read back the same way ([`from_js_names`]).

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use metafi_core::hooks::{HookFuture, NAKAMA_API_HOOKS, NAKAMA_RT_HOOKS};
use metafi_core::{CoreError, Hook, HookKind, HookTable, HookValue, Hooks, RpcContext};
use metafi_proto::Code;
use serde_json::{Map, Value as Json};

use crate::context::{CallContext, ExecutionMode};
use crate::error::{RpcError, ScriptError};
use crate::host::HookArgs;
use crate::nk::Nk;
use crate::pool::{DispatchError, VmPool};

/// Prefix of the reserved ids under which engines store hooks (never a client RPC id).
pub const HOOK_KEY_PREFIX: char = '\u{1}';

/// The reserved id of the shutdown function (`register_shutdown`).
pub const SHUTDOWN_KEY: &str = "\u{1}shutdown";

/// The reserved id of the leaderboard reset function (`register_leaderboard_reset`). Its
/// payload is `[leaderboard, reset]` as JSON, the leaderboard in the engine's naming.
pub const LEADERBOARD_RESET_KEY: &str = "\u{1}leaderboardreset";

/// The reserved id of the tournament end function (`register_tournament_end`). Its payload is
/// `[tournament, end, reset]` as JSON, the tournament in the engine's naming.
pub const TOURNAMENT_END_KEY: &str = "\u{1}tournamentend";

/// The reserved id of the tournament reset function (`register_tournament_reset`), with the
/// payload of [`TOURNAMENT_END_KEY`].
pub const TOURNAMENT_RESET_KEY: &str = "\u{1}tournamentreset";

/// The reserved id of the App Store purchase notification function
/// (`registerPurchaseNotificationApple`). Its payload is `[purchase, provider_payload,
/// notification_type]` as JSON, the purchase in the engine's naming and the provider payload
/// as JSON text, as Nakama passes them.
pub const PURCHASE_NOTIFICATION_APPLE_KEY: &str = "\u{1}purchasenotificationapple";

/// The reserved id of the App Store subscription notification function
/// (`registerSubscriptionNotificationApple`), with the payload of
/// [`PURCHASE_NOTIFICATION_APPLE_KEY`] (a subscription instead of a purchase).
pub const SUBSCRIPTION_NOTIFICATION_APPLE_KEY: &str = "\u{1}subscriptionnotificationapple";

/// The reserved id of the Google Play purchase notification function
/// (`registerPurchaseNotificationGoogle`), with the payload of
/// [`PURCHASE_NOTIFICATION_APPLE_KEY`] (the provider payload being the Publisher API's answer).
pub const PURCHASE_NOTIFICATION_GOOGLE_KEY: &str = "\u{1}purchasenotificationgoogle";

/// The reserved id of the Google Play subscription notification function
/// (`registerSubscriptionNotificationGoogle`), with the payload of
/// [`PURCHASE_NOTIFICATION_GOOGLE_KEY`] (a subscription instead of a purchase).
pub const SUBSCRIPTION_NOTIFICATION_GOOGLE_KEY: &str = "\u{1}subscriptionnotificationgoogle";

/// Whether `id` is one of the store notification functions' reserved ids.
pub fn is_notification_key(id: &str) -> bool {
    [
        PURCHASE_NOTIFICATION_APPLE_KEY,
        SUBSCRIPTION_NOTIFICATION_APPLE_KEY,
        PURCHASE_NOTIFICATION_GOOGLE_KEY,
        SUBSCRIPTION_NOTIFICATION_GOOGLE_KEY,
    ]
    .contains(&id)
}

/// Before or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookMode {
    Before,
    After,
}

/// The reserved id of a hook: `\u{1}before:authenticatedevice`, `\u{1}rtafter:channeljoin`.
/// `name` is lower-cased as Nakama keys hooks.
pub fn hook_key(mode: HookMode, kind: HookKind, name: &str) -> String {
    let prefix = match (kind, mode) {
        (HookKind::Api, HookMode::Before) => "before",
        (HookKind::Api, HookMode::After) => "after",
        (HookKind::Rt, HookMode::Before) => "rtbefore",
        (HookKind::Rt, HookMode::After) => "rtafter",
    };
    format!("{HOOK_KEY_PREFIX}{prefix}:{}", name.to_lowercase())
}

/// Reads a reserved hook id back: mode, kind and the lower-case name.
pub fn parse_hook_key(key: &str) -> Option<(HookMode, HookKind, &str)> {
    let rest = key.strip_prefix(HOOK_KEY_PREFIX)?;
    let (prefix, name) = rest.split_once(':')?;
    let (mode, kind) = match prefix {
        "before" => (HookMode::Before, HookKind::Api),
        "after" => (HookMode::After, HookKind::Api),
        "rtbefore" => (HookMode::Before, HookKind::Rt),
        "rtafter" => (HookMode::After, HookKind::Rt),
        _ => return None,
    };
    Some((mode, kind, name))
}

/// A native before hook: the request (proto names; `None` for calls without input) in, the
/// request to serve (`None` drops the call) out.
pub type NativeBefore = Arc<
    dyn Fn(Arc<CallContext>, Nk, Option<Json>) -> BoxFuture<'static, Result<Option<Json>, RpcError>>
        + Send
        + Sync,
>;

/// A native after hook: the answer and the request in.
pub type NativeAfter = Arc<
    dyn Fn(
            Arc<CallContext>,
            Nk,
            Option<Json>,
            Option<Json>,
        ) -> BoxFuture<'static, Result<(), RpcError>>
        + Send
        + Sync,
>;

/// A native shutdown function.
pub type NativeShutdown = Arc<dyn Fn(Arc<CallContext>, Nk) -> BoxFuture<'static, ()> + Send + Sync>;

/// Where one hook runs.
#[derive(Clone)]
pub(crate) enum HookTarget {
    NativeBefore(NativeBefore),
    NativeAfter(NativeAfter),
    NativeShutdown(NativeShutdown),
    Pool { pool: Arc<VmPool>, key: Arc<str> },
}

/// One registered hook, with where it came from for logs and metrics.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) runtime: &'static str,
    pub(crate) module: Arc<str>,
    pub(crate) target: HookTarget,
}

/// Collects hooks while the runtime starts: native modules first, then each engine; the first
/// registration of a hook wins (Nakama: Go over Lua over JavaScript) and a later one is
/// reported.
#[derive(Default)]
pub(crate) struct HookRegistry {
    before: HookTable<Registered>,
    after: HookTable<Registered>,
    shutdown: Option<Registered>,
    leaderboard_reset: Option<Registered>,
    tournament_end: Option<Registered>,
    tournament_reset: Option<Registered>,
    purchase_notification_apple: Option<Registered>,
    subscription_notification_apple: Option<Registered>,
    purchase_notification_google: Option<Registered>,
    subscription_notification_google: Option<Registered>,
    /// Hook names registered that MetaFi does not serve, reported once each.
    unserved: HashSet<String>,
}

impl HookRegistry {
    pub(crate) fn add(&mut self, mode: HookMode, kind: HookKind, name: &str, hook: Registered) {
        let Some(served) = Hook::find(kind, name) else {
            let known = match kind {
                HookKind::Api => NAKAMA_API_HOOKS,
                HookKind::Rt => NAKAMA_RT_HOOKS,
            }
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name));
            let what = match kind {
                HookKind::Api => "API call",
                HookKind::Rt => "realtime message",
            };
            let key = format!("{what} {name}");
            if self.unserved.insert(key) {
                if known {
                    tracing::warn!(
                        runtime = hook.runtime,
                        module = %hook.module,
                        "a {mode:?} hook is registered for the {what} '{name}', which MetaFi does not serve yet: it will never be called"
                    );
                } else {
                    tracing::warn!(
                        runtime = hook.runtime,
                        module = %hook.module,
                        "a {mode:?} hook is registered for '{name}', which is not a Nakama {what}: it will never be called"
                    );
                }
            }
            return;
        };
        let table = match mode {
            HookMode::Before => &mut self.before,
            HookMode::After => &mut self.after,
        };
        if let Some(first) = table.get(served) {
            tracing::warn!(
                hook = served.name(),
                ?mode,
                kept = first.runtime,
                ignored = hook.runtime,
                module = %hook.module,
                "a hook is registered by two runtimes; the first (native, then Lua, then JavaScript) runs"
            );
            return;
        }
        table.insert(served, hook);
    }

    pub(crate) fn add_shutdown(&mut self, hook: Registered) {
        if self.shutdown.is_none() {
            self.shutdown = Some(hook);
        }
    }

    pub(crate) fn add_leaderboard_reset(&mut self, hook: Registered) {
        if self.leaderboard_reset.is_none() {
            self.leaderboard_reset = Some(hook);
        }
    }

    pub(crate) fn add_tournament_end(&mut self, hook: Registered) {
        if self.tournament_end.is_none() {
            self.tournament_end = Some(hook);
        }
    }

    pub(crate) fn add_tournament_reset(&mut self, hook: Registered) {
        if self.tournament_reset.is_none() {
            self.tournament_reset = Some(hook);
        }
    }

    /// A store notification function, by its reserved id; the first registered stays.
    pub(crate) fn add_notification(&mut self, key: &str, hook: Registered) {
        let slot = match key {
            PURCHASE_NOTIFICATION_APPLE_KEY => &mut self.purchase_notification_apple,
            SUBSCRIPTION_NOTIFICATION_APPLE_KEY => &mut self.subscription_notification_apple,
            PURCHASE_NOTIFICATION_GOOGLE_KEY => &mut self.purchase_notification_google,
            _ => &mut self.subscription_notification_google,
        };
        if slot.is_none() {
            *slot = Some(hook);
        }
    }

    pub(crate) fn finish(
        self,
        nk: Nk,
        ctx: Arc<CallContext>,
        call_timeout: Duration,
        errors: Arc<metafi_core::ModuleErrors>,
    ) -> RuntimeHooks {
        for (mode, table) in [("before", &self.before), ("after", &self.after)] {
            let names: Vec<&str> = table.hooks().map(Hook::name).collect();
            if !names.is_empty() {
                tracing::info!(mode, hooks = ?names, "hooks registered");
            }
        }
        RuntimeHooks {
            before_metrics: HookMetrics::new(&self.before),
            after_metrics: HookMetrics::new(&self.after),
            before: self.before,
            after: self.after,
            shutdown: self.shutdown,
            leaderboard_reset: self.leaderboard_reset,
            tournament_end: self.tournament_end,
            tournament_reset: self.tournament_reset,
            purchase_notification_apple: self.purchase_notification_apple,
            subscription_notification_apple: self.subscription_notification_apple,
            purchase_notification_google: self.purchase_notification_google,
            subscription_notification_google: self.subscription_notification_google,
            nk,
            ctx,
            call_timeout,
            errors,
            shut_down: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// The hooks every runtime registered: what the REST and realtime edges call.
pub struct RuntimeHooks {
    before: HookTable<Registered>,
    after: HookTable<Registered>,
    before_metrics: HookMetrics,
    after_metrics: HookMetrics,
    shutdown: Option<Registered>,
    /// The leaderboard reset function, if a module registered one.
    leaderboard_reset: Option<Registered>,
    /// The tournament end and reset functions, if modules registered them.
    tournament_end: Option<Registered>,
    tournament_reset: Option<Registered>,
    /// The App Store notification functions, if modules registered them.
    purchase_notification_apple: Option<Registered>,
    subscription_notification_apple: Option<Registered>,
    /// The Google Play notification functions, if modules registered them.
    purchase_notification_google: Option<Registered>,
    subscription_notification_google: Option<Registered>,
    nk: Nk,
    /// Node, version and env, copied into each call's context.
    ctx: Arc<CallContext>,
    call_timeout: Duration,
    /// The last errors of each module (the console).
    errors: Arc<metafi_core::ModuleErrors>,
    /// Set when the shutdown function has run.
    shut_down: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for RuntimeHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeHooks")
            .field("before", &self.before.hooks().collect::<Vec<_>>())
            .field("after", &self.after.hooks().collect::<Vec<_>>())
            .field("shutdown", &self.shutdown.is_some())
            .finish()
    }
}

/// How a hook call failed.
enum HookFailure {
    Script(ScriptError),
    Dispatch(DispatchError),
    /// The hook returned something that is not the request.
    BadReturn(String),
}

impl RuntimeHooks {
    /// Whether any hook or a shutdown function is registered.
    pub fn is_empty(&self) -> bool {
        self.before.is_empty() && self.after.is_empty() && self.shutdown.is_none()
    }

    /// Runs the shutdown function, if one is registered, within `grace` (Nakama calls it when
    /// the server starts to stop). Only the first call runs it.
    pub async fn shutdown(&self, grace: Duration) {
        let Some(hook) = &self.shutdown else {
            return;
        };
        if self
            .shut_down
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        let ctx = self.context(ExecutionMode::Shutdown, RpcContext::default());
        let started = Instant::now();
        let outcome = match &hook.target {
            HookTarget::NativeShutdown(function) => {
                let call = function(ctx, self.nk.clone());
                match tokio::time::timeout(grace, AssertUnwindSafe(call).catch_unwind()).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(panic)) => Err(format!(
                        "panicked: {}",
                        crate::runtime::panic_text(panic.as_ref())
                    )),
                    Err(_) => Err("did not finish within the shutdown grace".into()),
                }
            }
            HookTarget::Pool { pool, key } => {
                match tokio::time::timeout(grace, pool.call(key.clone(), ctx, String::new())).await
                {
                    Ok(Ok(Ok(_))) => Ok(()),
                    Ok(Ok(Err(e))) => Err(format!("{e:?}")),
                    Ok(Err(e)) => Err(format!("{e:?}")),
                    Err(_) => Err("did not finish within the shutdown grace".into()),
                }
            }
            HookTarget::NativeBefore(_) | HookTarget::NativeAfter(_) => Ok(()),
        };
        record(
            hook.runtime,
            "shutdown",
            "shutdown",
            started,
            if outcome.is_ok() { "ok" } else { "failed" },
        );
        match outcome {
            Ok(()) => {
                tracing::info!(runtime = hook.runtime, module = %hook.module, "shutdown function finished")
            }
            Err(error) => {
                tracing::warn!(runtime = hook.runtime, module = %hook.module, %error, "shutdown function failed")
            }
        }
    }

    /// Whether a module registered a leaderboard reset function.
    pub fn has_leaderboard_reset(&self) -> bool {
        self.leaderboard_reset.is_some()
    }

    /// Whether a module registered a leaderboard reset, tournament end or tournament reset
    /// function (the scheduler then has someone to call).
    pub fn has_scheduled_functions(&self) -> bool {
        self.leaderboard_reset.is_some()
            || self.tournament_end.is_some()
            || self.tournament_reset.is_some()
    }

    /// Runs the tournament end (`reset: false`) or reset function, if any, with the
    /// tournament, its `end_active` and `next_reset`, within the call timeout. Failures are
    /// logged, as Nakama does.
    pub async fn tournament_event(
        &self,
        tournament: &metafi_core::leaderboards::TournamentView,
        end: i64,
        next_reset: i64,
        reset: bool,
    ) {
        let (hook, mode, name) = if reset {
            (
                &self.tournament_reset,
                ExecutionMode::TournamentReset,
                "tournament_reset",
            )
        } else {
            (
                &self.tournament_end,
                ExecutionMode::TournamentEnd,
                "tournament_end",
            )
        };
        let Some(hook) = hook else {
            return;
        };
        let HookTarget::Pool { pool, key } = &hook.target else {
            return;
        };
        let payload = Json::Array(vec![
            tournament_view(tournament, hook.runtime == "js"),
            Json::from(end),
            Json::from(next_reset),
        ])
        .to_string();
        let ctx = self.context(mode, RpcContext::default());
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(self.call_timeout, pool.call(key.clone(), ctx, payload)).await;
        let error = match outcome {
            Ok(Ok(Ok(_))) => None,
            Ok(Ok(Err(e))) => Some(format!("{e:?}")),
            Ok(Err(e)) => Some(format!("{e:?}")),
            Err(_) => Some("did not finish within the call timeout".to_owned()),
        };
        record(
            hook.runtime,
            name,
            name,
            started,
            if error.is_none() { "ok" } else { "failed" },
        );
        if let Some(error) = error {
            tracing::warn!(runtime = hook.runtime, module = %hook.module, tournament = %tournament.board.row.id, %error, "failed to invoke a tournament callback ({name})");
        }
    }

    /// Runs the leaderboard reset function, if any, for `board` whose period ended at
    /// `reset` (Unix seconds), within the call timeout. Failures are logged, as Nakama does.
    pub async fn leaderboard_reset(&self, board: &metafi_core::leaderboards::Board, reset: i64) {
        let Some(hook) = &self.leaderboard_reset else {
            return;
        };
        let HookTarget::Pool { pool, key } = &hook.target else {
            return;
        };
        let payload = Json::Array(vec![
            reset_board_view(board, reset, hook.runtime == "js"),
            Json::from(reset),
        ])
        .to_string();
        let ctx = self.context(ExecutionMode::LeaderboardReset, RpcContext::default());
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(self.call_timeout, pool.call(key.clone(), ctx, payload)).await;
        let error = match outcome {
            Ok(Ok(Ok(_))) => None,
            Ok(Ok(Err(e))) => Some(format!("{e:?}")),
            Ok(Err(e)) => Some(format!("{e:?}")),
            Err(_) => Some("did not finish within the call timeout".to_owned()),
        };
        record(
            hook.runtime,
            "leaderboard_reset",
            "leaderboard_reset",
            started,
            if error.is_none() { "ok" } else { "failed" },
        );
        if let Some(error) = error {
            tracing::warn!(runtime = hook.runtime, module = %hook.module, leaderboard = %board.row.id, %error, "failed to invoke leaderboard reset callback");
        }
    }

    /// Runs the notification function registered for `notice`, if any, within the call
    /// timeout, with `(purchase or subscription, provider payload JSON text, notification
    /// type)` as Nakama passes them. Failures are logged, as Nakama does.
    pub async fn apple_notice(&self, notice: &metafi_core::iap::AppleNotice) {
        self.store_notice(notice, false).await;
    }

    /// Runs the Google Play notification function registered for `notice`, if any, as
    /// [`apple_notice`](Self::apple_notice) does; `false` when it failed.
    pub async fn google_notice(&self, notice: &metafi_core::iap::AppleNotice) -> bool {
        self.store_notice(notice, true).await
    }

    async fn store_notice(&self, notice: &metafi_core::iap::AppleNotice, google: bool) -> bool {
        use metafi_core::iap::AppleNotice;
        let (hook, mode, what, kind, provider) = match (notice, google) {
            (
                AppleNotice::Purchase {
                    kind,
                    provider_payload,
                    ..
                },
                true,
            ) => (
                &self.purchase_notification_google,
                ExecutionMode::PurchaseNotificationGoogle,
                "purchase_notification_google",
                kind,
                provider_payload,
            ),
            (
                AppleNotice::Subscription {
                    kind,
                    provider_payload,
                    ..
                },
                true,
            ) => (
                &self.subscription_notification_google,
                ExecutionMode::SubscriptionNotificationGoogle,
                "subscription_notification_google",
                kind,
                provider_payload,
            ),
            (
                AppleNotice::Purchase {
                    kind,
                    provider_payload,
                    ..
                },
                false,
            ) => (
                &self.purchase_notification_apple,
                ExecutionMode::PurchaseNotificationApple,
                "purchase_notification_apple",
                kind,
                provider_payload,
            ),
            (
                AppleNotice::Subscription {
                    kind,
                    provider_payload,
                    ..
                },
                false,
            ) => (
                &self.subscription_notification_apple,
                ExecutionMode::SubscriptionNotificationApple,
                "subscription_notification_apple",
                kind,
                provider_payload,
            ),
        };
        let Some(hook) = hook else {
            return true;
        };
        let HookTarget::Pool { pool, key } = &hook.target else {
            return true;
        };
        let naming = if hook.runtime == "js" {
            crate::nk_api::Naming::Camel
        } else {
            crate::nk_api::Naming::Snake
        };
        let view = match notice {
            AppleNotice::Purchase { purchase, .. } => {
                crate::nk_api::purchase_payload(purchase, naming)
            }
            AppleNotice::Subscription { subscription, .. } => {
                crate::nk_api::subscription_payload(subscription, naming)
            }
        };
        let payload = Json::Array(vec![
            view,
            Json::from(provider.to_string()),
            Json::from(kind.as_str()),
        ])
        .to_string();
        let ctx = self.context(mode, RpcContext::default());
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(self.call_timeout, pool.call(key.clone(), ctx, payload)).await;
        let error = match outcome {
            Ok(Ok(Ok(_))) => None,
            Ok(Ok(Err(e))) => Some(format!("{e:?}")),
            Ok(Err(e)) => Some(format!("{e:?}")),
            Err(_) => Some("did not finish within the call timeout".to_owned()),
        };
        record(
            hook.runtime,
            what,
            what,
            started,
            if error.is_none() { "ok" } else { "failed" },
        );
        let store = if google { "Google" } else { "Apple" };
        match error {
            Some(error) => {
                tracing::error!(runtime = hook.runtime, module = %hook.module, notification_type = kind.as_str(), %error, "error invoking the {store} IAP notification function ({what})");
                false
            }
            None => true,
        }
    }

    fn context(&self, mode: ExecutionMode, request: RpcContext) -> Arc<CallContext> {
        Arc::new(CallContext {
            mode,
            node: self.ctx.node.clone(),
            version: self.ctx.version,
            env: self.ctx.env.clone(),
            request,
        })
    }

    /// Runs one hook; `payload` is in proto names, `None` is JSON `null`. `started` (the
    /// clock read for the hook's duration metric) is also when its time budget starts: one
    /// clock read where the host read it twice.
    async fn run(
        &self,
        hook: &Registered,
        ctx: Arc<CallContext>,
        payload: HookPayload,
        started: Instant,
    ) -> Result<Option<HookValue>, HookFailure> {
        match (&hook.target, payload) {
            // Native hooks take JSON in proto names.
            (HookTarget::NativeBefore(function), HookPayload::Before(input)) => {
                let input = input
                    .map(HookValue::into_json)
                    .transpose()
                    .map_err(|e| HookFailure::Script(unencodable(&e)))?;
                let call = function(ctx, self.nk.clone(), input);
                Ok(self.native(call, started).await?.map(HookValue::Json))
            }
            (HookTarget::NativeAfter(function), HookPayload::After(output, input)) => {
                let json = |value: Option<HookValue>| value.and_then(|v| v.into_json().ok());
                let call = function(ctx, self.nk.clone(), json(output), json(input));
                self.native(call, started).await.map(|()| None)
            }
            (HookTarget::Pool { pool, key }, payload) => {
                // The engine converts the values straight into its own (`EngineVm::call_hook`).
                let args = match payload {
                    HookPayload::Before(input) => HookArgs::Before(input),
                    HookPayload::After(output, input) => HookArgs::After { output, input },
                };
                match pool.call_hook(key.clone(), ctx, args, started).await {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(HookFailure::Script(error)),
                    Err(e) => Err(HookFailure::Dispatch(e)),
                }
            }
            // Invariant: before hooks are registered with before targets and after hooks with
            // after targets (`NativeInitializer`).
            _ => Err(HookFailure::BadReturn("a hook of the wrong kind".into())),
        }
    }

    async fn native<T>(
        &self,
        call: BoxFuture<'static, Result<T, RpcError>>,
        started: Instant,
    ) -> Result<T, HookFailure> {
        let deadline = tokio::time::Instant::from_std(started) + self.call_timeout;
        match tokio::time::timeout_at(deadline, AssertUnwindSafe(call).catch_unwind()).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(HookFailure::Script(ScriptError::Raised {
                code: error.code,
                message: error.message,
            })),
            Ok(Err(panic)) => Err(HookFailure::Script(ScriptError::Failed {
                message: "Runtime function failed.".into(),
                detail: crate::runtime::panic_text(panic.as_ref()),
            })),
            Err(_) => Err(HookFailure::Script(ScriptError::Timeout)),
        }
    }

    /// Records a failed hook among its module's last errors (the console).
    fn record_failure<T>(
        &self,
        mode: &str,
        hook: Hook,
        registered: &Registered,
        outcome: &Result<T, HookFailure>,
    ) {
        let function = || format!("{mode} {}", hook.name());
        match outcome {
            Err(HookFailure::Script(error)) => crate::last_errors::record(
                &self.errors,
                &registered.module,
                registered.runtime,
                &function(),
                error,
            ),
            Err(HookFailure::BadReturn(detail)) => self.errors.record(
                &registered.module,
                registered.runtime,
                &function(),
                "bad_result",
                &format!("returned something that is not the request: {detail}"),
            ),
            Ok(_) | Err(HookFailure::Dispatch(_)) => {}
        }
    }

    /// The client's error for a failed before hook (Nakama sends the hook's error with its
    /// code), logged with the module.
    fn caller_error(&self, hook: Hook, registered: &Registered, failure: HookFailure) -> CoreError {
        let runtime = registered.runtime;
        let module = &*registered.module;
        let name = hook.name();
        match failure {
            HookFailure::Script(ScriptError::Raised { code, message }) => {
                tracing::debug!(hook = name, runtime, module, code = code.as_i32(), %message, "before hook returned an error");
                CoreError::Status { code, message }
            }
            HookFailure::Script(ScriptError::Failed { message, detail }) => {
                tracing::error!(hook = name, runtime, module, %detail, "before hook raised an error");
                CoreError::Status {
                    code: Code::Internal,
                    message,
                }
            }
            HookFailure::Script(ScriptError::Timeout) => {
                let budget_ms = self.call_timeout.as_millis();
                tracing::warn!(
                    hook = name,
                    runtime,
                    module,
                    budget_ms,
                    "before hook stopped: it ran past its time budget (runtime.call_timeout_ms)"
                );
                metrics::counter!("metafi_runtime_budget_overruns_total", "runtime" => runtime, "budget" => "time").increment(1);
                CoreError::Status {
                    code: Code::DeadlineExceeded,
                    message: format!(
                        "Runtime Before function exceeded its time budget of {budget_ms} ms."
                    ),
                }
            }
            HookFailure::Script(ScriptError::OutOfMemory) => {
                tracing::warn!(
                    hook = name,
                    runtime,
                    module,
                    "before hook stopped: its VM reached the memory cap (runtime.memory_limit_mb)"
                );
                metrics::counter!("metafi_runtime_budget_overruns_total", "runtime" => runtime, "budget" => "memory").increment(1);
                CoreError::ResourceExhausted {
                    message: "Runtime Before function exceeded the script memory limit.".into(),
                }
            }
            HookFailure::Script(ScriptError::BadResult { found }) => {
                tracing::error!(hook = name, runtime, module, %found, "before hook returned something that is not the request");
                CoreError::Status {
                    code: Code::Internal,
                    message: "Could not complete runtime Before function.".into(),
                }
            }
            HookFailure::BadReturn(detail) => {
                tracing::error!(hook = name, runtime, module, %detail, "before hook returned something that is not the request");
                CoreError::Status {
                    code: Code::Internal,
                    message: "Could not complete runtime Before function.".into(),
                }
            }
            HookFailure::Dispatch(DispatchError::QueueFull) => {
                tracing::warn!(
                    hook = name,
                    runtime,
                    "before hook refused: every VM queue is full"
                );
                CoreError::ResourceExhausted {
                    message: format!("The {runtime} runtime is at capacity; retry shortly.").into(),
                }
            }
            HookFailure::Dispatch(DispatchError::Stopped) => CoreError::Unavailable {
                operation: "a before hook (the runtime is stopping)",
            },
        }
    }
}

enum HookPayload {
    Before(Option<HookValue>),
    After(Option<HookValue>, Option<HookValue>),
}

/// The failure of a hook whose request could not be encoded for it (never for the edges' own
/// messages, whose `Serialize` cannot fail): the client gets Nakama's "could not run".
pub(crate) fn unencodable(error: &dyn std::fmt::Display) -> ScriptError {
    ScriptError::Failed {
        message: "Could not run runtime Before function.".into(),
        detail: format!("could not encode the hook's value: {error}"),
    }
}

fn outcome_label<T>(outcome: &Result<T, HookFailure>) -> &'static str {
    match outcome {
        Ok(_) => "ok",
        Err(HookFailure::Script(e)) => e.kind(),
        Err(HookFailure::BadReturn(_)) => "bad_result",
        Err(HookFailure::Dispatch(DispatchError::QueueFull)) => "queue_full",
        Err(HookFailure::Dispatch(DispatchError::Stopped)) => "stopped",
    }
}

/// The leaderboard a reset function sees: Lua as Nakama's `LeaderboardReset` builds it
/// (`sort_order`, `prev_reset`, `next_reset` as strings), JavaScript as its leaderboard
/// objects (numbers, camelCase). `next_reset` is the period after the one that ended.
fn reset_board_view(board: &metafi_core::leaderboards::Board, reset: i64, js: bool) -> Json {
    use metafi_storage::Operator;
    let row = &board.row;
    let metadata: Json =
        serde_json::from_str(&row.metadata).unwrap_or_else(|_| Json::Object(Map::new()));
    let operator = match row.operator {
        Operator::Best => "best",
        Operator::Set => "set",
        Operator::Increment => "increment",
        Operator::Decrement => "decrement",
    };
    let order = row.sort_order.code();
    let next = board.expiry_at(reset);
    let prev = board.prev_reset(reset);
    let mut map = Map::new();
    map.insert("id".into(), Json::from(row.id.as_str()));
    map.insert("authoritative".into(), Json::from(row.authoritative));
    map.insert("operator".into(), Json::from(operator));
    map.insert("metadata".into(), metadata);
    if js {
        map.insert("sortOrder".into(), Json::from(order));
        map.insert(
            "createTime".into(),
            Json::from(row.create_time_ms.div_euclid(1000)),
        );
        if prev != 0 {
            map.insert("prevReset".into(), Json::from(prev));
        }
        if next != 0 {
            map.insert("nextReset".into(), Json::from(next));
        }
    } else {
        map.insert("sort_order".into(), Json::from(order.to_string()));
        map.insert(
            "create_time".into(),
            Json::from(row.create_time_ms.div_euclid(1000)),
        );
        if prev != 0 {
            map.insert("prev_reset".into(), Json::from(prev.to_string()));
        }
        if next != 0 {
            map.insert("next_reset".into(), Json::from(next.to_string()));
        }
    }
    Json::Object(map)
}

/// The tournament an end or reset function sees, as Nakama's runtimes build it: Lua with
/// `sort_order` as a string and `nil` resets and end time, JavaScript in camelCase with the
/// resets left out when 0; neither has `authoritative` or `join_required`.
fn tournament_view(view: &metafi_core::leaderboards::TournamentView, js: bool) -> Json {
    use metafi_storage::Operator;
    let row = &view.board.row;
    let metadata: Json =
        serde_json::from_str(&row.metadata).unwrap_or_else(|_| Json::Object(Map::new()));
    let operator = match row.operator {
        Operator::Best => "best",
        Operator::Set => "set",
        Operator::Increment => "increment",
        Operator::Decrement => "decrement",
    };
    let unsigned = |v: i64| u32::try_from(v).unwrap_or(0);
    let name = |snake: &'static str, camel: &'static str| if js { camel } else { snake };
    let order = row.sort_order.code();
    let mut map = Map::new();
    map.insert("id".into(), Json::from(row.id.as_str()));
    map.insert("title".into(), Json::from(row.title.as_str()));
    map.insert("description".into(), Json::from(row.description.as_str()));
    map.insert("category".into(), Json::from(row.category));
    map.insert(
        name("sort_order", "sortOrder").into(),
        if js {
            Json::from(order)
        } else {
            Json::from(order.to_string())
        },
    );
    map.insert("size".into(), Json::from(view.size));
    map.insert(name("max_size", "maxSize").into(), Json::from(row.max_size));
    map.insert(
        name("max_num_score", "maxNumScore").into(),
        Json::from(row.max_num_score),
    );
    map.insert("duration".into(), Json::from(row.duration));
    map.insert(
        name("start_active", "startActive").into(),
        Json::from(unsigned(view.start_active)),
    );
    map.insert(
        name("end_active", "endActive").into(),
        Json::from(unsigned(view.end_active)),
    );
    map.insert(
        name("can_enter", "canEnter").into(),
        Json::from(view.can_enter),
    );
    if view.next_reset != 0 {
        map.insert(
            name("next_reset", "nextReset").into(),
            Json::from(unsigned(view.next_reset)),
        );
    }
    if view.prev_reset != 0 {
        map.insert(
            name("prev_reset", "prevReset").into(),
            Json::from(unsigned(view.prev_reset)),
        );
    }
    map.insert("metadata".into(), metadata);
    map.insert(
        name("create_time", "createTime").into(),
        Json::from(row.create_time_ms.div_euclid(1000)),
    );
    map.insert(
        name("start_time", "startTime").into(),
        Json::from(row.start_time),
    );
    map.insert(
        name("end_time", "endTime").into(),
        if row.end_time > 0 {
            Json::from(row.end_time)
        } else {
            Json::Null
        },
    );
    map.insert("operator".into(), Json::from(operator));
    Json::Object(map)
}

#[async_trait::async_trait]
impl metafi_core::iap::NotificationListener for RuntimeHooks {
    async fn apple_notice(&self, notice: &metafi_core::iap::AppleNotice) {
        RuntimeHooks::apple_notice(self, notice).await;
    }

    async fn google_notice(&self, notice: &metafi_core::iap::AppleNotice) -> bool {
        RuntimeHooks::google_notice(self, notice).await
    }
}

#[async_trait::async_trait]
impl metafi_core::leaderboards::ResetListener for RuntimeHooks {
    async fn leaderboard_reset(&self, board: Arc<metafi_core::leaderboards::Board>, reset: i64) {
        RuntimeHooks::leaderboard_reset(self, &board, reset).await;
    }

    async fn tournament_end(
        &self,
        tournament: metafi_core::leaderboards::TournamentView,
        end: i64,
        reset: i64,
    ) {
        self.tournament_event(&tournament, end, reset, false).await;
    }

    async fn tournament_reset(
        &self,
        tournament: metafi_core::leaderboards::TournamentView,
        end: i64,
        reset: i64,
    ) {
        self.tournament_event(&tournament, end, reset, true).await;
    }
}

/// The metric handles of the hooks of one mode, looked up on a hook's first call (the
/// recorder is installed by then) instead of on every call: the duration histogram and the
/// `ok` counter; other outcomes are rare and looked up when they happen.
#[derive(Default)]
struct HookMetrics {
    handles: HookTable<std::sync::OnceLock<(metrics::Histogram, metrics::Counter)>>,
}

impl HookMetrics {
    /// One slot per registered hook of `table`.
    fn new(table: &HookTable<Registered>) -> HookMetrics {
        let mut handles = HookTable::default();
        for hook in table.hooks() {
            handles.insert(hook, std::sync::OnceLock::new());
        }
        HookMetrics { handles }
    }

    fn record(
        &self,
        hook: Hook,
        runtime: &'static str,
        mode: &'static str,
        started: Instant,
        outcome: &Result<Option<HookValue>, HookFailure>,
    ) {
        let label = outcome_label(outcome);
        let Some(slot) = self.handles.get(hook) else {
            record(runtime, hook.name(), mode, started, label);
            return;
        };
        let (duration, ok) = slot.get_or_init(|| {
            let id = hook.name();
            (
                metrics::histogram!("metafi_runtime_hook_duration_seconds", "id" => id, "mode" => mode, "runtime" => runtime),
                metrics::counter!("metafi_runtime_hook_calls_total", "id" => id, "mode" => mode, "runtime" => runtime, "outcome" => "ok"),
            )
        });
        duration.record(started.elapsed().as_secs_f64());
        if outcome.is_ok() {
            ok.increment(1);
        } else {
            metrics::counter!("metafi_runtime_hook_calls_total", "id" => hook.name(), "mode" => mode, "runtime" => runtime, "outcome" => label)
                .increment(1);
        }
    }
}

fn record(
    runtime: &'static str,
    id: &'static str,
    mode: &'static str,
    started: Instant,
    outcome: &'static str,
) {
    metrics::histogram!("metafi_runtime_hook_duration_seconds", "id" => id, "mode" => mode, "runtime" => runtime)
        .record(started.elapsed().as_secs_f64());
    metrics::counter!("metafi_runtime_hook_calls_total", "id" => id, "mode" => mode, "runtime" => runtime, "outcome" => outcome)
        .increment(1);
}

impl Hooks for RuntimeHooks {
    fn has_before(&self, hook: Hook) -> bool {
        self.before.contains(hook)
    }

    fn has_after(&self, hook: Hook) -> bool {
        self.after.contains(hook)
    }

    fn before(
        &self,
        hook: Hook,
        ctx: RpcContext,
        input: Option<Json>,
    ) -> HookFuture<'_, Result<Option<Json>, CoreError>> {
        let call = self.before_value(hook, ctx, input.map(HookValue::Json));
        Box::pin(async move {
            call.await?
                .map(HookValue::into_json)
                .transpose()
                .map_err(|e| metafi_core::hooks::unencodable_request(hook, &e))
        })
    }

    fn after(
        &self,
        hook: Hook,
        ctx: RpcContext,
        output: Option<Json>,
        input: Option<Json>,
    ) -> HookFuture<'_, ()> {
        self.after_value(
            hook,
            ctx,
            output.map(HookValue::Json),
            input.map(HookValue::Json),
        )
    }

    fn before_value(
        &self,
        hook: Hook,
        ctx: RpcContext,
        input: Option<HookValue>,
    ) -> HookFuture<'_, Result<Option<HookValue>, CoreError>> {
        Box::pin(async move {
            let Some(registered) = self.before.get(hook) else {
                return Ok(input);
            };
            let ctx = self.context(ExecutionMode::Before, ctx);
            let started = Instant::now();
            let outcome = self
                .run(registered, ctx, HookPayload::Before(input), started)
                .await;
            self.before_metrics
                .record(hook, registered.runtime, "before", started, &outcome);
            self.record_failure("before", hook, registered, &outcome);
            outcome.map_err(|failure| self.caller_error(hook, registered, failure))
        })
    }

    fn after_value(
        &self,
        hook: Hook,
        ctx: RpcContext,
        output: Option<HookValue>,
        input: Option<HookValue>,
    ) -> HookFuture<'_, ()> {
        Box::pin(async move {
            let Some(registered) = self.after.get(hook) else {
                return;
            };
            let ctx = self.context(ExecutionMode::After, ctx);
            let started = Instant::now();
            let outcome = self
                .run(registered, ctx, HookPayload::After(output, input), started)
                .await;
            self.after_metrics
                .record(hook, registered.runtime, "after", started, &outcome);
            self.record_failure("after", hook, registered, &outcome);
            if let Err(failure) = outcome {
                // Nakama only logs an after hook's error: the client has its answer.
                let error = self.caller_error(hook, registered, failure);
                tracing::warn!(hook = hook.name(), runtime = registered.runtime, module = %registered.module, error = %error, "after hook failed");
            }
        })
    }
}

/// Proto fields whose value is a map: their keys are user data, never renamed or pruned.
pub const MAP_FIELDS: &[&str] = &[
    "vars",
    "string_properties",
    "numeric_properties",
    "stringProperties",
    "numericProperties",
    "metadata",
];

/// A request in proto names as Lua sees it: `null` fields left out (a Lua table cannot hold
/// nil). Nakama also leaves out fields at their default value; MetaFi keeps them, because
/// without the schema an explicit `false`, `0` or `""` in a wrapper field (`create=false`, a
/// display name cleared with `""`) cannot be told from an unset one, and dropping it would
/// change the request a pass-through hook returns.
pub fn lua_view(value: Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = if MAP_FIELDS.contains(&k.as_str()) {
                        v
                    } else {
                        lua_view(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(lua_view).collect()),
        other => other,
    }
}

/// A request in proto names renamed to the `lowerCamelCase` JSON names JavaScript modules see
/// (`refresh_token` → `refreshToken`); the keys of map fields are left as they are.
pub fn to_js_names(value: Json) -> Json {
    rename(value, &crate::nk_api::camel_case)
}

/// A JavaScript hook's result read back into proto names (`refreshToken` → `refresh_token`).
pub fn from_js_names(value: Json) -> Json {
    rename(value, &camel_to_snake)
}

/// A JavaScript hook's result as `JSON.stringify` wrote it, read straight into proto names:
/// what `from_js_names(serde_json::from_str(text)?)` gives, in one pass.
pub fn from_js_text(text: &str) -> serde_json::Result<Json> {
    use serde::de::DeserializeSeed;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = ProtoNames { rename: true }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Deserializes JSON with object keys turned from `lowerCamelCase` into proto names while
/// `rename` holds (not inside map fields).
#[derive(Clone, Copy)]
struct ProtoNames {
    rename: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for ProtoNames {
    type Value = Json;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ProtoNames {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let inner = self.rename && !MAP_FIELDS.contains(&key.as_str());
            let value = map.next_value_seed(ProtoNames { rename: inner })?;
            let key = if self.rename {
                camel_to_snake(&key)
            } else {
                key
            };
            out.insert(key, value);
        }
        Ok(Json::Object(out))
    }
}

fn rename(value: Json, f: &dyn Fn(&str) -> String) -> Json {
    match value {
        Json::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let v = if MAP_FIELDS.contains(&k.as_str()) {
                    v
                } else {
                    rename(v, f)
                };
                out.insert(f(&k), v);
            }
            Json::Object(out)
        }
        Json::Array(items) => Json::Array(items.into_iter().map(|v| rename(v, f)).collect()),
        other => other,
    }
}

/// A `lowerCamelCase` JSON name as its proto name (`refreshToken` → `refresh_token`), as a
/// JavaScript hook's result is read back.
pub fn proto_name(name: &str) -> String {
    camel_to_snake(name)
}

fn camel_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hook_keys_round_trip_in_lower_case() {
        let key = hook_key(HookMode::Before, HookKind::Api, "AuthenticateDevice");
        assert_eq!(key, "\u{1}before:authenticatedevice");
        assert_eq!(
            parse_hook_key(&key),
            Some((HookMode::Before, HookKind::Api, "authenticatedevice"))
        );
        let key = hook_key(HookMode::After, HookKind::Rt, "ChannelJoin");
        assert_eq!(
            parse_hook_key(&key),
            Some((HookMode::After, HookKind::Rt, "channeljoin"))
        );
        assert_eq!(parse_hook_key("authenticatedevice"), None);
        assert_eq!(parse_hook_key(SHUTDOWN_KEY), None);
    }

    #[test]
    fn javascript_sees_camel_case_names_but_map_keys_unchanged() {
        let request = json!({"account": {"id": "d", "vars": {"my_key": "v"}}, "refresh_token": "t", "object_ids": [{"user_id": "u"}]});
        let js = to_js_names(request.clone());
        assert_eq!(
            js,
            json!({"account": {"id": "d", "vars": {"my_key": "v"}}, "refreshToken": "t", "objectIds": [{"userId": "u"}]})
        );
        assert_eq!(from_js_names(js), request);
    }

    #[test]
    fn javascript_results_read_in_one_pass_as_from_js_names_does() {
        let text = r#"{"refreshToken":"t","objectIds":[{"userId":"u","n":1.5,"k":-3}],"vars":{"myKey":{"innerKey":1}},"stringProperties":{"aB":"c"},"x":null,"ok":true}"#;
        let expected = from_js_names(serde_json::from_str(text).unwrap());
        assert_eq!(from_js_text(text).unwrap(), expected);
        assert_eq!(
            expected["vars"],
            json!({"myKey": {"innerKey": 1}}),
            "map fields keep their keys"
        );
        assert_eq!(from_js_text("[1,\"a\"]").unwrap(), json!([1, "a"]));
        assert!(from_js_text("{} x").is_err());
    }

    #[test]
    fn lua_sees_proto_names_without_nulls_and_keeps_explicit_false() {
        let request = json!({"account": {"id": "d", "vars": {"k": ""}}, "create": false, "username": null, "ping": {}, "n": 0});
        assert_eq!(
            lua_view(request),
            json!({"account": {"id": "d", "vars": {"k": ""}}, "create": false, "ping": {}, "n": 0})
        );
    }
}

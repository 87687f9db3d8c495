//! The hook registrations of the `initializer`: `registerBefore<Name>` and
//! `registerAfter<Name>` for every API call Nakama names, `registerRtBefore(name, fn)`,
//! `registerRtAfter(name, fn)`, `registerShutdown(fn)`, `registerLeaderboardReset(fn)` and
//! `registerTournamentEnd/Reset(fn)`,
//! with the argument errors of Nakama's `runtime_javascript_init.go` (storage indexes:
//! `storage_index.rs`); and the registrations of features MetaFi does not serve yet (purchase
//! notifications),
//! which load fine and are reported once at start.
//!
//! A hook is stored like an RPC, under a reserved id ([`hook_key`]) the host calls with the
//! request as JSON (already in JavaScript's `lowerCamelCase` names); a small wrapper parses it
//! and calls the module's function as Nakama does: `fn(ctx, logger, nk, data)` before,
//! `fn(ctx, logger, nk, data, request)` after; a before hook's result is stringified (nothing:
//! `""`, which drops the call). A hook may return a promise.

use metafi_core::HookKind;
use metafi_core::hooks::NAKAMA_API_HOOKS;
use metafi_runtime::hooks::{
    HookMode, LEADERBOARD_RESET_KEY, PURCHASE_NOTIFICATION_APPLE_KEY,
    PURCHASE_NOTIFICATION_GOOGLE_KEY, SHUTDOWN_KEY, SUBSCRIPTION_NOTIFICATION_APPLE_KEY,
    SUBSCRIPTION_NOTIFICATION_GOOGLE_KEY, TOURNAMENT_END_KEY, TOURNAMENT_RESET_KEY, hook_key,
};
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Persistent, Value};

use crate::convert;
use crate::initializer::loading_module;
use crate::vm::{Registration, Shared};

use std::rc::Rc;

const BEFORE: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var out = function (r) { return r == null ? '' : JSON.stringify(r); }; var r = fn(ctx, logger, nk, JSON.parse(payload)); return r instanceof Promise ? r.then(out) : out(r); }; })";
const AFTER: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var both = JSON.parse(payload); var r = fn(ctx, logger, nk, both[0], both[1]); return r instanceof Promise ? r.then(function () { return ''; }) : ''; }; })";
const SHUTDOWN: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var r = fn(ctx, logger, nk); return r instanceof Promise ? r.then(function () { return ''; }) : ''; }; })";
const TOURNAMENT_CALLBACK: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var all = JSON.parse(payload); var r = fn(ctx, logger, nk, all[0], all[1], all[2]); return r instanceof Promise ? r.then(function () { return ''; }) : ''; }; })";
const LEADERBOARD_RESET: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var both = JSON.parse(payload); var r = fn(ctx, logger, nk, both[0], both[1]); return r instanceof Promise ? r.then(function () { return ''; }) : ''; }; })";

/// Adds the hook registrations to `initializer`.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    initializer: &Object<'js>,
) -> rquickjs::Result<()> {
    for name in NAKAMA_API_HOOKS {
        // Nakama's JavaScript runtime has no SessionLogout hooks.
        if *name == "SessionLogout" {
            continue;
        }
        for mode in [HookMode::Before, HookMode::After] {
            let function = match mode {
                HookMode::Before => format!("registerBefore{name}"),
                HookMode::After => format!("registerAfter{name}"),
            };
            let on = shared.clone();
            let register = Function::new(ctx.clone(), {
                let function = function.clone();
                move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
                    let f = convert::arg(&args.0, 0)
                        .and_then(|f| f.as_function())
                        .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
                        .clone();
                    let module = loading_module(&ctx, &on, &function)?;
                    let key = hook_key(mode, HookKind::Api, name);
                    store_hook(&ctx, &on, key, mode, f, module)
                }
            })?
            .with_name(&function)?;
            initializer.set(function, register)?;
        }
    }
    for (function, mode) in [
        ("registerRtBefore", HookMode::Before),
        ("registerRtAfter", HookMode::After),
    ] {
        let on = shared.clone();
        let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            let name = convert::arg(&args.0, 0)
                .and_then(convert::string)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| Exception::throw_type(&ctx, "expects a non empty string"))?;
            let f = convert::arg(&args.0, 1)
                .and_then(|f| f.as_function())
                .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
                .clone();
            let module = loading_module(&ctx, &on, function)?;
            let key = hook_key(mode, HookKind::Rt, &name);
            store_hook(&ctx, &on, key, mode, f, module)
        })?
        .with_name(function)?;
        initializer.set(function, register)?;
    }
    let on = shared.clone();
    let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        let f = convert::arg(&args.0, 0)
            .and_then(|f| f.as_function())
            .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
            .clone();
        let module = loading_module(&ctx, &on, "registerShutdown")?;
        let wrap: Function<'js> = ctx.eval(SHUTDOWN)?;
        let wrapped: Function<'js> = wrap.call((f,))?;
        store(&ctx, &on, SHUTDOWN_KEY.to_owned(), wrapped, module)
    })?
    .with_name("registerShutdown")?;
    initializer.set("registerShutdown", register)?;
    let on = shared.clone();
    let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        let f = convert::arg(&args.0, 0)
            .and_then(|f| f.as_function())
            .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
            .clone();
        let module = loading_module(&ctx, &on, "registerLeaderboardReset")?;
        let wrap: Function<'js> = ctx.eval(LEADERBOARD_RESET)?;
        let wrapped: Function<'js> = wrap.call((f,))?;
        store(&ctx, &on, LEADERBOARD_RESET_KEY.to_owned(), wrapped, module)
    })?
    .with_name("registerLeaderboardReset")?;
    initializer.set("registerLeaderboardReset", register)?;
    // fn(ctx, logger, nk, tournament, end, reset) and fn(ctx, logger, nk, purchase or
    // subscription, providerPayload, notificationType): three values from the host.
    for (name, key) in [
        ("registerTournamentEnd", TOURNAMENT_END_KEY),
        ("registerTournamentReset", TOURNAMENT_RESET_KEY),
        (
            "registerPurchaseNotificationApple",
            PURCHASE_NOTIFICATION_APPLE_KEY,
        ),
        (
            "registerSubscriptionNotificationApple",
            SUBSCRIPTION_NOTIFICATION_APPLE_KEY,
        ),
        (
            "registerPurchaseNotificationGoogle",
            PURCHASE_NOTIFICATION_GOOGLE_KEY,
        ),
        (
            "registerSubscriptionNotificationGoogle",
            SUBSCRIPTION_NOTIFICATION_GOOGLE_KEY,
        ),
    ] {
        let on = shared.clone();
        let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            let f = convert::arg(&args.0, 0)
                .and_then(|f| f.as_function())
                .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
                .clone();
            let module = loading_module(&ctx, &on, name)?;
            let wrap: Function<'js> = ctx.eval(TOURNAMENT_CALLBACK)?;
            let wrapped: Function<'js> = wrap.call((f,))?;
            store(&ctx, &on, key.to_owned(), wrapped, module)
        })?
        .with_name(name)?;
        initializer.set(name, register)?;
    }
    crate::storage_index::install(ctx, shared, initializer)?;
    Ok(())
}

/// Stores a hook: the function itself for the host's hook calls (values in and out,
/// `JsVm::run_hook`), and its JSON-text wrapper as an RPC under the same reserved id.
fn store_hook<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    key: String,
    mode: HookMode,
    function: Function<'js>,
    module: String,
) -> rquickjs::Result<()> {
    let wrapped = wrapper(ctx, mode, function.clone())?;
    shared
        .hooks
        .borrow_mut()
        .insert(key.clone(), Persistent::save(ctx, function));
    store(ctx, shared, key, wrapped, module)
}

fn wrapper<'js>(
    ctx: &Ctx<'js>,
    mode: HookMode,
    function: Function<'js>,
) -> rquickjs::Result<Function<'js>> {
    let wrap: Function<'js> = ctx.eval(match mode {
        HookMode::Before => BEFORE,
        HookMode::After => AFTER,
    })?;
    wrap.call((function,))
}

pub(crate) fn store<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    key: String,
    function: Function<'js>,
    module: String,
) -> rquickjs::Result<()> {
    // Registering a hook again replaces the function, as in Nakama.
    shared.rpcs.borrow_mut().insert(
        key,
        Registration {
            value: Persistent::save(ctx, function),
            module,
        },
    );
    Ok(())
}

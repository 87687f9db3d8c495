//! The `initializer` argument of `InitModule`: `registerRpc(id, fn)` and
//! `registerMatch(name, handlers)` (hooks: `crate::hooks`), with the argument checks and messages of Nakama's
//! `runtime_javascript_init.go`. Registering is only possible while `InitModule` runs.

use std::rc::Rc;

use metafi_runtime::match_bridge::{Callback, Dialect};
use metafi_runtime::nk_api::{self, Naming, NkArgs, NkCall, NkError};
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Persistent, Value};

use crate::convert;
use crate::vm::{Registration, Shared};

pub(crate) fn object<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let initializer = Object::new(ctx.clone())?;
    let on_rpc = shared.clone();
    let register_rpc = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        register_rpc(&ctx, &on_rpc, &args.0)
    })?
    .with_name("registerRpc")?;
    initializer.set("registerRpc", register_rpc)?;
    let on_match = shared.clone();
    let register_match =
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            register_match(&ctx, &on_match, &args.0)
        })?
        .with_name("registerMatch")?;
    initializer.set("registerMatch", register_match)?;
    let on_matched = shared.clone();
    let register_matched =
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            let module = loading_module(&ctx, &on_matched, "registerMatchmakerMatched")?;
            crate::js_match_handler::register_matchmaker_matched(&ctx, &on_matched, &args.0, module)
        })?
        .with_name("registerMatchmakerMatched")?;
    initializer.set("registerMatchmakerMatched", register_matched)?;
    crate::hooks::install(ctx, shared, &initializer)?;
    // `initializer.getConfig()`: the Lua `nk.get_config` row, whose keys are the config's own
    // snake_case names in both languages, as in Nakama.
    let on_config = shared.clone();
    let get_config = Function::new(ctx.clone(), move |ctx: Ctx<'js>| {
        get_config(&ctx, &on_config)
    })?
    .with_name("getConfig")?;
    initializer.set("getConfig", get_config)?;
    Ok(initializer)
}

fn get_config<'js>(ctx: &Ctx<'js>, shared: &Shared) -> rquickjs::Result<Value<'js>> {
    let row = nk_api::lua_function("get_config").ok_or_else(|| {
        Exception::throw_message(ctx, "initializer.getConfig: the nk table has no get_config")
    })?;
    let outcome = match row.call {
        NkCall::Sync(f) => f(&shared.nk, NkArgs::new(Naming::Snake, Vec::new())),
        NkCall::Async(_) | NkCall::Unserved(_) => Err(NkError::failed(
            "initializer.getConfig is not available on this server",
        )),
    };
    match outcome {
        Ok(value) => crate::nk_value::result(ctx, &value),
        Err(error) => Err(Exception::throw_message(
            ctx,
            &error.lua_message("getConfig"),
        )),
    }
}

/// The module whose `InitModule` is running, or an error for a registration made later.
pub(crate) fn loading_module(
    ctx: &Ctx<'_>,
    shared: &Shared,
    function: &str,
) -> rquickjs::Result<String> {
    shared.loading.borrow().clone().ok_or_else(|| {
        Exception::throw_message(
            ctx,
            &format!("initializer.{function} can only be called while InitModule runs"),
        )
    })
}

fn register_rpc<'js>(ctx: &Ctx<'js>, shared: &Shared, args: &[Value<'js>]) -> rquickjs::Result<()> {
    let id = convert::arg(args, 0)
        .and_then(convert::string)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Exception::throw_type(ctx, "expects a non empty string"))?;
    let function = convert::arg(args, 1)
        .and_then(|f| f.as_function())
        .ok_or_else(|| Exception::throw_type(ctx, "expects a function"))?;
    let module = loading_module(ctx, shared, "registerRpc")?;
    // Registering an id again replaces the function, as in Nakama.
    shared.rpcs.borrow_mut().insert(
        id.to_lowercase(),
        Registration {
            value: Persistent::save(ctx, function.clone()),
            module,
        },
    );
    Ok(())
}

fn register_match<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<()> {
    let name = convert::arg(args, 0)
        .and_then(convert::string)
        .ok_or_else(|| Exception::throw_type(ctx, "expects string"))?;
    if name.is_empty() {
        return Err(Exception::throw_type(ctx, "expects a non empty match name"));
    }
    let handlers = convert::arg(args, 1)
        .and_then(convert::plain_object)
        .ok_or_else(|| Exception::throw_type(ctx, "expects an object"))?;
    // The functions are copied out, so changing the object later changes nothing.
    let registered = Object::new(ctx.clone())?;
    // The seven functions a match handler object must have (Nakama's `MatchFnId`s).
    for function in Callback::ALL.map(|c| c.name(Dialect::Js)) {
        let value: Value<'js> = handlers.get(function)?;
        if value.is_undefined() {
            return Err(Exception::throw_type(ctx, &format!("{function} not found")));
        }
        if !value.is_function() {
            return Err(Exception::throw_type(
                ctx,
                &format!("{function} value not a valid function"),
            ));
        }
        registered.set(function, value)?;
    }
    let module = loading_module(ctx, shared, "registerMatch")?;
    shared.matches.borrow_mut().insert(
        name,
        Registration {
            value: Persistent::save(ctx, registered),
            module,
        },
    );
    Ok(())
}

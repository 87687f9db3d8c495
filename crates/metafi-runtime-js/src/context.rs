//! The `ctx` argument of JavaScript functions, with the camelCase names of Nakama's
//! JavaScript runtime (`runtime_javascript_context.go`).

use metafi_runtime::CallContext;
use rquickjs::{Ctx, Object};

use crate::convert;
use crate::vm::Shared;

/// The context of `InitModule`: `node`, `version` and `env`, as Nakama's init context.
pub(crate) fn init_object<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    env: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    object.set("node", &**shared.nk.node())?;
    object.set("version", env!("CARGO_PKG_VERSION"))?;
    object.set("env", env)?;
    Ok(object)
}

/// The context of an RPC call. `env` is the VM's shared object, as in Nakama.
pub(crate) fn rpc_object<'js>(
    ctx: &Ctx<'js>,
    call: &CallContext,
    env: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let request = &call.request;
    let object = Object::new(ctx.clone())?;
    object.set("node", &*call.node)?;
    object.set("version", call.version)?;
    object.set("env", env)?;
    object.set("executionMode", call.mode.as_str())?;
    object.set("headers", convert::string_lists(ctx, &request.headers)?)?;
    object.set("queryParams", convert::string_lists(ctx, &request.query)?)?;
    if let Some(user) = &request.user {
        if user.expires_at != 0 {
            object.set("userSessionExp", user.expires_at as f64)?;
        }
        object.set("userId", user.user_id.to_string())?;
        object.set("username", user.username.as_str())?;
        object.set("vars", convert::string_map(ctx, user.vars.iter())?)?;
        if !user.session_id.is_nil() {
            object.set("sessionId", user.session_id.to_string())?;
        }
    }
    if let Some(ip) = request.client_ip {
        object.set("clientIp", ip.to_string())?;
    }
    Ok(object)
}

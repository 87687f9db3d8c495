//! The `ctx` argument of `InitModule`, with the camelCase names of Nakama's JavaScript runtime
//! (`runtime_javascript_context.go`). An RPC's or hook's `ctx` is built by the VM's call entry
//! (`vm.rs`, `CALL_ENTRY`).

use rquickjs::{Ctx, Object};

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

//! The `nk` argument: Nakama's JavaScript server API (`runtime_javascript_nakama.go`) over
//! [`Nk`](metafi_runtime::Nk). Every function is a row of the host's `nk` binding table,
//! bound by `nk_binding.rs`; nothing is written here by hand.
//!
//! Every function is synchronous from the script's point of view, as in Nakama: one that does
//! IO blocks the VM thread until the answer arrives or the call's deadline passes (`io.rs`).
//! A failed `nk` call throws an `Error` reading `failed to read storage objects: <reason>`;
//! uncaught, the client gets code 13 with that message.

use std::rc::Rc;

use rquickjs::{Ctx, Object};

use crate::vm::Shared;

/// Builds the `nk` object of a VM.
pub(crate) fn object<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let nk = Object::new(ctx.clone())?;
    crate::nk_binding::install(ctx, &nk, shared)?;
    Ok(nk)
}

//! Binds the host's `nk` table (`metafi_runtime::nk_api`) into the `nakama` module: one Lua
//! function per row with a Lua name. Sync rows run on the VM thread; async rows are awaited
//! from the calling coroutine, so other calls on the VM run meanwhile; unserved rows raise
//! their error when called, never at load. Every error carries the calling script's
//! `file:line: ` as gopher-lua's `RaiseError` does, and every call first checks the deadline.

use metafi_runtime::nk_api::{self, Naming, NkArgs, NkCall, NkError};
use mlua::{Lua, MultiValue, Table};

use crate::nakama::{located, located_async, shared_nk};
use crate::nk_value;

/// Puts every table row with a Lua name into `module`, replacing a function of the same name
/// the engine bound itself (the table wins).
pub(crate) fn install(lua: &Lua, module: &Table) -> mlua::Result<()> {
    for row in nk_api::functions() {
        let Some(name) = row.lua else {
            continue;
        };
        let function = match row.call {
            NkCall::Sync(f) => located(lua, move |lua, values: MultiValue| {
                let nk = shared_nk(lua)?;
                let args = NkArgs::new(Naming::Snake, nk_value::args(&values)?);
                let value = f(&nk, args).map_err(|e| raised(&e, name))?;
                nk_value::results(lua, value)
            })?,
            NkCall::Async(f) => located_async(lua, move |lua: Lua, values: MultiValue| {
                let call = nk_value::args(&values)
                    .and_then(|args| Ok(f(shared_nk(&lua)?, NkArgs::new(Naming::Snake, args))));
                async move {
                    let value = call?.await.map_err(|e| raised(&e, name))?;
                    nk_value::results(&lua, value)
                }
            })?,
            NkCall::Unserved(why) => located(lua, move |_, _: MultiValue| -> mlua::Result<()> {
                Err(raised(&why.error(name), name))
            })?,
        };
        module.raw_set(name, function)?;
    }
    Ok(())
}

/// An `nk` error as Lua raises it: `bad argument #N to name (…)` or the failure's text.
fn raised(error: &NkError, name: &str) -> mlua::Error {
    mlua::Error::runtime(error.lua_message(name))
}

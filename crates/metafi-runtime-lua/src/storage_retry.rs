//! `nk.storage_write_retry(keys, update_fn, max_retries)`: the host's retry loop
//! (`metafi_runtime::nk_api::storage_retry::run`) awaited from the calling coroutine, with the
//! script's update function called back on this VM between attempts (`call_async`, so it may
//! itself call `nk` functions that do IO).

use metafi_runtime::nk_api::storage_retry as retry;
use metafi_runtime::nk_api::{Naming, NkArgs, NkError};
use mlua::{Function, Lua, MultiValue, Value};

use crate::nakama::{located_async, shared_nk};
use crate::nk_value;

const NAME: &str = "storage_write_retry";

pub(crate) fn function(lua: &Lua) -> mlua::Result<Function> {
    located_async(lua, |lua: Lua, values: MultiValue| async move {
        let nk = shared_nk(&lua)?;
        let args = NkArgs::new(Naming::Snake, nk_value::args(&values)?);
        let update = match values.get(1) {
            Some(Value::Function(f)) => f.clone(),
            _ => return Err(raised(&retry::not_a_function(&args))),
        };
        let max_retries = retry::max_retries(&args).map_err(|e| raised(&e))?;
        let ids = retry::keys(&args).map_err(|e| raised(&e))?;
        let call = |objects: Vec<metafi_storage::StorageObject>| {
            let lua = lua.clone();
            let update = update.clone();
            async move {
                let argument = nk_value::to_lua(&lua, retry::update_argument(&objects))
                    .map_err(|e| retry::update_failed(Naming::Snake, &e.to_string()))?;
                let returned: Value = update
                    .call_async(argument)
                    .await
                    .map_err(|e| retry::update_failed(Naming::Snake, &lua_error_text(&e)))?;
                let returned = nk_value::args(&MultiValue::from_vec(vec![returned]))
                    .map_err(|e| retry::update_failed(Naming::Snake, &e.to_string()))?;
                let returned = returned.into_iter().next().unwrap_or_default();
                retry::writes(Naming::Snake, returned)
            }
        };
        let value = retry::run(&nk, ids, call, max_retries)
            .await
            .map_err(|e| raised(&e))?;
        nk_value::results(&lua, value)
    })
}

/// A Lua error's message without mlua's traceback decoration.
fn lua_error_text(error: &mlua::Error) -> String {
    match error {
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

fn raised(error: &NkError) -> mlua::Error {
    mlua::Error::runtime(error.lua_message(NAME))
}

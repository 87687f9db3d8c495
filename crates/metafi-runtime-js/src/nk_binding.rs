//! Binds the host's `nk` table (`metafi_runtime::nk_api`) onto the `nk` object: one function
//! per row with a JavaScript name. Sync rows run on the VM thread; async rows block the VM
//! thread until their future ends or the call's deadline passes (`Shared::wait`), as every
//! Nakama JavaScript function is synchronous; unserved rows throw when called, never at load.
//! `NkError::Arg` is a `TypeError`, `NkError::Failed` an `Error`.

use std::rc::Rc;

use metafi_runtime::nk_api::{self, Naming, NkArgs, NkCall, NkError};
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Value};

use crate::nk_value;
use crate::vm::{self, Shared};

/// Sets every table row with a JavaScript name on `nk`, replacing a function of the same name
/// the engine set itself (the table wins).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Rc<Shared>,
) -> rquickjs::Result<()> {
    for row in nk_api::functions() {
        let Some(name) = row.js else {
            continue;
        };
        let call = row.call;
        let shared = shared.clone();
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            invoke(&ctx, &shared, name, call, &args.0)
        })?
        .with_name(name)?;
        nk.set(name, function)?;
    }
    // Takes a script function, which the table cannot carry: bound here.
    let retry_shared = shared.clone();
    let retry = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        crate::storage_retry::call(&ctx, &retry_shared, &args)
    })?
    .with_name("storageWriteRetry")?;
    nk.set("storageWriteRetry", retry)?;
    Ok(())
}

fn invoke<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    name: &'static str,
    call: NkCall,
    values: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let outcome = match call {
        NkCall::Unserved(why) => Err(why.error(name)),
        NkCall::Sync(f) => f(
            &shared.nk,
            NkArgs::new(Naming::Camel, nk_value::args(ctx, values)?),
        ),
        NkCall::Async(f) => {
            let args = NkArgs::new(Naming::Camel, nk_value::args(ctx, values)?);
            match shared.wait(f(shared.nk.clone(), args)) {
                Ok(outcome) => outcome,
                Err(error) => return Err(vm::wait_error(ctx, &format!("nk.{name}"), error)),
            }
        }
    };
    match outcome {
        Ok(value) => nk_value::result(ctx, &value),
        Err(NkError::Arg { message, .. }) => Err(Exception::throw_type(ctx, &message)),
        Err(NkError::Failed { message }) => Err(Exception::throw_message(ctx, &message)),
    }
}

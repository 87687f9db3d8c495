//! `nk.storageWriteRetry(keys, updateFn, maxRetries)`: the host's retry steps
//! (`metafi_core::Objects::read`/`try_write`, `retry_backoff`) driven from here, because the
//! update function must run on this VM thread: each read, write and pause blocks the thread
//! (`Shared::wait`, bounded by the call's deadline) and the update function is called
//! directly in between.

use metafi_core::objects::{MAX_WRITE_RETRIES, RETRIES_EXHAUSTED, WriteAttempt, retry_backoff};
use metafi_runtime::nk_api::storage_retry as retry;
use metafi_runtime::nk_api::{Naming, NkArgs, NkError, NkValue};
use metafi_storage::Caller;
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Value};

use crate::nk_value;
use crate::vm::{self, Shared};

const NAME: &str = "nk.storageWriteRetry";

pub(crate) fn call<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    values: &Rest<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let values = &values.0;
    let args = NkArgs::new(Naming::Camel, nk_value::args(ctx, values)?);
    if args.at(1).is_nil() {
        return Err(thrown(ctx, retry::keys(&args).err()));
    }
    let ids = retry::keys(&args).map_err(|e| thrown(ctx, Some(e)))?;
    if ids.is_empty() {
        return nk_value::result(ctx, &NkValue::List(Vec::new()));
    }
    let Some(update) = values.get(1).and_then(|v| v.as_function()).cloned() else {
        return Err(thrown(ctx, Some(retry::not_a_function(&args))));
    };
    let max_retries = retry::max_retries(&args).map_err(|e| thrown(ctx, Some(e)))?;
    let objects = shared.nk.objects().clone();
    for attempt in 0..=max_retries.min(MAX_WRITE_RETRIES) {
        let read = {
            let objects = objects.clone();
            let ids = ids.clone();
            async move { objects.read(Caller::Server, ids).await }
        };
        let read = wait(ctx, shared, read)?.map_err(|e| core_failed(ctx, e))?;
        let writes = run_update(ctx, shared, &update, &read)?;
        let write = {
            let objects = objects.clone();
            async move { objects.try_write(writes).await }
        };
        match wait(ctx, shared, write)?.map_err(|e| core_failed(ctx, e))? {
            WriteAttempt::Written(acks) => return nk_value::result(ctx, &retry::acks(&acks)),
            WriteAttempt::Conflict => {
                // Made inside the task: a timer made here would belong to this VM thread's
                // own runtime, which cannot fire it while the thread blocks.
                let pause = retry_backoff(attempt);
                wait(ctx, shared, async move { tokio::time::sleep(pause).await })?;
            }
        }
    }
    Err(thrown(ctx, Some(retry::failed(RETRIES_EXHAUSTED))))
}

/// Calls the update function with the objects read and reads its writes back.
fn run_update<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    update: &Function<'js>,
    read: &[metafi_storage::StorageObject],
) -> rquickjs::Result<Vec<metafi_core::objects::WriteInput>> {
    let argument = nk_value::to_js(ctx, &retry::update_argument(read))?;
    let returned: Value<'js> = match update.call((argument,)) {
        Ok(value) => value,
        // Out of time or memory: the engine reports it as it does for any call.
        Err(e) if shared.budget.expired() || !matches!(e, rquickjs::Error::Exception) => {
            return Err(e);
        }
        Err(_) => {
            let exception = ctx.catch();
            let text = vm::display(ctx, &exception);
            return Err(thrown(
                ctx,
                Some(retry::update_failed(Naming::Camel, &text)),
            ));
        }
    };
    let returned = nk_value::args(ctx, std::slice::from_ref(&returned))?;
    let returned = returned.into_iter().next().unwrap_or_default();
    retry::writes(Naming::Camel, returned).map_err(|e| thrown(ctx, Some(e)))
}

fn wait<T, F>(ctx: &Ctx<'_>, shared: &Shared, future: F) -> rquickjs::Result<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    shared
        .wait(future)
        .map_err(|e| vm::wait_error(ctx, NAME, e))
}

fn core_failed(ctx: &Ctx<'_>, error: metafi_core::CoreError) -> rquickjs::Error {
    thrown(
        ctx,
        Some(NkError::core(
            "failed to write storage objects with retry",
            error,
        )),
    )
}

/// An `nk` error thrown as the binding table throws it (`TypeError` for arguments).
fn thrown(ctx: &Ctx<'_>, error: Option<NkError>) -> rquickjs::Error {
    match error {
        Some(NkError::Arg { message, .. }) => Exception::throw_type(ctx, &message),
        Some(NkError::Failed { message }) => Exception::throw_message(ctx, &message),
        None => Exception::throw_type(ctx, "expects an array of keys"),
    }
}

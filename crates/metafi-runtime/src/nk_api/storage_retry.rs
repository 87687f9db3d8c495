//! `storage_write_retry` (Lua) / `storageWriteRetry` (JS): the parts every engine shares.
//! The function takes a script function, which the binding table cannot carry, so each
//! engine binds it itself (`metafi-runtime-lua/src/storage_retry.rs`,
//! `metafi-runtime-js/src/storage_retry.rs`) from these pieces: the argument readers, the
//! objects handed to the update function, the writes read back from its result, the acks,
//! and Nakama's errors. The loop is `metafi_core::Objects::write_with_retries` (native Rust
//! and Lua call [`run`]; JavaScript drives the same steps between its blocking waits).

use std::future::Future;

use metafi_core::objects::{
    MAX_RETRIES_MESSAGE, MAX_WRITE_RETRIES, RETRIES_EXHAUSTED, RetryError, WriteInput,
};
use metafi_storage::{ObjectAck, ObjectId, StorageObject};

use super::storage::{ack_value, entries, object_value, read_ids, write_input};
use super::{Naming, NkArgs, NkError, NkValue};
use crate::nk::Nk;

/// What Nakama prefixes every failure of the call with.
const FAILED: &str = "failed to write storage objects with retry";

/// Argument 1: the objects to read (owner defaults to the system user), with
/// `storage_read`'s errors.
pub fn keys(args: &NkArgs) -> Result<Vec<ObjectId>, NkError> {
    read_ids(args)
}

/// Argument 2 when it is not a function: Nakama's error.
pub fn not_a_function(args: &NkArgs) -> NkError {
    args.at(2).error("expects a valid update function")
}

/// Argument 3: `max_retries`, 0 to 10.
pub fn max_retries(args: &NkArgs) -> Result<usize, NkError> {
    let arg = args.at(3);
    let number = arg.integer(if args.is_js() {
        "expects number"
    } else {
        "number expected"
    })?;
    usize::try_from(number)
        .ok()
        .filter(|n| *n <= MAX_WRITE_RETRIES)
        .ok_or_else(|| arg.error(MAX_RETRIES_MESSAGE))
}

/// The update function's argument: the objects read (those that exist), as `storage_read`
/// returns them.
pub fn update_argument(objects: &[StorageObject]) -> NkValue {
    objects.iter().map(object_value).collect::<Vec<_>>().into()
}

/// The update function failed (raised or threw) with `message`.
pub fn update_failed(naming: Naming, message: &str) -> NkError {
    match naming {
        Naming::Snake => failed(&format!("update function error: {message}")),
        Naming::Camel => NkError::failed(format!("failed to update storage objects: {message}")),
    }
}

/// The writes the update function returned (the `storage_write` shape), with Nakama's errors.
pub fn writes(naming: Naming, returned: NkValue) -> Result<Vec<WriteInput>, NkError> {
    let message = match (naming, &returned) {
        (Naming::Snake, NkValue::Map(_) | NkValue::List(_)) => "expects a valid set of data",
        (Naming::Snake, _) => {
            return Err(failed(
                "update function error: expects to return a valid table",
            ));
        }
        (Naming::Camel, NkValue::Nil) => {
            return Err(NkError::Arg {
                position: 1,
                message: "expects a valid array of data".into(),
            });
        }
        (Naming::Camel, _) => "expects an array of storage write objects",
    };
    let args = NkArgs::new(naming, vec![returned]);
    entries(&args, 1, message)?
        .iter()
        .map(write_input)
        .collect()
}

/// The call's result: one ack per object written.
pub fn acks(acks: &[ObjectAck]) -> NkValue {
    acks.iter().map(ack_value).collect::<Vec<_>>().into()
}

/// A failure of the call: `failed to write storage objects with retry: reason`.
pub fn failed(reason: &str) -> NkError {
    NkError::failed(format!("{FAILED}: {reason}"))
}

/// The loop's error as the script sees it; update errors pass through as the engine made them.
pub fn retry_error(error: RetryError<NkError>) -> NkError {
    match error {
        RetryError::Update(e) => e,
        RetryError::Storage(e) => NkError::core(FAILED, e),
        RetryError::Exhausted => failed(RETRIES_EXHAUSTED),
    }
}

/// Runs the whole call: read, `update`, write with the versions it chose, retry on conflict.
/// `update` gets the objects read and returns the writes (already converted with [`writes`]).
pub async fn run<F, Fut>(
    nk: &Nk,
    ids: Vec<ObjectId>,
    update: F,
    max_retries: usize,
) -> Result<NkValue, NkError>
where
    F: FnMut(Vec<StorageObject>) -> Fut,
    Fut: Future<Output = Result<Vec<WriteInput>, NkError>>,
{
    if ids.is_empty() {
        return Ok(NkValue::List(Vec::new()));
    }
    let written = nk
        .objects()
        .write_with_retries(ids, update, max_retries)
        .await
        .map_err(retry_error)?;
    Ok(acks(&written))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::NkMap;

    fn args(naming: Naming, values: Vec<NkValue>) -> NkArgs {
        NkArgs::new(naming, values)
    }

    #[test]
    fn max_retries_is_checked_as_nakama_does() {
        for naming in [Naming::Snake, Naming::Camel] {
            let ok = args(naming, vec![NkValue::Nil, NkValue::Nil, NkValue::Int(10)]);
            assert_eq!(max_retries(&ok), Ok(10));
            for bad in [NkValue::Int(11), NkValue::Int(-1)] {
                let a = args(naming, vec![NkValue::Nil, NkValue::Nil, bad]);
                assert_eq!(
                    max_retries(&a),
                    Err(NkError::Arg {
                        position: 3,
                        message: MAX_RETRIES_MESSAGE.into()
                    })
                );
            }
        }
    }

    #[test]
    fn a_lua_update_must_return_a_table() {
        let e = writes(Naming::Snake, NkValue::Int(1)).unwrap_err();
        assert_eq!(
            e,
            NkError::failed(
                "failed to write storage objects with retry: update function error: expects to return a valid table"
            )
        );
        let e = writes(Naming::Camel, NkValue::Nil).unwrap_err();
        assert!(
            matches!(e, NkError::Arg { message, .. } if message == "expects a valid array of data")
        );
    }

    #[test]
    fn returned_writes_read_like_storage_write() {
        let value = NkMap::new().with("count", 1i64);
        let write = NkMap::new()
            .with("collection", "c")
            .with("key", "k")
            .with("version", "*")
            .with("value", value);
        let writes = writes(Naming::Snake, NkValue::List(vec![write.into()])).expect("writes");
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].version, "*");
        assert_eq!(writes[0].value, r#"{"count":1}"#);
        assert!(writes[0].user_id.is_nil());
    }
}

//! Ids and time: `uuid_v4`, `time`.

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("uuid_v4"),
        js: Some("uuidv4"),
        call: NkCall::Sync(uuid_v4),
    },
    NkFunction {
        lua: Some("time"),
        js: None,
        call: NkCall::Sync(time),
    },
];

fn uuid_v4(nk: &Nk, _: NkArgs) -> Result<NkValue, NkError> {
    Ok(nk.uuid_v4().into())
}

/// Milliseconds since the epoch. Nakama's Lua `time` also converts a date table; that form
/// is refused with a pointer to `os.time`.
fn time(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    if !args.is_empty() {
        return Err(args
            .at(1)
            .error("a date table is not supported; use os.time(table) * 1000"));
    }
    Ok(nk.time_ms().into())
}

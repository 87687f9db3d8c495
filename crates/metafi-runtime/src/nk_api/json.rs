//! JSON for Lua: `json_encode`, `json_decode` (JavaScript has `JSON` itself).
//!
//! Objects encode with sorted keys, as Go's `encoding/json` in Nakama; Lua tables arrive as
//! lists or maps by the binder's rules (a table with positive integer keys is a list).

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("json_encode"),
        js: None,
        call: NkCall::Sync(json_encode),
    },
    NkFunction {
        lua: Some("json_decode"),
        js: None,
        call: NkCall::Sync(json_decode),
    },
];

fn json_encode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let json = args
        .at(1)
        .value
        .to_json(args.naming())
        .map_err(|e| NkError::failed(format!("error encoding to JSON: {e}")))?;
    serde_json::to_string(&json)
        .map(NkValue::Str)
        .map_err(|e| NkError::failed(format!("error encoding to JSON: {e}")))
}

fn json_decode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let text = args.at(1).non_empty("expects JSON string")?;
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| NkError::failed(format!("not a valid JSON string: {e}")))?;
    Ok(NkValue::from_json(&json))
}

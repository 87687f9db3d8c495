//! JSON for Lua: `json_encode`, `json_decode` (JavaScript has `JSON` itself).
//!
//! Objects encode with sorted keys, as Go's `encoding/json` in Nakama; Lua tables arrive as
//! lists or maps by the binder's rules (a table with positive integer keys is a list).
//!
//! The Lua engine serves the usual calls of these two rows with C functions that go straight
//! between JSON text and Lua values (`metafi-runtime-lua`, `json_text.rs`); they take their
//! failures from [`decode_failure`] and [`encode_failure`], so the words live here only.

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("json_encode"),
        js: None,
        call: NkCall::Sync(|_: &Nk, args| encode(args)),
    },
    NkFunction {
        lua: Some("json_decode"),
        js: None,
        call: NkCall::Sync(|_: &Nk, args| decode(args)),
    },
];

fn encode(args: NkArgs) -> Result<NkValue, NkError> {
    if args.is_empty() {
        // gopher-lua's `CheckAny`: an explicit nil encodes as `null`, no argument is an error.
        return Err(args.at(1).error("value expected"));
    }
    let json = args
        .at(1)
        .value
        .to_json(args.naming())
        .map_err(|e| encode_failure(&e))?;
    serde_json::to_string(&json)
        .map(NkValue::Str)
        .map_err(|e| encode_failure(&e.to_string()))
}

/// `json_encode`'s failure for a value JSON cannot hold (`reason`: `cannot encode NaN as
/// JSON`).
pub fn encode_failure(reason: &str) -> NkError {
    NkError::failed(format!("error encoding to JSON: {reason}"))
}

fn decode(args: NkArgs) -> Result<NkValue, NkError> {
    let text = args.at(1).non_empty("expects JSON string")?;
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| decode_failure(&e, text))?;
    Ok(NkValue::from_json(&json))
}

/// `json_decode`'s failure for `text`, which `serde_json` refused with `error`.
pub fn decode_failure(error: &serde_json::Error, text: &str) -> NkError {
    NkError::failed(format!(
        "not a valid JSON string: {}",
        go_reason(error, text)
    ))
}

/// The reason in the words of Go's `encoding/json` (what Nakama's scripts see) for the two
/// cases scripts meet most: truncated input and text after the value. Other syntax errors
/// keep serde_json's wording, which names the line and column.
fn go_reason(error: &serde_json::Error, text: &str) -> String {
    if error.is_eof() {
        return "unexpected end of JSON input".to_owned();
    }
    let message = error.to_string();
    if message.starts_with("trailing characters")
        && let Some(found) = text
            .lines()
            .nth(error.line().saturating_sub(1))
            .and_then(|line| line.chars().nth(error.column().saturating_sub(1)))
    {
        return format!("invalid character '{found}' after top-level value");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::{Naming, NkMap};

    fn lua(values: Vec<NkValue>) -> NkArgs {
        NkArgs::new(Naming::Snake, values)
    }

    #[test]
    fn encoding_sorts_keys_and_needs_an_argument() {
        let mut map = NkMap::new();
        map.insert_data("b", 1i64);
        map.insert_data("a", NkValue::List(vec![NkValue::Nil, 2.5f64.into()]));
        assert_eq!(
            encode(lua(vec![map.into()])).unwrap(),
            NkValue::from(r#"{"a":[null,2.5],"b":1}"#)
        );
        assert_eq!(
            encode(lua(vec![NkValue::Nil])).unwrap(),
            NkValue::from("null")
        );
        assert_eq!(
            encode(lua(Vec::new()))
                .unwrap_err()
                .lua_message("json_encode"),
            "bad argument #1 to json_encode (value expected)"
        );
    }

    #[test]
    fn decoding_refuses_empty_and_invalid_text() {
        assert_eq!(
            decode(lua(vec!["".into()]))
                .unwrap_err()
                .lua_message("json_decode"),
            "bad argument #1 to json_decode (expects JSON string)"
        );
        let NkError::Failed { message } = decode(lua(vec!["{nope".into()])).unwrap_err() else {
            panic!("a failure")
        };
        assert!(
            message.starts_with("not a valid JSON string: "),
            "{message}"
        );
        let reason = |text: &str| match decode(lua(vec![text.into()])).unwrap_err() {
            NkError::Failed { message } => message,
            other => panic!("a failure, not {other:?}"),
        };
        // Go's words, as Nakama's scripts see them.
        assert_eq!(
            reason("{"),
            "not a valid JSON string: unexpected end of JSON input"
        );
        assert_eq!(
            reason("{} x"),
            "not a valid JSON string: invalid character 'x' after top-level value"
        );
        let NkValue::Map(map) = decode(lua(vec![r#"{"user_id":1}"#.into()])).unwrap() else {
            panic!("a map")
        };
        assert_eq!(
            map.get("user_id"),
            Some(&NkValue::Int(1)),
            "keys are data, kept"
        );
    }
}

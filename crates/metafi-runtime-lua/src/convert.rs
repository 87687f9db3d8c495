//! JSON → Lua values, with the rules of Nakama's Lua runtime (`RuntimeLuaConvertValue`), for
//! stored JSON the engine shows scripts itself (accounts, match state). Lua → JSON goes through
//! the `nk` value conversion (`nk_value.rs`).

use mlua::{Lua, Table, Value};
use serde_json::{Map, Value as Json};

use crate::raw_push;

/// Deepest table nesting converted; deeper (or cyclic) tables are an error, not a stack overflow.
pub(crate) const MAX_DEPTH: usize = 128;

/// JSON → Lua, with Nakama's rules: numbers are Lua 5.1 doubles (integers beyond 2^53 lose
/// precision, as in Nakama's float64), `null` is nil (a `null` field is absent), arrays count
/// from 1. Tables are built in one protected call ([`raw_push`]); a value nested deeper than
/// [`MAX_DEPTH`] is an error.
pub(crate) fn from_json(lua: &Lua, json: &Json) -> mlua::Result<Value> {
    Ok(match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) if i.unsigned_abs() < (1 << 53) => Value::Integer(i),
            _ => Value::Number(raw_push::number(n)),
        },
        Json::String(s) => Value::String(lua.create_string(s)?),
        Json::Array(_) | Json::Object(_) => raw_push::container(lua, json)?,
    })
}

/// A JSON object as a Lua table.
pub(crate) fn object_to_table(lua: &Lua, map: &Map<String, Json>) -> mlua::Result<Table> {
    raw_push::object(lua, map)
}

/// A stored JSON text (object values, metadata) as a Lua table; `{}` when it is empty.
pub(crate) fn json_text_to_table(lua: &Lua, text: &str) -> mlua::Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Table(lua.create_table()?));
    }
    let json: Json = serde_json::from_str(text)
        .map_err(|e| mlua::Error::runtime(format!("failed to convert value to json: {e}")))?;
    from_json(lua, &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_decodes_to_tables() {
        let lua = Lua::new();
        let json: Json = serde_json::from_str(r#"{"a":[1,2,{"b":null}],"n":1.25}"#).unwrap();
        let value = from_json(&lua, &json).unwrap();
        lua.globals().set("v", value).unwrap();
        let ok: bool = lua
            .load("return v.a[1] == 1 and v.a[3].b == nil and v.n == 1.25 and #v.a == 3")
            .eval()
            .unwrap();
        assert!(ok);
    }
}

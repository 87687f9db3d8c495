//! JSON → Lua values, with the rules of Nakama's Lua runtime (`RuntimeLuaConvertValue`), for
//! stored JSON the engine shows scripts itself (accounts, match state). Lua → JSON goes through
//! the `nk` value conversion (`nk_value.rs`).

use mlua::{Lua, Table, Value};
use serde_json::{Map, Value as Json};

/// Deepest table nesting converted; deeper (or cyclic) tables are an error, not a stack overflow.
pub(crate) const MAX_DEPTH: usize = 128;

/// JSON → Lua.
pub(crate) fn from_json(lua: &Lua, json: &Json) -> mlua::Result<Value> {
    Ok(match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            // Integers beyond 2^53 lose precision in Lua 5.1 numbers, as in Nakama (float64).
            Some(i) if i.unsigned_abs() < (1 << 53) => Value::Integer(i),
            _ => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(lua.create_string(s)?),
        Json::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                table.raw_set(i + 1, from_json(lua, item)?)?;
            }
            Value::Table(table)
        }
        Json::Object(map) => Value::Table(object_to_table(lua, map)?),
    })
}

/// A JSON object as a Lua table.
pub(crate) fn object_to_table(lua: &Lua, map: &Map<String, Json>) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, map.len())?;
    for (key, item) in map {
        table.raw_set(key.as_str(), from_json(lua, item)?)?;
    }
    Ok(table)
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

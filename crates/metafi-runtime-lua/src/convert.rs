//! Lua values ↔ JSON, with the rules of Nakama's Lua runtime (`RuntimeLuaConvertLuaValue`,
//! `RuntimeLuaConvertValue`) so that `nk.json_encode` output and `nk.json_decode` tables match:
//!
//! - a table with a positive integer key is an array of `1..maxn` (other keys ignored, holes
//!   `null`); any other table, including `{}`, is an object whose keys are the keys' text;
//! - integral numbers encode as integers; object keys come out sorted (Go's `encoding/json`);
//! - `nil` is `null`; functions encode as their text (`"function: 0x…"`), other userdata `null`.

use mlua::{Lua, Table, Value};
use serde_json::{Map, Number, Value as Json};

/// Deepest table nesting converted; deeper (or cyclic) tables are an error, not a stack overflow.
pub(crate) const MAX_DEPTH: usize = 128;

/// Lua → JSON.
pub(crate) fn to_json(value: &Value) -> mlua::Result<Json> {
    to_json_at(value, 0)
}

fn to_json_at(value: &Value, depth: usize) -> mlua::Result<Json> {
    Ok(match value {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => Json::Number((*i).into()),
        Value::Number(n) => number(*n)?,
        Value::String(s) => Json::String(s.to_string_lossy()),
        Value::Table(t) => table_to_json(t, depth)?,
        Value::Function(f) => Json::String(format!("function: {:p}", f.to_pointer())),
        _ => Json::Null,
    })
}

fn number(n: f64) -> mlua::Result<Json> {
    if n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64 {
        return Ok(Json::Number((n as i64).into()));
    }
    Number::from_f64(n)
        .map(Json::Number)
        .ok_or_else(|| mlua::Error::runtime(format!("json: unsupported value: {n}")))
}

fn table_to_json(table: &Table, depth: usize) -> mlua::Result<Json> {
    if depth >= MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "table nesting deeper than {MAX_DEPTH} levels (a table that contains itself?)"
        )));
    }
    let mut maxn: i64 = 0;
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        if let Some(i) = integer_key(&key)
            && i > maxn
        {
            maxn = i;
        }
    }
    if maxn > 0 {
        if maxn > 1 << 24 {
            return Err(mlua::Error::runtime(
                "array too sparse to encode: its largest index is over 16777216",
            ));
        }
        let mut items = Vec::with_capacity(maxn as usize);
        for i in 1..=maxn {
            let item: Value = table.raw_get(i)?;
            items.push(to_json_at(&item, depth + 1)?);
        }
        return Ok(Json::Array(items));
    }
    let mut object = Map::new();
    for pair in table.pairs::<Value, Value>() {
        let (key, item) = pair?;
        let key = match &key {
            Value::String(s) => s.to_string_lossy(),
            Value::Integer(i) => i.to_string(),
            Value::Number(n) => n.to_string(),
            Value::Boolean(b) => b.to_string(),
            other => other.type_name().to_owned(),
        };
        object.insert(key, to_json_at(&item, depth + 1)?);
    }
    Ok(Json::Object(object))
}

fn integer_key(key: &Value) -> Option<i64> {
    match key {
        Value::Integer(i) if *i > 0 => Some(*i),
        Value::Number(n) if *n > 0.0 && n.fract() == 0.0 && *n < i64::MAX as f64 => Some(*n as i64),
        _ => None,
    }
}

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

    fn roundtrip(lua: &Lua, code: &str) -> String {
        let value: Value = lua.load(code).eval().unwrap();
        serde_json::to_string(&to_json(&value).unwrap()).unwrap()
    }

    #[test]
    fn tables_encode_as_nakama_does() {
        let lua = Lua::new();
        assert_eq!(roundtrip(&lua, "return {}"), "{}");
        assert_eq!(roundtrip(&lua, "return {1, 2, 'x'}"), r#"[1,2,"x"]"#);
        assert_eq!(
            roundtrip(&lua, "return {b = 1, a = {c = true}}"),
            r#"{"a":{"c":true},"b":1}"#
        );
        assert_eq!(
            roundtrip(&lua, "return {[1] = 'a', [3] = 'c'}"),
            r#"["a",null,"c"]"#
        );
        assert_eq!(roundtrip(&lua, "return 1.5"), "1.5");
        assert_eq!(roundtrip(&lua, "return 3.0"), "3");
    }

    #[test]
    fn cycles_are_an_error() {
        let lua = Lua::new();
        let value: Value = lua.load("local t = {} t.self = t return t").eval().unwrap();
        assert!(to_json(&value).is_err());
    }

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

//! Lua values ⇄ [`NkValue`], for the `nk` binding table (`nk_binding.rs`), with the rules of
//! Nakama's Lua runtime (`RuntimeLuaConvertLuaValue`):
//!
//! - a table with a positive integer key is a list of `1..maxn` (holes are nil, other keys are
//!   ignored); any other table, `{}` included, is a map whose keys are the keys' text
//!   (`[2.5]` → `"2.5"`); map keys are user data and are never renamed;
//! - integral numbers are integers; strings are text, or binary data when not UTF-8;
//! - functions inside tables become their text (`"function: 0x…"`), other userdata nil.
//!
//! Back to Lua: lists are sequences, maps tables with snake_case field names, binary data a
//! Lua string, and several results (`NkValue::Multi`) several return values.

use metafi_runtime::nk_api::{NkKey, NkValue, ValueBudget};
use mlua::{Lua, MultiValue, Value};

/// The arguments of a call. A function passed as an argument is nil (no `nk` function takes
/// one; those that do are bound by the engine), so it is refused where a value is expected
/// instead of passing as its text.
pub(crate) fn args(values: &MultiValue) -> mlua::Result<Vec<NkValue>> {
    // One budget for the whole call: many arguments cannot add up past it either.
    let mut budget = ValueBudget::default();
    values
        .iter()
        .map(|v| match v {
            Value::Function(_) => Ok(NkValue::Nil),
            v => to_nk(v, 0, &mut budget),
        })
        .collect()
}

/// Lua → [`NkValue`]; every list item and map entry is charged to `budget`.
pub(crate) fn to_nk(
    value: &Value,
    depth: usize,
    budget: &mut ValueBudget,
) -> mlua::Result<NkValue> {
    Ok(match value {
        Value::Nil => NkValue::Nil,
        Value::Boolean(b) => NkValue::Bool(*b),
        Value::Integer(i) => NkValue::Int(*i),
        Value::Number(n) => number(*n),
        Value::String(s) => {
            let bytes = s.as_bytes();
            match std::str::from_utf8(&bytes) {
                Ok(text) => NkValue::Str(text.to_owned()),
                Err(_) => NkValue::Bytes(bytes.to_vec()),
            }
        }
        Value::Table(t) => crate::raw_read::table(&t.weak_lua().upgrade(), t, depth, budget)?,
        Value::Function(f) => NkValue::Str(format!("function: {:p}", f.to_pointer())),
        _ => NkValue::Nil,
    })
}

fn number(n: f64) -> NkValue {
    if n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64 {
        NkValue::Int(n as i64)
    } else {
        NkValue::Float(n)
    }
}

/// A function's result as Lua return values.
pub(crate) fn results(lua: &Lua, value: NkValue) -> mlua::Result<MultiValue> {
    match value {
        NkValue::Multi(values) => values.into_iter().map(|v| to_lua(lua, v)).collect(),
        value => Ok(MultiValue::from_iter([to_lua(lua, value)?])),
    }
}

/// [`NkValue`] → Lua.
pub(crate) fn to_lua(lua: &Lua, value: NkValue) -> mlua::Result<Value> {
    Ok(match value {
        NkValue::Nil => Value::Nil,
        NkValue::Bool(b) => Value::Boolean(b),
        // Lua numbers are doubles: integers past 2^53 lose precision, as in Nakama (float64).
        NkValue::Int(i) if i.unsigned_abs() < (1 << 53) => Value::Integer(i),
        NkValue::Int(i) => Value::Number(i as f64),
        NkValue::Float(f) => Value::Number(f),
        NkValue::Str(s) => Value::String(lua.create_string(s)?),
        NkValue::Bytes(b) => Value::String(lua.create_string(b)?),
        NkValue::List(items) | NkValue::Multi(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                table.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(table)
        }
        NkValue::Map(map) => {
            let table = lua.create_table_with_capacity(0, map.len())?;
            for (key, item) in map.0 {
                let item = to_lua(lua, item)?;
                match key {
                    NkKey::Field(field) => table.raw_set(field, item)?,
                    NkKey::Data(key) => table.raw_set(key, item)?,
                }
            }
            Value::Table(table)
        }
    })
}

#[cfg(test)]
mod tests {
    use metafi_runtime::nk_api::NkMap;
    use mlua::Table;

    use super::*;
    use crate::convert::MAX_DEPTH;

    fn nk(lua: &Lua, code: &str) -> NkValue {
        let value: Value = lua.load(code).eval().unwrap();
        to_nk(&value, 0, &mut ValueBudget::default()).unwrap()
    }

    /// `to_nk` with tables walked through mlua's safe API, as before `raw_read`.
    fn safe_to_nk(value: &Value, depth: usize, budget: &mut ValueBudget) -> mlua::Result<NkValue> {
        match value {
            Value::Table(t) => safe_table(t, depth, budget),
            other => to_nk(other, depth, budget),
        }
    }

    /// The walk through mlua's safe API that `raw_read` replaced: the tests' reference.
    fn safe_table(table: &Table, depth: usize, budget: &mut ValueBudget) -> mlua::Result<NkValue> {
        if depth >= MAX_DEPTH {
            return Err(mlua::Error::runtime(format!(
                "table nesting deeper than {MAX_DEPTH} levels (a table that contains itself?)"
            )));
        }
        let mut maxn: i64 = 0;
        for pair in table.pairs::<Value, Value>() {
            let (key, _) = pair?;
            if let Some(i) = positive_integer(&key)
                && i > maxn
            {
                maxn = i;
            }
        }
        if maxn > 0 {
            if maxn > 1 << 24 {
                return Err(mlua::Error::runtime(
                    "array too sparse to convert: its largest index is over 16777216",
                ));
            }
            budget.take(maxn as usize).map_err(mlua::Error::runtime)?;
            let mut items = Vec::with_capacity(maxn as usize);
            for i in 1..=maxn {
                let item: Value = table.raw_get(i)?;
                items.push(safe_to_nk(&item, depth + 1, budget)?);
            }
            return Ok(NkValue::List(items));
        }
        let mut map = NkMap::new();
        for pair in table.pairs::<Value, Value>() {
            let (key, item) = pair?;
            let key = match &key {
                Value::String(s) => s.to_string_lossy(),
                Value::Integer(i) => i.to_string(),
                Value::Number(n) => n.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => other.type_name().to_owned(),
            };
            budget.take(1).map_err(mlua::Error::runtime)?;
            map.insert_data(key, safe_to_nk(&item, depth + 1, budget)?);
        }
        Ok(NkValue::Map(map))
    }

    fn positive_integer(key: &Value) -> Option<i64> {
        match key {
            Value::Integer(i) if *i > 0 => Some(*i),
            Value::Number(n) if *n > 0.0 && n.fract() == 0.0 && *n < i64::MAX as f64 => {
                Some(*n as i64)
            }
            _ => None,
        }
    }

    /// The raw walk reads every table as the safe API's walk did.
    #[test]
    fn the_raw_walk_matches_the_safe_walk() {
        let lua = Lua::new();
        for code in [
            "return {1, 'x', {a = {b = {true, false}}}}",
            "return {[1] = 'a', [3] = 'c', x = 'ignored'}",
            "return {a = 1, [-2] = true, [2.5] = 'f', [-0.0] = 'z', [true] = 1, [{}] = 2}",
            "return {n = 1e300, m = -3, f = -0.5, big = 2^53 + 2, huge = 2^63, nan = 0/0}",
            "return {s = '\\255\\0', e = '', u = 'héllo', fn = print}",
            "return {[print] = 1, [coroutine.create(print)] = 2}",
            "return {{}, {{}}, {k = {}}}",
            "return {}",
        ] {
            let value: Value = lua.load(code).eval().unwrap();
            let raw = to_nk(&value, 0, &mut ValueBudget::default()).unwrap();
            let safe = safe_to_nk(&value, 0, &mut ValueBudget::default()).unwrap();
            assert_eq!(format!("{raw:?}"), format!("{safe:?}"), "{code}");
        }
        for code in [
            "local t = {} t.t = t return t",
            "local t = {} for i = 1, 40 do t = {a = t, b = t} end return t",
            "return {[5000000] = 1}",
            "return {[2^30] = 1}",
        ] {
            let value: Value = lua.load(code).eval().unwrap();
            let raw = to_nk(&value, 0, &mut ValueBudget::default()).unwrap_err();
            let safe = safe_to_nk(&value, 0, &mut ValueBudget::default()).unwrap_err();
            assert_eq!(raw.to_string(), safe.to_string(), "{code}");
        }
        // The stack is left as found, errors included: the VM keeps working.
        let after: i64 = lua.load("return 1 + 1").eval().unwrap();
        assert_eq!(after, 2);
    }

    #[test]
    fn tables_become_lists_or_maps_as_in_nakama() {
        let lua = Lua::new();
        assert_eq!(
            nk(&lua, "return {1, 'x'}"),
            NkValue::List(vec![1i64.into(), "x".into()])
        );
        assert_eq!(
            nk(&lua, "return {[1] = 'a', [3] = 'c'}"),
            NkValue::List(vec!["a".into(), NkValue::Nil, "c".into()])
        );
        let NkValue::Map(map) = nk(&lua, "return {a = 1, [-2] = true}") else {
            panic!("a map")
        };
        assert_eq!(map.get("a"), Some(&NkValue::Int(1)));
        assert_eq!(map.get("-2"), Some(&NkValue::Bool(true)));
        assert_eq!(nk(&lua, "return {}"), NkValue::Map(NkMap::new()));
        assert_eq!(nk(&lua, "return 3.0"), NkValue::Int(3));
        assert_eq!(nk(&lua, "return '\\255\\0'"), NkValue::Bytes(vec![255, 0]));
        let cyclic: Value = lua.load("local t = {} t.t = t return t").eval().unwrap();
        assert!(to_nk(&cyclic, 0, &mut ValueBudget::default()).is_err());
    }

    /// Conversion runs outside the VM's memory cap: a table shared many times (2^40 paths
    /// from 80 tables) or a sparse array is refused, not expanded.
    #[test]
    fn values_that_expand_past_the_budget_are_refused() {
        let lua = Lua::new();
        for code in [
            "local t = {} for i = 1, 40 do t = {a = t, b = t} end return t",
            "return {[5000000] = 1}",
        ] {
            let value: Value = lua.load(code).eval().unwrap();
            let error = to_nk(&value, 0, &mut ValueBudget::default()).unwrap_err();
            assert!(
                error.to_string().contains("value too large"),
                "{code}: {error}"
            );
        }
    }

    #[test]
    fn results_come_back_with_snake_case_fields_and_several_values() {
        let lua = Lua::new();
        let value = NkValue::Multi(vec![
            NkMap::new().with("user_id", "u").into(),
            NkValue::Bytes(vec![0, 255]),
        ]);
        let out = results(&lua, value).unwrap();
        assert_eq!(out.len(), 2);
        lua.globals().set("a", out[0].clone()).unwrap();
        lua.globals().set("b", out[1].clone()).unwrap();
        let ok: bool = lua
            .load("return a.user_id == 'u' and b == '\\0\\255'")
            .eval()
            .unwrap();
        assert!(ok);
    }
}

//! JSON → Lua tables built in one protected call through the Lua C API.
//!
//! Building a table through mlua's safe API costs a protected call per field (`raw_set`) and a
//! registry reference per table and string held on the Rust side; a hook's request and answer
//! (a dozen fields) paid that three times per hook pair, a third of the Lua side of a hook
//! call (`docs/RUNTIME.md`, "The hook call path and its cost"). Here the whole value is pushed
//! onto the stack inside one `Lua::exec_raw` and only the finished table comes back as a
//! `Value`. The rules (numbers, `null`, arrays from 1) are stated at `convert::from_json`; the
//! tests compare the tables with those the safe API builds. How deep a value nests is checked
//! while pushing it, not by a walk of its own before.

// Every unsafe block pushes onto the stack of the state `exec_raw` hands over, after
// reserving room for it; errors (memory) are Lua errors raised inside that protected call.
// The pushing functions own nothing while Lua may raise: they borrow the value they push, and
// a value walked by serde (JSON text, a hook's struct) is recorded on a `Tape` first and built
// from there (`crate::tape`, "Lua errors and Rust frames" in docs/RUNTIME.md).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_int;

use mlua::{Lua, Table, Value, ffi};
use serde_json::{Map, Value as Json};

use metafi_runtime::HookValue;
use metafi_runtime::hooks::MAP_FIELDS;
use metafi_runtime::nk_api::{NkKey, NkValue};

use crate::convert::MAX_DEPTH;
use crate::field_keys::FieldKeys;
use crate::tape::{self, Tape};

/// An array or object as a table ([`crate::convert::from_json`]'s rules).
pub(crate) fn container(lua: &Lua, json: &Json) -> mlua::Result<Value> {
    let mut within = true;
    // SAFETY: `push` leaves one value on the stack of `state` (the closure's state, valid for
    // its duration) when `json` is not too deep, and reserves stack room before each push.
    let value = unsafe { lua.exec_raw::<Value>((), |state| within = push(state, json))? };
    if !within {
        return Err(deep());
    }
    Ok(value)
}

/// An object as a table.
pub(crate) fn object(lua: &Lua, map: &Map<String, Json>) -> mlua::Result<Table> {
    let mut within = true;
    // SAFETY: as in `container`.
    let table =
        unsafe { lua.exec_raw::<Value>((), |state| within = push_object(state, map, 0, None))? };
    match table {
        Value::Table(table) if within => Ok(table),
        _ => Err(deep()),
    }
}

/// The error for a value nested deeper than [`MAX_DEPTH`] (see [`push`]).
pub(crate) fn deep() -> mlua::Error {
    mlua::Error::runtime(format!("value nested deeper than {MAX_DEPTH} levels"))
}

/// Pushes `json` onto the stack of `state`, if it nests at most [`MAX_DEPTH`] deep (a scalar
/// is 0 deep, `[]` is 1); otherwise stops half-way, leaving what it pushed, and returns
/// false: the caller discards the stack and reports [`deep`]. Checked while pushing, so the
/// value is walked once.
///
/// # Safety
/// `state` is a live Lua state inside a protected call.
#[must_use]
pub(crate) unsafe fn push(state: *mut ffi::lua_State, json: &Json) -> bool {
    // SAFETY: the caller's; room for the value itself is reserved here, a container reserves
    // its own.
    unsafe {
        ffi::luaL_checkstack(state, 1, c"JSON value too deep".as_ptr());
        push_at(state, json, 0, None)
    }
}

/// A hook's request or answer in proto names, as [`push`]; its field names come from `keys`
/// (strings kept per VM), except the keys inside map fields (`hooks::MAP_FIELDS`: user data),
/// which are pushed as they are.
///
/// # Safety
/// As [`push`]; `keys` belongs to the VM of `state`.
#[must_use]
pub(crate) unsafe fn push_message(
    state: *mut ffi::lua_State,
    json: &Json,
    keys: &FieldKeys,
) -> bool {
    // SAFETY: as in `push`.
    unsafe {
        ffi::luaL_checkstack(state, 1, c"JSON value too deep".as_ptr());
        push_at(state, json, 0, Some(keys))
    }
}

/// A hook's request or answer: JSON as [`push_message`], the edge's own struct recorded
/// through its `Serialize` ([`crate::table_serializer`]) onto `tape` and built from there, to
/// the same tables. False when it nests too deep or cannot be encoded (never for the edges'
/// messages): the caller reports [`deep`].
///
/// # Safety
/// As [`push_message`]; `tape` is not borrowed.
#[must_use]
pub(crate) unsafe fn push_hook_value(
    state: *mut ffi::lua_State,
    value: &HookValue,
    keys: &FieldKeys,
    tape: &RefCell<Tape>,
) -> bool {
    match value {
        // SAFETY: the caller's.
        HookValue::Json(json) => unsafe { push_message(state, json, keys) },
        HookValue::Message(message) => {
            let message: &dyn erased_serde::Serialize = &**message;
            tape.borrow_mut().clear();
            if crate::table_serializer::record(message, tape).is_err() {
                return false;
            }
            // SAFETY: the caller's. The serializer's frames are gone, and the tape is reached
            // through a plain reference (no borrow guard, whose drop an error would skip):
            // nothing else touches it while it is built.
            unsafe { (*tape.as_ptr()).build(state, Some(keys)) };
            true
        }
    }
}

/// `json` at nesting `level` (the number of containers around it), with room for it reserved
/// by the caller; object keys from `keys` when given.
///
/// # Safety
/// As [`push`].
unsafe fn push_at(
    state: *mut ffi::lua_State,
    json: &Json,
    level: usize,
    keys: Option<&FieldKeys>,
) -> bool {
    unsafe {
        match json {
            Json::Null => ffi::lua_pushnil(state),
            Json::Bool(b) => ffi::lua_pushboolean(state, c_int::from(*b)),
            Json::Number(n) => ffi::lua_pushnumber(state, number(n)),
            Json::String(s) => push_str(state, s),
            Json::Array(items) => {
                if level >= MAX_DEPTH {
                    return false;
                }
                // The table and an item (raises "stack overflow").
                ffi::luaL_checkstack(state, 2, c"JSON value too deep".as_ptr());
                ffi::lua_createtable(state, len(items.len()), 0);
                for (i, item) in items.iter().enumerate() {
                    if !push_at(state, item, level + 1, keys) {
                        return false;
                    }
                    ffi::lua_rawseti(state, -2, index(i + 1));
                }
            }
            Json::Object(map) => return push_object(state, map, level, keys),
        }
        true
    }
}

/// An object at nesting `level`.
///
/// # Safety
/// As [`push`].
unsafe fn push_object(
    state: *mut ffi::lua_State,
    map: &Map<String, Json>,
    level: usize,
    keys: Option<&FieldKeys>,
) -> bool {
    unsafe {
        if level >= MAX_DEPTH {
            return false;
        }
        // The table, a key and a value (and `FieldKeys::push`'s copy of a new key).
        ffi::luaL_checkstack(state, 3, c"JSON value too deep".as_ptr());
        ffi::lua_createtable(state, 0, len(map.len()));
        for (key, item) in map {
            // A `null` field is absent, as a Lua table cannot hold nil.
            if item.is_null() {
                continue;
            }
            let inner = match keys {
                Some(keys) => {
                    keys.push(state, key);
                    // A map field's keys are user data, not field names.
                    (!MAP_FIELDS.contains(&key.as_str())).then_some(keys)
                }
                None => {
                    push_str(state, key);
                    None
                }
            };
            if !push_at(state, item, level + 1, inner) {
                return false;
            }
            ffi::lua_rawset(state, -3);
        }
        true
    }
}

/// # Safety
/// As [`push`].
pub(crate) unsafe fn push_str(state: *mut ffi::lua_State, s: &str) {
    unsafe {
        ffi::lua_pushlstring(state, s.as_ptr().cast(), s.len());
    }
}

/// Headers or query parameters as `ctx` shows them: a table of name → list of values.
///
/// # Safety
/// As [`push`].
pub(crate) unsafe fn push_string_lists<K, L, V>(
    state: *mut ffi::lua_State,
    names: usize,
    entries: impl IntoIterator<Item = (K, L)>,
) where
    K: AsRef<str>,
    L: AsRef<[V]>,
    V: AsRef<str>,
{
    unsafe {
        ffi::luaL_checkstack(state, 3, c"too many values".as_ptr());
        ffi::lua_createtable(state, 0, len(names));
        for (key, values) in entries {
            push_str(state, key.as_ref());
            let values = values.as_ref();
            ffi::lua_createtable(state, len(values.len()), 0);
            for (i, value) in values.iter().enumerate() {
                push_str(state, value.as_ref());
                ffi::lua_rawseti(state, -2, index(i + 1));
            }
            ffi::lua_rawset(state, -3);
        }
    }
}

/// A JSON number as Lua 5.1's double: integers beyond 2^53 lose precision, as in Nakama.
pub(crate) fn number(n: &serde_json::Number) -> f64 {
    match n.as_i64() {
        Some(i) => i as f64,
        None => n.as_f64().unwrap_or(f64::NAN),
    }
}

/// A size hint for `lua_createtable` (saturating: a hint).
pub(crate) fn len(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// An array index (a table of more than 2^31 items does not fit in a Lua 5.1 VM's memory).
fn index(i: usize) -> ffi::lua_Integer {
    ffi::lua_Integer::try_from(i).unwrap_or(ffi::lua_Integer::MAX)
}

/// A row's result as a C function's return values (several for `NkValue::Multi`), with the
/// rules of [`crate::nk_value::to_lua`]; returns how many it pushed.
///
/// # Safety
/// `state` is the state of a running C function, which may raise (memory, stack) errors.
pub(crate) unsafe fn push_results(state: *mut ffi::lua_State, value: &NkValue) -> c_int {
    // SAFETY: the caller's; room is reserved before each push.
    unsafe {
        match value {
            NkValue::Multi(values) => {
                ffi::luaL_checkstack(state, len(values.len()), c"too many results".as_ptr());
                for value in values {
                    push_nk(state, value);
                }
                len(values.len())
            }
            value => {
                ffi::luaL_checkstack(state, 1, c"too many results".as_ptr());
                push_nk(state, value);
                1
            }
        }
    }
}

/// [`NkValue`] → Lua, as [`crate::nk_value::to_lua`] builds it through mlua: lists as tables
/// sized for their items (holes stay nil), maps as tables sized for their entries.
///
/// # Safety
/// As [`push_results`], with room for one value reserved by the caller.
unsafe fn push_nk(state: *mut ffi::lua_State, value: &NkValue) {
    unsafe {
        match value {
            NkValue::Nil => ffi::lua_pushnil(state),
            NkValue::Bool(b) => ffi::lua_pushboolean(state, c_int::from(*b)),
            // Lua numbers are doubles: integers past 2^53 lose precision, as in Nakama.
            NkValue::Int(i) => ffi::lua_pushnumber(state, *i as f64),
            NkValue::Float(f) => ffi::lua_pushnumber(state, *f),
            NkValue::Str(s) => push_str(state, s),
            NkValue::Bytes(b) => {
                ffi::lua_pushlstring(state, b.as_ptr().cast(), b.len());
            }
            NkValue::List(items) | NkValue::Multi(items) => {
                ffi::luaL_checkstack(state, 2, c"value nested too deep".as_ptr());
                ffi::lua_createtable(state, len(items.len()), 0);
                for (i, item) in items.iter().enumerate() {
                    push_nk(state, item);
                    ffi::lua_rawseti(state, -2, index(i + 1));
                }
            }
            NkValue::Map(map) => {
                ffi::luaL_checkstack(state, 3, c"value nested too deep".as_ptr());
                ffi::lua_createtable(state, 0, len(map.len()));
                for (key, item) in map.iter() {
                    match key {
                        NkKey::Field(field) => push_str(state, field),
                        NkKey::Data(key) => push_str(state, key),
                    }
                    push_nk(state, item);
                    ffi::lua_rawset(state, -3);
                }
            }
        }
    }
}

/// Why [`push_json_text`] pushed nothing.
pub(crate) enum DecodeError {
    /// Not JSON: `serde_json::from_str`'s error, word for word.
    Json(serde_json::Error),
    /// Building the tables failed (out of memory, no stack room): see [`tape::Failed`].
    Lua(tape::Failed),
}

/// Pushes the JSON value of `text` (a whole text: anything after the value but whitespace is
/// an error) with [`crate::convert::from_json`]'s rules. `serde_json`'s parser records each
/// value as it reads it ([`Tape`]: no `serde_json::Value` between, no Lua call under the
/// parser's frames), and each [`tape::CHUNK`] operations are built in a protected call
/// through `runner` (see [`Tape::build_protected`]), so a memory error comes back as
/// [`DecodeError::Lua`] with its error value on top of the stack. The parse errors are
/// `serde_json::from_str`'s, word for word (the same parser, the same recursion limit of
/// 128). On an error the caller drops what was pushed.
///
/// Arrays come out as `to_lua` built them from a list: when one holds a `null`, the table is
/// rebuilt sized for all its items, so `#` finds the same border as before.
///
/// # Safety
/// `state` is the state of a running C function; `text` stays alive (on its stack) until this
/// returns; `runner` is the VM's registry reference to [`tape::run`].
pub(crate) unsafe fn push_json_text(
    state: *mut ffi::lua_State,
    text: &str,
    runner: c_int,
) -> Result<(), DecodeError> {
    let mut seed = JsonSeed {
        state,
        runner,
        tape: Tape::default(),
        failed: None,
    };
    let mut parser = serde_json::Deserializer::from_str(text);
    let parsed =
        serde::de::DeserializeSeed::deserialize(&mut seed, &mut parser).and_then(|()| parser.end());
    if let Some(failed) = seed.failed.take() {
        return Err(DecodeError::Lua(failed));
    }
    parsed.map_err(DecodeError::Json)?;
    // SAFETY: the caller's; the text the slices point into is alive.
    unsafe { seed.tape.build_protected(state, runner) }.map_err(DecodeError::Lua)
}

/// Records JSON values onto its tape, building a chunk whenever the tape is full.
struct JsonSeed {
    state: *mut ffi::lua_State,
    runner: c_int,
    tape: Tape,
    /// Set when a chunk failed to build: the parse is stopped with a placeholder error.
    failed: Option<tape::Failed>,
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut JsonSeed {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, parser: D) -> Result<(), D::Error> {
        if self.tape.full() {
            // SAFETY: the state of the running C function `push_json_text` was called from;
            // the strings recorded so far are slices of its text argument, alive. A Lua
            // error stays inside the protected call.
            if let Err(failed) = unsafe { self.tape.build_protected(self.state, self.runner) } {
                self.failed = Some(failed);
                return Err(serde::de::Error::custom("the value could not be built"));
            }
        }
        parser.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut JsonSeed {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.tape.nil();
        Ok(())
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<(), E> {
        self.tape.bool(b);
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<(), E> {
        self.tape.number(n as f64);
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<(), E> {
        self.tape.number(n as f64);
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<(), E> {
        self.tape.number(n);
        Ok(())
    }

    /// A string without escapes: a slice of the text, which outlives every build.
    fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<(), E> {
        // SAFETY: `s` is part of the text `push_json_text` decodes, alive until it returns.
        unsafe { self.tape.slice(s) };
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.tape.string(s);
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.tape.table(0, 0);
        let mut count = 0usize;
        let mut holes = false;
        while items.next_element_seed(&mut *self)?.is_some() {
            count += 1;
            holes |= self.tape.ends_with_nil();
            self.tape.set_index(count);
        }
        if holes {
            // `to_lua` sized the table for every item; the border `#` finds depends on it.
            self.tape.resize(count);
        }
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        self.tape.table(0, 0);
        while entries.next_key_seed(&mut *self)?.is_some() {
            entries.next_value_seed(&mut *self)?;
            // A `null` member sets nil: absent, and the last of equal keys wins, as when
            // the object went through a `serde_json::Map`.
            self.tape.set();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversion through mlua's safe API that this module replaced: the reference.
    fn reference(lua: &Lua, json: &Json) -> mlua::Result<Value> {
        Ok(match json {
            Json::Null => Value::Nil,
            Json::Bool(b) => Value::Boolean(*b),
            Json::Number(n) => Value::Number(number(n)),
            Json::String(s) => Value::String(lua.create_string(s)?),
            Json::Array(items) => {
                let table = lua.create_table()?;
                for (i, item) in items.iter().enumerate() {
                    table.raw_set(i + 1, reference(lua, item)?)?;
                }
                Value::Table(table)
            }
            Json::Object(map) => {
                let table = lua.create_table()?;
                for (key, item) in map {
                    table.raw_set(key.as_str(), reference(lua, item)?)?;
                }
                Value::Table(table)
            }
        })
    }

    /// Both conversions give values that print the same (sorted keys, same numbers).
    fn same(text: &str) {
        let lua = Lua::new();
        let json: Json = serde_json::from_str(text).unwrap();
        let show = crate::test_support::show_sorted(&lua);
        let ours: String = show
            .call(crate::convert::from_json(&lua, &json).unwrap())
            .unwrap();
        let theirs: String = show.call(reference(&lua, &json).unwrap()).unwrap();
        assert_eq!(ours, theirs, "{text}");
        if let Json::Object(map) = &json {
            let table: String = show.call(object(&lua, map).unwrap()).unwrap();
            assert_eq!(table, theirs, "{text}");
        }
    }

    #[test]
    fn tables_match_the_safe_api_conversion() {
        same(r#"{"a":[1,2,{"b":null}],"n":1.25,"s":"x\u0000y","t":true,"f":false}"#);
        same(r#"{"account":{"id":"d","vars":{}},"create":true,"username":""}"#);
        same(r#"[[],{},[null,1],{"k":[{"deep":[1,[2,[3]]]}]}]"#);
        same(r#"{"big":9007199254740993,"neg":-3,"float":-0.5,"huge":1e300}"#);
        same(r#""text""#);
        same("null");
    }

    #[test]
    fn values_nested_past_the_limit_are_an_error() {
        let lua = Lua::new();
        let nest = |levels: usize| {
            let mut json = Json::Bool(true);
            for _ in 0..levels {
                json = Json::Array(vec![json]);
            }
            json
        };
        assert!(crate::convert::from_json(&lua, &nest(MAX_DEPTH)).is_ok());
        let error = crate::convert::from_json(&lua, &nest(MAX_DEPTH + 1)).unwrap_err();
        assert!(error.to_string().contains("deeper than 128"), "{error}");
    }
}

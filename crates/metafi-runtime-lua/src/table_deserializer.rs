//! A before hook's result read straight from the Lua stack into the request's own type: a
//! serde `Deserializer` over a Lua value, through the C API (the other direction of
//! `table_serializer.rs`), handed to [`metafi_runtime::HookMessage::read_same`].
//!
//! It must give exactly what the old path gave: the value read into JSON
//! ([`raw_read::json_at`], whose rules are `nk`'s value conversion's) and then
//! `serde_json::from_value` into the request. So it reads a Lua value as that JSON would
//! deserialize (`serde_json::Value`'s `Deserializer`): integral numbers in `i64`'s range as
//! integers (`u64` when not negative), other numbers as floats, strings as lossy UTF-8, a table
//! with a positive integer key as a list from 1 to its largest such key (its other keys
//! ignored), any other table as a map with keys spelled as [`raw_read::key_text`] spells them,
//! a function as its text, anything else as `null`; with the same depth limit and value
//! budget, and a non-finite number an error even inside a field the request ignores.
//!
//! Where it cannot be sure of giving the same result it fails instead (an enum written as a
//! table, a map key read as anything but text, a visitor that leaves entries unread, keys that
//! name one field twice), and [`read`] falls back to the old path: a failed typed read is
//! never an answer of its own, so every error and its message stays what it was.

// Every unsafe block reads the stack of a live state within room reserved by
// `lua_checkstack`, as `raw_read` does.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::fmt;

use metafi_runtime::HookValue;
use metafi_runtime::nk_api::ValueBudget;
use mlua::{Lua, Value, ffi};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use crate::convert::MAX_DEPTH;
use crate::raw_read;

/// The value at `at` (absolute) as a before hook's result for `request`: read straight into
/// a new message of the request's type when the request is the edge's message
/// ([`HookValue::Message`]) and the read succeeds, else as JSON ([`raw_read::json_at`]) as
/// before, whose error is the call's.
///
/// # Safety
/// `state` is a live Lua state and `at` a valid absolute index on its stack (the stack is left
/// as found); as [`raw_read::json_at`], it raises no Lua error once room was reserved.
pub(crate) unsafe fn read(
    state: *mut ffi::lua_State,
    at: c_int,
    request: Option<&HookValue>,
) -> Result<HookValue, String> {
    if let Some(HookValue::Message(message)) = request {
        let top = unsafe { ffi::lua_gettop(state) };
        let mut budget = ValueBudget::default();
        let value = LuaValue {
            state,
            at,
            depth: 0,
            budget: &mut budget,
        };
        let read = message.read_same(&mut <dyn erased_serde::Deserializer<'_>>::erase(value));
        // A failed read may stop with a key or a value still pushed.
        unsafe { ffi::lua_settop(state, top) };
        if let Ok(value) = read {
            return Ok(value);
        }
    }
    // SAFETY: the caller's.
    unsafe { raw_read::json_at(state, at).map(HookValue::Json) }
}

/// [`read`] for a value held by mlua (a before hook's result after it waited in an `nk` call).
pub(crate) fn read_value(
    lua: &Lua,
    value: &Value,
    request: Option<&HookValue>,
) -> mlua::Result<HookValue> {
    let mut result = Err(String::new());
    // SAFETY: `exec_raw` pushes `value` onto the stack of `state` (live for the closure's
    // duration); `read` leaves the stack as it found it.
    unsafe {
        lua.exec_raw::<()>(value, |state| {
            result = read(state, ffi::lua_gettop(state), request);
        })?;
    }
    result.map_err(mlua::Error::runtime)
}

/// Why a typed read failed; never shown: the JSON path reads the value again (see [`read`]).
#[derive(Debug)]
pub(crate) struct ReadError(String);

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadError {}

impl de::Error for ReadError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ReadError(msg.to_string())
    }
}

fn declined(what: &str) -> ReadError {
    ReadError(format!("not read typed: {what}"))
}

/// The Lua value at stack index `at` (absolute), at nesting `depth`.
struct LuaValue<'a> {
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &'a mut ValueBudget,
}

/// What the value at `at` is, as its JSON would be.
enum Kind {
    Null,
    Bool(bool),
    Number(f64),
    String,
    Table,
    Function,
}

impl LuaValue<'_> {
    fn kind(&self) -> Kind {
        // SAFETY: `at` is a valid index (the type's invariant).
        unsafe {
            match ffi::lua_type(self.state, self.at) {
                ffi::LUA_TBOOLEAN => Kind::Bool(ffi::lua_toboolean(self.state, self.at) != 0),
                ffi::LUA_TNUMBER => Kind::Number(ffi::lua_tonumber(self.state, self.at)),
                ffi::LUA_TSTRING => Kind::String,
                ffi::LUA_TTABLE => Kind::Table,
                ffi::LUA_TFUNCTION => Kind::Function,
                _ => Kind::Null,
            }
        }
    }

    /// The string at `at`; used only while it stays on the stack.
    fn bytes(&self) -> &[u8] {
        // SAFETY: the value at `at` is a string and stays on the stack while `self` lives.
        unsafe { raw_read::bytes(self.state, self.at) }
    }

    /// A table: how it reads (depth, stack room, list or map), as `raw_read::walk_table`.
    fn table(&mut self) -> Result<Table, ReadError> {
        if self.depth >= MAX_DEPTH {
            return Err(declined("too deep"));
        }
        // SAFETY: `at` is a table on the stack; the key pass leaves the stack as found.
        unsafe {
            // A key and a value while iterating, an item while reading a list.
            if ffi::lua_checkstack(self.state, 3) == 0 {
                return Err(declined("no stack room"));
            }
            let mut maxn: i64 = 0;
            let mut len = 0usize;
            ffi::lua_pushnil(self.state);
            while ffi::lua_next(self.state, self.at) != 0 {
                len += 1;
                if let Some(i) = raw_read::positive_integer(self.state, -2)
                    && i > maxn
                {
                    maxn = i;
                }
                ffi::lua_settop(self.state, -2);
            }
            if maxn == 0 {
                return Ok(Table::Map { len });
            }
            if maxn > 1 << 24 {
                return Err(declined("too sparse"));
            }
            self.budget.take(maxn as usize).map_err(ReadError)?;
            Ok(Table::List { len: maxn })
        }
    }

    /// A value no field reads: checked as the JSON read would check it (depth, budget,
    /// non-finite numbers), nothing kept.
    fn check(&mut self) -> Result<(), ReadError> {
        // SAFETY: as `table`.
        unsafe { raw_read::check_at(self.state, self.at, self.depth, self.budget) }
            .map_err(ReadError)
    }
}

enum Table {
    Map { len: usize },
    List { len: i64 },
}

/// A number as its JSON deserializes: an integer (`u64` when not negative) or a finite float.
fn visit_number<'de, V: Visitor<'de>>(n: f64, visitor: V) -> Result<V::Value, ReadError> {
    match raw_read::integer(n) {
        Some(i) if i >= 0 => visitor.visit_u64(i as u64),
        Some(i) => visitor.visit_i64(i),
        None if n.is_finite() => visitor.visit_f64(n),
        // The JSON read refuses it.
        None => Err(declined("not a finite number")),
    }
}

impl<'de> de::Deserializer<'de> for LuaValue<'_> {
    type Error = ReadError;

    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ReadError> {
        match self.kind() {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(b),
            Kind::Number(n) => visit_number(n, visitor),
            Kind::String => match std::str::from_utf8(self.bytes()) {
                Ok(text) => visitor.visit_str(text),
                Err(_) => visitor.visit_string(String::from_utf8_lossy(self.bytes()).into_owned()),
            },
            Kind::Function => {
                // SAFETY: `at` is a function on the stack.
                let at = unsafe { ffi::lua_topointer(self.state, self.at) };
                visitor.visit_string(format!("function: {at:p}"))
            }
            Kind::Table => match self.table()? {
                Table::Map { len } => {
                    let mut map = Entries {
                        state: self.state,
                        at: self.at,
                        depth: self.depth,
                        budget: self.budget,
                        left: len,
                        started: false,
                        value_pushed: false,
                    };
                    let value = visitor.visit_map(&mut map)?;
                    if map.left > 0 || map.started {
                        return Err(declined("entries left unread"));
                    }
                    Ok(value)
                }
                Table::List { len } => {
                    let mut items = Items {
                        state: self.state,
                        at: self.at,
                        depth: self.depth,
                        budget: self.budget,
                        next: 1,
                        len,
                    };
                    let value = visitor.visit_seq(&mut items)?;
                    if items.next <= items.len {
                        return Err(declined("items left unread"));
                    }
                    Ok(value)
                }
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.kind() {
            Kind::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match self.kind() {
            // A unit variant by name; a variant with content (a table) is left to JSON.
            Kind::String => match std::str::from_utf8(self.bytes()) {
                Ok(text) => visitor.visit_enum(text.into_deserializer()),
                Err(_) => visitor.visit_enum(
                    String::from_utf8_lossy(self.bytes())
                        .into_owned()
                        .into_deserializer(),
                ),
            },
            _ => Err(declined("an enum that is not a name")),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        // As JSON's: a string only (a number is not a field index here).
        match self.kind() {
            Kind::String => self.deserialize_any(visitor),
            _ => Err(declined("an identifier that is not a string")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(
        mut self,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.check()?;
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct
    }
}

/// A table read as a map, in `lua_next` order: the key and value of the current entry on the
/// stack between `next_key_seed` and `next_value_seed`.
struct Entries<'a> {
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &'a mut ValueBudget,
    /// Entries not yet read.
    left: usize,
    /// Whether `lua_next` has started (the last entry's key is on the stack).
    started: bool,
    /// Whether the current entry's key and value are on the stack, its value unread.
    value_pushed: bool,
}

impl<'de> MapAccess<'de> for &mut Entries<'_> {
    type Error = ReadError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ReadError> {
        if self.value_pushed {
            return Err(declined("a key without its value read"));
        }
        // SAFETY: `at` is the table; the previous key (or nothing, to start) is on top. Room
        // for the key and value was reserved by `LuaValue::table`.
        unsafe {
            if self.left == 0 {
                if self.started {
                    // The last key: the stack as it was found.
                    ffi::lua_settop(self.state, -2);
                    self.started = false;
                }
                return Ok(None);
            }
            if !self.started {
                ffi::lua_pushnil(self.state);
                self.started = true;
            }
            if ffi::lua_next(self.state, self.at) == 0 {
                // Fewer entries than counted: the table changed while read (it cannot here).
                self.started = false;
                self.left = 0;
                return Err(declined("the table changed"));
            }
            self.left -= 1;
            self.value_pushed = true;
            self.budget.take(1).map_err(ReadError)?;
            let key = match ffi::lua_type(self.state, -2) {
                ffi::LUA_TSTRING => match std::str::from_utf8(raw_read::bytes(self.state, -2)) {
                    Ok(text) => return seed.deserialize(Key::Text(text)).map(Some),
                    Err(_) => raw_read::key_text(self.state, -2),
                },
                _ => raw_read::key_text(self.state, -2),
            };
            seed.deserialize(Key::Owned(key)).map(Some)
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ReadError> {
        if !self.value_pushed {
            return Err(declined("a value without its key"));
        }
        // SAFETY: the entry's value is on top.
        let at = unsafe { ffi::lua_gettop(self.state) };
        let value = seed.deserialize(LuaValue {
            state: self.state,
            at,
            depth: self.depth + 1,
            budget: self.budget,
        })?;
        // SAFETY: pops the value, leaving the key for the next `lua_next`.
        unsafe { ffi::lua_settop(self.state, at - 1) };
        self.value_pushed = false;
        Ok(value)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// A table read as a list: items 1 to `len` by `lua_rawgeti`.
struct Items<'a> {
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &'a mut ValueBudget,
    next: i64,
    len: i64,
}

impl<'de> SeqAccess<'de> for &mut Items<'_> {
    type Error = ReadError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ReadError> {
        if self.next > self.len {
            return Ok(None);
        }
        // SAFETY: room for one item was reserved by `LuaValue::table`.
        let at = unsafe {
            ffi::lua_rawgeti(self.state, self.at, self.next as ffi::lua_Integer);
            ffi::lua_gettop(self.state)
        };
        self.next += 1;
        let item = seed.deserialize(LuaValue {
            state: self.state,
            at,
            depth: self.depth + 1,
            budget: self.budget,
        });
        // SAFETY: pops the item.
        unsafe { ffi::lua_settop(self.state, at - 1) };
        item.map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.len - self.next + 1).max(0) as usize)
    }
}

/// A map key, as its JSON object key deserializes: text (`serde_json`'s map keys also parse
/// as numbers and booleans: those reads are left to JSON). A string key's text is borrowed from
/// the Lua string while it is on the stack.
enum Key<'a> {
    Text(&'a str),
    Owned(String),
}

/// Reads a map key cannot give as text (a number or a boolean): left to JSON.
macro_rules! not_text {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ReadError> {
                Err(declined("a map key that is not text"))
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = ReadError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self {
            Key::Text(text) => visitor.visit_str(text),
            Key::Owned(text) => visitor.visit_string(text),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_unit()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ReadError> {
        Err(declined("an enum as a map key"))
    }

    not_text! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_unit deserialize_seq
        deserialize_map
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _visitor: V,
    ) -> Result<V::Value, ReadError> {
        Err(declined("a map key that is not text"))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, ReadError> {
        Err(declined("a map key that is not text"))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, ReadError> {
        Err(declined("a map key that is not text"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ReadError> {
        Err(declined("a map key that is not text"))
    }

    serde::forward_to_deserialize_any! {
        char str string identifier bytes byte_buf
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::fmt::Debug;

    use metafi_core::Hook;
    use metafi_proto::realtime::{Envelope, Message};
    use mlua::{Function, Lua};
    use serde::de::{DeserializeOwned, Error as _};
    use serde::{Deserialize, Deserializer, Serialize};
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::field_keys::FieldKeys;
    use crate::raw_push;

    /// Lua bodies of `function(payload)`: the request unchanged, changed everywhere, and the
    /// shapes the edge's lenient reading meets.
    const BODIES: &[&str] = &[
        "return payload",
        "return change(payload)",
        "payload.cid = 'c2' return payload",
        "return {}",
        "return 'text'",
        "return 5",
        "return true",
        "return print",
        "return {1, 2}",
        "return {[1] = 'a', cid = 'x'}",
        "return {cid = 5}",
        "return {cid = {}}",
        "return {cid = 'a', unknown = {nan = 0/0}}",
        "return {cid = 'a', unknown = {deep = print, co = coroutine.create(print)}}",
        "return {cid = 'a', [2.5] = 'number key', [true] = 1, [{}] = 2}",
        "local t = {} t.t = t return {cid = 'a', loop = t}",
        "return {cid = 'a', big = {[5000000] = 1}}",
        "return {cid = 0/0}",
        "return {cid = '\\255x'}",
        "return {ping = {}}",
        "return {ping = {}, pong = {}}",
        "return {ping = 'x'}",
        "return {status_update = {status = 'online'}}",
        "return {status_update = {status = 5}}",
        "return {channel_join = {target = 't', type = 2, persistence = true, hidden = {}}}",
        "return {channel_join = {target = 't', type = 'ROOM'}}",
        "return {channel_join = {target = 't', type = 2.5}}",
        "return {channel_join = {target = 't', type = 1e300}}",
        "return {match_data_send = {match_id = 'm', op_code = '7', data = 'ZGF0YQ=='}}",
        "return {match_data_send = {match_id = 'm', op_code = 7, presences = {}}}",
        "return {match_data_send = {match_id = 'm', op_code = 2^53, reliable = 'yes'}}",
        "return {matchmaker_add = {min_count = 2, max_count = 4, query = '*', \
         string_properties = {region = 'eu'}, numeric_properties = {rank = 1.5}}}",
        "return {matchmaker_add = {min_count = 2, numeric_properties = {}, string_properties = {}}}",
        "return {matchmaker_add = {string_properties = {region = 5}}}",
        "return {party_create = {open = true, max_size = 4}}",
        "return {party_data_send = {party_id = 'p', op_code = -3, data = ''}}",
        "return {channel_message_send = {channel_id = 'c', content = '{}'}}",
        "return {status_follow = {user_ids = {'a', 'b'}, usernames = {}}}",
        "return {status_follow = {user_ids = {[1] = 'a', [3] = 'c'}}}",
        "return {status_follow = {user_ids = {'a', x = 0/0}}}",
        "return {account = {id = 'd', vars = {}}, create = true, username = 'u'}",
        "return {account = {id = 'd', vars = {k = 'v', [7] = 'n'}}, create = 'yes'}",
        "return {account = {id = 'd', vars = {'list'}}}",
        "return {account = {id = 'd', vars = {k = 5}}}",
        "return {account = 'x'}",
        "return {account = {id = 'd'}, create = {}, username = {}}",
        "return {ids = {}, usernames = {'a'}, facebook_ids = {}}",
        "return {ids = {'a', 'b'}, usernames = 'a'}",
        "return {limit = 10, forward = false, cursor = 'c', channel_id = 'x'}",
        "return {limit = '10'}",
        "return {limit = 1.5}",
        "return {limit = -2^63, cursor = {}}",
        "return {limit = 2^63}",
        "return {limit = 2^31}",
        "return {min_size = 2, max_size = -1, label = 'l', authoritative = true}",
        "return {objects = {{collection = 'c', key = 'k', value = '{}', permission_read = 2}}}",
        "return {objects = {{collection = 'c', permission_write = 1.5}}}",
        "return {objects = {{}, {key = 'k'}}}",
        "return {objects = {}}",
        "return {object_ids = {{collection = 'c', key = 'k', user_id = 'u'}}}",
        "return {username = 'u', display_name = {}, avatar_url = 'a', timezone = 3}",
        "return {display_name = '', lang_tag = 'en', location = 'x'}",
        "return {token = 't', refresh_token = 'r', vars = {a = 'b'}}",
    ];

    const CHANGE: &str = r#"
        local function change(v)
          if type(v) == "string" then return v .. "!" end
          if type(v) == "number" then return v + 1 end
          if type(v) == "boolean" then return not v end
          if type(v) == "table" then
            local t = {}
            for k, x in pairs(v) do t[k] = change(x) end
            return t
          end
          return v
        end
    "#;

    /// The hook's result read both ways: typed ([`read`]) and JSON (the old path), each taken
    /// back by the edge (`HookValue::into_message`).
    fn through<T>(lua: &Lua, keys: &FieldKeys, body: &str, request: &HookValue) -> Compared<T>
    where
        T: DeserializeOwned + 'static,
    {
        let hook: Function = lua
            .load(format!("{CHANGE} return function(payload) {body} end"))
            .eval()
            .unwrap_or_else(|e| panic!("{body}: {e}"));
        let mut typed = Err(String::new());
        let mut old = Err(String::new());
        // SAFETY: `exec_raw` hands over the stack with `hook` on top; the request is pushed and
        // the call made in a protected call, the result read and the stack left as found.
        unsafe {
            lua.exec_raw::<()>(&hook, |state| {
                let base = ffi::lua_gettop(state);
                raw_read::reserve(state);
                let tape = std::cell::RefCell::new(crate::tape::Tape::default());
                assert!(raw_push::push_hook_value(state, request, keys, &tape));
                assert_eq!(ffi::lua_pcall(state, 1, 1, 0), ffi::LUA_OK);
                let at = ffi::lua_gettop(state);
                typed = read(state, at, Some(request));
                assert_eq!(ffi::lua_gettop(state), at, "{body}: the stack as found");
                old = raw_read::json_at(state, at);
                ffi::lua_settop(state, base - 1);
            })
            .unwrap_or_else(|e| panic!("{body}: {e}"));
        }
        let was_typed = matches!(typed, Ok(HookValue::Message(_)));
        Compared {
            typed: typed.map(|v| {
                v.into_message::<T>(Hook::ChannelJoin)
                    .map_err(|e| e.to_string())
            }),
            old: old.map(|j| {
                HookValue::Json(j)
                    .into_message::<T>(Hook::ChannelJoin)
                    .map_err(|e| e.to_string())
            }),
            was_typed,
        }
    }

    struct Compared<T> {
        typed: Result<Result<T, String>, String>,
        old: Result<Result<T, String>, String>,
        was_typed: bool,
    }

    /// Every body on `request`: the typed read gives what the old path gave (the same struct,
    /// or the same error); returns how many were read typed.
    fn compare_all<T>(lua: &Lua, request: HookValue, same: impl Fn(&T, &T) -> bool) -> usize
    where
        T: DeserializeOwned + Debug + 'static,
    {
        let keys = FieldKeys::default();
        let mut typed = 0;
        for body in BODIES {
            let both = through::<T>(lua, &keys, body, &request);
            typed += usize::from(both.was_typed);
            match (&both.typed, &both.old) {
                (Ok(Ok(a)), Ok(Ok(b))) => assert!(same(a, b), "{body}: {a:?} != {b:?}"),
                (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{body}"),
            }
            if body == &"return payload" || body == &"return {}" {
                assert!(both.was_typed, "{body}: read typed");
            }
        }
        // The VM is fine after all of it.
        assert_eq!(lua.load("return 1 + 1").eval::<i64>().unwrap(), 2);
        typed
    }

    #[test]
    fn every_realtime_hook_message_reads_as_json_did() {
        let lua = Lua::new();
        let messages = [
            Message::ChannelJoin(Default::default()),
            Message::ChannelLeave(Default::default()),
            Message::ChannelMessageSend(Default::default()),
            Message::ChannelMessageUpdate(Default::default()),
            Message::ChannelMessageRemove(Default::default()),
            Message::MatchCreate(Default::default()),
            Message::MatchDataSend(Default::default()),
            Message::MatchJoin(Default::default()),
            Message::MatchLeave(Default::default()),
            Message::MatchmakerAdd(Default::default()),
            Message::MatchmakerRemove(Default::default()),
            Message::PartyCreate(Default::default()),
            Message::PartyJoin(Default::default()),
            Message::PartyLeave(Default::default()),
            Message::PartyPromote(Default::default()),
            Message::PartyAccept(Default::default()),
            Message::PartyRemove(Default::default()),
            Message::PartyClose(Default::default()),
            Message::PartyJoinRequestList(Default::default()),
            Message::PartyMatchmakerAdd(Default::default()),
            Message::PartyMatchmakerRemove(Default::default()),
            Message::PartyDataSend(Default::default()),
            Message::PartyUpdate(Default::default()),
            Message::Ping(Default::default()),
            Message::Pong(Default::default()),
            Message::StatusFollow(Default::default()),
            Message::StatusUnfollow(Default::default()),
            Message::StatusUpdate(Default::default()),
        ];
        let mut typed = 0;
        for message in messages {
            let request = HookValue::request(Envelope::new("cid-1", message));
            typed += compare_all::<Envelope>(&lua, request, |a, b| a == b);
        }
        assert!(typed > 28 * 10, "most shapes read typed: {typed}");
    }

    /// The edge's lenient reading (`metafi-api/src/hooks.rs`).
    fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: DeserializeOwned + Default,
    {
        let value = Json::deserialize(deserializer)?;
        match &value {
            Json::Null => Ok(T::default()),
            Json::Array(items) if items.is_empty() => Ok(T::default()),
            Json::Object(map) if map.is_empty() => Ok(T::default()),
            _ => serde_json::from_value(value).map_err(D::Error::custom),
        }
    }

    /// The shapes of the REST edge's requests (`metafi-api/src/hooks.rs`, whose structs are
    /// that crate's own), with their serde attributes: ids with lenient maps, wrappers,
    /// int64 and int32 options, lists of objects.
    #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct AccountId {
        id: String,
        #[serde(deserialize_with = "lenient")]
        vars: HashMap<String, String>,
    }

    #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Requests {
        account: AccountId,
        create: Option<bool>,
        username: String,
        #[serde(deserialize_with = "lenient")]
        ids: Vec<String>,
        #[serde(deserialize_with = "lenient")]
        usernames: Vec<String>,
        limit: Option<i64>,
        forward: Option<bool>,
        cursor: Option<String>,
        min_size: Option<i32>,
        max_size: Option<i32>,
        label: Option<String>,
        authoritative: Option<bool>,
        #[serde(deserialize_with = "lenient")]
        objects: Vec<WriteObject>,
        display_name: Option<String>,
        timezone: Option<String>,
        token: String,
        #[serde(deserialize_with = "lenient")]
        vars: HashMap<String, String>,
    }

    #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct WriteObject {
        collection: String,
        key: String,
        value: String,
        permission_read: Option<i32>,
        permission_write: Option<i32>,
    }

    #[test]
    fn the_rest_edges_request_shapes_read_as_json_did() {
        let lua = Lua::new();
        let requests = [
            Requests::default(),
            Requests {
                account: AccountId {
                    id: "device-1".into(),
                    vars: [("k".to_owned(), "v".to_owned())].into(),
                },
                create: Some(true),
                limit: Some(100),
                ids: vec!["a".into()],
                objects: vec![WriteObject {
                    collection: "c".into(),
                    permission_read: Some(2),
                    ..WriteObject::default()
                }],
                ..Requests::default()
            },
        ];
        let mut typed = 0;
        for request in requests {
            typed += compare_all::<Requests>(&lua, HookValue::request(request), |a, b| a == b);
        }
        assert!(typed > 2 * 10, "most shapes read typed: {typed}");
        // A request read back unchanged is the same struct.
        let keys = FieldKeys::default();
        let request = Requests {
            username: "u".into(),
            ..Requests::default()
        };
        let back = through::<Requests>(
            &lua,
            &keys,
            "return payload",
            &HookValue::request(request.clone()),
        );
        assert!(back.was_typed);
        assert_eq!(back.typed.unwrap().unwrap(), request);
    }

    /// An answer cannot be read back, and JSON in, JSON out: the typed read is only for the
    /// edge's requests.
    #[test]
    fn values_that_are_not_requests_read_as_json() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        for request in [
            HookValue::message(AccountId::default()),
            HookValue::Json(json!({"id": "d"})),
        ] {
            let both = through::<AccountId>(&lua, &keys, "return payload", &request);
            assert!(!both.was_typed);
            assert_eq!(
                both.typed.unwrap().unwrap().id,
                both.old.unwrap().unwrap().id
            );
        }
    }
}

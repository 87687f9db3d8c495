//! A hook's request or answer struct serialized straight onto the Lua stack (serde
//! `Serializer` → tables through the C API), with no `serde_json::Value` tree in between.
//!
//! The edges used to build a JSON tree of each request and answer (a `String` per key, a
//! `BTreeMap` per object) that [`crate::raw_push`] then walked; here the struct's own
//! `Serialize` drives the pushes. The tables are the ones [`crate::raw_push::push_message`]
//! builds from `serde_json::to_value` of the same struct: numbers as Lua 5.1 doubles, `null`
//! fields absent, arrays from 1, enums and bytes as `serde_json` writes them, at most
//! [`MAX_DEPTH`] containers deep. Struct field names (`&'static str`, proto names) come from
//! the VM's [`FieldKeys`]; the keys of maps (`vars`, `metadata`: user data) are pushed as they
//! are. A table's key order is not the JSON tree's (declaration order instead of sorted), which
//! Lua cannot show: `next` has no defined order, and a table holds no more than its keys.

// Every unsafe block pushes onto the stack of the state the caller's protected call runs on,
// after reserving room; a memory error is a Lua error of that call. Nothing alive here needs
// dropping while Lua may raise (the serializers are copies of a pointer and two integers).
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::fmt;

use mlua::ffi;
use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::convert::MAX_DEPTH;
use crate::field_keys::FieldKeys;
use crate::raw_push;

/// Why a value could not be pushed.
#[derive(Debug)]
pub(crate) enum PushError {
    /// Nested deeper than [`MAX_DEPTH`]: reported as [`raw_push::deep`].
    Deep,
    /// What `serde_json::to_value` refuses too (a map key that is not a string or a number,
    /// an integer past 64 bits), or a `Serialize` that failed.
    Unencodable(String),
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Deep => write!(f, "value nested deeper than {MAX_DEPTH} levels"),
            PushError::Unencodable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for PushError {}

impl ser::Error for PushError {
    fn custom<T: fmt::Display>(msg: T) -> PushError {
        PushError::Unencodable(msg.to_string())
    }
}

/// Pushes `value` onto the stack of `state` as one value (a message as a table).
///
/// # Safety
/// `state` is a live Lua state inside a protected call; `keys` belongs to its VM. On an error
/// the stack holds what was pushed so far: the caller discards it.
pub(crate) unsafe fn push<T: Serialize + ?Sized>(
    state: *mut ffi::lua_State,
    value: &T,
    keys: &FieldKeys,
) -> Result<(), PushError> {
    // SAFETY: the caller's; room for the value itself is reserved here.
    unsafe { ffi::luaL_checkstack(state, 1, c"hook value too deep".as_ptr()) };
    value.serialize(TableSerializer {
        state,
        keys,
        level: 0,
    })
}

/// Pushes one value at nesting `level` (the containers around it); room for it is reserved by
/// the caller.
#[derive(Clone, Copy)]
struct TableSerializer<'a> {
    state: *mut ffi::lua_State,
    keys: &'a FieldKeys,
    level: usize,
}

impl<'a> TableSerializer<'a> {
    fn inner(self) -> TableSerializer<'a> {
        TableSerializer {
            level: self.level + 1,
            ..self
        }
    }

    /// A new table with room for `array` items and `fields` fields, and stack room for a key
    /// and a value (and `FieldKeys::push`'s copy of a new key).
    fn table(self, array: usize, fields: usize) -> Result<(), PushError> {
        if self.level >= MAX_DEPTH {
            return Err(PushError::Deep);
        }
        // SAFETY: see the module's note.
        unsafe {
            ffi::luaL_checkstack(self.state, 3, c"hook value too deep".as_ptr());
            ffi::lua_createtable(self.state, raw_push::len(array), raw_push::len(fields));
        }
        Ok(())
    }

    fn number(self, n: f64) -> Result<(), PushError> {
        // SAFETY: see the module's note.
        unsafe { ffi::lua_pushnumber(self.state, n) };
        Ok(())
    }

    fn nil(self) -> Result<(), PushError> {
        // SAFETY: see the module's note.
        unsafe { ffi::lua_pushnil(self.state) };
        Ok(())
    }

    fn string(self, s: &str) -> Result<(), PushError> {
        // SAFETY: see the module's note.
        unsafe { raw_push::push_str(self.state, s) };
        Ok(())
    }

    /// `{variant = …}`, as `serde_json` writes a variant with data: the table, and the key,
    /// left for the value that follows.
    fn variant(self, variant: &'static str) -> Result<(), PushError> {
        self.table(0, 1)?;
        // SAFETY: `table` reserved room for the key.
        unsafe { self.keys.push_static(self.state, variant) };
        Ok(())
    }
}

/// Sets the key and value on top of the stack into the table below them; a nil value is
/// dropped with its key (a `null` field is absent, as a Lua table cannot hold nil).
///
/// # Safety
/// `state` holds `table, key, value` on its top.
unsafe fn set_field(state: *mut ffi::lua_State) {
    unsafe {
        if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
            ffi::lua_settop(state, -3);
        } else {
            ffi::lua_rawset(state, -3);
        }
    }
}

impl<'a> ser::Serializer for TableSerializer<'a> {
    type Ok = ();
    type Error = PushError;
    type SerializeSeq = Items<'a>;
    type SerializeTuple = Items<'a>;
    type SerializeTupleStruct = Items<'a>;
    type SerializeTupleVariant = Items<'a>;
    type SerializeMap = Fields<'a>;
    type SerializeStruct = Fields<'a>;
    type SerializeStructVariant = Fields<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), PushError> {
        // SAFETY: see the module's note.
        unsafe { ffi::lua_pushboolean(self.state, c_int::from(v)) };
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    /// Lua 5.1's numbers are doubles: past 2^53 an integer loses precision, as in Nakama and
    /// as `raw_push::number` converts a JSON integer.
    fn serialize_i64(self, v: i64) -> Result<(), PushError> {
        self.number(v as f64)
    }

    fn serialize_i128(self, v: i128) -> Result<(), PushError> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(v), _) => self.serialize_i64(v),
            (_, Ok(v)) => self.serialize_u64(v),
            _ => Err(PushError::Unencodable("number out of range".into())),
        }
    }

    fn serialize_u8(self, v: u8) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<(), PushError> {
        self.number(f64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<(), PushError> {
        self.number(v as f64)
    }

    fn serialize_u128(self, v: u128) -> Result<(), PushError> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => Err(PushError::Unencodable("number out of range".into())),
        }
    }

    /// A float JSON cannot hold (NaN, ±∞) is `null` in `serde_json::to_value`: nil here.
    fn serialize_f32(self, v: f32) -> Result<(), PushError> {
        self.serialize_f64(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), PushError> {
        if v.is_finite() {
            self.number(v)
        } else {
            self.nil()
        }
    }

    fn serialize_char(self, v: char) -> Result<(), PushError> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), PushError> {
        self.string(v)
    }

    /// Bytes are a list of numbers, as `serde_json` writes them.
    fn serialize_bytes(self, v: &[u8]) -> Result<(), PushError> {
        self.table(v.len(), 0)?;
        for (i, byte) in v.iter().enumerate() {
            // SAFETY: `table` reserved room for a value; the table is below it.
            unsafe {
                ffi::lua_pushnumber(self.state, f64::from(*byte));
                ffi::lua_rawseti(self.state, -2, index(i + 1));
            }
        }
        Ok(())
    }

    fn serialize_none(self) -> Result<(), PushError> {
        self.nil()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), PushError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), PushError> {
        self.nil()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), PushError> {
        self.nil()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), PushError> {
        self.string(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), PushError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), PushError> {
        self.variant(variant)?;
        value.serialize(self.inner())?;
        // SAFETY: `variant` left the table and the key below the value.
        unsafe { set_field(self.state) };
        Ok(())
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Items<'a>, PushError> {
        self.table(len.unwrap_or(0), 0)?;
        Ok(Items {
            at: self,
            next: 1,
            variant: false,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Items<'a>, PushError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Items<'a>, PushError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Items<'a>, PushError> {
        self.variant(variant)?;
        let mut items = self.inner().serialize_seq(Some(len))?;
        items.variant = true;
        Ok(items)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Fields<'a>, PushError> {
        self.table(0, len.unwrap_or(0))?;
        Ok(Fields {
            at: self,
            variant: false,
        })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Fields<'a>, PushError> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Fields<'a>, PushError> {
        self.variant(variant)?;
        let mut fields = self.inner().serialize_map(Some(len))?;
        fields.variant = true;
        Ok(fields)
    }
}

/// The items of a list table on the stack's top; `variant`: the table is the value of a
/// `{variant = …}` table below it, set when the list ends.
struct Items<'a> {
    at: TableSerializer<'a>,
    next: usize,
    variant: bool,
}

impl Items<'_> {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PushError> {
        value.serialize(self.at.inner())?;
        // SAFETY: the list table is below the value just pushed.
        unsafe { ffi::lua_rawseti(self.at.state, -2, index(self.next)) };
        self.next += 1;
        Ok(())
    }

    fn finish(self) -> Result<(), PushError> {
        if self.variant {
            // SAFETY: `{variant = …}` and its key are below the list.
            unsafe { set_field(self.at.state) };
        }
        Ok(())
    }
}

/// The four list-like serde traits: each element is the table's next item.
macro_rules! items_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Items<'_> {
            type Ok = ();
            type Error = PushError;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PushError> {
                self.item(value)
            }

            fn end(self) -> Result<(), PushError> {
                self.finish()
            }
        }
    )*};
}

items_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// The fields of a table on the stack's top (see [`Items`] for `variant`).
struct Fields<'a> {
    at: TableSerializer<'a>,
    variant: bool,
}

impl Fields<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PushError> {
        value.serialize(self.at.inner())?;
        // SAFETY: the table and the key are below the value just pushed.
        unsafe { set_field(self.at.state) };
        Ok(())
    }

    fn finish(self) -> Result<(), PushError> {
        if self.variant {
            // SAFETY: `{variant = …}` and its key are below the table.
            unsafe { set_field(self.at.state) };
        }
        Ok(())
    }
}

impl ser::SerializeMap for Fields<'_> {
    type Ok = ();
    type Error = PushError;

    /// A map's key is user data, pushed as it is (not from the field-name cache).
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), PushError> {
        key.serialize(MapKey(self.at.state))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PushError> {
        self.field(value)
    }

    fn end(self) -> Result<(), PushError> {
        self.finish()
    }
}

impl ser::SerializeStruct for Fields<'_> {
    type Ok = ();
    type Error = PushError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), PushError> {
        // SAFETY: `table` reserved room for the key, the value and the cache's copy.
        unsafe { self.at.keys.push_static(self.at.state, key) };
        self.field(value)
    }

    fn end(self) -> Result<(), PushError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Fields<'_> {
    type Ok = ();
    type Error = PushError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), PushError> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }

    fn end(self) -> Result<(), PushError> {
        self.finish()
    }
}

/// A map key as a string, as `serde_json` writes one: strings as they are, integers, floats,
/// booleans and chars as their text, unit variants by name; anything else is an error there
/// too.
struct MapKey(*mut ffi::lua_State);

impl MapKey {
    fn text(self, text: &str) -> Result<(), PushError> {
        // SAFETY: the map's `table` reserved room for the key.
        unsafe { raw_push::push_str(self.0, text) };
        Ok(())
    }

    fn refused() -> PushError {
        PushError::Unencodable("key must be a string".into())
    }
}

macro_rules! key_as_text {
    ($($method:ident $ty:ty;)*) => {$(
        fn $method(self, v: $ty) -> Result<(), PushError> {
            self.text(&v.to_string())
        }
    )*};
}

impl ser::Serializer for MapKey {
    type Ok = ();
    type Error = PushError;
    type SerializeSeq = Impossible<(), PushError>;
    type SerializeTuple = Impossible<(), PushError>;
    type SerializeTupleStruct = Impossible<(), PushError>;
    type SerializeTupleVariant = Impossible<(), PushError>;
    type SerializeMap = Impossible<(), PushError>;
    type SerializeStruct = Impossible<(), PushError>;
    type SerializeStructVariant = Impossible<(), PushError>;

    key_as_text! {
        serialize_bool bool;
        serialize_i8 i8;
        serialize_i16 i16;
        serialize_i32 i32;
        serialize_i64 i64;
        serialize_i128 i128;
        serialize_u8 u8;
        serialize_u16 u16;
        serialize_u32 u32;
        serialize_u64 u64;
        serialize_u128 u128;
        serialize_char char;
    }

    fn serialize_f32(self, v: f32) -> Result<(), PushError> {
        self.serialize_f64(f64::from(v))
    }

    /// As `serde_json`: a finite float's shortest text, a NaN or ±∞ key refused.
    fn serialize_f64(self, v: f64) -> Result<(), PushError> {
        if !v.is_finite() {
            return Err(PushError::Unencodable(
                "float key must be finite (got NaN or +/-inf)".into(),
            ));
        }
        let text = serde_json::to_string(&v).map_err(|e| PushError::Unencodable(e.to_string()))?;
        self.text(&text)
    }

    fn serialize_str(self, v: &str) -> Result<(), PushError> {
        self.text(v)
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_none(self) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_unit(self) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), PushError> {
        self.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), PushError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), PushError> {
        Err(MapKey::refused())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, PushError> {
        Err(MapKey::refused())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, PushError> {
        Err(MapKey::refused())
    }
}

/// An array index (a table of more than 2^31 items does not fit in a Lua 5.1 VM's memory).
fn index(i: usize) -> ffi::lua_Integer {
    ffi::lua_Integer::try_from(i).unwrap_or(ffi::lua_Integer::MAX)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use metafi_proto::api::Session;
    use metafi_proto::realtime::{ChannelMessageSend, Envelope, MatchmakerAdd, Message};
    use mlua::{Lua, Value};
    use serde::Serialize;
    use serde_json::{Value as Json, json};

    use super::*;

    /// `value` pushed through its `Serialize` (the new path), or an error.
    fn direct<T: Serialize>(lua: &Lua, keys: &FieldKeys, value: &T) -> mlua::Result<Value> {
        let mut result = Ok(());
        // SAFETY: `exec_raw` runs the closure in a protected call on the VM's state; `push`
        // leaves one value when it succeeds, and the stack is discarded when it does not.
        let value = unsafe {
            lua.exec_raw::<Value>((), |state| {
                result = push(state, value, keys);
                if result.is_err() {
                    ffi::lua_settop(state, 0);
                }
            })
        }?;
        result.map_err(|e| mlua::Error::runtime(e.to_string()))?;
        Ok(value)
    }

    /// `serde_json::to_value` of the same value pushed as the edges did before (the reference).
    fn through_json<T: Serialize>(lua: &Lua, keys: &FieldKeys, value: &T) -> Value {
        let json = serde_json::to_value(value).unwrap();
        let mut within = false;
        // SAFETY: as in `direct`.
        let value = unsafe {
            lua.exec_raw::<Value>((), |state| {
                within = raw_push::push_message(state, &json, keys);
            })
        }
        .unwrap();
        assert!(within);
        value
    }

    /// Both paths give tables that print the same; returns the print.
    fn same<T: Serialize>(value: &T) -> String {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let show = crate::test_support::show_sorted(&lua);
        let ours: String = show.call(direct(&lua, &keys, value).unwrap()).unwrap();
        let theirs: String = show.call(through_json(&lua, &keys, value)).unwrap();
        assert_eq!(ours, theirs);
        ours
    }

    #[derive(Serialize)]
    struct Account {
        id: String,
        vars: HashMap<String, String>,
    }

    #[derive(Serialize)]
    enum Kind {
        Plain,
        Wrapped(i32),
        Pair(i32, String),
        Shaped { x: i32, y: Option<i32> },
    }

    /// Bytes through `serialize_bytes`, which `Vec<u8>` does not call.
    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    #[derive(Serialize)]
    struct Everything {
        account: Account,
        accounts: Vec<Account>,
        create: Option<bool>,
        cleared: Option<bool>,
        username: String,
        big: i64,
        past_i64: u64,
        small: i32,
        ratio: f64,
        not_a_number: f64,
        kinds: Vec<Kind>,
        bytes: Bytes,
        empty_list: Vec<String>,
        empty_map: HashMap<String, i32>,
        numbered: BTreeMap<i64, bool>,
        letter: char,
        nothing: (),
        metadata: Json,
        holes: Vec<Option<i32>>,
    }

    fn everything() -> Everything {
        Everything {
            account: Account {
                id: "device-1".into(),
                vars: HashMap::from([
                    ("region".into(), "eu".into()),
                    ("account".into(), "x".into()),
                ]),
            },
            accounts: vec![
                Account {
                    id: "a".into(),
                    vars: HashMap::new(),
                },
                Account {
                    id: "b".into(),
                    vars: HashMap::from([("k".into(), "v".into())]),
                },
            ],
            create: Some(false),
            cleared: None,
            username: String::new(),
            big: 9_007_199_254_740_993,
            past_i64: u64::MAX,
            small: -3,
            ratio: -0.5,
            not_a_number: f64::NAN,
            kinds: vec![
                Kind::Plain,
                Kind::Wrapped(7),
                Kind::Pair(1, "two".into()),
                Kind::Shaped { x: 1, y: None },
            ],
            bytes: Bytes(&[0, 1, 255]),
            empty_list: Vec::new(),
            empty_map: HashMap::new(),
            numbered: BTreeMap::from([(-1, true), (20, false)]),
            letter: 'é',
            nothing: (),
            metadata: json!({"nested": {"list": [1, null, "x"], "null": null}, "n": 1.5}),
            holes: vec![Some(1), None, Some(3)],
        }
    }

    #[test]
    fn every_kind_of_value_gives_the_tables_of_its_json() {
        let shown = same(&everything());
        // The cases the comparison rests on, spelled out: `null` fields absent, a wrapper's
        // `false` kept, int64 as a double, enums and bytes as `serde_json` writes them, map
        // keys as they are, integer map keys as text.
        for part in [
            "account={id=string:device-1,vars={account=string:x,region=string:eu}}",
            "big=number:9.007199254741e+15",
            "bytes={1=number:0,2=number:1,3=number:255}",
            "create=boolean:false",
            "empty_list={}",
            "empty_map={}",
            "holes={1=number:1,3=number:3}",
            "kinds={1=string:Plain,2={Wrapped=number:7},3={Pair={1=number:1,2=string:two}},4={Shaped={x=number:1}}}",
            "numbered={-1=boolean:true,20=boolean:false}",
            "username=string:",
        ] {
            assert!(shown.contains(part), "{part} not in {shown}");
        }
        for absent in ["cleared", "not_a_number", "nothing"] {
            assert!(!shown.contains(absent), "{absent} in {shown}");
        }
    }

    #[test]
    fn the_servers_messages_give_the_tables_of_their_json() {
        same(&Session {
            created: true,
            token: "t".into(),
            refresh_token: "r".into(),
        });
        same(&Session {
            created: false,
            token: "t".into(),
            refresh_token: String::new(),
        });
        let send = ChannelMessageSend {
            channel_id: "2...room".into(),
            content: r#"{"hello":"world"}"#.into(),
        };
        let shown = same(&Envelope::new("3", Message::ChannelMessageSend(send)));
        assert_eq!(
            shown,
            r#"{channel_message_send={channel_id=string:2...room,content=string:{"hello":"world"}},cid=string:3}"#
        );
        same(&Envelope::new(
            "",
            Message::MatchmakerAdd(MatchmakerAdd {
                min_count: 2,
                max_count: 4,
                query: "*".into(),
                string_properties: HashMap::from([("mode".into(), "ranked".into())]),
                numeric_properties: HashMap::from([("skill".into(), 12.5)]),
                ..MatchmakerAdd::default()
            }),
        ));
    }

    #[test]
    fn struct_field_names_are_kept_per_vm_and_map_keys_are_not() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let account = Account {
            id: "d".into(),
            vars: HashMap::from([("region".into(), "eu".into())]),
        };
        direct(&lua, &keys, &account).unwrap();
        // `id` and `vars`; not `region`, a key inside the map.
        assert_eq!(keys.len(), 2);
        direct(&lua, &keys, &account).unwrap();
        assert_eq!(keys.len(), 2);
    }

    #[test]
    fn values_nested_past_the_limit_are_an_error_and_leave_nothing() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let nest = |levels: usize| {
            let mut json = Json::Bool(true);
            for _ in 0..levels {
                json = Json::Array(vec![json]);
            }
            json
        };
        assert!(direct(&lua, &keys, &nest(MAX_DEPTH)).is_ok());
        let error = direct(&lua, &keys, &nest(MAX_DEPTH + 1)).unwrap_err();
        assert!(error.to_string().contains("deeper than 128"), "{error}");
    }

    #[test]
    fn map_keys_json_refuses_are_refused() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let map = BTreeMap::from([((1, 2), true)]);
        assert!(serde_json::to_value(&map).is_err());
        let error = direct(&lua, &keys, &map).unwrap_err();
        assert!(
            error.to_string().contains("key must be a string"),
            "{error}"
        );
    }
}

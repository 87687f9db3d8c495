//! A hook's request or answer struct serialized into Lua tables (serde `Serializer` → a
//! [`Tape`] of stack operations → tables through the C API), with no `serde_json::Value` tree
//! in between.
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

//!
//! The serializer only records ([`record`]): a `Serialize` runs code this crate does not own
//! (it may format a key into a `String` it drops after), so no Lua call — which may raise "not
//! enough memory" at the VM's cap and unwind — happens under its frames. The caller builds the
//! tape afterwards ([`Tape::build`], `crate::tape`'s rule).

use std::cell::RefCell;
use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::convert::MAX_DEPTH;
use crate::tape::Tape;

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

/// Records `value` onto `tape` as one value (a message as a table), field names as struct
/// field names for the VM's kept strings. On an error the tape holds a part of the value: the
/// caller discards it.
pub(crate) fn record<T: Serialize + ?Sized>(
    value: &T,
    tape: &RefCell<Tape>,
) -> Result<(), PushError> {
    value.serialize(TableSerializer { tape, level: 0 })
}

/// Records one value at nesting `level` (the containers around it).
#[derive(Clone, Copy)]
struct TableSerializer<'a> {
    tape: &'a RefCell<Tape>,
    level: usize,
}

impl<'a> TableSerializer<'a> {
    fn inner(self) -> TableSerializer<'a> {
        TableSerializer {
            level: self.level + 1,
            ..self
        }
    }

    /// A new table with room for `array` items and `fields` fields.
    fn table(self, array: usize, fields: usize) -> Result<(), PushError> {
        if self.level >= MAX_DEPTH {
            return Err(PushError::Deep);
        }
        self.tape.borrow_mut().table(array, fields);
        Ok(())
    }

    fn number(self, n: f64) -> Result<(), PushError> {
        self.tape.borrow_mut().number(n);
        Ok(())
    }

    fn nil(self) -> Result<(), PushError> {
        self.tape.borrow_mut().nil();
        Ok(())
    }

    fn string(self, s: &str) -> Result<(), PushError> {
        self.tape.borrow_mut().string(s);
        Ok(())
    }

    /// `{variant = …}`, as `serde_json` writes a variant with data: the table, and the key,
    /// left for the value that follows.
    fn variant(self, variant: &'static str) -> Result<(), PushError> {
        self.table(0, 1)?;
        self.tape.borrow_mut().field(variant);
        Ok(())
    }

    /// The key and value last recorded into the table below them; a nil value is dropped
    /// with its key (a `null` field is absent, as a Lua table cannot hold nil).
    fn set_field(self) {
        self.tape.borrow_mut().set_field();
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
        self.tape.borrow_mut().bool(v);
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
        let mut tape = self.tape.borrow_mut();
        for (i, byte) in v.iter().enumerate() {
            tape.number(f64::from(*byte));
            tape.set_index(i + 1);
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
        self.set_field();
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
        self.at.tape.borrow_mut().set_index(self.next);
        self.next += 1;
        Ok(())
    }

    fn finish(self) -> Result<(), PushError> {
        if self.variant {
            // `{variant = …}` and its key are below the list.
            self.at.set_field();
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
        self.at.set_field();
        Ok(())
    }

    fn finish(self) -> Result<(), PushError> {
        if self.variant {
            // `{variant = …}` and its key are below the table.
            self.at.set_field();
        }
        Ok(())
    }
}

impl ser::SerializeMap for Fields<'_> {
    type Ok = ();
    type Error = PushError;

    /// A map's key is user data, pushed as it is (not from the field-name cache).
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), PushError> {
        key.serialize(MapKey(self.at.tape))
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
        self.at.tape.borrow_mut().field(key);
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
struct MapKey<'a>(&'a RefCell<Tape>);

impl MapKey<'_> {
    fn text(self, text: &str) -> Result<(), PushError> {
        self.0.borrow_mut().string(text);
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

impl ser::Serializer for MapKey<'_> {
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

#[cfg(test)]
#[allow(unsafe_code)] // the tests build tapes through the C API, as `call_entry` does
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use metafi_proto::api::Session;
    use metafi_proto::realtime::{ChannelMessageSend, Envelope, MatchmakerAdd, Message};
    use mlua::{Lua, Value};
    use serde::Serialize;
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::field_keys::FieldKeys;
    use crate::raw_push;

    /// `value` recorded through its `Serialize` and built (the new path), or an error.
    fn direct<T: Serialize>(lua: &Lua, keys: &FieldKeys, value: &T) -> mlua::Result<Value> {
        let tape = RefCell::new(Tape::default());
        record(value, &tape).map_err(|e| mlua::Error::runtime(e.to_string()))?;
        // SAFETY: `exec_raw` runs the closure in a protected call on the VM's state; the tape
        // holds one value.
        unsafe {
            lua.exec_raw::<Value>((), |state| {
                (*tape.as_ptr()).build(state, Some(keys));
            })
        }
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

    /// A string field serialized under the field's own `catch_unwind`: a `Serialize` may run
    /// any code around the serializer's calls, and a Lua error raised in one (out of memory
    /// at the cap) would abort the process there.
    struct Guarded(String);

    impl Serialize for Guarded {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.serialize_str(&self.0)))
                .unwrap_or_else(|_| Err(ser::Error::custom("unwound")))
        }
    }

    /// Regression: the serializer pushed each value from inside the `Serialize` calls, so at
    /// the VM's memory cap "not enough memory" unwound through frames it does not own (here:
    /// aborted the process). Now nothing Lua runs under them; the build fails on its own, as a
    /// Lua error of its protected call, and the VM builds again once the garbage is collected.
    #[test]
    fn a_message_past_the_memory_cap_fails_as_a_lua_error_outside_its_serialize() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        lua.gc_collect().unwrap();
        lua.set_memory_limit(lua.used_memory() + (1 << 20)).unwrap();
        let big: Vec<Guarded> = (0..64)
            .map(|i| Guarded(format!("{i:05}{}", "x".repeat(32 << 10))))
            .collect();
        match direct(&lua, &keys, &big) {
            Err(mlua::Error::MemoryError(_)) => {}
            other => panic!("expected a memory error, got {other:?}"),
        }
        lua.gc_collect().unwrap();
        let small: Vec<Guarded> = (0..2).map(|i| Guarded(i.to_string())).collect();
        let shown: String = crate::test_support::show_sorted(&lua)
            .call(direct(&lua, &keys, &small).unwrap())
            .unwrap();
        assert_eq!(shown, "{1=string:0,2=string:1}");
    }

    /// `value` recorded and built on `tape`, a tape kept across calls as `call_entry` keeps
    /// one per VM, and printed.
    fn built_on<T: Serialize>(
        lua: &Lua,
        keys: &FieldKeys,
        tape: &RefCell<Tape>,
        value: &T,
    ) -> mlua::Result<String> {
        tape.borrow_mut().clear();
        record(value, tape).map_err(|e| mlua::Error::runtime(e.to_string()))?;
        // SAFETY: as in `direct`.
        let table = unsafe {
            lua.exec_raw::<Value>((), |state| {
                (*tape.as_ptr()).build(state, Some(keys));
            })
        }?;
        crate::test_support::show_sorted(lua).call(table)
    }

    #[derive(Serialize)]
    struct Request {
        account: Account,
        create: Option<bool>,
        username: String,
    }

    /// A message of a shape seen before is built by that shape's constructor (one per shape
    /// and VM), to the tables its JSON gives: values in their fields, a `null` field absent
    /// (a key without a value in the template, which `pairs` does not visit), an empty map
    /// field an empty table. Lists and map fields with entries are built operation by
    /// operation, to the same tables.
    #[test]
    fn messages_of_one_shape_share_a_constructor_and_give_the_tables_of_their_json() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let tape = RefCell::new(Tape::default());
        let request = |id: &str, create: Option<bool>| Request {
            account: Account {
                id: id.into(),
                vars: HashMap::new(),
            },
            create,
            username: "name".into(),
        };
        for (value, create) in [("a", Some(true)), ("b", None), ("c", Some(false))] {
            let value = request(value, create);
            let shown = built_on(&lua, &keys, &tape, &value).unwrap();
            let theirs: String = crate::test_support::show_sorted(&lua)
                .call(through_json(&lua, &keys, &value))
                .unwrap();
            assert_eq!(shown, theirs);
        }
        assert_eq!(tape.borrow().templates(), 1);
        let session = Session {
            created: true,
            token: "t".into(),
            refresh_token: "r".into(),
        };
        assert_eq!(
            built_on(&lua, &keys, &tape, &session).unwrap(),
            "{created=boolean:true,refresh_token=string:r,token=string:t}"
        );
        assert_eq!(tape.borrow().templates(), 2);
        // Entries in a map field, a list: no constructor, the same tables as their JSON.
        let mut with_vars = request("d", None);
        with_vars.account.vars.insert("region".into(), "eu".into());
        assert_eq!(
            built_on(&lua, &keys, &tape, &with_vars).unwrap(),
            "{account={id=string:d,vars={region=string:eu}},username=string:name}"
        );
        assert_eq!(
            built_on(&lua, &keys, &tape, &vec![session]).unwrap(),
            "{1={created=boolean:true,refresh_token=string:r,token=string:t}}"
        );
        assert_eq!(tape.borrow().templates(), 2);
    }

    /// At the VM's memory cap, a message of a shape with a constructor fails as a Lua error
    /// of the protected call (as one built operation by operation), and the same shape builds
    /// again once the garbage is collected.
    #[test]
    fn a_constructed_message_past_the_memory_cap_fails_as_a_lua_error() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let tape = RefCell::new(Tape::default());
        let session = |text: String| Session {
            created: false,
            token: text.clone(),
            refresh_token: text,
        };
        built_on(&lua, &keys, &tape, &session("small".into())).unwrap();
        assert_eq!(tape.borrow().templates(), 1);
        lua.gc_collect().unwrap();
        lua.set_memory_limit(lua.used_memory() + (1 << 20)).unwrap();
        match built_on(&lua, &keys, &tape, &session("x".repeat(600 << 10))) {
            Err(mlua::Error::MemoryError(_)) => {}
            other => panic!("expected a memory error, got {other:?}"),
        }
        lua.gc_collect().unwrap();
        // `created: false` is left out, as in its JSON: the shape of the first build.
        assert_eq!(
            built_on(&lua, &keys, &tape, &session("again".into())).unwrap(),
            "{refresh_token=string:again,token=string:again}"
        );
        assert_eq!(tape.borrow().templates(), 1);
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

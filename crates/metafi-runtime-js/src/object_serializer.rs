//! A hook's request or answer struct serialized straight into JavaScript values (serde
//! `Serializer` → QuickJS objects through its C API), with no `serde_json::Value` tree in
//! between.
//!
//! The engine used to make the JSON tree of each message (`HookMessage::to_json`: a `String`
//! per key, a `BTreeMap` per object) and then walk it ([`hook_value::build`]). Here the
//! struct's own `Serialize` drives the building, and the values are exactly the ones that
//! walk made from `serde_json::to_value` of the same struct:
//! - **keys**: every object key in `lowerCamelCase` (atoms from the VM's [`FieldNames`]; a
//!   struct field name, a `&'static str`, found by its address), except the keys inside map
//!   fields (`hooks::MAP_FIELDS`, decided by the *parent* key, whatever serializes there: a
//!   struct, a map, JSON), which stay as they are. A map in a renamed position (the realtime
//!   `Envelope` serializes as a map) has its keys renamed, as in the tree;
//! - **key order**: sorted by the proto (serialized) name, byte-wise, as the tree's `BTreeMap`
//!   held them (`Object.keys` and `JSON.stringify` show it); a key given twice keeps its last
//!   value, in its sorted place;
//! - **values**: `None`, `()` and non-finite floats `null` (kept as properties); integers that
//!   fit an `i32` as integers, others (int64, uint64) as doubles; floats as doubles; bytes a
//!   list of numbers; enums as `serde_json` writes them (`"Variant"`, `{Variant: …}`); map keys
//!   that are numbers or booleans as their text; what `serde_json` refuses (a key that is not a
//!   string, an integer past 64 bits) an error.
//!
//! An object's properties wait on a stack kept per VM (`FieldNames::scratch`) until the
//! object's last one is known, then are sorted and *defined* on a new object, as `JSON.parse`
//! creates properties (see `hook_value.rs`).

// Every value here is made with QuickJS's C API on the live context `build` was given; each one
// is owned by exactly one `Owned`, `Entry` or `Items` (which free it if the building stops) until
// it is handed to its parent object or array, or to the caller.
#![allow(unsafe_code)]

use std::fmt;
use std::mem::ManuallyDrop;

use metafi_runtime::hooks::MAP_FIELDS;
use rquickjs::{Ctx, Value, qjs};
use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::hook_value::{FieldNames, Order, SIGNATURE_START, sign, unencodable};

/// `message` as the JavaScript value a hook sees (see the module's note).
pub(crate) fn build<'js>(
    ctx: &Ctx<'js>,
    names: &FieldNames,
    message: &dyn erased_serde::Serialize,
) -> rquickjs::Result<Value<'js>> {
    let serializer = ObjectSerializer {
        ctx: ctx.as_raw().as_ptr(),
        names,
        rename: true,
    };
    let start = serializer.start();
    let built = message.serialize(serializer);
    // A `Serialize` that failed (or forgot an object it began) leaves nothing behind.
    names.scratch.borrow_mut().truncate(start);
    match built {
        // SAFETY: an owned value of `ctx`'s runtime.
        Ok(value) => Ok(unsafe { Value::from_raw(ctx.clone(), value.into_raw()) }),
        Err(BuildError::Exception) => Err(rquickjs::Error::Exception),
        Err(BuildError::Unencodable(why)) => Err(unencodable(&why)),
    }
}

/// Why a value could not be built.
#[derive(Debug)]
enum BuildError {
    /// QuickJS could not make a value (out of memory): the exception is pending in the context.
    Exception,
    /// What `serde_json::to_value` refuses too, or a `Serialize` that failed.
    Unencodable(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Exception => f.write_str("out of memory"),
            BuildError::Unencodable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for BuildError {}

impl ser::Error for BuildError {
    fn custom<T: fmt::Display>(msg: T) -> BuildError {
        BuildError::Unencodable(msg.to_string())
    }
}

/// One reference on a value, freed unless handed on ([`Owned::into_raw`]).
struct Owned {
    ctx: *mut qjs::JSContext,
    value: qjs::JSValue,
}

impl Owned {
    /// Takes `value`, or reports the pending exception `JS_EXCEPTION` stands for.
    fn new(ctx: *mut qjs::JSContext, value: qjs::JSValue) -> Result<Owned, BuildError> {
        // SAFETY: only reads the tag.
        if unsafe { qjs::JS_IsException(value) } {
            return Err(BuildError::Exception);
        }
        Ok(Owned { ctx, value })
    }

    fn into_raw(self) -> qjs::JSValue {
        ManuallyDrop::new(self).value
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the one reference this holds, on a value of the live context.
        unsafe { qjs::JS_FreeValue(self.ctx, self.value) };
    }
}

/// A property of an object being built: its key as serialized (the sort key), the atom it is
/// defined by (`owned`: a reference this entry holds), and its value (a reference this entry
/// holds until [`Entry::take_value`]).
pub(crate) struct Entry {
    ctx: *mut qjs::JSContext,
    key: Key,
    atom: qjs::JSAtom,
    owned: bool,
    value: qjs::JSValue,
}

impl Entry {
    fn take_value(&mut self) -> qjs::JSValue {
        std::mem::replace(&mut self.value, qjs::JS_UNDEFINED)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: the references this entry holds, on values of the live context.
        unsafe {
            qjs::JS_FreeValue(self.ctx, self.value);
            if self.owned {
                qjs::JS_FreeAtom(self.ctx, self.atom);
            }
        }
    }
}

/// A key as serialized: a struct field or variant name, or a map key's text.
enum Key {
    Static(&'static str),
    Text(String),
}

impl Key {
    fn as_str(&self) -> &str {
        match self {
            Key::Static(name) => name,
            Key::Text(text) => text,
        }
    }
}

/// A struct field name's address and length (`(0, 0)` for a map key's text).
fn static_address(key: &Key) -> (usize, usize) {
    match key {
        Key::Static(name) => (name.as_ptr() as usize, name.len()),
        Key::Text(_) => (0, 0),
    }
}

/// A signature of the keys' addresses when every key is a struct field name (FNV-1a).
fn static_names(entries: &[Entry]) -> Option<u64> {
    entries
        .iter()
        .try_fold(SIGNATURE_START, |signature, entry| match entry.key {
            Key::Static(name) => {
                let mixed = (signature ^ name.as_ptr() as u64).wrapping_mul(0x0100_0000_01b3);
                Some((mixed ^ name.len() as u64).wrapping_mul(0x0100_0000_01b3))
            }
            Key::Text(_) => None,
        })
}

/// Builds one value; `rename`: object keys in `lowerCamelCase` (false inside a map field).
#[derive(Clone, Copy)]
struct ObjectSerializer<'a> {
    ctx: *mut qjs::JSContext,
    names: &'a FieldNames,
    rename: bool,
}

impl<'a> ObjectSerializer<'a> {
    fn owned(self, value: qjs::JSValue) -> Result<Owned, BuildError> {
        Owned::new(self.ctx, value)
    }

    fn null(self) -> Result<Owned, BuildError> {
        self.owned(qjs::JS_NULL)
    }

    /// An integer as the tree's walk makes one: an `i32` as an integer, others as a double.
    fn integer(self, v: i64) -> Result<Owned, BuildError> {
        match i32::try_from(v) {
            Ok(v) => self.owned(qjs::JS_MKVAL(qjs::JS_TAG_INT, v)),
            Err(_) => self.owned(qjs::JS_NewFloat64(v as f64)),
        }
    }

    fn string(self, s: &str) -> Result<Owned, BuildError> {
        // SAFETY: valid UTF-8 of `s.len()` bytes; the context is live.
        self.owned(unsafe { qjs::JS_NewStringLen(self.ctx, s.as_ptr().cast(), s.len() as _) })
    }

    /// The serializer of the value under `key`: no renaming below a map field.
    fn below(self, key: &str) -> ObjectSerializer<'a> {
        ObjectSerializer {
            rename: self.rename && !MAP_FIELDS.contains(&key),
            ..self
        }
    }

    /// Where the next object's properties start on the scratch stack.
    fn start(self) -> usize {
        self.names.scratch.borrow().len()
    }

    /// Pushes the property `key: value` of the object being built, `value` made by `make`
    /// with the serializer the key decides (no renaming below a map field).
    fn property(
        self,
        key: Key,
        make: impl FnOnce(ObjectSerializer<'a>) -> Result<Owned, BuildError>,
    ) -> Result<(), BuildError> {
        let (atom, owned, map_field) = match (&key, self.rename) {
            // SAFETY (both): the context is live.
            (Key::Static(name), true) => unsafe { self.names.field_atom(self.ctx, name) },
            (key, rename) => {
                let (atom, owned) = unsafe { self.names.atom(self.ctx, key.as_str(), rename) };
                (atom, owned, rename && MAP_FIELDS.contains(&key.as_str()))
            }
        };
        if atom == qjs::JS_ATOM_NULL {
            return Err(BuildError::Exception);
        }
        let child = ObjectSerializer {
            rename: self.rename && !map_field,
            ..self
        };
        // From here the entry holds the atom, and frees it if the value fails.
        let mut entry = Entry {
            ctx: self.ctx,
            key,
            atom,
            owned,
            value: qjs::JS_UNDEFINED,
        };
        entry.value = make(child)?.into_raw();
        self.names.scratch.borrow_mut().push(entry);
        Ok(())
    }

    /// The object of the properties pushed since `start` (taken off the stack, also on
    /// failure): sorted by key, of equal keys the last one, each defined by its atom.
    ///
    /// An object whose keys are all struct field names (a derived `Serialize`: the same
    /// names at the same addresses in the same order every time) is defined in the order
    /// recorded the first time that sequence was seen ([`FieldNames::order`]), without
    /// comparing keys or looking its shapes up again.
    fn object(self, start: usize) -> Result<Owned, BuildError> {
        let mut scratch = self.names.scratch.borrow_mut();
        let entries = &mut scratch[start..];
        let statics = self.rename.then(|| static_names(entries)).flatten();
        let known = statics.and_then(|signature| {
            let names = entries.iter().map(|e| static_address(&e.key));
            self.names.order(signature, names)
        });
        if let Some(order) = known {
            return self.define_in(scratch, start, order);
        }
        // The first time: where each property goes, recorded when every key is a distinct
        // cached struct field name.
        let statics = statics.filter(|_| entries.len() <= Order::MAX);
        let mut at: Vec<u8> = match statics {
            Some(_) => (0..entries.len() as u8).collect(),
            None => Vec::new(),
        };
        if !entries.is_sorted_by(|a, b| a.key.as_str() <= b.key.as_str()) {
            // Stable, as the entries' sort: of equal keys the last serialized stays last.
            at.sort_by(|&a, &b| {
                let (a, b) = (&entries[usize::from(a)], &entries[usize::from(b)]);
                a.key.as_str().cmp(b.key.as_str())
            });
            entries.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
        }
        let record = statics
            .filter(|_| {
                entries.iter().all(|e| !e.owned)
                    && entries
                        .windows(2)
                        .all(|w| w[0].key.as_str() != w[1].key.as_str())
            })
            .map(|signature| {
                let mut names: Vec<_> = vec![(0, 0); entries.len()];
                let mut order = Order {
                    len: entries.len() as u8,
                    at: [0; Order::MAX],
                };
                for (sorted, (&from, entry)) in at.iter().zip(entries.iter()).enumerate() {
                    names[usize::from(from)] = static_address(&entry.key);
                    order.at[sorted] = from;
                }
                (signature, names.into_boxed_slice(), order)
            });
        let object = match self.new_object() {
            Ok(object) => object,
            Err(e) => {
                scratch.truncate(start);
                return Err(e);
            }
        };
        // The key sequence's shape signature, while every key is a cached field name.
        let mut signature = self.rename.then_some(SIGNATURE_START);
        let mut defined = 0;
        for i in 0..entries.len() {
            if entries
                .get(i + 1)
                .is_some_and(|next| next.key.as_str() == entries[i].key.as_str())
            {
                continue;
            }
            let entry = &mut entries[i];
            signature = signature
                .filter(|_| !entry.owned)
                .map(|s| sign(s, entry.atom));
            defined = self.define_entry(&object, entry);
            if defined < 0 {
                break;
            }
        }
        let keep = signature
            .filter(|s| defined >= 0 && !self.names.shapes_seen(*s))
            .map(|s| {
                let mut atoms: Vec<_> = entries.iter().map(|e| e.atom).collect();
                // Equal keys are neighbours with one atom.
                atoms.dedup();
                (s, atoms)
            });
        scratch.truncate(start);
        drop(scratch);
        if defined < 0 {
            return Err(BuildError::Exception);
        }
        if let Some((signature, atoms)) = keep {
            // SAFETY: the context is live; the atoms are held by the cache (none was owned).
            unsafe { self.names.keep_signed_shapes(self.ctx, signature, &atoms) };
        }
        if let Some((signature, names, order)) = record {
            // Recorded after its shapes are kept: a known order skips that step.
            self.names.keep_order(signature, names, order);
        }
        Ok(object)
    }

    /// A new plain object (`{}`) of this context.
    fn new_object(&self) -> Result<Owned, BuildError> {
        // SAFETY: the context is live.
        self.owned(unsafe { qjs::JS_NewObject(self.ctx) })
    }

    /// Defines `entry` on `object` as a plain data property, handing its value over; QuickJS's
    /// result (negative: an exception is pending).
    fn define_entry(&self, object: &Owned, entry: &mut Entry) -> std::ffi::c_int {
        // SAFETY: takes the value's reference, also on failure; the atom is live.
        unsafe {
            qjs::JS_DefinePropertyValue(
                self.ctx,
                object.value,
                entry.atom,
                entry.take_value(),
                qjs::JS_PROP_C_W_E as _,
            )
        }
    }

    /// The object of the properties pushed since `start` (taken off the stack, also on
    /// failure), defined in the recorded `order` (distinct keys, shapes kept).
    fn define_in(
        self,
        mut scratch: std::cell::RefMut<'_, Vec<Entry>>,
        start: usize,
        order: Order,
    ) -> Result<Owned, BuildError> {
        let object = match self.new_object() {
            Ok(object) => object,
            Err(e) => {
                scratch.truncate(start);
                return Err(e);
            }
        };
        let entries = &mut scratch[start..];
        let mut defined = 0;
        for &from in &order.at[..usize::from(order.len)] {
            let entry = &mut entries[usize::from(from)];
            defined = self.define_entry(&object, entry);
            if defined < 0 {
                break;
            }
        }
        scratch.truncate(start);
        if defined < 0 {
            return Err(BuildError::Exception);
        }
        Ok(object)
    }

    /// `{variant: value}`, as `serde_json` writes a variant with data.
    fn variant(
        self,
        variant: &'static str,
        make: impl FnOnce(ObjectSerializer<'a>) -> Result<Owned, BuildError>,
    ) -> Result<Owned, BuildError> {
        let start = self.start();
        self.property(Key::Static(variant), make)?;
        self.object(start)
    }
}

impl<'a> ser::Serializer for ObjectSerializer<'a> {
    type Ok = Owned;
    type Error = BuildError;
    type SerializeSeq = Items<'a>;
    type SerializeTuple = Items<'a>;
    type SerializeTupleStruct = Items<'a>;
    type SerializeTupleVariant = Items<'a>;
    type SerializeMap = Fields<'a>;
    type SerializeStruct = Fields<'a>;
    type SerializeStructVariant = Fields<'a>;

    fn serialize_bool(self, v: bool) -> Result<Owned, BuildError> {
        self.owned(if v { qjs::JS_TRUE } else { qjs::JS_FALSE })
    }

    fn serialize_i8(self, v: i8) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_i64(self, v: i64) -> Result<Owned, BuildError> {
        self.integer(v)
    }

    /// As `serde_json`: an `i128` that fits 64 bits as that integer, else an error.
    fn serialize_i128(self, v: i128) -> Result<Owned, BuildError> {
        match (u64::try_from(v), i64::try_from(v)) {
            (Ok(v), _) => self.serialize_u64(v),
            (_, Ok(v)) => self.integer(v),
            _ => Err(BuildError::Unencodable("number out of range".into())),
        }
    }

    fn serialize_u8(self, v: u8) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<Owned, BuildError> {
        self.integer(i64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<Owned, BuildError> {
        match i64::try_from(v) {
            Ok(v) => self.integer(v),
            Err(_) => self.owned(qjs::JS_NewFloat64(v as f64)),
        }
    }

    fn serialize_u128(self, v: u128) -> Result<Owned, BuildError> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => Err(BuildError::Unencodable("number out of range".into())),
        }
    }

    /// As `serde_json`: the `f32`'s value as a double.
    fn serialize_f32(self, v: f32) -> Result<Owned, BuildError> {
        self.serialize_f64(f64::from(v))
    }

    /// A float JSON cannot hold (NaN, ±∞) is `null`, as in `serde_json::to_value`.
    fn serialize_f64(self, v: f64) -> Result<Owned, BuildError> {
        if v.is_finite() {
            self.owned(qjs::JS_NewFloat64(v))
        } else {
            self.null()
        }
    }

    fn serialize_char(self, v: char) -> Result<Owned, BuildError> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<Owned, BuildError> {
        self.string(v)
    }

    /// Bytes are a list of numbers, as `serde_json` writes them.
    fn serialize_bytes(self, v: &[u8]) -> Result<Owned, BuildError> {
        let mut items = self.serialize_seq(Some(v.len()))?;
        for byte in v {
            ser::SerializeSeq::serialize_element(&mut items, byte)?;
        }
        ser::SerializeSeq::end(items)
    }

    fn serialize_none(self) -> Result<Owned, BuildError> {
        self.null()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Owned, BuildError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<Owned, BuildError> {
        self.null()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<Owned, BuildError> {
        self.null()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Owned, BuildError> {
        self.string(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Owned, BuildError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Owned, BuildError> {
        self.variant(variant, |inner| value.serialize(inner))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Items<'a>, BuildError> {
        Ok(Items {
            at: self,
            values: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Items<'a>, BuildError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Items<'a>, BuildError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Items<'a>, BuildError> {
        let mut items = self.below(variant).serialize_seq(Some(len))?;
        items.variant = Some((variant, self));
        Ok(items)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Fields<'a>, BuildError> {
        Ok(Fields {
            at: self,
            start: self.start(),
            key: None,
            variant: None,
            done: false,
        })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Fields<'a>, BuildError> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Fields<'a>, BuildError> {
        let mut fields = self.below(variant).serialize_map(Some(len))?;
        fields.variant = Some((variant, self));
        Ok(fields)
    }
}

/// The items of a list being built; `variant`: the list is the value of `{variant: …}`, built
/// by the serializer given with it when the list ends.
struct Items<'a> {
    at: ObjectSerializer<'a>,
    /// One reference each, freed if the list is dropped unfinished.
    values: Vec<qjs::JSValue>,
    variant: Option<(&'static str, ObjectSerializer<'a>)>,
}

impl Items<'_> {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), BuildError> {
        let value = value.serialize(self.at)?;
        self.values.push(value.into_raw());
        Ok(())
    }

    fn finish(mut self) -> Result<Owned, BuildError> {
        let values = std::mem::take(&mut self.values);
        let ctx = self.at.ctx;
        let Ok(count) = i32::try_from(values.len()) else {
            for value in values {
                // SAFETY: each value's one reference.
                unsafe { qjs::JS_FreeValue(ctx, value) };
            }
            // SAFETY: the context is live; throws a RangeError and answers JS_EXCEPTION.
            return self
                .at
                .owned(unsafe { qjs::JS_ThrowRangeError(ctx, c"array too long".as_ptr()) });
        };
        // SAFETY: takes ownership of the values, also on failure.
        let list = self
            .at
            .owned(unsafe { qjs::JS_NewArrayFrom(ctx, count, values.as_ptr()) })?;
        match self.variant {
            Some((variant, outer)) => outer.variant(variant, |_| Ok(list)),
            None => Ok(list),
        }
    }
}

impl Drop for Items<'_> {
    fn drop(&mut self) {
        for &value in &self.values {
            // SAFETY: each value's one reference, on the live context.
            unsafe { qjs::JS_FreeValue(self.at.ctx, value) };
        }
    }
}

/// The four list-like serde traits: each element is the list's next item.
macro_rules! items_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<'a> ser::$trait for Items<'a> {
            type Ok = Owned;
            type Error = BuildError;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), BuildError> {
                self.item(value)
            }

            fn end(self) -> Result<Owned, BuildError> {
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

/// The properties of an object being built, on the scratch stack from `start` (taken off if
/// the object is dropped unfinished); `key`: a map's key waiting for its value; `variant` as
/// in [`Items`].
struct Fields<'a> {
    at: ObjectSerializer<'a>,
    start: usize,
    key: Option<String>,
    variant: Option<(&'static str, ObjectSerializer<'a>)>,
    done: bool,
}

impl Fields<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result<(), BuildError> {
        self.at.property(key, |inner| value.serialize(inner))
    }

    fn finish(mut self) -> Result<Owned, BuildError> {
        self.done = true;
        let object = self.at.object(self.start)?;
        match self.variant {
            Some((variant, outer)) => outer.variant(variant, |_| Ok(object)),
            None => Ok(object),
        }
    }
}

impl Drop for Fields<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Ok(mut scratch) = self.at.names.scratch.try_borrow_mut()
        {
            scratch.truncate(self.start);
        }
    }
}

impl<'a> ser::SerializeMap for Fields<'a> {
    type Ok = Owned;
    type Error = BuildError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), BuildError> {
        self.key = Some(key.serialize(MapKey)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), BuildError> {
        let key = self.key.take().ok_or_else(|| {
            BuildError::Unencodable("a map value was serialized before its key".into())
        })?;
        self.field(Key::Text(key), value)
    }

    fn end(self) -> Result<Owned, BuildError> {
        self.finish()
    }
}

impl<'a> ser::SerializeStruct for Fields<'a> {
    type Ok = Owned;
    type Error = BuildError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), BuildError> {
        self.field(Key::Static(key), value)
    }

    fn end(self) -> Result<Owned, BuildError> {
        self.finish()
    }
}

impl<'a> ser::SerializeStructVariant for Fields<'a> {
    type Ok = Owned;
    type Error = BuildError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), BuildError> {
        self.field(Key::Static(key), value)
    }

    fn end(self) -> Result<Owned, BuildError> {
        self.finish()
    }
}

/// A map key's text, as `serde_json` writes one: strings as they are, integers, floats,
/// booleans and chars as their text, unit variants by name; anything else is an error there
/// too.
struct MapKey;

impl MapKey {
    fn refused() -> BuildError {
        BuildError::Unencodable("key must be a string".into())
    }

    fn non_finite() -> BuildError {
        BuildError::Unencodable("float key must be finite (got NaN or +/-inf)".into())
    }
}

macro_rules! key_as_text {
    ($($method:ident $ty:ty;)*) => {$(
        fn $method(self, v: $ty) -> Result<String, BuildError> {
            Ok(v.to_string())
        }
    )*};
}

impl ser::Serializer for MapKey {
    type Ok = String;
    type Error = BuildError;
    type SerializeSeq = Impossible<String, BuildError>;
    type SerializeTuple = Impossible<String, BuildError>;
    type SerializeTupleStruct = Impossible<String, BuildError>;
    type SerializeTupleVariant = Impossible<String, BuildError>;
    type SerializeMap = Impossible<String, BuildError>;
    type SerializeStruct = Impossible<String, BuildError>;
    type SerializeStructVariant = Impossible<String, BuildError>;

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

    /// As `serde_json`: a finite float's shortest text (of the `f32` itself), a NaN or ±∞
    /// key refused.
    fn serialize_f32(self, v: f32) -> Result<String, BuildError> {
        if !v.is_finite() {
            return Err(MapKey::non_finite());
        }
        serde_json::to_string(&v).map_err(|e| BuildError::Unencodable(e.to_string()))
    }

    fn serialize_f64(self, v: f64) -> Result<String, BuildError> {
        if !v.is_finite() {
            return Err(MapKey::non_finite());
        }
        serde_json::to_string(&v).map_err(|e| BuildError::Unencodable(e.to_string()))
    }

    fn serialize_str(self, v: &str) -> Result<String, BuildError> {
        Ok(v.to_owned())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_none(self) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_unit(self) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, BuildError> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, BuildError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, BuildError> {
        Err(MapKey::refused())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, BuildError> {
        Err(MapKey::refused())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use metafi_proto::api;
    use metafi_proto::realtime::{ChannelMessageSend, Envelope, MatchmakerAdd, Message};
    use rquickjs::{Context, Function, Runtime};
    use serde::de::DeserializeOwned;
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::hook_value;

    /// `value` built by the old path (`serde_json::to_value`, then the tree's walk) and by this
    /// serializer: the script sees the same; returns `JSON.stringify` of it.
    fn same<T: Serialize>(value: &T) -> String {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        // (old, new) of each view, compared once the cache is released: a failed comparison
        // inside the context would leave the VM's objects alive when the runtime goes.
        let mut views = Vec::new();
        context.with(|ctx| {
            let show: Function<'_> = ctx.eval(crate::test_support::SHOW).unwrap();
            let stringify: Function<'_> = ctx.eval("JSON.stringify").unwrap();
            let json = serde_json::to_value(value).unwrap();
            // Twice: the second time every name comes from the cache.
            for _ in 0..2 {
                let old = hook_value::build(&ctx, &names, &json, true).unwrap();
                let new = build(&ctx, &names, value).unwrap();
                for view in [&show, &stringify] {
                    let seen: (String, String) = (
                        view.call((old.clone(),)).unwrap(),
                        view.call((new.clone(),)).unwrap(),
                    );
                    views.push(seen);
                }
            }
            assert!(names.scratch.borrow().is_empty());
            names.release(&ctx);
        });
        for (old, new) in &views {
            assert_eq!(new, old);
        }
        views.pop().map(|(_, new)| new).unwrap_or_default()
    }

    /// A message of type `T` read from `json`, as an edge would have it.
    fn message<T: DeserializeOwned>(json: Json) -> T {
        serde_json::from_value(json).unwrap()
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
        Shaped {
            field_x: i32,
            y: Option<i32>,
        },
        #[serde(rename = "vars")]
        MapNamed {
            inner_key: i32,
        },
    }

    /// Bytes through `serialize_bytes`, which `Vec<u8>` does not call.
    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    /// A map that gives a key twice (the tree keeps the last value).
    struct Twice;

    impl Serialize for Twice {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            map.serialize_entry("b_key", &1)?;
            map.serialize_entry("a_key", &2)?;
            map.serialize_entry("b_key", &3)?;
            map.end()
        }
    }

    /// Fields declared out of order, a field and its camelCase spelling, the field names
    /// that are map fields, numbers of every width, and every serde shape.
    #[derive(Serialize)]
    struct Everything {
        username: String,
        account: Account,
        accounts: Vec<Account>,
        create: Option<bool>,
        cleared: Option<bool>,
        refresh_token: String,
        #[serde(rename = "refreshToken")]
        refresh_token_camel: String,
        big: i64,
        small_negative: i64,
        past_i64: u64,
        at_i32_max: u32,
        past_i32: u32,
        wide: i128,
        ratio: f64,
        whole_float: f64,
        negative_zero: f64,
        single: f32,
        not_a_number: f64,
        kinds: Vec<Kind>,
        bytes: Bytes,
        empty_list: Vec<String>,
        empty_map: HashMap<String, i32>,
        numbered: BTreeMap<i64, bool>,
        float_keyed: BTreeMap<String, Json>,
        renamed_map: HashMap<String, i32>,
        string_properties: HashMap<String, String>,
        numeric_properties: HashMap<String, f64>,
        metadata: Json,
        letter: char,
        nothing: (),
        holes: Vec<Option<i32>>,
        twice: Twice,
        tuple: (i32, String),
    }

    fn everything() -> Everything {
        Everything {
            username: String::new(),
            account: Account {
                id: "device-1".into(),
                vars: HashMap::from([
                    ("region_name".into(), "eu".into()),
                    ("account".into(), "x".into()),
                    ("10".into(), "ten".into()),
                    ("2".into(), "two".into()),
                    ("__proto__".into(), "own".into()),
                ]),
            },
            accounts: vec![
                Account {
                    id: "a".into(),
                    vars: HashMap::new(),
                },
                Account {
                    id: "b".into(),
                    vars: HashMap::from([("k_k".into(), "v".into())]),
                },
            ],
            create: Some(false),
            cleared: None,
            refresh_token: "r".into(),
            refresh_token_camel: "c".into(),
            big: 9_007_199_254_740_993,
            small_negative: -3,
            past_i64: u64::MAX,
            at_i32_max: i32::MAX as u32,
            past_i32: i32::MAX as u32 + 1,
            wide: -(1 << 40),
            ratio: -0.5,
            whole_float: 2.0,
            negative_zero: -0.0,
            single: 0.1,
            not_a_number: f64::NAN,
            kinds: vec![
                Kind::Plain,
                Kind::Wrapped(7),
                Kind::Pair(1, "two".into()),
                Kind::Shaped {
                    field_x: 1,
                    y: None,
                },
                Kind::MapNamed { inner_key: 3 },
            ],
            bytes: Bytes(&[0, 1, 255]),
            empty_list: Vec::new(),
            empty_map: HashMap::new(),
            numbered: BTreeMap::from([(-1, true), (20, false), (3, true)]),
            float_keyed: BTreeMap::from([("z_z".into(), json!({"deep_key": [1.5, null]}))]),
            renamed_map: HashMap::from([("snake_key".into(), 1), ("other_key".into(), 2)]),
            string_properties: HashMap::from([("game_mode".into(), "ranked".into())]),
            numeric_properties: HashMap::from([("skill_level".into(), 12.5)]),
            metadata: json!({"nested_key": {"list": [1, null, "x"], "null_key": null}, "n": 1.5}),
            letter: 'é',
            nothing: (),
            holes: vec![Some(1), None, Some(3)],
            twice: Twice,
            tuple: (1, "t".into()),
        }
    }

    #[test]
    fn every_kind_of_value_is_what_the_json_tree_gave() {
        let text = same(&everything());
        // The cases the comparison rests on, spelled out: keys sorted by proto name, renamed
        // outside map fields (also in a map that is not a map field, and in a variant's
        // fields), kept inside them (all the way down); `null` kept; int64 as a double.
        for part in [
            r#"{"account":{"id":"device-1","vars":{"2":"two","10":"ten","__proto__":"own","account":"x","region_name":"eu"}},"accounts":"#,
            r#""big":9007199254740992,"#,
            r#""cleared":null,"#,
            r#""kinds":["Plain",{"Wrapped":7},{"Pair":[1,"two"]},{"Shaped":{"fieldX":1,"y":null}},{"vars":{"inner_key":3}}],"#,
            r#""metadata":{"n":1.5,"nested_key":{"list":[1,null,"x"],"null_key":null}},"#,
            r#""notANumber":null,"#,
            r#""numericProperties":{"skill_level":12.5},"#,
            r#""pastI64":18446744073709552000,"#,
            r#""refreshToken":"r","#,
            r#""renamedMap":{"otherKey":2,"snakeKey":1},"#,
            r#""twice":{"aKey":2,"bKey":3},"#,
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
    }

    #[test]
    fn every_realtime_message_is_what_the_json_tree_gave() {
        // Every message of the envelope, empty, then some with their fields set.
        for name in [
            "channel",
            "channel_join",
            "channel_leave",
            "channel_message",
            "channel_message_ack",
            "channel_message_send",
            "channel_message_update",
            "channel_message_remove",
            "channel_presence_event",
            "error",
            "match",
            "match_create",
            "match_data",
            "match_data_send",
            "match_join",
            "match_leave",
            "match_presence_event",
            "matchmaker_add",
            "matchmaker_matched",
            "matchmaker_remove",
            "matchmaker_ticket",
            "notifications",
            "rpc",
            "status",
            "status_follow",
            "status_presence_event",
            "status_unfollow",
            "status_update",
            "stream_data",
            "stream_presence_event",
            "ping",
            "pong",
            "party",
            "party_create",
            "party_join",
            "party_leave",
            "party_promote",
            "party_leader",
            "party_accept",
            "party_remove",
            "party_close",
            "party_join_request_list",
            "party_join_request",
            "party_matchmaker_add",
            "party_matchmaker_remove",
            "party_matchmaker_ticket",
            "party_data",
            "party_data_send",
            "party_presence_event",
            "party_update",
        ] {
            let envelope: Envelope = message(json!({"cid": "7", name: {}}));
            assert!(envelope.message.is_some(), "{name}");
            same(&envelope);
        }
        let text = same(&Envelope::new(
            "3",
            Message::ChannelMessageSend(ChannelMessageSend {
                channel_id: "2...room".into(),
                content: r#"{"hello":"world"}"#.into(),
            }),
        ));
        assert_eq!(
            text,
            r#"{"channelMessageSend":{"channelId":"2...room","content":"{\"hello\":\"world\"}"},"cid":"3"}"#
        );
        same(&Envelope::new(
            "",
            Message::MatchmakerAdd(MatchmakerAdd {
                min_count: 2,
                max_count: 4,
                query: "*".into(),
                string_properties: HashMap::from([("game_mode".into(), "ranked".into())]),
                numeric_properties: HashMap::from([("skill_level".into(), 12.5)]),
                ..MatchmakerAdd::default()
            }),
        ));
        for filled in [
            json!({"cid": "1", "match_data_send": {"match_id": "m.n", "op_code": 3, "data": "aGk=", "presences": [{"user_id": "u", "session_id": "s", "username": "n"}], "reliable": true}}),
            json!({"cid": "1", "rpc": {"id": "echo", "payload": "{}", "http_key": ""}}),
            json!({"cid": "1", "status_update": {"status": "busy"}}),
            json!({"cid": "1", "channel_join": {"target": "room", "type": 1, "persistence": true, "hidden": false}}),
            json!({"cid": "1", "party_create": {"open": true, "max_size": 4}}),
        ] {
            same(&message::<Envelope>(filled));
        }
    }

    #[test]
    fn the_api_answers_are_what_the_json_tree_gave() {
        macro_rules! empty {
            ($($ty:ident)*) => {$( same(&api::$ty::default()); )*};
        }
        empty!(
            AccountDevice User Users Account ChannelMessage ChannelMessageList Event Friend
            FriendList Group GroupList LeaderboardRecord LeaderboardRecordList Notification
            NotificationList Rpc AccountApple AccountFacebook AccountGoogle AccountSteam
            StorageObject StorageObjects StorageObjectList StorageObjectAcks
        );
        let session = same(&api::Session {
            created: true,
            token: "t".into(),
            refresh_token: "r".into(),
        });
        assert_eq!(
            session,
            r#"{"created":true,"refreshToken":"r","token":"t"}"#
        );
        same(&message::<api::Account>(json!({
            "user": {"id": "u", "username": "n", "metadata": "{\"a_b\":1}", "edge_count": 2,
                     "create_time": "2026-11-27T10:00:00Z", "online": true},
            "wallet": "{}", "email": "e@x", "devices": [{"id": "d", "vars": {"snake_case": "v"}}],
            "custom_id": "c"
        })));
        same(&message::<api::AccountDevice>(
            json!({"id": "d", "vars": {"region_name": "eu"}}),
        ));
        same(&message::<api::StorageObjects>(json!({"objects": [{
            "collection": "c", "key": "k", "user_id": "u", "value": "{\"x\":1}", "version": "v",
            "permission_read": 2, "permission_write": 1, "create_time": "2026-11-27T10:00:00Z"
        }]})));
        same(&message::<api::ChannelMessageList>(json!({"messages": [{
            "channel_id": "c", "message_id": "m", "code": 0, "sender_id": "s", "content": "{}",
            "persistent": true
        }], "next_cursor": "n"})));
    }

    /// Fields declared out of their sorted order, one of them a struct with a map field.
    #[derive(Serialize)]
    struct Late {
        zeta: i32,
        alpha_beta: String,
        mid: Account,
    }

    /// A struct that gives one field name twice (the tree keeps the last value).
    struct SameFieldTwice;

    impl Serialize for SameFieldTwice {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct;
            let mut object = s.serialize_struct("SameFieldTwice", 3)?;
            object.serialize_field("b", &1)?;
            object.serialize_field("a", &2)?;
            object.serialize_field("b", &3)?;
            object.end()
        }
    }

    #[test]
    fn a_structs_key_order_is_recorded_once_and_gives_the_sorted_keys_every_time() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        let late = Late {
            zeta: 1,
            alpha_beta: "x".into(),
            mid: Account {
                id: "d".into(),
                vars: HashMap::from([("k_1".to_owned(), "v".to_owned())]),
            },
        };
        let mut seen = Vec::new();
        context.with(|ctx| {
            let stringify: Function<'_> = ctx.eval("JSON.stringify").unwrap();
            for _ in 0..3 {
                for value in [&late as &dyn erased_serde::Serialize, &SameFieldTwice] {
                    let built = build(&ctx, &names, value).unwrap();
                    seen.push(stringify.call::<_, String>((built,)).unwrap());
                }
            }
            // `Late` and `Account` once each; not the map (its keys are text) nor the struct
            // that repeats a name.
            seen.push(names.orders_kept().to_string());
            names.release(&ctx);
        });
        let late = r#"{"alphaBeta":"x","mid":{"id":"d","vars":{"k_1":"v"}},"zeta":1}"#;
        let twice = r#"{"a":2,"b":3}"#;
        let expected: Vec<_> = [late, twice, late, twice, late, twice, "2"]
            .map(String::from)
            .into();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_value_json_refuses_is_an_error_and_leaves_nothing_behind() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            // Refused three levels down, after properties of the outer objects were pushed.
            let refused = json!({"a_a": 1, "b": {"c_c": 2}});
            #[derive(Serialize)]
            struct Outer {
                first: Json,
                second: BTreeMap<String, BTreeMap<(i32, i32), bool>>,
                third: u128,
            }
            let outer = Outer {
                first: refused,
                second: BTreeMap::from([("x".into(), BTreeMap::from([((1, 2), true)]))]),
                third: 0,
            };
            assert!(serde_json::to_value(&outer).is_err());
            let error = build(&ctx, &names, &outer).unwrap_err();
            assert!(
                error.to_string().contains("key must be a string"),
                "{error}"
            );
            assert!(names.scratch.borrow().is_empty());
            let error = build(&ctx, &names, &u128::MAX).unwrap_err();
            assert!(error.to_string().contains("number out of range"), "{error}");
            names.release(&ctx);
        });
    }
}

//! A before hook's result read straight from the JavaScript value into the request's own
//! type (a serde `Deserializer` over the value, through `HookMessage::read_same`), without the
//! `serde_json::Value` tree `hook_result::read` makes and the edge then deserializes.
//!
//! **Exact on success, and otherwise the old path.** The reader walks the value as
//! `hook_result::read` does — the same plain-data checks (`hook_result::plain`), the same item
//! budget, the same depth limit, `lowerCamelCase` keys to proto names except below a map field,
//! `undefined`/functions/symbols left out of objects and `null` in arrays, every property read
//! (getters run) in property order, ignored fields walked too — and hands the request type the
//! same serde calls a `serde_json::Value` of the tree would: a leaf (null, boolean, number,
//! string) *is* that `Value` (the call is forwarded to it), an object a map and an array a
//! sequence. Any failure — a value the walk would call unplain, a type the request does not
//! accept, a key the tree would have merged with another (a derive reports a duplicate
//! field), an exception — abandons the typed read: the caller clears what it left pending and
//! reads the value exactly as before (`hook_result::read`, or `JSON.stringify`), so the edge
//! reports it as it did. Serde calls this reader does not answer for objects and arrays (an
//! enum, bytes, a map key that is not a string) fail the same way.
//!
//! What differs on success is the order a map's keys reach the request type: property order
//! here, sorted in the tree. A derived struct and a `HashMap` do not depend on it (each field
//! is set once; a key given twice keeps its last value in both), nor does the realtime
//! `Envelope`'s reader.

// Properties are read through QuickJS's C API (`JS_GetProperty` by atom), as in
// `hook_result.rs`; each unsafe block uses values of the live context the reader was given.
#![allow(unsafe_code)]

use std::fmt;

use metafi_runtime::hooks::{MAP_FIELDS, proto_name};
use metafi_runtime::nk_api::ValueBudget;
use rquickjs::{Object, Type, Value, qjs};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::Value as Json;

use crate::hook_result::{MAX_DEPTH, OwnKeys, atom_text, number, plain};
use crate::hook_value::FieldNames;

/// Why the typed read was abandoned (never shown: the caller then reads the value as before).
#[derive(Debug)]
pub(crate) struct Abandoned(String);

impl fmt::Display for Abandoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Abandoned {}

impl de::Error for Abandoned {
    fn custom<T: fmt::Display>(msg: T) -> Abandoned {
        Abandoned(msg.to_string())
    }
}

fn abandon(why: &str) -> Abandoned {
    Abandoned(why.to_owned())
}

/// The budget and names one read shares across its values.
pub(crate) struct Reading<'a> {
    names: &'a FieldNames,
    budget: ValueBudget,
}

impl<'a> Reading<'a> {
    pub(crate) fn new(names: &'a FieldNames) -> Reading<'a> {
        Reading {
            names,
            budget: ValueBudget::default(),
        }
    }

    /// A deserializer over `value` (not `undefined` or `null`: the caller has handled them).
    pub(crate) fn deserializer<'r, 'js>(
        &'r mut self,
        value: Value<'js>,
    ) -> ValueDeserializer<'r, 'a, 'js> {
        ValueDeserializer {
            reading: self,
            value,
            rename: true,
            depth: 0,
        }
    }
}

/// One value of the result, at `depth` containers down; `rename`: its object keys are
/// `lowerCamelCase` spellings of proto names.
pub(crate) struct ValueDeserializer<'r, 'a, 'js> {
    reading: &'r mut Reading<'a>,
    value: Value<'js>,
    rename: bool,
    depth: usize,
}

/// What a value is, as the walk sees it.
enum Shape<'js> {
    Leaf(Json),
    Object(Object<'js>),
    Array(rquickjs::Array<'js>),
}

impl<'r, 'a, 'js> ValueDeserializer<'r, 'a, 'js> {
    /// The value's shape, or the walk's "unplain" as an error.
    fn shape(&mut self) -> Result<Shape<'js>, Abandoned> {
        let value = &self.value;
        let leaf = match value.type_of() {
            Type::Null => Json::Null,
            Type::Bool => value
                .as_bool()
                .map(Json::Bool)
                .ok_or_else(|| abandon("bool"))?,
            Type::Int => value
                .as_int()
                .map(Json::from)
                .ok_or_else(|| abandon("int"))?,
            Type::Float => value
                .as_float()
                .and_then(number)
                .ok_or_else(|| abandon("a number JSON.stringify prints apart"))?,
            Type::String => match value.as_string().map(|s| s.to_string()) {
                Some(Ok(text)) => Json::String(text),
                _ => return Err(abandon("a string that is not UTF-16")),
            },
            Type::Array if self.depth < MAX_DEPTH => {
                let array = value.as_array().ok_or_else(|| abandon("array"))?.clone();
                let names = self.reading.names;
                if !plain(array.as_object(), true, names.intrinsics()).map_err(thrown)?
                    || self.reading.budget.take(array.len()).is_err()
                {
                    return Err(abandon("an array that is not plain data"));
                }
                return Ok(Shape::Array(array));
            }
            Type::Object if self.depth < MAX_DEPTH => {
                let object = value.as_object().ok_or_else(|| abandon("object"))?.clone();
                if !plain(&object, false, self.reading.names.intrinsics()).map_err(thrown)? {
                    return Err(abandon("an object that is not plain data"));
                }
                return Ok(Shape::Object(object));
            }
            _ => return Err(abandon("a value that is not plain data")),
        };
        Ok(Shape::Leaf(leaf))
    }

    fn child<'c>(&'c mut self, value: Value<'js>, rename: bool) -> ValueDeserializer<'c, 'a, 'js> {
        ValueDeserializer {
            reading: self.reading,
            value,
            rename,
            depth: self.depth + 1,
        }
    }

    /// Reads a leaf as its JSON (`leaf` forwards the call to it); an object as a map and an
    /// array as a sequence when `compound`, else abandons (a `serde_json::Value` answers those
    /// calls with an error).
    fn read<'de, V: Visitor<'de>>(
        mut self,
        visitor: V,
        compound: bool,
        leaf: impl FnOnce(Json, V) -> Result<V::Value, serde_json::Error>,
    ) -> Result<V::Value, Abandoned> {
        match self.shape()? {
            Shape::Leaf(json) => leaf(json, visitor).map_err(de::Error::custom),
            _ if !compound => Err(abandon("an object or array where the request has none")),
            Shape::Object(object) => {
                let keys = OwnKeys::of(&object).map_err(thrown)?;
                let atoms: Vec<qjs::JSAtom> = keys.atoms().copied().collect();
                let mut access = Properties {
                    reader: &mut self,
                    object,
                    atoms,
                    next: 0,
                    pending: None,
                };
                let value = visitor.visit_map(&mut access)?;
                // As `serde_json`'s map: a visitor that stops early is an error there.
                if access.next < access.atoms.len() {
                    return Err(abandon("properties left unread"));
                }
                drop(keys);
                Ok(value)
            }
            Shape::Array(array) => {
                let len = array.len();
                let mut access = Items {
                    reader: &mut self,
                    array,
                    next: 0,
                    len,
                };
                let value = visitor.visit_seq(&mut access)?;
                if access.next < access.len {
                    return Err(abandon("items left unread"));
                }
                Ok(value)
            }
        }
    }
}

/// Whether a member is left out of an object (`null` in an array), as `JSON.stringify` does.
fn skipped(ty: Type) -> bool {
    matches!(
        ty,
        Type::Undefined | Type::Uninitialized | Type::Function | Type::Constructor | Type::Symbol
    )
}

/// An object's properties in property order, keys in proto names (map fields' kept).
struct Properties<'p, 'r, 'a, 'js> {
    reader: &'p mut ValueDeserializer<'r, 'a, 'js>,
    object: Object<'js>,
    atoms: Vec<qjs::JSAtom>,
    next: usize,
    /// The value of the key just read, and whether its object keys are renamed.
    pending: Option<(Value<'js>, bool)>,
}

impl<'de> de::MapAccess<'de> for Properties<'_, '_, '_, '_> {
    type Error = Abandoned;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Abandoned> {
        let ctx = self.object.ctx().clone();
        let rename = self.reader.rename;
        while let Some(&atom) = self.atoms.get(self.next) {
            self.next += 1;
            if self.reader.reading.budget.take(1).is_err() {
                return Err(abandon("too many values"));
            }
            // SAFETY: `object` and `atom` (held by `OwnKeys` until the read ends) are live in
            // `ctx`; the answer is owned, or JS_EXCEPTION with the exception pending.
            let item =
                unsafe { qjs::JS_GetProperty(ctx.as_raw().as_ptr(), self.object.as_raw(), atom) };
            if unsafe { qjs::JS_IsException(item) } {
                return Err(abandon("an exception"));
            }
            // SAFETY: owned, from `ctx`'s runtime.
            let item = unsafe { Value::from_raw(ctx.clone(), item) };
            let cached = if rename {
                self.reader.reading.names.proto_name(atom)
            } else {
                None
            };
            let key = match cached {
                Some(key) => key,
                None => match atom_text(&ctx, atom) {
                    Some(text) if rename => proto_name(&text),
                    Some(text) => text,
                    None => return Err(abandon("a key that is not UTF-8")),
                },
            };
            if skipped(item.type_of()) {
                continue;
            }
            let inner = rename && !MAP_FIELDS.contains(&key.as_str());
            self.pending = Some((item, inner));
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Abandoned> {
        let (item, rename) = self
            .pending
            .take()
            .ok_or_else(|| abandon("a value asked for before its key"))?;
        seed.deserialize(self.reader.child(item, rename))
    }
}

/// An array's items; `undefined`, functions and symbols read as `null`.
struct Items<'p, 'r, 'a, 'js> {
    reader: &'p mut ValueDeserializer<'r, 'a, 'js>,
    array: rquickjs::Array<'js>,
    next: usize,
    len: usize,
}

impl<'de> de::SeqAccess<'de> for Items<'_, '_, '_, '_> {
    type Error = Abandoned;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Abandoned> {
        if self.next >= self.len {
            return Ok(None);
        }
        let item: Value<'_> = self.array.get(self.next).map_err(thrown)?;
        self.next += 1;
        let item = if skipped(item.type_of()) {
            Value::new_null(item.ctx().clone())
        } else {
            item
        };
        let rename = self.reader.rename;
        seed.deserialize(self.reader.child(item, rename)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.next)
    }
}

/// An exception a getter (or QuickJS) left pending: abandons the read; the caller clears it.
fn thrown(_: rquickjs::Error) -> Abandoned {
    abandon("an exception")
}

/// Calls a leaf answers as its JSON does; on an object or array they abandon (a
/// `serde_json::Value` answers most with an error, and the requests never ask for the rest:
/// an enum, bytes).
macro_rules! leaf_only {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?;)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value, Abandoned> {
            self.read(visitor, false, |json, visitor| {
                de::Deserializer::$method(json, $($($arg,)*)? visitor)
            })
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'_, '_, '_> {
    type Error = Abandoned;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_any(json, visitor)
        })
    }

    /// As `serde_json::Value`: `null` is `None`, anything else `Some` of itself.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Abandoned> {
        match self.value.type_of() {
            Type::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Abandoned> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Abandoned> {
        // Walked all the same: the old path walks (and checks) ignored fields too.
        self.deserialize_any(de::IgnoredAny)?;
        visitor.visit_unit()
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_map(json, visitor)
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_struct(json, name, fields, visitor)
        })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_seq(json, visitor)
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_tuple(json, len, visitor)
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Abandoned> {
        self.read(visitor, true, |json, visitor| {
            de::Deserializer::deserialize_tuple_struct(json, name, len, visitor)
        })
    }

    leaf_only! {
        deserialize_bool;
        deserialize_i8;
        deserialize_i16;
        deserialize_i32;
        deserialize_i64;
        deserialize_i128;
        deserialize_u8;
        deserialize_u16;
        deserialize_u32;
        deserialize_u64;
        deserialize_u128;
        deserialize_f32;
        deserialize_f64;
        deserialize_char;
        deserialize_str;
        deserialize_string;
        deserialize_bytes;
        deserialize_byte_buf;
        deserialize_unit;
        deserialize_identifier;
        deserialize_unit_struct(name: &'static str);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use metafi_proto::realtime::Envelope;
    use rquickjs::{Context, Runtime};
    use serde::Deserialize;
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::hook_result::{self, Walk};

    /// A request shaped as the edges' are: nested structs, optional wrappers, a map field,
    /// a map that is not one, lists, int64 and floats, a JSON field, defaults.
    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Request {
        account: Account,
        create: Option<bool>,
        username: String,
        refresh_token: String,
        limit: Option<i64>,
        big: u64,
        ratio: f64,
        ids: Vec<String>,
        numbers: Vec<Option<i32>>,
        renamed_map: HashMap<String, i32>,
        numeric_properties: BTreeMap<String, f64>,
        metadata: Json,
        pair: Option<(i32, String)>,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Account {
        id: String,
        vars: HashMap<String, String>,
    }

    /// What the old path gives for `script`'s value (the walk or `JSON.stringify`, then
    /// `serde_json::from_value`) and what the typed read gives (`None`: abandoned).
    fn both<T: DeserializeOwned>(script: &str) -> (Option<Result<T, String>>, Option<T>) {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            // Spellings in the cache, as a hook's request would have put them there.
            let warm =
                serde_json::json!({"refresh_token": 1, "numeric_properties": 1, "account": 1});
            drop(crate::hook_value::build(&ctx, &names, &warm, true).unwrap());
            let value: Value<'_> = ctx.eval(script).unwrap();
            let mut reading = Reading::new(&names);
            let typed = T::deserialize(reading.deserializer(value.clone())).ok();
            drop(ctx.catch());
            let old = match hook_result::read(&value, &names) {
                Ok(Walk::Plain(json)) => {
                    Some(serde_json::from_value::<T>(json).map_err(|e| e.to_string()))
                }
                Ok(Walk::Unplain) => {
                    let text = crate::convert::to_json_text(&ctx, value).unwrap();
                    text.map(|text| {
                        let json = crate::convert::hook_result(&text).unwrap();
                        serde_json::from_value::<T>(json).map_err(|e| e.to_string())
                    })
                }
                Err(e) => Some(Err(e.to_string())),
            };
            names.release(&ctx);
            (old, typed)
        })
    }

    /// The typed read succeeds and gives what the old path gave.
    fn same<T: DeserializeOwned + PartialEq + fmt::Debug>(script: &str) -> T {
        let (old, typed) = both::<T>(script);
        let typed = typed.unwrap_or_else(|| panic!("{script}: typed read abandoned"));
        assert_eq!(old, Some(Ok(typed)), "{script}");
        match old {
            Some(Ok(value)) => value,
            _ => unreachable!(),
        }
    }

    /// The typed read is abandoned (the old path then answers).
    fn abandoned<T: DeserializeOwned + fmt::Debug>(script: &str) {
        let (_, typed) = both::<T>(script);
        assert!(typed.is_none(), "{script}: read as {typed:?}");
    }

    #[test]
    fn plain_results_read_as_the_json_tree_read() {
        let request = same::<Request>(
            r#"({account: {id: "d", vars: {someKey: "v", some_key: "w", __proto__: "x"}},
                create: false, username: "", refreshToken: "r", limit: 3.0, big: 2 ** 52,
                ratio: -0.5, ids: ["a", "b"], numbers: [1, undefined, null, function () {}],
                renamedMap: {oneKey: 1, two_key: 2}, numericProperties: {skillLevel: 12.5},
                metadata: {nestedKey: [1, {deepKey: null}], n: 1.5},
                pair: [1, "one"], unknownField: {deep: [1, 2, {x: 1}]}, skipped: undefined})"#,
        );
        // Spot checks of what the comparison rests on.
        assert_eq!(request.refresh_token, "r");
        assert_eq!(request.limit, Some(3));
        assert_eq!(request.numbers, vec![Some(1), None, None, None]);
        // `__proto__: "x"` in a literal sets no property (and no prototype: "x" is no object).
        assert_eq!(request.account.vars.len(), 2);
        assert_eq!(request.renamed_map.get("one_key"), Some(&1));
        assert_eq!(request.numeric_properties.get("skillLevel"), Some(&12.5));
        assert_eq!(request.metadata["nestedKey"][1]["deepKey"], Json::Null);
        same::<Request>("({})");
        same::<Request>("({limit: null, create: null, metadata: null})");
        same::<Envelope>(
            r#"({cid: "5", channelMessageSend: {channelId: "c", content: "{\"a\":1}"}})"#,
        );
        same::<Envelope>(
            r#"({matchDataSend: {matchId: "m", opCode: 3, data: "aGk=", reliable: true}})"#,
        );
    }

    #[test]
    fn anything_else_is_left_to_the_old_path() {
        // Not plain data: the walk sends these to JSON.stringify.
        abandoned::<Request>("({username: new Date(0)})");
        abandoned::<Request>("({account: {id: 'd', toJSON: function () { return {}; }}})");
        abandoned::<Request>("({big: 2 ** 53})");
        abandoned::<Request>("(function () { var a = []; a[1e7] = 1; return {ids: a}; })()");
        // Keys the tree merges: a derive reports the duplicate field.
        abandoned::<Request>("({refreshToken: 'a', refresh_token: 'b'})");
        // Types the request does not take: the edge reports them from the JSON, as before.
        abandoned::<Request>("({username: 5})");
        abandoned::<Request>("({limit: 1.5})");
        abandoned::<Request>("({account: 'd'})");
        abandoned::<Request>("({pair: [1, 'one', 'extra']})");
        // A getter that throws: the old path throws it again, as the call's error.
        let (old, typed) = both::<Request>("({get username() { throw new Error('no'); }})");
        assert!(typed.is_none());
        assert!(matches!(old, Some(Err(_))), "{old:?}");
        // And the same conclusions as before: the old path's answer for each.
        let (old, _) = both::<Request>("({refreshToken: 'a', refresh_token: 'b'})");
        assert_eq!(old.unwrap().unwrap().refresh_token, "b");
    }
}

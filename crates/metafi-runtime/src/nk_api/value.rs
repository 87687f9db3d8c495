//! [`NkValue`]: the language-neutral value every `nk` function takes and returns. Engines
//! convert their own values to and from it (Lua tables, JS objects); functions never see an
//! engine type.
//!
//! Map keys come in two kinds, so one function serves both languages' naming:
//! [`NkKey::Field`] is a field name of Nakama's API, written in snake_case here and shown to
//! JavaScript in camelCase (`user_id` → `userId`); [`NkKey::Data`] is user data (a storage
//! value, metadata) and reaches every language unchanged.

use std::borrow::Cow;

use serde_json::Value as Json;

/// A value passed to or returned by an `nk` function.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum NkValue {
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// Binary data: a Lua string, a JS `ArrayBuffer`.
    Bytes(Vec<u8>),
    List(Vec<NkValue>),
    Map(NkMap),
    /// Several results: Lua returns them as multiple values; other engines as a list.
    /// Only valid as a function's whole result.
    Multi(Vec<NkValue>),
}

/// A map key: an API field name (renamed per language) or user data (kept as is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NkKey {
    /// A field of Nakama's API, snake_case.
    Field(&'static str),
    /// A key chosen by the user (storage values, metadata, vars); never renamed.
    Data(String),
}

/// An ordered map. Maps from engines carry [`NkKey::Data`] keys only (the engine cannot tell
/// fields from data); look fields up with [`NkMap::field`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NkMap(pub Vec<(NkKey, NkValue)>);

/// Most values (items of lists and entries of maps, counted through every level) one script
/// value may convert to. Engines convert outside the VM's memory cap, so without a bound a
/// table shared many times (`t1 = {a = t0, b = t0}`, nested 60 deep) or a sparse array
/// (`{[16000000] = 1}`) would make the server allocate without limit.
pub const MAX_CONVERTED_VALUES: usize = 1_000_000;

/// What one conversion may still produce; engines charge every list item and map entry.
/// `Clone` so a reader that guessed a table's kind wrong can go back to what was left.
#[derive(Debug, Clone)]
pub struct ValueBudget {
    left: usize,
}

impl Default for ValueBudget {
    fn default() -> ValueBudget {
        ValueBudget {
            left: MAX_CONVERTED_VALUES,
        }
    }
}

impl ValueBudget {
    /// Charges `count` values, or says why the value is refused.
    pub fn take(&mut self, count: usize) -> Result<(), String> {
        match self.left.checked_sub(count) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(format!(
                "value too large to pass to nk: more than {MAX_CONVERTED_VALUES} items in one \
                 argument (counting nested tables, arrays and objects each time they appear)"
            )),
        }
    }
}

/// How field names are spelled in a language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Naming {
    /// Lua and native Rust: Nakama's snake_case (`user_id`).
    Snake,
    /// JavaScript: camelCase (`userId`).
    Camel,
}

impl Naming {
    /// `field` (snake_case) as this language spells it.
    pub fn spell(self, field: &'static str) -> Cow<'static, str> {
        match self {
            Naming::Snake => Cow::Borrowed(field),
            Naming::Camel if !field.contains('_') => Cow::Borrowed(field),
            Naming::Camel => Cow::Owned(camel_case(field)),
        }
    }
}

/// `user_id` → `userId`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

impl NkKey {
    /// The key as `naming` spells it.
    pub fn spelled(&self, naming: Naming) -> Cow<'_, str> {
        match self {
            NkKey::Field(field) => naming.spell(field),
            NkKey::Data(key) => Cow::Borrowed(key.as_str()),
        }
    }
}

impl NkMap {
    pub fn new() -> NkMap {
        NkMap(Vec::new())
    }

    pub fn with_capacity(capacity: usize) -> NkMap {
        NkMap(Vec::with_capacity(capacity))
    }

    /// Adds API field `field` (builder style).
    pub fn with(mut self, field: &'static str, value: impl Into<NkValue>) -> NkMap {
        self.0.push((NkKey::Field(field), value.into()));
        self
    }

    /// Adds API field `field`.
    pub fn insert(&mut self, field: &'static str, value: impl Into<NkValue>) {
        self.0.push((NkKey::Field(field), value.into()));
    }

    /// Adds user-data key `key`.
    pub fn insert_data(&mut self, key: impl Into<String>, value: impl Into<NkValue>) {
        self.0.push((NkKey::Data(key.into()), value.into()));
    }

    /// The value of API field `field` as `naming` spells it (last match wins, as in a table).
    pub fn field(&self, field: &'static str, naming: Naming) -> Option<&NkValue> {
        let spelled = naming.spell(field);
        self.get(&spelled)
    }

    /// The value under key `key` exactly as written.
    pub fn get(&self, key: &str) -> Option<&NkValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| match k {
                NkKey::Field(f) => *f == key,
                NkKey::Data(d) => d == key,
            })
            .map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &(NkKey, NkValue)> {
        self.0.iter()
    }
}

impl NkValue {
    pub fn is_nil(&self) -> bool {
        matches!(self, NkValue::Nil)
    }

    /// Integers, and floats with no fractional part (Lua numbers, JS numbers).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            NkValue::Int(i) => Some(*i),
            NkValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => {
                Some(*f as i64)
            }
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            NkValue::Int(i) => Some(*i as f64),
            NkValue::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            NkValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Text or binary data as bytes.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            NkValue::Str(s) => Some(s.as_bytes()),
            NkValue::Bytes(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&NkMap> {
        match self {
            NkValue::Map(m) => Some(m),
            _ => None,
        }
    }

    /// A list's items; an empty map is an empty list (an empty Lua table is both).
    pub fn as_list(&self) -> Option<&[NkValue]> {
        match self {
            NkValue::List(items) => Some(items),
            NkValue::Map(m) if m.is_empty() => Some(&[]),
            _ => None,
        }
    }

    /// Roughly the bytes the value holds: text and binary lengths, key lengths, and 16 bytes
    /// per value (what bounds by size, such as the local cache, count).
    pub fn approx_bytes(&self) -> usize {
        const PER_VALUE: usize = 16;
        PER_VALUE
            + match self {
                NkValue::Str(s) => s.len(),
                NkValue::Bytes(b) => b.len(),
                NkValue::List(items) | NkValue::Multi(items) => {
                    items.iter().map(NkValue::approx_bytes).sum()
                }
                NkValue::Map(map) => map
                    .iter()
                    .map(|(key, value)| key.spelled(Naming::Snake).len() + value.approx_bytes())
                    .sum(),
                _ => 0,
            }
    }

    /// JSON as a value: objects become maps with [`NkKey::Data`] keys.
    pub fn from_json(json: &Json) -> NkValue {
        match json {
            Json::Null => NkValue::Nil,
            Json::Bool(b) => NkValue::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => NkValue::Int(i),
                None => NkValue::Float(n.as_f64().unwrap_or(0.0)),
            },
            Json::String(s) => NkValue::Str(s.clone()),
            Json::Array(items) => NkValue::List(items.iter().map(NkValue::from_json).collect()),
            Json::Object(map) => NkValue::Map(NkMap(
                map.iter()
                    .map(|(k, v)| (NkKey::Data(k.clone()), NkValue::from_json(v)))
                    .collect(),
            )),
        }
    }

    /// JSON text as a value; invalid text is `Nil` (stored JSON is validated on write).
    pub fn from_json_text(text: &str) -> NkValue {
        serde_json::from_str::<Json>(text)
            .map(|json| NkValue::from_json(&json))
            .unwrap_or(NkValue::Nil)
    }

    /// [`NkValue::to_json`] as Nakama's Go encoder writes script values: whole numbers
    /// without a fraction (`{code = 1}` gives `1`, not `1.0`; Lua has only doubles).
    pub fn to_go_json(&self, naming: Naming) -> Result<Json, String> {
        let mut json = self.to_json(naming)?;
        whole_floats_as_integers(&mut json);
        Ok(json)
    }

    /// The value as JSON, with fields spelled as `naming` spells them. Binary data becomes a
    /// string (lossy), non-finite floats an error.
    pub fn to_json(&self, naming: Naming) -> Result<Json, String> {
        Ok(match self {
            NkValue::Nil => Json::Null,
            NkValue::Bool(b) => Json::Bool(*b),
            NkValue::Int(i) => Json::from(*i),
            NkValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(Json::Number)
                .ok_or_else(|| format!("cannot encode {f} as JSON"))?,
            NkValue::Str(s) => Json::String(s.clone()),
            NkValue::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
            NkValue::List(items) | NkValue::Multi(items) => Json::Array(
                items
                    .iter()
                    .map(|v| v.to_json(naming))
                    .collect::<Result<_, _>>()?,
            ),
            NkValue::Map(map) => {
                let mut out = serde_json::Map::with_capacity(map.len());
                for (key, value) in map.iter() {
                    out.insert(key.spelled(naming).into_owned(), value.to_json(naming)?);
                }
                Json::Object(out)
            }
        })
    }
}

/// Go writes a whole `float64` without a fraction (`1700000000`, not `1700000000.0`), and
/// every script number is a float in Go; JSON built from script values must come out the same.
fn whole_floats_as_integers(json: &mut Json) {
    match json {
        Json::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.007_199_254_740_992e15
            {
                // Exact: a whole float below 2^53 is an integer of the same value.
                *n = serde_json::Number::from(f as i64);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Json::Object(map) => map.values_mut().for_each(whole_floats_as_integers),
        _ => {}
    }
}

impl From<bool> for NkValue {
    fn from(b: bool) -> NkValue {
        NkValue::Bool(b)
    }
}
impl From<i64> for NkValue {
    fn from(i: i64) -> NkValue {
        NkValue::Int(i)
    }
}
impl From<i32> for NkValue {
    fn from(i: i32) -> NkValue {
        NkValue::Int(i64::from(i))
    }
}
impl From<u32> for NkValue {
    fn from(i: u32) -> NkValue {
        NkValue::Int(i64::from(i))
    }
}
impl From<usize> for NkValue {
    fn from(i: usize) -> NkValue {
        NkValue::Int(i64::try_from(i).unwrap_or(i64::MAX))
    }
}
impl From<f64> for NkValue {
    fn from(f: f64) -> NkValue {
        NkValue::Float(f)
    }
}
impl From<String> for NkValue {
    fn from(s: String) -> NkValue {
        NkValue::Str(s)
    }
}
impl From<&str> for NkValue {
    fn from(s: &str) -> NkValue {
        NkValue::Str(s.to_owned())
    }
}
impl From<NkMap> for NkValue {
    fn from(m: NkMap) -> NkValue {
        NkValue::Map(m)
    }
}
impl From<Vec<NkValue>> for NkValue {
    fn from(items: Vec<NkValue>) -> NkValue {
        NkValue::List(items)
    }
}
impl<T: Into<NkValue>> From<Option<T>> for NkValue {
    fn from(value: Option<T>) -> NkValue {
        value.map_or(NkValue::Nil, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_camel_case_in_javascript_and_data_keys_are_kept() {
        let mut map = NkMap::new().with("user_id", "u").with("key", "k");
        map.insert_data("my_key", 1i64);
        let json = NkValue::Map(map).to_json(Naming::Camel).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"userId": "u", "key": "k", "my_key": 1})
        );
    }

    #[test]
    fn fields_are_found_by_each_languages_spelling() {
        let NkValue::Map(js) = NkValue::from_json(&serde_json::json!({"userId": "a"})) else {
            unreachable!()
        };
        assert_eq!(
            js.field("user_id", Naming::Camel),
            Some(&NkValue::from("a"))
        );
        assert_eq!(js.field("user_id", Naming::Snake), None);
    }

    #[test]
    fn a_budget_refuses_past_its_values() {
        let mut budget = ValueBudget::default();
        assert!(budget.take(MAX_CONVERTED_VALUES).is_ok());
        assert!(budget.take(1).is_err());
    }

    #[test]
    fn whole_floats_are_integers() {
        assert_eq!(NkValue::Float(3.0).as_i64(), Some(3));
        assert_eq!(NkValue::Float(3.5).as_i64(), None);
    }
}

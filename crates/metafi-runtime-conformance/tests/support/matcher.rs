//! How a result is compared with a fixture's expectation, and engines with each other.
//!
//! An expected JSON value matches an actual one when:
//! - objects: every expected key matches the actual key's value (extra actual keys are
//!   allowed: the engines are compared with each other for those, see [`shape`]); an expected
//!   `"<absent>"` requires the key to be missing or null (Lua has no null);
//! - arrays: same length, element by element;
//! - numbers: equal as floating point; strings and booleans: equal;
//! - a string placeholder matches a kind of value: `"<any>"`, `"<uuid>"`, `"<string>"`,
//!   `"<nonempty>"`, `"<number>"`, `"<seconds>"` (a plausible Unix time in seconds),
//!   `"<millis>"` (the same in milliseconds), `"<now_ms>"` (milliseconds within a minute of
//!   the test's clock), `"<object>"`, `"<array>"`,
//!   `"<contains:TEXT>"`, `"<starts:TEXT>"`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Checks `actual` against `expected`; each mismatch is one line naming its JSON path.
pub fn match_json(expected: &Value, actual: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(expected, Some(actual), "$", &mut problems);
    problems
}

fn walk(expected: &Value, actual: Option<&Value>, path: &str, problems: &mut Vec<String>) {
    if let Value::String(text) = expected
        && let Some(kind) = placeholder(text)
    {
        if let Err(why) = kind.check(actual) {
            problems.push(format!("{path}: {why}"));
        }
        return;
    }
    let Some(actual) = actual else {
        problems.push(format!("{path}: missing, expected {expected}"));
        return;
    };
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, value) in want {
                walk(value, got.get(key), &format!("{path}.{key}"), problems);
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                problems.push(format!(
                    "{path}: expected {} elements, got {}: {actual}",
                    want.len(),
                    got.len()
                ));
                return;
            }
            for (i, (want, got)) in want.iter().zip(got).enumerate() {
                walk(want, Some(got), &format!("{path}[{i}]"), problems);
            }
        }
        (Value::Number(want), Value::Number(got)) => {
            if want.as_f64() != got.as_f64() {
                problems.push(format!("{path}: expected {want}, got {got}"));
            }
        }
        (want, got) => {
            if want != got {
                problems.push(format!("{path}: expected {want}, got {got}"));
            }
        }
    }
}

enum Placeholder<'a> {
    Any,
    Absent,
    Uuid,
    String,
    NonEmpty,
    Number,
    Seconds,
    Millis,
    NowMs,
    Object,
    Array,
    Contains(&'a str),
    Starts(&'a str),
}

fn placeholder(text: &str) -> Option<Placeholder<'_>> {
    let inner = text.strip_prefix('<')?.strip_suffix('>')?;
    Some(match inner {
        "any" => Placeholder::Any,
        "absent" => Placeholder::Absent,
        "uuid" => Placeholder::Uuid,
        "string" => Placeholder::String,
        "nonempty" => Placeholder::NonEmpty,
        "number" => Placeholder::Number,
        "seconds" => Placeholder::Seconds,
        "millis" => Placeholder::Millis,
        "now_ms" => Placeholder::NowMs,
        "object" => Placeholder::Object,
        "array" => Placeholder::Array,
        _ => {
            if let Some(needle) = inner.strip_prefix("contains:") {
                Placeholder::Contains(needle)
            } else if let Some(prefix) = inner.strip_prefix("starts:") {
                Placeholder::Starts(prefix)
            } else {
                return None;
            }
        }
    })
}

impl Placeholder<'_> {
    fn check(&self, actual: Option<&Value>) -> Result<(), String> {
        let present = actual.filter(|v| !v.is_null());
        if let Placeholder::Absent = self {
            return match present {
                None => Ok(()),
                Some(v) => Err(format!("expected no value, got {v}")),
            };
        }
        let Some(value) = present else {
            return Err("missing (or null)".to_owned());
        };
        let ok = match self {
            Placeholder::Any => true,
            Placeholder::Absent => unreachable!("handled above"),
            Placeholder::Uuid => value
                .as_str()
                .is_some_and(|s| uuid::Uuid::parse_str(s).is_ok()),
            Placeholder::String => value.is_string(),
            Placeholder::NonEmpty => value.as_str().is_some_and(|s| !s.is_empty()),
            Placeholder::Number => value.is_number(),
            // 2020-09 .. 5138: seconds, not milliseconds.
            Placeholder::Seconds => value.as_f64().is_some_and(|n| (1.6e9..1e11).contains(&n)),
            Placeholder::Millis => value.as_f64().is_some_and(|n| (1.6e12..1e14).contains(&n)),
            Placeholder::NowMs => value
                .as_f64()
                .is_some_and(|n| (n - now_ms()).abs() < 60_000.0),
            Placeholder::Object => value.is_object(),
            Placeholder::Array => value.is_array(),
            Placeholder::Contains(needle) => value.as_str().is_some_and(|s| s.contains(needle)),
            Placeholder::Starts(prefix) => value.as_str().is_some_and(|s| s.starts_with(prefix)),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{value} is not {}", self.describe()))
        }
    }

    fn describe(&self) -> String {
        match self {
            Placeholder::Any => "any value".into(),
            Placeholder::Absent => "absent".into(),
            Placeholder::Uuid => "a UUID".into(),
            Placeholder::String => "a string".into(),
            Placeholder::NonEmpty => "a non-empty string".into(),
            Placeholder::Number => "a number".into(),
            Placeholder::Seconds => "a Unix time in seconds".into(),
            Placeholder::Millis => "a Unix time in milliseconds".into(),
            Placeholder::NowMs => "the time now in milliseconds".into(),
            Placeholder::Object => "an object".into(),
            Placeholder::Array => "an array".into(),
            Placeholder::Contains(needle) => format!("a string containing {needle:?}"),
            Placeholder::Starts(prefix) => format!("a string starting with {prefix:?}"),
        }
    }
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// `base` with `over` laid on top: objects are merged key by key, anything else replaced.
pub fn merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            let mut out = base.clone();
            for (key, value) in over {
                let merged = match base.get(key) {
                    Some(old) => merge(old, value),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        (_, over) => over.clone(),
    }
}

/// Every object key camelCased (`user_id` → `userId`), as the JS binder spells Nakama's
/// fields.
pub fn camel_keys(value: &Value) -> Value {
    rename_keys(value, &camel)
}

fn rename_keys(value: &Value, rename: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (rename(k), rename_keys(v, rename)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| rename_keys(v, rename)).collect()),
        other => other.clone(),
    }
}

fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
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

fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A value reduced to its shape, to compare what two engines returned: keys snake_cased,
/// null members dropped (Lua has no null), an empty object equal to an empty array (Lua has
/// one table type), and every scalar replaced by its type (ids and times differ between
/// runs; the fixture's expectation pins the values that matter).
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let members: Map<String, Value> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (snake(k), shape(v)))
                .collect();
            if members.is_empty() {
                Value::String("empty table".into())
            } else {
                Value::Object(members)
            }
        }
        Value::Array(items) if items.is_empty() => Value::String("empty table".into()),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::String(_) => Value::String("string".into()),
        Value::Number(_) => Value::String("number".into()),
        Value::Bool(_) => Value::String("boolean".into()),
        Value::Null => Value::String("null".into()),
    }
}

/// Replaces every `${name}` in `text` with `vars[name]`; an unknown name is an error.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
        let name = &after[..end];
        let value = vars
            .get(name)
            .ok_or_else(|| format!("unknown variable ${{{name}}} in {text:?}"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`substitute`] in every string of a JSON value.
pub fn substitute_json(value: &Value, vars: &BTreeMap<String, String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => Value::String(substitute(s, vars)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_json(v, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute_json(v, vars)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use serde_json::json;

    use super::*;

    #[test]
    fn a_wrong_value_a_missing_key_and_a_wrong_length_are_each_reported_with_their_path() {
        let expected = json!({"a": 1, "b": {"c": "x"}, "d": [1, 2], "e": "<absent>"});
        let actual = json!({"a": 2, "b": {}, "d": [1], "e": 5, "extra": true});
        let problems = match_json(&expected, &actual);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems[0].starts_with("$.a: expected 1, got 2"),
            "{problems:?}"
        );
        assert!(problems[1].starts_with("$.b.c: missing"), "{problems:?}");
        assert!(
            problems[2].starts_with("$.d: expected 2 elements"),
            "{problems:?}"
        );
        assert!(
            problems[3].starts_with("$.e: expected no value"),
            "{problems:?}"
        );
    }

    #[test]
    fn placeholders_accept_their_kind_only() {
        let uuid = uuid::Uuid::new_v4().to_string();
        let ok = json!({"u": uuid, "s": 1_700_000_000, "m": 1_700_000_000_000_i64, "t": "failed: x",
            "n": null, "i": 2.0});
        let expected = json!({"u": "<uuid>", "s": "<seconds>", "m": "<millis>",
            "t": "<starts:failed: >", "n": "<absent>", "i": 2, "gone": "<absent>"});
        assert_eq!(match_json(&expected, &ok), Vec::<String>::new());
        let bad = json!({"u": "x", "s": 1_700_000_000_000_i64, "m": 1_700_000_000, "t": "y"});
        let expected = json!({"u": "<uuid>", "s": "<seconds>", "m": "<millis>",
            "t": "<contains:failed>", "n": "<any>"});
        assert_eq!(match_json(&expected, &bad).len(), 5);
    }

    #[test]
    fn keys_are_renamed_both_ways_and_shapes_ignore_values_and_nulls() {
        let lua = json!({"user_id": "a", "create_time": 1, "cursor": null, "list": {}});
        assert_eq!(
            camel_keys(&lua),
            json!({"userId": "a", "createTime": 1, "cursor": null, "list": {}})
        );
        let js = json!({"userId": "b", "createTime": 2, "list": []});
        assert_eq!(shape(&lua), shape(&js));
        assert_ne!(
            shape(&lua),
            shape(&json!({"userId": "b", "createTime": "2"}))
        );
    }

    #[test]
    fn variables_are_substituted_and_unknown_ones_refused() {
        let vars = BTreeMap::from([("user.bob".to_owned(), "42".to_owned())]);
        assert_eq!(
            substitute(r#"{"id":"${user.bob}"}"#, &vars).unwrap(),
            r#"{"id":"42"}"#
        );
        assert!(substitute("${user.eve}", &vars).is_err());
        assert_eq!(
            merge(&json!({"a": {"b": 1, "c": 2}}), &json!({"a": {"c": 3}})),
            json!({"a": {"b": 1, "c": 3}})
        );
    }
}

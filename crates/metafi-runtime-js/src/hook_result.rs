//! A before hook's result read straight from the JavaScript value into proto names, without
//! `JSON.stringify` and a parse.
//!
//! The text path (`convert::to_json_text` + `hooks::from_js_text`) was a third of a JS hook
//! pair's instructions (`docs/RUNTIME.md`, "The hook call path and its cost"): QuickJS's
//! stringify looks up `toJSON` and quotes every string into a buffer that Rust then parses.
//! What a hook returns is almost always plain data — the request it was given, changed — and
//! for plain data this walk gives exactly what the text path gives:
//!
//! - objects: their own enumerable string keys in property order, `lowerCamelCase` names to
//!   proto names (not inside map fields, `hooks::MAP_FIELDS`); `undefined`, functions and
//!   symbols are left out;
//! - arrays: every index up to `length`; `undefined`, functions and symbols are `null`;
//! - numbers as `JSON.stringify` prints them and serde_json reads them back: integral values
//!   below 1e21 are integers (when they fit 64 bits), other finite ones floats, `NaN` and
//!   infinities `null`.
//!
//! Anything else — more than `nk_api::MAX_CONVERTED_VALUES` items (a sparse array's length
//! counts), a `toJSON` on any object or its prototypes, an object that is not a plain object or array (a
//! `Date`, a boxed primitive, a class instance, a proxy), a `BigInt`, nesting past
//! [`MAX_DEPTH`] (which may be a cycle), a string that is not valid UTF-16 — answers
//! [`Walk::Unplain`], and the caller takes the text path, which gives `JSON.stringify`'s
//! answer or error. An exception thrown while reading (a getter) is the call's error, as
//! stringify would have thrown it.

use metafi_runtime::hooks::{MAP_FIELDS, proto_name};
use metafi_runtime::nk_api::ValueBudget;
use rquickjs::{Object, Type, Value};
use serde_json::{Map, Number, Value as Json};

/// Deeper than this is read by the text path (the limit `JSON.stringify` has none of; a
/// request is a few levels deep).
pub(crate) const MAX_DEPTH: usize = 64;

/// What the walk found.
pub(crate) enum Walk {
    Plain(Json),
    /// Not plain data: read it through `JSON.stringify`.
    Unplain,
}

/// Reads `value` (not `undefined` or `null`: the caller has handled those) in proto names.
pub(crate) fn read<'js>(value: &Value<'js>) -> rquickjs::Result<Walk> {
    Ok(match walk(value, true, 0, &mut ValueBudget::default())? {
        Some(json) => Walk::Plain(json),
        None => Walk::Unplain,
    })
}

/// `None`: not plain data. `Some(None)` marks a value an object leaves out.
fn walk<'js>(
    value: &Value<'js>,
    rename: bool,
    depth: usize,
    budget: &mut ValueBudget,
) -> rquickjs::Result<Option<Json>> {
    Ok(match value.type_of() {
        Type::Null => Some(Json::Null),
        Type::Bool => value.as_bool().map(Json::Bool),
        Type::Int => value.as_int().map(Json::from),
        Type::Float => value.as_float().and_then(number),
        Type::String => match value.as_string().map(|s| s.to_string()) {
            Some(Ok(text)) => Some(Json::String(text)),
            _ => None,
        },
        Type::Array if depth < MAX_DEPTH => match value.as_array() {
            // A sparse array's length is not its size (`a[1e9] = 1`): past the item budget
            // the text path reads it, within the VM's memory cap.
            Some(array) if plain(array.as_object(), true)? && budget.take(array.len()).is_ok() => {
                let mut items = Vec::with_capacity(array.len());
                for i in 0..array.len() {
                    let item: Value<'js> = array.get(i)?;
                    match member(&item, rename, depth, budget)? {
                        Member::Value(json) => items.push(json),
                        Member::Skipped => items.push(Json::Null),
                        Member::Unplain => return Ok(None),
                    }
                }
                Some(Json::Array(items))
            }
            _ => None,
        },
        Type::Object if depth < MAX_DEPTH => match value.as_object() {
            Some(object) if plain(object, false)? => {
                let mut map = Map::new();
                for prop in object.props::<String, Value<'js>>() {
                    let (key, item) = prop?;
                    if budget.take(1).is_err() {
                        return Ok(None);
                    }
                    let inner = rename && !MAP_FIELDS.contains(&key.as_str());
                    match member(&item, inner, depth, budget)? {
                        Member::Value(json) => {
                            let key = if rename { proto_name(&key) } else { key };
                            map.insert(key, json);
                        }
                        Member::Skipped => {}
                        Member::Unplain => return Ok(None),
                    }
                }
                Some(Json::Object(map))
            }
            _ => None,
        },
        _ => None,
    })
}

enum Member {
    Value(Json),
    /// `undefined`, a function or a symbol: left out of an object, `null` in an array.
    Skipped,
    Unplain,
}

fn member<'js>(
    item: &Value<'js>,
    rename: bool,
    depth: usize,
    budget: &mut ValueBudget,
) -> rquickjs::Result<Member> {
    Ok(match item.type_of() {
        Type::Undefined
        | Type::Uninitialized
        | Type::Function
        | Type::Constructor
        | Type::Symbol => Member::Skipped,
        _ => match walk(item, rename, depth + 1, budget)? {
            Some(json) => Member::Value(json),
            None => Member::Unplain,
        },
    })
}

/// Whether `JSON.stringify` would read `object` as plain data: no `toJSON` (own or
/// inherited), and a plain object's prototype is `Object.prototype` (or none), an array's
/// `Array.prototype`, whose own prototype is `Object.prototype`. Told apart by the chain's
/// length, so boxed primitives, dates, maps and class instances are not plain (class
/// instances are read by the text path, which gives the same answer).
fn plain<'js>(object: &Object<'js>, array: bool) -> rquickjs::Result<bool> {
    if !object.get::<_, Value<'js>>("toJSON")?.is_undefined() {
        return Ok(false);
    }
    Ok(match object.get_prototype() {
        None => !array,
        Some(proto) => match proto.get_prototype() {
            None => !array,
            Some(grand) => array && grand.get_prototype().is_none(),
        },
    })
}

/// A JavaScript number as `JSON.stringify` prints it and serde_json reads it back; `None` for
/// integral values from 2^53 up to 1e21, which JavaScript prints with rounded digits
/// (`2 ** 63` as `9223372036854776000`): those take the text path.
fn number(n: f64) -> Option<Json> {
    if !n.is_finite() {
        return Some(Json::Null);
    }
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() < 1e21 {
        // `-0` prints as `0`.
        return (n.abs() < EXACT).then(|| Json::from(n as i64));
    }
    Number::from_f64(n).map(Json::Number)
}

#[cfg(test)]
mod tests {
    use rquickjs::{Context, Ctx, Runtime};

    use super::*;

    /// What the text path reads from `value`.
    fn text_path<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Option<Json> {
        let text = crate::convert::to_json_text(ctx, value).ok()??;
        metafi_runtime::hooks::from_js_text(&text).ok()
    }

    #[test]
    fn plain_data_reads_as_the_text_path_reads_it() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            for code in [
                "({account: {id: 'd', vars: {someKey: 'v'}}, create: true, username: ''})",
                "({refreshToken: 'r', nested: {deepName: [1, {innerName: 2}]}, metadata: {keepMe: 1}})",
                "({a: undefined, f: function () {}, s: Symbol('x'), n: null, z: 0})",
                "[1, undefined, function () {}, null, 'x', [2, [3]]]",
                "({i: 3, neg: -7, f: 1.5, negz: -0, huge: 1e21, nan: NaN, inf: -Infinity})",
                "({w: -1e21, x: 0.1 + 0.2, y: 2 ** 53 - 1, z: -(2 ** 53 - 1), e: 1.5e300, t: 5e-324})",
                "({'2': 'b', '1': 'a', later: 'c', 'éa': 'ü', 'with space': 1})",
                "Object.assign(Object.create(null), {plain: 1})",
                "({get computed() { return 'got'; }})",
                "'just text'",
                "42",
                "true",
                "[]",
                "({})",
            ] {
                let value: Value<'_> = ctx.eval(code).unwrap();
                let Walk::Plain(walked) = read(&value).unwrap() else {
                    panic!("{code}: read as not plain");
                };
                assert_eq!(Some(walked), text_path(&ctx, value), "{code}");
            }
        });
    }

    #[test]
    fn what_stringify_treats_specially_takes_the_text_path() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            for code in [
                "new Date(0)",
                "({when: new Date(0)})",
                "({toJSON: function () { return 'x'; }})",
                "({inner: {toJSON: function () { return 1; }}})",
                "({n: new Number(3)})",
                "({s: new String('x')})",
                "({b: 10n})",
                "(function () { var c = {}; c.self = c; return c; })()",
                "({m: new Map([[1, 2]])})",
                "({big: 2 ** 53 + 2})",
                "({u: 18446744073709551615})",
                "[-9223372036854775808]",
                "(function () { var a = []; a[2000000] = 1; return {a: a}; })()",
                "(function () { class P { constructor() { this.x = 1; } } return new P(); })()",
            ] {
                let value: Value<'_> = ctx.eval(code).unwrap();
                assert!(
                    matches!(read(&value).unwrap(), Walk::Unplain),
                    "{code}: read as plain"
                );
            }
        });
    }

    #[test]
    fn a_getter_that_throws_is_the_error() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let value: Value<'_> = ctx
                .eval("({get bad() { throw new Error('no'); }})")
                .unwrap();
            assert!(read(&value).is_err());
        });
    }
}

//! JavaScript values ⇄ [`NkValue`], for the `nk` binding table (`nk_binding.rs`), the way
//! `JSON.stringify` sees values, so an object a script builds reaches Rust as a JavaScript
//! developer expects: `undefined` and function members are left out (`null` in arrays),
//! `NaN` and infinities inside objects are `null`, `toJSON` is honoured (a `Date` is its ISO
//! text), a cycle is a `TypeError` ("circular reference"), a BigInt a `TypeError`.
//!
//! Binary data: an `ArrayBuffer` or a typed array (`Uint8Array`, …) is [`NkValue::Bytes`], and
//! `Bytes` come back as an `ArrayBuffer`. Field names come back camelCase (`userId`); user data
//! keys (storage values, metadata) are kept as written.

use metafi_runtime::nk_api::{Naming, NkMap, NkValue, ValueBudget};
use rquickjs::function::This;
use rquickjs::{Array, ArrayBuffer, Ctx, Exception, Object, Value};

use crate::binary::{self, View};
use crate::convert;

/// Deepest nesting converted; deeper values are an error, not a stack overflow.
const MAX_DEPTH: usize = 128;

/// The arguments of a call.
pub(crate) fn args<'js>(ctx: &Ctx<'js>, values: &[Value<'js>]) -> rquickjs::Result<Vec<NkValue>> {
    let mut path = Vec::new();
    // One budget for the whole call (see `ValueBudget`).
    let mut budget = ValueBudget::default();
    values
        .iter()
        .map(|v| to_nk(ctx, v, &mut path, &mut budget, false, true))
        .collect()
}

/// JS → [`NkValue`]. `nested`: inside an object or array (non-finite numbers are `null`
/// there, as in JSON); `path`: the objects being converted, to find cycles; `to_json`: whether
/// a `toJSON` method is called (once per value, as `JSON.stringify` does, so a `toJSON` that
/// returns another object with a `toJSON` cannot recurse forever).
fn to_nk<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    path: &mut Vec<Object<'js>>,
    budget: &mut ValueBudget,
    nested: bool,
    to_json: bool,
) -> rquickjs::Result<NkValue> {
    if let Some(b) = value.as_bool() {
        return Ok(NkValue::Bool(b));
    }
    if let Some(i) = value.as_int() {
        return Ok(NkValue::Int(i64::from(i)));
    }
    if let Some(f) = value.as_float() {
        return Ok(if nested && !f.is_finite() {
            NkValue::Nil
        } else {
            NkValue::Float(f)
        });
    }
    if value.is_string() {
        return convert::string(value)
            .map(NkValue::Str)
            .ok_or_else(|| Exception::throw_type(ctx, "a string is not valid Unicode"));
    }
    if value.is_big_int() {
        return Err(Exception::throw_type(
            ctx,
            "a BigInt cannot be passed to nk (convert it to a Number or a string)",
        ));
    }
    if value.is_function() {
        return Ok(NkValue::Nil);
    }
    let Some(object) = value.as_object() else {
        // undefined, null, symbols.
        return Ok(NkValue::Nil);
    };
    if let Some(bytes) = binary(ctx, object)? {
        return Ok(NkValue::Bytes(bytes));
    }
    if path.len() >= MAX_DEPTH {
        return Err(Exception::throw_range(
            ctx,
            &format!("value nesting deeper than {MAX_DEPTH} levels"),
        ));
    }
    if path.iter().any(|seen| seen == object) {
        return Err(Exception::throw_type(
            ctx,
            "converting circular structure: an object contains itself (circular reference)",
        ));
    }
    if to_json {
        let method: Value<'js> = object.get("toJSON")?;
        if let Some(method) = method.as_function() {
            let replaced: Value<'js> = method.call((This(object.clone()),))?;
            return to_nk(ctx, &replaced, path, budget, nested, false);
        }
    }
    path.push(object.clone());
    let converted = if let Some(array) = value.as_array() {
        list(ctx, array, path, budget)
    } else {
        map(ctx, object, path, budget)
    };
    path.pop();
    converted
}

fn list<'js>(
    ctx: &Ctx<'js>,
    array: &Array<'js>,
    path: &mut Vec<Object<'js>>,
    budget: &mut ValueBudget,
) -> rquickjs::Result<NkValue> {
    // Charged before allocating: `a.length = 4e9` must not reserve 4e9 slots.
    let length = convert::array_length(array)?;
    budget
        .take(length)
        .map_err(|e| Exception::throw_range(ctx, &e))?;
    let mut items = Vec::with_capacity(length);
    for i in 0..length {
        let item: Value<'js> = array.get(i)?;
        items.push(to_nk(ctx, &item, path, budget, true, true)?);
    }
    Ok(NkValue::List(items))
}

fn map<'js>(
    ctx: &Ctx<'js>,
    object: &Object<'js>,
    path: &mut Vec<Object<'js>>,
    budget: &mut ValueBudget,
) -> rquickjs::Result<NkValue> {
    let mut out = NkMap::new();
    for prop in object.props::<String, Value<'js>>() {
        let (key, item) = prop?;
        if item.is_undefined() || item.is_function() || item.is_symbol() {
            continue;
        }
        budget
            .take(1)
            .map_err(|e| Exception::throw_range(ctx, &e))?;
        out.insert_data(key, to_nk(ctx, &item, path, budget, true, true)?);
    }
    Ok(NkValue::Map(out))
}

/// The bytes of an `ArrayBuffer`, a `SharedArrayBuffer` or a typed array's view (any element
/// type); `None` for other objects and for a detached buffer (an empty object to
/// `JSON.stringify`, as before); a view of a detached buffer is QuickJS's `TypeError`.
fn binary<'js>(ctx: &Ctx<'js>, object: &Object<'js>) -> rquickjs::Result<Option<Vec<u8>>> {
    match binary::view(ctx, object.as_raw()) {
        View::Bytes(bytes) => Ok(Some(bytes)),
        View::OutOfBounds => Err(rquickjs::Error::Exception),
        View::None => Ok(binary::buffer(ctx, object.as_raw())),
    }
}

/// A function's result: `Nil` is `null`, no results (`Multi([])`) `undefined`.
pub(crate) fn result<'js>(ctx: &Ctx<'js>, value: &NkValue) -> rquickjs::Result<Value<'js>> {
    match value {
        NkValue::Multi(items) if items.is_empty() => Ok(Value::new_undefined(ctx.clone())),
        value => to_js(ctx, value),
    }
}

/// [`NkValue`] → JS.
pub(crate) fn to_js<'js>(ctx: &Ctx<'js>, value: &NkValue) -> rquickjs::Result<Value<'js>> {
    Ok(match value {
        NkValue::Nil => Value::new_null(ctx.clone()),
        NkValue::Bool(b) => Value::new_bool(ctx.clone(), *b),
        NkValue::Int(i) => match i32::try_from(*i) {
            Ok(i) => Value::new_int(ctx.clone(), i),
            Err(_) => Value::new_number(ctx.clone(), *i as f64),
        },
        NkValue::Float(f) => Value::new_number(ctx.clone(), *f),
        NkValue::Str(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        NkValue::Bytes(b) => ArrayBuffer::new_copy(ctx.clone(), b)?.into_value(),
        NkValue::List(items) | NkValue::Multi(items) => {
            let array = Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                array.set(i, to_js(ctx, item)?)?;
            }
            array.into_value()
        }
        NkValue::Map(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map.iter() {
                object.set(&*key.spelled(Naming::Camel), to_js(ctx, item)?)?;
            }
            object.into_value()
        }
    })
}

#[cfg(test)]
mod tests {
    use rquickjs::{Context, Runtime};

    use super::*;

    fn with<R>(f: impl FnOnce(Ctx<'_>) -> R) -> R {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(f)
    }

    #[test]
    fn objects_convert_as_json_stringify_sees_them() {
        with(|ctx| {
            let value: Value<'_> = ctx
                .eval("({ a: undefined, b: NaN, f: function () {}, l: [undefined, 1.5], d: { toJSON: function () { return 'x'; } } })")
                .unwrap();
            let nk = args(&ctx, &[value]).unwrap().remove(0);
            assert_eq!(
                nk.to_json(Naming::Camel).unwrap(),
                serde_json::json!({"b": null, "l": [null, 1.5], "d": "x"})
            );
            let bytes: Value<'_> = ctx.eval("new Uint8Array([0, 255, 7]).subarray(1)").unwrap();
            assert_eq!(
                args(&ctx, &[bytes]).unwrap(),
                vec![NkValue::Bytes(vec![255, 7])]
            );
            let cyclic: Value<'_> = ctx.eval("var c = { l: [] }; c.l.push(c); c").unwrap();
            assert!(args(&ctx, &[cyclic]).is_err());
            ctx.catch();
            // The same object twice (not a cycle) is fine.
            let shared: Value<'_> = ctx.eval("var s = {}; ({ a: s, b: s })").unwrap();
            assert!(args(&ctx, &[shared]).is_ok());
            // toJSON is called once per value, as JSON.stringify does: no endless chain.
            let chain: Value<'_> = ctx
                .eval("var o = { toJSON: function () { return { toJSON: o.toJSON, n: 1 }; } }; o")
                .unwrap();
            let NkValue::Map(map) = args(&ctx, &[chain]).unwrap().remove(0) else {
                panic!("a map")
            };
            assert_eq!(map.get("n"), Some(&NkValue::Int(1)));
        });
    }

    /// Binary data is read through the C API: every typed array's view (whatever its element
    /// type), whole buffers, nothing thrown for the plain objects beside them.
    #[test]
    fn binary_data_is_read_without_javascript_or_exceptions() {
        with(|ctx| {
            let converted = |source: &str| {
                let value: Value<'_> = ctx.eval(source).unwrap();
                args(&ctx, &[value]).ok()
            };
            let bytes = |values: &[u8]| Some(vec![NkValue::Bytes(values.to_vec())]);
            assert_eq!(
                converted("new Uint8Array([1, 2, 3]).buffer"),
                bytes(&[1, 2, 3])
            );
            assert_eq!(
                converted("new Uint16Array([258, 772]).subarray(1)"),
                bytes(&772u16.to_le_bytes())
            );
            assert_eq!(
                converted("new Float64Array([1.5])"),
                bytes(&1.5f64.to_le_bytes())
            );
            assert_eq!(converted("new Uint8ClampedArray([9])"), bytes(&[9]));
            assert_eq!(
                converted("new Int8Array(new ArrayBuffer(8), 2, 3)"),
                bytes(&[0, 0, 0])
            );
            assert_eq!(converted("new SharedArrayBuffer(2)"), bytes(&[0, 0]));
            // A `DataView` is no typed array: an object with no own enumerable keys.
            assert_eq!(
                converted("new DataView(new ArrayBuffer(2))"),
                Some(vec![NkValue::Map(NkMap::new())])
            );
            // A detached buffer is `{}` to JSON.stringify, as before; a view of one is a TypeError.
            assert_eq!(
                converted("var d = new ArrayBuffer(4); d.transfer(); d"),
                Some(vec![NkValue::Map(NkMap::new())])
            );
            assert!(!ctx.has_exception());
            assert!(
                converted("var e = new ArrayBuffer(4), v = new Uint8Array(e); e.transfer(); v")
                    .is_none()
            );
            let thrown = ctx.catch();
            let type_error: Object<'_> = ctx.globals().get("TypeError").unwrap();
            assert!(thrown.as_object().unwrap().is_instance_of(&type_error));
            // Plain objects, arrays, class instances: converted with no exception left pending.
            assert!(converted("({ a: { b: [1, { c: new Map() }] }, d: new Date(0) })").is_some());
            assert!(!ctx.has_exception());
        });
    }

    /// Conversion runs outside the VM's memory cap: a value shared many times (2^40 paths
    /// from 80 objects) or an array with a huge length is refused, not expanded.
    #[test]
    fn values_that_expand_past_the_budget_are_refused() {
        with(|ctx| {
            let shared: Value<'_> = ctx
                .eval("var t = {}; for (var i = 0; i < 40; i++) { t = { a: t, b: t }; } t")
                .unwrap();
            assert!(args(&ctx, &[shared]).is_err());
            ctx.catch();
            let long: Value<'_> = ctx.eval("var l = []; l.length = 4e9; l").unwrap();
            assert!(args(&ctx, &[long]).is_err());
            ctx.catch();
        });
    }

    #[test]
    fn fields_come_back_camel_case_and_bytes_as_array_buffers() {
        with(|ctx| {
            let mut map = NkMap::new().with("user_id", "u");
            map.insert_data("my_key", NkValue::Bytes(vec![1, 2]));
            let value = to_js(&ctx, &NkValue::Map(map)).unwrap();
            ctx.globals().set("v", value).unwrap();
            let ok: bool = ctx
                .eval("v.userId === 'u' && v.my_key instanceof ArrayBuffer && new Uint8Array(v.my_key)[1] === 2")
                .unwrap();
            assert!(ok);
        });
    }
}

//! JavaScript values ⇄ Rust, without panics on any input.
//!
//! JSON crosses the boundary as text through QuickJS's own `JSON.parse` / `JSON.stringify`:
//! objects the script builds become exactly the JSON a JavaScript developer expects
//! (`undefined` members dropped, `NaN` → `null`, `toJSON` honoured), and what cannot be JSON is
//! a `TypeError` thrown into the script (a cyclic object: "circular reference"; a BigInt).
//! Nesting deeper than the interpreter's stack allows is a `RangeError`, never a crash.

use rquickjs::object::Property;
use rquickjs::{Array, Ctx, Exception, IntoAtom, IntoJs, Object, Value};

/// Reads argument `index` (missing arguments are `undefined`).
pub(crate) fn arg<'a, 'js>(args: &'a [Value<'js>], index: usize) -> Option<&'a Value<'js>> {
    args.get(index).filter(|v| !v.is_undefined())
}

/// A JS string as Rust text; `None` for anything else. Lone surrogates (which UTF-8 cannot
/// hold) make the string unreadable: `None` as well.
pub(crate) fn string(value: &Value<'_>) -> Option<String> {
    value.as_string().and_then(|s| s.to_string().ok())
}

/// An integral JS number (as Nakama's `getJsInt`: goja exports integral numbers as int64).
/// Fractions, NaN, infinities and values outside i64 are `None`.
pub(crate) fn integer(value: &Value<'_>) -> Option<i64> {
    if let Some(i) = value.as_int() {
        return Some(i64::from(i));
    }
    let f = value.as_float()?;
    // i64::MAX as f64 rounds up to 2^63, which is out of range: compare with `<`.
    (f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
}

/// A plain object (not an array, function or other callable): what Nakama accepts where it
/// exports a value to `map[string]interface{}`.
pub(crate) fn plain_object<'a, 'js>(value: &'a Value<'js>) -> Option<&'a Object<'js>> {
    if value.is_array() || value.is_function() {
        return None;
    }
    value.as_object()
}

/// The elements of a JS array; `None` if `value` is not an array.
pub(crate) fn array_items<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
) -> Option<rquickjs::Result<Vec<Value<'js>>>> {
    let array = value.as_array()?;
    Some(bounded_items(ctx, array))
}

/// The length of an array. Read as a number: rquickjs's `Array::len` (and `Array::iter`)
/// assert that it fits an `i32` and panic past it (`l.length = 3e9` in a script).
pub(crate) fn array_length(array: &Array<'_>) -> rquickjs::Result<usize> {
    let length: f64 = array.as_object().get("length")?;
    // A JS array length is a whole number below 2^32.
    Ok(length as usize)
}

/// The items of an array, refused with a `RangeError` past
/// [`MAX_CONVERTED_VALUES`](metafi_runtime::nk_api::MAX_CONVERTED_VALUES) before anything is
/// reserved.
fn bounded_items<'js>(ctx: &Ctx<'js>, array: &Array<'js>) -> rquickjs::Result<Vec<Value<'js>>> {
    let length = array_length(array)?;
    let limit = metafi_runtime::nk_api::MAX_CONVERTED_VALUES;
    if length > limit {
        return Err(Exception::throw_range(
            ctx,
            &format!("array too long: {length} items (at most {limit})"),
        ));
    }
    (0..length).map(|i| array.get(i)).collect()
}

/// `JSON.stringify(value)` as Rust text; `Ok(None)` for values JSON leaves out (`undefined`,
/// functions). Errors are exceptions pending in `ctx` (cycles, BigInt, a throwing `toJSON`).
pub(crate) fn to_json_text<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
) -> rquickjs::Result<Option<String>> {
    match ctx.json_stringify(value)? {
        Some(text) => text.to_string().map(Some),
        None => Ok(None),
    }
}

/// Stored JSON text (object values, metadata, wallets) as a JS value; `{}` when empty.
pub(crate) fn from_json_text<'js>(ctx: &Ctx<'js>, text: &str) -> rquickjs::Result<Value<'js>> {
    if text.trim().is_empty() {
        return Ok(Object::new(ctx.clone())?.into_value());
    }
    ctx.json_parse(text)
}

/// A JS array of `items`.
pub(crate) fn array_of<'js, T>(
    ctx: &Ctx<'js>,
    items: impl IntoIterator<Item = T>,
    mut convert: impl FnMut(T) -> rquickjs::Result<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let array = Array::new(ctx.clone())?;
    for (i, item) in items.into_iter().enumerate() {
        array.set(i, convert(item)?)?;
    }
    Ok(array.into_value())
}

/// Defines `object[key] = value` (writable, enumerable, configurable: as an assignment would
/// make it) without running a setter of that name on the prototype chain, as Nakama's
/// objects of Go data never do.
pub(crate) fn define<'js>(
    object: &Object<'js>,
    key: impl IntoAtom<'js>,
    value: impl IntoJs<'js>,
) -> rquickjs::Result<()> {
    object.prop(
        key,
        Property::from(value).writable().enumerable().configurable(),
    )
}

/// A JS object whose values are string arrays (`headers`, `queryParams`), its keys defined.
pub(crate) fn string_lists<'js, K, L, V>(
    ctx: &Ctx<'js>,
    entries: impl IntoIterator<Item = (K, L)>,
) -> rquickjs::Result<Object<'js>>
where
    K: AsRef<str>,
    L: AsRef<[V]>,
    V: AsRef<str>,
{
    let object = Object::new(ctx.clone())?;
    for (key, values) in entries {
        let list = array_of(ctx, values.as_ref(), |v| {
            Ok(rquickjs::String::from_str(ctx.clone(), v.as_ref())?.into_value())
        })?;
        define(&object, key.as_ref(), list)?;
    }
    Ok(object)
}

/// A JS object of string values (`vars`, `env`), its keys defined.
pub(crate) fn string_map<'js, 'a>(
    ctx: &Ctx<'js>,
    entries: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    for (key, value) in entries {
        define(&object, key.as_str(), value.as_str())?;
    }
    Ok(object)
}

/// What a before hook returned, as `JSON.stringify` wrote it, read back into proto names
/// (`refreshToken` → `refresh_token`; map fields' keys unchanged).
pub(crate) fn hook_result(text: &str) -> serde_json::Result<serde_json::Value> {
    metafi_runtime::hooks::from_js_text(text)
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
    fn string_objects_define_their_keys_past_a_setter_on_object_prototype() {
        with(|ctx| {
            ctx.eval::<(), _>(
                "var stolen = []; ['X-Game-Build', 'region'].forEach(function (k) { \
                 Object.defineProperty(Object.prototype, k, \
                 { set: function (v) { stolen.push(k); }, configurable: true }); });",
            )
            .unwrap();
            let headers = string_lists(&ctx, [("X-Game-Build", ["41"])]).unwrap();
            let env = [("region".to_owned(), "eu".to_owned())];
            let map = string_map(&ctx, env.iter().map(|(k, v)| (k, v))).unwrap();
            let describe: rquickjs::Function<'_> = ctx
                .eval(
                    "(function (h, m) { return [stolen.length, JSON.stringify(h), \
                     JSON.stringify(m), Object.keys(h).concat(Object.keys(m)).every(function (k) { \
                       var d = Object.getOwnPropertyDescriptor(k === 'region' ? m : h, k); \
                       return d.writable && d.enumerable && d.configurable; })].join('|'); })",
                )
                .unwrap();
            let seen: String = describe.call((headers, map)).unwrap();
            assert_eq!(seen, r#"0|{"X-Game-Build":["41"]}|{"region":"eu"}|true"#);
        });
    }

    #[test]
    fn integers_are_integral_numbers_in_range() {
        with(|ctx| {
            let eval = |code: &str| -> Value<'_> { ctx.eval(code).unwrap() };
            assert_eq!(integer(&eval("3")), Some(3));
            assert_eq!(integer(&eval("3.0")), Some(3));
            assert_eq!(integer(&eval("-2e15")), Some(-2_000_000_000_000_000));
            assert_eq!(integer(&eval("3.5")), None);
            assert_eq!(integer(&eval("NaN")), None);
            assert_eq!(integer(&eval("Infinity")), None);
            assert_eq!(integer(&eval("1e300")), None);
            assert_eq!(integer(&eval("'3'")), None);
        });
    }

    #[test]
    fn unrepresentable_values_throw_instead_of_panicking() {
        with(|ctx| {
            let cyclic: Value<'_> = ctx.eval("var c = {}; c.self = c; c").unwrap();
            assert!(to_json_text(&ctx, cyclic).is_err());
            let message = ctx
                .catch()
                .as_object()
                .unwrap()
                .get::<_, String>("message")
                .unwrap();
            assert!(message.contains("circular"), "{message}");

            let big: Value<'_> = ctx.eval("({ n: 10n ** 30n })").unwrap();
            assert!(to_json_text(&ctx, big).is_err());
            ctx.catch();

            let undefined = Value::new_undefined(ctx.clone());
            assert_eq!(to_json_text(&ctx, undefined).unwrap(), None);

            let odd: Value<'_> = ctx
                .eval("({ a: undefined, b: NaN, c: 1e308 * 10, d: [undefined] })")
                .unwrap();
            assert_eq!(
                to_json_text(&ctx, odd).unwrap().unwrap(),
                r#"{"b":null,"c":null,"d":[null]}"#
            );

            let surrogate: Value<'_> = ctx.eval("'\\ud800'").unwrap();
            assert_eq!(string(&surrogate), None);
        });
    }

    #[test]
    fn stored_json_becomes_js_values() {
        with(|ctx| {
            let value = from_json_text(&ctx, r#"{"a":[1,2.5,"x"],"b":null}"#).unwrap();
            assert_eq!(
                to_json_text(&ctx, value).unwrap().unwrap(),
                r#"{"a":[1,2.5,"x"],"b":null}"#
            );
            let empty = from_json_text(&ctx, "").unwrap();
            assert!(empty.is_object());
            assert!(from_json_text(&ctx, "{nope").is_err());
            ctx.catch();
        });
    }
}

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

// Object keys are read through QuickJS's C API (`OwnKeys`, `JS_GetProperty` with the key's
// atom): rquickjs offers keys only as text, and a key's atom is what the field-name cache
// knows. Each unsafe block uses values of the live context the reader was given.
#![allow(unsafe_code)]

use metafi_runtime::hooks::{MAP_FIELDS, proto_name};
use metafi_runtime::nk_api::ValueBudget;
use rquickjs::atom::PredefinedAtom;
use rquickjs::{Atom, Ctx, Object, Type, Value, qjs};
use serde_json::{Map, Number, Value as Json};

use crate::hook_value::FieldNames;

/// Deeper than this is read by the text path (the limit `JSON.stringify` has none of; a
/// request is a few levels deep).
pub(crate) const MAX_DEPTH: usize = 64;

/// What the walk found.
pub(crate) enum Walk {
    Plain(Json),
    /// Not plain data: read it through `JSON.stringify`.
    Unplain,
}

/// Reads `value` (not `undefined` or `null`: the caller has handled those) in proto names;
/// keys whose atom `names` holds are not read from QuickJS as text.
pub(crate) fn read<'js>(value: &Value<'js>, names: &FieldNames) -> rquickjs::Result<Walk> {
    let mut reader = Reader {
        names,
        budget: ValueBudget::default(),
    };
    Ok(match reader.walk(value, value.type_of(), true, 0)? {
        Some(json) => Walk::Plain(json),
        None => Walk::Unplain,
    })
}

struct Reader<'a> {
    names: &'a FieldNames,
    budget: ValueBudget,
}

impl Reader<'_> {
    /// `None`: not plain data.
    fn walk<'js>(
        &mut self,
        value: &Value<'js>,
        // `value.type_of()`, which the caller has (it asks QuickJS up to six questions).
        ty: Type,
        rename: bool,
        depth: usize,
    ) -> rquickjs::Result<Option<Json>> {
        Ok(match ty {
            Type::Null => Some(Json::Null),
            Type::Bool => value.as_bool().map(Json::Bool),
            Type::Int => value.as_int().map(Json::from),
            Type::Float => value.as_float().and_then(number),
            Type::String => match value.as_string().map(|s| s.to_string()) {
                Some(Ok(text)) => Some(Json::String(text)),
                _ => None,
            },
            Type::Array if depth < MAX_DEPTH => match value.as_array() {
                // A sparse array's length is not its size (`a[1e9] = 1`): past the item
                // budget the text path reads it, within the VM's memory cap.
                Some(array)
                    if plain(array.as_object(), true, self.names.intrinsics())?
                        && self.budget.take(array.len()).is_ok() =>
                {
                    let mut items = Vec::with_capacity(array.len());
                    for i in 0..array.len() {
                        let item: Value<'js> = array.get(i)?;
                        match self.member(&item, rename, depth)? {
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
                Some(object) if plain(object, false, self.names.intrinsics())? => {
                    self.object(object, rename, depth)?
                }
                _ => None,
            },
            _ => None,
        })
    }

    /// A plain object's own enumerable string-keyed properties, in property order.
    fn object<'js>(
        &mut self,
        object: &Object<'js>,
        rename: bool,
        depth: usize,
    ) -> rquickjs::Result<Option<Json>> {
        let ctx = object.ctx();
        let keys = OwnKeys::of(object)?;
        let mut map = Map::new();
        for &atom in keys.atoms() {
            if self.budget.take(1).is_err() {
                return Ok(None);
            }
            // SAFETY: `object` and `atom` are live in `ctx`; the answer is owned (or
            // JS_EXCEPTION, with the exception pending: a getter threw).
            let item = unsafe { qjs::JS_GetProperty(ctx.as_raw().as_ptr(), object.as_raw(), atom) };
            if unsafe { qjs::JS_IsException(item) } {
                return Err(rquickjs::Error::Exception);
            }
            // SAFETY: owned, from `ctx`'s runtime.
            let item = unsafe { Value::from_raw(ctx.clone(), item) };
            let cached = if rename {
                self.names.proto_name(atom)
            } else {
                None
            };
            let key = match cached {
                Some(key) => key,
                None => match atom_text(ctx, atom) {
                    Some(text) if rename => proto_name(&text),
                    Some(text) => text,
                    None => return Ok(None),
                },
            };
            let inner = rename && !MAP_FIELDS.contains(&key.as_str());
            match self.member(&item, inner, depth)? {
                Member::Value(json) => {
                    map.insert(key, json);
                }
                Member::Skipped => {}
                Member::Unplain => return Ok(None),
            }
        }
        Ok(Some(Json::Object(map)))
    }

    fn member<'js>(
        &mut self,
        item: &Value<'js>,
        rename: bool,
        depth: usize,
    ) -> rquickjs::Result<Member> {
        let ty = item.type_of();
        Ok(match ty {
            Type::Undefined
            | Type::Uninitialized
            | Type::Function
            | Type::Constructor
            | Type::Symbol => Member::Skipped,
            _ => match self.walk(item, ty, rename, depth + 1)? {
                Some(json) => Member::Value(json),
                None => Member::Unplain,
            },
        })
    }
}

enum Member {
    Value(Json),
    /// `undefined`, a function or a symbol: left out of an object, `null` in an array.
    Skipped,
    Unplain,
}

/// The own enumerable string keys of an object (`JSON.stringify`'s list), freed on drop.
struct OwnKeys<'js> {
    ctx: Ctx<'js>,
    table: *mut qjs::JSPropertyEnum,
    len: u32,
}

impl<'js> OwnKeys<'js> {
    fn of(object: &Object<'js>) -> rquickjs::Result<OwnKeys<'js>> {
        let ctx = object.ctx().clone();
        let mut table = std::ptr::null_mut();
        let mut len = 0;
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as _;
        // SAFETY: `object` is live in `ctx`; on success QuickJS hands over `table`.
        let status = unsafe {
            qjs::JS_GetOwnPropertyNames(
                ctx.as_raw().as_ptr(),
                &mut table,
                &mut len,
                object.as_raw(),
                flags,
            )
        };
        if status < 0 {
            return Err(rquickjs::Error::Exception);
        }
        Ok(OwnKeys { ctx, table, len })
    }

    fn atoms(&self) -> impl Iterator<Item = &qjs::JSAtom> + '_ {
        (0..self.len as usize).map(|i| {
            // SAFETY: `table` has `len` entries until drop.
            unsafe { &(*self.table.add(i)).atom }
        })
    }
}

impl Drop for OwnKeys<'_> {
    fn drop(&mut self) {
        if !self.table.is_null() {
            // SAFETY: the table and its atoms, as `JS_GetOwnPropertyNames` gave them.
            unsafe { qjs::JS_FreePropertyEnum(self.ctx.as_raw().as_ptr(), self.table, self.len) };
        }
    }
}

/// An atom's text; `None` if it is not valid UTF-8 (a lone surrogate), which the text path
/// then reads.
fn atom_text(ctx: &Ctx<'_>, atom: qjs::JSAtom) -> Option<String> {
    let raw = ctx.as_raw().as_ptr();
    let mut len = 0;
    // SAFETY: `atom` is live in `ctx`; the C string is freed below.
    let text = unsafe { qjs::JS_AtomToCStringLen(raw, &mut len, atom) };
    if text.is_null() {
        // Out of memory: the exception QuickJS left pending is not this reader's; the text
        // path meets the same condition and reports it.
        return None;
    }
    // SAFETY: QuickJS wrote `len` bytes at `text`.
    let bytes = unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len as usize) };
    let owned = std::str::from_utf8(bytes).ok().map(str::to_owned);
    unsafe { qjs::JS_FreeCString(raw, text) };
    owned
}

/// Whether `JSON.stringify` would read `object` as plain data: no `toJSON` (own or
/// inherited), and a plain object's prototype is `Object.prototype` (or none), an array's
/// `Array.prototype`, whose own prototype is `Object.prototype`. Told apart by the chain's
/// length, so boxed primitives, dates, maps and class instances are not plain (class
/// instances are read by the text path, which gives the same answer).
///
/// An ordinary object or array whose prototype is the intrinsic one — every object a hook
/// builds with a literal or gets from the host — is answered by [`Intrinsics::plain`]
/// without a property lookup through the chain.
fn plain<'js>(
    object: &Object<'js>,
    array: bool,
    intrinsics: &Intrinsics,
) -> rquickjs::Result<bool> {
    let raw = object.ctx().as_raw().as_ptr();
    // SAFETY: `object` is a live value of the context `raw`.
    if let Some(plain) = unsafe { intrinsics.plain(raw, object.as_raw(), array)? } {
        return Ok(plain);
    }
    // The predefined atom: no text to look up.
    let to_json = Atom::from_predefined(object.ctx().clone(), PredefinedAtom::ToJSON);
    if !object.get::<_, Value<'js>>(to_json)?.is_undefined() {
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

/// `Object.prototype` and `Array.prototype` of a VM, the class ids of ordinary objects and
/// arrays, and the `toJSON` atom, taken from a new object and a new array (the intrinsics,
/// whatever a script did to the globals). Holds one reference on each prototype;
/// [`Intrinsics::release`] drops them before the VM's context goes.
#[derive(Default)]
pub(crate) struct Intrinsics {
    taken: std::cell::Cell<Option<Taken>>,
}

#[derive(Clone, Copy)]
struct Taken {
    object_proto: qjs::JSValue,
    array_proto: qjs::JSValue,
    object_class: qjs::JSClassID,
    array_class: qjs::JSClassID,
    to_json: qjs::JSAtom,
}

impl Intrinsics {
    /// Frees the prototypes held. Called while the VM's context is alive.
    pub(crate) fn release(&self, ctx: &Ctx<'_>) {
        if let Some(taken) = self.taken.take() {
            let raw = ctx.as_raw().as_ptr();
            // SAFETY: each holds one reference, taken in `taken`.
            unsafe {
                qjs::JS_FreeValue(raw, taken.object_proto);
                qjs::JS_FreeValue(raw, taken.array_proto);
                qjs::JS_FreeAtom(raw, taken.to_json);
            }
        }
    }

    /// Whether `object` is plain data for `JSON.stringify` when it is an ordinary object (an
    /// array when `array`) whose prototype is the intrinsic one: then its `toJSON` can only
    /// be its own, `Array.prototype`'s (for an array, whose prototype must then still be
    /// `Object.prototype`) or `Object.prototype`'s, whose prototype is always `null`. Own
    /// properties are looked up without running a getter; a `toJSON` getter sends the
    /// object to the text path, where `JSON.stringify` runs it. `None`: any other object,
    /// for the general check.
    unsafe fn plain(
        &self,
        ctx: *mut qjs::JSContext,
        object: qjs::JSValue,
        array: bool,
    ) -> rquickjs::Result<Option<bool>> {
        // SAFETY: the caller's contract.
        let Some(taken) = (unsafe { self.taken(ctx) }) else {
            return Ok(None);
        };
        let (class, proto) = if array {
            (taken.array_class, taken.array_proto)
        } else {
            (taken.object_class, taken.object_proto)
        };
        // SAFETY: `object` is live; an ordinary object's or array's prototype is read
        // without running code (only a proxy's would, and a proxy's class differs).
        unsafe {
            if qjs::JS_GetClassID(object) != class || !has_prototype(ctx, object, proto) {
                return Ok(None);
            }
            if array && !has_prototype(ctx, taken.array_proto, taken.object_proto) {
                return Ok(None);
            }
            let holders: &[qjs::JSValue] = if array {
                &[object, taken.array_proto, taken.object_proto]
            } else {
                &[object, taken.object_proto]
            };
            for &holder in holders {
                match qjs::JS_GetOwnProperty(ctx, std::ptr::null_mut(), holder, taken.to_json) {
                    0 => {}
                    1 => return Ok(Some(false)),
                    _ => return Err(rquickjs::Error::Exception),
                }
            }
        }
        Ok(Some(true))
    }

    /// The intrinsics, taken on the first call; `None` (with nothing pending) when QuickJS
    /// could not allocate the probes, and the general check answers.
    unsafe fn taken(&self, ctx: *mut qjs::JSContext) -> Option<Taken> {
        if let Some(taken) = self.taken.get() {
            return Some(taken);
        }
        // SAFETY: `ctx` is live; the probes are freed here, the prototypes kept.
        unsafe {
            let object = qjs::JS_NewObject(ctx);
            let array = qjs::JS_NewArray(ctx);
            let to_json = qjs::JS_NewAtom(ctx, c"toJSON".as_ptr());
            if qjs::JS_IsException(object)
                || qjs::JS_IsException(array)
                || to_json == qjs::JS_ATOM_NULL
            {
                qjs::JS_FreeValue(ctx, object);
                qjs::JS_FreeValue(ctx, array);
                qjs::JS_FreeAtom(ctx, to_json);
                qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                return None;
            }
            let taken = Taken {
                object_proto: qjs::JS_GetPrototype(ctx, object),
                array_proto: qjs::JS_GetPrototype(ctx, array),
                object_class: qjs::JS_GetClassID(object),
                array_class: qjs::JS_GetClassID(array),
                to_json,
            };
            qjs::JS_FreeValue(ctx, object);
            qjs::JS_FreeValue(ctx, array);
            self.taken.set(Some(taken));
            Some(taken)
        }
    }
}

/// Whether `object`'s prototype is `proto` (an ordinary object's or array's prototype: no
/// code runs).
unsafe fn has_prototype(
    ctx: *mut qjs::JSContext,
    object: qjs::JSValue,
    proto: qjs::JSValue,
) -> bool {
    // SAFETY: the caller's contract; the answer is a new reference, freed here.
    unsafe {
        let actual = qjs::JS_GetPrototype(ctx, object);
        let same = qjs::JS_VALUE_GET_TAG(actual) == qjs::JS_VALUE_GET_TAG(proto)
            && qjs::JS_VALUE_GET_PTR(actual) == qjs::JS_VALUE_GET_PTR(proto);
        qjs::JS_FreeValue(ctx, actual);
        same
    }
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

    /// `read` with a cache of its own, released before the context goes (it holds the
    /// intrinsic prototypes).
    fn read_once<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<Walk> {
        let names = FieldNames::default();
        let walk = read(value, &names);
        names.release(ctx);
        walk
    }

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
                let Walk::Plain(walked) = read_once(&ctx, &value).unwrap() else {
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
                "(function () { var o = {a: 1}; Object.defineProperty(o, 'toJSON', \
                 { value: function () { return 2; } }); return o; })()",
                "({get toJSON() { return function () { return 3; }; }})",
            ] {
                let value: Value<'_> = ctx.eval(code).unwrap();
                assert!(
                    matches!(read_once(&ctx, &value).unwrap(), Walk::Unplain),
                    "{code}: read as plain"
                );
            }
        });
    }

    #[test]
    fn a_to_json_on_the_intrinsic_prototypes_takes_the_text_path() {
        for (setup, code) in [
            (
                "Object.prototype.toJSON = function () { return 'p'; };",
                "({a: 1})",
            ),
            (
                "Object.prototype.toJSON = function () { return 'p'; };",
                "[1]",
            ),
            (
                "Array.prototype.toJSON = function () { return 'a'; };",
                "({list: [1, 2]})",
            ),
            (
                "Object.setPrototypeOf(Array.prototype, {toJSON: function () { return 'g'; }});",
                "({list: [1, 2]})",
            ),
        ] {
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                ctx.eval::<(), _>(setup).unwrap();
                let value: Value<'_> = ctx.eval(code).unwrap();
                assert!(
                    matches!(read_once(&ctx, &value).unwrap(), Walk::Unplain),
                    "{setup} {code}: read as plain"
                );
            });
        }
    }

    #[test]
    fn ordinary_objects_with_the_intrinsic_prototypes_are_answered_without_the_chain() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let intrinsics = Intrinsics::default();
            let raw = ctx.as_raw().as_ptr();
            for (code, array, expected) in [
                ("({a: 1})", false, Some(true)),
                ("[1, {b: 2}]", true, Some(true)),
                ("({toJSON: 1})", false, Some(false)),
                (
                    "(function () { var a = [1]; a.toJSON = 1; return a; })()",
                    true,
                    Some(false),
                ),
                // Everything else takes the general check.
                ("Object.create(null)", false, None),
                (
                    "(function () { class P {} return new P(); })()",
                    false,
                    None,
                ),
                ("new Proxy({}, {})", false, None),
                ("new Date(0)", false, None),
                (
                    "(function () { class L extends Array {} return new L(); })()",
                    true,
                    None,
                ),
            ] {
                let value: Value<'_> = ctx.eval(code).unwrap();
                // SAFETY: a live value of this context.
                let answer = unsafe { intrinsics.plain(raw, value.as_raw(), array) }.unwrap();
                assert_eq!(answer, expected, "{code}");
            }
            // A prototype changed after the intrinsics were taken is still compared with them.
            ctx.eval::<(), _>("Object.setPrototypeOf(Array.prototype, Object.create(null));")
                .unwrap();
            let value: Value<'_> = ctx.eval("[1]").unwrap();
            let answer = unsafe { intrinsics.plain(raw, value.as_raw(), true) }.unwrap();
            assert_eq!(answer, None);
            intrinsics.release(&ctx);
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
            assert!(read_once(&ctx, &value).is_err());
        });
    }
}

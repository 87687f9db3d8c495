//! A hook's request or answer (JSON in proto names) built straight into a JavaScript value
//! with QuickJS's C API, and the per-VM cache of field-name atoms that build and the result
//! reader (`hook_result.rs`) share.
//!
//! Building these objects through rquickjs's `Object::set` was the largest share of a JS hook
//! pair's instructions (`docs/RUNTIME.md`, "The hook call path and its cost"): every property
//! renamed the key into a new `String`, looked its atom up in QuickJS's atom table from the
//! text, and went through `JS_SetProperty`, which walks the prototype chain for a setter
//! before it adds the property. Here a proto field name is turned into its `lowerCamelCase`
//! atom once per VM ([`FieldNames`]) and each property is *defined* on the fresh object
//! (`JS_DefinePropertyValue`, as `JSON.parse` creates properties): no setter on
//! `Object.prototype` can intercept it, and a map key `__proto__` stays an own property.
//!
//! Only names in renamed positions are cached — proto field names, a fixed set — and at most
//! [`MAX_NAMES`] of them: keys inside map fields (`vars`, …; `hooks::MAP_FIELDS`) are user data
//! and get a fresh atom each time.

// The values are built with QuickJS's C API: rquickjs has no way to define a property by an
// atom it does not own, nor to make a value without a context reference per value. Each
// unsafe block works on the live context `build` was given and hands every value it makes
// either to its parent or back to the caller, or frees it.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashMap;

use metafi_runtime::HookValue;
use metafi_runtime::hooks::{MAP_FIELDS, proto_name};
use metafi_runtime::nk_api::camel_case;
use rquickjs::{Ctx, Value, qjs};
use rustc_hash::FxBuildHasher;
use serde_json::Value as Json;

use crate::hook_result::Intrinsics;
use crate::object_serializer::Entry;

/// Where each property of an object goes: `at[i]` is the index, among the properties as
/// serialized, of the `i`-th one in sorted order (the first `len`). Only for objects of at most
/// [`Order::MAX`] properties, all distinct.
#[derive(Clone, Copy)]
pub(crate) struct Order {
    pub(crate) len: u8,
    pub(crate) at: [u8; Order::MAX],
}

impl Order {
    pub(crate) const MAX: usize = 32;
}

/// How many objects a VM keeps for their shapes ([`FieldNames::keep_shapes`]).
pub(crate) const MAX_KEPT_SHAPES: usize = 4096;

/// How many field names a VM keeps atoms for. Nakama's messages have a few hundred field
/// names in all; the bound keeps a message type with unforeseen keys from growing the cache.
pub(crate) const MAX_NAMES: usize = 1024;

/// Proto field names ⇄ the atoms of their JavaScript spelling, for one VM. Holds one
/// reference on each atom it keeps; [`FieldNames::release`] drops them before the VM's
/// context goes.
/// A `&'static str`'s address and length: a struct field name known without its text.
type StaticName = (usize, usize);

/// A sequence of struct field names as serialized and where each property goes (`orders`).
type RecordedOrder = (Box<[StaticName]>, Order);

#[derive(Default)]
pub(crate) struct FieldNames {
    /// Proto name (`refresh_token`) → atom of its `lowerCamelCase` spelling (`refreshToken`).
    atoms: RefCell<HashMap<Box<str>, qjs::JSAtom, FxBuildHasher>>,
    /// Atom of a spelling in `atoms` → the proto name a result key of that spelling reads
    /// back as (`hooks::proto_name` of the spelling, which is the key it came from for every
    /// snake_case name).
    protos: RefCell<HashMap<qjs::JSAtom, Box<str>, FxBuildHasher>>,
    /// A struct field name's address and length (a `&'static str` from a `Serialize` derive)
    /// → its atom in `atoms`: found by two words, without hashing or comparing the text
    /// (`object_serializer.rs`). The same name at two addresses has two entries, one atom.
    /// With each atom, whether the name is a map field's (`hooks::MAP_FIELDS`: no renaming
    /// below it), so that is not looked up by text per property either.
    statics: RefCell<HashMap<StaticName, (qjs::JSAtom, bool), FxBuildHasher>>,
    /// The definition order of the objects whose keys are all struct field names: per
    /// sequence of names as serialized (by address), where each property goes in the
    /// sorted order (`object_serializer.rs`, [`Order`]).
    orders: RefCell<HashMap<u64, RecordedOrder, FxBuildHasher>>,
    /// The properties of the objects a serialization is building, innermost last; empty
    /// between calls. Kept so that building an object allocates no list of its own.
    pub(crate) scratch: RefCell<Vec<Entry>>,
    /// Objects kept only for their shapes, and the key sequences they were kept for.
    shapes: RefCell<Shapes>,
    /// The prototypes the result reader compares with.
    intrinsics: Intrinsics,
}

/// QuickJS shares an object's shape (its property names, in order) through a hash of live
/// shapes, and frees a shape with the last object that has it. A hook's objects all die when
/// the call ends, so every call made each shape again, one property at a time: a new shape
/// cloned and hashed per property added, and freed at the end. One empty object and one
/// object per prefix of each key sequence, kept for the VM's life, keep those shapes alive, so
/// adding a property finds its next shape in the hash.
#[derive(Default)]
struct Shapes {
    /// Signatures (a hash of the key atoms in order) of the key sequences kept.
    seen: std::collections::HashSet<u64, FxBuildHasher>,
    kept: Vec<qjs::JSValue>,
}

impl FieldNames {
    /// The proto name a result object's key `atom` reads back as, if `atom` is a cached
    /// spelling.
    pub(crate) fn proto_name(&self, atom: qjs::JSAtom) -> Option<String> {
        self.protos
            .borrow()
            .get(&atom)
            .map(|name| String::from(&**name))
    }

    /// The prototypes the result reader compares with (`hook_result.rs`).
    pub(crate) fn intrinsics(&self) -> &Intrinsics {
        &self.intrinsics
    }

    /// How many key orders are recorded ([`FieldNames::keep_order`]).
    #[cfg(test)]
    pub(crate) fn orders_kept(&self) -> usize {
        self.orders.borrow().len()
    }

    /// How many objects are kept for their shapes.
    #[cfg(test)]
    pub(crate) fn shapes_kept(&self) -> usize {
        self.shapes.borrow().kept.len()
    }

    /// Frees the atoms this cache holds. Called while the VM's context is alive.
    pub(crate) fn release(&self, ctx: &Ctx<'_>) {
        let raw = ctx.as_raw().as_ptr();
        // Empty unless a serialization was abandoned by a panic; its values die with `ctx`.
        self.scratch.borrow_mut().clear();
        let mut shapes = self.shapes.borrow_mut();
        shapes.seen.clear();
        self.intrinsics.release(ctx);
        for value in shapes.kept.drain(..) {
            // SAFETY: each kept object holds one reference, taken in `keep_shapes`.
            unsafe { qjs::JS_FreeValue(raw, value) };
        }
        self.protos.borrow_mut().clear();
        self.statics.borrow_mut().clear();
        self.orders.borrow_mut().clear();
        for (_, atom) in self.atoms.borrow_mut().drain() {
            // SAFETY: each cached atom holds one reference, taken in `atom`.
            unsafe { qjs::JS_FreeAtom(raw, atom) };
        }
    }

    /// The atom for `key` (its `lowerCamelCase` spelling when `rename`), and whether the
    /// caller owns a reference on it (must free it). `JS_ATOM_NULL` with an exception pending
    /// when QuickJS could not allocate it.
    pub(crate) unsafe fn atom(
        &self,
        ctx: *mut qjs::JSContext,
        key: &str,
        rename: bool,
    ) -> (qjs::JSAtom, bool) {
        if !rename {
            // SAFETY: `key` is valid UTF-8 of `key.len()` bytes.
            return (
                unsafe { qjs::JS_NewAtomLen(ctx, key.as_ptr().cast(), key.len() as _) },
                true,
            );
        }
        if let Some(&atom) = self.atoms.borrow().get(key) {
            return (atom, false);
        }
        let spelled = camel_case(key);
        // SAFETY: as above.
        let atom = unsafe { qjs::JS_NewAtomLen(ctx, spelled.as_ptr().cast(), spelled.len() as _) };
        if atom == qjs::JS_ATOM_NULL || self.atoms.borrow().len() >= MAX_NAMES {
            return (atom, true);
        }
        self.atoms.borrow_mut().insert(key.into(), atom);
        self.protos
            .borrow_mut()
            .insert(atom, proto_name(&spelled).into_boxed_str());
        (atom, false)
    }
}

impl FieldNames {
    /// The atom of the struct field name `name` (renamed), as [`FieldNames::atom`] gives it,
    /// found by the name's address once it is cached, and whether `name` is a map field's.
    pub(crate) unsafe fn field_atom(
        &self,
        ctx: *mut qjs::JSContext,
        name: &'static str,
    ) -> (qjs::JSAtom, bool, bool) {
        let address = (name.as_ptr() as usize, name.len());
        if let Some(&(atom, map_field)) = self.statics.borrow().get(&address) {
            return (atom, false, map_field);
        }
        // SAFETY: the caller's contract.
        let (atom, owned) = unsafe { self.atom(ctx, name, true) };
        let map_field = MAP_FIELDS.contains(&name);
        let mut statics = self.statics.borrow_mut();
        if !owned && statics.len() < MAX_NAMES {
            statics.insert(address, (atom, map_field));
        }
        (atom, owned, map_field)
    }

    /// The definition order recorded for the struct field names `names` (addresses, as
    /// serialized), if any.
    pub(crate) fn order(
        &self,
        signature: u64,
        names: impl ExactSizeIterator<Item = (usize, usize)>,
    ) -> Option<Order> {
        let orders = self.orders.borrow();
        let (kept, order) = orders.get(&signature)?;
        (kept.len() == names.len() && kept.iter().copied().eq(names)).then_some(*order)
    }

    /// Records `order` for the struct field names `names` (at most [`MAX_NAMES`] sequences).
    pub(crate) fn keep_order(&self, signature: u64, names: Box<[StaticName]>, order: Order) {
        let mut orders = self.orders.borrow_mut();
        if orders.len() < MAX_NAMES {
            orders.insert(signature, (names, order));
        }
    }

    /// Keeps the shapes of an object with the keys of `keys` in order (all cached field names)
    /// alive, the first time that sequence is seen and while fewer than [`MAX_KEPT_SHAPES`]
    /// objects are kept ([`Shapes`]).
    unsafe fn keep_shapes(
        &self,
        ctx: *mut qjs::JSContext,
        signature: u64,
        keys: &serde_json::Map<String, Json>,
    ) {
        if self.shapes_seen(signature) {
            return;
        }
        let atoms = {
            let atoms = self.atoms.borrow();
            let Some(atoms) = keys
                .keys()
                .map(|key| atoms.get(key.as_str()).copied())
                .collect::<Option<Vec<_>>>()
            else {
                return;
            };
            atoms
        };
        // SAFETY: the caller's contract; the atoms are held by the cache.
        unsafe { self.keep_signed_shapes(ctx, signature, &atoms) };
    }

    /// Whether the shapes of the key sequence with `signature` are kept already.
    pub(crate) fn shapes_seen(&self, signature: u64) -> bool {
        self.shapes.borrow().seen.contains(&signature)
    }

    /// Keeps the shapes of an object with the keys `atoms` in order (cached field names, whose
    /// sequence has `signature`), and remembers the sequence as seen.
    pub(crate) unsafe fn keep_signed_shapes(
        &self,
        ctx: *mut qjs::JSContext,
        signature: u64,
        atoms: &[qjs::JSAtom],
    ) {
        self.shapes.borrow_mut().seen.insert(signature);
        // SAFETY: the caller's contract; the atoms are held by the cache.
        unsafe { self.keep_shapes_of(ctx, None, atoms) };
    }

    /// Keeps alive the shapes of an object with prototype `proto` (`None`: `Object.prototype`)
    /// and the keys `atoms` in order, one object per prefix, while fewer than
    /// [`MAX_KEPT_SHAPES`] objects are kept. The atoms must outlive the kept objects (they
    /// are held by a cache released after them, or by the objects' shapes).
    pub(crate) unsafe fn keep_shapes_of(
        &self,
        ctx: *mut qjs::JSContext,
        proto: Option<qjs::JSValue>,
        atoms: &[qjs::JSAtom],
    ) {
        let mut shapes = self.shapes.borrow_mut();
        if shapes.kept.len() + atoms.len() >= MAX_KEPT_SHAPES {
            return;
        }
        for len in 0..=atoms.len() {
            // SAFETY: `ctx` is live; the object is kept (one reference) or freed.
            let skeleton = unsafe {
                match proto {
                    Some(proto) => qjs::JS_NewObjectProto(ctx, proto),
                    None => qjs::JS_NewObject(ctx),
                }
            };
            if unsafe { qjs::JS_IsException(skeleton) } {
                // Out of memory: the shapes are only an optimisation; leave the call's own
                // allocations to report it.
                unsafe { qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx)) };
                return;
            }
            for &atom in &atoms[..len] {
                // SAFETY: `atom` is live; `undefined` needs no reference.
                let defined = unsafe {
                    qjs::JS_DefinePropertyValue(
                        ctx,
                        skeleton,
                        atom,
                        qjs::JS_UNDEFINED,
                        qjs::JS_PROP_C_W_E as _,
                    )
                };
                if defined < 0 {
                    unsafe {
                        qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
                        qjs::JS_FreeValue(ctx, skeleton);
                    }
                    return;
                }
            }
            shapes.kept.push(skeleton);
        }
    }
}

/// `json` as the JavaScript value Nakama's runtime shows a hook: object keys in
/// `lowerCamelCase` when `rename`, except inside map fields, whose keys stay as they are;
/// numbers that fit an `i32` as integers, others as floats (as `JSON.parse` makes them).
pub(crate) fn build<'js>(
    ctx: &Ctx<'js>,
    names: &FieldNames,
    json: &Json,
    rename: bool,
) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context of `ctx`; `new_value` returns an owned value or
    // `JS_EXCEPTION`.
    let value = unsafe { new_value(raw, names, json, rename) };
    if unsafe { qjs::JS_IsException(value) } {
        return Err(rquickjs::Error::Exception);
    }
    // SAFETY: `value` is owned and belongs to `ctx`'s runtime.
    Ok(unsafe { Value::from_raw(ctx.clone(), value) })
}

/// A hook's request or answer as a JavaScript value with Nakama's `lowerCamelCase` names: a
/// message serialized straight into objects (`object_serializer.rs`), JSON walked.
pub(crate) fn build_value<'js>(
    ctx: &Ctx<'js>,
    names: &FieldNames,
    value: HookValue,
) -> rquickjs::Result<Value<'js>> {
    match value {
        HookValue::Json(json) => build(ctx, names, &json, true),
        HookValue::Message(message) => {
            let message: &dyn erased_serde::Serialize = &*message;
            crate::object_serializer::build(ctx, names, message)
        }
    }
}

/// The error of a hook value that cannot be encoded (what `serde_json::to_value` refuses).
pub(crate) fn unencodable(why: &dyn std::fmt::Display) -> rquickjs::Error {
    rquickjs::Error::new_from_js_message("hook value", "JSON", why.to_string())
}

/// An owned value, or `JS_EXCEPTION` with the exception pending in `ctx` (everything built so
/// far freed).
unsafe fn new_value(
    ctx: *mut qjs::JSContext,
    names: &FieldNames,
    json: &Json,
    rename: bool,
) -> qjs::JSValue {
    match json {
        Json::Null => qjs::JS_NULL,
        Json::Bool(true) => qjs::JS_TRUE,
        Json::Bool(false) => qjs::JS_FALSE,
        Json::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) => qjs::JS_MKVAL(qjs::JS_TAG_INT, i),
            None => qjs::JS_NewFloat64(n.as_f64().unwrap_or(f64::NAN)),
        },
        // SAFETY: valid UTF-8 of `s.len()` bytes.
        Json::String(s) => unsafe { qjs::JS_NewStringLen(ctx, s.as_ptr().cast(), s.len() as _) },
        Json::Array(items) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                // SAFETY: the caller's contract.
                let value = unsafe { new_value(ctx, names, item, rename) };
                if unsafe { qjs::JS_IsException(value) } {
                    for value in values {
                        unsafe { qjs::JS_FreeValue(ctx, value) };
                    }
                    return qjs::JS_EXCEPTION;
                }
                values.push(value);
            }
            let Ok(count) = i32::try_from(values.len()) else {
                for value in values {
                    unsafe { qjs::JS_FreeValue(ctx, value) };
                }
                // SAFETY: `ctx` is live; throws a RangeError and answers JS_EXCEPTION.
                return unsafe { qjs::JS_ThrowRangeError(ctx, c"array too long".as_ptr()) };
            };
            // SAFETY: takes ownership of the values, also on failure.
            unsafe { qjs::JS_NewArrayFrom(ctx, count, values.as_ptr()) }
        }
        Json::Object(map) => {
            // SAFETY: `ctx` is live.
            let object = unsafe { qjs::JS_NewObject(ctx) };
            if unsafe { qjs::JS_IsException(object) } {
                return object;
            }
            // The key sequence's signature, while every key is a cached field name.
            let mut signature = Some(SIGNATURE_START);
            for (key, item) in map {
                let keep = !rename || MAP_FIELDS.contains(&key.as_str());
                // SAFETY: the caller's contract.
                let value = unsafe { new_value(ctx, names, item, rename && !keep) };
                if unsafe { qjs::JS_IsException(value) } {
                    unsafe { qjs::JS_FreeValue(ctx, object) };
                    return value;
                }
                let (atom, owned) = unsafe { names.atom(ctx, key, rename) };
                signature = signature.filter(|_| !owned).map(|s| sign(s, atom));
                if atom == qjs::JS_ATOM_NULL {
                    unsafe {
                        qjs::JS_FreeValue(ctx, value);
                        qjs::JS_FreeValue(ctx, object);
                    }
                    return qjs::JS_EXCEPTION;
                }
                // SAFETY: takes ownership of `value`, also on failure; `atom` is live.
                let defined = unsafe {
                    qjs::JS_DefinePropertyValue(ctx, object, atom, value, qjs::JS_PROP_C_W_E as _)
                };
                if owned {
                    unsafe { qjs::JS_FreeAtom(ctx, atom) };
                }
                if defined < 0 {
                    unsafe { qjs::JS_FreeValue(ctx, object) };
                    return qjs::JS_EXCEPTION;
                }
            }
            if let Some(signature) = signature.filter(|_| rename) {
                // SAFETY: `ctx` is live.
                unsafe { names.keep_shapes(ctx, signature, map) };
            }
            object
        }
    }
}

/// A key sequence's shape signature before its first key (FNV-1a's offset basis).
pub(crate) const SIGNATURE_START: u64 = 0xcbf2_9ce4_8422_2325;

/// `signature` with the next key's `atom` mixed in (FNV-1a).
pub(crate) fn sign(signature: u64, atom: qjs::JSAtom) -> u64 {
    (signature ^ u64::from(atom)).wrapping_mul(0x0100_0000_01b3)
}

#[cfg(test)]
mod tests {
    use rquickjs::{Context, Runtime};
    use serde_json::json;

    use super::*;
    use crate::hook_result::{self, Walk};

    /// Builds `json`, runs `script` on it (as `v`), and reads the script's answer back as a
    /// before hook's result.
    fn round_trip(names: &FieldNames, ctx: &Ctx<'_>, json: &Json, script: &str) -> Json {
        let value = build(ctx, names, json, true).unwrap();
        ctx.globals().set("v", value).unwrap();
        let answer: Value<'_> = ctx.eval(script).unwrap();
        match hook_result::read(&answer, names).unwrap() {
            Walk::Plain(json) => json,
            Walk::Unplain => panic!("{script}: read as not plain"),
        }
    }

    #[test]
    fn cached_field_names_read_back_as_proto_names_and_map_keys_stay() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            let request = json!({
                "account": {"id": "d", "vars": {"some_key": "v", "camelKey": "w", "__proto__": "x", "7": "n"}},
                "create": true,
                "refresh_token": "r",
                "field_1_x": 1,
                "odd key-é": [1, {"inner_name": 2.5}],
            });
            // Twice: the second call finds every name in the cache.
            for _ in 0..2 {
                let back = round_trip(&names, &ctx, &request, "v");
                assert_eq!(
                    back,
                    json!({
                        "account": {"id": "d", "vars": {"some_key": "v", "camelKey": "w", "__proto__": "x", "7": "n"}},
                        "create": true,
                        "refresh_token": "r",
                        // camelCase `field1X` reads back as `hooks::proto_name` spells it.
                        "field1_x": 1,
                        "odd key-é": [1, {"inner_name": 2.5}],
                    })
                );
            }
            // What the script sees: camelCase outside map fields, map keys as sent, and
            // `__proto__` an own property, not the object's prototype.
            let seen: String = ctx
                .eval(
                    "[Object.keys(v).join(), Object.keys(v.account.vars).join(), \
                      Object.getPrototypeOf(v.account.vars) === Object.prototype, \
                      v.refreshToken, v['odd key-é'][1].innerName].join('|')",
                )
                .unwrap();
            assert_eq!(
                seen,
                "account,create,field1X,odd key-é,refreshToken|7,__proto__,camelKey,some_key|true|r|2.5"
            );
            names.release(&ctx);
        });
    }

    #[test]
    fn a_setter_on_object_prototype_does_not_intercept_fields() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            ctx.eval::<(), _>(
                "var stolen = []; Object.defineProperty(Object.prototype, 'userId', \
                 { set: function (x) { stolen.push(x); }, configurable: true });",
            )
            .unwrap();
            let value = build(&ctx, &names, &json!({"user_id": "u"}), true).unwrap();
            ctx.globals().set("v", value).unwrap();
            let seen: String = ctx
                .eval("stolen.length + '|' + Object.keys(v).join() + '|' + v.userId")
                .unwrap();
            assert_eq!(seen, "0|userId|u");
            names.release(&ctx);
        });
    }

    #[test]
    fn the_shapes_of_a_key_sequence_are_kept_once() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            let request = json!({"account": {"id": "d", "vars": {"k": "v"}}, "create": true});
            let first = build(&ctx, &names, &request, true).unwrap();
            // {} and {account}, {account, create}; {} and {id}, {id, vars}. Not the map
            // field's own keys: they are user data.
            assert_eq!(names.shapes.borrow().kept.len(), 6);
            drop(first);
            let again = build(&ctx, &names, &request, true).unwrap();
            assert_eq!(names.shapes.borrow().kept.len(), 6);
            // The kept objects are nowhere a script can reach, and change nothing it sees.
            ctx.globals().set("v", again).unwrap();
            let seen: String = ctx
                .eval("JSON.stringify(v) + '|' + Object.keys(v.account).join()")
                .unwrap();
            assert_eq!(
                seen,
                r#"{"account":{"id":"d","vars":{"k":"v"}},"create":true}|id,vars"#
            );
            names.release(&ctx);
            assert!(names.shapes.borrow().kept.is_empty());
        });
    }

    #[test]
    fn the_cache_stops_growing_at_its_bound() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        context.with(|ctx| {
            let many: serde_json::Map<String, Json> = (0..MAX_NAMES + 10)
                .map(|i| (format!("field_n{i}"), json!(i)))
                .collect();
            let value = build(&ctx, &names, &Json::Object(many), true).unwrap();
            assert_eq!(names.atoms.borrow().len(), MAX_NAMES);
            // Names past the bound still build and read back.
            let Walk::Plain(back) = hook_result::read(&value, &names).unwrap() else {
                panic!("read as not plain");
            };
            assert_eq!(back.as_object().map(|m| m.len()), Some(MAX_NAMES + 10));
            assert_eq!(back["field_n1033"], json!(1033));
            names.release(&ctx);
        });
    }
}

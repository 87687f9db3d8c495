//! What a script may not change for the calls after it (issue 14, "per-VM state poisoning").
//!
//! A VM serves one user's call after another, so anything a call changes in the VM is seen by
//! the next caller: a script that replaces `JSON.parse` or pollutes `Object.prototype` (often
//! by accident: `merge(target, JSON.parse(payload))` with a `"__proto__"` key) would change
//! every later call. Nakama makes its globals read-only after load (`js_read_only_globals`);
//! MetaFi does the same, more thoroughly, once every module's `InitModule` has run:
//!
//! - every intrinsic (what QuickJS defines before any module runs: `Object`, `Array`, `JSON`,
//!   `Math`, `Promise`, …) is frozen *deeply*: the object, its prototype chain, every function
//!   and object reachable from its properties and accessors, and the hidden intrinsics only
//!   reachable from instances (generator, async and iterator prototypes);
//! - the global bindings of the intrinsics are made read-only, so `JSON = {…}` changes nothing;
//! - the `nk` object, the logger prototype and `ctx.env` (one per VM, shared by every call)
//!   are frozen by the VM when it builds them.
//!
//! What modules themselves define at the top level (functions, `var` state) stays theirs to
//! change: per-VM state such as a counter keeps working (it is per VM, never shared between
//! VMs). Writing to a frozen object throws a `TypeError` in strict-mode code (`"use strict"`,
//! classes, most bundler output) and is silently ignored in sloppy code (modules are evaluated
//! as sloppy scripts unless they opt in).
//!
//! Freezing `Object.prototype` and `Error.prototype` would break ordinary code through
//! JavaScript's "override mistake": `this.name = "MyError"` in an error subclass, or
//! `obj.toString = …`, fail when the inherited property is read-only. As in SES (Hardened
//! JavaScript), those few properties of the frozen prototypes become accessors whose setter
//! defines an own property on the object written to, so overriding works and the prototype
//! stays unchanged.

use rquickjs::{Ctx, Function, Object};

/// Names of the global object's own string-keyed properties: called on a fresh context, the
/// intrinsics.
pub(crate) fn intrinsic_names(ctx: &Ctx<'_>) -> rquickjs::Result<Vec<String>> {
    ctx.eval("Reflect.ownKeys(globalThis).filter(function (k) { return typeof k === 'string'; })")
}

/// Freezes the intrinsics named `names` and the VM's shared objects `roots` (`nk`, the logger
/// prototype, `ctx.env`), deeply (see the module documentation).
pub(crate) fn freeze<'js>(
    ctx: &Ctx<'js>,
    names: &[String],
    roots: Vec<Object<'js>>,
) -> rquickjs::Result<()> {
    let freeze: Function<'js> = ctx.eval(FREEZE)?;
    freeze.call::<_, ()>((names.to_vec(), roots))
}

/// The freezing walk. Strict code, so a failure throws instead of passing silently.
const FREEZE: &str = r#"(function (names, roots) {
  "use strict";
  var global = globalThis;
  var seen = new Set([global]);
  var todo = [];
  function add(v) {
    if (((typeof v === "object" && v !== null) || typeof v === "function") && !seen.has(v)) {
      seen.add(v);
      todo.push(v);
    }
  }
  // Inherited properties scripts commonly override on their own objects.
  var overridable = ["constructor", "toString", "toLocaleString", "valueOf", "name", "message"];
  function tame(o) {
    if (!Object.prototype.hasOwnProperty.call(o, "constructor")) {
      return; // Not a prototype object.
    }
    overridable.forEach(function (key) {
      var d = Object.getOwnPropertyDescriptor(o, key);
      if (!d || !("value" in d) || !d.writable || !d.configurable) {
        return;
      }
      var value = d.value;
      var accessors = {
        get() { return value; },
        set(v) {
          if (this === o) {
            throw new TypeError("Cannot assign to read only property '" + String(key) + "' of a frozen intrinsic");
          }
          Object.defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true });
        },
      };
      Object.freeze(accessors.get);
      Object.freeze(accessors.set);
      Object.defineProperty(o, key, {
        get: accessors.get,
        set: accessors.set,
        enumerable: d.enumerable,
        configurable: false,
      });
    });
  }
  names.forEach(function (name) {
    var d = Object.getOwnPropertyDescriptor(global, name);
    if (!d) {
      return;
    }
    add(d.value);
    add(d.get);
    add(d.set);
    if (d.configurable) {
      var fixed = { configurable: false };
      if ("value" in d) {
        fixed.writable = false;
      }
      Object.defineProperty(global, name, fixed);
    }
  });
  roots.forEach(add);
  // Intrinsics no global names: reachable only from instances.
  add(Object.getPrototypeOf(function* () {}));
  add(Object.getPrototypeOf(async function () {}));
  add(Object.getPrototypeOf(async function* () {}));
  add(Object.getPrototypeOf((function* () {})()));
  add(Object.getPrototypeOf((async function* () {})()));
  add(Object.getPrototypeOf([][Symbol.iterator]()));
  add(Object.getPrototypeOf(new Map()[Symbol.iterator]()));
  add(Object.getPrototypeOf(new Set()[Symbol.iterator]()));
  add(Object.getPrototypeOf(""[Symbol.iterator]()));
  add(Object.getPrototypeOf(/a/[Symbol.matchAll]("")));
  while (todo.length > 0) {
    var o = todo.pop();
    add(Object.getPrototypeOf(o));
    Reflect.ownKeys(o).forEach(function (key) {
      var d = Object.getOwnPropertyDescriptor(o, key);
      if (d) {
        add(d.value);
        add(d.get);
        add(d.set);
      }
    });
    tame(o);
    Object.freeze(o);
  }
})"#;

//! Bounds on the array built-ins QuickJS runs as uninterruptible C loops (issue 14).
//!
//! QuickJS polls the interrupt handler (the call budget) in the bytecode interpreter and in a
//! few built-ins (`indexOf`, `includes`, `every`, `reduce`, …), but not in the C loops of
//! `reverse`, `sort`, `slice`, `splice`, `copyWithin`, `join`, `flat`, `concat`, `shift`,
//! `unshift`, … . Those loop over the receiver's `length`, which on an array-like object or a
//! sparse array can be 2^53 - 1 with no element behind it:
//! `Array.prototype.reverse.call({ length: 2 ** 53 - 1 })` would hold its VM thread for ever,
//! past any budget.
//!
//! No real array can be longer than the VM's memory cap allows (QuickJS stores an element in
//! 16 bytes), so these functions are wrapped to refuse, with a `RangeError`, a length over
//! `memory_limit_bytes / 16`: what they refuse could only be holes. Every other call goes
//! to the original built-in unchanged. The wrappers are installed before any module runs and
//! frozen with the other intrinsics (`freeze.rs`).

use rquickjs::{Ctx, Function};

/// Bytes QuickJS uses per array element (a `JSValue` on 64-bit targets).
const BYTES_PER_ELEMENT: usize = 16;

/// Wraps the unpolled array built-ins with the length bound for a VM capped at
/// `memory_limit_bytes`.
pub(crate) fn install(ctx: &Ctx<'_>, memory_limit_bytes: usize) -> rquickjs::Result<()> {
    let limit = (memory_limit_bytes / BYTES_PER_ELEMENT).max(1 << 16) as f64;
    let guard: Function<'_> = ctx.eval(GUARD)?;
    guard.call::<_, ()>((limit,))
}

const GUARD: &str = r#"(function (limit) {
  "use strict";
  var proto = Array.prototype;
  var spreadable = Symbol.isConcatSpreadable;
  function lengthOf(o) {
    var n = Math.trunc(Number(o.length));
    return n > 0 ? n : 0;
  }
  function refuse(name, length) {
    throw new RangeError("Array.prototype." + name + ": length " + length +
      " is longer than any array this VM can hold (" + limit +
      " elements under runtime.memory_limit_mb); refused instead of looping over holes");
  }
  function check(name, o) {
    if (o !== null && o !== undefined && (typeof o === "object" || typeof o === "function")) {
      var length = lengthOf(o);
      if (length > limit) {
        refuse(name, length);
      }
    }
  }
  function wrap(name, checkArguments) {
    var original = proto[name];
    if (typeof original !== "function") {
      return;
    }
    // Method syntax: named like the built-in, not a constructor, no `prototype`.
    var wrapped = {
      [name]() {
        check(name, this);
        if (checkArguments) {
          for (var i = 0; i < arguments.length; i++) {
            var a = arguments[i];
            if (a !== null && typeof a === "object" && (a[spreadable] || Array.isArray(a))) {
              check(name, a);
            }
          }
        }
        return original.apply(this, arguments);
      },
    }[name];
    Object.defineProperty(wrapped, "length", { value: original.length });
    Object.defineProperty(proto, name, {
      value: wrapped,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  ["reverse", "sort", "slice", "splice", "copyWithin", "fill", "join", "toString",
   "toLocaleString", "flat", "flatMap", "shift", "unshift", "toReversed", "toSorted",
   "toSpliced"].forEach(function (name) {
    wrap(name, false);
  });
  wrap("concat", true);
})"#;

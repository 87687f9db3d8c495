//! The `logger` argument: Nakama's JavaScript logger (`runtime_javascript_logger.go`).
//! `info/warn/error/debug(format, ...args)` format like Go's `fmt.Sprintf` and return the
//! text; `withField(key, value)` / `withFields(map)` return a logger whose `fields` are added
//! to every line; `getFields()` answers `fields`. Lines go to the server log with the engine,
//! the calling module and, as Nakama's, the call they were written in (`rpc_id`, or `api_id`
//! and `mode`, and `trace_id`: [`metafi_runtime::LogCall`]).
//!
//! One prototype per VM holds the methods; each logger is an object with that prototype and
//! its own `fields` object, empty in every logger MetaFi hands out, as in Nakama, whose RPC id
//! and hook name (`rpc_id`, `api_id`, `mode`) are fields of its Go logger, not of the
//! script's: before 2026-11-27 an RPC's or hook's logger had `fields.rpc_id`, which for a hook
//! showed the host's reserved id (`"\u0001before:authenticatedevice"`), and for a while after
//! that the server log did not name the call at all.

// A call's logger is built with QuickJS's C API ([`CallLoggers::build`]), as its `ctx` is
// (`context.rs`): each unsafe block works on the live context it was given and hands every
// value it makes to its parent, to the caller, or frees it.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::fmt::Write as _;
use std::rc::Rc;

use metafi_runtime::LogLevel;
use rquickjs::function::{Rest, This};
use rquickjs::{Ctx, Exception, Function, Object, Value, qjs};

use crate::convert;
use crate::hook_value::FieldNames;
use crate::vm::Shared;

/// What every logger of one VM shares: the atom of `fields`, made on the first call, and
/// whether the shapes of a logger and of its `fields` are kept ([`FieldNames::keep_shapes_of`]).
#[derive(Default)]
pub(crate) struct CallLoggers {
    fields: Cell<Option<qjs::JSAtom>>,
    shapes_kept: Cell<bool>,
}

impl CallLoggers {
    /// Frees the atom this holds. Called while the VM's context is alive.
    pub(crate) fn release(&self, ctx: &Ctx<'_>) {
        if let Some(atom) = self.fields.take() {
            // SAFETY: one reference, taken in `build`.
            unsafe { qjs::JS_FreeAtom(ctx.as_raw().as_ptr(), atom) };
        }
        self.shapes_kept.set(false);
    }

    /// A new logger for an RPC, a hook or `InitModule`: an object with the VM's logger
    /// prototype `proto` and its own empty `fields`, as every logger Nakama hands a script.
    /// `fields` is *defined*, so a setter of that name on `Object.prototype` cannot take it;
    /// built here because doing it in JavaScript took `Object.create` and
    /// `Object.defineProperty`, which reads its descriptor object property by property
    /// (≈ 2,300 instructions a call, `docs/RUNTIME.md`).
    pub(crate) fn build<'js>(
        &self,
        ctx: &Ctx<'js>,
        names: &FieldNames,
        proto: qjs::JSValue,
    ) -> rquickjs::Result<Value<'js>> {
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `raw` is the live context of `ctx` and `proto` one of its objects; every
        // value made is handed to its parent (`JS_DefinePropertyValue` takes it, also on
        // failure), to the caller, or freed.
        unsafe {
            let fields_atom = match self.fields.get() {
                Some(atom) => atom,
                None => {
                    let atom = qjs::JS_NewAtom(raw, c"fields".as_ptr());
                    if atom == qjs::JS_ATOM_NULL {
                        return Err(rquickjs::Error::Exception);
                    }
                    self.fields.set(Some(atom));
                    atom
                }
            };
            let fields = qjs::JS_NewObject(raw);
            if qjs::JS_IsException(fields) {
                return Err(rquickjs::Error::Exception);
            }
            let logger = qjs::JS_NewObjectProto(raw, proto);
            if qjs::JS_IsException(logger) {
                qjs::JS_FreeValue(raw, fields);
                return Err(rquickjs::Error::Exception);
            }
            if qjs::JS_DefinePropertyValue(
                raw,
                logger,
                fields_atom,
                fields,
                qjs::JS_PROP_C_W_E as _,
            ) < 0
            {
                qjs::JS_FreeValue(raw, logger);
                return Err(rquickjs::Error::Exception);
            }
            if !self.shapes_kept.replace(true) {
                names.keep_shapes_of(raw, Some(proto), &[fields_atom]);
            }
            Ok(Value::from_raw(ctx.clone(), logger))
        }
    }
}

/// Builds the prototype with the logger methods.
pub(crate) fn prototype<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let proto = Object::new(ctx.clone())?;
    for (name, level) in [
        ("debug", LogLevel::Debug),
        ("info", LogLevel::Info),
        ("warn", LogLevel::Warn),
        ("error", LogLevel::Error),
    ] {
        let shared = shared.clone();
        let method = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, this: This<Value<'js>>, args: Rest<Value<'js>>| {
                log(&ctx, &shared, level, &this.0, &args.0)
            },
        )?
        .with_name(name)?;
        proto.set(name, method)?;
    }
    let with_field = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>,
         this: This<Value<'js>>,
         args: Rest<Value<'js>>|
         -> rquickjs::Result<Object<'js>> {
            let key = convert::arg(&args.0, 0)
                .and_then(convert::string)
                .ok_or_else(|| Exception::throw_type(&ctx, "key argument must be a string"))?;
            let value = convert::arg(&args.0, 1)
                .filter(|v| v.is_string())
                .ok_or_else(|| Exception::throw_type(&ctx, "value argument must be a string"))?;
            let derived = derive(&ctx, &this.0)?;
            let fields: Object<'js> = derived.get("fields")?;
            convert::define(&fields, key, value.clone())?;
            Ok(derived)
        },
    )?
    .with_name("withField")?;
    proto.set("withField", with_field)?;
    let with_fields = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>,
         this: This<Value<'js>>,
         args: Rest<Value<'js>>|
         -> rquickjs::Result<Object<'js>> {
            let map = convert::arg(&args.0, 0)
                .and_then(convert::plain_object)
                .ok_or_else(|| Exception::throw_type(&ctx, "argument must be a map"))?;
            let derived = derive(&ctx, &this.0)?;
            let fields: Object<'js> = derived.get("fields")?;
            for entry in map.props::<String, Value<'js>>() {
                let (key, value) = entry?;
                convert::define(&fields, key, value)?;
            }
            Ok(derived)
        },
    )?
    .with_name("withFields")?;
    proto.set("withFields", with_fields)?;
    let get_fields = Function::new(
        ctx.clone(),
        |this: This<Value<'js>>| -> rquickjs::Result<Value<'js>> {
            match this.0.as_object() {
                Some(logger) => logger.get("fields"),
                None => Ok(Value::new_undefined(this.0.ctx().clone())),
            }
        },
    )?
    .with_name("getFields")?;
    proto.set("getFields", get_fields)?;
    Ok(proto)
}

/// A new logger with the prototype and a copy of the fields of `this` (defined, as Nakama's
/// are a Go map no setter of `Object.prototype` sees).
fn derive<'js>(ctx: &Ctx<'js>, this: &Value<'js>) -> rquickjs::Result<Object<'js>> {
    let this = this
        .as_object()
        .ok_or_else(|| Exception::throw_type(ctx, "logger method called without its logger"))?;
    let derived = Object::new(ctx.clone())?;
    derived.set_prototype(this.get_prototype().as_ref())?;
    let fields = Object::new(ctx.clone())?;
    if let Ok(Some(existing)) = this.get::<_, Option<Object<'js>>>("fields") {
        for entry in existing.props::<String, Value<'js>>() {
            let (key, value) = entry?;
            convert::define(&fields, key, value)?;
        }
    }
    convert::define(&derived, "fields", fields)?;
    Ok(derived)
}

fn log<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    level: LogLevel,
    this: &Value<'js>,
    args: &[Value<'js>],
) -> rquickjs::Result<String> {
    let format = args
        .first()
        .and_then(convert::string)
        .ok_or_else(|| Exception::throw_type(ctx, "invalid format argument: must be a string"))?;
    let values: Vec<Arg> = args[1..].iter().map(|v| Arg::from_js(ctx, v)).collect();
    let message = sprintf(&format, &values);
    let mut line = message.clone();
    if let Some(fields) = this
        .as_object()
        .and_then(|t| t.get::<_, Option<Object<'js>>>("fields").ok().flatten())
    {
        for entry in fields.props::<String, Value<'js>>() {
            let Ok((key, value)) = entry else {
                ctx.catch();
                continue;
            };
            let _ = write!(line, " {key}={}", Arg::from_js(ctx, &value).display());
        }
    }
    let module = shared.calling_module(ctx);
    shared.log_call(|call| shared.nk.log(level, "js", &module, call, &line));
    Ok(message)
}

/// A formatting argument, read out of JavaScript once.
#[derive(Debug, Clone, PartialEq)]
enum Arg {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// Objects and arrays, as JSON (Go would print `map[…]`; JSON is what a JS developer reads).
    Json(String),
}

impl Arg {
    fn from_js<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> Arg {
        if value.is_null() || value.is_undefined() {
            return Arg::Nil;
        }
        if let Some(b) = value.as_bool() {
            return Arg::Bool(b);
        }
        if let Some(i) = convert::integer(value) {
            return Arg::Int(i);
        }
        if let Some(f) = value.as_number() {
            return Arg::Float(f);
        }
        if value.is_string() {
            return Arg::Str(convert::string(value).unwrap_or_else(|| "\u{fffd}".into()));
        }
        match convert::to_json_text(ctx, value.clone()) {
            Ok(Some(json)) => Arg::Json(json),
            Ok(None) => Arg::Str(format!("[{}]", value.type_name())),
            Err(_) => {
                ctx.catch();
                Arg::Str(format!("[{}]", value.type_name()))
            }
        }
    }

    /// Go's name of the exported type, for `%!verb(type=value)` markers.
    fn go_type(&self) -> &'static str {
        match self {
            Arg::Nil => "<nil>",
            Arg::Bool(_) => "bool",
            Arg::Int(_) => "int64",
            Arg::Float(_) => "float64",
            Arg::Str(_) => "string",
            Arg::Json(_) => "object",
        }
    }

    /// `%v`.
    fn display(&self) -> String {
        match self {
            Arg::Nil => "<nil>".into(),
            Arg::Bool(b) => b.to_string(),
            Arg::Int(i) => i.to_string(),
            Arg::Float(f) => float_text(*f),
            Arg::Str(s) | Arg::Json(s) => s.clone(),
        }
    }
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        f.to_string()
    }
}

/// Go's `fmt.Sprintf` for the verbs scripts use: `%v %s %d %f %e %g %q %t %x %X %%`, with
/// flags `-` and `0`, width and precision. Mistakes are shown inline as Go shows them
/// (`%!d(string=x)`, `%!v(MISSING)`, `%!(EXTRA int64=1)`), never raised.
fn sprintf(format: &str, args: &[Arg]) -> String {
    let mut out = String::with_capacity(format.len() + 16 * args.len());
    let mut chars = format.chars().peekable();
    let mut next = 0;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut left = false;
        let mut zero = false;
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut width = 0usize;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            width = width
                .saturating_mul(10)
                .saturating_add(d as usize)
                .min(1024);
            chars.next();
        }
        let mut precision = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = 0usize;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                p = p.saturating_mul(10).saturating_add(d as usize).min(64);
                chars.next();
            }
            precision = Some(p);
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next) else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        next += 1;
        let text = match (verb, arg) {
            ('v', Arg::Float(f)) if precision.is_some() => {
                format!("{:.*}", precision.unwrap_or(6), f)
            }
            ('v', _) => arg.display(),
            ('s', Arg::Str(s) | Arg::Json(s)) => match precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.clone(),
            },
            ('d', Arg::Int(i)) => i.to_string(),
            ('f' | 'F', Arg::Int(i)) => format!("{:.*}", precision.unwrap_or(6), *i as f64),
            ('f' | 'F', Arg::Float(f)) => format!("{:.*}", precision.unwrap_or(6), f),
            ('e', Arg::Int(i)) => format!("{:.*e}", precision.unwrap_or(6), *i as f64),
            ('e', Arg::Float(f)) => format!("{:.*e}", precision.unwrap_or(6), f),
            ('g', Arg::Int(i)) => i.to_string(),
            ('g', Arg::Float(f)) => float_text(*f),
            ('q', Arg::Str(s)) => serde_json::Value::String(s.clone()).to_string(),
            ('t', Arg::Bool(b)) => b.to_string(),
            ('x', Arg::Int(i)) => format!("{i:x}"),
            ('X', Arg::Int(i)) => format!("{i:X}"),
            ('x', Arg::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
            ('X', Arg::Str(s)) => s.bytes().map(|b| format!("{b:02X}")).collect(),
            _ => format!("%!{verb}({}={})", arg.go_type(), arg.display()),
        };
        pad(
            &mut out,
            &text,
            width,
            left,
            zero && !left && matches!(arg, Arg::Int(_) | Arg::Float(_)),
        );
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        for (i, arg) in args[next..].iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}={}", arg.go_type(), arg.display());
        }
        out.push(')');
    }
    out
}

fn pad(out: &mut String, text: &str, width: usize, left: bool, zero: bool) {
    let len = text.chars().count();
    if len >= width {
        out.push_str(text);
        return;
    }
    let fill = width - len;
    if left {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if zero {
        let (sign, digits) = match text.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", text),
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use rquickjs::{Context, Runtime};

    use super::*;

    #[test]
    fn a_call_logger_has_the_prototype_and_its_own_empty_fields_whatever_object_prototype_has() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let names = FieldNames::default();
        let loggers = CallLoggers::default();
        context.with(|ctx| {
            ctx.eval::<(), _>(
                "var stolen = []; ['fields', 'rpc_id'].forEach(function (k) { \
                 Object.defineProperty(Object.prototype, k, \
                 { set: function (x) { stolen.push(k); }, configurable: true }); }); \
                 var proto = { info: function () { return JSON.stringify(this.fields); } };",
            )
            .unwrap();
            let proto: Object<'_> = ctx.globals().get("proto").unwrap();
            // Twice: the second call takes the kept atom and shapes; each gets its own fields.
            for _ in 0..2 {
                let value = loggers.build(&ctx, &names, proto.as_raw()).unwrap();
                ctx.globals().set("l", value).unwrap();
                let seen: String = ctx
                    .eval(
                        "var seen = [stolen.length, Object.getPrototypeOf(l) === proto, \
                          Object.keys(l).join(), l.info()].join('|'); l.fields.left = 1; seen",
                    )
                    .unwrap();
                assert_eq!(seen, "0|true|fields|{}");
            }
            assert_eq!(names.shapes_kept(), 2);
            names.release(&ctx);
            loggers.release(&ctx);
            assert!(loggers.fields.get().is_none());
        });
    }

    fn s(text: &str) -> Arg {
        Arg::Str(text.into())
    }

    #[test]
    fn formats_like_go_sprintf() {
        assert_eq!(sprintf("plain", &[]), "plain");
        assert_eq!(sprintf("%s=%d", &[s("n"), Arg::Int(3)]), "n=3");
        assert_eq!(
            sprintf("%v %v %v", &[Arg::Bool(true), Arg::Nil, Arg::Float(1.5)]),
            "true <nil> 1.5"
        );
        assert_eq!(
            sprintf(
                "%.2f|%5d|%-4s|%05d",
                &[Arg::Float(1.23456), Arg::Int(42), s("ab"), Arg::Int(-7)]
            ),
            "1.23|   42|ab  |-0007"
        );
        assert_eq!(
            sprintf("%q %x %t %%", &[s("a\"b"), Arg::Int(255), Arg::Bool(false)]),
            "\"a\\\"b\" ff false %"
        );
        assert_eq!(
            sprintf("%v", &[Arg::Json(r#"{"a":1}"#.into())]),
            r#"{"a":1}"#
        );
    }

    #[test]
    fn mistakes_are_shown_inline_as_go_does() {
        assert_eq!(sprintf("%d", &[s("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%s and %s", &[s("one")]), "one and %!s(MISSING)");
        assert_eq!(
            sprintf("hi", &[Arg::Int(1), s("x")]),
            "hi%!(EXTRA int64=1, string=x)"
        );
        assert_eq!(sprintf("trailing %", &[]), "trailing %!(NOVERB)");
        assert_eq!(
            sprintf("%99999999999999999999d", &[Arg::Int(1)]).len(),
            1024
        );
    }
}

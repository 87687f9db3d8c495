//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` on the bounded matcher of
//! [`super::pattern`], replacing LuaJIT's C versions that the budget hook cannot interrupt.
//! Plain searches use a linear-time substring search (LuaJIT's is quadratic in the worst
//! case). `gsub`'s result counts against the VM's memory cap while it is built.

use std::rc::Rc;

use mlua::{Function, Lua, LuaString, MultiValue, Table, Value};

use super::BudgetExceeded;
use super::pattern::{Captured, Matcher, PatternError, is_plain};

/// Whether the running call is past its deadline.
pub(super) type OverDeadline = Rc<dyn Fn() -> bool>;

/// Replaces the pattern functions of `string`. `max_result` caps a `gsub` result in bytes.
pub(super) fn install(lua: &Lua, over: OverDeadline, max_result: usize) -> mlua::Result<()> {
    let string: Table = lua.globals().raw_get("string")?;
    let find_over = over.clone();
    string.raw_set(
        "find",
        lua.create_function(move |lua, args: MultiValue| find(lua, &args, true, &*find_over))?,
    )?;
    let match_over = over.clone();
    string.raw_set(
        "match",
        lua.create_function(move |lua, args: MultiValue| find(lua, &args, false, &*match_over))?,
    )?;
    let gmatch_over = over.clone();
    string.raw_set(
        "gmatch",
        lua.create_function(move |lua, args: MultiValue| gmatch(lua, &args, gmatch_over.clone()))?,
    )?;
    string.raw_set(
        "gsub",
        lua.create_function(move |lua, args: MultiValue| gsub(lua, &args, &*over, max_result))?,
    )?;
    Ok(())
}

fn find(
    lua: &Lua,
    args: &MultiValue,
    find: bool,
    over: &dyn Fn() -> bool,
) -> mlua::Result<MultiValue> {
    let name = if find { "find" } else { "match" };
    let subject = check_string(lua, args, 0, name)?;
    let pattern = check_string(lua, args, 1, name)?;
    let init = opt_integer(lua, args, 2, name, 1)?;
    let src = subject.as_bytes();
    let pat = pattern.as_bytes();
    let len = src.len() as i64;
    // Past the end is the end, as Lua 5.1 and LuaJIT.
    let start = if init < 0 { init + len } else { init - 1 }.clamp(0, len) as usize;
    let plain = args
        .get(3)
        .is_some_and(|v| !matches!(v, Value::Nil | Value::Boolean(false)));
    if find && (plain || is_plain(&pat)) {
        return Ok(match memchr::memmem::find(&src[start..], &pat) {
            Some(at) => MultiValue::from_iter([
                Value::Integer((start + at + 1) as i64),
                Value::Integer((start + at + pat.len()) as i64),
            ]),
            None => nil(),
        });
    }
    let (anchor, first) = if pat.first() == Some(&b'^') {
        (true, 1)
    } else {
        (false, 0)
    };
    let mut matcher = Matcher::new(&src, &pat, over);
    let mut at = start;
    loop {
        if let Some(end) = matcher.match_at(at, first).map_err(pattern_error)? {
            let mut values = Vec::new();
            if find {
                values.push(Value::Integer(at as i64 + 1));
                values.push(Value::Integer(end as i64));
            }
            push_captures(lua, &matcher, &src, at, end, !find, &mut values)?;
            return Ok(MultiValue::from_vec(values));
        }
        at += 1;
        if anchor || at > src.len() {
            return Ok(nil());
        }
    }
}

fn gmatch(lua: &Lua, args: &MultiValue, over: OverDeadline) -> mlua::Result<Function> {
    // Owned copies: the iterator must not pin Lua references for its whole life.
    let src = check_string(lua, args, 0, "gmatch")?.as_bytes().to_vec();
    let pat = check_string(lua, args, 1, "gmatch")?.as_bytes().to_vec();
    let next = std::cell::Cell::new(0usize);
    lua.create_function(move |lua, ()| {
        let mut matcher = Matcher::new(&src, &pat, &*over);
        let mut at = next.get();
        while at <= src.len() {
            if let Some(end) = matcher.match_at(at, 0).map_err(pattern_error)? {
                // An empty match moves on by one so the loop ends.
                next.set(if end == at { end + 1 } else { end });
                let mut values = Vec::new();
                push_captures(lua, &matcher, &src, at, end, true, &mut values)?;
                return Ok(MultiValue::from_vec(values));
            }
            at += 1;
        }
        next.set(src.len() + 1);
        Ok(nil())
    })
}

fn gsub(
    lua: &Lua,
    args: &MultiValue,
    over: &dyn Fn() -> bool,
    max_result: usize,
) -> mlua::Result<(LuaString, i64)> {
    let src = check_string(lua, args, 0, "gsub")?.as_bytes().to_vec();
    let pat = check_string(lua, args, 1, "gsub")?.as_bytes().to_vec();
    let repl = match args.get(2) {
        Some(v @ (Value::Integer(_) | Value::Number(_))) => match lua.coerce_string(v.clone())? {
            Some(s) => Value::String(s),
            None => v.clone(),
        },
        Some(v @ (Value::String(_) | Value::Table(_) | Value::Function(_))) => v.clone(),
        _ => {
            return Err(mlua::Error::runtime(
                "bad argument #3 to 'gsub' (string/function/table expected)",
            ));
        }
    };
    let max_n = opt_integer(lua, args, 3, "gsub", src.len() as i64 + 1)?;
    let (anchor, first) = if pat.first() == Some(&b'^') {
        (true, 1)
    } else {
        (false, 0)
    };
    let mut matcher = Matcher::new(&src, &pat, over);
    let mut out = Vec::with_capacity(src.len());
    let mut at = 0;
    let mut n = 0;
    while n < max_n {
        let end = matcher.match_at(at, first).map_err(pattern_error)?;
        if let Some(end) = end {
            n += 1;
            add_value(lua, &matcher, &src, at, end, &repl, max_result, &mut out)?;
        }
        match end {
            Some(end) if end > at => at = end,
            _ if at < src.len() => {
                out.push(src[at]);
                at += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    out.extend_from_slice(&src[at.min(src.len())..]);
    Ok((lua.create_string(&out)?, n))
}

/// Appends the replacement of match `s..e` to `out`, failing once `out` passes `max_result`
/// bytes: one string replacement such as `"%0%0…"` can multiply the subject many times over.
#[allow(clippy::too_many_arguments)]
fn add_value(
    lua: &Lua,
    matcher: &Matcher<'_>,
    src: &[u8],
    s: usize,
    e: usize,
    repl: &Value,
    max_result: usize,
    out: &mut Vec<u8>,
) -> mlua::Result<()> {
    let value = match repl {
        Value::String(text) => {
            let text = text.as_bytes();
            let mut i = 0;
            while i < text.len() {
                let c = text[i];
                if c != b'%' {
                    out.push(c);
                } else {
                    i += 1;
                    // As Lua 5.1: `%` ending the replacement adds the string's terminator.
                    let d = text.get(i).copied().unwrap_or(0);
                    if d == b'0' {
                        out.extend_from_slice(&src[s..e]);
                    } else if d.is_ascii_digit() {
                        let index = usize::from(d - b'1');
                        match matcher.capture(index, s, e).map_err(pattern_error)? {
                            Captured::Span(a, b) => out.extend_from_slice(&src[a..b]),
                            Captured::Position(p) => {
                                out.extend_from_slice(p.to_string().as_bytes())
                            }
                        }
                    } else {
                        out.push(d);
                    }
                }
                i += 1;
                check_result_size(out, max_result)?;
            }
            return Ok(());
        }
        Value::Table(table) => {
            let key = capture_value(lua, matcher, src, 0, s, e)?;
            table.get::<Value>(key)?
        }
        Value::Function(function) => {
            let mut values = Vec::new();
            push_captures(lua, matcher, src, s, e, true, &mut values)?;
            function.call::<Value>(MultiValue::from_vec(values))?
        }
        _ => Value::Nil,
    };
    match value {
        Value::Nil | Value::Boolean(false) => out.extend_from_slice(&src[s..e]),
        Value::String(text) => out.extend_from_slice(&text.as_bytes()),
        v @ (Value::Integer(_) | Value::Number(_)) => {
            if let Some(text) = lua.coerce_string(v)? {
                out.extend_from_slice(&text.as_bytes());
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "invalid replacement value (a {})",
                other.type_name()
            )));
        }
    }
    check_result_size(out, max_result)
}

fn check_result_size(out: &[u8], max_result: usize) -> mlua::Result<()> {
    if out.len() > max_result {
        return Err(mlua::Error::MemoryError("not enough memory".into()));
    }
    Ok(())
}

fn capture_value(
    lua: &Lua,
    matcher: &Matcher<'_>,
    src: &[u8],
    i: usize,
    s: usize,
    e: usize,
) -> mlua::Result<Value> {
    Ok(match matcher.capture(i, s, e).map_err(pattern_error)? {
        Captured::Span(a, b) => Value::String(lua.create_string(&src[a..b])?),
        Captured::Position(p) => Value::Integer(p as i64),
    })
}

fn push_captures(
    lua: &Lua,
    matcher: &Matcher<'_>,
    src: &[u8],
    s: usize,
    e: usize,
    whole: bool,
    values: &mut Vec<Value>,
) -> mlua::Result<()> {
    for i in 0..matcher.captures(whole) {
        values.push(capture_value(lua, matcher, src, i, s, e)?);
    }
    Ok(())
}

fn pattern_error(error: PatternError) -> mlua::Error {
    match error {
        PatternError::Invalid(message) => mlua::Error::runtime(message),
        PatternError::Budget => mlua::Error::external(BudgetExceeded),
    }
}

fn nil() -> MultiValue {
    MultiValue::from_iter([Value::Nil])
}

fn type_name(value: Option<&Value>) -> &'static str {
    value.map_or("no value", Value::type_name)
}

/// Argument `i` as a string (numbers are converted, as Lua does).
fn check_string(lua: &Lua, args: &MultiValue, i: usize, name: &str) -> mlua::Result<LuaString> {
    let value = args.get(i);
    if let Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) = value
        && let Some(s) = lua.coerce_string(v.clone())?
    {
        return Ok(s);
    }
    Err(mlua::Error::runtime(format!(
        "bad argument #{} to '{name}' (string expected, got {})",
        i + 1,
        type_name(value)
    )))
}

/// Optional integer argument `i` (numbers are truncated, numeric strings converted).
fn opt_integer(
    lua: &Lua,
    args: &MultiValue,
    i: usize,
    name: &str,
    default: i64,
) -> mlua::Result<i64> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(default),
        Some(v) => match lua.coerce_number(v.clone())? {
            Some(n) if n.is_finite() => Ok(n as i64),
            _ => Err(mlua::Error::runtime(format!(
                "bad argument #{} to '{name}' (number expected, got {})",
                i + 1,
                v.type_name()
            ))),
        },
    }
}

#[cfg(test)]
mod tests;

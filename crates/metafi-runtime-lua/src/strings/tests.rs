//! The bounded string functions against LuaJIT's own: the same calls in two Lua states, one
//! with LuaJIT's C functions and one with ours, must give the same results and errors.

use std::rc::Rc;

use mlua::{Lua, Value};

use super::install;

/// Expressions evaluated in both states; each returns its results packed in a table.
const CASES: &[&str] = &[
    r#"("hello world"):find("o w")"#,
    r#"("hello world"):find("o", 6)"#,
    r#"("hello world"):find("l+")"#,
    r#"("hello world"):find("", 20)"#,
    r#"("hello world"):find("", 12)"#,
    r#"("hello world"):find("d", -1)"#,
    r#"("hello world"):find("h", -100)"#,
    r#"("a.b"):find(".", 1, true)"#,
    r#"("a+b"):find("+", 1, true)"#,
    r#"("key = value"):match("^(%w+)%s*=%s*(%w+)$")"#,
    r#"("key = value"):match("()=()")"#,
    r#"("  trim  "):match("^%s*(.-)%s*$")"#,
    r#"("THE (quick) fox"):find("%((%a+)%)")"#,
    r#"("f(a(b)c)d"):match("%b()")"#,
    r#"("THE (quick) fox"):match("%f[%a]%a+", 5)"#,
    r#"("hello"):match(".-(l+)(.*)")"#,
    r#"("abcabc"):match("(a)(b)(c)%1%2%3")"#,
    r#"("x=1, y=22"):gsub("(%w+)=(%w+)", "%2=%1")"#,
    r#"("hello world"):gsub("o", "0", 1)"#,
    r#"("hello"):gsub("", "-")"#,
    r#"("abc"):gsub("%w", "%0%0")"#,
    r#"("abc"):gsub("^a", "A")"#,
    r#"("$name is $age"):gsub("%$(%w+)", { name = "bob", age = 3 })"#,
    r#"("abc"):gsub("%w", function(c) if c == "b" then return false end return c:upper() end)"#,
    r#"("a,b,,c"):gsub(",", "%%")"#,
    r#"("[x]"):find("[]]")"#,
    r#"("a-b"):find("[a-]", 2)"#,
    r#"("A1 b2"):gsub("[%a%d]", "*")"#,
    r#"("A1 b2"):gsub("[^%s]", ".")"#,
    r#"("\0a\0"):find("%z")"#,
    r#"("x\tz"):find("%s")"#,
    r#"("x\vz"):find("%s")"#,
    r#"("!?"):gsub("%p", "p")"#,
    r#"("abc"):find("b", 1.9)"#,
    r#"(12345):find("34")"#,
    r#"("123"):gsub(2, 9)"#,
    r#"("abc"):match("((a)(b))")"#,
    r#"("a"):match("()")"#,
];

/// Loops over `gmatch`, gathering every capture.
const GMATCH_CASES: &[&str] = &[
    r#"local r = {} for k, v in ("a=1, b=2"):gmatch("(%w+)=(%w+)") do r[#r+1] = k .. v end return r"#,
    r#"local r = {} for w in ("one two  three"):gmatch("%a+") do r[#r+1] = w end return r"#,
    r#"local r = {} for w in ("abc"):gmatch("") do r[#r+1] = "|" end return r"#,
    r#"local r = {} for p in ("abc"):gmatch("()") do r[#r+1] = p end return r"#,
];

/// Calls that must fail; the messages must agree.
const ERRORS: &[&str] = &[
    r#"return ("x"):find("%")"#,
    r#"return ("x"):find("[a")"#,
    r#"return ("x"):find("(%1)")"#,
    r#"return ("x"):gsub("x", "%2")"#,
    r#"return ("x"):gsub("x", true)"#,
    r#"return ("x"):gsub("x", function() return {} end)"#,
    r#"return ("x"):find("%f")"#,
    r#"return ("x"):find(")")"#,
    r#"return string.find(nil, "x")"#,
];

fn ours() -> Lua {
    let lua = Lua::new();
    install(&lua, Rc::new(|| false), 1 << 20).unwrap_or_else(|e| panic!("{e}"));
    lua
}

fn render(lua: &Lua, chunk: &str) -> String {
    let values: mlua::Result<mlua::MultiValue> = lua.load(chunk).eval();
    match values {
        Ok(values) => values
            .into_iter()
            .map(|v| match v {
                Value::Table(t) => format!(
                    "{{{}}}",
                    t.sequence_values::<Value>()
                        .map(|v| format!("{:?}", v.unwrap_or(Value::Nil)))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Err(e) => {
            // The message without mlua's wrapping or the position prefix.
            let text = super::super::innermost_message(&e);
            let text = text.lines().next().unwrap_or_default();
            match text.find("]:1: ") {
                Some(at) => text[at + 5..].to_owned(),
                None => text.to_owned(),
            }
        }
    }
}

#[test]
fn patterns_agree_with_luajit() {
    let reference = Lua::new();
    let bounded = ours();
    for case in CASES {
        let chunk = format!("return {case}");
        assert_eq!(
            render(&bounded, &chunk),
            render(&reference, &chunk),
            "{case}"
        );
    }
    for case in GMATCH_CASES {
        assert_eq!(render(&bounded, case), render(&reference, case), "{case}");
    }
}

#[test]
fn pattern_errors_agree_with_luajit() {
    let reference = Lua::new();
    let bounded = ours();
    for case in ERRORS {
        let theirs = without_function_name(&render(&reference, case));
        let mine = without_function_name(&render(&bounded, case));
        assert!(
            theirs.contains(&mine) || mine.contains(&theirs),
            "{case}: LuaJIT says {theirs:?}, we say {mine:?}"
        );
    }
}

#[test]
fn a_runaway_pattern_stops_at_the_deadline_with_the_budget_error() {
    let lua = Lua::new();
    let checks = Rc::new(std::cell::Cell::new(0));
    let counted = checks.clone();
    install(
        &lua,
        Rc::new(move || {
            counted.set(counted.get() + 1);
            counted.get() > 2
        }),
        1 << 20,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for chunk in [
        r#"return string.rep("a", 30000):find(".-.-.-.-.-.-b")"#,
        r#"return string.rep("a", 30000):match(".-.-.-.-.-.-b")"#,
        r#"return string.rep("a", 30000):gsub(".-.-.-.-.-.-b", "")"#,
        r#"for _ in string.rep("a", 30000):gmatch(".-.-.-.-.-.-b") do end"#,
    ] {
        checks.set(0);
        let error = lua.load(chunk).exec().err();
        assert!(
            error.as_ref().is_some_and(super::super::is_budget),
            "{chunk}: {error:?}"
        );
    }
}

#[test]
fn a_gsub_result_past_the_memory_cap_fails_as_out_of_memory() {
    let lua = ours();
    let error = lua
        .load(r#"return string.rep("a", 1000):gsub("", string.rep("b", 10000))"#)
        .exec()
        .err();
    assert!(
        matches!(&error, Some(e) if e.to_string().contains("not enough memory")),
        "{error:?}"
    );
}

#[test]
fn one_gsub_replacement_that_multiplies_the_subject_stops_at_the_memory_cap() {
    // One match of the whole 100 kB subject, replaced by 20,000 copies of it (2 GB), used to be
    // built in full before the size was checked.
    let lua = ours();
    let error = lua
        .load(r#"return string.rep("a", 100000):gsub(".+", string.rep("%0", 20000))"#)
        .exec()
        .err();
    assert!(
        matches!(&error, Some(e) if e.to_string().contains("not enough memory")),
        "{error:?}"
    );
}

/// `bad argument #1 to 'find' (…)` → `bad argument #1 (…)`: LuaJIT names the function `?`
/// when it is called as a method.
fn without_function_name(text: &str) -> String {
    match (text.find(" to '"), text.find("' (")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &text[..a], &text[b + 1..]),
        _ => text.to_owned(),
    }
}

/// Random short patterns and subjects, from pieces that exercise every construct: both
/// implementations must agree on success, results and captures (errors: on failing at all).
#[test]
fn random_patterns_agree_with_luajit() {
    const PIECES: &[&str] = &[
        "a", "b", ".", "%a", "%d", "%s", "%W", "[ab]", "[^a]", "[a-c]", "[%d]", "*", "+", "-", "?",
        "(", ")", "()", "%1", "%2", "^", "$", "%b()", "%f[%a]", "%", "[", "]", "%%",
    ];
    const SUBJECT: &[u8] = b"ab1 ()a";
    let reference = Lua::new();
    let bounded = ours();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut compared = 0;
    for _ in 0..3000 {
        let pattern: String = (0..1 + next(6))
            .map(|_| PIECES[next(PIECES.len())])
            .collect();
        let subject: String = (0..next(10))
            .map(|_| SUBJECT[next(SUBJECT.len())] as char)
            .collect();
        let quote = |s: &str| format!("{s:?}");
        for call in [
            format!("return ({}):find({})", quote(&subject), quote(&pattern)),
            format!("return ({}):match({}, 2)", quote(&subject), quote(&pattern)),
            format!(
                "return ({}):gsub({}, \"<%0>\")",
                quote(&subject),
                quote(&pattern)
            ),
            format!(
                "local r = {{}} for a, b in ({}):gmatch({}) do r[#r + 1] = tostring(a) .. tostring(b) if #r > 50 then break end end return r",
                quote(&subject),
                quote(&pattern)
            ),
        ] {
            let theirs: mlua::Result<mlua::MultiValue> = reference.load(&call).eval();
            let mine: mlua::Result<mlua::MultiValue> = bounded.load(&call).eval();
            assert_eq!(
                theirs.is_ok(),
                mine.is_ok(),
                "{call}: LuaJIT {theirs:?}, ours {mine:?}"
            );
            if theirs.is_ok() {
                assert_eq!(render(&bounded, &call), render(&reference, &call), "{call}");
                compared += 1;
            }
        }
    }
    assert!(compared > 3000, "only {compared} calls succeeded in both");
}

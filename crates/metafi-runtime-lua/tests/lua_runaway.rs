//! Whatever a Lua call does, it ends at its budget with DEADLINE_EXCEEDED and the VM serves
//! the next call; and no call can change the library the calls after it see.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::time::Duration;

use metafi_core::CoreError;
use metafi_proto::Code;
use support::{Harness, Options, build, fixture};

/// Runaways of every kind the budget must stop: script loops, long C functions, error
/// handlers, coroutines, metamethods, finalisers and loaded code.
const RUNAWAYS: &[(&str, &str)] = &[
    ("plain loop", "while true do end"),
    (
        "tail recursion",
        "local function f() return f() end return f()",
    ),
    (
        "pattern find",
        r#"return string.rep("a", 30000):find(".-.-.-.-.-.-b")"#,
    ),
    (
        "pattern match",
        r#"return string.rep("a", 30000):match("(.-)(.-)(.-)(.-)(.-)(.-)b")"#,
    ),
    (
        "pattern gmatch",
        r#"for _ in string.rep("a", 30000):gmatch(".-.-.-.-.-.-b") do end"#,
    ),
    (
        "pattern gsub",
        r#"return (string.rep("a", 30000):gsub(".-.-.-.-.-.-b", "x"))"#,
    ),
    (
        "pattern in a pcall",
        r#"while true do pcall(string.find, string.rep("a", 30000), ".-.-.-.-.-.-b") end"#,
    ),
    (
        "xpcall handler loop after the budget error",
        "xpcall(function() while true do end end, function() while true do end end)",
    ),
    (
        "xpcall handler loop after a plain error",
        r#"xpcall(function() error("x") end, function() while true do end end)"#,
    ),
    (
        "pcall loop swallowing the budget error",
        "while true do pcall(function() while true do end end) end",
    ),
    (
        "coroutine",
        "local co = coroutine.create(function() while true do end end) return coroutine.resume(co)",
    ),
    (
        "coroutine.wrap in a pcall loop",
        "while true do pcall(coroutine.wrap(function() while true do end end)) end",
    ),
    (
        "__index",
        "local t = setmetatable({}, { __index = function() while true do end end }) return t.x",
    ),
    (
        "__eq",
        "local mt = { __eq = function() while true do end end } return setmetatable({}, mt) == setmetatable({}, mt)",
    ),
    (
        "__lt",
        "local mt = { __lt = function() while true do end end } return setmetatable({}, mt) < setmetatable({}, mt)",
    ),
    (
        "__concat",
        r#"return setmetatable({}, { __concat = function() while true do end end }) .. "x""#,
    ),
    (
        "__call",
        "return setmetatable({}, { __call = function() while true do end end })()",
    ),
    (
        "__tostring",
        "return tostring(setmetatable({}, { __tostring = function() while true do end end }))",
    ),
    (
        "table.sort comparator",
        "local t = {} for i = 1, 100 do t[i] = i end table.sort(t, function() while true do end end)",
    ),
    (
        "gsub replacement function",
        r#"return (("abc"):gsub(".", function() while true do end end))"#,
    ),
    (
        "table __gc and collectgarbage",
        r#"while true do setmetatable({}, { __gc = function() while true do end end }) collectgarbage() end"#,
    ),
    ("loaded code", r#"return loadstring("while true do end")()"#),
    (
        "loop of long nk calls",
        r#"local nk = require("nakama") local t = {} for i = 1, 100000 do t[i] = i end while true do nk.json_encode(t) end"#,
    ),
    (
        "huge loaded code",
        r#"local f = assert(loadstring(string.rep("x = 1 ", 200000))) while true do f() end"#,
    ),
];

async fn runaway_runtime() -> Harness {
    runtime_with_budget(Duration::from_millis(200)).await
}

/// One VM (the call after each runaway runs on the VM the runaway ran on) with `budget` per call.
async fn runtime_with_budget(budget: Duration) -> Harness {
    let mut options = Options::new(fixture("runaway"));
    options.vms = 1;
    options.call_timeout = budget;
    // The VM itself must stop every runaway: the watchdog, the last line of defence, would
    // only step in after the hang guard of these tests.
    options.watchdog_grace = Duration::from_secs(3600);
    build(options).await.unwrap()
}

/// The call's result, with a hang guard far above the budget.
async fn eval(h: &Harness, code: &str) -> Result<String, CoreError> {
    tokio::time::timeout(Duration::from_secs(30), h.call("eval", code))
        .await
        .unwrap_or_else(|_| panic!("no answer at all (the VM is wedged): {code}"))
}

#[tokio::test]
async fn every_kind_of_lua_runaway_ends_at_its_budget_with_code_4_and_the_vm_serves_the_next_call()
{
    let h = runaway_runtime().await;
    for (kind, code) in RUNAWAYS {
        match eval(&h, code).await {
            Err(e) => assert_eq!(e.code(), Code::DeadlineExceeded, "{kind}: {e:?}"),
            Ok(out) => panic!("{kind}: finished with {out:?}"),
        }
        assert_eq!(eval(&h, "return 'ok'").await.unwrap(), "ok", "after {kind}");
    }
    assert_eq!(
        h.call("probe", "").await.unwrap(),
        "function function X function 1 function true"
    );
}

#[tokio::test]
async fn long_but_bounded_work_fails_or_finishes_at_once_instead_of_wedging() {
    // A budget far above what this work takes in a debug build on a loaded machine (200 ms was
    // not): each case must end with its own error or result, never with the budget's code 4.
    let h = runtime_with_budget(Duration::from_secs(10)).await;
    // Deep recursion is a stack overflow, not a hang.
    let e = eval(&h, "local function f() return 1 + f() end return f()")
        .await
        .unwrap_err();
    assert!(e.client_message().contains("stack overflow"), "{e:?}");
    // A plain search LuaJIT would run in quadratic time is linear here.
    assert_eq!(
        eval(
            &h,
            r#"local h = string.rep("a", 1000000) return tostring(h:find(string.rep("a", 500000) .. "b", 1, true))"#
        )
        .await
        .unwrap(),
        "nil"
    );
    // Patterns too deep for the matcher's recursion limit are refused.
    let e = eval(&h, r#"return ("a"):rep(300):find(("a?"):rep(300))"#)
        .await
        .unwrap_err();
    assert!(e.client_message().contains("pattern too complex"), "{e:?}");
    // C functions whose work is bounded by the memory cap or a fixed limit fail at once.
    let e = eval(&h, r#"return #string.rep("x", 1e9)"#)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let e = eval(
        &h,
        r#"local t = {} for i = 1, 200 do t[i] = string.rep("y", 1e6) end return #table.concat(t)"#,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let e = eval(&h, "return select('#', unpack({}, 1, 1e8))")
        .await
        .unwrap_err();
    assert!(e.client_message().contains("too many results"), "{e:?}");
    // No finalisers on userdata: newproxy is gone.
    assert_eq!(eval(&h, "return type(newproxy)").await.unwrap(), "nil");
}

/// Loops of standard C functions that each run for milliseconds on large data. Each of these
/// functions checks the deadline when it is called, so such a loop ends at its first call past
/// the deadline (the budget hook would end it too, but only once the watcher has seen the call
/// overdue: `budget.rs`).
const LONG_C_CALL_LOOPS: &[(&str, &str)] = &[
    ("upper", "while true do local u = big:upper() end"),
    ("lower", "while true do local u = big:lower() end"),
    ("reverse", "while true do local u = big:reverse() end"),
    ("sub", "while true do local u = big:sub(2) end"),
    ("rep", "while true do local u = big:rep(2) end"),
    (
        "format",
        r#"while true do local u = string.format("%s.", big) end"#,
    ),
    (
        "tonumber",
        "local pad = big:gsub('x', ' ') while true do tonumber(pad) end",
    ),
    (
        "table.concat",
        "while true do local u = table.concat(list) end",
    ),
    ("table.sort", "while true do table.sort(list) end"),
    ("table.maxn", "while true do table.maxn(list) end"),
    (
        "table.insert and table.remove at the front",
        "while true do table.insert(list, 1, 'x') table.remove(list, 1) end",
    ),
    (
        "loadstring",
        r#"local src = ("x = 1 "):rep(4e5) while true do loadstring(src) end"#,
    ),
    (
        "collectgarbage",
        "local keep = {} for i = 1, 3e5 do keep[i] = {} end while true do collectgarbage() end",
    ),
];

/// One VM for loops over large data: room to build the data before the loop starts (a 500 ms
/// budget; each case builds up to ~130 MB, what an earlier case left is collected first, and
/// the 512 MiB cap leaves room for a collector that is late: a case once hit 256 MiB in a full
/// run), and the watchdog out of reach: only the VM can end these calls.
async fn large_data_runtime() -> Harness {
    let mut options = Options::new(fixture("runaway"));
    options.vms = 1;
    options.call_timeout = Duration::from_millis(500);
    options.memory_limit_bytes = 512 << 20;
    options.watchdog_grace = Duration::from_secs(3600);
    build(options).await.unwrap()
}

#[tokio::test]
async fn lua_loop_of_long_c_calls_ends_at_its_budget_with_code_4_and_the_vm_serves_the_next_call() {
    let h = large_data_runtime().await;
    let setup = r#"collectgarbage() local big = ("x"):rep(32e6)
        local list = {} for i = 1, 3e5 do list[i] = tostring((i * 7919) % 100003) end
    "#;
    for (function, code) in LONG_C_CALL_LOOPS {
        let e = eval(&h, &format!("{setup}{code}")).await.unwrap_err();
        assert_eq!(e.code(), Code::DeadlineExceeded, "{function}: {e:?}");
        assert_eq!(
            eval(&h, "return 'ok'").await.unwrap(),
            "ok",
            "after {function}"
        );
    }
}

/// Operators on huge values are single VM instructions that run for milliseconds each (`<`
/// compares two 64 MB strings here). The budget hook once checked the clock every 10,000
/// instructions: thousands of such comparisons, seconds past the deadline. Now the watcher arms
/// it once the call is overdue and the loop ends at its next instruction.
#[tokio::test]
async fn lua_loop_of_operators_on_huge_strings_ends_at_its_budget_with_code_4() {
    let h = large_data_runtime().await;
    let code = r#"local big = ("x"):rep(64e6) local bigger = big .. "y"
        while true do local less = big < bigger end"#;
    // Not a timing measurement: a bound far above the budget (several seconds of debug-build
    // comparisons on a loaded machine) that the old every-10,000-instructions check missed.
    let e = tokio::time::timeout(Duration::from_secs(5), h.call("eval", code))
        .await
        .expect("the loop ends within seconds of its budget, not thousands of comparisons later")
        .unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(eval(&h, "return 'ok'").await.unwrap(), "ok");
}

#[tokio::test]
async fn lua_checked_c_functions_name_themselves_and_the_line_in_argument_errors() {
    let h = runaway_runtime().await;
    for (code, expected) in [
        (
            "local u = string.upper()",
            "[string \"local u = string.upper()\"]:1: bad argument #1 to 'upper' (string expected, got no value)",
        ),
        (
            "local u = ('x'):rep()",
            "[string \"local u = ('x'):rep()\"]:1: bad argument #1 to 'rep' (number expected, got no value)",
        ),
        (
            "local ok, e = pcall(string.format, '%d', 'x') return e",
            "bad argument #2 to '?' (number expected, got string)",
        ),
        (
            // A script's error through a wrapped method call is not an argument error to name.
            "local t = {2, 1, sort = table.sort} local ok, e = pcall(function() \
             t:sort(function() error(\"bad argument #0 to '?' (x)\", 0) end) end) return e",
            "bad argument #0 to '?' (x)",
        ),
    ] {
        let got = match eval(&h, code).await {
            Ok(out) => out,
            Err(e) => e.client_message().to_string(),
        };
        assert_eq!(got, expected, "{code}");
    }
}

/// Attempts to change what every later call on the VM sees.
const POISONINGS: &[&str] = &[
    "string.find = nil",
    "string.upper = function() return 'pwned' end",
    "rawset(string, 'upper', nil)",
    "getmetatable('').__index = {}",
    "setmetatable(string, {})",
    "print = nil",
    "pcall = nil",
    "rawset(_G, 'print', nil)",
    "_G.string = nil",
    "table.concat = nil",
    "math.floor = nil",
    "require('nakama').json_encode = nil",
    "package.loaded.nakama = {}",
    "setmetatable(_G, nil)",
    "collectgarbage('stop')",
    "collectgarbage('setpause', 1000)",
];

#[tokio::test]
async fn a_call_cannot_change_the_library_or_the_collector_for_the_calls_after_it() {
    let h = runaway_runtime().await;
    let before = h.call("probe", "").await.unwrap();
    assert_eq!(before, "function function X function 1 function true");
    for code in POISONINGS {
        let e = eval(&h, code)
            .await
            .expect_err(&format!("{code} was allowed"));
        assert_eq!(e.code(), Code::Internal, "{code}: {e:?}");
        let message = e.client_message();
        assert!(
            message.contains("read-only")
                || message.contains("not allowed")
                || message.contains("protected metatable"),
            "{code}: {message}"
        );
        assert_eq!(h.call("probe", "").await.unwrap(), before, "after {code}");
    }
    // Globals a module created stay the module's to change, and calls may add their own.
    assert_eq!(h.call("hits", "").await.unwrap(), "1");
    assert_eq!(h.call("hits", "").await.unwrap(), "2");
    assert_eq!(eval(&h, "mine = 1 return mine").await.unwrap(), "1");
    // Strings index the same (frozen) functions the `string` table holds.
    assert_eq!(
        eval(
            &h,
            "return rawequal(('').sub, string.sub) and getmetatable('').__index == string"
        )
        .await
        .unwrap(),
        "true"
    );
    assert_eq!(
        eval(&h, "return pairs ~= nil and ipairs ~= nil")
            .await
            .unwrap(),
        "true"
    );
}

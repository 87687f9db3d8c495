//! `docs/NK_API.md`: every function and registration of Nakama's Lua and JavaScript runtimes
//! with its state in MetaFi's Lua, JavaScript and native runtimes, found by asking the
//! engines themselves (a probe module in each reports which names it can call) and the
//! binding table (whether a bound function is served, comes later, or never).
//!
//! The test fails when the file is stale; `METAFI_WRITE_NK_API_DOC=1 cargo test -p
//! metafi-runtime-conformance --test nk_api_doc` rewrites it.

#![allow(clippy::print_stderr)]

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{Objects, RpcContext, RpcDispatch, SystemClock};
use metafi_runtime::nk_api::{self, NkCall, NkFunction, Unserved, camel_case, nakama_names};
use metafi_runtime::testing::FakeMatches;
use metafi_runtime::{EngineFactory, RuntimeBuilder, RuntimeConfig, RuntimeServices};
use metafi_runtime_js::JsEngine;
use metafi_runtime_lua::LuaEngine;
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

const DOC: &str = "docs/NK_API.md";

/// Registrations native Rust modules have (`NativeInitializer` methods), by Lua name.
const NATIVE_REGISTRATIONS: &[&str] = &[
    "register_rpc",
    "register_matchmaker_matched",
    "register_req_before",
    "register_req_after",
    "register_rt_before",
    "register_rt_after",
    "register_shutdown",
    "register_storage_index",
    "register_storage_index_filter",
];

const LUA_PROBE: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(ctx, payload)
  local out = {}
  for _, name in ipairs(nk.json_decode(payload)) do
    if type(nk[name]) == "function" then out[#out + 1] = name end
  end
  return table.concat(out, ",")
end, "probe")
"#;

fn js_probe() -> String {
    let names = serde_json::to_string(nakama_names::JS_INITIALIZER).expect("names");
    format!(
        r#"
var initializerBound = [];
function probe(ctx, logger, nk, payload) {{
  var names = JSON.parse(payload);
  var out = [];
  for (var i = 0; i < names.length; i++) {{
    if (typeof nk[names[i]] === "function") out.push(names[i]);
  }}
  return out.concat(initializerBound).join(",");
}}
function InitModule(ctx, logger, nk, initializer) {{
  var names = {names};
  for (var i = 0; i < names.length; i++) {{
    if (typeof initializer[names[i]] === "function") initializerBound.push(names[i]);
  }}
  initializer.registerRpc("probe", probe);
}}
"#
    )
}

/// The names `engine` can call, out of `names`, asked through the probe module.
async fn bound_names(
    engine: Arc<dyn EngineFactory>,
    file: &str,
    source: &str,
    names: &[&str],
) -> BTreeSet<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("modules")).expect("modules dir");
    std::fs::write(dir.path().join("modules").join(file), source).expect("probe module");
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("sqlite"));
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        Arc::new(FakeMatches::default()),
        Arc::new(SystemClock),
    );
    let config = RuntimeConfig {
        path: dir.path().join("modules"),
        node: "doc".into(),
        env: HashMap::new(),
        call_timeout: Duration::from_secs(10),
        load_timeout: Duration::from_secs(10),
        memory_limit_bytes: 64 << 20,
        pools: HashMap::new(),
    };
    let runtime = RuntimeBuilder::new(config, services)
        .engine(engine)
        .start()
        .await
        .expect("probe module loads");
    let payload = serde_json::to_string(names).expect("names");
    let answer = runtime
        .call("probe", RpcContext::default(), payload)
        .await
        .expect("probe answers");
    runtime.shutdown(Duration::from_secs(5)).await;
    answer
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A function's state in one runtime, as the table shows it.
fn state(bound: bool, row: Option<&NkFunction>, name: &str) -> String {
    if !bound {
        return "**missing**".into();
    }
    // A hook on an API call MetaFi does not serve registers and is reported at start.
    if let Some(call) = name
        .strip_prefix("registerBefore")
        .or_else(|| name.strip_prefix("registerAfter"))
        && metafi_core::Hook::find(metafi_core::HookKind::Api, call).is_none()
    {
        return format!("registers; {call} not served yet");
    }
    match row.map(|r| r.call) {
        Some(NkCall::Unserved(Unserved::Later { feature })) => format!("not yet ({feature})"),
        Some(NkCall::Unserved(Unserved::Never { .. })) => "never (fails at call)".into(),
        _ => "yes".into(),
    }
}

fn native_state(row: Option<&NkFunction>, lua: Option<&str>) -> String {
    match (row, lua) {
        (Some(row), Some(lua)) => state(true, Some(row), lua),
        (None, Some(lua)) if NATIVE_REGISTRATIONS.contains(&lua) => "yes".into(),
        (None, Some(lua)) if lua.starts_with("logger_") => "yes (tracing)".into(),
        (None, Some("json_encode" | "json_decode")) => "yes (serde_json)".into(),
        (None, Some("storage_write_retry")) => "yes (a Rust closure)".into(),
        _ => "—".into(),
    }
}

/// The JavaScript name of a Lua name, where Nakama has one.
fn js_twin(lua: &str, rows: &[&'static NkFunction]) -> Option<&'static str> {
    let in_nakama =
        |js: &&str| nakama_names::JS.contains(js) || nakama_names::JS_INITIALIZER.contains(js);
    if let Some(row) = rows.iter().find(|r| r.lua == Some(lua)) {
        return row.js.filter(in_nakama);
    }
    let camel = camel_case(lua);
    nakama_names::JS
        .iter()
        .chain(nakama_names::JS_INITIALIZER)
        .find(|js| js.eq_ignore_ascii_case(&camel))
        .copied()
}

fn render(lua_bound: &BTreeSet<String>, js_bound: &BTreeSet<String>) -> String {
    let rows: Vec<&'static NkFunction> = nk_api::functions().collect();
    let row_of_lua = |name: &str| rows.iter().copied().find(|r| r.lua == Some(name));
    let row_of_js = |name: &str| rows.iter().copied().find(|r| r.js == Some(name));
    let mut lines = Vec::new();
    let mut js_done = BTreeSet::new();
    for lua in nakama_names::LUA {
        let js = js_twin(lua, &rows);
        if let Some(js) = js {
            js_done.insert(js);
        }
        let row = row_of_lua(lua);
        let js_state = js.map_or_else(
            || "—".to_owned(),
            |js| state(js_bound.contains(js), row_of_js(js), js),
        );
        lines.push(format!(
            "| `{lua}` | {} | {} | {js_state} | {} |",
            js.map_or_else(|| "—".to_owned(), |js| format!("`{js}`")),
            state(lua_bound.contains(*lua), row, lua),
            native_state(row, Some(lua)),
        ));
    }
    for js in nakama_names::JS.iter().chain(nakama_names::JS_INITIALIZER) {
        if js_done.contains(js) {
            continue;
        }
        let row = row_of_js(js);
        let lua_note = if js.starts_with("registerBefore") || js.starts_with("registerAfter") {
            "via `register_req_before/after`"
        } else {
            "—"
        };
        lines.push(format!(
            "| {lua_note} | `{js}` | — | {} | {} |",
            state(js_bound.contains(*js), row, js),
            native_state(row, row.and_then(|r| r.lua)),
        ));
    }
    let count = |names: &[&str], bound: &BTreeSet<String>, js: bool| {
        let mut served = 0;
        let mut later = 0;
        let mut never = 0;
        let mut missing = 0;
        for name in names {
            let row = if js {
                row_of_js(name)
            } else {
                row_of_lua(name)
            };
            match state(bound.contains(*name), row, name).as_str() {
                "yes" => served += 1,
                s if s.starts_with("not yet") || s.starts_with("registers;") => later += 1,
                s if s.starts_with("never") => never += 1,
                _ => missing += 1,
            }
        }
        format!(
            "{served} of {} served, {later} registered or bound but waiting for a feature, \
             {never} never served (fail at call time), {missing} missing",
            names.len()
        )
    };
    let mut doc = String::new();
    doc.push_str("# The nk API: Nakama's server functions in MetaFi\n\n");
    doc.push_str(
        "Every function and registration of Nakama's (v3.40.0) Lua `nakama` module, JavaScript \
         `nk` object and JavaScript `initializer`, with its state in MetaFi's Lua, JavaScript and \
         native Rust runtimes. Generated from the engines themselves (a probe module asks each \
         which names it can call) and from the binding table \
         (`crates/metafi-runtime/src/nk_api/`): `METAFI_WRITE_NK_API_DOC=1 cargo test -p \
         metafi-runtime-conformance --test nk_api_doc`; that test fails when this file is stale.\n\n",
    );
    doc.push_str(
        "States: **yes** served; **not yet (feature)** bound, so modules load, but a call fails \
         with an error naming the feature until it is built; **never** bound, fails at call time \
         with an error saying what to use instead (raw SQL, store receipt validation); \
         **registers; … not served yet** the registration is accepted and logged once at start; \
         **missing** calling it fails (a module that calls it at load time does not load). \
         Native Rust reaches every table function through `nk_api::call` (typed `Nk` methods exist \
         for the common ones); `—` means Nakama has no such name there.\n\n",
    );
    doc.push_str(&format!(
        "- Lua `nakama` module: {}.\n",
        count(nakama_names::LUA, lua_bound, false)
    ));
    doc.push_str(&format!(
        "- JavaScript `nk`: {}.\n",
        count(nakama_names::JS, js_bound, true)
    ));
    doc.push_str(&format!(
        "- JavaScript `initializer`: {}.\n\n",
        count(nakama_names::JS_INITIALIZER, js_bound, true)
    ));
    doc.push_str("| Lua | JavaScript | MetaFi Lua | MetaFi JS | MetaFi native |\n");
    doc.push_str("|---|---|---|---|---|\n");
    for line in lines {
        doc.push_str(&line);
        doc.push('\n');
    }
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nk_api_doc_lists_every_nakama_function_with_its_state() {
    let lua_bound = bound_names(
        Arc::new(LuaEngine::new()),
        "probe.lua",
        LUA_PROBE,
        nakama_names::LUA,
    )
    .await;
    let js_bound = bound_names(
        Arc::new(JsEngine::new()),
        "probe.js",
        &js_probe(),
        nakama_names::JS,
    )
    .await;
    assert!(
        lua_bound.contains("storage_read") && js_bound.contains("storageRead"),
        "the probes see the engines' functions: {lua_bound:?} {js_bound:?}"
    );
    assert!(js_bound.contains("registerRpc"), "{js_bound:?}");
    let doc = render(&lua_bound, &js_bound);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DOC);
    if std::env::var_os("METAFI_WRITE_NK_API_DOC").is_some() {
        std::fs::write(&path, &doc).expect("write the doc");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == doc,
        "{DOC} is stale: run `METAFI_WRITE_NK_API_DOC=1 cargo test -p metafi-runtime-conformance \
         --test nk_api_doc` and commit it"
    );
}

//! What is particular to the JavaScript engine: several modules each with its InitModule, the
//! logger, promises and the job queue, a VM held by a loop beside a serving one, parallel VMs,
//! the sandbox, value conversions, and JS-only load errors. Behaviour JavaScript shares with
//! Lua (context, payloads, errors, nk functions, budgets, loading) is checked once for both
//! by the engine conformance suite (`crates/metafi-runtime-conformance`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use metafi_core::CoreError;
use metafi_proto::Code;
use support::{Options, build, fixture, json, start};

fn assert_code(result: Result<String, CoreError>, code: Code) -> String {
    match result {
        Ok(ok) => panic!("expected code {code:?}, got Ok({ok})"),
        Err(e) => {
            assert_eq!(e.code(), code, "{e:?}");
            e.client_message().into_owned()
        }
    }
}

#[tokio::test]
async fn every_module_is_loaded_and_unknown_ids_are_not_found() {
    let h = start("api").await;
    let ids: Vec<String> = h
        .runtime
        .rpc_ids()
        .into_iter()
        .map(|(id, runtime)| {
            assert_eq!(runtime, "js");
            id
        })
        .collect();
    assert!(
        ids.contains(&"context".to_owned()),
        "registerRpc lower-cases ids: {ids:?}"
    );
    assert!(
        ids.contains(&"second_rpc".to_owned()),
        "each module's own InitModule runs: {ids:?}"
    );
    assert_eq!(h.call("second_rpc", "x").await.unwrap(), "second:x");
    let message = assert_code(h.call("no_such_rpc", "").await, Code::NotFound);
    assert_eq!(message, "RPC function not found");
    // InitModule ran once per VM (2 VMs), and nk worked at load time.
    assert_eq!(h.matches.creates.load(Ordering::SeqCst), 2);
    let (module, params) = h.matches.last_params.lock().clone().unwrap();
    assert_eq!(module, "load_probe");
    assert_eq!(params["mode"], "init");
}

#[tokio::test]
async fn the_logger_formats_like_go_and_returns_the_text() {
    let h = start("api").await;
    let out = json(&h.call("log", "").await.unwrap());
    assert_eq!(out["a"], "info from a script: n=3");
    assert_eq!(out["b"], "with fields \"x\"");
    // Nakama's RPC logger has no fields of its own (the RPC id is a field of its Go logger).
    assert_eq!(out["fields"], serde_json::json!({}));
    assert_eq!(out["getFieldsIsFields"], true);
    assert_eq!(
        out["derivedFields"],
        serde_json::json!({"player": "p1", "level": "7"})
    );
}

#[tokio::test]
async fn async_functions_settle_through_the_job_queue() {
    let h = start("api").await;
    assert_eq!(h.call("async_ok", "").await.unwrap(), "async m got ok");
    let message = assert_code(h.call("async_reject", "").await, Code::NotFound);
    assert_eq!(message, "not here");
}

#[tokio::test]
async fn other_calls_complete_while_one_vm_is_held_by_a_loop() {
    // While one VM's thread is held by a looping call, the other VM keeps answering. The loop
    // ends only when the test opens the fake host's gate, so "answered while it loops" is a
    // fact, not a race; the budget is far away (a call stalled behind it would wait for it).
    let mut options = Options::new(fixture("api"));
    options.call_timeout = Duration::from_secs(60);
    let h = Arc::new(build(options).await.unwrap());
    let spinner = {
        let h = h.clone();
        tokio::spawn(async move { h.call("spin_until_open", "").await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..20 {
        h.call("uuid_time", "").await.unwrap();
    }
    assert!(
        !spinner.is_finished(),
        "other calls were stalled until the looping VM was released"
    );
    h.matches.gate.open();
    assert_eq!(spinner.await.unwrap().unwrap(), "released");
}

#[tokio::test]
async fn a_vm_serves_calls_again_after_a_timeout_and_an_endless_promise_chain() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.call_timeout = Duration::from_millis(200);
    let h = build(options).await.unwrap();

    assert_code(h.call("spin", "").await, Code::DeadlineExceeded);
    assert_eq!(
        h.call("counter", "").await.unwrap(),
        "1",
        "same VM, globals intact"
    );

    let result = tokio::time::timeout(Duration::from_secs(60), h.call("spin_async", ""))
        .await
        .expect("the endless promise chain was never stopped");
    let message = assert_code(result, Code::DeadlineExceeded);
    assert!(message.contains("200 ms"), "{message}");
    assert_eq!(h.call("counter", "").await.unwrap(), "2");
}

#[tokio::test]
async fn calls_run_in_parallel_across_vms() {
    let mut options = Options::new(fixture("api"));
    options.vms = 4;
    // The calls' end is the gate's to decide, not their budget's.
    options.call_timeout = Duration::from_secs(60);
    let h = Arc::new(build(options).await.unwrap());
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move { h.call("slow", "gate").await })
        })
        .collect();
    // The gate opens only once all four wait at it at once: serialised calls never get there.
    h.matches
        .gate
        .until_arrived(4, "calls were serialised")
        .await;
    h.matches.gate.open();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), "passed the gate");
    }
}

/// Regression: the host's dispatcher sorted VMs by a load that changed during the sort, and
/// Rust's sort panics on an inconsistent order ("user-provided comparison function does not
/// correctly implement a total order"); many VMs and callers made it likely.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_vms_under_concurrent_load_dispatch_without_panicking() {
    let mut options = Options::new(fixture("api"));
    options.vms = 64;
    options.queue_capacity = 4096;
    let h = Arc::new(build(options).await.unwrap());
    let calls: Vec<_> = (0..256)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    if i % 2 == 0 {
                        let count: u64 = h.call("counter", "1").await.unwrap().parse().unwrap();
                        assert!(count >= 1, "a VM's call count: {count}");
                    } else {
                        assert_eq!(h.call("slow", "1").await.unwrap(), "slept 1");
                    }
                }
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
}

#[tokio::test]
async fn scripts_get_no_filesystem_process_network_or_timers() {
    let h = start("api").await;
    let out = json(&h.call("sandbox", "").await.unwrap());
    for missing in [
        "require",
        "process",
        "fs",
        "std",
        "os",
        "Deno",
        "fetch",
        "XMLHttpRequest",
        "setTimeout",
        "setInterval",
        "console",
        "print",
        "scriptArgs",
        "WebAssembly",
    ] {
        assert_eq!(
            out[missing], "undefined",
            "{missing} must not be reachable: {out}"
        );
    }
    let imported = out["imported"].as_str().unwrap();
    assert!(
        imported.starts_with("refused") || imported.starts_with("threw"),
        "import must fail: {imported}"
    );
    assert_eq!(
        out["atomicsWait"], "threw: cannot block in this thread",
        "a VM thread never blocks in a script"
    );
    assert_eq!(out["evalWorks"], true);
    assert_eq!(out["json"], "function");
}

#[tokio::test]
async fn conversions_never_panic_and_bad_arguments_are_type_errors() {
    let h = start("api").await;
    let out = json(&h.call("conversions", "").await.unwrap());
    let threw = |name: &str, needle: &str| {
        let text = out[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} did not throw: {out}"));
        assert!(
            text.starts_with("threw") && text.contains(needle),
            "{name}: {text}"
        );
    };
    threw("cyclicWrite", "circular");
    threw("bigintParams", "BigInt");
    threw(
        "arrayValue",
        "TypeError: expects 'value' value to be an object",
    );
    threw("nullList", "TypeError: expects an array of keys");
    threw("notObjects", "TypeError: expects an array of keys");
    threw(
        "badUserId",
        "TypeError: expects 'userId' value to be a valid id",
    );
    threw("numberId", "TypeError: expects string");
    threw("emptyId", "TypeError: expects user id");
    threw("badUsers", "TypeError: invalid user id: x");
    threw("negativeLimit", "TypeError: limit must not be negative");
    threw("hugeLimit", "TypeError: expects number");
    threw("noModule", "TypeError: expects module name");
    threw(
        "paramsNotObject",
        "TypeError: expects params to be an object",
    );
    threw("notification", "TypeError: expects valid user id");
    threw("registerLate", "can only be called while InitModule runs");
    threw("badFormat", "TypeError: invalid format argument");
    // initializer.getConfig reaches the get_config row (this harness gives it no config).
    threw(
        "getConfig",
        "Error: failed to get config: the server gave the runtime no configuration",
    );
    assert_eq!(out["huge"], true);
    let (_, params) = h.matches.last_params.lock().clone().unwrap();
    assert_eq!(params["big"], json("1e308"));
    assert!(
        params["nan"].is_null(),
        "NaN becomes null as in JSON.stringify"
    );
    assert!(
        params.get("undef").is_none(),
        "undefined members are left out"
    );
}

#[tokio::test]
async fn modules_without_init_module_or_with_bad_match_handlers_are_refused() {
    let error = build(Options::new(fixture("no_init")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("lib.js:0: InitModule function not found"),
        "{error}"
    );
    let error = build(Options::new(fixture("bad_match")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("lobby.js:2: TypeError: matchLoop not found"),
        "{error}"
    );
}

#[tokio::test]
async fn a_load_that_never_ends_is_stopped_by_the_load_budget() {
    let mut options = Options::new(fixture("slow_load"));
    options.load_timeout = Duration::from_millis(200);
    let error = tokio::time::timeout(Duration::from_secs(60), build(options))
        .await
        .expect("the endless load was never stopped")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("slow.js:0: loading took longer than runtime.load_timeout_ms (200 ms)"),
        "{error}"
    );
}

#[tokio::test]
async fn an_init_module_promise_that_never_settles_is_a_load_error() {
    let error = build(Options::new(fixture("pending_init")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("init.js")
            && error.contains("InitModule returned a Promise that never settles"),
        "{error}"
    );
}

#[tokio::test]
async fn table_functions_throw_nakamas_errors_unserved_ones_fail_only_when_called_bytes_round_trip_and_fields_are_camel_case()
 {
    let h = start("api").await;
    let owner = h.new_user("camel").await;
    let out = json(&h.call("nk_table", &owner.to_string()).await.unwrap());
    assert_eq!(out["badKeys"], "TypeError: expects an array of keys");
    assert_eq!(out["badKeysType"], true);
    assert_eq!(out["badLimit"], "TypeError: expects number");
    assert!(
        out["unserved"].as_str().unwrap().starts_with(
            "Error: nk.sqlExec is not supported by MetaFi: there is no raw SQL access"
        ),
        "{out}"
    );
    assert_eq!(
        out["unservedType"], false,
        "a failure is an Error, not a TypeError"
    );
    assert_eq!(out["binaryIsBuffer"], true);
    assert_eq!(out["binary"], json("[0,255,1,200]"));
    assert_eq!(
        out["view"],
        json("[8,7]"),
        "a typed array's own view, not its whole buffer"
    );
    assert_eq!(
        out["keys"],
        json(
            r#"["collection","createTime","key","permissionRead","permissionWrite","updateTime","userId","value","version"]"#
        )
    );
    assert_eq!(
        out["value"],
        json(r#"{"snake_key":1}"#),
        "user data keys are not renamed"
    );
    assert_eq!(out["permissionRead"], 2);
    assert!(out["cursor"].is_null(), "{out}");

    let message = assert_code(h.call("unserved", "").await, Code::Internal);
    assert_eq!(
        message,
        "nk.sqlExec is not supported by MetaFi: there is no raw SQL access (the database may be SQLite or PostgreSQL); use the storage_* functions or a native Rust module"
    );
}

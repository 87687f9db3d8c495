//! The JavaScript engine end to end: every `nk` function of the fixture module, the error
//! paths, budgets, the sandbox, concurrency and module loading.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use metafi_core::{CoreError, RpcUser};
use metafi_proto::Code;
use support::{Options, build, examples_js, fixture, json, start};

fn user(id: uuid::Uuid) -> RpcUser {
    RpcUser {
        user_id: id,
        username: "alice".into(),
        session_id: uuid::Uuid::new_v4(),
        vars: [("k".to_owned(), "v".to_owned())].into(),
        expires_at: 1_900_000_000,
    }
}

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
async fn the_echo_example_round_trips_json_and_refuses_bad_json_with_code_3() {
    let h = build(Options::new(examples_js())).await.unwrap();
    let payload = r#"{"b":[1,2.5,"x"],"a":{"c":null,"d":true},"u":"\u00e9\ud83d\ude00"}"#;
    let out = h.call("echo_js", payload).await.unwrap();
    assert_eq!(json(&out), json(payload));
    let message = assert_code(h.call("echo_js", "{not json").await, Code::InvalidArgument);
    assert!(
        message.starts_with("payload is not valid JSON"),
        "{message}"
    );
    assert_code(h.call("echo_js", "").await, Code::InvalidArgument);
    assert_eq!(
        h.call("ECHO_JS", "[1]").await.unwrap(),
        "[1]",
        "ids are case-insensitive"
    );
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
async fn the_context_carries_nakamas_camel_case_fields() {
    let h = start("api").await;
    let id = uuid::Uuid::new_v4();
    let caller = user(id);
    let session = caller.session_id;
    let ctx = json(&h.call_as("context", caller, "hello").await.unwrap());
    assert_eq!(ctx["env"]["region"], "eu");
    assert_eq!(ctx["executionMode"], "rpc");
    assert_eq!(ctx["node"], "test-node");
    assert!(ctx["version"].is_string());
    assert_eq!(ctx["userId"], id.to_string());
    assert_eq!(ctx["username"], "alice");
    assert_eq!(ctx["vars"]["k"], "v");
    assert_eq!(ctx["userSessionExp"], 1_900_000_000);
    assert_eq!(ctx["sessionId"], session.to_string());
    assert_eq!(ctx["clientIp"], "127.0.0.9");
    assert_eq!(ctx["queryParams"]["q"], json(r#"["1","2"]"#));
    assert_eq!(ctx["headers"]["x-test"], json(r#"["yes"]"#));
    assert_eq!(ctx["payload"], "hello");

    let anonymous = json(&h.call("context", "").await.unwrap());
    assert!(anonymous.get("userId").is_none(), "{anonymous}");
}

#[tokio::test]
async fn uuids_time_and_library_modules_work() {
    let h = start("api").await;
    let out = json(&h.call("uuid_time", "").await.unwrap());
    let a = out["a"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(a).unwrap().get_version_num(), 4);
    assert_ne!(out["a"], out["b"]);
    let now = out["now"].as_i64().unwrap();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (wall - now).abs() < 60_000,
        "Date.now() is milliseconds: {now}"
    );
    assert!(out["loadedAt"].as_i64().unwrap() <= now);
    assert_eq!(out["helper"], 42);
}

#[tokio::test]
async fn storage_functions_write_read_list_and_delete_with_nakamas_shapes() {
    let h = start("api").await;
    let owner = h.new_user("owner").await;
    let out = json(
        &h.call("storage", &format!(r#"{{"userId":"{owner}"}}"#))
            .await
            .unwrap(),
    );
    let acks = out["acks"].as_array().unwrap();
    assert_eq!(acks.len(), 3);
    assert_eq!(acks[0]["userId"], owner.to_string());
    assert_eq!(acks[0]["collection"], "fixture");
    assert_eq!(
        acks[2]["userId"],
        uuid::Uuid::nil().to_string(),
        "no userId: system-owned"
    );
    assert!(!acks[0]["version"].as_str().unwrap().is_empty());

    let read = out["read"].as_array().unwrap();
    assert_eq!(read.len(), 2, "missing objects are left out: {read:?}");
    let b = read.iter().find(|o| o["key"] == "b").unwrap();
    assert_eq!(b["value"], json(r#"{"n":2,"list":[1,"x"]}"#));
    assert_eq!(b["permissionRead"], 2);
    assert_eq!(b["permissionWrite"], 0);
    assert_eq!(b["userId"], owner.to_string());
    assert!(b["createTime"].as_i64().unwrap() > 1_600_000_000, "seconds");
    assert!(
        b["createTime"].as_i64().unwrap() < 100_000_000_000,
        "seconds, not ms"
    );
    assert!(b["updateTime"].is_number());
    let a = read.iter().find(|o| o["key"] == "a").unwrap();
    assert_eq!(
        (a["permissionRead"].as_i64(), a["permissionWrite"].as_i64()),
        (Some(1), Some(1))
    );

    assert_eq!(out["page1"].as_array().unwrap().len(), 1);
    assert!(out["cursor"].is_string());
    assert_eq!(out["page2"].as_array().unwrap().len(), 1);
    assert!(
        out["page2Cursor"].is_null(),
        "the last page has a null cursor"
    );
    let stale = out["staleMessage"].as_str().unwrap();
    assert!(
        stale.starts_with("failed to write storage objects: "),
        "{stale}"
    );
    assert!(stale.contains("version check failed"), "{stale}");
    assert_eq!(out["afterDelete"], 0);
}

#[tokio::test]
async fn account_and_users_are_read_by_id() {
    let h = start("api").await;
    let id = h.new_user("bob").await;
    let out = json(&h.call("accounts", &id.to_string()).await.unwrap());
    let account = &out["account"];
    assert_eq!(account["user"]["userId"], id.to_string());
    assert_eq!(account["user"]["username"], "bob");
    assert_eq!(account["user"]["online"], false);
    assert!(account["user"]["metadata"].is_object());
    assert!(account["user"]["createTime"].as_i64().unwrap() > 1_600_000_000);
    assert_eq!(account["devices"][0]["id"], format!("device-{id}"));
    assert!(account["wallet"].is_object());
    assert!(account.get("email").is_none());
    assert_eq!(out["users"][0]["username"], "bob");
    assert_eq!(out["users"][0]["displayName"], "");
    assert_eq!(out["none"], 0);
    assert_eq!(out["nothing"], 0);

    let message = assert_code(
        h.call("accounts", &uuid::Uuid::new_v4().to_string()).await,
        Code::Internal,
    );
    assert!(message.starts_with("error getting account: "), "{message}");
    let message = assert_code(h.call("accounts", "not-a-uuid").await, Code::Internal);
    assert_eq!(message, "invalid user id");
}

#[tokio::test]
async fn match_functions_reach_the_match_host() {
    let h = start("api").await;
    let out = json(&h.call("matches", "").await.unwrap());
    let id = out["id"].as_str().unwrap();
    assert!(id.starts_with("match-"));
    assert_eq!(out["found"]["matchId"], id);
    assert_eq!(out["found"]["authoritative"], true);
    assert_eq!(out["found"]["size"], 1);
    assert!(out["found"]["label"].is_null());
    assert_eq!(out["found"]["handlerName"], "lobby");
    assert!(out["missing"].is_null());
    assert_eq!(out["listed"][0]["label"], "lobby");
    assert_eq!(out["listed"][0]["tickRate"], 10);
    assert_eq!(out["reply"], format!("{id} got ping"));
    let (module, params) = h.matches.last_params.lock().clone().unwrap();
    assert_eq!(module, "lobby");
    assert_eq!(params["size"], 4);
    assert_eq!(params["nested"]["deep"], json("[1,2]"));
    let query = h.matches.last_query.lock().clone().unwrap();
    assert_eq!(query.limit, 10);
    assert_eq!(query.authoritative, Some(true));
    assert_eq!(query.label.as_deref(), Some("lobby"));
    assert_eq!((query.min_size, query.max_size), (Some(1), Some(8)));
    assert_eq!(query.query.as_deref(), Some("+label.x:1"));
}

#[tokio::test]
async fn the_logger_formats_like_go_and_returns_the_text() {
    let h = start("api").await;
    let out = json(&h.call("log", "").await.unwrap());
    assert_eq!(out["a"], "info from a script: n=3");
    assert_eq!(out["b"], "with fields \"x\"");
    assert_eq!(
        out["fields"]["rpc_id"], "log",
        "the RPC logger carries rpc_id, as Nakama's"
    );
}

#[tokio::test]
async fn thrown_errors_carry_their_code_or_become_internal() {
    let h = start("api").await;
    let message = assert_code(h.call("raise_code", "").await, Code::PermissionDenied);
    assert_eq!(message, "you may not");
    let message = assert_code(
        h.call("raise_error_code", "").await,
        Code::FailedPrecondition,
    );
    assert_eq!(message, "teapot");
    assert_code(h.call("raise_bad_code", "").await, Code::Internal);
    let message = assert_code(h.call("raise_plain", "").await, Code::Internal);
    assert_eq!(
        message, "boom",
        "no file position or stack reaches the client"
    );
    let message = assert_code(h.call("raise_string", "").await, Code::Internal);
    assert_eq!(message, "boom string");
    let message = assert_code(h.call("script_bug", "{}").await, Code::Internal);
    assert!(message.contains("cannot read property"), "{message}");
    let message = assert_code(h.call("bad_result", "").await, Code::Internal);
    assert!(
        message.contains("only allowed one return value of type String"),
        "{message}"
    );
    assert_code(h.call("lone_surrogate", "").await, Code::Internal);
    assert_eq!(h.call("nothing", "").await.unwrap(), "");
    // The VM is still healthy after all that.
    assert!(h.call("uuid_time", "").await.is_ok());
}

#[tokio::test]
async fn async_functions_settle_through_the_job_queue() {
    let h = start("api").await;
    assert_eq!(h.call("async_ok", "").await.unwrap(), "async m got ok");
    let message = assert_code(h.call("async_reject", "").await, Code::NotFound);
    assert_eq!(message, "not here");
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_within_its_budget_while_other_calls_complete() {
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

    // An infinite loop is stopped by its budget, which the message names (the hang guard only
    // catches a loop that is never stopped).
    let mut options = Options::new(fixture("api"));
    options.call_timeout = Duration::from_millis(300);
    let h = build(options).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), h.call("spin", ""))
        .await
        .expect("the infinite loop was never stopped");
    let message = assert_code(result, Code::DeadlineExceeded);
    assert!(message.contains("300 ms"), "{message}");
}

#[tokio::test]
async fn a_script_cannot_swallow_its_own_timeout_with_try_catch() {
    let mut options = Options::new(fixture("api"));
    options.call_timeout = Duration::from_millis(300);
    let h = build(options).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), h.call("spin_catch", ""))
        .await
        .expect("the try/catch loop swallowed its timeout and was never stopped");
    let message = assert_code(result, Code::DeadlineExceeded);
    assert!(message.contains("300 ms"), "{message}");
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
async fn a_memory_bomb_fails_its_call_and_the_vm_recovers() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.call_timeout = Duration::from_secs(30);
    options.memory_limit_bytes = 16 << 20;
    let h = build(options).await.unwrap();
    assert_eq!(h.call("counter", "").await.unwrap(), "1");
    // The memory cap, not the call's time budget, ends it: RESOURCE_EXHAUSTED, not a timeout.
    let message = assert_code(h.call("memory_bomb", "").await, Code::ResourceExhausted);
    assert!(message.contains("memory"), "{message}");
    for _ in 0..5 {
        assert_eq!(h.call("nothing", "").await.unwrap(), "");
    }
    assert_eq!(
        h.call("counter", "").await.unwrap(),
        "2",
        "same VM, globals intact"
    );
    let owner = h.new_user("after").await;
    assert!(
        h.call("storage", &format!(r#"{{"userId":"{owner}"}}"#))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn an_nk_call_that_waits_past_the_deadline_times_out_and_the_vm_recovers() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.call_timeout = Duration::from_millis(300);
    let h = build(options).await.unwrap();
    // The nk call waits at a gate that never opens: only the call's budget can end it.
    let result = tokio::time::timeout(Duration::from_secs(60), h.call("slow", "gate"))
        .await
        .expect("the nk call waiting past the deadline was never timed out");
    let message = assert_code(result, Code::DeadlineExceeded);
    assert!(
        message.contains("300 ms"),
        "the call's own budget ended it: {message}"
    );
    assert_eq!(
        h.matches.gate.arrived(),
        1,
        "the call did reach its nk wait"
    );
    // A wait shorter than the budget is not cut.
    assert_eq!(h.call("slow", "10").await.unwrap(), "slept 10");
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
async fn a_full_queue_is_refused_with_resource_exhausted() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.max_calls_per_vm = 1;
    options.queue_capacity = 1;
    let h = Arc::new(build(options).await.unwrap());
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move { h.call("slow", "300").await })
        })
        .collect();
    let mut refused = 0;
    let mut served = 0;
    for call in calls {
        match call.await.unwrap() {
            Ok(_) => served += 1,
            Err(e) => {
                assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
                refused += 1;
            }
        }
    }
    assert!(
        served >= 1 && refused >= 1,
        "served {served}, refused {refused}"
    );
}

#[tokio::test]
async fn globals_are_per_vm() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    let h = build(options).await.unwrap();
    assert_eq!(h.call("counter", "").await.unwrap(), "1");
    assert_eq!(h.call("counter", "").await.unwrap(), "2");
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
    threw(
        "notification",
        "Error: nk.notificationSend is not available yet: this server does not serve notifications yet",
    );
    threw("registerLate", "can only be called while InitModule runs");
    threw("badFormat", "TypeError: invalid format argument");
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
async fn an_id_registered_by_lua_and_js_is_a_start_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("dup.lua"),
        "local nk = require('nakama')\nnk.register_rpc(function() return '' end, 'echo_js')\n",
    )
    .unwrap();
    std::fs::copy(examples_js().join("echo.js"), dir.path().join("echo.js")).unwrap();
    let mut options = Options::new(dir.path().to_owned());
    options
        .engines
        .push(Arc::new(metafi_runtime_lua::LuaEngine::new()));
    let error = build(options).await.unwrap_err().to_string();
    assert!(error.contains("'echo_js' is registered by both"), "{error}");
}

#[tokio::test]
async fn a_syntax_error_names_file_and_line() {
    let error = build(Options::new(fixture("bad_syntax")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("broken.js:3: SyntaxError"), "{error}");
}

#[tokio::test]
async fn an_error_at_load_names_the_innermost_file_line_and_message() {
    let error = build(Options::new(fixture("bad_runtime")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("explodes.js:2: Error: module refuses to load"),
        "{error}"
    );
    let error = build(Options::new(fixture("bad_nested")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("fails_in_nk.js:4: TypeError: expects 'userId' value to be a valid id"),
        "{error}"
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
    assert_eq!(
        out["unserved"],
        "Error: nk.friendsList is not available yet: this server does not serve friends yet"
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
        "nk.leaderboardCreate is not available yet: this server does not serve leaderboards yet"
    );
}

//! The Lua engine end to end: every `nk` function of the fixture module, the error paths,
//! budgets, the sandbox and module loading.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use metafi_core::{CoreError, RpcUser};
use metafi_proto::Code;
use support::{Options, build, fixture, json, start};

fn examples_lua() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua")
}

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
    let h = build(Options::new(examples_lua())).await.unwrap();
    let out = h
        .call("echo", r#"{"b":[1,2.5,"x"],"a":{"c":null,"d":true}}"#)
        .await
        .unwrap();
    assert_eq!(json(&out), json(r#"{"a":{"d":true},"b":[1,2.5,"x"]}"#));
    let message = assert_code(h.call("echo", "{not json").await, Code::InvalidArgument);
    assert!(message.contains("not valid JSON"), "{message}");
    assert_code(h.call("echo", "").await, Code::InvalidArgument);
}

#[tokio::test]
async fn rpc_ids_are_case_insensitive_and_unknown_ids_are_not_found() {
    let h = start("api").await;
    assert!(h.call("CONTEXT", "").await.is_ok());
    let message = assert_code(h.call("no_such_rpc", "").await, Code::NotFound);
    assert_eq!(message, "RPC function not found");
}

#[tokio::test]
async fn the_context_carries_nakamas_fields() {
    let h = start("api").await;
    let id = uuid::Uuid::new_v4();
    let caller = user(id);
    let session = caller.session_id;
    let ctx = json(&h.call_as("context", caller, "hello").await.unwrap());
    assert_eq!(ctx["env"]["region"], "eu");
    assert_eq!(ctx["execution_mode"], "rpc");
    assert_eq!(ctx["node"], "test-node");
    assert_eq!(ctx["user_id"], id.to_string());
    assert_eq!(ctx["username"], "alice");
    assert_eq!(ctx["vars"]["k"], "v");
    assert_eq!(ctx["user_session_exp"], 1_900_000_000);
    assert_eq!(ctx["session_id"], session.to_string());
    assert_eq!(ctx["client_ip"], "127.0.0.9");
    assert_eq!(ctx["query_params"]["q"], json(r#"["1","2"]"#));
    assert_eq!(ctx["headers"]["x-test"], json(r#"["yes"]"#));
    assert_eq!(ctx["payload"], "hello");

    let anonymous = json(&h.call("context", "").await.unwrap());
    assert!(anonymous.get("user_id").is_none(), "{anonymous}");
}

#[tokio::test]
async fn uuid_time_and_required_modules_work() {
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
        "nk.time() is milliseconds: {now}"
    );
    assert!(out["loaded_at"].as_i64().unwrap() <= now);
    assert_eq!(out["helper"], 42);
}

#[tokio::test]
async fn storage_functions_write_read_list_and_delete_as_the_server() {
    let h = start("api").await;
    let owner = h.new_user("owner").await;
    let out = json(
        &h.call("storage", &format!(r#"{{"user_id":"{owner}"}}"#))
            .await
            .unwrap(),
    );
    let acks = out["acks"].as_array().unwrap();
    assert_eq!(acks.len(), 3);
    assert_eq!(acks[0]["user_id"], owner.to_string());
    assert_eq!(
        acks[2]["user_id"],
        uuid::Uuid::nil().to_string(),
        "no user_id: system-owned"
    );
    assert!(!acks[0]["version"].as_str().unwrap().is_empty());

    let read = out["read"].as_array().unwrap();
    assert_eq!(read.len(), 2, "missing objects are left out: {read:?}");
    let b = read.iter().find(|o| o["key"] == "b").unwrap();
    assert_eq!(b["value"]["n"], 2);
    assert_eq!(b["permission_read"], 2);
    assert_eq!(b["permission_write"], 0);
    assert!(
        b["create_time"].as_i64().unwrap() > 1_600_000_000,
        "seconds"
    );

    assert_eq!(out["page1"].as_array().unwrap().len(), 1);
    assert!(out["cursor"].is_string());
    assert_eq!(out["page2"].as_array().unwrap().len(), 1);
    assert_eq!(out["stale_write_ok"], false, "a version mismatch raises");
    assert_eq!(out["after_delete"], 0);
}

#[tokio::test]
async fn account_and_users_are_read_by_id() {
    let h = start("api").await;
    let id = h.new_user("bob").await;
    let out = json(&h.call("accounts", &id.to_string()).await.unwrap());
    assert_eq!(out["user_id"], id.to_string());
    assert_eq!(out["username"], "bob");
    assert_eq!(out["nested_username"], "bob");
    assert_eq!(out["devices"][0]["id"], format!("device-{id}"));
    assert!(out["wallet"].is_object());
    assert_eq!(out["users"][0]["username"], "bob");
    assert_eq!(out["none"], 0);

    let message = assert_code(
        h.call("accounts", &uuid::Uuid::new_v4().to_string()).await,
        Code::Internal,
    );
    assert!(message.contains("failed to get account"), "{message}");
    let message = assert_code(h.call("accounts", "not-a-uuid").await, Code::Internal);
    assert!(
        message.contains("bad argument #1 to 'account_get_id'"),
        "{message}"
    );
}

#[tokio::test]
async fn match_functions_reach_the_match_host() {
    let h = start("api").await;
    let out = json(&h.call("matches", "").await.unwrap());
    assert!(out["id"].as_str().unwrap().starts_with("match-"));
    assert_eq!(out["found"]["match_id"], out["id"]);
    assert_eq!(out["found"]["handler_name"], "lobby");
    assert_eq!(out["missing"], true);
    assert_eq!(out["listed"][0]["label"], "lobby");
    assert_eq!(out["listed"][0]["tick_rate"], 10);
    assert_eq!(
        out["reply"],
        format!("{} got ping", out["id"].as_str().unwrap())
    );
    let (module, params) = h.matches.last_params.lock().clone().unwrap();
    assert_eq!(module, "lobby");
    assert_eq!(params["size"], 4);
    let query = h.matches.last_query.lock().clone().unwrap();
    assert_eq!(query.limit, 10);
    assert_eq!(query.authoritative, Some(true));
    assert_eq!((query.min_size, query.max_size), (Some(1), Some(8)));
    assert_eq!(query.query.as_deref(), Some("+label.x:1"));
}

#[tokio::test]
async fn run_once_runs_once_per_process_not_once_per_vm() {
    let mut options = Options::new(fixture("api"));
    options.vms = 3;
    let h = build(options).await.unwrap();
    // Three VMs loaded api.lua; only the first run_once created the probe match.
    assert_eq!(h.matches.creates.load(Ordering::SeqCst), 1);
    let (module, params) = h.matches.last_params.lock().clone().unwrap();
    assert_eq!(module, "run_once_probe");
    assert_eq!(params["mode"], "run_once");
}

#[tokio::test]
async fn script_errors_carry_their_code_or_become_internal() {
    let h = start("api").await;
    let message = assert_code(h.call("raise_code", "").await, Code::PermissionDenied);
    assert_eq!(message, "you may not");
    assert_code(h.call("raise_bad_code", "").await, Code::Internal);
    let message = assert_code(h.call("raise_plain", "").await, Code::Internal);
    assert_eq!(
        message, "boom",
        "the file:line prefix is stripped for clients"
    );
    let message = assert_code(h.call("script_bug", "{}").await, Code::Internal);
    assert!(message.contains("attempt to index"), "{message}");
    let message = assert_code(h.call("bad_result", "").await, Code::Internal);
    assert!(
        message.contains("only allowed one return value of type String"),
        "{message}"
    );
    assert_eq!(h.call("nothing", "").await.unwrap(), "");
    // The VM is still healthy after all that.
    assert_eq!(h.call("log", "").await.unwrap(), "logged");
}

#[tokio::test]
async fn a_host_error_caught_with_pcall_was_a_traceback_object_now_one_line_with_position() {
    let h = start("api").await;
    let caught = h.call("pcall_host_error", "{not json").await.unwrap();
    let (kind, message) = caught.split_once('|').expect("type|message");
    assert_eq!(
        kind, "string",
        "pcall hands the script the message, as Nakama: {caught}"
    );
    assert!(
        !message.contains('\n') && !message.contains("traceback"),
        "one line, no stack traceback (it reached clients when re-raised): {message}"
    );
    assert!(
        message.contains("api.lua:") && message.contains("not a valid JSON string"),
        "the script's position and the reason: {message}"
    );
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_within_its_budget_while_other_calls_complete() {
    // While one VM's thread spins, the other VM keeps answering. The spin ends only when the
    // test moves the clock the script reads, so "answered while it spins" is a fact, not a
    // race; the budget is far away (a call stalled behind the spinner would wait for it).
    let mut options = Options::new(fixture("api"));
    options.call_timeout = Duration::from_secs(60);
    let h = std::sync::Arc::new(build(options).await.unwrap());
    let far = h.clock.now_ms() + 86_400_000;
    let spinner = {
        let h = h.clone();
        tokio::spawn(async move { h.call("spin_until", &far.to_string()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..20 {
        h.call("uuid_time", "").await.unwrap();
    }
    assert!(
        !spinner.is_finished(),
        "other calls were stalled until the spinning VM was stopped"
    );
    h.clock.advance(Duration::from_secs(86_401));
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

    // Both VMs still serve calls.
    for _ in 0..10 {
        h.call("counter", "").await.unwrap();
    }
}

#[tokio::test]
async fn a_script_cannot_swallow_its_own_timeout_with_pcall() {
    let mut options = Options::new(fixture("api"));
    options.call_timeout = Duration::from_millis(300);
    let h = build(options).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), h.call("spin_pcall", ""))
        .await
        .expect("the pcall loop swallowed its timeout and was never stopped");
    let message = assert_code(result, Code::DeadlineExceeded);
    assert!(message.contains("300 ms"), "{message}");
    for _ in 0..10 {
        h.call("counter", "").await.unwrap();
    }
}

#[tokio::test]
async fn a_call_still_awaiting_io_at_its_deadline_is_dropped_and_the_vm_recovers() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.call_timeout = Duration::from_millis(200);
    let h = build(options).await.unwrap();
    // The IO call waits at a gate that never opens: only the deadline can end the call.
    let result = tokio::time::timeout(Duration::from_secs(60), h.call("slow", "gate"))
        .await
        .expect("the call awaiting IO was never dropped at its deadline");
    assert_code(result, Code::DeadlineExceeded);
    assert_eq!(
        h.matches.gate.arrived(),
        1,
        "the call did reach its IO wait"
    );
    for expected in 1..=3 {
        assert_eq!(h.call("counter", "").await.unwrap(), expected.to_string());
    }
    assert_eq!(h.call("slow", "10").await.unwrap(), "slept 10");
}

#[tokio::test]
async fn a_memory_bomb_fails_its_call_and_the_vm_recovers() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.memory_limit_bytes = 16 << 20;
    let h = build(options).await.unwrap();
    // The memory cap, not the call's time budget, ends it: RESOURCE_EXHAUSTED, not a timeout.
    let message = assert_code(h.call("memory_bomb", "").await, Code::ResourceExhausted);
    assert!(message.contains("memory"), "{message}");
    for _ in 0..5 {
        assert_eq!(h.call("nothing", "").await.unwrap(), "");
    }
    assert!(
        h.call(
            "storage",
            &format!(r#"{{"user_id":"{}"}}"#, h.new_user("after").await)
        )
        .await
        .is_ok()
    );
}

#[tokio::test]
async fn calls_awaiting_io_interleave_on_one_vm() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    // The slow call's end is the gate's to decide, not its budget's.
    options.call_timeout = Duration::from_secs(60);
    let h = std::sync::Arc::new(build(options).await.unwrap());
    let slow = {
        let h = h.clone();
        tokio::spawn(async move { h.call("slow", "gate").await })
    };
    h.matches
        .gate
        .until_arrived(1, "the slow call never began its IO wait")
        .await;
    // The gate is closed until the fast call is answered: a fast call queued behind the slow
    // one would never be answered.
    let fast = tokio::time::timeout(Duration::from_secs(30), h.call("counter", ""))
        .await
        .expect("the fast call waited for the slow one");
    assert_eq!(fast.unwrap(), "1");
    assert!(!slow.is_finished(), "the slow call is still waiting");
    h.matches.gate.open();
    assert_eq!(slow.await.unwrap().unwrap(), "passed the gate");
}

#[tokio::test]
async fn a_full_queue_is_refused_with_resource_exhausted() {
    let mut options = Options::new(fixture("api"));
    options.vms = 1;
    options.max_calls_per_vm = 1;
    options.queue_capacity = 1;
    let h = std::sync::Arc::new(build(options).await.unwrap());
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
async fn scripts_get_no_filesystem_process_or_bytecode_access() {
    let h = start("api").await;
    let out = json(&h.call("sandbox", "").await.unwrap());
    for missing in [
        "io",
        "debug",
        "ffi",
        "jit",
        "dofile",
        "loadfile",
        "os_execute",
        "os_remove",
        "os_getenv",
        "loadlib",
    ] {
        assert_eq!(
            out[missing], "nil",
            "{missing} must not be reachable: {out}"
        );
    }
    for kept in ["os_time", "os_clock", "os_date"] {
        assert_eq!(out[kept], "function", "{kept}");
    }
    assert_eq!(out["require_file"], false);
    assert_eq!(out["require_escape"], false);
    assert_eq!(out["bytecode"], false);
    assert_eq!(out["source"], true);
}

#[tokio::test]
async fn a_syntax_error_names_file_and_line() {
    let error = build(Options::new(fixture("bad_syntax")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("broken.lua:3:"), "{error}");
    assert!(error.contains("unexpected symbol"), "{error}");
}

#[tokio::test]
async fn an_error_at_load_names_file_line_and_message() {
    let error = build(Options::new(fixture("bad_runtime")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("explodes.lua:4: module refuses to load"),
        "{error}"
    );
    let error = build(Options::new(fixture("bad_nested")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("fails_in_nk.lua:4:"), "{error}");
    assert!(error.contains("not a valid JSON string"), "{error}");
}

#[tokio::test]
async fn table_functions_raise_nakamas_errors_unserved_ones_fail_only_when_called_and_bytes_round_trip()
 {
    let h = start("api").await;
    let out = json(&h.call("nk_table", "").await.unwrap());
    let bad_keys = out["bad_keys"].as_str().unwrap();
    assert!(
        bad_keys.ends_with(
            "api.lua:197: bad argument #1 to 'storage_read' (expects a valid set of keys)"
        ),
        "gopher-lua's positioned argument error: {bad_keys}"
    );
    assert!(
        out["bad_label"]
            .as_str()
            .unwrap()
            .ends_with("bad argument #3 to 'match_list' (expects label string or nil)"),
        "{out}"
    );
    assert!(
        out["unserved"].as_str().unwrap().ends_with(
            "nk.friends_list is not available yet: this server does not serve friends yet"
        ),
        "{out}"
    );
    assert_eq!(
        out["binary_ok"], true,
        "a non-UTF-8 string comes back byte for byte"
    );
    assert_eq!(out["list_count"], 0);
    assert_eq!(
        out["cursor_nil"], true,
        "storage_list returns (objects, nil)"
    );
    assert_eq!(out["sparse"], r#"["a",null,"c"]"#);
    assert_eq!(out["sorted"], r#"{"a":{"c":true},"b":1}"#);

    // Uncaught, an unserved function is code 13 with its message, the position stripped.
    let message = assert_code(h.call("unserved", "").await, Code::Internal);
    assert_eq!(
        message,
        "nk.leaderboard_create is not available yet: this server does not serve leaderboards yet"
    );
}

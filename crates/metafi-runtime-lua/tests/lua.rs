//! What is particular to the Lua engine: pcall and host errors, a spinning VM beside a
//! serving one, calls interleaving on one VM while they await IO, the sandbox. Behaviour
//! Lua shares with JavaScript (context, payloads, errors, nk functions, budgets, loading) is
//! checked once for both by the engine conformance suite (`crates/metafi-runtime-conformance`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

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
async fn other_calls_complete_while_one_vm_is_held_by_a_loop() {
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
async fn table_functions_raise_nakamas_errors_unserved_ones_fail_only_when_called_and_bytes_round_trip()
 {
    let h = start("api").await;
    let out = json(&h.call("nk_table", "").await.unwrap());
    let bad_keys = out["bad_keys"].as_str().unwrap();
    assert!(
        bad_keys
            .ends_with("api.lua:97: bad argument #1 to storage_read (expects a valid set of keys)"),
        "gopher-lua's positioned argument error: {bad_keys}"
    );
    assert!(
        out["bad_label"]
            .as_str()
            .unwrap()
            .ends_with("bad argument #3 to match_list (expects label string or nil)"),
        "{out}"
    );
    assert!(
        out["unserved"]
            .as_str()
            .unwrap()
            .contains("nk.sql_exec is not supported by MetaFi: there is no raw SQL access"),
        "{out}"
    );
    assert!(
        out["function_id"]
            .as_str()
            .unwrap()
            .ends_with("bad argument #1 to match_get (string expected)"),
        "a function is not a string argument: {out}"
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
    assert_eq!(
        out["context_mode"], "run_once",
        "nk.get_context() is a load-time context, as Nakama's"
    );
    assert_eq!(out["context_user"], true, "{out}");
    assert_eq!(out["context_env"], true, "{out}");

    // Uncaught, an unserved function is code 13 with its message, the position stripped.
    let message = assert_code(h.call("unserved", "").await, Code::Internal);
    assert_eq!(
        message,
        "nk.sql_exec is not supported by MetaFi: there is no raw SQL access (the database may be SQLite or PostgreSQL); use the storage_* functions or a native Rust module"
    );
}

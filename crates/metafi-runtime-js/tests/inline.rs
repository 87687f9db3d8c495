//! JavaScript calls on the inline path (docs/RUNTIME.md, "Calls without thread hops"): they
//! run on the tokio worker that received them; an `nk` call that blocks first hands the
//! worker's other tasks to another thread (`metafi_runtime::may_block`); the interrupt
//! handler still stops a runaway.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use metafi_proto::Code;
use support::{Harness, Options, build};

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("echo", function (ctx, logger, nk, payload) { return payload; });
  initializer.registerRpc("spin", function (ctx, logger, nk, payload) { for (;;) {} });
  initializer.registerRpc("store", function (ctx, logger, nk, payload) {
    nk.storageWrite([{ collection: "inline", key: payload, userId: "00000000-0000-0000-0000-000000000000", value: { k: payload } }]);
    var read = nk.storageRead([{ collection: "inline", key: payload, userId: "00000000-0000-0000-0000-000000000000" }]);
    return read[0].value.k;
  });
  initializer.registerRpc("fetch", function (ctx, logger, nk, payload) {
    return nk.httpRequest(payload, "get", {}, "").body;
  });
}
"#;

async fn js() -> (Arc<Harness>, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("m.js"), JS).unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    options.call_timeout = Duration::from_millis(300);
    (Arc::new(build(options).await.unwrap()), modules)
}

async fn spawned(
    h: &Arc<Harness>,
    id: &str,
    payload: &str,
) -> Result<String, metafi_core::CoreError> {
    let h = h.clone();
    let (id, payload) = (id.to_owned(), payload.to_owned());
    let task = tokio::spawn(async move { h.call(&id, &payload).await });
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("no answer")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_js_script_on_the_inline_path_is_stopped() {
    let (h, _m) = js().await;
    let error = spawned(&h, "spin", "").await.unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
    assert_eq!(spawned(&h, "echo", "after").await.unwrap(), "after");
    assert_eq!(h.runtime.inline_stats("js").0, 2, "both ran inline");
}

/// One worker: each blocking `nk` wait must hand the worker on, or the other calls (and the
/// storage writer's answers) would stall behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn js_calls_blocking_in_nk_on_the_inline_path_all_complete() {
    let (h, _m) = js().await;
    let calls: Vec<_> = (0..16)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move { (i, h.call("store", &format!("k{i}")).await) })
        })
        .collect();
    for call in calls {
        let (i, answer) = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("no answer")
            .unwrap();
        assert_eq!(answer.unwrap(), format!("k{i}"));
    }
    let (calls, vms) = h.runtime.inline_stats("js");
    assert!(calls >= 1, "no call ran inline");
    assert!(vms <= metafi_runtime::default_inline_vms(), "{vms} VMs");
}

/// One worker: a JavaScript call blocked in `nk.httpRequest` (its server answers only when the
/// test says so) must not keep the worker's other calls from running.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_js_call_blocked_in_nk_does_not_stall_other_calls_of_its_worker() {
    let (h, _m) = js().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:18301").unwrap();
    let (arrived, request_arrived) = std::sync::mpsc::channel();
    let (answer, may_answer) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = stream.read(&mut buf).unwrap();
        arrived.send(()).unwrap();
        may_answer.recv().unwrap();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nlate")
            .unwrap();
    });
    let blocked = {
        let h = h.clone();
        tokio::spawn(async move { h.call("fetch", "http://127.0.0.1:18301/").await })
    };
    tokio::task::spawn_blocking(move || request_arrived.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the request never arrived");
    assert_eq!(spawned(&h, "echo", "meanwhile").await.unwrap(), "meanwhile");
    assert!(!blocked.is_finished());
    answer.send(()).unwrap();
    let body = tokio::time::timeout(Duration::from_secs(30), blocked)
        .await
        .expect("the blocked call never finished")
        .unwrap()
        .unwrap();
    assert_eq!(body, "late");
    server.join().unwrap();
    assert_eq!(h.runtime.inline_stats("js").0, 2, "both ran inline");
}

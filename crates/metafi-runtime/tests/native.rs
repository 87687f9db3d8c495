//! Native modules: registration, errors with codes, panics, budgets, and ids shared with Lua.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

// One harness for the host and the Lua engine tests: it lives with the Lua crate's tests.
#[path = "../../metafi-runtime-lua/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use metafi_proto::Code;
use metafi_runtime::native::InitError;
use metafi_runtime::{LoadError, NativeInitializer, NativeModule, RpcError};
use support::{Options, build, fixture, json};

struct Probe;

impl NativeModule for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn init(&self, init: &mut NativeInitializer) -> Result<(), InitError> {
        init.register_rpc(
            "Native_Echo",
            |_ctx, _nk, payload| async move { Ok(payload) },
        );
        init.register_rpc("native_code", |_ctx, _nk, _payload| async move {
            Err(RpcError::new(Code::FailedPrecondition, "not yet"))
        });
        init.register_rpc("native_panic", |_ctx, _nk, payload| async move {
            if payload == "please" {
                panic!("native code panicked on purpose");
            }
            Ok(String::new())
        });
        init.register_rpc("native_sleep", |_ctx, _nk, _payload| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(String::new())
        });
        init.register_rpc("native_storage", |ctx, nk, _payload| async move {
            let owner = ctx
                .request
                .user
                .as_ref()
                .map(|u| u.user_id)
                .unwrap_or_default();
            let acks = nk
                .storage_write(vec![metafi_core::objects::WriteInput {
                    collection: "native".into(),
                    key: "k".into(),
                    user_id: owner,
                    value: r#"{"from":"rust"}"#.into(),
                    ..Default::default()
                }])
                .await?;
            Ok(acks[0].version.clone())
        });
        Ok(())
    }
}

struct Clashes;

impl NativeModule for Clashes {
    fn name(&self) -> &'static str {
        "clashes"
    }

    fn init(&self, init: &mut NativeInitializer) -> Result<(), InitError> {
        init.register_rpc(
            "counter",
            |_ctx, _nk, _payload| async move { Ok(String::new()) },
        );
        Ok(())
    }
}

struct Refuses;

impl NativeModule for Refuses {
    fn name(&self) -> &'static str {
        "refuses"
    }

    fn init(&self, _init: &mut NativeInitializer) -> Result<(), InitError> {
        Err("missing configuration".into())
    }
}

async fn harness(call_timeout: Duration) -> support::Harness {
    let mut options = Options::new(fixture("api"));
    options.call_timeout = call_timeout;
    options.natives = vec![Arc::new(Probe)];
    build(options).await.unwrap()
}

#[tokio::test]
async fn native_and_lua_rpcs_are_served_side_by_side() {
    let h = harness(Duration::from_secs(5)).await;
    assert_eq!(h.call("native_echo", "hi").await.unwrap(), "hi");
    assert_eq!(h.call("NATIVE_ECHO", "hi").await.unwrap(), "hi");
    assert!(h.call("counter", "").await.is_ok());
    let ids = h.runtime.rpc_ids();
    assert!(ids.contains(&("native_echo".to_owned(), "native")));
    assert!(ids.contains(&("counter".to_owned(), "lua")));
}

#[tokio::test]
async fn native_errors_keep_their_code_and_panics_become_internal() {
    let h = harness(Duration::from_secs(5)).await;
    let error = h.call("native_code", "").await.unwrap_err();
    assert_eq!(
        (error.code(), error.client_message().as_ref()),
        (Code::FailedPrecondition, "not yet")
    );
    let error = h.call("native_panic", "please").await.unwrap_err();
    assert_eq!(error.code(), Code::Internal);
    assert!(
        !error.client_message().contains("on purpose"),
        "panic text stays in the log"
    );
    assert_eq!(h.call("native_panic", "").await.unwrap(), "");
}

/// `metafi_runtime_rpc_calls_total` per id and outcome and the duration per id, as `/metrics`
/// renders them: the `ok` series and the duration are resolved once per id and kept, an error
/// goes to its own outcome's series.
// A current-thread runtime: the local recorder is the one of the thread that calls.
#[tokio::test(flavor = "current_thread")]
async fn rpc_metrics_count_each_call_per_id_and_outcome() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let _recorder = metrics::set_default_local_recorder(&recorder);
    let h = harness(Duration::from_secs(5)).await;
    for _ in 0..3 {
        assert_eq!(h.call("native_echo", "hi").await.unwrap(), "hi");
    }
    assert!(h.call("NATIVE_ECHO", "hi").await.is_ok());
    assert!(h.call("native_code", "").await.is_err());
    assert!(h.call("native_code", "").await.is_err());
    let text = handle.render();
    let value = |series: &str| -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    };
    let calls = r#"metafi_runtime_rpc_calls_total{id="native_echo",runtime="native",outcome="ok"}"#;
    assert_eq!(value(calls), Some(4.0), "{text}");
    let raised =
        r#"metafi_runtime_rpc_calls_total{id="native_code",runtime="native",outcome="raised"}"#;
    assert_eq!(value(raised), Some(2.0), "{text}");
    let failed_ok =
        r#"metafi_runtime_rpc_calls_total{id="native_code",runtime="native",outcome="ok"}"#;
    assert_eq!(
        value(failed_ok),
        None,
        "an id that never succeeded has no ok series: {text}"
    );
    let timed = r#"metafi_runtime_rpc_duration_seconds_count{id="native_echo",runtime="native"}"#;
    assert_eq!(value(timed), Some(4.0), "{text}");
    let timed = r#"metafi_runtime_rpc_duration_seconds_count{id="native_code",runtime="native"}"#;
    assert_eq!(value(timed), Some(2.0), "{text}");
}

#[tokio::test]
async fn native_calls_have_the_same_time_budget() {
    let h = harness(Duration::from_millis(200)).await;
    // The native function sleeps 30 s and then succeeds: only the budget makes it an error.
    let error = h.call("native_sleep", "").await.unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded);
    assert!(error.client_message().contains("200 ms"), "{error:?}");
}

#[tokio::test]
async fn native_functions_use_nk() {
    let h = harness(Duration::from_secs(5)).await;
    let version = h.call("native_storage", "").await.unwrap();
    assert!(!version.is_empty());
    let objects = json(
        &h.call(
            "storage",
            &format!(r#"{{"user_id":"{}"}}"#, uuid::Uuid::nil()),
        )
        .await
        .unwrap(),
    );
    assert!(objects["acks"].is_array());
}

#[tokio::test]
async fn an_id_registered_by_two_runtimes_stops_the_start() {
    let mut options = Options::new(fixture("api"));
    options.natives = vec![Arc::new(Clashes)];
    let error = build(options).await.unwrap_err();
    assert!(
        matches!(error, LoadError::DuplicateRpc { ref id, .. } if id == "counter"),
        "{error}"
    );
    assert!(
        error.to_string().contains("native module clashes"),
        "{error}"
    );
}

#[tokio::test]
async fn a_failing_native_init_names_the_module() {
    let mut options = Options::new(fixture("api"));
    options.natives = vec![Arc::new(Refuses)];
    let error = build(options).await.unwrap_err().to_string();
    assert_eq!(error, "native module refuses: missing configuration");
}

//! One VM driven directly through the engine interface, as the host's VM threads drive it:
//! what it registers, that calls interleave correctly with budgets, and that dropping it
//! releases every JavaScript value (QuickJS aborts the process if one outlives its runtime).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_core::RpcContext;
use metafi_runtime::{
    CallContext, EngineFactory, ExecutionMode, Registered, RpcCall, ScriptError, VmLimits, VmSetup,
};
use metafi_runtime_js::JsEngine;

fn call(id: &str, payload: &str, budget: Duration) -> RpcCall {
    RpcCall {
        id: Arc::from(id),
        ctx: Arc::new(CallContext {
            mode: ExecutionMode::Rpc,
            node: Arc::from("test-node"),
            version: "test",
            env: Arc::new(support::env()),
            request: RpcContext::default(),
        }),
        payload: payload.to_owned(),
        deadline: Instant::now() + budget,
    }
}

fn on_vm_thread(test: impl AsyncFnOnce()) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, test());
}

#[test]
fn a_vm_registers_rpcs_and_match_handlers_serves_calls_and_drops_cleanly() {
    on_vm_thread(async || {
        let dir = tempfile::tempdir().unwrap();
        let setup = support::vm_setup("api", dir.path()).await;
        let engine = JsEngine::new();
        let vm = engine.create_vm(setup).await.unwrap();

        let registrations = vm.registrations();
        assert_eq!(
            registrations.matches,
            vec![Registered {
                id: "lobby".into(),
                module: "api".into()
            }]
        );
        let module_of = |id: &str| {
            registrations
                .rpcs
                .iter()
                .find(|r| r.id == id)
                .map(|r| r.module.clone())
        };
        assert_eq!(module_of("context").as_deref(), Some("api"));
        assert_eq!(module_of("second_rpc").as_deref(), Some("second"));
        let mut sorted = registrations.rpcs.clone();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(registrations.rpcs, sorted, "sorted by id");

        let budget = Duration::from_secs(5);
        assert_eq!(
            vm.clone().call_rpc(call("counter", "", budget)).await,
            Ok("1".into())
        );
        assert_eq!(
            vm.clone()
                .call_rpc(call("spin", "", Duration::from_millis(50)))
                .await,
            Err(ScriptError::Timeout)
        );
        assert_eq!(
            vm.clone().call_rpc(call("counter", "", budget)).await,
            Ok("2".into())
        );
        // The fixture keeps the initializer in a global: a cycle through Rust closures that
        // the VM must break when it is dropped.
        let out = vm
            .clone()
            .call_rpc(call("conversions", "", budget))
            .await
            .unwrap();
        assert!(out.contains("registerLate"), "{out}");
        match vm.clone().call_rpc(call("raise_plain", "", budget)).await {
            Err(ScriptError::Failed { message, detail }) => {
                assert_eq!(message, "boom");
                assert!(
                    detail.contains("Error: boom") && detail.contains("api.js:"),
                    "the log gets the stack: {detail}"
                );
            }
            other => panic!("{other:?}"),
        }
        drop(vm);
        drop(engine);
    });
}

#[test]
fn a_memory_bomb_at_load_is_a_load_error() {
    on_vm_thread(async || {
        let dir = tempfile::tempdir().unwrap();
        let source =
            "var t = []; while (true) { t.push('x'.repeat(4096)); }\nfunction InitModule() {}\n";
        let setup = VmSetup {
            modules: Arc::from(vec![metafi_runtime::ModuleSource {
                name: "bomb".into(),
                path: "bomb.js".into(),
                text: Arc::from(source),
            }]),
            nk: support::nk(dir.path()).await,
            limits: VmLimits {
                call_timeout: Duration::from_secs(5),
                memory_limit_bytes: 8 << 20,
                load_timeout: Duration::from_secs(30),
            },
            index: 0,
        };
        let error = JsEngine::new()
            .create_vm(setup)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("bomb.js:0: loading ran out of memory"),
            "{error}"
        );
    });
}

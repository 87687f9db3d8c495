//! The VM pool's last line of defence: a VM thread stuck in native code past its call's
//! deadline (what no instruction hook can interrupt) is declared wedged, its call fails with
//! DEADLINE_EXCEEDED, a new VM takes over its queue, and shutdown does not wait for it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

// One harness for the host and the Lua engine tests: it lives with the Lua crate's tests.
#[path = "../../metafi-runtime-lua/tests/support/mod.rs"]
mod support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use metafi_core::CoreError;
use metafi_proto::Code;
use metafi_runtime::{
    EngineFactory, EngineVm, LoadError, LocalFuture, Registered, Registrations, RpcCall,
    ScriptError, VmSetup,
};
use support::{Harness, Options, build};

/// An engine whose `wedge` RPC blocks its thread, ignoring every deadline, until released.
#[derive(Debug, Default)]
struct WedgingEngine {
    release: Arc<AtomicBool>,
    /// Set when a `wedge` call has begun blocking its thread.
    wedged: Arc<AtomicBool>,
    /// VMs created so far (the first ones and the replacements).
    created: Arc<AtomicUsize>,
}

struct WedgingVm {
    release: Arc<AtomicBool>,
    wedged: Arc<AtomicBool>,
}

impl EngineFactory for WedgingEngine {
    fn name(&self) -> &'static str {
        "wedging"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["wedge"]
    }

    fn create_vm(&self, _setup: VmSetup) -> LocalFuture<Result<Rc<dyn EngineVm>, LoadError>> {
        self.created.fetch_add(1, Ordering::SeqCst);
        let release = self.release.clone();
        let wedged = self.wedged.clone();
        Box::pin(async move { Ok(Rc::new(WedgingVm { release, wedged }) as Rc<dyn EngineVm>) })
    }
}

impl EngineVm for WedgingVm {
    fn registrations(&self) -> Registrations {
        Registrations {
            rpcs: ["ok", "wedge"]
                .into_iter()
                .map(|id| Registered {
                    id: id.into(),
                    module: "w".into(),
                })
                .collect(),
            matches: Vec::new(),
            storage_indexes: Vec::new(),
        }
    }

    fn call_rpc(self: Rc<Self>, call: RpcCall) -> LocalFuture<Result<String, ScriptError>> {
        Box::pin(async move {
            if &*call.id == "wedge" {
                self.wedged.store(true, Ordering::SeqCst);
                while !self.release.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Ok(call.id.to_string())
        })
    }
}

async fn runtime(engine: Arc<WedgingEngine>, grace: Duration) -> (Harness, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("w.wedge"), "").unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    options.call_timeout = Duration::from_millis(100);
    options.watchdog_grace = grace;
    options.engines = vec![engine];
    // The pool's watchdog (the inline path's is tested in tests/inline.rs).
    options.inline_vms = Some(0);
    (build(options).await.unwrap(), modules)
}

async fn guarded(
    call: impl std::future::Future<Output = Result<String, CoreError>>,
) -> Result<String, CoreError> {
    tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("no answer: the wedged VM took its callers with it")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_wedged_in_native_code_fails_its_call_with_code_4_and_is_replaced() {
    let engine = Arc::new(WedgingEngine::default());
    let (h, _modules) = runtime(engine.clone(), Duration::from_millis(200)).await;
    let h = Arc::new(h);
    assert_eq!(engine.created.load(Ordering::SeqCst), 1);

    let wedged = {
        let h = h.clone();
        tokio::spawn(async move { guarded(h.call("wedge", "")).await })
    };
    // Queued behind the wedged call on the only VM: the replacement serves it.
    tokio::time::timeout(Duration::from_secs(30), async {
        while !engine.wedged.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the wedge call never started");
    let queued = {
        let h = h.clone();
        tokio::spawn(async move { guarded(h.call("ok", "")).await })
    };

    let error = wedged.await.unwrap().unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
    assert_eq!(queued.await.unwrap().unwrap(), "ok");
    assert_eq!(guarded(h.call("ok", "")).await.unwrap(), "ok");
    assert_eq!(
        engine.created.load(Ordering::SeqCst),
        2,
        "one replacement VM"
    );

    tokio::time::timeout(
        Duration::from_secs(30),
        h.runtime.shutdown(Duration::from_secs(5)),
    )
    .await
    .expect("shutdown waited for the abandoned thread");
    engine.release.store(true, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_a_wedged_vm_past_its_grace() {
    let engine = Arc::new(WedgingEngine::default());
    // A watchdog too slow to act: shutdown alone must bound the wait.
    let (h, _modules) = runtime(engine.clone(), Duration::from_secs(3600)).await;
    let h = Arc::new(h);
    let wedged = {
        let h = h.clone();
        tokio::spawn(async move { h.call("wedge", "").await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    tokio::time::timeout(
        Duration::from_secs(30),
        h.runtime.shutdown(Duration::from_millis(200)),
    )
    .await
    .expect("shutdown waited for the wedged VM past its grace");
    engine.release.store(true, Ordering::SeqCst);
    drop(wedged);
}

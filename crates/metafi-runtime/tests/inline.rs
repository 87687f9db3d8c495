//! Calls without thread hops (`crate::inline`, docs/RUNTIME.md "Calls without thread hops"):
//! a call runs on the tokio worker that received it, in that thread's VM; a call that waits
//! hands the worker's other tasks to another thread; budgets and the watchdog still hold.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

// One harness for the host and the Lua engine tests: it lives with the Lua crate's tests.
#[path = "../../metafi-runtime-lua/tests/support/mod.rs"]
mod support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use metafi_core::CoreError;
use metafi_core::hooks::{Hook, Hooks};
use metafi_proto::Code;
use metafi_runtime::{
    EngineFactory, EngineVm, LoadError, LocalFuture, Registered, Registrations, RpcCall,
    ScriptError, VmSetup,
};
use support::{Harness, Options, build};
use tokio::sync::Semaphore;

/// An engine whose RPCs tell where they ran (`where`: "<VM index>@<thread name>"), wait for
/// the test like an `nk` call waiting for IO (`wait`), or block their thread ignoring every
/// deadline until released (`wedge`).
#[derive(Debug)]
struct ProbeEngine {
    /// `wait` calls take a permit: the test adds permits to let them finish.
    gate: Arc<Semaphore>,
    /// Set when a `wait` or `wedge` call has started waiting.
    waiting: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
}

impl Default for ProbeEngine {
    fn default() -> Self {
        ProbeEngine {
            gate: Arc::new(Semaphore::new(0)),
            waiting: Arc::default(),
            release: Arc::default(),
        }
    }
}

struct ProbeVm {
    index: usize,
    gate: Arc<Semaphore>,
    waiting: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
}

impl EngineFactory for ProbeEngine {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["probe"]
    }

    fn create_vm(&self, setup: VmSetup) -> LocalFuture<Result<Rc<dyn EngineVm>, LoadError>> {
        let vm = ProbeVm {
            index: setup.index,
            gate: self.gate.clone(),
            waiting: self.waiting.clone(),
            release: self.release.clone(),
        };
        Box::pin(async move { Ok(Rc::new(vm) as Rc<dyn EngineVm>) })
    }
}

impl EngineVm for ProbeVm {
    fn registrations(&self) -> Registrations {
        let hook = metafi_runtime::hook_key(
            metafi_runtime::HookMode::Before,
            metafi_core::hooks::HookKind::Api,
            "getaccount",
        );
        Registrations {
            rpcs: ["where", "wait", "wedge", hook.as_str()]
                .into_iter()
                .map(|id| Registered {
                    id: id.into(),
                    module: "p".into(),
                })
                .collect(),
            matches: Vec::new(),
            storage_indexes: Vec::new(),
        }
    }

    fn call_rpc(self: Rc<Self>, call: RpcCall) -> LocalFuture<Result<String, ScriptError>> {
        Box::pin(async move {
            match &*call.id {
                "wait" => {
                    self.waiting.store(true, Ordering::SeqCst);
                    if let Ok(permit) = self.gate.acquire().await {
                        permit.forget();
                    }
                }
                "wedge" => {
                    self.waiting.store(true, Ordering::SeqCst);
                    while !self.release.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                _ => {}
            }
            if call.id.starts_with('\u{1}') {
                // The before hook: hand the request back, noting where it ran.
                return Ok(format!("{{\"where\":\"{}\"}}", here(self.index)));
            }
            Ok(here(self.index))
        })
    }
}

fn here(index: usize) -> String {
    format!(
        "{index}@{}",
        std::thread::current().name().unwrap_or_default()
    )
}

async fn probe(
    engine: Arc<ProbeEngine>,
    inline_vms: Option<usize>,
    grace: Duration,
) -> (Arc<Harness>, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("p.probe"), "").unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    options.call_timeout = Duration::from_millis(300);
    options.watchdog_grace = grace;
    options.engines = vec![engine];
    options.inline_vms = inline_vms;
    (Arc::new(build(options).await.unwrap()), modules)
}

/// A call from a task of the runtime (as every REST or socket call is); the test body itself
/// runs in `block_on`, where calls take the pool.
async fn spawned(h: &Arc<Harness>, id: &str, payload: &str) -> Result<String, CoreError> {
    let h = h.clone();
    let (id, payload) = (id.to_owned(), payload.to_owned());
    let task = tokio::spawn(async move { h.call(&id, &payload).await });
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("no answer")
        .unwrap()
}

async fn until(flag: &AtomicBool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the call never started waiting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_runs_on_the_worker_that_received_it_and_the_switch_turns_it_off() {
    let (h, _m) = probe(Arc::default(), None, Duration::from_secs(1)).await;
    let at = spawned(&h, "where", "").await.unwrap();
    assert!(!at.contains("metafi-probe"), "ran on a VM thread: {at}");
    assert_ne!(&at[..2], "0@", "the pool's VM is index 0: {at}");
    assert_eq!(h.runtime.inline_stats("probe").0, 1);
    // From the test body (`block_on`, not a task) the call takes the pool.
    assert_eq!(h.call("where", "").await.unwrap(), "0@metafi-probe-0");

    let (h, _m) = probe(Arc::default(), Some(0), Duration::from_secs(1)).await;
    assert_eq!(spawned(&h, "where", "").await.unwrap(), "0@metafi-probe-0");
    assert_eq!(h.runtime.inline_stats("probe"), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_run_inline() {
    let (h, _m) = probe(Arc::default(), None, Duration::from_secs(1)).await;
    let hooks = h.runtime.hooks();
    assert!(hooks.has_before(Hook::GetAccount));
    let task = tokio::spawn(async move {
        hooks
            .before(
                Hook::GetAccount,
                metafi_core::RpcContext::default(),
                Some(serde_json::json!({})),
            )
            .await
    });
    task.await.unwrap().unwrap();
    assert_eq!(
        h.runtime.inline_stats("probe").0,
        1,
        "the hook ran on the IO worker"
    );
}

/// One worker thread: a call waiting on it must hand the worker's other tasks to another
/// thread, or the second call would never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_waiting_call_on_the_inline_path_does_not_stall_other_calls_of_its_worker() {
    let engine = Arc::new(ProbeEngine::default());
    let (h, _m) = probe(engine.clone(), None, Duration::from_secs(1)).await;
    let waiting = {
        let h = h.clone();
        tokio::spawn(async move { h.call("wait", "").await })
    };
    until(&engine.waiting).await;
    let other = spawned(&h, "where", "").await.unwrap();
    assert!(!other.contains("metafi-probe"), "{other}");
    assert!(!waiting.is_finished(), "the first call is still waiting");
    engine.gate.add_permits(1);
    let first = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting call never finished")
        .unwrap()
        .unwrap();
    assert!(!first.contains("metafi-probe"), "{first}");
    assert_eq!(h.runtime.inline_stats("probe").0, 2, "both ran inline");

    // A wait past the budget ends with code 4, and the thread's VM serves the next call.
    let error = spawned(&h, "wait", "").await.unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
    assert!(
        !spawned(&h, "where", "")
            .await
            .unwrap()
            .contains("metafi-probe")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wedged_inline_call_switches_its_engine_to_the_pool() {
    let engine = Arc::new(ProbeEngine::default());
    let (h, _m) = probe(engine.clone(), None, Duration::from_millis(200)).await;
    let wedged = {
        let h = h.clone();
        tokio::spawn(async move { h.call("wedge", "").await })
    };
    until(&engine.waiting).await;
    // The watchdog notices past deadline + grace; from then on calls take the pool.
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if spawned(&h, "where", "").await.unwrap() == "0@metafi-probe-0" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("calls never moved to the pool");
    engine.release.store(true, Ordering::SeqCst);
    // The wedged caller is its own thread: it is answered when the call returns.
    let answer = tokio::time::timeout(Duration::from_secs(30), wedged)
        .await
        .expect("the wedged call never came back")
        .unwrap();
    assert!(answer.is_ok(), "{answer:?}");
}

const LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload) return payload end, "echo")
nk.register_rpc(function(context, payload) while true do end end, "spin")
nk.register_rpc(function(context, payload)
  nk.storage_write({ { collection = "inline", key = payload, value = { k = payload } } })
  local read = nk.storage_read({ { collection = "inline", key = payload } })
  return read[1].value.k
end, "store")
"#;

async fn lua() -> (Arc<Harness>, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("m.lua"), LUA).unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    options.call_timeout = Duration::from_millis(300);
    (Arc::new(build(options).await.unwrap()), modules)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_lua_script_on_the_inline_path_is_stopped() {
    let (h, _m) = lua().await;
    let error = spawned(&h, "spin", "").await.unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
    assert_eq!(spawned(&h, "echo", "after").await.unwrap(), "after");
    assert_eq!(h.runtime.inline_stats("lua").0, 2, "both ran inline");
}

/// Real `nk` storage calls wait on the inline path (one worker: each wait hands the worker
/// on); concurrent calls all complete with their own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn lua_calls_waiting_for_storage_on_the_inline_path_all_complete() {
    let (h, _m) = lua().await;
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
    let (calls, vms) = h.runtime.inline_stats("lua");
    assert!(calls >= 1, "no call ran inline");
    assert!(vms <= metafi_runtime::default_inline_vms(), "{vms} VMs");
}

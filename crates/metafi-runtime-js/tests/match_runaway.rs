//! Runaway JavaScript match handlers (issue 14): a `matchLoop` that runs away in any way is
//! stopped at the handler budget, its match ends, and the other matches sharing its VM and
//! executor thread keep ticking on that same VM.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_core::SystemClock;
use metafi_match::testing::RecordingOutlet;
use metafi_match::{
    Executor, HandlerError, MatchConfig, MatchContext, MatchHandler, MatchSpec, Matches, Params,
    SystemMonotonic,
};
use metafi_runtime::{EngineFactory, MatchVms, VmSetup};
use metafi_runtime_js::JsEngine;
use parking_lot::Mutex;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Generous bound on waiting for an outcome: only a hang guard, never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Why each match stopped, from the engine's "match stopped" log line: (match id, kind).
#[derive(Clone, Default)]
struct Stops(Arc<Mutex<Vec<(String, String)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Stops {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = (String::new(), String::new(), String::new());
        event.record(
            &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                let text = format!("{value:?}").trim_matches('"').to_owned();
                match field.name() {
                    "message" => fields.0 = text,
                    "match_id" => fields.1 = text,
                    "kind" => fields.2 = text,
                    _ => {}
                }
            },
        );
        if fields.0.starts_with("match stopped: its handler failed") {
            self.0.lock().push((fields.1, fields.2));
        }
    }
}

impl Stops {
    fn kind(&self, id: &str) -> Option<String> {
        self.0
            .lock()
            .iter()
            .find(|(m, _)| m == id)
            .map(|(_, kind)| kind.clone())
    }
}

struct Arena {
    matches: Matches,
    executor: Option<Executor>,
    engine: Arc<JsEngine>,
    setup: VmSetup,
    _dir: tempfile::TempDir,
}

impl Drop for Arena {
    fn drop(&mut self) {
        self.matches.stop();
        if let Some(executor) = self.executor.take() {
            executor.join();
        }
    }
}

impl Arena {
    async fn start() -> Arena {
        let dir = tempfile::tempdir().unwrap();
        let setup = support::vm_setup("match_runaway", dir.path()).await;
        let mut config = MatchConfig {
            executor_threads: 1,
            handler_budget: Duration::from_millis(100),
            ..MatchConfig::default()
        };
        // Every runaway spends its whole 100 ms budget on the one executor thread: its own
        // lateness, so admission may rightly call the node full and refuse the next match,
        // depending on how many runaways fall in one lateness window (it did under load).
        // This test is about the budget and the shared VM, not admission.
        config.objective.admission = false;
        let (matches, seeds) = Matches::new(
            config,
            "node1",
            RecordingOutlet::new(),
            Arc::new(SystemMonotonic),
            Arc::new(SystemClock),
        );
        Arena {
            matches,
            executor: Some(Executor::spawn(seeds).unwrap()),
            // One VM per executor thread: every match below shares it.
            engine: Arc::new(JsEngine::new().with_match_vms(MatchVms::PerThread)),
            setup,
            _dir: dir,
        }
    }

    async fn create(&self, name: &'static str, kind: &str) -> String {
        let engine = self.engine.clone();
        let setup = self.setup.clone();
        let mut params = Params::new();
        params.insert("kind".into(), kind.into());
        let spec = MatchSpec {
            handler_name: Arc::from(name),
            runtime: "js",
            factory: Box::new(
                move |_: &MatchContext| -> Result<Box<dyn MatchHandler>, HandlerError> {
                    engine.create_match(setup, name)
                },
            ),
            params,
        };
        self.matches.create(spec).await.unwrap().to_string()
    }

    async fn ticks(&self, id: &str) -> Option<u64> {
        let answer = tokio::time::timeout(HANG_GUARD, self.matches.signal(id, String::new()))
            .await
            .expect("a signal is answered");
        answer.ok().map(|text| text.parse().unwrap())
    }

    /// Waits until match `id` has ended.
    async fn ended(&self, id: &str) {
        let until = Instant::now() + HANG_GUARD;
        while self.matches.get(id).unwrap().is_some() {
            assert!(Instant::now() < until, "match {id} never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_match_loops_end_their_match_and_the_shared_vm_keeps_ticking_the_others() {
    let stops = Stops::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(stops.clone()))
        .unwrap();
    let arena = Arena::start().await;
    let steady = arena.create("steady", "").await;
    for kind in [
        "spin",
        "loop_in_catch",
        "loop_in_finally",
        "regex",
        "getter",
        "recursion",
        "microtasks",
        "never_settles",
        // Leaves promise jobs no budget can drain: new matches get a fresh VM, the steady
        // match keeps ticking on the old one without running that queue.
        "job_bomb",
    ] {
        let before = arena.ticks(&steady).await.unwrap();
        let runaway = arena.create("runaway", kind).await;
        arena.ended(&runaway).await;
        assert_eq!(
            arena.ticks(&runaway).await,
            None,
            "{kind}: the runaway match ended"
        );
        // The stop is logged on the executor thread, possibly just after the match left the
        // registry: wait for the line rather than race it.
        let until = Instant::now() + HANG_GUARD;
        while stops.kind(&runaway).is_none() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            stops.kind(&runaway).as_deref(),
            Some("timeout"),
            "{kind}: stopped by the handler budget"
        );
        // The steady match lives on the same VM and thread: it ticks again after each.
        let until = Instant::now() + HANG_GUARD;
        loop {
            let now = arena
                .ticks(&steady)
                .await
                .expect("the steady match is alive");
            if now > before + 2 {
                break;
            }
            assert!(
                Instant::now() < until,
                "{kind}: the steady match stopped ticking"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A callback may return a promise that settles within the callback: an async matchLoop.
    let resolved = arena.create("runaway", "async").await;
    let until = Instant::now() + HANG_GUARD;
    while arena
        .ticks(&resolved)
        .await
        .expect("the async match is alive")
        < 5
    {
        assert!(Instant::now() < until, "the async match stopped ticking");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

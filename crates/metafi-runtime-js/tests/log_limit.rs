//! The per-module log rate limit (issue 14: 100,000 lines from one script wrote 110 MB in
//! 2 s): a script's log flood is cut to the burst plus the rate, the dropped lines are
//! counted per module, one summary line says how many were dropped, and the module's next
//! line is written. Its own test binary: it installs the process-wide log and metrics sinks.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use metafi_core::RpcDispatch as _;
use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};
use parking_lot::Mutex;
use support::{Options, build, fixture};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// What the script log received.
#[derive(Default)]
struct Lines {
    flood: AtomicU64,
    ordinary: AtomicU64,
    /// The fields of the ordinary line other than its message.
    ordinary_fields: Mutex<Vec<(String, String)>>,
    summaries: Mutex<Vec<String>>,
}

struct Capture(Arc<Lines>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != "metafi_runtime::script" {
            return;
        }
        let mut message = String::new();
        let mut fields = Vec::new();
        event.record(
            &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                if field.name() == "message" {
                    message = format!("{value:?}");
                } else {
                    fields.push((field.name().to_owned(), format!("{value:?}")));
                }
            },
        );
        if message.contains("of a flood") {
            self.0.flood.fetch_add(1, Ordering::Relaxed);
        } else if message.contains("one ordinary line") {
            self.0.ordinary.fetch_add(1, Ordering::Relaxed);
            *self.0.ordinary_fields.lock() = fields;
        } else if message.contains("dropped") {
            self.0.summaries.lock().push(message);
        }
    }
}

/// Counts `metafi_runtime_log_lines_dropped_total` by module.
#[derive(Default)]
struct Dropped(Mutex<Vec<(String, Arc<AtomicU64>)>>);

struct Count(Arc<AtomicU64>);

impl CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

struct Recorder(Arc<Dropped>);

impl metrics::Recorder for Recorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() != "metafi_runtime_log_lines_dropped_total" {
            return Counter::noop();
        }
        let module = key
            .labels()
            .find(|l| l.key() == "module")
            .map(|l| l.value().to_owned())
            .unwrap_or_default();
        let mut all = self.0.0.lock();
        let count = match all.iter().find(|(m, _)| *m == module) {
            Some((_, count)) => count.clone(),
            None => {
                let count = Arc::new(AtomicU64::new(0));
                all.push((module, count.clone()));
                count
            }
        };
        Counter::from_arc(Arc::new(Count(count)))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test]
async fn a_log_flood_is_cut_to_the_rate_counted_per_module_and_summarised() {
    let lines = Arc::new(Lines::default());
    let dropped = Arc::new(Dropped::default());
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(Capture(lines.clone())),
    )
    .unwrap();
    metrics::set_global_recorder(Recorder(dropped.clone())).unwrap();

    let mut options = Options::new(fixture("chatty"));
    options.vms = 1;
    options.call_timeout = Duration::from_secs(60);
    let h = build(options).await.unwrap();
    const FLOOD: u64 = 100_000;
    // The limit is a rate: what it lets through is bounded by the time the test took, measured
    // (not bounded) here, so a slow machine changes the allowance, never the verdict.
    let started = Instant::now();
    assert_eq!(
        h.call("flood", &FLOOD.to_string()).await.unwrap(),
        "flooded"
    );
    let written = lines.flood.load(Ordering::Relaxed);
    // The default limit: a burst of 1,000 lines, then 100 a second.
    let allowance = 1000 + 100 * (started.elapsed().as_secs() + 1);
    assert!(
        (1000..=allowance.min(FLOOD - 1)).contains(&written),
        "{written} of {FLOOD} flood lines were written (burst and rate allow {allowance})"
    );
    let counted = dropped
        .0
        .lock()
        .iter()
        .find(|(module, _)| module == "chatty")
        .map(|(_, count)| count.load(Ordering::Relaxed));
    assert_eq!(
        counted,
        Some(FLOOD - written),
        "every dropped line is counted under its module"
    );

    // Once tokens have come back and the summary interval has passed, the module's next line
    // is written after a summary: the summaries account for every dropped line.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(h.call("once", "").await.unwrap(), "logged");
    assert_eq!(lines.ordinary.load(Ordering::Relaxed), 1);
    // The line names the RPC it was written in, as Nakama's (`rpc_id`); the call has no trace
    // id (no client request started it), so the line has none.
    assert_eq!(
        *lines.ordinary_fields.lock(),
        [
            ("engine".to_owned(), "\"js\"".to_owned()),
            ("module".to_owned(), "\"chatty\"".to_owned()),
            ("rpc_id".to_owned(), "\"once\"".to_owned()),
        ]
    );
    // A client's request has one, and the line carries it, as Nakama's `trace_id`.
    let trace_id = uuid::Uuid::from_u128(0x4000_8000_0000_0000_0042);
    let ctx = metafi_core::RpcContext {
        trace_id: Some(trace_id),
        ..metafi_core::RpcContext::default()
    };
    assert_eq!(
        h.runtime.call("once", ctx, String::new()).await.unwrap(),
        "logged"
    );
    assert_eq!(
        lines.ordinary_fields.lock().last(),
        Some(&("trace_id".to_owned(), trace_id.to_string()))
    );
    let summaries = lines.summaries.lock().clone();
    let summarised: u64 = summaries
        .iter()
        .map(|s| {
            let rest = s
                .strip_prefix("module chatty dropped ")
                .unwrap_or_else(|| panic!("{s}"));
            let (n, rest) = rest.split_once(' ').unwrap();
            assert!(rest.starts_with("log lines in the last "), "{s}");
            n.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(summarised, FLOOD - written, "{summaries:?}");
    let seconds = started.elapsed().as_secs();
    assert!(
        summaries.len() as u64 <= seconds + 1,
        "at most one summary a second ({seconds} s): {summaries:?}"
    );
}

//! Logs (tracing) and metrics (Prometheus) for the whole process.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::LoggerConfig;

/// Installs the global log subscriber. `RUST_LOG`, when set, overrides the configured level.
/// Safe to call more than once (later calls are ignored), which tests rely on.
pub fn init_logging(config: &LoggerConfig) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    // Colours only on a terminal: log files and collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true)
        .with_ansi(ansi);
    let result = if config.json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
    // Err means a subscriber is already installed (a second server in the same test process).
    let _ = result;
}

/// The process-wide Prometheus recorder. Metrics macros anywhere in the process report to it;
/// the first call installs it, later calls return the same handle. The caller must call
/// `run_upkeep` on the handle periodically (the server does, every few seconds).
pub fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .expect("the bucket list is a non-empty constant")
                .build_recorder();
            let handle = recorder.handle();
            // Only this closure installs a recorder and it runs once per process; an error here
            // would mean some library installed its own, whose metrics we then do not export.
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!(
                    "a metrics recorder was already installed; /metrics may be incomplete"
                );
            }
            handle
        })
        .clone()
}

/// Latency buckets from 100 µs to 10 s: game API calls live at the low end.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

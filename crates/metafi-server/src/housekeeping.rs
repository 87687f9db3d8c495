//! Periodic work of a node: purging expired revocations and exporting gauges.

use std::sync::Arc;
use std::time::Duration;

use metafi_core::{Clock, Sessions};
use metafi_storage::Storage;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::node::stopped;
use crate::telemetry;

/// Spawns the housekeeping task; it ends when `stop` is raised.
pub(crate) fn spawn(
    purge_every: Duration,
    sessions: Arc<Sessions>,
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let handle = telemetry::metrics_handle();
    tokio::spawn(async move {
        let mut upkeep = tokio::time::interval(Duration::from_secs(5));
        let mut purge = tokio::time::interval(purge_every);
        let mut stopping = std::pin::pin!(stopped(stop));
        loop {
            tokio::select! {
                _ = &mut stopping => break,
                _ = upkeep.tick() => {
                    handle.run_upkeep();
                    metrics::gauge!("metafi_session_revocations").set(sessions.revocations().len() as f64);
                    let stats = store.stats();
                    metrics::gauge!("metafi_storage_writes", "backend" => store.backend_name()).set(stats.writes as f64);
                    metrics::gauge!("metafi_storage_commits", "backend" => store.backend_name()).set(stats.commits as f64);
                }
                _ = purge.tick() => {
                    match sessions.revocations().purge(clock.now_ms()).await {
                        Ok(0) => {}
                        Ok(purged) => tracing::debug!(purged, "expired session revocations purged"),
                        Err(e) => tracing::warn!(error = %e, "purging session revocations failed; will retry"),
                    }
                }
            }
        }
    })
}

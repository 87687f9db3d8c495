//! The match engine of a node: the registry and its executor threads, the matchmaker, the
//! per-match debug listing served next to `/metrics`, and their shutdown.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use metafi_core::Clock;
use metafi_match::{Executor, Matches, Matchmaking, SystemMonotonic};
use metafi_realtime::{MatchOutlet, MatchServices, RealtimeParts};

use crate::config::Config;

/// The running match engine.
#[derive(Debug)]
pub(crate) struct MatchEngine {
    pub(crate) matches: Matches,
    pub(crate) matchmaking: Arc<Matchmaking>,
    executor: Executor,
}

impl MatchEngine {
    /// Starts the executor threads; matches reach sessions through the realtime `parts`.
    pub(crate) fn start(
        config: &Config,
        parts: &RealtimeParts,
        wall: Arc<dyn Clock>,
    ) -> anyhow::Result<MatchEngine> {
        let outlet = Arc::new(MatchOutlet::new(
            parts.registry.clone(),
            parts.router.clone(),
        ));
        let (matches, seeds) = Matches::new(
            config.matches.clone(),
            &config.name,
            outlet,
            Arc::new(SystemMonotonic),
            wall.clone(),
        );
        let executor = Executor::spawn(seeds)
            .context("starting the match executor threads (match.executor_threads)")?;
        tracing::info!(
            threads = executor.threads(),
            max_tick_rate = config.matches.max_tick_rate,
            "match executor ready"
        );
        let matchmaking = Arc::new(Matchmaking::new(
            config.matchmaker.clone(),
            config.session.encryption_key.as_bytes(),
            wall,
        ));
        Ok(MatchEngine {
            matches,
            matchmaking,
            executor,
        })
    }

    pub(crate) fn services(&self) -> MatchServices {
        MatchServices {
            matches: self.matches.clone(),
            matchmaking: self.matchmaking.clone(),
        }
    }

    /// `match_terminate(grace)` for every match, waits for them (at most the grace period plus
    /// a second), then stops the executor threads.
    pub(crate) async fn shutdown(self, grace: Duration) {
        let running = self.matches.count();
        if running > 0 {
            tracing::info!(
                matches = running,
                grace_secs = grace.as_secs(),
                "terminating matches"
            );
        }
        self.matches.shutdown(grace).await;
        // Joined on a thread of its own, not the blocking pool: an executor thread stuck in a
        // handler that never returns must not keep the process from exiting (the runtime waits
        // for its blocking tasks when it is dropped).
        let executor = self.executor;
        let (joined_tx, joined) = tokio::sync::oneshot::channel();
        let joiner = std::thread::Builder::new()
            .name("metafi-match-join".into())
            .spawn(move || {
                executor.join();
                let _ = joined_tx.send(());
            });
        if let Err(e) = joiner {
            tracing::error!(error = %e, "cannot wait for the match executor threads");
            return;
        }
        // `shutdown` above already gave the matches the grace period; the threads only have to
        // see the stop command now.
        match tokio::time::timeout(Duration::from_secs(1), joined).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => tracing::error!("waiting for the match executor threads failed"),
            Err(_) => tracing::error!(
                "a match executor thread is still busy after the shutdown grace period (a handler that cannot be interrupted); exiting without it"
            ),
        }
    }
}

/// `GET /debug/matches` on the metrics listener: every running authoritative match with its own
/// counters (tick time, lateness, queue depth, drops). Per-match series would overload
/// Prometheus; this is where one match's detail lives.
pub(crate) fn debug_router(matches: Matches) -> axum::Router {
    axum::Router::new().route(
        "/debug/matches",
        axum::routing::get(move || {
            let matches = matches.clone();
            async move {
                let list: Vec<serde_json::Value> = matches
                    .stats()
                    .into_iter()
                    .map(|s| {
                        serde_json::json!({
                            "match_id": s.match_id,
                            "handler_name": s.handler_name,
                            "runtime": s.runtime,
                            "executor_thread": s.executor_thread,
                            "label": s.label,
                            "tick_rate": s.tick_rate,
                            "presences": s.presences,
                            "pending_joins": s.pending_joins,
                            "ticks": s.ticks,
                            "last_tick_seconds": s.last_tick_seconds,
                            "max_tick_seconds": s.max_tick_seconds,
                            "last_lateness_seconds": s.last_lateness_seconds,
                            "max_lateness_seconds": s.max_lateness_seconds,
                            "overruns": s.overruns,
                            "skipped_ticks": s.skipped_ticks,
                            "stretched_ticks": s.stretched_ticks,
                            "cpu": s.cpu,
                            "dropped_inputs": s.dropped_inputs,
                            "input_queue_depth": s.input_queue_depth,
                            "create_time_ms": s.create_time_ms,
                        })
                    })
                    .collect();
                axum::Json(serde_json::json!({
                    "matches": list,
                    "relayed": matches.relayed_count(),
                }))
            }
        }),
    )
}

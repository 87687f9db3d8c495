//! The metrics listener: `/metrics` (Prometheus), `/debug/matches` and `/debug/worlds`.

use std::future::Future;

use tokio::net::TcpListener;

use crate::{match_engine, telemetry};

/// Serves until `stop` resolves.
pub(crate) async fn serve(
    listener: TcpListener,
    matches: metafi_match::Matches,
    worlds: metafi_world_server::Worlds,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let handle = telemetry::metrics_handle();
    let scraped = matches.clone();
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let handle = handle.clone();
                // The node's load gauges (metafi_node_full, …) are read when scraped.
                let _ = scraped.load();
                async move { handle.render() }
            }),
        )
        .merge(match_engine::debug_router(matches))
        .merge(crate::worlds::debug_router(worlds));
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "metrics server failed");
    }
}

//! MetaFi's socket transports, both feeding the same realtime sessions: the Nakama-compatible
//! WebSocket endpoint `GET /ws` (`?token=…&format=json|protobuf&status=true`), served on the
//! API port by merging [`router`] into the API router; and the QUIC listener ([`quic`]: the
//! session token in the first message, each outgoing message sent by its delivery class; see
//! `docs/TRANSPORT.md`).
//!
//! The transport owns only the wire: upgrade and authentication, frame reading and writing,
//! pings, deadlines and close frames. Everything a session *does* is in `metafi-realtime`,
//! which knows nothing about WebSockets or QUIC.
//!
//! Memory per idle socket is kept small by tuning the WebSocket buffers
//! ([`SocketConfig::read_buffer_size_bytes`]) and by keeping no per-socket queues until
//! something is sent; `docs/BENCHMARKS.md` has the measurement.
//!
//! Must not depend on: the REST API crate, storage backends, script engines. Key items:
//! [`router`], [`TransportState`], [`SocketConfig`], [`close_all`].

mod config;
mod connection;
mod metrics;
pub mod quic;
mod upgrade;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use metafi_core::Sessions;
use metafi_realtime::Realtime;

pub use config::SocketConfig;

/// What the WebSocket endpoint needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct TransportState {
    pub realtime: Arc<Realtime>,
    /// Verifies session tokens.
    pub sessions: Arc<Sessions>,
    pub config: Arc<SocketConfig>,
}

/// `GET /ws`, ready to be merged into the API router (same port as Nakama).
pub fn router(state: TransportState) -> Router {
    Router::new()
        .route("/ws", get(upgrade::ws))
        .with_state(state)
}

/// Closes every realtime session (server shutdown) and waits up to `grace` for their
/// connections to finish. Returns how many sessions were still open after `grace`.
pub async fn close_all(realtime: &Realtime, grace: Duration) -> usize {
    realtime.shutdown();
    let deadline = tokio::time::Instant::now() + grace;
    while !realtime.registry().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    realtime.registry().len()
}

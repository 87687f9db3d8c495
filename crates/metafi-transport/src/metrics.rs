//! WebSocket transport metrics.
//!
//! The per-frame byte counters keep their handles (registered on first use with the
//! process-wide recorder, which the server installs before it accepts sockets) instead of
//! looking the series up by name on every frame.

use std::sync::OnceLock;

use metrics::Counter;

/// `metafi_socket_connections` (gauge): open WebSocket connections.
pub(crate) fn connection_opened() {
    metrics::gauge!("metafi_socket_connections").increment(1.0);
}

/// Decrements the gauge and counts `metafi_socket_closed_total{reason}`.
pub(crate) fn connection_closed(reason: &'static str) {
    metrics::gauge!("metafi_socket_connections").decrement(1.0);
    metrics::counter!("metafi_socket_closed_total", "reason" => reason).increment(1);
}

/// `metafi_socket_rejected_total{reason}`: upgrade requests refused before the upgrade.
pub(crate) fn rejected(reason: &'static str) {
    metrics::counter!("metafi_socket_rejected_total", "reason" => reason).increment(1);
}

/// `metafi_socket_received_bytes_total`: payload bytes of data frames from clients.
pub(crate) fn received(bytes: usize) {
    static COUNTER: OnceLock<Counter> = OnceLock::new();
    COUNTER
        .get_or_init(|| metrics::counter!("metafi_socket_received_bytes_total"))
        .increment(bytes as u64);
}

/// `metafi_socket_sent_bytes_total`: payload bytes of data frames to clients.
pub(crate) fn sent(bytes: usize) {
    static COUNTER: OnceLock<Counter> = OnceLock::new();
    COUNTER
        .get_or_init(|| metrics::counter!("metafi_socket_sent_bytes_total"))
        .increment(bytes as u64);
}

//! QUIC transport metrics (per-message counters are `metafi-quic`'s, labelled `side`).

use metafi_quic::quinn::ConnectionStats;

/// `metafi_quic_connections` (gauge): open QUIC sessions.
pub(crate) fn connection_opened() {
    metrics::gauge!("metafi_quic_connections").increment(1.0);
}

/// Decrements the gauge and counts `metafi_quic_closed_total{reason}`.
pub(crate) fn connection_closed(reason: &'static str) {
    metrics::gauge!("metafi_quic_connections").decrement(1.0);
    metrics::counter!("metafi_quic_closed_total", "reason" => reason).increment(1);
}

/// `metafi_quic_rejected_total{reason}`: connections refused before a session opened
/// (`handshake`, `hello`, `token`).
pub(crate) fn rejected(reason: &'static str) {
    metrics::counter!("metafi_quic_rejected_total", "reason" => reason).increment(1);
}

/// What a connection's statistics said last time, so counters get the difference.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    sent_packets: u64,
    lost_packets: u64,
    lost_bytes: u64,
    congestion_events: u64,
}

impl Reported {
    /// Adds what changed since the last report: `metafi_quic_packets_sent_total`,
    /// `metafi_quic_packets_lost_total` (each is retransmitted if it carried reliable data),
    /// `metafi_quic_lost_bytes_total`, `metafi_quic_congestion_events_total`; and the
    /// connection's RTT to `metafi_quic_rtt_seconds` (histogram).
    pub(crate) fn report(&mut self, stats: &ConnectionStats) {
        let path = &stats.path;
        let delta = |now: u64, before: &mut u64| {
            let d = now.saturating_sub(*before);
            *before = now;
            d
        };
        metrics::counter!("metafi_quic_packets_sent_total")
            .increment(delta(path.sent_packets, &mut self.sent_packets));
        metrics::counter!("metafi_quic_packets_lost_total")
            .increment(delta(path.lost_packets, &mut self.lost_packets));
        metrics::counter!("metafi_quic_lost_bytes_total")
            .increment(delta(path.lost_bytes, &mut self.lost_bytes));
        metrics::counter!("metafi_quic_congestion_events_total")
            .increment(delta(path.congestion_events, &mut self.congestion_events));
        metrics::histogram!("metafi_quic_rtt_seconds").record(path.rtt.as_secs_f64());
    }
}

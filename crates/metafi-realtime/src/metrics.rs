//! The realtime layer's metrics (`metrics` crate; exported by the server as Prometheus).

/// `metafi_realtime_messages_received_total{type}`: envelopes from clients, by message.
pub(crate) fn message_received(name: &'static str) {
    metrics::counter!("metafi_realtime_messages_received_total", "type" => name).increment(1);
}

/// `metafi_realtime_messages_sent_total{type}`: envelopes queued to clients, by message (a
/// broadcast counts once per recipient).
pub(crate) fn message_sent(name: &'static str, count: u64) {
    if count > 0 {
        metrics::counter!("metafi_realtime_messages_sent_total", "type" => name).increment(count);
    }
}

/// `metafi_realtime_outgoing_queue_overflows_total`: sessions closed for not reading.
pub(crate) fn queue_overflow() {
    metrics::counter!("metafi_realtime_outgoing_queue_overflows_total").increment(1);
}

/// `metafi_realtime_sessions` (gauge) and `metafi_realtime_sessions_closed_total{reason}`.
pub(crate) fn sessions(open: usize) {
    metrics::gauge!("metafi_realtime_sessions").set(open as f64);
}

pub(crate) fn session_closed(reason: &'static str) {
    metrics::counter!("metafi_realtime_sessions_closed_total", "reason" => reason).increment(1);
}

/// `metafi_realtime_presences` (gauge): presences tracked in all streams.
pub(crate) fn presences(count: usize) {
    metrics::gauge!("metafi_realtime_presences").set(count as f64);
}

//! The realtime layer's metrics (`metrics` crate; exported by the server as Prometheus).
//!
//! The per-message counters keep their handles (one per message name, registered on first
//! use) instead of looking the series up by name and label on every message. The handles
//! belong to the process-wide recorder, which the server installs before it accepts sockets.

use std::collections::HashMap;

use metrics::Counter;
use parking_lot::RwLock;

/// `metafi_realtime_messages_received_total{type}`: envelopes from clients, by message.
pub(crate) fn message_received(name: &'static str) {
    static COUNTERS: ByName = ByName::new();
    COUNTERS
        .counter(
            name,
            |name| metrics::counter!("metafi_realtime_messages_received_total", "type" => name),
        )
        .increment(1);
}

/// `metafi_realtime_messages_sent_total{type}`: envelopes queued to clients, by message (a
/// broadcast counts once per recipient).
pub(crate) fn message_sent(name: &'static str, count: u64) {
    static COUNTERS: ByName = ByName::new();
    if count > 0 {
        COUNTERS
            .counter(
                name,
                |name| metrics::counter!("metafi_realtime_messages_sent_total", "type" => name),
            )
            .increment(count);
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

/// Counter handles of one labelled series, by message name (a bounded set: the envelope's
/// message names).
struct ByName(RwLock<Option<HashMap<&'static str, Counter>>>);

impl ByName {
    const fn new() -> ByName {
        ByName(RwLock::new(None))
    }

    fn counter(
        &self,
        name: &'static str,
        register: impl FnOnce(&'static str) -> Counter,
    ) -> Counter {
        if let Some(counter) = self.0.read().as_ref().and_then(|map| map.get(name)) {
            return counter.clone();
        }
        self.0
            .write()
            .get_or_insert_with(HashMap::new)
            .entry(name)
            .or_insert_with(|| register(name))
            .clone()
    }
}

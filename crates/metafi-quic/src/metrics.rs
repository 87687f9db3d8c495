//! Metrics of QUIC links, labelled by `side` (`server` or `client`). Counted once per message
//! (a broadcast counts once per recipient connection).

use crate::Side;

/// `metafi_quic_messages_sent_total{side, class}`, `metafi_quic_sent_bytes_total{side}`.
pub(crate) fn sent(side: Side, class: &'static str, bytes: usize) {
    metrics::counter!("metafi_quic_messages_sent_total", "side" => side.as_str(), "class" => class)
        .increment(1);
    metrics::counter!("metafi_quic_sent_bytes_total", "side" => side.as_str())
        .increment(bytes as u64);
}

/// `metafi_quic_messages_received_total{side, class}` (`copy` and `latest_final` are the
/// redundant and settling paths).
pub(crate) fn received(side: Side, class: &'static str) {
    metrics::counter!("metafi_quic_messages_received_total", "side" => side.as_str(), "class" => class)
        .increment(1);
}

/// `metafi_quic_latest_stale_dropped_total{side}`: latest-wins values older than one delivered.
pub(crate) fn stale(side: Side) {
    metrics::counter!("metafi_quic_latest_stale_dropped_total", "side" => side.as_str())
        .increment(1);
}

/// `metafi_quic_duplicates_dropped_total{side}`: second arrivals of copied messages.
pub(crate) fn duplicate(side: Side) {
    metrics::counter!("metafi_quic_duplicates_dropped_total", "side" => side.as_str()).increment(1);
}

/// `metafi_quic_datagrams_dropped_total{side, reason="send_buffer_full", kind}`: an older
/// queued datagram gave way to a new one.
pub(crate) fn datagram_displaced(side: Side, kind: &'static str) {
    metrics::counter!("metafi_quic_datagrams_dropped_total", "side" => side.as_str(), "reason" => "send_buffer_full", "kind" => kind)
        .increment(1);
}

/// `metafi_quic_datagrams_dropped_total{side, reason="receive_queue_full"}`.
pub(crate) fn datagram_receive_dropped(side: Side) {
    metrics::counter!("metafi_quic_datagrams_dropped_total", "side" => side.as_str(), "reason" => "receive_queue_full", "kind" => "any")
        .increment(1);
}

/// `metafi_quic_datagram_too_large_total{side}`: unreliable messages sent on a stream
/// because they do not fit in a datagram.
pub(crate) fn datagram_too_large(side: Side) {
    metrics::counter!("metafi_quic_datagram_too_large_total", "side" => side.as_str()).increment(1);
}

/// `metafi_quic_lanes_opened_total{side}`: named reliable-ordered streams opened.
pub(crate) fn lane_opened(side: Side) {
    metrics::counter!("metafi_quic_lanes_opened_total", "side" => side.as_str()).increment(1);
}

/// `metafi_quic_lane_overflow_total{side}`: messages of a new stream name beyond
/// `max_ordered_streams`, sent on the default stream instead.
pub(crate) fn lane_overflow(side: Side) {
    metrics::counter!("metafi_quic_lane_overflow_total", "side" => side.as_str()).increment(1);
}

/// `metafi_quic_latest_settled_total{side}`: final values of quiet keys sent reliably.
pub(crate) fn latest_settled(side: Side) {
    metrics::counter!("metafi_quic_latest_settled_total", "side" => side.as_str()).increment(1);
}

/// `metafi_quic_copies_sent_total{side}`: redundant datagram copies of small reliable messages.
pub(crate) fn copy_sent(side: Side) {
    metrics::counter!("metafi_quic_copies_sent_total", "side" => side.as_str()).increment(1);
}

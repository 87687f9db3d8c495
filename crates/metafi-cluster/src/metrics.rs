//! The cluster's metrics (`metrics` crate; exported by the server as Prometheus). The series
//! are labelled with nothing but the node (implicit: one process, one node), so a dashboard of
//! several nodes tells them apart by scrape target.

use std::sync::OnceLock;

use metrics::Counter;

/// `metafi_cluster_peers`: peers this node hears heartbeats from.
pub(crate) fn peers(count: usize) {
    metrics::gauge!("metafi_cluster_peers").set(count as f64);
}

/// `metafi_cluster_heartbeats_missed_total`: heartbeats of peers that never arrived (gaps in
/// their sequence numbers, and the beats a lost peer missed before it was declared lost).
pub(crate) fn heartbeats_missed(count: u64) {
    if count > 0 {
        metrics::counter!("metafi_cluster_heartbeats_missed_total").increment(count);
    }
}

/// `metafi_cluster_peer_events_total{event}`: peers that joined, were lost, or left.
pub(crate) fn peer_event(event: &'static str) {
    metrics::counter!("metafi_cluster_peer_events_total", "event" => event).increment(1);
}

/// `metafi_cluster_remote_sessions`: sessions on other nodes this node knows of.
pub(crate) fn remote_sessions(count: usize) {
    metrics::gauge!("metafi_cluster_remote_sessions").set(count as f64);
}

/// What a NATS message of the cluster carries: the `kind` label of the per-message counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Heartbeat,
    Sessions,
    Deliver,
    Cast,
    Call,
    Matches,
    Matchmaker,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Heartbeat,
        Kind::Sessions,
        Kind::Deliver,
        Kind::Cast,
        Kind::Call,
        Kind::Matches,
        Kind::Matchmaker,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Heartbeat => "heartbeat",
            Kind::Sessions => "sessions",
            Kind::Deliver => "deliver",
            Kind::Cast => "cast",
            Kind::Call => "call",
            Kind::Matches => "matches",
            Kind::Matchmaker => "matchmaker",
        }
    }
}

/// Handles of the series counted per NATS message, registered once (on first use) instead of
/// looked up by name and label on every message. They belong to the process-wide recorder,
/// which the server installs before it starts the cluster (`main.rs`).
struct PerMessage {
    sent: [Counter; Kind::ALL.len()],
    received: [Counter; Kind::ALL.len()],
    dropped: [Counter; Kind::ALL.len()],
    batches: Counter,
    batched: Counter,
}

fn per_message() -> &'static PerMessage {
    static HANDLES: OnceLock<PerMessage> = OnceLock::new();
    HANDLES.get_or_init(|| {
        let by_kind = |name: &'static str| {
            Kind::ALL.map(|kind| metrics::counter!(name, "kind" => kind.as_str()))
        };
        PerMessage {
            sent: by_kind("metafi_cluster_messages_sent_total"),
            received: by_kind("metafi_cluster_messages_received_total"),
            dropped: by_kind("metafi_cluster_outgoing_dropped_total"),
            batches: metrics::counter!("metafi_cluster_batches_total"),
            batched: metrics::counter!("metafi_cluster_batched_messages_total"),
        }
    })
}

/// `metafi_cluster_messages_sent_total{kind}` / `metafi_cluster_messages_received_total{kind}`:
/// NATS messages by kind (a batch counts once).
pub(crate) fn sent(kind: Kind) {
    per_message().sent[kind as usize].increment(1);
}

pub(crate) fn received(kind: Kind) {
    per_message().received[kind as usize].increment(1);
}

/// `metafi_cluster_outgoing_dropped_total{kind}`: messages dropped because the outgoing queue
/// (`cluster.outgoing_queue_size`) was full or NATS refused them.
pub(crate) fn dropped(kind: Kind) {
    per_message().dropped[kind as usize].increment(1);
}

/// `metafi_cluster_single_socket_closed_total`: sessions of this node closed because a newer
/// socket of their user opened on another node.
pub(crate) fn single_socket_closed() {
    metrics::counter!("metafi_cluster_single_socket_closed_total").increment(1);
}

/// `metafi_cluster_remote_presences`: presences of other nodes' sessions this node knows of.
pub(crate) fn remote_presences(count: usize) {
    metrics::gauge!("metafi_cluster_remote_presences").set(count as f64);
}

/// `metafi_cluster_matchmaker_pool`: 1 while this node runs the cluster's matchmaker pool.
pub(crate) fn matchmaker_pool(runs: bool) {
    metrics::gauge!("metafi_cluster_matchmaker_pool").set(if runs { 1.0 } else { 0.0 });
}

/// `metafi_cluster_matchmaker_pool_changes_total`: times this node's view of the pool node
/// changed.
pub(crate) fn matchmaker_pool_changed() {
    metrics::counter!("metafi_cluster_matchmaker_pool_changes_total").increment(1);
}

/// `metafi_cluster_matchmaker_remote_tickets`: other nodes' tickets held by this node's pool.
pub(crate) fn matchmaker_remote_tickets(count: usize) {
    metrics::gauge!("metafi_cluster_matchmaker_remote_tickets").set(count as f64);
}

/// `metafi_cluster_matchmaker_tickets_resubmitted_total`: this node's tickets sent again to a
/// new pool node.
pub(crate) fn matchmaker_resubmitted(count: usize) {
    metrics::counter!("metafi_cluster_matchmaker_tickets_resubmitted_total")
        .increment(count as u64);
}

/// `metafi_cluster_matchmaker_stale_matches_total`: tickets a pool elsewhere matched after
/// this node had removed them (the player is not told; see CLUSTER.md).
pub(crate) fn matchmaker_stale(count: usize) {
    if count > 0 {
        metrics::counter!("metafi_cluster_matchmaker_stale_matches_total").increment(count as u64);
    }
}

/// `metafi_cluster_calls_total{kind, result}` and `metafi_cluster_call_seconds{kind}`: calls
/// to other nodes (match joins, signals) by outcome, and how long they took.
pub(crate) fn call(kind: &'static str, result: &'static str, took: std::time::Duration) {
    metrics::counter!("metafi_cluster_calls_total", "kind" => kind, "result" => result)
        .increment(1);
    metrics::histogram!("metafi_cluster_call_seconds", "kind" => kind).record(took.as_secs_f64());
}

/// `metafi_cluster_session_requests_total{kind, result}`: server code's requests for sessions
/// of other nodes (closes, stream changes, push to all), sent by this node (`sent`,
/// `not_sent`: the node is not a peer or the outgoing queue is full) and received by it
/// (`done`, `gone`: the session is no longer here).
pub(crate) fn session_request(kind: &'static str, result: &'static str) {
    metrics::counter!("metafi_cluster_session_requests_total", "kind" => kind, "result" => result)
        .increment(1);
}

/// `metafi_cluster_remote_matches`: other nodes' matches this node lists.
pub(crate) fn remote_matches(count: usize) {
    metrics::gauge!("metafi_cluster_remote_matches").set(count as f64);
}

/// `metafi_cluster_remote_parties`: other nodes' parties this node lists.
pub(crate) fn remote_parties(count: usize) {
    metrics::gauge!("metafi_cluster_remote_parties").set(count as f64);
}

/// `metafi_cluster_batches_total` and `metafi_cluster_batched_messages_total`: NATS messages
/// that carried several cluster messages for one subject, and how many they carried.
pub(crate) fn batch(parts: usize) {
    let handles = per_message();
    handles.batches.increment(1);
    handles.batched.increment(parts as u64);
}

/// `metafi_cluster_digest_mismatches_total{what}`: a peer's digest (`sessions`, `presences`,
/// `listing`) differed from what this node held of it (an announcement was lost, or crossed
/// the digest).
pub(crate) fn digest_mismatch(what: &'static str) {
    metrics::counter!("metafi_cluster_digest_mismatches_total", "what" => what).increment(1);
}

/// `metafi_cluster_snapshots_asked_total{what}`: snapshots (`sessions`: sessions and
/// presences; `listing`) this node asked a peer for after a digest mismatch.
pub(crate) fn snapshot_asked(what: &'static str) {
    metrics::counter!("metafi_cluster_snapshots_asked_total", "what" => what).increment(1);
}

/// `metafi_cluster_snapshots_sent_total{why}`: snapshots this node published (`joined`: a
/// peer joined; `asked`: a peer asked).
pub(crate) fn snapshot_sent(why: &'static str) {
    metrics::counter!("metafi_cluster_snapshots_sent_total", "why" => why).increment(1);
}

//! What a node needs to join a cluster (`[cluster]` in the server's configuration).

use std::time::Duration;

/// A node's cluster settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The NATS server(s), e.g. `nats://127.0.0.1:4222` (`cluster.url`; a comma-separated list
    /// names several servers of one NATS cluster).
    pub url: String,
    /// This node's name, unique in the cluster (the server's `name`): it names the node's
    /// delivery subject, its matches and its parties. See [`valid_node_name`].
    pub node: String,
    /// First token of every subject, so several MetaFi clusters can share one NATS
    /// (`cluster.subject_prefix`).
    pub subject_prefix: String,
    /// How often a node heartbeats (`cluster.heartbeat_interval_ms`).
    pub heartbeat_interval: Duration,
    /// A peer silent this long is lost (`cluster.peer_lost_timeout_ms`); it is noticed within
    /// this plus [`ClusterConfig::check_period`].
    pub peer_lost_timeout: Duration,
    /// How long to wait for NATS when the node starts (`cluster.connect_timeout_ms`).
    pub connect_timeout: Duration,
    /// Messages waiting to be handed to NATS (announcements and deliveries to other nodes)
    /// before more are dropped and counted (`cluster.outgoing_queue_size`).
    pub outgoing_queue_size: usize,
    /// How long a call to another node (a match join or signal) waits for its answer
    /// (`cluster.call_timeout_ms`).
    pub call_timeout: std::time::Duration,
    /// Calls to other nodes waiting for answers, and calls from them being answered, at most
    /// (`cluster.max_concurrent_calls`).
    pub max_concurrent_calls: usize,
    /// How often this node publishes its match listing to the others
    /// (`cluster.match_listing_interval_ms`): other nodes' listings are at most this old (plus
    /// the NATS transit).
    pub match_listing_interval: std::time::Duration,
    /// How often this node checks whether its party listing changed and sends it to the others
    /// if so (`cluster.party_listing_interval_ms`): other nodes' parties in a listing are at
    /// most this old (plus the NATS transit). Sent in full every tenth check regardless.
    pub party_listing_interval: std::time::Duration,
    /// Largest batch of messages for one subject, in bytes (`cluster.batch_max_bytes`; 0: every
    /// message goes alone). See `outgoing.rs`.
    pub batch_max_bytes: usize,
    /// How long the publishing task gathers after the first message of a batch
    /// (`cluster.batch_window_ms`): each cross-node message may wait this long (tokio's timer
    /// rounds up to whole milliseconds). 0: only what is queued when the task wakes is
    /// gathered, and nothing waits.
    pub batch_window: Duration,
    /// How often a node publishes the digest of what it announced
    /// (`cluster.digest_interval_ms`): a peer that lost an announcement notices within this
    /// and asks for a snapshot.
    pub digest_interval: Duration,
}

impl ClusterConfig {
    /// Defaults around `url` and `node`: heartbeats every second, a peer lost after 4 s of
    /// silence (noticed within 4.5 s).
    pub fn new(url: impl Into<String>, node: impl Into<String>) -> ClusterConfig {
        ClusterConfig {
            url: url.into(),
            node: node.into(),
            subject_prefix: "metafi".into(),
            heartbeat_interval: Duration::from_millis(1000),
            peer_lost_timeout: Duration::from_millis(4000),
            connect_timeout: Duration::from_millis(5000),
            outgoing_queue_size: 65_536,
            call_timeout: Duration::from_millis(5000),
            max_concurrent_calls: 1024,
            match_listing_interval: Duration::from_millis(1000),
            party_listing_interval: Duration::from_millis(1000),
            batch_max_bytes: 65_536,
            batch_window: Duration::ZERO,
            digest_interval: Duration::from_millis(1000),
        }
    }

    /// How often peers are checked for silence: half a heartbeat interval, at least 10 ms.
    pub fn check_period(&self) -> Duration {
        (self.heartbeat_interval / 2).max(Duration::from_millis(10))
    }

    /// The bound within which every node notices a lost peer.
    pub fn lost_bound(&self) -> Duration {
        self.peer_lost_timeout + self.check_period()
    }

    pub(crate) fn members_subject(&self) -> String {
        format!("{}.cluster.members", self.subject_prefix)
    }

    /// The matchmaker's broadcast subject (a node's claim to run the pool).
    pub(crate) fn matchmaker_subject(&self) -> String {
        format!("{}.cluster.matchmaker", self.subject_prefix)
    }

    /// A node's matchmaker subject: tickets for the pool it runs, groups of its players.
    pub(crate) fn node_matchmaker_subject(&self, node: &str) -> String {
        format!("{}.cluster.node.{node}.matchmaker", self.subject_prefix)
    }

    pub(crate) fn call_subject(&self, node: &str) -> String {
        format!("{}.cluster.node.{node}.call", self.subject_prefix)
    }

    pub(crate) fn matches_subject(&self) -> String {
        format!("{}.cluster.matches", self.subject_prefix)
    }

    /// A node's sessions subject: every peer's session and presence announcements to it and
    /// deliveries to its sessions, on one subject so they arrive in the order each peer made
    /// them (NATS keeps order per publisher and subject only).
    pub(crate) fn sessions_subject(&self, node: &str) -> String {
        format!("{}.cluster.node.{node}.sessions", self.subject_prefix)
    }
}

/// Whether `name` can name a node (and a subject token): 1 to 64 ASCII letters, digits, `-`
/// and `_`.
pub fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_subject_tokens() {
        assert!(valid_node_name("node-1_a"));
        for bad in ["", "a.b", "a b", "a*", "a>", &"x".repeat(65)] {
            assert!(!valid_node_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn defaults_notice_a_lost_peer_within_five_seconds() {
        let config = ClusterConfig::new("nats://127.0.0.1:4222", "n1");
        assert!(config.lost_bound() <= Duration::from_secs(5));
        assert!(config.peer_lost_timeout >= config.heartbeat_interval * 2);
    }
}

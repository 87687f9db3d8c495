//! The `[cluster]` keys (docs/CLUSTER.md): NATS, heartbeats, the lost-peer bound. Empty
//! `cluster.url` (the default) is a single node that needs no NATS. A cluster needs PostgreSQL:
//! every node reads and writes the same database, which SQLite in one node's data directory
//! cannot be.

use std::time::Duration;

use metafi_cluster::{ClusterConfig, valid_node_name};
use serde::{Deserialize, Serialize};

use super::DatabaseBackend;
use super::check::Checker;

/// `[cluster]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawCluster {
    /// NATS server(s); empty: no cluster.
    pub url: String,
    /// First token(s) of every cluster subject.
    pub subject_prefix: String,
    pub heartbeat_interval_ms: i64,
    pub peer_lost_timeout_ms: i64,
    pub connect_timeout_ms: i64,
    pub outgoing_queue_size: i64,
    /// How long a call to another node (match join, signal) waits for its answer.
    pub call_timeout_ms: i64,
    /// Calls to other nodes waiting, and calls from them being answered, at most.
    pub max_concurrent_calls: i64,
    /// How often this node publishes its match listing to the others.
    pub match_listing_interval_ms: i64,
    /// How often this node sends its party listing to the others (when it changed).
    pub party_listing_interval_ms: i64,
    /// Largest batch of cluster messages for one subject (0: no batching).
    pub batch_max_bytes: i64,
    /// How long the publisher gathers a batch (0: only what is queued; nothing waits).
    pub batch_window_ms: i64,
    /// How often this node publishes the digest of what it announced.
    pub digest_interval_ms: i64,
}

impl Default for RawCluster {
    fn default() -> Self {
        let d = ClusterConfig::new("", "");
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        RawCluster {
            url: String::new(),
            subject_prefix: d.subject_prefix,
            heartbeat_interval_ms: ms(d.heartbeat_interval),
            peer_lost_timeout_ms: ms(d.peer_lost_timeout),
            connect_timeout_ms: ms(d.connect_timeout),
            outgoing_queue_size: i64::try_from(d.outgoing_queue_size).unwrap_or(i64::MAX),
            call_timeout_ms: ms(d.call_timeout),
            max_concurrent_calls: i64::try_from(d.max_concurrent_calls).unwrap_or(i64::MAX),
            match_listing_interval_ms: ms(d.match_listing_interval),
            party_listing_interval_ms: ms(d.party_listing_interval),
            batch_max_bytes: i64::try_from(d.batch_max_bytes).unwrap_or(i64::MAX),
            batch_window_ms: ms(d.batch_window),
            digest_interval_ms: ms(d.digest_interval),
        }
    }
}

/// `None` without `cluster.url` (a single node) or with a problem recorded.
pub(super) fn validate(
    c: &RawCluster,
    name: &str,
    database: Option<&DatabaseBackend>,
    check: &mut Checker,
) -> Option<ClusterConfig> {
    let heartbeat_interval = check.millis(
        "cluster.heartbeat_interval_ms",
        c.heartbeat_interval_ms,
        10,
        60_000,
    );
    let peer_lost_timeout = check.millis(
        "cluster.peer_lost_timeout_ms",
        c.peer_lost_timeout_ms,
        20,
        600_000,
    );
    let connect_timeout = check.millis(
        "cluster.connect_timeout_ms",
        c.connect_timeout_ms,
        100,
        600_000,
    );
    let outgoing_queue_size = check.count(
        "cluster.outgoing_queue_size",
        c.outgoing_queue_size,
        1,
        1 << 24,
    );
    let call_timeout = check.millis("cluster.call_timeout_ms", c.call_timeout_ms, 10, 600_000);
    let max_concurrent_calls = check.count(
        "cluster.max_concurrent_calls",
        c.max_concurrent_calls,
        1,
        1 << 20,
    );
    let match_listing_interval = check.millis(
        "cluster.match_listing_interval_ms",
        c.match_listing_interval_ms,
        10,
        600_000,
    );
    let party_listing_interval = check.millis(
        "cluster.party_listing_interval_ms",
        c.party_listing_interval_ms,
        10,
        600_000,
    );
    // Below NATS's default 1 MiB payload limit.
    let batch_max_bytes = check.count("cluster.batch_max_bytes", c.batch_max_bytes, 0, 1 << 19);
    let batch_window = check.millis("cluster.batch_window_ms", c.batch_window_ms, 0, 100);
    let digest_interval = check.millis(
        "cluster.digest_interval_ms",
        c.digest_interval_ms,
        10,
        600_000,
    );
    if peer_lost_timeout < heartbeat_interval * 2 {
        check.problem(
            "cluster.peer_lost_timeout_ms: must be at least twice cluster.heartbeat_interval_ms, or one late heartbeat loses a peer",
        );
    }
    if !valid_prefix(&c.subject_prefix) {
        check.problem(
            "cluster.subject_prefix: dot-separated tokens of ASCII letters, digits, '-' and '_'",
        );
    }
    if c.url.trim().is_empty() {
        return None;
    }
    let mut ok = true;
    if !valid_node_name(name) {
        check.problem(format!(
            "name: {name:?} cannot name a cluster node (it names the node's NATS subject): use 1 to 64 ASCII letters, digits, '-' or '_', unique in the cluster"
        ));
        ok = false;
    }
    if let Some(DatabaseBackend::Sqlite { .. }) = database {
        check.problem(
            "cluster.url: a cluster needs PostgreSQL shared by every node (database.url = \"postgres://…\"); SQLite lives in one node's data directory and cannot be shared",
        );
        ok = false;
    }
    ok.then(|| ClusterConfig {
        url: c.url.trim().to_owned(),
        node: name.to_owned(),
        subject_prefix: c.subject_prefix.clone(),
        heartbeat_interval,
        peer_lost_timeout,
        connect_timeout,
        outgoing_queue_size,
        call_timeout,
        max_concurrent_calls,
        match_listing_interval,
        party_listing_interval,
        batch_max_bytes,
        batch_window,
        digest_interval,
    })
}

fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty() && prefix.split('.').all(valid_node_name)
}

#[cfg(test)]
mod tests {
    use super::super::{Config, RawConfig};

    fn clustered(tweak: impl FnOnce(&mut RawConfig)) -> anyhow::Result<Config> {
        let mut raw = RawConfig::default();
        raw.database.url = "postgres://u:p@127.0.0.1:5432/db".into();
        raw.name = "n1".into();
        raw.cluster.url = "nats://127.0.0.1:4222".into();
        tweak(&mut raw);
        Config::try_from(raw)
    }

    #[test]
    fn no_url_is_a_single_node_and_the_keys_reach_the_cluster() {
        assert!(
            Config::try_from(RawConfig::default())
                .unwrap()
                .cluster
                .is_none()
        );
        let config = clustered(|raw| {
            raw.cluster.heartbeat_interval_ms = 200;
            raw.cluster.peer_lost_timeout_ms = 900;
            raw.cluster.subject_prefix = "game.eu".into();
            raw.cluster.call_timeout_ms = 700;
            raw.cluster.max_concurrent_calls = 9;
            raw.cluster.match_listing_interval_ms = 250;
            raw.cluster.party_listing_interval_ms = 300;
            raw.cluster.batch_max_bytes = 0;
            raw.cluster.batch_window_ms = 2;
            raw.cluster.digest_interval_ms = 300;
        })
        .unwrap();
        let cluster = config.cluster.unwrap();
        assert_eq!(cluster.url, "nats://127.0.0.1:4222");
        assert_eq!(cluster.node, "n1");
        assert_eq!(cluster.subject_prefix, "game.eu");
        assert_eq!(cluster.heartbeat_interval.as_millis(), 200);
        assert_eq!(cluster.peer_lost_timeout.as_millis(), 900);
        assert_eq!(cluster.call_timeout.as_millis(), 700);
        assert_eq!(cluster.max_concurrent_calls, 9);
        assert_eq!(cluster.match_listing_interval.as_millis(), 250);
        assert_eq!(cluster.party_listing_interval.as_millis(), 300);
        assert_eq!(cluster.batch_max_bytes, 0);
        assert_eq!(cluster.batch_window.as_millis(), 2);
        assert_eq!(cluster.digest_interval.as_millis(), 300);
        assert!(cluster.lost_bound().as_secs_f64() <= 5.0);
    }

    #[test]
    fn sqlite_bad_names_and_a_timeout_under_two_beats_are_refused() {
        let problems = |tweak: fn(&mut RawConfig)| format!("{:#}", clustered(tweak).unwrap_err());
        assert!(
            problems(|raw| raw.database.url = String::new())
                .contains("cluster.url: a cluster needs PostgreSQL"),
        );
        assert!(problems(|raw| raw.name = "node.1".into()).contains("cannot name a cluster node"));
        assert!(
            problems(|raw| raw.cluster.peer_lost_timeout_ms = 1500)
                .contains("cluster.peer_lost_timeout_ms: must be at least twice")
        );
        assert!(
            problems(|raw| raw.cluster.subject_prefix = "a..b".into())
                .contains("cluster.subject_prefix")
        );
        // A single node may keep any name.
        let raw = RawConfig {
            name: "my node".into(),
            ..RawConfig::default()
        };
        assert!(Config::try_from(raw).unwrap().cluster.is_none());
    }
}

//! Presences across nodes against a real nats-server (`METAFI_TEST_NATS_URL`; skipped without
//! it unless `METAFI_REQUIRE_NATS=1`): `Cluster`s in one process, each with its own registry. A
//! presence tracked on one node is in the others' books; a node started later learns it from
//! the snapshot sent when it joins; a node that dies without a word has its presences removed
//! everywhere within the lost-peer bound.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::Arc;
use std::time::Duration;

use metafi_cluster::{Cluster, ClusterConfig};
use metafi_core::SystemClock;
use metafi_realtime::{
    LocalStatusRegistry, Presence, PresenceMeta, RealtimeParts, SessionRegistry, StreamKey,
    StreamMode,
};
use tokio::time::Instant;
use uuid::Uuid;

mod support;
use support::nats_url;

fn config(url: &str, prefix: &str, node: &str) -> ClusterConfig {
    ClusterConfig {
        subject_prefix: prefix.to_owned(),
        heartbeat_interval: Duration::from_millis(100),
        peer_lost_timeout: Duration::from_millis(500),
        ..ClusterConfig::new(url, node)
    }
}

async fn node(url: &str, prefix: &str, name: &str) -> Cluster {
    let registry = Arc::new(SessionRegistry::new());
    let cluster = Cluster::start(
        config(url, prefix, name),
        registry.clone(),
        true,
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    cluster.set_parts(&RealtimeParts {
        registry,
        tracker: cluster.tracker(),
        status: Arc::new(LocalStatusRegistry::new()),
        router: cluster.router(),
        remote: cluster.remote_sessions(),
    });
    cluster
}

async fn eventually(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn room() -> StreamKey {
    StreamKey {
        mode: StreamMode::Room,
        subject: Uuid::nil(),
        subcontext: Uuid::nil(),
        label: "lobby".into(),
    }
}

fn presence(hidden: bool) -> Presence {
    Presence {
        session_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
        meta: PresenceMeta {
            username: "u".into(),
            persistence: false,
            hidden,
            status: None,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presences_reach_every_node_a_late_node_gets_a_snapshot_and_a_dead_node_leaves() {
    let Some(url) = nats_url() else { return };
    let prefix = format!("test{}", Uuid::new_v4().simple());
    let bound = config(&url, &prefix, "x").lost_bound();
    let a = node(&url, &prefix, "a").await;
    let b = node(&url, &prefix, "b").await;
    let five = Duration::from_secs(5);
    eventually("a and b see each other", five, || {
        a.peers() == ["b"] && b.peers() == ["a"]
    })
    .await;

    // Tracked on a: in b's books (lists hide hidden presences, members include them).
    let (seen, hidden) = (presence(false), presence(true));
    a.tracker().track(&room(), seen.clone()).unwrap();
    a.tracker().track(&room(), hidden.clone()).unwrap();
    eventually("b knows a's presences", five, || b.remote_presences() == 2).await;
    assert_eq!(b.tracker().list(&room(), false), vec![seen.clone()]);
    assert_eq!(b.tracker().list(&room(), true).len(), 2);
    assert_eq!(b.tracker().session_ids(&room()).len(), 2);
    assert_eq!(
        b.tracker().get(seen.session_id, &room()),
        Some(seen.meta.clone())
    );
    assert_eq!(b.tracker().len(), 0, "len counts this node's own presences");

    // Untracked on a: gone from b's books.
    a.tracker().untrack(hidden.session_id, &room()).unwrap();
    eventually("b forgot the untracked presence", five, || {
        b.remote_presences() == 1
    })
    .await;

    // c starts later: it learns a's presence from the snapshot a sends when c joins.
    let c = node(&url, &prefix, "c").await;
    eventually("c learned a's presence", five, || {
        c.tracker().list(&room(), false) == vec![seen.clone()]
    })
    .await;

    // a dies without a word: b and c drop its presence within the bound.
    a.halt().await;
    let slack = Duration::from_secs(2);
    eventually(
        "b and c dropped the dead node's presence",
        bound + slack,
        || b.remote_presences() == 0 && c.remote_presences() == 0,
    )
    .await;
    assert!(b.tracker().session_ids(&room()).is_empty());
    b.stop().await;
    c.stop().await;
}

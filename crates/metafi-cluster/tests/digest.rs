//! Repair by digest against a real nats-server (`METAFI_TEST_NATS_URL`; skipped without it
//! unless `METAFI_REQUIRE_NATS=1`): announcements a node makes are dropped before NATS on
//! purpose (the `lose_announcements` test seam, as a lost message would be); its next digest
//! tells the peer it drifted, the peer asks for a snapshot and converges — no peer has to join.

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
        peer_lost_timeout: Duration::from_millis(2000),
        digest_interval: Duration::from_millis(100),
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

fn presence(status: Option<&str>) -> Presence {
    Presence {
        session_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
        meta: PresenceMeta {
            username: "u".into(),
            persistence: false,
            hidden: false,
            status: status.map(str::to_owned),
        },
    }
}

/// A lost track, a lost meta update and a lost untrack are each repaired from the digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_lost_announcements_converges_through_the_digest() {
    let Some(url) = nats_url() else { return };
    let prefix = format!("digest{}", Uuid::new_v4().simple());
    let a = node(&url, &prefix, "a").await;
    let b = node(&url, &prefix, "b").await;
    let five = Duration::from_secs(5);
    eventually("a and b see each other", five, || {
        a.peers() == ["b"] && b.peers() == ["a"]
    })
    .await;
    // One announcement goes through, so b holds something of a before the losses.
    let kept = presence(None);
    a.tracker().track(&room(), kept.clone()).unwrap();
    eventually("b knows the first presence", five, || {
        b.remote_presences() == 1
    })
    .await;

    // Lost track: a goes on as if it was sent; b learns the presence from a's snapshot.
    a.lose_announcements(1);
    let lost = presence(None);
    a.tracker().track(&room(), lost.clone()).unwrap();
    eventually("b repaired the lost track", five, || {
        b.tracker().get(lost.session_id, &room()).is_some()
    })
    .await;
    assert_eq!(b.remote_presences(), 2);

    // Lost update of a presence's meta: repaired to the new meta.
    a.lose_announcements(1);
    let mut updated = lost.clone();
    updated.meta.status = Some("away".into());
    a.tracker().update(&room(), updated.clone());
    eventually("b repaired the lost update", five, || {
        b.tracker().get(lost.session_id, &room()) == Some(updated.meta.clone())
    })
    .await;

    // Lost untrack: the presence leaves b's books.
    a.lose_announcements(1);
    a.tracker().untrack(kept.session_id, &room()).unwrap();
    eventually("b repaired the lost untrack", five, || {
        b.tracker().get(kept.session_id, &room()).is_none()
    })
    .await;
    assert_eq!(b.remote_presences(), 1);
    assert_eq!(b.tracker().list(&room(), false), vec![updated]);
    a.stop().await;
    b.stop().await;
}

//! Membership against a real nats-server (`METAFI_TEST_NATS_URL`, from `scripts/nats.sh`):
//! three members in one process see each other, a halted one is lost within the bound, a
//! restarted one joins again, and one that leaves is forgotten at once. Without the variable
//! the tests skip, unless `METAFI_REQUIRE_NATS=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_cluster::{ClusterConfig, Membership, MembershipEvent};
use tokio::sync::broadcast;
use tokio::time::Instant;

mod support;
use support::nats_url;

/// Fast beats, and a subject prefix of this test's own so tests running at once do not meet.
fn config(url: &str, prefix: &str, node: &str) -> ClusterConfig {
    ClusterConfig {
        subject_prefix: prefix.to_owned(),
        heartbeat_interval: Duration::from_millis(100),
        peer_lost_timeout: Duration::from_millis(500),
        ..ClusterConfig::new(url, node)
    }
}

async fn member(url: &str, prefix: &str, node: &str) -> Membership {
    let config = config(url, prefix, node);
    let client = metafi_cluster::connect(&config).await.unwrap();
    Membership::start(client, config).await.unwrap()
}

fn prefix() -> String {
    format!("test{}", uuid::Uuid::new_v4().simple())
}

/// Waits (up to 5 s, generous for a loaded machine) until `member` sees exactly `peers`.
async fn sees(member: &Membership, peers: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while member.peers() != peers {
        assert!(
            Instant::now() < deadline,
            "{} sees {:?}, expected {peers:?}",
            member.node(),
            member.peers()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The next event about `node` (others skipped), within `within`.
async fn next_about(
    events: &mut broadcast::Receiver<MembershipEvent>,
    node: &str,
    within: Duration,
) -> MembershipEvent {
    tokio::time::timeout(within, async {
        loop {
            let event = events.recv().await.unwrap();
            if event.node() == node {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no event about {node} within {within:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_notice_a_lost_one_within_the_bound_and_a_restarted_one_rejoins() {
    let Some(url) = nats_url() else { return };
    let prefix = prefix();
    let bound = config(&url, &prefix, "x").lost_bound();
    let a = member(&url, &prefix, "a").await;
    let b = member(&url, &prefix, "b").await;
    let c = member(&url, &prefix, "c").await;
    sees(&a, &["b", "c"]).await;
    sees(&b, &["a", "c"]).await;
    sees(&c, &["a", "b"]).await;

    // c stops without a word, as a crashed node.
    let (mut a_events, mut b_events) = (a.events(), b.events());
    c.halt().await;
    // Slack above the bound only for a loaded machine's scheduling; the bound itself is what
    // the membership promises.
    let slack = Duration::from_secs(2);
    assert_eq!(
        next_about(&mut a_events, "c", bound + slack).await,
        MembershipEvent::Lost { node: "c".into() }
    );
    assert_eq!(
        next_about(&mut b_events, "c", bound + slack).await,
        MembershipEvent::Lost { node: "c".into() }
    );
    // That it is not lost before its silence passes the timeout is the unit test
    // `a_peer_is_lost_only_after_the_timeout…` in membership.rs, on explicit instants.
    sees(&a, &["b"]).await;
    sees(&b, &["a"]).await;

    // c comes back under the same name: both see it join, and it sees both at once (its hello
    // is answered without waiting for the next beat).
    let c = member(&url, &prefix, "c").await;
    assert_eq!(
        next_about(&mut a_events, "c", Duration::from_secs(5)).await,
        MembershipEvent::Joined { node: "c".into() }
    );
    assert_eq!(
        next_about(&mut b_events, "c", Duration::from_secs(5)).await,
        MembershipEvent::Joined { node: "c".into() }
    );
    sees(&c, &["a", "b"]).await;

    // b leaves on purpose: forgotten at once (well before the lost timeout would).
    let config = config(&url, &prefix, "x");
    let mut c_events = c.events();
    b.leave().await;
    assert_eq!(
        next_about(&mut a_events, "b", config.peer_lost_timeout).await,
        MembershipEvent::Left { node: "b".into() }
    );
    assert_eq!(
        next_about(&mut c_events, "b", config.peer_lost_timeout).await,
        MembershipEvent::Left { node: "b".into() }
    );
    sees(&a, &["c"]).await;
    a.leave().await;
    c.leave().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_the_same_name_is_a_loss_then_a_join() {
    let Some(url) = nats_url() else { return };
    let prefix = prefix();
    let a = member(&url, &prefix, "a").await;
    let b = member(&url, &prefix, "b").await;
    sees(&a, &["b"]).await;
    let mut events = a.events();
    // b's process dies and a new one starts before the timeout: a new incarnation.
    b.halt().await;
    let b = member(&url, &prefix, "b").await;
    assert_eq!(
        next_about(&mut events, "b", Duration::from_secs(5)).await,
        MembershipEvent::Lost { node: "b".into() }
    );
    assert_eq!(
        next_about(&mut events, "b", Duration::from_secs(5)).await,
        MembershipEvent::Joined { node: "b".into() }
    );
    sees(&a, &["b"]).await;
    a.leave().await;
    b.leave().await;
}

#[tokio::test]
async fn an_unreachable_nats_is_a_clear_error() {
    let mut config = ClusterConfig::new("nats://127.0.0.1:1", "a");
    config.connect_timeout = Duration::from_millis(300);
    let error = metafi_cluster::connect(&config).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot reach NATS at nats://127.0.0.1:1"),
        "{error}"
    );
}

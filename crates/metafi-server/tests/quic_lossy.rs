//! Delivery classes end to end through the real server over lossy links: two QUIC players,
//! each behind its own `LossyProxy` (seeded loss, delay, jitter, reordering), in a relayed
//! match. What one sends reaches the other through two lossy hops and the server's relay, and
//! each class keeps its guarantee: ordered stays ordered per stream, reliable-unordered all
//! arrive once, latest-wins never goes backwards and ends on the final value, unreliable
//! loses some.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use metafi_client::{
    DeliveryClass, Events, Fingerprint, QuicConfig, QuicConnector, Socket, SocketConfig,
};
use metafi_proto::realtime::{MatchCreate, Message};
use metafi_quic::lossy::{LossyProxy, Profile};
use metafi_testkit::{Http, TestNode};

fn bad_link() -> Profile {
    Profile {
        loss: 0.15,
        delay: Duration::from_millis(15),
        jitter: Duration::from_millis(5),
        reorder: 0.1,
        reorder_delay: Duration::from_millis(10),
        ..Profile::default()
    }
}

async fn player(server: &TestNode, seed: u64) -> (Socket, Events, LossyProxy) {
    let fingerprint: Fingerprint =
        std::fs::read_to_string(server.data_dir.join("data/quic/fingerprint.txt"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    let proxy = LossyProxy::start(server.quic.unwrap(), bad_link(), bad_link(), seed)
        .await
        .unwrap();
    let (token, _) = Http::new(&server.base).new_session().await;
    let connector = QuicConnector::new(&QuicConfig::pinned(proxy.addr(), fingerprint)).unwrap();
    let (socket, events) = connector
        .connect(&token, &SocketConfig::default())
        .await
        .unwrap();
    (socket, events, proxy)
}

#[tokio::test]
async fn every_class_keeps_its_guarantee_through_the_server_over_lossy_links() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        // Room for a burst of relayed data in each outbox.
        raw.socket.outgoing_queue_size = 1024;
    })
    .await;
    let (a, _a_events, _a_proxy) = player(&server, 11).await;
    let (b, mut b_events, b_proxy) = player(&server, 12).await;
    let created = match a
        .request(Message::MatchCreate(MatchCreate::default()))
        .await
        .unwrap()
        .message
    {
        Some(Message::Match(m)) => m,
        other => panic!("{other:?}"),
    };
    let match_id = created.match_id;
    b.match_join(&match_id).await.unwrap();

    const OP_TALK: i64 = 1;
    const OP_ATTACK: i64 = 2;
    const OP_MOVE: i64 = 3;
    const OP_POS: i64 = 4;
    const N: u32 = 120;
    for i in 1..=N {
        let send = |op: i64, class: DeliveryClass| {
            a.send_match_data(&match_id, op, Bytes::from(i.to_string()), class)
        };
        send(OP_POS, DeliveryClass::latest("pos")).await.unwrap();
        send(OP_MOVE, DeliveryClass::Unreliable).await.unwrap();
        if i % 2 == 0 {
            send(OP_ATTACK, DeliveryClass::ReliableUnordered)
                .await
                .unwrap();
        }
        if i % 3 == 0 {
            send(OP_TALK, DeliveryClass::ordered("talk")).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }

    let mut got: HashMap<i64, Vec<u32>> = HashMap::new();
    let expected_talk = N / 3;
    let expected_attack = N / 2;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    // Until every reliable message and the final position arrived, then a little longer for
    // stragglers that must not come.
    loop {
        let done = got.get(&OP_TALK).map_or(0, Vec::len) == expected_talk as usize
            && got.get(&OP_ATTACK).map_or(0, Vec::len) == expected_attack as usize
            && got.get(&OP_POS).and_then(|v| v.last()) == Some(&N);
        let wait = if done {
            Duration::from_millis(500)
        } else {
            deadline.saturating_duration_since(tokio::time::Instant::now())
        };
        let Ok(Some(envelope)) = tokio::time::timeout(wait, b_events.next()).await else {
            break;
        };
        if let Some(Message::MatchData(data)) = envelope.message {
            let n: u32 = std::str::from_utf8(&data.data).unwrap().parse().unwrap();
            got.entry(data.op_code).or_default().push(n);
        }
    }

    let talk = &got[&OP_TALK];
    assert_eq!(
        talk,
        &(1..=expected_talk).map(|i| i * 3).collect::<Vec<_>>(),
        "talk: all, in order"
    );
    let attack: HashSet<u32> = got[&OP_ATTACK].iter().copied().collect();
    assert_eq!(attack.len(), got[&OP_ATTACK].len(), "attack: no duplicates");
    assert_eq!(attack.len(), expected_attack as usize, "attack: all arrive");
    let pos = &got[&OP_POS];
    assert!(
        pos.windows(2).all(|w| w[1] > w[0]),
        "pos never goes back: {pos:?}"
    );
    assert_eq!(pos.last(), Some(&N), "pos ends on the final value");
    let moves = got.get(&OP_MOVE).map_or(0, Vec::len);
    assert!(
        moves < N as usize,
        "unreliable: some of {N} lost over two lossy hops, got {moves}"
    );
    assert!(
        b_proxy
            .down_stats
            .lost
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    server.stop().await;
}

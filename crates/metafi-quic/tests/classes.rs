//! Each delivery class's guarantee, checked over a lossy link (seeded loss, delay, jitter,
//! reordering from `LossyProxy`): ordered stays ordered per stream and streams do not block
//! each other, reliable-unordered all arrive exactly once, unreliable may drop and is never
//! retransmitted, latest-wins never delivers a stale value after a newer one and always
//! delivers the final value.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use metafi_quic::lossy::{Direction, Profile};
use metafi_quic::{DeliveryClass, Tuning};
use support::{drain, msg, next, padded, pair, parse};

fn lossy(loss: f64) -> Profile {
    Profile {
        loss,
        delay: Duration::from_millis(15),
        jitter: Duration::from_millis(5),
        ..Profile::default()
    }
}

#[tokio::test]
async fn ordered_streams_stay_ordered_over_a_lossy_link() {
    let mut p = pair(lossy(0.2), lossy(0.2), 1, Tuning::default()).await;
    let (talk, combat) = (
        DeliveryClass::ordered("talk"),
        DeliveryClass::ordered("combat"),
    );
    let default = DeliveryClass::default_stream();
    for i in 0..150 {
        let (tag, class) = match i % 3 {
            0 => ("talk", &talk),
            1 => ("combat", &combat),
            _ => ("default", &default),
        };
        p.client.sender.send(msg(tag, i), class).await.unwrap();
        if i % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let mut last: HashMap<String, u32> = HashMap::new();
    for _ in 0..150 {
        let (tag, n) = parse(&next(&mut p.server_receiver, "an ordered message").await);
        if let Some(previous) = last.insert(tag.clone(), n) {
            assert!(n > previous, "{tag}: {n} arrived after {previous}");
        }
    }
    assert_eq!(last.len(), 3);
    assert!(
        p.proxy
            .up_stats
            .lost
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

#[tokio::test]
async fn a_lost_packet_on_one_stream_does_not_delay_another() {
    let mut p = pair(lossy(0.0), lossy(0.0), 2, Tuning::default()).await;
    let (talk, combat) = (
        DeliveryClass::ordered("talk"),
        DeliveryClass::ordered("combat"),
    );
    // Open both streams first, so the lost packet carries only the talk message.
    p.client.sender.send(msg("talk", 0), &talk).await.unwrap();
    p.client
        .sender
        .send(msg("combat", 0), &combat)
        .await
        .unwrap();
    for _ in 0..2 {
        next(&mut p.server_receiver, "warm-up").await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    p.proxy.drop_next(Direction::Up, 1, 300);
    p.client
        .sender
        .send(padded("talk", 1, 400), &talk)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    p.client
        .sender
        .send(padded("combat", 1, 400), &combat)
        .await
        .unwrap();
    let first = parse(&next(&mut p.server_receiver, "the combat message").await);
    let second = parse(&next(&mut p.server_receiver, "the retransmitted talk message").await);
    assert_eq!(
        first,
        ("combat".to_owned(), 1),
        "combat waited for talk's retransmission"
    );
    assert_eq!(second, ("talk".to_owned(), 1));

    // The same loss on one stream: the later message waits (that is what ordering means).
    p.proxy.drop_next(Direction::Up, 1, 300);
    p.client
        .sender
        .send(padded("talk", 2, 400), &talk)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    p.client
        .sender
        .send(padded("talk", 3, 400), &talk)
        .await
        .unwrap();
    assert_eq!(parse(&next(&mut p.server_receiver, "talk 2").await).1, 2);
    assert_eq!(parse(&next(&mut p.server_receiver, "talk 3").await).1, 3);
}

#[tokio::test]
async fn reliable_unordered_messages_all_arrive_exactly_once() {
    for copies in [0, 2] {
        let tuning = Tuning {
            redundancy_copies: copies,
            ..Tuning::default()
        };
        let mut p = pair(lossy(0.25), lossy(0.25), 3 + u64::from(copies), tuning).await;
        for i in 0..200 {
            p.client
                .sender
                .send(msg("attack", i), &DeliveryClass::ReliableUnordered)
                .await
                .unwrap();
            // Keep the redundancy timers running, as a connection's owner does.
            p.client
                .sender
                .on_timers(tokio::time::Instant::now())
                .await
                .unwrap();
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while p.client.sender.next_deadline().is_some() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
            p.client
                .sender
                .on_timers(tokio::time::Instant::now())
                .await
                .unwrap();
        }
        let mut seen = HashSet::new();
        for _ in 0..200 {
            let (_, n) = parse(&next(&mut p.server_receiver, "an unordered message").await);
            assert!(seen.insert(n), "{n} delivered twice (copies = {copies})");
        }
        assert!(
            drain(&mut p.server_receiver, Duration::from_millis(300))
                .await
                .is_empty(),
            "nothing beyond the 200 messages (copies = {copies})"
        );
    }
}

#[tokio::test]
async fn unreliable_messages_may_drop_and_are_not_retransmitted() {
    let mut p = pair(lossy(0.3), lossy(0.0), 5, Tuning::default()).await;
    for i in 0..300 {
        p.client
            .sender
            .send(msg("move", i), &DeliveryClass::Unreliable)
            .await
            .unwrap();
        if i % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let got = drain(&mut p.server_receiver, Duration::from_millis(1000)).await;
    let distinct: HashSet<u32> = got.iter().map(|b| parse(b).1).collect();
    assert_eq!(distinct.len(), got.len(), "no duplicates");
    assert!(
        got.len() < 300 && got.len() > 100,
        "about 70% of 300 arrive, lost ones are not resent: got {}",
        got.len()
    );
}

/// Sends 1..=count under `key`, a value every `every`, while running the sender's timers.
async fn send_latest(p: &mut support::Pair, key: &str, count: u32, every: Duration) {
    let class = DeliveryClass::latest(key);
    for i in 1..=count {
        p.client.sender.send(msg(key, i), &class).await.unwrap();
        p.client
            .sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
        tokio::time::sleep(every).await;
    }
}

/// Runs the client's timers until none is left (the settling resends).
async fn settle(p: &mut support::Pair) {
    while let Some(at) = p.client.sender.next_deadline() {
        tokio::time::sleep_until(at).await;
        p.client
            .sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
    }
}

fn reordering() -> Profile {
    Profile {
        loss: 0.2,
        delay: Duration::from_millis(10),
        jitter: Duration::from_millis(4),
        reorder: 0.25,
        reorder_delay: Duration::from_millis(12),
        ..Profile::default()
    }
}

#[tokio::test]
async fn latest_wins_never_delivers_stale_values_and_always_the_final_one() {
    let mut p = pair(reordering(), lossy(0.0), 6, Tuning::default()).await;
    // Two keys interleaved: each is filtered on its own.
    let class_pos = DeliveryClass::latest("pos");
    let class_hp = DeliveryClass::latest("hp");
    for i in 1..=300 {
        p.client
            .sender
            .send(msg("pos", i), &class_pos)
            .await
            .unwrap();
        if i % 3 == 0 {
            p.client
                .sender
                .send(msg("hp", i / 3), &class_hp)
                .await
                .unwrap();
        }
        p.client
            .sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    settle(&mut p).await;
    let got = drain(&mut p.server_receiver, Duration::from_millis(1500)).await;
    let mut last: HashMap<String, u32> = HashMap::new();
    for bytes in &got {
        let (key, n) = parse(bytes);
        if let Some(previous) = last.insert(key.clone(), n) {
            assert!(n > previous, "{key}: stale {n} delivered after {previous}");
        }
    }
    assert_eq!(last.get("pos"), Some(&300), "the final pos arrives");
    assert_eq!(last.get("hp"), Some(&100), "the final hp arrives");
    assert!(got.len() < 400, "lost and stale values are not delivered");

    // Control: the same link reorders plain unreliable messages, so the filter did work.
    for i in 1..=300 {
        p.client
            .sender
            .send(msg("raw", i), &DeliveryClass::Unreliable)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let raw: Vec<u32> = drain(&mut p.server_receiver, Duration::from_millis(500))
        .await
        .iter()
        .map(|b| parse(b).1)
        .collect();
    assert!(
        raw.windows(2).any(|w| w[1] < w[0]),
        "the link reorders: {raw:?}"
    );
}

#[tokio::test]
async fn the_final_latest_value_arrives_even_when_its_datagram_is_lost() {
    let tuning = Tuning {
        latest_settle: Duration::from_millis(500),
        ..Tuning::default()
    };
    let mut p = pair(lossy(0.0), lossy(0.0), 7, tuning).await;
    send_latest(&mut p, "pos", 5, Duration::from_millis(5)).await;
    // Lose exactly the last value's datagram (acknowledgement-only packets are far smaller).
    p.proxy.drop_next(Direction::Up, 1, 120);
    p.client
        .sender
        .send(padded("pos", 6, 120), &DeliveryClass::latest("pos"))
        .await
        .unwrap();
    let before: Vec<u32> = drain(&mut p.server_receiver, Duration::from_millis(250))
        .await
        .iter()
        .map(|b| parse(b).1)
        .collect();
    assert_eq!(before.last(), Some(&5), "value 6 was lost: {before:?}");
    // The key is quiet: the settle timer sends the last value again, reliably.
    settle(&mut p).await;
    let after = next(&mut p.server_receiver, "the settled final value").await;
    assert_eq!(parse(&after).1, 6);
}

#[tokio::test]
async fn copies_of_ordered_messages_are_delivered_once_in_order() {
    let tuning = Tuning {
        redundancy_copies: 2,
        redundancy_spacing: Duration::from_millis(2),
        ..Tuning::default()
    };
    let mut p = pair(lossy(0.2), lossy(0.2), 8, tuning).await;
    let talk = DeliveryClass::ordered("talk");
    let default = DeliveryClass::default_stream();
    for i in 0..200 {
        let class = if i % 2 == 0 { &talk } else { &default };
        let tag = if i % 2 == 0 { "talk" } else { "default" };
        p.client.sender.send(msg(tag, i), class).await.unwrap();
        p.client
            .sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    settle(&mut p).await;
    let got = drain(&mut p.server_receiver, Duration::from_millis(1500)).await;
    assert_eq!(got.len(), 200, "each exactly once");
    let mut last: HashMap<String, u32> = HashMap::new();
    for bytes in &got {
        let (tag, n) = parse(bytes);
        if let Some(previous) = last.insert(tag.clone(), n) {
            assert!(n > previous, "{tag}: {n} after {previous}");
        }
    }
}

#[tokio::test]
async fn server_to_client_classes_work_the_same_way() {
    let mut p = pair(lossy(0.0), lossy(0.2), 9, Tuning::default()).await;
    for i in 1..=100 {
        p.server_sender
            .send(msg("pos", i), &DeliveryClass::latest("pos"))
            .await
            .unwrap();
        p.server_sender
            .send(msg("chat", i), &DeliveryClass::ordered("chat"))
            .await
            .unwrap();
        p.server_sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    while let Some(at) = p.server_sender.next_deadline() {
        tokio::time::sleep_until(at).await;
        p.server_sender
            .on_timers(tokio::time::Instant::now())
            .await
            .unwrap();
    }
    let got = drain(&mut p.client.receiver, Duration::from_millis(1500)).await;
    let chat: Vec<u32> = got
        .iter()
        .map(|b| parse(b))
        .filter(|(t, _)| t == "chat")
        .map(|(_, n)| n)
        .collect();
    assert_eq!(chat, (1..=100).collect::<Vec<_>>());
    let pos: Vec<u32> = got
        .iter()
        .map(|b| parse(b))
        .filter(|(t, _)| t == "pos")
        .map(|(_, n)| n)
        .collect();
    assert!(pos.windows(2).all(|w| w[1] > w[0]));
    assert_eq!(pos.last(), Some(&100));
}

#[tokio::test]
async fn reconnecting_through_the_same_connector_resumes_with_0rtt() {
    let p = pair(lossy(0.0), lossy(0.0), 10, Tuning::default()).await;
    assert!(
        !p.client.zero_rtt,
        "the first connection is a full handshake"
    );
    // The server's session ticket arrives just after the handshake.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let endpoint = p.endpoint.clone();
    let server = tokio::spawn(async move {
        let conn = endpoint.accept().await.unwrap().await.unwrap();
        let handshake = metafi_quic::Handshake::accept(&conn, support::WAIT, 4096)
            .await
            .unwrap();
        let link = handshake
            .welcome(
                &metafi_quic::wire::Welcome {
                    session_id: "s2".into(),
                },
                std::sync::Arc::new(Tuning::default()),
            )
            .await
            .unwrap();
        (conn, link)
    });
    let again = p.connector.connect(&support::hello()).await.unwrap();
    assert_eq!(again.welcome.session_id, "s2");
    assert!(again.zero_rtt, "the hello went out as accepted 0-RTT data");
    let _server = server.await.unwrap();
}

//! Unit tests of the outbox: its bounds, presence merging, backpressure and wake-ups.

use std::sync::Arc;
use std::time::Duration;

use metafi_proto::realtime::{ChannelPresenceEvent, Envelope, Message, UserPresence};

use super::*;

/// An outbox bounded by `messages` only (bytes and age far away).
fn counted(messages: usize) -> Outbox {
    Outbox::new(
        OutboxLimits {
            max_messages: messages,
            ..OutboxLimits::default()
        },
        Format::Json,
    )
}

fn presence(session: &str) -> UserPresence {
    UserPresence {
        user_id: format!("user-{session}"),
        session_id: session.to_owned(),
        username: format!("name-{session}"),
        ..UserPresence::default()
    }
}

fn channel_event(channel: &str, joins: &[&str], leaves: &[&str]) -> Outbound {
    Outbound::new(Envelope::new(
        "",
        Message::ChannelPresenceEvent(ChannelPresenceEvent {
            channel_id: channel.to_owned(),
            joins: joins.iter().map(|s| presence(s)).collect(),
            leaves: leaves.iter().map(|s| presence(s)).collect(),
            ..ChannelPresenceEvent::default()
        }),
    ))
}

/// Everything the writer would write, decoded: (channel, joins, leaves) per event.
fn drain_events(outbox: &Outbox) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut events = Vec::new();
    while let Some(Next::Frame(frame)) = outbox.try_next() {
        let envelope = Format::Json.decode(&frame).unwrap();
        if let Some(Message::ChannelPresenceEvent(e)) = envelope.message {
            let ids = |list: Vec<UserPresence>| list.into_iter().map(|p| p.session_id).collect();
            events.push((e.channel_id, ids(e.joins), ids(e.leaves)));
        }
    }
    events
}

#[test]
fn overflow_drops_the_queue_and_closes() {
    let outbox = counted(2);
    assert_eq!(outbox.push(Bytes::from_static(b"a")), Pushed::Queued);
    assert_eq!(outbox.push(Bytes::from_static(b"b")), Pushed::Queued);
    assert_eq!(outbox.push(Bytes::from_static(b"c")), Pushed::Overflowed);
    assert_eq!(outbox.len(), 0, "queued messages are released at once");
    assert_eq!(outbox.push(Bytes::from_static(b"d")), Pushed::Closed);
    assert_eq!(
        outbox.try_next(),
        Some(Next::Close(CloseReason::OutgoingQueueFull {
            limit: QueueLimit::Messages(2)
        }))
    );
}

#[test]
fn a_close_delivers_what_was_queued_first() {
    let outbox = counted(8);
    outbox.push(Bytes::from_static(b"notice"));
    assert!(outbox.close(CloseReason::SingleSocket));
    assert!(!outbox.close(CloseReason::Shutdown), "first reason wins");
    assert_eq!(
        outbox.try_next(),
        Some(Next::Frame(Bytes::from_static(b"notice")))
    );
    assert_eq!(
        outbox.try_next(),
        Some(Next::Close(CloseReason::SingleSocket))
    );
}

#[test]
fn capacity_is_released_after_a_burst() {
    let outbox = counted(1000);
    for _ in 0..100 {
        outbox.push(Bytes::from_static(b"x"));
    }
    while let Some(Next::Frame(_)) = outbox.try_next() {}
    assert_eq!(outbox.state.lock().queue.capacity(), 0);
}

#[test]
fn a_batch_keeps_order_stops_at_max_and_leaves_the_close() {
    let outbox = counted(8);
    for frame in [b"1", b"2", b"3"] {
        outbox.push(Bytes::from_static(frame));
    }
    outbox.close(CloseReason::Shutdown);
    let mut batch = Vec::new();
    outbox.take_batch(2, &mut batch);
    assert_eq!(
        batch,
        vec![Bytes::from_static(b"1"), Bytes::from_static(b"2")]
    );
    batch.clear();
    outbox.take_batch(64, &mut batch);
    assert_eq!(batch, vec![Bytes::from_static(b"3")]);
    assert_eq!(outbox.try_next(), Some(Next::Close(CloseReason::Shutdown)));
}

#[test]
fn each_message_keeps_its_delivery_class() {
    let outbox = counted(4);
    outbox.push(Bytes::from_static(b"reply"));
    outbox.push_class(Bytes::from_static(b"pos"), DeliveryClass::latest("p"));
    assert_eq!(
        outbox.try_next_routed(),
        Some(NextRouted::Frame(
            Bytes::from_static(b"reply"),
            DeliveryClass::default_stream()
        ))
    );
    assert_eq!(
        outbox.try_next_routed(),
        Some(NextRouted::Frame(
            Bytes::from_static(b"pos"),
            DeliveryClass::latest("p")
        ))
    );
}

#[tokio::test]
async fn writer_and_reader_are_woken() {
    let outbox = Arc::new(counted(4));
    let writer = tokio::spawn({
        let outbox = outbox.clone();
        async move {
            let mut got = Vec::new();
            loop {
                match outbox.next().await {
                    Next::Frame(frame) => got.push(frame),
                    Next::Close(reason) => return (got, reason),
                }
            }
        }
    });
    let reader = tokio::spawn({
        let outbox = outbox.clone();
        async move { outbox.closed().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    outbox.push(Bytes::from_static(b"1"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    outbox.push(Bytes::from_static(b"2"));
    outbox.close(CloseReason::Shutdown);
    let (got, reason) = tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        got,
        vec![Bytes::from_static(b"1"), Bytes::from_static(b"2")]
    );
    assert_eq!(reason, CloseReason::Shutdown);
    tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
}

#[test]
fn a_burst_of_small_answers_is_queued_whole() {
    let outbox = Outbox::new(OutboxLimits::default(), Format::Json);
    for _ in 0..5_000 {
        assert_eq!(
            outbox.push(Bytes::from_static(br#"{"cid":"1","pong":{}}"#)),
            Pushed::Queued
        );
    }
    assert_eq!(outbox.len(), 5_000);
    assert_eq!(outbox.close_reason(), None);
}

#[test]
fn outbox_over_its_byte_bound_closes_a_client_that_does_not_read() {
    let outbox = Outbox::new(
        OutboxLimits {
            max_bytes: 10_000,
            ..OutboxLimits::default()
        },
        Format::Json,
    );
    let frame = Bytes::from(vec![b'x'; 1_000]);
    let mut pushed = 0;
    while outbox.push(frame.clone()) == Pushed::Queued {
        pushed += 1;
        assert!(pushed < 100, "the byte bound never closed the outbox");
    }
    assert!((5..10).contains(&pushed), "{pushed} frames of 1,000 bytes");
    assert_eq!(
        outbox.close_reason(),
        Some(CloseReason::OutgoingQueueFull {
            limit: QueueLimit::Bytes(10_000)
        })
    );
    assert_eq!(
        outbox.queued_bytes(),
        0,
        "queued messages are released at once"
    );
    // One message bigger than the bound still goes through an empty queue.
    let outbox = Outbox::new(
        OutboxLimits {
            max_bytes: 10_000,
            ..OutboxLimits::default()
        },
        Format::Json,
    );
    assert_eq!(outbox.push(Bytes::from(vec![b'y'; 50_000])), Pushed::Queued);
}

#[test]
fn outbox_whose_writer_takes_nothing_for_max_age_closes_and_progress_resets_the_age() {
    let outbox = Outbox::new(
        OutboxLimits {
            max_age: Duration::from_millis(1_000),
            ..OutboxLimits::default()
        },
        Format::Json,
    );
    let frame = || Item::Frame(Bytes::from_static(b"x"), DeliveryClass::default_stream());
    assert_eq!(outbox.push_item_at(frame(), 10_000), Pushed::Queued);
    assert_eq!(outbox.push_item_at(frame(), 10_900), Pushed::Queued);
    // The writer takes one message at 10,900: progress, so the rest waits afresh.
    {
        let mut state = outbox.state.lock();
        let item = state.queue.pop_front().unwrap();
        outbox.taken(&mut state, item.cost(), 10_900);
    }
    assert_eq!(outbox.push_item_at(frame(), 11_800), Pushed::Queued);
    assert_eq!(outbox.close_reason(), None);
    // Nothing taken for a whole max_age: the client is not reading.
    assert_eq!(outbox.push_item_at(frame(), 11_900), Pushed::Overflowed);
    assert_eq!(
        outbox.close_reason(),
        Some(CloseReason::OutgoingQueueStalled { limit_ms: 1_000 })
    );
    // An empty queue has no age: a quiet socket is never "stalled".
    let outbox = Outbox::new(
        OutboxLimits {
            max_age: Duration::from_millis(1_000),
            ..OutboxLimits::default()
        },
        Format::Json,
    );
    assert_eq!(outbox.push_item_at(frame(), 0), Pushed::Queued);
    assert!(outbox.try_next().is_some());
    assert_eq!(outbox.push_item_at(frame(), 1_000_000), Pushed::Queued);
}

#[test]
fn mass_leaves_waiting_in_an_outbox_merge_into_few_events_listing_every_leave() {
    let outbox = counted(64);
    let leavers: Vec<String> = (0..999).map(|i| format!("s{i}")).collect();
    for leaver in &leavers {
        let event = channel_event("2...lobby", &[], &[leaver]);
        assert_eq!(outbox.push_outbound(&event), Pushed::Queued);
    }
    assert!(outbox.len() <= 1, "{} queued events", outbox.len());
    let events = drain_events(&outbox);
    let seen: Vec<String> = events.iter().flat_map(|e| e.2.clone()).collect();
    assert_eq!(seen, leavers, "every leave, in order");
    assert!(events.iter().all(|e| e.0 == "2...lobby" && e.1.is_empty()));
}

#[test]
fn presence_events_merge_only_within_their_stream_and_never_past_other_messages() {
    let outbox = counted(64);
    outbox.push_outbound(&channel_event("a", &[], &["1"]));
    outbox.push_outbound(&channel_event("b", &[], &["2"]));
    // Skips b's event to join a's: independent streams.
    outbox.push_outbound(&channel_event("a", &[], &["3"]));
    outbox.push(Bytes::from_static(br#"{"channel_message":{}}"#));
    // A message in between: a's next event must come after it.
    outbox.push_outbound(&channel_event("a", &["4"], &[]));
    // The same session again (a re-join after a leave) stays a separate, later event.
    outbox.push_outbound(&channel_event("a", &[], &["4"]));
    let events = drain_events(&outbox);
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        events,
        vec![
            ("a".into(), vec![], strings(&["1", "3"])),
            ("b".into(), vec![], strings(&["2"])),
            ("a".into(), strings(&["4"]), vec![]),
            ("a".into(), vec![], strings(&["4"])),
        ]
    );
}

#[test]
fn a_single_presence_event_reuses_the_shared_encoding() {
    let outbox = counted(8);
    let event = channel_event("a", &["1"], &[]);
    outbox.push_outbound(&event);
    let Some(Next::Frame(frame)) = outbox.try_next() else {
        panic!("nothing queued")
    };
    assert_eq!(frame.as_ptr(), event.bytes(Format::Json).as_ptr());
}

#[tokio::test]
async fn the_reader_waits_while_answers_pile_up_and_goes_on_once_they_are_taken() {
    let outbox = Arc::new(Outbox::new(
        OutboxLimits {
            max_bytes: 8_000,
            ..OutboxLimits::default()
        },
        Format::Json,
    ));
    for _ in 0..4 {
        outbox.push(Bytes::from(vec![b'x'; 500]));
    }
    let reader = tokio::spawn({
        let outbox = outbox.clone();
        async move { outbox.writable().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!reader.is_finished(), "2 KB queued: over an eighth of 8 KB");
    assert!(
        outbox.is_reader_held(),
        "the transport sees the hold (and stops the client's silence clocks)"
    );
    let mut batch = Vec::new();
    outbox.take_batch(64, &mut batch);
    let waited = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the reader is woken once the writer took the answers")
        .unwrap();
    assert!(waited, "it says it waited, so the silence clocks restart");
    assert!(!outbox.is_reader_held());
    assert!(!outbox.writable().await, "with room it does not wait");
}

#[tokio::test]
async fn the_reader_also_waits_on_many_small_answers() {
    let outbox = Arc::new(counted(64));
    for _ in 0..9 {
        outbox.push(Bytes::from_static(b"{}"));
    }
    let reader = tokio::spawn({
        let outbox = outbox.clone();
        async move { outbox.writable().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!reader.is_finished(), "9 queued: over an eighth of 64");
    assert!(outbox.try_next().is_some());
    tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("8 queued: the reader goes on")
        .unwrap();
}

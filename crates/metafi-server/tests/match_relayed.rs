//! Relayed matches and the matchmaker over real sockets: create, join, data to everyone or to
//! chosen presences, presence events, leave and disconnect, `GET /v2/match`, tickets that form a
//! match and are joined with their token, tickets that die with their session.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use metafi_proto::realtime::{
    Envelope, ErrorCode, Match, MatchCreate, MatchDataSend, MatchJoin, MatchJoinId, MatchLeave,
    MatchmakerAdd, MatchmakerMatchedId, MatchmakerRemove, Message, UserPresence,
};
use metafi_testkit::{Http, TestNode};
use metafi_testkit::{Socket, User, user};

async fn server(dir: &std::path::Path) -> TestNode {
    TestNode::start_in(dir, |raw| {
        raw.matchmaker.interval_sec = 1;
        raw.matchmaker.max_intervals = 1;
    })
    .await
}

async fn connect(s: &TestNode, who: &User, format: &str) -> Socket {
    Socket::connect(&s.base, &who.token, format).await
}

fn as_match(e: Envelope) -> Match {
    match e.message {
        Some(Message::Match(m)) => m,
        other => panic!("expected a match, got {other:?}"),
    }
}

fn join_by_id(id: &str) -> Message {
    Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::MatchId(id.into())),
        metadata: HashMap::new(),
    })
}

fn data(match_id: &str, op_code: i64, payload: &'static [u8], to: Vec<UserPresence>) -> Message {
    Message::MatchDataSend(MatchDataSend {
        match_id: match_id.into(),
        op_code,
        data: Bytes::from_static(payload),
        presences: to,
        reliable: true,
        delivery: None,
    })
}

fn is_data(e: &Envelope, op: i64) -> bool {
    matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == op)
}

fn is_presence(e: &Envelope, joins: usize, leaves: usize) -> bool {
    matches!(&e.message, Some(Message::MatchPresenceEvent(ev)) if ev.joins.len() == joins && ev.leaves.len() == leaves)
}

#[tokio::test]
async fn relayed_matches_carry_data_and_presences_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (alice, bob, carol) = (user(&http).await, user(&http).await, user(&http).await);
    let mut a = connect(&s, &alice, "").await;
    let mut b = connect(&s, &bob, "format=protobuf").await;
    let mut c = connect(&s, &carol, "").await;

    let created = as_match(
        a.request(Message::MatchCreate(MatchCreate::default()))
            .await,
    );
    assert!(
        created.match_id.ends_with('.'),
        "relayed ids end with a dot: {}",
        created.match_id
    );
    assert!(!created.authoritative);
    assert_eq!(created.size, 1);
    assert_eq!(created.self_presence.as_ref().unwrap().user_id, alice.id);
    // The creator hears its own join, after the answer.
    a.event(|e| is_presence(e, 1, 0)).await;

    let joined = as_match(b.request(join_by_id(&created.match_id)).await);
    assert_eq!(joined.presences.len(), 1, "the others, without itself");
    assert_eq!(joined.presences[0].user_id, alice.id);
    let bob_presence = b.event(|e| is_presence(e, 1, 0)).await;
    a.event(|e| is_presence(e, 1, 0)).await;
    let bob_presence = match bob_presence.message {
        Some(Message::MatchPresenceEvent(ev)) => ev.joins[0].clone(),
        _ => unreachable!(),
    };
    as_match(c.request(join_by_id(&created.match_id)).await);

    // To everyone else (not back to the sender).
    a.send(&Envelope::new(
        "",
        data(&created.match_id, 5, b"hello", vec![]),
    ))
    .await;
    let got = b.event(|e| is_data(e, 5)).await;
    match got.message {
        Some(Message::MatchData(d)) => {
            assert_eq!(d.data, Bytes::from_static(b"hello"));
            assert_eq!(d.presence.unwrap().user_id, alice.id);
            assert_eq!(d.match_id, created.match_id);
        }
        _ => unreachable!(),
    }
    c.event(|e| is_data(e, 5)).await;
    a.assert_no_event(Duration::from_millis(200), |e| is_data(e, 5))
        .await;

    // To chosen presences only.
    a.send(&Envelope::new(
        "",
        data(&created.match_id, 6, b"psst", vec![bob_presence]),
    ))
    .await;
    b.event(|e| is_data(e, 6)).await;
    c.assert_no_event(Duration::from_millis(300), |e| is_data(e, 6))
        .await;

    // Listed, with its size.
    let listed = http
        .send(
            http.get("/v2/match?limit=10&authoritative=false")
                .bearer_auth(&alice.token),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.body["matches"][0]["match_id"],
        created.match_id.as_str()
    );
    assert_eq!(listed.body["matches"][0]["size"], 3);

    // Leaving tells the others; a disconnect too.
    let ack = b
        .request(Message::MatchLeave(MatchLeave {
            match_id: created.match_id.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    a.event(|e| is_presence(e, 0, 1)).await;
    drop(c);
    a.event(|e| is_presence(e, 0, 1)).await;
    // Bob is out: his data goes nowhere.
    b.send(&Envelope::new(
        "",
        data(&created.match_id, 7, b"ghost", vec![]),
    ))
    .await;
    a.assert_no_event(Duration::from_millis(300), |e| is_data(e, 7))
        .await;
    s.stop().await;
}

#[tokio::test]
async fn bad_match_requests_get_nakamas_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let alice = user(&http).await;
    let mut a = connect(&s, &alice, "").await;
    let (code, message) = a.request_error(join_by_id("not-a-match")).await;
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::BadInput as i32, "Invalid match ID")
    );
    let missing = format!("{}.", uuid::Uuid::new_v4());
    let (code, message) = a.request_error(join_by_id(&missing)).await;
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::MatchNotFound as i32, "Match not found")
    );
    let missing = format!("{}.metafi", uuid::Uuid::new_v4());
    let (code, _) = a.request_error(join_by_id(&missing)).await;
    assert_eq!(code, ErrorCode::MatchNotFound as i32);
    let (code, message) = a
        .request_error(Message::MatchJoin(MatchJoin {
            id: Some(MatchJoinId::Token("forged".into())),
            metadata: HashMap::new(),
        }))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::BadInput as i32, "Invalid match token")
    );
    let (code, message) = a
        .request_error(Message::MatchmakerAdd(MatchmakerAdd {
            min_count: 1,
            max_count: 2,
            ..MatchmakerAdd::default()
        }))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (
            ErrorCode::BadInput as i32,
            "Invalid minimum count, must be >= 2"
        )
    );
    let (code, message) = a
        .request_error(Message::MatchmakerRemove(MatchmakerRemove {
            ticket: "nope".into(),
        }))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::BadInput as i32, "Matchmaker ticket not found")
    );
    let reply = http
        .send(http.get("/v2/match?limit=0").bearer_auth(&alice.token))
        .await;
    assert_eq!(reply.status, 400);
    let reply = http
        .send(
            http.get("/v2/match?query=%2Blabel.a%3A%2Fx%2F")
                .bearer_auth(&alice.token),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("regular expressions")
    );
    s.stop().await;
}

#[tokio::test]
async fn matchmaker_forms_a_match_joined_with_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (alice, bob, carol) = (user(&http).await, user(&http).await, user(&http).await);
    let mut a = connect(&s, &alice, "").await;
    let mut b = connect(&s, &bob, "format=protobuf").await;
    let mut c = connect(&s, &carol, "").await;
    let add = |region: &str| {
        Message::MatchmakerAdd(MatchmakerAdd {
            min_count: 2,
            max_count: 2,
            query: format!("+properties.region:{region}"),
            string_properties: HashMap::from([("region".to_owned(), region.to_owned())]),
            ..MatchmakerAdd::default()
        })
    };
    let ticket_of = |e: Envelope| match e.message {
        Some(Message::MatchmakerTicket(t)) => t.ticket,
        other => panic!("expected a ticket, got {other:?}"),
    };
    let ta = ticket_of(a.request(add("eu")).await);
    let tb = ticket_of(b.request(add("eu")).await);
    let tc = ticket_of(c.request(add("us")).await);
    assert!(!ta.is_empty() && ta != tb);

    let matched = |e: &Envelope| matches!(e.message, Some(Message::MatchmakerMatched(_)));
    let ma = a.event(matched).await;
    let mb = b.event(matched).await;
    let (Some(Message::MatchmakerMatched(ma)), Some(Message::MatchmakerMatched(mb))) =
        (ma.message, mb.message)
    else {
        unreachable!()
    };
    assert_eq!(ma.ticket, ta);
    assert_eq!(mb.ticket, tb);
    assert_eq!(ma.users.len(), 2);
    assert_eq!(ma.self_user.unwrap().presence.unwrap().user_id, alice.id);
    assert_eq!(
        ma.users[0]
            .string_properties
            .get("region")
            .map(String::as_str),
        Some("eu")
    );
    let Some(MatchmakerMatchedId::Token(token)) = ma.id.clone() else {
        panic!("no hook: players get a token, got {:?}", ma.id)
    };
    assert_eq!(ma.id, mb.id, "both get the same token");
    c.assert_no_event(Duration::from_millis(1500), matched)
        .await;

    let join_token = Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::Token(token)),
        metadata: HashMap::new(),
    });
    let first = as_match(a.request(join_token.clone()).await);
    let second = as_match(b.request(join_token).await);
    assert_eq!(first.match_id, second.match_id);
    assert_eq!(second.presences.len(), 1);
    b.send(&Envelope::new("", data(&second.match_id, 1, b"gg", vec![])))
        .await;
    a.event(|e| is_data(e, 1)).await;

    // Carol's ticket dies with her socket; a removed ticket is gone.
    let removed = c
        .request(Message::MatchmakerRemove(MatchmakerRemove {
            ticket: tc.clone(),
        }))
        .await;
    assert!(removed.message.is_none(), "{removed:?}");
    let (code, _) = c
        .request_error(Message::MatchmakerRemove(MatchmakerRemove { ticket: tc }))
        .await;
    assert_eq!(code, ErrorCode::BadInput as i32);
    ticket_of(c.request(add("us")).await);
    drop(c);
    let mut d = connect(&s, &user(&http).await, "").await;
    ticket_of(d.request(add("us")).await);
    d.assert_no_event(Duration::from_millis(2500), matched)
        .await;
    s.stop().await;
}

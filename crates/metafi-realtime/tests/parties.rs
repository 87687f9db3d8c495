//! Parties over the realtime layer, without a transport: sessions on a [`Realtime`] with
//! parties and the matchmaker, requests through `handle`, and what each client would receive
//! read back from its outbox (JSON and protobuf sessions mixed, so both codecs carry every
//! party message).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use metafi_core::{Channels, CoreError, NoGroups, RpcContext, RpcDispatch, SystemClock};
use metafi_match::{MatchConfig, Matches, MatchmakerConfig, Matchmaking, SystemMonotonic};
use metafi_proto::realtime::{
    Envelope, Format, MatchmakerMatchedId, Message, PartyAccept, PartyClose, PartyCreate,
    PartyDataSend, PartyJoin, PartyJoinRequestList, PartyLeave, PartyMatchmakerAdd,
    PartyMatchmakerRemove, PartyPromote, PartyRemove, PartyUpdate, UserPresence,
};
use metafi_realtime::{
    MatchOutlet, MatchServices, Next, Parties, PartyConfig, Realtime, RealtimeConfig,
    RealtimeParts, RealtimeServices, Session, SessionParams,
};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

#[derive(Debug)]
struct NoRpcs;

#[async_trait]
impl RpcDispatch for NoRpcs {
    async fn call(&self, _: &str, _: RpcContext, _: String) -> Result<String, CoreError> {
        Err(CoreError::not_found("RPC function not found"))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    realtime: Realtime,
    matchmaking: Arc<Matchmaking>,
}

impl Fixture {
    fn new(config: PartyConfig) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.path().join("metafi.db"),
                readers: 1,
                ..SqliteConfig::default()
            })
            .unwrap(),
        );
        let clock = Arc::new(SystemClock);
        let parts = RealtimeParts::local();
        let outlet = Arc::new(MatchOutlet::new(
            parts.registry.clone(),
            parts.router.clone(),
        ));
        let (matches, _seeds) = Matches::new(
            MatchConfig::default(),
            "node1",
            outlet,
            Arc::new(SystemMonotonic),
            clock.clone(),
        );
        let matchmaking = Arc::new(Matchmaking::new(
            MatchmakerConfig::default(),
            b"token-key",
            clock.clone(),
        ));
        let realtime = Realtime::with_parts(
            RealtimeConfig::default(),
            RealtimeServices {
                channels: Arc::new(Channels::new(
                    store.clone(),
                    Arc::new(NoGroups),
                    clock.clone(),
                )),
                store,
                rpc: Arc::new(NoRpcs),
                clock,
            },
            parts,
        )
        .with_matches(MatchServices {
            matches,
            matchmaking: matchmaking.clone(),
        })
        .with_parties(Arc::new(Parties::new("node1", config)));
        Fixture {
            _dir: dir,
            realtime,
            matchmaking,
        }
    }

    fn open(&self, name: &str, format: Format) -> Arc<Session> {
        self.realtime.open(SessionParams {
            user_id: Uuid::new_v4(),
            username: name.to_owned(),
            vars: HashMap::new(),
            expires_at: i64::MAX,
            client_addr: None,
            lang: None,
            format,
            appear_online: false,
        })
    }

    /// Sends `message` with cid "1"; returns the answer and everything else the sender got.
    async fn request(&self, session: &Arc<Session>, message: Message) -> (Envelope, Vec<Envelope>) {
        self.realtime
            .handle(session, Envelope::new("1", message))
            .await
            .unwrap();
        let mut all = received(session);
        let at = all
            .iter()
            .position(|e| e.cid == "1")
            .expect("an answer with the request's cid");
        let answer = all.remove(at);
        (answer, all)
    }

    async fn create(&self, leader: &Arc<Session>, open: bool, max_size: i32) -> String {
        let (answer, _) = self
            .request(
                leader,
                Message::PartyCreate(PartyCreate {
                    open,
                    max_size,
                    ..PartyCreate::default()
                }),
            )
            .await;
        match answer.message {
            Some(Message::Party(party)) => party.party_id,
            other => panic!("expected a party, got {other:?}"),
        }
    }
}

fn received(session: &Session) -> Vec<Envelope> {
    let mut out = Vec::new();
    while let Some(Next::Frame(frame)) = session.outbox().try_next() {
        out.push(session.format().decode(&frame).unwrap());
    }
    out
}

fn presence(session: &Session) -> UserPresence {
    UserPresence {
        user_id: session.user_id().to_string(),
        session_id: session.id().to_string(),
        username: session.username().to_owned(),
        persistence: false,
        status: None,
    }
}

fn error_of(envelope: &Envelope) -> (i32, String) {
    match &envelope.message {
        Some(Message::Error(e)) => (e.code, e.message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn names(envelopes: &[Envelope]) -> Vec<&'static str> {
    envelopes.iter().map(Envelope::name).collect()
}

#[tokio::test]
async fn create_and_join_an_open_party_in_both_formats() {
    let f = Fixture::new(PartyConfig::default());
    let a = f.open("alice", Format::Json);
    let b = f.open("bob", Format::Protobuf);
    let (answer, events) = f
        .request(
            &a,
            Message::PartyCreate(PartyCreate {
                open: true,
                max_size: 4,
                label: r#"{"mode":"duo"}"#.into(),
                hidden: false,
            }),
        )
        .await;
    let Some(Message::Party(party)) = answer.message else {
        panic!("no party");
    };
    assert!(party.party_id.ends_with(".node1"));
    assert_eq!(party.leader, Some(presence(&a)));
    assert_eq!(party.self_presence, Some(presence(&a)));
    assert_eq!(party.presences, vec![presence(&a)]);
    assert_eq!((party.open, party.max_size), (true, 4));
    assert_eq!(party.label, r#"{"mode":"duo"}"#);
    assert_eq!(
        names(&events),
        ["party_presence_event"],
        "the creator sees its own join"
    );

    let (answer, events) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: party.party_id.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none(), "a join is acknowledged bare");
    assert_eq!(names(&events), ["party", "party_presence_event"]);
    let Some(Message::Party(joined)) = &events[0].message else {
        panic!("no party");
    };
    assert_eq!(joined.presences, vec![presence(&a), presence(&b)]);
    assert_eq!(joined.self_presence, Some(presence(&b)));
    assert_eq!(joined.leader, Some(presence(&a)));
    let seen = received(&a);
    assert_eq!(names(&seen), ["party_presence_event"]);
    let Some(Message::PartyPresenceEvent(event)) = &seen[0].message else {
        panic!("no event");
    };
    assert_eq!(event.joins, vec![presence(&b)]);
    assert_eq!(event.party_id, party.party_id);
}

#[tokio::test]
async fn refusals_carry_nakamas_codes_and_texts() {
    let f = Fixture::new(PartyConfig {
        max_parties: 1,
        max_size: 8,
    });
    let a = f.open("alice", Format::Json);
    let b = f.open("bob", Format::Json);
    let (answer, _) = f
        .request(
            &a,
            Message::PartyCreate(PartyCreate {
                max_size: 300,
                ..PartyCreate::default()
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Invalid party max size, must be 1-8".into())
    );
    let (answer, _) = f
        .request(
            &a,
            Message::PartyCreate(PartyCreate {
                max_size: 2,
                label: "[]".into(),
                ..PartyCreate::default()
            }),
        )
        .await;
    let (code, message) = error_of(&answer);
    assert_eq!(code, 3);
    assert!(message.starts_with("Error creating party: failed to unmarshal party label"));

    let id = f.create(&a, true, 2).await;
    let (answer, _) = f
        .request(
            &b,
            Message::PartyCreate(PartyCreate {
                max_size: 2,
                ..PartyCreate::default()
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            0,
            "Error creating party: too many parties: this server holds at most 1 (party.max_parties)"
                .into()
        )
    );
    let (answer, _) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: "nope".into(),
            }),
        )
        .await;
    assert_eq!(error_of(&answer), (3, "Invalid party ID".into()));
    let (answer, _) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: format!("{}.node1", Uuid::new_v4()),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error joining party: party not found".into())
    );
    let other_node = id.replace(".node1", ".node2");
    let (answer, _) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: other_node,
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error joining party: party not found".into())
    );
    let (answer, _) = f
        .request(
            &b,
            Message::PartyPromote(PartyPromote {
                party_id: id.clone(),
                presence: None,
            }),
        )
        .await;
    assert_eq!(error_of(&answer), (3, "Invalid presence".into()));
    let (answer, _) = f
        .request(
            &b,
            Message::PartyClose(PartyClose {
                party_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error closing party: party leader only".into())
    );
    let (answer, _) = f
        .request(
            &b,
            Message::PartyDataSend(PartyDataSend {
                party_id: id.clone(),
                op_code: 1,
                data: bytes::Bytes::from_static(b"x"),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error sending party data: party member not found".into())
    );
    let (answer, _) = f
        .request(
            &a,
            Message::PartyUpdate(PartyUpdate {
                party_id: id.clone(),
                label: r#"{"a":1}"#.into(),
                open: true,
                hidden: true,
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error updating party: party is hidden and label is not empty, invalid operation"
                .into()
        )
    );
    // Full.
    f.request(
        &b,
        Message::PartyJoin(PartyJoin {
            party_id: id.clone(),
        }),
    )
    .await;
    let c = f.open("carol", Format::Json);
    let (answer, _) = f
        .request(
            &c,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error joining party: party full".into())
    );
}

#[tokio::test]
async fn a_closed_party_takes_members_through_the_leader() {
    let f = Fixture::new(PartyConfig::default());
    let a = f.open("alice", Format::Protobuf);
    let b = f.open("bob", Format::Json);
    let c = f.open("carol", Format::Json);
    let id = f.create(&a, false, 4).await;
    received(&a);
    let (answer, events) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    assert!(events.is_empty(), "a request is not membership");
    let at_leader = received(&a);
    assert_eq!(names(&at_leader), ["party_join_request"]);
    let Some(Message::PartyJoinRequest(request)) = &at_leader[0].message else {
        panic!("no request");
    };
    assert_eq!(request.presences, vec![presence(&b)]);
    let (answer, _) = f
        .request(
            &b,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error joining party: party join request duplicate".into()
        )
    );
    f.request(
        &c,
        Message::PartyJoin(PartyJoin {
            party_id: id.clone(),
        }),
    )
    .await;
    received(&a);

    // Only the leader lists, accepts and refuses.
    let (answer, _) = f
        .request(
            &b,
            Message::PartyJoinRequestList(PartyJoinRequestList {
                party_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error listing party join requests: party leader only".into()
        )
    );
    let (answer, _) = f
        .request(
            &a,
            Message::PartyJoinRequestList(PartyJoinRequestList {
                party_id: id.clone(),
            }),
        )
        .await;
    let Some(Message::PartyJoinRequest(list)) = answer.message else {
        panic!("no list");
    };
    assert_eq!(list.presences, vec![presence(&b), presence(&c)]);
    let (answer, _) = f
        .request(
            &b,
            Message::PartyAccept(PartyAccept {
                party_id: id.clone(),
                presence: Some(presence(&b)),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error accepting party join request: party leader only".into()
        )
    );
    let (answer, events) = f
        .request(
            &a,
            Message::PartyAccept(PartyAccept {
                party_id: id.clone(),
                presence: Some(presence(&b)),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    assert_eq!(names(&events), ["party_presence_event"]);
    assert_eq!(names(&received(&b)), ["party", "party_presence_event"]);
    // Refusing carol's request: she hears nothing, the list empties.
    let (answer, _) = f
        .request(
            &a,
            Message::PartyRemove(PartyRemove {
                party_id: id.clone(),
                presence: Some(presence(&c)),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    assert!(received(&c).is_empty());
    let (answer, _) = f
        .request(
            &a,
            Message::PartyJoinRequestList(PartyJoinRequestList {
                party_id: id.clone(),
            }),
        )
        .await;
    let Some(Message::PartyJoinRequest(list)) = answer.message else {
        panic!("no list");
    };
    assert!(list.presences.is_empty());
}

#[tokio::test]
async fn data_promote_remove_and_close() {
    let f = Fixture::new(PartyConfig::default());
    let a = f.open("alice", Format::Json);
    let b = f.open("bob", Format::Protobuf);
    let c = f.open("carol", Format::Json);
    let id = f.create(&a, true, 4).await;
    for s in [&b, &c] {
        f.request(
            s,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    }
    for s in [&a, &b, &c] {
        received(s);
    }
    // Data without a cid, as nakama-js sends it: no answer, the others receive it.
    f.realtime
        .handle(
            &b,
            Envelope::new(
                "",
                Message::PartyDataSend(PartyDataSend {
                    party_id: id.clone(),
                    op_code: 42,
                    data: bytes::Bytes::from_static(b"{\"hp\":3}"),
                }),
            ),
        )
        .await
        .unwrap();
    assert!(received(&b).is_empty());
    for s in [&a, &c] {
        let got = received(s);
        let Some(Message::PartyData(data)) = &got[0].message else {
            panic!("no data: {got:?}");
        };
        assert_eq!((data.op_code, &data.data[..]), (42, &b"{\"hp\":3}"[..]));
        assert_eq!(data.presence, Some(presence(&b)));
    }
    // Promote bob: everyone hears who leads.
    let (answer, events) = f
        .request(
            &a,
            Message::PartyPromote(PartyPromote {
                party_id: id.clone(),
                presence: Some(presence(&b)),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    assert_eq!(names(&events), ["party_leader"]);
    assert_eq!(names(&received(&c)), ["party_leader"]);
    received(&b);
    // Bob removes carol: she is told the party closed for her, the others see her leave.
    let (answer, _) = f
        .request(
            &b,
            Message::PartyRemove(PartyRemove {
                party_id: id.clone(),
                presence: Some(presence(&b)),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error removing party member or join request: party cannot remove self".into()
        )
    );
    let (_, events) = f
        .request(
            &b,
            Message::PartyRemove(PartyRemove {
                party_id: id.clone(),
                presence: Some(presence(&c)),
            }),
        )
        .await;
    assert_eq!(names(&events), ["party_presence_event"]);
    assert_eq!(names(&received(&c)), ["party_close"]);
    assert_eq!(names(&received(&a)), ["party_presence_event"]);
    // Bob closes: both members are told; the party is gone.
    let (answer, events) = f
        .request(
            &b,
            Message::PartyClose(PartyClose {
                party_id: id.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    assert_eq!(names(&events), ["party_close"]);
    assert_eq!(names(&received(&a)), ["party_close"]);
    assert!(f.realtime.parties().unwrap().is_empty());
    let (answer, _) = f
        .request(
            &c,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error joining party: party not found".into())
    );
}

#[tokio::test]
async fn the_leader_leaving_or_disconnecting_hands_over_and_the_last_closes() {
    let f = Fixture::new(PartyConfig::default());
    let a = f.open("alice", Format::Json);
    let b = f.open("bob", Format::Json);
    let c = f.open("carol", Format::Protobuf);
    let id = f.create(&a, true, 4).await;
    for s in [&b, &c] {
        f.request(
            s,
            Message::PartyJoin(PartyJoin {
                party_id: id.clone(),
            }),
        )
        .await;
    }
    for s in [&a, &b, &c] {
        received(s);
    }
    let (answer, _) = f
        .request(
            &a,
            Message::PartyLeave(PartyLeave {
                party_id: id.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    for s in [&b, &c] {
        let got = received(s);
        assert_eq!(names(&got), ["party_presence_event", "party_leader"]);
        let Some(Message::PartyLeader(leader)) = &got[1].message else {
            panic!("no leader");
        };
        assert_eq!(
            leader.presence,
            Some(presence(&b)),
            "the oldest member leads"
        );
    }
    // Bob's socket ends: carol leads, alone.
    f.realtime
        .end(&b, metafi_realtime::CloseReason::ClientClosed);
    let got = received(&c);
    assert_eq!(names(&got), ["party_presence_event", "party_leader"]);
    let parties = f.realtime.parties().unwrap();
    assert_eq!(parties.len(), 1);
    // Leaving twice, or a party one is not in, is acknowledged all the same.
    let (answer, _) = f
        .request(
            &a,
            Message::PartyLeave(PartyLeave {
                party_id: id.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    f.request(
        &c,
        Message::PartyLeave(PartyLeave {
            party_id: id.clone(),
        }),
    )
    .await;
    assert!(
        parties.is_empty(),
        "the last member's leave closes the party"
    );
}

#[tokio::test]
async fn two_parties_of_two_matchmake_as_units() {
    let f = Fixture::new(PartyConfig::default());
    let (a1, a2) = (f.open("a1", Format::Json), f.open("a2", Format::Protobuf));
    let (b1, b2) = (f.open("b1", Format::Json), f.open("b2", Format::Json));
    let party_a = f.create(&a1, true, 2).await;
    let party_b = f.create(&b1, true, 2).await;
    f.request(
        &a2,
        Message::PartyJoin(PartyJoin {
            party_id: party_a.clone(),
        }),
    )
    .await;
    f.request(
        &b2,
        Message::PartyJoin(PartyJoin {
            party_id: party_b.clone(),
        }),
    )
    .await;
    for s in [&a1, &a2, &b1, &b2] {
        received(s);
    }
    let add = |party_id: &str| {
        Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
            party_id: party_id.to_owned(),
            min_count: 4,
            max_count: 4,
            query: "*".into(),
            ..PartyMatchmakerAdd::default()
        })
    };
    let (answer, _) = f.request(&a2, add(&party_a)).await;
    assert_eq!(
        error_of(&answer),
        (
            3,
            "Error adding party to matchmaker: party leader only".into()
        )
    );
    let (answer, _) = f
        .request(
            &a1,
            Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
                party_id: party_a.clone(),
                min_count: 1,
                max_count: 4,
                ..PartyMatchmakerAdd::default()
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Invalid minimum count, must be >= 2".into())
    );

    let (answer, _) = f.request(&a1, add(&party_a)).await;
    let Some(Message::PartyMatchmakerTicket(ticket_a)) = answer.message else {
        panic!("no ticket");
    };
    let told = received(&a2);
    let Some(Message::PartyMatchmakerTicket(told)) = &told[0].message else {
        panic!("the member is not told");
    };
    assert_eq!(told.ticket, ticket_a.ticket);
    // A member cannot cancel it as its own ticket; the leader can.
    let (answer, _) = f
        .request(
            &a2,
            Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
                party_id: party_a.clone(),
                ticket: ticket_a.ticket.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error closing party: party leader only".into())
    );
    let (answer, _) = f
        .request(
            &a1,
            Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
                party_id: party_a.clone(),
                ticket: ticket_a.ticket.clone(),
            }),
        )
        .await;
    assert!(answer.message.is_none());
    let (answer, _) = f
        .request(
            &a1,
            Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
                party_id: party_a.clone(),
                ticket: ticket_a.ticket.clone(),
            }),
        )
        .await;
    assert_eq!(
        error_of(&answer),
        (3, "Error closing party: matchmaker ticket not found".into())
    );
    assert!(f.matchmaking.is_empty());

    f.request(&a1, add(&party_a)).await;
    f.request(&b1, add(&party_b)).await;
    for s in [&a2, &b2] {
        received(s);
    }
    assert_eq!(f.matchmaking.len(), 2);
    let formed = f.matchmaking.pass().await;
    assert_eq!(formed.len(), 1);
    for group in &formed {
        f.realtime.send_matched(group);
    }
    let mut token = None;
    for (s, party) in [
        (&a1, &party_a),
        (&a2, &party_a),
        (&b1, &party_b),
        (&b2, &party_b),
    ] {
        let got = received(s);
        let Some(Message::MatchmakerMatched(matched)) = &got[0].message else {
            panic!("not matched: {got:?}");
        };
        assert_eq!(matched.users.len(), 4);
        assert_eq!(&matched.self_user.as_ref().unwrap().party_id, party);
        let Some(MatchmakerMatchedId::Token(t)) = &matched.id else {
            panic!("no token");
        };
        assert!(
            token.is_none() || token.as_ref() == Some(t),
            "one match for all"
        );
        token = Some(t.clone());
    }
    let stats = f.matchmaking.stats();
    assert_eq!((stats.tickets, stats.completions.len()), (0, 4));
}

#[tokio::test]
async fn a_membership_change_cancels_the_partys_tickets() {
    let f = Fixture::new(PartyConfig::default());
    let a = f.open("alice", Format::Json);
    let b = f.open("bob", Format::Json);
    let id = f.create(&a, true, 4).await;
    f.request(
        &a,
        Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
            party_id: id.clone(),
            min_count: 2,
            max_count: 4,
            ..PartyMatchmakerAdd::default()
        }),
    )
    .await;
    assert_eq!(f.matchmaking.len(), 1);
    f.request(
        &b,
        Message::PartyJoin(PartyJoin {
            party_id: id.clone(),
        }),
    )
    .await;
    assert!(
        f.matchmaking.is_empty(),
        "a join cancels the party's tickets"
    );
}

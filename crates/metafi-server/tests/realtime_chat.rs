//! Chat channels and status over real sockets: joins, messages, edits, presence events,
//! persistence and the REST history (`GET /v2/channel/{id}`), direct chats, status follows,
//! and what a disconnect leaves behind (nothing), observed through other clients.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_proto::realtime::{
    ChannelJoin, ChannelLeave, ChannelMessageRemove, ChannelMessageSend, ChannelMessageUpdate,
    Envelope, ErrorCode, Message, StatusFollow, StatusUnfollow, StatusUpdate, channel_type,
};
use metafi_proto::wkt::{bool_value, int32_value, string_value};
use metafi_testkit::{Http, TestNode};
use metafi_testkit::{Socket, User, user};

fn join(target: &str, kind: i32, persistence: bool) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: target.into(),
        r#type: kind,
        persistence: bool_value(persistence),
        hidden: None,
    })
}

fn send(channel_id: &str, content: &str) -> Message {
    Message::ChannelMessageSend(ChannelMessageSend {
        channel_id: channel_id.into(),
        content: content.into(),
    })
}

async fn joined(socket: &mut Socket, message: Message) -> metafi_proto::realtime::Channel {
    match socket.request(message).await.message {
        Some(Message::Channel(channel)) => channel,
        other => panic!("expected a channel, got {other:?}"),
    }
}

async fn ack(socket: &mut Socket, message: Message) -> metafi_proto::realtime::ChannelMessageAck {
    match socket.request(message).await.message {
        Some(Message::ChannelMessageAck(ack)) => ack,
        other => panic!("expected an ack, got {other:?}"),
    }
}

async fn history(http: &Http, who: &User, channel_id: &str, query: &str) -> metafi_testkit::Reply {
    http.send(
        http.get(&format!("/v2/channel/{channel_id}?{query}"))
            .bearer_auth(&who.token),
    )
    .await
}

fn is_presence(e: &Envelope, joins: usize, leaves: usize) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.joins.len() == joins && ev.leaves.len() == leaves)
}

#[tokio::test]
async fn room_chat_with_presence_events_edits_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (ann, bob) = (user(&http).await, user(&http).await);
    let mut a = Socket::connect(&server.base, &ann.token, "").await;
    let mut b = Socket::connect(&server.base, &bob.token, "format=protobuf").await;

    let channel = joined(&mut a, join("general", channel_type::ROOM, true)).await;
    assert_eq!(channel.id, "2...general");
    assert!(channel.presences.is_empty());
    assert_eq!(channel.self_presence.as_ref().unwrap().user_id, ann.id);
    let in_b = joined(&mut b, join("general", channel_type::ROOM, true)).await;
    assert_eq!(in_b.presences.len(), 1);
    assert_eq!(in_b.presences[0].username, ann.username);
    // A saw its own join first (as with Nakama), then Bob's.
    let own = a.event(|e| is_presence(e, 1, 0)).await;
    assert!(
        matches!(own.message, Some(Message::ChannelPresenceEvent(ev)) if ev.joins[0].user_id == ann.id)
    );
    let event = a.event(|e| is_presence(e, 1, 0)).await;
    let Some(Message::ChannelPresenceEvent(event)) = event.message else {
        unreachable!()
    };
    assert_eq!(
        (event.channel_id.as_str(), event.room_name.as_str()),
        ("2...general", "general")
    );
    assert_eq!(event.joins[0].username, bob.username);

    // Send: both members receive it, the sender before its ack.
    let sent = ack(&mut a, send(&channel.id, r#"{"text":"hello"}"#)).await;
    assert_eq!(sent.code, int32_value(0));
    assert_eq!(sent.persistent, bool_value(true));
    assert_eq!(sent.room_name, "general");
    let at_b = b
        .event(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
        .await;
    let Some(Message::ChannelMessage(message)) = at_b.message else {
        unreachable!()
    };
    assert_eq!(message.message_id, sent.message_id);
    assert_eq!(message.content, r#"{"text":"hello"}"#);
    assert_eq!(message.sender_id, ann.id);

    // Update and remove: relayed with codes 1 and 2; only the sender may do either.
    let updated = ack(
        &mut a,
        Message::ChannelMessageUpdate(ChannelMessageUpdate {
            channel_id: channel.id.clone(),
            message_id: sent.message_id.clone(),
            content: r#"{"text":"hello!"}"#.into(),
        }),
    )
    .await;
    assert_eq!(updated.code, int32_value(1));
    let (code, message) = b
        .request_error(Message::ChannelMessageUpdate(ChannelMessageUpdate {
            channel_id: channel.id.clone(),
            message_id: sent.message_id.clone(),
            content: r#"{"text":"hijack"}"#.into(),
        }))
        .await;
    assert_eq!(code, ErrorCode::BadInput as i32);
    assert_eq!(
        message,
        "Could not find message to update in channel history"
    );
    let second = ack(&mut b, send(&channel.id, r#"{"text":"second"}"#)).await;
    ack(&mut a, send(&channel.id, r#"{"text":"third"}"#)).await;
    let removed = ack(
        &mut b,
        Message::ChannelMessageRemove(ChannelMessageRemove {
            channel_id: channel.id.clone(),
            message_id: second.message_id.clone(),
        }),
    )
    .await;
    assert_eq!(removed.code, int32_value(2));
    let relayed = a
        .event(
            |e| matches!(&e.message, Some(Message::ChannelMessage(m)) if m.code == int32_value(2)),
        )
        .await;
    assert!(matches!(relayed.message, Some(Message::ChannelMessage(m)) if m.content == "{}"));

    // History over REST: two messages left, the edit applied, stored code still 0 (chat).
    let page = history(&http, &bob, "2...general", "limit=10").await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    let messages = page.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{}", page.body);
    assert_eq!(messages[0]["content"], r#"{"text":"hello!"}"#);
    assert_eq!(messages[0]["code"], 0);
    assert_eq!(messages[0]["persistent"], true);
    assert_eq!(messages[0]["room_name"], "general");
    assert_eq!(messages[1]["content"], r#"{"text":"third"}"#);
    assert!(
        page.body["cacheable_cursor"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );

    // Leave: the other member sees it; messages are refused afterwards.
    let left = b
        .request(Message::ChannelLeave(ChannelLeave {
            channel_id: channel.id.clone(),
        }))
        .await;
    assert_eq!(left.message, None, "a bare acknowledgement");
    a.event(|e| is_presence(e, 0, 1)).await;
    let (code, message) = b.request_error(send(&channel.id, "{}")).await;
    assert_eq!(code, ErrorCode::BadInput as i32);
    assert_eq!(message, "Must join channel before sending messages");
    let (code, _) = a.request_error(send(&channel.id, "[1]")).await;
    assert_eq!(
        code,
        ErrorCode::BadInput as i32,
        "content must be a JSON object"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_persistence_messages_are_relayed_but_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (ann, bob) = (user(&http).await, user(&http).await);
    let mut a = Socket::connect(&server.base, &ann.token, "").await;
    let mut b = Socket::connect(&server.base, &bob.token, "").await;
    let channel = joined(&mut a, join("ephemeral", channel_type::ROOM, false)).await;
    joined(&mut b, join("ephemeral", channel_type::ROOM, true)).await;
    let sent = ack(&mut a, send(&channel.id, r#"{"n":1}"#)).await;
    assert_eq!(sent.persistent, bool_value(false));
    let got = b
        .event(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
        .await;
    assert!(
        matches!(got.message, Some(Message::ChannelMessage(m)) if m.persistent == bool_value(false))
    );
    let stored = ack(&mut b, send(&channel.id, r#"{"n":2}"#)).await;
    let page = history(&http, &ann, &channel.id, "limit=100").await;
    let messages = page.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{}", page.body);
    assert_eq!(messages[0]["message_id"], stored.message_id);
    server.stop().await;
}

#[tokio::test]
async fn history_pages_with_cursors_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let ann = user(&http).await;
    let mut a = Socket::connect(&server.base, &ann.token, "").await;
    let channel = joined(&mut a, join("paged", channel_type::ROOM, true)).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(
            ack(&mut a, send(&channel.id, &format!(r#"{{"n":{n}}}"#)))
                .await
                .message_id,
        );
    }
    let ids_of = |body: &serde_json::Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| m["message_id"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let first = history(&http, &ann, &channel.id, "limit=2").await.body;
    assert_eq!(ids_of(&first), ids[..2]);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = history(
        &http,
        &ann,
        &channel.id,
        &format!("limit=2&cursor={cursor}"),
    )
    .await
    .body;
    assert_eq!(ids_of(&second), ids[2..4]);
    assert!(second["prev_cursor"].is_string());
    let cursor = second["next_cursor"].as_str().unwrap();
    let third = history(
        &http,
        &ann,
        &channel.id,
        &format!("limit=2&cursor={cursor}"),
    )
    .await
    .body;
    assert_eq!(ids_of(&third), ids[4..]);
    assert!(third.get("next_cursor").is_none(), "{third}");
    // The cacheable cursor resumes after the newest message seen.
    let cacheable = third["cacheable_cursor"].as_str().unwrap().to_owned();
    ids.push(
        ack(&mut a, send(&channel.id, r#"{"n":5}"#))
            .await
            .message_id,
    );
    let newer = history(
        &http,
        &ann,
        &channel.id,
        &format!("limit=10&cursor={cacheable}"),
    )
    .await
    .body;
    assert_eq!(ids_of(&newer), ids[5..]);

    let backward = history(&http, &ann, &channel.id, "limit=2&forward=false")
        .await
        .body;
    assert_eq!(ids_of(&backward), vec![ids[5].clone(), ids[4].clone()]);

    // Nakama's errors: bad limit, bad channel id, a cursor of another direction.
    for query in ["limit=0", "limit=101", "limit=x"] {
        let reply = history(&http, &ann, &channel.id, query).await;
        metafi_testkit::assert_error(&reply, 400, 3);
    }
    metafi_testkit::assert_error(&history(&http, &ann, "9.x.y.z", "").await, 400, 3);
    let wrong = history(
        &http,
        &ann,
        &channel.id,
        &format!("forward=false&cursor={cacheable}"),
    )
    .await;
    metafi_testkit::assert_error(&wrong, 400, 3);
    let anonymous = http
        .send(http.get(&format!("/v2/channel/{}", channel.id)))
        .await;
    metafi_testkit::assert_error(&anonymous, 401, 16);
    server.stop().await;
}

#[tokio::test]
async fn direct_chats_are_private_and_groups_do_not_exist_yet() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (ann, bob, eve) = (user(&http).await, user(&http).await, user(&http).await);
    let mut a = Socket::connect(&server.base, &ann.token, "").await;
    let mut b = Socket::connect(&server.base, &bob.token, "").await;
    let dm = joined(&mut a, join(&bob.id, channel_type::DIRECT_MESSAGE, true)).await;
    assert!(dm.id.starts_with("4."));
    let mut pair = [ann.id.clone(), bob.id.clone()];
    pair.sort();
    assert_eq!(
        (dm.user_id_one.clone(), dm.user_id_two.clone()),
        (pair[0].clone(), pair[1].clone())
    );
    // Bob is told that Ann wants to chat, and joins the same channel from his side.
    let invite = b
        .event(|e| matches!(e.message, Some(Message::Notifications(_))))
        .await;
    assert!(
        matches!(invite.message, Some(Message::Notifications(n)) if n.notifications[0].code == -1)
    );
    let same = joined(&mut b, join(&ann.id, channel_type::DIRECT_MESSAGE, true)).await;
    assert_eq!(same.id, dm.id);
    ack(&mut a, send(&dm.id, r#"{"psst":true}"#)).await;
    b.event(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
        .await;

    assert_eq!(history(&http, &bob, &dm.id, "limit=10").await.status, 200);
    let outsider = history(&http, &eve, &dm.id, "limit=10").await;
    metafi_testkit::assert_error(&outsider, 400, 3);
    assert_eq!(outsider.body["message"], "Channel not found.");

    let (code, message) = a
        .request_error(join(
            &uuid::Uuid::new_v4().to_string(),
            channel_type::DIRECT_MESSAGE,
            true,
        ))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (3, "User ID not found: Invalid channel target")
    );
    let group = uuid::Uuid::new_v4().to_string();
    let (code, message) = a
        .request_error(join(&group, channel_type::GROUP, true))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (3, "Group not found: Invalid channel target")
    );
    let listing = history(&http, &ann, &format!("3.{group}.."), "").await;
    metafi_testkit::assert_error(&listing, 400, 3);
    assert_eq!(listing.body["message"], "Group not found.");
    server.stop().await;
}

#[tokio::test]
async fn status_follow_update_unfollow_and_going_offline() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (fan, star) = (user(&http).await, user(&http).await);
    let mut f = Socket::connect(&server.base, &fan.token, "").await;
    let status = |presences| match presences {
        Some(Message::Status(s)) => s.presences,
        other => panic!("expected a status, got {other:?}"),
    };
    let before = f
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![star.id.clone()],
            usernames: vec![],
        }))
        .await;
    assert!(status(before.message).is_empty(), "not online yet");

    // Coming online with status=true: followers see the join, with an empty status.
    let mut s = Socket::connect(&server.base, &star.token, "status=true&format=protobuf").await;
    let online = f
        .event(|e| matches!(e.message, Some(Message::StatusPresenceEvent(_))))
        .await;
    let Some(Message::StatusPresenceEvent(online)) = online.message else {
        unreachable!()
    };
    assert_eq!(online.joins.len(), 1);
    assert_eq!(online.joins[0].user_id, star.id);
    assert_eq!(online.joins[0].status, string_value(""));

    // A status update: the new status joins, the old one leaves.
    assert_eq!(
        s.request(Message::StatusUpdate(StatusUpdate {
            status: string_value("in a match"),
        }))
        .await
        .message,
        None
    );
    let update = f
        .event(|e| matches!(e.message, Some(Message::StatusPresenceEvent(_))))
        .await;
    let Some(Message::StatusPresenceEvent(update)) = update.message else {
        unreachable!()
    };
    assert_eq!(update.joins[0].status, string_value("in a match"));
    assert_eq!(update.leaves[0].status, string_value(""));

    // A second follower that follows by username sees the current status at once.
    let other = user(&http).await;
    let mut o = Socket::connect(&server.base, &other.token, "").await;
    let now = o
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![],
            usernames: vec![star.username.clone()],
        }))
        .await;
    let now = status(now.message);
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].status, string_value("in a match"));

    // Unfollow: no more events for `f`.
    f.request(Message::StatusUnfollow(StatusUnfollow {
        user_ids: vec![star.id.clone()],
    }))
    .await;
    // An absent status means "appear offline": `o` sees the leave.
    s.request(Message::StatusUpdate(StatusUpdate { status: None }))
        .await;
    let offline = o
        .event(|e| matches!(e.message, Some(Message::StatusPresenceEvent(_))))
        .await;
    assert!(
        matches!(offline.message, Some(Message::StatusPresenceEvent(ev)) if ev.joins.is_empty() && ev.leaves.len() == 1)
    );
    f.assert_no_event(Duration::from_millis(300), |e| {
        matches!(e.message, Some(Message::StatusPresenceEvent(_)))
    })
    .await;

    // Online again, then a disconnect: followers see the user go offline.
    s.request(Message::StatusUpdate(StatusUpdate {
        status: string_value("back"),
    }))
    .await;
    o.event(
        |e| matches!(&e.message, Some(Message::StatusPresenceEvent(ev)) if ev.joins.len() == 1),
    )
    .await;
    drop(s);
    let gone = o.event(|e| matches!(&e.message, Some(Message::StatusPresenceEvent(ev)) if ev.leaves.len() == 1 && ev.joins.is_empty())).await;
    assert!(gone.cid.is_empty());
    let (code, _) = f
        .request_error(Message::StatusFollow(StatusFollow {
            user_ids: vec!["not-a-uuid".into()],
            usernames: vec![],
        }))
        .await;
    assert_eq!(code, ErrorCode::BadInput as i32);
    server.stop().await;
}

#[tokio::test]
async fn a_disconnect_leaves_no_presence_behind() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (gone, stays, late) = (user(&http).await, user(&http).await, user(&http).await);
    let mut g = Socket::connect(&server.base, &gone.token, "status=true").await;
    let mut s = Socket::connect(&server.base, &stays.token, "").await;
    joined(&mut g, join("club", channel_type::ROOM, true)).await;
    joined(&mut g, join("other", channel_type::ROOM, true)).await;
    g.request(Message::StatusFollow(StatusFollow {
        user_ids: vec![stays.id.clone()],
        usernames: vec![],
    }))
    .await;
    joined(&mut s, join("club", channel_type::ROOM, true)).await;
    s.request(Message::StatusFollow(StatusFollow {
        user_ids: vec![gone.id.clone()],
        usernames: vec![],
    }))
    .await;

    // The connection drops without a close handshake.
    drop(g);
    s.event(|e| is_presence(e, 0, 1)).await;
    s.event(
        |e| matches!(&e.message, Some(Message::StatusPresenceEvent(ev)) if ev.leaves.len() == 1),
    )
    .await;

    // A newcomer sees nobody left over, in either channel or in the status stream.
    let mut l = Socket::connect(&server.base, &late.token, "").await;
    let club = joined(&mut l, join("club", channel_type::ROOM, true)).await;
    assert_eq!(club.presences.len(), 1);
    assert_eq!(club.presences[0].user_id, stays.id);
    let other = joined(&mut l, join("other", channel_type::ROOM, true)).await;
    assert!(other.presences.is_empty(), "{other:?}");
    let statuses = l
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![gone.id.clone()],
            usernames: vec![],
        }))
        .await;
    assert!(matches!(statuses.message, Some(Message::Status(s)) if s.presences.is_empty()));
    server.stop().await;
}

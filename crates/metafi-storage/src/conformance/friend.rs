//! Friend edges: every state transition (invite, accept, block, delete), what is silently left
//! alone, the edge limit, listing order and cursor paging, friends of friends, cascades.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{AddOutcome, EdgeWrite, FriendOfFriend, FriendState, Storage};

const MAX: usize = 10_000;

async fn users(store: &dyn Storage, count: usize) -> Vec<Uuid> {
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let id = Uuid::new_v4();
        let mut user = new_user(&format!("u{}", id.simple()), device(&id.to_string()));
        user.id = id;
        store.create_user(user).await.expect("create user");
        ids.push(id);
    }
    ids
}

/// `user`'s edges as (other user, state), in listing order.
async fn edges(store: &dyn Storage, user: Uuid) -> Vec<(Uuid, FriendState)> {
    let page = store
        .list_friends(user, None, 1000, None)
        .await
        .expect("list friends");
    assert!(page.next.is_none());
    page.friends.iter().map(|f| (f.user.id, f.state)).collect()
}

async fn add(store: &dyn Storage, user: Uuid, ids: &[Uuid], at: i64) -> Vec<(Uuid, AddOutcome)> {
    match store
        .add_friends(user, ids, "{}", at, MAX)
        .await
        .expect("add friends")
    {
        EdgeWrite::Done(outcomes) => outcomes,
        EdgeWrite::OverLimit => panic!("unexpected limit"),
    }
}

async fn block(store: &dyn Storage, user: Uuid, ids: &[Uuid]) {
    let done = store
        .block_friends(user, ids, NOW + 50, MAX)
        .await
        .expect("block");
    assert_eq!(done, EdgeWrite::Done(()));
}

fn json(text: &str) -> serde_like::Value {
    serde_like::parse(text)
}

pub async fn friend_invite_then_accept(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 2).await;
    let (a, b) = (u[0], u[1]);
    let invited = store
        .add_friends(a, &[b, b], r#"{"from":"a","n":{"x":1}}"#, NOW, MAX)
        .await
        .expect("add");
    assert_eq!(invited, EdgeWrite::Done(vec![(b, AddOutcome::Invited)]));
    assert_eq!(edges(&*store, a).await, vec![(b, FriendState::InviteSent)]);
    assert_eq!(
        edges(&*store, b).await,
        vec![(a, FriendState::InviteReceived)]
    );
    // Asking again changes nothing.
    assert_eq!(
        add(&*store, a, &[b], NOW + 1).await,
        vec![(b, AddOutcome::Unchanged)]
    );

    let accepted = store
        .add_friends(b, &[a], r#"{"from":"b"}"#, NOW + 10, MAX)
        .await
        .expect("accept");
    assert_eq!(accepted, EdgeWrite::Done(vec![(a, AddOutcome::Accepted)]));
    let a_view = store.list_friends(a, None, 10, None).await.expect("list");
    let b_view = store.list_friends(b, None, 10, None).await.expect("list");
    assert_eq!(a_view.friends.len(), 1);
    assert_eq!(b_view.friends.len(), 1);
    let (ab, ba) = (&a_view.friends[0], &b_view.friends[0]);
    assert_eq!((ab.user.id, ab.state), (b, FriendState::Friend));
    assert_eq!((ba.user.id, ba.state), (a, FriendState::Friend));
    // The position stays the invite's; the update time is the accept's.
    assert_eq!((ab.position, ab.update_time_ms), (NOW, NOW + 10));
    assert_eq!((ba.position, ba.update_time_ms), (NOW, NOW + 10));
    assert_eq!(json(&ab.metadata), json(r#"{"from":"a","n":{"x":1}}"#));
    assert_eq!(json(&ba.metadata), json(r#"{"from":"b"}"#));
    assert!(!ab.user.username.is_empty());
    // Friends already: adding again changes nothing.
    assert_eq!(
        add(&*store, a, &[b], NOW + 20).await,
        vec![(b, AddOutcome::Unchanged)]
    );
    assert_eq!(
        add(&*store, b, &[a], NOW + 20).await,
        vec![(a, AddOutcome::Unchanged)]
    );
}

pub async fn friend_accept_merges_top_level_metadata(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 2).await;
    let (a, b) = (u[0], u[1]);
    add(&*store, a, &[b], NOW).await;
    // The accept merges the accepter's metadata into its received edge, nested values whole.
    store
        .add_friends(
            b,
            &[a],
            r#"{"k":{"deep":1},"z":2,"t":true,"f":false,"n":null,"s":"x","a":[1]}"#,
            NOW + 1,
            MAX,
        )
        .await
        .expect("accept");
    let page = store.list_friends(b, None, 10, None).await.expect("list");
    assert_eq!(
        json(&page.friends[0].metadata),
        json(r#"{"k":{"deep":1},"z":2,"t":true,"f":false,"n":null,"s":"x","a":[1]}"#)
    );
}

pub async fn friend_add_leaves_unknown_and_blocked_users_alone(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 4).await;
    let (a, blocker, blocked, free) = (u[0], u[1], u[2], u[3]);
    block(&*store, blocker, &[a]).await;
    block(&*store, a, &[blocked]).await;
    let ghost = Uuid::new_v4();
    let outcomes = add(&*store, a, &[ghost, blocker, blocked, free], NOW + 100).await;
    assert_eq!(
        outcomes,
        vec![
            (ghost, AddOutcome::Unchanged),
            (blocker, AddOutcome::Unchanged),
            (blocked, AddOutcome::Unchanged),
            (free, AddOutcome::Invited),
        ]
    );
    let mut mine = edges(&*store, a).await;
    mine.sort();
    let mut want = vec![
        (blocked, FriendState::Blocked),
        (free, FriendState::InviteSent),
    ];
    want.sort();
    assert_eq!(mine, want);
    assert_eq!(
        edges(&*store, blocker).await,
        vec![(a, FriendState::Blocked)]
    );
    assert!(edges(&*store, blocked).await.is_empty());
}

pub async fn friend_block_replaces_edge_and_removes_the_other_side(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 3).await;
    let (a, b, c) = (u[0], u[1], u[2]);
    add(&*store, a, &[b], NOW).await;
    add(&*store, b, &[a], NOW + 1).await;
    add(&*store, c, &[a], NOW + 2).await;
    block(&*store, a, &[b, c]).await;
    let mut mine = edges(&*store, a).await;
    mine.sort();
    let mut want = vec![(b, FriendState::Blocked), (c, FriendState::Blocked)];
    want.sort();
    assert_eq!(mine, want);
    assert!(edges(&*store, b).await.is_empty());
    assert!(edges(&*store, c).await.is_empty());
    // The blocked user blocks back: both blocks stand.
    block(&*store, b, &[a]).await;
    assert_eq!(edges(&*store, b).await, vec![(a, FriendState::Blocked)]);
    assert!(edges(&*store, a).await.contains(&(b, FriendState::Blocked)));
    // Unblocking (delete) removes only the caller's block.
    let told = store.delete_friends(a, &[b]).await.expect("delete");
    assert!(told.is_empty(), "an unblock tells nobody");
    assert_eq!(edges(&*store, a).await, vec![(c, FriendState::Blocked)]);
    assert_eq!(edges(&*store, b).await, vec![(a, FriendState::Blocked)]);
    // Blocking an unknown user writes nothing.
    block(&*store, c, &[Uuid::new_v4()]).await;
    assert!(edges(&*store, c).await.is_empty());
}

pub async fn friend_delete_removes_both_sides(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 4).await;
    let (a, b, c, d) = (u[0], u[1], u[2], u[3]);
    add(&*store, a, &[b, c], NOW).await;
    add(&*store, b, &[a], NOW + 1).await;
    add(&*store, d, &[a], NOW + 2).await;
    // A friend, an invite sent, an invite received, and a stranger.
    let stranger = Uuid::new_v4();
    let told = store
        .delete_friends(a, &[b, c, d, stranger, b])
        .await
        .expect("delete");
    assert_eq!(told, vec![b, c, d]);
    for user in [a, b, c, d] {
        assert!(edges(&*store, user).await.is_empty());
    }
    let again = store.delete_friends(a, &[b]).await.expect("delete again");
    assert!(again.is_empty());
}

pub async fn friend_list_pages_in_state_order(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 26).await;
    let a = u[0];
    let others = &u[1..];
    // States spread over the others; positions collide in pairs so the id breaks ties.
    for (n, &other) in others.iter().enumerate() {
        let at = NOW + (n / 2) as i64;
        match n % 4 {
            0 => {
                add(&*store, a, &[other], at).await;
            }
            1 => {
                add(&*store, other, &[a], at).await;
            }
            2 => {
                add(&*store, a, &[other], at).await;
                add(&*store, other, &[a], at + 1000).await;
            }
            _ => {
                store
                    .block_friends(a, &[other], at, MAX)
                    .await
                    .expect("block");
            }
        }
    }
    let all = store.list_friends(a, None, 1000, None).await.expect("list");
    assert_eq!(all.friends.len(), 25);
    let keys: Vec<_> = all
        .friends
        .iter()
        .map(|f| (f.state, f.position, f.user.id))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "listing order is (state, position, id)");
    for state in [None, Some(FriendState::Friend), Some(FriendState::Blocked)] {
        let want: Vec<_> = keys
            .iter()
            .filter(|k| state.is_none_or(|s| k.0 == s))
            .map(|k| k.2)
            .collect();
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let page = store.list_friends(a, state, 4, after).await.expect("page");
            assert!(page.friends.len() <= 4);
            got.extend(page.friends.iter().map(|f| f.user.id));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(got, want, "pages of state {state:?}");
    }
    // A page that ends exactly at the last edge has no cursor.
    let exact = store.list_friends(a, None, 25, None).await.expect("exact");
    assert!(exact.next.is_none());
}

pub async fn friend_edge_limit_refuses_new_edges(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 6).await;
    let (a, b, c, d, full, x) = (u[0], u[1], u[2], u[3], u[4], u[5]);
    let max = 2;
    let first = store
        .add_friends(a, &[b, c], "{}", NOW, max)
        .await
        .expect("add");
    assert!(matches!(first, EdgeWrite::Done(_)));
    let over = store
        .add_friends(a, &[d], "{}", NOW, max)
        .await
        .expect("add");
    assert_eq!(over, EdgeWrite::OverLimit);
    assert!(edges(&*store, d).await.is_empty(), "nothing written");
    let block_over = store.block_friends(a, &[d], NOW, max).await.expect("block");
    assert_eq!(block_over, EdgeWrite::OverLimit);
    // Blocking a user a already has an edge to needs no new edge.
    let block_ok = store.block_friends(a, &[b], NOW, max).await.expect("block");
    assert_eq!(block_ok, EdgeWrite::Done(()));
    // A user holding the most edges is left alone by others' invites.
    store
        .add_friends(full, &[c, d], "{}", NOW, max)
        .await
        .expect("fill");
    let to_full = store
        .add_friends(x, &[full], "{}", NOW, max)
        .await
        .expect("add");
    assert_eq!(
        to_full,
        EdgeWrite::Done(vec![(full, AddOutcome::Unchanged)])
    );
    // Accepting needs no new edge: c holds 2 edges (from a and full) and can still accept.
    let accept = store
        .add_friends(c, &[a], "{}", NOW, max)
        .await
        .expect("accept");
    assert_eq!(accept, EdgeWrite::Done(vec![(a, AddOutcome::Accepted)]));
}

pub async fn friend_edges_cascade_on_user_delete(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 3).await;
    let (a, b, c) = (u[0], u[1], u[2]);
    add(&*store, a, &[b], NOW).await;
    add(&*store, b, &[a], NOW).await;
    block(&*store, c, &[a]).await;
    assert!(store.delete_user(a).await.expect("delete user"));
    assert!(edges(&*store, b).await.is_empty());
    assert!(edges(&*store, c).await.is_empty());
}

pub async fn friend_states_by_id(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 4).await;
    let (a, b, c, d) = (u[0], u[1], u[2], u[3]);
    add(&*store, a, &[b], NOW).await;
    block(&*store, a, &[c]).await;
    let mut found: Vec<_> = store
        .friends_by_id(a, &[b, c, d, Uuid::new_v4()])
        .await
        .expect("by id")
        .into_iter()
        .map(|f| (f.user.id, f.state))
        .collect();
    found.sort();
    let mut want = vec![(b, FriendState::InviteSent), (c, FriendState::Blocked)];
    want.sort();
    assert_eq!(found, want);
}

pub async fn friends_of_friends_pages(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 6).await;
    let (a, b, c, d, e, g) = (u[0], u[1], u[2], u[3], u[4], u[5]);
    let befriend = |x: Uuid, y: Uuid| {
        let store = Arc::clone(&store);
        async move {
            add(&*store, x, &[y], NOW).await;
            add(&*store, y, &[x], NOW).await;
        }
    };
    befriend(a, b).await;
    befriend(a, c).await;
    befriend(b, c).await; // c is a's friend: not listed through b.
    befriend(b, d).await;
    befriend(b, e).await;
    befriend(c, d).await; // d again, through c.
    add(&*store, c, &[g], NOW).await; // only an invite: not a friend of c.
    let mut want = vec![
        FriendOfFriend {
            referrer: b,
            user_id: d,
        },
        FriendOfFriend {
            referrer: b,
            user_id: e,
        },
        FriendOfFriend {
            referrer: c,
            user_id: d,
        },
    ];
    want.sort();
    let all = store.friends_of_friends(a, 100, None).await.expect("fof");
    assert_eq!(all, want);
    let mut got = Vec::new();
    let mut after = None;
    loop {
        let page = store.friends_of_friends(a, 1, after).await.expect("page");
        let Some(last) = page.last().copied() else {
            break;
        };
        got.extend(page);
        after = Some(last);
    }
    assert_eq!(got, want);
    assert!(
        store
            .friends_of_friends(g, 10, None)
            .await
            .expect("none")
            .is_empty()
    );
}

pub async fn friend_concurrent_mutual_adds_end_as_friends(f: &dyn Fixture) {
    let store = f.open().await;
    let u = users(&*store, 2).await;
    let (a, b) = (u[0], u[1]);
    let (s1, s2) = (Arc::clone(&store), Arc::clone(&store));
    let first = tokio::spawn(async move { s1.add_friends(a, &[b], "{}", NOW, MAX).await });
    let second = tokio::spawn(async move { s2.add_friends(b, &[a], "{}", NOW, MAX).await });
    let r1 = first.await.expect("join").expect("add");
    let r2 = second.await.expect("join").expect("add");
    let outcomes = [r1, r2];
    assert!(
        outcomes.contains(&EdgeWrite::Done(vec![(b, AddOutcome::Invited)]))
            || outcomes.contains(&EdgeWrite::Done(vec![(a, AddOutcome::Invited)]))
    );
    assert_eq!(edges(&*store, a).await, vec![(b, FriendState::Friend)]);
    assert_eq!(edges(&*store, b).await, vec![(a, FriendState::Friend)]);
}

/// A tiny JSON reader for comparing metadata across backends (PostgreSQL's jsonb adds spaces
/// and reorders keys); the storage crate has no JSON dependency.
mod serde_like {
    #[derive(Debug, PartialEq)]
    pub enum Value {
        Object(Vec<(String, Value)>),
        Other(String),
    }

    pub fn parse(text: &str) -> Value {
        let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (value, _) = value(&chars, 0);
        value
    }

    fn value(c: &[char], i: usize) -> (Value, usize) {
        if c.get(i) == Some(&'{') {
            let mut fields = Vec::new();
            let mut i = i + 1;
            while c.get(i) != Some(&'}') {
                let (key, next) = string(c, i);
                let (v, next) = value(c, next + 1);
                fields.push((key, v));
                i = if c.get(next) == Some(&',') {
                    next + 1
                } else {
                    next
                };
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            (Value::Object(fields), i + 1)
        } else {
            let mut end = i;
            while end < c.len() && c[end] != ',' && c[end] != '}' {
                end += 1;
            }
            (Value::Other(c[i..end].iter().collect()), end)
        }
    }

    fn string(c: &[char], i: usize) -> (String, usize) {
        let mut end = i + 1;
        while end < c.len() && c[end] != '"' {
            end += 1;
        }
        (c[i + 1..end].iter().collect(), end + 1)
    }
}

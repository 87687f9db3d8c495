//! Users found by their social ids, and friends imported from a provider (Nakama's Facebook
//! and Steam friend import): new friendships, accepted invites, blocks left alone, the reset,
//! the edge limit.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{AddOutcome, EdgeWrite, FriendImport, FriendState, NewSocialUser, Provider, Storage};

const MAX: usize = 10_000;

async fn social(store: &dyn Storage, provider: Provider, provider_id: &str) -> Uuid {
    let id = Uuid::new_v4();
    store
        .create_social_user(NewSocialUser {
            id,
            username: format!("u{}", id.simple()),
            provider,
            provider_id: provider_id.to_owned(),
            display_name: String::new(),
            avatar_url: String::new(),
            email: None,
            now_ms: NOW,
        })
        .await
        .expect("create social user");
    id
}

async fn plain(store: &dyn Storage) -> Uuid {
    let id = Uuid::new_v4();
    let mut user = new_user(&format!("u{}", id.simple()), device(&id.to_string()));
    user.id = id;
    store.create_user(user).await.expect("create user");
    id
}

/// `user`'s edges as (other user, state), in listing order.
async fn edges(store: &dyn Storage, user: Uuid) -> Vec<(Uuid, FriendState)> {
    let page = store
        .list_friends(user, None, 1000, None)
        .await
        .expect("list friends");
    page.friends.iter().map(|f| (f.user.id, f.state)).collect()
}

fn sorted(mut ids: Vec<(Uuid, FriendState)>) -> Vec<(Uuid, FriendState)> {
    ids.sort();
    ids
}

/// The metadata of `user`'s edge to `other`, parsed.
async fn metadata(store: &dyn Storage, user: Uuid, other: Uuid) -> serde_json::Value {
    let edge = store
        .friends_by_id(user, &[other])
        .await
        .expect("read edge")
        .pop()
        .expect("an edge");
    serde_json::from_str(&edge.metadata).expect("metadata is JSON")
}

fn import(user_id: Uuid, provider: Provider, ids: &[&str], reset: bool) -> FriendImport {
    FriendImport {
        user_id,
        provider,
        provider_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        reset,
        now_ms: NOW + 100,
        max_edges: MAX,
    }
}

pub async fn social_users_found_by_facebook_id(f: &dyn Fixture) {
    let store = f.open().await;
    let ann = social(&*store, Provider::Facebook, "fb-ann").await;
    let bob = social(&*store, Provider::Facebook, "fb-bob").await;
    // A Steam id equal to a looked-up Facebook id names nobody.
    social(&*store, Provider::Steam, "fb-cid").await;
    let asked: Vec<String> = [
        "fb-ann", "fb-bob", "fb-ann", "fb-cid", "nobody", "bad\0id", "",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut found: Vec<Uuid> = store
        .users_by_social_id(Provider::Facebook, &asked)
        .await
        .expect("look up")
        .iter()
        .map(|u| u.id)
        .collect();
    found.sort();
    let mut expected = vec![ann, bob];
    expected.sort();
    assert_eq!(found, expected);
    let users = store
        .users_by_social_id(Provider::Facebook, &["fb-bob".to_owned()])
        .await
        .expect("look up");
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].social.facebook_id.as_deref(), Some("fb-bob"));
    assert!(
        store
            .users_by_social_id(Provider::Facebook, &[])
            .await
            .expect("look up")
            .is_empty()
    );
}

pub async fn friend_import_befriends_linked_users_and_accepts_invites(f: &dyn Fixture) {
    let store = f.open().await;
    let me = social(&*store, Provider::Facebook, "fb-me").await;
    let ann = social(&*store, Provider::Facebook, "fb-ann").await;
    let bob = social(&*store, Provider::Facebook, "fb-bob").await;
    let cid = social(&*store, Provider::Facebook, "fb-cid").await;
    let dan = social(&*store, Provider::Facebook, "fb-dan").await;
    let eve = social(&*store, Provider::Facebook, "fb-eve").await;
    let old = social(&*store, Provider::Facebook, "fb-old").await;
    // bob invited me; I invited cid (with metadata that stays); I blocked dan; eve blocked me;
    // old is already my friend.
    let add = |from: Uuid, to: Uuid, metadata: &'static str| {
        let store = Arc::clone(&store);
        async move {
            store
                .add_friends(from, &[to], metadata, NOW, MAX)
                .await
                .expect("add")
        }
    };
    add(bob, me, "{}").await;
    add(me, cid, r#"{"note":"hi"}"#).await;
    add(me, old, "{}").await;
    add(old, me, "{}").await;
    store
        .block_friends(me, &[dan], NOW, MAX)
        .await
        .expect("block");
    store
        .block_friends(eve, &[me], NOW, MAX)
        .await
        .expect("block");

    let friends = store
        .import_friends(import(
            me,
            Provider::Facebook,
            &[
                "fb-ann", "fb-bob", "fb-cid", "fb-dan", "fb-eve", "fb-old", "fb-me", "fb-none",
            ],
            false,
        ))
        .await
        .expect("import");
    assert_eq!(
        friends,
        vec![ann, bob, cid],
        "the users made friends, in order"
    );
    assert_eq!(
        sorted(edges(&*store, me).await),
        sorted(vec![
            (ann, FriendState::Friend),
            (bob, FriendState::Friend),
            (cid, FriendState::Friend),
            (dan, FriendState::Blocked),
            (old, FriendState::Friend),
        ])
    );
    for friend in [ann, bob, cid] {
        assert_eq!(
            edges(&*store, friend).await,
            vec![(me, FriendState::Friend)]
        );
    }
    assert_eq!(edges(&*store, dan).await, vec![]);
    assert_eq!(edges(&*store, eve).await, vec![(me, FriendState::Blocked)]);
    let provider = serde_json::json!({"provider": "facebook"});
    assert_eq!(metadata(&*store, me, ann).await, provider);
    assert_eq!(metadata(&*store, ann, me).await, provider);
    assert_eq!(metadata(&*store, bob, me).await, provider);
    assert_eq!(
        metadata(&*store, me, cid).await,
        serde_json::json!({"note": "hi", "provider": "facebook"})
    );
    // The existing friendship is not touched.
    assert_eq!(metadata(&*store, me, old).await, serde_json::json!({}));

    // Importing again changes nothing and tells nobody.
    let again = store
        .import_friends(import(me, Provider::Facebook, &["fb-ann", "fb-bob"], false))
        .await
        .expect("import");
    assert!(again.is_empty(), "{again:?}");
}

pub async fn friend_import_reset_keeps_blocks(f: &dyn Fixture) {
    let store = f.open().await;
    let me = social(&*store, Provider::Steam, "76561197960287930").await;
    let ann = social(&*store, Provider::Steam, "76561197960287931").await;
    let blocked = plain(&*store).await;
    let blocker = plain(&*store).await;
    let friend = plain(&*store).await;
    let invitee = plain(&*store).await;
    let inviter = plain(&*store).await;
    store
        .block_friends(me, &[blocked], NOW, MAX)
        .await
        .expect("block");
    store
        .block_friends(blocker, &[me], NOW, MAX)
        .await
        .expect("block");
    store
        .add_friends(me, &[friend], "{}", NOW, MAX)
        .await
        .expect("add");
    store
        .add_friends(friend, &[me], "{}", NOW, MAX)
        .await
        .expect("add");
    store
        .add_friends(me, &[invitee], "{}", NOW, MAX)
        .await
        .expect("add");
    store
        .add_friends(inviter, &[me], "{}", NOW, MAX)
        .await
        .expect("add");

    let friends = store
        .import_friends(import(me, Provider::Steam, &["76561197960287931"], true))
        .await
        .expect("import");
    assert_eq!(friends, vec![ann]);
    assert_eq!(
        sorted(edges(&*store, me).await),
        sorted(vec![
            (ann, FriendState::Friend),
            (blocked, FriendState::Blocked)
        ])
    );
    assert_eq!(
        edges(&*store, blocker).await,
        vec![(me, FriendState::Blocked)]
    );
    for other in [friend, invitee, inviter] {
        assert_eq!(edges(&*store, other).await, vec![], "reset removed it");
    }
    assert_eq!(
        metadata(&*store, ann, me).await,
        serde_json::json!({"provider": "steam"})
    );
    // A reset with nothing to import still clears the list.
    let none = store
        .import_friends(import(me, Provider::Steam, &[], true))
        .await
        .expect("import");
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(
        edges(&*store, me).await,
        vec![(blocked, FriendState::Blocked)]
    );
    assert_eq!(edges(&*store, ann).await, vec![]);
}

pub async fn friend_import_respects_the_edge_limit(f: &dyn Fixture) {
    let store = f.open().await;
    let me = social(&*store, Provider::Facebook, "fb-me").await;
    let ann = social(&*store, Provider::Facebook, "fb-ann").await;
    let bob = social(&*store, Provider::Facebook, "fb-bob").await;
    let full = social(&*store, Provider::Facebook, "fb-full").await;
    let other = plain(&*store).await;
    let inviter = social(&*store, Provider::Facebook, "fb-inviter").await;
    // `full` already holds its two edges; `inviter` invited me (my first edge).
    store
        .add_friends(full, &[other, ann], "{}", NOW, 2)
        .await
        .expect("add");
    assert_eq!(
        store
            .add_friends(inviter, &[me], "{}", NOW, MAX)
            .await
            .expect("add"),
        EdgeWrite::Done(vec![(me, AddOutcome::Invited)])
    );
    let mut limited = import(
        me,
        Provider::Facebook,
        &["fb-full", "fb-inviter", "fb-ann", "fb-bob"],
        false,
    );
    limited.max_edges = 2;
    let friends = store.import_friends(limited).await.expect("import");
    // full has no room; accepting inviter needs none; ann fills my second edge; bob finds
    // no room left.
    assert_eq!(friends, vec![inviter, ann]);
    assert_eq!(
        sorted(edges(&*store, me).await),
        sorted(vec![
            (inviter, FriendState::Friend),
            (ann, FriendState::Friend)
        ])
    );
    assert_eq!(edges(&*store, bob).await, vec![]);
}

pub async fn friend_import_concurrent_mutual_imports_end_as_friends(f: &dyn Fixture) {
    let store = f.open().await;
    let ann = social(&*store, Provider::Facebook, "fb-ann").await;
    let bob = social(&*store, Provider::Facebook, "fb-bob").await;
    let (s1, s2) = (Arc::clone(&store), Arc::clone(&store));
    let first = tokio::spawn(async move {
        s1.import_friends(import(ann, Provider::Facebook, &["fb-bob"], false))
            .await
    });
    let second = tokio::spawn(async move {
        s2.import_friends(import(bob, Provider::Facebook, &["fb-ann"], false))
            .await
    });
    let r1 = first.await.expect("join").expect("import");
    let r2 = second.await.expect("join").expect("import");
    // Exactly one of them made the friendship (and tells the other).
    assert_eq!(r1.len() + r2.len(), 1, "{r1:?} {r2:?}");
    assert_eq!(edges(&*store, ann).await, vec![(bob, FriendState::Friend)]);
    assert_eq!(edges(&*store, bob).await, vec![(ann, FriendState::Friend)]);
}

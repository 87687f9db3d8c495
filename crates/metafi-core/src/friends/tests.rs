//! The friends service on SQLite: Nakama's checks and messages, the notifications each
//! transition sends, the limit, cursors.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::{FriendState, NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use tempfile::TempDir;
use uuid::Uuid;

use super::*;
use crate::{ManualClock, NobodyOnline};

#[derive(Debug, Default)]
struct Recorder {
    sent: Mutex<Vec<NewNotification>>,
}

#[async_trait]
impl Notifier for Recorder {
    async fn notify(&self, notifications: Vec<NewNotification>) -> Result<(), CoreError> {
        self.sent.lock().extend(notifications);
        Ok(())
    }
}

impl Recorder {
    fn take(&self) -> Vec<NewNotification> {
        std::mem::take(&mut *self.sent.lock())
    }
}

struct World {
    _dir: TempDir,
    store: Arc<dyn Storage>,
    friends: Friends,
    sent: Arc<Recorder>,
}

fn world_with(config: FriendsConfig) -> World {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("friends.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let sent = Arc::new(Recorder::default());
    let friends = Friends::new(
        Arc::clone(&store),
        Arc::clone(&sent) as Arc<dyn Notifier>,
        Arc::new(NobodyOnline),
        Arc::new(ManualClock::new(1_700_000_000_000)),
        config,
    );
    World {
        _dir: dir,
        store,
        friends,
        sent,
    }
}

fn world() -> World {
    world_with(FriendsConfig::default())
}

async fn actor(world: &World, name: &str) -> Actor {
    let id = Uuid::new_v4();
    world
        .store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: 1,
        })
        .await
        .expect("create user");
    Actor {
        id,
        username: name.to_owned(),
    }
}

fn ids(targets: &[&Actor]) -> Targets {
    let ids: Vec<String> = targets.iter().map(|a| a.id.to_string()).collect();
    Targets::rest(Op::Add, Uuid::nil(), "", &ids, &[]).expect("targets")
}

fn names(names: &[&str]) -> Targets {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    Targets::rest(Op::Add, Uuid::nil(), "", &[], &names).expect("targets")
}

async fn states(world: &World, who: &Actor) -> Vec<(String, i32)> {
    let list = world
        .friends
        .list_for_client(who.id, None, None, "")
        .await
        .expect("list");
    list.friends
        .into_iter()
        .map(|f| (f.user.username, f.state))
        .collect()
}

fn invalid<T>(text: &str) -> Result<T, (metafi_proto::Code, String)> {
    Err((metafi_proto::Code::InvalidArgument, text.to_owned()))
}

fn message(error: CoreError) -> (metafi_proto::Code, String) {
    (error.code(), error.client_message().into_owned())
}

#[tokio::test]
async fn invite_and_accept_notify_as_nakama() {
    let w = world();
    let alice = actor(&w, "alice").await;
    let bob = actor(&w, "bob").await;
    w.friends.add(&alice, ids(&[&bob]), "").await.expect("add");
    assert_eq!(states(&w, &alice).await, vec![("bob".to_owned(), 1)]);
    assert_eq!(states(&w, &bob).await, vec![("alice".to_owned(), 2)]);
    assert_eq!(
        w.sent.take(),
        vec![NewNotification {
            user_id: bob.id,
            subject: "alice wants to add you as a friend".into(),
            content: r#"{"username":"alice"}"#.into(),
            code: codes::FRIEND_REQUEST,
            sender_id: Some(alice.id),
            persistent: true,
        }]
    );
    // Asking again sends nothing.
    w.friends
        .add(&alice, ids(&[&bob]), "")
        .await
        .expect("again");
    assert!(w.sent.take().is_empty());
    // Bob accepts by username.
    w.friends
        .add(&bob, names(&["alice"]), "")
        .await
        .expect("accept");
    assert_eq!(states(&w, &alice).await, vec![("bob".to_owned(), 0)]);
    assert_eq!(states(&w, &bob).await, vec![("alice".to_owned(), 0)]);
    let sent = w.sent.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].user_id, alice.id);
    assert_eq!(sent[0].code, codes::FRIEND_ACCEPT);
    assert_eq!(sent[0].subject, "bob accepted your friend request");
    assert_eq!(sent[0].content, r#"{"username":"bob"}"#);
}

#[tokio::test]
async fn delete_tells_the_removed_and_unblock_tells_nobody() {
    let w = world();
    let alice = actor(&w, "alice").await;
    let bob = actor(&w, "bob").await;
    let carol = actor(&w, "carol").await;
    w.friends.add(&alice, ids(&[&bob]), "").await.expect("add");
    w.friends
        .add(&bob, ids(&[&alice]), "")
        .await
        .expect("accept");
    w.friends
        .block(&alice, ids(&[&carol]))
        .await
        .expect("block");
    w.sent.take();
    w.friends
        .delete(&alice, ids(&[&bob, &carol]))
        .await
        .expect("delete");
    let sent = w.sent.take();
    assert_eq!(sent.len(), 1, "only bob lost a friendship: {sent:?}");
    assert_eq!(sent[0].user_id, bob.id);
    assert_eq!(sent[0].code, codes::FRIEND_REMOVE);
    assert_eq!(sent[0].subject, "alice removed you as a friend");
    assert!(states(&w, &alice).await.is_empty());
    assert!(states(&w, &bob).await.is_empty());
}

#[tokio::test]
async fn blocked_users_get_no_invite_and_no_notification() {
    let w = world();
    let alice = actor(&w, "alice").await;
    let bob = actor(&w, "bob").await;
    w.friends.block(&bob, ids(&[&alice])).await.expect("block");
    w.friends.add(&alice, ids(&[&bob]), "").await.expect("add");
    assert!(w.sent.take().is_empty());
    assert!(states(&w, &alice).await.is_empty());
    assert_eq!(states(&w, &bob).await, vec![("alice".to_owned(), 3)]);
}

#[tokio::test]
async fn rest_checks_use_nakamas_messages() {
    let me = Uuid::new_v4();
    let check = |op, ids: &[&str], names: &[&str]| {
        let ids: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
        let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        Targets::rest(op, me, "me", &ids, &names).map_err(message)
    };
    assert_eq!(
        check(Op::Add, &[&me.to_string()], &[]),
        invalid("Cannot add self as friend.")
    );
    assert_eq!(
        check(Op::Delete, &[], &["me"]),
        invalid("Cannot delete self.")
    );
    assert_eq!(
        check(Op::Block, &[], &["me"]),
        invalid("Cannot block self.")
    );
    assert_eq!(
        check(Op::Add, &["nope"], &[]),
        invalid("Invalid user ID 'nope'.")
    );
    assert_eq!(
        check(Op::Add, &["00000000-0000-0000-0000-000000000000"], &[]),
        invalid("Invalid user ID '00000000-0000-0000-0000-000000000000'.")
    );
    assert_eq!(
        check(Op::Add, &[], &[""]),
        invalid("Username must not be empty.")
    );

    let w = world();
    let alice = actor(&w, "alice").await;
    let unknown = names(&["nobody-has-this-name"]);
    assert_eq!(
        w.friends
            .add(&alice, unknown.clone(), "")
            .await
            .map_err(message),
        invalid("No valid ID or username was provided.")
    );
    assert_eq!(
        w.friends
            .block(&alice, unknown.clone())
            .await
            .map_err(message),
        invalid("No valid ID or username was provided.")
    );
    assert_eq!(
        w.friends.delete(&alice, unknown).await.map_err(message),
        Ok(())
    );
    let many: Vec<String> = (0..=MAX_TARGETS).map(|n| format!("user{n}")).collect();
    let too_many = Targets::rest(Op::Block, alice.id, "alice", &[], &many).expect("targets");
    assert_eq!(
        w.friends.block(&alice, too_many).await.map_err(message),
        invalid("Too many users named: at most 1000 ids and usernames together.")
    );
    assert_eq!(
        w.friends
            .add(&alice, names(&["x"]), "[1]")
            .await
            .map_err(message),
        invalid("Metadata must be a valid JSON object.")
    );
}

#[tokio::test]
async fn listing_checks_limits_states_and_cursors() {
    let w = world();
    let alice = actor(&w, "alice").await;
    let list = |limit, state, cursor: &str| {
        let friends = &w.friends;
        let cursor = cursor.to_owned();
        async move {
            friends
                .list_for_client(alice.id, limit, state, &cursor)
                .await
                .map(|l| l.friends.len())
                .map_err(message)
        }
    };
    assert_eq!(
        list(Some(0), None, "").await,
        invalid("Invalid limit - limit must be between 1 and 1000.")
    );
    assert_eq!(
        list(Some(1001), None, "").await,
        invalid("Invalid limit - limit must be between 1 and 1000.")
    );
    assert_eq!(
        list(None, Some(4), "").await,
        invalid("Invalid state - state must be between 0 and 3.")
    );
    assert_eq!(
        list(None, Some(-1), "").await,
        invalid("Invalid state - state must be between 0 and 3.")
    );
    assert_eq!(
        list(None, None, "garbage!").await,
        invalid("Cursor is invalid.")
    );

    let mut others = Vec::new();
    for n in 0..5 {
        others.push(actor(&w, &format!("friend{n}")).await);
    }
    let refs: Vec<&Actor> = others.iter().collect();
    w.friends.add(&alice, ids(&refs), "").await.expect("add");
    let first = w
        .friends
        .list_for_client(alice.id, Some(2), Some(1), "")
        .await
        .expect("page");
    assert_eq!(first.friends.len(), 2);
    assert!(!first.cursor.is_empty());
    // The cursor of one state filter is refused under another.
    assert_eq!(
        list(Some(2), Some(0), &first.cursor).await,
        invalid("Cursor is invalid.")
    );
    let mut seen: Vec<String> = first.friends.iter().map(|f| f.user.id.clone()).collect();
    let mut cursor = first.cursor;
    while !cursor.is_empty() {
        let page = w
            .friends
            .list_for_client(alice.id, Some(2), Some(1), &cursor)
            .await
            .expect("page");
        seen.extend(page.friends.iter().map(|f| f.user.id.clone()));
        cursor = page.cursor;
    }
    seen.sort();
    let mut want: Vec<String> = others.iter().map(|a| a.id.to_string()).collect();
    want.sort();
    assert_eq!(seen, want);
}

#[tokio::test]
async fn the_friend_limit_refuses_clearly() {
    let w = world_with(FriendsConfig { max_friends: 2 });
    let alice = actor(&w, "alice").await;
    let bob = actor(&w, "bob").await;
    let carol = actor(&w, "carol").await;
    let dave = actor(&w, "dave").await;
    w.friends
        .add(&alice, ids(&[&bob, &carol]), "")
        .await
        .expect("add");
    w.sent.take();
    let refused = w
        .friends
        .add(&alice, ids(&[&dave]), "")
        .await
        .map_err(message);
    assert_eq!(
        refused,
        Err((
            metafi_proto::Code::FailedPrecondition,
            "Friend limit reached: a user may hold at most 2 friends, invites and blocks.".into()
        ))
    );
    assert!(w.sent.take().is_empty(), "nothing sent when refused");
    assert!(w.friends.block(&alice, ids(&[&dave])).await.is_err());
    assert!(states(&w, &dave).await.is_empty());
}

#[tokio::test]
async fn friends_of_friends_page_with_cursors() {
    let w = world();
    let alice = actor(&w, "alice").await;
    let bob = actor(&w, "bob").await;
    let mut theirs = Vec::new();
    for n in 0..3 {
        theirs.push(actor(&w, &format!("fof{n}")).await);
    }
    w.friends.add(&alice, ids(&[&bob]), "").await.expect("add");
    w.friends
        .add(&bob, ids(&[&alice]), "")
        .await
        .expect("accept");
    for other in &theirs {
        w.friends.add(&bob, ids(&[other]), "").await.expect("add");
        w.friends
            .add(other, ids(&[&bob]), "")
            .await
            .expect("accept");
    }
    assert_eq!(
        w.friends
            .friends_of_friends_for_client(alice.id, Some(101), "")
            .await
            .map(|_| ())
            .map_err(message),
        invalid("Invalid limit - limit must be between 1 and 100.")
    );
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = w
            .friends
            .friends_of_friends_for_client(alice.id, Some(2), &cursor)
            .await
            .expect("page");
        for f in &page.friends_of_friends {
            assert_eq!(f.referrer, bob.id.to_string());
            seen.push(f.user.username.clone());
        }
        if page.cursor.is_empty() {
            break;
        }
        cursor = page.cursor;
    }
    seen.sort();
    assert_eq!(seen, ["fof0", "fof1", "fof2"]);
    let states = w
        .friends
        .statuses(alice.id, &[bob.id, theirs[0].id])
        .await
        .expect("statuses");
    assert_eq!(states.len(), 1);
    assert_eq!(states[0].friend.state, FriendState::Friend);
}

//! The friend rows through `NkArgs`, as Lua and JS call them: results in each language's
//! shape, Nakama's argument errors, and the service's rules underneath.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{Friends, FriendsConfig, ManualClock, NobodyOnline, Objects};
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::super::test_support::{T0_MS, on};
use super::super::{Naming, NkError, NkMap, NkValue};
use crate::nk::{Nk, RuntimeServices};
use crate::testing::FakeMatches;

struct World {
    nk: Nk,
    store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(
        tokio::task::spawn_blocking(move || SqliteStorage::open(config))
            .await
            .unwrap()
            .unwrap(),
    );
    let clock = Arc::new(ManualClock::new(T0_MS));
    // Friend requests are stored as notifications, as on the server (no sockets to push to).
    let notifications = Arc::new(metafi_core::Notifications::new(
        store.clone(),
        clock.clone(),
        Arc::new(metafi_core::NoPush),
        metafi_core::NotificationsConfig::default(),
    ));
    let friends = Friends::new(
        store.clone(),
        notifications,
        Arc::new(NobodyOnline),
        clock.clone(),
        FriendsConfig::default(),
    );
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store.clone(),
        Arc::new(FakeMatches::default()),
        clock,
    )
    .with_friends(Arc::new(friends));
    World {
        nk: Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new())),
        store,
        _dir: dir,
    }
}

async fn user(w: &World, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    w.store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Custom {
                id: format!("custom-{name}"),
            },
            now_ms: T0_MS,
        })
        .await
        .unwrap();
    id
}

fn s(text: impl Into<String>) -> NkValue {
    NkValue::from(text.into())
}

fn list(items: &[Uuid]) -> NkValue {
    NkValue::List(items.iter().map(|id| s(id.to_string())).collect())
}

fn names(items: &[&str]) -> NkValue {
    NkValue::List(items.iter().map(|n| s(*n)).collect())
}

async fn lua(w: &World, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    on(&w.nk, Naming::Snake, name, args).await
}

async fn js(w: &World, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    on(&w.nk, Naming::Camel, name, args).await
}

fn arg_error(result: Result<NkValue, NkError>) -> (usize, String) {
    match result {
        Err(NkError::Arg { position, message }) => (position, message.into_owned()),
        other => panic!("expected an argument error, got {other:?}"),
    }
}

fn failure(result: Result<NkValue, NkError>) -> String {
    match result {
        Err(NkError::Failed { message }) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// `(other user id, state)` of each friend value.
fn states(friends: &NkValue) -> Vec<(String, i64)> {
    friends
        .as_list()
        .unwrap()
        .iter()
        .map(|f| {
            let map = f.as_map().unwrap();
            let user = map.get("user").unwrap().as_map().unwrap();
            (
                user.get("user_id").unwrap().as_str().unwrap().to_owned(),
                map.get("state").unwrap().as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn lua_add_accept_block_delete_and_list() {
    let w = world().await;
    let (ada, bob, cy) = (
        user(&w, "ada").await,
        user(&w, "bob").await,
        user(&w, "cy").await,
    );
    let metadata: NkValue = NkMap::new().with("note", "hi").into();
    let added = lua(
        &w,
        "friends_add",
        vec![
            s(ada.to_string()),
            s("ada"),
            list(&[bob]),
            NkValue::Nil,
            metadata,
        ],
    )
    .await
    .unwrap();
    assert!(added.is_nil());
    let NkValue::Multi(parts) = lua(&w, "friends_list", vec![s(ada.to_string())])
        .await
        .unwrap()
    else {
        panic!("Lua gets two values");
    };
    assert_eq!(states(&parts[0]), vec![(bob.to_string(), 1)]);
    assert!(parts[1].is_nil(), "no cursor on the last page");
    let first = parts[0].as_list().unwrap()[0].as_map().unwrap().clone();
    let note = first
        .get("metadata")
        .unwrap()
        .as_map()
        .unwrap()
        .get("note")
        .cloned();
    assert_eq!(note, Some(s("hi")));
    assert_eq!(first.get("update_time"), Some(&NkValue::from(T0_MS / 1000)));

    // Bob accepts by username; the state filter shows it.
    lua(
        &w,
        "friends_add",
        vec![s(bob.to_string()), s("bob"), NkValue::Nil, names(&["ada"])],
    )
    .await
    .unwrap();
    let NkValue::Multi(parts) = lua(
        &w,
        "friends_list",
        vec![
            s(bob.to_string()),
            NkValue::from(10i64),
            NkValue::from(0i64),
        ],
    )
    .await
    .unwrap() else {
        panic!("two values")
    };
    assert_eq!(states(&parts[0]), vec![(ada.to_string(), 0)]);

    // Ada blocks Cy, then unblocks by deleting.
    lua(
        &w,
        "friends_block",
        vec![s(ada.to_string()), s("ada"), list(&[cy])],
    )
    .await
    .unwrap();
    let status = lua(
        &w,
        "users_get_friend_status",
        vec![s(ada.to_string()), list(&[bob, cy])],
    )
    .await
    .unwrap();
    let mut got = states(&status);
    got.sort();
    let mut want = vec![(bob.to_string(), 0), (cy.to_string(), 3)];
    want.sort();
    assert_eq!(got, want);
    lua(
        &w,
        "friends_delete",
        vec![s(ada.to_string()), s("ada"), list(&[cy, bob])],
    )
    .await
    .unwrap();
    let NkValue::Multi(parts) = lua(&w, "friends_list", vec![s(ada.to_string())])
        .await
        .unwrap()
    else {
        panic!("two values")
    };
    assert!(states(&parts[0]).is_empty());
}

#[tokio::test]
async fn js_pages_with_a_cursor_and_lists_friends_of_friends() {
    let w = world().await;
    let (ada, bob, cy, dee) = (
        user(&w, "ada").await,
        user(&w, "bob").await,
        user(&w, "cy").await,
        user(&w, "dee").await,
    );
    js(
        &w,
        "friendsAdd",
        vec![s(ada.to_string()), s("ada"), list(&[bob, cy])],
    )
    .await
    .unwrap();
    let page = js(
        &w,
        "friendsList",
        vec![s(ada.to_string()), NkValue::from(1i64)],
    )
    .await
    .unwrap();
    let map = page.as_map().unwrap();
    assert_eq!(states(map.get("friends").unwrap()).len(), 1);
    let cursor = map.get("cursor").unwrap().clone();
    let next = js(
        &w,
        "friendsList",
        vec![
            s(ada.to_string()),
            NkValue::from(1i64),
            NkValue::Nil,
            cursor,
        ],
    )
    .await
    .unwrap();
    let next = next.as_map().unwrap();
    assert_eq!(states(next.get("friends").unwrap()).len(), 1);
    assert!(next.get("cursor").is_none(), "no cursor on the last page");

    // bob and dee become friends; ada and bob too: dee is a friend of ada's friend.
    for (a, an, b) in [(bob, "bob", ada), (bob, "bob", dee)] {
        js(&w, "friendsAdd", vec![s(a.to_string()), s(an), list(&[b])])
            .await
            .unwrap();
    }
    js(
        &w,
        "friendsAdd",
        vec![s(dee.to_string()), s("dee"), list(&[bob])],
    )
    .await
    .unwrap();
    let fof = js(&w, "friendsOfFriendsList", vec![s(ada.to_string())])
        .await
        .unwrap();
    let items = fof
        .as_map()
        .unwrap()
        .get("friends_of_friends")
        .unwrap()
        .as_list()
        .unwrap();
    assert_eq!(items.len(), 1);
    let item = items[0].as_map().unwrap();
    assert_eq!(item.get("referrer"), Some(&s(bob.to_string())));
    let user = item.get("user").unwrap().as_map().unwrap();
    assert_eq!(user.get("user_id"), Some(&s(dee.to_string())));
}

#[tokio::test]
async fn arguments_are_checked_with_each_runtimes_words() {
    let w = world().await;
    let ada = user(&w, "ada").await;
    let me = s(ada.to_string());
    let cases: Vec<(&str, Vec<NkValue>, (usize, &str))> = vec![
        (
            "friends_list",
            vec![s("x")],
            (1, "expects user ID to be a valid identifier"),
        ),
        (
            "friends_list",
            vec![me.clone(), NkValue::from(0i64)],
            (2, "expects limit to be 1-1000"),
        ),
        (
            "friends_list",
            vec![me.clone(), NkValue::Nil, NkValue::from(4i64)],
            (3, "expects state to be 0-3"),
        ),
        (
            "friends_of_friends_list",
            vec![me.clone(), NkValue::from(1001i64)],
            (2, "expects limit to be 1-1000"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("")],
            (2, "expects username string"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("ada"), list(&[ada])],
            (3, "cannot add self as friend"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("ada"), names(&["nope"])],
            (3, "invalid user ID nope"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("ada"), names(&[""])],
            (3, "each user id must be a string"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("ada"), s("x")],
            (3, "invalid user ids list"),
        ),
        (
            "friends_add",
            vec![me.clone(), s("ada"), NkValue::Nil, names(&["ada"])],
            (4, "cannot add self as friend"),
        ),
        (
            "friends_delete",
            vec![me.clone(), s("ada"), NkValue::Nil, names(&[""])],
            (4, "each username must be a non-empty string"),
        ),
        (
            "friends_block",
            vec![me.clone(), s("ada"), list(&[ada])],
            (3, "cannot block self"),
        ),
        (
            "users_get_friend_status",
            vec![s("x"), list(&[])],
            (1, "invalid user id"),
        ),
        (
            "users_get_friend_status",
            vec![me.clone(), names(&["x"])],
            (2, "invalid user id"),
        ),
    ];
    for (name, args, want) in cases {
        let got = arg_error(lua(&w, name, args).await);
        assert_eq!((got.0, got.1.as_str()), want, "{name}");
    }
    let js_cases: Vec<(&str, Vec<NkValue>, (usize, &str))> = vec![
        ("friendsList", vec![s("")], (1, "expects a user ID string")),
        (
            "friendsAdd",
            vec![me.clone(), s("")],
            (2, "expects a username string"),
        ),
        (
            "friendsAdd",
            vec![me.clone(), s("ada"), names(&["nope"])],
            (3, "invalid user id: nope"),
        ),
        (
            "friendsDelete",
            vec![me.clone(), s("ada"), NkValue::Nil, names(&[""])],
            (4, "username to delete must not be empty"),
        ),
        (
            "friendsAdd",
            vec![me.clone(), s("ada"), NkValue::Nil, names(&["bob"]), s("x")],
            (5, "invalid metadata: must be an object"),
        ),
    ];
    for (name, args, want) in js_cases {
        let got = arg_error(js(&w, name, args).await);
        assert_eq!((got.0, got.1.as_str()), want, "{name}");
    }
    // Nothing to do: no error, nothing written.
    assert!(
        lua(&w, "friends_add", vec![me.clone(), s("ada")])
            .await
            .unwrap()
            .is_nil()
    );
    assert_eq!(
        failure(
            lua(
                &w,
                "friends_add",
                vec![me.clone(), s("ada"), NkValue::Nil, names(&["ghost"])]
            )
            .await
        ),
        "no valid ID or username was provided"
    );
    assert_eq!(
        failure(
            lua(
                &w,
                "friends_delete",
                vec![me.clone(), s("ada"), NkValue::Nil, names(&["ghost"])]
            )
            .await
        ),
        "no valid ID or username was provided"
    );
    assert_eq!(
        failure(
            lua(
                &w,
                "friends_list",
                vec![me.clone(), NkValue::Nil, NkValue::Nil, s("bad")]
            )
            .await
        ),
        "error while trying to list friends for a user: friend cursor invalid"
    );
}

/// The `metadata` map of the caller's edge to `other`, as `friends_list` shows it.
async fn edge_metadata(w: &World, caller: Uuid, other: Uuid) -> NkValue {
    let NkValue::Multi(parts) = lua(w, "friends_list", vec![s(caller.to_string())])
        .await
        .unwrap()
    else {
        panic!("two values")
    };
    parts[0]
        .as_list()
        .unwrap()
        .iter()
        .map(|f| f.as_map().unwrap())
        .find(|f| {
            f.get("user").unwrap().as_map().unwrap().get("user_id") == Some(&s(other.to_string()))
        })
        .expect("an edge to the other user")
        .get("metadata")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn friend_metadata_update_replaces_one_side_and_returns_nothing() {
    let w = world().await;
    let (ada, bob) = (user(&w, "ada").await, user(&w, "bob").await);
    lua(
        &w,
        "friends_add",
        vec![
            s(ada.to_string()),
            s("ada"),
            list(&[bob]),
            NkValue::Nil,
            NkMap::new().with("old", 1i64).into(),
        ],
    )
    .await
    .unwrap();
    // An invite's edge too: any state.
    let done = lua(
        &w,
        "friend_metadata_update",
        vec![
            s(ada.to_string()),
            s(bob.to_string()),
            NkMap::new().with("tier", "gold").into(),
        ],
    )
    .await
    .unwrap();
    assert!(done.is_nil(), "Lua gets nothing back");
    let mine = edge_metadata(&w, ada, bob).await;
    assert_eq!(mine.as_map().unwrap().get("tier"), Some(&s("gold")));
    assert_eq!(mine.as_map().unwrap().len(), 1, "replaced, not merged");
    let theirs = edge_metadata(&w, bob, ada).await;
    assert_eq!(
        theirs.as_map().unwrap().len(),
        0,
        "the other side's edge is its own"
    );
    let done = js(
        &w,
        "friendMetadataUpdate",
        vec![
            s(bob.to_string()),
            s(ada.to_string()),
            NkMap::new().with("seen", true).into(),
        ],
    )
    .await
    .unwrap();
    assert!(done.is_nil(), "JS gets undefined");
    let theirs = edge_metadata(&w, bob, ada).await;
    assert_eq!(
        theirs.as_map().unwrap().get("seen"),
        Some(&NkValue::from(true))
    );
    // The update time stays (only the metadata changes).
    let NkValue::Multi(parts) = lua(&w, "friends_list", vec![s(ada.to_string())])
        .await
        .unwrap()
    else {
        panic!("two values")
    };
    let first = parts[0].as_list().unwrap()[0].as_map().unwrap().clone();
    assert_eq!(first.get("update_time"), Some(&NkValue::from(T0_MS / 1000)));

    // No edge: nothing happens, no error (Nakama's plain UPDATE).
    let stranger = user(&w, "cy").await;
    lua(
        &w,
        "friend_metadata_update",
        vec![
            s(ada.to_string()),
            s(stranger.to_string()),
            NkMap::new().into(),
        ],
    )
    .await
    .unwrap();

    // Arguments, in each runtime's words.
    assert_eq!(
        arg_error(
            lua(
                &w,
                "friend_metadata_update",
                vec![s("nope"), s(bob.to_string()), NkMap::new().into()]
            )
            .await
        ),
        (1, "expects user ID to be a valid identifier".to_owned())
    );
    assert_eq!(
        arg_error(
            js(
                &w,
                "friendMetadataUpdate",
                vec![s(ada.to_string()), s("nope"), NkMap::new().into()]
            )
            .await
        ),
        (2, "expects user ID to be a valid identifier".to_owned())
    );
    assert_eq!(
        arg_error(
            js(
                &w,
                "friendMetadataUpdate",
                vec![s(ada.to_string()), s(bob.to_string()), s("x")]
            )
            .await
        ),
        (3, "expects metadata to be an object".to_owned())
    );
    assert_eq!(
        arg_error(
            lua(
                &w,
                "friend_metadata_update",
                vec![s(ada.to_string()), s(bob.to_string())]
            )
            .await
        ),
        (3, "table expected".to_owned())
    );
}

//! The group rows as engines call them: argument errors, Lua and JS result shapes, and
//! server code acting with every permission unless a caller is named.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{
    CoreError, Groups, ManualClock, NewNotification, NobodyOnline, Notifier, Objects,
};
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::test_support::{T0_MS, on};
use super::{Naming, NkError, NkMap, NkValue};
use crate::nk::{Nk, RuntimeServices};
use crate::testing::FakeMatches;

#[derive(Debug, Default)]
struct Dropped;

#[async_trait::async_trait]
impl Notifier for Dropped {
    async fn notify(&self, _: Vec<NewNotification>) -> Result<(), CoreError> {
        Ok(())
    }
}

struct World {
    nk: Nk,
    store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().expect("dir");
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("store"));
    let clock = Arc::new(ManualClock::new(T0_MS));
    let groups = Arc::new(Groups::new(
        store.clone(),
        Arc::new(Dropped),
        Arc::new(NobodyOnline),
        clock.clone(),
    ));
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store.clone(),
        Arc::new(FakeMatches::default()),
        clock,
    )
    .with_groups(groups);
    World {
        nk: Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new())),
        store,
        _dir: dir,
    }
}

async fn user(w: &World, name: &str) -> String {
    let id = Uuid::new_v4();
    w.store
        .create_user(NewUser {
            id,
            username: name.into(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: T0_MS,
        })
        .await
        .expect("user");
    id.to_string()
}

fn s(text: &str) -> NkValue {
    NkValue::from(text)
}

fn field<'a>(value: &'a NkValue, key: &str) -> &'a NkValue {
    value
        .as_map()
        .and_then(|m| m.get(key))
        .unwrap_or_else(|| panic!("no {key} in {value:?}"))
}

fn message(result: Result<NkValue, NkError>, name: &str) -> String {
    result.expect_err("an error").lua_message(name)
}

#[tokio::test]
async fn group_create_shapes_and_argument_errors() {
    let w = world().await;
    let owner = user(&w, "owner").await;
    let meta = NkValue::Map(NkMap::new().with("tier", 2i64));
    let group = on(
        &w.nk,
        Naming::Snake,
        "group_create",
        vec![
            s(&owner),
            s("Knights"),
            s(&owner),
            s("fr"),
            s("about"),
            NkValue::Nil,
            true.into(),
            meta,
            5i64.into(),
        ],
    )
    .await
    .expect("create");
    assert_eq!(field(&group, "name").as_str(), Some("Knights"));
    assert_eq!(field(&group, "creator_id").as_str(), Some(owner.as_str()));
    assert_eq!(field(&group, "lang_tag").as_str(), Some("fr"));
    assert_eq!(field(&group, "max_count").as_i64(), Some(5));
    assert_eq!(field(&group, "edge_count").as_i64(), Some(1));
    assert_eq!(field(&group, "create_time").as_i64(), Some(T0_MS / 1000));
    assert_eq!(field(field(&group, "metadata"), "tier").as_i64(), Some(2));
    let again = on(
        &w.nk,
        Naming::Snake,
        "group_create",
        vec![s(&owner), s("Knights")],
    )
    .await;
    assert_eq!(
        message(again, "group_create"),
        "did not create group as a group already exists with the same name"
    );
    let nameless = on(&w.nk, Naming::Snake, "group_create", vec![s(&owner), s("")]).await;
    assert_eq!(
        message(nameless, "group_create"),
        "bad argument #2 to group_create (expects group name not be empty)"
    );
    let bad_max = on(
        &w.nk,
        Naming::Snake,
        "group_create",
        vec![
            s(&owner),
            s("X"),
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            0i64.into(),
        ],
    )
    .await;
    assert_eq!(
        message(bad_max, "group_create"),
        "bad argument #9 to group_create (expects max_count to be >= 1)"
    );
}

#[tokio::test]
async fn membership_rows_act_as_server_or_as_the_named_caller() {
    let w = world().await;
    let owner = user(&w, "owner").await;
    let bob = user(&w, "bob").await;
    let cy = user(&w, "cy").await;
    let group = on(
        &w.nk,
        Naming::Camel,
        "groupCreate",
        vec![s(&owner), s("Closed"), NkValue::Nil],
    )
    .await
    .expect("create");
    assert_eq!(field(&group, "open"), &NkValue::Bool(false));
    let id = field(&group, "id").as_str().expect("id").to_owned();
    on(
        &w.nk,
        Naming::Snake,
        "group_user_join",
        vec![s(&id), s(&bob), s("bob")],
    )
    .await
    .expect("request");
    // Bob, a join request, cannot add anyone; the server can.
    let refused = on(
        &w.nk,
        Naming::Snake,
        "group_users_add",
        vec![s(&id), NkValue::List(vec![s(&cy)]), s(&bob)],
    )
    .await;
    assert_eq!(
        message(refused, "group_users_add"),
        "error while trying to add users into a group: Group not found or permission denied."
    );
    on(
        &w.nk,
        Naming::Snake,
        "group_users_add",
        vec![s(&id), NkValue::List(vec![s(&bob), s(&cy)])],
    )
    .await
    .expect("server adds");
    let listed = on(&w.nk, Naming::Snake, "group_users_list", vec![s(&id)])
        .await
        .expect("list");
    let NkValue::Multi(parts) = listed else {
        panic!("Lua gets two values: {listed:?}");
    };
    let users = parts[0].as_list().expect("users");
    assert_eq!(users.len(), 3);
    assert_eq!(field(&users[0], "state").as_i64(), Some(0));
    assert_eq!(
        field(field(&users[0], "user"), "user_id").as_str(),
        Some(owner.as_str())
    );
    assert!(parts[1].is_nil(), "no cursor on the last page");
    // JS: { userGroups, cursor }.
    let mine = on(&w.nk, Naming::Camel, "userGroupsList", vec![s(&bob)])
        .await
        .expect("user groups");
    let list = mine
        .as_map()
        .and_then(|m| m.get("user_groups"))
        .and_then(NkValue::as_list)
        .expect("userGroups");
    assert_eq!(field(&list[0], "state").as_i64(), Some(2));
    // Promote, demote, kick and ban by the server.
    for (row, expect) in [
        ("group_users_promote", Some(1)),
        ("group_users_demote", Some(2)),
        ("group_users_ban", Some(4)),
        ("group_users_kick", None),
    ] {
        on(
            &w.nk,
            Naming::Snake,
            row,
            vec![s(&id), NkValue::List(vec![s(&bob)])],
        )
        .await
        .expect(row);
        let state = w
            .store
            .member_state(
                Uuid::parse_str(&id).expect("id"),
                Uuid::parse_str(&bob).expect("id"),
            )
            .await
            .expect("state");
        assert_eq!(state, expect, "{row}");
    }
    let root = on(
        &w.nk,
        Naming::Snake,
        "group_users_kick",
        vec![s(&id), NkValue::List(vec![s(&Uuid::nil().to_string())])],
    )
    .await;
    assert_eq!(
        message(root, "group_users_kick"),
        "bad argument #2 to group_users_kick (cannot kick the root user)"
    );
    let listed = on(
        &w.nk,
        Naming::Snake,
        "groups_list",
        vec![
            s("clo%"),
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            10i64.into(),
        ],
    )
    .await
    .expect("groups list");
    let NkValue::Multi(parts) = listed else {
        panic!("two values");
    };
    assert_eq!(parts[0].as_list().map(<[NkValue]>::len), Some(1));
    let got = on(
        &w.nk,
        Naming::Snake,
        "groups_get_id",
        vec![NkValue::List(vec![s(&id)])],
    )
    .await
    .expect("get");
    assert_eq!(got.as_list().map(<[NkValue]>::len), Some(1));
    on(&w.nk, Naming::Snake, "group_delete", vec![s(&id)])
        .await
        .expect("delete");
    let random = on(&w.nk, Naming::Snake, "groups_get_random", vec![5i64.into()])
        .await
        .expect("random");
    assert_eq!(random.as_list().map(<[NkValue]>::len), Some(0));
}

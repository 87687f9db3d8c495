//! The wallet rows through `NkArgs`, as Lua and JavaScript call them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{ManualClock, Objects, Wallets};
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use serde_json::json;
use uuid::Uuid;

use super::super::test_support::{T0_MS, on};
use super::super::{Naming, NkError, NkMap, NkValue};
use crate::nk::{Nk, RuntimeServices};
use crate::testing::FakeMatches;

struct Harness {
    nk: Nk,
    store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

async fn harness() -> Harness {
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
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store.clone(),
        Arc::new(FakeMatches::default()),
        clock.clone(),
    )
    .with_wallets(Arc::new(Wallets::new(store.clone(), clock)));
    Harness {
        nk: Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new())),
        store,
        _dir: dir,
    }
}

async fn user(store: &Arc<dyn Storage>, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: T0_MS,
        })
        .await
        .unwrap();
    id
}

fn s(text: &str) -> NkValue {
    NkValue::from(text)
}

/// A script table / object: keys are data, as engines hand them over.
fn data(pairs: &[(&str, NkValue)]) -> NkValue {
    let mut map = NkMap::new();
    for (k, v) in pairs {
        map.insert_data(*k, v.clone());
    }
    map.into()
}

fn lua_error(result: Result<NkValue, NkError>, name: &str) -> String {
    result.unwrap_err().lua_message(name)
}

async fn wallet_text(store: &Arc<dyn Storage>, id: Uuid) -> String {
    store.account(id).await.unwrap().unwrap().user.wallet
}

#[tokio::test]
async fn lua_wallet_update_returns_updated_and_previous_and_refuses_overdraw() {
    let h = harness().await;
    let alice = user(&h.store, "alice").await;
    let id = s(&alice.to_string());
    let result = on(
        &h.nk,
        Naming::Snake,
        "wallet_update",
        vec![
            id.clone(),
            data(&[("gold", NkValue::Int(10)), ("gems", NkValue::Float(2.0))]),
            data(&[("reason", s("quest"))]),
            NkValue::Bool(true),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        result.to_json(Naming::Snake).unwrap(),
        json!([{"gems": 2, "gold": 10}, {}]),
        "Lua gets two values: updated, then previous"
    );
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_update",
        vec![id.clone(), data(&[("gold", NkValue::Int(-11))])],
    )
    .await;
    assert_eq!(
        lua_error(err, "wallet_update"),
        "failed to update user wallet: wallet update rejected negative value at path 'gold'"
    );
    assert_eq!(
        wallet_text(&h.store, alice).await,
        r#"{"gems":2,"gold":10}"#
    );
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_update",
        vec![
            s(&Uuid::new_v4().to_string()),
            data(&[("gold", NkValue::Int(1))]),
        ],
    )
    .await;
    assert_eq!(lua_error(err, "wallet_update"), "user not found");
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_update",
        vec![id.clone(), data(&[("gold", NkValue::Float(1.5))])],
    )
    .await;
    assert_eq!(
        lua_error(err, "wallet_update"),
        "bad argument #2 to wallet_update (expects changeset values to be whole numbers)"
    );
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_update",
        vec![s("nope"), data(&[])],
    )
    .await;
    assert_eq!(
        lua_error(err, "wallet_update"),
        "bad argument #1 to wallet_update (expects a valid user id)"
    );
    // The ledger recorded the first change only, with its metadata.
    let listed = on(&h.nk, Naming::Snake, "wallet_ledger_list", vec![id])
        .await
        .unwrap()
        .to_json(Naming::Snake)
        .unwrap();
    assert_eq!(listed[0].as_array().unwrap().len(), 1);
    assert_eq!(listed[0][0]["changeset"], json!({"gems": 2, "gold": 10}));
    assert_eq!(listed[0][0]["metadata"], json!({"reason": "quest"}));
    assert_eq!(listed[0][0]["user_id"], json!(alice.to_string()));
    assert_eq!(listed[0][0]["create_time"], json!(T0_MS / 1000));
    assert_eq!(listed[1], json!(""), "no further page: an empty cursor");
}

#[tokio::test]
async fn js_wallet_functions_answer_in_nakamas_js_shapes() {
    let h = harness().await;
    let alice = user(&h.store, "alice").await;
    let bob = user(&h.store, "bob").await;
    let result = on(
        &h.nk,
        Naming::Camel,
        "walletUpdate",
        vec![
            s(&alice.to_string()),
            data(&[("gold", NkValue::Int(5))]),
            NkValue::Nil,
            NkValue::Bool(true),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        result.to_json(Naming::Camel).unwrap(),
        json!({"userId": alice.to_string(), "previous": {}, "updated": {"gold": 5}})
    );
    let results = on(
        &h.nk,
        Naming::Camel,
        "walletsUpdate",
        vec![
            NkValue::List(vec![
                data(&[
                    ("userId", s(&bob.to_string())),
                    ("changeset", data(&[("gold", NkValue::Int(1))])),
                ]),
                data(&[
                    ("userId", s(&alice.to_string())),
                    ("changeset", data(&[("gold", NkValue::Int(-5))])),
                    ("metadata", data(&[("why", s("shop"))])),
                ]),
            ]),
            NkValue::Bool(true),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        results.to_json(Naming::Camel).unwrap(),
        json!([
            {"userId": bob.to_string(), "previous": {}, "updated": {"gold": 1}},
            {"userId": alice.to_string(), "previous": {"gold": 5}, "updated": {"gold": 0}},
        ])
    );
    let page = on(
        &h.nk,
        Naming::Camel,
        "walletLedgerList",
        vec![s(&alice.to_string()), NkValue::Int(1)],
    )
    .await
    .unwrap()
    .to_json(Naming::Camel)
    .unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let cursor = page["cursor"].as_str().expect("a second page").to_owned();
    let last = on(
        &h.nk,
        Naming::Camel,
        "walletLedgerList",
        vec![s(&alice.to_string()), NkValue::Int(1), s(&cursor)],
    )
    .await
    .unwrap()
    .to_json(Naming::Camel)
    .unwrap();
    assert_eq!(last["cursor"], json!(null));
    assert_eq!(last["items"][0]["changeset"], json!({"gold": 5}));
    let id = last["items"][0]["id"].as_str().unwrap().to_owned();
    let updated = on(
        &h.nk,
        Naming::Camel,
        "walletLedgerUpdate",
        vec![s(&id), data(&[("note", s("first"))])],
    )
    .await
    .unwrap()
    .to_json(Naming::Camel)
    .unwrap();
    // Nakama's JS answer: the metadata argument as `changeset`, no metadata.
    assert_eq!(updated["changeset"], json!({"note": "first"}));
    assert_eq!(updated["metadata"], json!(null));
    assert_eq!(updated["id"], json!(id));
    assert_eq!(updated["userId"], json!(alice.to_string()));
    let err = on(
        &h.nk,
        Naming::Camel,
        "walletLedgerUpdate",
        vec![s(&Uuid::new_v4().to_string()), data(&[])],
    )
    .await;
    assert_eq!(
        lua_error(err, "walletLedgerUpdate"),
        "failed to update user wallet ledger: sql: no rows in result set"
    );
}

#[tokio::test]
async fn lua_ledger_update_and_list_arguments() {
    let h = harness().await;
    let alice = user(&h.store, "alice").await;
    let id = s(&alice.to_string());
    on(
        &h.nk,
        Naming::Snake,
        "wallets_update",
        vec![
            NkValue::List(vec![data(&[
                ("user_id", id.clone()),
                ("changeset", data(&[("gold", NkValue::Int(3))])),
                ("metadata", data(&[("a", NkValue::Int(1))])),
            ])]),
            NkValue::Bool(true),
        ],
    )
    .await
    .unwrap();
    let empty = on(
        &h.nk,
        Naming::Snake,
        "wallets_update",
        vec![NkValue::List(Vec::new())],
    )
    .await
    .unwrap();
    assert_eq!(empty, NkValue::Multi(Vec::new()), "nothing for no updates");
    let listed = on(&h.nk, Naming::Snake, "wallet_ledger_list", vec![id.clone()])
        .await
        .unwrap()
        .to_json(Naming::Snake)
        .unwrap();
    let item_id = listed[0][0]["id"].as_str().unwrap().to_owned();
    let item = on(
        &h.nk,
        Naming::Snake,
        "wallet_ledger_update",
        vec![s(&item_id), data(&[("b", NkValue::Int(2))])],
    )
    .await
    .unwrap()
    .to_json(Naming::Snake)
    .unwrap();
    assert_eq!(item["changeset"], json!({"gold": 3}));
    assert_eq!(item["metadata"], json!({"b": 2}), "Lua echoes the argument");
    let listed = on(&h.nk, Naming::Snake, "wallet_ledger_list", vec![id.clone()])
        .await
        .unwrap()
        .to_json(Naming::Snake)
        .unwrap();
    assert_eq!(listed[0][0]["metadata"], json!({"a": 1, "b": 2}), "merged");
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_ledger_list",
        vec![id.clone(), NkValue::Int(101)],
    )
    .await;
    assert_eq!(
        lua_error(err, "wallet_ledger_list"),
        "bad argument #1 to wallet_ledger_list (expects limit to be 0-100)"
    );
    let err = on(
        &h.nk,
        Naming::Snake,
        "wallet_ledger_list",
        vec![id, NkValue::Int(10), s("garbage")],
    )
    .await;
    assert_eq!(
        lua_error(err, "wallet_ledger_list"),
        "failed to retrieve user wallet ledger: wallet ledger cursor invalid"
    );
}

#[tokio::test]
async fn multi_update_writes_everything_or_nothing() {
    let h = harness().await;
    let alice = user(&h.store, "alice").await;
    let id = s(&alice.to_string());
    let account = NkValue::List(vec![data(&[
        ("user_id", id.clone()),
        ("display_name", s("Alice")),
        ("metadata", data(&[("level", NkValue::Int(2))])),
    ])]);
    let write = NkValue::List(vec![data(&[
        ("collection", s("inventory")),
        ("key", s("sword")),
        ("user_id", id.clone()),
        ("value", data(&[("damage", NkValue::Int(3))])),
    ])]);
    let spend = |amount: i64| {
        NkValue::List(vec![data(&[
            ("user_id", id.clone()),
            ("changeset", data(&[("gold", NkValue::Int(amount))])),
        ])])
    };
    let err = on(
        &h.nk,
        Naming::Snake,
        "multi_update",
        vec![
            account.clone(),
            write.clone(),
            NkValue::Nil,
            spend(-1),
            NkValue::Bool(true),
        ],
    )
    .await;
    assert_eq!(
        lua_error(err, "multi_update"),
        "error running multi update: wallet update rejected negative value at path 'gold'"
    );
    let stored = h.store.account(alice).await.unwrap().unwrap();
    assert_eq!(
        stored.user.display_name, "",
        "the account update was undone"
    );
    assert!(h.store.objects_of_user(alice, 10).await.unwrap().is_empty());
    let result = on(
        &h.nk,
        Naming::Snake,
        "multi_update",
        vec![account, write, NkValue::Nil, spend(4), NkValue::Bool(true)],
    )
    .await
    .unwrap()
    .to_json(Naming::Snake)
    .unwrap();
    assert_eq!(result[0][0]["key"], json!("sword"));
    assert_eq!(result[0][0]["user_id"], json!(alice.to_string()));
    assert_eq!(
        result[1],
        json!([{"user_id": alice.to_string(), "previous": {}, "updated": {"gold": 4}}])
    );
    let stored = h.store.account(alice).await.unwrap().unwrap();
    assert_eq!(stored.user.display_name, "Alice");
    assert_eq!(stored.user.metadata, r#"{"level":2}"#);
    assert_eq!(stored.user.wallet, r#"{"gold":4}"#);
    // Nothing asked: Lua gets two nils; JavaScript two empty lists.
    let nothing = on(&h.nk, Naming::Snake, "multi_update", vec![])
        .await
        .unwrap();
    assert_eq!(nothing, NkValue::Multi(vec![NkValue::Nil, NkValue::Nil]));
    let nothing = on(&h.nk, Naming::Camel, "multiUpdate", vec![])
        .await
        .unwrap()
        .to_json(Naming::Camel)
        .unwrap();
    assert_eq!(
        nothing,
        json!({"storageWriteAcks": [], "walletUpdateAcks": []})
    );
    let err = on(
        &h.nk,
        Naming::Snake,
        "multi_update",
        vec![NkValue::List(vec![data(&[("display_name", s("x"))])])],
    )
    .await;
    assert_eq!(
        lua_error(err, "multi_update"),
        "bad argument #1 to multi_update (expects a valid user ID)"
    );
}

//! The notification rows through `NkArgs`, as Lua and JavaScript call them: Nakama's argument
//! rules and texts per language, result shapes, and what reaches storage and sockets.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{ManualClock, NotificationPush, Notifications, NotificationsConfig, Objects};
use metafi_proto::api::Notification;
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use serde_json::json;
use uuid::Uuid;

use super::test_support::{T0_MS, on};
use super::{Naming, NkError, NkValue};
use crate::nk::{Nk, RuntimeServices};
use crate::testing::FakeMatches;

#[derive(Debug, Default)]
struct RecordingPush {
    pushed: Mutex<Vec<(Uuid, Vec<Notification>)>>,
    to_all: Mutex<Vec<Notification>>,
}

impl NotificationPush for RecordingPush {
    fn push(&self, user_id: Uuid, notifications: Vec<Notification>) -> usize {
        self.pushed.lock().push((user_id, notifications));
        1
    }

    fn push_all(&self, notification: Notification) -> usize {
        self.to_all.lock().push(notification);
        1
    }
}

struct Rig {
    nk: Nk,
    store: Arc<dyn Storage>,
    push: Arc<RecordingPush>,
    _dir: tempfile::TempDir,
}

async fn rig() -> Rig {
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
    let push = Arc::new(RecordingPush::default());
    let notifications = Arc::new(Notifications::new(
        store.clone(),
        clock.clone(),
        push.clone(),
        NotificationsConfig::default(),
    ));
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store.clone(),
        Arc::new(FakeMatches::default()),
        clock,
    )
    .with_notifications(notifications);
    Rig {
        nk: Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new())),
        store,
        push,
        _dir: dir,
    }
}

impl Rig {
    async fn user(&self, name: &str) -> Uuid {
        let id = Uuid::new_v4();
        self.store
            .create_user(NewUser {
                id,
                username: name.into(),
                identity: NewIdentity::Device {
                    id: format!("{name}-device-00000"),
                },
                now_ms: T0_MS,
            })
            .await
            .unwrap();
        id
    }

    async fn lua(&self, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
        on(&self.nk, Naming::Snake, name, args).await
    }

    async fn js(&self, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
        on(&self.nk, Naming::Camel, name, args).await
    }
}

fn v(json: serde_json::Value) -> NkValue {
    NkValue::from_json(&json)
}

fn s(text: impl Into<String>) -> NkValue {
    NkValue::from(text.into())
}

fn arg_error(result: Result<NkValue, NkError>) -> (usize, String) {
    match result {
        Err(NkError::Arg { position, message }) => (position, message.into_owned()),
        other => panic!("expected an argument error, got {other:?}"),
    }
}

fn failed(result: Result<NkValue, NkError>) -> String {
    match result {
        Err(NkError::Failed { message }) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn json_of(value: &NkValue) -> serde_json::Value {
    value.to_json(Naming::Snake).unwrap()
}

#[tokio::test]
async fn lua_send_stores_pushes_and_lists_in_nakamas_shape() {
    let rig = rig().await;
    let alice = rig.user("alice").await;
    let sender = Uuid::new_v4();
    rig.lua(
        "notification_send",
        vec![
            s(alice.to_string()),
            s("reward"),
            v(json!({"coins": 10})),
            NkValue::from(101i64),
            s(sender.to_string()),
            NkValue::from(true),
        ],
    )
    .await
    .unwrap();
    // Not persistent by default: pushed, not stored.
    rig.lua(
        "notification_send",
        vec![
            s(alice.to_string()),
            s("live"),
            v(json!({})),
            NkValue::from(-1500i64),
        ],
    )
    .await
    .unwrap();
    let pushed = rig.push.pushed.lock().clone();
    assert_eq!(pushed.len(), 2);
    assert_eq!(pushed[0].1[0].content, r#"{"coins":10}"#);
    assert!(pushed[0].1[0].persistent && !pushed[1].1[0].persistent);
    assert_eq!(pushed[1].1[0].code, -1500, "Nakama's custom system band");

    let listed = rig
        .lua("notifications_list", vec![s(alice.to_string())])
        .await
        .unwrap();
    let NkValue::Multi(values) = listed else {
        panic!("Lua gets two values")
    };
    let list = json_of(&values[0]);
    assert_eq!(
        list,
        json!([{
            "id": pushed[0].1[0].id, "subject": "reward", "content": r#"{"coins":10}"#,
            "code": 101, "senderId": sender.to_string(), "persistent": true,
            "createTime": T0_MS / 1000
        }]),
        "camelCase keys and content as text, in Lua too"
    );
    assert!(values[1].is_nil(), "no cursor when nothing more follows");

    let js = rig
        .js(
            "notificationsList",
            vec![s(alice.to_string()), NkValue::from(1i64)],
        )
        .await
        .unwrap();
    let js = json_of(&js);
    assert_eq!(js["notifications"][0]["subject"], "reward");
    assert_eq!(js["cursor"], serde_json::Value::Null);
}

#[tokio::test]
async fn send_arguments_are_checked_with_each_languages_text() {
    let rig = rig().await;
    let alice = rig.user("alice").await;
    let user = || s(alice.to_string());
    let lua = |args| rig.lua("notification_send", args);
    assert_eq!(
        arg_error(lua(vec![s("nope"), s("x"), v(json!({})), 1i64.into()]).await),
        (1, "expects user_id to be a valid UUID".into())
    );
    assert_eq!(
        arg_error(lua(vec![user(), s(""), v(json!({})), 1i64.into()]).await),
        (2, "expects subject to be a non-empty string".into())
    );
    assert_eq!(
        arg_error(lua(vec![user(), s("x"), v(json!({})), 0i64.into()]).await),
        (4, "expects code number to be a positive integer".into())
    );
    assert_eq!(
        arg_error(lua(vec![user(), s("x"), v(json!({})), 1i64.into(), s("bad")]).await),
        (
            5,
            "expects sender_id to either be not set, empty string or a valid UUID".into()
        )
    );
    let js = |args| rig.js("notificationSend", args);
    assert_eq!(
        arg_error(js(vec![user(), s(""), v(json!({})), 1i64.into()]).await),
        (2, "expects subject to be a non empty string".into())
    );
    assert_eq!(
        arg_error(js(vec![user(), s("x"), NkValue::Nil, 1i64.into()]).await),
        (3, "expects content".into())
    );
    assert_eq!(
        arg_error(js(vec![user(), s("x"), s("text"), 1i64.into()]).await),
        (3, "expects content to be an object".into())
    );
    assert_eq!(
        failed(js(vec![user(), s("x"), v(json!({})), (-5i64).into()]).await),
        "expects code number to be a positive integer"
    );
    // An unknown receiver fails the call, in Nakama's words.
    let stranger = Uuid::new_v4().to_string();
    let message = failed(
        lua(vec![
            s(stranger),
            s("x"),
            v(json!({})),
            1i64.into(),
            NkValue::Nil,
            true.into(),
        ])
        .await,
    );
    assert!(
        message.starts_with("failed to send notifications: "),
        "{message}"
    );
    assert!(rig.push.pushed.lock().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn notifications_send_takes_a_list_and_checks_every_item() {
    let rig = rig().await;
    let alice = rig.user("alice").await;
    let bob = rig.user("bob").await;
    rig.lua(
        "notifications_send",
        vec![v(json!([
            {"user_id": alice.to_string(), "subject": "a", "content": {"n": 1}, "code": 1,
             "persistent": true},
            {"user_id": bob.to_string(), "subject": "b", "content": {}, "code": 2},
        ]))],
    )
    .await
    .unwrap();
    assert_eq!(rig.push.pushed.lock().len(), 2);
    let (_, message) = arg_error(
        rig.lua(
            "notifications_send",
            vec![v(json!([{"subject": "a", "content": {}, "code": 1}]))],
        )
        .await,
    );
    assert_eq!(
        message,
        "expects user_id to be provided and be a valid UUID"
    );
    let (_, message) = arg_error(
        rig.js(
            "notificationsSend",
            vec![v(
                json!([{"userId": alice.to_string(), "subject": "a", "code": 1}]),
            )],
        )
        .await,
    );
    assert_eq!(message, "expects content to be provided and be valid JSON");
    let (_, message) = arg_error(
        rig.lua(
            "notifications_send",
            vec![v(json!([{"user_id": alice.to_string(), "subject": "a",
                            "content": {}, "code": -1500}]))],
        )
        .await,
    );
    assert_eq!(
        message, "expects code to number above 0",
        "Lua has no negative band here"
    );
    rig.js(
        "notificationsSend",
        vec![v(
            json!([{"userId": alice.to_string(), "subject": "j", "content": {},
                        "code": -1500, "persistent": true}]),
        )],
    )
    .await
    .unwrap();
    let (_, message) = arg_error(rig.js("notificationsSend", vec![NkValue::Nil]).await);
    assert_eq!(message, "expects a valid array of notifications");
}

#[tokio::test]
async fn get_update_and_delete_by_id_as_server_code() {
    let rig = rig().await;
    let alice = rig.user("alice").await;
    let bob = rig.user("bob").await;
    rig.lua(
        "notifications_send",
        vec![v(json!([
            {"user_id": alice.to_string(), "subject": "a", "content": {"n": 1}, "code": 1,
             "persistent": true},
            {"user_id": bob.to_string(), "subject": "b", "content": {}, "code": 2,
             "persistent": true},
        ]))],
    )
    .await
    .unwrap();
    let pushed = rig.push.pushed.lock().clone();
    let a = pushed[0].1[0].id.clone();
    let b = pushed[1].1[0].id.clone();

    let lua = rig
        .lua("notifications_get_id", vec![v(json!([a.clone()]))])
        .await
        .unwrap();
    assert_eq!(
        json_of(&lua),
        json!([{
            "code": 1, "content": {"n": 1}, "subject": "a", "user_id": alice.to_string(),
            "create_time": T0_MS / 1000, "persistent": true
        }]),
        "Lua: no id, no sender_id for the system, content as a table"
    );
    let js = rig
        .js(
            "notificationsGetId",
            vec![v(json!([a.clone(), b.clone()])), s(bob.to_string())],
        )
        .await
        .unwrap();
    assert_eq!(
        json_of(&js),
        json!([{
            "id": b, "userId": bob.to_string(), "subject": "b", "persistent": true,
            "content": {}, "code": 2, "sender": "", "createTime": T0_MS / 1000
        }]),
        "JavaScript: only the given user's"
    );
    let (_, message) = arg_error(
        rig.lua("notifications_get_id", vec![v(json!(["nope"]))])
            .await,
    );
    assert_eq!(message, "each notification id must be a valid id");
    let (_, message) = arg_error(rig.js("notificationsGetId", vec![v(json!(["nope"]))]).await);
    assert_eq!(message, "invalid user id: nope");

    let sender = Uuid::new_v4();
    rig.lua(
        "notifications_update",
        vec![v(
            json!([{"id": a.clone(), "subject": "renamed", "content": {"n": 2},
                        "sender": sender.to_string()}]),
        )],
    )
    .await
    .unwrap();
    let updated = rig
        .js("notificationsGetId", vec![v(json!([a.clone()]))])
        .await
        .unwrap();
    let updated = json_of(&updated);
    assert_eq!(updated[0]["subject"], "renamed");
    assert_eq!(updated[0]["content"], json!({"n": 2}));
    assert_eq!(updated[0]["sender"], sender.to_string());
    let (_, message) = arg_error(
        rig.js("notificationsUpdate", vec![v(json!([{"subject": "x"}]))])
            .await,
    );
    assert_eq!(message, "expects 'id' value to be set");
    let (_, message) = arg_error(
        rig.lua(
            "notifications_update",
            vec![v(json!([{"id": a.clone(), "subject": ""}]))],
        )
        .await,
    );
    assert_eq!(message, "expects subject to be a non-empty string");

    // notifications_delete: only the named user's.
    rig.lua(
        "notifications_delete",
        vec![v(
            json!([{"user_id": bob.to_string(), "notification_id": a.clone()}]),
        )],
    )
    .await
    .unwrap();
    let still = rig
        .lua("notifications_get_id", vec![v(json!([a.clone()]))])
        .await
        .unwrap();
    assert_eq!(json_of(&still).as_array().map(Vec::len), Some(1));
    rig.js(
        "notificationsDelete",
        vec![v(
            json!([{"userId": alice.to_string(), "notificationId": a.clone()}]),
        )],
    )
    .await
    .unwrap();
    rig.lua("notifications_delete_id", vec![v(json!([b.clone()]))])
        .await
        .unwrap();
    let gone = rig
        .lua("notifications_get_id", vec![v(json!([a, b]))])
        .await
        .unwrap();
    assert_eq!(json_of(&gone), json!([]));
}

#[tokio::test]
async fn send_all_pushes_or_stores_for_everyone() {
    let rig = rig().await;
    let alice = rig.user("alice").await;
    rig.lua(
        "notification_send_all",
        vec![s("hello"), v(json!({})), 3i64.into()],
    )
    .await
    .unwrap();
    assert_eq!(
        rig.push.to_all.lock().len(),
        1,
        "not persistent: every socket"
    );
    rig.js(
        "notificationSendAll",
        vec![s("kept"), v(json!({"k": 1})), 3i64.into(), true.into()],
    )
    .await
    .unwrap();
    let listed = rig
        .js("notificationsList", vec![s(alice.to_string())])
        .await
        .unwrap();
    assert_eq!(json_of(&listed)["notifications"][0]["subject"], "kept");
    assert_eq!(
        arg_error(
            rig.lua(
                "notification_send_all",
                vec![s("x"), v(json!({})), 0i64.into()]
            )
            .await
        ),
        (3, "expects code number to be a positive integer".into())
    );
    let (position, message) = arg_error(
        rig.lua(
            "notifications_list",
            vec![s(alice.to_string()), 1001i64.into()],
        )
        .await,
    );
    assert_eq!(
        (position, message.as_str()),
        (2, "expects limit to be value between 1 and 1000")
    );
}

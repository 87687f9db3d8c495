//! The `ListNotifications` and `DeleteNotifications` hooks over real HTTP, with a Lua module:
//! a before hook that changes the listing's limit, one that drops a delete, and an after hook
//! that sees the listing.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_runtime::nk_api::{NkValue, call};
use metafi_storage::ObjectId;
use metafi_testkit::{TestNode, user};

const LUA: &str = r#"
local nk = require("nakama")
nk.register_req_before(function(context, payload)
  payload.limit = 2
  return payload
end, "ListNotifications")
nk.register_req_after(function(context, output, input)
  nk.storage_write({ { collection = "hooks", key = "list-after", value = { listed = #output.notifications, limit = input.limit }, permission_read = 2, permission_write = 0 } })
end, "ListNotifications")
nk.register_req_before(function(context, payload)
  if #payload.ids > 1 then
    return nil
  end
  return payload
end, "DeleteNotifications")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_calls_run_their_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("hooks.lua"), LUA).unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await;
    let http = s.http();
    let ada = user(&http).await;
    for n in 0..3 {
        call(
            &s.nk(),
            "notification_send",
            vec![
                NkValue::from(ada.id.as_str()),
                NkValue::from(format!("n{n}")),
                NkValue::from_json(&serde_json::json!({ "n": n })),
                NkValue::from(1i64),
                NkValue::Nil,
                NkValue::from(true),
            ],
        )
        .await
        .unwrap();
    }

    // Without a limit Nakama lists one; the before hook asked for two.
    let listed = http
        .send(http.get("/v2/notification").bearer_auth(&ada.token))
        .await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let notifications = listed.body["notifications"].as_array().unwrap();
    assert_eq!(notifications.len(), 2, "{:?}", listed.body);
    let seen = s
        .nk()
        .storage_read(vec![ObjectId {
            collection: "hooks".into(),
            key: "list-after".into(),
            user_id: uuid::Uuid::nil(),
        }])
        .await
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&seen[0].value).unwrap();
    assert_eq!(value, serde_json::json!({ "listed": 2, "limit": 2 }));

    let (a, b) = (
        notifications[0]["id"].as_str().unwrap(),
        notifications[1]["id"].as_str().unwrap(),
    );
    let dropped = http
        .send(
            reqwest::Client::new()
                .delete(format!("{}/v2/notification?ids={a}&ids={b}", s.base))
                .bearer_auth(&ada.token),
        )
        .await;
    assert_eq!(dropped.status, 404, "{:?}", dropped.body);
    assert_eq!(dropped.body["message"], "Requested resource was not found.");
    let deleted = http
        .send(
            reqwest::Client::new()
                .delete(format!("{}/v2/notification?ids={a}", s.base))
                .bearer_auth(&ada.token),
        )
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    let left = http
        .send(
            http.get("/v2/notification?limit=100")
                .bearer_auth(&ada.token),
        )
        .await;
    assert_eq!(left.body["notifications"].as_array().map(Vec::len), Some(2));
    s.stop().await;
}

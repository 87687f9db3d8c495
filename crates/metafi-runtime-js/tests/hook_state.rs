//! A hook call's `ctx`, logger and request are new objects on every call (as Nakama gives a
//! fresh `ctx` per call), although their keys' atoms, the strings they repeat and their shapes
//! are kept once per VM (`context.rs`, `hook_value.rs`): a script that keeps and changes them
//! in one call sees none of it in the next.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use metafi_core::{Hook, Hooks, RpcContext};
use serde_json::{Value, json};
use support::{Options, build, fixture};

#[tokio::test]
async fn a_hook_that_keeps_and_changes_its_ctx_and_request_changes_nothing_for_the_next_call() {
    let mut options = Options::new(fixture("hook_state"));
    // One VM, so every call meets the objects the previous call kept; globals writable, so the
    // module can keep them.
    options.vms = 1;
    options.read_only_globals = false;
    let h = build(options).await.unwrap();
    let hooks = h.runtime.hooks();
    let request = json!({
        "account": {"id": "device-1", "vars": {"some_key": "v", "otherKey": "w"}},
        "create": true,
        "username": "",
    });
    // A signed-in caller with an address: every ctx field a call adds is defined, never
    // assigned through a setter of that name (the fixture counts setter calls).
    let user_id = uuid::Uuid::from_u128(7);
    let session_id = uuid::Uuid::from_u128(9);
    let context = RpcContext {
        user: Some(metafi_core::RpcUser {
            user_id,
            username: "alice".into(),
            session_id,
            vars: [("k".to_owned(), "v".to_owned())].into(),
            expires_at: 1_700_000_000,
        }),
        client_ip: Some([127, 0, 0, 1].into()),
        ..RpcContext::default()
    };
    for call in 1..=3 {
        let answer = hooks
            .before(
                Hook::AuthenticateDevice,
                context.clone(),
                Some(request.clone()),
            )
            .await
            .unwrap()
            .unwrap();
        let report: Value =
            serde_json::from_str(answer["account"]["id"].as_str().unwrap()).unwrap();
        assert_eq!(
            report,
            json!({
                "extra": "none",
                "node": "test-node",
                "mode": "before",
                "fields": "",
                "user": format!("{user_id}|alice|1700000000|{session_id}|127.0.0.1"),
                "headers": false,
                "reused": false,
                "accountId": "device-1",
                "vars": "otherKey,some_key",
                "setterCalls": 0,
            }),
            "call {call}"
        );
    }
}

//! A hook call's `ctx`, logger and request are new objects on every call (as Nakama gives a
//! fresh `ctx` per call), although the hook's entry and field names are prepared once per VM
//! (`vm.rs`, `CALL_ENTRY`; `hook_value.rs`): a script that keeps and changes them in one call
//! sees none of it in the next.

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
    for call in 1..=3 {
        let answer = hooks
            .before(
                Hook::AuthenticateDevice,
                RpcContext::default(),
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
                "rpcId": "\u{1}before:authenticatedevice",
                "headers": 0,
                "reused": false,
                "accountId": "device-1",
                "vars": "otherKey,some_key",
                "setterCalls": 0,
            }),
            "call {call}"
        );
    }
}

//! Lua hooks through the call entry (`call_entry.rs`): a hook that waits in an `nk` call is
//! resumed and finishes, on the inline path and on the pool; what a call does to its `ctx` and
//! request tables, kept or changed, never reaches the next call (each call gets fresh tables
//! on a reused coroutine); a runaway hook, or one waiting past its budget, ends with code 4,
//! and a coroutine abandoned half-way never serves the next call; a hook that ends without
//! waiting (run to its end in the call's first protected call) drops the call, raises its
//! error with its code, or has its result read as JSON, and the VM serves the next call.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::RpcContext;
use metafi_core::hooks::{Hook, Hooks};
use metafi_proto::Code;
use serde_json::{Value, json};
use support::{Harness, Options, build};

const LUA: &str = r#"
local nk = require("nakama")
local kept_ctx, kept_request
nk.register_req_before(function(ctx, request)
  local id = request.account.id
  if id == "spin" then while true do end end
  -- Waits at the fake match host's gate, which the test keeps closed: past the budget.
  if id == "wait" then nk.match_signal("sleep", "gate") end
  -- Ends in its first run (no wait): each way a call can end there.
  if id == "drop" then return nil end
  if id == "raise" then error({ "not you", 7 }) end
  if id == "nan" then request.username = 0 / 0 return request end
  if id == "list" then return { request.account.id, 1.5, { vars = request.account.vars } } end
  if id:sub(1, 5) == "store" then
    -- Both calls wait for the store: the coroutine yields and is resumed.
    nk.storage_write({ { collection = "hooks", key = id, value = { seen = id } } })
    local read = nk.storage_read({ { collection = "hooks", key = id } })
    request.username = read[1].value.seen .. "-stored"
    return request
  end
  local seen = {
    same_ctx = kept_ctx == ctx, same_request = kept_request == request,
    user_id = ctx.user_id, marker = ctx.headers.Marker, mode = ctx.execution_mode,
    id = id, extra = request.extra, vars = ctx.vars and ctx.vars.k,
  }
  kept_ctx, kept_request = ctx, request
  ctx.user_id, ctx.execution_mode, ctx.headers.Marker = "changed", "changed", { "changed" }
  if ctx.vars then ctx.vars.k = "changed" end
  request.account.id, request.extra = "changed", "changed"
  request.username = nk.json_encode(seen)
  return request
end, "AuthenticateDevice")
nk.register_req_after(function(ctx, output, input)
  nk.storage_write({ { collection = "hooks", key = "after-" .. input.account.id,
    value = { token = output.token, mode = ctx.execution_mode } } })
end, "AuthenticateDevice")
nk.register_rpc(function(ctx, key)
  local read = nk.storage_read({ { collection = "hooks", key = key } })
  return nk.json_encode(read[1] and read[1].value)
end, "read")
"#;

async fn harness(inline_vms: Option<usize>) -> (Arc<Harness>, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("hooks.lua"), LUA).unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    options.call_timeout = Duration::from_millis(500);
    options.inline_vms = inline_vms;
    (Arc::new(build(options).await.unwrap()), modules)
}

fn request(id: &str) -> Value {
    json!({"account": {"id": id, "vars": {}}, "create": true, "username": ""})
}

async fn before(h: &Harness, ctx: RpcContext, id: &str) -> Result<Value, metafi_core::CoreError> {
    h.runtime
        .hooks()
        .before(Hook::AuthenticateDevice, ctx, Some(request(id)))
        .await
        .map(|answer| answer.unwrap())
}

/// Before and after hooks that wait for storage, several in a row, then an after hook's write.
async fn waiting_hooks_finish(h: &Arc<Harness>) {
    for i in 0..4 {
        let id = format!("store{i}");
        let answer = before(h, RpcContext::default(), &id).await.unwrap();
        assert_eq!(answer["username"], format!("{id}-stored"));
        h.runtime
            .hooks()
            .after(
                Hook::AuthenticateDevice,
                RpcContext::default(),
                Some(json!({"token": format!("t{i}")})),
                Some(request(&id)),
            )
            .await;
        let stored = h.call("read", &format!("after-{id}")).await.unwrap();
        let value: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(value, json!({"token": format!("t{i}"), "mode": "after"}));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hook_waiting_in_an_nk_call_finishes_on_the_inline_path() {
    let (h, _m) = harness(None).await;
    let inner = h.clone();
    tokio::spawn(async move { waiting_hooks_finish(&inner).await })
        .await
        .unwrap();
    assert!(h.runtime.inline_stats("lua").0 >= 8, "the hooks ran inline");
}

#[tokio::test]
async fn a_hook_waiting_in_an_nk_call_finishes_on_the_pool() {
    let (h, _m) = harness(Some(0)).await;
    waiting_hooks_finish(&h).await;
    assert_eq!(
        h.runtime.inline_stats("lua").0,
        0,
        "the hooks took the pool"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hook_that_keeps_and_changes_ctx_and_request_does_not_change_the_next_call() {
    let (h, _m) = harness(None).await;
    let inner = h.clone();
    tokio::spawn(async move {
        let ctx = || RpcContext {
            user: Some(metafi_core::RpcUser {
                user_id: uuid::Uuid::from_u128(7),
                username: "u".into(),
                vars: HashMap::from([("k".to_owned(), "v".to_owned())]),
                expires_at: 1,
                session_id: uuid::Uuid::nil(),
            }),
            headers: metafi_core::RequestHeaders::from_pairs([("marker", "m")]).unwrap(),
            ..RpcContext::default()
        };
        for call in 0..3 {
            let answer = before(&inner, ctx(), "d").await.unwrap();
            let seen: Value = serde_json::from_str(answer["username"].as_str().unwrap()).unwrap();
            assert_eq!(
                seen,
                json!({
                    "same_ctx": false, "same_request": false,
                    "user_id": "00000000-0000-0000-0000-000000000007", "marker": ["m"],
                    "mode": "before", "id": "d", "vars": "v",
                }),
                "call {call}"
            );
            // The hook's changes are its answer, as Nakama serves a before hook's result.
            assert_eq!(answer["account"]["id"], "changed");
        }
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_runaway_hook_ends_with_code_4_and_the_next_calls_are_served() {
    let (h, _m) = harness(None).await;
    let inner = h.clone();
    tokio::spawn(async move {
        for _ in 0..2 {
            let error = before(&inner, RpcContext::default(), "spin")
                .await
                .unwrap_err();
            assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
            let answer = before(&inner, RpcContext::default(), "store-after-spin")
                .await
                .unwrap();
            assert_eq!(answer["username"], "store-after-spin-stored");
        }
    })
    .await
    .unwrap();
}

/// The abandoned call's coroutine is suspended inside `nk.match_signal`; were it reused, the
/// next call's arguments would resume that wait instead of starting the hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hook_waiting_past_its_budget_ends_with_code_4_and_the_next_calls_are_served() {
    let (h, _m) = harness(None).await;
    let inner = h.clone();
    tokio::spawn(async move {
        for i in 0..2 {
            let error = before(&inner, RpcContext::default(), "wait")
                .await
                .unwrap_err();
            assert_eq!(error.code(), Code::DeadlineExceeded, "{error:?}");
            let id = format!("store-after-wait{i}");
            let answer = before(&inner, RpcContext::default(), &id).await.unwrap();
            assert_eq!(answer["username"], format!("{id}-stored"));
        }
    })
    .await
    .unwrap();
    assert_eq!(h.matches.gate.arrived(), 2, "both waits reached the gate");
    assert!(h.runtime.inline_stats("lua").0 >= 4, "the hooks ran inline");
}

/// Every way a before hook can end in its first run, each followed by a call that waits on the
/// same VM (so the coroutines given back after each are sound).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hook_that_ends_without_waiting_drops_raises_or_returns_json() {
    let (h, _m) = harness(None).await;
    let inner = h.clone();
    tokio::spawn(async move {
        let hooks = inner.runtime.hooks();
        for i in 0..2 {
            let dropped = hooks
                .before(
                    Hook::AuthenticateDevice,
                    RpcContext::default(),
                    Some(request("drop")),
                )
                .await
                .unwrap();
            assert_eq!(dropped, None, "nil drops the call");
            let raised = before(&inner, RpcContext::default(), "raise")
                .await
                .unwrap_err();
            assert_eq!(raised.code(), Code::PermissionDenied, "{raised:?}");
            assert!(raised.to_string().contains("not you"), "{raised}");
            let nan = before(&inner, RpcContext::default(), "nan")
                .await
                .unwrap_err();
            assert_eq!(nan.code(), Code::Internal, "{nan:?}");
            let list = before(&inner, RpcContext::default(), "list").await.unwrap();
            assert_eq!(list, json!(["list", 1.5, {"vars": {}}]));
            let id = format!("store-after-ends{i}");
            let answer = before(&inner, RpcContext::default(), &id).await.unwrap();
            assert_eq!(answer["username"], format!("{id}-stored"));
        }
    })
    .await
    .unwrap();
    assert!(
        h.runtime.inline_stats("lua").0 >= 10,
        "the hooks ran inline"
    );
}

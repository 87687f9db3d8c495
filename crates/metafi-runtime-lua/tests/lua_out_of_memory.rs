//! A script at its VM's memory cap: `nk.json_decode` of a large text fails with a Lua error
//! the script catches ("not enough memory"), a hook whose request does not fit in what is left
//! fails with RESOURCE_EXHAUSTED, and in both cases the VM serves the next call. The tables
//! are built outside the Rust frames that walk the JSON text or the request
//! (`src/tape.rs`), so the memory error never unwinds through those.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::time::Duration;

use metafi_core::{CoreError, Hook, HookValue, Hooks, RpcContext};
use metafi_proto::Code;
use serde::{Deserialize, Serialize};
use support::{Harness, Options, build};

/// A device sign-in request as the REST edge hands it to hooks (proto field names).
#[derive(Serialize, Deserialize)]
struct AuthenticateRequest {
    account: AccountId,
    create: Option<bool>,
    username: String,
}

#[derive(Serialize, Deserialize)]
struct AccountId {
    id: String,
    vars: HashMap<String, String>,
}

/// The VM's cap: small, so a test reaches it quickly.
const CAP: usize = 8 << 20;

const LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(ctx, payload)
  -- 100,001 empty tables (≈ 6 MB) from a 300 KB text, with a quarter of the cap held.
  local held = string.rep("h", 2 * 1024 * 1024)
  local text = "[" .. string.rep("[],", 100000) .. "[]]"
  local ok, e = pcall(nk.json_decode, text)
  text = nil
  collectgarbage()
  local small = nk.json_decode('{"a":[1,null,3],"b":"c\\n"}')
  return tostring(ok) .. "|" .. tostring(e) .. "|" .. #small.a .. small.b .. #held
end, "decode")
hog = nil
nk.register_rpc(function(ctx, payload)
  -- Holds memory until under 512 KiB of the cap is left.
  hog = {}
  local cap_kb = tonumber(payload)
  while collectgarbage("count") < cap_kb - 512 do
    hog[#hog + 1] = string.rep("x", 16 * 1024) .. #hog
  end
  return tostring(#hog)
end, "fill")
nk.register_rpc(function(ctx, payload)
  hog = nil
  collectgarbage()
  return "freed"
end, "free")
nk.register_req_before(function(ctx, request)
  local n = 0
  for _ in pairs(request.account.vars) do n = n + 1 end
  request.username = request.account.id .. ":" .. n
  return request
end, "AuthenticateDevice")
"#;

async fn harness() -> (Harness, tempfile::TempDir) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("memory.lua"), LUA).unwrap();
    let mut options = Options::new(modules.path().to_owned());
    options.vms = 1;
    // One VM serves every call, on the pool: the call after a failure runs on the same VM.
    options.inline_vms = Some(0);
    options.call_timeout = Duration::from_secs(20);
    options.memory_limit_bytes = CAP;
    (build(options).await.unwrap(), modules)
}

async fn call(h: &Harness, id: &str, payload: &str) -> Result<String, CoreError> {
    tokio::time::timeout(Duration::from_secs(60), h.call(id, payload))
        .await
        .unwrap_or_else(|_| panic!("no answer at all (the VM is wedged): {id}"))
}

/// A device sign-in whose `vars` hold `vars` entries (≈ 100 bytes of Lua memory each).
async fn before(h: &Harness, vars: usize) -> Result<serde_json::Value, CoreError> {
    let request = AuthenticateRequest {
        account: AccountId {
            id: "device".into(),
            vars: (0..vars)
                .map(|i| (format!("key-{i}"), format!("value-{i}")))
                .collect::<HashMap<_, _>>(),
        },
        create: Some(true),
        username: String::new(),
    };
    h.runtime
        .hooks()
        .before_value(
            Hook::AuthenticateDevice,
            RpcContext::default(),
            Some(HookValue::message(request)),
        )
        .await
        .map(|answer| answer.unwrap().into_json().unwrap())
}

#[tokio::test]
async fn json_decode_past_the_memory_cap_is_an_error_the_script_catches() {
    let (h, _m) = harness().await;
    for _ in 0..3 {
        assert_eq!(
            call(&h, "decode", "").await.unwrap(),
            format!("false|not enough memory|3c\n{}", 2 * 1024 * 1024)
        );
    }
}

#[tokio::test]
async fn a_hook_request_past_the_memory_cap_fails_and_the_vm_serves_the_next_call() {
    let (h, _m) = harness().await;
    let answer = before(&h, 3).await.unwrap();
    assert_eq!(answer["username"], "device:3");
    let held: usize = call(&h, "fill", &(CAP / 1024).to_string())
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert!(held > 100, "the script holds {held} strings");
    // ≈ 2 MB of tables and strings, with under 512 KiB left.
    let e = before(&h, 20_000).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert_eq!(call(&h, "free", "").await.unwrap(), "freed");
    let answer = before(&h, 20_000).await.unwrap();
    assert_eq!(answer["username"], "device:20000");
}

//! `POST/GET /v2/rpc/{id}` over HTTP with Nakama's semantics: session token or HTTP key,
//! JSON-string bodies or `unwrap`, the Lua and native echoes, and the error codes.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use metafi_testkit::{Http, TestNode, assert_error};

const CONTEXT_LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({
    user_id = context.user_id,
    username = context.username,
    query = context.query_params,
    env = context.env,
    payload = payload,
    has_ip = context.client_ip ~= nil,
  })
end, "ctx")
nk.register_rpc(function(context, payload)
  error({ "teapot refused", 9 })
end, "refuse")
"#;

async fn server(dir: &Path) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    let echo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua/echo.lua");
    std::fs::copy(echo, modules.join("echo.lua")).unwrap();
    let echo_js = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/js/echo.js");
    std::fs::copy(echo_js, modules.join("echo.js")).unwrap();
    std::fs::write(modules.join("ctx.lua"), CONTEXT_LUA).unwrap();
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.runtime.env = vec!["stage=test".into()];
        raw.runtime.lua_vms = 2;
    })
    .await
}

#[tokio::test]
async fn a_session_token_calls_lua_and_native_echoes() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    for id in ["echo", "ECHO", "echo_native"] {
        let reply = http
            .send(
                http.post(&format!("/v2/rpc/{id}"))
                    .bearer_auth(&token)
                    .json(&r#"{"b":2,"a":[1]}"#),
            )
            .await;
        assert_eq!(reply.status, 200, "{id}: {}", reply.body);
        assert_eq!(reply.body["payload"], r#"{"a":[1],"b":2}"#, "{id}");
    }
    s.stop().await;
}

#[tokio::test]
async fn invalid_json_payloads_get_code_3_from_every_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    for id in ["echo", "echo_native"] {
        let reply = http
            .send(
                http.post(&format!("/v2/rpc/{id}"))
                    .bearer_auth(&token)
                    .json(&"{not json"),
            )
            .await;
        assert_error(&reply, 400, 3);
    }
    s.stop().await;
}

/// The three example echoes answered an empty or invalid payload each in its own words (the
/// engine's parser error); a client must not be able to tell which engine answered.
#[tokio::test]
async fn echo_answers_are_identical_in_lua_js_and_native() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    let payloads = [
        "",
        "   ",
        "{not json",
        "[1,2",
        "nul",
        // No `null`s: a Lua table cannot hold nil, so Lua drops them (as Nakama's Lua does).
        r#"{"b":2,"a":[1,{"d":false,"c":"é"}]}"#,
        // Not `[]`: an empty Lua table encodes as `{}` (as in Nakama's Lua).
        "{}",
        r#""text""#,
    ];
    for payload in payloads {
        let mut answers = Vec::new();
        for id in ["echo", "echo_js", "echo_native"] {
            let reply = http
                .send(
                    http.post(&format!("/v2/rpc/{id}"))
                        .bearer_auth(&token)
                        .json(&payload),
                )
                .await;
            answers.push((id, reply.status, reply.body.to_string()));
        }
        let (_, status, body) = &answers[0];
        for (id, other_status, other_body) in &answers[1..] {
            assert_eq!(
                (other_status, other_body),
                (status, body),
                "payload {payload:?}: {id} differs from the Lua echo"
            );
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn the_http_key_calls_without_a_user_and_a_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);

    let reply = http
        .send(
            http.post("/v2/rpc/ctx?http_key=defaulthttpkey&x=1")
                .json(&"hi"),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let ctx: serde_json::Value =
        serde_json::from_str(reply.body["payload"].as_str().unwrap()).unwrap();
    assert!(
        ctx.get("user_id").is_none(),
        "no user with the HTTP key: {ctx}"
    );
    assert_eq!(ctx["payload"], "hi");
    assert_eq!(ctx["query"]["x"][0], "1");
    assert!(
        ctx["query"].get("http_key").is_none(),
        "the key is not shown to scripts"
    );
    assert_eq!(ctx["env"]["stage"], "test");
    assert_eq!(ctx["has_ip"], true);

    // The key as the basic-auth username works too (server-to-server clients use it).
    let reply = http
        .send(
            http.post("/v2/rpc/ctx")
                .basic_auth("defaulthttpkey", Some(""))
                .json(&"x"),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);

    let reply = http
        .send(http.post("/v2/rpc/ctx?http_key=wrong").json(&"hi"))
        .await;
    assert_error(&reply, 401, 16);
    assert_eq!(reply.body["message"], "HTTP key invalid");
    let reply = http
        .send(
            http.post("/v2/rpc/ctx")
                .basic_auth("wrong", Some(""))
                .json(&"hi"),
        )
        .await;
    assert_error(&reply, 401, 16);
    let reply = http.send(http.post("/v2/rpc/ctx").json(&"hi")).await;
    assert_error(&reply, 401, 16);
    assert_eq!(reply.body["message"], "Auth token or HTTP key required");
    let reply = http
        .send(
            http.post("/v2/rpc/ctx")
                .bearer_auth("not-a-token")
                .json(&"hi"),
        )
        .await;
    assert_error(&reply, 401, 16);
    s.stop().await;
}

#[tokio::test]
async fn the_caller_reaches_the_script_context() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    let reply = http
        .send(http.post("/v2/rpc/ctx").bearer_auth(&token).json(&"p"))
        .await;
    let ctx: serde_json::Value =
        serde_json::from_str(reply.body["payload"].as_str().unwrap()).unwrap();
    let account = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(ctx["user_id"], account.body["user"]["id"]);
    assert_eq!(ctx["username"], account.body["user"]["username"]);
    s.stop().await;
}

#[tokio::test]
async fn get_takes_the_payload_from_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let reply = http
        .send(http.get("/v2/rpc/echo_native").query(&[
            ("http_key", "defaulthttpkey"),
            ("payload", r#"{"k":"v w"}"#),
        ]))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["payload"], r#"{"k":"v w"}"#);
    s.stop().await;
}

#[tokio::test]
async fn unwrap_sends_and_returns_the_payload_as_is() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;
    let response = reqwest::Client::new()
        .post(format!("{}/v2/rpc/echo?unwrap", s.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(r#"{"raw":true}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.unwrap(), r#"{"raw":true}"#);
    s.stop().await;
}

#[tokio::test]
async fn missing_rpcs_bad_bodies_and_script_codes_map_to_nakamas_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (token, _) = http.new_session().await;

    let reply = http
        .send(http.post("/v2/rpc/nope").bearer_auth(&token).json(&"{}"))
        .await;
    assert_error(&reply, 404, 5);
    assert_eq!(reply.body["message"], "RPC function not found");

    // Without unwrap the body must be a JSON string.
    let reply = http
        .send(
            http.post("/v2/rpc/echo")
                .bearer_auth(&token)
                .json(&serde_json::json!({"a": 1})),
        )
        .await;
    assert_error(&reply, 400, 3);

    let reply = http
        .send(http.post("/v2/rpc/refuse").bearer_auth(&token).json(&""))
        .await;
    assert_error(&reply, 400, 9);
    assert_eq!(reply.body["message"], "teapot refused");

    let reply = http
        .send(http.post("/v2/rpc/").bearer_auth(&token).json(&""))
        .await;
    assert_error(&reply, 400, 3);
    s.stop().await;
}

#[tokio::test]
async fn a_module_error_stops_the_server_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(
        modules.join("broken.lua"),
        "local nk = require('nakama')\n\nnk.register_rpc(nil, 'x')\n",
    )
    .unwrap();
    let error = TestNode::try_start_in(dir.path(), |raw| {
        raw.metrics.enabled = false;
        raw.runtime.path = modules.display().to_string();
    })
    .await
    .err()
    .expect("a module error stops the start");
    let text = format!("{error:#}");
    assert!(text.contains("broken.lua:3:"), "{text}");
    assert!(text.contains("register_rpc"), "{text}");
}

//! Before/after hooks over real HTTP and socket calls, the same checks for each runtime (Lua,
//! JavaScript, native): a before hook that changes device authentication (sets the username),
//! one that rejects it with a code, one that returns nothing (the call is dropped), an after
//! hook that sees the answer, and a realtime before hook that changes a chat message.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use std::time::Duration;

use metafi_proto::realtime::{
    ChannelJoin, ChannelMessageSend, Envelope, ErrorCode, MatchCreate, MatchDataSend, MatchJoin,
    MatchJoinId, Message, channel_type,
};
use metafi_testkit::{Http, Socket, TestNode, assert_error, user};

const LUA: &str = r#"
local nk = require("nakama")
nk.register_req_before(function(context, payload)
  local id = payload.account.id
  if id:sub(1, 7) == "rename-" then
    payload.username = "lua_" .. id:sub(8)
  elseif id:sub(1, 7) == "reject-" then
    error({ "lua hook refused the device", 7 })
  elseif id:sub(1, 5) == "drop-" then
    return nil
  end
  return payload
end, "AuthenticateDevice")
nk.register_req_after(function(context, output, input)
  local id = input.account.id
  if id:sub(1, 6) == "after-" then
    nk.storage_write({ { collection = "hooks", key = id, value = { token = output.token, runtime = "lua", mode = context.execution_mode }, permission_read = 2, permission_write = 0 } })
  end
end, "authenticatedevice")
nk.register_rt_before(function(context, envelope)
  envelope.channel_message_send.content = nk.json_encode({ hooked = "lua" })
  return envelope
end, "ChannelMessageSend")
nk.register_rt_before(function(context, envelope)
  local target = envelope.channel_join.target
  if target == "forbidden" then
    error({ "lua hook refused the join", 3 })
  elseif target == "void" then
    return nil
  end
  return envelope
end, "channeljoin")
nk.register_rt_after(function(context, output, input)
  nk.storage_write({ { collection = "hooks", key = "rt-after", value = { message_id = output.channel_message_ack.message_id, content = input.channel_message_send.content, user_id = context.user_id }, permission_read = 2, permission_write = 0 } })
end, "ChannelMessageSend")
nk.register_req_after(function(context, output, input)
  nk.storage_write({ { collection = "hooks", key = "update-after", value = { display_name = input.display_name, output_is_nil = output == nil, user_id = context.user_id }, permission_read = 2, permission_write = 0 } })
end, "UpdateAccount")
nk.register_shutdown(function(context)
  nk.storage_write({ { collection = "hooks", key = "shutdown", value = { mode = context.execution_mode }, permission_read = 2, permission_write = 0 } })
end)
nk.register_leaderboard_reset(function(context, leaderboard, reset) end)
nk.register_storage_index("idx", "hooks", "", { "token" }, {}, 100, false)
"#;

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerBeforeAuthenticateDevice(function (ctx, logger, nk, data) {
    var id = data.account.id;
    if (id.indexOf("rename-") === 0) {
      data.username = "js_" + id.substring(7);
    } else if (id.indexOf("reject-") === 0) {
      throw { message: "js hook refused the device", code: 7 };
    } else if (id.indexOf("drop-") === 0) {
      return null;
    }
    return data;
  });
  initializer.registerAfterAuthenticateDevice(function (ctx, logger, nk, data, request) {
    var id = request.account.id;
    if (id.indexOf("after-") === 0) {
      nk.storageWrite([{ collection: "hooks", key: id, value: { token: data.token, runtime: "js", mode: ctx.executionMode, camel: data.refreshToken !== undefined }, permissionRead: 2, permissionWrite: 0 }]);
    }
  });
  initializer.registerRtBefore("ChannelMessageSend", function (ctx, logger, nk, envelope) {
    envelope.channelMessageSend.content = JSON.stringify({ hooked: "js" });
    return envelope;
  });
  // GetAccount carries no input: the hook gets none, and its result does not matter.
  initializer.registerBeforeGetAccount(function (ctx, logger, nk, data) {
    if (data !== null && data !== undefined) {
      throw { message: "GetAccount has no input", code: 3 };
    }
  });
  initializer.registerShutdown(function (ctx, logger, nk) {
    nk.storageWrite([{ collection: "hooks", key: "shutdown", value: { mode: ctx.executionMode }, permissionRead: 2, permissionWrite: 0 }]);
  });
  initializer.registerBeforeListFriends(function (ctx, logger, nk, data) { return data; });
  initializer.registerTournamentEnd(function () {});
}
"#;

async fn server(dir: &Path, runtime: &str) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    let mut env = Vec::new();
    match runtime {
        "lua" => std::fs::write(modules.join("hooks.lua"), LUA).unwrap(),
        "js" => std::fs::write(modules.join("hooks.js"), JS).unwrap(),
        "native" => env.push("native_hooks=on".to_owned()),
        _ => {}
    }
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.runtime.env = env;
    })
    .await
}

async fn authenticate(http: &Http, id: &str) -> metafi_testkit::Reply {
    http.send(
        http.post("/v2/account/authenticate/device?create=true")
            .basic_auth("defaultkey", Some(""))
            .json(&serde_json::json!({ "id": id })),
    )
    .await
}

/// Every check, against a server whose hooks are in `runtime`.
async fn hooks_work_in(runtime: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), runtime).await;
    let http = Http::new(&s.base);

    // A before hook that changes the request: the account gets the hook's username.
    let reply = authenticate(&http, "rename-a1b2c3d4").await;
    assert_eq!(reply.status, 200, "{runtime}: {}", reply.body);
    let token = reply.body["token"].as_str().unwrap().to_owned();
    let account = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(
        account.body["user"]["username"],
        format!("{runtime}_a1b2c3d4"),
        "{runtime}: {}",
        account.body
    );

    // A hook that passes the request on keeps `create=false` (regression: Lua once lost it).
    let reply = http
        .send(
            http.post("/v2/account/authenticate/device?create=false")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({ "id": "nocreate-a1b2c3d4" })),
        )
        .await;
    assert_error(&reply, 404, 5);

    // A before hook that rejects with a code: the client gets that code and message.
    let reply = authenticate(&http, "reject-a1b2c3d4").await;
    assert_error(&reply, 403, 7);
    assert_eq!(
        reply.body["message"],
        format!("{runtime} hook refused the device")
    );

    // A before hook that returns nothing: Nakama's answer for a disabled resource.
    let reply = authenticate(&http, "drop-a1b2c3d4").await;
    assert_error(&reply, 404, 5);
    assert_eq!(reply.body["message"], "Requested resource was not found.");

    // An after hook sees the answer the client got (and cannot change it).
    let reply = authenticate(&http, "after-a1b2c3d4").await;
    assert_eq!(reply.status, 200, "{runtime}: {}", reply.body);
    let token = reply.body["token"].as_str().unwrap().to_owned();
    let read = http
        .send(
            http.post("/v2/storage").bearer_auth(&token).json(
                &serde_json::json!({ "object_ids": [{ "collection": "hooks", "key": "after-a1b2c3d4" }] }),
            ),
        )
        .await;
    assert_eq!(read.status, 200, "{runtime}: {}", read.body);
    let value: serde_json::Value =
        serde_json::from_str(read.body["objects"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(value["token"], token.as_str(), "{runtime}: {value}");
    assert_eq!(value["runtime"], runtime);
    if runtime != "native" {
        assert_eq!(value["mode"], "after", "{runtime}: {value}");
    }
    if runtime == "js" {
        // JavaScript sees Nakama's JSON names (`refreshToken`).
        assert_eq!(value["camel"], true, "{value}");
    }

    if runtime == "lua" {
        // An after hook on a call that answers nothing gets nil and the request.
        let update = http
            .send(
                http.put("/v2/account")
                    .bearer_auth(&token)
                    .json(&serde_json::json!({ "display_name": "Hooked" })),
            )
            .await;
        assert_eq!(update.status, 200, "{}", update.body);
        let read = http
            .send(http.post("/v2/storage").bearer_auth(&token).json(
                &serde_json::json!({ "object_ids": [{ "collection": "hooks", "key": "update-after" }] }),
            ))
            .await;
        let value: serde_json::Value =
            serde_json::from_str(read.body["objects"][0]["value"].as_str().unwrap()).unwrap();
        assert_eq!(value["display_name"], "Hooked", "{value}");
        assert_eq!(value["output_is_nil"], true, "{value}");
        assert!(value["user_id"].is_string(), "{value}");
    }

    // A realtime before hook changes the message every member receives.
    let mut socket = Socket::connect(&s.base, &token, "").await;
    let joined = socket
        .request(Message::ChannelJoin(ChannelJoin {
            target: "lobby".into(),
            r#type: channel_type::ROOM,
            persistence: None,
            hidden: None,
        }))
        .await;
    let Some(Message::Channel(channel)) = joined.message else {
        panic!("{runtime}: expected a channel, got {joined:?}");
    };
    let ack = socket
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel.id.clone(),
            content: r#"{"hello":1}"#.into(),
        }))
        .await;
    assert!(
        matches!(ack.message, Some(Message::ChannelMessageAck(_))),
        "{runtime}: {ack:?}"
    );
    let message = socket
        .event(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
        .await;
    let Some(Message::ChannelMessage(message)) = message.message else {
        unreachable!()
    };
    let content: serde_json::Value = serde_json::from_str(&message.content).unwrap();
    assert_eq!(content["hooked"], runtime, "{runtime}: {content}");
    s.stop().await;
}

#[tokio::test]
async fn lua_hooks_change_reject_drop_and_observe_calls() {
    hooks_work_in("lua").await;
}

#[tokio::test]
async fn javascript_hooks_change_reject_drop_and_observe_calls() {
    hooks_work_in("js").await;
}

#[tokio::test]
async fn native_hooks_change_reject_drop_and_observe_calls() {
    hooks_work_in("native").await;
}

#[tokio::test]
async fn without_hooks_calls_are_served_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    // Native example hooks are compiled in but off without `native_hooks=on`.
    let s = server(dir.path(), "none").await;
    let http = Http::new(&s.base);
    for id in ["rename-a1b2c3d4", "drop-a1b2c3d4", "reject-a1b2c3d4"] {
        let reply = authenticate(&http, id).await;
        assert_eq!(reply.status, 200, "{id}: {}", reply.body);
        let token = reply.body["token"].as_str().unwrap();
        let account = http.send(http.get("/v2/account").bearer_auth(token)).await;
        let username = account.body["user"]["username"].as_str().unwrap();
        assert!(!username.starts_with("native_"), "{username}");
    }
    s.stop().await;
}

fn join(target: &str) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: target.into(),
        r#type: channel_type::ROOM,
        persistence: None,
        hidden: None,
    })
}

#[tokio::test]
async fn realtime_hooks_reject_keep_the_session_drop_close_it_and_after_sees_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), "lua").await;
    let http = Http::new(&s.base);
    let ann = user(&http).await;
    let mut socket = Socket::connect(&s.base, &ann.token, "").await;

    // An error from a before hook goes to the client; the session stays open.
    let (code, message) = socket.request_error(join("forbidden")).await;
    assert_eq!(code, ErrorCode::RuntimeFunctionException as i32);
    assert_eq!(message, "lua hook refused the join");

    // The after hook sees the reply the client got and the (hooked) request.
    let Some(Message::Channel(channel)) = socket.request(join("lobby")).await.message else {
        panic!("expected a channel");
    };
    let ack = socket
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel.id.clone(),
            content: r#"{"hello":1}"#.into(),
        }))
        .await;
    let Some(Message::ChannelMessageAck(ack)) = ack.message else {
        panic!("expected an ack, got {ack:?}");
    };
    // The reply is queued before the after hook runs: wait for what it wrote.
    let mut value = serde_json::Value::Null;
    for _ in 0..100 {
        let read = http
            .send(http.post("/v2/storage").bearer_auth(&ann.token).json(
                &serde_json::json!({ "object_ids": [{ "collection": "hooks", "key": "rt-after" }] }),
            ))
            .await;
        if let Some(text) = read.body["objects"][0]["value"].as_str() {
            value = serde_json::from_str(text).unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(value["message_id"], ack.message_id.as_str(), "{value}");
    assert_eq!(value["content"], r#"{"hooked":"lua"}"#, "{value}");
    assert_eq!(value["user_id"], ann.id.as_str(), "{value}");

    // A before hook that returns nothing drops the message and closes the session.
    let (code, message) = socket.request_error(join("void")).await;
    assert_eq!(code, ErrorCode::UnrecognizedPayload as i32);
    assert_eq!(message, "Requested resource was not found.");
    assert!(socket.closed(Duration::from_secs(10)).await.is_some());
    s.stop().await;
}

#[tokio::test]
async fn registrations_check_their_arguments_like_nakama() {
    for (file, text, expected) in [
        (
            "bad.lua",
            "local nk = require('nakama')\nnk.register_req_before(function() end, '')",
            "bad argument #2 to register_req_before (expects method name)",
        ),
        (
            "bad.lua",
            "local nk = require('nakama')\nnk.register_rt_after('x', 'ChannelJoin')",
            "bad argument #1 to register_rt_after (function expected)",
        ),
        (
            "bad.js",
            "function InitModule(ctx, logger, nk, initializer) { initializer.registerRtBefore('', function () {}); }",
            "expects a non empty string",
        ),
        (
            "bad.js",
            "function InitModule(ctx, logger, nk, initializer) { initializer.registerAfterGetAccount('x'); }",
            "expects a function",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("modules");
        std::fs::create_dir_all(&modules).unwrap();
        std::fs::write(modules.join(file), text).unwrap();
        let error = TestNode::try_start_in(dir.path(), |raw| {
            raw.runtime.path = modules.display().to_string();
        })
        .await
        .err()
        .unwrap_or_else(|| panic!("{file} loaded: {text}"));
        let error = format!("{error:#}");
        assert!(error.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn the_shutdown_function_runs_when_the_server_stops() {
    for runtime in ["lua", "js"] {
        let dir = tempfile::tempdir().unwrap();
        server(dir.path(), runtime).await.stop().await;
        // Restarted without modules: what the shutdown function wrote is there.
        std::fs::remove_dir_all(dir.path().join("modules")).unwrap();
        let s = server(dir.path(), "none").await;
        let http = Http::new(&s.base);
        let (token, _) = http.new_session().await;
        let read = http
            .send(http.post("/v2/storage").bearer_auth(&token).json(
                &serde_json::json!({ "object_ids": [{ "collection": "hooks", "key": "shutdown" }] }),
            ))
            .await;
        let value = read.body["objects"][0]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("{runtime}: {}", read.body));
        assert_eq!(value, r#"{"mode":"shutdown"}"#, "{runtime}");
        s.stop().await;
    }
}

/// Match data is the one message the socket reader serves without the handler's boxed future
/// (`Realtime::handle_now`); with a hook on it, it must still go through the hook.
#[tokio::test]
async fn a_hook_on_match_data_is_run_although_match_data_takes_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(
        modules.join("match_data_hook.lua"),
        r#"
local nk = require("nakama")
nk.register_rt_before(function(context, envelope)
  if tostring(envelope.match_data_send.op_code) == "5" then
    envelope.match_data_send.op_code = 7
  end
  return envelope
end, "MatchDataSend")
"#,
    )
    .unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await;
    let http = Http::new(&s.base);
    let (alice, bob) = (user(&http).await, user(&http).await);
    let mut a = Socket::connect(&s.base, &alice.token, "").await;
    let mut b = Socket::connect(&s.base, &bob.token, "").await;
    let match_id = match a
        .request(Message::MatchCreate(MatchCreate::default()))
        .await
        .message
    {
        Some(Message::Match(m)) => m.match_id,
        other => panic!("no match: {other:?}"),
    };
    b.request(Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::MatchId(match_id.clone())),
        metadata: Default::default(),
    }))
    .await;
    let data = |op_code| {
        Envelope::new(
            "",
            Message::MatchDataSend(MatchDataSend {
                match_id: match_id.clone(),
                op_code,
                data: bytes::Bytes::from_static(b"x"),
                presences: vec![],
                reliable: true,
                delivery: None,
            }),
        )
    };
    let is_data = |op: i64| move |e: &Envelope| matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == op);
    // The hook turns op 5 into op 7 and passes op 6 as it is (a hook returning nothing
    // would close the sender's session, as in Nakama).
    a.send(&data(5)).await;
    a.send(&data(6)).await;
    b.event(is_data(7)).await;
    b.event(is_data(6)).await;
    b.assert_no_event(Duration::from_millis(300), is_data(5))
        .await;
}

/// What a JavaScript before hook sees of REST requests (`metafi-api`'s own structs): keys in
/// `lowerCamelCase` sorted by their proto names (the order the JSON tree gave, now made by
/// `metafi-runtime-js`'s serializer), map fields' keys as sent and sorted, unset fields `null`.
#[tokio::test]
async fn javascript_hooks_see_rest_requests_in_proto_name_order() {
    const SHOW: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  var show = function (ctx, logger, nk, data) { throw { message: JSON.stringify(data), code: 3 }; };
  initializer.registerBeforeAuthenticateEmail(show);
  initializer.registerBeforeUpdateAccount(show);
  initializer.registerBeforeWriteStorageObjects(show);
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("show.js"), SHOW).unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await;
    let http = Http::new(&s.base);
    let reply = authenticate(&http, "order-a1b2c3d4").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let token = reply.body["token"].as_str().unwrap().to_owned();

    let reply = http
        .send(
            http.post("/v2/account/authenticate/email?create=true&username=someone")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({
                    "email": "order@example.com",
                    "password": "long enough",
                    "vars": { "z_key": "1", "a_key": "2" },
                })),
        )
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(
        reply.body["message"],
        r#"{"account":{"email":"order@example.com","password":"long enough","vars":{"a_key":"2","z_key":"1"}},"create":true,"username":"someone"}"#
    );

    let reply = http
        .send(
            http.put("/v2/account").bearer_auth(&token).json(
                &serde_json::json!({ "username": "u", "timezone": "T", "display_name": "D" }),
            ),
        )
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(
        reply.body["message"],
        r#"{"avatarUrl":null,"displayName":"D","langTag":null,"location":null,"timezone":"T","username":"u"}"#
    );

    let reply = http
        .send(http.put("/v2/storage").bearer_auth(&token).json(&serde_json::json!({
            "objects": [{ "collection": "c", "key": "k", "value": "{}", "permission_read": 2 }]
        })))
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(
        reply.body["message"],
        r#"{"objects":[{"collection":"c","key":"k","permissionRead":2,"permissionWrite":null,"value":"{}","version":""}]}"#
    );
    s.stop().await;
}

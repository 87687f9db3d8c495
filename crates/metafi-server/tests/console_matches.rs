//! The console's matches, modules' last errors and an account's social pages on a real node
//! (docs/CONSOLE.md): a match's presences, ending a match a client made (its handler's
//! `match_terminate` runs, the player is told, the listing drops it, the audit log has it, a
//! read-only user is refused), the last errors of a module whose RPC, hook and match handler
//! failed,
//! and an account's live sessions (with a disconnect), friends, groups and wallet ledger.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use metafi_proto::api::Rpc;
use metafi_proto::realtime::{Envelope, MatchCreate, MatchJoin, MatchJoinId, Message};
use metafi_server::config::RawConfig;
use metafi_testkit::{Http, Socket, TestNode, user};
use reqwest::Method;
use serde_json::{Value, json};

const RPCS: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ match_id = nk.match_create(payload, {}) })
end, "create")
nk.register_rpc(function(context, payload)
  local objects = nk.storage_read({ { collection = "matches", key = "terminated" } })
  if #objects == 0 then return "" end
  return nk.json_encode(objects[1].value)
end, "terminated")
nk.register_rpc(function(context, payload)
  error("kaboom in the rpc")
end, "explode")
nk.register_rpc(function(context, payload)
  nk.wallet_update(context.user_id, { coins = 10 }, { reason = "quest" }, true)
  nk.wallet_update(context.user_id, { coins = -3 }, { reason = "shop" }, true)
  return ""
end, "earn")
nk.register_req_before(function(context, payload)
  error("before boom")
end, "ListMatches")
"#;

/// Records its grace in storage when told to terminate, and ends at its next tick after.
const TICKER: &str = r#"
local nk = require("nakama")
return {
  match_init = function(context, params) return { ticks = 0 }, 10, "ticker" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages)
    state.ticks = state.ticks + 1
    return state
  end,
  match_terminate = function(context, d, tick, state, grace)
    nk.storage_write({ { collection = "matches", key = "terminated", value = { grace = grace } } })
    return state
  end,
  match_signal = function(context, d, tick, state, data) return state, "" end,
}
"#;

const CRASHY: &str = r#"
return {
  match_init = function(context, params) return {}, 20, "crashy" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages)
    if tick == 3 then local x = nil; return x.boom end
    return state
  end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, "" end,
}
"#;

const NODE: &str = "consolenode";

fn users(raw: &mut RawConfig) {
    use metafi_server::config::RawConsoleUser;
    let user = |name: &str, role: &str| RawConsoleUser {
        username: name.into(),
        password: format!("{name}-password"),
        role: role.into(),
    };
    raw.console.users = vec![
        user("root", "admin"),
        user("dev", "developer"),
        user("ops", "maintainer"),
        user("viewer", "readonly"),
    ];
}

async fn node(dir: &tempfile::TempDir) -> TestNode {
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("rpcs.lua"), RPCS).unwrap();
    std::fs::write(modules.join("ticker.lua"), TICKER).unwrap();
    std::fs::write(modules.join("crashy.lua"), CRASHY).unwrap();
    TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.console.match_end_grace_sec = 1;
        raw.name = NODE.into();
        users(raw);
    })
    .await
}

struct Console {
    base: String,
    client: reqwest::Client,
}

impl Console {
    fn new(node: &TestNode) -> Console {
        Console {
            base: node.console.clone().expect("the console listens"),
            client: reqwest::Client::new(),
        }
    }

    async fn sign_in(&self, username: &str) -> String {
        let reply = self
            .client
            .post(format!("{}/v2/console/authenticate", self.base))
            .json(&json!({ "username": username, "password": format!("{username}-password") }))
            .send()
            .await
            .unwrap();
        let body: Value = reply.json().await.unwrap();
        body["token"].as_str().unwrap().to_owned()
    }

    async fn call(&self, token: &str, method: Method, path: &str) -> (u16, Value) {
        let response = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn page(&self, token: &str, path: &str) -> String {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

async fn rpc(socket: &mut Socket, id: &str, payload: &str) -> Envelope {
    socket
        .request(Message::Rpc(Rpc {
            id: id.into(),
            payload: payload.into(),
            http_key: String::new(),
        }))
        .await
}

fn rpc_payload(answer: Envelope) -> String {
    match answer.message {
        Some(Message::Rpc(rpc)) => rpc.payload,
        other => panic!("rpc failed: {other:?}"),
    }
}

fn join(id: &str) -> Message {
    Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::MatchId(id.into())),
        metadata: HashMap::new(),
    })
}

/// Polls `check` until it holds (the engine acts on its own threads), at most ~10 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test]
async fn a_match_made_by_a_client_shows_its_presences_and_is_ended_from_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(&dir).await;
    let http = Http::new(&node.base);
    let console = Console::new(&node);
    let player = user(&http).await;
    let mut socket = Socket::connect(&node.base, &player.token, "").await;
    let answer = rpc_payload(rpc(&mut socket, "create", "ticker").await);
    let id = serde_json::from_str::<Value>(&answer).unwrap()["match_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let joined = socket.request(join(&id)).await;
    let Some(Message::Match(joined)) = joined.message else {
        panic!("{joined:?}")
    };
    let session_id = joined.self_presence.unwrap().session_id;

    let viewer = console.sign_in("viewer").await;
    let ops = console.sign_in("ops").await;
    let dev = console.sign_in("dev").await;
    let root = console.sign_in("root").await;

    // Presences, at Nakama's GetMatchState path and shape, for every role.
    let state_path = format!("/v2/console/match/{id}/state");
    let mut state = Value::Null;
    for _ in 0..200 {
        let (status, body) = console.call(&viewer, Method::GET, &state_path).await;
        assert_eq!(status, 200, "{body}");
        state = body;
        if state["presences"].as_array().is_some_and(|p| p.len() == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let presence = &state["presences"][0];
    assert_eq!(presence["user_id"], player.id);
    assert_eq!(presence["session_id"], session_id);
    assert_eq!(presence["username"], player.username);
    assert_eq!(presence["node"], NODE);
    assert_eq!(state["state"], "");
    assert!(state["tick"].as_str().unwrap().parse::<u64>().is_ok());
    // The match page lists them.
    let page = console.page(&viewer, "/matches").await;
    assert!(page.contains(&session_id), "{page}");
    assert!(
        !page.contains("end-match"),
        "no End button for a read-only user"
    );
    assert!(console.page(&dev, "/matches").await.contains("end-match"));
    // Unknown and malformed ids: Nakama's answers.
    let missing = format!("{}.{}", uuid::Uuid::new_v4(), NODE);
    let (status, body) = console
        .call(
            &viewer,
            Method::GET,
            &format!("/v2/console/match/{missing}/state"),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "Match not found, or match handler already stopped."
    );
    let (status, _) = console
        .call(&viewer, Method::GET, "/v2/console/match/nonsense/state")
        .await;
    assert_eq!(status, 400);

    // Ending it: refused to read-only and maintainer users.
    let end_path = format!("/v2/console/match/{id}");
    for token in [&viewer, &ops] {
        let (status, body) = console.call(token, Method::DELETE, &end_path).await;
        assert_eq!(status, 403, "{body}");
    }
    assert!(rpc_payload(rpc(&mut socket, "terminated", "").await).is_empty());
    let (status, body) = console.call(&dev, Method::DELETE, &end_path).await;
    assert_eq!(status, 200, "{body}");
    // match_terminate ran with the configured grace; the player is told it left; the listing
    // drops the match.
    let terminated: Value =
        serde_json::from_str(&rpc_payload(rpc(&mut socket, "terminated", "").await)).unwrap();
    assert_eq!(terminated["grace"], 1);
    let left = socket
        .wait_for(|e| {
            matches!(&e.message, Some(Message::MatchPresenceEvent(p)) if p.leaves.iter().any(|l| l.session_id == session_id))
        })
        .await;
    let Some(Message::MatchPresenceEvent(left)) = left.message else {
        unreachable!()
    };
    assert_eq!(left.match_id, id);
    let (status, _) = console
        .call(&viewer, Method::GET, &format!("/v2/console/match/{id}"))
        .await;
    assert_eq!(status, 404);
    let (_, listed) = console
        .call(&viewer, Method::GET, "/v2/console/match")
        .await;
    assert!(
        !listed.to_string().contains(&id),
        "the listing dropped it: {listed}"
    );
    let (status, _) = console.call(&dev, Method::DELETE, &end_path).await;
    assert_eq!(status, 404, "an ended match cannot be ended again");
    // The audit log names who ended it.
    let (_, log) = console
        .call(&root, Method::GET, "/v2/console/audit/log")
        .await;
    let entry = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "match.end")
        .cloned()
        .unwrap();
    assert_eq!(
        (entry["username"].as_str(), entry["target"].as_str()),
        (Some("dev"), Some(id.as_str()))
    );

    // A relayed match: listed members, ended by removing them all.
    let created = socket
        .request(Message::MatchCreate(MatchCreate::default()))
        .await;
    let Some(Message::Match(relayed)) = created.message else {
        panic!("{created:?}")
    };
    let relayed_id = relayed.match_id;
    let (status, state) = console
        .call(
            &viewer,
            Method::GET,
            &format!("/v2/console/match/{relayed_id}/state"),
        )
        .await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["presences"][0]["session_id"], session_id);
    let (status, body) = console
        .call(
            &root,
            Method::DELETE,
            &format!("/v2/console/match/{relayed_id}"),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    socket
        .wait_for(|e| {
            matches!(&e.message, Some(Message::MatchPresenceEvent(p)) if p.match_id == relayed_id && p.leaves.iter().any(|l| l.session_id == session_id))
        })
        .await;
    let (status, _) = console
        .call(
            &viewer,
            Method::GET,
            &format!("/v2/console/match/{relayed_id}/state"),
        )
        .await;
    assert_eq!(status, 400);
    node.stop().await;
}

#[tokio::test]
async fn a_modules_failed_rpc_hook_and_match_handler_are_its_last_errors() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(&dir).await;
    let http = Http::new(&node.base);
    let console = Console::new(&node);
    let player = user(&http).await;
    let mut socket = Socket::connect(&node.base, &player.token, "").await;
    let viewer = console.sign_in("viewer").await;
    let (_, before) = console
        .call(&viewer, Method::GET, "/v2/console/runtime/errors")
        .await;
    assert_eq!(before["modules"], json!([]));

    let failed = rpc(&mut socket, "explode", "").await;
    assert!(
        matches!(failed.message, Some(Message::Error(_))),
        "{failed:?}"
    );
    let listed = http
        .send(http.get("/v2/match").bearer_auth(&player.token))
        .await;
    assert_eq!(listed.status, 500, "{:?}", listed.body);
    rpc_payload(rpc(&mut socket, "create", "crashy").await);
    let mut errors = Value::Null;
    for _ in 0..200 {
        errors = console
            .call(&viewer, Method::GET, "/v2/console/runtime/errors")
            .await
            .1;
        if errors["modules"].as_array().is_some_and(|m| m.len() == 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let modules = errors["modules"].as_array().unwrap();
    let crashy = modules.iter().find(|m| m["module"] == "crashy").unwrap();
    assert_eq!(crashy["errors"][0]["function"], "match crashy match_loop");
    assert_eq!(crashy["errors"][0]["kind"], "error");
    assert_eq!(crashy["errors"][0]["runtime"], "lua");
    let rpcs = modules
        .iter()
        .find(|m| m["module"].as_str().unwrap().contains("rpcs"))
        .unwrap();
    assert_eq!(
        rpcs["errors"][0]["function"], "before ListMatches",
        "newest first"
    );
    assert!(
        rpcs["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("before boom"),
        "{rpcs}"
    );
    assert_eq!(rpcs["errors"][1]["function"], "rpc explode");
    assert_eq!(rpcs["errors"][1]["kind"], "error");
    assert!(
        rpcs["errors"][1]["message"]
            .as_str()
            .unwrap()
            .contains("kaboom in the rpc"),
        "{rpcs}"
    );
    let page = console.page(&viewer, "/runtime").await;
    assert!(
        page.contains("rpc explode") && page.contains("kaboom in the rpc"),
        "{page}"
    );
    node.stop().await;
}

#[tokio::test]
async fn an_accounts_sessions_friends_groups_and_wallet_ledger_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(&dir).await;
    let http = Http::new(&node.base);
    let console = Console::new(&node);
    let ada = user(&http).await;
    let bob = user(&http).await;
    let mut socket = Socket::connect(&node.base, &ada.token, "").await;
    // A friend request, a group, two wallet changes with the ledger.
    let added = http
        .send(
            http.post(&format!("/v2/friend?ids={}", bob.id))
                .bearer_auth(&ada.token),
        )
        .await;
    assert_eq!(added.status, 200, "{:?}", added.body);
    let group = http
        .send(
            http.post("/v2/group")
                .bearer_auth(&ada.token)
                .json(&json!({ "name": format!("guild-{}", uuid::Uuid::new_v4()), "open": true })),
        )
        .await;
    assert_eq!(group.status, 200, "{:?}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_owned();
    rpc_payload(rpc(&mut socket, "earn", "").await);

    let viewer = console.sign_in("viewer").await;
    let ops = console.sign_in("ops").await;
    let root = console.sign_in("root").await;
    let base = format!("/v2/console/account/{}", ada.id);

    let (status, friends) = console
        .call(&viewer, Method::GET, &format!("{base}/friend"))
        .await;
    assert_eq!(status, 200, "{friends}");
    assert_eq!(friends["friends"][0]["user"]["id"], bob.id);
    assert_eq!(friends["friends"][0]["state"], 1, "invite sent");
    let (status, groups) = console
        .call(&viewer, Method::GET, &format!("{base}/group"))
        .await;
    assert_eq!(status, 200, "{groups}");
    assert_eq!(groups["user_groups"][0]["group"]["id"], group_id);
    assert_eq!(
        groups["user_groups"][0]["state"], 0,
        "its creator is superadmin"
    );
    let (status, ledger) = console
        .call(&viewer, Method::GET, &format!("{base}/wallet?limit=1"))
        .await;
    assert_eq!(status, 200, "{ledger}");
    assert_eq!(
        ledger["items"][0]["changeset"], "{\"coins\":-3}",
        "newest first"
    );
    assert_eq!(ledger["items"][0]["user_id"], ada.id);
    assert!(
        ledger["items"][0]["metadata"]
            .as_str()
            .unwrap()
            .contains("shop")
    );
    let next = ledger["next_cursor"].as_str().unwrap().to_owned();
    assert!(!next.is_empty());
    let (_, older) = console
        .call(
            &viewer,
            Method::GET,
            &format!("{base}/wallet?limit=1&cursor={}", urlencoding(&next)),
        )
        .await;
    assert_eq!(older["items"][0]["changeset"], "{\"coins\":10}", "{older}");
    // Nakama's checks: a limit is required; a bad id is refused with its text.
    let (status, body) = console
        .call(&viewer, Method::GET, &format!("{base}/wallet"))
        .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("expects a limit value between 1 and 100"))
    );
    let (status, body) = console
        .call(&viewer, Method::GET, "/v2/console/account/nope/friend")
        .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("Requires a valid user ID."))
    );

    // Live sessions, and a disconnect (admin only).
    let (status, sessions) = console
        .call(&viewer, Method::GET, &format!("{base}/session"))
        .await;
    assert_eq!(status, 200, "{sessions}");
    let listed = sessions["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{sessions}");
    assert_eq!(listed[0]["node"], NODE);
    assert_eq!(listed[0]["format"], "json");
    assert!(!listed[0]["client_address"].as_str().unwrap().is_empty());
    let sid = listed[0]["session_id"].as_str().unwrap().to_owned();
    // The account page shows all four.
    let page = console.page(&root, &format!("/accounts/{}", ada.id)).await;
    for shown in [
        sid.as_str(),
        bob.id.as_str(),
        group_id.as_str(),
        "{&quot;coins&quot;:-3}",
    ] {
        assert!(page.contains(shown), "{shown} missing from the page");
    }
    assert!(page.contains("button class=\"disconnect\""));
    assert!(
        !console
            .page(&ops, &format!("/accounts/{}", ada.id))
            .await
            .contains("button class=\"disconnect\"")
    );
    let disconnect = format!("{base}/session/{sid}/disconnect");
    let (status, _) = console.call(&ops, Method::POST, &disconnect).await;
    assert_eq!(status, 403);
    let other = format!("/v2/console/account/{}/session/{sid}/disconnect", bob.id);
    let (status, _) = console.call(&root, Method::POST, &other).await;
    assert_eq!(status, 404, "a session of another user");
    let (status, body) = console.call(&root, Method::POST, &disconnect).await;
    assert_eq!(status, 200, "{body}");
    assert!(socket.closed(Duration::from_secs(10)).await.is_some());
    eventually("the session is gone", || {
        let (console, viewer, base) = (&console, &viewer, &base);
        async move {
            let (_, sessions) = console
                .call(viewer, Method::GET, &format!("{base}/session"))
                .await;
            sessions["sessions"] == json!([])
        }
    })
    .await;
    let (_, log) = console
        .call(&root, Method::GET, "/v2/console/audit/log")
        .await;
    assert_eq!(log["entries"][0]["action"], "session.disconnect");
    assert_eq!(log["entries"][0]["target"], ada.id);
    node.stop().await;
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

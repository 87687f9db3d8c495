//! The console on a real node (docs/CONSOLE.md): its own listener; nothing answers without a
//! console session (the client API's server key and session tokens open nothing); sign-in;
//! roles; CSRF on cookie sessions; sign-out; the audit log; accounts, storage, runtime and
//! configuration through the JSON API, acting on what the client API sees.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_server::config::RawConfig;
use metafi_testkit::{Http, Socket, TestNode};
use reqwest::Method;
use reqwest::header::{COOKIE, SET_COOKIE};
use serde_json::{Value, json};

const LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ user = context.user_id or "", echo = payload })
end, "whoami")
nk.register_rpc(function(context, payload)
  nk.wallet_update(context.user_id, { gold = 5 }, { why = "rpc" }, true)
  return "{}"
end, "wallet_add")
"#;

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
        user("mfa", "readonly"),
    ];
}

async fn node() -> (TestNode, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let modules = modules(&dir);
    let node = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules;
        users(raw);
    })
    .await;
    (node, dir)
}

fn modules(dir: &tempfile::TempDir) -> String {
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("whoami.lua"), LUA).unwrap();
    modules.display().to_string()
}

struct Console {
    base: String,
    client: reqwest::Client,
}

struct Reply {
    status: u16,
    body: Value,
    headers: reqwest::header::HeaderMap,
}

impl Console {
    fn new(node: &TestNode) -> Console {
        Console {
            base: node.console.clone().expect("the console listens"),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            body,
            headers,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    async fn sign_in(&self, username: &str) -> String {
        let reply = self
            .send(
                self.request(reqwest::Method::POST, "/v2/console/authenticate")
                    .json(&json!({ "username": username, "password": format!("{username}-password") })),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body["token"].as_str().unwrap().to_owned()
    }

    async fn call(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.request(method, path).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        self.send(request).await
    }
}

#[tokio::test]
async fn no_console_route_answers_without_a_console_session() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    let http = Http::new(&node.base);
    let (client_token, _) = http.new_session().await;
    let paths = [
        (Method::GET, "/v2/console/status"),
        (Method::GET, "/v2/console/account"),
        (
            Method::POST,
            "/v2/console/account/00000000-0000-0000-0000-000000000001",
        ),
        (Method::GET, "/v2/console/storage/collections"),
        (
            Method::PUT,
            "/v2/console/storage/c/k/00000000-0000-0000-0000-000000000000",
        ),
        (Method::GET, "/v2/console/match"),
        (Method::GET, "/v2/console/world"),
        (Method::GET, "/v2/console/world/w/frame"),
        (Method::GET, "/v2/console/runtime"),
        (Method::POST, "/v2/console/api/endpoints/rpc/whoami"),
        (Method::GET, "/v2/console/config"),
        (Method::GET, "/v2/console/audit/log"),
        (Method::GET, "/v2/console/no-such-route"),
        (Method::GET, "/no-such-page"),
    ];
    for (method, path) in paths {
        // Nothing, the client API's session token, its server key: all refused alike.
        let bare = console.send(console.request(method.clone(), path)).await;
        assert_eq!(bare.status, 401, "{method} {path}: {}", bare.body);
        assert_eq!(bare.body["message"], "Console authentication required.");
        let with_client_token = console
            .send(
                console
                    .request(method.clone(), path)
                    .bearer_auth(&client_token),
            )
            .await;
        assert_eq!(with_client_token.status, 401, "{method} {path}");
        let with_server_key = console
            .send(
                console
                    .request(method.clone(), path)
                    .basic_auth("defaultkey", Some("")),
            )
            .await;
        assert_eq!(with_server_key.status, 401, "{method} {path}");
    }
    // Pages send the browser to the sign-in page.
    for page in [
        "/status",
        "/accounts",
        "/storage",
        "/matches",
        "/runtime",
        "/configuration",
    ] {
        let reply = console.send(console.request(Method::GET, page)).await;
        assert_eq!(reply.status, 303, "{page}");
        assert_eq!(reply.headers["location"], "/login");
    }
    // The sign-in page and its assets are open.
    let login = console.send(console.request(Method::GET, "/login")).await;
    assert_eq!(login.status, 200);
    assert!(login.body.as_str().unwrap().contains("signin-form"));
    // A console token opens nothing on the client API either.
    let token = console.sign_in("root").await;
    let account = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(account.status, 401);
    node.stop().await;
}

#[tokio::test]
async fn sign_in_refuses_wrong_passwords_and_unknown_users_alike() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    for (user, password) in [
        ("root", "wrong-password"),
        ("nobody", "root-password"),
        ("root", ""),
    ] {
        let reply = console
            .send(
                console
                    .request(Method::POST, "/v2/console/authenticate")
                    .json(&json!({ "username": user, "password": password })),
            )
            .await;
        assert_eq!(reply.status, 401, "{user}");
        assert_eq!(reply.body["message"], "Invalid credentials.");
    }
    let token = console.sign_in("root").await;
    let status = console
        .call(&token, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert!(status.body["nodes"][0]["rss_bytes"].as_u64().unwrap() > 0);
    // Signed out: the token no longer works.
    let out = console
        .call(
            &token,
            Method::POST,
            "/v2/console/authenticate/logout",
            None,
        )
        .await;
    assert_eq!(out.status, 200);
    let after = console
        .call(&token, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(after.status, 401);
    assert_eq!(after.body["message"], "Token invalid.");
    node.stop().await;
}

#[tokio::test]
async fn each_role_may_do_exactly_its_part_and_changes_are_audited() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    let http = Http::new(&node.base);
    let (player_token, _) = http.new_session().await;
    let me = http
        .send(http.get("/v2/account").bearer_auth(&player_token))
        .await;
    let player = me.body["user"]["id"].as_str().unwrap().to_owned();
    let update = format!("/v2/console/account/{player}");
    let rpc = "/v2/console/api/endpoints/rpc/whoami";
    let signal = "/v2/console/match/00000000-0000-0000-0000-000000000000.node/signal";
    let edit = || Some(json!({ "metadata": "{\"vip\":true}" }));
    let call = || Some(json!({ "body": "hi", "user_id": player.clone() }));

    let viewer = console.sign_in("viewer").await;
    let ops = console.sign_in("ops").await;
    let dev = console.sign_in("dev").await;
    let root = console.sign_in("root").await;

    // Read-only: sees, changes nothing.
    assert_eq!(
        console
            .call(&viewer, Method::GET, &update, None)
            .await
            .status,
        200
    );
    let refused = console.call(&viewer, Method::POST, &update, edit()).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.body["message"],
        "Unauthorized: you do not have permissions to access this resource."
    );
    // Maintainer: edits accounts, no code.
    assert_eq!(
        console
            .call(&ops, Method::POST, &update, edit())
            .await
            .status,
        200
    );
    assert_eq!(
        console.call(&ops, Method::POST, rpc, call()).await.status,
        403
    );
    assert_eq!(
        console.call(&ops, Method::POST, signal, None).await.status,
        403
    );
    // Developer: runs RPCs as a chosen user; no audit log.
    let called = console.call(&dev, Method::POST, rpc, call()).await;
    assert_eq!(called.status, 200, "{}", called.body);
    let result: Value = serde_json::from_str(called.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(result["user"], player);
    assert_eq!(result["echo"], "hi");
    assert!(called.body["duration_ms"].as_f64().unwrap() >= 0.0);
    // The call shows in the status' per-RPC totals.
    let status = console
        .call(&viewer, Method::GET, "/v2/console/status", None)
        .await;
    let rpcs = status.body["rpcs"].as_array().unwrap();
    let whoami = rpcs.iter().find(|r| r["id"] == "whoami").unwrap();
    assert_eq!(whoami["runtime"], "lua");
    assert!(whoami["calls"].as_f64().unwrap() >= 1.0);
    assert_eq!(
        console
            .call(&dev, Method::GET, "/v2/console/audit/log", None)
            .await
            .status,
        403
    );
    // Admin: the audit log, newest first, with who did what.
    let log = console
        .call(&root, Method::GET, "/v2/console/audit/log", None)
        .await;
    assert_eq!(log.status, 200, "{}", log.body);
    let entries = log.body["entries"].as_array().unwrap();
    let actions: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["username"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(actions[0], ("dev", "rpc.call"));
    assert!(actions.contains(&("ops", "account.update")), "{actions:?}");
    let update_entry = entries
        .iter()
        .find(|e| e["action"] == "account.update")
        .unwrap();
    assert_eq!(update_entry["target"], player);
    node.stop().await;
}

#[tokio::test]
async fn a_cookie_session_needs_its_csrf_token_to_change_anything() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    let reply = console
        .send(
            console
                .request(Method::POST, "/v2/console/authenticate")
                .json(&json!({ "username": "ops", "password": "ops-password" })),
        )
        .await;
    let cookie = reply.headers[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let cookie = cookie.split(';').next().unwrap().to_owned();
    // A page carries the token the session's changes need.
    let page = console
        .send(
            console
                .request(Method::GET, "/status")
                .header(COOKIE, &cookie),
        )
        .await;
    assert_eq!(page.status, 200);
    let html = page.body.as_str().unwrap().to_owned();
    let csrf = html
        .split("name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let path = "/v2/console/storage/notes/n1/00000000-0000-0000-0000-000000000000";
    let body = json!({ "value": "{\"a\":1}" });
    // Reads need no token; a change without it (a cross-site form) is refused.
    let read = console
        .send(
            console
                .request(Method::GET, "/v2/console/status")
                .header(COOKIE, &cookie),
        )
        .await;
    assert_eq!(read.status, 200);
    let forged = console
        .send(
            console
                .request(Method::PUT, path)
                .header(COOKIE, &cookie)
                .json(&body),
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong = console
        .send(
            console
                .request(Method::PUT, path)
                .header(COOKIE, &cookie)
                .header("x-csrf-token", "0123")
                .json(&body),
        )
        .await;
    assert_eq!(wrong.status, 403);
    let written = console
        .send(
            console
                .request(Method::PUT, path)
                .header(COOKIE, &cookie)
                .header("x-csrf-token", &csrf)
                .json(&body),
        )
        .await;
    assert_eq!(written.status, 200, "{}", written.body);
    // A bearer token (no ambient credential) needs none.
    let token = console.sign_in("ops").await;
    let bearer = console.call(&token, Method::PUT, path, Some(body)).await;
    assert_eq!(bearer.status, 200);
    node.stop().await;
}

#[tokio::test]
async fn accounts_and_storage_are_found_edited_and_seen_through_the_client_api() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    let http = Http::new(&node.base);
    let device = format!("dev-{}", uuid::Uuid::new_v4());
    let auth = http
        .send(
            http.post("/v2/account/authenticate/device?create=true&username=ada")
                .basic_auth("defaultkey", Some(""))
                .json(&json!({ "id": device })),
        )
        .await;
    assert_eq!(auth.status, 200, "{}", auth.body);
    let token = auth.body["token"].as_str().unwrap().to_owned();
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    let id = me.body["user"]["id"].as_str().unwrap().to_owned();
    let root = console.sign_in("root").await;

    // Found by username, device id and id, once each.
    for filter in ["ada", device.as_str(), id.as_str()] {
        let found = console
            .call(
                &root,
                Method::GET,
                &format!("/v2/console/account?filter={filter}"),
                None,
            )
            .await;
        assert_eq!(found.status, 200);
        let ids: Vec<&str> = found.body["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [id.as_str()], "{filter}");
    }
    // Metadata edited in the console is what the client sees.
    let edited = console
        .call(
            &root,
            Method::POST,
            &format!("/v2/console/account/{id}"),
            Some(json!({ "metadata": "{\"level\":7}", "display_name": "Ada L." })),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(me.body["user"]["metadata"], "{\"level\":7}");
    assert_eq!(me.body["user"]["display_name"], "Ada L.");
    let bad = console
        .call(
            &root,
            Method::POST,
            &format!("/v2/console/account/{id}"),
            Some(json!({ "metadata": "[1]" })),
        )
        .await;
    assert_eq!(bad.status, 400);

    // A ban ends sign-ins and closes the user's open sockets; an unban restores sign-ins.
    let mut socket = Socket::connect(&node.base, &token, "").await;
    socket
        .request(metafi_proto::realtime::Message::Ping(
            metafi_proto::realtime::Ping {},
        ))
        .await;
    let ban = console
        .call(
            &root,
            Method::POST,
            &format!("/v2/console/account/{id}/ban"),
            None,
        )
        .await;
    assert_eq!(ban.status, 200);
    assert_ne!(http.auth_device(&device, false).await.status, 200);
    // The ban ended the session too, and closed its socket.
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(me.status, 401);
    let frame = socket
        .closed(std::time::Duration::from_secs(5))
        .await
        .expect("the ban closes the socket");
    assert!(
        frame.reason.contains("server-side session disconnect"),
        "{frame:?}"
    );
    console
        .call(
            &root,
            Method::POST,
            &format!("/v2/console/account/{id}/unban"),
            None,
        )
        .await;
    let again = http.auth_device(&device, false).await;
    assert_eq!(again.status, 200);
    let token = again.body["token"].as_str().unwrap().to_owned();

    // Storage written by the client is browsed, edited with its version and deleted.
    let written = http
        .send(http.put("/v2/storage").bearer_auth(&token).json(&json!({
            "objects": [{ "collection": "saves", "key": "slot1", "value": "{\"hp\":3}", "permission_read": 1, "permission_write": 1 }]
        })))
        .await;
    assert_eq!(written.status, 200, "{}", written.body);
    let version = written.body["acks"][0]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let collections = console
        .call(&root, Method::GET, "/v2/console/storage/collections", None)
        .await;
    assert!(
        collections.body["collections"]
            .as_array()
            .unwrap()
            .contains(&json!("saves"))
    );
    let listed = console
        .call(
            &root,
            Method::GET,
            "/v2/console/storage?collection=saves",
            None,
        )
        .await;
    assert_eq!(listed.body["objects"][0]["key"], "slot1");
    let path = format!("/v2/console/storage/saves/slot1/{id}");
    let object = console.call(&root, Method::GET, &path, None).await;
    assert_eq!(object.body["value"], "{\"hp\":3}");
    assert_eq!(object.body["version"], version);
    let stale = console
        .call(
            &root,
            Method::PUT,
            &path,
            Some(json!({ "value": "{\"hp\":9}", "version": "not-it" })),
        )
        .await;
    assert_eq!(stale.status, 400, "{}", stale.body);
    let saved = console
        .call(
            &root,
            Method::PUT,
            &path,
            Some(json!({ "value": "{\"hp\":9}", "version": version, "permission_read": 2 })),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let read = http
        .send(http.post("/v2/storage").bearer_auth(&token).json(&json!({
            "object_ids": [{ "collection": "saves", "key": "slot1", "user_id": id }]
        })))
        .await;
    assert_eq!(read.body["objects"][0]["value"], "{\"hp\":9}");
    assert_eq!(read.body["objects"][0]["permission_read"], 2);
    let deleted = console.call(&root, Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 200);
    let gone = console.call(&root, Method::GET, &path, None).await;
    assert_eq!(gone.status, 404);
    node.stop().await;
}

#[tokio::test]
async fn runtime_and_configuration_are_shown_without_secrets() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    let root = console.sign_in("viewer").await;
    let runtime = console
        .call(&root, Method::GET, "/v2/console/runtime", None)
        .await;
    assert_eq!(runtime.status, 200);
    assert!(
        runtime.body["lua_rpc_functions"]
            .as_array()
            .unwrap()
            .contains(&json!("whoami"))
    );
    assert!(
        runtime.body["lua_modules"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("whoami.lua")
    );
    // Nakama's `RuntimeInfo` gives each module's modification time; `StatusList` a node's
    // health as its number (0: OK) and start time.
    let mod_time = runtime.body["lua_modules"][0]["mod_time"].as_str().unwrap();
    assert!(
        mod_time.ends_with('Z') && mod_time.contains('T'),
        "{mod_time}"
    );
    let status = console
        .call(&root, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(status.body["nodes"][0]["health"], 0, "{}", status.body);
    assert!(status.body["nodes"][0]["create_time"].is_string());
    let config = console
        .call(&root, Method::GET, "/v2/console/config", None)
        .await;
    assert_eq!(config.status, 200);
    let text = config.body["config"].as_str().unwrap();
    let parsed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(parsed["socket"]["server_key"], "***");
    assert_eq!(parsed["console"]["signing_key"], "***");
    assert_eq!(parsed["console"]["users"][0]["password"], "***");
    for secret in [
        "defaultkey",
        "defaultencryptionkey",
        "defaultsigningkey",
        "root-password",
    ] {
        assert!(!text.contains(secret), "{secret} shown");
    }
    node.stop().await;
}

/// The console's wallet edit (Nakama's `UpdateAccount`): the wallet replaced outright with
/// no ledger row, seen through `GET /v2/account`; Nakama's refusals, each changing nothing
/// (not even the profile field sent with it); Nakama's other `UpdateAccount` rules; the
/// audit entry; a read-only user refused; `nk.wallet_update` carries on from the new wallet.
async fn wallet_edit(node: &TestNode) {
    let console = Console::new(node);
    let http = Http::new(&node.base);
    let (token, _) = http.new_session().await;
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    let id = me.body["user"]["id"].as_str().unwrap().to_owned();
    let before = me.body["user"]["display_name"].clone();
    let ops = console.sign_in("ops").await;
    let path = format!("/v2/console/account/{id}");
    let update = |body: Value| console.call(&ops, Method::POST, &path, Some(body));
    let wallet = async || {
        let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
        serde_json::from_str::<Value>(me.body["wallet"].as_str().unwrap()).unwrap()
    };

    let edited = update(json!({ "wallet": "{\"gold\": 100, \"gems\": 2}" })).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(wallet().await, json!({ "gems": 2, "gold": 100 }));
    let edited = update(json!({ "wallet": "{\"gold\": 7}", "location": "Oslo" })).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(wallet().await, json!({ "gold": 7 }), "replaced, not merged");
    // Empty text leaves the wallet (and the metadata) alone, as in Nakama.
    let edited = update(json!({ "wallet": "", "metadata": "", "timezone": "UTC" })).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(wallet().await, json!({ "gold": 7 }));

    let refused = [
        (
            json!({ "wallet": "{\"gold\": -1}", "display_name": "X" }),
            "Wallet rejected negative value at path 'gold'.",
        ),
        (
            json!({ "wallet": "{\"gold\": 1.5}", "display_name": "X" }),
            "Wallet must be a valid JSON object with only string keys and integer values.",
        ),
        (
            json!({ "wallet": "{\"gold\": {\"bars\": 1}}" }),
            "Wallet must be a valid JSON object with only string keys and integer values.",
        ),
        (
            json!({ "wallet": "[1]" }),
            "Wallet must be a valid JSON object with only string keys and integer values.",
        ),
        (
            json!({ "username": "", "wallet": "{}" }),
            "Username cannot be empty.",
        ),
        (
            json!({ "metadata": "[1]", "wallet": "{}" }),
            "Metadata must be a valid JSON object.",
        ),
    ];
    for (body, message) in refused {
        let reply = update(body.clone()).await;
        assert_eq!(
            (reply.status, reply.body["code"].as_i64()),
            (400, Some(3)),
            "{body}"
        );
        assert_eq!(reply.body["message"], message, "{body}");
    }
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(
        me.body["user"]["display_name"], before,
        "a refused update changes nothing"
    );
    assert_eq!(wallet().await, json!({ "gold": 7 }));
    let bad_id = console
        .call(
            &ops,
            Method::POST,
            "/v2/console/account/nope",
            Some(json!({})),
        )
        .await;
    assert_eq!(bad_id.body["message"], "Requires a valid user ID.");
    let system = console
        .call(
            &ops,
            Method::POST,
            "/v2/console/account/00000000-0000-0000-0000-000000000000",
            Some(json!({ "wallet": "{}" })),
        )
        .await;
    assert_eq!(system.body["message"], "Cannot update the system user.");
    // Not served fields are refused as a whole.
    let email = update(json!({ "email": "ada@example.com", "wallet": "{}" })).await;
    assert_eq!(email.status, 400);
    assert_eq!(wallet().await, json!({ "gold": 7 }));
    // Unknown fields are ignored, as Nakama's gateway ignores them.
    assert_eq!(update(json!({ "colour": "red" })).await.status, 200);
    // Nakama's shapes: an unset timestamp is null; empty lists and cursors are written.
    let got = console.call(&ops, Method::GET, &path, None).await;
    assert_eq!(got.body["disable_time"], Value::Null, "{}", got.body);
    assert_eq!(got.body["account"]["wallet"], "{\"gold\":7}");
    let friends = console
        .call(&ops, Method::GET, &format!("{path}/friend"), None)
        .await;
    assert_eq!(friends.body, json!({ "friends": [], "cursor": "" }));
    let missing = console
        .call(
            &ops,
            Method::GET,
            &format!("/v2/console/storage/c/k/{id}"),
            None,
        )
        .await;
    assert_eq!(
        (missing.status, missing.body["message"].as_str()),
        (404, Some("Storage object not found."))
    );

    // A read-only user is refused; the change is audited with its wallet.
    let viewer = console.sign_in("viewer").await;
    let reply = console
        .call(
            &viewer,
            Method::POST,
            &path,
            Some(json!({ "wallet": "{\"gold\": 9}" })),
        )
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(wallet().await, json!({ "gold": 7 }));
    let root = console.sign_in("root").await;
    let log = console
        .call(&root, Method::GET, "/v2/console/audit/log?limit=500", None)
        .await;
    let entries = log.body["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|e| e["action"] == "account.update"
            && e["username"] == "ops"
            && e["target"] == id
            && e["detail"].to_string().contains("gold")),
        "{entries:?}"
    );

    // Server code's wallet changes carry on from the replaced wallet; only they are recorded.
    let rpc = http
        .send(
            http.post("/v2/rpc/wallet_add")
                .bearer_auth(&token)
                .json(&json!("{}")),
        )
        .await;
    assert_eq!(rpc.status, 200, "{}", rpc.body);
    assert_eq!(wallet().await, json!({ "gold": 12 }));
    let ledger = console
        .call(&ops, Method::GET, &format!("{path}/wallet?limit=10"), None)
        .await;
    let items = ledger.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["changeset"], "{\"gold\":5}");
}

#[tokio::test]
async fn the_wallet_is_edited_with_nakamas_rules() {
    let (node, _dir) = node().await;
    wallet_edit(&node).await;
    node.stop().await;
}

#[tokio::test]
async fn on_postgres_the_wallet_is_edited_with_nakamas_rules() {
    let dir = tempfile::tempdir().unwrap();
    let modules = modules(&dir);
    let Some(node) = TestNode::start_on_postgres(dir.path(), |raw| {
        raw.runtime.path = modules;
        users(raw);
    })
    .await
    else {
        return;
    };
    wallet_edit(&node).await;
    node.stop().await;
}

#[tokio::test]
async fn on_postgres_roles_edits_and_the_audit_log_work() {
    let dir = tempfile::tempdir().unwrap();
    let modules = modules(&dir);
    let Some(node) = TestNode::start_on_postgres(dir.path(), |raw| {
        raw.runtime.path = modules;
        users(raw);
    })
    .await
    else {
        return;
    };
    let console = Console::new(&node);
    let http = Http::new(&node.base);
    let (token, _) = http.new_session().await;
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    let id = me.body["user"]["id"].as_str().unwrap().to_owned();
    let ops = console.sign_in("ops").await;
    let path = format!("/v2/console/account/{id}");
    let edited = console
        .call(
            &ops,
            Method::POST,
            &path,
            Some(json!({ "metadata": "{\"pg\":1}" })),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(me.body["user"]["metadata"], "{\"pg\":1}");
    let viewer = console.sign_in("viewer").await;
    assert_eq!(
        console
            .call(&viewer, Method::POST, &path, Some(json!({})))
            .await
            .status,
        403
    );
    let root = console.sign_in("root").await;
    let log = console
        .call(&root, Method::GET, "/v2/console/audit/log?limit=500", None)
        .await;
    let entries = log.body["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|e| e["action"] == "account.update"
            && e["username"] == "ops"
            && e["target"] == id),
        "{entries:?}"
    );
    node.stop().await;
}

#[tokio::test]
async fn repeated_failed_sign_ins_are_throttled() {
    let dir = tempfile::tempdir().unwrap();
    let node = TestNode::start_in(dir.path(), |raw| {
        users(raw);
        raw.signin_throttle.max_failures_per_account = 2;
    })
    .await;
    let console = Console::new(&node);
    let attempt = |password: &'static str| {
        console.send(
            console
                .request(Method::POST, "/v2/console/authenticate")
                .json(&json!({ "username": "root", "password": password })),
        )
    };
    assert_eq!(attempt("wrong-1").await.status, 401);
    assert_eq!(attempt("wrong-2").await.status, 401);
    // Past the limit even the right password waits for the window to end.
    let refused = attempt("root-password").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    // Another console user is not held up.
    console.sign_in("viewer").await;
    node.stop().await;
}

/// Signs in with a password and an MFA code (empty: none); the whole answer.
async fn sign_in_with(console: &Console, username: &str, password: &str, mfa: &str) -> Reply {
    console
        .send(
            console
                .request(Method::POST, "/v2/console/authenticate")
                .json(&json!({ "username": username, "password": password, "mfa": mfa })),
        )
        .await
}

/// Adds, lists, changes and deletes console users as an admin; everyone else is refused;
/// Nakama's validation texts; a role change or a deletion ends the user's sessions.
async fn manage_console_users(console: &Console) {
    let root = console.sign_in("root").await;
    let dev = console.sign_in("dev").await;
    // Only admins manage console users.
    for (method, path, body) in [
        (Method::GET, "/v2/console/user", None),
        (Method::POST, "/v2/console/user", Some(json!({}))),
        (Method::DELETE, "/v2/console/user/ops", None),
        (
            Method::PUT,
            "/v2/console/user/ops",
            Some(json!({ "role": 4 })),
        ),
        (Method::POST, "/v2/console/user/ops/mfa/reset", None),
    ] {
        let reply = console.call(&dev, method.clone(), path, body).await;
        assert_eq!(reply.status, 403, "{method} {path}: {}", reply.body);
    }
    let add = |body: Value| {
        let root = root.clone();
        async move {
            console
                .call(&root, Method::POST, "/v2/console/user", Some(body))
                .await
        }
    };
    let good = json!({ "username": "Newbie", "email": "New@Example.com",
                       "password": "a long enough password", "role": 4 });
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        body[key] = value;
        body
    };
    for (body, message) in [
        (with("username", json!("")), "Username is required"),
        (
            with("username", json!(".bad")),
            "Username must be 3-20 long sequence of alphanumeric characters _ or . and cannot start and end with _ or .",
        ),
        (
            with("username", json!("root")),
            "Cannot change own configuration",
        ),
        (
            with("username", json!("viewer")),
            "Username cannot be the console configured username",
        ),
        (with("email", json!("")), "Email is required"),
        (with("email", json!("nope")), "Not a valid email address"),
        (
            with("password", json!("short")),
            "Password must be between 12 and 128 characters long.",
        ),
        (
            with("role", json!(9)),
            "Role must be admin, developer, maintainer or readonly (1-4).",
        ),
    ] {
        let reply = add(body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
        assert_eq!(reply.body["message"], message, "{body}");
    }
    let added = add(good.clone()).await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(added.body["user"]["username"], "newbie");
    assert_eq!(added.body["user"]["email"], "new@example.com");
    assert_eq!(added.body["user"]["role"], 4);
    assert_eq!(added.body["user"]["mfa_enabled"], false);
    let again = add(with("username", json!("other"))).await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert_eq!(again.body["code"], 9);
    assert_eq!(again.body["message"], "Username or Email already exists");

    let listed = console
        .call(&root, Method::GET, "/v2/console/user", None)
        .await;
    let names: Vec<&str> = listed.body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    // (On PostgreSQL the database is shared: other tests' users may be listed too.)
    for name in ["dev", "mfa", "newbie", "ops", "root", "viewer"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "by username: {names:?}"
    );

    // The new user signs in; a role change ends that session, a new one has the new role.
    let signed = sign_in_with(console, "newbie", "a long enough password", "").await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let newbie = signed.body["token"].as_str().unwrap().to_owned();
    assert_eq!(
        console
            .call(&newbie, Method::GET, "/v2/console/status", None)
            .await
            .status,
        200
    );
    let changed = console
        .call(
            &root,
            Method::PUT,
            "/v2/console/user/newbie",
            Some(json!({ "role": "developer" })),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(changed.body["role"], 2);
    let refused = console
        .call(&newbie, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(refused.body["message"], "Token invalid.");
    let newbie = sign_in_with(console, "newbie", "a long enough password", "")
        .await
        .body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let rpc = console
        .call(
            &newbie,
            Method::POST,
            "/v2/console/api/endpoints/rpc/whoami",
            Some(json!({ "body": "" })),
        )
        .await;
    assert_eq!(rpc.status, 200, "a developer may call RPCs: {}", rpc.body);

    // Nobody changes or deletes their own user.
    let own = console
        .call(
            &root,
            Method::PUT,
            "/v2/console/user/root",
            Some(json!({ "role": 4 })),
        )
        .await;
    assert_eq!(
        (own.status, own.body["message"].as_str()),
        (400, Some("Cannot change own configuration"))
    );
    let own = console
        .call(&root, Method::DELETE, "/v2/console/user/root", None)
        .await;
    assert_eq!(
        (own.status, own.body["message"].as_str()),
        (400, Some("Cannot delete own user"))
    );
    let missing = console
        .call(
            &root,
            Method::DELETE,
            "/v2/console/user?username=nobody",
            None,
        )
        .await;
    assert_eq!(
        (missing.status, missing.body["message"].as_str()),
        (400, Some("User not found"))
    );
    let missing = console
        .call(
            &root,
            Method::PUT,
            "/v2/console/user/nobody",
            Some(json!({ "role": 2 })),
        )
        .await;
    assert_eq!(missing.status, 404, "{}", missing.body);

    // A deletion (Nakama's path, username in the query) ends the user's sessions.
    let deleted = console
        .call(
            &root,
            Method::DELETE,
            "/v2/console/user?username=newbie",
            None,
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        console
            .call(&newbie, Method::GET, "/v2/console/status", None)
            .await
            .status,
        401
    );
    assert_eq!(
        sign_in_with(console, "newbie", "a long enough password", "")
            .await
            .status,
        401
    );
    let log = console
        .call(&root, Method::GET, "/v2/console/audit/log?limit=500", None)
        .await;
    let actions: Vec<(&str, &str)> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["username"] == "root")
        .map(|e| (e["action"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    for expected in [
        ("console_user.add", "newbie"),
        ("console_user.update", "newbie"),
        ("console_user.delete", "newbie"),
    ] {
        assert!(actions.contains(&expected), "{expected:?} in {actions:?}");
    }
}

#[tokio::test]
async fn console_users_are_managed_by_admins_and_changes_end_sessions() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    manage_console_users(&console).await;
    // The users page lists them, for admins only.
    let root = console.sign_in("root").await;
    let page = console
        .send(
            console
                .request(Method::GET, "/users")
                .header(COOKIE, format!("metafi_console={root}")),
        )
        .await;
    assert_eq!(page.status, 200);
    let html = page.body.as_str().unwrap();
    assert!(
        html.contains("data-username=\"viewer\"") && html.contains("add-user"),
        "{html}"
    );
    node.stop().await;
}

#[tokio::test]
async fn a_sign_out_stays_refused_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let start = |dir: std::path::PathBuf| async move { TestNode::start_in(&dir, users).await };
    let node = start(dir.path().to_owned()).await;
    let console = Console::new(&node);
    let gone = console.sign_in("ops").await;
    let kept = console.sign_in("ops").await;
    let out = console
        .call(
            &gone,
            Method::POST,
            "/v2/console/authenticate/logout",
            Some(json!({})),
        )
        .await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(
        console
            .call(&gone, Method::GET, "/v2/console/status", None)
            .await
            .status,
        401
    );
    node.stop().await;

    let node = start(dir.path().to_owned()).await;
    let console = Console::new(&node);
    let refused = console
        .call(&gone, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(
        refused.status, 401,
        "signed out before the restart: {}",
        refused.body
    );
    assert_eq!(refused.body["message"], "Token invalid.");
    let still = console
        .call(&kept, Method::GET, "/v2/console/status", None)
        .await;
    assert_eq!(still.status, 200, "not signed out: {}", still.body);
    node.stop().await;
}

/// The claims of a JWT (not checked: the server checks them).
fn claims(token: &str) -> Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn now_secs() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// The current TOTP code of `secret` (the server accepts the steps either side of its own, so
/// the request may take up to 30 s to arrive).
fn code(secret: &str) -> String {
    format!(
        "{:06}",
        metafi_console::totp_code(secret, now_secs()).unwrap()
    )
}

/// A well-formed code that is none of the codes around now.
fn wrong_code(secret: &str) -> String {
    let now = now_secs();
    let near: Vec<u32> = (-2..=2)
        .map(|s| metafi_console::totp_code(secret, now + s * 30).unwrap())
        .collect();
    let wrong = (0..1_000_000u32).find(|c| !near.contains(c)).unwrap();
    format!("{wrong:06}")
}

/// MFA as Nakama does it: a user required to set it up gets only a setup token; a code from
/// the secret confirms it and answers 16 recovery codes; then sign-in needs a code; a recovery
/// code works once; an admin's reset starts over.
async fn mfa_flow(console: &Console) {
    let root = console.sign_in("root").await;
    // From a known state (the PostgreSQL database outlives a failed run).
    let reset = console
        .call(&root, Method::POST, "/v2/console/user/mfa/mfa/reset", None)
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let required = console
        .call(
            &root,
            Method::POST,
            "/v2/console/user/mfa/mfa/require",
            Some(json!({ "required": true })),
        )
        .await;
    assert_eq!(required.status, 200, "{}", required.body);
    let first = sign_in_with(console, "mfa", "mfa-password", "").await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["token"], "", "no session before MFA is set up");
    let setup = first.body["mfa_code"].as_str().unwrap().to_owned();
    let setup_claims = claims(&setup);
    let secret = setup_claims["secret"].as_str().unwrap().to_owned();
    assert_eq!(setup_claims["mfa_required"], true);
    assert_eq!(
        setup_claims["mfa_url"],
        format!("otpauth://totp/MetaFi:mfa?issuer=MetaFi&secret={secret}")
    );
    // The setup token is not a session.
    assert_eq!(
        console
            .call(&setup, Method::GET, "/v2/console/status", None)
            .await
            .status,
        401
    );
    let confirm = |body: Value| async move {
        console
            .send(
                console
                    .request(Method::POST, "/v2/console/authenticate/mfa")
                    .json(&body),
            )
            .await
    };
    let bad = confirm(json!({ "mfa": "garbage", "code": code(&secret) })).await;
    assert_eq!(
        (bad.status, bad.body["message"].as_str()),
        (401, Some("The code provided is invalid."))
    );
    let bad = confirm(json!({ "mfa": setup, "code": "12ab" })).await;
    assert_eq!(
        (bad.status, bad.body["message"].as_str()),
        (400, Some("The MFA code used is incorrectly formatted."))
    );
    let bad = confirm(json!({ "mfa": setup, "code": wrong_code(&secret) })).await;
    assert_eq!(
        (bad.status, bad.body["message"].as_str()),
        (400, Some("The MFA code is invalid."))
    );
    let done = confirm(json!({ "mfa": setup, "code": code(&secret) })).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let recovery: Vec<String> = done.body["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recovery.len(), 16);
    assert!(recovery.iter().all(|c| c.len() == 8));

    let listed = console
        .call(&root, Method::GET, "/v2/console/user/mfa", None)
        .await;
    assert_eq!(
        (&listed.body["mfa_enabled"], &listed.body["mfa_required"]),
        (&json!(true), &json!(true))
    );

    let no_code = sign_in_with(console, "mfa", "mfa-password", "").await;
    assert_eq!(
        (no_code.status, no_code.body["message"].as_str()),
        (403, Some("A MFA code is required."))
    );
    let wrong = sign_in_with(console, "mfa", "mfa-password", &wrong_code(&secret)).await;
    assert_eq!(
        (wrong.status, wrong.body["message"].as_str()),
        (401, Some("The MFA code is invalid."))
    );
    let malformed = sign_in_with(console, "mfa", "mfa-password", "1234").await;
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    // The right code but the wrong password is still refused.
    let wrong_password = sign_in_with(console, "mfa", "not-the-password", &code(&secret)).await;
    assert_eq!(wrong_password.status, 401);
    let ok = sign_in_with(console, "mfa", "mfa-password", &code(&secret)).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let session = ok.body["token"].as_str().unwrap().to_owned();
    assert!(ok.body.get("mfa_code").is_none(), "{}", ok.body);
    assert_eq!(
        console
            .call(&session, Method::GET, "/v2/console/status", None)
            .await
            .status,
        200
    );
    // A recovery code signs in once.
    let used = sign_in_with(console, "mfa", "mfa-password", &recovery[3]).await;
    assert_eq!(used.status, 200, "{}", used.body);
    let reused = sign_in_with(console, "mfa", "mfa-password", &recovery[3]).await;
    assert_eq!(reused.status, 401, "{}", reused.body);
    let other = sign_in_with(console, "mfa", "mfa-password", &recovery[4]).await;
    assert_eq!(other.status, 200, "{}", other.body);

    // An admin's reset: the user sets MFA up again (and the old setup token is outdated).
    let reset = console
        .call(&root, Method::POST, "/v2/console/user/mfa/mfa/reset", None)
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let again = sign_in_with(console, "mfa", "mfa-password", "").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["token"], "");
    assert!(
        again.body["mfa_code"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );

    // A user not required to set MFA up gets a session and an optional setup token.
    let ops = sign_in_with(console, "ops", "ops-password", "").await;
    assert_eq!(ops.status, 200, "{}", ops.body);
    assert!(ops.body["token"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(ops.body["mfa_code"].as_str().is_some_and(|t| !t.is_empty()));
}

#[tokio::test]
async fn mfa_is_set_up_with_a_code_and_then_asked_for() {
    let (node, _dir) = node().await;
    let console = Console::new(&node);
    mfa_flow(&console).await;
    node.stop().await;
}

#[tokio::test]
async fn mfa_required_by_configuration_holds_for_every_user() {
    let dir = tempfile::tempdir().unwrap();
    let node = TestNode::start_in(dir.path(), |raw| {
        users(raw);
        raw.console.mfa_required = true;
    })
    .await;
    let console = Console::new(&node);
    for name in ["root", "viewer"] {
        let reply = sign_in_with(&console, name, &format!("{name}-password"), "").await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.body["token"], "", "{name}");
        assert_eq!(
            claims(reply.body["mfa_code"].as_str().unwrap())["mfa_required"],
            true
        );
    }
    node.stop().await;
}

#[tokio::test]
async fn on_postgres_console_users_mfa_and_sign_outs_work() {
    let dir = tempfile::tempdir().unwrap();
    let modules = modules(&dir);
    let Some(node) = TestNode::start_on_postgres(dir.path(), |raw| {
        raw.runtime.path = modules;
        users(raw);
    })
    .await
    else {
        return;
    };
    let console = Console::new(&node);
    manage_console_users(&console).await;
    mfa_flow(&console).await;
    let gone = console.sign_in("dev").await;
    let out = console
        .call(
            &gone,
            Method::POST,
            "/v2/console/authenticate/logout",
            Some(json!({})),
        )
        .await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(
        console
            .call(&gone, Method::GET, "/v2/console/status", None)
            .await
            .status,
        401
    );
    node.stop().await;
}

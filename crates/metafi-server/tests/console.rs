//! The console on a real node (docs/CONSOLE.md): its own listener; nothing answers without a
//! console session (the client API's server key and session tokens open nothing); sign-in;
//! roles; CSRF on cookie sessions; sign-out; the audit log; accounts, storage, runtime and
//! configuration through the JSON API, acting on what the client API sees.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_server::config::RawConfig;
use metafi_testkit::{Http, TestNode};
use reqwest::Method;
use reqwest::header::{COOKIE, SET_COOKIE};
use serde_json::{Value, json};

const LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ user = context.user_id or "", echo = payload })
end, "whoami")
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

    // A ban ends sign-ins; an unban restores them.
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
    // The ban ended the session too.
    let me = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(me.status, 401);
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

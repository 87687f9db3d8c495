//! `DELETE /v2/account` and `POST /v2/account/{link,unlink}/{device,custom,email}`: Nakama's
//! answers, the last identity kept, sessions and sockets ended on deletion, hooks run.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use metafi_core::hooks::HookFuture;
use metafi_core::{CoreError, Hook, Hooks, RpcContext};
use serde_json::{Value, json};
use support::{Api, Player, assert_error};

async fn account(api: &Api, player: &Player) -> (StatusCode, Value) {
    api.as_user(player, Method::GET, "/v2/account", None).await
}

#[tokio::test]
async fn link_and_unlink_each_identity_and_keep_the_last() {
    let api = Api::new().await;
    let alice = api.sign_up("").await;
    for (path, body) in [
        ("device", json!({"id": "second-device-of-alice"})),
        ("custom", json!({"id": "alice-custom-id"})),
        (
            "email",
            json!({"email": "Alice@Example.com", "password": "secret-password"}),
        ),
    ] {
        let answer = api
            .as_user(
                &alice,
                Method::POST,
                &format!("/v2/account/link/{path}"),
                Some(body),
            )
            .await;
        assert_eq!(answer, (StatusCode::OK, json!({})), "link {path}");
    }
    let (status, body) = account(&api, &alice).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["custom_id"], "alice-custom-id");
    assert_eq!(body["email"], "alice@example.com");
    assert_eq!(body["devices"].as_array().map(Vec::len), Some(2));
    assert_eq!(body["wallet"], "{}", "the wallet is JSON text, as Nakama");

    // Another user cannot take them.
    let bob = api.sign_up("").await;
    let taken = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/device",
            Some(json!({"id": "second-device-of-alice"})),
        )
        .await;
    assert_error(&taken, 409, 6, "Device ID already in use.");
    let taken = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/custom",
            Some(json!({"id": "alice-custom-id"})),
        )
        .await;
    assert_error(&taken, 409, 6, "Custom ID is already in use.");
    let taken = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/email",
            Some(json!({"email": "alice@example.com", "password": "another-password"})),
        )
        .await;
    assert_error(&taken, 409, 6, "Email is already in use.");
    let bad = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/email",
            Some(json!({"email": "", "password": ""})),
        )
        .await;
    assert_error(&bad, 400, 3, "Email address and password is required.");

    // Unlink everything but one identity; the last one stays.
    let devices: Vec<String> = body["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["id"].as_str().expect("id").to_owned())
        .collect();
    for (path, body) in [
        ("custom", json!({"id": "alice-custom-id"})),
        ("email", json!({"email": "alice@example.com"})),
        ("device", json!({"id": devices[0]})),
    ] {
        let answer = api
            .as_user(
                &alice,
                Method::POST,
                &format!("/v2/account/unlink/{path}"),
                Some(body),
            )
            .await;
        assert_eq!(answer, (StatusCode::OK, json!({})), "unlink {path}");
    }
    let last = api
        .as_user(
            &alice,
            Method::POST,
            "/v2/account/unlink/device",
            Some(json!({"id": devices[1]})),
        )
        .await;
    assert_error(
        &last,
        403,
        7,
        "Cannot unlink last account identifier. Check profile exists and is not last link.",
    );
    let (_, body) = account(&api, &alice).await;
    assert_eq!(body["devices"], json!([{"id": devices[1]}]));
    assert!(body.get("custom_id").is_none() && body.get("email").is_none());
    let anonymous = api
        .call(
            Method::POST,
            "/v2/account/link/device",
            None,
            Some(json!({"id": "x-device-id"})),
        )
        .await;
    assert_eq!(anonymous.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn deleting_the_account_ends_its_tokens_and_sockets_and_frees_its_identities() {
    let api = Api::new().await;
    let device = format!("device-{}", uuid::Uuid::new_v4());
    let (status, session) = api.sign_up_raw(&device, "").await;
    assert_eq!(status, StatusCode::OK);
    let token = session["token"].as_str().expect("token").to_owned();
    let auth = format!("Bearer {token}");
    let me = api
        .call(Method::GET, "/v2/account", Some(&auth), None)
        .await;
    let id: uuid::Uuid = me.1["user"]["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let deleted = api
        .call(Method::DELETE, "/v2/account", Some(&auth), None)
        .await;
    assert_eq!(deleted, (StatusCode::OK, json!({})));
    assert_eq!(
        api.sockets.users(),
        vec![id],
        "the user's sockets were closed"
    );
    let after = api
        .call(Method::GET, "/v2/account", Some(&auth), None)
        .await;
    assert_eq!(after.0, StatusCode::UNAUTHORIZED, "{}", after.1);
    // The device id is free again: signing in creates a new account.
    let (status, again) = api.sign_up_raw(&device, "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["created"], true);
    // GET still serves the account route next to DELETE.
    let new_auth = format!("Bearer {}", again["token"].as_str().expect("token"));
    let me = api
        .call(Method::GET, "/v2/account", Some(&new_auth), None)
        .await;
    assert_eq!(me.0, StatusCode::OK);
    assert_ne!(me.1["user"]["id"], json!(id.to_string()));
}

/// Hooks that rewrite a linked device id, refuse deletions and record what ran after.
#[derive(Debug, Default)]
struct TestHooks {
    after: Mutex<Vec<(Hook, Option<Value>)>>,
}

impl Hooks for TestHooks {
    fn has_before(&self, hook: Hook) -> bool {
        matches!(hook, Hook::LinkDevice | Hook::DeleteAccount)
    }

    fn has_after(&self, hook: Hook) -> bool {
        matches!(hook, Hook::LinkDevice | Hook::UnlinkCustom)
    }

    fn before(
        &self,
        hook: Hook,
        _ctx: RpcContext,
        input: Option<Value>,
    ) -> HookFuture<'_, Result<Option<Value>, CoreError>> {
        Box::pin(async move {
            match hook {
                Hook::DeleteAccount => {
                    assert!(input.is_none(), "DeleteAccount's hook gets no input");
                    Err(CoreError::permission_denied("not today"))
                }
                _ => {
                    let mut input = input.expect("LinkDevice has input");
                    let id = input["id"].as_str().expect("id").to_owned();
                    input["id"] = json!(format!("hooked-{id}"));
                    Ok(Some(input))
                }
            }
        })
    }

    fn after(
        &self,
        hook: Hook,
        _ctx: RpcContext,
        _output: Option<Value>,
        input: Option<Value>,
    ) -> HookFuture<'_, ()> {
        self.after.lock().expect("lock").push((hook, input));
        Box::pin(async {})
    }
}

#[tokio::test]
async fn link_and_delete_run_their_hooks_under_nakamas_names() {
    let mut config = support::api_config(metafi_api::HttpConfig::default());
    config.max_request_size_bytes = 1 << 20;
    let test = support::TestApi::start(config, None).await;
    let hooks = Arc::new(TestHooks::default());
    let mut state = test.state.clone();
    state.services_mut().hooks = hooks.clone();
    let router = metafi_api::router(state);
    let request = |method: Method, uri: &str, auth: &str, body: Option<Value>| {
        axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", auth)
            .body(body.map_or_else(axum::body::Body::empty, |b| {
                axum::body::Body::from(b.to_string())
            }))
            .expect("request")
    };
    let session = support::call(
        &router,
        request(
            Method::POST,
            "/v2/account/authenticate/device?create=true",
            support::SERVER_KEY,
            Some(json!({"id": "device-of-hooked-user"})),
        ),
    )
    .await;
    let auth = format!("Bearer {}", session.body["token"].as_str().expect("token"));
    let linked = support::call(
        &router,
        request(
            Method::POST,
            "/v2/account/link/device",
            &auth,
            Some(json!({"id": "phone"})),
        ),
    )
    .await;
    assert_eq!(linked.status, 200, "{}", linked.body);
    let me = support::call(&router, request(Method::GET, "/v2/account", &auth, None)).await;
    let ids: Vec<&str> = me.body["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"hooked-phone"),
        "the before hook's request was used: {ids:?}"
    );
    let refused = support::call(&router, request(Method::DELETE, "/v2/account", &auth, None)).await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.body["message"], "not today");
    let me = support::call(&router, request(Method::GET, "/v2/account", &auth, None)).await;
    assert_eq!(me.status, 200, "the refused deletion deleted nothing");
    let after = hooks.after.lock().expect("lock").clone();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].0, Hook::LinkDevice);
    assert_eq!(
        after[0].1.as_ref().map(|i| i["id"].clone()),
        Some(json!("hooked-phone"))
    );
    test.close().await;
}

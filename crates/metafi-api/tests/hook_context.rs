//! What the REST edge tells a hook about its call (`RpcContext`), as Nakama's `api_*.go` do: a
//! sign-in's before hook runs with no user and its after hook as the new session's user (its
//! id, name, vars and the token's expiry, no session id); both hooks of one request show the
//! request's trace id, another request another; a REST hook has no client port (Nakama's come
//! through its gRPC gateway, which forwards the address without one).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use metafi_core::hooks::HookFuture;
use metafi_core::{CoreError, Hook, Hooks, RpcContext, RpcUser};
use serde_json::{Value, json};
use support::Api;

/// Every hook call's kind and context, in order.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<(Hook, &'static str, RpcContext)>>);

impl Hooks for Seen {
    fn has_before(&self, hook: Hook) -> bool {
        matches!(hook, Hook::AuthenticateDevice | Hook::GetAccount)
    }

    fn has_after(&self, hook: Hook) -> bool {
        self.has_before(hook)
    }

    fn before(
        &self,
        hook: Hook,
        ctx: RpcContext,
        input: Option<Value>,
    ) -> HookFuture<'_, Result<Option<Value>, CoreError>> {
        self.0.lock().unwrap().push((hook, "before", ctx));
        // GetAccount's hook has no input and nothing to pass on; its answer is not read.
        Box::pin(async move { Ok(input.or(Some(Value::Null))) })
    }

    fn after(
        &self,
        hook: Hook,
        ctx: RpcContext,
        _output: Option<Value>,
        _input: Option<Value>,
    ) -> HookFuture<'_, ()> {
        self.0.lock().unwrap().push((hook, "after", ctx));
        Box::pin(async {})
    }
}

/// The claims of a session token.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn a_sign_ins_after_hook_runs_as_the_new_sessions_user_and_a_request_has_one_trace_id() {
    let hooks = Arc::new(Seen::default());
    let api = Api::with_hooks(hooks.clone()).await;
    let (status, session) = api
        .call(
            Method::POST,
            "/v2/account/authenticate/device?create=true&username=ada",
            Some(support::SERVER_KEY),
            Some(json!({"id": "device-of-ada", "vars": {"k": "v"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{session}");
    let token = claims(session["token"].as_str().unwrap());
    let seen = std::mem::take(&mut *hooks.0.lock().unwrap());
    let [(_, "before", before), (_, "after", after)] = &seen[..] else {
        panic!("a before and an after hook: {seen:?}");
    };
    assert_eq!(before.user, None, "no one is signed in before the sign-in");
    assert_eq!(
        after.user,
        Some(RpcUser {
            user_id: token["uid"].as_str().unwrap().parse().unwrap(),
            username: "ada".to_owned(),
            session_id: uuid::Uuid::nil(),
            vars: HashMap::from([("k".to_owned(), "v".to_owned())]),
            expires_at: token["exp"].as_i64().unwrap(),
        })
    );
    let sign_in = before.trace_id.expect("a REST hook has a trace id");
    assert_eq!(after.trace_id, Some(sign_in), "one trace id per request");
    assert_eq!(sign_in.get_version(), Some(uuid::Version::Random));
    assert_eq!((before.client_port, after.client_port), (None, None));

    let auth = format!("Bearer {}", session["token"].as_str().unwrap());
    let (status, account) = api
        .call(Method::GET, "/v2/account", Some(&auth), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{account}");
    let seen = std::mem::take(&mut *hooks.0.lock().unwrap());
    let traces: Vec<_> = seen.iter().map(|(_, _, ctx)| ctx.trace_id).collect();
    assert_eq!(traces.len(), 2, "{seen:?}");
    assert_eq!(traces[0], traces[1]);
    assert_ne!(
        traces[0],
        Some(sign_in),
        "another request, another trace id"
    );
}

//! `/v2/friend`: Nakama's answers (shapes, codes, messages) and the notifications each call
//! sends, through the router without a socket.

#![allow(clippy::unwrap_used)] // tests, and the shared support module, panic to report a failure

mod support;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Api, Player};

async fn states(api: &Api, who: &Player) -> Vec<(String, i64)> {
    let (status, body) = api.as_user(who, Method::GET, "/v2/friend", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["friends"]
        .as_array()
        .map(|friends| {
            friends
                .iter()
                .map(|f| {
                    (
                        f["user"]["username"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        f["state"].as_i64().expect("state is always present"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn error(body: &Value) -> (i64, &str) {
    (
        body["code"].as_i64().unwrap_or(-1),
        body["message"].as_str().unwrap_or_default(),
    )
}

#[tokio::test]
async fn add_accept_list_block_and_delete() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let (status, body) = api
        .as_user(
            &ada,
            Method::POST,
            &format!("/v2/friend?ids={}", bob.id),
            None,
        )
        .await;
    assert_eq!((status, &body), (StatusCode::OK, &json!({})));
    assert_eq!(states(&api, &ada).await, vec![("bob".to_owned(), 1)]);
    assert_eq!(states(&api, &bob).await, vec![("ada".to_owned(), 2)]);
    let sent = api.notified.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].user_id, sent[0].code, sent[0].subject.as_str()),
        (bob.id, -2, "ada wants to add you as a friend")
    );

    // Bob accepts by username; the listing shows Nakama's fields.
    api.online.set(ada.id);
    let (status, _) = api
        .as_user(&bob, Method::POST, "/v2/friend?usernames=ada", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, list) = api.as_user(&bob, Method::GET, "/v2/friend", None).await;
    let friend = &list["friends"][0];
    assert_eq!(friend["state"], json!(0), "state 0 is sent: {list}");
    assert_eq!(friend["user"]["id"], json!(ada.id.to_string()));
    assert_eq!(friend["user"]["online"], json!(true));
    assert!(
        friend["update_time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert!(
        list.get("cursor").is_none(),
        "no cursor on the last page: {list}"
    );
    let sent = api.notified.take();
    assert_eq!(
        (sent[0].user_id, sent[0].code, sent[0].subject.as_str()),
        (ada.id, -3, "bob accepted your friend request")
    );

    // Ada blocks Bob: she sees a block, he sees nothing.
    let (status, _) = api
        .as_user(
            &ada,
            Method::POST,
            &format!("/v2/friend/block?ids={}", bob.id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(states(&api, &ada).await, vec![("bob".to_owned(), 3)]);
    assert!(states(&api, &bob).await.is_empty());
    // Bob adding Ada now is silently ignored.
    api.as_user(
        &bob,
        Method::POST,
        &format!("/v2/friend?ids={}", ada.id),
        None,
    )
    .await;
    assert!(states(&api, &bob).await.is_empty());
    assert!(api.notified.take().is_empty());

    // Delete (unblock) by username.
    let (status, _) = api
        .as_user(&ada, Method::DELETE, "/v2/friend?usernames=bob", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(states(&api, &ada).await.is_empty());
}

#[tokio::test]
async fn bad_input_gets_nakamas_codes_and_messages() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let cases = [
        (
            Method::POST,
            format!("/v2/friend?ids={}", ada.id),
            "Cannot add self as friend.",
        ),
        (
            Method::POST,
            "/v2/friend?usernames=ada".to_owned(),
            "Cannot add self as friend.",
        ),
        (
            Method::DELETE,
            format!("/v2/friend?ids={}", ada.id),
            "Cannot delete self.",
        ),
        (
            Method::POST,
            "/v2/friend/block?usernames=ada".to_owned(),
            "Cannot block self.",
        ),
        (
            Method::POST,
            "/v2/friend?ids=nope".to_owned(),
            "Invalid user ID 'nope'.",
        ),
        (
            Method::POST,
            "/v2/friend?usernames=".to_owned(),
            "Username must not be empty.",
        ),
        (
            Method::POST,
            "/v2/friend?usernames=ghost".to_owned(),
            "No valid ID or username was provided.",
        ),
        (
            Method::POST,
            "/v2/friend/block?usernames=ghost".to_owned(),
            "No valid ID or username was provided.",
        ),
        (
            Method::GET,
            "/v2/friend?limit=0".to_owned(),
            "Invalid limit - limit must be between 1 and 1000.",
        ),
        (
            Method::GET,
            "/v2/friend?limit=1001".to_owned(),
            "Invalid limit - limit must be between 1 and 1000.",
        ),
        (
            Method::GET,
            "/v2/friend?state=4".to_owned(),
            "Invalid state - state must be between 0 and 3.",
        ),
        (
            Method::GET,
            "/v2/friend?cursor=xyz!".to_owned(),
            "Cursor is invalid.",
        ),
        (
            Method::GET,
            "/v2/friend/friends?limit=101".to_owned(),
            "Invalid limit - limit must be between 1 and 100.",
        ),
        (
            Method::GET,
            "/v2/friend/friends?cursor=bad".to_owned(),
            "Cursor is invalid.",
        ),
    ];
    for (method, uri, message) in cases {
        let (status, body) = api.as_user(&ada, method.clone(), &uri, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {uri}: {body}");
        assert_eq!(error(&body), (3, message), "{method} {uri}");
    }
    // Deleting only unknown usernames, or nothing at all, is fine.
    for (method, uri) in [
        (Method::DELETE, "/v2/friend?usernames=ghost"),
        (Method::POST, "/v2/friend"),
        (Method::DELETE, "/v2/friend"),
        (Method::POST, "/v2/friend/block"),
    ] {
        let (status, body) = api.as_user(&ada, method, uri, None).await;
        assert_eq!((status, body), (StatusCode::OK, json!({})), "{uri}");
    }
    // Without a session.
    let (status, _) = api.call(Method::GET, "/v2/friend", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn listing_pages_with_cursors_and_state_filter() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let mut others = Vec::new();
    for n in 0..7 {
        others.push(api.sign_up(&format!("&username=friend{n}")).await);
    }
    let ids: Vec<String> = others.iter().map(|p| format!("ids={}", p.id)).collect();
    api.as_user(
        &ada,
        Method::POST,
        &format!("/v2/friend?{}", ids.join("&")),
        None,
    )
    .await;
    // Two accept: those become state 0 and list first.
    for accepter in &others[..2] {
        api.as_user(accepter, Method::POST, "/v2/friend?usernames=ada", None)
            .await;
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let uri = format!("/v2/friend?limit=3&cursor={cursor}");
        let (status, page) = api.as_user(&ada, Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for f in page["friends"].as_array().into_iter().flatten() {
            seen.push(f["state"].as_i64().unwrap_or(-1));
        }
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, vec![0, 0, 1, 1, 1, 1, 1]);
    let (_, sent_only) = api
        .as_user(&ada, Method::GET, "/v2/friend?state=1&limit=100", None)
        .await;
    assert_eq!(sent_only["friends"].as_array().map(Vec::len), Some(5));
    // Friends of friends: friend0's other friends.
    let carl = api.sign_up("&username=carl").await;
    api.as_user(
        &others[0],
        Method::POST,
        &format!("/v2/friend?ids={}", carl.id),
        None,
    )
    .await;
    api.as_user(
        &carl,
        Method::POST,
        &format!("/v2/friend?ids={}", others[0].id),
        None,
    )
    .await;
    let (status, fof) = api
        .as_user(&ada, Method::GET, "/v2/friend/friends", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{fof}");
    assert_eq!(
        fof,
        json!({"friends_of_friends": [{
            "referrer": others[0].id.to_string(),
            "user": fof["friends_of_friends"][0]["user"].clone(),
        }]})
    );
    assert_eq!(
        fof["friends_of_friends"][0]["user"]["username"],
        json!("carl")
    );
}

/// Hooks on the friend calls: AddFriends' before hook renames the target, ListFriends' drops
/// the call, and AddFriends' after hook sees the request as the before hook left it.
#[derive(Debug, Default)]
struct FriendHooks {
    after_inputs: std::sync::Mutex<Vec<Value>>,
}

impl metafi_core::Hooks for FriendHooks {
    fn has_before(&self, hook: metafi_core::Hook) -> bool {
        matches!(
            hook,
            metafi_core::Hook::AddFriends | metafi_core::Hook::ListFriends
        )
    }

    fn has_after(&self, hook: metafi_core::Hook) -> bool {
        hook == metafi_core::Hook::AddFriends
    }

    fn before(
        &self,
        hook: metafi_core::Hook,
        _ctx: metafi_core::RpcContext,
        input: Option<Value>,
    ) -> metafi_core::hooks::HookFuture<'_, Result<Option<Value>, metafi_core::CoreError>> {
        Box::pin(async move {
            Ok(match hook {
                metafi_core::Hook::AddFriends => input.map(|mut request| {
                    request["usernames"] = json!(["bob"]);
                    request
                }),
                _ => None,
            })
        })
    }

    fn after(
        &self,
        _hook: metafi_core::Hook,
        _ctx: metafi_core::RpcContext,
        _output: Option<Value>,
        input: Option<Value>,
    ) -> metafi_core::hooks::HookFuture<'_, ()> {
        Box::pin(async move {
            self.after_inputs.lock().unwrap().extend(input);
        })
    }
}

#[tokio::test]
async fn hooks_run_around_friend_calls() {
    let hooks = std::sync::Arc::new(FriendHooks::default());
    let api = Api::with_hooks(hooks.clone()).await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let (status, _) = api
        .as_user(&ada, Method::POST, "/v2/friend?usernames=ghost", None)
        .await;
    assert_eq!(status, StatusCode::OK, "the before hook named bob instead");
    let sent = api.notified.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].user_id, bob.id);
    let inputs = hooks.after_inputs.lock().unwrap().clone();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0]["usernames"], json!(["bob"]));
    let (status, body) = api.as_user(&ada, Method::GET, "/v2/friend", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error(&body), (5, "Requested resource was not found."));
}

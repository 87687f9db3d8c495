//! Users by Facebook id (`GET /v2/user?facebook_ids=`) and friend import over REST against
//! fake Facebook and Steam providers on 127.0.0.1: `POST /v2/friend/facebook` and
//! `/v2/friend/steam` (with `reset`), `sync` on sign-in and link, and Nakama 3.40's codes and
//! messages (`server/api_friend.go`, `core_authenticate.go` importFacebookFriends /
//! importSteamFriends).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::routing::get;
use metafi_core::SocialConfig;
use serde_json::json;
use support::{Api, Player, SERVER_KEY, assert_error, user_id_of};

const STEAM_ANN: &str = "76561197960287930";
const STEAM_BOB: &str = "76561197960287931";

/// Facebook: access token `fb-X` is the user `fb-X`, whose friends are `fb-ann` and `fb-bob`
/// (on two pages). Steam: ticket `ticket-X` is `X`; everyone's friends are Ann and Bob.
async fn api() -> Api {
    type Q = Query<HashMap<String, String>>;
    let app = axum::Router::new()
        .route(
            "/facebook/me",
            get(|q: Q| async move {
                match q.get("access_token") {
                    Some(token) if token.starts_with("fb-") => (
                        StatusCode::OK,
                        json!({"id": token, "name": token}).to_string(),
                    ),
                    _ => (StatusCode::UNAUTHORIZED, "{}".to_owned()),
                }
            }),
        )
        .route(
            "/facebook/friends",
            get(|q: Q| async move {
                if !q.get("access_token").is_some_and(|t| t.starts_with("fb-")) {
                    return (StatusCode::BAD_REQUEST, "{}".to_owned());
                }
                let body = match q.get("after").map(String::as_str) {
                    None => json!({"data": [{"id": "fb-ann"}],
                        "paging": {"cursors": {"after": "p2"}, "next": "https://next"}}),
                    Some("p2") => json!({"data": [{"id": "fb-bob"}, {"id": "fb-nobody"}],
                        "paging": {"cursors": {"after": "p3"}}}),
                    Some(_) => json!({"data": []}),
                };
                (StatusCode::OK, body.to_string())
            }),
        )
        .route(
            "/steam/auth",
            get(|q: Q| async move {
                match q.get("ticket").and_then(|t| t.strip_prefix("ticket-")) {
                    Some(id) => json!({"response": {"params": {"result": "OK", "steamid": id}}}),
                    None => json!({"response": {"error": {"errorcode": 101,
                        "errordesc": "Invalid ticket"}}}),
                }
                .to_string()
            }),
        )
        .route(
            "/steam/friends",
            get(|| async {
                json!({"friendslist": {"friends": [
                    {"steamid": STEAM_ANN, "relationship": "friend"},
                    {"steamid": STEAM_BOB, "relationship": "friend"}]}})
                .to_string()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Api::with_social(SocialConfig {
        facebook_graph_url: format!("{base}/facebook/me"),
        facebook_friends_url: format!("{base}/facebook/friends"),
        steam_publisher_key: "publisher-key".into(),
        steam_app_id: 480,
        steam_auth_url: format!("{base}/steam/auth"),
        steam_friends_url: format!("{base}/steam/friends"),
        timeout: Duration::from_secs(5),
        ..SocialConfig::default()
    })
    .await
}

async fn sign_in(api: &Api, provider: &str, token: &str, query: &str) -> Player {
    let (status, body) = api
        .call(
            Method::POST,
            &format!("/v2/account/authenticate/{provider}?{query}"),
            Some(SERVER_KEY),
            Some(json!({"token": token})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    Player {
        id: user_id_of(&token),
        refresh_token: String::new(),
        token,
    }
}

/// The caller's relationships as (user id, state), sorted.
async fn friends(api: &Api, player: &Player) -> Vec<(String, i64)> {
    let (status, body) = api.as_user(player, Method::GET, "/v2/friend", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut list: Vec<(String, i64)> = body["friends"]
        .as_array()
        .map(|friends| {
            friends
                .iter()
                .map(|f| {
                    (
                        f["user"]["id"].as_str().unwrap().to_owned(),
                        f["state"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    list.sort();
    list
}

fn ids(players: &[&Player]) -> Vec<(String, i64)> {
    let mut list: Vec<(String, i64)> = players.iter().map(|p| (p.id.to_string(), 0)).collect();
    list.sort();
    list
}

#[tokio::test]
async fn users_are_found_by_facebook_id() {
    let api = api().await;
    let ann = sign_in(&api, "facebook", "fb-ann", "").await;
    let bob = sign_in(&api, "facebook", "fb-bob", "").await;
    let (status, body) = api
        .as_user(
            &ann,
            Method::GET,
            "/v2/user?facebook_ids=fb-bob&facebook_ids=fb-nobody",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let users = body["users"].as_array().unwrap();
    assert_eq!(users.len(), 1, "{body}");
    assert_eq!(users[0]["id"], bob.id.to_string());
    assert_eq!(users[0]["facebook_id"], "fb-bob");
    // Named twice (by id and by Facebook id): listed once.
    let (_, body) = api
        .as_user(
            &ann,
            Method::GET,
            &format!(
                "/v2/user?ids={}&facebook_ids=fb-ann&facebook_ids=fb-bob",
                ann.id
            ),
            None,
        )
        .await;
    let mut found: Vec<&str> = body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    found.sort_unstable();
    let mut expected = vec![ann.id.to_string(), bob.id.to_string()];
    expected.sort();
    assert_eq!(found, expected);
}

#[tokio::test]
async fn facebook_import_befriends_players_on_every_page() {
    let api = api().await;
    let ann = sign_in(&api, "facebook", "fb-ann", "").await;
    let bob = sign_in(&api, "facebook", "fb-bob", "").await;
    let me = sign_in(&api, "facebook", "fb-me", "").await;
    let (status, body) = api
        .as_user(
            &me,
            Method::POST,
            "/v2/friend/facebook",
            Some(json!({"token": "fb-me"})),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    assert_eq!(friends(&api, &me).await, ids(&[&ann, &bob]));
    assert_eq!(friends(&api, &ann).await, ids(&[&me]));
    let told: Vec<(uuid::Uuid, i32)> = api
        .take_notifications()
        .iter()
        .map(|n| (n.user_id, n.code))
        .collect();
    assert_eq!(told, vec![(ann.id, -6), (bob.id, -6)]);
}

#[tokio::test]
async fn facebook_import_refusals_answer_as_nakama() {
    let api = api().await;
    let me = sign_in(&api, "facebook", "fb-me", "").await;
    let answer = api
        .as_user(&me, Method::POST, "/v2/friend/facebook", Some(json!({})))
        .await;
    assert_error(&answer, 400, 3, "Facebook token is required.");
    let answer = api
        .as_user(
            &me,
            Method::POST,
            "/v2/friend/facebook?reset=true",
            Some(json!({"token": "refused"})),
        )
        .await;
    assert_error(&answer, 401, 16, "Could not authenticate Facebook profile.");
    let answer = api
        .as_user(
            &me,
            Method::POST,
            "/v2/friend/facebook?reset=maybe",
            Some(json!({"token": "fb-me"})),
        )
        .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
    let answer = api
        .call(
            Method::POST,
            "/v2/friend/facebook",
            None,
            Some(json!({"token": "fb-me"})),
        )
        .await;
    assert_eq!(answer.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn steam_import_with_reset_replaces_friends_but_keeps_blocks() {
    let api = api().await;
    let ann = sign_in(&api, "steam", &format!("ticket-{STEAM_ANN}"), "").await;
    let bob = sign_in(&api, "steam", &format!("ticket-{STEAM_BOB}"), "").await;
    let me = sign_in(&api, "steam", "ticket-76561197960287999", "").await;
    let old = api.sign_up("").await;
    let blocked = api.sign_up("").await;
    let uri = format!("/v2/friend?ids={}", old.id);
    api.as_user(&me, Method::POST, &uri, None).await;
    let uri = format!("/v2/friend/block?ids={}", blocked.id);
    api.as_user(&me, Method::POST, &uri, None).await;
    let (status, body) = api
        .as_user(
            &me,
            Method::POST,
            "/v2/friend/steam?reset=true",
            Some(json!({"token": "ticket-76561197960287999"})),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    let mut expected = ids(&[&ann, &bob]);
    expected.push((blocked.id.to_string(), 3));
    expected.sort();
    assert_eq!(friends(&api, &me).await, expected);
    assert_eq!(friends(&api, &old).await, vec![], "the invite was reset");
    let answer = api
        .as_user(
            &me,
            Method::POST,
            "/v2/friend/steam",
            Some(json!({"token": "bad"})),
        )
        .await;
    assert_error(&answer, 401, 16, "Could not authenticate Steam profile.");
    let answer = api
        .as_user(&me, Method::POST, "/v2/friend/steam", Some(json!({})))
        .await;
    assert_error(&answer, 400, 3, "Steam token is required.");
}

#[tokio::test]
async fn steam_import_without_a_publisher_key_is_failed_precondition() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/friend/steam",
            Some(json!({"token": "t"})),
        )
        .await;
    assert_error(&answer, 400, 9, "Steam authentication is not configured.");
    // Without a token Facebook is refused before any provider is asked.
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/friend/facebook",
            Some(json!({"token": ""})),
        )
        .await;
    assert_error(&answer, 400, 3, "Facebook token is required.");
}

#[tokio::test]
async fn sync_on_sign_in_and_link_imports_friends() {
    let api = api().await;
    let ann = sign_in(&api, "facebook", "fb-ann", "").await;
    // Without sync, no import.
    let me = sign_in(&api, "facebook", "fb-me", "").await;
    assert_eq!(friends(&api, &me).await, vec![]);
    let me = sign_in(&api, "facebook", "fb-me", "sync=true").await;
    assert_eq!(friends(&api, &me).await, ids(&[&ann]));

    // Linking Steam imports unless sync=false (Nakama's default is to import).
    let bob = sign_in(&api, "steam", &format!("ticket-{STEAM_BOB}"), "").await;
    let carl = api.sign_up("").await;
    let (status, body) = api
        .as_user(
            &carl,
            Method::POST,
            "/v2/account/link/steam",
            Some(json!({"account": {"token": "ticket-76561197960281111"}, "sync": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(friends(&api, &carl).await, vec![]);
    let dora = api.sign_up("").await;
    let (status, body) = api
        .as_user(
            &dora,
            Method::POST,
            "/v2/account/link/steam",
            Some(json!({"account": {"token": "ticket-76561197960282222"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(friends(&api, &dora).await, ids(&[&bob]));
}

//! Social sign-in over REST against fake providers on 127.0.0.1: creation, existing users,
//! links and unlinks, and Nakama 3.40's codes and messages for refused credentials
//! (`server/api_authenticate.go`, `core_authenticate.go`, `core_link.go`, `core_unlink.go`).
//! The RSA keys are the test keys of `metafi-core/src/social/testdata`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::routing::get;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use metafi_core::SocialConfig;
use serde_json::{Value, json};
use support::{Api, Player, SERVER_KEY, assert_error, user_id_of};

const KEY: &[u8] = include_bytes!("../../metafi-core/src/social/testdata/key.der");
const OTHER_KEY: &[u8] = include_bytes!("../../metafi-core/src/social/testdata/other_key.der");
const JWKS: &str = include_str!("../../metafi-core/src/social/testdata/jwks.json");
const CERT: &[u8] = include_bytes!("../../metafi-core/src/social/testdata/cert.der");
const INSTANT_SECRET: &str = "instant-secret";

/// Starts the fake providers and an API configured for them.
async fn api() -> (Api, String) {
    let app = axum::Router::new()
        .route("/keys", get(|| async { JWKS }))
        .route("/gc/key.cer", get(|| async { CERT.to_vec() }))
        .route(
            "/facebook/me",
            get(
                |q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                    match q.get("access_token").map(String::as_str) {
                        Some("fb-ann") => (
                            StatusCode::OK,
                            json!({"id": "fb-1", "name": "Ann FB", "email": "ann@fb.example",
                                   "picture": {"data": {"url": "https://fb.example/ann.jpg"}}})
                            .to_string(),
                        ),
                        _ => (
                            StatusCode::UNAUTHORIZED,
                            json!({"error": {"message": "Invalid OAuth access token."}})
                                .to_string(),
                        ),
                    }
                },
            ),
        )
        .route(
            "/steam/auth",
            get(
                |q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                    let ok = q.get("key").map(String::as_str) == Some("publisher-key")
                        && q.get("appid").map(String::as_str) == Some("480");
                    match (ok, q.get("ticket").map(String::as_str)) {
                        (true, Some("ticket-ann")) => json!({"response": {"params": {
                            "result": "OK", "steamid": "76561197960287930"}}}),
                        _ => json!({"response": {"error": {
                            "errorcode": 101, "errordesc": "Invalid ticket"}}}),
                    }
                    .to_string()
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::with_social(SocialConfig {
        apple_bundle_id: "com.example.game".into(),
        apple_keys_url: format!("{base}/keys"),
        google_keys_url: format!("{base}/keys"),
        facebook_limited_keys_url: format!("{base}/keys"),
        facebook_graph_url: format!("{base}/facebook/me"),
        facebook_instant_game_app_secret: INSTANT_SECRET.into(),
        steam_publisher_key: "publisher-key".into(),
        steam_app_id: 480,
        steam_auth_url: format!("{base}/steam/auth"),
        game_center_extra_key_url_prefixes: vec![format!("{base}/gc/")],
        timeout: Duration::from_secs(5),
        ..SocialConfig::default()
    })
    .await;
    (api, base)
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn id_token(claims: Value, key: &[u8]) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("test-key".into());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_der(key)).unwrap()
}

fn apple_token(sub: &str) -> String {
    id_token(
        json!({"iss": "https://appleid.apple.com", "aud": "com.example.game", "sub": sub,
               "email": format!("{sub}@privaterelay.appleid.com"), "exp": now_s() + 600}),
        KEY,
    )
}

fn google_token(sub: &str) -> String {
    id_token(
        json!({"iss": "https://accounts.google.com", "azp": "client", "aud": "client",
               "sub": sub, "name": "Ann Google", "picture": "https://google.example/ann.png",
               "email": format!("{sub}@gmail.example"), "exp": now_s() + 600}),
        KEY,
    )
}

fn signed_player_info(player_id: &str, secret: &str) -> String {
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        json!({"algorithm": "HMAC-SHA256", "player_id": player_id, "issued_at": now_s()})
            .to_string(),
    );
    let signature = jsonwebtoken::crypto::sign(
        payload.as_bytes(),
        &EncodingKey::from_secret(secret.as_bytes()),
        Algorithm::HS256,
    )
    .unwrap();
    format!("{signature}.{payload}")
}

async fn sign_in(api: &Api, provider: &str, query: &str, body: Value) -> (StatusCode, Value) {
    api.call(
        Method::POST,
        &format!("/v2/account/authenticate/{provider}?{query}"),
        Some(SERVER_KEY),
        Some(body),
    )
    .await
}

fn player(body: &Value) -> Player {
    let token = body["token"].as_str().expect("token").to_owned();
    Player {
        id: user_id_of(&token),
        refresh_token: body["refresh_token"].as_str().unwrap_or("").to_owned(),
        token,
    }
}

#[tokio::test]
async fn apple_sign_in_creates_the_account_then_finds_it() {
    let (api, _) = api().await;
    let body = json!({"token": apple_token("apple-ann")});
    let (status, created) = sign_in(&api, "apple", "username=ann", body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["created"], true);
    let ann = player(&created);
    let (status, again) = sign_in(&api, "apple", "", body).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again.get("created"), None, "false is omitted");
    assert_eq!(player(&again).id, ann.id);

    let (status, account) = api.as_user(&ann, Method::GET, "/v2/account", None).await;
    assert_eq!(status, StatusCode::OK, "{account}");
    assert_eq!(account["user"]["username"], "ann");
    assert_eq!(account["user"]["apple_id"], "apple-ann");
    assert_eq!(account["email"], "apple-ann@privaterelay.appleid.com");
    let uri = format!("/v2/user?ids={}", ann.id);
    let (_, users) = api.as_user(&ann, Method::GET, &uri, None).await;
    assert_eq!(users["users"][0]["apple_id"], "apple-ann", "{users}");

    // create=false with an unknown Apple id: NotFound, nothing created.
    let unknown = json!({"token": apple_token("apple-nobody")});
    let answer = sign_in(&api, "apple", "create=false", unknown).await;
    assert_error(&answer, 404, 5, "User account not found.");
    // A username someone has: AlreadyExists.
    let taken = json!({"token": apple_token("apple-bob")});
    let answer = sign_in(&api, "apple", "username=ann", taken).await;
    assert_error(&answer, 409, 6, "Username is already in use.");
}

#[tokio::test]
async fn refused_apple_tokens_answer_as_nakama() {
    let (api, _) = api().await;
    let expired = id_token(
        json!({"iss": "https://appleid.apple.com", "aud": "com.example.game",
               "sub": "apple-ann", "exp": now_s() - 10}),
        KEY,
    );
    let other_app = id_token(
        json!({"iss": "https://appleid.apple.com", "aud": "com.other.app",
               "sub": "apple-ann", "exp": now_s() + 600}),
        KEY,
    );
    let forged = id_token(
        json!({"iss": "https://appleid.apple.com", "aud": "com.example.game",
               "sub": "apple-ann", "exp": now_s() + 600}),
        OTHER_KEY,
    );
    for token in [expired, other_app, forged, "garbage".to_owned()] {
        let answer = sign_in(&api, "apple", "", json!({ "token": token })).await;
        assert_error(&answer, 401, 16, "Could not authenticate Apple profile.");
    }
    let answer = sign_in(&api, "apple", "", json!({})).await;
    assert_error(&answer, 400, 3, "Apple ID token is required.");
    let answer = sign_in(
        &api,
        "apple",
        "username=a%20b%01",
        json!({"token": apple_token("x")}),
    )
    .await;
    assert_error(
        &answer,
        400,
        3,
        "Username invalid, no spaces or control characters allowed.",
    );
}

#[tokio::test]
async fn unconfigured_providers_answer_failed_precondition() {
    let api = Api::new().await;
    let answer = sign_in(&api, "apple", "", json!({"token": "t"})).await;
    assert_error(&answer, 400, 9, "Apple authentication is not configured.");
    let answer = sign_in(&api, "steam", "", json!({"token": "t"})).await;
    assert_error(&answer, 400, 9, "Steam authentication is not configured.");
    // Without an app secret every Instant Games signature fails.
    let info = signed_player_info("fbig-1", "");
    let answer = sign_in(
        &api,
        "facebookinstantgame",
        "",
        json!({ "signed_player_info": info }),
    )
    .await;
    assert_error(
        &answer,
        500,
        15,
        "Error extracting the Facebook Instant Game player ID or validating the signature",
    );
}

#[tokio::test]
async fn google_sign_in_fills_the_profile_and_links_and_unlinks() {
    let (api, _) = api().await;
    let (status, created) =
        sign_in(&api, "google", "", json!({"token": google_token("g-ann")})).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let ann = player(&created);
    let (_, account) = api.as_user(&ann, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"]["google_id"], "g-ann", "{account}");
    assert_eq!(account["user"]["display_name"], "Ann Google");
    assert_eq!(
        account["user"]["avatar_url"],
        "https://google.example/ann.png"
    );
    assert_eq!(account["email"], "g-ann@gmail.example");

    // A device user links another Google id; a third user cannot take it.
    let bob = api.sign_up("&username=bob").await;
    let link = |token: String| json!({ "token": token });
    let (status, body) = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/google",
            Some(link(google_token("g-bob"))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer = api
        .as_user(
            &ann,
            Method::POST,
            "/v2/account/link/google",
            Some(link(google_token("g-bob"))),
        )
        .await;
    assert_error(&answer, 409, 6, "Google ID is already in use.");
    let answer = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/google",
            Some(json!({})),
        )
        .await;
    assert_error(&answer, 400, 3, "Google access token is required.");
    let forged = id_token(
        json!({"iss": "accounts.google.com", "azp": "c", "aud": "c", "sub": "g-bob",
               "exp": now_s() + 60}),
        OTHER_KEY,
    );
    let answer = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/link/google",
            Some(link(forged)),
        )
        .await;
    assert_error(&answer, 401, 16, "Could not authenticate Google profile.");
    let (_, account) = api.as_user(&bob, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"]["google_id"], "g-bob");
    assert_eq!(
        account["user"]["display_name"], "Ann Google",
        "filled when empty"
    );

    // Ann's Google id may go: the email imported from Google is an identity too (Nakama's
    // guard counts it).
    let (status, body) = api
        .as_user(
            &ann,
            Method::POST,
            "/v2/account/unlink/google",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A token naming another id than Bob's changes nothing. Bob keeps his device: Google
    // goes (by proof of the id), then signing in with it is a new account.
    let last = "Cannot unlink last account identifier. Check profile exists and is not last link.";
    let answer = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/unlink/google",
            Some(link(google_token("g-ann"))),
        )
        .await;
    assert_error(&answer, 403, 7, last);
    let (status, body) = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/account/unlink/google",
            Some(link(google_token("g-bob"))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, account) = api.as_user(&bob, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"].get("google_id"), None, "{account}");
    let (_, again) = sign_in(&api, "google", "", link(google_token("g-bob"))).await;
    assert_eq!(again["created"], true, "{again}");
}

#[tokio::test]
async fn facebook_steam_instant_game_and_game_center_sign_in() {
    let (api, base) = api().await;
    // Facebook: the Graph API answers for the access token.
    let (status, body) = sign_in(&api, "facebook", "sync=true", json!({"token": "fb-ann"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fb = player(&body);
    let (_, account) = api.as_user(&fb, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"]["facebook_id"], "fb-1", "{account}");
    assert_eq!(account["user"]["display_name"], "Ann FB");
    let answer = sign_in(&api, "facebook", "", json!({"token": "expired"})).await;
    assert_error(&answer, 401, 16, "Could not authenticate Facebook profile.");

    // Steam: the Web API answers for the ticket with the configured key and app id.
    let (status, body) = sign_in(&api, "steam", "", json!({"token": "ticket-ann"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let steam = player(&body);
    let (_, account) = api.as_user(&steam, Method::GET, "/v2/account", None).await;
    assert_eq!(
        account["user"]["steam_id"], "76561197960287930",
        "{account}"
    );
    let answer = sign_in(&api, "steam", "", json!({"token": "bad-ticket"})).await;
    assert_error(&answer, 401, 16, "Could not authenticate Steam profile.");
    // Steam's link body is the whole LinkSteamRequest; its unlink body the account.
    let answer = api
        .as_user(
            &fb,
            Method::POST,
            "/v2/account/link/steam",
            Some(json!({"account": {"token": "ticket-ann"}, "sync": false})),
        )
        .await;
    assert_error(&answer, 409, 6, "Steam ID is already in use.");
    // The Steam account has no other identity: its Steam id cannot go.
    let answer = api
        .as_user(
            &steam,
            Method::POST,
            "/v2/account/unlink/steam",
            Some(json!({})),
        )
        .await;
    assert_error(
        &answer,
        403,
        7,
        "Cannot unlink last account identifier. Check profile exists and is not last link.",
    );

    // Facebook Instant Games: signed with the app secret.
    let info = signed_player_info("fbig-1", INSTANT_SECRET);
    let (status, body) = sign_in(
        &api,
        "facebookinstantgame",
        "",
        json!({ "signed_player_info": info }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let forged = signed_player_info("fbig-1", "not-the-secret");
    let answer = api
        .as_user(
            &fb,
            Method::POST,
            "/v2/account/link/facebookinstantgame",
            Some(json!({ "signed_player_info": forged })),
        )
        .await;
    assert_error(
        &answer,
        401,
        16,
        "Could not authenticate Facebook Instant Game profile.",
    );

    // Game Center: the device's signature, checked with the certificate at the URL.
    let proof = game_center_proof(&base, KEY);
    let (status, body) = sign_in(&api, "gamecenter", "", proof.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let gc = player(&body);
    let (_, account) = api.as_user(&gc, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"]["gamecenter_id"], "G:1", "{account}");
    let forged = game_center_proof(&base, OTHER_KEY);
    let answer = sign_in(&api, "gamecenter", "", forged).await;
    assert_error(
        &answer,
        401,
        16,
        "Could not authenticate GameCenter profile.",
    );
    let mut no_salt = proof.clone();
    no_salt["salt"] = json!("");
    let answer = sign_in(&api, "gamecenter", "", no_salt).await;
    assert_error(&answer, 400, 3, "GameCenter salt is required.");
    let mut elsewhere = proof;
    elsewhere["public_key_url"] = json!("https://example.com/key.cer");
    let answer = sign_in(&api, "gamecenter", "", elsewhere).await;
    assert_error(
        &answer,
        401,
        16,
        "Could not authenticate GameCenter profile.",
    );
}

/// A Game Center proof signed by `key` (the certificate served is `KEY`'s), its URL under the
/// configured extra prefix.
fn game_center_proof(base: &str, key: &[u8]) -> Value {
    let prefix = format!("{base}/gc/");
    let ts = now_s();
    let salt = b"salty";
    let mut message = b"G:1com.example.game".to_vec();
    message.extend_from_slice(&ts.to_be_bytes());
    message.extend_from_slice(salt);
    let signature =
        jsonwebtoken::crypto::sign(&message, &EncodingKey::from_rsa_der(key), Algorithm::RS256)
            .unwrap();
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .unwrap();
    let std = base64::engine::general_purpose::STANDARD;
    json!({
        "player_id": "G:1",
        "bundle_id": "com.example.game",
        "timestamp_seconds": ts.to_string(),
        "salt": std.encode(salt),
        "signature": std.encode(signature),
        "public_key_url": format!("{prefix}key.cer"),
    })
}

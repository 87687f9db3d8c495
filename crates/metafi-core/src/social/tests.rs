//! Verification against fake providers on 127.0.0.1, with RSA keys made for these tests
//! (`testdata/`: `key.der` signs, `jwks.json` and `cert.der` publish its public half,
//! `other_key.der` forges).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::verifier::Verifier;
use super::{Credential, GameCenterProof, SocialConfig, VerifyError};
use crate::{Clock, ManualClock};

const KEY: &[u8] = include_bytes!("testdata/key.der");
const OTHER_KEY: &[u8] = include_bytes!("testdata/other_key.der");
const JWKS: &[u8] = include_bytes!("testdata/jwks.json");
const CERT: &[u8] = include_bytes!("testdata/cert.der");

/// 2023-11-14T22:13:20Z, in ms.
const NOW_MS: i64 = 1_700_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

/// A fake provider: answers each request target (path and query) or else path with a fixed
/// status and body, and records every request line.
pub(super) struct Fake {
    pub(super) base: String,
    pub(super) hits: Arc<AtomicUsize>,
    pub(super) requests: Arc<parking_lot::Mutex<Vec<String>>>,
}

pub(super) async fn fake(routes: Vec<(&'static str, u16, Vec<u8>)>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let routes: Arc<HashMap<&'static str, (u16, Vec<u8>)>> = Arc::new(
        routes
            .into_iter()
            .map(|(path, status, body)| (path, (status, body)))
            .collect(),
    );
    let hits = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (hits2, requests2) = (Arc::clone(&hits), Arc::clone(&requests));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let routes = Arc::clone(&routes);
            let hits = Arc::clone(&hits2);
            let requests = Arc::clone(&requests2);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let target = text.split(' ').nth(1).unwrap_or("").to_owned();
                let path = target.split('?').next().unwrap_or("").to_owned();
                hits.fetch_add(1, Ordering::SeqCst);
                requests.lock().push(target.clone());
                let (status, body) = routes
                    .get(target.as_str())
                    .or_else(|| routes.get(path.as_str()))
                    .cloned()
                    .unwrap_or((404, b"not found".to_vec()));
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    Fake {
        base,
        hits,
        requests,
    }
}

pub(super) fn config(base: &str) -> SocialConfig {
    SocialConfig {
        apple_bundle_id: "com.example.game".into(),
        apple_keys_url: format!("{base}/apple/keys"),
        google_keys_url: format!("{base}/google/certs"),
        facebook_limited_keys_url: format!("{base}/facebook/jwks"),
        facebook_graph_url: format!("{base}/facebook/me"),
        facebook_instant_game_app_secret: "instant-secret".into(),
        steam_publisher_key: "publisher-key".into(),
        steam_app_id: 480,
        steam_auth_url: format!("{base}/steam/auth"),
        game_center_extra_key_url_prefixes: vec![format!("{base}/gc/")],
        timeout: Duration::from_secs(5),
        ..SocialConfig::default()
    }
}

fn verifier(config: SocialConfig) -> (Verifier, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let verifier = Verifier::new(config, Arc::clone(&clock) as Arc<dyn Clock>).expect("client");
    (verifier, clock)
}

fn token(claims: Value, key: &[u8], kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_rsa_der(key);
    jsonwebtoken::encode(&header, &claims, &key).expect("sign")
}

fn apple_claims() -> Value {
    json!({
        "iss": "https://appleid.apple.com",
        "aud": "com.example.game",
        "sub": "001234.apple-user",
        "email": "ann@privaterelay.appleid.com",
        "iat": NOW_S - 10,
        "exp": NOW_S + 600,
    })
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn apple(token: String) -> Credential {
    Credential::Apple { token }
}

async fn keys_fake() -> Fake {
    fake(vec![
        ("/apple/keys", 200, JWKS.to_vec()),
        ("/google/certs", 200, JWKS.to_vec()),
        ("/facebook/jwks", 200, JWKS.to_vec()),
    ])
    .await
}

#[tokio::test]
async fn apple_token_signed_by_apple_for_the_bundle_is_accepted() {
    let fake = keys_fake().await;
    let (verifier, _) = verifier(config(&fake.base));
    let profile = verifier
        .verify(&apple(token(apple_claims(), KEY, "test-key")))
        .await
        .expect("valid");
    assert_eq!(profile.id, "001234.apple-user");
    assert_eq!(profile.email, "ann@privaterelay.appleid.com");
}

#[tokio::test]
async fn apple_tokens_that_are_forged_expired_or_not_for_us_are_refused() {
    let fake = keys_fake().await;
    let (verifier, _) = verifier(config(&fake.base));
    let cases = [
        ("forged", token(apple_claims(), OTHER_KEY, "test-key")),
        ("unknown kid", token(apple_claims(), KEY, "other-kid")),
        (
            "other app",
            token(
                with(apple_claims(), "aud", json!("com.other.game")),
                KEY,
                "test-key",
            ),
        ),
        (
            "expired",
            token(
                with(apple_claims(), "exp", json!(NOW_S - 1)),
                KEY,
                "test-key",
            ),
        ),
        (
            "not yet valid",
            token(
                with(apple_claims(), "nbf", json!(NOW_S + 60)),
                KEY,
                "test-key",
            ),
        ),
        (
            "other issuer",
            token(
                with(apple_claims(), "iss", json!("https://evil.example")),
                KEY,
                "test-key",
            ),
        ),
        (
            "no subject",
            token(with(apple_claims(), "sub", json!("")), KEY, "test-key"),
        ),
        ("garbage", "not.a.token".to_owned()),
    ];
    for (case, token) in cases {
        let result = verifier.verify(&apple(token)).await;
        assert!(result.is_err(), "{case} was accepted: {result:?}");
    }
    // A token signed with HS256 using the public key as the secret (algorithm confusion).
    let hs = jsonwebtoken::encode(
        &Header {
            kid: Some("test-key".into()),
            ..Header::new(Algorithm::HS256)
        },
        &apple_claims(),
        &EncodingKey::from_secret(JWKS),
    )
    .expect("sign");
    assert!(verifier.verify(&apple(hs)).await.is_err());
}

#[tokio::test]
async fn apple_sign_in_without_a_bundle_id_is_refused_without_a_request() {
    let fake = keys_fake().await;
    let mut config = config(&fake.base);
    config.apple_bundle_id.clear();
    let (verifier, _) = verifier(config);
    let result = verifier
        .verify(&apple(token(apple_claims(), KEY, "test-key")))
        .await;
    assert!(result.is_err());
    assert_eq!(fake.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn key_sets_are_cached_until_the_refresh_time() {
    let fake = keys_fake().await;
    let (verifier, clock) = verifier(config(&fake.base));
    let valid = apple(token(apple_claims(), KEY, "test-key"));
    verifier.verify(&valid).await.expect("first");
    verifier.verify(&valid).await.expect("second");
    assert_eq!(
        fake.hits.load(Ordering::SeqCst),
        1,
        "the keys were fetched once"
    );
    // An unknown key id soon after a fetch does not fetch again (no request amplification).
    let _ = verifier
        .verify(&apple(token(apple_claims(), KEY, "rotated")))
        .await;
    assert_eq!(fake.hits.load(Ordering::SeqCst), 1);
    clock.advance_ms(3_600_000);
    // Past the refresh the set is fetched again (the token must still be valid then).
    let later = with(apple_claims(), "exp", json!(NOW_S + 7200));
    verifier
        .verify(&apple(token(later, KEY, "test-key")))
        .await
        .expect("after refresh");
    assert_eq!(fake.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_key_set_that_cannot_be_fetched_refuses_the_token() {
    let fake = fake(vec![("/apple/keys", 500, b"down".to_vec())]).await;
    let (verifier, _) = verifier(config(&fake.base));
    let result = verifier
        .verify(&apple(token(apple_claims(), KEY, "test-key")))
        .await;
    assert!(matches!(result, Err(VerifyError::Fetch(_))), "{result:?}");
}

fn google_claims() -> Value {
    json!({
        "iss": "https://accounts.google.com",
        "azp": "client-1.apps.googleusercontent.com",
        "aud": "client-1.apps.googleusercontent.com",
        "sub": "110169484474386276334",
        "email": "ann@gmail.com",
        "name": "Ann Example",
        "picture": "https://lh3.googleusercontent.com/a/ann",
        "iat": NOW_S - 10,
        "exp": NOW_S + 600,
    })
}

#[tokio::test]
async fn google_id_tokens_are_checked_for_issuer_expiry_and_audience() {
    let fake = keys_fake().await;
    let mut config = config(&fake.base);
    let (open, _) = verifier(config.clone());
    let google = |claims| Credential::Google {
        token: token(claims, KEY, "test-key"),
    };
    let profile = open.verify(&google(google_claims())).await.expect("valid");
    assert_eq!(profile.id, "110169484474386276334");
    assert_eq!(profile.display_name, "Ann Example");
    assert_eq!(
        profile.avatar_url,
        "https://lh3.googleusercontent.com/a/ann"
    );
    assert_eq!(profile.email, "ann@gmail.com");
    // Either issuer spelling, as Nakama.
    let bare = with(google_claims(), "iss", json!("accounts.google.com"));
    assert!(open.verify(&google(bare)).await.is_ok());
    // Google tokens must expire.
    let mut no_exp = google_claims();
    no_exp.as_object_mut().expect("object").remove("exp");
    assert!(open.verify(&google(no_exp)).await.is_err());
    let mut no_azp = google_claims();
    no_azp.as_object_mut().expect("object").remove("azp");
    assert!(open.verify(&google(no_azp)).await.is_err());
    let other_issuer = with(google_claims(), "iss", json!("https://appleid.apple.com"));
    assert!(open.verify(&google(other_issuer)).await.is_err());
    // Configured client ids: only tokens for them.
    config.google_client_ids = vec!["client-2.apps.googleusercontent.com".into()];
    let (strict, _) = verifier(config);
    assert!(strict.verify(&google(google_claims())).await.is_err());
    let for_us = with(
        google_claims(),
        "aud",
        json!("client-2.apps.googleusercontent.com"),
    );
    assert!(strict.verify(&google(for_us)).await.is_ok());
    // A name longer than Nakama's column is dropped, not cut.
    let long = with(google_claims(), "name", json!("n".repeat(256)));
    let profile = open.verify(&google(long)).await.expect("valid");
    assert_eq!(profile.display_name, "");
}

#[tokio::test]
async fn facebook_access_tokens_are_checked_with_the_graph_api() {
    let me = json!({
        "id": "10150000000000001",
        "name": "Ann Example",
        "email": "ann@example.com",
        "picture": {"data": {"url": "https://graph.example/ann.jpg"}},
    });
    let fake = fake(vec![
        ("/facebook/me", 200, me.to_string().into_bytes()),
        ("/facebook/jwks", 200, JWKS.to_vec()),
    ])
    .await;
    let (verifier, _) = verifier(config(&fake.base));
    let profile = verifier
        .verify(&Credential::Facebook {
            token: "EAAB access&token".into(),
        })
        .await
        .expect("valid");
    assert_eq!(profile.id, "10150000000000001");
    assert_eq!(profile.display_name, "Ann Example");
    assert_eq!(profile.avatar_url, "https://graph.example/ann.jpg");
    let request = fake.requests.lock()[0].clone();
    assert!(
        request.contains("access_token=EAAB+access%26token") && request.contains("fields=id"),
        "{request}"
    );
    // Limited Login tokens are checked locally against Facebook's keys.
    let limited = token(
        json!({"iss": "https://www.facebook.com", "aud": "app", "sub": "fb-limited",
               "name": "Lim", "exp": NOW_S + 60}),
        KEY,
        "test-key",
    );
    let profile = verifier
        .verify(&Credential::Facebook { token: limited })
        .await
        .expect("limited login");
    assert_eq!(profile.id, "fb-limited");

    let refusing = fake_graph_refusing().await;
    let (verifier, _) = super::tests::verifier(config(&refusing.base));
    assert!(
        verifier
            .verify(&Credential::Facebook {
                token: "expired".into()
            })
            .await
            .is_err()
    );
}

async fn fake_graph_refusing() -> Fake {
    let error = json!({"error": {"message": "Error validating access token", "code": 190}});
    fake(vec![("/facebook/me", 401, error.to_string().into_bytes())]).await
}

fn signed_player_info(secret: &[u8], payload: &Value) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = b64.encode(payload.to_string());
    let signature = jsonwebtoken::crypto::sign(
        payload.as_bytes(),
        &EncodingKey::from_secret(secret),
        Algorithm::HS256,
    )
    .expect("sign");
    format!("{signature}.{payload}")
}

#[tokio::test]
async fn instant_game_player_info_is_checked_with_the_app_secret() {
    let (verifier, _) = verifier(config("http://127.0.0.1:9"));
    let payload = json!({"algorithm": "HMAC-SHA256", "player_id": "fbig-1", "issued_at": NOW_S});
    let instant = |info: String| Credential::FacebookInstantGame {
        signed_player_info: info,
    };
    let profile = verifier
        .verify(&instant(signed_player_info(b"instant-secret", &payload)))
        .await
        .expect("valid");
    assert_eq!(profile.id, "fbig-1");
    assert!(
        verifier
            .verify(&instant(signed_player_info(b"wrong-secret", &payload)))
            .await
            .is_err()
    );
    let other_alg = json!({"algorithm": "RS256", "player_id": "fbig-1"});
    assert!(
        verifier
            .verify(&instant(signed_player_info(b"instant-secret", &other_alg)))
            .await
            .is_err()
    );
    for malformed in ["", "abc", "a.b.c", "!!!.???"] {
        assert!(verifier.verify(&instant(malformed.into())).await.is_err());
    }
    // A tampered payload under the original signature.
    let good = signed_player_info(b"instant-secret", &payload);
    let signature = good.split('.').next().expect("signature");
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let tampered =
        b64.encode(json!({"algorithm": "HMAC-SHA256", "player_id": "admin"}).to_string());
    assert!(
        verifier
            .verify(&instant(format!("{signature}.{tampered}")))
            .await
            .is_err()
    );
}

fn game_center_proof(base: &str, key: &[u8]) -> GameCenterProof {
    let salt = b"salt-1234";
    let mut message = Vec::new();
    message.extend_from_slice(b"G:1234567890");
    message.extend_from_slice(b"com.example.game");
    message.extend_from_slice(&NOW_S.to_be_bytes());
    message.extend_from_slice(salt);
    let signature =
        jsonwebtoken::crypto::sign(&message, &EncodingKey::from_rsa_der(key), Algorithm::RS256)
            .expect("sign");
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .expect("b64");
    let std = base64::engine::general_purpose::STANDARD;
    GameCenterProof {
        player_id: "G:1234567890".into(),
        bundle_id: "com.example.game".into(),
        timestamp_seconds: NOW_S,
        salt: std.encode(salt),
        signature: std.encode(signature),
        public_key_url: format!("{base}/gc/key.cer"),
    }
}

#[tokio::test]
async fn game_center_signatures_are_checked_with_the_certificate() {
    let fake = fake(vec![("/gc/key.cer", 200, CERT.to_vec())]).await;
    let (verifier, _) = verifier(config(&fake.base));
    let proof = game_center_proof(&fake.base, KEY);
    let profile = verifier
        .verify(&Credential::GameCenter(proof.clone()))
        .await
        .expect("valid");
    assert_eq!(profile.id, "G:1234567890");
    let forged = game_center_proof(&fake.base, OTHER_KEY);
    assert!(
        verifier
            .verify(&Credential::GameCenter(forged))
            .await
            .is_err()
    );
    let other_player = GameCenterProof {
        player_id: "G:999".into(),
        ..proof.clone()
    };
    assert!(
        verifier
            .verify(&Credential::GameCenter(other_player))
            .await
            .is_err()
    );
    let not_apple = GameCenterProof {
        public_key_url: "https://example.com/key.cer".into(),
        ..proof.clone()
    };
    assert!(
        verifier
            .verify(&Credential::GameCenter(not_apple))
            .await
            .is_err()
    );
    assert_eq!(
        fake.hits.load(Ordering::SeqCst),
        3,
        "no request to other hosts"
    );
}

#[tokio::test]
async fn steam_tickets_are_checked_with_the_web_api() {
    let ok = json!({"response": {"params": {"result": "OK", "steamid": "76561197960287930",
        "ownersteamid": "76561197960287930", "vacbanned": false, "publisherbanned": false}}});
    let fake = fake(vec![("/steam/auth", 200, ok.to_string().into_bytes())]).await;
    let (verifier, _) = verifier(config(&fake.base));
    let profile = verifier
        .verify(&Credential::Steam {
            token: "14000000ABCDEF".into(),
        })
        .await
        .expect("valid");
    assert_eq!(profile.id, "76561197960287930");
    let request = fake.requests.lock()[0].clone();
    for part in [
        "key=publisher-key",
        "appid=480",
        "ticket=14000000ABCDEF",
        "format=json",
    ] {
        assert!(request.contains(part), "{request}");
    }
    let refused = json!({"response": {"error": {"errorcode": 101, "errordesc": "Invalid ticket"}}});
    let fake = fake_steam(refused).await;
    let (verifier, _) = super::tests::verifier(config(&fake.base));
    assert!(
        verifier
            .verify(&Credential::Steam {
                token: "bad".into()
            })
            .await
            .is_err()
    );
}

async fn fake_steam(answer: Value) -> Fake {
    fake(vec![("/steam/auth", 200, answer.to_string().into_bytes())]).await
}

#[tokio::test]
async fn provider_answers_over_the_size_limit_are_refused() {
    let fake = fake(vec![("/apple/keys", 200, vec![b' '; 4096])]).await;
    let mut config = config(&fake.base);
    config.max_response_bytes = 1024;
    let (verifier, _) = verifier(config);
    let result = verifier
        .verify(&apple(token(apple_claims(), KEY, "test-key")))
        .await;
    assert!(
        matches!(
            result,
            Err(VerifyError::Fetch(super::FetchError::TooLarge { .. }))
        ),
        "{result:?}"
    );
}

//! Validation against fake stores on 127.0.0.1 (keys generated here), and the records it leaves.

use std::sync::Arc;

use base64::Engine as _;
use parking_lot::Mutex;
use rsa::pkcs1::{EncodeRsaPrivateKey as _, EncodeRsaPublicKey as _};
use rsa::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _, LineEnding};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::*;
use crate::ManualClock;

/// One request a fake store received.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: String,
    body: String,
}

type Reply = Arc<dyn Fn(&Seen) -> (u16, String) + Send + Sync>;

/// A tiny HTTP/1.1 server: answers each request with `reply` and remembers it.
struct FakeStore {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeStore {
    async fn start(reply: impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let reply: Reply = Arc::new(reply);
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let reply = Arc::clone(&reply);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let (head_end, length) = loop {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            break (end + 4, length);
                        }
                    };
                    while buf.len() < head_end + length {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let target = head
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or_default()
                        .to_owned();
                    let seen = Seen {
                        target,
                        headers: head,
                        body: String::from_utf8_lossy(&buf[head_end..]).into_owned(),
                    };
                    let (status, body) = reply(&seen);
                    log.lock().push(seen);
                    let answer = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                });
            }
        });
        FakeStore { base, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

const NOW: i64 = 1_700_000_000_000;

async fn service(config: IapConfig) -> (Purchases, Arc<dyn Storage>, Uuid) {
    let dir = std::env::temp_dir().join(format!("iap-core-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let storage: Arc<dyn Storage> = Arc::new(test_storage(&dir).await);
    let user = Uuid::new_v4();
    storage
        .create_user(metafi_storage::NewUser {
            id: user,
            username: "buyer".into(),
            identity: metafi_storage::NewIdentity::Device {
                id: "buyer-device".into(),
            },
            now_ms: NOW,
        })
        .await
        .expect("user");
    let clock = Arc::new(ManualClock::new(NOW));
    let purchases = Purchases::new(Arc::clone(&storage), clock, config).expect("service");
    (purchases, storage, user)
}

async fn test_storage(dir: &std::path::Path) -> impl Storage {
    metafi_storage_sqlite::SqliteStorage::open(metafi_storage_sqlite::SqliteConfig {
        path: dir.join("iap.db"),
        readers: 1,
        ..metafi_storage_sqlite::SqliteConfig::default()
    })
    .expect("open sqlite")
}

fn code(e: &CoreError) -> (Code, String) {
    (e.code(), e.client_message().into_owned())
}

#[tokio::test]
async fn facebook_instant_records_once_then_seen_before() {
    let mut config = IapConfig::default();
    config.facebook_instant.app_secret = "fb-secret".into();
    let (purchases, _, user) = service(config).await;
    let payment = r#"{"product_id":"gems","purchase_time":1700000001,"purchase_token":"fb-1"}"#;
    let signed = sign_facebook_instant("fb-secret", payment);
    let first = purchases
        .validate_facebook_instant(user, &signed, true)
        .await
        .expect("valid");
    assert_eq!(first.len(), 1);
    let p = &first[0];
    assert_eq!(
        (p.user_id, p.store),
        (Some(user), store::FACEBOOK_INSTANT_STORE)
    );
    assert_eq!(
        (p.product_id.as_str(), p.transaction_id.as_str()),
        ("gems", "fb-1")
    );
    assert_eq!(p.purchase_time_ms, 1_700_000_001_000);
    assert_eq!(p.environment, environment::PRODUCTION);
    assert_eq!(p.create_time_ms, Some(NOW));
    assert_eq!(p.provider_response, payment);
    assert!(!p.seen_before);
    let again = purchases
        .validate_facebook_instant(user, &signed, true)
        .await
        .expect("valid");
    assert!(again[0].seen_before);
    let stored = purchases
        .by_transaction_id("fb-1")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(stored.user_id, Some(user));

    let forged = sign_facebook_instant("not-the-secret", payment);
    let err = purchases
        .validate_facebook_instant(user, &forged, true)
        .await
        .expect_err("forged");
    assert_eq!(
        code(&err),
        (Code::Unknown, "signedRequest verification failed".into())
    );
    let err = purchases
        .validate_facebook_instant(user, "", true)
        .await
        .expect_err("empty");
    assert_eq!(
        code(&err),
        (
            Code::InvalidArgument,
            "SignedRequest cannot be empty.".into()
        )
    );
}

#[tokio::test]
async fn not_persisting_records_nothing() {
    let mut config = IapConfig::default();
    config.facebook_instant.app_secret = "s".into();
    let (purchases, _, user) = service(config).await;
    let signed = sign_facebook_instant("s", r#"{"product_id":"p","purchase_token":"t"}"#);
    let out = purchases
        .validate_facebook_instant(user, &signed, false)
        .await
        .expect("valid");
    assert_eq!(out[0].create_time_ms, None);
    assert_eq!(purchases.by_transaction_id("t").await.expect("get"), None);
}

#[tokio::test]
async fn unconfigured_stores_answer_as_nakama() {
    let (purchases, _, user) = service(IapConfig::default()).await;
    let cases = [
        (
            purchases.validate_apple(user, "cmVjZWlwdA==", true).await,
            "Apple IAP is not configured.",
        ),
        (
            purchases.validate_google(user, "{}", true).await,
            "Google IAP is not configured.",
        ),
        (
            purchases.validate_huawei(user, "{}", "sig", true).await,
            "Huawei IAP is not configured.",
        ),
        (
            purchases.validate_facebook_instant(user, "a.b", true).await,
            "Facebook Instant IAP is not configured.",
        ),
    ];
    for (result, message) in cases {
        let err = result.expect_err("not configured");
        assert_eq!(code(&err), (Code::FailedPrecondition, message.into()));
    }
    let err = purchases
        .validate_apple(user, "", true)
        .await
        .expect_err("empty");
    assert_eq!(
        code(&err),
        (Code::InvalidArgument, "Receipt cannot be empty.".into())
    );
}

#[tokio::test]
async fn apple_asks_the_sandbox_after_21007_and_skips_subscriptions() {
    let fake = FakeStore::start(|seen| {
        if seen.target == "/prod" {
            (200, r#"{"status":21007}"#.into())
        } else {
            (
                200,
                r#"{"status":0,"environment":"Sandbox","receipt":{"in_app":[
                    {"transaction_id":"a1","product_id":"coins","purchase_date_ms":"1700000000123"},
                    {"transaction_id":"a2","product_id":"vip","purchase_date_ms":"1700000000000","expires_date_ms":"1800000000000"}
                ]},"latest_receipt_info":[
                    {"transaction_id":"a1","product_id":"coins","purchase_date_ms":"1700000000123"}
                ]}"#
                .into(),
            )
        }
    })
    .await;
    let mut config = IapConfig::default();
    config.apple.shared_password = "apple-secret".into();
    config.apple.production_url = format!("{}/prod", fake.base);
    config.apple.sandbox_url = format!("{}/sandbox", fake.base);
    let (purchases, _, user) = service(config).await;
    let out = purchases
        .validate_apple(user, "cmVjZWlwdA==", true)
        .await
        .expect("valid");
    let ids: Vec<&str> = out.iter().map(|p| p.transaction_id.as_str()).collect();
    assert_eq!(ids, ["a1"], "subscriptions and duplicates are skipped");
    assert_eq!(out[0].environment, environment::SANDBOX);
    assert_eq!(out[0].purchase_time_ms, 1_700_000_000_123);
    let seen = fake.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(targets, ["/prod", "/sandbox"]);
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).expect("json");
    assert_eq!(body["password"], "apple-secret");
    assert_eq!(body["receipt-data"], "cmVjZWlwdA==");
}

#[tokio::test]
async fn apple_refusals_keep_nakamas_codes() {
    let fake = FakeStore::start(|seen| match seen.target.as_str() {
        "/bad" => (200, r#"{"status":21002}"#.into()),
        "/retry" => (200, r#"{"status":21100,"is-retryable":true}"#.into()),
        "/subs" => (
            200,
            r#"{"status":0,"receipt":{"in_app":[{"transaction_id":"s","purchase_date_ms":"1","expires_date_ms":"2"}]}}"#.into(),
        ),
        _ => (503, "down".into()),
    })
    .await;
    let mut config = IapConfig::default();
    config.apple.shared_password = "p".into();
    let expect = [
        (
            "/bad",
            Code::FailedPrecondition,
            "Invalid Receipt. Status: 21002",
        ),
        (
            "/retry",
            Code::Unavailable,
            "Apple IAP verification is currently unavailable. Try again later.",
        ),
        (
            "/subs",
            Code::FailedPrecondition,
            "Subscription Receipt. Use the appropriate function instead.",
        ),
        (
            "/down",
            Code::Unknown,
            "non-200 response from Apple service, status=503",
        ),
    ];
    for (path, want_code, want) in expect {
        let mut config = config.clone();
        config.apple.production_url = format!("{}{path}", fake.base);
        let (purchases, _, user) = service(config).await;
        let err = purchases
            .validate_apple(user, "r", true)
            .await
            .expect_err(path);
        assert_eq!(code(&err), (want_code, want.into()), "{path}");
    }
}

/// A fresh key: its PKCS#8 PEM (as Google issues) and the PKCS#1 DER of its public half.
fn rsa_key() -> (rsa::RsaPrivateKey, String, Vec<u8>) {
    // 1024 bits keeps key generation quick in a debug build; the code does not depend on size.
    let key = rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, 1024).expect("key");
    let private = key.to_pkcs8_pem(LineEnding::LF).expect("pem").to_string();
    let public = key
        .to_public_key()
        .to_pkcs1_der()
        .expect("public der")
        .as_bytes()
        .to_vec();
    (key, private, public)
}

#[tokio::test]
async fn google_signs_a_jwt_exchanges_it_once_and_asks_the_publisher_api() {
    let (_, private, public) = rsa_key();
    let base = Arc::new(Mutex::new(String::new()));
    let token_url = Arc::clone(&base);
    let fake = FakeStore::start(move |seen| {
        if seen.target == "/token" {
            let form: Vec<(String, String)> = seen
                .body
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let assertion = form
                .iter()
                .find(|(k, _)| k == "assertion")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let key = jsonwebtoken::DecodingKey::from_rsa_der(&public);
            let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
            validation.set_audience(&[format!("{}/token", token_url.lock())]);
            validation.validate_exp = false;
            match jsonwebtoken::decode::<serde_json::Value>(&assertion, &key, &validation) {
                Ok(data)
                    if data.claims["iss"] == "svc@example.iam"
                        && data.claims["scope"]
                            == "https://www.googleapis.com/auth/androidpublisher" =>
                {
                    (200, r#"{"access_token":"tok-123","expires_in":3600}"#.into())
                }
                _ => (401, "bad assertion".into()),
            }
        } else if seen.target.starts_with(
            "/androidpublisher/v3/applications/com.game/purchases/products/gems/tokens/pt-1?access_token=tok-123",
        ) {
            (200, r#"{"purchaseState":0,"purchaseType":0}"#.into())
        } else {
            (404, "no".into())
        }
    })
    .await;
    *base.lock() = fake.base.clone();
    let mut config = IapConfig::default();
    config.google.client_email = "svc@example.iam".into();
    config.google.private_key = private;
    config.google.token_url = format!("{}/token", fake.base);
    config.google.publisher_url = fake.base.clone();
    let (purchases, _, user) = service(config).await;
    let receipt = serde_json::json!({
        "json": r#"{"orderId":"o","packageName":"com.game","productId":"gems","purchaseTime":1700000000999,"purchaseState":0,"purchaseToken":"pt-1"}"#,
        "signature": "x",
    })
    .to_string();
    let out = purchases
        .validate_google(user, &receipt, true)
        .await
        .expect("valid");
    assert_eq!(out[0].transaction_id, "pt-1");
    assert_eq!(out[0].store, store::GOOGLE_PLAY_STORE);
    assert_eq!(
        out[0].environment,
        environment::SANDBOX,
        "purchaseType 0 is a test purchase"
    );
    assert_eq!(out[0].purchase_time_ms, 1_700_000_000_999);
    let again = purchases
        .validate_google(user, &receipt, true)
        .await
        .expect("valid");
    assert!(again[0].seen_before);
    let token_calls = fake.seen().iter().filter(|s| s.target == "/token").count();
    assert_eq!(token_calls, 1, "the access token is cached");

    let err = purchases
        .validate_google(user, r#"{"productId":"x"}"#, true)
        .await
        .expect_err("malformed");
    assert_eq!(code(&err), (Code::Unknown, "receipt is malformed".into()));
}

#[tokio::test]
async fn huawei_checks_the_signature_before_asking_the_order_service() {
    let (key, _, _) = rsa_key();
    let spki = key.to_public_key().to_public_key_der().expect("der");
    let public_b64 = base64::engine::general_purpose::STANDARD.encode(spki.as_bytes());
    let data = r#"{"productId":"gems","purchaseTime":1700000000500,"purchaseToken":"hw-1","purchaseType":0}"#;
    let signing =
        jsonwebtoken::EncodingKey::from_rsa_der(key.to_pkcs1_der().expect("der").as_bytes());
    let signed =
        jsonwebtoken::crypto::sign(data.as_bytes(), &signing, jsonwebtoken::Algorithm::RS256)
            .expect("sign");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signed)
        .expect("b64");
    let signature = base64::engine::general_purpose::STANDARD.encode(raw);
    let fake = FakeStore::start(|seen| match seen.target.as_str() {
        "/token" => (200, r#"{"access_token":"hw-token","expires_in":3600}"#.into()),
        "/orders/applications/purchases/tokens/verify"
            if seen.headers.contains("bearer hw-token") || seen.headers.contains("Bearer hw-token") =>
        {
            (
                200,
                r#"{"responseCode":"0","purchaseTokenData":{"productId":"gems","purchaseToken":"hw-1"}}"#.into(),
            )
        }
        _ => (404, "no".into()),
    })
    .await;
    let mut config = IapConfig::default();
    config.huawei.public_key = public_b64;
    config.huawei.client_id = "id".into();
    config.huawei.client_secret = "secret".into();
    config.huawei.token_url = format!("{}/token", fake.base);
    config.huawei.orders_url = format!("{}/orders", fake.base);
    let (purchases, _, user) = service(config).await;
    let err = purchases
        .validate_huawei(user, &data.replace("gems", "gold"), &signature, true)
        .await
        .expect_err("tampered");
    assert_eq!(
        code(&err),
        (Code::Unknown, "inAppPurchaseData invalid signature".into())
    );
    assert!(
        fake.seen().is_empty(),
        "a bad signature never reaches Huawei"
    );
    let out = purchases
        .validate_huawei(user, data, &signature, true)
        .await
        .expect("valid");
    assert_eq!(out[0].transaction_id, "hw-1");
    assert_eq!(out[0].environment, environment::SANDBOX);
    let not_kept = purchases
        .validate_huawei(user, data, &signature, false)
        .await
        .expect("valid");
    assert_eq!(
        not_kept[0].user_id, None,
        "Nakama leaves the user out when not persisting"
    );
}

#[tokio::test]
async fn listing_pages_with_cursors_bound_to_the_user() {
    let mut config = IapConfig::default();
    config.facebook_instant.app_secret = "s".into();
    let (purchases, _, user) = service(config).await;
    for n in 0..3 {
        let payment =
            format!(r#"{{"product_id":"p","purchase_time":{n},"purchase_token":"t{n}"}}"#);
        purchases
            .validate_facebook_instant(user, &sign_facebook_instant("s", &payment), true)
            .await
            .expect("valid");
    }
    let first = purchases.list(Some(user), 2, "").await.expect("list");
    let ids: Vec<&str> = first
        .items
        .iter()
        .map(|p| p.transaction_id.as_str())
        .collect();
    assert_eq!(ids, ["t2", "t1"]);
    assert!(!first.cursor.is_empty());
    let rest = purchases
        .list(Some(user), 2, &first.cursor)
        .await
        .expect("list");
    assert_eq!(rest.items.len(), 1);
    assert!(rest.cursor.is_empty());
    let err = purchases
        .list(Some(Uuid::new_v4()), 2, &first.cursor)
        .await
        .expect_err("other user");
    assert_eq!(
        code(&err),
        (Code::Unknown, "purchases list cursor invalid".into())
    );
    let err = purchases
        .subscription_by_product_id(user, "none")
        .await
        .expect_err("none");
    assert_eq!(
        code(&err),
        (Code::NotFound, "subscription not found".into())
    );
}

#[tokio::test]
async fn apple_subscriptions_record_each_and_answer_the_latest_expiry() {
    let fake = FakeStore::start(|_| {
        (
            200,
            r#"{"status":0,"environment":"Production","latest_receipt_info":[
                {"original_transaction_id":"o1","transaction_id":"x1","product_id":"vip","original_purchase_date_ms":"1699000000000","purchase_date_ms":"1699000000000","expires_date_ms":"1700000100000"},
                {"original_transaction_id":"o2","transaction_id":"x2","product_id":"gold","original_purchase_date_ms":"1699000000001","purchase_date_ms":"1699000000001","expires_date_ms":"1600000000000"},
                {"transaction_id":"c1","product_id":"coins","purchase_date_ms":"1"}
            ]}"#
            .into(),
        )
    })
    .await;
    let mut config = IapConfig::default();
    config.apple.shared_password = "p".into();
    config.apple.production_url = fake.base.clone();
    let (purchases, _, user) = service(config).await;
    let sub = purchases
        .validate_subscription_apple(user, "r", true)
        .await
        .expect("valid");
    assert_eq!(
        sub.original_transaction_id, "o1",
        "the latest expiry answers"
    );
    assert!(sub.active, "expires after now");
    assert_eq!(sub.create_time_ms, Some(NOW));
    assert_eq!(sub.purchase_time_ms, 1_699_000_000_000);
    let gold = purchases
        .subscription_by_product_id(user, "gold")
        .await
        .expect("recorded too");
    assert!(!gold.active, "expired");
    let list = purchases
        .list_subscriptions(Some(user), 10, "")
        .await
        .expect("list");
    assert_eq!(list.items.len(), 2);
    let one_time = purchases
        .validate_apple(user, "r", true)
        .await
        .expect("the one-time purchase in the same receipt");
    let ids: Vec<&str> = one_time.iter().map(|p| p.transaction_id.as_str()).collect();
    assert_eq!(
        ids,
        ["c1"],
        "entries without an expiry are purchases, not subscriptions"
    );
}

#[tokio::test]
async fn google_subscriptions_follow_the_linked_token() {
    let (_, private, _) = rsa_key();
    let fake = FakeStore::start(|seen| {
        if seen.target == "/token" {
            (200, r#"{"access_token":"t","expires_in":3600}"#.into())
        } else if seen
            .target
            .starts_with("/androidpublisher/v3/applications/com.game/purchases/subscriptionsv2/tokens/new-token?")
        {
            (
                200,
                r#"{"lineItems":[{"productId":"vip","expiryTime":"2023-11-14T22:13:30Z"}],"linkedPurchaseToken":"first-token","testPurchase":{}}"#.into(),
            )
        } else {
            (404, "no".into())
        }
    })
    .await;
    let mut config = IapConfig::default();
    config.google.client_email = "svc@example.iam".into();
    config.google.private_key = private;
    config.google.token_url = format!("{}/token", fake.base);
    config.google.publisher_url = fake.base.clone();
    let (purchases, _, user) = service(config).await;
    let receipt = r#"{"packageName":"com.game","productId":"vip","purchaseTime":1699999999000,"purchaseToken":"new-token"}"#;
    let sub = purchases
        .validate_subscription_google(user, receipt, true)
        .await
        .expect("valid");
    assert_eq!(sub.original_transaction_id, "first-token");
    assert_eq!(sub.environment, environment::SANDBOX);
    assert_eq!(sub.expiry_time_ms, 1_700_000_010_000);
    assert!(sub.active, "expires 10 s after the manual clock's now");
    assert_eq!(sub.refund_time_ms, None);
}

fn samsung_receipt(status: &str, mode: &str, package: &str) -> String {
    serde_json::json!({
        "status": status, "mode": mode, "orderId": "S2024", "paymentId": "pay-1",
        "packageName": package, "itemId": "gems_10", "itemName": "Gems",
        "purchaseDate": "2023-11-14 22:13:20", "errorCode": 0, "errorMessage": "",
    })
    .to_string()
}

#[tokio::test]
async fn samsung_asks_the_receipt_api_and_records_the_purchase_id() {
    let store = FakeStore::start(|seen| {
        if seen.target.contains("purchaseID=test-1") {
            (200, samsung_receipt("success", "TEST", "com.example.game"))
        } else if seen.target.contains("purchaseID=live-1") {
            (200, samsung_receipt("success", "PRODUCTION", ""))
        } else if seen.target.contains("purchaseID=other-app") {
            (200, samsung_receipt("success", "TEST", "com.example.other"))
        } else if seen.target.contains("purchaseID=refused") {
            (
                200,
                serde_json::json!({"status": "fail", "errorCode": 9135,
                    "errorMessage": "Not found"})
                .to_string(),
            )
        } else {
            (503, "down".to_owned())
        }
    })
    .await;
    let mut config = IapConfig::default();
    config.samsung.package_name = "com.example.game".into();
    config.samsung.receipt_url = format!("{}/iap/v6/receipt", store.base);
    let (purchases, _, user) = service(config).await;

    let first = purchases
        .validate_samsung(user, "test-1", true)
        .await
        .expect("valid");
    let p = &first[0];
    assert_eq!(
        (p.user_id, p.store, p.environment),
        (
            Some(user),
            store::SAMSUNG_GALAXY_STORE,
            environment::SANDBOX
        )
    );
    assert_eq!(
        (p.product_id.as_str(), p.transaction_id.as_str()),
        ("gems_10", "test-1")
    );
    assert_eq!(p.purchase_time_ms, 1_700_000_000_000);
    assert_eq!(p.create_time_ms, Some(NOW));
    assert!(p.provider_response.contains("\"orderId\":\"S2024\""));
    assert!(!p.seen_before);
    assert_eq!(store.seen()[0].target, "/iap/v6/receipt?purchaseID=test-1");
    let again = purchases
        .validate_samsung(user, "test-1", true)
        .await
        .expect("valid");
    assert!(again[0].seen_before);
    let live = purchases
        .validate_samsung(user, "live-1", false)
        .await
        .expect("a receipt without a package name is accepted");
    assert_eq!(live[0].environment, environment::PRODUCTION);
    assert_eq!(live[0].create_time_ms, None, "not persisted");
    assert_eq!(
        purchases.by_transaction_id("live-1").await.expect("get"),
        None
    );

    for (id, expected) in [
        (
            "other-app",
            "Samsung IAP: package name mismatch (expected com.example.game, got com.example.other), status=200",
        ),
        (
            "refused",
            "Samsung IAP: purchase validation failed: Not found (errorCode=9135), status=200",
        ),
        ("down", "Samsung IAP returned HTTP 503, status=503"),
    ] {
        let err = purchases
            .validate_samsung(user, id, true)
            .await
            .expect_err(id);
        assert_eq!(code(&err), (Code::Unknown, expected.into()), "{id}");
    }
    let err = purchases
        .validate_samsung(user, "", true)
        .await
        .expect_err("empty");
    assert_eq!(
        code(&err),
        (Code::InvalidArgument, "Purchase ID cannot be empty.".into())
    );
}

/// Apple's signed (JWS) transactions: a chain made here is trusted through
/// `root_certificates`; no store is called and no shared password is needed for purchases.
mod apple_signed {
    use super::*;
    use crate::iap::test_chain::TestChain;

    fn trusting(chain: &TestChain) -> IapConfig {
        let mut config = IapConfig::default();
        config.apple.root_certificates = vec![chain.root.clone()];
        // Any call to the legacy endpoint would fail the test.
        config.apple.production_url = "http://127.0.0.1:9/never".into();
        config
    }

    fn transaction(extra: serde_json::Value) -> String {
        let mut base = serde_json::json!({
            "transactionId": "2000000123",
            "originalTransactionId": "2000000100",
            "productId": "gems.100",
            "environment": "Sandbox",
            "purchaseDate": NOW - 60_000,
            "originalPurchaseDate": NOW - 120_000,
            "type": "Consumable",
        });
        if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
            base.extend(extra.clone());
        }
        base.to_string()
    }

    #[tokio::test]
    async fn a_signed_purchase_is_verified_decoded_and_recorded() {
        let chain = TestChain::new(2030);
        let (purchases, storage, user) = service(trusting(&chain)).await;
        let jws = chain.sign(&transaction(serde_json::json!({})));
        let first = purchases
            .validate_apple(user, &jws, true)
            .await
            .expect("valid");
        assert_eq!(first.len(), 1);
        let p = &first[0];
        assert_eq!(p.user_id, Some(user));
        assert_eq!(p.transaction_id, "2000000123");
        assert_eq!(p.product_id, "gems.100");
        assert_eq!(p.store, store::APPLE_APP_STORE);
        assert_eq!(p.environment, environment::SANDBOX);
        assert_eq!(p.purchase_time_ms, NOW - 60_000);
        assert_eq!(p.refund_time_ms, Some(0));
        assert_eq!(p.provider_response, "", "the receipt is not echoed");
        assert!(!p.seen_before);
        let again = purchases
            .validate_apple(user, &jws, true)
            .await
            .expect("replay");
        assert!(again[0].seen_before);
        let stored = storage
            .purchase_by_transaction_id("2000000123")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(
            stored.raw_response,
            serde_json::json!({ "jws": jws }).to_string()
        );
    }

    #[tokio::test]
    async fn a_signed_subscription_records_its_expiry_and_refund() {
        let chain = TestChain::new(2030);
        let mut config = trusting(&chain);
        config.apple.shared_password = "p".into();
        let (purchases, _, user) = service(config).await;
        let jws = chain.sign(&transaction(serde_json::json!({
            "environment": "Production",
            "expiresDate": NOW + 86_400_000,
            "type": "Auto-Renewable Subscription",
        })));
        let s = purchases
            .validate_subscription_apple(user, &jws, true)
            .await
            .expect("valid");
        assert_eq!(s.original_transaction_id, "2000000100");
        assert_eq!(s.purchase_time_ms, NOW - 120_000);
        assert_eq!(s.expiry_time_ms, NOW + 86_400_000);
        assert_eq!(s.environment, environment::PRODUCTION);
        assert!(s.active);
        assert_eq!(s.refund_time_ms, Some(0));
        let refunded = chain.sign(&transaction(serde_json::json!({
            "expiresDate": NOW + 86_400_000,
            "revocationDate": NOW - 1_000,
        })));
        let s = purchases
            .validate_subscription_apple(user, &refunded, true)
            .await
            .expect("valid");
        assert_eq!(s.refund_time_ms, Some(NOW - 1_000));
        assert!(!s.active);
    }

    #[tokio::test]
    async fn the_wrong_kind_of_transaction_is_refused_as_nakama_does() {
        let chain = TestChain::new(2030);
        let mut config = trusting(&chain);
        config.apple.shared_password = "p".into();
        let (purchases, _, user) = service(config).await;
        let subscription = chain.sign(&transaction(serde_json::json!({"expiresDate": NOW})));
        let err = purchases
            .validate_apple(user, &subscription, true)
            .await
            .expect_err("a subscription");
        assert_eq!(
            code(&err),
            (
                Code::FailedPrecondition,
                "Subscription Receipt. Use the appropriate function instead.".into()
            )
        );
        let purchase = chain.sign(&transaction(serde_json::json!({})));
        let err = purchases
            .validate_subscription_apple(user, &purchase, true)
            .await
            .expect_err("a purchase");
        assert_eq!(
            code(&err),
            (
                Code::FailedPrecondition,
                "Purchase Receipt. Use the appropriate function instead.".into()
            )
        );
    }

    #[tokio::test]
    async fn an_untrusted_or_tampered_transaction_is_refused_with_code_unknown() {
        let chain = TestChain::new(2030);
        let (purchases, _, user) = service(IapConfig::default()).await;
        let jws = chain.sign(&transaction(serde_json::json!({})));
        let err = purchases
            .validate_apple(user, &jws, true)
            .await
            .expect_err("not Apple's root");
        assert_eq!(
            code(&err),
            (
                Code::Unknown,
                "x509: certificate signed by unknown authority".into()
            )
        );
        let (purchases, storage, user) = service(trusting(&chain)).await;
        let parts: Vec<&str> = jws.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(transaction(serde_json::json!({"productId": "gems.10000"}))),
            parts[2]
        );
        let err = purchases
            .validate_apple(user, &forged, true)
            .await
            .expect_err("tampered");
        assert_eq!(
            code(&err),
            (
                Code::Unknown,
                "invalid jws signature: ecdsa verification failed".into()
            )
        );
        assert!(
            storage
                .purchase_by_transaction_id("2000000123")
                .await
                .expect("read")
                .is_none()
        );
    }

    /// An App Store Server Notification v2 body, signed by `chain`.
    fn notification(
        chain: &TestChain,
        kind: &str,
        subtype: &str,
        transaction: Option<serde_json::Value>,
        renewal: Option<serde_json::Value>,
    ) -> Vec<u8> {
        let mut data =
            serde_json::json!({"bundleId": "com.example.game", "environment": "Sandbox"});
        if let Some(t) = transaction {
            data["signedTransactionInfo"] = chain.sign(&t.to_string()).into();
        }
        if let Some(r) = renewal {
            data["signedRenewalInfo"] = chain.sign(&r.to_string()).into();
        }
        let payload = serde_json::json!({
            "notificationType": kind,
            "subtype": subtype,
            "notificationUUID": Uuid::new_v4().to_string(),
            "version": "2.0",
            "data": data,
        });
        serde_json::json!({"signedPayload": chain.sign(&payload.to_string())})
            .to_string()
            .into_bytes()
    }

    fn subscription_transaction(user: Option<Uuid>) -> serde_json::Value {
        let mut t: serde_json::Value = serde_json::from_str(&transaction(serde_json::json!({
            "expiresDate": NOW + 86_400_000,
            "type": "Auto-Renewable Subscription",
        })))
        .expect("json");
        if let Some(user) = user {
            t["appAccountToken"] = user.to_string().into();
        }
        t
    }

    #[tokio::test]
    async fn subscription_notifications_record_and_report_as_nakama() {
        let chain = TestChain::new(2030);
        let (purchases, storage, user) = service(trusting(&chain)).await;
        let body = notification(
            &chain,
            "SUBSCRIBED",
            "INITIAL_BUY",
            Some(subscription_transaction(Some(user))),
            None,
        );
        let Some(AppleNotice::Subscription {
            kind,
            subscription,
            provider_payload,
        }) = purchases.apple_notification(&body).await.expect("accepted")
        else {
            panic!("a subscription notice")
        };
        assert_eq!(kind, NotificationType::Subscribed);
        assert_eq!(subscription.user_id, Some(user));
        assert_eq!(subscription.original_transaction_id, "2000000100");
        assert_eq!(subscription.expiry_time_ms, NOW + 86_400_000);
        assert!(subscription.active);
        assert_eq!(
            subscription.provider_notification,
            String::from_utf8_lossy(&body)
        );
        assert_eq!(provider_payload["transactionInfo"]["productId"], "gems.100");
        assert_eq!(provider_payload["bundleId"], "com.example.game");

        // A renewal without appAccountToken finds the owner through the recorded subscription.
        let body = notification(
            &chain,
            "DID_RENEW",
            "",
            Some(subscription_transaction(None)),
            None,
        );
        let Some(AppleNotice::Subscription {
            kind, subscription, ..
        }) = purchases.apple_notification(&body).await.expect("accepted")
        else {
            panic!("a subscription notice")
        };
        assert_eq!(kind, NotificationType::Renewed);
        assert_eq!(subscription.user_id, Some(user));

        // Expiry: the renewal date, or the grace period's end when later.
        let renewal = serde_json::json!({
            "originalTransactionId": "2000000100",
            "productId": "gems.100",
            "environment": "Sandbox",
            "renewalDate": NOW - 10_000,
            "gracePeriodExpiresDate": NOW - 5_000,
        });
        let body = notification(&chain, "EXPIRED", "VOLUNTARY", None, Some(renewal.clone()));
        let Some(AppleNotice::Subscription {
            kind, subscription, ..
        }) = purchases.apple_notification(&body).await.expect("accepted")
        else {
            panic!("a subscription notice")
        };
        assert_eq!(kind, NotificationType::Expired);
        assert_eq!(subscription.expiry_time_ms, NOW - 5_000);
        assert!(!subscription.active);
        let stored = storage
            .subscription_by_original_transaction_id("2000000100")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(stored.expire_time_ms, NOW - 5_000);

        // Auto-renew turned off is a cancellation; turned on is recorded, not reported.
        let body = notification(
            &chain,
            "DID_CHANGE_RENEWAL_STATUS",
            "AUTO_RENEW_DISABLED",
            None,
            Some(renewal.clone()),
        );
        assert!(matches!(
            purchases.apple_notification(&body).await.expect("accepted"),
            Some(AppleNotice::Subscription {
                kind: NotificationType::Cancelled,
                ..
            })
        ));
        let body = notification(
            &chain,
            "DID_CHANGE_RENEWAL_STATUS",
            "AUTO_RENEW_ENABLED",
            None,
            Some(renewal),
        );
        assert_eq!(
            purchases.apple_notification(&body).await.expect("accepted"),
            None
        );

        // A renewal of a subscription nobody recorded is refused (Apple retries).
        let mut unknown = subscription_transaction(None);
        unknown["originalTransactionId"] = "999".into();
        let body = notification(&chain, "DID_RENEW", "", Some(unknown), None);
        assert!(purchases.apple_notification(&body).await.is_err());
    }

    #[tokio::test]
    async fn a_refund_notification_records_the_purchase_refund() {
        let chain = TestChain::new(2030);
        let (purchases, storage, user) = service(trusting(&chain)).await;
        let jws = chain.sign(&transaction(serde_json::json!({})));
        purchases
            .validate_apple(user, &jws, true)
            .await
            .expect("valid");
        let mut refunded: serde_json::Value = serde_json::from_str(&transaction(
            serde_json::json!({"revocationDate": NOW - 1_000}),
        ))
        .expect("json");
        refunded["revocationReason"] = 1.into();
        let body = notification(&chain, "REFUND", "", Some(refunded), None);
        let Some(AppleNotice::Purchase { kind, purchase, .. }) =
            purchases.apple_notification(&body).await.expect("accepted")
        else {
            panic!("a purchase notice")
        };
        assert_eq!(kind, NotificationType::Refunded);
        assert_eq!(
            purchase.user_id,
            Some(user),
            "the owner of the recorded purchase"
        );
        assert_eq!(purchase.refund_time_ms, Some(NOW - 1_000));
        assert!(purchase.seen_before);
        let stored = storage
            .purchase_by_transaction_id("2000000123")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(stored.refund_time_ms, NOW - 1_000);
    }

    #[tokio::test]
    async fn unsigned_unknown_and_malformed_notifications() {
        let chain = TestChain::new(2030);
        let (purchases, _, user) = service(IapConfig::default()).await;
        let body = notification(
            &chain,
            "SUBSCRIBED",
            "",
            Some(subscription_transaction(Some(user))),
            None,
        );
        let err = purchases
            .apple_notification(&body)
            .await
            .expect_err("untrusted");
        assert_eq!(
            err.to_string(),
            "failed to validate apple jws header: x509: certificate signed by unknown authority"
        );
        let (purchases, _, _) = service(trusting(&chain)).await;
        let body = notification(&chain, "TEST", "", None, None);
        assert_eq!(
            purchases.apple_notification(&body).await.expect("accepted"),
            None
        );
        assert!(purchases.apple_notification(b"not json").await.is_err());
        let body = notification(&chain, "SUBSCRIBED", "", None, None);
        assert!(
            purchases.apple_notification(&body).await.is_err(),
            "no transaction info"
        );
    }
}

mod google_notify {
    use super::*;

    /// A Pub/Sub push of `notification` (base64url, as Nakama decodes it).
    fn push(notification: serde_json::Value) -> Vec<u8> {
        let data = base64::engine::general_purpose::URL_SAFE.encode(notification.to_string());
        serde_json::json!({"message": {"data": data, "messageId": "1"}, "subscription": "s"})
            .to_string()
            .into_bytes()
    }

    /// A Publisher API fake: the subscription of `sub-token` answers `subscription`, the
    /// product purchase of `buy-token` answers `purchase`.
    async fn google_service(
        subscription: String,
        purchase: String,
    ) -> (Purchases, Arc<dyn Storage>, Uuid, FakeStore) {
        let (_, private, _) = rsa_key();
        let fake = FakeStore::start(move |seen| {
            if seen.target == "/token" {
                (200, r#"{"access_token":"t","expires_in":3600}"#.into())
            } else if seen.target.starts_with(
                "/androidpublisher/v3/applications/com.game/purchases/subscriptionsv2/tokens/sub-token?",
            ) {
                (200, subscription.clone())
            } else if seen.target.starts_with(
                "/androidpublisher/v3/applications/com.game/purchases/productsv2/tokens/buy-token?",
            ) {
                (200, purchase.clone())
            } else {
                (404, "no".into())
            }
        })
        .await;
        let mut config = IapConfig::default();
        config.google.client_email = "svc@example.iam".into();
        config.google.private_key = private;
        config.google.token_url = format!("{}/token", fake.base);
        config.google.publisher_url = fake.base.clone();
        let (purchases, storage, user) = service(config).await;
        (purchases, storage, user, fake)
    }

    fn subscription_answer(user: Uuid, expiry: &str) -> String {
        serde_json::json!({
            "lineItems": [{"productId": "vip", "expiryTime": expiry}],
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": user.to_string()},
        })
        .to_string()
    }

    fn subscription_push(kind: i64) -> Vec<u8> {
        push(serde_json::json!({
            "version": "1.0",
            "packageName": "com.game",
            "eventTimeMillis": "1700000000000",
            "subscriptionNotification": {
                "version": "1.0", "notificationType": kind, "purchaseToken": "sub-token"
            }
        }))
    }

    #[tokio::test]
    async fn a_renewal_records_the_new_expiry_and_reports_renewed() {
        let user = Uuid::new_v4();
        // The service's user is created inside; answer with its id once known.
        let (_, private, _) = rsa_key();
        let owner = Arc::new(Mutex::new(user));
        let expiry = Arc::new(Mutex::new("2023-11-14T22:13:30Z".to_owned()));
        let (o, e) = (Arc::clone(&owner), Arc::clone(&expiry));
        let fake = FakeStore::start(move |seen| {
            if seen.target == "/token" {
                (200, r#"{"access_token":"t","expires_in":3600}"#.into())
            } else if seen.target.contains("/subscriptionsv2/tokens/sub-token?") {
                (200, subscription_answer(*o.lock(), &e.lock()))
            } else {
                (404, "no".into())
            }
        })
        .await;
        let mut config = IapConfig::default();
        config.google.client_email = "svc@example.iam".into();
        config.google.private_key = private;
        config.google.token_url = format!("{}/token", fake.base);
        config.google.publisher_url = fake.base.clone();
        let (purchases, storage, user) = service(config).await;
        *owner.lock() = user;

        let notice = purchases
            .google_notification(&subscription_push(4))
            .await
            .expect("handled")
            .expect("reported");
        let AppleNotice::Subscription {
            kind,
            subscription,
            provider_payload,
        } = notice
        else {
            panic!("a subscription notice");
        };
        assert_eq!(kind, NotificationType::Subscribed);
        assert_eq!(subscription.user_id, Some(user));
        assert_eq!(subscription.original_transaction_id, "sub-token");
        assert_eq!(subscription.store, store::GOOGLE_PLAY_STORE);
        assert_eq!(subscription.expiry_time_ms, 1_700_000_010_000);
        assert!(subscription.active);
        assert_eq!(provider_payload["lineItems"][0]["productId"], "vip");

        // Renewed: the expiry moves on; the stored row follows.
        *expiry.lock() = "2023-12-14T22:13:20Z".into();
        let notice = purchases
            .google_notification(&subscription_push(2))
            .await
            .expect("handled")
            .expect("reported");
        let AppleNotice::Subscription {
            kind, subscription, ..
        } = notice
        else {
            panic!("a subscription notice");
        };
        assert_eq!(kind, NotificationType::Renewed);
        assert_eq!(subscription.expiry_time_ms, 1_702_592_000_000);
        let stored = storage
            .subscription_by_original_transaction_id("sub-token")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(stored.expire_time_ms, 1_702_592_000_000);
        assert!(stored.raw_notification.contains("message"));

        // Expired and cancelled are reported as such; a type Nakama ignores is not.
        for (code, want) in [
            (13, NotificationType::Expired),
            (3, NotificationType::Cancelled),
        ] {
            let notice = purchases
                .google_notification(&subscription_push(code))
                .await
                .expect("handled")
                .expect("reported");
            let AppleNotice::Subscription { kind, .. } = notice else {
                panic!("a subscription notice");
            };
            assert_eq!(kind, want);
        }
        assert!(
            purchases
                .google_notification(&subscription_push(5))
                .await
                .expect("handled")
                .is_none(),
            "ON_HOLD is acknowledged and not reported"
        );
    }

    #[tokio::test]
    async fn a_voided_purchase_records_a_refund_and_the_owner_comes_from_the_record() {
        // No account id in the Play purchase: the recorded purchase's owner is used.
        let purchase = serde_json::json!({
            "productLineItem": [{"productId": "gems"}],
            "purchaseCompletionTime": "2023-11-14T22:13:10Z",
            "testPurchaseContext": {},
        })
        .to_string();
        let (purchases, storage, user, _fake) = google_service(String::new(), purchase).await;
        storage
            .upsert_purchases(
                vec![NewPurchase {
                    user_id: user,
                    store: store::GOOGLE_PLAY_STORE,
                    product_id: "gems".into(),
                    transaction_id: "buy-token".into(),
                    raw_response: String::new(),
                    purchase_time_ms: NOW - 10_000,
                    refund_time_ms: 0,
                    environment: environment::SANDBOX,
                }],
                NOW - 10_000,
            )
            .await
            .expect("recorded");
        let body = push(serde_json::json!({
            "packageName": "com.game",
            "voidedPurchaseNotification": {
                "purchaseToken": "buy-token", "orderId": "GPA.1", "productType": 2, "refundType": 1
            }
        }));
        let notice = purchases
            .google_notification(&body)
            .await
            .expect("handled")
            .expect("reported");
        let AppleNotice::Purchase { kind, purchase, .. } = notice else {
            panic!("a purchase notice");
        };
        assert_eq!(kind, NotificationType::Refunded);
        assert_eq!(purchase.user_id, Some(user));
        assert_eq!(purchase.refund_time_ms, Some(NOW));
        assert!(purchase.seen_before);
        let stored = storage
            .purchase_by_transaction_id("buy-token")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(stored.refund_time_ms, NOW);
    }

    #[tokio::test]
    async fn a_voided_subscription_is_recorded_refunded_for_its_recorded_owner() {
        // No account id in the Play subscription: the recorded subscription's owner is used.
        let subscription = serde_json::json!({
            "lineItems": [{"productId": "vip", "expiryTime": "2023-11-14T22:13:30Z"}],
        })
        .to_string();
        let (purchases, storage, user, _fake) = google_service(subscription, String::new()).await;
        let body = push(serde_json::json!({
            "packageName": "com.game",
            "voidedPurchaseNotification": {"purchaseToken": "sub-token", "productType": 1}
        }));
        // Nobody owns it yet: acknowledged, nothing recorded.
        assert!(
            purchases
                .google_notification(&body)
                .await
                .expect("acknowledged")
                .is_none()
        );
        assert!(
            storage
                .subscription_by_original_transaction_id("sub-token")
                .await
                .expect("read")
                .is_none()
        );
        storage
            .upsert_subscription(
                NewSubscription {
                    user_id: user,
                    store: store::GOOGLE_PLAY_STORE,
                    product_id: "vip".into(),
                    original_transaction_id: "sub-token".into(),
                    raw_response: String::new(),
                    raw_notification: String::new(),
                    purchase_time_ms: NOW - 1000,
                    expire_time_ms: NOW + 1000,
                    refund_time_ms: 0,
                    environment: environment::PRODUCTION,
                },
                NOW - 1000,
            )
            .await
            .expect("recorded");
        let notice = purchases
            .google_notification(&body)
            .await
            .expect("handled")
            .expect("reported");
        let AppleNotice::Subscription {
            kind, subscription, ..
        } = notice
        else {
            panic!("a subscription notice");
        };
        assert_eq!(kind, NotificationType::Refunded);
        assert_eq!(subscription.user_id, Some(user));
        assert_eq!(subscription.refund_time_ms, Some(NOW));
        assert!(!subscription.active, "refunded");
        let stored = storage
            .subscription_by_original_transaction_id("sub-token")
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(stored.refund_time_ms, NOW);
        assert_eq!(stored.expire_time_ms, 1_700_000_010_000);
    }

    #[tokio::test]
    async fn an_account_id_that_is_not_a_uuid_or_an_unknown_user_is_skipped() {
        let subscription = serde_json::json!({
            "lineItems": [{"productId": "vip", "expiryTime": "2023-11-14T22:13:30Z"}],
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": "player-7"},
        })
        .to_string();
        let (purchases, _, _, _fake) = google_service(subscription, String::new()).await;
        assert!(
            purchases
                .google_notification(&subscription_push(4))
                .await
                .expect("acknowledged")
                .is_none()
        );
        let stranger = subscription_answer(Uuid::new_v4(), "2023-11-14T22:13:30Z");
        let (purchases, storage, _, _fake) = google_service(stranger, String::new()).await;
        assert!(
            purchases
                .google_notification(&subscription_push(4))
                .await
                .expect("acknowledged")
                .is_none()
        );
        assert!(
            storage
                .subscription_by_original_transaction_id("sub-token")
                .await
                .expect("read")
                .is_none()
        );
    }

    /// A listener whose Google functions fail, counting the notices it heard.
    #[derive(Debug, Default)]
    struct Failing {
        heard: Mutex<Vec<NotificationType>>,
    }

    #[async_trait::async_trait]
    impl NotificationListener for Failing {
        async fn apple_notice(&self, _notice: &AppleNotice) {}

        async fn google_notice(&self, notice: &AppleNotice) -> bool {
            let kind = match notice {
                AppleNotice::Purchase { kind, .. } | AppleNotice::Subscription { kind, .. } => {
                    *kind
                }
            };
            self.heard.lock().push(kind);
            false
        }
    }

    #[tokio::test]
    async fn a_failing_purchase_function_is_retried_a_failing_subscription_one_is_not() {
        // Both lookups name the service's user, known once the service exists.
        let owner = Arc::new(Mutex::new(String::new()));
        let named = Arc::clone(&owner);
        let (_, private, _) = rsa_key();
        let fake = FakeStore::start(move |seen| {
            let user = named.lock().clone();
            if seen.target == "/token" {
                (200, r#"{"access_token":"t","expires_in":3600}"#.into())
            } else if seen.target.contains("/subscriptionsv2/tokens/sub-token?") {
                let answer = serde_json::json!({
                    "lineItems": [{"productId": "vip", "expiryTime": "2023-11-14T22:13:30Z"}],
                    "externalAccountIdentifiers": {"obfuscatedExternalAccountId": user},
                });
                (200, answer.to_string())
            } else if seen.target.contains("/productsv2/tokens/buy-token?") {
                let answer = serde_json::json!({
                    "productLineItem": [{"productId": "gems"}],
                    "obfuscatedExternalAccountId": user,
                });
                (200, answer.to_string())
            } else {
                (404, "no".into())
            }
        })
        .await;
        let mut config = IapConfig::default();
        config.google.client_email = "svc@example.iam".into();
        config.google.private_key = private;
        config.google.token_url = format!("{}/token", fake.base);
        config.google.publisher_url = fake.base.clone();
        let (purchases, _, user) = service(config).await;
        *owner.lock() = user.to_string();
        let listener = Arc::new(Failing::default());
        purchases.set_notification_listener(listener.clone());
        assert!(
            purchases
                .serve_google_notification(&subscription_push(4))
                .await,
            "a subscription function's failure is logged, 200"
        );
        let voided = push(serde_json::json!({
            "packageName": "com.game",
            "voidedPurchaseNotification": {"purchaseToken": "buy-token", "productType": 2}
        }));
        assert!(
            !purchases.serve_google_notification(&voided).await,
            "a purchase function's failure answers 500"
        );
        assert_eq!(
            *listener.heard.lock(),
            vec![NotificationType::Subscribed, NotificationType::Refunded]
        );
    }

    #[tokio::test]
    async fn malformed_bodies_are_refused_and_other_kinds_ignored() {
        let (purchases, _, _, fake) = google_service(String::new(), String::new()).await;
        for body in [
            b"not json".to_vec(),
            b"{}".to_vec(),
            br#"{"message":{"data":"%%%"}}"#.to_vec(),
            br#"{"message":{"data":""}}"#.to_vec(),
            serde_json::json!({"message": {"data": base64::engine::general_purpose::STANDARD.encode("[1]")}})
                .to_string()
                .into_bytes(),
        ] {
            assert!(
                purchases.google_notification(&body).await.is_err(),
                "{}",
                String::from_utf8_lossy(&body)
            );
            assert!(!purchases.serve_google_notification(&body).await);
        }
        for notification in [
            serde_json::json!({"packageName": "com.game", "testNotification": {"version": "1.0"}}),
            serde_json::json!({"packageName": "com.game", "oneTimeProductNotification": {"notificationType": 1, "purchaseToken": "x", "sku": "gems"}}),
        ] {
            assert!(
                purchases
                    .google_notification(&push(notification))
                    .await
                    .expect("acknowledged")
                    .is_none()
            );
        }
        assert!(fake.seen().is_empty(), "the store is not asked");
    }
}

//! Test support (feature `test-util`): a fake Google Play — an OAuth token endpoint and the
//! Publisher API's `subscriptionsv2` / `productsv2` lookups — answering what the test set
//! for each purchase token (404 otherwise), and a service account key made at test time.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::GoogleConfig;

#[derive(Default)]
struct Answers {
    subscriptions: HashMap<String, String>,
    products: HashMap<String, String>,
}

/// A fake Google Play on 127.0.0.1; dropped with the runtime that started it.
pub struct FakeGooglePlay {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    answers: Arc<Mutex<Answers>>,
    private_key: String,
}

impl FakeGooglePlay {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let answers = Arc::new(Mutex::new(Answers::default()));
        let shared = Arc::clone(&answers);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let answers = Arc::clone(&shared);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    // The head is enough: lookups are GETs, the token form is not read.
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let target = head.split_whitespace().nth(1).unwrap_or_default();
                    let path = target.split('?').next().unwrap_or_default();
                    let (status, body) = answer(&answers.lock(), path);
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        // 1024 bits keeps key generation quick in a debug build.
        let key = rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, 1024).expect("key");
        let private_key = {
            use rsa::pkcs8::EncodePrivateKey as _;
            key.to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
                .expect("pem")
                .to_string()
        };
        FakeGooglePlay {
            base,
            answers,
            private_key,
        }
    }

    /// Points `config` at this fake with a service account it accepts.
    pub fn configure(&self, config: &mut GoogleConfig) {
        config.client_email = "svc@example.iam".into();
        config.private_key = self.private_key.clone();
        config.token_url = format!("{}/token", self.base);
        config.publisher_url = self.base.clone();
    }

    /// The service account's PEM private key this fake accepts.
    pub fn private_key(&self) -> &str {
        &self.private_key
    }

    /// What `subscriptionsv2` answers for `token` (a `SubscriptionPurchaseV2` JSON).
    pub fn set_subscription(&self, token: &str, answer: serde_json::Value) {
        self.answers
            .lock()
            .subscriptions
            .insert(token.to_owned(), answer.to_string());
    }

    /// What `productsv2` answers for `token` (a `ProductPurchaseV2` JSON).
    pub fn set_product(&self, token: &str, answer: serde_json::Value) {
        self.answers
            .lock()
            .products
            .insert(token.to_owned(), answer.to_string());
    }
}

fn answer(answers: &Answers, path: &str) -> (u16, String) {
    if path == "/token" {
        return (200, r#"{"access_token":"t","expires_in":3600}"#.into());
    }
    let found = if let Some((_, token)) = path.split_once("/purchases/subscriptionsv2/tokens/") {
        answers.subscriptions.get(token)
    } else if let Some((_, token)) = path.split_once("/purchases/productsv2/tokens/") {
        answers.products.get(token)
    } else {
        None
    };
    match found {
        Some(body) => (200, body.clone()),
        None => (404, r#"{"error":{"code":404}}"#.into()),
    }
}

/// A Pub/Sub push of a developer notification (`data` base64url, as Nakama decodes it).
pub fn push(notification: &serde_json::Value) -> serde_json::Value {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::URL_SAFE.encode(notification.to_string());
    serde_json::json!({
        "message": {"data": data, "messageId": "1", "attributes": {}},
        "subscription": "projects/p/subscriptions/play",
    })
}

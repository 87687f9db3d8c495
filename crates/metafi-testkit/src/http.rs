//! A thin HTTP client speaking to one node, with Nakama's auth helpers and error-shape check.

use serde_json::Value;

/// A response reduced to what tests look at.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

/// Thin HTTP helper speaking to one server.
#[derive(Clone)]
pub struct Http {
    pub base: String,
    client: reqwest::Client,
}

impl Http {
    pub fn new(base: &str) -> Http {
        Http {
            base: base.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body read");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, body }
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.post(format!("{}{}", self.base, path))
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(format!("{}{}", self.base, path))
    }

    pub fn put(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.put(format!("{}{}", self.base, path))
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.delete(format!("{}{}", self.base, path))
    }

    /// Device authentication with the default server key.
    pub async fn auth_device(&self, device_id: &str, create: bool) -> Reply {
        self.send(
            self.post(&format!("/v2/account/authenticate/device?create={create}"))
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({ "id": device_id })),
        )
        .await
    }

    /// A new account's session token.
    pub async fn new_session(&self) -> (String, String) {
        let reply = self
            .auth_device(&format!("device-{}", uuid::Uuid::new_v4()), true)
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        (
            reply.body["token"].as_str().unwrap().to_owned(),
            reply.body["refresh_token"].as_str().unwrap().to_owned(),
        )
    }
}

/// Asserts Nakama's error shape with the given HTTP status and gRPC code.
pub fn assert_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "body: {}", reply.body);
    assert_eq!(reply.body["code"], code, "body: {}", reply.body);
    assert!(reply.body["message"].is_string(), "body: {}", reply.body);
    assert_eq!(reply.body["error"], reply.body["message"]);
}

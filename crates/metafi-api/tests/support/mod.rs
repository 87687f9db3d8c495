//! The REST router over a fresh SQLite store, driven without a socket (`oneshot`).

// Each test file uses a different part of this support module.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use metafi_api::{ApiConfig, ApiState};
use metafi_core::{
    Accounts, AccountsConfig, Channels, Clock, NoGroups, NoRpcs, Objects, OnlineUsers, Revocations,
    Sessions, SessionsConfig, SystemClock, TokenKeys, Users,
};
use metafi_match::{MatchConfig, Matches, OutgoingData, Outlet, PresenceEvent, SystemMonotonic};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use serde_json::Value;
use tower::ServiceExt as _;
use uuid::Uuid;

/// `Basic base64("defaultkey:")`.
const SERVER_KEY_AUTH: &str = "Basic ZGVmYXVsdGtleTo=";

/// Users marked online by the test.
#[derive(Debug, Default)]
pub struct Online(Mutex<HashSet<Uuid>>);

impl Online {
    pub fn set(&self, user: Uuid) {
        self.0.lock().expect("lock").insert(user);
    }
}

impl OnlineUsers for Online {
    fn is_online(&self, user_id: Uuid) -> bool {
        self.0.lock().expect("lock").contains(&user_id)
    }
}

/// No match traffic in these tests.
#[derive(Debug)]
struct NoOutlet;

impl Outlet for NoOutlet {
    fn send_data(&self, _recipients: &[Uuid], _data: &OutgoingData<'_>) {}
    fn send_presences(&self, _recipients: &[Uuid], _event: &PresenceEvent<'_>) {}
    fn is_connected(&self, _session_id: Uuid) -> bool {
        false
    }
}

pub struct Api {
    router: Router,
    pub online: Arc<Online>,
    _dir: tempfile::TempDir,
}

/// A signed-in user.
pub struct Player {
    pub token: String,
    pub refresh_token: String,
    pub id: Uuid,
}

impl Api {
    pub async fn new() -> Api {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.path().join("metafi.db"),
                readers: 1,
                ..SqliteConfig::default()
            })
            .expect("open sqlite"),
        );
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let revocations = Revocations::load(store.clone(), clock.now_ms())
            .await
            .expect("revocations");
        let sessions = Arc::new(Sessions::new(
            TokenKeys::new(b"test-session-key", b"test-refresh-key"),
            SessionsConfig {
                token_expiry_sec: 3600,
                refresh_token_expiry_sec: 7200,
            },
            revocations,
            store.clone(),
            clock.clone(),
        ));
        let online = Arc::new(Online::default());
        let (matches, _seeds) = Matches::new(
            MatchConfig {
                executor_threads: 1,
                ..MatchConfig::default()
            },
            "node",
            Arc::new(NoOutlet),
            Arc::new(SystemMonotonic),
            clock.clone(),
        );
        let state = ApiState {
            config: Arc::new(ApiConfig {
                server_key: "defaultkey".into(),
                max_request_size_bytes: 1 << 20,
                http_key: "httpkey".into(),
            }),
            accounts: Arc::new(Accounts::new(
                store.clone(),
                &AccountsConfig {
                    bcrypt_cost: 4,
                    max_concurrent_hashes: 2,
                },
                clock.clone(),
            )),
            sessions,
            users: Arc::new(Users::new(store.clone(), online.clone())),
            objects: Arc::new(Objects::new(store.clone(), clock.clone())),
            channels: Arc::new(Channels::new(store, Arc::new(NoGroups), clock)),
            rpc: Arc::new(NoRpcs),
            matches,
        };
        Api {
            router: metafi_api::router(state),
            online,
            _dir: dir,
        }
    }

    /// One request; the answer's status and JSON body.
    pub async fn call(
        &self,
        method: Method,
        uri: &str,
        auth: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        let response = self
            .router
            .clone()
            .oneshot(request.body(body).expect("request"))
            .await
            .expect("infallible");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, json)
    }

    /// A call as a signed-in user.
    pub async fn as_user(
        &self,
        player: &Player,
        method: Method,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let auth = format!("Bearer {}", player.token);
        self.call(method, uri, Some(&auth), body).await
    }

    /// Signs up a new device account; `query` is appended (for example `&username=ada`).
    pub async fn sign_up(&self, query: &str) -> Player {
        let device = format!("device-{}", Uuid::new_v4());
        let (status, body) = self.sign_up_raw(&device, query).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let token = body["token"].as_str().expect("token").to_owned();
        let refresh_token = body["refresh_token"].as_str().expect("refresh").to_owned();
        let id = user_id_of(&token);
        Player {
            token,
            refresh_token,
            id,
        }
    }

    pub async fn sign_up_raw(&self, device_id: &str, query: &str) -> (StatusCode, Value) {
        self.call(
            Method::POST,
            &format!("/v2/account/authenticate/device?create=true{query}"),
            Some(SERVER_KEY_AUTH),
            Some(serde_json::json!({ "id": device_id })),
        )
        .await
    }
}

/// The `uid` claim of a session token.
fn user_id_of(token: &str) -> Uuid {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).expect("jwt payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64");
    let claims: Value = serde_json::from_slice(&bytes).expect("claims");
    Uuid::parse_str(claims["uid"].as_str().expect("uid")).expect("uuid")
}

/// Asserts Nakama's error shape with this status, code and exact message.
#[track_caller]
pub fn assert_error(answer: &(StatusCode, Value), status: u16, code: i64, message: &str) {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["message"], message, "{body}");
    assert_eq!(body["error"], message, "{body}");
}

//! The API router over a throwaway SQLite database, for tests that call it without a socket
//! (`router.oneshot(request)`) and for the socket tests of the accept loop.

#![allow(dead_code)] // each test file uses a different part of this module

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use http_body_util::BodyExt;
use metafi_api::{ApiConfig, ApiState, HttpConfig};
use metafi_core::{
    Accounts, AccountsConfig, Channels, Clock, NoGroups, NoRpcs, Objects, Revocations, Sessions,
    SessionsConfig, SignInThrottle, SignInThrottleConfig, SystemClock, TokenKeys,
};
use metafi_match::{MatchConfig, Matches, SystemMonotonic};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

pub struct TestApi {
    pub state: ApiState,
    pub store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

/// Settings tests start from: small body limit, everything else as configured by default.
pub fn api_config(http: HttpConfig) -> ApiConfig {
    ApiConfig {
        server_key: "defaultkey".into(),
        max_request_size_bytes: 1024,
        http_key: "defaulthttpkey".into(),
        http,
    }
}

impl TestApi {
    pub async fn start(config: ApiConfig, throttle: Option<SignInThrottleConfig>) -> TestApi {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.path().join("metafi.db"),
                readers: 1,
                ..SqliteConfig::default()
            })
            .unwrap(),
        );
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let revocations = Revocations::load(store.clone(), clock.now_ms())
            .await
            .unwrap();
        let sessions = Arc::new(Sessions::new(
            TokenKeys::new(b"session-key", b"refresh-key"),
            SessionsConfig {
                token_expiry_sec: 60,
                refresh_token_expiry_sec: 3600,
            },
            revocations,
            store.clone(),
            clock.clone(),
        ));
        let mut accounts = Accounts::new(
            store.clone(),
            &AccountsConfig {
                bcrypt_cost: 4,
                max_concurrent_hashes: 2,
            },
            clock.clone(),
        );
        if let Some(throttle) = throttle {
            accounts =
                accounts.with_throttle(Arc::new(SignInThrottle::new(throttle, clock.clone())));
        }
        let (matches, _seeds) = Matches::new(
            MatchConfig::default(),
            "node1",
            metafi_match::testing::RecordingOutlet::new(),
            Arc::new(SystemMonotonic),
            clock.clone(),
        );
        let state = ApiState {
            config: Arc::new(config),
            accounts: Arc::new(accounts),
            sessions,
            objects: Arc::new(Objects::new(store.clone(), clock.clone())),
            channels: Arc::new(Channels::new(
                store.clone(),
                Arc::new(NoGroups),
                clock.clone(),
            )),
            rpc: Arc::new(NoRpcs),
            matches,
        };
        TestApi {
            state,
            store,
            _dir: dir,
        }
    }

    pub fn router(&self) -> Router {
        metafi_api::router(self.state.clone())
    }

    pub async fn close(self) {
        self.store.close().await;
    }
}

/// A response's status, headers and body (JSON when it parses, else `null`).
pub struct Reply {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub body: serde_json::Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn call(router: &Router, request: Request<Body>) -> Reply {
    use tower::ServiceExt;
    let response: Response<Body> = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    }
}

/// `Authorization: Basic base64(defaultkey:)`.
pub const SERVER_KEY: &str = "Basic ZGVmYXVsdGtleTo=";

//! The API router over a throwaway SQLite database, for tests that call it without a socket
//! (`router.oneshot(request)`) and for the socket tests of the accept loop; [`Api`] adds
//! signed-in players and users marked online, for the tests of Nakama's answers.

#![allow(dead_code)] // each test file uses a different part of this module

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use http_body_util::BodyExt;
use metafi_api::{ApiConfig, ApiServices, ApiState, HttpConfig};
use metafi_core::{
    Accounts, AccountsConfig, Channels, Clock, Groups, NoRpcs, NobodyOnline, Objects, OnlineUsers,
    Revocations, Sessions, SessionsConfig, SignInThrottle, SignInThrottleConfig, SystemClock,
    TokenKeys, Users,
};
use metafi_match::{MatchConfig, Matches, SystemMonotonic};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

pub struct TestApi {
    pub state: ApiState,
    pub store: Arc<dyn Storage>,
    /// What the services sent through the notifier.
    pub notified: Arc<RecordingNotifier>,
    _dir: tempfile::TempDir,
}

/// A notifier that keeps what it is sent.
#[derive(Debug, Default)]
pub struct RecordingNotifier(pub std::sync::Mutex<Vec<metafi_core::NewNotification>>);

impl RecordingNotifier {
    /// Everything sent so far, emptied.
    pub fn take(&self) -> Vec<metafi_core::NewNotification> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

#[async_trait::async_trait]
impl metafi_core::Notifier for RecordingNotifier {
    async fn notify(
        &self,
        notifications: Vec<metafi_core::NewNotification>,
    ) -> Result<(), metafi_core::CoreError> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(notifications);
        Ok(())
    }
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
        Self::start_with_social(config, throttle, metafi_core::SocialConfig::default()).await
    }

    /// [`TestApi::start`] with social sign-in configured (providers faked on 127.0.0.1).
    pub async fn start_with_social(
        config: ApiConfig,
        throttle: Option<SignInThrottleConfig>,
        social: metafi_core::SocialConfig,
    ) -> TestApi {
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
        let notified = Arc::new(RecordingNotifier::default());
        let notifier: Arc<dyn metafi_core::Notifier> = notified.clone();
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
                max_exported_objects: 100,
            },
            clock.clone(),
        );
        let friends = Arc::new(metafi_core::Friends::new(
            store.clone(),
            notifier.clone(),
            Arc::new(NobodyOnline),
            clock.clone(),
            metafi_core::FriendsConfig::default(),
        ));
        let mut social = metafi_core::SocialSignIn::new(store.clone(), social, clock.clone())
            .unwrap()
            .with_friends(friends.clone());
        if let Some(throttle) = throttle {
            let throttle = Arc::new(SignInThrottle::new(throttle, clock.clone()));
            accounts = accounts.with_throttle(throttle.clone());
            social = social.with_throttle(throttle);
        }
        let (matches, _seeds) = Matches::new(
            MatchConfig::default(),
            "node1",
            metafi_match::testing::RecordingOutlet::new(),
            Arc::new(SystemMonotonic),
            clock.clone(),
        );
        let groups = Arc::new(Groups::new(
            store.clone(),
            notifier.clone(),
            Arc::new(NobodyOnline),
            clock.clone(),
        ));
        let state = ApiState::new(ApiServices {
            config: Arc::new(config),
            accounts: Arc::new(accounts),
            sessions,
            social: Arc::new(social),
            users: Arc::new(Users::new(store.clone(), Arc::new(NobodyOnline))),
            objects: Arc::new(Objects::new(store.clone(), clock.clone())),
            friends,
            channels: Arc::new(Channels::new(store.clone(), groups.clone(), clock.clone())),
            groups,
            rpc: Arc::new(NoRpcs),
            matches,
            hooks: Arc::new(metafi_core::NoHooks),
            notifications: Arc::new(metafi_core::Notifications::new(
                store.clone(),
                clock.clone(),
                Arc::new(metafi_core::NoPush),
                metafi_core::NotificationsConfig::default(),
            )),
            sockets: Arc::new(metafi_core::NoSockets),
            leaderboards: Arc::new(
                metafi_core::Leaderboards::load(store.clone(), clock.clone())
                    .await
                    .unwrap(),
            ),
            purchases: Arc::new(
                metafi_core::Purchases::new(
                    store.clone(),
                    clock.clone(),
                    metafi_core::IapConfig::default(),
                )
                .unwrap(),
            ),
            matchmaking: Arc::new(metafi_match::Matchmaking::new(
                metafi_match::MatchmakerConfig::default(),
                b"test-token-key",
                clock.clone(),
            )),
            parties: Arc::new(metafi_core::NoParties),
            events: metafi_core::Events::start(metafi_core::EventConfig::default()),
        });
        TestApi {
            state,
            store,
            notified,
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

/// Users marked online by the test.
#[derive(Debug, Default)]
pub struct Online(std::sync::Mutex<std::collections::HashSet<uuid::Uuid>>);

impl Online {
    pub fn set(&self, user: uuid::Uuid) {
        self.0.lock().expect("lock").insert(user);
    }
}

impl OnlineUsers for Online {
    fn is_online(&self, user_id: uuid::Uuid) -> bool {
        self.0.lock().expect("lock").contains(&user_id)
    }
}

/// Users whose sockets the API asked to close, in order.
#[derive(Debug, Default)]
pub struct ClosedSockets(std::sync::Mutex<Vec<uuid::Uuid>>);

impl ClosedSockets {
    pub fn users(&self) -> Vec<uuid::Uuid> {
        self.0.lock().expect("lock").clone()
    }
}

impl metafi_core::UserSockets for ClosedSockets {
    fn disconnect_user(&self, user_id: uuid::Uuid) -> usize {
        self.0.lock().expect("lock").push(user_id);
        1
    }
}

/// The router with a 1 MiB body limit, a test-controlled [`Online`] and recorded socket
/// closes.
pub struct Api {
    /// For requests [`Api::call`] cannot make (headers of its own).
    pub router: Router,
    pub online: Arc<Online>,
    /// The notifications service behind `/v2/notification` (tests send through it).
    pub notifications: Arc<metafi_core::Notifications>,
    /// What the services sent through the notifier.
    pub notified: Arc<RecordingNotifier>,
    pub sockets: Arc<ClosedSockets>,
    _api: TestApi,
}

/// A signed-in user.
pub struct Player {
    pub token: String,
    pub refresh_token: String,
    pub id: uuid::Uuid,
}

impl Api {
    pub async fn new() -> Api {
        Api::with_settings(
            metafi_core::SocialConfig::default(),
            metafi_core::IapConfig::default(),
            Arc::new(metafi_core::NoHooks),
        )
        .await
    }

    /// [`Api::new`] with social sign-in configured.
    pub async fn with_social(social: metafi_core::SocialConfig) -> Api {
        Api::with_settings(
            social,
            metafi_core::IapConfig::default(),
            Arc::new(metafi_core::NoHooks),
        )
        .await
    }

    /// Like [`Api::new`], with these purchase-validation settings.
    pub async fn with_iap(iap: metafi_core::IapConfig) -> Api {
        Api::with_settings(
            metafi_core::SocialConfig::default(),
            iap,
            Arc::new(metafi_core::NoHooks),
        )
        .await
    }

    /// [`Api::new`] with the runtime's hooks replaced by `hooks`.
    pub async fn with_hooks(hooks: Arc<dyn metafi_core::Hooks>) -> Api {
        Api::with_settings(
            metafi_core::SocialConfig::default(),
            metafi_core::IapConfig::default(),
            hooks,
        )
        .await
    }

    /// [`Api::new`] with these social sign-in and purchase-validation settings and hooks.
    pub async fn with_settings(
        social: metafi_core::SocialConfig,
        iap: metafi_core::IapConfig,
        hooks: Arc<dyn metafi_core::Hooks>,
    ) -> Api {
        let mut config = api_config(HttpConfig::default());
        config.max_request_size_bytes = 1 << 20;
        let api = TestApi::start_with_social(config, None, social).await;
        let online = Arc::new(Online::default());
        let sockets = Arc::new(ClosedSockets::default());
        let mut state = api.state.clone();
        let services = state.services_mut();
        services.hooks = hooks;
        services.users = Arc::new(Users::new(api.store.clone(), online.clone()));
        services.friends = Arc::new(metafi_core::Friends::new(
            api.store.clone(),
            api.notified.clone(),
            online.clone(),
            Arc::new(SystemClock),
            metafi_core::FriendsConfig::default(),
        ));
        services.sockets = sockets.clone();
        services.purchases = Arc::new(
            metafi_core::Purchases::new(api.store.clone(), Arc::new(metafi_core::SystemClock), iap)
                .unwrap(),
        );
        Api {
            notifications: state.notifications.clone(),
            // Store notifications live on the console listener; these tests call them here.
            router: metafi_api::router(state.clone()).merge(metafi_api::store_notifications(state)),
            online,
            notified: api.notified.clone(),
            sockets,
            _api: api,
        }
    }

    /// The notifications sent so far through the `Notifier` seam, taken.
    pub fn take_notifications(&self) -> Vec<metafi_core::NewNotification> {
        self._api.notified.take()
    }

    /// The leaderboard and tournament service behind the router.
    pub fn leaderboards(&self) -> Arc<metafi_core::Leaderboards> {
        self._api.state.leaderboards.clone()
    }

    /// The store behind the router.
    pub fn store(&self) -> Arc<dyn Storage> {
        self._api.store.clone()
    }

    /// One request; the answer's status and JSON body.
    pub async fn call(
        &self,
        method: axum::http::Method,
        uri: &str,
        auth: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> (axum::http::StatusCode, serde_json::Value) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        let reply = call(&self.router, request.body(body).expect("request")).await;
        let status = axum::http::StatusCode::from_u16(reply.status).expect("status");
        (status, reply.body)
    }

    /// A call as a signed-in user.
    pub async fn as_user(
        &self,
        player: &Player,
        method: axum::http::Method,
        uri: &str,
        body: Option<serde_json::Value>,
    ) -> (axum::http::StatusCode, serde_json::Value) {
        let auth = format!("Bearer {}", player.token);
        self.call(method, uri, Some(&auth), body).await
    }

    /// Signs up a new device account; `query` is appended (for example `&username=ada`).
    pub async fn sign_up(&self, query: &str) -> Player {
        let device = format!("device-{}", uuid::Uuid::new_v4());
        let (status, body) = self.sign_up_raw(&device, query).await;
        assert_eq!(status, axum::http::StatusCode::OK, "{body}");
        let token = body["token"].as_str().expect("token").to_owned();
        let refresh_token = body["refresh_token"].as_str().expect("refresh").to_owned();
        let id = user_id_of(&token);
        Player {
            token,
            refresh_token,
            id,
        }
    }

    pub async fn sign_up_raw(
        &self,
        device_id: &str,
        query: &str,
    ) -> (axum::http::StatusCode, serde_json::Value) {
        self.call(
            axum::http::Method::POST,
            &format!("/v2/account/authenticate/device?create=true{query}"),
            Some(SERVER_KEY),
            Some(serde_json::json!({ "id": device_id })),
        )
        .await
    }
}

/// The `uid` claim of a session token.
pub fn user_id_of(token: &str) -> uuid::Uuid {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).expect("jwt payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64");
    let claims: serde_json::Value = serde_json::from_slice(&bytes).expect("claims");
    uuid::Uuid::parse_str(claims["uid"].as_str().expect("uid")).expect("uuid")
}

/// Asserts Nakama's error shape with this status, code and exact message.
#[track_caller]
pub fn assert_error(
    answer: &(axum::http::StatusCode, serde_json::Value),
    status: u16,
    code: i64,
    message: &str,
) {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["message"], message, "{body}");
    assert_eq!(body["error"], message, "{body}");
}

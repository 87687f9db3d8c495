//! What handlers share: the services and the API's own settings.

use std::sync::Arc;

use metafi_core::{
    Accounts, Channels, Events, Friends, Groups, Hooks, Leaderboards, Notifications, Objects,
    PartyDirectory, Purchases, RpcDispatch, Sessions, SocialSignIn, UserSockets, Users,
};

use crate::HttpConfig;

/// Settings of the REST edge.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The server key clients send as the HTTP basic-auth username to authenticate.
    pub server_key: String,
    /// Largest accepted request body, in bytes.
    pub max_request_size_bytes: usize,
    /// Key of server-to-server RPC calls (`/v2/rpc/{id}?http_key=…`, Nakama's `runtime.http_key`).
    pub http_key: String,
    /// CORS and the connection timeouts of the edge.
    pub http: HttpConfig,
}

/// Shared state of every handler: the services behind one `Arc`.
///
/// axum clones the state for every extractor and layer that takes it, several times per
/// request. As a struct of twenty `Arc`s each clone and drop was twenty atomic counts: 13 % of
/// the server's CPU on a REST echo (`perf`, docs/BENCHMARKS.md "The floor of the RPC rows").
/// Now a clone is one count; fields read through `Deref` as before.
#[derive(Debug, Clone)]
pub struct ApiState(Arc<ApiServices>);

impl ApiState {
    pub fn new(services: ApiServices) -> ApiState {
        ApiState(Arc::new(services))
    }

    /// The services to change, copied first if another clone shares them (tests swap hooks
    /// or sockets in a clone of a running API's state).
    pub fn services_mut(&mut self) -> &mut ApiServices {
        Arc::make_mut(&mut self.0)
    }
}

impl std::ops::Deref for ApiState {
    type Target = ApiServices;

    fn deref(&self) -> &ApiServices {
        &self.0
    }
}

/// The services REST handlers act through (see [`ApiState`]).
#[derive(Debug, Clone)]
pub struct ApiServices {
    pub config: Arc<ApiConfig>,
    pub accounts: Arc<Accounts>,
    pub sessions: Arc<Sessions>,
    /// Sign-in, link and unlink by Apple, Facebook, Game Center, Google and Steam identities.
    pub social: Arc<SocialSignIn>,
    /// Other users' profiles with their online status (`/v2/user`).
    pub users: Arc<Users>,
    pub objects: Arc<Objects>,
    /// Chat channel rules and history (`/v2/channel`).
    pub channels: Arc<Channels>,
    /// Friends, invites and blocks (`/v2/friend`).
    pub friends: Arc<Friends>,
    /// Groups and their memberships (`/v2/group`, `/v2/user/{id}/group`).
    pub groups: Arc<Groups>,
    /// Runs RPC functions (the runtime, or `NoRpcs` when no modules are loaded).
    pub rpc: Arc<dyn RpcDispatch>,
    /// The match registry (`/v2/match`).
    pub matches: metafi_match::Matches,
    /// Before/after hooks of the runtime's modules (`NoHooks` when none).
    pub hooks: Arc<dyn Hooks>,
    /// The user's notifications (`/v2/notification`).
    pub notifications: Arc<Notifications>,
    /// Users' open sockets, closed when their account is deleted (`NoSockets` without a
    /// realtime edge).
    pub sockets: Arc<dyn UserSockets>,
    /// Leaderboards and their records (`/v2/leaderboard`).
    pub leaderboards: Arc<Leaderboards>,
    /// In-app purchase and subscription validation (`/v2/iap`).
    pub purchases: Arc<Purchases>,
    /// The matchmaker (`/v2/matchmaker/stats`).
    pub matchmaking: Arc<metafi_match::Matchmaking>,
    /// Parties to list (`/v2/party`; `NoParties` when the server runs none).
    pub parties: Arc<dyn PartyDirectory>,
    /// The event queue of the runtime's event processors (`/v2/event`).
    pub events: Arc<Events>,
}

//! MetaFi's console: a second listener (`[console]`, default `127.0.0.1:7351`, Nakama's) with
//! its own users and roles, sign-in and sessions, Nakama's `/v2/console/…` JSON API,
//! server-rendered pages with a little hand-written JavaScript for live charts, and an audit
//! log of every change. Design and role table: docs/CONSOLE.md.
//!
//! Nothing on this listener answers without a console session except sign-in
//! (`POST /v2/console/authenticate`, its MFA setup `POST /v2/console/authenticate/mfa`, the
//! `/login` page and its two assets) and the store
//! notifications Nakama serves on its console port (their signed payloads are the proof).
//! The client API's server key and session tokens open nothing here: console tokens are signed
//! with `console.signing_key`.
//!
//! The console acts through the client API's services (`ApiState`), so an edit obeys the same
//! rules as the same edit through the API or `nk`.
//!
//! Must not depend on: a storage backend, the script engines, the realtime transport. Key
//! types: [`ConsoleState`], [`ConsoleConfig`], [`Role`], [`router`], [`NodeProbe`].

mod api;
mod assets;
mod audit;
mod auth;
mod config;
mod mfa;
mod pages;
mod state;
mod users;
mod world;

pub use auth::{COOKIE_NAME, CSRF_HEADER, ConsoleSession, seed_users};
pub use config::{ConsoleConfig, Perm, Role, UserSeed};
/// The TOTP code of a base32 secret at a time (seconds): what an authenticator app shows.
pub use mfa::totp as totp_code;
pub use state::{ConsoleState, LiveSession, NodeProbe, RuntimeInfo};
pub use world::WorldSource;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use metafi_api::ApiError;
use metafi_proto::Code;

/// The console's router: open routes (sign-in, its page and assets, store notifications) and
/// everything else behind a console session.
pub fn router(state: ConsoleState) -> Router {
    let gated = api::routes()
        .merge(pages::routes())
        .merge(world::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_session,
        ));
    let open = Router::new()
        .route("/v2/console/authenticate", post(auth::authenticate))
        .route("/v2/console/authenticate/mfa", post(auth::mfa_setup))
        .route("/login", get(pages::login))
        .route("/assets/console.js", get(assets::script))
        .route("/assets/console.css", get(assets::style));
    let limit = state.config.max_request_size_bytes;
    open.merge(gated)
        .fallback(unknown)
        .with_state(state.clone())
        // Nakama serves the stores' notifications on its console port.
        .merge(metafi_api::store_notifications(state.api.clone()))
        .layer(axum::extract::DefaultBodyLimit::max(limit))
}

/// Unknown paths: 401 without a session (nothing is revealed), 404 with one.
async fn unknown(State(state): State<ConsoleState>, headers: HeaderMap) -> Response {
    if auth::session_of(&state, &headers).await.is_none() {
        return ApiError::new(Code::Unauthenticated, "Console authentication required.")
            .into_response();
    }
    ApiError::new(Code::NotFound, "Not Found").into_response()
}

//! The console's JSON API under `/v2/console/…`: Nakama's console paths and shapes where they
//! exist (`console/console.proto`), MetaFi's own where Nakama has none (match statistics and
//! signals, the audit log's entries). Every handler states the permission it needs.

mod account_social;
mod accounts;
mod matches;
mod runtime;
mod status;
mod storage;

use axum::Router;
use axum::routing::{get, post};

use crate::ConsoleState;

pub(crate) use account_social::sessions_json as account_sessions;
pub(crate) use accounts::search as search_accounts;
pub(crate) use matches::listing as matches_listing;
pub(crate) use status::snapshot as status_snapshot;

/// The routes that need a console session.
pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/v2/console/status", get(status::get))
        .route("/v2/console/config", get(runtime::config))
        .route("/v2/console/runtime", get(runtime::get))
        .route("/v2/console/runtime/errors", get(runtime::errors))
        .route("/v2/console/api/endpoints", get(runtime::endpoints))
        .route(
            "/v2/console/api/endpoints/rpc/{method}",
            post(runtime::call_rpc),
        )
        .route("/v2/console/account", get(accounts::list))
        .route(
            "/v2/console/account/{id}",
            get(accounts::get)
                .post(accounts::update)
                .delete(accounts::delete),
        )
        .route("/v2/console/account/{id}/ban", post(accounts::ban))
        .route("/v2/console/account/{id}/unban", post(accounts::unban))
        .route("/v2/console/account/{id}/export", get(accounts::export))
        .route(
            "/v2/console/account/{id}/friend",
            get(account_social::friends),
        )
        .route(
            "/v2/console/account/{id}/group",
            get(account_social::groups),
        )
        .route(
            "/v2/console/account/{id}/wallet",
            get(account_social::wallet),
        )
        .route(
            "/v2/console/account/{id}/session",
            get(account_social::sessions),
        )
        .route(
            "/v2/console/account/{id}/session/{session_id}/disconnect",
            post(account_social::disconnect),
        )
        .route("/v2/console/storage", get(storage::list))
        .route("/v2/console/storage/collections", get(storage::collections))
        .route(
            "/v2/console/storage/{collection}/{key}/{user_id}",
            get(storage::get)
                .put(storage::write)
                .delete(storage::delete),
        )
        .route(
            "/v2/console/storage/{collection}/{key}/{user_id}/{version}",
            axum::routing::delete(storage::delete_version),
        )
        .route("/v2/console/match", get(matches::list))
        .route(
            "/v2/console/match/{id}",
            get(matches::get).delete(matches::end),
        )
        .route("/v2/console/match/{id}/state", get(matches::state))
        .route("/v2/console/match/{id}/signal", post(matches::signal))
        .route("/v2/console/audit/log", get(crate::audit::list))
        .route("/v2/console/authenticate/logout", post(crate::auth::logout))
        .merge(crate::users::routes())
}

/// RFC 3339 with milliseconds, as the client API writes timestamps.
pub(crate) fn timestamp(ms: i64) -> String {
    metafi_proto::format_timestamp_ms(ms)
}

/// A user id from a path, Nakama's message when it is not one.
pub(crate) fn user_id(text: &str) -> Result<uuid::Uuid, metafi_api::ApiError> {
    uuid::Uuid::parse_str(text).map_err(|_| {
        metafi_api::ApiError::new(
            metafi_proto::Code::InvalidArgument,
            "Requires a valid user ID.",
        )
    })
}

/// Nakama refuses to change the system user (the nil id): `Cannot <verb> the system user.`
pub(crate) fn not_the_system_user(id: uuid::Uuid, verb: &str) -> Result<(), metafi_api::ApiError> {
    if id.is_nil() {
        return Err(metafi_api::ApiError::new(
            metafi_proto::Code::InvalidArgument,
            format!("Cannot {verb} the system user."),
        ));
    }
    Ok(())
}

/// A JSON body, Nakama's message when it does not parse.
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<T, metafi_api::ApiError> {
    if bytes.is_empty() {
        return serde_json::from_slice(b"{}").map_err(|_| bad_body());
    }
    serde_json::from_slice(bytes).map_err(|_| bad_body())
}

fn bad_body() -> metafi_api::ApiError {
    metafi_api::ApiError::new(metafi_proto::Code::InvalidArgument, "Invalid request body.")
}

//! `POST /v2/account/session/refresh` and `POST /v2/session/logout`.

use axum::Json;
use axum::extract::State;
use metafi_core::Hook;
use metafi_proto::api::{Session, SessionLogoutRequest, SessionRefreshRequest};

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, ServerKeyAuth, SessionAuth};

pub(super) async fn refresh(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<SessionRefreshRequest>,
) -> Result<Json<Session>, ApiError> {
    let hook = Hook::SessionRefresh;
    if !state.hooks.has_before(hook) && !state.hooks.has_after(hook) {
        return Ok(Json(state.sessions.refresh(&body.token, body.vars).await?));
    }
    let request = hooks::SessionRefreshRequest {
        token: body.token,
        vars: body.vars.unwrap_or_default(),
    };
    let ctx = || hooks::anonymous(&client);
    hooks::around(&state, hook, ctx, request, async |request| {
        // Protobuf cannot tell an empty map from none: both keep the session's variables.
        let vars = (!request.vars.is_empty()).then_some(request.vars);
        Ok(state.sessions.refresh(&request.token, vars).await?)
    })
    .await
}

pub(super) async fn logout(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<SessionLogoutRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = hooks::SessionLogoutRequest {
        token: body.token,
        refresh_token: body.refresh_token,
    };
    hooks::around_empty(&state, Hook::SessionLogout, ctx, request, async |request| {
        let (token, refresh_token) = (&request.token, &request.refresh_token);
        Ok(state.sessions.logout(&claims, token, refresh_token).await?)
    })
    .await
}

//! `DELETE /v2/account` and the links of device ids, custom ids and email to the signed-in
//! account: `POST /v2/account/link/{device,custom,email}` and
//! `POST /v2/account/unlink/{device,custom,email}`. The rules are `metafi_core::Accounts`'
//! (the ones `nk.link_*` / `nk.unlink_*` / `nk.account_delete_id` use); each call runs its
//! hooks under Nakama's name (`DeleteAccount`, `LinkDevice`, …) and answers `{}`.

use axum::Json;
use axum::extract::State;
use metafi_core::{CoreError, Hook};
use metafi_proto::Code;
use metafi_proto::api::{AccountCustom, AccountDevice, AccountEmail};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks::{self, AccountEmail as HookEmail, AccountId};
use crate::{ApiError, ApiState, SessionAuth};

/// What every call here answers: an empty message.
fn empty() -> Json<Value> {
    Json(serde_json::json!({}))
}

pub(super) async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
) -> Result<Json<Value>, ApiError> {
    let hook = Hook::DeleteAccount;
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::before_without_input(&state, hook, ctx).await?;
    state
        .accounts
        .delete(&state.sessions, state.sockets.as_ref(), claims.user_id)
        .await
        .map_err(|e| {
            if e.is_server_fault() {
                tracing::error!(error = %e, "could not delete an account");
                // Nakama answers every failure of the deletion with this one message.
                CoreError::Status {
                    code: Code::Internal,
                    message: "Error deleting user account.".to_owned(),
                }
            } else {
                e
            }
        })?;
    hooks::after::<()>(&state, hook, ctx, None, None).await;
    Ok(empty())
}

/// Runs a link or unlink: the before hook on the request, `apply`, the after hook.
async fn hooked<T, F, Fut>(
    state: &ApiState,
    claims: &metafi_core::SessionClaims,
    client: ClientAddress,
    hook: Hook,
    request: T,
    apply: F,
) -> Result<Json<Value>, ApiError>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce(T) -> Fut,
    Fut: std::future::Future<Output = Result<(), CoreError>>,
{
    let ctx = || hooks::signed_in(claims, client.0);
    let request = hooks::before(state, hook, ctx, request).await?;
    let kept = hooks::keep_for_after(state, hook, &request);
    apply(request).await?;
    hooks::after::<()>(state, hook, ctx, None, kept).await;
    Ok(empty())
}

pub(super) async fn link_device(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<Json<Value>, ApiError> {
    let request = AccountId {
        id: body.id,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::LinkDevice, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.link_device(user_id, &r.id).await }
    })
    .await
}

pub(super) async fn link_custom(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<Json<Value>, ApiError> {
    let request = AccountId {
        id: body.id,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::LinkCustom, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.link_custom(user_id, &r.id).await }
    })
    .await
}

pub(super) async fn link_email(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<Json<Value>, ApiError> {
    let request = HookEmail {
        email: body.email,
        password: body.password,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::LinkEmail, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.link_email(user_id, &r.email, &r.password).await }
    })
    .await
}

pub(super) async fn unlink_device(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<Json<Value>, ApiError> {
    let request = AccountId {
        id: body.id,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::UnlinkDevice, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.unlink_device(user_id, &r.id).await }
    })
    .await
}

pub(super) async fn unlink_custom(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<Json<Value>, ApiError> {
    let request = AccountId {
        id: body.id,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::UnlinkCustom, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.unlink_custom(user_id, &r.id).await }
    })
    .await
}

pub(super) async fn unlink_email(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<Json<Value>, ApiError> {
    let request = HookEmail {
        email: body.email,
        password: body.password,
        vars: body.vars,
    };
    let user_id = claims.user_id;
    hooked(&state, &claims, client, Hook::UnlinkEmail, request, |r| {
        let accounts = state.accounts.clone();
        async move { accounts.unlink_email(user_id, &r.email).await }
    })
    .await
}

pub(super) fn routes() -> axum::Router<ApiState> {
    use axum::routing::{delete as delete_route, post};
    axum::Router::new()
        .route("/v2/account", delete_route(delete))
        .route("/v2/account/link/device", post(link_device))
        .route("/v2/account/link/custom", post(link_custom))
        .route("/v2/account/link/email", post(link_email))
        .route("/v2/account/unlink/device", post(unlink_device))
        .route("/v2/account/unlink/custom", post(unlink_custom))
        .route("/v2/account/unlink/email", post(unlink_email))
}

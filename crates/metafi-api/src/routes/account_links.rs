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
use serde_json::Value;

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks::{self, AccountEmail as HookEmail, AccountId};
use crate::{ApiError, ApiState, SessionAuth};

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
    Ok(hooks::empty())
}

pub(super) async fn link_device(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::LinkDevice,
        ctx,
        AccountId::from(body),
        async |r| Ok(state.accounts.link_device(claims.user_id, &r.id).await?),
    )
    .await
}

pub(super) async fn link_custom(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::LinkCustom,
        ctx,
        AccountId::from(body),
        async |r| Ok(state.accounts.link_custom(claims.user_id, &r.id).await?),
    )
    .await
}

pub(super) async fn link_email(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::LinkEmail,
        ctx,
        HookEmail::from(body),
        async |r| {
            Ok(state
                .accounts
                .link_email(claims.user_id, &r.email, &r.password)
                .await?)
        },
    )
    .await
}

pub(super) async fn unlink_device(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::UnlinkDevice,
        ctx,
        AccountId::from(body),
        async |r| Ok(state.accounts.unlink_device(claims.user_id, &r.id).await?),
    )
    .await
}

pub(super) async fn unlink_custom(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::UnlinkCustom,
        ctx,
        AccountId::from(body),
        async |r| Ok(state.accounts.unlink_custom(claims.user_id, &r.id).await?),
    )
    .await
}

pub(super) async fn unlink_email(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, client.0);
    hooks::around_empty(
        &state,
        Hook::UnlinkEmail,
        ctx,
        HookEmail::from(body),
        async |r| {
            Ok(state
                .accounts
                .unlink_email(claims.user_id, &r.email)
                .await?)
        },
    )
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

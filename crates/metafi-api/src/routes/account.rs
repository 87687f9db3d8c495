//! `GET /v2/account` and `PUT /v2/account`.

use axum::Json;
use axum::extract::State;
use metafi_core::Hook;
use metafi_proto::api::{Account, UpdateAccountRequest};

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn get(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
) -> Result<Json<Account>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_without_input(&state, Hook::GetAccount, ctx, async || {
        let mut account = state.accounts.account(claims.user_id).await?;
        account.user.online = state.users.is_online(claims.user_id);
        Ok(account)
    })
    .await
}

pub(super) async fn update(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<UpdateAccountRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = hooks::UpdateAccountRequest {
        username: body.username,
        display_name: body.display_name,
        avatar_url: body.avatar_url,
        lang_tag: body.lang_tag,
        location: body.location,
        timezone: body.timezone,
    };
    hooks::around_empty(&state, Hook::UpdateAccount, ctx, request, async |request| {
        let update = UpdateAccountRequest {
            username: request.username,
            display_name: request.display_name,
            avatar_url: request.avatar_url,
            lang_tag: request.lang_tag,
            location: request.location,
            timezone: request.timezone,
        };
        state
            .accounts
            .update_account(claims.user_id, update)
            .await?;
        Ok(())
    })
    .await
}

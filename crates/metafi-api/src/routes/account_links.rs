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
    let ctx = || hooks::signed_in(&claims, &client);
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

/// A link or unlink: the body is the account message, hooks see it as `$request`, and
/// `|accounts, user, request| …` serves it for the signed-in user.
macro_rules! link_route {
    ($name:ident, $body:ty => $request:ty, $hook:ident,
     |$accounts:ident, $user:ident, $r:ident| $serve:expr) => {
        pub(super) async fn $name(
            State(state): State<ApiState>,
            SessionAuth(claims): SessionAuth,
            client: ClientAddress,
            JsonBody(body): JsonBody<$body>,
        ) -> Result<Json<Value>, ApiError> {
            let ctx = || hooks::signed_in(&claims, &client);
            let ($accounts, $user) = (&state.accounts, claims.user_id);
            let request = <$request>::from(body);
            hooks::around_empty(&state, Hook::$hook, ctx, request, async |$r| {
                Ok($serve.await?)
            })
            .await
        }
    };
}

link_route!(link_device, AccountDevice => AccountId, LinkDevice,
    |accounts, user, r| accounts.link_device(user, &r.id));
link_route!(link_custom, AccountCustom => AccountId, LinkCustom,
    |accounts, user, r| accounts.link_custom(user, &r.id));
link_route!(link_email, AccountEmail => HookEmail, LinkEmail,
    |accounts, user, r| accounts.link_email(user, &r.email, &r.password));
link_route!(unlink_device, AccountDevice => AccountId, UnlinkDevice,
    |accounts, user, r| accounts.unlink_device(user, &r.id));
link_route!(unlink_custom, AccountCustom => AccountId, UnlinkCustom,
    |accounts, user, r| accounts.unlink_custom(user, &r.id));
link_route!(unlink_email, AccountEmail => HookEmail, UnlinkEmail,
    |accounts, user, r| accounts.unlink_email(user, &r.email));

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

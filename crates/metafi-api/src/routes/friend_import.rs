//! `POST /v2/friend/facebook` and `POST /v2/friend/steam`: the caller's Facebook or Steam
//! friends who play become their friends (`?reset=true` first removes their relationships but
//! blocks), as Nakama's `ImportFacebookFriends` / `ImportSteamFriends`. The rules are in
//! `SocialSignIn::import_*_friends`; this reads the request and runs the hooks.

use axum::extract::State;
use axum::http::Uri;
use axum::routing::post;
use axum::{Json, Router};
use metafi_core::Hook;
use metafi_core::friends::Actor;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json_;

use crate::body::{JsonBody, query_pairs};
use crate::client_address::ClientAddress;
use crate::hooks::{self, lenient};
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/friend/facebook", post(import_facebook))
        .route("/v2/friend/steam", post(import_steam))
}

/// `ImportFacebookFriendsRequest` / `ImportSteamFriendsRequest`, as hooks see them: the
/// account is the body, `reset` a query parameter.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ImportFriendsRequest {
    account: ImportAccount,
    reset: Option<bool>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ImportAccount {
    token: String,
    #[serde(deserialize_with = "lenient")]
    vars: std::collections::HashMap<String, String>,
}

fn import_request(uri: &Uri, account: ImportAccount) -> Result<ImportFriendsRequest, ApiError> {
    let mut reset = None;
    for (name, value) in query_pairs(uri.query().unwrap_or_default())? {
        if name == "reset" {
            reset = crate::body::parse_bool("reset", Some(&value))?;
        }
    }
    Ok(ImportFriendsRequest { account, reset })
}

#[derive(Clone, Copy)]
enum Source {
    Facebook,
    Steam,
}

async fn import_facebook(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
    JsonBody(account): JsonBody<ImportAccount>,
) -> Result<Json<Json_>, ApiError> {
    let request = import_request(&uri, account)?;
    import(&state, &claims, client, Source::Facebook, request).await
}

async fn import_steam(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
    JsonBody(account): JsonBody<ImportAccount>,
) -> Result<Json<Json_>, ApiError> {
    let request = import_request(&uri, account)?;
    import(&state, &claims, client, Source::Steam, request).await
}

async fn import(
    state: &ApiState,
    claims: &metafi_core::SessionClaims,
    client: ClientAddress,
    source: Source,
    request: ImportFriendsRequest,
) -> Result<Json<Json_>, ApiError> {
    let hook = match source {
        Source::Facebook => Hook::ImportFacebookFriends,
        Source::Steam => Hook::ImportSteamFriends,
    };
    let ctx = || hooks::signed_in(claims, &client);
    let request = hooks::before(state, hook, ctx, request).await?;
    let kept = hooks::keep_for_after(state, hook, &request);
    let actor = Actor {
        id: claims.user_id,
        username: claims.username.clone(),
    };
    let token = &request.account.token;
    let reset = request.reset.unwrap_or(false);
    match source {
        Source::Facebook => {
            state
                .social
                .import_facebook_friends(&actor, token, reset)
                .await?
        }
        Source::Steam => {
            state
                .social
                .import_steam_friends(&actor, token, reset)
                .await?
        }
    }
    // Nakama's after hooks of these calls receive only the request.
    hooks::after::<()>(state, hook, ctx, None, kept).await;
    Ok(Json(serde_json::json!({})))
}

//! Social sign-in over REST, as Nakama's gateway serves it:
//! `POST /v2/account/authenticate/{apple,facebook,facebookinstantgame,gamecenter,google,steam}`
//! (`?create=&username=`, and `&sync=` for Facebook and Steam), and
//! `POST /v2/account/link/…` and `/v2/account/unlink/…` for the same six providers. Each runs
//! its before/after hooks; the rules are [`metafi_core::SocialSignIn`]'s.
//!
//! `sync` imports the user's Facebook or Steam friends (`SocialSignIn::authenticate_and_sync`,
//! `link_and_sync`), as Nakama: off unless set on sign-in, on unless `false` on link.

use std::collections::HashMap;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use metafi_core::{Credential, GameCenterProof, Hook};
use metafi_proto::api::{
    AccountApple, AccountFacebook, AccountFacebookInstantGame, AccountGameCenter, AccountGoogle,
    AccountSteam, LinkSteamRequest,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::body::{JsonBody, QueryParams, parse_bool};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::routes::session::SessionAnswer;
use crate::{ApiError, ApiState, ServerKeyAuth, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/account/authenticate/apple", post(authenticate_apple))
        .route(
            "/v2/account/authenticate/facebook",
            post(authenticate_facebook),
        )
        .route(
            "/v2/account/authenticate/facebookinstantgame",
            post(authenticate_instant_game),
        )
        .route(
            "/v2/account/authenticate/gamecenter",
            post(authenticate_game_center),
        )
        .route("/v2/account/authenticate/google", post(authenticate_google))
        .route("/v2/account/authenticate/steam", post(authenticate_steam))
        .route("/v2/account/link/apple", post(link_apple))
        .route("/v2/account/link/facebook", post(link_facebook))
        .route(
            "/v2/account/link/facebookinstantgame",
            post(link_instant_game),
        )
        .route("/v2/account/link/gamecenter", post(link_game_center))
        .route("/v2/account/link/google", post(link_google))
        .route("/v2/account/link/steam", post(link_steam))
        .route("/v2/account/unlink/apple", post(unlink_apple))
        .route("/v2/account/unlink/facebook", post(unlink_facebook))
        .route(
            "/v2/account/unlink/facebookinstantgame",
            post(unlink_instant_game),
        )
        .route("/v2/account/unlink/gamecenter", post(unlink_game_center))
        .route("/v2/account/unlink/google", post(unlink_google))
        .route("/v2/account/unlink/steam", post(unlink_steam))
}

/// The query of a social sign-in.
#[derive(Debug, Deserialize)]
struct AuthQuery {
    create: Option<String>,
    username: Option<String>,
    sync: Option<String>,
}

/// `Authenticate<Provider>Request` as hooks see it (`sync` only for Facebook and Steam).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct AuthenticateRequest<A> {
    account: A,
    create: Option<bool>,
    username: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sync: Option<bool>,
}

/// `LinkFacebookRequest` as hooks see it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct LinkFacebookRequest {
    account: AccountFacebook,
    sync: Option<bool>,
}

/// A provider's credential and session variables.
trait SocialAccount: crate::hooks::Message + DeserializeOwned + Default {
    fn credential(&self) -> Credential;
    fn vars(self) -> HashMap<String, String>;
}

macro_rules! token_account {
    ($account:ty, $variant:ident) => {
        impl SocialAccount for $account {
            fn credential(&self) -> Credential {
                Credential::$variant {
                    token: self.token.clone(),
                }
            }
            fn vars(self) -> HashMap<String, String> {
                self.vars
            }
        }
    };
}

token_account!(AccountApple, Apple);
token_account!(AccountFacebook, Facebook);
token_account!(AccountGoogle, Google);
token_account!(AccountSteam, Steam);

impl SocialAccount for AccountFacebookInstantGame {
    fn credential(&self) -> Credential {
        Credential::FacebookInstantGame {
            signed_player_info: self.signed_player_info.clone(),
        }
    }
    fn vars(self) -> HashMap<String, String> {
        self.vars
    }
}

impl SocialAccount for AccountGameCenter {
    fn credential(&self) -> Credential {
        Credential::GameCenter(GameCenterProof {
            player_id: self.player_id.clone(),
            bundle_id: self.bundle_id.clone(),
            timestamp_seconds: self.timestamp_seconds,
            salt: self.salt.clone(),
            signature: self.signature.clone(),
            public_key_url: self.public_key_url.clone(),
        })
    }
    fn vars(self) -> HashMap<String, String> {
        self.vars
    }
}

/// Signs in with a provider's credential: the before hook (which may change or drop the
/// request), the sign-in, a session, the after hook with it.
async fn sign_in<A: SocialAccount>(
    state: ApiState,
    client: ClientAddress,
    hook: Hook,
    query: AuthQuery,
    account: A,
    with_sync: bool,
) -> Result<SessionAnswer, ApiError> {
    let sync = if with_sync {
        parse_bool("sync", query.sync.as_deref())?
    } else {
        None
    };
    let request = AuthenticateRequest {
        account,
        create: parse_bool("create", query.create.as_deref())?,
        username: query.username.unwrap_or_default(),
        sync,
    };
    super::authenticate::around_sign_in(&state, &client, hook, request, async |request| {
        let credential = request.account.credential();
        let username = Some(request.username).filter(|u| !u.is_empty());
        let outcome = state
            .social
            .authenticate_and_sync(
                credential,
                username,
                request.create.unwrap_or(true),
                client.ip,
                request.sync.unwrap_or(false),
            )
            .await?;
        Ok(state.sessions.issue_with_claims(
            outcome.user_id,
            &outcome.username,
            request.account.vars(),
            outcome.created,
        )?)
    })
    .await
}

/// Links (`unlink` false) or unlinks a provider's credential for the signed-in user, around
/// the call's hooks. `request` is what hooks see; `account` picks the credential from it and
/// whether a link imports the provider's friends (`sync`: Facebook and Steam).
async fn relink<R, A>(
    state: ApiState,
    claims: metafi_core::SessionClaims,
    client: ClientAddress,
    hook: Hook,
    request: R,
    account: impl FnOnce(&R) -> (&A, bool),
    unlink: bool,
) -> Result<Json<serde_json::Value>, ApiError>
where
    R: crate::hooks::Message + DeserializeOwned,
    A: SocialAccount,
{
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(&state, hook, ctx, request, async |request| {
        let (account, sync) = account(&request);
        let credential = account.credential();
        if unlink {
            state.social.unlink(claims.user_id, credential).await?;
        } else {
            let actor = metafi_core::friends::Actor {
                id: claims.user_id,
                username: claims.username.clone(),
            };
            state.social.link_and_sync(&actor, credential, sync).await?;
        }
        Ok(())
    })
    .await
}

macro_rules! authenticate_route {
    ($name:ident, $account:ty, $hook:ident, $sync:expr) => {
        async fn $name(
            State(state): State<ApiState>,
            _key: ServerKeyAuth,
            client: ClientAddress,
            QueryParams(query): QueryParams<AuthQuery>,
            JsonBody(account): JsonBody<$account>,
        ) -> Result<SessionAnswer, ApiError> {
            sign_in(state, client, Hook::$hook, query, account, $sync).await
        }
    };
}

authenticate_route!(authenticate_apple, AccountApple, AuthenticateApple, false);
authenticate_route!(
    authenticate_facebook,
    AccountFacebook,
    AuthenticateFacebook,
    true
);
authenticate_route!(
    authenticate_instant_game,
    AccountFacebookInstantGame,
    AuthenticateFacebookInstantGame,
    false
);
authenticate_route!(
    authenticate_game_center,
    AccountGameCenter,
    AuthenticateGameCenter,
    false
);
authenticate_route!(
    authenticate_google,
    AccountGoogle,
    AuthenticateGoogle,
    false
);
authenticate_route!(authenticate_steam, AccountSteam, AuthenticateSteam, true);

/// A link or unlink whose body is the provider's account message itself.
macro_rules! account_route {
    ($name:ident, $account:ty, $hook:ident, $unlink:expr) => {
        async fn $name(
            State(state): State<ApiState>,
            SessionAuth(claims): SessionAuth,
            client: ClientAddress,
            JsonBody(account): JsonBody<$account>,
        ) -> Result<Json<serde_json::Value>, ApiError> {
            relink(
                state,
                claims,
                client,
                Hook::$hook,
                account,
                |a: &$account| (a, false),
                $unlink,
            )
            .await
        }
    };
}

account_route!(link_apple, AccountApple, LinkApple, false);
account_route!(
    link_instant_game,
    AccountFacebookInstantGame,
    LinkFacebookInstantGame,
    false
);
account_route!(link_game_center, AccountGameCenter, LinkGameCenter, false);
account_route!(link_google, AccountGoogle, LinkGoogle, false);
account_route!(unlink_apple, AccountApple, UnlinkApple, true);
account_route!(unlink_facebook, AccountFacebook, UnlinkFacebook, true);
account_route!(
    unlink_instant_game,
    AccountFacebookInstantGame,
    UnlinkFacebookInstantGame,
    true
);
account_route!(
    unlink_game_center,
    AccountGameCenter,
    UnlinkGameCenter,
    true
);
account_route!(unlink_google, AccountGoogle, UnlinkGoogle, true);
account_route!(unlink_steam, AccountSteam, UnlinkSteam, true);

#[derive(Debug, Deserialize)]
struct SyncQuery {
    sync: Option<String>,
}

/// `POST /v2/account/link/facebook?sync=`: the body is the account, `sync` a query parameter.
async fn link_facebook(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<SyncQuery>,
    JsonBody(account): JsonBody<AccountFacebook>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = LinkFacebookRequest {
        account,
        sync: parse_bool("sync", query.sync.as_deref())?,
    };
    relink(
        state,
        claims,
        client,
        Hook::LinkFacebook,
        request,
        // Nakama imports unless `sync` is false.
        |r: &LinkFacebookRequest| (&r.account, r.sync != Some(false)),
        false,
    )
    .await
}

/// `POST /v2/account/link/steam`: the body is the whole `LinkSteamRequest`.
async fn link_steam(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(request): JsonBody<LinkSteamRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    relink(
        state,
        claims,
        client,
        Hook::LinkSteam,
        request,
        |r: &LinkSteamRequest| (&r.account, r.sync != Some(false)),
        false,
    )
    .await
}

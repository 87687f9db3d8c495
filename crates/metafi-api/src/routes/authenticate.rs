//! `POST /v2/account/authenticate/{device,custom,email}?create=&username=`.

use axum::extract::State;
use metafi_core::{Hook, Identity, SessionClaims};
use metafi_proto::api::{AccountCustom, AccountDevice, AccountEmail, Session};
use serde::Deserialize;

use crate::body::{JsonBody, QueryParams, parse_bool};
use crate::client_address::ClientAddress;
use crate::hooks::{self, AccountId, AuthenticateRequest};
use crate::routes::session::SessionAnswer;
use crate::{ApiError, ApiState, ServerKeyAuth};

/// The query parameters every authenticate call takes.
#[derive(Debug, Deserialize)]
pub(super) struct AuthQuery {
    create: Option<String>,
    username: Option<String>,
}

impl AuthQuery {
    /// The request hooks see: `account` with the query's `create` and `username`.
    fn request<A>(self, account: A) -> Result<AuthenticateRequest<A>, ApiError> {
        Ok(AuthenticateRequest {
            account,
            create: parse_bool("create", self.create.as_deref())?,
            username: self.username.unwrap_or_default(),
        })
    }
}

pub(super) async fn device(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<SessionAnswer, ApiError> {
    let request = query.request(AccountId::from(body))?;
    hooked_sign_in(
        &state,
        client,
        Hook::AuthenticateDevice,
        request,
        |account| (Identity::Device { id: account.id }, account.vars),
    )
    .await
}

pub(super) async fn custom(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<SessionAnswer, ApiError> {
    let request = query.request(AccountId::from(body))?;
    hooked_sign_in(
        &state,
        client,
        Hook::AuthenticateCustom,
        request,
        |account| (Identity::Custom { id: account.id }, account.vars),
    )
    .await
}

pub(super) async fn email(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<SessionAnswer, ApiError> {
    let request = query.request(hooks::AccountEmail::from(body))?;
    hooked_sign_in(
        &state,
        client,
        Hook::AuthenticateEmail,
        request,
        |account| {
            let identity = Identity::Email {
                email: account.email,
                password: account.password,
            };
            (identity, account.vars)
        },
    )
    .await
}

/// What every sign-in route shares: the before hook (which may change or drop the request),
/// the sign-in with the identity the request now names, the after hook with the session.
async fn hooked_sign_in<A>(
    state: &ApiState,
    client: ClientAddress,
    hook: Hook,
    request: AuthenticateRequest<A>,
    identity: impl FnOnce(A) -> (Identity, std::collections::HashMap<String, String>),
) -> Result<SessionAnswer, ApiError>
where
    A: hooks::Message + serde::de::DeserializeOwned + Default,
{
    around_sign_in(state, &client, hook, request, async |request| {
        let AuthenticateRequest {
            account,
            create,
            username,
        } = request;
        let (identity, vars) = identity(account);
        let username = (!username.is_empty()).then_some(username);
        let outcome = state
            .accounts
            .authenticate(identity, username, create.unwrap_or(true), client.ip)
            .await?;
        Ok(state.sessions.issue_with_claims(
            outcome.user_id,
            &outcome.username,
            vars,
            outcome.created,
        )?)
    })
    .await
}

/// A sign-in between its hooks: the before hook runs with no user (the caller has none yet),
/// the after hook as the new session's user — its id, name, vars and the token's expiry, as
/// Nakama's `api_authenticate.go` passes them (no session id: a REST call has no socket).
pub(super) async fn around_sign_in<T>(
    state: &ApiState,
    client: &ClientAddress,
    hook: Hook,
    request: T,
    sign_in: impl AsyncFnOnce(T) -> Result<(Session, SessionClaims), ApiError>,
) -> Result<SessionAnswer, ApiError>
where
    T: hooks::Message + serde::de::DeserializeOwned,
{
    let request = hooks::before(state, hook, || hooks::anonymous(client), request).await?;
    let kept = hooks::keep_for_after(state, hook, &request);
    let (session, claims) = sign_in(request).await?;
    let ctx = || hooks::signed_in(&claims, client);
    hooks::after(state, hook, ctx, Some(&session), kept).await;
    Ok(SessionAnswer(session))
}

//! `POST /v2/account/authenticate/{device,custom,email}?create=&username=`.

use axum::Json;
use axum::extract::State;
use metafi_core::Identity;
use metafi_proto::api::{AccountCustom, AccountDevice, AccountEmail, Session};
use serde::Deserialize;

use crate::body::{JsonBody, QueryParams, parse_bool};
use crate::client_address::ClientAddress;
use crate::{ApiError, ApiState, ServerKeyAuth};

/// The query parameters every authenticate call takes.
#[derive(Debug, Deserialize)]
pub(super) struct AuthQuery {
    create: Option<String>,
    username: Option<String>,
}

impl AuthQuery {
    /// Nakama creates the account unless `create=false` is given.
    fn create(&self) -> Result<bool, ApiError> {
        Ok(parse_bool("create", self.create.as_deref())?.unwrap_or(true))
    }
}

pub(super) async fn device(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountDevice>,
) -> Result<Json<Session>, ApiError> {
    sign_in(
        &state,
        client,
        Identity::Device { id: body.id },
        query,
        body.vars,
    )
    .await
}

pub(super) async fn custom(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountCustom>,
) -> Result<Json<Session>, ApiError> {
    sign_in(
        &state,
        client,
        Identity::Custom { id: body.id },
        query,
        body.vars,
    )
    .await
}

pub(super) async fn email(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<AuthQuery>,
    JsonBody(body): JsonBody<AccountEmail>,
) -> Result<Json<Session>, ApiError> {
    let identity = Identity::Email {
        email: body.email,
        password: body.password,
    };
    sign_in(&state, client, identity, query, body.vars).await
}

async fn sign_in(
    state: &ApiState,
    client: ClientAddress,
    identity: Identity,
    query: AuthQuery,
    vars: std::collections::HashMap<String, String>,
) -> Result<Json<Session>, ApiError> {
    let create = query.create()?;
    let outcome = state
        .accounts
        .authenticate(identity, query.username, create, client.0)
        .await?;
    let session =
        state
            .sessions
            .issue(outcome.user_id, &outcome.username, vars, outcome.created)?;
    Ok(Json(session))
}

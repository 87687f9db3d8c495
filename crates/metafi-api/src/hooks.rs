//! Before and after hooks around the REST calls, with Nakama's semantics
//! (`server/api_*.go`): the before hook sees the request message (proto field names) and
//! may change it, reject the call with its error, or return nothing, which drops the call with
//! `NotFound` "Requested resource was not found."; the after hook sees the answer and the
//! request once the call succeeded, and cannot change the answer.
//!
//! A call without hooks pays one array lookup per hook kind: the request message is built as
//! JSON only when a hook is registered ([`before`], [`keep_for_after`]).
//!
//! The request messages are mirrored here with every field present (JavaScript modules see
//! unpopulated fields, as with Nakama); what a hook returns is read leniently (an empty Lua
//! table may stand for an empty list or map).

use std::collections::HashMap;

use metafi_core::{Hook, HookValue, RpcContext, RpcUser, SessionClaims};
use metafi_proto::Code;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value as Json;
use uuid::Uuid;

use crate::client_address::ClientAddress;
use crate::{ApiError, ApiState};

/// The context of a hook on a server-key call (no user yet).
pub(crate) fn anonymous(client: &ClientAddress) -> RpcContext {
    RpcContext {
        client_ip: client.ip,
        trace_id: Some(client.trace_id()),
        ..RpcContext::default()
    }
}

/// The context of a hook on a session call, and of a sign-in's after hook (the new session's
/// user, as Nakama's `api_authenticate.go` passes it).
pub(crate) fn signed_in(claims: &SessionClaims, client: &ClientAddress) -> RpcContext {
    RpcContext {
        user: Some(RpcUser {
            user_id: claims.user_id,
            username: claims.username.clone(),
            // HTTP calls have no socket session, as with Nakama.
            session_id: Uuid::nil(),
            vars: claims.vars.clone(),
            expires_at: claims.expires_at,
        }),
        ..anonymous(client)
    }
}

/// Runs the before hook of `hook`, if any, on `input`: the request to serve, or the client's
/// error (the hook's, or NotFound when the hook dropped the call).
pub(crate) async fn before<T>(
    state: &ApiState,
    hook: Hook,
    ctx: impl FnOnce() -> RpcContext,
    input: T,
) -> Result<T, ApiError>
where
    T: Message + DeserializeOwned,
{
    if !state.hooks.has_before(hook) {
        return Ok(input);
    }
    // The struct itself goes to the hook: an engine serializes it straight into its values,
    // and may read the hook's result straight into a new `T`.
    let input = HookValue::message(input);
    match state.hooks.before_value(hook, ctx(), Some(input)).await? {
        Some(changed) => Ok(changed.into_message(hook)?),
        None => Err(dropped(hook)),
    }
}

/// Runs the before hook of a call without input (`GetAccount`): only its error matters.
pub(crate) async fn before_without_input(
    state: &ApiState,
    hook: Hook,
    ctx: impl FnOnce() -> RpcContext,
) -> Result<(), ApiError> {
    if state.hooks.has_before(hook) {
        state.hooks.before(hook, ctx(), None).await?;
    }
    Ok(())
}

fn dropped(hook: Hook) -> ApiError {
    tracing::warn!(resource = hook.name(), "Intercepted a disabled resource.");
    ApiError::new(Code::NotFound, "Requested resource was not found.")
}

/// What a hook may be handed: a request or answer the engines serialize themselves.
pub(crate) trait Message: Serialize + Clone + Send + Sync + 'static {}

impl<T: Serialize + Clone + Send + Sync + 'static> Message for T {}

/// The request as the after hook will see it (a copy, as the call consumes the request), kept
/// only when an after hook is registered.
pub(crate) fn keep_for_after<T: Message>(
    state: &ApiState,
    hook: Hook,
    input: &T,
) -> Option<HookValue> {
    if !state.hooks.has_after(hook) {
        return None;
    }
    Some(HookValue::message(input.clone()))
}

/// Runs the after hook of `hook`, if any, with (a copy of) the answer and the kept request.
pub(crate) async fn after<O: Message>(
    state: &ApiState,
    hook: Hook,
    ctx: impl FnOnce() -> RpcContext,
    output: Option<&O>,
    input: Option<HookValue>,
) {
    if !state.hooks.has_after(hook) {
        return;
    }
    let output = output.map(|o| HookValue::message(o.clone()));
    state.hooks.after_value(hook, ctx(), output, input).await;
}

/// Serves a call between its hooks: the before hook sees `request` (and may change it, reject
/// the call or drop it), `serve` answers the request as it then stands, and the after hook
/// sees that answer and the request; a call that fails skips the after hook.
pub(crate) async fn around<T, O>(
    state: &ApiState,
    hook: Hook,
    ctx: impl Fn() -> RpcContext,
    request: T,
    serve: impl AsyncFnOnce(T) -> Result<O, ApiError>,
) -> Result<axum::Json<O>, ApiError>
where
    T: Message + DeserializeOwned,
    O: Message,
{
    let request = before(state, hook, &ctx, request).await?;
    let kept = keep_for_after(state, hook, &request);
    let answer = serve(request).await?;
    after(state, hook, &ctx, Some(&answer), kept).await;
    Ok(axum::Json(answer))
}

/// [`around`] for a call that answers the empty message `{}`: its after hook sees only the
/// request, as Nakama's after hooks of such calls do.
pub(crate) async fn around_empty<T>(
    state: &ApiState,
    hook: Hook,
    ctx: impl Fn() -> RpcContext,
    request: T,
    serve: impl AsyncFnOnce(T) -> Result<(), ApiError>,
) -> Result<axum::Json<Json>, ApiError>
where
    T: Message + DeserializeOwned,
{
    let request = before(state, hook, &ctx, request).await?;
    let kept = keep_for_after(state, hook, &request);
    serve(request).await?;
    after::<()>(state, hook, &ctx, None, kept).await;
    Ok(empty())
}

/// [`around`] for a call without input (`GetAccount`): its hooks see no request.
pub(crate) async fn around_without_input<O: Message>(
    state: &ApiState,
    hook: Hook,
    ctx: impl Fn() -> RpcContext,
    serve: impl AsyncFnOnce() -> Result<O, ApiError>,
) -> Result<axum::Json<O>, ApiError> {
    before_without_input(state, hook, &ctx).await?;
    let answer = serve().await?;
    after(state, hook, &ctx, Some(&answer), None).await;
    Ok(axum::Json(answer))
}

/// The empty message `{}` that calls without a result answer.
pub(crate) fn empty() -> axum::Json<Json> {
    axum::Json(Json::Object(serde_json::Map::new()))
}

/// `null`, `[]` and `{}` are all the empty value: a Lua table cannot tell an empty list from
/// an empty map, and protobuf JSON writes unset fields as `null`.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Json::deserialize(deserializer)?;
    match &value {
        Json::Null => Ok(T::default()),
        Json::Array(items) if items.is_empty() => Ok(T::default()),
        Json::Object(map) if map.is_empty() => Ok(T::default()),
        _ => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

/// `AccountDevice` and `AccountCustom`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct AccountId {
    pub(crate) id: String,
    #[serde(deserialize_with = "lenient")]
    pub(crate) vars: HashMap<String, String>,
}

/// `AccountEmail`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct AccountEmail {
    pub(crate) email: String,
    pub(crate) password: String,
    #[serde(deserialize_with = "lenient")]
    pub(crate) vars: HashMap<String, String>,
}

impl From<metafi_proto::api::AccountDevice> for AccountId {
    fn from(account: metafi_proto::api::AccountDevice) -> AccountId {
        AccountId {
            id: account.id,
            vars: account.vars,
        }
    }
}

impl From<metafi_proto::api::AccountCustom> for AccountId {
    fn from(account: metafi_proto::api::AccountCustom) -> AccountId {
        AccountId {
            id: account.id,
            vars: account.vars,
        }
    }
}

impl From<metafi_proto::api::AccountEmail> for AccountEmail {
    fn from(account: metafi_proto::api::AccountEmail) -> AccountEmail {
        AccountEmail {
            email: account.email,
            password: account.password,
            vars: account.vars,
        }
    }
}

/// `AuthenticateDeviceRequest`, `AuthenticateCustomRequest`, `AuthenticateEmailRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct AuthenticateRequest<A> {
    pub(crate) account: A,
    pub(crate) create: Option<bool>,
    pub(crate) username: String,
}

/// `SessionRefreshRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SessionRefreshRequest {
    pub(crate) token: String,
    #[serde(deserialize_with = "lenient")]
    pub(crate) vars: HashMap<String, String>,
}

/// `SessionLogoutRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SessionLogoutRequest {
    pub(crate) token: String,
    pub(crate) refresh_token: String,
}

/// `UpdateAccountRequest` (wrapper fields: `null` when not given).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct UpdateAccountRequest {
    pub(crate) username: Option<String>,
    pub(crate) display_name: Option<String>,
    pub(crate) avatar_url: Option<String>,
    pub(crate) lang_tag: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) timezone: Option<String>,
}

/// `GetUsersRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct GetUsersRequest {
    #[serde(deserialize_with = "lenient")]
    pub(crate) ids: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) usernames: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) facebook_ids: Vec<String>,
}

/// `ListChannelMessagesRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ListChannelMessagesRequest {
    pub(crate) channel_id: String,
    pub(crate) limit: Option<i64>,
    pub(crate) forward: Option<bool>,
    pub(crate) cursor: Option<String>,
}

/// `ListMatchesRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ListMatchesRequest {
    pub(crate) limit: Option<i32>,
    pub(crate) authoritative: Option<bool>,
    pub(crate) label: Option<String>,
    pub(crate) min_size: Option<i32>,
    pub(crate) max_size: Option<i32>,
    pub(crate) query: Option<String>,
}

/// `ReadStorageObjectId`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ReadObjectId {
    pub(crate) collection: String,
    pub(crate) key: String,
    pub(crate) user_id: String,
}

/// `ReadStorageObjectsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ReadStorageObjectsRequest {
    #[serde(deserialize_with = "lenient")]
    pub(crate) object_ids: Vec<ReadObjectId>,
}

/// `WriteStorageObject`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct WriteObject {
    pub(crate) collection: String,
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) version: String,
    pub(crate) permission_read: Option<i32>,
    pub(crate) permission_write: Option<i32>,
}

/// `WriteStorageObjectsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct WriteStorageObjectsRequest {
    #[serde(deserialize_with = "lenient")]
    pub(crate) objects: Vec<WriteObject>,
}

/// `DeleteStorageObjectId`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DeleteObjectId {
    pub(crate) collection: String,
    pub(crate) key: String,
    pub(crate) version: String,
}

/// `DeleteStorageObjectsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DeleteStorageObjectsRequest {
    #[serde(deserialize_with = "lenient")]
    pub(crate) object_ids: Vec<DeleteObjectId>,
}

/// `ListStorageObjectsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ListStorageObjectsRequest {
    pub(crate) user_id: String,
    pub(crate) collection: String,
    pub(crate) limit: Option<i64>,
    pub(crate) cursor: String,
}

/// `ListNotificationsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ListNotificationsRequest {
    pub(crate) limit: Option<i64>,
    pub(crate) cacheable_cursor: String,
}

/// `DeleteNotificationsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DeleteNotificationsRequest {
    #[serde(deserialize_with = "lenient")]
    pub(crate) ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_come_back_from_empty_lua_tables() {
        let request: GetUsersRequest =
            serde_json::from_value(serde_json::json!({"ids": {}, "usernames": ["a"]}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert!(request.ids.is_empty());
        assert_eq!(request.usernames, ["a"]);
        let request: AuthenticateRequest<AccountId> =
            serde_json::from_value(serde_json::json!({"account": {"id": "d", "vars": []}}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(request.account.id, "d");
        assert!(request.account.vars.is_empty());
    }
}

//! Accounts: list and search (by id, username, device id, email or custom id), one account,
//! profile and metadata edits, ban and unban, delete and export. Changes go through the same
//! `Accounts` service as the client API and `nk`, so the same rules hold.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use metafi_api::ApiError;
use metafi_core::CoreError;
use metafi_proto::Code;
use metafi_storage::{AccountUpdate, IdentityRef, User};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::{not_the_system_user, timestamp, user_id};
use crate::auth::{ConsoleSession, Session, empty};
use crate::{ConsoleState, Perm, audit};

const PAGE: usize = 100;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListAccounts {
    /// An id, username, device id, email or custom id; empty lists every account.
    #[serde(default)]
    filter: String,
    /// The last id of the previous page.
    #[serde(default)]
    cursor: String,
}

/// `GET /v2/console/account` (Nakama's `AccountList`: `users`, `total_count`, `next_cursor`).
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    session: Session,
    Query(query): Query<ListAccounts>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let (users, next) = search(&state, &query.filter, &query.cursor).await?;
    Ok(Json(json!({
        "users": users.iter().map(user_json).collect::<Vec<_>>(),
        "total_count": users.len(),
        "next_cursor": next.unwrap_or_default(),
    })))
}

/// Users matching `filter` (each once), or a page of every user after `cursor`.
pub(crate) async fn search(
    state: &ConsoleState,
    filter: &str,
    cursor: &str,
) -> Result<(Vec<User>, Option<String>), ApiError> {
    let store = &state.store;
    let failed = |e| CoreError::storage("searching accounts", e);
    let filter = filter.trim();
    if filter.is_empty() {
        let after = Uuid::parse_str(cursor).unwrap_or_else(|_| Uuid::nil());
        let users = store.users_after(after, PAGE).await.map_err(failed)?;
        let next = (users.len() == PAGE)
            .then(|| users.last().map(|u| u.id.to_string()))
            .flatten();
        return Ok((users, next));
    }
    if filter.contains('\0') {
        return Ok((Vec::new(), None));
    }
    let mut found: Vec<User> = Vec::new();
    if let Ok(id) = Uuid::parse_str(filter) {
        found.extend(store.users_by_id(&[id]).await.map_err(failed)?);
    }
    found.extend(
        store
            .users_by_username(&[filter.to_owned()])
            .await
            .map_err(failed)?,
    );
    let lowered = filter.to_lowercase();
    for identity in [
        IdentityRef::Device(filter),
        IdentityRef::Custom(filter),
        IdentityRef::Email(&lowered),
    ] {
        if let Some(user) = store.find_user(identity).await.map_err(failed)? {
            found.extend(store.users_by_id(&[user.id]).await.map_err(failed)?);
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|u| seen.insert(u.id));
    Ok((found, None))
}

/// A user as the console lists it: the client API's fields and the identities.
pub(crate) fn user_json(user: &User) -> Value {
    json!({
        "id": user.id.to_string(),
        "username": user.username,
        "display_name": user.display_name,
        "avatar_url": user.avatar_url,
        "lang_tag": user.lang_tag,
        "location": user.location,
        "timezone": user.timezone,
        "metadata": user.metadata,
        "email": user.email.clone().unwrap_or_default(),
        "custom_id": user.custom_id.clone().unwrap_or_default(),
        "create_time": timestamp(user.create_time_ms),
        "update_time": timestamp(user.update_time_ms),
        "disable_time": user.disable_time_ms.map(timestamp).unwrap_or_default(),
    })
}

/// `GET /v2/console/account/{id}`: Nakama's console `Account` (`account`, `disable_time`).
pub(crate) async fn get(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(account_json(&state, user_id(&id)?).await?))
}

pub(crate) async fn account_json(state: &ConsoleState, id: Uuid) -> Result<Value, ApiError> {
    let account = state.api.accounts.account(id).await?;
    // Nakama writes an unset timestamp as `null`, not as empty text.
    let disable_time = match account.disable_time.as_str() {
        "" => Value::Null,
        time => Value::String(time.to_owned()),
    };
    Ok(json!({
        "account": serde_json::to_value(&account).unwrap_or(Value::Null),
        "disable_time": disable_time,
    }))
}

/// Nakama's `UpdateAccountRequest`. Its `email`, `custom_id`, `password` and `device_ids` are
/// not served: given, they refuse the request (nothing changes). Other unknown fields are
/// ignored, as Nakama's gateway ignores them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct UpdateAccount {
    email: Option<Value>,
    custom_id: Option<Value>,
    password: Option<Value>,
    device_ids: Option<Value>,
    #[serde(default)]
    id: Option<String>,
    username: Option<String>,
    display_name: Option<String>,
    avatar_url: Option<String>,
    lang_tag: Option<String>,
    location: Option<String>,
    timezone: Option<String>,
    /// JSON object text; empty leaves the metadata as it is (Nakama's).
    metadata: Option<String>,
    /// JSON object text of integer balances, replacing the wallet outright (no ledger row);
    /// empty leaves it as it is (Nakama's).
    wallet: Option<String>,
}

/// `POST /v2/console/account/{id}`: profile fields, metadata (a JSON object) and the wallet,
/// with Nakama's console rules, in one update (a refused field changes nothing).
pub(crate) async fn update(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Edit)?;
    let id = user_id(&id)?;
    not_the_system_user(id, "update")?;
    let request: UpdateAccount =
        serde_json::from_slice(if bytes.is_empty() { b"{}" } else { &bytes }).map_err(|e| {
            ApiError::new(Code::InvalidArgument, format!("Invalid request body: {e}."))
        })?;
    let _ = request.id;
    let unserved = [
        ("email", &request.email),
        ("custom_id", &request.custom_id),
        ("password", &request.password),
        ("device_ids", &request.device_ids),
    ];
    if let Some((field, _)) = unserved.iter().find(|(_, v)| v.is_some()) {
        return Err(ApiError::new(
            Code::InvalidArgument,
            format!(
                "The console does not change `{field}` (it edits username, display_name, avatar_url, lang_tag, location, timezone, metadata and wallet); nothing was changed."
            ),
        ));
    }
    if request.username.as_deref() == Some("") {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Username cannot be empty.",
        ));
    }
    let metadata = request.metadata.filter(|m| !m.is_empty());
    if let Some(metadata) = &metadata
        && serde_json::from_str::<serde_json::Map<String, Value>>(metadata).is_err()
    {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Metadata must be a valid JSON object.",
        ));
    }
    let wallet = match request.wallet.as_deref() {
        None | Some("") => None,
        Some(text) => Some(metafi_core::wallets::parse_wallet(text)?),
    };
    let update = AccountUpdate {
        username: request.username,
        display_name: request.display_name,
        avatar_url: request.avatar_url,
        lang_tag: request.lang_tag,
        location: request.location,
        timezone: request.timezone,
        metadata,
        wallet,
    };
    let detail = json!({
        "username": update.username, "display_name": update.display_name,
        "avatar_url": update.avatar_url, "lang_tag": update.lang_tag,
        "location": update.location, "timezone": update.timezone, "metadata": update.metadata,
        "wallet": update.wallet,
    });
    if !update.is_empty() {
        state
            .api
            .accounts
            .update_account_as_server(id, update)
            .await?;
    }
    audit::record(&state, &session, "account.update", &id.to_string(), detail).await;
    Ok(empty())
}

/// What every change to one account shares (ban, unban, delete, export, a session's
/// disconnect): check the role, parse the id (Nakama's message when it is not one), act, and
/// record the change in the audit log once it succeeded.
pub(crate) async fn on_account<T>(
    state: &ConsoleState,
    session: &ConsoleSession,
    perm: Perm,
    id: &str,
    action: &str,
    act: impl AsyncFnOnce(Uuid) -> Result<(T, Value), ApiError>,
) -> Result<T, ApiError> {
    session.require(perm)?;
    let id = user_id(id)?;
    let (answer, detail) = act(id).await?;
    audit::record(state, session, action, &id.to_string(), detail).await;
    Ok(answer)
}

/// `POST /v2/console/account/{id}/ban`: no more sign-ins; every session ends, every socket
/// closes.
pub(crate) async fn ban(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    on_account(
        &state,
        &session,
        Perm::Edit,
        &id,
        "account.ban",
        async |id| {
            not_the_system_user(id, "ban")?;
            state.api.accounts.stored_account(id).await?;
            state
                .api
                .accounts
                .ban(&state.api.sessions, state.api.sockets.as_ref(), &[id])
                .await?;
            Ok((empty(), json!({})))
        },
    )
    .await
}

/// `POST /v2/console/account/{id}/unban`.
pub(crate) async fn unban(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    on_account(
        &state,
        &session,
        Perm::Edit,
        &id,
        "account.unban",
        async |id| {
            not_the_system_user(id, "unban")?;
            state.api.accounts.stored_account(id).await?;
            state.api.accounts.unban(&[id]).await?;
            Ok((empty(), json!({})))
        },
    )
    .await
}

/// `DELETE /v2/console/account/{id}`: the account and everything that goes with it, as
/// `DELETE /v2/account` deletes it.
pub(crate) async fn delete(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    on_account(
        &state,
        &session,
        Perm::Develop,
        &id,
        "account.delete",
        async |id| {
            let api = &state.api;
            api.accounts
                .delete(&api.sessions, api.sockets.as_ref(), id)
                .await?;
            Ok((empty(), json!({})))
        },
    )
    .await
}

/// `GET /v2/console/account/{id}/export`: Nakama's `AccountExport` (`account`, `objects`).
pub(crate) async fn export(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    on_account(
        &state,
        &session,
        Perm::Develop,
        &id,
        "account.export",
        async |id| {
            let (account, objects) = state.api.accounts.export(id).await?;
            let answer = Json(json!({
                "account": serde_json::to_value(&account).unwrap_or(Value::Null),
                "objects": serde_json::to_value(&objects).unwrap_or(Value::Null),
            }));
            Ok((answer, json!({})))
        },
    )
    .await
}

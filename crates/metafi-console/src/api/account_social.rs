//! An account's live sessions, friends, groups and wallet ledger: Nakama's console paths and
//! shapes (`GetFriends`, `GetGroups`, `GetWalletLedger`), read through the same services as the
//! client API; the sessions (MetaFi's own) from the node's session registry, with a
//! disconnect.

use axum::Json;
use axum::extract::{Path, Query, State};
use metafi_api::ApiError;
use metafi_core::Wallets;
use metafi_proto::Code;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::accounts::on_account;
use crate::api::timestamp;
use crate::auth::{Session, empty};
use crate::{ConsoleState, Perm};

/// Nakama's console text for a path id that is not a user id (these three calls).
fn requires_user_id(text: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text)
        .map_err(|_| ApiError::new(Code::InvalidArgument, "Requires a valid user ID."))
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Cursor {
    #[serde(default)]
    cursor: String,
}

/// `GET /v2/console/account/{id}/friend`: `api.FriendList` (`friends`, `cursor`) — every
/// relationship (friends, invitations both ways, blocks) in state order, 1000 a page
/// (Nakama lists them all at once; `cursor` reads the next page).
pub(crate) async fn friends(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    Query(query): Query<Cursor>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let id = requires_user_id(&id)?;
    let list = state
        .api
        .friends
        .list_for_client(id, None, None, &query.cursor)
        .await?;
    Ok(page(&list, "friends"))
}

/// `GET /v2/console/account/{id}/group`: `api.UserGroupList` (`user_groups` of `group` and
/// `state`, `cursor`), 100 a page.
pub(crate) async fn groups(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    Query(query): Query<Cursor>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let id = requires_user_id(&id)?;
    let list = state
        .api
        .groups
        .user_groups(id, None, Some(100), &query.cursor)
        .await?;
    Ok(page(&list, "user_groups"))
}

/// A page of `list` as Nakama's console writes it: empty lists and cursors present
/// (`"friends": [], "cursor": ""`) where the client API's encoding leaves them out, so a
/// console tool may read them without a check.
fn page(list: &impl serde::Serialize, items: &str) -> Json<Value> {
    let mut value = serde_json::to_value(list).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.entry(items).or_insert_with(|| Value::Array(Vec::new()));
        map.entry("cursor")
            .or_insert_with(|| Value::String(String::new()));
    }
    Json(value)
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LedgerQuery {
    limit: Option<String>,
    #[serde(default)]
    cursor: String,
    after: Option<String>,
    before: Option<String>,
}

/// `GET /v2/console/account/{id}/wallet?limit=&cursor=`: Nakama's `WalletLedgerList`
/// (`items` of `id`, `user_id`, `changeset` and `metadata` as JSON text, `create_time`,
/// `update_time`; `next_cursor`; `prev_cursor`, always empty: pages go one way, newest first).
/// `limit` 1..100 is required, as Nakama's. The `after`/`before` time filters are not served
/// and refused.
pub(crate) async fn wallet(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    Query(query): Query<LedgerQuery>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let id = requires_user_id(&id)?;
    let limit = query
        .limit
        .as_deref()
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| (1..=100).contains(l))
        .ok_or_else(|| {
            ApiError::new(
                Code::InvalidArgument,
                "expects a limit value between 1 and 100",
            )
        })?;
    if query.after.is_some() || query.before.is_some() {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "The after and before filters of the wallet ledger are not served by MetaFi.",
        ));
    }
    let wallets = Wallets::new(state.store.clone(), state.clock.clone());
    let page = wallets.ledger_list(id, limit, &query.cursor).await?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|item| {
            json!({
                "id": item.id.to_string(),
                "user_id": item.user_id.to_string(),
                "changeset": serde_json::to_string(&item.changeset).unwrap_or_default(),
                "metadata": item.metadata,
                "create_time": timestamp(item.create_time_ms),
                "update_time": timestamp(item.update_time_ms),
            })
        })
        .collect();
    Ok(Json(json!({
        "items": items,
        "next_cursor": page.cursor.unwrap_or_default(),
        "prev_cursor": "",
    })))
}

/// `GET /v2/console/account/{id}/session` (MetaFi): the account's live socket sessions on this
/// node (`sessions` of `session_id`, `node`, `start_time`, `client_address`, `expiry_time`,
/// `format`).
pub(crate) async fn sessions(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let id = requires_user_id(&id)?;
    Ok(Json(json!({ "sessions": sessions_json(&state, id) })))
}

pub(crate) fn sessions_json(state: &ConsoleState, user_id: Uuid) -> Vec<Value> {
    state
        .probe
        .sessions_of(user_id)
        .into_iter()
        .map(|s| {
            json!({
                "session_id": s.session_id.to_string(),
                "node": s.node,
                "start_time": timestamp(s.started_ms),
                "client_address": s.client_address.unwrap_or_default(),
                "expiry_time": timestamp(s.expires_at.saturating_mul(1000)),
                "format": s.format,
            })
        })
        .collect()
}

/// `POST /v2/console/account/{id}/session/{session_id}/disconnect` (MetaFi, admin): closes one
/// live session as a server-side disconnect. 404 when this node has no such session of the
/// user.
pub(crate) async fn disconnect(
    State(state): State<ConsoleState>,
    session: Session,
    Path((id, session_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    on_account(
        &state,
        &session,
        Perm::Admin,
        &id,
        "session.disconnect",
        async |id| {
            let session_id = Uuid::parse_str(&session_id)
                .map_err(|_| ApiError::new(Code::InvalidArgument, "Invalid session ID."))?;
            if !state.probe.disconnect(id, session_id) {
                return Err(ApiError::new(Code::NotFound, "Session not found."));
            }
            Ok((empty(), json!({ "session_id": session_id.to_string() })))
        },
    )
    .await
}

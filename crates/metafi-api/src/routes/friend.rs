//! `/v2/friend`: list (`GET`), add (`POST`), delete (`DELETE`), block (`POST …/block`), friends
//! of friends (`GET …/friends`). The Facebook and Steam imports are in `friend_import.rs`.

use axum::extract::State;
use axum::http::Uri;
use axum::routing::{get, post};
use axum::{Json, Router};
use metafi_core::Hook;
use metafi_core::friends::{Actor, Op, Targets};
use metafi_proto::Code;
use metafi_proto::api::{FriendList, FriendsOfFriendsList};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json_;

use crate::body::query_of;
use crate::client_address::ClientAddress;
use crate::hooks::{self, lenient};
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/friend", get(list).post(add).delete(delete))
        .route("/v2/friend/block", post(block))
        .route("/v2/friend/friends", get(friends_of_friends))
}

/// `ListFriendsRequest`, as hooks see it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListFriendsRequest {
    limit: Option<i64>,
    state: Option<i64>,
    cursor: String,
}

/// `ListFriendsOfFriendsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListFriendsOfFriendsRequest {
    limit: Option<i64>,
    cursor: String,
}

/// `AddFriendsRequest`; `DeleteFriendsRequest` and `BlockFriendsRequest` are the same without
/// `metadata`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct FriendsRequest {
    #[serde(deserialize_with = "lenient")]
    ids: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    usernames: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<String>,
}

fn int_param(name: &str, value: &str, message: &str) -> Result<Option<i64>, ApiError> {
    crate::body::int_param(Some(value), || {
        tracing::debug!(name, value, "not an integer");
        ApiError::new(Code::InvalidArgument, message.to_owned())
    })
}

const LIMIT_1000: &str = "Invalid limit - limit must be between 1 and 1000.";
const LIMIT_100: &str = "Invalid limit - limit must be between 1 and 100.";
const STATE: &str = "Invalid state - state must be between 0 and 3.";

async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<FriendList>, ApiError> {
    let mut request = ListFriendsRequest::default();
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "limit" => request.limit = int_param("limit", &value, LIMIT_1000)?,
            "state" => request.state = int_param("state", &value, STATE)?,
            "cursor" => request.cursor = value,
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::ListFriends, ctx, request, async |request| {
        let list = state
            .friends
            .list_for_client(
                claims.user_id,
                request.limit,
                request.state,
                &request.cursor,
            )
            .await?;
        Ok(list)
    })
    .await
}

async fn friends_of_friends(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<FriendsOfFriendsList>, ApiError> {
    let mut request = ListFriendsOfFriendsRequest::default();
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "limit" => request.limit = int_param("limit", &value, LIMIT_100)?,
            "cursor" => request.cursor = value,
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListFriendsOfFriends,
        ctx,
        request,
        async |request| {
            let list = state
                .friends
                .friends_of_friends_for_client(claims.user_id, request.limit, &request.cursor)
                .await?;
            Ok(list)
        },
    )
    .await
}

/// `ids`, `usernames` (repeatable) and, for add, `metadata` from the query string: these calls
/// take no body (Nakama's gateway maps them from the query).
fn friends_request(uri: &Uri, with_metadata: bool) -> Result<FriendsRequest, ApiError> {
    let mut request = FriendsRequest::default();
    for (name, value) in query_of(uri)? {
        match name.as_str() {
            "ids" => request.ids.push(value),
            "usernames" => request.usernames.push(value),
            "metadata" if with_metadata => request.metadata = Some(value),
            _ => {}
        }
    }
    Ok(request)
}

async fn add(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<Json_>, ApiError> {
    change(
        &state,
        &claims,
        client,
        friends_request(&uri, true)?,
        Op::Add,
    )
    .await
}

async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<Json_>, ApiError> {
    change(
        &state,
        &claims,
        client,
        friends_request(&uri, false)?,
        Op::Delete,
    )
    .await
}

async fn block(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<Json_>, ApiError> {
    change(
        &state,
        &claims,
        client,
        friends_request(&uri, false)?,
        Op::Block,
    )
    .await
}

/// Add, delete or block, around their hooks.
async fn change(
    state: &ApiState,
    claims: &metafi_core::SessionClaims,
    client: ClientAddress,
    request: FriendsRequest,
    op: Op,
) -> Result<Json<Json_>, ApiError> {
    let hook = match op {
        Op::Add => Hook::AddFriends,
        Op::Delete => Hook::DeleteFriends,
        Op::Block => Hook::BlockFriends,
    };
    let ctx = || hooks::signed_in(claims, &client);
    // Nakama's after hooks of these calls receive only the request.
    hooks::around_empty(state, hook, ctx, request, async |request| {
        let targets = Targets::rest(
            op,
            claims.user_id,
            &claims.username,
            &request.ids,
            &request.usernames,
        )?;
        let actor = Actor {
            id: claims.user_id,
            username: claims.username.clone(),
        };
        let friends = &state.friends;
        match op {
            Op::Add => {
                let metadata = request.metadata.as_deref().unwrap_or_default();
                friends.add(&actor, targets, metadata).await?;
            }
            Op::Delete => friends.delete(&actor, targets).await?,
            Op::Block => friends.block(&actor, targets).await?,
        }
        Ok(())
    })
    .await
}

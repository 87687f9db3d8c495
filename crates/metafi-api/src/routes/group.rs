//! Groups: `/v2/group…` and `GET /v2/user/{user_id}/group`, with Nakama's paths, hooks and
//! validation texts; the rules are `metafi_core::Groups`'.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::routing::{get, post};
use metafi_core::{Actor, CreateGroup, Hook, ListGroups};
use metafi_proto::Code;
use metafi_proto::api::{
    CreateGroupRequest, Group, GroupList, GroupUserList, UpdateGroupRequest, UserGroupList,
};
use metafi_storage::GroupUpdate;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::body::{JsonBody, PathParams, parse_bool, query_of};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/group", get(list).post(create))
        .route(
            "/v2/group/{group_id}",
            axum::routing::put(update).delete(delete),
        )
        .route("/v2/group/{group_id}/join", post(join))
        .route("/v2/group/{group_id}/leave", post(leave))
        .route("/v2/group/{group_id}/add", post(add))
        .route("/v2/group/{group_id}/kick", post(kick))
        .route("/v2/group/{group_id}/ban", post(ban))
        .route("/v2/group/{group_id}/promote", post(promote))
        .route("/v2/group/{group_id}/demote", post(demote))
        .route("/v2/group/{group_id}/user", get(users))
        .route("/v2/user/{user_id}/group", get(user_groups))
}

/// `UpdateGroupRequest` as hooks see it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct UpdateHookRequest {
    group_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lang_tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    avatar_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    open: Option<bool>,
}

/// `DeleteGroupRequest`, `JoinGroupRequest`, `LeaveGroupRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct GroupIdRequest {
    group_id: String,
}

/// `AddGroupUsersRequest` and its kick, ban, promote and demote siblings.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct GroupUsersRequest {
    group_id: String,
    #[serde(deserialize_with = "hooks::lenient")]
    user_ids: Vec<String>,
}

/// `ListGroupUsersRequest` and `ListUserGroupsRequest` (`user_id` for the latter).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListMembersRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_id: Option<String>,
    limit: Option<i32>,
    state: Option<i32>,
    cursor: String,
}

/// `ListGroupsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListGroupsRequest {
    name: String,
    cursor: String,
    limit: Option<i32>,
    lang_tag: String,
    members: Option<i32>,
    open: Option<bool>,
}

async fn create(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<CreateGroupRequest>,
) -> Result<Json<Group>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::CreateGroup, ctx, body, async |request| {
        let group = state
            .groups
            .create(
                claims.user_id,
                claims.user_id,
                CreateGroup {
                    name: request.name,
                    description: request.description,
                    lang_tag: request.lang_tag,
                    avatar_url: request.avatar_url,
                    metadata: String::new(),
                    open: request.open,
                    max_count: request.max_count,
                },
            )
            .await?;
        Ok(group)
    })
    .await
}

async fn update(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
    JsonBody(body): JsonBody<UpdateGroupRequest>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = UpdateHookRequest {
        group_id,
        name: body.name,
        description: body.description,
        lang_tag: body.lang_tag,
        avatar_url: body.avatar_url,
        open: body.open,
    };
    hooks::around_empty(&state, Hook::UpdateGroup, ctx, request, async |request| {
        let group_id = group_id_of(&request.group_id)?;
        let update = GroupUpdate {
            name: request.name,
            description: request.description,
            lang_tag: request.lang_tag,
            avatar_url: request.avatar_url,
            open: request.open,
            ..GroupUpdate::default()
        };
        state
            .groups
            .update(Actor::User(claims.user_id), group_id, update)
            .await?;
        Ok(())
    })
    .await
}

async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::DeleteGroup,
        ctx,
        GroupIdRequest { group_id },
        async |request| {
            let group_id = group_id_of(&request.group_id)?;
            state
                .groups
                .delete(Actor::User(claims.user_id), group_id)
                .await?;
            Ok(())
        },
    )
    .await
}

async fn join(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::JoinGroup,
        ctx,
        GroupIdRequest { group_id },
        async |request| {
            let group_id = group_id_of(&request.group_id)?;
            state
                .groups
                .join(claims.user_id, &claims.username, group_id)
                .await?;
            Ok(())
        },
    )
    .await
}

async fn leave(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
) -> Result<Json<Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::LeaveGroup,
        ctx,
        GroupIdRequest { group_id },
        async |request| {
            let group_id = group_id_of(&request.group_id)?;
            state.groups.leave(claims.user_id, group_id).await?;
            Ok(())
        },
    )
    .await
}

/// The five calls that act on other users of a group.
#[derive(Debug, Clone, Copy)]
enum UsersAction {
    Add,
    Kick,
    Ban,
    Promote,
    Demote,
}

/// The route of each [`UsersAction`].
macro_rules! users_routes {
    ($($name:ident => $action:ident),* $(,)?) => {$(
        async fn $name(
            state: State<ApiState>,
            auth: SessionAuth,
            client: ClientAddress,
            path: PathParams<String>,
            uri: Uri,
        ) -> Result<Json<Value>, ApiError> {
            act_on_users(UsersAction::$action, state, auth, client, path, uri).await
        }
    )*};
}

users_routes!(add => Add, kick => Kick, ban => Ban, promote => Promote, demote => Demote);

/// `POST /v2/group/{id}/{add,kick,ban,promote,demote}?user_ids=…`.
async fn act_on_users(
    action: UsersAction,
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let hook = match action {
        UsersAction::Add => Hook::AddGroupUsers,
        UsersAction::Kick => Hook::KickGroupUsers,
        UsersAction::Ban => Hook::BanGroupUsers,
        UsersAction::Promote => Hook::PromoteGroupUsers,
        UsersAction::Demote => Hook::DemoteGroupUsers,
    };
    let mut request = GroupUsersRequest {
        group_id,
        user_ids: Vec::new(),
    };
    for (name, value) in query_of(&uri)? {
        if name == "user_ids" {
            request.user_ids.push(value);
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(&state, hook, ctx, request, async |request| {
        let group_id = group_id_of(&request.group_id)?;
        if request.user_ids.is_empty() {
            if matches!(action, UsersAction::Demote) {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "User IDs must be set.",
                ));
            }
            // Nothing to do; the after hook still runs.
            return Ok(());
        }
        let user_ids = request
            .user_ids
            .iter()
            .map(|id| {
                Uuid::parse_str(id)
                    .ok()
                    .filter(|id| !id.is_nil())
                    .ok_or_else(|| {
                        ApiError::new(Code::InvalidArgument, "User ID must be a valid ID.")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let actor = Actor::User(claims.user_id);
        let groups = &state.groups;
        match action {
            UsersAction::Add => groups.add(actor, group_id, &user_ids).await?,
            UsersAction::Kick => groups.kick(actor, group_id, &user_ids).await?,
            UsersAction::Ban => groups.ban(actor, group_id, &user_ids).await?,
            UsersAction::Promote => groups.promote(actor, group_id, &user_ids).await?,
            UsersAction::Demote => groups.demote(actor, group_id, &user_ids).await?,
        }
        Ok(())
    })
    .await
}

async fn users(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(group_id): PathParams<String>,
    uri: Uri,
) -> Result<Json<GroupUserList>, ApiError> {
    let (limit, member_state, cursor) = member_query(&uri)?;
    let ctx = || hooks::signed_in(&claims, &client);
    let request = ListMembersRequest {
        group_id: Some(group_id),
        user_id: None,
        limit,
        state: member_state,
        cursor,
    };
    hooks::around(
        &state,
        Hook::ListGroupUsers,
        ctx,
        request,
        async |request| {
            let group_id = group_id_of(request.group_id.as_deref().unwrap_or_default())?;
            let list = state
                .groups
                .users(group_id, request.state, request.limit, &request.cursor)
                .await?;
            Ok(list)
        },
    )
    .await
}

async fn user_groups(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(user_id): PathParams<String>,
    uri: Uri,
) -> Result<Json<UserGroupList>, ApiError> {
    let (limit, member_state, cursor) = member_query(&uri)?;
    let ctx = || hooks::signed_in(&claims, &client);
    let request = ListMembersRequest {
        group_id: None,
        user_id: Some(user_id),
        limit,
        state: member_state,
        cursor,
    };
    hooks::around(
        &state,
        Hook::ListUserGroups,
        ctx,
        request,
        async |request| {
            let user_id = request.user_id.as_deref().unwrap_or_default();
            if user_id.is_empty() {
                return Err(ApiError::new(Code::InvalidArgument, "User ID must be set."));
            }
            // Nakama's text, though it is about a user id.
            let user_id = Uuid::parse_str(user_id).map_err(|_| {
                ApiError::new(Code::InvalidArgument, "Group ID must be a valid ID.")
            })?;
            let list = state
                .groups
                .user_groups(user_id, request.state, request.limit, &request.cursor)
                .await?;
            Ok(list)
        },
    )
    .await
}

async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<GroupList>, ApiError> {
    let mut request = ListGroupsRequest::default();
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "name" => request.name = value,
            "cursor" => request.cursor = value,
            "lang_tag" => request.lang_tag = value,
            "limit" => request.limit = int_param(&value, "limit")?,
            "members" => request.members = int_param(&value, "members")?,
            "open" => request.open = parse_bool("open", Some(&value))?,
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::ListGroups, ctx, request, async |request| {
        let list = state
            .groups
            .list(ListGroups {
                name: request.name,
                lang_tag: request.lang_tag,
                open: request.open,
                members: request.members,
                limit: request.limit,
                cursor: request.cursor,
            })
            .await?;
        Ok(list)
    })
    .await
}

/// `?limit=`, `?state=`, `?cursor=` of the membership listings.
fn member_query(uri: &Uri) -> Result<(Option<i32>, Option<i32>, String), ApiError> {
    let (mut limit, mut state, mut cursor) = (None, None, String::new());
    for (name, value) in query_of(uri)? {
        match name.as_str() {
            "limit" => limit = int_param(&value, "limit")?,
            "state" => state = int_param(&value, "state")?,
            "cursor" => cursor = value,
            _ => {}
        }
    }
    Ok((limit, state, cursor))
}

/// An `Int32Value` query parameter; empty is unset.
fn int_param(value: &str, name: &str) -> Result<Option<i32>, ApiError> {
    crate::body::int_param(Some(value), || {
        ApiError::new(
            Code::InvalidArgument,
            format!("Invalid {name} value: not an integer."),
        )
    })
}

/// The group id of the path, with Nakama's texts.
fn group_id_of(text: &str) -> Result<Uuid, ApiError> {
    if text.is_empty() {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Group ID must be set.",
        ));
    }
    Uuid::parse_str(text)
        .map_err(|_| ApiError::new(Code::InvalidArgument, "Group ID must be a valid ID."))
}

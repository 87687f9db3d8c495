//! `/v2/storage`: read (`POST`), write (`PUT`), delete (`PUT /delete`) and list (`GET`).

use axum::Json;
use axum::extract::State;
use metafi_core::objects::{DeleteInput, WriteInput, ack_view, object_view};
use metafi_core::{Hook, SessionClaims};
use metafi_proto::Code;
use metafi_proto::api::{
    DeleteStorageObjectsRequest, ReadStorageObjectsRequest, StorageObjectAcks, StorageObjectList,
    StorageObjects, WriteStorageObjectsRequest,
};
use metafi_storage::{Caller, ObjectId};
use serde::Deserialize;
use uuid::Uuid;

use crate::body::{JsonBody, PathParams, QueryParams, int_param};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn read(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<ReadStorageObjectsRequest>,
) -> Result<Json<StorageObjects>, ApiError> {
    let request = hooks::ReadStorageObjectsRequest {
        object_ids: body
            .object_ids
            .into_iter()
            .map(|id| hooks::ReadObjectId {
                collection: id.collection,
                key: id.key,
                user_id: id.user_id,
            })
            .collect(),
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ReadStorageObjects,
        ctx,
        request,
        async |request| {
            let ids = request
                .object_ids
                .into_iter()
                .map(|id| {
                    // No user id reads system objects; the nil id spelled out is refused, as Nakama
                    // does.
                    let user_id = match parse_user_id(&id.user_id)? {
                        Some(user) if user.is_nil() => return Err(invalid_user_id()),
                        Some(user) => user,
                        None => Uuid::nil(),
                    };
                    Ok(ObjectId {
                        user_id,
                        collection: id.collection,
                        key: id.key,
                    })
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            let objects = state
                .objects
                .read(Caller::User(claims.user_id), ids)
                .await?;
            Ok(StorageObjects {
                objects: objects.into_iter().map(object_view).collect(),
            })
        },
    )
    .await
}

pub(super) async fn write(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<WriteStorageObjectsRequest>,
) -> Result<Json<StorageObjectAcks>, ApiError> {
    let request = hooks::WriteStorageObjectsRequest {
        objects: body
            .objects
            .into_iter()
            .map(|o| hooks::WriteObject {
                collection: o.collection,
                key: o.key,
                value: o.value,
                version: o.version,
                permission_read: o.permission_read,
                permission_write: o.permission_write,
            })
            .collect(),
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::WriteStorageObjects,
        ctx,
        request,
        async |request| {
            let inputs = request
                .objects
                .into_iter()
                .map(|o| WriteInput {
                    collection: o.collection,
                    key: o.key,
                    user_id: claims.user_id,
                    value: o.value,
                    version: o.version,
                    permission_read: o.permission_read,
                    permission_write: o.permission_write,
                })
                .collect();
            let acks = state
                .objects
                .write(Caller::User(claims.user_id), inputs)
                .await?;
            Ok(StorageObjectAcks {
                acks: acks.into_iter().map(ack_view).collect(),
            })
        },
    )
    .await
}

pub(super) async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<DeleteStorageObjectsRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = hooks::DeleteStorageObjectsRequest {
        object_ids: body
            .object_ids
            .into_iter()
            .map(|id| hooks::DeleteObjectId {
                collection: id.collection,
                key: id.key,
                version: id.version,
            })
            .collect(),
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::DeleteStorageObjects,
        ctx,
        request,
        async |request| {
            let inputs = request
                .object_ids
                .into_iter()
                .map(|id| DeleteInput {
                    collection: id.collection,
                    key: id.key,
                    user_id: claims.user_id,
                    version: id.version,
                })
                .collect();
            state
                .objects
                .delete(Caller::User(claims.user_id), inputs)
                .await?;
            Ok(())
        },
    )
    .await
}

#[derive(Debug, Deserialize)]
pub(super) struct ListQuery {
    user_id: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /v2/storage/{collection}?user_id=&limit=&cursor=`
pub(super) async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(collection): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    let user_id = query.user_id.clone().unwrap_or_default();
    list_page(&state, &claims, client, collection, user_id, query).await
}

/// `GET /v2/storage/delete?…`: the listing of a collection named "delete".
pub(super) async fn list_delete_collection(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    let user_id = query.user_id.clone().unwrap_or_default();
    list_page(&state, &claims, client, "delete".into(), user_id, query).await
}

/// `GET /v2/storage/{collection}/{user_id}?limit=&cursor=`
pub(super) async fn list_for_user(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams((collection, user_id)): PathParams<(String, String)>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    list_page(&state, &claims, client, collection, user_id, query).await
}

async fn list_page(
    state: &ApiState,
    claims: &SessionClaims,
    client: ClientAddress,
    collection: String,
    user_id: String,
    query: ListQuery,
) -> Result<Json<StorageObjectList>, ApiError> {
    let limit = int_param(query.limit.as_deref(), invalid_limit)?;
    let request = hooks::ListStorageObjectsRequest {
        user_id,
        collection,
        limit,
        cursor: query.cursor.unwrap_or_default(),
    };
    let ctx = || hooks::signed_in(claims, &client);
    hooks::around(
        state,
        Hook::ListStorageObjects,
        ctx,
        request,
        async |request| {
            let owner = parse_user_id(&request.user_id)?;
            // Nakama lists one object when no limit is given.
            let limit = match request.limit {
                None => 1,
                Some(limit) => usize::try_from(limit).map_err(|_| invalid_limit())?,
            };
            let cursor = (!request.cursor.is_empty()).then_some(request.cursor.as_str());
            let page = state
                .objects
                .list(
                    Caller::User(claims.user_id),
                    &request.collection,
                    owner,
                    limit,
                    cursor,
                )
                .await?;
            Ok(StorageObjectList {
                objects: page.objects.into_iter().map(object_view).collect(),
                cursor: page.cursor.unwrap_or_default(),
            })
        },
    )
    .await
}

fn invalid_limit() -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        "Invalid limit - limit must be between 1 and 100.",
    )
}

/// An optional user id: empty means none; anything else must be a UUID.
fn parse_user_id(text: &str) -> Result<Option<Uuid>, ApiError> {
    if text.is_empty() {
        return Ok(None);
    }
    Uuid::parse_str(text)
        .map(Some)
        .map_err(|_| invalid_user_id())
}

fn invalid_user_id() -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        "Invalid user ID - make sure user ID is a valid UUID.",
    )
}

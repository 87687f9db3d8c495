//! `/v2/storage`: read (`POST`), write (`PUT`), delete (`PUT /delete`) and list (`GET`).

use axum::Json;
use axum::extract::State;
use metafi_core::objects::{DeleteInput, WriteInput, ack_view, object_view};
use metafi_proto::Code;
use metafi_proto::api::{
    DeleteStorageObjectsRequest, ReadStorageObjectsRequest, StorageObjectAcks, StorageObjectList,
    StorageObjects, WriteStorageObjectsRequest,
};
use metafi_storage::{Caller, ObjectId};
use serde::Deserialize;
use uuid::Uuid;

use crate::body::{JsonBody, PathParams, QueryParams};
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn read(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    JsonBody(body): JsonBody<ReadStorageObjectsRequest>,
) -> Result<Json<StorageObjects>, ApiError> {
    let ids = body
        .object_ids
        .into_iter()
        .map(|id| {
            // No user id reads system objects; the nil id spelled out is refused, as Nakama does.
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
    Ok(Json(StorageObjects {
        objects: objects.into_iter().map(object_view).collect(),
    }))
}

pub(super) async fn write(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    JsonBody(body): JsonBody<WriteStorageObjectsRequest>,
) -> Result<Json<StorageObjectAcks>, ApiError> {
    let inputs = body
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
    Ok(Json(StorageObjectAcks {
        acks: acks.into_iter().map(ack_view).collect(),
    }))
}

pub(super) async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    JsonBody(body): JsonBody<DeleteStorageObjectsRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let inputs = body
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
    Ok(Json(serde_json::json!({})))
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
    PathParams(collection): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    let owner = parse_user_id(query.user_id.as_deref().unwrap_or_default())?;
    list_page(&state, claims.user_id, &collection, owner, &query).await
}

/// `GET /v2/storage/delete?…`: the listing of a collection named "delete".
pub(super) async fn list_delete_collection(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    let owner = parse_user_id(query.user_id.as_deref().unwrap_or_default())?;
    list_page(&state, claims.user_id, "delete", owner, &query).await
}

/// `GET /v2/storage/{collection}/{user_id}?limit=&cursor=`
pub(super) async fn list_for_user(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    PathParams((collection, user_id)): PathParams<(String, String)>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<StorageObjectList>, ApiError> {
    let owner = parse_user_id(&user_id)?;
    list_page(&state, claims.user_id, &collection, owner, &query).await
}

async fn list_page(
    state: &ApiState,
    caller: Uuid,
    collection: &str,
    owner: Option<Uuid>,
    query: &ListQuery,
) -> Result<Json<StorageObjectList>, ApiError> {
    // Nakama lists one object when no limit is given.
    let limit = match query.limit.as_deref() {
        None | Some("") => 1,
        Some(text) => text.parse::<usize>().map_err(|_| {
            ApiError::new(
                Code::InvalidArgument,
                "Invalid limit - limit must be between 1 and 100.",
            )
        })?,
    };
    let page = state
        .objects
        .list(
            Caller::User(caller),
            collection,
            owner,
            limit,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(Json(StorageObjectList {
        objects: page.objects.into_iter().map(object_view).collect(),
        cursor: page.cursor.unwrap_or_default(),
    }))
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

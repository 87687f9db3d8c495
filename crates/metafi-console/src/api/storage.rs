//! Storage objects: the collections, a collection's objects (all owners or one), one object,
//! writes and deletes with versions and permissions. The console acts as server code does
//! (every object visible and writable) through the same `Objects` service, so storage
//! indexes stay current.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use metafi_api::ApiError;
use metafi_core::objects::{DeleteInput, WriteInput};
use metafi_proto::Code;
use metafi_storage::{Caller, ObjectId, StorageObject};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::{body, timestamp, user_id};
use crate::auth::{Session, empty};
use crate::{ConsoleState, Perm, audit};

const MAX_COLLECTIONS: usize = 1000;

/// `GET /v2/console/storage/collections` (Nakama's `StorageCollectionsList`).
pub(crate) async fn collections(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let collections = state
        .store
        .storage_collections(MAX_COLLECTIONS)
        .await
        .map_err(|e| metafi_core::CoreError::storage("listing collections", e))?;
    Ok(Json(json!({ "collections": collections })))
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListStorage {
    #[serde(default)]
    collection: String,
    #[serde(default)]
    user_id: String,
    #[serde(default)]
    cursor: String,
    limit: Option<usize>,
}

/// `GET /v2/console/storage?collection=…&user_id=…&cursor=…` (Nakama's `StorageList`:
/// `objects`, `total_count`, `next_cursor`). Without a collection, one user's objects.
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    session: Session,
    Query(query): Query<ListStorage>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let owner = match query.user_id.as_str() {
        "" => None,
        text => Some(Uuid::parse_str(text).map_err(|_| {
            ApiError::new(
                Code::InvalidArgument,
                "Requires a valid user ID when provided.",
            )
        })?),
    };
    let limit = query.limit.unwrap_or(100).clamp(1, 100);
    let (objects, cursor) = if query.collection.is_empty() {
        let Some(owner) = owner else {
            return Err(ApiError::new(
                Code::InvalidArgument,
                "A collection or a user ID is required.",
            ));
        };
        let objects = state
            .store
            .objects_of_user(owner, limit)
            .await
            .map_err(|e| metafi_core::CoreError::storage("listing a user's objects", e))?;
        (objects, None)
    } else {
        let cursor = Some(query.cursor.as_str()).filter(|c| !c.is_empty());
        let page = state
            .api
            .objects
            .list(Caller::Server, &query.collection, owner, limit, cursor)
            .await?;
        (page.objects, page.cursor)
    };
    Ok(Json(json!({
        "objects": objects.iter().map(object_json).collect::<Vec<_>>(),
        "total_count": objects.len(),
        "next_cursor": cursor.unwrap_or_default(),
    })))
}

/// An object in the client API's shape (`value` as JSON text).
pub(crate) fn object_json(object: &StorageObject) -> Value {
    json!({
        "collection": object.collection,
        "key": object.key,
        "user_id": object.user_id.to_string(),
        "value": object.value,
        "version": object.version,
        "permission_read": object.permission_read,
        "permission_write": object.permission_write,
        "create_time": timestamp(object.create_time_ms),
        "update_time": timestamp(object.update_time_ms),
    })
}

/// `GET /v2/console/storage/{collection}/{key}/{user_id}`: `api.StorageObject`.
pub(crate) async fn get(
    State(state): State<ConsoleState>,
    session: Session,
    Path((collection, key, user)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let user_id = user_id(&user)?;
    let objects = state
        .api
        .objects
        .read(
            Caller::Server,
            vec![ObjectId {
                collection,
                key,
                user_id,
            }],
        )
        .await?;
    let object = objects
        .first()
        .ok_or_else(|| ApiError::new(Code::NotFound, "Storage object not found."))?;
    Ok(Json(object_json(object)))
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct WriteObject {
    /// JSON object text.
    #[serde(default)]
    value: String,
    /// `""` any, `"*"` only if absent, else the version to match.
    #[serde(default)]
    version: String,
    permission_read: Option<i32>,
    permission_write: Option<i32>,
}

/// `PUT /v2/console/storage/{collection}/{key}/{user_id}`: `api.StorageObjectAck`.
pub(crate) async fn write(
    State(state): State<ConsoleState>,
    session: Session,
    Path((collection, key, user)): Path<(String, String, String)>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Edit)?;
    let user_id = user_id(&user)?;
    let request: WriteObject = body(&bytes)?;
    let target = format!("{collection}/{key}/{user_id}");
    let detail = json!({
        "value": request.value, "version": request.version,
        "permission_read": request.permission_read, "permission_write": request.permission_write,
    });
    let acks = state
        .api
        .objects
        .write(
            Caller::Server,
            vec![WriteInput {
                collection,
                key,
                user_id,
                value: request.value,
                version: request.version,
                permission_read: Some(request.permission_read.unwrap_or(1)),
                permission_write: Some(request.permission_write.unwrap_or(1)),
            }],
        )
        .await?;
    audit::record(&state, &session, "storage.write", &target, detail).await;
    let ack = acks
        .first()
        .ok_or_else(|| ApiError::new(Code::Internal, "Internal server error."))?;
    Ok(Json(json!({
        "collection": ack.collection,
        "key": ack.key,
        "version": ack.version,
        "user_id": ack.user_id.to_string(),
        "create_time": timestamp(ack.create_time_ms),
        "update_time": timestamp(ack.update_time_ms),
    })))
}

/// `DELETE /v2/console/storage/{collection}/{key}/{user_id}`.
pub(crate) async fn delete(
    State(state): State<ConsoleState>,
    session: Session,
    Path((collection, key, user)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    remove(state, session, collection, key, user, String::new()).await
}

/// `DELETE /v2/console/storage/{collection}/{key}/{user_id}/{version}`: only that version.
pub(crate) async fn delete_version(
    State(state): State<ConsoleState>,
    session: Session,
    Path((collection, key, user, version)): Path<(String, String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    remove(state, session, collection, key, user, version).await
}

async fn remove(
    state: ConsoleState,
    session: Session,
    collection: String,
    key: String,
    user: String,
    version: String,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Edit)?;
    let user_id = user_id(&user)?;
    let target = format!("{collection}/{key}/{user_id}");
    state
        .api
        .objects
        .delete(
            Caller::Server,
            vec![DeleteInput {
                collection,
                key,
                user_id,
                version: version.clone(),
            }],
        )
        .await?;
    audit::record(
        &state,
        &session,
        "storage.delete",
        &target,
        json!({ "version": version }),
    )
    .await;
    Ok(empty())
}

//! Storage object bodies: `/v2/storage` reads, writes, deletes and listings.

use serde::{Deserialize, Serialize};

/// An object as the API returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageObject {
    pub collection: String,
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    pub value: String,
    pub version: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub permission_read: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub permission_write: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
}

/// `POST /v2/storage` response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageObjects {
    // Omitted when empty, as Nakama's gateway omits unpopulated fields (`{}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<StorageObject>,
}

/// `GET /v2/storage/{collection}` response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageObjectList {
    // Omitted when empty, as Nakama's gateway omits unpopulated fields (`{}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<StorageObject>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}

/// One id of `POST /v2/storage`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ReadStorageObjectId {
    pub collection: String,
    pub key: String,
    #[serde(alias = "userId")]
    pub user_id: String,
}

/// `POST /v2/storage` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ReadStorageObjectsRequest {
    #[serde(alias = "objectIds")]
    pub object_ids: Vec<ReadStorageObjectId>,
}

/// One object of `PUT /v2/storage`. Permissions are optional (default 1 and 1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WriteStorageObject {
    pub collection: String,
    pub key: String,
    pub value: String,
    /// Empty: write whatever is there; `*`: only if absent; otherwise the version to match.
    pub version: String,
    #[serde(alias = "permissionRead")]
    pub permission_read: Option<i32>,
    #[serde(alias = "permissionWrite")]
    pub permission_write: Option<i32>,
}

/// `PUT /v2/storage` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WriteStorageObjectsRequest {
    pub objects: Vec<WriteStorageObject>,
}

/// One acknowledged write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageObjectAck {
    pub collection: String,
    pub key: String,
    pub version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
}

/// `PUT /v2/storage` response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageObjectAcks {
    // Omitted when empty, as Nakama's gateway omits unpopulated fields (`{}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub acks: Vec<StorageObjectAck>,
}

/// One id of `PUT /v2/storage/delete`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct DeleteStorageObjectId {
    pub collection: String,
    pub key: String,
    pub version: String,
}

/// `PUT /v2/storage/delete` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct DeleteStorageObjectsRequest {
    #[serde(alias = "objectIds")]
    pub object_ids: Vec<DeleteStorageObjectId>,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

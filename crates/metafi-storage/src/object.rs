//! Storage objects: Nakama's key/value documents with versions and read/write permissions.
//!
//! Rules (those of Nakama, so clients see the same behaviour):
//! - An object is keyed by `(collection, key, user_id)`; system-owned objects use the nil UUID.
//! - `version` is the lowercase hex MD5 of the value text, computed by the backend on write.
//! - Read permission: 0 = no client reads, 1 = owner only, 2 = public. Write permission:
//!   0 = no client writes, 1 = owner writes. Server code (`Caller::Server`) bypasses both.
//! - A batch of writes or deletes is one transaction: any rejected operation rolls back all.

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// Who performs a storage operation; decides which permission rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// Server code (runtime modules): sees and writes everything.
    Server,
    /// A client acting as this user.
    User(Uuid),
}

/// A stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageObject {
    pub collection: String,
    pub key: String,
    /// Owner; `Uuid::nil()` for system-owned objects.
    pub user_id: Uuid,
    /// JSON object text.
    pub value: String,
    pub version: String,
    pub permission_read: u8,
    pub permission_write: u8,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// The identity of an object, for reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
}

/// The condition a write places on the object's current version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionCheck {
    /// Write whatever is there (create or overwrite).
    Any,
    /// Write only if the object does not exist (Nakama's `"*"`).
    Absent,
    /// Write only if the current version equals this one.
    Matches(String),
}

/// One write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectWrite {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    pub value: String,
    pub version: VersionCheck,
    pub permission_read: u8,
    pub permission_write: u8,
}

/// What a successful write returns for each object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectAck {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    pub version: String,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// One delete of a batch; with `version`, only that version is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDelete {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    pub version: Option<String>,
}

/// A page of a listing, with the cursor for the next page (`None` on the last page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPage {
    pub objects: Vec<StorageObject>,
    pub cursor: Option<String>,
}

/// Storage objects with Nakama's permission and version rules.
#[async_trait]
pub trait ObjectStore: Send + Sync {
    /// Writes a batch atomically. A user may write only objects it owns, and only those whose
    /// current write permission is 1. Errors: `VersionMismatch { index }`,
    /// `PermissionDenied { index }`; on error nothing of the batch is written. A batch that
    /// names the same object twice, or a permission out of range (read > 2, write > 1), is
    /// `Invalid`.
    async fn write_objects(
        &self,
        caller: Caller,
        writes: Vec<ObjectWrite>,
        now_ms: i64,
    ) -> Result<Vec<ObjectAck>, StorageError>;

    /// Reads objects by id; objects that do not exist or that the caller may not read are left
    /// out. Order follows the request order.
    async fn read_objects(
        &self,
        caller: Caller,
        ids: &[ObjectId],
    ) -> Result<Vec<StorageObject>, StorageError>;

    /// Lists a collection, optionally only one owner's objects, in Nakama's order
    /// `(read permission, key, user_id)`; the cursor resumes after the last object. A user sees public objects, plus its own owner-readable ones when listing
    /// itself. `cursor` is one returned by a previous page of the same listing.
    async fn list_objects(
        &self,
        caller: Caller,
        collection: &str,
        owner: Option<Uuid>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ObjectPage, StorageError>;

    /// Up to `limit` objects `owner` owns, in every collection, ordered by collection and key
    /// (an account export).
    async fn objects_of_user(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> Result<Vec<StorageObject>, StorageError>;

    /// Deletes a batch atomically. A user may delete only its own objects with write
    /// permission 1, and only objects that exist (`NotFound`, as Nakama). Server code deleting
    /// a missing object is a no-op unless a version was given. Errors: `VersionMismatch
    /// { index }`, `PermissionDenied { index }`, `NotFound`; a batch that names the same
    /// object twice is `Invalid`. Text is checked as [`text`](crate::text) says.
    async fn delete_objects(
        &self,
        caller: Caller,
        deletes: Vec<ObjectDelete>,
    ) -> Result<(), StorageError>;
}

//! Storage objects with Nakama's rules, for clients (REST, socket) and server code (runtimes).

use std::sync::Arc;

use metafi_proto::api;
use metafi_proto::format_timestamp_ms;
use metafi_storage::{
    Caller, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectWrite, Storage, StorageError,
    StorageObject, VersionCheck,
};
use uuid::Uuid;

use crate::storage_index::StorageIndexes;
use crate::{Clock, CoreError, validate};

mod retry;

pub use retry::{
    MAX_RETRIES_MESSAGE, MAX_WRITE_RETRIES, RETRIES_EXHAUSTED, RetryError, WriteAttempt,
    retry_backoff,
};

/// Largest page a listing may ask for.
pub const MAX_LIST_LIMIT: usize = 100;

/// One write as an edge receives it, before validation. Permissions default to 1 (owner read,
/// owner write) as in Nakama.
#[derive(Debug, Clone, Default)]
pub struct WriteInput {
    pub collection: String,
    pub key: String,
    /// Owner. Ignored for user callers, who always write their own objects.
    pub user_id: Uuid,
    pub value: String,
    /// `""` any version, `"*"` only if absent, otherwise the version to match.
    pub version: String,
    pub permission_read: Option<i32>,
    pub permission_write: Option<i32>,
}

/// One delete as an edge receives it. `version` empty means unconditional.
#[derive(Debug, Clone, Default)]
pub struct DeleteInput {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    pub version: String,
}

#[derive(Debug)]
pub struct Objects {
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    /// Told of every committed write and delete, to keep storage indexes current.
    indexes: Option<Arc<StorageIndexes>>,
}

impl Objects {
    pub fn new(store: Arc<dyn Storage>, clock: Arc<dyn Clock>) -> Self {
        Objects {
            store,
            clock,
            indexes: None,
        }
    }

    /// Keeps `indexes` current with this service's writes and deletes.
    pub fn with_indexes(mut self, indexes: Arc<StorageIndexes>) -> Self {
        self.indexes = Some(indexes);
        self
    }

    /// The storage indexes this service keeps current, if any.
    pub fn indexes(&self) -> Option<&Arc<StorageIndexes>> {
        self.indexes.as_ref()
    }

    /// The indexes to tell of a change, when any index is registered.
    fn active_indexes(&self) -> Option<&Arc<StorageIndexes>> {
        self.indexes.as_ref().filter(|i| i.is_active())
    }

    pub async fn read(
        &self,
        caller: Caller,
        ids: Vec<ObjectId>,
    ) -> Result<Vec<StorageObject>, CoreError> {
        for id in &ids {
            validate::object_name(&id.collection, &id.key)?;
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.store
            .read_objects(caller, &ids)
            .await
            .map_err(|e| CoreError::storage("reading storage objects", e))
    }

    /// Writes a batch atomically; all or nothing.
    pub async fn write(
        &self,
        caller: Caller,
        inputs: Vec<WriteInput>,
    ) -> Result<Vec<ObjectAck>, CoreError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let writes = inputs
            .into_iter()
            .map(|input| validate_write(caller, input))
            .collect::<Result<Vec<_>, _>>()?;
        let indexed = self.active_indexes().map(|i| i.pick(&writes));
        match self
            .store
            .write_objects(caller, writes, self.clock.now_ms())
            .await
        {
            Ok(acks) => {
                if let (Some(indexes), Some(picked)) = (self.active_indexes(), indexed) {
                    indexes.committed(&picked, &acks, &[]).await;
                }
                Ok(acks)
            }
            Err(StorageError::VersionMismatch { .. }) => Err(CoreError::invalid(
                "Storage write rejected - version check failed.",
            )),
            Err(StorageError::PermissionDenied { .. }) => Err(CoreError::invalid(
                "Storage write rejected - permission denied.",
            )),
            Err(e) => Err(CoreError::storage("writing storage objects", e)),
        }
    }

    pub async fn list(
        &self,
        caller: Caller,
        collection: &str,
        owner: Option<Uuid>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ObjectPage, CoreError> {
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(CoreError::invalid(
                "Invalid limit - limit must be between 1 and 100.",
            ));
        }
        validate::collection(collection)?;
        self.store
            .list_objects(
                caller,
                collection,
                owner,
                limit,
                cursor.filter(|c| !c.is_empty()),
            )
            .await
            .map_err(|e| match e {
                StorageError::Invalid { .. } => CoreError::invalid("Malformed cursor was used."),
                other => CoreError::storage("listing storage objects", other),
            })
    }

    /// Deletes a batch atomically; all or nothing. A client's delete of an object that does not
    /// exist is refused, as with Nakama; server code may delete what is not there.
    pub async fn delete(&self, caller: Caller, inputs: Vec<DeleteInput>) -> Result<(), CoreError> {
        let deletes = inputs
            .into_iter()
            .map(|input| validate_delete(caller, input))
            .collect::<Result<Vec<_>, _>>()?;
        if deletes.is_empty() {
            return Ok(());
        }
        let indexed = self.active_indexes().map(|_| deletes.clone());
        match self.store.delete_objects(caller, deletes).await {
            Ok(()) => {
                if let (Some(indexes), Some(deletes)) = (self.active_indexes(), indexed) {
                    indexes.committed(&[], &[], &deletes).await;
                }
                Ok(())
            }
            // Nakama's one answer for all three: its delete checks the rows affected.
            Err(
                StorageError::VersionMismatch { .. }
                | StorageError::PermissionDenied { .. }
                | StorageError::NotFound { .. },
            ) => Err(CoreError::invalid(
                "Storage delete rejected - not found, version check failed, or permission denied.",
            )),
            Err(e) => Err(CoreError::storage("deleting storage objects", e)),
        }
    }
}

/// One delete as the store takes it: a user deletes only their own objects.
pub(crate) fn validate_delete(
    caller: Caller,
    input: DeleteInput,
) -> Result<ObjectDelete, CoreError> {
    validate::object_name(&input.collection, &input.key)?;
    Ok(ObjectDelete {
        user_id: match caller {
            Caller::User(me) => me,
            Caller::Server => input.user_id,
        },
        collection: input.collection,
        key: input.key,
        version: Some(input.version).filter(|v| !v.is_empty()),
    })
}

/// One write as the store takes it, with Nakama's checks and defaults.
pub(crate) fn validate_write(caller: Caller, input: WriteInput) -> Result<ObjectWrite, CoreError> {
    // Nakama's first check of a write names the value too.
    if input.value.is_empty() {
        return Err(CoreError::invalid(
            "Invalid collection or key value supplied. They must be set.",
        ));
    }
    validate::new_object_name(&input.collection, &input.key)?;
    let permission_read = input.permission_read.unwrap_or(1);
    if !(0..=2).contains(&permission_read) {
        return Err(CoreError::invalid(
            "Invalid Read permission supplied. It must be either 0, 1 or 2.",
        ));
    }
    let permission_write = input.permission_write.unwrap_or(1);
    if !(0..=1).contains(&permission_write) {
        return Err(CoreError::invalid(
            "Invalid Write permission supplied. It must be either 0 or 1.",
        ));
    }
    if !is_json_object(&input.value) {
        return Err(CoreError::invalid("Value must be a JSON object."));
    }
    Ok(ObjectWrite {
        user_id: match caller {
            Caller::User(me) => me,
            Caller::Server => input.user_id,
        },
        collection: input.collection,
        key: input.key,
        value: input.value,
        version: match input.version.as_str() {
            "" => VersionCheck::Any,
            "*" => VersionCheck::Absent,
            _ => VersionCheck::Matches(input.version),
        },
        permission_read: permission_read as u8,
        permission_write: permission_write as u8,
    })
}

/// True when `text` is valid JSON whose top level is an object.
fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The API view of a stored object.
pub fn object_view(object: StorageObject) -> api::StorageObject {
    api::StorageObject {
        collection: object.collection,
        key: object.key,
        user_id: object.user_id.to_string(),
        value: object.value,
        version: object.version,
        permission_read: i32::from(object.permission_read),
        permission_write: i32::from(object.permission_write),
        create_time: format_timestamp_ms(object.create_time_ms),
        update_time: format_timestamp_ms(object.update_time_ms),
    }
}

/// The API view of a write acknowledgement.
pub fn ack_view(ack: ObjectAck) -> api::StorageObjectAck {
    api::StorageObjectAck {
        collection: ack.collection,
        key: ack.key,
        version: ack.version,
        user_id: ack.user_id.to_string(),
        create_time: format_timestamp_ms(ack.create_time_ms),
        update_time: format_timestamp_ms(ack.update_time_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_objects_are_values() {
        assert!(is_json_object(r#"{"a":1}"#));
        assert!(is_json_object(" { } "));
        assert!(!is_json_object("[1]"));
        assert!(!is_json_object("\"s\""));
        assert!(!is_json_object("{"));
    }

    #[test]
    fn users_always_write_their_own_objects() {
        let me = Uuid::new_v4();
        let write = validate_write(
            Caller::User(me),
            WriteInput {
                collection: "c".into(),
                key: "k".into(),
                user_id: Uuid::new_v4(),
                value: "{}".into(),
                ..WriteInput::default()
            },
        )
        .unwrap();
        assert_eq!(write.user_id, me);
        assert_eq!((write.permission_read, write.permission_write), (1, 1));
        assert_eq!(write.version, VersionCheck::Any);
    }

    #[test]
    fn permissions_are_range_checked() {
        let input = |r, w| WriteInput {
            collection: "c".into(),
            key: "k".into(),
            value: "{}".into(),
            permission_read: Some(r),
            permission_write: Some(w),
            ..WriteInput::default()
        };
        assert!(validate_write(Caller::Server, input(3, 1)).is_err());
        assert!(validate_write(Caller::Server, input(2, 2)).is_err());
        assert!(validate_write(Caller::Server, input(2, 0)).is_ok());
    }
}

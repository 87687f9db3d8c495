//! The one error type of the storage layer.

use thiserror::Error;

/// What went wrong in a storage operation.
///
/// Expected outcomes that callers branch on (a unique key taken, a version check failed, a
/// permission denied) are their own variants so that the service layer can map them onto
/// client-visible codes without parsing text. Everything else is `Backend`: the cause is kept
/// in `#[source]` for logs and never shown to clients.
#[derive(Debug, Error)]
pub enum StorageError {
    /// A unique constraint would be violated.
    #[error("{what} is already taken")]
    Conflict { what: Conflict },

    /// The row the operation needs does not exist.
    #[error("{what} not found")]
    NotFound { what: &'static str },

    /// An optimistic-concurrency check failed for operation number `index` of a batch.
    #[error("version check failed for operation {index}")]
    VersionMismatch { index: usize },

    /// The caller may not write or delete the object of operation number `index` of a batch.
    #[error("permission denied for operation {index}")]
    PermissionDenied { index: usize },

    /// The input breaks a rule the storage layer enforces (for example a cursor that does not
    /// decode). The message is safe to show to a client.
    #[error("invalid input: {message}")]
    Invalid { message: String },

    /// Text with a NUL character, which PostgreSQL cannot store; refused on every backend (see
    /// [`text`](crate::text)). Nothing was written.
    #[error("{field} contains a NUL character")]
    NulCharacter { field: &'static str },

    /// Text longer than its column allows (see [`text`](crate::text)). Nothing was written.
    #[error("{field} is longer than {max} characters")]
    TooLong { field: &'static str, max: usize },

    /// A wallet change would take the balance at `path` of `user_id` below zero (from
    /// `current`, by `amount`). Nothing was written.
    #[error("wallet update rejected negative value at path '{path}'")]
    WalletNegative {
        user_id: uuid::Uuid,
        path: String,
        current: i64,
        amount: i64,
    },

    /// The backend is shutting down or its writer has stopped; the operation was not applied.
    #[error("storage is closed")]
    Closed,

    /// The database failed (I/O, connection lost, corrupt file, …). Not applied, or applied and
    /// rolled back: a batch is never half-written.
    #[error("database error during {operation}")]
    Backend {
        operation: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Which unique value a `StorageError::Conflict` is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    Username,
    DeviceId,
    CustomId,
    Email,
    GroupName,
    /// A social provider's id ([`crate::Provider`]).
    SocialId,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conflict::Username => "username",
            Conflict::DeviceId => "device id",
            Conflict::CustomId => "custom id",
            Conflict::Email => "email",
            Conflict::GroupName => "group name",
            Conflict::SocialId => "social id",
        })
    }
}

impl StorageError {
    /// Wraps a driver error with the name of the operation that failed.
    pub fn backend(
        operation: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StorageError::Backend {
            operation,
            source: Box::new(source),
        }
    }
}

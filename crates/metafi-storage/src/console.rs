//! What the console (`metafi-console`, docs/CONSOLE.md) keeps: its own users with their
//! roles and password hashes, the audit log of every change made through it, and the one
//! listing no other store has, the storage collections that exist.

use async_trait::async_trait;

use crate::StorageError;

/// A console user: not a player account, a person who operates the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleUser {
    pub username: String,
    /// bcrypt hash of the password (never the password).
    pub password_hash: String,
    /// Nakama's console role numbers: 1 admin, 2 developer, 3 maintainer, 4 read-only.
    pub role: u8,
    pub create_time_ms: i64,
}

/// One change made through the console: who, what, when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Assigned by the store, increasing; ignored on append.
    pub id: i64,
    pub time_ms: i64,
    /// The console user who made the change.
    pub username: String,
    /// What was done, e.g. `account.update`, `storage.delete`, `rpc.call`.
    pub action: String,
    /// What it was done to, e.g. a user id or `collection/key/user_id`.
    pub target: String,
    /// The request's details (JSON text), bounded by the console.
    pub detail: String,
}

/// Console users, the audit log and the collection listing.
#[async_trait]
pub trait ConsoleStore: Send + Sync {
    /// Adds `user` unless a console user of that name exists (then the stored one, with its
    /// password and role, is kept); true when it was added.
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError>;

    /// The console user of that name, if any.
    async fn console_user(&self, username: &str) -> Result<Option<ConsoleUser>, StorageError>;

    /// Appends an entry to the audit log; returns its id.
    async fn append_audit(&self, entry: AuditEntry) -> Result<i64, StorageError>;

    /// The newest `limit` entries with an id below `before` (all when `None`), newest first.
    async fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StorageError>;

    /// The names of the collections that hold at least one object, sorted (at most `limit`).
    async fn storage_collections(&self, limit: usize) -> Result<Vec<String>, StorageError>;
}

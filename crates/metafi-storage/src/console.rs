//! What the console (`metafi-console`, docs/CONSOLE.md) keeps: its own users with their
//! roles and password hashes, the audit log of every change made through it, and the one
//! listing no other store has, the storage collections that exist.

use async_trait::async_trait;

use crate::StorageError;

/// A console user: not a player account, a person who operates the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsoleUser {
    /// A UUID text, given by whoever adds the user.
    pub id: String,
    pub username: String,
    /// Lowercase, unique among users that have one; empty for users from the configuration.
    pub email: String,
    /// bcrypt hash of the password (never the password).
    pub password_hash: String,
    /// Nakama's console role numbers: 1 admin, 2 developer, 3 maintainer, 4 read-only.
    pub role: u8,
    /// The TOTP secret, encrypted by the console; `None`: MFA not set up.
    pub mfa_secret: Option<Vec<u8>>,
    /// The unused recovery codes, encrypted by the console.
    pub mfa_recovery_codes: Option<Vec<u8>>,
    /// The user must set up MFA before a session is issued.
    pub mfa_required: bool,
    /// Every session token of the user carries this key; a new one ends them all.
    pub session_key: String,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// How a change to a console user that must keep an admin went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleUserChange {
    Done,
    NotFound,
    /// Refused: it would leave no console user with the admin role.
    LastAdmin,
}

/// MFA state to store for a console user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleMfaUpdate {
    /// Encrypted secret and recovery codes; `None` for both: MFA reset.
    pub secret: Option<Vec<u8>>,
    pub recovery_codes: Option<Vec<u8>>,
    /// Only if the user was not updated after this time (ms): a setup token made before a
    /// later change (reset, role) is outdated. `None`: unconditional.
    pub not_updated_after_ms: Option<i64>,
    pub now_ms: i64,
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
    /// Adds `user` unless a console user of that name (or that non-empty email) exists (then
    /// the stored one, with its password and role, is kept); true when it was added.
    async fn seed_console_user(&self, user: ConsoleUser) -> Result<bool, StorageError>;

    /// The console user of that name, if any.
    async fn console_user(&self, username: &str) -> Result<Option<ConsoleUser>, StorageError>;

    /// Every console user, by username.
    async fn console_users(&self) -> Result<Vec<ConsoleUser>, StorageError>;

    /// Deletes a console user unless it is the last admin (checked atomically: two admins
    /// deleting each other at once leave one).
    async fn delete_console_user(&self, username: &str) -> Result<ConsoleUserChange, StorageError>;

    /// Sets a console user's role and session key (ending its sessions) unless that would
    /// leave no admin (checked atomically, as [`ConsoleStore::delete_console_user`]).
    async fn set_console_user_role(
        &self,
        username: &str,
        role: u8,
        session_key: String,
        now_ms: i64,
    ) -> Result<ConsoleUserChange, StorageError>;

    /// Sets whether the user must set up MFA; false when there is no such user.
    async fn set_console_user_mfa_required(
        &self,
        username: &str,
        required: bool,
        now_ms: i64,
    ) -> Result<bool, StorageError>;

    /// Stores (or, with `None`s, removes) a user's MFA secret and recovery codes and sets its
    /// update time; false when there is no such user or it was updated after
    /// `not_updated_after_ms`.
    async fn set_console_user_mfa(
        &self,
        username: &str,
        update: ConsoleMfaUpdate,
    ) -> Result<bool, StorageError>;

    /// Replaces the stored recovery codes if they are still `old` (a code is used once even
    /// when two sign-ins race); false otherwise.
    async fn replace_console_recovery_codes(
        &self,
        username: &str,
        old: Vec<u8>,
        new: Vec<u8>,
    ) -> Result<bool, StorageError>;

    /// Records that a session ended before its expiry (ms), and forgets the recorded sessions
    /// that have expired by `now_ms`.
    async fn revoke_console_session(
        &self,
        session_id: &str,
        expire_ms: i64,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// Whether a session was signed out (and has not expired since it was recorded).
    async fn console_session_revoked(&self, session_id: &str) -> Result<bool, StorageError>;

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

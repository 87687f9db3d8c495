//! Revoked sessions: the deny-list that makes logout permanent, across restarts and nodes.

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// A session (the `tid` shared by a session token and its refresh token) that must no longer
/// be accepted. Kept until `expires_at_ms`, after which the tokens are dead anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub expires_at_ms: i64,
}

/// Every session of a user issued at or before `issued_before_secs` (the tokens' `iat`) must no
/// longer be accepted: "log out everywhere". Kept until `expires_at_ms`, when the last token it
/// could apply to has expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRevocation {
    pub user_id: Uuid,
    pub issued_before_secs: i64,
    pub expires_at_ms: i64,
}

/// Persistent session revocations. Sign-in writes nothing; only logout (and bans) write here.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Records revocations durably. Revoking a session twice is not an error.
    async fn revoke_sessions(&self, revocations: &[Revocation]) -> Result<(), StorageError>;

    /// Every revocation that has not expired at `now_ms`, to load the in-memory deny-list on start.
    async fn active_revocations(&self, now_ms: i64) -> Result<Vec<Revocation>, StorageError>;

    /// Records a user-wide revocation durably. A second one for the same user keeps the later
    /// `issued_before_secs` and the later `expires_at_ms`.
    async fn revoke_user_sessions(&self, revocation: UserRevocation) -> Result<(), StorageError>;

    /// Every user-wide revocation that has not expired at `now_ms`.
    async fn active_user_revocations(
        &self,
        now_ms: i64,
    ) -> Result<Vec<UserRevocation>, StorageError>;

    /// Deletes session and user-wide revocations whose `expires_at_ms <= now_ms`; returns how
    /// many were removed.
    async fn purge_revocations(&self, now_ms: i64) -> Result<u64, StorageError>;
}

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

/// Persistent session revocations. Sign-in writes nothing; only logout (and bans) write here.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Records revocations durably. Revoking a session twice is not an error.
    async fn revoke_sessions(&self, revocations: &[Revocation]) -> Result<(), StorageError>;

    /// Every revocation that has not expired at `now_ms`, to load the in-memory deny-list on start.
    async fn active_revocations(&self, now_ms: i64) -> Result<Vec<Revocation>, StorageError>;

    /// Deletes revocations that expired before `now_ms`; returns how many were removed.
    async fn purge_revocations(&self, now_ms: i64) -> Result<u64, StorageError>;
}

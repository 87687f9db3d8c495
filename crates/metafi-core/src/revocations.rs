//! The deny-list of ended sessions: checked in memory on every request, persisted so that a
//! logout survives a restart.
//!
//! Signing in writes nothing (tokens are self-contained JWTs); only logout writes here. The map
//! holds one entry per revoked, not-yet-expired session, and `purge` drops expired ones, so its
//! size is bounded by the logouts within one refresh-token lifetime.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_storage::{Revocation, Storage, UserRevocation};
use parking_lot::RwLock;
use uuid::Uuid;

use crate::CoreError;

#[derive(Debug)]
pub struct Revocations {
    store: Arc<dyn Storage>,
    /// session id → expiry (ms) of the latest token of that session.
    revoked: RwLock<HashMap<Uuid, i64>>,
    /// user id → (tokens issued at or before these seconds are dead, until this expiry in ms):
    /// "log out everywhere".
    users: RwLock<HashMap<Uuid, (i64, i64)>>,
}

impl Revocations {
    /// Loads the revocations that are still in force.
    pub async fn load(store: Arc<dyn Storage>, now_ms: i64) -> Result<Self, CoreError> {
        let active = store
            .active_revocations(now_ms)
            .await
            .map_err(|e| CoreError::storage("loading session revocations", e))?;
        let revoked = active
            .into_iter()
            .map(|r| (r.session_id, r.expires_at_ms))
            .collect();
        let users = store
            .active_user_revocations(now_ms)
            .await
            .map_err(|e| CoreError::storage("loading user session revocations", e))?
            .into_iter()
            .map(|r| (r.user_id, (r.issued_before_secs, r.expires_at_ms)))
            .collect();
        Ok(Revocations {
            store,
            revoked: RwLock::new(revoked),
            users: RwLock::new(users),
        })
    }

    /// True when the session was logged out, or its user logged out everywhere after
    /// `issued_at` (seconds).
    pub fn is_revoked(&self, session_id: Uuid, user_id: Uuid, issued_at: i64) -> bool {
        self.revoked.read().contains_key(&session_id)
            || self
                .users
                .read()
                .get(&user_id)
                .is_some_and(|(before, _)| issued_at <= *before)
    }

    /// The latest "log out everywhere" of a user, in seconds, if one is in force.
    pub fn user_revoked_before(&self, user_id: Uuid) -> Option<i64> {
        self.users.read().get(&user_id).map(|(before, _)| *before)
    }

    /// Ends every session of a user issued at or before `revocation.issued_before_secs`.
    pub async fn revoke_user(&self, revocation: UserRevocation) -> Result<(), CoreError> {
        {
            let mut users = self.users.write();
            let entry = users.entry(revocation.user_id).or_insert((i64::MIN, 0));
            entry.0 = entry.0.max(revocation.issued_before_secs);
            entry.1 = entry.1.max(revocation.expires_at_ms);
        }
        self.store
            .revoke_user_sessions(revocation)
            .await
            .map_err(|e| CoreError::storage("revoking every session of a user", e))
    }

    /// Ends a session. Returns once the revocation is durable; it applies in memory at once.
    pub async fn revoke(&self, revocation: Revocation) -> Result<(), CoreError> {
        {
            let mut revoked = self.revoked.write();
            let expiry = revoked.entry(revocation.session_id).or_insert(0);
            *expiry = (*expiry).max(revocation.expires_at_ms);
        }
        self.store
            .revoke_sessions(std::slice::from_ref(&revocation))
            .await
            .map_err(|e| CoreError::storage("revoking a session", e))
    }

    /// Forgets revocations whose tokens have expired anyway, in memory and in storage.
    pub async fn purge(&self, now_ms: i64) -> Result<u64, CoreError> {
        self.revoked.write().retain(|_, expiry| *expiry > now_ms);
        self.users.write().retain(|_, (_, expiry)| *expiry > now_ms);
        self.store
            .purge_revocations(now_ms)
            .await
            .map_err(|e| CoreError::storage("purging session revocations", e))
    }

    /// How many revocations are held in memory (exported as a metric).
    pub fn len(&self) -> usize {
        self.revoked.read().len() + self.users.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

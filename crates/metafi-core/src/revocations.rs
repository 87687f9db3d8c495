//! The deny-list of ended sessions: checked in memory on every request, persisted so that a
//! logout survives a restart.
//!
//! Signing in writes nothing (tokens are self-contained JWTs); only logout writes here. The map
//! holds one entry per revoked, not-yet-expired session, and `purge` drops expired ones, so its
//! size is bounded by the logouts within one refresh-token lifetime.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_storage::{Revocation, Storage};
use parking_lot::RwLock;
use uuid::Uuid;

use crate::CoreError;

#[derive(Debug)]
pub struct Revocations {
    store: Arc<dyn Storage>,
    /// session id → expiry (ms) of the latest token of that session.
    revoked: RwLock<HashMap<Uuid, i64>>,
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
        Ok(Revocations {
            store,
            revoked: RwLock::new(revoked),
        })
    }

    pub fn is_revoked(&self, session_id: Uuid) -> bool {
        self.revoked.read().contains_key(&session_id)
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
        self.store
            .purge_revocations(now_ms)
            .await
            .map_err(|e| CoreError::storage("purging session revocations", e))
    }

    /// How many revocations are held in memory (exported as a metric).
    pub fn len(&self) -> usize {
        self.revoked.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

//! Password hashing with bcrypt, off the IO threads.
//!
//! bcrypt, not argon2id: it is what Nakama stores, so a studio moving its user table from Nakama
//! keeps every password working, and its cost is one tunable number. Hashing is deliberately
//! slow (tens of milliseconds at cost 10), so it runs on tokio's blocking pool, never on an IO
//! thread, and a semaphore bounds how many hashes run at once so a login storm queues instead of
//! occupying every blocking thread.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::CoreError;

/// Hashes and verifies passwords on the blocking pool.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    cost: u32,
    permits: Arc<Semaphore>,
}

impl PasswordHasher {
    /// `cost` is bcrypt's log2 work factor (4..=31); `max_concurrent` bounds parallel hashes.
    pub fn new(cost: u32, max_concurrent: usize) -> Self {
        PasswordHasher {
            cost,
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
        }
    }

    pub async fn hash(&self, password: String) -> Result<String, CoreError> {
        let cost = self.cost;
        self.run(move || bcrypt::hash(password, cost)).await
    }

    /// True when `password` matches `hash`. A malformed stored hash counts as a mismatch (and is
    /// logged) rather than a server error, so a corrupt row cannot be used to probe accounts.
    pub async fn verify(&self, password: String, hash: String) -> Result<bool, CoreError> {
        match self.run(move || bcrypt::verify(password, &hash)).await {
            Ok(matches) => Ok(matches),
            Err(CoreError::Internal { source, .. }) => {
                tracing::error!(error = %source, "stored password hash is malformed");
                Ok(false)
            }
            Err(other) => Err(other),
        }
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, bcrypt::BcryptError> + Send + 'static,
    ) -> Result<T, CoreError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| CoreError::Unavailable {
                operation: "password hashing",
            })?;
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(CoreError::Internal {
                operation: "password hashing",
                source: Box::new(source),
            }),
            Err(join) => Err(CoreError::Internal {
                operation: "password hashing",
                source: Box::new(join),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_then_verify() {
        let hasher = PasswordHasher::new(4, 2);
        let hash = hasher.hash("correct horse".into()).await.unwrap();
        assert!(hash.starts_with("$2"));
        assert!(
            hasher
                .verify("correct horse".into(), hash.clone())
                .await
                .unwrap()
        );
        assert!(!hasher.verify("wrong horse".into(), hash).await.unwrap());
    }

    #[tokio::test]
    async fn malformed_hash_is_a_mismatch() {
        let hasher = PasswordHasher::new(4, 1);
        assert!(
            !hasher
                .verify("x".into(), "not-a-hash".into())
                .await
                .unwrap()
        );
    }
}

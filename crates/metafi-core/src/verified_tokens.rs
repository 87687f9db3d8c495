//! Session tokens whose signature was checked recently, with their claims, so a client calling
//! again with the same token does not pay the HMAC, the base64 and the claims' JSON again (≈ 5 %
//! of a REST echo's CPU; docs/HTTP.md, "The REST hot path").
//!
//! Only what the token itself proves is kept: its claims. Expiry and revocation are not cached:
//! [`crate::Sessions::verify`] checks both on every call against the clock and the deny-list, so
//! a logout or a ban refuses a cached token at once.
//!
//! The map hashes a token by its end, the signature ([`SignatureHash`]), not all of its
//! ≈ 400 bytes: hashing whole tokens was most of a cache hit's cost.

use std::collections::HashMap;
use std::hash::{BuildHasher, DefaultHasher, Hasher, RandomState};

use parking_lot::Mutex;

use crate::SessionClaims;

/// How many tokens are remembered by default: about 400 bytes each (the token and its claims),
/// at most about 7 MB, and more signed-in clients than one node serves by REST at once.
pub(crate) const DEFAULT_CAPACITY: usize = 16_384;

/// The verified tokens, bounded: a full map first forgets expired tokens, then an arbitrary
/// half (a forgotten token is verified again on its next call, as if never cached).
#[derive(Debug)]
pub(crate) struct VerifiedTokens {
    map: Mutex<HashMap<Box<str>, SessionClaims, SignatureHash>>,
    capacity: usize,
}

/// How many bytes at a token's end are hashed: 16 characters of base64, 96 bits of the
/// token's HMAC.
const HASHED_TAIL: usize = 16;

/// Hashes only the last [`HASHED_TAIL`] bytes of what it is given: of a token, part of its
/// signature. Equal keys still compare whole, so two tokens ending alike are two entries.
/// Safe against collision flooding: only tokens whose signature was checked are inserted, an
/// HMAC's bytes are not chosen by a client, and the hasher's keys are random per process (std's
/// `RandomState`, SipHash).
#[derive(Debug, Default)]
struct SignatureHash(RandomState);

impl BuildHasher for SignatureHash {
    type Hasher = TailHasher;

    fn build_hasher(&self) -> TailHasher {
        TailHasher(self.0.build_hasher())
    }
}

struct TailHasher(DefaultHasher);

impl Hasher for TailHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0
            .write(&bytes[bytes.len().saturating_sub(HASHED_TAIL)..]);
    }

    fn finish(&self) -> u64 {
        self.0.finish()
    }
}

impl VerifiedTokens {
    pub(crate) fn new(capacity: usize) -> Self {
        VerifiedTokens {
            map: Mutex::new(HashMap::default()),
            capacity,
        }
    }

    /// The claims of `token` if it was verified before and has not expired at `now_secs`.
    pub(crate) fn get(&self, token: &str, now_secs: i64) -> Option<SessionClaims> {
        let map = self.map.lock();
        let claims = map.get(token)?;
        // An expired token goes back through the full check, which gives the expiry's error.
        (claims.expires_at > now_secs).then(|| claims.clone())
    }

    /// Remembers the claims of a token whose signature was just checked.
    pub(crate) fn insert(&self, token: &str, claims: &SessionClaims, now_secs: i64) {
        if self.capacity == 0 {
            return;
        }
        let mut map = self.map.lock();
        if map.len() >= self.capacity && !map.contains_key(token) {
            map.retain(|_, claims| claims.expires_at > now_secs);
            if map.len() >= self.capacity {
                let mut keep = false;
                map.retain(|_, _| {
                    keep = !keep;
                    keep
                });
            }
        }
        map.insert(token.into(), claims.clone());
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn claims(expires_at: i64) -> SessionClaims {
        SessionClaims {
            session_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
            username: "alice".into(),
            vars: HashMap::new(),
            expires_at,
            issued_at: 1000,
        }
    }

    #[test]
    fn a_cached_token_is_forgotten_once_expired() {
        let cache = VerifiedTokens::new(8);
        let c = claims(2000);
        cache.insert("token", &c, 1000);
        assert_eq!(cache.get("token", 1999), Some(c));
        assert_eq!(cache.get("token", 2000), None);
        assert_eq!(cache.get("other", 1000), None);
    }

    #[test]
    fn the_cache_never_holds_more_than_its_capacity() {
        let cache = VerifiedTokens::new(64);
        for i in 0..1000 {
            cache.insert(&format!("token-{i}"), &claims(5000), 1000);
            assert!(
                cache.len() <= 64,
                "{} tokens after {i} inserts",
                cache.len()
            );
        }
        // The newest token is always kept.
        assert!(cache.get("token-999", 1000).is_some());
    }

    #[test]
    fn a_full_cache_forgets_expired_tokens_first() {
        let cache = VerifiedTokens::new(4);
        cache.insert("live-1", &claims(5000), 1000);
        cache.insert("old-1", &claims(1500), 1000);
        cache.insert("old-2", &claims(1500), 1000);
        cache.insert("live-2", &claims(5000), 1000);
        cache.insert("new", &claims(5000), 2000);
        assert_eq!(cache.len(), 3);
        for token in ["live-1", "live-2", "new"] {
            assert!(cache.get(token, 2000).is_some(), "{token} was dropped");
        }
    }

    #[test]
    fn only_the_signature_is_hashed() {
        let hash = SignatureHash::default();
        let signature = "Xk3_9fQzW1b2c3d4e5f6g7h8i9j0kLmN";
        assert_eq!(
            hash.hash_one(format!("header.alice.{signature}")),
            hash.hash_one(format!("header.mallory.{signature}"))
        );
        assert_ne!(
            hash.hash_one(format!("header.alice.{signature}")),
            hash.hash_one("header.alice.another-signature-entirely")
        );
    }

    /// Tokens that share a signature's end share a hash; the cache must still tell them apart.
    #[test]
    fn tokens_ending_alike_are_different_tokens() {
        let cache = VerifiedTokens::new(8);
        let c = claims(2000);
        cache.insert("header.alice.SIGNATURE-0123456789", &c, 1000);
        assert_eq!(cache.get("header.mallory.SIGNATURE-0123456789", 1000), None);
        assert_eq!(
            cache.get("header.alice.SIGNATURE-0123456789", 1000),
            Some(c)
        );
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let cache = VerifiedTokens::new(0);
        cache.insert("token", &claims(5000), 1000);
        assert_eq!(cache.len(), 0);
    }
}

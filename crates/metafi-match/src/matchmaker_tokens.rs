//! Matchmaker tokens: what a `matchmaker_matched` message carries when no handler created a
//! match. As in Nakama, an HS256 JWT signed with `session.encryption_key` whose `mid` claim is
//! a fresh relayed match id and whose `exp` is a few seconds away; `match_join` with the token
//! creates or joins that relayed match.

use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::id::MatchId;

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    mid: String,
    exp: i64,
}

/// Signs and checks matchmaker tokens.
pub struct MatchTokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl: Duration,
}

impl std::fmt::Debug for MatchTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchTokens")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A token that is not ours, is expired, or does not name a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Invalid match token")]
pub struct InvalidToken;

impl MatchTokens {
    /// Tokens signed with `key` (the session encryption key), valid for `ttl`.
    pub fn new(key: &[u8], ttl: Duration) -> MatchTokens {
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is checked against the caller's clock.
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        MatchTokens {
            encoding: EncodingKey::from_secret(key),
            decoding: DecodingKey::from_secret(key),
            validation,
            ttl,
        }
    }

    /// A token for a new relayed match.
    pub fn issue(&self, now_secs: i64) -> Option<String> {
        let claims = Claims {
            mid: MatchId::relayed(Uuid::new_v4()).to_string(),
            exp: now_secs.saturating_add(self.ttl.as_secs() as i64),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).ok()
    }

    /// The match a token names.
    pub fn verify(&self, token: &str, now_secs: i64) -> Result<MatchId, InvalidToken> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| InvalidToken)?;
        if data.claims.exp <= now_secs {
            return Err(InvalidToken);
        }
        MatchId::parse(&data.claims.mid).map_err(|_| InvalidToken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_a_relayed_match_and_expire() {
        let tokens = MatchTokens::new(b"defaultencryptionkey", Duration::from_secs(30));
        let token = tokens.issue(1000).unwrap();
        let id = tokens.verify(&token, 1029).unwrap();
        assert!(!id.is_authoritative());
        assert_eq!(tokens.verify(&token, 1030), Err(InvalidToken));
        let other = MatchTokens::new(b"another key", Duration::from_secs(30));
        assert_eq!(other.verify(&token, 1000), Err(InvalidToken));
        assert_eq!(tokens.verify("garbage", 1000), Err(InvalidToken));
    }
}

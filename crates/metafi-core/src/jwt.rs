//! Session and refresh tokens: HS256 JWTs with Nakama's claim names, so client libraries can
//! read the user id, username, variables and expiry from them as they do with Nakama.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CoreError;

/// Which of the two tokens of a session; each is signed with its own key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Session,
    Refresh,
}

/// The verified content of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionClaims {
    /// The session id (`tid`), shared by a session token and its refresh token and kept across
    /// refreshes; revoking it ends both.
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub vars: HashMap<String, String>,
    /// Expiry, seconds since the epoch.
    pub expires_at: i64,
    /// When the session was first issued, seconds since the epoch (kept across refreshes).
    pub issued_at: i64,
}

/// The JWT payload, with Nakama's claim names.
#[derive(Debug, Serialize, Deserialize)]
struct WireClaims {
    tid: String,
    uid: String,
    usn: String,
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    vrs: HashMap<String, String>,
    exp: i64,
    iat: i64,
}

/// Signing keys and lifetimes of both token kinds.
pub struct TokenKeys {
    session_encoding: EncodingKey,
    session_decoding: DecodingKey,
    refresh_encoding: EncodingKey,
    refresh_decoding: DecodingKey,
    header: Header,
    validation: Validation,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKeys { .. }")
    }
}

impl TokenKeys {
    pub fn new(session_key: &[u8], refresh_key: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is checked against our own clock (testable); the library only checks the
        // signature and the algorithm.
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        TokenKeys {
            session_encoding: EncodingKey::from_secret(session_key),
            session_decoding: DecodingKey::from_secret(session_key),
            refresh_encoding: EncodingKey::from_secret(refresh_key),
            refresh_decoding: DecodingKey::from_secret(refresh_key),
            header: Header::new(Algorithm::HS256),
            validation,
        }
    }

    /// Signs a token of `kind` carrying `claims`.
    pub fn sign(&self, kind: TokenKind, claims: &SessionClaims) -> Result<String, CoreError> {
        let wire = WireClaims {
            tid: claims.session_id.to_string(),
            uid: claims.user_id.to_string(),
            usn: claims.username.clone(),
            vrs: claims.vars.clone(),
            exp: claims.expires_at,
            iat: claims.issued_at,
        };
        let key = match kind {
            TokenKind::Session => &self.session_encoding,
            TokenKind::Refresh => &self.refresh_encoding,
        };
        jsonwebtoken::encode(&self.header, &wire, key).map_err(|source| CoreError::Internal {
            operation: "signing a token",
            source: Box::new(source),
        })
    }

    /// Checks the signature and expiry of a token of `kind` and returns its claims.
    pub fn verify(
        &self,
        kind: TokenKind,
        token: &str,
        now_secs: i64,
    ) -> Result<SessionClaims, CoreError> {
        let (key, invalid, expired) = match kind {
            TokenKind::Session => (
                &self.session_decoding,
                "Auth token invalid",
                "Auth token expired, refresh the session or authenticate again",
            ),
            TokenKind::Refresh => (
                &self.refresh_decoding,
                "Refresh token invalid or expired.",
                "Refresh token invalid or expired.",
            ),
        };
        let data = jsonwebtoken::decode::<WireClaims>(token, key, &self.validation)
            .map_err(|_| CoreError::unauthenticated(invalid))?;
        let wire = data.claims;
        let (Ok(session_id), Ok(user_id)) =
            (Uuid::parse_str(&wire.tid), Uuid::parse_str(&wire.uid))
        else {
            return Err(CoreError::unauthenticated(invalid));
        };
        if wire.exp <= now_secs {
            return Err(CoreError::unauthenticated(expired));
        }
        Ok(SessionClaims {
            session_id,
            user_id,
            username: wire.usn,
            vars: wire.vrs,
            expires_at: wire.exp,
            issued_at: wire.iat,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> SessionClaims {
        SessionClaims {
            session_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
            username: "alice".into(),
            vars: HashMap::from([("k".to_string(), "v".to_string())]),
            expires_at: exp,
            issued_at: 1000,
        }
    }

    #[test]
    fn signed_token_verifies_and_round_trips_claims() {
        let keys = TokenKeys::new(b"s", b"r");
        let c = claims(2000);
        let token = keys.sign(TokenKind::Session, &c).unwrap();
        assert_eq!(keys.verify(TokenKind::Session, &token, 1500).unwrap(), c);
    }

    #[test]
    fn token_uses_nakama_claim_names() {
        let keys = TokenKeys::new(b"s", b"r");
        let token = keys.sign(TokenKind::Session, &claims(2000)).unwrap();
        let payload = token.split('.').nth(1).unwrap();
        let json = base64_url_decode(payload);
        for name in [
            "\"tid\"", "\"uid\"", "\"usn\"", "\"vrs\"", "\"exp\"", "\"iat\"",
        ] {
            assert!(json.contains(name), "{name} missing from {json}");
        }
    }

    #[test]
    fn expired_token_is_rejected_with_a_clear_message() {
        let keys = TokenKeys::new(b"s", b"r");
        let token = keys.sign(TokenKind::Session, &claims(2000)).unwrap();
        let err = keys.verify(TokenKind::Session, &token, 2000).unwrap_err();
        assert!(err.client_message().contains("expired"));
    }

    #[test]
    fn refresh_token_is_not_a_session_token() {
        let keys = TokenKeys::new(b"s", b"r");
        let refresh = keys.sign(TokenKind::Refresh, &claims(2000)).unwrap();
        assert!(keys.verify(TokenKind::Session, &refresh, 1500).is_err());
        assert!(keys.verify(TokenKind::Refresh, &refresh, 1500).is_ok());
    }

    #[test]
    fn tampered_token_is_rejected() {
        let keys = TokenKeys::new(b"s", b"r");
        let token = keys.sign(TokenKind::Session, &claims(2000)).unwrap();
        let mut bytes = token.into_bytes();
        let mid = bytes.len() / 2;
        bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(keys.verify(TokenKind::Session, &tampered, 1500).is_err());
        assert!(keys.verify(TokenKind::Session, "garbage", 1500).is_err());
    }

    fn base64_url_decode(s: &str) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut bits = 0u32;
        let mut nbits = 0;
        let mut out = Vec::new();
        for c in s.bytes() {
            let v = ALPHABET.iter().position(|&a| a == c).unwrap() as u32;
            bits = (bits << 6) | v;
            nbits += 6;
            if nbits >= 8 {
                nbits -= 8;
                out.push((bits >> nbits) as u8);
                bits &= (1 << nbits) - 1;
            }
        }
        String::from_utf8(out).unwrap()
    }
}

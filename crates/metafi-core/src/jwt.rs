//! Session and refresh tokens: HS256 JWTs with Nakama's claim names, so client libraries can
//! read the user id, username, variables and expiry from them as they do with Nakama.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use ring::hmac;
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

/// The JWT payload, with Nakama's claim names, as read.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct WireClaims {
    tid: String,
    uid: String,
    usn: String,
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    vrs: HashMap<String, String>,
    exp: i64,
    iat: i64,
}

/// The JWT payload as written: [`WireClaims`] borrowing from [`SessionClaims`] (no copies;
/// the ids are written as the same hyphenated lowercase text `Uuid::to_string` gives).
#[derive(Serialize)]
struct WireClaimsRef<'a> {
    tid: Uuid,
    uid: Uuid,
    usn: &'a str,
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    vrs: &'a HashMap<String, String>,
    exp: i64,
    iat: i64,
}

/// Signing keys and lifetimes of both token kinds.
///
/// Tokens are verified by `jsonwebtoken` but signed here: its `encode` keys a new HMAC (two
/// SHA-256 blocks), serializes the constant header and copies the claims on every call, and a
/// sign-in signs two tokens. The result is byte for byte what `jsonwebtoken::encode` gives (a
/// test compares them).
pub struct TokenKeys {
    /// HMAC-SHA256 keys with their inner and outer pads hashed once.
    session_signing: hmac::Key,
    session_decoding: DecodingKey,
    refresh_signing: hmac::Key,
    refresh_decoding: DecodingKey,
    /// `base64url(header JSON) + "."`, the start of every token.
    header_prefix: String,
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
        // The header as jsonwebtoken writes it for HS256; serializing a struct of two strings
        // cannot fail.
        let header = serde_json::to_vec(&Header::new(Algorithm::HS256)).unwrap_or_default();
        let mut header_prefix = URL_SAFE_NO_PAD.encode(header);
        header_prefix.push('.');
        TokenKeys {
            session_signing: hmac::Key::new(hmac::HMAC_SHA256, session_key),
            session_decoding: DecodingKey::from_secret(session_key),
            refresh_signing: hmac::Key::new(hmac::HMAC_SHA256, refresh_key),
            refresh_decoding: DecodingKey::from_secret(refresh_key),
            header_prefix,
            validation,
        }
    }

    /// Signs a token of `kind` carrying `claims`: `header.claims.signature`, each part
    /// base64url without padding, the signature HMAC-SHA256 over the first two (RFC 7515).
    pub fn sign(&self, kind: TokenKind, claims: &SessionClaims) -> Result<String, CoreError> {
        let wire = WireClaimsRef {
            tid: claims.session_id,
            uid: claims.user_id,
            usn: &claims.username,
            vrs: &claims.vars,
            exp: claims.expires_at,
            iat: claims.issued_at,
        };
        // Two ids, two numbers and the names fit in 256 bytes; a long username or vars grow it.
        let mut json = Vec::with_capacity(256);
        serde_json::to_writer(&mut json, &wire).map_err(|source| CoreError::Internal {
            operation: "signing a token",
            source: Box::new(source),
        })?;
        let key = match kind {
            TokenKind::Session => &self.session_signing,
            TokenKind::Refresh => &self.refresh_signing,
        };
        // base64 of n bytes is at most 4 (n + 2) / 3 characters; a signature is 32 bytes (43).
        let mut token =
            String::with_capacity(self.header_prefix.len() + 4 * (json.len() + 2) / 3 + 1 + 43);
        token.push_str(&self.header_prefix);
        URL_SAFE_NO_PAD.encode_string(&json, &mut token);
        let signature = hmac::sign(key, token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut token);
        Ok(token)
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

    /// Tokens are signed here, not by jsonwebtoken: they must be exactly what its `encode`
    /// gives for the same claims (header, the claims' JSON with escapes, signature), with and
    /// without vars, for both keys.
    #[test]
    fn signed_token_is_byte_for_byte_what_jsonwebtoken_signs() {
        let keys = TokenKeys::new(b"session-key", b"refresh-key");
        let with_vars = HashMap::from([
            ("k".to_string(), "v \"quoted\" é\n".to_string()),
            ("k2".to_string(), String::new()),
        ]);
        for vars in [HashMap::new(), with_vars] {
            let c = SessionClaims {
                username: "ál\"ice\\".into(),
                vars,
                ..claims(2000)
            };
            let wire = WireClaims {
                tid: c.session_id.to_string(),
                uid: c.user_id.to_string(),
                usn: c.username.clone(),
                vrs: c.vars.clone(),
                exp: c.expires_at,
                iat: c.issued_at,
            };
            for (kind, secret) in [
                (TokenKind::Session, b"session-key".as_slice()),
                (TokenKind::Refresh, b"refresh-key".as_slice()),
            ] {
                let expected = jsonwebtoken::encode(
                    &Header::new(Algorithm::HS256),
                    &wire,
                    &jsonwebtoken::EncodingKey::from_secret(secret),
                )
                .unwrap();
                assert_eq!(keys.sign(kind, &c).unwrap(), expected);
            }
        }
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

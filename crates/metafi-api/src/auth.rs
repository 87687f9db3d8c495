//! The two ways a REST call proves who it is: the server key (HTTP basic auth, for the
//! authenticate calls) and a session token (bearer, for everything a signed-in user does).

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use metafi_core::SessionClaims;
use metafi_proto::Code;

use crate::{ApiError, ApiState};

/// Proof that the request carried the server key as its basic-auth username.
#[derive(Debug)]
pub struct ServerKeyAuth;

impl FromRequestParts<ApiState> for ServerKeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        let header = authorization(parts)
            .ok_or_else(|| ApiError::new(Code::Unauthenticated, "Server key required"))?;
        let username = basic_username(header)
            .ok_or_else(|| ApiError::new(Code::Unauthenticated, "Server key invalid"))?;
        if !constant_time_eq(username.as_bytes(), state.config.server_key.as_bytes()) {
            return Err(ApiError::new(Code::Unauthenticated, "Server key invalid"));
        }
        Ok(ServerKeyAuth)
    }
}

/// The verified session of a bearer token.
#[derive(Debug)]
pub struct SessionAuth(pub SessionClaims);

impl FromRequestParts<ApiState> for SessionAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        let header = authorization(parts)
            .ok_or_else(|| ApiError::new(Code::Unauthenticated, "Auth token required"))?;
        let token = header
            .strip_prefix("Bearer ")
            .ok_or_else(|| ApiError::new(Code::Unauthenticated, "Auth token invalid"))?;
        Ok(SessionAuth(state.sessions.verify(token)?))
    }
}

fn authorization(parts: &Parts) -> Option<&str> {
    parts.headers.get(AUTHORIZATION)?.to_str().ok()
}

/// The username part of `Basic base64(username:password)` (the server key of the authenticate
/// calls, the HTTP key of an RPC).
pub(crate) fn basic_username(header: &str) -> Option<String> {
    let encoded = header.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (username, _password) = text.split_once(':')?;
    Some(username.to_owned())
}

/// Compares secrets without an early exit, so timing does not reveal how much of a key matched.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_username_parses_user_and_ignores_password() {
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("defaultkey:")
        );
        assert_eq!(basic_username(&header).as_deref(), Some("defaultkey"));
        assert_eq!(basic_username("Basic !!!"), None);
        assert_eq!(basic_username("Bearer x"), None);
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}

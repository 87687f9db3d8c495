//! Sessions (`Sessions`): issuing session and refresh token pairs, checking bearer tokens,
//! refresh and logout. The tokens themselves (HS256 JWTs, their claims and keys) are `jwt.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_proto::api::Session;
use metafi_storage::{Revocation, Storage, UserRevocation};
use uuid::Uuid;

use crate::verified_tokens::{self, VerifiedTokens};
use crate::{Clock, CoreError, Revocations, SessionClaims, TokenKeys, TokenKind};

/// Token lifetimes.
#[derive(Debug, Clone)]
pub struct SessionsConfig {
    pub token_expiry_sec: i64,
    pub refresh_token_expiry_sec: i64,
}

/// Issues and checks session tokens.
#[derive(Debug)]
pub struct Sessions {
    keys: TokenKeys,
    config: SessionsConfig,
    revocations: Revocations,
    /// Session tokens whose signature was checked, so a client's next call skips the HMAC and
    /// the claims' JSON; expiry and revocation are still checked on every call.
    verified: VerifiedTokens,
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
}

impl Sessions {
    pub fn new(
        keys: TokenKeys,
        config: SessionsConfig,
        revocations: Revocations,
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Sessions {
            keys,
            config,
            revocations,
            verified: VerifiedTokens::new(verified_tokens::DEFAULT_CAPACITY),
            store,
            clock,
        }
    }

    /// Remembers at most `capacity` verified session tokens (0: verify every call in full).
    pub fn with_verified_token_capacity(mut self, capacity: usize) -> Self {
        self.verified = VerifiedTokens::new(capacity);
        self
    }

    /// Starts a new session for a user that just authenticated.
    pub fn issue(
        &self,
        user_id: Uuid,
        username: &str,
        vars: HashMap<String, String>,
        created: bool,
    ) -> Result<Session, CoreError> {
        self.issue_with_claims(user_id, username, vars, created)
            .map(|(session, _)| session)
    }

    /// [`Sessions::issue`], also answering the session token's claims: a sign-in's after hook
    /// runs as the new session's user (its id, name, vars and expiry), as Nakama's does.
    pub fn issue_with_claims(
        &self,
        user_id: Uuid,
        username: &str,
        vars: HashMap<String, String>,
        created: bool,
    ) -> Result<(Session, SessionClaims), CoreError> {
        let now = self.clock.now_secs();
        let issued_at = self.issued_at(user_id, now);
        let mut claims = SessionClaims {
            session_id: crate::random_uuid(),
            user_id,
            username: username.to_owned(),
            vars,
            expires_at: 0,
            issued_at,
        };
        let session = self.sign_pair(&mut claims, created)?;
        Ok((session, claims))
    }

    /// A session token (no refresh token) for a user, as server code mints it
    /// (`nk.authenticate_token_generate`): expiring at `expires_at` (Unix seconds), or after
    /// the configured lifetime when `None`. Returns the token and its expiry.
    pub fn issue_token(
        &self,
        user_id: Uuid,
        username: &str,
        expires_at: Option<i64>,
        vars: HashMap<String, String>,
    ) -> Result<(String, i64), CoreError> {
        let now = self.clock.now_secs();
        let expires_at = expires_at.unwrap_or(now + self.config.token_expiry_sec);
        let claims = SessionClaims {
            session_id: crate::random_uuid(),
            user_id,
            username: username.to_owned(),
            vars,
            expires_at,
            issued_at: self.issued_at(user_id, now),
        };
        Ok((self.keys.sign(TokenKind::Session, &claims)?, expires_at))
    }

    /// Checks a session token from an `Authorization: Bearer` header or a socket URL: signature,
    /// expiry and revocation. No database access. The signature of a token seen before is not
    /// checked again (its claims are remembered); expiry and revocation are, on every call.
    pub fn verify(&self, token: &str) -> Result<SessionClaims, CoreError> {
        let now = self.clock.now_secs();
        let claims = match self.verified.get(token, now) {
            Some(claims) => claims,
            None => {
                let claims = self.keys.verify(TokenKind::Session, token, now)?;
                self.verified.insert(token, &claims, now);
                claims
            }
        };
        if self
            .revocations
            .is_revoked(claims.session_id, claims.user_id, claims.issued_at)
        {
            // Nakama's exact answer for a logged-out session.
            return Err(CoreError::unauthenticated("Auth token invalid"));
        }
        Ok(claims)
    }

    /// Exchanges a refresh token for a new token pair of the same session. The user must still
    /// exist and not be banned; its current username goes into the new tokens.
    pub async fn refresh(
        &self,
        refresh_token: &str,
        vars: Option<HashMap<String, String>>,
    ) -> Result<Session, CoreError> {
        if refresh_token.is_empty() {
            return Err(CoreError::invalid("Refresh token is required."));
        }
        let claims = self
            .keys
            .verify(TokenKind::Refresh, refresh_token, self.clock.now_secs())?;
        if self
            .revocations
            .is_revoked(claims.session_id, claims.user_id, claims.issued_at)
        {
            return Err(CoreError::unauthenticated(
                "Refresh token invalid or expired.",
            ));
        }
        let users = self
            .store
            .users_by_id(&[claims.user_id])
            .await
            .map_err(|e| CoreError::storage("looking up the user of a refresh token", e))?;
        let Some(user) = users.into_iter().next() else {
            return Err(CoreError::not_found("User account not found."));
        };
        if user.disable_time_ms.is_some() {
            return Err(CoreError::permission_denied("User account banned."));
        }
        let vars = vars.unwrap_or(claims.vars);
        self.sign_pair(
            &mut SessionClaims {
                username: user.username,
                vars,
                ..claims
            },
            false,
        )
    }

    /// Ends the session of the given tokens; each must belong to the caller. With neither
    /// token, every session of the caller ends ("log out everywhere"), as in Nakama.
    pub async fn logout(
        &self,
        current: &SessionClaims,
        token: &str,
        refresh_token: &str,
    ) -> Result<(), CoreError> {
        self.logout_user(current.user_id, token, refresh_token)
            .await
    }

    /// Ends every session of a user (a ban, a deleted account): its tokens issued until now
    /// stop working, on REST and on sockets that connect later.
    pub async fn end_all(&self, user_id: Uuid) -> Result<(), CoreError> {
        self.logout_user(user_id, "", "").await
    }

    /// [`Sessions::logout`] for a user named by id (server code's `nk.session_logout`).
    pub async fn logout_user(
        &self,
        user_id: Uuid,
        token: &str,
        refresh_token: &str,
    ) -> Result<(), CoreError> {
        let now_ms = self.clock.now_ms();
        let mut ended: Vec<(Uuid, i64)> = Vec::with_capacity(2);
        if !token.is_empty() {
            // An expired token can still be logged out; only its signature and owner matter.
            let claims = self
                .keys
                .verify(TokenKind::Session, token, i64::MIN)
                .map_err(|_| CoreError::invalid("Session token invalid."))?;
            if claims.user_id != user_id {
                return Err(CoreError::invalid("Session token invalid."));
            }
            ended.push((claims.session_id, claims.expires_at));
        }
        if !refresh_token.is_empty() {
            let claims = self
                .keys
                .verify(TokenKind::Refresh, refresh_token, i64::MIN)
                .map_err(|_| CoreError::invalid("Refresh token invalid."))?;
            if claims.user_id != user_id {
                return Err(CoreError::invalid("Refresh token invalid."));
            }
            ended.push((claims.session_id, claims.expires_at));
        }
        if ended.is_empty() {
            return self
                .revocations
                .revoke_user(UserRevocation {
                    user_id,
                    issued_before_secs: self.clock.now_secs(),
                    // Tokens issued up to now live at most one refresh lifetime from now.
                    expires_at_ms: now_ms + self.config.refresh_token_expiry_sec * 1000,
                })
                .await;
        }
        for (session_id, expires_at) in ended {
            // Keep the revocation until the refresh token of the session could have expired:
            // a refresh issues new tokens of the same session id.
            let horizon =
                (expires_at * 1000).max(now_ms) + self.config.refresh_token_expiry_sec * 1000;
            self.revocations
                .revoke(Revocation {
                    session_id,
                    user_id,
                    expires_at_ms: horizon,
                })
                .await?;
        }
        Ok(())
    }

    /// The deny-list, for housekeeping and metrics.
    pub fn revocations(&self) -> &Revocations {
        &self.revocations
    }

    /// The issue time of a new token. A sign-in in the same second as a "log out everywhere"
    /// must not be caught by it: revocations cover tokens issued at or before their second.
    fn issued_at(&self, user_id: Uuid, now: i64) -> i64 {
        match self.revocations.user_revoked_before(user_id) {
            Some(before) if before >= now => before + 1,
            _ => now,
        }
    }

    /// Signs the session and refresh tokens of `claims`, leaving in them the session token's
    /// expiry.
    fn sign_pair(&self, claims: &mut SessionClaims, created: bool) -> Result<Session, CoreError> {
        let now = self.clock.now_secs();
        claims.expires_at = now + self.config.refresh_token_expiry_sec;
        let refresh_token = self.keys.sign(TokenKind::Refresh, claims)?;
        claims.expires_at = now + self.config.token_expiry_sec;
        let token = self.keys.sign(TokenKind::Session, claims)?;
        Ok(Session {
            created,
            token,
            refresh_token,
        })
    }
}

#[cfg(test)]
mod tests {
    use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

    use super::*;
    use crate::ManualClock;

    const NOW_MS: i64 = 1_700_000_000_000;

    async fn sessions(dir: &std::path::Path) -> (Sessions, Arc<ManualClock>) {
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.join("sessions.db"),
                readers: 1,
                ..SqliteConfig::default()
            })
            .expect("open"),
        );
        let clock = Arc::new(ManualClock::new(NOW_MS));
        let revocations = Revocations::load(store.clone(), NOW_MS)
            .await
            .expect("revocations");
        let sessions = Sessions::new(
            TokenKeys::new(b"session-key", b"refresh-key"),
            SessionsConfig {
                token_expiry_sec: 60,
                refresh_token_expiry_sec: 3600,
            },
            revocations,
            store,
            clock.clone(),
        );
        (sessions, clock)
    }

    /// The verified-token cache must not outlive a logout: the second `verify` is answered
    /// from the cache, and the logout between the third and fourth must still refuse it.
    #[tokio::test]
    async fn a_cached_token_is_refused_at_once_after_its_logout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (sessions, _clock) = sessions(dir.path()).await;
        let user_id = Uuid::new_v4();
        let session = sessions
            .issue(user_id, "alice", HashMap::new(), false)
            .expect("issue");
        let first = sessions.verify(&session.token).expect("fresh token");
        assert_eq!(sessions.verified.len(), 1);
        assert_eq!(sessions.verify(&session.token).expect("cached"), first);
        sessions
            .logout(&first, &session.token, "")
            .await
            .expect("logout");
        let error = sessions.verify(&session.token).unwrap_err();
        assert_eq!(error.client_message(), "Auth token invalid");
    }

    /// A ban ends every session of the user ("log out everywhere"): cached tokens included.
    #[tokio::test]
    async fn a_cached_token_is_refused_at_once_after_a_ban() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (sessions, _clock) = sessions(dir.path()).await;
        let user_id = Uuid::new_v4();
        let session = sessions
            .issue(user_id, "alice", HashMap::new(), false)
            .expect("issue");
        sessions.verify(&session.token).expect("fresh token");
        sessions.end_all(user_id).await.expect("ban");
        let error = sessions.verify(&session.token).unwrap_err();
        assert_eq!(error.client_message(), "Auth token invalid");
    }

    #[tokio::test]
    async fn a_cached_token_expires_with_the_expiry_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (sessions, clock) = sessions(dir.path()).await;
        let session = sessions
            .issue(Uuid::new_v4(), "alice", HashMap::new(), false)
            .expect("issue");
        sessions.verify(&session.token).expect("fresh token");
        clock.advance_ms(60_000);
        let error = sessions.verify(&session.token).unwrap_err();
        assert!(error.client_message().contains("expired"), "{error:?}");
    }

    #[tokio::test]
    async fn a_tampered_token_is_refused_even_when_its_original_is_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (sessions, _clock) = sessions(dir.path()).await;
        let session = sessions
            .issue(Uuid::new_v4(), "alice", HashMap::new(), false)
            .expect("issue");
        sessions.verify(&session.token).expect("fresh token");
        let tampered = format!("{}x", session.token);
        assert!(sessions.verify(&tampered).is_err());
        assert_eq!(sessions.verified.len(), 1);
    }
}

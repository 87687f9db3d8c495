//! The `[session]` keys, checked: token keys and lifetimes, and how often revocations are purged.
//! (`session.single_socket` belongs to the realtime sessions: see `socket`.)

use std::time::Duration;

use metafi_core::SessionsConfig;

use super::check::Checker;
use super::raw::RawSession;

/// Ten years: the longest a token may live.
const MAX_EXPIRY_SEC: i64 = 10 * 365 * 86_400;

/// The most verified tokens a node may remember: about 400 bytes each, 400 MB at this bound.
const MAX_VERIFIED_TOKENS: i64 = 1_000_000;

/// The validated `[session]` section.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub lifetimes: SessionsConfig,
    pub revocation_purge_interval: Duration,
    /// How many verified session tokens' claims are remembered (0: none).
    pub verified_token_cache_size: usize,
}

pub(super) fn validate(s: &RawSession, check: &mut Checker) -> SessionSettings {
    let lifetimes = SessionsConfig {
        token_expiry_sec: check.range(
            "session.token_expiry_sec",
            s.token_expiry_sec,
            1,
            MAX_EXPIRY_SEC,
        ),
        refresh_token_expiry_sec: check.range(
            "session.refresh_token_expiry_sec",
            s.refresh_token_expiry_sec,
            1,
            MAX_EXPIRY_SEC,
        ),
    };
    let revocation_purge_interval = check.secs(
        "session.revocation_purge_interval_sec",
        s.revocation_purge_interval_sec,
        1,
        86_400,
    );
    let verified_token_cache_size = usize::try_from(check.range(
        "session.verified_token_cache_size",
        s.verified_token_cache_size,
        0,
        MAX_VERIFIED_TOKENS,
    ))
    .unwrap_or_default();
    if s.encryption_key.is_empty() || s.refresh_encryption_key.is_empty() {
        check.problem(
            "session.encryption_key and session.refresh_encryption_key: must not be empty",
        );
    } else if s.encryption_key == s.refresh_encryption_key {
        check.problem(
            "session.refresh_encryption_key: must differ from session.encryption_key, or a refresh token would pass as a session token",
        );
    }
    SessionSettings {
        encryption_key: s.encryption_key.clone(),
        refresh_encryption_key: s.refresh_encryption_key.clone(),
        lifetimes,
        revocation_purge_interval,
        verified_token_cache_size,
    }
}

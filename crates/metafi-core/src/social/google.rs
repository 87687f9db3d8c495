//! Google: an RS256 id token from Google's key set, issued by `accounts.google.com` (with or
//! without `https://`), with an expiry, and (when client ids are configured) for one of them.
//! Nakama's fallback for Play Games server auth codes needs Google credentials and is not
//! served: such a code fails like any invalid token.

use super::jwks::{audience_matches, string_claim};
use super::{Profile, Verifier, VerifyError};

pub(crate) const ISSUERS: [&str; 2] = ["accounts.google.com", "https://accounts.google.com"];

/// Nakama's column widths: longer values from Google are dropped, not cut.
const MAX_DISPLAY_NAME: usize = 255;
const MAX_AVATAR_URL: usize = 512;

pub(crate) async fn verify(verifier: &Verifier, token: &str) -> Result<Profile, VerifyError> {
    let claims = verifier
        .google_keys
        .verify(&verifier.fetcher, token, verifier.clock.now_ms(), true)
        .await?;
    let issuer = string_claim(&claims, "iss")?;
    if !issuer.is_some_and(|iss| ISSUERS.contains(&iss)) {
        return Err(VerifyError::invalid("unexpected issuer"));
    }
    for required in ["azp", "aud"] {
        if string_claim(&claims, required)?.is_none() {
            return Err(VerifyError::invalid(format!(
                "google id token {required} field missing"
            )));
        }
    }
    let client_ids = &verifier.config.google_client_ids;
    if !client_ids.is_empty() && !audience_matches(&claims, client_ids) {
        return Err(VerifyError::invalid("unexpected audience"));
    }
    let id = string_claim(&claims, "sub")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| VerifyError::invalid("google id token sub field missing"))?;
    let name = string_claim(&claims, "name")?.unwrap_or("");
    let picture = string_claim(&claims, "picture")?.unwrap_or("");
    Ok(Profile {
        id: id.to_owned(),
        display_name: fitting(name, MAX_DISPLAY_NAME),
        avatar_url: fitting(picture, MAX_AVATAR_URL),
        email: string_claim(&claims, "email")?.unwrap_or("").to_owned(),
        ..Profile::default()
    })
}

/// The value when it fits Nakama's column, else nothing.
fn fitting(value: &str, max: usize) -> String {
    if value.chars().count() <= max {
        value.to_owned()
    } else {
        String::new()
    }
}

//! Sign in with Apple: an RS256 id token from Apple's key set, issued by
//! `https://appleid.apple.com` for the configured bundle id (Nakama 3.40 leaves the audience
//! unchecked; MetaFi checks it, so a token issued to another app is refused).

use super::jwks::{audience_matches, string_claim};
use super::{Profile, Verifier, VerifyError};

pub(crate) const ISSUER: &str = "https://appleid.apple.com";

pub(crate) async fn verify(verifier: &Verifier, token: &str) -> Result<Profile, VerifyError> {
    let bundle_id = &verifier.config.apple_bundle_id;
    if bundle_id.is_empty() {
        return Err(VerifyError::invalid("apple sign in not enabled"));
    }
    let claims = verifier
        .apple_keys
        .verify(&verifier.fetcher, token, verifier.clock.now_ms(), false)
        .await?;
    if string_claim(&claims, "iss")? != Some(ISSUER) {
        return Err(VerifyError::invalid("unexpected issuer"));
    }
    if !audience_matches(&claims, std::slice::from_ref(bundle_id)) {
        return Err(VerifyError::invalid("unexpected audience"));
    }
    let id = string_claim(&claims, "sub")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| VerifyError::invalid("apple id token sub field missing"))?;
    Ok(Profile {
        id: id.to_owned(),
        email: string_claim(&claims, "email")?.unwrap_or("").to_owned(),
        ..Profile::default()
    })
}

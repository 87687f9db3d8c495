//! Facebook: a Limited Login id token (RS256 from Facebook's key set, issued by
//! `https://www.facebook.com` or `https://facebook.com`, for the configured app id when one
//! is set) or else a classic access token, which the Graph API's `me` endpoint answers for.

use serde::Deserialize;

use super::jwks::{audience_matches, string_claim};
use super::{Profile, Verifier, VerifyError};

const ISSUERS: [&str; 2] = ["https://www.facebook.com", "https://facebook.com"];

#[derive(Deserialize, Default)]
#[serde(default)]
struct GraphProfile {
    id: String,
    name: String,
    email: String,
    picture: GraphPicture,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct GraphPicture {
    data: GraphPictureData,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct GraphPictureData {
    url: String,
}

pub(crate) async fn verify(verifier: &Verifier, token: &str) -> Result<Profile, VerifyError> {
    // Only a JWT can be a Limited Login token; an access token goes straight to the Graph API.
    if token.split('.').count() == 3 {
        match limited_login(verifier, token).await {
            Ok(profile) => return Ok(profile),
            Err(e) => tracing::debug!(error = %e, "not a facebook limited login token"),
        }
    }
    graph(verifier, token).await
}

async fn limited_login(verifier: &Verifier, token: &str) -> Result<Profile, VerifyError> {
    let claims = verifier
        .facebook_keys
        .verify(&verifier.fetcher, token, verifier.clock.now_ms(), false)
        .await?;
    if !string_claim(&claims, "iss")?.is_some_and(|iss| ISSUERS.contains(&iss)) {
        return Err(VerifyError::invalid("unexpected issuer"));
    }
    let app_id = &verifier.config.facebook_limited_login_app_id;
    if !app_id.is_empty() && !audience_matches(&claims, std::slice::from_ref(app_id)) {
        return Err(VerifyError::invalid("unexpected audience"));
    }
    let id = string_claim(&claims, "sub")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| VerifyError::invalid("facebook limited login token sub field missing"))?;
    Ok(Profile {
        id: id.to_owned(),
        display_name: string_claim(&claims, "name")?.unwrap_or("").to_owned(),
        avatar_url: string_claim(&claims, "picture")?.unwrap_or("").to_owned(),
        email: string_claim(&claims, "email")?.unwrap_or("").to_owned(),
        ..Profile::default()
    })
}

async fn graph(verifier: &Verifier, token: &str) -> Result<Profile, VerifyError> {
    let mut url = reqwest::Url::parse(&verifier.config.facebook_graph_url)
        .map_err(|e| VerifyError::invalid(format!("facebook graph url: {e}")))?;
    url.query_pairs_mut()
        .append_pair("access_token", token)
        .append_pair("fields", "id,name,email,picture");
    let body = verifier
        .fetcher
        .get("facebook profile", url.as_str())
        .await?;
    let profile: GraphProfile = serde_json::from_slice(&body)
        .map_err(|e| VerifyError::invalid(format!("malformed facebook profile: {e}")))?;
    if profile.id.is_empty() {
        return Err(VerifyError::invalid("facebook profile without an id"));
    }
    Ok(Profile {
        id: profile.id,
        display_name: profile.name,
        avatar_url: profile.picture.data.url,
        email: profile.email,
        access_token: true,
    })
}

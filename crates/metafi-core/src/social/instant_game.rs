//! Facebook Instant Games: signed player info `signature.payload`, both base64url; the
//! signature is an HMAC of the payload text with the app secret, the payload a JSON object
//! naming the `algorithm` and the `player_id`. Checked locally, as Nakama.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::{Profile, SocialConfig, VerifyError};

#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    algorithm: String,
    #[serde(default)]
    player_id: String,
}

pub(crate) fn verify(
    config: &SocialConfig,
    signed_player_info: &str,
) -> Result<Profile, VerifyError> {
    let mut parts = signed_player_info.split('.');
    let (Some(signature), Some(payload), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(VerifyError::invalid("malformed signedPlayerInfo"));
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| VerifyError::invalid(format!("payload not base64url: {e}")))?;
    let decoded: Payload = serde_json::from_slice(&raw)
        .map_err(|e| VerifyError::invalid(format!("malformed payload: {e}")))?;
    let algorithm = match decoded.algorithm.as_str() {
        "HMAC-SHA256" | "HS256" => Algorithm::HS256,
        "HS384" => Algorithm::HS384,
        "HS512" => Algorithm::HS512,
        _ => return Err(VerifyError::invalid("invalid signing method")),
    };
    if config.facebook_instant_game_app_secret.is_empty() {
        return Err(VerifyError::invalid("no app secret configured"));
    }
    let key = DecodingKey::from_secret(config.facebook_instant_game_app_secret.as_bytes());
    let valid = jsonwebtoken::crypto::verify(signature, payload.as_bytes(), &key, algorithm)
        .map_err(|e| VerifyError::invalid(format!("failed to decode signature: {e}")))?;
    if !valid {
        return Err(VerifyError::invalid("signature is invalid"));
    }
    if decoded.player_id.is_empty() {
        return Err(VerifyError::invalid("no player_id"));
    }
    Ok(Profile {
        id: decoded.player_id,
        ..Profile::default()
    })
}

//! Game Center: the device signs `player_id ‖ bundle_id ‖ timestamp (8 bytes, big-endian) ‖
//! salt` with RSA-SHA256 (PKCS#1 v1.5); the certificate with the public key is fetched from
//! the URL the client gives, which must be an `https` URL on a `*.apple.com` host with a path
//! (Nakama's rule), or start with a configured extra prefix (tests, private mirrors).

use base64::Engine as _;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

use super::{Profile, Verifier, VerifyError};

/// What a Game Center sign-in sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GameCenterProof {
    pub player_id: String,
    pub bundle_id: String,
    pub timestamp_seconds: i64,
    /// Base64 (standard alphabet).
    pub salt: String,
    /// Base64 (standard alphabet).
    pub signature: String,
    pub public_key_url: String,
}

impl GameCenterProof {
    /// Whether every field is set (Nakama's unlink checks the proof only then).
    pub fn is_complete(&self) -> bool {
        !self.player_id.is_empty()
            && !self.bundle_id.is_empty()
            && !self.public_key_url.is_empty()
            && !self.salt.is_empty()
            && !self.signature.is_empty()
            && self.timestamp_seconds != 0
    }
}

pub(crate) async fn verify(
    verifier: &Verifier,
    proof: &GameCenterProof,
) -> Result<Profile, VerifyError> {
    check_key_url(
        &proof.public_key_url,
        &verifier.config.game_center_extra_key_url_prefixes,
    )?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let salt = b64
        .decode(&proof.salt)
        .map_err(|_| VerifyError::invalid("error decoding salt"))?;
    let signature = b64
        .decode(&proof.signature)
        .map_err(|_| VerifyError::invalid("error decoding signature"))?;
    let body = verifier
        .fetcher
        .get("apple public key url", &proof.public_key_url)
        .await?;
    let der = match CertificateDer::from_pem_slice(&body) {
        Ok(der) => der,
        // Apple serves the certificate as raw DER.
        Err(_) => CertificateDer::from(body),
    };
    let cert = webpki::EndEntityCert::try_from(&der)
        .map_err(|e| VerifyError::invalid(format!("error parsing public key: {e}")))?;
    let mut message =
        Vec::with_capacity(proof.player_id.len() + proof.bundle_id.len() + 8 + salt.len());
    message.extend_from_slice(proof.player_id.as_bytes());
    message.extend_from_slice(proof.bundle_id.as_bytes());
    message.extend_from_slice(&proof.timestamp_seconds.to_be_bytes());
    message.extend_from_slice(&salt);
    cert.verify_signature(
        webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        &message,
        &signature,
    )
    .map_err(|e| VerifyError::invalid(format!("signature mismatch: {e}")))?;
    Ok(Profile {
        id: proof.player_id.clone(),
        ..Profile::default()
    })
}

/// Nakama's rule for the public key URL, plus the configured prefixes.
fn check_key_url(url: &str, extra_prefixes: &[String]) -> Result<(), VerifyError> {
    if extra_prefixes
        .iter()
        .any(|p| !p.is_empty() && url.starts_with(p.as_str()))
    {
        return Ok(());
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| VerifyError::invalid(format!("invalid public key url: {e}")))?;
    if parsed.scheme() != "https" {
        return Err(VerifyError::invalid("invalid public key url scheme"));
    }
    if matches!(parsed.path(), "" | "/") {
        return Err(VerifyError::invalid("invalid public key url path"));
    }
    let host = parsed.host_str().unwrap_or("");
    if !host.ends_with(".apple.com") || parsed.port().is_some() {
        return Err(VerifyError::invalid("invalid public key url domain"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_apple_hosts_with_a_path_are_accepted() {
        let ok = "https://static.gc.apple.com/public-key/gc-prod-10.cer";
        assert!(check_key_url(ok, &[]).is_ok());
        for bad in [
            "http://static.gc.apple.com/public-key/gc-prod-10.cer",
            "https://static.gc.apple.com/",
            "https://static.gc.apple.com",
            "https://apple.com.evil.example/key.cer",
            "https://evilapple.com/key.cer",
            "https://static.gc.apple.com:8443/key.cer",
            "not a url",
        ] {
            assert!(check_key_url(bad, &[]).is_err(), "{bad}");
        }
        let extra = vec!["http://127.0.0.1:18700/".to_owned()];
        assert!(check_key_url("http://127.0.0.1:18700/gc.cer", &extra).is_ok());
        assert!(check_key_url("http://127.0.0.1:18701/gc.cer", &extra).is_err());
    }
}

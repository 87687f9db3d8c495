//! Apple's signed transactions (StoreKit 2 JWS, and the `signedPayload` of App Store Server
//! Notifications v2): three base64url parts, `header.payload.signature`. As Nakama's
//! `ValidateAppleJwsSignature`: the header's `x5c` holds at least three certificates (leaf,
//! intermediate, root); the leaf must chain through the intermediate to a trusted root (Apple
//! Root CA - G3, embedded; configurable so tests can use a chain made at test time), every
//! certificate within its validity at the server's clock; then the ES256 signature (64 bytes,
//! `r || s`) over `header.payload` must verify with the leaf's P-256 key. Only then is the
//! payload decoded.
//!
//! Errors are Nakama's texts where Go writes its own (`invalid jws header: x5c field must
//! contain at least 3 certificates`, `invalid jws signature: ecdsa verification failed`,
//! `x509: certificate signed by unknown authority`, …); they reach the client as code 2, as in
//! Nakama.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rustls_pki_types::{CertificateDer, UnixTime};
use serde::Deserialize;

/// Apple Root CA - G3 (public; <https://www.apple.com/certificateauthority/>), the root of
/// every App Store signing chain.
pub const APPLE_ROOT_CA_G3_PEM: &str = "-----BEGIN CERTIFICATE-----
MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
6BgD56KyKA==
-----END CERTIFICATE-----
";

/// The OID of id-kp-serverAuth: Go's default key usage when verifying, accepted when the leaf
/// names no extended key usage at all (as Apple's do not).
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];

/// Reads PEM text into DER certificates (every `CERTIFICATE` block).
pub fn certificates_from_pem(pem: &str) -> Result<Vec<Vec<u8>>, String> {
    use rustls_pki_types::pem::PemObject as _;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.map(|c| c.as_ref().to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid PEM certificate: {e:?}"))?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

/// The embedded Apple Root CA - G3, as DER.
pub fn apple_root_g3() -> Vec<u8> {
    // The constant is a valid certificate (unit-tested).
    certificates_from_pem(APPLE_ROOT_CA_G3_PEM)
        .ok()
        .and_then(|mut c| c.pop())
        .unwrap_or_default()
}

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    x5c: Vec<String>,
}

/// Verifies a JWS signed by Apple's chain at time `now_ms`; returns its decoded payload bytes.
/// `roots` are the trusted root certificates (DER).
pub fn verify(jws: &str, roots: &[Vec<u8>], now_ms: i64) -> Result<Vec<u8>, String> {
    let parts: Vec<&str> = jws.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err(format!(
            "invalid jws format: expected 3 parts, got {}",
            parts.len()
        ));
    };
    let header_bytes = decode_url(header)?;
    let header_json: Header = serde_json::from_slice(&header_bytes).map_err(|e| e.to_string())?;
    if header_json.x5c.len() < 3 {
        return Err("invalid jws header: x5c field must contain at least 3 certificates".into());
    }
    let chain = header_json
        .x5c
        .iter()
        .map(|c| {
            STANDARD
                .decode(c)
                .map(CertificateDer::from)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = webpki::EndEntityCert::try_from(&chain[0]).map_err(x509)?;
    let anchors = roots
        .iter()
        .map(|der| CertificateDer::from(der.as_slice()))
        .collect::<Vec<_>>();
    let anchors = anchors
        .iter()
        .filter_map(|der| webpki::anchor_from_trusted_cert(der).ok())
        .collect::<Vec<_>>();
    if anchors.is_empty() {
        return Err("failed to parse AppleRootPEM".into());
    }
    let now = UnixTime::since_unix_epoch(std::time::Duration::from_millis(
        u64::try_from(now_ms).unwrap_or(0),
    ));
    leaf.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        &chain[1..],
        now,
        webpki::KeyUsage::required_if_present(SERVER_AUTH),
        None,
        None,
    )
    .map_err(x509)?;

    let signature =
        decode_url(signature).map_err(|e| format!("failed to decode jws signature: {e}"))?;
    if signature.len() != 64 {
        return Err(format!(
            "invalid jws signature: invalid length {}, expected 64",
            signature.len()
        ));
    }
    let signed = format!("{header}.{payload}");
    leaf.verify_signature(
        webpki::ring::ECDSA_P256_SHA256,
        signed.as_bytes(),
        &der_signature(&signature),
    )
    .map_err(|e| match e {
        webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
            "failed to parse leaf certificate public key".to_owned()
        }
        _ => "invalid jws signature: ecdsa verification failed".to_owned(),
    })?;
    decode_url(payload)
}

/// A JWS part: base64url without padding (Apple's); standard base64 accepted too.
pub(super) fn decode_part(part: &str) -> Result<Vec<u8>, String> {
    decode_url(part)
}

fn decode_url(part: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(part)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(part))
        .map_err(|e| e.to_string())
}

/// A chain failure in the words of Go's `x509` package where it has them.
fn x509(error: webpki::Error) -> String {
    match error {
        // A root of the same name whose key did not sign the chain is just as unknown.
        webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey => {
            "x509: certificate signed by unknown authority".into()
        }
        webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. } => {
            "x509: certificate has expired or is not yet valid".into()
        }
        other => format!("x509: {other:?}"),
    }
}

/// JWS's fixed `r || s` (32 + 32 bytes) as the ASN.1 DER `SEQUENCE { INTEGER r, INTEGER s }`
/// ring verifies.
fn der_signature(raw: &[u8]) -> Vec<u8> {
    fn integer(bytes: &[u8]) -> Vec<u8> {
        let start = bytes
            .iter()
            .position(|b| *b != 0)
            .unwrap_or(bytes.len() - 1);
        let mut value = bytes[start..].to_vec();
        if value[0] & 0x80 != 0 {
            value.insert(0, 0);
        }
        let mut out = vec![0x02, value.len() as u8];
        out.extend(value);
        out
    }
    let (r, s) = raw.split_at(32);
    let mut body = integer(r);
    body.extend(integer(s));
    let mut out = vec![0x30, body.len() as u8];
    out.extend(body);
    out
}

#[cfg(test)]
#[path = "apple_jws_tests.rs"]
mod tests;

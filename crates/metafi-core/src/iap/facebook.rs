//! Facebook Instant Games: the payment's `signedRequest` is `signature.payload`, both base64url;
//! the signature is HMAC-SHA256 of the payload text with the app secret. Checked locally.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde::Deserialize;

use super::StoreError;

/// The fields of the payment MetaFi records.
#[derive(Debug, Deserialize)]
pub(super) struct Payment {
    #[serde(default)]
    pub product_id: String,
    #[serde(default)]
    pub purchase_time: f64,
    #[serde(default)]
    pub purchase_token: String,
}

/// Verifies the signed request; returns the payment and its JSON text.
pub(super) fn verify(
    app_secret: &str,
    signed_request: &str,
) -> Result<(Payment, String), StoreError> {
    let Some((signature, payload)) = signed_request.split_once('.') else {
        return Err(StoreError::rejected("invalid signedRequest format"));
    };
    if payload.contains('.') {
        return Err(StoreError::rejected("invalid signedRequest format"));
    }
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|e| {
        StoreError::rejected(format!("error decoding signedRequest first part:{e}"))
    })?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, app_secret.as_bytes());
    hmac::verify(&key, payload.as_bytes(), &signature)
        .map_err(|_| StoreError::rejected("signedRequest verification failed"))?;
    let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|e| {
        StoreError::rejected(format!("error decoding signedRequest second part:{e}"))
    })?;
    let payment: Payment = serde_json::from_slice(&payload)
        .map_err(|e| StoreError::rejected(format!("error parsing JSON payload:{e}")))?;
    let text = String::from_utf8_lossy(&payload).into_owned();
    Ok((payment, text))
}

/// Signs a payment as Facebook does (for tests and fixtures).
pub fn sign_facebook_instant(app_secret: &str, payload_json: &str) -> String {
    let payload = URL_SAFE_NO_PAD.encode(payload_json);
    let key = hmac::Key::new(hmac::HMAC_SHA256, app_secret.as_bytes());
    let tag = hmac::sign(&key, payload.as_bytes());
    format!("{}.{payload}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYMENT: &str = r#"{"algorithm":"HMAC-SHA256","app_id":"1","is_consumed":false,"issued_at":1700000000,"payment_id":"p1","product_id":"gems","purchase_time":1700000001,"purchase_token":"tok-1"}"#;

    #[test]
    fn a_request_signed_with_the_secret_verifies() {
        let signed = sign_facebook_instant("secret", PAYMENT);
        let (payment, raw) = verify("secret", &signed).expect("valid");
        assert_eq!(payment.product_id, "gems");
        assert_eq!(payment.purchase_token, "tok-1");
        assert_eq!(payment.purchase_time, 1_700_000_001.0);
        assert_eq!(raw, PAYMENT);
    }

    #[test]
    fn another_secret_or_an_edited_payload_is_refused() {
        let signed = sign_facebook_instant("other", PAYMENT);
        let err = verify("secret", &signed).expect_err("wrong secret");
        assert_eq!(err.to_string(), "signedRequest verification failed");
        let (sig, _) = sign_facebook_instant("secret", PAYMENT)
            .split_once('.')
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .expect("two parts");
        let edited = format!(
            "{sig}.{}",
            URL_SAFE_NO_PAD.encode(PAYMENT.replace("gems", "gold"))
        );
        assert!(verify("secret", &edited).is_err());
        assert_eq!(
            verify("secret", "no-dot").expect_err("format").to_string(),
            "invalid signedRequest format"
        );
    }
}

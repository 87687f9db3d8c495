//! Huawei AppGallery: the purchase data's RSA-SHA256 signature is checked locally with the
//! configured public key, then the order service confirms the purchase token.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::http::StoreHttp;
use super::{HuaweiConfig, StoreError};

/// The client's `inAppPurchaseData`, as far as MetaFi reads it.
#[derive(Debug, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct PurchaseData {
    pub product_id: String,
    pub purchase_time: i64,
    pub purchase_token: String,
    pub account_flag: i64,
    /// Absent in production; 0 for a sandbox purchase.
    pub purchase_type: i64,
}

impl Default for PurchaseData {
    fn default() -> Self {
        PurchaseData {
            product_id: String::new(),
            purchase_time: 0,
            purchase_token: String::new(),
            account_flag: 0,
            purchase_type: -1,
        }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct VerifyResponse {
    pub response_code: String,
    pub purchase_token_data: TokenData,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct TokenData {
    pub product_id: String,
    pub purchase_token: String,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    access_token: String,
}

/// Checks that `signature` (standard base64) is the RSA PKCS#1 v1.5 SHA-256 signature of
/// `data` under `public_key` (standard base64 of a SubjectPublicKeyInfo).
pub(super) fn verify_signature(public_key: &str, data: &str, signature: &str) -> bool {
    use rsa::pkcs1::EncodeRsaPublicKey as _;
    use rsa::pkcs8::DecodePublicKey as _;

    let (Ok(spki), Ok(signature)) = (STANDARD.decode(public_key), STANDARD.decode(signature))
    else {
        return false;
    };
    let Ok(der) = rsa::RsaPublicKey::from_public_key_der(&spki).and_then(|k| {
        k.to_pkcs1_der()
            .map_err(|_| rsa::pkcs8::spki::Error::KeyMalformed)
    }) else {
        return false;
    };
    let key = DecodingKey::from_rsa_der(der.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(signature);
    jsonwebtoken::crypto::verify(&signature, data.as_bytes(), &key, Algorithm::RS256)
        .unwrap_or(false)
}

/// Verifies the signature, then asks the order service.
pub(super) async fn validate(
    http: &StoreHttp,
    config: &HuaweiConfig,
    purchase: &str,
    signature: &str,
) -> Result<(VerifyResponse, PurchaseData, String), StoreError> {
    let data: PurchaseData =
        serde_json::from_str(purchase).map_err(|e| StoreError::rejected(e.to_string()))?;
    if !verify_signature(&config.public_key, purchase, signature) {
        return Err(StoreError::rejected("inAppPurchaseData invalid signature"));
    }
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", config.client_id.as_str()),
        ("client_secret", config.client_secret.as_str()),
    ];
    let answer = http
        .send(
            http.post(&config.token_url)
                .header("Accept", "application/json")
                .form(&form),
        )
        .await?;
    if answer.status != 200 {
        return Err(StoreError::non_200(
            "non-200 response from Huawei auth",
            answer,
        ));
    }
    let token: TokenAnswer =
        serde_json::from_slice(&answer.body).map_err(|e| StoreError::rejected(e.to_string()))?;
    let root = if data.account_flag == 1 {
        &config.orders_url_apptouch
    } else {
        &config.orders_url
    };
    let body = serde_json::json!({
        "purchaseToken": data.purchase_token,
        "productId": data.product_id,
    });
    let answer = http
        .send(
            http.post(&format!(
                "{}/applications/purchases/tokens/verify",
                root.trim_end_matches('/')
            ))
            .header("Content-Type", "application/json; charset=UTF-8")
            .header("Authorization", format!("Bearer {}", token.access_token))
            .body(body.to_string()),
        )
        .await?;
    if answer.status != 200 {
        return Err(StoreError::non_200(
            "non-200 response from Huawei service",
            answer,
        ));
    }
    let response: VerifyResponse =
        serde_json::from_slice(&answer.body).map_err(|e| StoreError::rejected(e.to_string()))?;
    Ok((
        response,
        data,
        String::from_utf8_lossy(&answer.body).into_owned(),
    ))
}

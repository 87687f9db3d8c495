//! Google Play: the service account signs an RS256 JWT, exchanges it for an access token
//! (cached until five minutes before it expires), and asks the Android Publisher API about the
//! purchase token of the client's receipt.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::http::StoreHttp;
use super::{GoogleConfig, StoreError};

const SCOPE: &str = "https://www.googleapis.com/auth/androidpublisher";
/// A cached token is renewed this long before Google says it expires (Nakama's grace).
const GRACE_SECS: i64 = 300;

/// The client's receipt: Play Billing's purchase JSON, bare or wrapped as `{"json": "…"}`.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Receipt {
    pub order_id: String,
    pub package_name: String,
    pub product_id: String,
    pub purchase_state: i64,
    pub purchase_time: i64,
    pub purchase_token: String,
}

/// The Publisher API's `ProductPurchase`, as far as MetaFi reads it.
#[derive(Debug, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ProductPurchase {
    pub purchase_state: i64,
    /// Absent in production; 0 for a test (sandbox) purchase.
    pub purchase_type: i64,
}

impl Default for ProductPurchase {
    fn default() -> Self {
        ProductPurchase {
            purchase_state: 0,
            purchase_type: -1,
        }
    }
}

pub(super) fn decode_receipt(receipt: &str) -> Result<Receipt, StoreError> {
    let wrapper: serde_json::Value =
        serde_json::from_str(receipt).map_err(|e| StoreError::rejected(e.to_string()))?;
    let inner = match wrapper.get("json").and_then(|v| v.as_str()) {
        Some(inner) => inner.to_owned(),
        None => receipt.to_owned(),
    };
    let parsed: Receipt =
        serde_json::from_str(&inner).map_err(|_| StoreError::rejected("receipt is malformed"))?;
    if parsed.package_name.is_empty() {
        return Err(StoreError::rejected("receipt is malformed"));
    }
    Ok(parsed)
}

/// Access tokens per service account email.
#[derive(Debug, Default)]
pub(super) struct TokenCache {
    tokens: Mutex<HashMap<String, (String, i64)>>,
}

/// A service account: the configured one, or one server code passes.
pub(super) struct Account<'a> {
    pub email: &'a str,
    pub private_key: &'a str,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    access_token: String,
    #[serde(default)]
    expires_in: i64,
}

impl TokenCache {
    pub(super) async fn token(
        &self,
        http: &StoreHttp,
        config: &GoogleConfig,
        account: &Account<'_>,
        now_secs: i64,
    ) -> Result<String, StoreError> {
        if let Some((token, expires)) = self.tokens.lock().get(account.email)
            && *expires - GRACE_SECS > now_secs
        {
            return Ok(token.clone());
        }
        let key = signing_key(account.private_key)
            .ok_or_else(|| StoreError::rejected("google iap private key invalid"))?;
        let claims = Claims {
            iss: account.email,
            scope: SCOPE,
            aud: &config.token_url,
            iat: now_secs,
            exp: now_secs + 3600,
        };
        let assertion = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map_err(|_| StoreError::rejected("google iap private key invalid"))?;
        let form = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion.as_str()),
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
                "non-200 response from Google auth",
                answer,
            ));
        }
        let token: TokenAnswer = serde_json::from_slice(&answer.body)
            .map_err(|e| StoreError::rejected(e.to_string()))?;
        self.tokens.lock().insert(
            account.email.to_owned(),
            (token.access_token.clone(), now_secs + token.expires_in),
        );
        Ok(token.access_token)
    }
}

/// Asks the Publisher API about a one-time product purchase.
pub(super) async fn product_purchase(
    http: &StoreHttp,
    config: &GoogleConfig,
    token: &str,
    receipt: &Receipt,
) -> Result<(ProductPurchase, String), StoreError> {
    let path = [
        "androidpublisher",
        "v3",
        "applications",
        &receipt.package_name,
        "purchases",
        "products",
        &receipt.product_id,
        "tokens",
        &receipt.purchase_token,
    ];
    let raw = publisher_get(http, config, token, &path).await?;
    let purchase: ProductPurchase =
        serde_json::from_str(&raw).map_err(|e| StoreError::rejected(e.to_string()))?;
    Ok((purchase, raw))
}

/// The Publisher API's `SubscriptionPurchaseV2`, as far as MetaFi reads it.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct SubscriptionV2 {
    pub line_items: Vec<LineItem>,
    /// The account the app attached at purchase (`setObfuscatedAccountId`).
    pub external_account_identifiers: AccountIdentifiers,
    pub linked_purchase_token: String,
    /// Present (an empty object) for a license tester's purchase.
    pub test_purchase: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct LineItem {
    pub product_id: String,
    /// RFC 3339.
    pub expiry_time: String,
}

/// `obfuscatedExternalAccountId` / `obfuscatedExternalProfileId`.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct AccountIdentifiers {
    pub obfuscated_external_account_id: String,
    pub obfuscated_external_profile_id: String,
}

/// The Publisher API's `ProductPurchaseV2` (`purchases.productsv2`), as far as MetaFi reads it.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ProductPurchaseV2 {
    pub product_line_item: Vec<ProductLineItem>,
    /// Present for a license tester's purchase.
    pub test_purchase_context: Option<serde_json::Value>,
    pub obfuscated_external_account_id: String,
    pub obfuscated_external_profile_id: String,
    /// RFC 3339.
    pub purchase_completion_time: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ProductLineItem {
    pub product_id: String,
}

/// Asks the Publisher API (`productsv2`) about a one-time product's purchase token.
pub(super) async fn product_purchase_v2(
    http: &StoreHttp,
    config: &GoogleConfig,
    token: &str,
    package_name: &str,
    purchase_token: &str,
) -> Result<(ProductPurchaseV2, String), StoreError> {
    let path = [
        "androidpublisher",
        "v3",
        "applications",
        package_name,
        "purchases",
        "productsv2",
        "tokens",
        purchase_token,
    ];
    let raw = publisher_get(http, config, token, &path).await?;
    let purchase: ProductPurchaseV2 =
        serde_json::from_str(&raw).map_err(|e| StoreError::rejected(e.to_string()))?;
    Ok((purchase, raw))
}

/// Asks the Publisher API about a subscription's purchase token.
pub(super) async fn subscription_v2(
    http: &StoreHttp,
    config: &GoogleConfig,
    token: &str,
    receipt: &Receipt,
) -> Result<(SubscriptionV2, String), StoreError> {
    let path = [
        "androidpublisher",
        "v3",
        "applications",
        &receipt.package_name,
        "purchases",
        "subscriptionsv2",
        "tokens",
        &receipt.purchase_token,
    ];
    let raw = publisher_get(http, config, token, &path).await?;
    let subscription: SubscriptionV2 =
        serde_json::from_str(&raw).map_err(|e| StoreError::rejected(e.to_string()))?;
    Ok((subscription, raw))
}

async fn publisher_get(
    http: &StoreHttp,
    config: &GoogleConfig,
    token: &str,
    path: &[&str],
) -> Result<String, StoreError> {
    let mut url = reqwest::Url::parse(&config.publisher_url)
        .map_err(|e| StoreError::rejected(format!("invalid publisher url: {e}")))?;
    url.path_segments_mut()
        .map_err(|()| StoreError::rejected("invalid publisher url"))?
        .pop_if_empty()
        .extend(path);
    url.query_pairs_mut().append_pair("access_token", token);
    let answer = http
        .send(
            http.get(url.as_str())
                .header("Content-Type", "application/json")
                .header("Accept", "application/json"),
        )
        .await?;
    if answer.status != 200 {
        return Err(StoreError::non_200(
            "non-200 response from Google service",
            answer,
        ));
    }
    Ok(String::from_utf8_lossy(&answer.body).into_owned())
}

/// The service account's key: PKCS#8 PEM as Google issues it (PKCS#1 PEM accepted too).
fn signing_key(pem: &str) -> Option<EncodingKey> {
    use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPrivateKey as _};
    use rsa::pkcs8::DecodePrivateKey as _;

    let key = rsa::RsaPrivateKey::from_pkcs8_pem(pem.trim())
        .or_else(|_| rsa::RsaPrivateKey::from_pkcs1_pem(pem.trim()))
        .ok()?;
    let der = key.to_pkcs1_der().ok()?;
    Some(EncodingKey::from_rsa_der(der.as_bytes()))
}

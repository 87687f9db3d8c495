//! Apple's legacy `verifyReceipt`: the receipt and the shared password posted to production,
//! then to the sandbox when production answers 21007.

use serde::Deserialize;

use super::http::StoreHttp;
use super::{AppleConfig, StoreError};

/// Production said the receipt is from the sandbox.
const SANDBOX_RECEIPT: i64 = 21007;

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(super) struct Response {
    pub status: i64,
    pub environment: String,
    #[serde(rename = "is-retryable")]
    pub is_retryable: bool,
    pub receipt: Option<Receipt>,
    pub latest_receipt_info: Vec<InApp>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub(super) struct Receipt {
    pub in_app: Vec<InApp>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(default)]
pub(super) struct InApp {
    pub original_transaction_id: String,
    pub original_purchase_date_ms: String,
    pub transaction_id: String,
    pub product_id: String,
    pub expires_date_ms: String,
    pub purchase_date_ms: String,
    pub cancellation_date_ms: String,
}

/// Validates a receipt; returns Apple's answer and its raw text.
pub(super) async fn verify_receipt(
    http: &StoreHttp,
    config: &AppleConfig,
    password: &str,
    receipt: &str,
) -> Result<(Response, String), StoreError> {
    let answer = post(http, &config.production_url, receipt, password).await?;
    if answer.0.status == SANDBOX_RECEIPT {
        return post(http, &config.sandbox_url, receipt, password).await;
    }
    Ok(answer)
}

async fn post(
    http: &StoreHttp,
    url: &str,
    receipt: &str,
    password: &str,
) -> Result<(Response, String), StoreError> {
    let body = serde_json::json!({
        "receipt-data": receipt,
        "exclude-old-transactions": true,
        "password": password,
    });
    let answer = http
        .send(
            http.post(url)
                .header("Content-Type", "application/json; charset=utf-8")
                .body(body.to_string()),
        )
        .await?;
    if answer.status != 200 {
        return Err(StoreError::non_200(
            "non-200 response from Apple service",
            answer,
        ));
    }
    let response: Response =
        serde_json::from_slice(&answer.body).map_err(|e| StoreError::rejected(e.to_string()))?;
    Ok((response, String::from_utf8_lossy(&answer.body).into_owned()))
}

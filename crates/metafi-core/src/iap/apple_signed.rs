//! Validating Apple's signed transactions (StoreKit 2): the JWS is verified locally
//! (`apple_jws.rs`), its payload decoded into Nakama's `AppleNotificationTransactionInfo`
//! fields and mapped as Nakama's `ValidatePurchasesApple` / `ValidateSubscriptionApple` map
//! them. The raw answer recorded is `{"jws": "<receipt>"}`; the answer's provider response is
//! empty ("no point in returning the incoming receipt").

use metafi_storage::{NewPurchase, NewSubscription};
use serde::Deserialize;
use uuid::Uuid;

use super::{
    Purchases, StoreError, ValidatedPurchase, ValidatedSubscription, apple_jws, environment,
    failed_precondition, store,
};
use crate::CoreError;

/// The fields of Apple's `JWSTransactionDecodedPayload` MetaFi reads (times in ms).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AppleTransaction {
    pub transaction_id: String,
    pub original_transaction_id: String,
    pub product_id: String,
    pub environment: String,
    pub purchase_date: i64,
    pub original_purchase_date: i64,
    pub expires_date: i64,
    pub revocation_date: i64,
}

impl AppleTransaction {
    pub(super) fn environment(&self) -> i32 {
        if self.environment == "Sandbox" {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        }
    }
}

impl Purchases {
    /// Verifies an Apple JWS at the server's time against the configured roots and returns
    /// its payload.
    pub fn verify_apple_jws(&self, jws: &str) -> Result<Vec<u8>, CoreError> {
        apple_jws::verify(
            jws,
            &self.config.apple.root_certificates,
            self.clock.now_ms(),
        )
        .map_err(|e| StoreError::Rejected(e).into())
    }

    fn apple_transaction(&self, jws: &str) -> Result<AppleTransaction, CoreError> {
        let payload = self.verify_apple_jws(jws)?;
        serde_json::from_slice(&payload).map_err(|e| StoreError::Rejected(e.to_string()).into())
    }

    pub(super) async fn validate_apple_jws(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let info = self.apple_transaction(receipt)?;
        if info.expires_date != 0 {
            return Err(failed_precondition(
                "Subscription Receipt. Use the appropriate function instead.",
            ));
        }
        let purchase = NewPurchase {
            user_id,
            store: store::APPLE_APP_STORE,
            product_id: info.product_id.clone(),
            transaction_id: info.transaction_id.clone(),
            raw_response: jws_record(receipt),
            purchase_time_ms: info.purchase_date,
            refund_time_ms: info.revocation_date,
            environment: info.environment(),
        };
        let mut answers = self.finish(vec![purchase], persist, true).await?;
        for answer in &mut answers {
            answer.provider_response.clear();
            // Nakama always answers a JWS validation with a refund time (the epoch: none).
            answer.refund_time_ms = Some(answer.refund_time_ms.unwrap_or(info.revocation_date));
        }
        Ok(answers)
    }

    pub(super) async fn validate_subscription_apple_jws(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
    ) -> Result<ValidatedSubscription, CoreError> {
        let info = self.apple_transaction(receipt)?;
        if info.expires_date == 0 {
            return Err(failed_precondition(
                "Purchase Receipt. Use the appropriate function instead.",
            ));
        }
        let subscription = NewSubscription {
            user_id,
            store: store::APPLE_APP_STORE,
            product_id: info.product_id.clone(),
            original_transaction_id: info.original_transaction_id.clone(),
            raw_response: jws_record(receipt),
            raw_notification: String::new(),
            purchase_time_ms: info.original_purchase_date,
            expire_time_ms: info.expires_date,
            refund_time_ms: info.revocation_date,
            environment: info.environment(),
        };
        let mut answer = self
            .record_subscription_with_refund(subscription, persist)
            .await?;
        answer.provider_response.clear();
        let refund = answer.refund_time_ms.unwrap_or(info.revocation_date);
        answer.refund_time_ms = Some(refund);
        answer.active = answer.expiry_time_ms > self.clock.now_ms() && refund == 0;
        Ok(answer)
    }
}

/// What Nakama records as the raw answer of a JWS validation.
fn jws_record(receipt: &str) -> String {
    serde_json::json!({ "jws": receipt }).to_string()
}

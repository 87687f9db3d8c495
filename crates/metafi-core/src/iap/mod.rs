//! In-app purchases and subscriptions, as Nakama validates and records them: each store's
//! receipt is checked (Apple's `verifyReceipt`, Google's Publisher API with a service-account
//! token, Huawei's signature and order service, Facebook Instant's signed request), the
//! purchases are recorded by transaction id (`seen_before` on a replay), and a user lists
//! theirs. REST handlers and `nk` functions both call [`Purchases`].
//!
//! Subscriptions are validated the same way (Apple's `latest_receipt_info`, Google's
//! `subscriptionsv2`) and recorded by original transaction id.
//!
//! Samsung Galaxy Store purchases are checked with Samsung's receipt API.
//!
//! Apple's signed (JWS) transactions are verified locally against Apple's root certificate
//! (`apple_jws.rs`), with no store call.
//!
//! Store notifications: App Store Server Notifications v2 (`apple_notify.rs`) and Google
//! Play real-time developer notifications (`google_notify.rs`).

mod apple;
pub mod apple_jws;
mod apple_notify;
mod apple_signed;
mod config;
mod cursor;
mod facebook;
mod google;
mod google_notify;
mod http;
mod huawei;
mod samsung;
#[cfg(any(test, feature = "test-util"))]
pub mod test_chain;
#[cfg(any(test, feature = "test-util"))]
pub mod test_google;

use std::sync::Arc;

use metafi_proto::Code;
use metafi_storage::{
    NewPurchase, NewSubscription, Purchase, Storage, Subscription, UpsertedPurchase,
};
use tracing::debug;
use uuid::Uuid;

pub use apple_notify::{
    AppleNotice, AppleNotificationError, NotificationListener, NotificationType,
};
pub use apple_signed::AppleTransaction;
pub use config::{
    AppleConfig, FacebookInstantConfig, GoogleConfig, HuaweiConfig, IapConfig, SamsungConfig,
};
pub use facebook::sign_facebook_instant;

use crate::{Clock, CoreError};

/// Nakama's `StoreProvider` numbers.
pub mod store {
    pub const APPLE_APP_STORE: i32 = 0;
    pub const GOOGLE_PLAY_STORE: i32 = 1;
    pub const HUAWEI_APP_GALLERY: i32 = 2;
    pub const FACEBOOK_INSTANT_STORE: i32 = 3;
    pub const SAMSUNG_GALAXY_STORE: i32 = 4;
}

/// Nakama's `StoreEnvironment` numbers.
pub mod environment {
    pub const UNKNOWN: i32 = 0;
    pub const SANDBOX: i32 = 1;
    pub const PRODUCTION: i32 = 2;
}

/// Nakama's default and largest page of a listing.
pub const MAX_LIST_LIMIT: usize = 100;

/// A purchase as a validation or a lookup answers it (Nakama's `ValidatedPurchase`). Times
/// that are `None` are absent from the answer, as in Nakama's (not persisted: no create time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedPurchase {
    /// `None`: not said (Huawei without persisting) or the owner was deleted.
    pub user_id: Option<Uuid>,
    pub product_id: String,
    pub transaction_id: String,
    pub store: i32,
    pub purchase_time_ms: i64,
    pub create_time_ms: Option<i64>,
    pub update_time_ms: Option<i64>,
    pub refund_time_ms: Option<i64>,
    pub provider_response: String,
    pub environment: i32,
    pub seen_before: bool,
}

/// A recorded subscription (Nakama's `ValidatedSubscription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedSubscription {
    pub user_id: Option<Uuid>,
    pub product_id: String,
    pub original_transaction_id: String,
    pub store: i32,
    pub purchase_time_ms: i64,
    /// `None` when not persisted.
    pub create_time_ms: Option<i64>,
    pub update_time_ms: Option<i64>,
    pub environment: i32,
    pub expiry_time_ms: i64,
    pub refund_time_ms: Option<i64>,
    pub provider_response: String,
    pub provider_notification: String,
    pub active: bool,
}

/// A page of a listing; empty cursors when there is no more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub cursor: String,
    pub prev_cursor: String,
}

/// Why a store refused or could not be asked. Becomes the `CoreError` Nakama's code gives.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// The receipt or the store's answer is not acceptable; the text is Nakama's.
    #[error("{0}")]
    Rejected(String),
    /// The store answered with another status than 200 (the body goes to the debug log).
    #[error("{what}, status={status}")]
    Non200 {
        what: &'static str,
        status: u16,
        payload: String,
    },
    /// The store could not be reached in time.
    #[error("store unreachable")]
    Transport(#[source] reqwest::Error),
    #[error("store answer over {max} bytes")]
    TooLarge { max: usize },
}

impl StoreError {
    fn rejected(message: impl Into<String>) -> Self {
        StoreError::Rejected(message.into())
    }

    fn transport(e: reqwest::Error) -> Self {
        StoreError::Transport(e)
    }

    fn non_200(what: &'static str, answer: http::Answer) -> Self {
        StoreError::Non200 {
            what,
            status: answer.status,
            payload: String::from_utf8_lossy(&answer.body).into_owned(),
        }
    }
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Rejected(_) => CoreError::Status {
                code: Code::Unknown,
                message: e.to_string(),
            },
            StoreError::Non200 {
                what,
                status,
                ref payload,
            } => {
                debug!(status, payload, "{what}");
                CoreError::Status {
                    code: Code::Unknown,
                    message: e.to_string(),
                }
            }
            StoreError::Transport(_) | StoreError::TooLarge { .. } => CoreError::Internal {
                operation: "purchase validation",
                source: Box::new(e),
            },
        }
    }
}

fn failed_precondition(message: impl Into<String>) -> CoreError {
    CoreError::Status {
        code: Code::FailedPrecondition,
        message: message.into(),
    }
}

/// The purchase and subscription service.
#[derive(Debug)]
pub struct Purchases {
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: IapConfig,
    http: http::StoreHttp,
    google_tokens: google::TokenCache,
    /// The runtimes' notification functions, once they have loaded.
    listener: std::sync::OnceLock<Arc<dyn NotificationListener>>,
}

impl Purchases {
    pub fn new(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: IapConfig,
    ) -> Result<Self, CoreError> {
        let http =
            http::StoreHttp::new(config.timeout, config.max_response_bytes).map_err(|e| {
                CoreError::Internal {
                    operation: "iap http client",
                    source: Box::new(e),
                }
            })?;
        Ok(Purchases {
            storage,
            clock,
            config,
            http,
            google_tokens: google::TokenCache::default(),
            listener: std::sync::OnceLock::new(),
        })
    }

    /// Apple: a legacy receipt (base64) through `verifyReceipt`.
    pub async fn validate_apple(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let password = self.config.apple.shared_password.clone();
        self.validate_apple_with(user_id, receipt, persist, &password)
            .await
    }

    /// [`validate_apple`](Self::validate_apple) with this shared password (server code may
    /// pass its own, as with Nakama).
    pub async fn validate_apple_with(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
        password: &str,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        if receipt.is_empty() {
            return Err(CoreError::invalid("Receipt cannot be empty."));
        }
        if receipt.split('.').count() == 3 {
            return self.validate_apple_jws(user_id, receipt, persist).await;
        }
        if password.is_empty() {
            return Err(failed_precondition("Apple IAP is not configured."));
        }
        let (answer, raw) =
            apple::verify_receipt(&self.http, &self.config.apple, password, receipt).await?;
        if answer.status != 0 {
            if answer.is_retryable {
                return Err(CoreError::Status {
                    code: Code::Unavailable,
                    message: "Apple IAP verification is currently unavailable. Try again later."
                        .into(),
                });
            }
            return Err(failed_precondition(format!(
                "Invalid Receipt. Status: {}",
                answer.status
            )));
        }
        let env = if answer.environment == "Sandbox" {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        };
        let in_app = answer.receipt.map(|r| r.in_app).unwrap_or_default();
        let total = in_app.len() + answer.latest_receipt_info.len();
        let mut purchases: Vec<NewPurchase> = Vec::new();
        for item in in_app.iter().chain(answer.latest_receipt_info.iter()) {
            if !item.expires_date_ms.is_empty()
                || purchases
                    .iter()
                    .any(|p| p.transaction_id == item.transaction_id)
            {
                continue;
            }
            let purchase_time_ms = parse_ms(&item.purchase_date_ms)?;
            purchases.push(NewPurchase {
                user_id,
                store: store::APPLE_APP_STORE,
                product_id: item.product_id.clone(),
                transaction_id: item.transaction_id.clone(),
                raw_response: raw.clone(),
                purchase_time_ms,
                refund_time_ms: 0,
                environment: env,
            });
        }
        if purchases.is_empty() && total > 0 {
            return Err(failed_precondition(
                "Subscription Receipt. Use the appropriate function instead.",
            ));
        }
        self.finish(purchases, persist, true).await
    }

    /// Google Play: a purchase receipt through the Publisher API.
    pub async fn validate_google(
        &self,
        user_id: Uuid,
        purchase: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let config = &self.config.google;
        self.validate_google_with(
            user_id,
            purchase,
            persist,
            &config.client_email,
            &config.private_key,
        )
        .await
    }

    /// [`validate_google`](Self::validate_google) with this service account.
    pub async fn validate_google_with(
        &self,
        user_id: Uuid,
        purchase: &str,
        persist: bool,
        client_email: &str,
        private_key: &str,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let config = &self.config.google;
        if client_email.is_empty() || private_key.is_empty() {
            return Err(failed_precondition("Google IAP is not configured."));
        }
        if purchase.is_empty() {
            return Err(CoreError::invalid("Purchase cannot be empty."));
        }
        let receipt = google::decode_receipt(purchase)?;
        let account = google::Account {
            email: client_email,
            private_key,
        };
        let token = self
            .google_tokens
            .token(&self.http, config, &account, self.clock.now_secs())
            .await?;
        let (answer, raw) = google::product_purchase(&self.http, config, &token, &receipt).await?;
        let env = if answer.purchase_type == 0 {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        };
        if receipt.purchase_state != 0 {
            return Err(failed_precondition(format!(
                "Invalid Receipt. State: {}",
                receipt.purchase_state
            )));
        }
        let purchases = vec![NewPurchase {
            user_id,
            store: store::GOOGLE_PLAY_STORE,
            product_id: receipt.product_id,
            transaction_id: receipt.purchase_token,
            raw_response: raw,
            purchase_time_ms: receipt.purchase_time,
            refund_time_ms: 0,
            environment: env,
        }];
        self.finish(purchases, persist, true).await
    }

    /// Huawei: signed purchase data, confirmed by the order service.
    pub async fn validate_huawei(
        &self,
        user_id: Uuid,
        purchase: &str,
        signature: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let config = &self.config.huawei;
        if config.public_key.is_empty()
            || config.client_id.is_empty()
            || config.client_secret.is_empty()
        {
            return Err(failed_precondition("Huawei IAP is not configured."));
        }
        if purchase.is_empty() {
            return Err(CoreError::invalid("Purchase cannot be empty."));
        }
        if signature.is_empty() {
            return Err(CoreError::invalid("Signature cannot be empty."));
        }
        let (answer, data, raw) = huawei::validate(&self.http, config, purchase, signature).await?;
        if answer.response_code != "0" {
            return Err(failed_precondition(format!(
                "Invalid Receipt. Code: {}",
                answer.response_code
            )));
        }
        let env = if data.purchase_type == 0 {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        };
        let purchases = vec![NewPurchase {
            user_id,
            store: store::HUAWEI_APP_GALLERY,
            product_id: answer.purchase_token_data.product_id,
            transaction_id: answer.purchase_token_data.purchase_token,
            raw_response: raw,
            purchase_time_ms: data.purchase_time,
            refund_time_ms: 0,
            environment: env,
        }];
        // Nakama leaves the user id out of an answer it did not persist.
        self.finish(purchases, persist, false).await
    }

    /// Facebook Instant: a signed request checked with the app secret, no store call.
    pub async fn validate_facebook_instant(
        &self,
        user_id: Uuid,
        signed_request: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        let secret = &self.config.facebook_instant.app_secret;
        if secret.is_empty() {
            return Err(failed_precondition(
                "Facebook Instant IAP is not configured.",
            ));
        }
        if signed_request.is_empty() {
            return Err(CoreError::invalid("SignedRequest cannot be empty."));
        }
        let (payment, raw) = facebook::verify(secret, signed_request)?;
        // Seconds (a float in Facebook's JSON) to ms; out-of-range values saturate.
        #[allow(clippy::cast_possible_truncation)]
        let purchase_time_ms = (payment.purchase_time.trunc() as i64).saturating_mul(1000);
        let purchases = vec![NewPurchase {
            user_id,
            store: store::FACEBOOK_INSTANT_STORE,
            product_id: payment.product_id,
            transaction_id: payment.purchase_token,
            raw_response: raw,
            purchase_time_ms,
            refund_time_ms: 0,
            environment: environment::PRODUCTION,
        }];
        self.finish(purchases, persist, true).await
    }

    /// Samsung: the purchase id is checked with Samsung's receipt API (no credentials; the
    /// package name, when configured, must match). The purchase id is the transaction id.
    pub async fn validate_samsung(
        &self,
        user_id: Uuid,
        purchase_id: &str,
        persist: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        if purchase_id.is_empty() {
            return Err(CoreError::invalid("Purchase ID cannot be empty."));
        }
        let (receipt, raw) =
            samsung::validate(&self.http, &self.config.samsung, purchase_id).await?;
        let env = if receipt.is_sandbox() {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        };
        let purchases = vec![NewPurchase {
            user_id,
            store: store::SAMSUNG_GALAXY_STORE,
            product_id: receipt.item_id.clone(),
            transaction_id: purchase_id.to_owned(),
            raw_response: raw,
            purchase_time_ms: samsung::purchase_time_ms(&receipt.purchase_date),
            refund_time_ms: 0,
            environment: env,
        }];
        self.finish(purchases, persist, true).await
    }

    /// Records the purchases (unless `persist` is false) and answers Nakama's shape.
    async fn finish(
        &self,
        purchases: Vec<NewPurchase>,
        persist: bool,
        user_when_not_persisted: bool,
    ) -> Result<Vec<ValidatedPurchase>, CoreError> {
        if !persist {
            return Ok(purchases
                .into_iter()
                .map(|p| ValidatedPurchase {
                    user_id: user_when_not_persisted.then_some(p.user_id),
                    product_id: p.product_id,
                    transaction_id: p.transaction_id,
                    store: p.store,
                    purchase_time_ms: p.purchase_time_ms,
                    create_time_ms: None,
                    update_time_ms: None,
                    refund_time_ms: None,
                    provider_response: p.raw_response,
                    environment: p.environment,
                    seen_before: false,
                })
                .collect());
        }
        if purchases.is_empty() {
            return Ok(Vec::new());
        }
        let inputs = purchases.clone();
        let stored = self
            .storage
            .upsert_purchases(purchases, self.clock.now_ms())
            .await
            .map_err(|e| CoreError::storage("store purchases", e))?;
        Ok(stored
            .into_iter()
            .map(
                |UpsertedPurchase {
                     purchase,
                     seen_before,
                 }| {
                    // The answer names the caller and this validation's response (as Nakama's).
                    let input = inputs
                        .iter()
                        .rev()
                        .find(|p| p.transaction_id == purchase.transaction_id);
                    ValidatedPurchase {
                        user_id: input.map(|p| p.user_id),
                        product_id: input
                            .map_or(purchase.product_id.clone(), |p| p.product_id.clone()),
                        transaction_id: purchase.transaction_id,
                        store: purchase.store,
                        purchase_time_ms: input
                            .map_or(purchase.purchase_time_ms, |p| p.purchase_time_ms),
                        create_time_ms: Some(purchase.create_time_ms),
                        update_time_ms: Some(purchase.update_time_ms),
                        refund_time_ms: (purchase.refund_time_ms != 0)
                            .then_some(purchase.refund_time_ms),
                        provider_response: input
                            .map_or(purchase.raw_response, |p| p.raw_response.clone()),
                        environment: purchase.environment,
                        seen_before,
                    }
                },
            )
            .collect())
    }

    /// The purchase with this transaction id, whoever owns it (server code's lookup).
    pub async fn by_transaction_id(
        &self,
        transaction_id: &str,
    ) -> Result<Option<ValidatedPurchase>, CoreError> {
        let found = self
            .storage
            .purchase_by_transaction_id(transaction_id)
            .await
            .map_err(|e| CoreError::storage("get purchase", e))?;
        Ok(found.map(stored_purchase))
    }

    /// Whether each store has its credentials (server code checks before its own overrides).
    pub fn config(&self) -> &IapConfig {
        &self.config
    }

    /// Purchases newest first, of one user or everyone. `limit` 0 means Nakama's 100.
    pub async fn list(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<Page<ValidatedPurchase>, CoreError> {
        let after = cursor::decode(cursor, user_id, "purchases list cursor invalid")?;
        let limit = if limit == 0 { MAX_LIST_LIMIT } else { limit };
        let page = self
            .storage
            .list_purchases(user_id, limit, after)
            .await
            .map_err(|e| CoreError::storage("list purchases", e))?;
        Ok(Page {
            items: page.items.into_iter().map(stored_purchase).collect(),
            cursor: page
                .next
                .map(|c| cursor::encode(&c, user_id))
                .unwrap_or_default(),
            prev_cursor: String::new(),
        })
    }

    /// The user's subscription to a product.
    pub async fn subscription_by_product_id(
        &self,
        user_id: Uuid,
        product_id: &str,
    ) -> Result<ValidatedSubscription, CoreError> {
        let found = self
            .storage
            .subscription_by_product_id(user_id, product_id)
            .await
            .map_err(|e| CoreError::storage("get subscription", e))?;
        match found {
            Some(s) => Ok(self.stored_subscription(s)),
            None => Err(CoreError::not_found("subscription not found")),
        }
    }

    /// Subscriptions newest first, of one user or everyone. `limit` 0 means Nakama's 100.
    pub async fn list_subscriptions(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<Page<ValidatedSubscription>, CoreError> {
        let after = cursor::decode(cursor, user_id, "subscriptions list cursor invalid")?;
        let limit = if limit == 0 { MAX_LIST_LIMIT } else { limit };
        let page = self
            .storage
            .list_subscriptions(user_id, limit, after)
            .await
            .map_err(|e| CoreError::storage("list subscriptions", e))?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|s| self.stored_subscription(s))
                .collect(),
            cursor: page
                .next
                .map(|c| cursor::encode(&c, user_id))
                .unwrap_or_default(),
            prev_cursor: String::new(),
        })
    }

    /// Apple: the subscriptions of a legacy receipt's `latest_receipt_info`, all recorded;
    /// the answer is the one that expires last.
    pub async fn validate_subscription_apple(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
    ) -> Result<ValidatedSubscription, CoreError> {
        let password = self.config.apple.shared_password.clone();
        self.validate_subscription_apple_with(user_id, receipt, persist, &password)
            .await
    }

    /// [`validate_subscription_apple`](Self::validate_subscription_apple) with this shared
    /// password.
    pub async fn validate_subscription_apple_with(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
        password: &str,
    ) -> Result<ValidatedSubscription, CoreError> {
        if password.is_empty() {
            return Err(failed_precondition("Apple IAP is not configured."));
        }
        if receipt.is_empty() {
            return Err(CoreError::invalid("Receipt cannot be empty."));
        }
        if receipt.split('.').count() == 3 {
            return self
                .validate_subscription_apple_jws(user_id, receipt, persist)
                .await;
        }
        let (answer, raw) =
            apple::verify_receipt(&self.http, &self.config.apple, password, receipt).await?;
        if answer.status != 0 {
            if answer.is_retryable {
                return Err(CoreError::Status {
                    code: Code::Unavailable,
                    message: "Apple IAP verification is currently unavailable. Try again later."
                        .into(),
                });
            }
            return Err(failed_precondition(format!(
                "Invalid Receipt. Status: {}",
                answer.status
            )));
        }
        let env = if answer.environment == "Sandbox" {
            environment::SANDBOX
        } else {
            environment::PRODUCTION
        };
        let mut subscriptions = Vec::new();
        for item in &answer.latest_receipt_info {
            if item.expires_date_ms.is_empty() {
                continue;
            }
            subscriptions.push(NewSubscription {
                user_id,
                store: store::APPLE_APP_STORE,
                product_id: item.product_id.clone(),
                original_transaction_id: item.original_transaction_id.clone(),
                raw_response: raw.clone(),
                raw_notification: String::new(),
                purchase_time_ms: parse_ms(&item.original_purchase_date_ms)?,
                expire_time_ms: parse_ms(&item.expires_date_ms)?,
                refund_time_ms: 0,
                environment: env,
            });
        }
        // The one that expires last answers (Apple's list sorted by expiry, newest first).
        subscriptions.sort_by_key(|s| std::cmp::Reverse(s.expire_time_ms));
        if subscriptions.is_empty() {
            return Err(failed_precondition(
                "Purchase Receipt. Use the appropriate function instead.",
            ));
        }
        let mut answers = Vec::with_capacity(subscriptions.len());
        for s in subscriptions {
            answers.push(self.record_subscription(s, persist).await?);
        }
        // Non-empty: checked above.
        Ok(answers.swap_remove(0))
    }

    /// Google Play: a subscription receipt through the Publisher API's `subscriptionsv2`.
    pub async fn validate_subscription_google(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
    ) -> Result<ValidatedSubscription, CoreError> {
        let config = &self.config.google;
        self.validate_subscription_google_with(
            user_id,
            receipt,
            persist,
            &config.client_email,
            &config.private_key,
        )
        .await
    }

    /// [`validate_subscription_google`](Self::validate_subscription_google) with this service
    /// account.
    pub async fn validate_subscription_google_with(
        &self,
        user_id: Uuid,
        receipt: &str,
        persist: bool,
        client_email: &str,
        private_key: &str,
    ) -> Result<ValidatedSubscription, CoreError> {
        let config = &self.config.google;
        if client_email.is_empty() || private_key.is_empty() {
            return Err(failed_precondition("Google IAP is not configured."));
        }
        if receipt.is_empty() {
            return Err(CoreError::invalid("Receipt cannot be empty."));
        }
        let parsed = google::decode_receipt(receipt)?;
        let account = google::Account {
            email: client_email,
            private_key,
        };
        let token = self
            .google_tokens
            .token(&self.http, config, &account, self.clock.now_secs())
            .await?;
        let (answer, raw) = google::subscription_v2(&self.http, config, &token, &parsed).await?;
        let Some(line) = answer.line_items.first() else {
            return Err(StoreError::rejected("subscription has no line items").into());
        };
        let expire_time_ms = metafi_proto::wkt::Timestamp::parse_rfc3339(&line.expiry_time)
            .map(|t| t.as_millis())
            .ok_or_else(|| StoreError::rejected("subscription expiry time is not RFC 3339"))?;
        let original_transaction_id = if answer.linked_purchase_token.is_empty() {
            parsed.purchase_token
        } else {
            // A resubscription or upgrade continues the linked subscription.
            answer.linked_purchase_token
        };
        let subscription = NewSubscription {
            user_id,
            store: store::GOOGLE_PLAY_STORE,
            product_id: parsed.product_id,
            original_transaction_id,
            raw_response: raw,
            raw_notification: String::new(),
            purchase_time_ms: parsed.purchase_time,
            expire_time_ms,
            refund_time_ms: 0,
            environment: if answer.test_purchase.is_some() {
                environment::SANDBOX
            } else {
                environment::PRODUCTION
            },
        };
        self.record_subscription(subscription, persist).await
    }

    async fn record_subscription(
        &self,
        s: NewSubscription,
        persist: bool,
    ) -> Result<ValidatedSubscription, CoreError> {
        let mut view = self.record_subscription_with_refund(s, persist).await?;
        if view.create_time_ms.is_some() {
            // Nakama's answer to a validation has no refund time.
            view.refund_time_ms = None;
        }
        Ok(view)
    }

    /// Records (when `persist`) and answers a subscription with its refund time.
    async fn record_subscription_with_refund(
        &self,
        s: NewSubscription,
        persist: bool,
    ) -> Result<ValidatedSubscription, CoreError> {
        let now = self.clock.now_ms();
        if !persist {
            return Ok(ValidatedSubscription {
                user_id: Some(s.user_id),
                product_id: s.product_id,
                original_transaction_id: s.original_transaction_id,
                store: s.store,
                purchase_time_ms: s.purchase_time_ms,
                create_time_ms: None,
                update_time_ms: None,
                environment: s.environment,
                expiry_time_ms: s.expire_time_ms,
                refund_time_ms: None,
                provider_response: s.raw_response,
                provider_notification: s.raw_notification,
                active: s.expire_time_ms > now,
            });
        }
        let stored = self
            .storage
            .upsert_subscription(s, now)
            .await
            .map_err(|e| CoreError::storage("store subscription", e))?;
        Ok(self.stored_subscription(stored))
    }

    fn stored_subscription(&self, s: Subscription) -> ValidatedSubscription {
        let now = self.clock.now_ms();
        ValidatedSubscription {
            user_id: s.user_id,
            product_id: s.product_id,
            original_transaction_id: s.original_transaction_id,
            store: s.store,
            purchase_time_ms: s.purchase_time_ms,
            create_time_ms: Some(s.create_time_ms),
            update_time_ms: Some(s.update_time_ms),
            environment: s.environment,
            expiry_time_ms: s.expire_time_ms,
            refund_time_ms: Some(s.refund_time_ms),
            provider_response: s.raw_response,
            provider_notification: s.raw_notification,
            active: s.expire_time_ms > now && s.refund_time_ms == 0,
        }
    }
}

/// A store's millisecond timestamp text.
fn parse_ms(text: &str) -> Result<i64, StoreError> {
    text.parse().map_err(|_| {
        StoreError::rejected(format!(
            "strconv.ParseInt: parsing {text:?}: invalid syntax"
        ))
    })
}

fn stored_purchase(p: Purchase) -> ValidatedPurchase {
    ValidatedPurchase {
        user_id: p.user_id,
        product_id: p.product_id,
        transaction_id: p.transaction_id,
        store: p.store,
        purchase_time_ms: p.purchase_time_ms,
        create_time_ms: Some(p.create_time_ms),
        update_time_ms: Some(p.update_time_ms),
        // Nakama's lookups show the epoch for "not refunded".
        refund_time_ms: Some(p.refund_time_ms),
        provider_response: p.raw_response,
        environment: p.environment,
        seen_before: false,
    }
}

#[cfg(test)]
mod tests;

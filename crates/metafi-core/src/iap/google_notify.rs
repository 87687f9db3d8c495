//! Google Play real-time developer notifications, as Nakama's `googleNotificationHandler`:
//! the body is a Pub/Sub push, `{"message": {"data": "<base64 DeveloperNotification>"}}`; the
//! notification names a package and a purchase token, which is looked up with the Publisher
//! API (the configured service account), and by kind:
//!
//! - `subscriptionNotification` of type PURCHASED (4), RENEWED (2), EXPIRED (13) or CANCELED
//!   (3): the subscription (`subscriptionsv2`) is recorded with the line item's product and
//!   expiry and this notification, and reported `SUBSCRIBED`, `RENEWED`, `EXPIRED` or
//!   `CANCELLED`; other types are acknowledged and ignored;
//! - `voidedPurchaseNotification` of a subscription (`productType` 1): the subscription is
//!   recorded refunded now and reported `REFUNDED`; of a one-time product: the purchase
//!   (`productsv2`) is recorded refunded now and reported `REFUNDED`;
//! - `oneTimeProductNotification`, `testNotification`: acknowledged, nothing done (as Nakama).
//!
//! The user is the Play purchase's `obfuscatedExternalAccountId` (or `…ProfileId`) when set,
//! otherwise the owner of the recorded subscription (by the linked purchase token, else the
//! token) or purchase. No owner, an account id that is not a UUID, or a user that does not
//! exist: acknowledged, nothing recorded. [`AppleNotificationError`] means "answer 500" so
//! Pub/Sub retries (a malformed body, a store lookup that failed, a storage error).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use metafi_storage::{NewPurchase, NewSubscription, UpsertedPurchase};
use serde::Deserialize;
use serde_json::Value as Json;
use uuid::Uuid;

use super::apple_notify::{AppleNotice, AppleNotificationError, NotificationType};
use super::google;
use super::{Purchases, ValidatedPurchase, environment, store};

fn refuse(message: impl Into<String>) -> AppleNotificationError {
    AppleNotificationError(message.into())
}

#[derive(Deserialize)]
struct Push {
    message: PushMessage,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PushMessage {
    data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeveloperNotification {
    #[serde(default)]
    package_name: String,
    #[serde(default)]
    subscription_notification: Option<SubscriptionNotification>,
    #[serde(default)]
    one_time_product_notification: Option<Json>,
    #[serde(default)]
    voided_purchase_notification: Option<VoidedPurchaseNotification>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SubscriptionNotification {
    notification_type: i64,
    purchase_token: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct VoidedPurchaseNotification {
    purchase_token: String,
    product_type: i64,
}

/// Google's `SubscriptionNotificationType` numbers MetaFi reports.
mod kind {
    pub const RENEWED: i64 = 2;
    pub const CANCELED: i64 = 3;
    pub const PURCHASED: i64 = 4;
    pub const EXPIRED: i64 = 13;
}

/// `GoogleProductType`: a voided subscription (else a one-time product).
const PRODUCT_TYPE_SUBSCRIPTION: i64 = 1;

/// The account the purchase names: `Ok(None)` when none; `Err` when it is not a UUID.
fn named_account(account_id: &str, profile_id: &str) -> Result<Option<Uuid>, ()> {
    let id = if !account_id.is_empty() {
        account_id
    } else if !profile_id.is_empty() {
        profile_id
    } else {
        return Ok(None);
    };
    Uuid::parse_str(id).map(Some).map_err(|_| ())
}

/// `message.data`: base64url as Nakama decodes it; standard base64 (what Pub/Sub sends)
/// accepted too.
fn decode_data(data: &str) -> Result<Vec<u8>, AppleNotificationError> {
    URL_SAFE
        .decode(data)
        .or_else(|_| STANDARD.decode(data))
        .map_err(|_| refuse("failed to base64 decode Google Play Billing notification data"))
}

impl Purchases {
    /// Serves one Google Play notification: handled, then reported to the listener. `true`:
    /// answer 200; `false`: 500, so Pub/Sub sends it again (the reason is logged). A failing
    /// purchase notification function answers 500 too, as Nakama's (a subscription one 200).
    pub async fn serve_google_notification(&self, body: &[u8]) -> bool {
        match self.google_notification(body).await {
            Ok(Some(notice)) => match self.listener.get() {
                Some(listener) => {
                    let ran = listener.google_notice(&notice).await;
                    ran || matches!(notice, AppleNotice::Subscription { .. })
                }
                None => true,
            },
            Ok(None) => true,
            Err(e) => {
                tracing::error!(error = %e, "failed to handle a Google Play notification");
                false
            }
        }
    }

    /// Handles one notification body; `Ok(None)`: accepted, nothing to report.
    pub async fn google_notification(
        &self,
        body: &[u8],
    ) -> Result<Option<AppleNotice>, AppleNotificationError> {
        let raw = String::from_utf8_lossy(body).into_owned();
        let push: Push = serde_json::from_slice(body).map_err(|e| {
            refuse(format!(
                "failed to unmarshal Google Play Billing notification: {e}"
            ))
        })?;
        let data = decode_data(&push.message.data)?;
        let notification: DeveloperNotification = serde_json::from_slice(&data).map_err(|e| {
            refuse(format!(
                "failed to json unmarshal Google Play Billing notification payload: {e}"
            ))
        })?;
        if let Some(sub) = &notification.subscription_notification {
            let kind = match sub.notification_type {
                kind::PURCHASED => NotificationType::Subscribed,
                kind::RENEWED => NotificationType::Renewed,
                kind::EXPIRED => NotificationType::Expired,
                kind::CANCELED => NotificationType::Cancelled,
                _ => {
                    // Nakama asks the store first, then ignores the type.
                    self.google_subscription(&notification.package_name, &sub.purchase_token)
                        .await?;
                    return Ok(None);
                }
            };
            return self
                .google_subscription_notice(
                    &notification.package_name,
                    &sub.purchase_token,
                    kind,
                    raw,
                )
                .await;
        }
        if notification.one_time_product_notification.is_some() {
            return Ok(None);
        }
        let Some(voided) = &notification.voided_purchase_notification else {
            return Ok(None);
        };
        if voided.product_type == PRODUCT_TYPE_SUBSCRIPTION {
            return self
                .google_subscription_notice(
                    &notification.package_name,
                    &voided.purchase_token,
                    NotificationType::Refunded,
                    raw,
                )
                .await;
        }
        self.google_voided_purchase(&notification.package_name, &voided.purchase_token)
            .await
    }

    async fn google_token(&self) -> Result<String, AppleNotificationError> {
        let config = &self.config.google;
        let account = google::Account {
            email: &config.client_email,
            private_key: &config.private_key,
        };
        self.google_tokens
            .token(&self.http, config, &account, self.clock.now_secs())
            .await
            .map_err(|e| {
                refuse(format!(
                    "Error validating Google receipt in notification: {e}"
                ))
            })
    }

    async fn google_subscription(
        &self,
        package: &str,
        token: &str,
    ) -> Result<(google::SubscriptionV2, String), AppleNotificationError> {
        let access = self.google_token().await?;
        let receipt = google::Receipt {
            package_name: package.to_owned(),
            purchase_token: token.to_owned(),
            ..google::Receipt::default()
        };
        google::subscription_v2(&self.http, &self.config.google, &access, &receipt)
            .await
            .map_err(|e| {
                refuse(format!(
                    "Error validating Google receipt in notification: {e}"
                ))
            })
    }

    /// Whether `user` has an account (a notification for a deleted one is skipped).
    async fn user_exists(&self, user: Uuid) -> Result<bool, AppleNotificationError> {
        let found = self
            .storage
            .account(user)
            .await
            .map_err(|e| refuse(e.to_string()))?;
        Ok(found.is_some())
    }

    async fn google_subscription_notice(
        &self,
        package: &str,
        token: &str,
        kind: NotificationType,
        raw: String,
    ) -> Result<Option<AppleNotice>, AppleNotificationError> {
        let (answer, provider) = self.google_subscription(package, token).await?;
        let ids = &answer.external_account_identifiers;
        let Ok(named) = named_account(
            &ids.obfuscated_external_account_id,
            &ids.obfuscated_external_profile_id,
        ) else {
            tracing::error!("Google notification account id is not a UUID");
            return Ok(None);
        };
        let original_transaction_id = if answer.linked_purchase_token.is_empty() {
            token.to_owned()
        } else {
            answer.linked_purchase_token.clone()
        };
        let user = match named {
            Some(user) => user,
            None => {
                let found = self
                    .storage
                    .subscription_by_original_transaction_id(&original_transaction_id)
                    .await
                    .map_err(|e| refuse(e.to_string()))?;
                match found.and_then(|s| s.user_id) {
                    Some(owner) => owner,
                    None => {
                        tracing::warn!("no user found for this Google IAP notification");
                        return Ok(None);
                    }
                }
            }
        };
        if !self.user_exists(user).await? {
            return Ok(None);
        }
        let Some(line) = answer.line_items.first() else {
            return Err(refuse("subscription has no line items"));
        };
        let expire_time_ms = metafi_proto::wkt::Timestamp::parse_rfc3339(&line.expiry_time)
            .map(|t| t.as_millis())
            .ok_or_else(|| refuse("subscription expiry time is not RFC 3339"))?;
        let refund_time_ms = if kind == NotificationType::Refunded {
            self.clock.now_ms()
        } else {
            0
        };
        let stored = self
            .storage
            .upsert_subscription(
                NewSubscription {
                    user_id: user,
                    store: store::GOOGLE_PLAY_STORE,
                    product_id: line.product_id.clone(),
                    original_transaction_id,
                    raw_response: String::new(),
                    raw_notification: raw,
                    purchase_time_ms: 0,
                    expire_time_ms,
                    refund_time_ms,
                    environment: if answer.test_purchase.is_some() {
                        environment::SANDBOX
                    } else {
                        environment::PRODUCTION
                    },
                },
                self.clock.now_ms(),
            )
            .await
            .map_err(|e| refuse(e.to_string()))?;
        let subscription = self.stored_subscription(stored);
        Ok(Some(AppleNotice::Subscription {
            kind,
            subscription,
            provider_payload: provider_json(&provider),
        }))
    }

    async fn google_voided_purchase(
        &self,
        package: &str,
        token: &str,
    ) -> Result<Option<AppleNotice>, AppleNotificationError> {
        let access = self.google_token().await?;
        let (answer, provider) =
            google::product_purchase_v2(&self.http, &self.config.google, &access, package, token)
                .await
                .map_err(|e| {
                    refuse(format!(
                        "Error validating Google receipt in notification: {e}"
                    ))
                })?;
        let Ok(named) = named_account(
            &answer.obfuscated_external_account_id,
            &answer.obfuscated_external_profile_id,
        ) else {
            tracing::error!("Google notification account id is not a UUID");
            return Ok(None);
        };
        let user = match named {
            Some(user) => user,
            None => {
                let found = self
                    .storage
                    .purchase_by_transaction_id(token)
                    .await
                    .map_err(|e| refuse(e.to_string()))?;
                match found.and_then(|p| p.user_id) {
                    Some(owner) => owner,
                    None => {
                        tracing::warn!("no user found for this Google IAP refund notification");
                        return Ok(None);
                    }
                }
            }
        };
        if !self.user_exists(user).await? {
            return Ok(None);
        }
        let Some(line) = answer.product_line_item.first() else {
            return Err(refuse("purchase has no product line items"));
        };
        let purchase_time_ms = if answer.purchase_completion_time.is_empty() {
            0
        } else {
            metafi_proto::wkt::Timestamp::parse_rfc3339(&answer.purchase_completion_time)
                .map(|t| t.as_millis())
                .ok_or_else(|| refuse("purchase completion time is not RFC 3339"))?
        };
        let now = self.clock.now_ms();
        let stored = self
            .storage
            .upsert_purchases(
                vec![NewPurchase {
                    user_id: user,
                    store: store::GOOGLE_PLAY_STORE,
                    product_id: line.product_id.clone(),
                    transaction_id: token.to_owned(),
                    raw_response: String::new(),
                    purchase_time_ms,
                    refund_time_ms: now,
                    environment: if answer.test_purchase_context.is_some() {
                        environment::SANDBOX
                    } else {
                        environment::PRODUCTION
                    },
                }],
                now,
            )
            .await
            .map_err(|e| refuse(e.to_string()))?;
        let Some(UpsertedPurchase {
            purchase,
            seen_before,
        }) = stored.into_iter().next()
        else {
            return Err(refuse("the refunded purchase was not recorded"));
        };
        Ok(Some(AppleNotice::Purchase {
            kind: NotificationType::Refunded,
            purchase: ValidatedPurchase {
                user_id: purchase.user_id,
                product_id: purchase.product_id,
                transaction_id: purchase.transaction_id,
                store: store::GOOGLE_PLAY_STORE,
                purchase_time_ms: purchase.purchase_time_ms,
                create_time_ms: Some(purchase.create_time_ms),
                update_time_ms: Some(purchase.update_time_ms),
                refund_time_ms: Some(purchase.refund_time_ms),
                provider_response: String::new(),
                environment: purchase.environment,
                seen_before,
            },
            provider_payload: provider_json(&provider),
        }))
    }
}

/// The Publisher API's answer, passed to the notification function as Nakama passes its
/// decoded response.
fn provider_json(raw: &str) -> Json {
    serde_json::from_str(raw).unwrap_or(Json::Null)
}

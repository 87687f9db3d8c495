//! App Store Server Notifications v2, as Nakama's `appleNotificationHandler`: the body is
//! `{"signedPayload": "<JWS>"}`; the JWS is verified like a signed transaction
//! (`apple_jws.rs`), its `data.signedTransactionInfo` / `data.signedRenewalInfo` decoded, and
//! by `notificationType`:
//!
//! - `DID_RENEW`, `SUBSCRIBED`, `DID_CHANGE_RENEWAL_PREF`, `OFFER_REDEEMED`: the subscription
//!   is recorded (expiry, refund, this notification) and reported `RENEWED` (`DID_RENEW`) or
//!   `SUBSCRIBED`; `UPGRADE`/`DOWNGRADE` take the product from the renewal info;
//! - `EXPIRED`, `GRACE_PERIOD_EXPIRED`, `REVOKED`, `DID_CHANGE_RENEWAL_STATUS`: the subscription's
//!   expiry becomes the renewal date (or the grace period's end, when later) and it is reported
//!   `EXPIRED`, or `CANCELLED` for `DID_CHANGE_RENEWAL_STATUS` / `AUTO_RENEW_DISABLED` (other
//!   subtypes are recorded and not reported);
//! - `REFUND`: a purchase's refund time is recorded and reported `REFUNDED`; a subscription's
//!   refund is reported `REFUNDED` without being recorded (as Nakama);
//! - anything else is acknowledged and ignored.
//!
//! The user is the transaction's `appAccountToken` when it is a UUID, otherwise the owner of
//! the recorded subscription or purchase. [`AppleNotificationError`] means "answer 500" so
//! Apple retries; `Ok` means 200.

use metafi_storage::{NewPurchase, NewSubscription, UpsertedPurchase};
use serde::Deserialize;
use serde_json::Value as Json;
use uuid::Uuid;

use super::apple_jws;
use super::apple_signed::AppleTransaction;
use super::{Purchases, ValidatedPurchase, ValidatedSubscription, environment, store};

/// Nakama's `runtime.NotificationType`, as its `String()` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationType {
    Subscribed,
    Renewed,
    Expired,
    Cancelled,
    Refunded,
}

impl NotificationType {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationType::Subscribed => "SUBSCRIBED",
            NotificationType::Renewed => "RENEWED",
            NotificationType::Expired => "EXPIRED",
            NotificationType::Cancelled => "CANCELLED",
            NotificationType::Refunded => "REFUNDED",
        }
    }
}

/// What a notification did, for the registered notification function.
#[derive(Debug, Clone, PartialEq)]
pub enum AppleNotice {
    Purchase {
        kind: NotificationType,
        purchase: ValidatedPurchase,
        /// The notification's `data` with `transactionInfo` / `renewalInfo` decoded.
        provider_payload: Json,
    },
    Subscription {
        kind: NotificationType,
        subscription: ValidatedSubscription,
        provider_payload: Json,
    },
}

/// Who hears of store notifications: the runtimes' registered notification functions
/// (`registerPurchaseNotificationApple`, `registerSubscriptionNotificationApple`). Set once on
/// [`Purchases`] when the runtime has loaded ([`Purchases::set_notification_listener`]).
#[async_trait::async_trait]
pub trait NotificationListener: Send + Sync + std::fmt::Debug {
    /// Runs the function registered for this notice; its failure is logged, never answered
    /// to the store (Nakama answers 200 anyway).
    async fn apple_notice(&self, notice: &AppleNotice);

    /// Runs the Google Play function registered for this notice
    /// (`registerPurchaseNotificationGoogle`, `registerSubscriptionNotificationGoogle`; the
    /// notice has the App Store's shape, the provider payload being the Publisher API's
    /// answer). `false`: the function failed (a purchase's failure answers Google 500).
    async fn google_notice(&self, _notice: &AppleNotice) -> bool {
        true
    }
}

/// Why a notification was not accepted (Apple is answered 500 and retries).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AppleNotificationError(pub String);

fn refuse(message: impl Into<String>) -> AppleNotificationError {
    AppleNotificationError(message.into())
}

#[derive(Deserialize)]
struct Signed {
    #[serde(rename = "signedPayload", default)]
    signed_payload: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Payload {
    notification_type: String,
    subtype: String,
    data: Option<serde_json::Map<String, Json>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RenewalInfo {
    app_account_token: String,
    original_transaction_id: String,
    product_id: String,
    auto_renew_product_id: String,
    environment: String,
    renewal_date: i64,
    grace_period_expires_date: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TransactionAccount {
    app_account_token: String,
}

/// The payload of a JWS, not verified (the signed infos inside a verified notification).
fn inner_payload(jws: &str) -> Result<Json, AppleNotificationError> {
    let part = jws
        .split('.')
        .nth(1)
        .ok_or_else(|| refuse("unexpected apple jws length"))?;
    let bytes = apple_jws::decode_part(part).map_err(refuse)?;
    serde_json::from_slice(&bytes).map_err(|e| refuse(e.to_string()))
}

fn account(token: &str) -> Option<Uuid> {
    if token.is_empty() {
        return None;
    }
    match Uuid::parse_str(token) {
        Ok(id) if !id.is_nil() => Some(id),
        _ => {
            tracing::warn!(
                app_account_token = token,
                "App Store notification appAccountToken is not a UUID"
            );
            None
        }
    }
}

fn env_of(name: &str) -> i32 {
    if name == "Sandbox" {
        environment::SANDBOX
    } else {
        environment::PRODUCTION
    }
}

impl Purchases {
    /// Hands every accepted notification to `listener` from now on (the first one set stays).
    pub fn set_notification_listener(&self, listener: std::sync::Arc<dyn NotificationListener>) {
        let _ = self.listener.set(listener);
    }

    /// Serves one App Store notification: handled, then reported to the listener. `true`: answer
    /// 200; `false`: 500, so Apple sends it again (the reason is logged).
    pub async fn serve_apple_notification(&self, body: &[u8]) -> bool {
        match self.apple_notification(body).await {
            Ok(Some(notice)) => {
                if let Some(listener) = self.listener.get() {
                    listener.apple_notice(&notice).await;
                }
                true
            }
            Ok(None) => true,
            Err(e) => {
                tracing::error!(error = %e, "failed to handle an App Store notification");
                false
            }
        }
    }

    /// Handles one notification body; `Ok(None)`: accepted, nothing to report.
    pub async fn apple_notification(
        &self,
        body: &[u8],
    ) -> Result<Option<AppleNotice>, AppleNotificationError> {
        let raw = String::from_utf8_lossy(body).into_owned();
        let signed: Signed = serde_json::from_slice(body).map_err(|e| refuse(e.to_string()))?;
        let payload = self
            .verify_apple_jws(&signed.signed_payload)
            .map_err(|e| refuse(format!("failed to validate apple jws header: {e}")))?;
        let payload: Payload =
            serde_json::from_slice(&payload).map_err(|e| refuse(e.to_string()))?;
        let mut data = payload.data.unwrap_or_default();
        let transaction = match data.get("signedTransactionInfo").and_then(Json::as_str) {
            Some(jws) if !jws.is_empty() => Some(inner_payload(jws)?),
            _ => None,
        };
        let renewal = match data.get("signedRenewalInfo").and_then(Json::as_str) {
            Some(jws) if !jws.is_empty() => Some(inner_payload(jws)?),
            _ => None,
        };
        data.insert(
            "transactionInfo".into(),
            transaction.clone().unwrap_or(Json::Null),
        );
        data.insert("renewalInfo".into(), renewal.clone().unwrap_or(Json::Null));
        let provider_payload = Json::Object(data);
        let decode_transaction = |value: &Json| -> Result<(AppleTransaction, Option<Uuid>), _> {
            let info: AppleTransaction =
                serde_json::from_value(value.clone()).map_err(|e| refuse(e.to_string()))?;
            let account: TransactionAccount =
                serde_json::from_value(value.clone()).map_err(|e| refuse(e.to_string()))?;
            Ok::<_, AppleNotificationError>((info, account_of(&account)))
        };
        let renewal: Option<RenewalInfo> = renewal
            .map(|r| serde_json::from_value(r).map_err(|e| refuse(e.to_string())))
            .transpose()?;
        let kind = payload.notification_type.to_uppercase();
        match kind.as_str() {
            "DID_RENEW" | "SUBSCRIBED" | "DID_CHANGE_RENEWAL_PREF" | "OFFER_REDEEMED" => {
                let Some(value) = &transaction else {
                    return Err(refuse(format!(
                        "no transaction info in the Apple notification {kind}"
                    )));
                };
                let (info, token) = decode_transaction(value)?;
                let user = match token {
                    Some(user) => Some(user),
                    None => match self
                        .subscription_owner(&info.original_transaction_id)
                        .await?
                    {
                        Some(owner) => owner,
                        None => {
                            return Err(refuse(
                                "no recorded subscription for the Apple notification",
                            ));
                        }
                    },
                };
                let mut product_id = info.product_id.clone();
                if matches!(payload.subtype.as_str(), "UPGRADE" | "DOWNGRADE")
                    && let Some(renewal) = &renewal
                {
                    product_id = renewal.auto_renew_product_id.clone();
                }
                let subscription = self
                    .record_notified_subscription(NewSubscription {
                        user_id: user.unwrap_or_else(Uuid::nil),
                        store: store::APPLE_APP_STORE,
                        product_id,
                        original_transaction_id: info.original_transaction_id.clone(),
                        raw_response: String::new(),
                        raw_notification: raw,
                        purchase_time_ms: info.original_purchase_date,
                        expire_time_ms: info.expires_date,
                        refund_time_ms: info.revocation_date,
                        environment: info.environment(),
                    })
                    .await?;
                let kind = if kind == "DID_RENEW" {
                    NotificationType::Renewed
                } else {
                    NotificationType::Subscribed
                };
                Ok(Some(AppleNotice::Subscription {
                    kind,
                    subscription,
                    provider_payload,
                }))
            }
            "EXPIRED" | "DID_CHANGE_RENEWAL_STATUS" | "GRACE_PERIOD_EXPIRED" | "REVOKED" => {
                let Some(renewal) = renewal else {
                    return Err(refuse(format!(
                        "no renewal info in the Apple notification {kind}"
                    )));
                };
                let user = match account(&renewal.app_account_token) {
                    Some(user) => user,
                    None => match self
                        .subscription_owner(&renewal.original_transaction_id)
                        .await?
                    {
                        Some(Some(owner)) => owner,
                        // No owner known: nothing to record or report.
                        _ => return Ok(None),
                    },
                };
                let expiry = renewal.renewal_date.max(renewal.grace_period_expires_date);
                let subscription = self
                    .record_notified_subscription(NewSubscription {
                        user_id: user,
                        store: store::APPLE_APP_STORE,
                        product_id: renewal.product_id.clone(),
                        original_transaction_id: renewal.original_transaction_id.clone(),
                        raw_response: String::new(),
                        raw_notification: raw,
                        purchase_time_ms: 0,
                        expire_time_ms: expiry,
                        refund_time_ms: 0,
                        environment: env_of(&renewal.environment),
                    })
                    .await?;
                let kind = if kind == "DID_CHANGE_RENEWAL_STATUS" {
                    if payload.subtype != "AUTO_RENEW_DISABLED" {
                        return Ok(None);
                    }
                    NotificationType::Cancelled
                } else {
                    NotificationType::Expired
                };
                Ok(Some(AppleNotice::Subscription {
                    kind,
                    subscription,
                    provider_payload,
                }))
            }
            "REFUND" => {
                let Some(value) = &transaction else {
                    return Err(refuse(
                        "no transaction info in the Apple notification REFUND",
                    ));
                };
                let (info, token) = decode_transaction(value)?;
                if info.expires_date != 0 {
                    let user = match token {
                        Some(user) => user,
                        None => match self
                            .subscription_owner(&info.original_transaction_id)
                            .await?
                        {
                            Some(Some(owner)) => owner,
                            _ => return Ok(None),
                        },
                    };
                    let now = self.clock.now_ms();
                    let subscription = ValidatedSubscription {
                        user_id: Some(user),
                        product_id: info.product_id.clone(),
                        original_transaction_id: info.original_transaction_id.clone(),
                        store: store::APPLE_APP_STORE,
                        purchase_time_ms: info.original_purchase_date,
                        create_time_ms: Some(0),
                        update_time_ms: Some(0),
                        environment: info.environment(),
                        expiry_time_ms: info.expires_date,
                        refund_time_ms: Some(info.revocation_date),
                        provider_response: String::new(),
                        provider_notification: raw,
                        active: info.expires_date > now && info.revocation_date == 0,
                    };
                    return Ok(Some(AppleNotice::Subscription {
                        kind: NotificationType::Refunded,
                        subscription,
                        provider_payload,
                    }));
                }
                let user = match token {
                    Some(user) => user,
                    None => {
                        let found = self
                            .storage
                            .purchase_by_transaction_id(&info.transaction_id)
                            .await
                            .map_err(|e| refuse(e.to_string()))?;
                        match found.and_then(|p| p.user_id) {
                            Some(owner) => owner,
                            None => return Ok(None),
                        }
                    }
                };
                let stored = self
                    .storage
                    .upsert_purchases(
                        vec![NewPurchase {
                            user_id: user,
                            store: store::APPLE_APP_STORE,
                            product_id: info.product_id.clone(),
                            transaction_id: info.transaction_id.clone(),
                            raw_response: String::new(),
                            purchase_time_ms: info.purchase_date,
                            refund_time_ms: info.revocation_date,
                            environment: info.environment(),
                        }],
                        self.clock.now_ms(),
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
                        product_id: info.product_id,
                        transaction_id: info.transaction_id,
                        store: store::APPLE_APP_STORE,
                        purchase_time_ms: purchase.purchase_time_ms,
                        create_time_ms: Some(purchase.create_time_ms),
                        update_time_ms: Some(purchase.update_time_ms),
                        refund_time_ms: Some(purchase.refund_time_ms),
                        provider_response: raw,
                        environment: purchase.environment,
                        seen_before,
                    },
                    provider_payload,
                }))
            }
            _ => Ok(None),
        }
    }

    /// `None`: no recorded subscription; `Some(None)`: recorded without an owner.
    async fn subscription_owner(
        &self,
        original_transaction_id: &str,
    ) -> Result<Option<Option<Uuid>>, AppleNotificationError> {
        let found = self
            .storage
            .subscription_by_original_transaction_id(original_transaction_id)
            .await
            .map_err(|e| refuse(e.to_string()))?;
        Ok(found.map(|s| s.user_id))
    }

    async fn record_notified_subscription(
        &self,
        s: NewSubscription,
    ) -> Result<ValidatedSubscription, AppleNotificationError> {
        let stored = self
            .storage
            .upsert_subscription(s, self.clock.now_ms())
            .await
            .map_err(|e| refuse(e.to_string()))?;
        Ok(self.stored_subscription(stored))
    }
}

fn account_of(transaction: &TransactionAccount) -> Option<Uuid> {
    account(&transaction.app_account_token)
}

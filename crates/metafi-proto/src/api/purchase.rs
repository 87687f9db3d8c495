//! In-app purchase and subscription bodies: `/v2/iap/purchase/*`, `/v2/iap/subscription*`.
//! Store and environment are enum numbers, as Nakama's gateway writes them.

use serde::{Deserialize, Serialize};

use crate::json::{self, is_false, is_zero_i32, nullable};
use crate::wkt::{BoolValue, Int32Value, Timestamp};

/// Body of the purchase and subscription validations: every store's fields, each request
/// reading its own (`receipt` Apple and Google subscriptions, `purchase` Google and Huawei,
/// `signature` Huawei, `signed_request` Facebook Instant, `purchase_id` Samsung).
#[derive(Clone, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ValidatePurchaseRequest {
    #[serde(deserialize_with = "nullable")]
    pub receipt: String,
    #[serde(deserialize_with = "nullable")]
    pub purchase: String,
    #[serde(deserialize_with = "nullable")]
    pub signature: String,
    #[serde(alias = "signedRequest", deserialize_with = "nullable")]
    pub signed_request: String,
    #[serde(alias = "purchaseId", deserialize_with = "nullable")]
    pub purchase_id: String,
    #[serde(with = "json::bool_value")]
    pub persist: Option<BoolValue>,
}

/// `api.ValidatedPurchase`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ValidatedPurchase {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub product_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub transaction_id: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub store: i32,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub purchase_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub create_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub update_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub refund_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider_response: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub environment: i32,
    #[serde(skip_serializing_if = "is_false")]
    pub seen_before: bool,
}

/// `api.ValidatePurchaseResponse`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ValidatePurchaseResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub validated_purchases: Vec<ValidatedPurchase>,
}

/// `api.ValidatedSubscription`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ValidatedSubscription {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub product_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub original_transaction_id: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub store: i32,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub purchase_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub create_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub update_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub environment: i32,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub expiry_time: Option<Timestamp>,
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub refund_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider_response: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider_notification: String,
    #[serde(skip_serializing_if = "is_false")]
    pub active: bool,
}

/// `api.ValidateSubscriptionResponse`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ValidateSubscriptionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validated_subscription: Option<ValidatedSubscription>,
}

/// `api.SubscriptionList`.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct SubscriptionList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub validated_subscriptions: Vec<ValidatedSubscription>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prev_cursor: String,
}

/// `POST /v2/iap/subscription` body (`api.ListSubscriptionsRequest`).
#[derive(Clone, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListSubscriptionsRequest {
    #[serde(with = "json::int32_value")]
    pub limit: Option<Int32Value>,
    #[serde(deserialize_with = "nullable")]
    pub cursor: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validated_purchase_omits_defaults_and_writes_enums_as_numbers() {
        let p = ValidatedPurchase {
            user_id: "u".into(),
            transaction_id: "t".into(),
            store: 3,
            purchase_time: Some(Timestamp::from_millis(1_700_000_000_000)),
            environment: 2,
            ..ValidatedPurchase::default()
        };
        let text = serde_json::to_string(&p).expect("json");
        assert_eq!(
            text,
            r#"{"user_id":"u","transaction_id":"t","store":3,"purchase_time":"2023-11-14T22:13:20Z","environment":2}"#
        );
    }

    #[test]
    fn requests_read_wrappers_and_camel_case() {
        let r: ValidatePurchaseRequest =
            serde_json::from_str(r#"{"signedRequest":"a.b","persist":false}"#).expect("json");
        assert_eq!(r.signed_request, "a.b");
        assert_eq!(r.persist, Some(BoolValue { value: false }));
        let l: ListSubscriptionsRequest =
            serde_json::from_str(r#"{"limit":"5","cursor":null}"#).expect("json");
        assert_eq!(l.limit, Some(Int32Value { value: 5 }));
    }
}

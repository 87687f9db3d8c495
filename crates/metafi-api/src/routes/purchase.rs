//! `/v2/iap`: purchase validation per store, subscription validation, lookup and listing
//! (Nakama's `api_purchase.go`, `api_subscription.go`).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use metafi_core::Hook;
use metafi_core::iap::{MAX_LIST_LIMIT, Page, ValidatedPurchase, ValidatedSubscription};
use metafi_proto::Code;
use metafi_proto::api::{
    ListSubscriptionsRequest, SubscriptionList, ValidatePurchaseRequest, ValidatePurchaseResponse,
    ValidateSubscriptionResponse,
};
use metafi_proto::api::{
    ValidatedPurchase as PurchaseView, ValidatedSubscription as SubscriptionView,
};
use metafi_proto::wkt::Timestamp;
use serde::{Deserialize, Serialize};

use crate::body::{JsonBody, PathParams};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/iap/purchase/apple", post(purchase_apple))
        .route("/v2/iap/purchase/google", post(purchase_google))
        .route("/v2/iap/purchase/huawei", post(purchase_huawei))
        .route(
            "/v2/iap/purchase/facebookinstant",
            post(purchase_facebook_instant),
        )
        .route("/v2/iap/purchase/samsung", post(purchase_samsung))
        .route("/v2/iap/subscription", post(list_subscriptions))
        // GET of a store's name is a product id, as with Nakama's router.
        .route(
            "/v2/iap/subscription/apple",
            post(subscription_apple).get(get_subscription_apple),
        )
        .route(
            "/v2/iap/subscription/google",
            post(subscription_google).get(get_subscription_google),
        )
        .route("/v2/iap/subscription/{product_id}", get(get_subscription))
}

/// The request a validation's hooks see (Nakama's `ValidatePurchase*Request` fields; each
/// store reads its own).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ValidateHookRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    receipt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purchase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signed_request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purchase_id: Option<String>,
    persist: Option<bool>,
}

/// Which store a purchase validation asks, and the request fields it reads.
#[derive(Clone, Copy)]
enum Store {
    Apple,
    Google,
    Huawei,
    FacebookInstant,
    Samsung,
}

impl Store {
    fn hook(self) -> Hook {
        match self {
            Store::Apple => Hook::ValidatePurchaseApple,
            Store::Google => Hook::ValidatePurchaseGoogle,
            Store::Huawei => Hook::ValidatePurchaseHuawei,
            Store::FacebookInstant => Hook::ValidatePurchaseFacebookInstant,
            Store::Samsung => Hook::ValidatePurchaseSamsung,
        }
    }

    /// The fields of this store's request message, for its hooks.
    fn hook_request(self, body: ValidatePurchaseRequest) -> ValidateHookRequest {
        let persist = body.persist.map(|p| p.value);
        let mut request = ValidateHookRequest {
            persist,
            ..ValidateHookRequest::default()
        };
        match self {
            Store::Apple => request.receipt = Some(body.receipt),
            Store::Google => request.purchase = Some(body.purchase),
            Store::Huawei => {
                request.purchase = Some(body.purchase);
                request.signature = Some(body.signature);
            }
            Store::FacebookInstant => request.signed_request = Some(body.signed_request),
            Store::Samsung => request.purchase_id = Some(body.purchase_id),
        }
        request
    }
}

/// The validation route of each [`Store`].
macro_rules! purchase_routes {
    ($($name:ident => $store:ident),* $(,)?) => {$(
        async fn $name(
            state: State<ApiState>,
            auth: SessionAuth,
            client: ClientAddress,
            body: JsonBody<ValidatePurchaseRequest>,
        ) -> Result<Json<ValidatePurchaseResponse>, ApiError> {
            validate_purchase(Store::$store, state, auth, client, body).await
        }
    )*};
}

purchase_routes!(
    purchase_apple => Apple,
    purchase_google => Google,
    purchase_huawei => Huawei,
    purchase_facebook_instant => FacebookInstant,
    purchase_samsung => Samsung,
);

async fn validate_purchase(
    store: Store,
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<ValidatePurchaseRequest>,
) -> Result<Json<ValidatePurchaseResponse>, ApiError> {
    let hook = store.hook();
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        hook,
        ctx,
        store.hook_request(body),
        async |request| {
            let persist = request.persist.unwrap_or(true);
            let text = |field: &Option<String>| field.clone().unwrap_or_default();
            let purchases = &state.purchases;
            let user = claims.user_id;
            let validated = match store {
                Store::Apple => {
                    purchases
                        .validate_apple(user, &text(&request.receipt), persist)
                        .await?
                }
                Store::Google => {
                    purchases
                        .validate_google(user, &text(&request.purchase), persist)
                        .await?
                }
                Store::Huawei => {
                    purchases
                        .validate_huawei(
                            user,
                            &text(&request.purchase),
                            &text(&request.signature),
                            persist,
                        )
                        .await?
                }
                Store::FacebookInstant => {
                    purchases
                        .validate_facebook_instant(user, &text(&request.signed_request), persist)
                        .await?
                }
                Store::Samsung => {
                    purchases
                        .validate_samsung(user, &text(&request.purchase_id), persist)
                        .await?
                }
            };
            let response = ValidatePurchaseResponse {
                validated_purchases: validated.into_iter().map(purchase_view).collect(),
            };
            Ok(response)
        },
    )
    .await
}

async fn subscription_apple(
    state: State<ApiState>,
    auth: SessionAuth,
    client: ClientAddress,
    body: JsonBody<ValidatePurchaseRequest>,
) -> Result<Json<ValidateSubscriptionResponse>, ApiError> {
    validate_subscription(
        "Apple",
        Hook::ValidateSubscriptionApple,
        state,
        auth,
        client,
        body,
    )
    .await
}

async fn subscription_google(
    state: State<ApiState>,
    auth: SessionAuth,
    client: ClientAddress,
    body: JsonBody<ValidatePurchaseRequest>,
) -> Result<Json<ValidateSubscriptionResponse>, ApiError> {
    validate_subscription(
        "Google",
        Hook::ValidateSubscriptionGoogle,
        state,
        auth,
        client,
        body,
    )
    .await
}

async fn validate_subscription(
    store: &'static str,
    hook: Hook,
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<ValidatePurchaseRequest>,
) -> Result<Json<ValidateSubscriptionResponse>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = ValidateHookRequest {
        receipt: Some(body.receipt),
        persist: body.persist.map(|p| p.value),
        ..ValidateHookRequest::default()
    };
    hooks::around(&state, hook, ctx, request, async |request| {
        let persist = request.persist.unwrap_or(true);
        let receipt = request.receipt.unwrap_or_default();
        let validated = match store {
            "Apple" => {
                state
                    .purchases
                    .validate_subscription_apple(claims.user_id, &receipt, persist)
                    .await?
            }
            _ => {
                state
                    .purchases
                    .validate_subscription_google(claims.user_id, &receipt, persist)
                    .await?
            }
        };
        let response = ValidateSubscriptionResponse {
            validated_subscription: Some(subscription_view(validated)),
        };
        Ok(response)
    })
    .await
}

/// The request `ListSubscriptions` hooks see.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListHookRequest {
    limit: Option<i32>,
    cursor: String,
}

async fn list_subscriptions(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<ListSubscriptionsRequest>,
) -> Result<Json<SubscriptionList>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = ListHookRequest {
        limit: body.limit.map(|l| l.value),
        cursor: body.cursor,
    };
    hooks::around(
        &state,
        Hook::ListSubscriptions,
        ctx,
        request,
        async |request| {
            let limit = match request.limit {
                None => MAX_LIST_LIMIT,
                // Nakama's text says 1000 though it allows 100.
                Some(l) if !(1..=100).contains(&l) => {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Invalid limit - limit must be between 1 and 1000.",
                    ));
                }
                Some(l) => usize::try_from(l).unwrap_or(MAX_LIST_LIMIT),
            };
            let page = state
                .purchases
                .list_subscriptions(Some(claims.user_id), limit, &request.cursor)
                .await?;
            let list = subscription_list(page);
            Ok(list)
        },
    )
    .await
}

/// The request `GetSubscription` hooks see.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct GetHookRequest {
    product_id: String,
}

async fn get_subscription(
    state: State<ApiState>,
    auth: SessionAuth,
    client: ClientAddress,
    PathParams(product_id): PathParams<String>,
) -> Result<Json<SubscriptionView>, ApiError> {
    subscription_of(state, auth, client, product_id).await
}

async fn get_subscription_apple(
    state: State<ApiState>,
    auth: SessionAuth,
    client: ClientAddress,
) -> Result<Json<SubscriptionView>, ApiError> {
    subscription_of(state, auth, client, "apple".into()).await
}

async fn get_subscription_google(
    state: State<ApiState>,
    auth: SessionAuth,
    client: ClientAddress,
) -> Result<Json<SubscriptionView>, ApiError> {
    subscription_of(state, auth, client, "google".into()).await
}

async fn subscription_of(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    product_id: String,
) -> Result<Json<SubscriptionView>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::GetSubscription,
        ctx,
        GetHookRequest { product_id },
        async |request| {
            let found = state
                .purchases
                .subscription_by_product_id(claims.user_id, &request.product_id)
                .await?;
            let view = subscription_view(found);
            Ok(view)
        },
    )
    .await
}

fn time(ms: i64) -> Option<Timestamp> {
    Some(Timestamp::from_millis(ms))
}

/// A purchase as Nakama's JSON shows it.
pub(crate) fn purchase_view(p: ValidatedPurchase) -> PurchaseView {
    PurchaseView {
        user_id: p.user_id.map(|u| u.to_string()).unwrap_or_default(),
        product_id: p.product_id,
        transaction_id: p.transaction_id,
        store: p.store,
        purchase_time: time(p.purchase_time_ms),
        create_time: p.create_time_ms.and_then(time),
        update_time: p.update_time_ms.and_then(time),
        refund_time: p.refund_time_ms.and_then(time),
        provider_response: p.provider_response,
        environment: p.environment,
        seen_before: p.seen_before,
    }
}

/// A subscription as Nakama's JSON shows it.
pub(crate) fn subscription_view(s: ValidatedSubscription) -> SubscriptionView {
    SubscriptionView {
        user_id: s.user_id.map(|u| u.to_string()).unwrap_or_default(),
        product_id: s.product_id,
        original_transaction_id: s.original_transaction_id,
        store: s.store,
        purchase_time: time(s.purchase_time_ms),
        create_time: s.create_time_ms.and_then(time),
        update_time: s.update_time_ms.and_then(time),
        environment: s.environment,
        expiry_time: time(s.expiry_time_ms),
        refund_time: s.refund_time_ms.and_then(time),
        provider_response: s.provider_response,
        provider_notification: s.provider_notification,
        active: s.active,
    }
}

fn subscription_list(page: Page<ValidatedSubscription>) -> SubscriptionList {
    SubscriptionList {
        validated_subscriptions: page.items.into_iter().map(subscription_view).collect(),
        cursor: page.cursor,
        prev_cursor: page.prev_cursor,
    }
}

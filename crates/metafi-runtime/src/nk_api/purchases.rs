//! Purchases and subscriptions:
//! `purchase_validate_{apple,google,huawei,facebook_instant,samsung}`, `purchase_get_by_transaction_id`,
//! `purchases_list`, `subscription_validate_{apple,google}`, `subscription_get_by_product_id`,
//! `subscriptions_list`, over `metafi_core::Purchases` — the service `/v2/iap` uses.
//!
//! Shapes as Nakama's runtimes (`purchaseToLuaTable`, `validatedPurchaseToJsObject`): times
//! in seconds, store and environment as their enum names, field names snake_case in Lua and
//! camelCase in JavaScript. Argument checks and texts are Lua's (`runtime_lua_nakama.go`);
//! JavaScript's differ where noted.

use metafi_core::iap::{Page, ValidatedPurchase, ValidatedSubscription};
use metafi_core::{CoreError, Purchases};
use uuid::Uuid;

use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row(
        "purchase_validate_apple",
        "purchaseValidateApple",
        validate_apple,
    ),
    row(
        "purchase_validate_google",
        "purchaseValidateGoogle",
        validate_google,
    ),
    row(
        "purchase_validate_huawei",
        "purchaseValidateHuawei",
        validate_huawei,
    ),
    row(
        "purchase_validate_facebook_instant",
        "purchaseValidateFacebookInstant",
        validate_facebook_instant,
    ),
    row(
        "purchase_validate_samsung",
        "purchaseValidateSamsung",
        validate_samsung,
    ),
    row(
        "purchase_get_by_transaction_id",
        "purchaseGetByTransactionId",
        get_by_transaction_id,
    ),
    row("purchases_list", "purchasesList", purchases_list),
    row(
        "subscription_validate_apple",
        "subscriptionValidateApple",
        subscription_validate_apple,
    ),
    row(
        "subscription_validate_google",
        "subscriptionValidateGoogle",
        subscription_validate_google,
    ),
    row(
        "subscription_get_by_product_id",
        "subscriptionGetByProductId",
        subscription_get_by_product_id,
    ),
    row(
        "subscriptions_list",
        "subscriptionsList",
        subscriptions_list,
    ),
];

const fn row(lua: &'static str, js: &'static str, f: fn(Nk, NkArgs) -> NkFuture) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Async(f),
    }
}

/// Nakama's `StoreProvider` names.
fn store_name(store: i32) -> &'static str {
    match store {
        0 => "APPLE_APP_STORE",
        1 => "GOOGLE_PLAY_STORE",
        2 => "HUAWEI_APP_GALLERY",
        3 => "FACEBOOK_INSTANT_STORE",
        4 => "SAMSUNG_GALAXY_STORE",
        _ => "UNKNOWN",
    }
}

/// Nakama's `StoreEnvironment` names.
fn environment_name(environment: i32) -> &'static str {
    match environment {
        1 => "SANDBOX",
        2 => "PRODUCTION",
        _ => "UNKNOWN",
    }
}

fn user_text(user_id: Option<Uuid>) -> String {
    user_id.map(|u| u.to_string()).unwrap_or_default()
}

pub(super) fn purchase_value(p: &ValidatedPurchase) -> NkValue {
    let mut map = NkMap::with_capacity(11);
    map.insert("user_id", user_text(p.user_id));
    map.insert("product_id", p.product_id.as_str());
    map.insert("transaction_id", p.transaction_id.as_str());
    map.insert("store", store_name(p.store));
    map.insert("provider_response", p.provider_response.as_str());
    map.insert("purchase_time", p.purchase_time_ms.div_euclid(1000));
    if let Some(ms) = p.create_time_ms {
        map.insert("create_time", ms.div_euclid(1000));
    }
    if let Some(ms) = p.update_time_ms {
        map.insert("update_time", ms.div_euclid(1000));
    }
    if let Some(ms) = p.refund_time_ms {
        map.insert("refund_time", ms.div_euclid(1000));
    }
    map.insert("environment", environment_name(p.environment));
    map.insert("seen_before", p.seen_before);
    map.into()
}

pub(super) fn subscription_value(s: &ValidatedSubscription) -> NkValue {
    let mut map = NkMap::with_capacity(13);
    map.insert("user_id", user_text(s.user_id));
    map.insert("product_id", s.product_id.as_str());
    map.insert(
        "original_transaction_id",
        s.original_transaction_id.as_str(),
    );
    map.insert("store", store_name(s.store));
    map.insert("purchase_time", s.purchase_time_ms.div_euclid(1000));
    if let Some(ms) = s.create_time_ms {
        map.insert("create_time", ms.div_euclid(1000));
    }
    if let Some(ms) = s.update_time_ms {
        map.insert("update_time", ms.div_euclid(1000));
    }
    if let Some(ms) = s.refund_time_ms {
        map.insert("refund_time", ms.div_euclid(1000));
    }
    map.insert("environment", environment_name(s.environment));
    map.insert("expiry_time", s.expiry_time_ms.div_euclid(1000));
    map.insert("active", s.active);
    map.insert("provider_response", s.provider_response.as_str());
    map.insert("provider_notification", s.provider_notification.as_str());
    map.into()
}

/// A purchase as a notification function receives it, as JSON in `naming`.
pub fn purchase_payload(p: &ValidatedPurchase, naming: super::Naming) -> serde_json::Value {
    purchase_value(p)
        .to_json(naming)
        .unwrap_or(serde_json::Value::Null)
}

/// A subscription as a notification function receives it, as JSON in `naming`.
pub fn subscription_payload(s: &ValidatedSubscription, naming: super::Naming) -> serde_json::Value {
    subscription_value(s)
        .to_json(naming)
        .unwrap_or(serde_json::Value::Null)
}

fn validation_value(purchases: &[ValidatedPurchase]) -> NkValue {
    let list: Vec<NkValue> = purchases.iter().map(purchase_value).collect();
    NkMap::new().with("validated_purchases", list).into()
}

/// The owner: Lua `expects user id` (empty) or `invalid user id`; JavaScript `expects a user
/// ID string` or `expects user ID to be a valid identifier`.
fn user_id(args: &NkArgs) -> Result<Uuid, NkError> {
    let arg = args.at(1);
    let (empty, invalid) = if args.is_js() {
        (
            "expects a user ID string",
            "expects user ID to be a valid identifier",
        )
    } else {
        ("expects user id", "invalid user id")
    };
    let text = arg.non_empty(empty)?;
    Uuid::parse_str(text).map_err(|_| arg.error(invalid))
}

/// `persist` at `position`: true unless false.
fn persist(args: &NkArgs, position: usize) -> Result<bool, NkError> {
    Ok(args
        .at(position)
        .opt_bool("expects persist to be a boolean")?
        .unwrap_or(true))
}

/// An optional credential override at `position`; the configured one otherwise.
fn credential(args: &NkArgs, position: usize, configured: &str) -> Result<String, NkError> {
    Ok(args
        .at(position)
        .opt_string("expects a string")?
        .map_or_else(|| configured.to_owned(), str::to_owned))
}

/// Nakama raises "<Store> IAP is not configured." before calling the store (JS: lowercase
/// first letter, no period).
fn not_configured(args: &NkArgs, store: &str) -> NkError {
    if args.is_js() {
        let mut text = format!("{store} IAP is not configured");
        text[..1].make_ascii_lowercase();
        NkError::failed(text)
    } else {
        NkError::failed(format!("{store} IAP is not configured."))
    }
}

fn failed(what: &str, e: CoreError) -> NkError {
    NkError::core(what, e)
}

/// An Apple validation's `(user_id, receipt, persist = true, password = the configured one)`,
/// checked in Nakama's order (JavaScript refuses a missing password first).
fn apple_args(
    args: &NkArgs,
    purchases: &Purchases,
) -> Result<(Uuid, String, bool, String), NkError> {
    let password = credential(args, 4, &purchases.config().apple.shared_password)?;
    if args.is_js() && password.is_empty() {
        return Err(not_configured(args, "Apple"));
    }
    let user = user_id(args)?;
    let receipt = args.at(2).non_empty("expects receipt")?.to_owned();
    let persist = persist(args, 3)?;
    if password.is_empty() {
        return Err(not_configured(args, "Apple"));
    }
    Ok((user, receipt, persist, password))
}

/// A Google validation's `(user_id, receipt, persist = true, client_email, private_key)`, the
/// account defaulting to the configured one.
fn google_args(
    args: &NkArgs,
    purchases: &Purchases,
) -> Result<(Uuid, String, bool, String, String), NkError> {
    let user = user_id(args)?;
    let receipt = args.at(2).non_empty("expects receipt")?.to_owned();
    let persist = persist(args, 3)?;
    let (email, key) = google_account(args, purchases)?;
    if email.is_empty() || key.is_empty() {
        return Err(not_configured(args, "Google"));
    }
    Ok((user, receipt, persist, email, key))
}

fn validate_apple(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_validate_apple")?;
        let (user, receipt, persist, password) = apple_args(&args, purchases)?;
        let out = purchases
            .validate_apple_with(user, &receipt, persist, &password)
            .await
            .map_err(|e| failed("error validating Apple receipt", e))?;
        Ok(validation_value(&out))
    })
}

fn google_account(args: &NkArgs, purchases: &Purchases) -> Result<(String, String), NkError> {
    let config = &purchases.config().google;
    Ok((
        credential(args, 4, &config.client_email)?,
        credential(args, 5, &config.private_key)?,
    ))
}

fn validate_google(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_validate_google")?;
        let (user, receipt, persist, email, key) = google_args(&args, purchases)?;
        let out = purchases
            .validate_google_with(user, &receipt, persist, &email, &key)
            .await
            .map_err(|e| failed("error validating Google receipt", e))?;
        Ok(validation_value(&out))
    })
}

/// Lua: `(user_id, signature, receipt, persist)`; JavaScript: `(userId, receipt, signature,
/// persist)`, as in Nakama.
fn validate_huawei(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_validate_huawei")?;
        let config = &purchases.config().huawei;
        if config.public_key.is_empty()
            || config.client_id.is_empty()
            || config.client_secret.is_empty()
        {
            return Err(not_configured(&args, "Huawei"));
        }
        let user = user_id(&args)?;
        let (signature, receipt) = if args.is_js() {
            let receipt = args.at(2).non_empty("expects receipt")?;
            let signature = args.at(3).non_empty("expects signature")?;
            (signature, receipt)
        } else {
            let signature = args.at(2).non_empty("expects signature")?;
            let receipt = args.at(3).non_empty("expects receipt")?;
            (signature, receipt)
        };
        let (signature, receipt) = (signature.to_owned(), receipt.to_owned());
        let persist = persist(&args, 4)?;
        let out = purchases
            .validate_huawei(user, &receipt, &signature, persist)
            .await
            .map_err(|e| failed("error validating Huawei receipt", e))?;
        Ok(validation_value(&out))
    })
}

fn validate_facebook_instant(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_validate_facebook_instant")?;
        if purchases.config().facebook_instant.app_secret.is_empty() {
            let store = if args.is_js() {
                "Facebook instant"
            } else {
                "Facebook Instant"
            };
            return Err(not_configured(&args, store));
        }
        let user = user_id(&args)?;
        let signed_request = args.at(2).non_empty("expects signedRequest")?.to_owned();
        let persist = persist(&args, 3)?;
        let out = purchases
            .validate_facebook_instant(user, &signed_request, persist)
            .await
            .map_err(|e| failed("error validating Facebook Instant receipt", e))?;
        Ok(validation_value(&out))
    })
}

/// `(user_id, purchase_id, persist = true)`: Samsung needs no credentials.
fn validate_samsung(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_validate_samsung")?;
        let user = user_id(&args)?;
        let purchase_id = args.at(2).non_empty("expects purchaseId")?.to_owned();
        let persist = persist(&args, 3)?;
        let out = purchases
            .validate_samsung(user, &purchase_id, persist)
            .await
            .map_err(|e| failed("error validating Samsung receipt", e))?;
        Ok(validation_value(&out))
    })
}

/// The purchase, or nil when no purchase has this id (Nakama fails on a nil pointer there).
fn get_by_transaction_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchase_get_by_transaction_id")?;
        let message = if args.is_js() {
            "expects a transaction id string"
        } else {
            "expects a transaction ID string"
        };
        let id = args.at(1).non_empty(message)?.to_owned();
        let found = purchases
            .by_transaction_id(&id)
            .await
            .map_err(|e| failed("error retrieving purchase", e))?;
        Ok(found.as_ref().map_or(NkValue::Nil, purchase_value))
    })
}

/// `(user_id = "" for everyone, limit = 100, cursor = "")`.
fn list_args(args: &NkArgs) -> Result<(Option<Uuid>, usize, String), NkError> {
    let user = args.at(1).opt_uuid("expects a valid user ID")?;
    let limit_message = if args.is_js() {
        "limit must be 1-100"
    } else {
        "expects a limit 1-100"
    };
    let limit = match args.at(2).opt_integer(limit_message)? {
        None => 100,
        Some(l) if (1..=100).contains(&l) => usize::try_from(l).unwrap_or(100),
        Some(_) => return Err(args.at(2).error(limit_message)),
    };
    let cursor = args
        .at(3)
        .opt_string("expects cursor to be a string")?
        .unwrap_or_default()
        .to_owned();
    Ok((user, limit, cursor))
}

/// Lua: `(items, cursor, prev_cursor)` with nil for no cursor; JavaScript: one object.
fn page_value<T>(
    args: &NkArgs,
    page: &Page<T>,
    field: &'static str,
    item: fn(&T) -> NkValue,
) -> NkValue {
    let items: Vec<NkValue> = page.items.iter().map(item).collect();
    let cursor = |c: &str| {
        if c.is_empty() {
            NkValue::Nil
        } else {
            NkValue::from(c)
        }
    };
    if args.is_js() {
        NkMap::new()
            .with(field, items)
            .with("cursor", cursor(&page.cursor))
            .with("prev_cursor", cursor(&page.prev_cursor))
            .into()
    } else {
        NkValue::Multi(vec![
            items.into(),
            cursor(&page.cursor),
            cursor(&page.prev_cursor),
        ])
    }
}

fn purchases_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("purchases_list")?;
        let (user, limit, cursor) = list_args(&args)?;
        let page = purchases
            .list(user, limit, &cursor)
            .await
            .map_err(|e| failed("error retrieving purchases", e))?;
        Ok(page_value(
            &args,
            &page,
            "validated_purchases",
            purchase_value,
        ))
    })
}

fn subscription_validate_apple(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("subscription_validate_apple")?;
        let (user, receipt, persist, password) = apple_args(&args, purchases)?;
        let out = purchases
            .validate_subscription_apple_with(user, &receipt, persist, &password)
            .await
            .map_err(|e| failed("error validating Apple receipt", e))?;
        Ok(NkMap::new()
            .with("validated_subscription", subscription_value(&out))
            .into())
    })
}

fn subscription_validate_google(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("subscription_validate_google")?;
        let (user, receipt, persist, email, key) = google_args(&args, purchases)?;
        let out = purchases
            .validate_subscription_google_with(user, &receipt, persist, &email, &key)
            .await
            .map_err(|e| failed("error validating Google receipt", e))?;
        Ok(NkMap::new()
            .with("validated_subscription", subscription_value(&out))
            .into())
    })
}

fn subscription_get_by_product_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("subscription_get_by_product_id")?;
        let user = user_id(&args)?;
        let message = if args.is_js() {
            "expects a transaction id string"
        } else {
            "expects a product ID string"
        };
        let product = args.at(2).non_empty(message)?.to_owned();
        let what = if args.is_js() {
            "error retrieving purchase"
        } else {
            "error retrieving subscription"
        };
        let found = purchases
            .subscription_by_product_id(user, &product)
            .await
            .map_err(|e| failed(what, e))?;
        Ok(subscription_value(&found))
    })
}

fn subscriptions_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let purchases = nk.purchases("subscriptions_list")?;
        let (user, limit, cursor) = list_args(&args)?;
        let page = purchases
            .list_subscriptions(user, limit, &cursor)
            .await
            .map_err(|e| {
                let what = if args.is_js() {
                    "error retrieving purchases"
                } else {
                    "error retrieving subscriptions"
                };
                failed(what, e)
            })?;
        Ok(page_value(
            &args,
            &page,
            "validated_subscriptions",
            subscription_value,
        ))
    })
}

#[cfg(test)]
mod tests;

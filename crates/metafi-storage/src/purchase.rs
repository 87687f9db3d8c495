//! Validated in-app purchases and subscriptions (Nakama's `purchase` and `subscription`
//! tables): what a store confirmed, keyed by the store's transaction id.
//!
//! A row outlives its user: deleting the account clears `user_id` (Nakama keeps the receipt so
//! that a replayed transaction is still recognised), which listings show as no owner.

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// A purchase as a store confirmed it, about to be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPurchase {
    pub user_id: Uuid,
    /// Nakama's `StoreProvider` number (0 Apple, 1 Google, 2 Huawei, 3 Facebook Instant,
    /// 4 Samsung).
    pub store: i32,
    pub product_id: String,
    /// The store's id of the transaction: unique across all stores and users.
    pub transaction_id: String,
    /// The store's answer, JSON text (`{}` when there is none).
    pub raw_response: String,
    pub purchase_time_ms: i64,
    /// 0 when not refunded.
    pub refund_time_ms: i64,
    /// Nakama's `StoreEnvironment` number (0 unknown, 1 sandbox, 2 production).
    pub environment: i32,
}

/// A recorded purchase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purchase {
    /// `None` once the owner's account was deleted.
    pub user_id: Option<Uuid>,
    pub store: i32,
    pub product_id: String,
    pub transaction_id: String,
    pub raw_response: String,
    pub purchase_time_ms: i64,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    /// 0 when not refunded.
    pub refund_time_ms: i64,
    pub environment: i32,
}

/// A purchase after an upsert, and whether its transaction id was recorded before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpsertedPurchase {
    pub purchase: Purchase,
    pub seen_before: bool,
}

/// A subscription as a store confirmed it, about to be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubscription {
    pub user_id: Uuid,
    pub store: i32,
    pub product_id: String,
    /// The first transaction of the subscription: one row per subscription, renewals update it.
    pub original_transaction_id: String,
    /// JSON text; empty keeps what an earlier validation stored.
    pub raw_response: String,
    /// JSON text of a store notification; empty keeps what was stored.
    pub raw_notification: String,
    pub purchase_time_ms: i64,
    pub expire_time_ms: i64,
    /// 0 keeps what was stored (a refund is never undone).
    pub refund_time_ms: i64,
    pub environment: i32,
}

/// A recorded subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub user_id: Option<Uuid>,
    pub store: i32,
    pub product_id: String,
    pub original_transaction_id: String,
    pub raw_response: String,
    pub raw_notification: String,
    pub purchase_time_ms: i64,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    pub expire_time_ms: i64,
    pub refund_time_ms: i64,
    pub environment: i32,
}

/// Where a listing resumes: after this `(purchase_time, id)` in newest-first order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapCursor {
    pub time_ms: i64,
    /// The transaction id (purchases) or original transaction id (subscriptions).
    pub id: String,
}

/// A page of a newest-first listing; `next` is set when more rows follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapPage<T> {
    pub items: Vec<T>,
    pub next: Option<IapCursor>,
}

/// Persistent purchases and subscriptions.
#[async_trait]
pub trait PurchaseStore: Send + Sync {
    /// Records purchases in one transaction. A transaction id already recorded keeps its owner,
    /// product and times; only its refund time and update time change, and it comes back with
    /// `seen_before`. The answer has one entry per distinct transaction id, in input order.
    async fn upsert_purchases(
        &self,
        purchases: Vec<NewPurchase>,
        now_ms: i64,
    ) -> Result<Vec<UpsertedPurchase>, StorageError>;

    /// The purchase with this transaction id, if recorded.
    async fn purchase_by_transaction_id(
        &self,
        transaction_id: &str,
    ) -> Result<Option<Purchase>, StorageError>;

    /// Purchases newest first (`purchase_time`, then transaction id, descending), of one user
    /// or of everyone; at most `limit` (≥ 1) from `after`.
    async fn list_purchases(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Purchase>, StorageError>;

    /// Records a subscription: a new original transaction id is inserted; a known one keeps
    /// its owner, store and purchase time and takes the new product, expiry, and the non-empty
    /// raw texts and non-zero refund time. Returns the stored row.
    async fn upsert_subscription(
        &self,
        subscription: NewSubscription,
        now_ms: i64,
    ) -> Result<Subscription, StorageError>;

    /// The user's subscription to a product (the latest by purchase time if several).
    async fn subscription_by_product_id(
        &self,
        user_id: Uuid,
        product_id: &str,
    ) -> Result<Option<Subscription>, StorageError>;

    /// The subscription with this original transaction id, if recorded.
    async fn subscription_by_original_transaction_id(
        &self,
        original_transaction_id: &str,
    ) -> Result<Option<Subscription>, StorageError>;

    /// Subscriptions newest first, of one user or everyone, like [`list_purchases`].
    ///
    /// [`list_purchases`]: PurchaseStore::list_purchases
    async fn list_subscriptions(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Subscription>, StorageError>;
}

/// Checks what a backend cannot store (NUL) or Nakama's columns refuse (over 512 characters,
/// an empty transaction id).
pub fn check_new_purchase(p: &NewPurchase) -> Result<(), StorageError> {
    check_id("transaction id", &p.transaction_id)?;
    check_text("product id", &p.product_id)?;
    crate::text::refuse_nul("raw response", &p.raw_response)
}

/// Like [`check_new_purchase`], for a subscription.
pub fn check_new_subscription(s: &NewSubscription) -> Result<(), StorageError> {
    check_id("original transaction id", &s.original_transaction_id)?;
    check_text("product id", &s.product_id)?;
    crate::text::refuse_nul("raw response", &s.raw_response)?;
    crate::text::refuse_nul("raw notification", &s.raw_notification)
}

/// Nakama's `VARCHAR(512)` for ids.
pub const IAP_ID_MAX: usize = 512;

fn check_id(field: &'static str, value: &str) -> Result<(), StorageError> {
    if value.is_empty() {
        return Err(StorageError::Invalid {
            message: format!("{field} must not be empty"),
        });
    }
    check_text(field, value)
}

fn check_text(field: &'static str, value: &str) -> Result<(), StorageError> {
    crate::text::refuse_nul(field, value)?;
    if value.chars().count() > IAP_ID_MAX {
        return Err(StorageError::TooLong {
            field,
            max: IAP_ID_MAX,
        });
    }
    Ok(())
}

/// Keeps the last entry of each transaction id, in the order of first appearance (Nakama keys
/// a batch by transaction id, so the last duplicate wins).
pub fn dedup_purchases(purchases: Vec<NewPurchase>) -> Vec<NewPurchase> {
    let mut out: Vec<NewPurchase> = Vec::with_capacity(purchases.len());
    for p in purchases {
        match out
            .iter_mut()
            .find(|q| q.transaction_id == p.transaction_id)
        {
            Some(q) => *q = p,
            None => out.push(p),
        }
    }
    out
}

/// Splits a fetched `limit + 1` rows into a page.
pub fn iap_page<T>(mut rows: Vec<T>, limit: usize, key: impl Fn(&T) -> IapCursor) -> IapPage<T> {
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(key)
    } else {
        None
    };
    IapPage { items: rows, next }
}

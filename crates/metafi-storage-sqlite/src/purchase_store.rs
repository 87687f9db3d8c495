//! Purchases and subscriptions in SQLite: upserts through the single writer, listings newest
//! first along the `(user_id, purchase_time, id)` indexes.

use async_trait::async_trait;
use metafi_storage::{
    IapCursor, IapPage, NewPurchase, NewSubscription, Purchase, PurchaseStore, StorageError,
    Subscription, UpsertedPurchase, check_new_purchase, check_new_subscription, dedup_purchases,
    iap_page, text,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::{SqliteStorage, db};

macro_rules! purchase_columns {
    () => {
        "user_id, store, product_id, transaction_id, raw_response, purchase_time, create_time, \
         update_time, refund_time, environment"
    };
}

macro_rules! subscription_columns {
    () => {
        "user_id, store, product_id, original_transaction_id, raw_response, raw_notification, \
         purchase_time, create_time, update_time, expire_time, refund_time, environment"
    };
}

#[async_trait]
impl PurchaseStore for SqliteStorage {
    async fn upsert_purchases(
        &self,
        purchases: Vec<NewPurchase>,
        now_ms: i64,
    ) -> Result<Vec<UpsertedPurchase>, StorageError> {
        for p in &purchases {
            check_new_purchase(p)?;
        }
        let purchases = dedup_purchases(purchases);
        if purchases.is_empty() {
            return Ok(Vec::new());
        }
        self.writer
            .submit(move |conn| {
                purchases
                    .iter()
                    .map(|p| upsert_purchase(conn, p, now_ms))
                    .collect()
            })
            .await
    }

    async fn purchase_by_transaction_id(
        &self,
        transaction_id: &str,
    ) -> Result<Option<Purchase>, StorageError> {
        text::refuse_nul("transaction id", transaction_id)?;
        let id = transaction_id.to_owned();
        self.readers
            .read(move |conn| {
                conn.prepare_cached(concat!(
                    "SELECT ",
                    purchase_columns!(),
                    " FROM purchase WHERE transaction_id = ?1"
                ))
                .and_then(|mut s| s.query_row(params![id], purchase_row).optional())
                .map_err(|e| StorageError::backend("get purchase", e))
            })
            .await
    }

    async fn list_purchases(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Purchase>, StorageError> {
        let limit = limit.max(1);
        let rows = self
            .readers
            .read(move |conn| {
                list(
                    conn,
                    "purchase",
                    "transaction_id",
                    purchase_columns!(),
                    user_id,
                    limit + 1,
                    after.as_ref(),
                    purchase_row,
                )
            })
            .await?;
        Ok(iap_page(rows, limit, |p: &Purchase| IapCursor {
            time_ms: p.purchase_time_ms,
            id: p.transaction_id.clone(),
        }))
    }

    async fn upsert_subscription(
        &self,
        subscription: NewSubscription,
        now_ms: i64,
    ) -> Result<Subscription, StorageError> {
        check_new_subscription(&subscription)?;
        self.writer
            .submit(move |conn| upsert_subscription(conn, &subscription, now_ms))
            .await
    }

    async fn subscription_by_product_id(
        &self,
        user_id: Uuid,
        product_id: &str,
    ) -> Result<Option<Subscription>, StorageError> {
        text::refuse_nul("product id", product_id)?;
        let product_id = product_id.to_owned();
        self.readers
            .read(move |conn| {
                conn.prepare_cached(concat!(
                    "SELECT ",
                    subscription_columns!(),
                    " FROM subscription WHERE user_id = ?1 AND product_id = ?2 ",
                    "ORDER BY purchase_time DESC, original_transaction_id DESC LIMIT 1"
                ))
                .and_then(|mut s| {
                    s.query_row(params![user_id, product_id], subscription_row)
                        .optional()
                })
                .map_err(|e| StorageError::backend("get subscription", e))
            })
            .await
    }

    async fn subscription_by_original_transaction_id(
        &self,
        original_transaction_id: &str,
    ) -> Result<Option<Subscription>, StorageError> {
        text::refuse_nul("original transaction id", original_transaction_id)?;
        let id = original_transaction_id.to_owned();
        self.readers
            .read(move |conn| subscription_by_id(conn, &id))
            .await
    }

    async fn list_subscriptions(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Subscription>, StorageError> {
        let limit = limit.max(1);
        let rows = self
            .readers
            .read(move |conn| {
                list(
                    conn,
                    "subscription",
                    "original_transaction_id",
                    subscription_columns!(),
                    user_id,
                    limit + 1,
                    after.as_ref(),
                    subscription_row,
                )
            })
            .await?;
        Ok(iap_page(rows, limit, |s: &Subscription| IapCursor {
            time_ms: s.purchase_time_ms,
            id: s.original_transaction_id.clone(),
        }))
    }
}

fn upsert_purchase(
    conn: &Connection,
    p: &NewPurchase,
    now_ms: i64,
) -> Result<UpsertedPurchase, StorageError> {
    let fail = |e| StorageError::backend("upsert purchase", e);
    let seen_before = conn
        .prepare_cached("SELECT 1 FROM purchase WHERE transaction_id = ?1")
        .and_then(|mut s| {
            s.query_row(params![p.transaction_id], |_| Ok(()))
                .optional()
        })
        .map_err(fail)?
        .is_some();
    let raw = if p.raw_response.is_empty() {
        "{}"
    } else {
        &p.raw_response
    };
    let purchase = conn
        .prepare_cached(concat!(
            "INSERT INTO purchase (",
            purchase_columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9) ",
            "ON CONFLICT (transaction_id) DO UPDATE SET ",
            "refund_time = excluded.refund_time, update_time = excluded.update_time ",
            "RETURNING ",
            purchase_columns!()
        ))
        .and_then(|mut s| {
            s.query_row(
                params![
                    p.user_id,
                    p.store,
                    p.product_id,
                    p.transaction_id,
                    raw,
                    p.purchase_time_ms,
                    now_ms,
                    p.refund_time_ms,
                    p.environment
                ],
                purchase_row,
            )
        })
        .map_err(fail)?;
    Ok(UpsertedPurchase {
        purchase,
        seen_before,
    })
}

fn upsert_subscription(
    conn: &Connection,
    s: &NewSubscription,
    now_ms: i64,
) -> Result<Subscription, StorageError> {
    conn.prepare_cached(concat!(
        "INSERT INTO subscription (",
        subscription_columns!(),
        ") VALUES (?1, ?2, ?3, ?4, coalesce(nullif(?5, ''), '{}'), coalesce(nullif(?6, ''), '{}'), ",
        "?7, ?8, ?8, ?9, ?10, ?11) ",
        "ON CONFLICT (original_transaction_id) DO UPDATE SET ",
        "product_id = excluded.product_id, expire_time = excluded.expire_time, ",
        "update_time = excluded.update_time, ",
        "raw_response = coalesce(nullif(?5, ''), subscription.raw_response), ",
        "raw_notification = coalesce(nullif(?6, ''), subscription.raw_notification), ",
        "refund_time = coalesce(nullif(?10, 0), subscription.refund_time) ",
        "RETURNING ",
        subscription_columns!()
    ))
    .and_then(|mut st| {
        st.query_row(
            params![
                s.user_id,
                s.store,
                s.product_id,
                s.original_transaction_id,
                s.raw_response,
                s.raw_notification,
                s.purchase_time_ms,
                now_ms,
                s.expire_time_ms,
                s.refund_time_ms,
                s.environment
            ],
            subscription_row,
        )
    })
    .map_err(|e| StorageError::backend("upsert subscription", e))
}

fn subscription_by_id(conn: &Connection, id: &str) -> Result<Option<Subscription>, StorageError> {
    conn.prepare_cached(concat!(
        "SELECT ",
        subscription_columns!(),
        " FROM subscription WHERE original_transaction_id = ?1"
    ))
    .and_then(|mut s| s.query_row(params![id], subscription_row).optional())
    .map_err(|e| StorageError::backend("get subscription", e))
}

/// Newest first from `after`, optionally of one user. `table`, `id` and `columns` are this
/// module's constants, never input.
#[allow(clippy::too_many_arguments)] // one private helper shared by two listings
fn list<T>(
    conn: &Connection,
    table: &str,
    id: &str,
    columns: &str,
    user_id: Option<Uuid>,
    fetch: usize,
    after: Option<&IapCursor>,
    row: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StorageError> {
    // Two shapes so that a user's listing walks its index; ?1 is bound either way.
    let owner = if user_id.is_some() {
        "user_id = ?1"
    } else {
        "?1 IS NULL"
    };
    let mut sql = format!("SELECT {columns} FROM {table} WHERE {owner}");
    if after.is_some() {
        sql.push_str(&format!(" AND (purchase_time, {id}) < (?2, ?3)"));
    }
    sql.push_str(&format!(" ORDER BY purchase_time DESC, {id} DESC LIMIT ?4"));
    let (time, key) = match after {
        Some(c) => (Some(c.time_ms), Some(c.id.as_str())),
        None => (None, None),
    };
    conn.prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params![user_id, time, key, db::int(fetch)], row)?
                .collect()
        })
        .map_err(|e| StorageError::backend("list purchases", e))
}

fn purchase_row(r: &Row<'_>) -> rusqlite::Result<Purchase> {
    Ok(Purchase {
        user_id: r.get(0)?,
        store: r.get(1)?,
        product_id: r.get(2)?,
        transaction_id: r.get(3)?,
        raw_response: r.get(4)?,
        purchase_time_ms: r.get(5)?,
        create_time_ms: r.get(6)?,
        update_time_ms: r.get(7)?,
        refund_time_ms: r.get(8)?,
        environment: r.get(9)?,
    })
}

fn subscription_row(r: &Row<'_>) -> rusqlite::Result<Subscription> {
    Ok(Subscription {
        user_id: r.get(0)?,
        store: r.get(1)?,
        product_id: r.get(2)?,
        original_transaction_id: r.get(3)?,
        raw_response: r.get(4)?,
        raw_notification: r.get(5)?,
        purchase_time_ms: r.get(6)?,
        create_time_ms: r.get(7)?,
        update_time_ms: r.get(8)?,
        expire_time_ms: r.get(9)?,
        refund_time_ms: r.get(10)?,
        environment: r.get(11)?,
    })
}

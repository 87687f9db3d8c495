//! Purchases and subscriptions in PostgreSQL: each upsert is one statement through the
//! group-commit writers, listings read newest first along the `(user_id, purchase_time, id)`
//! indexes.

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::{
    IapCursor, IapPage, NewPurchase, NewSubscription, Purchase, PurchaseStore, StorageError,
    Subscription, UpsertedPurchase, check_new_purchase, check_new_subscription, dedup_purchases,
    iap_page, text,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db::{self, Outcome};
use crate::writer::WriteFn;

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
impl PurchaseStore for PostgresStorage {
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
        self.writers
            .submit(write_op!(purchases, |client, purchases| upsert_purchases(
                client, &purchases, now_ms
            )))
            .await
    }

    async fn purchase_by_transaction_id(
        &self,
        transaction_id: &str,
    ) -> Result<Option<Purchase>, StorageError> {
        text::refuse_nul("transaction id", transaction_id)?;
        let fail = db::read_failed("get purchase");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(concat!(
                "SELECT ",
                purchase_columns!(),
                " FROM purchase WHERE transaction_id = $1"
            ))
            .await
            .map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&transaction_id])
            .await
            .map_err(&fail)?;
        row.as_ref().map(purchase_row).transpose().map_err(&fail)
    }

    async fn list_purchases(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Purchase>, StorageError> {
        let limit = limit.max(1);
        let client = self.client().await?;
        let rows = list(
            &client,
            Listing {
                table: "purchase",
                id: "transaction_id",
                columns: purchase_columns!(),
            },
            user_id,
            limit + 1,
            after.as_ref(),
        )
        .await?;
        let rows = rows
            .iter()
            .map(purchase_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(db::read_failed("list purchases"))?;
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
        self.writers
            .submit(write_op!(subscription, |client, s| upsert_subscription(
                client, &s, now_ms
            )))
            .await
    }

    async fn subscription_by_product_id(
        &self,
        user_id: Uuid,
        product_id: &str,
    ) -> Result<Option<Subscription>, StorageError> {
        text::refuse_nul("product id", product_id)?;
        let fail = db::read_failed("get subscription");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(concat!(
                "SELECT ",
                subscription_columns!(),
                " FROM subscription WHERE user_id = $1 AND product_id = $2 ",
                "ORDER BY purchase_time DESC, original_transaction_id DESC LIMIT 1"
            ))
            .await
            .map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&user_id, &product_id])
            .await
            .map_err(&fail)?;
        row.as_ref()
            .map(subscription_row)
            .transpose()
            .map_err(&fail)
    }

    async fn subscription_by_original_transaction_id(
        &self,
        original_transaction_id: &str,
    ) -> Result<Option<Subscription>, StorageError> {
        text::refuse_nul("original transaction id", original_transaction_id)?;
        let fail = db::read_failed("get subscription");
        let client = self.client().await?;
        let statement = client
            .prepare_cached(concat!(
                "SELECT ",
                subscription_columns!(),
                " FROM subscription WHERE original_transaction_id = $1"
            ))
            .await
            .map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&original_transaction_id])
            .await
            .map_err(&fail)?;
        row.as_ref()
            .map(subscription_row)
            .transpose()
            .map_err(&fail)
    }

    async fn list_subscriptions(
        &self,
        user_id: Option<Uuid>,
        limit: usize,
        after: Option<IapCursor>,
    ) -> Result<IapPage<Subscription>, StorageError> {
        let limit = limit.max(1);
        let client = self.client().await?;
        let rows = list(
            &client,
            Listing {
                table: "subscription",
                id: "original_transaction_id",
                columns: subscription_columns!(),
            },
            user_id,
            limit + 1,
            after.as_ref(),
        )
        .await?;
        let rows = rows
            .iter()
            .map(subscription_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(db::read_failed("list subscriptions"))?;
        Ok(iap_page(rows, limit, |s: &Subscription| IapCursor {
            time_ms: s.purchase_time_ms,
            id: s.original_transaction_id.clone(),
        }))
    }
}

/// All purchases in one statement; `xmax <> 0` tells a row the conflict clause updated (it
/// existed) from one this statement inserted.
async fn upsert_purchases(
    client: &ClientWrapper,
    purchases: &[NewPurchase],
    now_ms: i64,
) -> Outcome<Vec<UpsertedPurchase>> {
    let users: Vec<Uuid> = purchases.iter().map(|p| p.user_id).collect();
    let stores: Vec<i32> = purchases.iter().map(|p| p.store).collect();
    let products: Vec<&str> = purchases.iter().map(|p| p.product_id.as_str()).collect();
    let ids: Vec<&str> = purchases
        .iter()
        .map(|p| p.transaction_id.as_str())
        .collect();
    let raws: Vec<&str> = purchases
        .iter()
        .map(|p| {
            if p.raw_response.is_empty() {
                "{}"
            } else {
                p.raw_response.as_str()
            }
        })
        .collect();
    let times: Vec<i64> = purchases.iter().map(|p| p.purchase_time_ms).collect();
    let refunds: Vec<i64> = purchases.iter().map(|p| p.refund_time_ms).collect();
    let envs: Vec<i32> = purchases.iter().map(|p| p.environment).collect();
    let statement = client
        .prepare_cached(concat!(
            "INSERT INTO purchase (",
            purchase_columns!(),
            ") SELECT u, s, p, t, r, pt, $9, $9, rt, e FROM unnest(",
            "$1::uuid[], $2::int4[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::int8[], ",
            "$8::int4[]) AS x(u, s, p, t, r, pt, rt, e) ",
            "ON CONFLICT (transaction_id) DO UPDATE SET ",
            "refund_time = excluded.refund_time, update_time = excluded.update_time ",
            "RETURNING ",
            purchase_columns!(),
            ", (xmax <> 0)"
        ))
        .await?;
    let rows = client
        .query(
            &statement,
            &[
                &users, &stores, &products, &ids, &raws, &times, &refunds, &envs, &now_ms,
            ],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        out.push(UpsertedPurchase {
            purchase: purchase_row(row)?,
            seen_before: row.try_get(10)?,
        });
    }
    // RETURNING has no order: answer in input order.
    out.sort_by_key(|u| {
        ids.iter()
            .position(|id| *id == u.purchase.transaction_id)
            .unwrap_or(usize::MAX)
    });
    Ok(Ok(out))
}

async fn upsert_subscription(
    client: &ClientWrapper,
    s: &NewSubscription,
    now_ms: i64,
) -> Outcome<Subscription> {
    let statement = client
        .prepare_cached(concat!(
            "INSERT INTO subscription (",
            subscription_columns!(),
            ") VALUES ($1, $2, $3, $4, coalesce(nullif($5, ''), '{}'), ",
            "coalesce(nullif($6, ''), '{}'), $7, $8, $8, $9, $10, $11) ",
            "ON CONFLICT (original_transaction_id) DO UPDATE SET ",
            "product_id = excluded.product_id, expire_time = excluded.expire_time, ",
            "update_time = excluded.update_time, ",
            "raw_response = coalesce(nullif($5, ''), subscription.raw_response), ",
            "raw_notification = coalesce(nullif($6, ''), subscription.raw_notification), ",
            "refund_time = coalesce(nullif($10, 0), subscription.refund_time) ",
            "RETURNING ",
            subscription_columns!()
        ))
        .await?;
    let row = client
        .query_one(
            &statement,
            &[
                &s.user_id,
                &s.store,
                &s.product_id,
                &s.original_transaction_id,
                &s.raw_response,
                &s.raw_notification,
                &s.purchase_time_ms,
                &now_ms,
                &s.expire_time_ms,
                &s.refund_time_ms,
                &s.environment,
            ],
        )
        .await?;
    Ok(Ok(subscription_row(&row)?))
}

/// Which table a listing reads; every field is one of this module's constants, never input.
struct Listing {
    table: &'static str,
    id: &'static str,
    columns: &'static str,
}

async fn list(
    client: &ClientWrapper,
    listing: Listing,
    user_id: Option<Uuid>,
    fetch: usize,
    after: Option<&IapCursor>,
) -> Result<Vec<Row>, StorageError> {
    let fail = db::read_failed("list purchases");
    let Listing { table, id, columns } = listing;
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    let mut sql = format!("SELECT {columns} FROM {table} WHERE true");
    if let Some(user) = user_id.as_ref() {
        params.push(user);
        sql.push_str(&format!(" AND user_id = ${}", params.len()));
    }
    let (time, key);
    if let Some(cursor) = after {
        time = cursor.time_ms;
        key = cursor.id.as_str();
        params.push(&time);
        params.push(&key);
        sql.push_str(&format!(
            " AND (purchase_time, {id}) < (${}, ${})",
            params.len() - 1,
            params.len()
        ));
    }
    let fetch = db::int(fetch);
    params.push(&fetch);
    sql.push_str(&format!(
        " ORDER BY purchase_time DESC, {id} DESC LIMIT ${}",
        params.len()
    ));
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    client.query(&statement, &params).await.map_err(&fail)
}

fn purchase_row(r: &Row) -> Result<Purchase, tokio_postgres::Error> {
    Ok(Purchase {
        user_id: r.try_get(0)?,
        store: r.try_get(1)?,
        product_id: r.try_get(2)?,
        transaction_id: r.try_get(3)?,
        raw_response: r.try_get(4)?,
        purchase_time_ms: r.try_get(5)?,
        create_time_ms: r.try_get(6)?,
        update_time_ms: r.try_get(7)?,
        refund_time_ms: r.try_get(8)?,
        environment: r.try_get(9)?,
    })
}

fn subscription_row(r: &Row) -> Result<Subscription, tokio_postgres::Error> {
    Ok(Subscription {
        user_id: r.try_get(0)?,
        store: r.try_get(1)?,
        product_id: r.try_get(2)?,
        original_transaction_id: r.try_get(3)?,
        raw_response: r.try_get(4)?,
        raw_notification: r.try_get(5)?,
        purchase_time_ms: r.try_get(6)?,
        create_time_ms: r.try_get(7)?,
        update_time_ms: r.try_get(8)?,
        expire_time_ms: r.try_get(9)?,
        refund_time_ms: r.try_get(10)?,
        environment: r.try_get(11)?,
    })
}

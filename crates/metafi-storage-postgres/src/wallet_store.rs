//! Wallets, the wallet ledger and the multi-store update in PostgreSQL.
//!
//! A wallet change is a read-modify-write, which the single-statement group commit of
//! `writer` cannot carry; each runs as its own transaction on a pooled connection instead:
//! `SELECT … ORDER BY id FOR UPDATE` locks the user rows (in id order, so two updates of the
//! same users cannot deadlock each other), the new balances are computed with the rule both
//! backends share (`metafi_storage::apply_change`), written, and committed. Concurrent changes
//! of one wallet queue on its row lock: none is lost and none sees a stale balance. A deadlock
//! or serialization failure with other writers (group commit batches, other nodes) rolls back
//! and retries the whole transaction.
//!
//! The transaction runs in a task of its own, so a caller that stops waiting never leaves a
//! connection in the pool mid-transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use futures_util::future::BoxFuture;
use metafi_storage::support::{validate_deletes, validate_writes};
use metafi_storage::{
    Caller, LedgerCursor, LedgerItem, LedgerPage, MultiResult, MultiUpdate, StorageError,
    WalletChange, WalletResult, WalletStore, apply_change, balances_text, merge_metadata,
    parse_balances, text,
};
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tracing::debug;
use uuid::Uuid;

use crate::db::{self, Outcome};
use crate::{BACKEND, PostgresStorage, account, object};

/// How many times a transaction that lost a deadlock or serialization race is re-run.
const MAX_ATTEMPTS: usize = 8;

/// A transaction body: may run several times (retries), so it borrows shared arguments.
type TxBody<T> = Box<dyn for<'a> Fn(&'a ClientWrapper) -> BoxFuture<'a, Outcome<T>> + Send + Sync>;

#[async_trait]
impl WalletStore for PostgresStorage {
    async fn update_wallets(
        &self,
        changes: Vec<WalletChange>,
        ledger: bool,
        now_ms: i64,
    ) -> Result<Vec<WalletResult>, StorageError> {
        check_changes(&changes)?;
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let changes = Arc::new(changes);
        self.transaction(
            "update wallets",
            Box::new(move |client| {
                let changes = Arc::clone(&changes);
                Box::pin(async move { update_wallets(client, &changes, ledger, now_ms).await })
            }),
        )
        .await
    }

    async fn list_ledger(
        &self,
        user_id: Uuid,
        limit: usize,
        cursor: Option<LedgerCursor>,
    ) -> Result<LedgerPage, StorageError> {
        if limit == 0 {
            return Ok(LedgerPage {
                items: Vec::new(),
                next: None,
            });
        }
        let client = self.client().await?;
        let (time, id) = cursor.map_or((i64::MAX, Uuid::max()), |c| (c.create_time_ms, c.id));
        let statement = client
            .prepare_cached(
                "SELECT id, user_id, changeset, metadata, create_time, update_time
                 FROM wallet_ledger
                 WHERE user_id = $1 AND (create_time, id) < ($2, $3)
                 ORDER BY create_time DESC, id DESC LIMIT $4",
            )
            .await
            .map_err(db::read_failed("list wallet ledger"))?;
        let rows = client
            .query(&statement, &[&user_id, &time, &id, &db::int(limit + 1)])
            .await
            .map_err(db::read_failed("list wallet ledger"))?;
        let mut items = rows
            .iter()
            .map(ledger_item)
            .collect::<Result<Vec<_>, _>>()?;
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|last| LedgerCursor {
                create_time_ms: last.create_time_ms,
                id: last.id,
            })
        } else {
            None
        };
        Ok(LedgerPage { items, next })
    }

    async fn update_ledger(
        &self,
        id: Uuid,
        metadata: String,
        now_ms: i64,
    ) -> Result<Option<LedgerItem>, StorageError> {
        text::refuse_nul("metadata", &metadata)?;
        let metadata = Arc::new(metadata);
        self.transaction(
            "update wallet ledger",
            Box::new(move |client| {
                let metadata = Arc::clone(&metadata);
                Box::pin(async move { update_ledger(client, id, &metadata, now_ms).await })
            }),
        )
        .await
    }

    async fn multi_update(
        &self,
        update: MultiUpdate,
        now_ms: i64,
    ) -> Result<MultiResult, StorageError> {
        for (_, account) in &update.accounts {
            text::check_update(account)?;
        }
        validate_writes(&update.writes)?;
        validate_deletes(&update.deletes)?;
        check_changes(&update.wallets)?;
        let update = Arc::new(update);
        self.transaction(
            "multi update",
            Box::new(move |client| {
                let update = Arc::clone(&update);
                Box::pin(async move { multi_update(client, &update, now_ms).await })
            }),
        )
        .await
    }
}

impl PostgresStorage {
    /// Runs `body` in a transaction of its own on a pooled connection, in a task of its own;
    /// re-runs it when it loses a deadlock or serialization race.
    async fn transaction<T: Send + 'static>(
        &self,
        operation: &'static str,
        body: TxBody<T>,
    ) -> Result<T, StorageError> {
        let pool = self.pool.clone();
        // Fails fast once the storage is closed, as every other call does.
        drop(self.client().await?);
        let task = tokio::spawn(async move {
            let mut attempt = 0;
            loop {
                attempt += 1;
                let client = pool
                    .get()
                    .await
                    .map_err(|e| StorageError::backend("connect", e))?;
                match run_once(&client, &body).await {
                    Ok(answer) => return answer,
                    Err(e) => {
                        if rollback(&client).await.is_err() {
                            // A connection in an unknown state never goes back to the pool.
                            drop(deadpool_postgres::Object::take(client));
                        }
                        if attempt < MAX_ATTEMPTS && retryable(&e) {
                            debug!(backend = BACKEND, operation, attempt, error = %e, "transaction retried");
                            continue;
                        }
                        return Err(db::classify(operation, &e));
                    }
                }
            }
        });
        task.await
            .map_err(|e| StorageError::backend("transaction task", e))?
    }
}

/// BEGIN, the body, then COMMIT (an answer) or ROLLBACK (a refusal). The outer error is a
/// database failure after which the caller rolls back.
async fn run_once<T>(client: &ClientWrapper, body: &TxBody<T>) -> Outcome<T> {
    client.batch_execute("BEGIN").await?;
    match body(client).await? {
        Ok(value) => {
            client.batch_execute("COMMIT").await?;
            Ok(Ok(value))
        }
        Err(refused) => {
            client.batch_execute("ROLLBACK").await?;
            Ok(Err(refused))
        }
    }
}

async fn rollback(client: &ClientWrapper) -> Result<(), tokio_postgres::Error> {
    client.batch_execute("ROLLBACK").await
}

fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// What both backends refuse before writing: text PostgreSQL cannot store.
fn check_changes(changes: &[WalletChange]) -> Result<(), StorageError> {
    for change in changes {
        text::refuse_nul("metadata", &change.metadata)?;
        for path in change.changeset.keys() {
            text::refuse_nul("wallet key", path)?;
        }
    }
    Ok(())
}

async fn update_wallets(
    client: &ClientWrapper,
    changes: &[WalletChange],
    ledger: bool,
    now_ms: i64,
) -> Outcome<Vec<WalletResult>> {
    let mut ids: Vec<Uuid> = changes.iter().map(|c| c.user_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let lock = client
        .prepare_cached("SELECT id, wallet FROM users WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .await?;
    let mut wallets = BTreeMap::new();
    for row in client.query(&lock, &[&ids]).await? {
        let id: Uuid = row.try_get(0)?;
        let text: String = row.try_get(1)?;
        match parse_balances(&text) {
            Ok(balances) => wallets.insert(id, balances),
            Err(e) => return Ok(Err(e)),
        };
    }
    let mut results = Vec::with_capacity(changes.len());
    let mut recorded = Vec::new();
    for change in changes {
        let Some(wallet) = wallets.get_mut(&change.user_id) else {
            continue;
        };
        let previous = wallet.clone();
        if let Err(refused) = apply_change(change.user_id, wallet, &change.changeset) {
            return Ok(Err(refused));
        }
        results.push(WalletResult {
            user_id: change.user_id,
            previous,
            updated: wallet.clone(),
        });
        recorded.push(change);
    }
    let write = client
        .prepare_cached("UPDATE users SET wallet = $2, update_time = $3 WHERE id = $1")
        .await?;
    // Written in id order, as they were locked.
    for result_id in ids {
        if !results.iter().any(|r| r.user_id == result_id) {
            continue;
        }
        if let Some(wallet) = wallets.get(&result_id) {
            client
                .execute(&write, &[&result_id, &balances_text(wallet), &now_ms])
                .await?;
        }
    }
    if ledger && !recorded.is_empty() {
        let ledger_ids: Vec<Uuid> = recorded.iter().map(|c| c.ledger_id).collect();
        let users: Vec<Uuid> = recorded.iter().map(|c| c.user_id).collect();
        let changesets: Vec<String> = recorded
            .iter()
            .map(|c| balances_text(&c.changeset))
            .collect();
        let metadata: Vec<&str> = recorded.iter().map(|c| c.metadata.as_str()).collect();
        let insert = client
            .prepare_cached(
                "INSERT INTO wallet_ledger (id, user_id, changeset, metadata, create_time, update_time)
                 SELECT id, user_id, changeset, metadata, $5, $5
                 FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[])
                     AS t (id, user_id, changeset, metadata)",
            )
            .await?;
        client
            .execute(
                &insert,
                &[&ledger_ids, &users, &changesets, &metadata, &now_ms],
            )
            .await?;
    }
    Ok(Ok(results))
}

fn ledger_item(row: &Row) -> Result<LedgerItem, StorageError> {
    let fail = |e| StorageError::backend("read wallet ledger", e);
    let changeset: String = row.try_get(2).map_err(fail)?;
    Ok(LedgerItem {
        id: row.try_get(0).map_err(fail)?,
        user_id: row.try_get(1).map_err(fail)?,
        changeset: parse_balances(&changeset)?,
        metadata: row.try_get(3).map_err(fail)?,
        create_time_ms: row.try_get(4).map_err(fail)?,
        update_time_ms: row.try_get(5).map_err(fail)?,
    })
}

async fn update_ledger(
    client: &ClientWrapper,
    id: Uuid,
    metadata: &str,
    now_ms: i64,
) -> Outcome<Option<LedgerItem>> {
    let select = client
        .prepare_cached(
            "SELECT id, user_id, changeset, metadata, create_time, update_time
             FROM wallet_ledger WHERE id = $1 FOR UPDATE",
        )
        .await?;
    let Some(row) = client.query_opt(&select, &[&id]).await? else {
        return Ok(Ok(None));
    };
    let mut item = match ledger_item(&row) {
        Ok(item) => item,
        Err(e) => return Ok(Err(e)),
    };
    item.metadata = merge_metadata(&item.metadata, metadata);
    item.update_time_ms = now_ms;
    let write = client
        .prepare_cached("UPDATE wallet_ledger SET metadata = $2, update_time = $3 WHERE id = $1")
        .await?;
    client
        .execute(&write, &[&id, &item.metadata, &now_ms])
        .await?;
    Ok(Ok(Some(item)))
}

async fn multi_update(
    client: &ClientWrapper,
    update: &MultiUpdate,
    now_ms: i64,
) -> Outcome<MultiResult> {
    for (user_id, account) in &update.accounts {
        match account::update_account(client, *user_id, account, now_ms).await? {
            // Nakama's multi update skips users that do not exist.
            Ok(()) | Err(StorageError::NotFound { .. }) => {}
            Err(refused) => return Ok(Err(refused)),
        }
    }
    let acks = if update.writes.is_empty() {
        Vec::new()
    } else {
        match object::write(client, Caller::Server, &update.writes, now_ms).await? {
            Ok(acks) => acks,
            Err(refused) => return Ok(Err(refused)),
        }
    };
    if !update.deletes.is_empty()
        && let Err(refused) = object::delete(client, Caller::Server, &update.deletes).await?
    {
        return Ok(Err(after_writes(refused, update.writes.len())));
    }
    let wallets = match update_wallets(client, &update.wallets, update.ledger, now_ms).await? {
        Ok(wallets) => wallets,
        Err(refused) => return Ok(Err(refused)),
    };
    Ok(Ok(MultiResult { acks, wallets }))
}

/// A delete's rejection with its index counted after the writes (see `MultiUpdate`).
fn after_writes(e: StorageError, writes: usize) -> StorageError {
    match e {
        StorageError::VersionMismatch { index } => StorageError::VersionMismatch {
            index: index + writes,
        },
        StorageError::PermissionDenied { index } => StorageError::PermissionDenied {
            index: index + writes,
        },
        other => other,
    }
}

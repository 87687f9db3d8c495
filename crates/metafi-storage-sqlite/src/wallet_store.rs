//! Wallets, the wallet ledger and the multi-store update in SQLite. Every write runs on the
//! writer thread inside one request's savepoint: the read of a wallet, the check and the write
//! cannot interleave with another request, and a refused change rolls back everything the
//! request had written (a whole `multi_update` included).

use async_trait::async_trait;
use metafi_storage::support::{validate_deletes, validate_writes};
use metafi_storage::{
    Caller, LedgerCursor, LedgerItem, LedgerPage, MultiResult, MultiUpdate, StorageError,
    WalletChange, WalletResult, WalletStore, apply_change, balances_text, merge_metadata,
    parse_balances, text,
};
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use crate::{SqliteStorage, account, db, object};

#[async_trait]
impl WalletStore for SqliteStorage {
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
        self.writer
            .submit(move |conn| update_wallets(conn, &changes, ledger, now_ms))
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
        self.readers
            .read(move |conn| list_ledger(conn, user_id, limit, cursor))
            .await
    }

    async fn update_ledger(
        &self,
        id: Uuid,
        metadata: String,
        now_ms: i64,
    ) -> Result<Option<LedgerItem>, StorageError> {
        text::refuse_nul("metadata", &metadata)?;
        self.writer
            .submit(move |conn| update_ledger(conn, id, &metadata, now_ms))
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
        self.writer
            .submit(move |conn| multi_update(conn, &update, now_ms))
            .await
    }
}

/// What both backends refuse before writing: text PostgreSQL cannot store.
pub(crate) fn check_changes(changes: &[WalletChange]) -> Result<(), StorageError> {
    for change in changes {
        text::refuse_nul("metadata", &change.metadata)?;
        for path in change.changeset.keys() {
            text::refuse_nul("wallet key", path)?;
        }
    }
    Ok(())
}

fn update_wallets(
    conn: &Connection,
    changes: &[WalletChange],
    ledger: bool,
    now_ms: i64,
) -> Result<Vec<WalletResult>, StorageError> {
    let fail = |e| StorageError::backend("update wallets", e);
    let mut results = Vec::with_capacity(changes.len());
    for change in changes {
        let stored: Option<String> = conn
            .prepare_cached("SELECT wallet FROM users WHERE id = ?1")
            .and_then(|mut s| s.query_row([change.user_id], |r| r.get(0)).optional())
            .map_err(fail)?;
        let Some(stored) = stored else {
            continue;
        };
        let previous = parse_balances(&stored)?;
        let mut updated = previous.clone();
        apply_change(change.user_id, &mut updated, &change.changeset)?;
        conn.prepare_cached("UPDATE users SET wallet = ?2, update_time = ?3 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![change.user_id, balances_text(&updated), now_ms]))
            .map_err(fail)?;
        if ledger {
            conn.prepare_cached(
                "INSERT INTO wallet_ledger (id, user_id, changeset, metadata, create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    change.ledger_id,
                    change.user_id,
                    balances_text(&change.changeset),
                    change.metadata,
                    now_ms
                ])
            })
            .map_err(fail)?;
        }
        results.push(WalletResult {
            user_id: change.user_id,
            previous,
            updated,
        });
    }
    Ok(results)
}

fn ledger_item(row: &Row<'_>) -> rusqlite::Result<(LedgerItem, String)> {
    Ok((
        LedgerItem {
            id: row.get(0)?,
            user_id: row.get(1)?,
            changeset: Default::default(),
            metadata: row.get(3)?,
            create_time_ms: row.get(4)?,
            update_time_ms: row.get(5)?,
        },
        row.get(2)?,
    ))
}

fn decoded(pair: (LedgerItem, String)) -> Result<LedgerItem, StorageError> {
    let (mut item, changeset) = pair;
    item.changeset = parse_balances(&changeset)?;
    Ok(item)
}

fn list_ledger(
    conn: &Connection,
    user_id: Uuid,
    limit: usize,
    cursor: Option<LedgerCursor>,
) -> Result<LedgerPage, StorageError> {
    let fail = |e| StorageError::backend("list wallet ledger", e);
    let (time, id) = cursor.map_or((i64::MAX, Uuid::max()), |c| (c.create_time_ms, c.id));
    let rows = conn
        .prepare_cached(
            "SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger
             WHERE user_id = ?1 AND (create_time < ?2 OR (create_time = ?2 AND id < ?3))
             ORDER BY create_time DESC, id DESC LIMIT ?4",
        )
        .and_then(|mut s| {
            s.query_map(params![user_id, time, id, db::int(limit + 1)], ledger_item)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(fail)?;
    let mut items = rows
        .into_iter()
        .map(decoded)
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

fn update_ledger(
    conn: &Connection,
    id: Uuid,
    metadata: &str,
    now_ms: i64,
) -> Result<Option<LedgerItem>, StorageError> {
    let fail = |e| StorageError::backend("update wallet ledger", e);
    let found = conn
        .prepare_cached(
            "SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger
             WHERE id = ?1",
        )
        .and_then(|mut s| s.query_row([id], ledger_item).optional())
        .map_err(fail)?;
    let Some(found) = found else {
        return Ok(None);
    };
    let mut item = decoded(found)?;
    item.metadata = merge_metadata(&item.metadata, metadata);
    item.update_time_ms = now_ms;
    conn.prepare_cached("UPDATE wallet_ledger SET metadata = ?2, update_time = ?3 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![id, item.metadata, now_ms]))
        .map_err(fail)?;
    Ok(Some(item))
}

fn multi_update(
    conn: &Connection,
    update: &MultiUpdate,
    now_ms: i64,
) -> Result<MultiResult, StorageError> {
    for (user_id, account) in &update.accounts {
        match account::update_account(conn, *user_id, account, now_ms) {
            // Nakama's multi update skips users that do not exist.
            Ok(()) | Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let acks = if update.writes.is_empty() {
        Vec::new()
    } else {
        object::write(conn, Caller::Server, &update.writes, now_ms)?
    };
    if !update.deletes.is_empty() {
        object::delete(conn, Caller::Server, &update.deletes)
            .map_err(|e| after_writes(e, update.writes.len()))?;
    }
    let wallets = update_wallets(conn, &update.wallets, update.ledger, now_ms)?;
    Ok(MultiResult { acks, wallets })
}

/// A delete's rejection with its index counted after the writes (see `MultiUpdate`).
pub(crate) fn after_writes(e: StorageError, writes: usize) -> StorageError {
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

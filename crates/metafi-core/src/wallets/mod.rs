//! Wallets with Nakama's rules (`server/core_wallet.go`, `core_multi.go`): integer balances
//! per user, changed atomically and never below zero; the ledger of recorded changes; and the
//! multi-store update of server code (accounts, storage objects and wallets in one
//! transaction). Server code (`nk.wallet_*`, `nk.multi_update`) calls this service; the
//! wallet itself is shown by `GET /v2/account` (the account's `wallet` JSON text).

mod ledger_cursor;
mod multi;
mod replace;

use std::sync::Arc;

use metafi_storage::{
    Balances, LedgerItem, MultiResult, Storage, StorageError, WalletChange, WalletResult,
};
use uuid::Uuid;

use crate::storage_index::StorageIndexes;
use crate::{Clock, CoreError};

pub use multi::MultiUpdateInput;
pub use replace::{NOT_A_WALLET, check_wallet, parse_wallet};

/// Most ledger items one page may hold (Nakama's runtime bound).
pub const MAX_LEDGER_LIMIT: usize = 100;

/// One user's wallet change as server code asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletUpdate {
    pub user_id: Uuid,
    pub changeset: Balances,
    /// JSON object text recorded on the ledger row (`{}` when none was given).
    pub metadata: String,
}

/// A page of a user's ledger, newest first, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerList {
    pub items: Vec<LedgerItem>,
    /// `None` on the last page.
    pub cursor: Option<String>,
}

#[derive(Debug)]
pub struct Wallets {
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    /// Told of the storage writes and deletes of a multi update.
    indexes: Option<Arc<StorageIndexes>>,
}

impl Wallets {
    pub fn new(store: Arc<dyn Storage>, clock: Arc<dyn Clock>) -> Self {
        Wallets {
            store,
            clock,
            indexes: None,
        }
    }

    /// Keeps `indexes` current with the storage part of multi updates.
    pub fn with_indexes(mut self, indexes: Arc<StorageIndexes>) -> Self {
        self.indexes = Some(indexes);
        self
    }

    /// Applies the updates in one transaction, in order; updates of unknown users are
    /// skipped (no result). A balance going below zero refuses the whole with Nakama's
    /// `wallet update rejected negative value at path '…'` and changes nothing. With
    /// `ledger`, every applied update is recorded.
    pub async fn update(
        &self,
        updates: Vec<WalletUpdate>,
        ledger: bool,
    ) -> Result<Vec<WalletResult>, CoreError> {
        if updates.is_empty() {
            return Ok(Vec::new());
        }
        let changes = changes(updates)?;
        self.store
            .update_wallets(changes, ledger, self.clock.now_ms())
            .await
            .map_err(|e| wallet_error("updating wallets", e))
    }

    /// One user's update; `user not found` (Nakama's text) when the user does not exist.
    pub async fn update_one(
        &self,
        update: WalletUpdate,
        ledger: bool,
    ) -> Result<WalletResult, CoreError> {
        self.update(vec![update], ledger)
            .await?
            .pop()
            .ok_or_else(|| CoreError::not_found("user not found"))
    }

    /// A page of up to `limit` (at most [`MAX_LEDGER_LIMIT`]) ledger items of a user, newest
    /// first, from `cursor` (empty: the first page).
    pub async fn ledger_list(
        &self,
        user_id: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<LedgerList, CoreError> {
        if limit > MAX_LEDGER_LIMIT {
            return Err(CoreError::invalid("expects limit to be 0-100"));
        }
        let start = if cursor.is_empty() {
            None
        } else {
            Some(ledger_cursor::decode(cursor, user_id)?)
        };
        let page = self
            .store
            .list_ledger(user_id, limit, start)
            .await
            .map_err(|e| CoreError::storage("listing a wallet ledger", e))?;
        Ok(LedgerList {
            items: page.items,
            cursor: page.next.map(|next| ledger_cursor::encode(user_id, next)),
        })
    }

    /// Merges `metadata` (a JSON object's text) into a ledger item's metadata.
    pub async fn ledger_update(&self, id: Uuid, metadata: String) -> Result<LedgerItem, CoreError> {
        check_metadata(&metadata)?;
        self.store
            .update_ledger(id, metadata, self.clock.now_ms())
            .await
            .map_err(|e| CoreError::storage("updating a wallet ledger item", e))?
            // Nakama reports its driver's text for an unknown id.
            .ok_or_else(|| CoreError::not_found("sql: no rows in result set"))
    }

    /// Accounts, storage objects and wallets in one transaction: all or nothing.
    pub async fn multi_update(&self, input: MultiUpdateInput) -> Result<MultiResult, CoreError> {
        let update = input.validate()?;
        let writes = update.writes.len();
        let indexes = self.indexes.as_ref().filter(|i| i.is_active());
        let indexed = indexes.map(|i| (i.pick(&update.writes), update.deletes.clone()));
        let result = self
            .store
            .multi_update(update, self.clock.now_ms())
            .await
            .map_err(|e| multi::storage_error(e, writes))?;
        if let (Some(indexes), Some((picked, deletes))) = (indexes, indexed) {
            indexes.committed(&picked, &result.acks, &deletes).await;
        }
        Ok(result)
    }
}

/// Store changes with fresh ledger ids (time-ordered, like every id MetaFi makes).
fn changes(updates: Vec<WalletUpdate>) -> Result<Vec<WalletChange>, CoreError> {
    updates
        .into_iter()
        .map(|update| {
            check_metadata(&update.metadata)?;
            Ok(WalletChange {
                user_id: update.user_id,
                changeset: update.changeset,
                metadata: update.metadata,
                ledger_id: Uuid::now_v7(),
            })
        })
        .collect()
}

fn check_metadata(metadata: &str) -> Result<(), CoreError> {
    if serde_json::from_str::<serde_json::Value>(metadata).is_ok_and(|v| v.is_object()) {
        Ok(())
    } else {
        Err(CoreError::invalid("Metadata must be a JSON object."))
    }
}

/// A refused wallet change keeps Nakama's text; other failures are the usual ones.
fn wallet_error(operation: &'static str, e: StorageError) -> CoreError {
    match e {
        negative @ StorageError::WalletNegative { .. } => CoreError::invalid(negative.to_string()),
        other => CoreError::storage(operation, other),
    }
}

#[cfg(test)]
mod tests;

//! Wallets (a JSON object of integer balances on each user row), the wallet ledger (one row
//! per recorded change) and the multi-store update server code runs in one transaction
//! (accounts, storage objects and wallets: Nakama's `multi_update`).
//!
//! A wallet change is a read-modify-write: backends run it inside one transaction that holds
//! the user rows (SQLite's single writer; PostgreSQL `SELECT … FOR UPDATE`), so concurrent
//! changes lose nothing, and a change that would take any balance below zero changes nothing.

use std::collections::BTreeMap;

use async_trait::async_trait;
use uuid::Uuid;

use crate::{AccountUpdate, ObjectAck, ObjectDelete, ObjectWrite, StorageError};

/// Balances by currency name; missing names are zero.
pub type Balances = BTreeMap<String, i64>;

/// One user's wallet change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletChange {
    pub user_id: Uuid,
    /// Amounts added to each balance (negative ones spend).
    pub changeset: Balances,
    /// JSON object text recorded on the ledger row.
    pub metadata: String,
    /// The id of the ledger row, when the change is recorded (chosen by the caller).
    pub ledger_id: Uuid,
}

/// A wallet before and after one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletResult {
    pub user_id: Uuid,
    pub previous: Balances,
    pub updated: Balances,
}

/// A recorded wallet change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerItem {
    pub id: Uuid,
    pub user_id: Uuid,
    pub changeset: Balances,
    /// JSON object text.
    pub metadata: String,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// Where a ledger page starts: after this item of the previous page (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerCursor {
    pub create_time_ms: i64,
    pub id: Uuid,
}

/// A page of a user's ledger, newest first, and where the next page starts (`None`: last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerPage {
    pub items: Vec<LedgerItem>,
    pub next: Option<LedgerCursor>,
}

/// Accounts, storage objects and wallets changed in one transaction; all or nothing.
/// Storage operations act as the server (any owner, no permission checks).
#[derive(Debug, Clone, Default)]
pub struct MultiUpdate {
    /// Profile updates; an unknown user is skipped, as in Nakama.
    pub accounts: Vec<(Uuid, AccountUpdate)>,
    pub writes: Vec<ObjectWrite>,
    pub deletes: Vec<ObjectDelete>,
    pub wallets: Vec<WalletChange>,
    /// Whether wallet changes are recorded in the ledger.
    pub ledger: bool,
}

/// What a [`MultiUpdate`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MultiResult {
    pub acks: Vec<ObjectAck>,
    pub wallets: Vec<WalletResult>,
}

/// Wallets, their ledger, and the multi-store update.
#[async_trait]
pub trait WalletStore: Send + Sync {
    /// Applies the changes in order, in one transaction. Changes of unknown users are skipped
    /// (no result, no ledger row). When any balance would go below zero (or past `i64::MAX`),
    /// fails with `WalletNegative` and nothing is written. With `ledger`, each applied change
    /// gets a ledger row (`ledger_id`, its changeset and metadata).
    async fn update_wallets(
        &self,
        changes: Vec<WalletChange>,
        ledger: bool,
        now_ms: i64,
    ) -> Result<Vec<WalletResult>, StorageError>;

    /// Up to `limit` ledger items of a user, newest first (ties by id, descending), after
    /// `cursor`.
    async fn list_ledger(
        &self,
        user_id: Uuid,
        limit: usize,
        cursor: Option<LedgerCursor>,
    ) -> Result<LedgerPage, StorageError>;

    /// Merges `metadata` (JSON object text) into a ledger item's metadata, top-level keys of
    /// the new one winning, and bumps its update time. `Ok(None)` for an unknown id.
    async fn update_ledger(
        &self,
        id: Uuid,
        metadata: String,
        now_ms: i64,
    ) -> Result<Option<LedgerItem>, StorageError>;

    /// Runs a [`MultiUpdate`] in one transaction: account updates, then storage writes, then
    /// deletes, then wallet changes. The first failure (a taken username, a failed version
    /// check, a negative balance) fails the whole and nothing is written. A rejected delete's
    /// `index` counts after the writes (`writes.len() + i`), so callers can tell them apart.
    async fn multi_update(
        &self,
        update: MultiUpdate,
        now_ms: i64,
    ) -> Result<MultiResult, StorageError>;
}

/// Applies one change to a wallet in memory: the rule both backends share.
pub fn apply_change(
    user_id: Uuid,
    wallet: &mut Balances,
    changeset: &Balances,
) -> Result<(), StorageError> {
    let mut next = wallet.clone();
    for (path, amount) in changeset {
        let current = next.get(path).copied().unwrap_or(0);
        // Past i64::MAX Nakama's Go addition wraps to a negative value and is refused as
        // negative; a checked addition gives the same answer.
        match current.checked_add(*amount) {
            Some(value) if value >= 0 => {
                next.insert(path.clone(), value);
            }
            _ => {
                return Err(StorageError::WalletNegative {
                    user_id,
                    path: path.clone(),
                    current,
                    amount: *amount,
                });
            }
        }
    }
    *wallet = next;
    Ok(())
}

/// A stored wallet or changeset (JSON object of integers); `{}` and empty text are empty.
pub fn parse_balances(text: &str) -> Result<Balances, StorageError> {
    if text.trim().is_empty() {
        return Ok(Balances::new());
    }
    serde_json::from_str(text).map_err(|e| StorageError::backend("decode wallet", e))
}

/// Balances as stored: compact JSON with sorted keys (what Nakama's encoder writes).
pub fn balances_text(balances: &Balances) -> String {
    serde_json::to_string(balances).unwrap_or_else(|_| "{}".to_owned())
}

/// Merges two JSON objects' top-level keys, `patch` winning (PostgreSQL's `jsonb || jsonb`,
/// what Nakama's ledger update does). Text that is not an object counts as `{}`.
pub fn merge_metadata(base: &str, patch: &str) -> String {
    let object = |text: &str| match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let mut merged = object(base);
    merged.extend(object(patch));
    serde_json::Value::Object(merged).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balances(pairs: &[(&str, i64)]) -> Balances {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn a_change_below_zero_is_refused_and_leaves_the_wallet_alone() {
        let user = Uuid::from_u128(1);
        let mut wallet = balances(&[("gold", 5), ("gems", 1)]);
        let err = apply_change(user, &mut wallet, &balances(&[("gems", 2), ("gold", -6)]))
            .expect_err("negative");
        match err {
            StorageError::WalletNegative {
                path,
                current,
                amount,
                ..
            } => assert_eq!((path.as_str(), current, amount), ("gold", 5, -6)),
            other => panic!("{other:?}"),
        }
        assert_eq!(wallet, balances(&[("gold", 5), ("gems", 1)]));
        apply_change(user, &mut wallet, &balances(&[("gold", -5), ("new", 3)])).expect("ok");
        assert_eq!(wallet, balances(&[("gold", 0), ("gems", 1), ("new", 3)]));
    }

    #[test]
    fn overflow_is_refused_as_nakamas_wrapped_negative() {
        let mut wallet = balances(&[("gold", i64::MAX)]);
        let err = apply_change(Uuid::nil(), &mut wallet, &balances(&[("gold", 1)]));
        assert!(matches!(err, Err(StorageError::WalletNegative { .. })));
    }

    #[test]
    fn metadata_merges_top_level_keys() {
        assert_eq!(
            merge_metadata(r#"{"a":1,"b":{"x":1}}"#, r#"{"b":{"y":2},"c":3}"#),
            r#"{"a":1,"b":{"y":2},"c":3}"#
        );
        assert_eq!(merge_metadata("", r#"{"c":3}"#), r#"{"c":3}"#);
    }
}

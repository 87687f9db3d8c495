//! The multi-store update of server code (`nk.multi_update`): Nakama's checks of each part,
//! then one storage transaction, and its refusals in Nakama's words.

use metafi_storage::{AccountUpdate, Caller, Conflict, MultiUpdate, StorageError};
use uuid::Uuid;

use super::{WalletUpdate, changes, wallet_error};
use crate::objects::{DeleteInput, WriteInput, validate_delete, validate_write};
use crate::{CoreError, accounts};

/// What server code asks a multi update to do. Storage operations act as the server.
#[derive(Debug, Clone, Default)]
pub struct MultiUpdateInput {
    /// Profile updates by user; unknown users are skipped.
    pub accounts: Vec<(Uuid, AccountUpdate)>,
    pub writes: Vec<WriteInput>,
    pub deletes: Vec<DeleteInput>,
    pub wallets: Vec<WalletUpdate>,
    /// Record the wallet changes in the ledger.
    pub ledger: bool,
}

impl MultiUpdateInput {
    /// Each part checked as its own call checks it; the store's request.
    pub(super) fn validate(self) -> Result<MultiUpdate, CoreError> {
        for (_, update) in &self.accounts {
            accounts::check_update(update)?;
        }
        let writes = self
            .writes
            .into_iter()
            .map(|input| validate_write(Caller::Server, input))
            .collect::<Result<Vec<_>, _>>()?;
        let deletes = self
            .deletes
            .into_iter()
            .map(|input| validate_delete(Caller::Server, input))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MultiUpdate {
            accounts: self.accounts,
            writes,
            deletes,
            wallets: changes(self.wallets)?,
            ledger: self.ledger,
        })
    }
}

/// Nakama's texts for a refused multi update (`core_multi.go` returns the cause of each
/// part's status error). A rejected delete's index counts after the `writes` writes.
pub(super) fn storage_error(e: StorageError, writes: usize) -> CoreError {
    match e {
        StorageError::Conflict {
            what: Conflict::Username,
        } => CoreError::already_exists("Username is already in use."),
        StorageError::VersionMismatch { index } if index < writes => {
            CoreError::invalid("Storage write rejected - version check failed.")
        }
        StorageError::PermissionDenied { index } if index < writes => {
            CoreError::invalid("Storage write rejected - permission denied.")
        }
        StorageError::VersionMismatch { .. }
        | StorageError::PermissionDenied { .. }
        | StorageError::NotFound { .. } => CoreError::invalid(
            "Storage delete rejected - not found, version check failed, or permission denied.",
        ),
        e @ StorageError::WalletNegative { .. } => wallet_error("multi update", e),
        other => CoreError::storage("multi update", other),
    }
}

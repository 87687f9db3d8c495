//! Friends imported from a social provider, in PostgreSQL: one call of the plpgsql function
//! `metafi_friends_import` (migration 0013), so an import is one atomic statement for the
//! group-commit writer.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::{FriendImport, FriendImportStore, StorageError, lookup_social_ids};
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db;
use crate::writer::WriteFn;

const IMPORT: &str = "SELECT friend_id FROM metafi_friends_import($1, $2, $3, $4, $5, $6)";

#[async_trait]
impl FriendImportStore for PostgresStorage {
    async fn import_friends(&self, import: FriendImport) -> Result<Vec<Uuid>, StorageError> {
        let provider = import.provider.column().trim_end_matches("_id");
        let ids = lookup_social_ids(&import.provider_ids);
        let args = Arc::new((provider, ids, import));
        let op: WriteFn<Vec<Uuid>> = Box::new(move |client| {
            let args = Arc::clone(&args);
            Box::pin(async move {
                let (provider, ids, import) = &*args;
                let statement = client.prepare_cached(IMPORT).await?;
                let rows = client
                    .query(
                        &statement,
                        &[
                            &import.user_id,
                            provider,
                            ids,
                            &import.reset,
                            &import.now_ms,
                            &db::int(import.max_edges),
                        ],
                    )
                    .await?;
                let friends = rows
                    .iter()
                    .map(|r| r.try_get::<_, Uuid>(0))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Ok(friends))
            })
        });
        self.writers.submit(op).await
    }
}

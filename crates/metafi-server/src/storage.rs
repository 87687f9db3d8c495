//! Opens the configured storage backend.

use std::sync::Arc;

use anyhow::Context;
use metafi_storage::Storage;
use metafi_storage_postgres::{PostgresConfig, PostgresStorage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

use crate::config::{DatabaseBackend, DatabaseConfig, redact_url};

pub async fn open(config: &DatabaseConfig) -> anyhow::Result<Arc<dyn Storage>> {
    match &config.backend {
        DatabaseBackend::Sqlite { path } => {
            let sqlite = SqliteConfig {
                path: path.clone(),
                readers: config.sqlite_readers,
                max_batch: config.max_write_batch,
                queue_capacity: config.write_queue_capacity,
                ..SqliteConfig::default()
            };
            // Opening runs migrations and may wait on file locks: keep it off the IO threads.
            let storage = tokio::task::spawn_blocking(move || SqliteStorage::open(sqlite))
                .await
                .context("the SQLite open task failed")?
                .with_context(|| format!("opening the SQLite database {}", path.display()))?;
            Ok(Arc::new(storage))
        }
        DatabaseBackend::Postgres { url } => {
            let postgres = PostgresConfig {
                pool_size: config.postgres_pool_size,
                max_batch: config.max_write_batch,
                queue_capacity: config.write_queue_capacity,
                ..PostgresConfig::new(url.clone())
            };
            let storage = PostgresStorage::open(postgres)
                .await
                .with_context(|| format!("connecting to PostgreSQL at {}", redact_url(url)))?;
            Ok(Arc::new(storage))
        }
    }
}

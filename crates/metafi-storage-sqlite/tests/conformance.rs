//! The shared conformance suite against SQLite: every case in its own temporary directory.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::Storage;
use metafi_storage::conformance::Fixture;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use tempfile::TempDir;

struct SqliteFixture {
    dir: TempDir,
}

#[async_trait]
impl Fixture for SqliteFixture {
    async fn open(&self) -> Arc<dyn Storage> {
        let config = SqliteConfig {
            path: self.dir.path().join("nested/metafi.db"),
            readers: 2,
            ..SqliteConfig::default()
        };
        Arc::new(SqliteStorage::open(config).expect("open sqlite"))
    }

    async fn teardown(&self) {}
}

async fn fixture() -> Option<SqliteFixture> {
    Some(SqliteFixture {
        dir: tempfile::tempdir().expect("temp dir"),
    })
}

metafi_storage::conformance_tests!(fixture());
metafi_storage::purchase_conformance_tests!(fixture());

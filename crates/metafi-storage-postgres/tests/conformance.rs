//! The shared conformance suite against PostgreSQL: every case in its own fresh database.
//! Skipped (with a note) unless `METAFI_TEST_POSTGRES_URL` is set.

mod support;

use std::sync::Arc;

use async_trait::async_trait;
use metafi_storage::Storage;
use metafi_storage::conformance::Fixture;
use metafi_storage_postgres::{PostgresConfig, PostgresStorage};
use support::TestDatabase;

struct PostgresFixture {
    database: TestDatabase,
}

#[async_trait]
impl Fixture for PostgresFixture {
    async fn open(&self) -> Arc<dyn Storage> {
        let config = PostgresConfig {
            pool_size: 4,
            ..PostgresConfig::new(self.database.url.clone())
        };
        Arc::new(PostgresStorage::open(config).await.expect("open postgres"))
    }

    async fn teardown(&self) {
        self.database.drop_database().await;
    }
}

async fn fixture() -> Option<PostgresFixture> {
    Some(PostgresFixture {
        database: TestDatabase::create().await?,
    })
}

metafi_storage::conformance_tests!(fixture());
metafi_storage::purchase_conformance_tests!(fixture());

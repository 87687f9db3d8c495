//! Migrations on PostgreSQL: concurrent opens race safely; a newer schema is refused.

mod support;

use metafi_storage::{Storage, StorageError};
use metafi_storage_postgres::{PostgresConfig, PostgresStorage};
use support::TestDatabase;
use tokio_postgres::NoTls;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_migrate_once() {
    let Some(database) = TestDatabase::create().await else {
        return;
    };
    let opens = (0..4).map(|_| {
        let config = PostgresConfig {
            pool_size: 1,
            writers: 1,
            ..PostgresConfig::new(database.url.clone())
        };
        tokio::spawn(PostgresStorage::open(config))
    });
    let mut stores = Vec::new();
    for open in opens {
        stores.push(open.await.expect("task").expect("open"));
    }
    for store in &stores {
        store.close().await;
    }
    // Each migration applied exactly once: the versions one node alone applies, no
    // duplicates. (Versions need not be contiguous: parallel branches reserve theirs.)
    let raced = versions(&database.url).await;
    let Some(reference) = TestDatabase::create().await else {
        return;
    };
    PostgresStorage::open(PostgresConfig::new(reference.url.clone()))
        .await
        .expect("open alone")
        .close()
        .await;
    let alone = versions(&reference.url).await;
    assert!(!alone.is_empty());
    assert_eq!(raced, alone, "a migration was applied twice or skipped");
    reference.drop_database().await;
    database.drop_database().await;
}

/// The applied migration versions, in order, duplicates included.
async fn versions(url: &str) -> Vec<i64> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
        .query(
            "SELECT version FROM metafi_schema_migrations ORDER BY version",
            &[],
        )
        .await
        .expect("versions")
        .iter()
        .map(|row| row.get::<_, i64>(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newer_schema_is_refused_with_a_clear_message() {
    let Some(database) = TestDatabase::create().await else {
        return;
    };
    let store = PostgresStorage::open(PostgresConfig::new(database.url.clone()))
        .await
        .expect("open");
    store.close().await;
    let (client, connection) = tokio_postgres::connect(&database.url, NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute("INSERT INTO metafi_schema_migrations VALUES (999, 'future', 0)")
        .await
        .expect("insert");
    drop(client);
    let err = match PostgresStorage::open(PostgresConfig::new(database.url.clone())).await {
        Ok(_) => panic!("a newer schema must be refused"),
        Err(err) => err,
    };
    assert!(matches!(err, StorageError::Backend { .. }));
    let cause = std::error::Error::source(&err)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        cause.contains("version 999") && cause.contains("newer"),
        "{cause}"
    );
    database.drop_database().await;
}

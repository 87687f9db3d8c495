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
    let (client, connection) = tokio_postgres::connect(&database.url, NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    // Each migration applied exactly once, no duplicates.
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT version), max(version) FROM metafi_schema_migrations",
            &[],
        )
        .await
        .expect("count");
    let (rows, distinct, max) = (
        row.get::<_, i64>(0),
        row.get::<_, i64>(1),
        row.get::<_, i64>(2),
    );
    assert!(rows >= 1);
    assert_eq!(rows, distinct, "a migration was applied twice");
    // Versions are handed out per feature, so a branch may lack some (1, 2, 3, 6): each
    // applied once, none beyond the newest.
    assert!(rows <= max, "{rows} migrations recorded, newest {max}");
    drop(client);
    database.drop_database().await;
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

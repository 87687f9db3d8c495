//! A fresh PostgreSQL database per test, from `METAFI_TEST_POSTGRES_URL`.

// The skip notice is meant for the person running the tests.
#![allow(clippy::print_stderr)]

use tokio_postgres::NoTls;
use uuid::Uuid;

/// A database created for one test and dropped by [`TestDatabase::drop_database`].
pub struct TestDatabase {
    admin_url: String,
    pub name: String,
    pub url: String,
}

impl TestDatabase {
    /// Creates an empty database, or returns `None` (after saying so) when no server is
    /// configured. With `METAFI_REQUIRE_POSTGRES=1` a missing server is a failure instead.
    pub async fn create() -> Option<Self> {
        let Ok(admin_url) = std::env::var("METAFI_TEST_POSTGRES_URL") else {
            if std::env::var("METAFI_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("METAFI_REQUIRE_POSTGRES=1 but METAFI_TEST_POSTGRES_URL is not set");
            }
            eprintln!(
                "skipped: set METAFI_TEST_POSTGRES_URL (e.g. \"$(scripts/postgres.sh)\") to run \
                 the PostgreSQL tests"
            );
            return None;
        };
        let name = format!("metafi_test_{}", Uuid::new_v4().simple());
        admin(&admin_url, &format!("CREATE DATABASE {name}")).await;
        let url = with_database(&admin_url, &name);
        Some(TestDatabase {
            admin_url,
            name,
            url,
        })
    }

    /// Drops the database. `WITH (FORCE)` ends our own leftover connections, but not a
    /// server-owned one such as an autovacuum worker that happens to be in the database (the
    /// test role may not signal it: SQLSTATE 42501); that worker leaves within moments, so the
    /// drop is retried for up to 5 s before the test fails.
    pub async fn drop_database(&self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let mut tries = 0;
        loop {
            match try_admin(&self.admin_url, &sql).await {
                Ok(()) => return,
                Err(e) if tries < 50 => {
                    tries += 1;
                    eprintln!("{sql}: {e}; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{sql}: {e}"),
            }
        }
    }
}

async fn admin(url: &str, sql: &str) {
    try_admin(url, sql).await.expect(sql);
}

async fn try_admin(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("connect to METAFI_TEST_POSTGRES_URL");
    let task = tokio::spawn(connection);
    let result = client.batch_execute(sql).await;
    drop(client);
    let _ = task.await;
    result
}

/// The same URL naming another database.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let base = match base.find("://").map(|i| i + 3) {
        Some(start) => match base[start..].find('/') {
            Some(slash) => &base[..start + slash],
            None => base,
        },
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

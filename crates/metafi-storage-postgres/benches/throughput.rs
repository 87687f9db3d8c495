//! Storage throughput of the PostgreSQL backend: `cargo bench -p metafi-storage-postgres`.
//!
//! Needs `METAFI_TEST_POSTGRES_URL` (see `scripts/postgres.sh`); creates and drops its own
//! database. Knobs (environment): `BENCH_CONCURRENCY` (256), `BENCH_OPS` (20000),
//! `BENCH_POOL` (8), `BENCH_WRITERS` (2), `BENCH_WORKERS` (tokio worker threads, 1).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

use metafi_storage::Storage;
use metafi_storage::conformance::bench::{self, BenchOptions};
use metafi_storage_postgres::{PostgresConfig, PostgresStorage};
use tokio_postgres::NoTls;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn admin(url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    let task = tokio::spawn(connection);
    client.batch_execute(sql).await.expect(sql);
    drop(client);
    let _ = task.await;
}

fn main() {
    let Ok(url) = std::env::var("METAFI_TEST_POSTGRES_URL") else {
        eprintln!("skipped: set METAFI_TEST_POSTGRES_URL (e.g. \"$(scripts/postgres.sh)\")");
        return;
    };
    let options = BenchOptions {
        concurrency: knob("BENCH_CONCURRENCY", 256),
        operations: knob("BENCH_OPS", 20_000),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(knob("BENCH_WORKERS", 1))
        .enable_all()
        .build()
        .expect("runtime");
    let report = runtime.block_on(async {
        let name = "metafi_bench";
        admin(
            &url,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .await;
        admin(&url, &format!("CREATE DATABASE {name}")).await;
        let (base, _) = url.rsplit_once('/').expect("a URL with a database name");
        let config = PostgresConfig {
            pool_size: knob("BENCH_POOL", 8),
            writers: knob("BENCH_WRITERS", 2),
            ..PostgresConfig::new(format!("{base}/{name}"))
        };
        let store: Arc<dyn Storage> = Arc::new(PostgresStorage::open(config).await.expect("open"));
        let report = bench::run(Arc::clone(&store), options).await;
        store.close().await;
        admin(
            &url,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .await;
        report
    });
    println!(
        "postgres concurrency={} ops={}: create_user {:.0}/s, register (find miss + create) {:.0}/s, \
         find_user hit {:.0}/s; {} writes in {} commits ({:.1} per commit)",
        options.concurrency,
        options.operations,
        report.create_user,
        report.register,
        report.find_user_hit,
        report.writes,
        report.commits,
        report.writes as f64 / report.commits.max(1) as f64
    );
}

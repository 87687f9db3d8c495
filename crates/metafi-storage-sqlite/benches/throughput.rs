//! Storage throughput of the SQLite backend: `cargo bench -p metafi-storage-sqlite`.
//!
//! Knobs (environment): `BENCH_CONCURRENCY` (256), `BENCH_OPS` (20000), `BENCH_READERS` (2),
//! `BENCH_WORKERS` (tokio worker threads, 1). Pin to one core with `taskset -c 0`.
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use metafi_storage::Storage;
use metafi_storage::conformance::bench::{self, BenchOptions};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let options = BenchOptions {
        concurrency: knob("BENCH_CONCURRENCY", 256),
        operations: knob("BENCH_OPS", 20_000),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(knob("BENCH_WORKERS", 1))
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig {
        path: dir.path().join("bench.db"),
        readers: knob("BENCH_READERS", 2),
        ..SqliteConfig::default()
    };
    let report = runtime.block_on(async {
        let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("open"));
        let report = bench::run(Arc::clone(&store), options).await;
        store.close().await;
        report
    });
    println!(
        "sqlite concurrency={} ops={}: create_user {:.0}/s, register (find miss + create) {:.0}/s, \
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

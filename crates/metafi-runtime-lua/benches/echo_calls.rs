//! Instruction counts of the Lua RPC echo, for comparing two builds on a shared machine where
//! wall-clock throughput is noise: runs `METAFI_BENCH_CALLS` (default 1,000) calls of `echo`
//! (examples/lua/echo.lua) one after another on one Lua VM, then exits. Run it under callgrind
//! twice with different counts; the difference of the totals divided by the difference of the
//! counts is the cost of one call, start-up excluded:
//!
//! ```text
//! cargo bench -p metafi-runtime-lua --bench echo_calls --no-run
//! METAFI_BENCH_CALLS=2000 valgrind --tool=callgrind --callgrind-out-file=/dev/null <binary>
//! METAFI_BENCH_CALLS=6000 valgrind --tool=callgrind --callgrind-out-file=/dev/null <binary>
//! ```
//!
//! `METAFI_BENCH_MODULES` (a folder of Lua modules) and `METAFI_BENCH_RPC` (an RPC id) run
//! another RPC the same way, e.g. a loop of one library function to price it per call.
//!
//! Results are in `docs/RUNTIME.md` ("Measured").

#![allow(clippy::unwrap_used)] // bench setup: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{Objects, RpcContext, RpcDispatch, SystemClock};
use metafi_runtime::{
    NoMatches, PoolConfig, Runtime, RuntimeBuilder, RuntimeConfig, RuntimeServices,
};
use metafi_runtime_lua::LuaEngine;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

const PAYLOAD: &str = r#"{"name":"bot-7","pos":[1.5,-2,3],"flags":{"alive":true},"n":42}"#;

fn main() {
    let calls: u64 = std::env::var("METAFI_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let io = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rpc = std::env::var("METAFI_BENCH_RPC").unwrap_or_else(|_| "echo".to_owned());
    let dir = tempfile::tempdir().unwrap();
    io.block_on(async {
        let runtime = runtime(dir.path()).await;
        for _ in 0..calls {
            let out = runtime
                .call(&rpc, RpcContext::default(), PAYLOAD.to_owned())
                .await
                .unwrap();
            assert!(!out.is_empty());
        }
        runtime.shutdown(Duration::from_secs(5)).await;
    });
}

async fn runtime(dir: &Path) -> Arc<Runtime> {
    let store = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.join("bench.db"),
            ..SqliteConfig::default()
        })
        .unwrap(),
    );
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        Arc::new(NoMatches),
        Arc::new(SystemClock),
    );
    let config = RuntimeConfig {
        path: std::env::var_os("METAFI_BENCH_MODULES").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua"),
            Into::into,
        ),
        node: "bench".into(),
        env: HashMap::new(),
        call_timeout: Duration::from_secs(5),
        load_timeout: Duration::from_secs(5),
        memory_limit_bytes: 64 << 20,
        pools: HashMap::from([(
            "lua".to_owned(),
            PoolConfig {
                vms: 1,
                max_calls_per_vm: 64,
                queue_capacity: 4096,
            },
        )]),
    };
    let runtime = RuntimeBuilder::new(config, services)
        .engine(Arc::new(LuaEngine::new()))
        .start()
        .await
        .unwrap();
    Arc::new(runtime)
}

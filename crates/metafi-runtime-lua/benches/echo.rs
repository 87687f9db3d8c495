//! In-process RPC throughput: the Lua `echo` (examples/lua/echo.lua) and the native
//! `echo_native` through `Runtime::call`, with 64 calls in flight, as the REST and socket edges
//! would issue them. No HTTP: this is the runtime's own cost. Full-stack numbers come from
//! metafi-bench.
//!
//! `cargo bench -p metafi-runtime-lua --bench echo`; report elements/s (calls/s). Set
//! `METAFI_BENCH_LUA_VMS` to change the number of Lua VMs (default: one per core).

#![allow(clippy::unwrap_used)] // bench setup: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use metafi_core::{Objects, RpcContext, RpcDispatch, SystemClock};
use metafi_runtime::{
    NoMatches, PoolConfig, Runtime, RuntimeBuilder, RuntimeConfig, RuntimeServices,
};
use metafi_runtime_lua::LuaEngine;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

const PAYLOAD: &str = r#"{"name":"bot-7","pos":[1.5,-2,3],"flags":{"alive":true},"n":42}"#;
const IN_FLIGHT: usize = 64;

fn runtime(io: &tokio::runtime::Runtime, dir: &Path) -> Arc<Runtime> {
    io.block_on(async {
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
        // METAFI_BENCH_LUA_VMS overrides the default of one VM per core.
        let vms = std::env::var("METAFI_BENCH_LUA_VMS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let config = RuntimeConfig {
            path: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua"),
            node: "bench".into(),
            env: HashMap::new(),
            call_timeout: Duration::from_secs(5),
            load_timeout: Duration::from_secs(5),
            memory_limit_bytes: 64 << 20,
            pools: HashMap::from([(
                "lua".to_owned(),
                PoolConfig {
                    vms,
                    max_calls_per_vm: 64,
                    queue_capacity: 4096,
                },
            )]),
        };
        let runtime = RuntimeBuilder::new(config, services)
            .native(Arc::new(metafi_examples_native::Examples))
            .engine(Arc::new(LuaEngine::new()))
            .start()
            .await
            .unwrap();
        Arc::new(runtime)
    })
}

/// Runs `total` calls of `id`, `IN_FLIGHT` at a time, and returns the elapsed time.
fn run(
    io: &tokio::runtime::Runtime,
    runtime: &Arc<Runtime>,
    id: &'static str,
    total: u64,
) -> Duration {
    io.block_on(async {
        let started = Instant::now();
        let workers: Vec<_> = (0..IN_FLIGHT as u64)
            .map(|w| {
                let runtime = runtime.clone();
                let share = total / IN_FLIGHT as u64 + u64::from(w < total % IN_FLIGHT as u64);
                tokio::spawn(async move {
                    for _ in 0..share {
                        let out = runtime
                            .call(id, RpcContext::default(), PAYLOAD.to_owned())
                            .await
                            .unwrap();
                        debug_assert!(!out.is_empty());
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.await.unwrap();
        }
        started.elapsed()
    })
}

fn echo(c: &mut Criterion) {
    let io = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&io, dir.path());
    let mut group = c.benchmark_group("rpc_echo");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    for id in ["echo", "echo_native"] {
        group.bench_function(id, |b| b.iter_custom(|iters| run(&io, &runtime, id, iters)));
    }
    group.finish();
    io.block_on(runtime.shutdown(Duration::from_secs(5)));
}

criterion_group!(benches, echo);
criterion_main!(benches);

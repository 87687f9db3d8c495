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
//! `METAFI_BENCH_REST=1` gives each call the context the REST edge builds for `metafi-bench`'s
//! `POST /v2/rpc/echo` (a signed-in user, the client address, the four headers its client
//! sends: `host`, `authorization` with a session token, `content-type`, `content-length`)
//! instead of an empty one, to price `ctx.headers` and the user fields (issue 21).
//!
//! Results are in `docs/RUNTIME.md` ("Measured").

#![allow(clippy::unwrap_used)] // bench setup: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{Objects, RequestHeaders, RpcContext, RpcDispatch, RpcUser, SystemClock};
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
        let rest = std::env::var_os("METAFI_BENCH_REST").is_some();
        for _ in 0..calls {
            let ctx = if rest {
                rest_context()
            } else {
                RpcContext::default()
            };
            let out = runtime.call(&rpc, ctx, PAYLOAD.to_owned()).await.unwrap();
            assert!(!out.is_empty());
        }
        runtime.shutdown(Duration::from_secs(5)).await;
    });
}

/// What `metafi-api`'s RPC route builds for `metafi-bench`'s REST call (built per call, as the
/// edge does).
fn rest_context() -> RpcContext {
    RpcContext {
        user: Some(RpcUser {
            user_id: uuid::Uuid::from_u128(0x8d63_5f0f_4b7e_4c1a_9f3e_2a4b_6c8d_0e1f),
            username: "rpc-0".to_owned(),
            session_id: uuid::Uuid::from_u128(0x1b2c_3d4e_5f60_4718_8a9b_0c1d_2e3f_4a5b),
            vars: HashMap::new(),
            expires_at: 1_798_761_600,
        }),
        client_ip: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        client_port: Some(54_321),
        trace_id: Some(metafi_core::new_trace_id()),
        lang: None,
        query: HashMap::new(),
        headers: RequestHeaders::from_pairs([
            ("host", "127.0.0.1:7350"),
            (
                "authorization",
                "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0aWQiOiIxYjJjM2Q0ZS01ZjYwLTQ3MTgtOGE5Yi0wYzFkMmUzZjRhNWIiLCJ1aWQiOiI4ZDYzNWYwZi00YjdlLTRjMWEtOWYzZS0yYTRiNmM4ZDBlMWYiLCJ1c24iOiJycGMtMCIsImV4cCI6MTc5ODc2MTYwMH0.c2lnbmF0dXJlLW9mLXRoZS1zZXNzaW9uLXRva2Vu",
            ),
            ("content-type", "application/json"),
            ("content-length", "84"),
        ])
        .expect("valid headers"),
        rest_rpc: true,
    }
}

/// A modules folder holding only `examples/lua/echo.lua`: the other examples need services this
/// bench does not start (leaderboards, matches) and would fail to load.
fn echo_only(dir: &Path) -> std::path::PathBuf {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua/echo.lua"),
        modules.join("echo.lua"),
    )
    .unwrap();
    modules
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
        path: std::env::var_os("METAFI_BENCH_MODULES").map_or_else(|| echo_only(dir), Into::into),
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

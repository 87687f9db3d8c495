//! Instruction counts of a before+after hook pair on `AuthenticateDevice`, in each runtime, for
//! comparing two builds on a shared machine where wall-clock time is noise (the method of
//! `metafi-runtime-lua/benches/echo_calls.rs`): runs `METAFI_BENCH_PAIRS` (default 1,000)
//! pairs one after another through the runtime's hooks, as the REST edge calls them
//! (`metafi-api/src/hooks.rs`, `around`: the request struct handed to the before hook, the
//! hook's result taken back as that struct (`HookValue::into_message`), a copy of it and of the session for the after
//! hook), then exits. Run it under
//! callgrind with two counts; the difference of the totals divided by the difference of the
//! counts is the cost of one pair, start-up excluded:
//!
//! ```text
//! cargo bench -p metafi-runtime-conformance --bench hook_calls --no-run
//! METAFI_BENCH_ENGINE=lua METAFI_BENCH_PAIRS=1000 valgrind --tool=callgrind --callgrind-out-file=/dev/null <binary>
//! METAFI_BENCH_ENGINE=lua METAFI_BENCH_PAIRS=3000 valgrind --tool=callgrind --callgrind-out-file=/dev/null <binary>
//! ```
//!
//! `METAFI_BENCH_EVICT_KB=n` walks an n KiB buffer after each pair (a pair that finds its
//! caches cold, as between two sign-ins in the server; time it, compare engines by difference).
//! `METAFI_BENCH_EDGE=json` runs the edge as it was before `metafi_core::HookValue`
//! (`serde_json::to_value` of the request, the kept request and the answer), in the same
//! binary. `METAFI_BENCH_ENGINE` is `lua`, `js` or `native` (pass-through hooks, as
//! `scripts/bench_hooks.sh` registers them). The calls run on a tokio worker thread, so script
//! hooks take the inline path the server's IO workers take. Results: `docs/RUNTIME.md`,
//! "The hook call path and its cost".

#![allow(clippy::unwrap_used)] // bench setup: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{Hook, HookValue, Hooks, Objects, RpcContext, SystemClock};
use metafi_proto::api::Session;
use metafi_runtime::native::InitError;
use metafi_runtime::{
    CallContext, EngineFactory, NativeInitializer, NativeModule, Nk, NoMatches, PoolConfig,
    RpcError, RuntimeBuilder, RuntimeConfig, RuntimeServices,
};
use metafi_runtime_js::JsEngine;
use metafi_runtime_lua::LuaEngine;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The server's allocator (`metafi-server/src/main.rs`), so the counts are the server's.
#[global_allocator]
static ALLOCATOR: metafi_core::ServerAllocator = metafi_core::ServerAllocator;

const LUA: &str = r#"
local nk = require("nakama")
nk.register_req_before(function(context, payload) return payload end, "AuthenticateDevice")
nk.register_req_after(function(context, output, input) end, "AuthenticateDevice")
"#;

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerBeforeAuthenticateDevice(function (ctx, logger, nk, data) { return data; });
  initializer.registerAfterAuthenticateDevice(function (ctx, logger, nk, data, request) {});
}
"#;

/// Pass-through native hooks.
struct PassThrough;

impl NativeModule for PassThrough {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError> {
        initializer.register_before(
            Hook::AuthenticateDevice,
            |_: Arc<CallContext>, _: Nk, request: Option<Value>| async move {
                Ok::<_, RpcError>(request)
            },
        );
        initializer.register_after(
            Hook::AuthenticateDevice,
            |_: Arc<CallContext>, _: Nk, _: Option<Value>, _: Option<Value>| async move {
                Ok::<_, RpcError>(())
            },
        );
        Ok(())
    }
}

fn main() {
    let pairs: u64 = std::env::var("METAFI_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let engine = std::env::var("METAFI_BENCH_ENGINE").unwrap_or_else(|_| "lua".to_owned());
    let io = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    io.block_on(async {
        let runtime = runtime(dir.path(), &engine).await;
        let hooks = runtime.hooks();
        assert!(hooks.has_before(Hook::AuthenticateDevice), "no before hook registered");
        // On a worker thread, as the server's IO workers call hooks (the inline path).
        tokio::spawn(async move {
            // The request the REST edge parsed for a device sign-in, and the session it
            // answers; a copy of the request per pair stands for the one parsed per call.
            let request = AuthenticateRequest {
                account: AccountId {
                    id: "device-0123456789abcdef".into(),
                    vars: HashMap::new(),
                },
                create: Some(true),
                username: String::new(),
            };
            let session = Session {
                created: false,
                token: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0aWQiOiI1ZjBmIiwidWlkIjoiOGQ2MyJ9.c2lnbmF0dXJl".into(),
                refresh_token: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0aWQiOiI1ZjBmIiwidWlkIjoiOGQ2MyJ9.cmVmcmVzaA".into(),
            };
            // `METAFI_BENCH_EDGE=json`: the edge as it was before `HookValue` (main
            // `81a6e59`): the request, the kept request and the answer each made a
            // `serde_json::Value` by `to_value`, handed over as JSON; the same binary, so the
            // two paths compare in one session.
            let json_edge = std::env::var("METAFI_BENCH_EDGE").is_ok_and(|v| v == "json");
            // `METAFI_BENCH_EVICT_KB=n`: write one word of every cache line of an n KiB buffer
            // after each pair, as a sign-in's own work evicts the VM's data between two pairs
            // in the server; the walk costs the same in every engine, so engines compare by
            // their difference (for `perf stat -e task-clock`, not callgrind).
            let evict_kb: usize = std::env::var("METAFI_BENCH_EVICT_KB")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut evict = vec![0u64; evict_kb * 1024 / 8];
            for _ in 0..pairs {
                let request = request.clone();
                let input = if json_edge {
                    HookValue::Json(serde_json::to_value(&request).unwrap())
                } else {
                    HookValue::message(request)
                };
                let changed = hooks
                    .before_value(Hook::AuthenticateDevice, RpcContext::default(), Some(input))
                    .await
                    .unwrap()
                    .unwrap();
                let served: AuthenticateRequest =
                    changed.into_message(Hook::AuthenticateDevice).unwrap();
                // The edge keeps a copy of the request for the after hook (the call consumes
                // the request) and hands it a copy of the answer (which goes to the client).
                let (output, input) = if json_edge {
                    (
                        HookValue::Json(serde_json::to_value(&session).unwrap()),
                        HookValue::Json(serde_json::to_value(&served).unwrap()),
                    )
                } else {
                    (
                        HookValue::message(session.clone()),
                        HookValue::message(served.clone()),
                    )
                };
                hooks
                    .after_value(
                        Hook::AuthenticateDevice,
                        RpcContext::default(),
                        Some(output),
                        Some(input),
                    )
                    .await;
                // `served` (the request the call was served with) is dropped here.
                for line in evict.chunks_mut(8) {
                    line[0] = line[0].wrapping_add(1);
                }
                std::hint::black_box(&mut evict);
            }
        })
        .await
        .unwrap();
        runtime.shutdown(Duration::from_secs(5)).await;
    });
}

/// The edge's `AccountId` (`metafi-api/src/hooks.rs`), with its serde attributes.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct AccountId {
    id: String,
    #[serde(deserialize_with = "lenient")]
    vars: HashMap<String, String>,
}

/// The edge's `AuthenticateRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct AuthenticateRequest {
    account: AccountId,
    create: Option<bool>,
    username: String,
}

/// The edge's `hooks::lenient`: `null`, `[]` and `{}` are the empty value.
fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    match &value {
        Value::Null => Ok(T::default()),
        Value::Array(items) if items.is_empty() => Ok(T::default()),
        Value::Object(map) if map.is_empty() => Ok(T::default()),
        _ => serde_json::from_value(value).map_err(D::Error::custom),
    }
}

async fn runtime(dir: &Path, engine: &str) -> Arc<metafi_runtime::Runtime> {
    let store = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.join("bench.db"),
            ..SqliteConfig::default()
        })
        .unwrap(),
    );
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    match engine {
        "lua" => std::fs::write(modules.join("hooks.lua"), LUA).unwrap(),
        "js" => std::fs::write(modules.join("hooks.js"), JS).unwrap(),
        "native" => {}
        other => panic!("METAFI_BENCH_ENGINE is lua, js or native, not {other:?}"),
    }
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        Arc::new(NoMatches),
        Arc::new(SystemClock),
    );
    let pool = PoolConfig {
        vms: 1,
        max_calls_per_vm: 64,
        queue_capacity: 4096,
    };
    let config = RuntimeConfig {
        path: modules,
        node: "bench".into(),
        env: HashMap::new(),
        call_timeout: Duration::from_secs(5),
        load_timeout: Duration::from_secs(5),
        memory_limit_bytes: 64 << 20,
        pools: HashMap::from([("lua".to_owned(), pool), ("js".to_owned(), pool)]),
    };
    let mut builder = RuntimeBuilder::new(config, services)
        .engine(Arc::new(LuaEngine::new()) as Arc<dyn EngineFactory>)
        .engine(Arc::new(JsEngine::new()) as Arc<dyn EngineFactory>);
    if engine == "native" {
        builder = builder.native(Arc::new(PassThrough));
    }
    Arc::new(builder.start().await.unwrap())
}

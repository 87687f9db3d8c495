//! In-process `echo_js` calls per second through the whole host (`Runtime` as the REST and
//! socket edges call it: dispatch, queue, VM thread, JSON decode + encode in the script,
//! reply), next to the Lua `echo` measured the same way.
//!
//! `taskset -c 0,1 cargo bench -p metafi-runtime-js --bench echo`
//!
//! Groups: `sequential` (one caller: latency-bound), `concurrent` (64 callers: throughput) with
//! one call in flight per VM and with 64 (the Lua default), over `BENCH_VMS` VMs (default 2);
//! then an RPC that writes one storage object (SQLite, one durable commit per batch) from 64
//! callers, JS with 2, 16 and 64 VMs against Lua with 2 VMs × 64 interleaved calls.
//! The callers run on a tokio runtime with one worker per core (`BENCH_WORKERS`), as the Lua
//! bench's do.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use metafi_core::{RpcContext, RpcDispatch};

#[path = "../tests/support/mod.rs"]
#[allow(clippy::unwrap_used)] // bench fixture: a panic is the failure report
mod support;

/// The payload of the Lua bench (`crates/metafi-runtime-lua/benches/echo.rs`), for comparable numbers.
const PAYLOAD: &str = r#"{"name":"bot-7","pos":[1.5,-2,3],"flags":{"alive":true},"n":42}"#;
const CONCURRENCY: usize = 64;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A JS and a Lua RPC that each write one storage object (one durable commit), to see what
/// synchronous `nk` calls cost when the work is IO rather than script.
const WRITE_JS: &str = r#"
function write(ctx, logger, nk, payload) {
  var acks = nk.storageWrite([{ collection: "bench", key: nk.uuidv4(), value: { p: payload } }]);
  return acks[0].version;
}
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("write_js", write);
}
"#;
const WRITE_LUA: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  local acks = nk.storage_write({ { collection = "bench", key = nk.uuid_v4(), value = { p = payload } } })
  return acks[1].version
end, "write_lua")
"#;

/// A runtime with `examples/js`, `examples/lua` and the write modules loaded.
fn harness(
    tokio: &tokio::runtime::Runtime,
    vms: usize,
    max_calls_per_vm: usize,
) -> support::Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    for (example, file) in [("js", "echo.js"), ("lua", "echo.lua")] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(example)
            .join(file);
        std::fs::copy(from, dir.path().join(file)).expect("copy example");
    }
    std::fs::write(dir.path().join("write.js"), WRITE_JS).expect("write module");
    std::fs::write(dir.path().join("write.lua"), WRITE_LUA).expect("write module");
    let mut options = support::Options::new(dir.path().to_owned());
    options.vms = vms;
    options.max_calls_per_vm = max_calls_per_vm;
    options.queue_capacity = 4 * CONCURRENCY;
    options
        .engines
        .push(Arc::new(metafi_runtime_lua::LuaEngine::new()));
    let harness = tokio
        .block_on(support::build(options))
        .expect("runtime starts");
    // The modules were read at start; the directory may go.
    drop(dir);
    harness
}

/// Time for `iterations` calls of `id` spread over `callers` concurrent tasks.
fn run(
    tokio: &tokio::runtime::Runtime,
    runtime: &Arc<support::Harness>,
    id: &'static str,
    callers: usize,
    iterations: u64,
) -> Duration {
    tokio.block_on(async {
        let started = Instant::now();
        let callers = callers as u64;
        let tasks: Vec<_> = (0..callers)
            .map(|i| {
                let runtime = runtime.clone();
                // Exactly `iterations` calls in all.
                let per_caller = iterations / callers + u64::from(i < iterations % callers);
                tokio::spawn(async move {
                    for _ in 0..per_caller {
                        let out = runtime
                            .runtime
                            .call(id, RpcContext::default(), PAYLOAD.to_owned())
                            .await
                            .expect("echo answers");
                        std::hint::black_box(out);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("caller task");
        }
        started.elapsed()
    })
}

fn echo(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(knob(
            "BENCH_WORKERS",
            std::thread::available_parallelism().map_or(1, usize::from),
        ))
        .enable_all()
        .build()
        .expect("tokio runtime");
    let vms = knob("BENCH_VMS", 2);
    for max_calls in [1, 64] {
        let harness = Arc::new(harness(&tokio, vms, max_calls));
        let mut group = c.benchmark_group(format!("echo vms={vms} max_calls_per_vm={max_calls}"));
        group.throughput(Throughput::Elements(1));
        group.measurement_time(Duration::from_secs(5));
        group.sample_size(20);
        for (name, id) in [("js", "echo_js"), ("lua", "echo")] {
            group.bench_function(format!("{name} sequential"), |b| {
                b.iter_custom(|iterations| run(&tokio, &harness, id, 1, iterations))
            });
            group.bench_function(format!("{name} concurrent {CONCURRENCY}"), |b| {
                b.iter_custom(|iterations| run(&tokio, &harness, id, CONCURRENCY, iterations))
            });
        }
        group.finish();
        stop(&tokio, harness);
    }

    // Storage writes, 64 callers: JS VMs block in nk.storageWrite, Lua VMs interleave 64 calls.
    let mut group = c.benchmark_group("storage write, 64 callers");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(10);
    for (name, id, vms, max_calls) in [
        ("js vms=2", "write_js", 2, 1),
        ("js vms=16", "write_js", 16, 1),
        ("js vms=64", "write_js", 64, 1),
        ("lua vms=2 max_calls_per_vm=64", "write_lua", 2, 64),
    ] {
        let harness = Arc::new(harness(&tokio, vms, max_calls));
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| run(&tokio, &harness, id, CONCURRENCY, iterations))
        });
        stop(&tokio, harness);
    }
    group.finish();
}

fn stop(tokio: &tokio::runtime::Runtime, harness: Arc<support::Harness>) {
    if let Ok(harness) = Arc::try_unwrap(harness) {
        tokio.block_on(harness.runtime.shutdown(Duration::from_secs(5)));
    }
}

criterion_group!(benches, echo);
criterion_main!(benches);

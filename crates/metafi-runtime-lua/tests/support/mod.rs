//! A runtime over SQLite in a temporary directory, with a fake match host, for the tests.

#![allow(dead_code)] // each test file uses a different part of this module

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use metafi_core::{Clock, CoreError, Objects, RpcContext, RpcDispatch, RpcUser, SystemClock};
use metafi_runtime::testing;
use metafi_runtime::{
    EngineFactory, NativeModule, PoolConfig, Runtime, RuntimeBuilder, RuntimeConfig,
    RuntimeServices,
};
use metafi_runtime_lua::LuaEngine;
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

/// A fixture folder of Lua modules. By path from the crates folder, because the host's own
/// tests (`metafi-runtime/tests`) include this module too.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../metafi-runtime-lua/tests/fixtures")
        .join(name)
}

pub use metafi_runtime::testing::FakeMatches;

#[derive(Debug)]
pub struct Harness {
    pub runtime: Runtime,
    pub store: Arc<dyn Storage>,
    pub matches: Arc<FakeMatches>,
    /// What `nk.time()` reads.
    pub clock: Arc<TestClock>,
    _dir: tempfile::TempDir,
}

/// The wall clock scripts read (`nk.time()`): the system's, plus an offset the test moves.
#[derive(Debug, Default)]
pub struct TestClock {
    ahead_ms: AtomicI64,
}

impl TestClock {
    pub fn now_ms(&self) -> i64 {
        Clock::now_ms(self)
    }

    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap();
        self.ahead_ms.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.ahead_ms.load(Ordering::SeqCst)
    }
}

pub struct Options {
    pub modules: PathBuf,
    pub vms: usize,
    pub max_calls_per_vm: usize,
    pub queue_capacity: usize,
    pub call_timeout: Duration,
    pub memory_limit_bytes: usize,
    pub natives: Vec<Arc<dyn NativeModule>>,
    /// `runtime.watchdog_grace_ms`.
    pub watchdog_grace: Duration,
    /// Engines besides Lua; each gets the same pool sizes.
    pub engines: Vec<Arc<dyn EngineFactory>>,
    /// `runtime.inline_vms` (None: the builder's default, two per core; 0: calls always take
    /// the pool).
    pub inline_vms: Option<usize>,
}

impl Options {
    pub fn new(modules: PathBuf) -> Options {
        Options {
            modules,
            vms: 2,
            max_calls_per_vm: 16,
            queue_capacity: 64,
            call_timeout: Duration::from_secs(5),
            memory_limit_bytes: 32 << 20,
            natives: Vec::new(),
            watchdog_grace: metafi_runtime::DEFAULT_WATCHDOG_GRACE,
            engines: Vec::new(),
            inline_vms: None,
        }
    }
}

pub async fn open_store(dir: &Path) -> Arc<dyn Storage> {
    let config = SqliteConfig {
        path: dir.join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store = tokio::task::spawn_blocking(move || SqliteStorage::open(config))
        .await
        .unwrap()
        .unwrap();
    Arc::new(store)
}

pub async fn build(options: Options) -> Result<Harness, metafi_runtime::LoadError> {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).await;
    let matches = Arc::new(FakeMatches::default());
    let clock = Arc::new(TestClock::default());
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store.clone(),
        matches.clone(),
        clock.clone(),
    );
    let config = RuntimeConfig {
        path: options.modules,
        node: "test-node".into(),
        env: HashMap::from([("region".to_owned(), "eu".to_owned())]),
        call_timeout: options.call_timeout,
        load_timeout: Duration::from_secs(5),
        memory_limit_bytes: options.memory_limit_bytes,
        pools: std::iter::once("lua")
            .chain(options.engines.iter().map(|e| e.name()))
            .map(|name| {
                let pool = PoolConfig {
                    vms: options.vms,
                    max_calls_per_vm: options.max_calls_per_vm,
                    queue_capacity: options.queue_capacity,
                };
                (name.to_owned(), pool)
            })
            .collect(),
    };
    let mut builder = RuntimeBuilder::new(config, services)
        .engine(Arc::new(LuaEngine::new()))
        .watchdog_grace(options.watchdog_grace);
    if let Some(max_vms) = options.inline_vms {
        builder = builder.inline_vms(max_vms);
    }
    for engine in options.engines {
        builder = builder.engine(engine);
    }
    for native in options.natives {
        builder = builder.native(native);
    }
    let runtime = builder.start().await?;
    Ok(Harness {
        runtime,
        store,
        matches,
        clock,
        _dir: dir,
    })
}

pub async fn start(modules: &str) -> Harness {
    build(Options::new(fixture(modules))).await.unwrap()
}

impl Harness {
    pub async fn call(&self, id: &str, payload: &str) -> Result<String, CoreError> {
        self.runtime
            .call(id, RpcContext::default(), payload.to_owned())
            .await
    }

    pub async fn call_as(
        &self,
        id: &str,
        user: RpcUser,
        payload: &str,
    ) -> Result<String, CoreError> {
        self.runtime
            .call(id, testing::caller(user), payload.to_owned())
            .await
    }

    /// A user with a device, created straight in storage.
    pub async fn new_user(&self, username: &str) -> Uuid {
        testing::device_user(self.store.as_ref(), username).await
    }
}

#[allow(unused_imports)] // not every test file reads JSON
pub use metafi_runtime::testing::json;

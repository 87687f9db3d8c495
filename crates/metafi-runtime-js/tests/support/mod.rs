//! A runtime with the JavaScript engine over SQLite in a temporary directory, with a fake
//! match host, for the tests and the benchmark.

#![allow(dead_code)] // each test file uses a different part of this module

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{CoreError, Objects, RpcContext, RpcDispatch, RpcUser, SystemClock};
use metafi_runtime::testing;
use metafi_runtime::{
    EngineFactory, Nk, PoolConfig, Runtime, RuntimeBuilder, RuntimeConfig, RuntimeServices,
    VmLimits, VmSetup,
};
use metafi_runtime_js::JsEngine;
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn examples_js() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/js")
}

pub use metafi_runtime::testing::FakeMatches;

#[derive(Debug)]
pub struct Harness {
    pub runtime: Runtime,
    pub store: Arc<dyn Storage>,
    pub matches: Arc<FakeMatches>,
    _dir: tempfile::TempDir,
}

pub struct Options {
    pub modules: PathBuf,
    pub vms: usize,
    pub max_calls_per_vm: usize,
    pub queue_capacity: usize,
    pub call_timeout: Duration,
    pub load_timeout: Duration,
    pub memory_limit_bytes: usize,
    /// More engines besides JavaScript (the Lua engine, to test ids across runtimes).
    pub engines: Vec<Arc<dyn EngineFactory>>,
    /// `runtime.js_read_only_globals`.
    pub read_only_globals: bool,
}

impl Options {
    pub fn new(modules: PathBuf) -> Options {
        Options {
            modules,
            vms: 2,
            max_calls_per_vm: 1,
            queue_capacity: 64,
            call_timeout: Duration::from_secs(5),
            load_timeout: Duration::from_secs(5),
            memory_limit_bytes: 32 << 20,
            engines: Vec::new(),
            read_only_globals: true,
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

pub fn services(store: Arc<dyn Storage>, matches: Arc<FakeMatches>) -> RuntimeServices {
    RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        matches,
        Arc::new(SystemClock),
    )
}

pub fn env() -> HashMap<String, String> {
    HashMap::from([("region".to_owned(), "eu".to_owned())])
}

pub async fn build(options: Options) -> Result<Harness, metafi_runtime::LoadError> {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path()).await;
    let matches = Arc::new(FakeMatches::default());
    let pool = PoolConfig {
        vms: options.vms,
        max_calls_per_vm: options.max_calls_per_vm,
        queue_capacity: options.queue_capacity,
    };
    let config = RuntimeConfig {
        path: options.modules,
        node: "test-node".into(),
        env: env(),
        call_timeout: options.call_timeout,
        load_timeout: options.load_timeout,
        memory_limit_bytes: options.memory_limit_bytes,
        pools: HashMap::from([("js".to_owned(), pool), ("lua".to_owned(), pool)]),
    };
    let mut builder = RuntimeBuilder::new(config, services(store.clone(), matches.clone())).engine(
        Arc::new(JsEngine::new().with_read_only_globals(options.read_only_globals)),
    );
    for engine in options.engines {
        builder = builder.engine(engine);
    }
    let runtime = builder.start().await?;
    Ok(Harness {
        runtime,
        store,
        matches,
        _dir: dir,
    })
}

pub async fn start(modules: &str) -> Harness {
    build(Options::new(fixture(modules))).await.unwrap()
}

/// An `nk` API over a fresh store, for tests that drive a VM directly.
pub async fn nk(dir: &Path) -> Nk {
    let store = open_store(dir).await;
    Nk::new(
        services(store, Arc::new(FakeMatches::default())),
        Arc::from("test-node"),
        Arc::new(env()),
    )
}

/// A VM set-up for tests that drive one VM directly: the modules of the fixture `name`, an
/// `nk` over a fresh store in `dir`, 5 s per call and per load, 32 MiB.
pub async fn vm_setup(name: &str, dir: &Path) -> VmSetup {
    let modules = metafi_runtime::modules::discover(&fixture(name), &["js"]).unwrap();
    VmSetup {
        modules: Arc::from(modules),
        nk: nk(dir).await,
        limits: VmLimits {
            call_timeout: Duration::from_secs(5),
            memory_limit_bytes: 32 << 20,
            load_timeout: Duration::from_secs(5),
        },
        index: 0,
    }
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

//! A runtime for one fixture in one engine (or all of them together): SQLite in a temporary
//! directory, the fake match host of `metafi_runtime::testing`, the fixture's users.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use metafi_core::{
    Accounts, AccountsConfig, Clock, CoreError, NobodyOnline, Objects, RequestHeaders, Revocations,
    RpcContext, RpcDispatch, RpcUser, Sessions, SessionsConfig, SystemClock, TokenKeys, Wallets,
};
use metafi_runtime::testing::FakeMatches;
use metafi_runtime::{
    AccountServices, EngineFactory, LoadError, PoolConfig, Runtime, RuntimeBuilder, RuntimeConfig,
    RuntimeServices,
};
use metafi_runtime_js::JsEngine;
use metafi_runtime_lua::LuaEngine;
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::fixture::{Engine, Fixture, Users};

/// The node name scripts see as `ctx.node`.
pub const NODE: &str = "test-node";

/// A started runtime and what the checks read.
#[derive(Debug)]
pub struct Rig {
    pub runtime: Runtime,
    pub store: Arc<dyn Storage>,
    pub matches: Arc<FakeMatches>,
    pub users: Users,
    _dir: tempfile::TempDir,
}

/// The parts of a rig that exist before its runtime starts (kept when it fails to start).
pub struct Parts {
    pub store: Arc<dyn Storage>,
    pub matches: Arc<FakeMatches>,
    pub users: Users,
    dir: tempfile::TempDir,
}

impl Rig {
    /// Calls `rpc` with `payload`, as `caller` when given; a hang guard far above any budget.
    pub async fn call(
        &self,
        rpc: &str,
        caller: Option<RpcUser>,
        payload: String,
    ) -> Result<Result<String, CoreError>, String> {
        // Both as a REST call: with the HTTP key (no user) or a session.
        let ctx = match caller {
            None => RpcContext {
                rest_rpc: true,
                ..RpcContext::default()
            },
            Some(user) => RpcContext {
                user: Some(user),
                client_ip: Some(IpAddr::from([127, 0, 0, 9])),
                client_port: Some(50_009),
                trace_id: Some(uuid::Uuid::from_u128(0x4000_8000_0000_0000_0009)),
                lang: None,
                query: HashMap::from([("q".to_owned(), vec!["1".to_owned(), "2".to_owned()])]),
                // As a REST call brings them: `Host` (hidden from functions), a name written
                // in two cases (one header), repeated.
                headers: RequestHeaders::from_pairs([
                    ("host", "127.0.0.1:7350"),
                    ("x-test", "yes"),
                    ("X-Test", "again"),
                ])
                .expect("valid headers"),
                rest_rpc: true,
            },
        };
        tokio::time::timeout(
            Duration::from_secs(60),
            self.runtime.call(rpc, ctx, payload),
        )
        .await
        .map_err(|_| format!("call '{rpc}' never ended (hang guard, 60 s)"))
    }

    pub async fn shutdown(&self) {
        self.runtime.shutdown(Duration::from_secs(5)).await;
    }
}

/// Why a runtime did not start.
pub enum StartError {
    /// The runtime refused the modules (what `load_error` fixtures expect).
    Load(LoadError),
    /// The rig itself failed (storage, a missing native module).
    Other(String),
}

impl Parts {
    pub async fn open(fixture: &Fixture) -> Result<Parts, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let config = SqliteConfig {
            path: dir.path().join("metafi.db"),
            ..SqliteConfig::default()
        };
        let store = tokio::task::spawn_blocking(move || SqliteStorage::open(config))
            .await
            .map_err(|e| format!("open sqlite: {e}"))?
            .map_err(|e| format!("open sqlite: {e}"))?;
        let store: Arc<dyn Storage> = Arc::new(store);
        let mut users = Users::new();
        for name in &fixture.expect.setup.users {
            let id = Uuid::new_v4();
            store
                .create_user(NewUser {
                    id,
                    username: name.clone(),
                    identity: NewIdentity::Device {
                        id: format!("device-{id}"),
                    },
                    now_ms: 1_700_000_000_000,
                })
                .await
                .map_err(|e| format!("create user {name}: {e}"))?;
            users.insert(name.clone(), id);
        }
        Ok(Parts {
            store,
            matches: Arc::new(FakeMatches::default()),
            users,
            dir,
        })
    }

    pub async fn start_runtime(
        self,
        fixture: &Fixture,
        engines: &[Engine],
    ) -> Result<Rig, StartError> {
        let setup = &fixture.expect.setup;
        let indexes = Arc::new(metafi_core::storage_index::StorageIndexes::new(
            self.store.clone(),
        ));
        let services = RuntimeServices::new(
            Arc::new(
                Objects::new(self.store.clone(), Arc::new(SystemClock))
                    .with_indexes(indexes.clone()),
            ),
            self.store.clone(),
            self.matches.clone(),
            Arc::new(SystemClock),
        )
        .with_accounts(account_services(&self.store).await?)
        .with_wallets(Arc::new(
            Wallets::new(self.store.clone(), Arc::new(SystemClock)).with_indexes(indexes),
        ))
        .with_leaderboards(Arc::new(
            metafi_core::Leaderboards::load(self.store.clone(), Arc::new(SystemClock))
                .await
                .map_err(|e| StartError::Other(format!("leaderboards: {e}")))?,
        ));
        let pool = PoolConfig {
            vms: setup.vms,
            max_calls_per_vm: setup.max_calls_per_vm,
            queue_capacity: setup.queue_capacity,
        };
        let config = RuntimeConfig {
            path: fixture.modules_dir(),
            node: NODE.into(),
            env: HashMap::from([("region".to_owned(), "eu".to_owned())]),
            call_timeout: Duration::from_millis(setup.call_timeout_ms),
            load_timeout: Duration::from_secs(5),
            memory_limit_bytes: setup.memory_limit_bytes,
            pools: HashMap::from([("lua".to_owned(), pool), ("js".to_owned(), pool)]),
        };
        let mut builder = RuntimeBuilder::new(config, services);
        if !setup.inline {
            builder = builder.inline_vms(0);
        }
        for engine in engines {
            builder = match engine {
                Engine::Lua => builder.engine(Arc::new(LuaEngine::new()) as Arc<dyn EngineFactory>),
                Engine::Js => builder.engine(Arc::new(JsEngine::new()) as Arc<dyn EngineFactory>),
                Engine::Native => {
                    let module = super::native::module(&fixture.name).ok_or_else(|| {
                        StartError::Other(format!(
                            "the fixture names the native engine, but tests/support/native.rs has no \
                             module for '{}'",
                            fixture.name
                        ))
                    })?;
                    builder.native(module)
                }
            };
        }
        let runtime = builder.start().await.map_err(StartError::Load)?;
        Ok(Rig {
            runtime,
            store: self.store,
            matches: self.matches,
            users: self.users,
            _dir: self.dir,
        })
    }
}

/// The caller `as = NAME` stands for.
pub fn caller(users: &Users, name: &str, session: Uuid) -> Result<RpcUser, String> {
    let id = users
        .get(name)
        .ok_or_else(|| format!("as = {name:?} is not in setup.users"))?;
    Ok(RpcUser {
        user_id: *id,
        username: name.to_owned(),
        session_id: session,
        vars: [("k".to_owned(), "v".to_owned())].into(),
        expires_at: 1_900_000_000,
    })
}

/// The account, user and session services the `nk` account functions use, as the server
/// builds them (cheap bcrypt: tests only).
async fn account_services(store: &Arc<dyn Storage>) -> Result<AccountServices, StartError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let revocations = Revocations::load(store.clone(), clock.now_ms())
        .await
        .map_err(|e| StartError::Other(format!("session revocations: {e}")))?;
    let sessions = Arc::new(Sessions::new(
        TokenKeys::new(b"conformance-session-key", b"conformance-refresh-key"),
        SessionsConfig {
            token_expiry_sec: 60,
            refresh_token_expiry_sec: 3600,
        },
        revocations,
        store.clone(),
        clock.clone(),
    ));
    let accounts = Arc::new(Accounts::new(
        store.clone(),
        &AccountsConfig {
            bcrypt_cost: 4,
            max_concurrent_hashes: 2,
            max_exported_objects: 100,
        },
        clock,
    ));
    let users = Arc::new(metafi_core::Users::new(
        store.clone(),
        Arc::new(NobodyOnline),
    ));
    Ok(AccountServices {
        accounts,
        sessions,
        users,
    })
}

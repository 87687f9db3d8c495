//! What the `nk` row tests share: the account services over a fresh SQLite store, and calling
//! a row as Lua or JavaScript calls it.

#![allow(dead_code)] // each test file uses a different part of this module

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{
    Accounts, AccountsConfig, Clock, NobodyOnline, Objects, Revocations, Sessions, SessionsConfig,
    SystemClock, TokenKeys, Users,
};
use metafi_runtime::nk_api::{Naming, NkArgs, NkCall, NkError, NkValue, js_function, lua_function};
use metafi_runtime::testing::FakeMatches;
use metafi_runtime::{AccountServices, Nk, RuntimeServices};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

/// The services of an `nk` under test, before any optional one is added.
pub struct Rig {
    pub services: RuntimeServices,
    pub sessions: Arc<Sessions>,
    pub store: Arc<dyn Storage>,
    pub clock: Arc<dyn Clock>,
    pub dir: tempfile::TempDir,
}

/// Objects, accounts, sessions and users over a fresh SQLite store (bcrypt cost 4; one
/// exported object, so the export test sees the bound apply).
pub async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(
        tokio::task::spawn_blocking(move || SqliteStorage::open(config))
            .await
            .unwrap()
            .unwrap(),
    );
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let revocations = Revocations::load(store.clone(), clock.now_ms())
        .await
        .unwrap();
    let sessions = Arc::new(Sessions::new(
        TokenKeys::new(b"session-key", b"refresh-key"),
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
            max_exported_objects: 1,
        },
        clock.clone(),
    ));
    let users = Arc::new(Users::new(store.clone(), Arc::new(NobodyOnline)));
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store.clone(),
        Arc::new(FakeMatches::default()),
        clock.clone(),
    )
    .with_accounts(AccountServices {
        accounts,
        sessions: sessions.clone(),
        users,
    });
    Rig {
        services,
        sessions,
        store,
        clock,
        dir,
    }
}

/// The `nk` of a node named "node" without environment variables.
pub fn nk(services: RuntimeServices) -> Nk {
    Nk::new(services, Arc::from("node"), Arc::new(HashMap::new()))
}

/// Calls row `name` as `naming`'s language would.
pub async fn call_as(
    nk: &Nk,
    naming: Naming,
    name: &str,
    args: Vec<NkValue>,
) -> Result<NkValue, NkError> {
    let row = match naming {
        Naming::Snake => lua_function(name),
        Naming::Camel => js_function(name),
    }
    .unwrap_or_else(|| panic!("no row named {name}"));
    let args = NkArgs::new(naming, args);
    match row.call {
        NkCall::Sync(f) => f(nk, args),
        NkCall::Async(f) => f(nk.clone(), args).await,
        NkCall::Unserved(why) => Err(why.error(name)),
    }
}

/// Calls row `name` from Lua: its error as Lua sees it.
pub async fn lua(nk: &Nk, name: &str, args: Vec<NkValue>) -> Result<NkValue, String> {
    call_as(nk, Naming::Snake, name, args)
        .await
        .map_err(|e| e.lua_message(name))
}

pub fn s(text: &str) -> NkValue {
    NkValue::from(text)
}

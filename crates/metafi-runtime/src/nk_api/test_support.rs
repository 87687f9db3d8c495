//! Host-level test support for the binding table: an `Nk` over a fresh SQLite store and a
//! manual clock, and calls through a row exactly as an engine makes them.

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{ManualClock, Objects};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

use super::Naming;
use super::{NkArgs, NkCall, NkError, NkValue, UtilityConfig, js_function, lua_function};
use crate::nk::{Nk, RuntimeServices};
use crate::testing::FakeMatches;

/// An `Nk` and what a test may steer: its clock, its store's directory.
pub(crate) struct TestNk {
    pub nk: Nk,
    pub clock: Arc<ManualClock>,
    pub _dir: tempfile::TempDir,
}

/// Start of the manual clock: 2023-11-14T22:13:20Z.
pub(crate) const T0_MS: i64 = 1_700_000_000_000;

pub(crate) async fn nk_with(utilities: UtilityConfig) -> TestNk {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(
        tokio::task::spawn_blocking(move || SqliteStorage::open(config))
            .await
            .expect("open task")
            .expect("a SQLite store"),
    );
    let clock = Arc::new(ManualClock::new(T0_MS));
    let leaderboards = Arc::new(
        metafi_core::Leaderboards::load(store.clone(), clock.clone())
            .await
            .expect("leaderboards"),
    );
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store,
        Arc::new(FakeMatches::default()),
        clock.clone(),
    )
    .with_utilities(utilities)
    .with_leaderboards(leaderboards);
    let nk = Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new()));
    TestNk {
        nk,
        clock,
        _dir: dir,
    }
}

/// Calls the row named `name` in the language `naming` stands for, as an engine does.
pub(crate) async fn on(
    nk: &Nk,
    naming: Naming,
    name: &str,
    args: Vec<NkValue>,
) -> Result<NkValue, NkError> {
    let row = match naming {
        Naming::Snake => lua_function(name),
        Naming::Camel => js_function(name),
    };
    let row = row.unwrap_or_else(|| panic!("no row is called {name} in {naming:?}"));
    let args = NkArgs::new(naming, args);
    match row.call {
        NkCall::Sync(f) => f(nk, args),
        NkCall::Async(f) => f(nk.clone(), args).await,
        NkCall::Unserved(why) => Err(why.error(name)),
    }
}

/// Calls Lua's `name` on a fresh `Nk` with the default settings.
pub(crate) async fn lua(name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    let nk = nk_with(UtilityConfig::default()).await;
    on(&nk.nk, Naming::Snake, name, args).await
}

/// Calls JavaScript's `name` on a fresh `Nk` with the default settings.
pub(crate) async fn js(name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    let nk = nk_with(UtilityConfig::default()).await;
    on(&nk.nk, Naming::Camel, name, args).await
}

/// Same as [`lua`].
pub(crate) async fn call(name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    lua(name, args).await
}

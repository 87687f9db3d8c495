//! Storage indexes and their filters as modules register them (`register_storage_index`,
//! `register_storage_index_filter`; JS `initializer.registerStorageIndex…`; native
//! [`crate::NativeInitializer::register_storage_index`]), installed into the node's
//! [`StorageIndexes`](metafi_core::storage_index::StorageIndexes) once every runtime loaded, which then fills them from storage.
//!
//! A script filter is stored like a hook, under a reserved id ([`filter_key`]); the host calls
//! it with the candidate object as JSON in the engine's naming (Lua `user_id`, JS `userId`),
//! and the engine's wrapper answers `"true"`, `"false"`, `""` (nothing returned) or `"?"` (not
//! a boolean), which become Nakama's outcomes and errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use metafi_core::hooks::HookFuture;
use metafi_core::storage_index::{IndexDefinition, IndexFilter};
use metafi_storage::StorageObject;
use serde_json::{Value as Json, json};

use crate::context::{CallContext, ExecutionMode};
use crate::error::LoadError;
use crate::host::Registrations;
use crate::nk::Nk;
use crate::pool::VmPool;

/// Prefix of the reserved ids of script filters.
pub const FILTER_KEY_PREFIX: &str = "\u{1}storageindexfilter:";

/// The reserved id of index `name`'s filter (lower case, as Nakama keys callbacks).
pub fn filter_key(name: &str) -> String {
    format!("{FILTER_KEY_PREFIX}{}", name.to_lowercase())
}

/// A native filter: the candidate object in, whether it enters the index out.
pub type NativeIndexFilter =
    Arc<dyn Fn(Arc<CallContext>, Nk, StorageObject) -> BoxFuture<'static, bool> + Send + Sync>;

/// What the runtimes registered, collected while they start.
#[derive(Default)]
pub(crate) struct IndexSetup {
    /// Definitions with the runtime and module that registered each.
    definitions: Vec<(&'static str, String, IndexDefinition)>,
    /// Filters by index name (lower case); the first runtime's wins (native, Lua, JS).
    filters: Vec<(String, FilterTarget)>,
}

enum FilterTarget {
    Native(NativeIndexFilter),
    Pool { pool: Arc<VmPool>, key: Arc<str> },
}

impl IndexSetup {
    pub(crate) fn add_native(
        &mut self,
        module: &'static str,
        definitions: Vec<IndexDefinition>,
        filters: Vec<(String, NativeIndexFilter)>,
    ) {
        for definition in definitions {
            self.definitions
                .push(("native", module.to_owned(), definition));
        }
        for (name, filter) in filters {
            self.add_filter(name.to_lowercase(), FilterTarget::Native(filter));
        }
    }

    /// Whether a VM registered a storage index filter.
    pub(crate) fn has_filters(registrations: &Registrations) -> bool {
        registrations
            .rpcs
            .iter()
            .any(|r| r.id.starts_with(FILTER_KEY_PREFIX))
    }

    /// The indexes and filters VM 0 of an engine registered; `pool` runs the filters.
    pub(crate) fn add_pool(&mut self, pool: &Arc<VmPool>, registrations: &Registrations) {
        for registered in &registrations.storage_indexes {
            self.definitions.push((
                pool.engine(),
                registered.module.clone(),
                registered.definition.clone(),
            ));
        }
        for registered in &registrations.rpcs {
            if let Some(name) = registered.id.strip_prefix(FILTER_KEY_PREFIX) {
                self.add_filter(
                    name.to_owned(),
                    FilterTarget::Pool {
                        pool: pool.clone(),
                        key: Arc::from(registered.id.as_str()),
                    },
                );
            }
        }
    }

    fn add_filter(&mut self, name: String, target: FilterTarget) {
        if self.filters.iter().any(|(n, _)| *n == name) {
            tracing::warn!(index = %name, "a storage index filter is registered by two runtimes; the first (native, then Lua, then JavaScript) runs");
            return;
        }
        self.filters.push((name, target));
    }

    /// Defines every index, sets the filters, and fills the indexes from storage. A server
    /// without storage indexes (no objects service) only accepts a module with none.
    pub(crate) async fn install(
        self,
        nk: &Nk,
        call_timeout: Duration,
        ctx: Arc<CallContext>,
    ) -> Result<(), LoadError> {
        if self.definitions.is_empty() && self.filters.is_empty() {
            return Ok(());
        }
        let Some(indexes) = nk.index_service() else {
            return Err(LoadError::Engine {
                engine: self.definitions.first().map_or("native", |d| d.0),
                message: "modules register storage indexes, but this server runs without them"
                    .into(),
            });
        };
        for (runtime, module, definition) in self.definitions {
            indexes.define(definition).map_err(|e| LoadError::Engine {
                engine: runtime,
                message: format!("module {module}: failed to create storage index: {e}"),
            })?;
        }
        let names = indexes.names();
        for (name, target) in self.filters {
            let Some(index) = names.iter().find(|n| n.to_lowercase() == name).cloned() else {
                tracing::warn!(index = %name, "a storage index filter is registered for an index no module registered: it will never be called");
                continue;
            };
            let filter: Arc<dyn IndexFilter> = match target {
                FilterTarget::Native(function) => Arc::new(NativeFilter {
                    function,
                    nk: nk.clone(),
                    ctx: filter_context(&ctx),
                }),
                FilterTarget::Pool { pool, key } => Arc::new(PoolFilter {
                    js: pool.engine() == "js",
                    pool,
                    key,
                    index: index.clone(),
                    ctx: filter_context(&ctx),
                    timeout: call_timeout,
                }),
            };
            indexes.set_filter(&index, filter);
        }
        indexes.load().await.map_err(|e| LoadError::Engine {
            engine: "storage",
            message: format!("failed to load storage indexes: {e}"),
        })
    }
}

fn filter_context(base: &CallContext) -> Arc<CallContext> {
    Arc::new(CallContext {
        mode: ExecutionMode::StorageIndexFilter,
        ..base.clone()
    })
}

struct NativeFilter {
    function: NativeIndexFilter,
    nk: Nk,
    ctx: Arc<CallContext>,
}

impl IndexFilter for NativeFilter {
    fn admit<'a>(&'a self, object: &'a StorageObject) -> HookFuture<'a, Result<bool, String>> {
        let call = (self.function)(self.ctx.clone(), self.nk.clone(), object.clone());
        Box::pin(async move { Ok(call.await) })
    }
}

struct PoolFilter {
    pool: Arc<VmPool>,
    key: Arc<str>,
    index: String,
    js: bool,
    ctx: Arc<CallContext>,
    timeout: Duration,
}

impl IndexFilter for PoolFilter {
    fn admit<'a>(&'a self, object: &'a StorageObject) -> HookFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let payload = filter_payload(object, self.js).to_string();
            let started = Instant::now();
            let outcome = tokio::time::timeout(
                self.timeout,
                self.pool.call(self.key.clone(), self.ctx.clone(), payload),
            )
            .await;
            let language = if self.js { "js" } else { "lua" };
            let result = match outcome {
                Ok(Ok(Ok(answer))) => match answer.as_str() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    "" => Err(
                        "Invalid return type for Storage Index Filter function: bool expected"
                            .to_owned(),
                    ),
                    _ => Err(format!(
                        "Error running runtime Storage Index Filter hook for {:?} index: failed to assert {language} fn expected return type",
                        self.index
                    )),
                },
                Ok(Ok(Err(e))) => Err(format!(
                    "Error running runtime Storage Index Filter hook for {:?} index: {e:?}",
                    self.index
                )),
                Ok(Err(e)) => Err(format!("{e:?}")),
                Err(_) => Err("did not finish within the call timeout".to_owned()),
            };
            metrics::histogram!("metafi_runtime_hook_duration_seconds", "id" => "storage_index_filter", "mode" => "storage_index_filter", "runtime" => language)
                .record(started.elapsed().as_secs_f64());
            result
        })
    }
}

/// The candidate write as Nakama hands it to a filter: Lua with snake_case names, JavaScript
/// with camelCase; the value decoded.
fn filter_payload(object: &StorageObject, js: bool) -> Json {
    let value: Json = serde_json::from_str(&object.value).unwrap_or_else(|_| json!({}));
    let (user_id, read, write) = if js {
        ("userId", "permissionRead", "permissionWrite")
    } else {
        ("user_id", "permission_read", "permission_write")
    };
    let mut map = serde_json::Map::new();
    map.insert("key".into(), object.key.clone().into());
    map.insert("collection".into(), object.collection.clone().into());
    map.insert(user_id.into(), object.user_id.to_string().into());
    map.insert("version".into(), object.version.clone().into());
    map.insert(read.into(), object.permission_read.into());
    map.insert(write.into(), object.permission_write.into());
    map.insert("value".into(), value);
    Json::Object(map)
}

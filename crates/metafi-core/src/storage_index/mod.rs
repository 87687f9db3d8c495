//! Storage indexes (Nakama's `register_storage_index` / `storage_index_list`): searchable,
//! bounded in-memory views of one collection's objects, kept current as objects are written
//! and deleted, and listed with the query language of match listings ([`crate::search`]).
//!
//! - Server code registers an index while modules load ([`StorageIndexes::define`]), and
//!   optionally a filter that decides whether an object enters it ([`IndexFilter`]).
//! - After the modules loaded, [`StorageIndexes::load`] fills each index from storage (up to
//!   `max_entries` objects).
//! - Every write and delete of storage objects through [`crate::Objects`] and
//!   [`crate::Wallets::multi_update`] (REST, socket, `nk`) passes here after it commits
//!   ([`StorageIndexes::written`], [`StorageIndexes::deleted`]).
//! - [`StorageIndexes::list`] answers a query: from the index alone (`index_only`: the value
//!   holds the indexed keys only) or by reading the listed objects from storage with the
//!   caller's permissions, as Nakama does.
//!
//! Must not depend on: script engines (filters come through [`IndexFilter`]).

mod cursor;
mod definition;
mod entries;

use std::collections::HashMap;
use std::sync::Arc;

use metafi_storage::{
    Caller, ObjectAck, ObjectDelete, ObjectId, ObjectWrite, Storage, StorageObject,
};
use parking_lot::RwLock;
use uuid::Uuid;

use crate::CoreError;
use crate::hooks::HookFuture;
use crate::search::Query;
use cursor::ListCursor;
pub use definition::IndexDefinition;
use entries::{Entries, Entry};

/// Objects read per page while an index fills from storage at start.
const LOAD_PAGE: usize = 1_000;

/// Server code's say on whether an object enters an index (`register_storage_index_filter`):
/// `true` indexes it, `false` removes it from the index; an error is logged and the object
/// left as it was, as Nakama does.
pub trait IndexFilter: Send + Sync {
    fn admit<'a>(&'a self, object: &'a StorageObject) -> HookFuture<'a, Result<bool, String>>;
}

/// A listing request (`storage_index_list`).
#[derive(Debug, Clone, Default)]
pub struct IndexQuery {
    pub index: String,
    /// Query string; empty or `*` lists everything.
    pub query: String,
    /// Page size; the edges check Nakama's bounds (1..=10,000).
    pub limit: usize,
    /// Sortable fields, `-field` for descending.
    pub order: Vec<String>,
    /// With a caller, only objects it may read are returned; without, server code sees all.
    pub caller: Option<Uuid>,
    pub cursor: Option<String>,
}

/// A page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPage {
    pub objects: Vec<StorageObject>,
    /// The next page's cursor; `None` on the last page.
    pub cursor: Option<String>,
}

/// Every storage index of this node.
pub struct StorageIndexes {
    store: Arc<dyn Storage>,
    /// Few (registered at start) and read on every storage write, so a plain list.
    indexes: RwLock<Vec<Arc<Index>>>,
}

struct Index {
    definition: IndexDefinition,
    max_entries: usize,
    filter: RwLock<Option<Arc<dyn IndexFilter>>>,
    entries: RwLock<Entries>,
}

impl std::fmt::Debug for StorageIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageIndexes")
            .field(
                "indexes",
                &self
                    .indexes
                    .read()
                    .iter()
                    .map(|i| i.definition.name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl StorageIndexes {
    pub fn new(store: Arc<dyn Storage>) -> Self {
        StorageIndexes {
            store,
            indexes: RwLock::new(Vec::new()),
        }
    }

    /// Registers an index, with Nakama's checks and messages.
    pub fn define(&self, definition: IndexDefinition) -> Result<(), String> {
        definition.check()?;
        let mut indexes = self.indexes.write();
        if indexes.iter().any(|i| i.definition.name == definition.name) {
            return Err(definition::duplicate(&definition.name));
        }
        tracing::info!(
            name = %definition.name,
            collection = %definition.collection,
            key = if definition.key.is_empty() { "*" } else { definition.key.as_str() },
            fields = ?definition.fields,
            max_entries = definition.max_entries,
            index_only = definition.index_only,
            "initialized storage index"
        );
        indexes.push(Arc::new(Index {
            max_entries: usize::try_from(definition.max_entries).unwrap_or(usize::MAX),
            definition,
            filter: RwLock::new(None),
            entries: RwLock::new(Entries::default()),
        }));
        Ok(())
    }

    /// Sets the filter of index `name`; `false` when no such index is registered.
    pub fn set_filter(&self, name: &str, filter: Arc<dyn IndexFilter>) -> bool {
        match self.find(name) {
            Some(index) => {
                *index.filter.write() = Some(filter);
                true
            }
            None => false,
        }
    }

    /// The registered indexes' names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.indexes
            .read()
            .iter()
            .map(|i| i.definition.name.clone())
            .collect()
    }

    /// Entries index `name` holds now.
    pub fn len(&self, name: &str) -> Option<usize> {
        self.find(name).map(|i| i.entries.read().len())
    }

    fn find(&self, name: &str) -> Option<Arc<Index>> {
        self.indexes
            .read()
            .iter()
            .find(|i| i.definition.name == name)
            .cloned()
    }

    /// The indexes that take an object of `collection` with `key`.
    fn taking(&self, collection: &str, key: &str) -> Vec<Arc<Index>> {
        let indexes = self.indexes.read();
        if indexes.is_empty() {
            return Vec::new();
        }
        indexes
            .iter()
            .filter(|i| i.definition.takes(collection, key))
            .cloned()
            .collect()
    }

    /// Fills every index from storage (after the modules registered them and their filters).
    pub async fn load(&self) -> Result<(), CoreError> {
        let indexes: Vec<Arc<Index>> = self.indexes.read().clone();
        for index in indexes {
            let started = std::time::Instant::now();
            let mut cursor: Option<String> = None;
            let mut count = 0usize;
            'pages: loop {
                let page = self
                    .store
                    .list_objects(
                        Caller::Server,
                        &index.definition.collection,
                        None,
                        LOAD_PAGE,
                        cursor.as_deref(),
                    )
                    .await
                    .map_err(|e| CoreError::storage("loading a storage index", e))?;
                for object in &page.objects {
                    if !index.definition.takes(&object.collection, &object.key) {
                        continue;
                    }
                    if index.apply(object).await == Applied::Indexed {
                        count += 1;
                        if count >= index.max_entries {
                            break 'pages;
                        }
                    }
                }
                match page.cursor {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => break,
                }
            }
            index.publish_len();
            tracing::info!(
                index = %index.definition.name,
                entries = count,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "storage index loaded"
            );
        }
        Ok(())
    }

    /// Objects just written (committed): each index that takes one re-indexes it (or, if its
    /// filter refuses it or its value lost every indexed key, drops it).
    pub async fn written(&self, objects: &[StorageObject]) {
        for object in objects {
            for index in self.taking(&object.collection, &object.key) {
                index.apply(object).await;
                index.evict();
                index.publish_len();
            }
        }
    }

    /// Whether any index is registered (deletes need not be kept for it otherwise).
    pub fn is_active(&self) -> bool {
        !self.indexes.read().is_empty()
    }

    /// The writes of a batch some index takes, with their positions in the batch (their
    /// acknowledgements' positions): all a write must keep for [`StorageIndexes::committed`],
    /// so a write to a collection no index names copies nothing.
    pub fn pick(&self, writes: &[ObjectWrite]) -> Vec<(usize, ObjectWrite)> {
        let indexes = self.indexes.read();
        if indexes.is_empty() {
            return Vec::new();
        }
        writes
            .iter()
            .enumerate()
            .filter(|(_, w)| {
                indexes
                    .iter()
                    .any(|i| i.definition.takes(&w.collection, &w.key))
            })
            .map(|(at, w)| (at, w.clone()))
            .collect()
    }

    /// A committed batch: the writes [`StorageIndexes::pick`] kept and the batch's `acks`, then
    /// `deletes`.
    pub async fn committed(
        &self,
        picked: &[(usize, ObjectWrite)],
        acks: &[ObjectAck],
        deletes: &[ObjectDelete],
    ) {
        let objects: Vec<StorageObject> = picked
            .iter()
            .filter_map(|(at, w)| Some((w, acks.get(*at)?)))
            .filter(|(w, a)| {
                w.collection == a.collection && w.key == a.key && w.user_id == a.user_id
            })
            .map(|(w, a)| StorageObject {
                collection: w.collection.clone(),
                key: w.key.clone(),
                user_id: w.user_id,
                value: w.value.clone(),
                version: a.version.clone(),
                permission_read: w.permission_read,
                permission_write: w.permission_write,
                create_time_ms: a.create_time_ms,
                update_time_ms: a.update_time_ms,
            })
            .collect();
        self.written(&objects).await;
        self.deleted(
            deletes
                .iter()
                .map(|d| (d.collection.as_str(), d.key.as_str(), d.user_id)),
        );
    }

    /// Objects just deleted (committed): `(collection, key, owner)`.
    pub fn deleted<'a>(&self, ids: impl IntoIterator<Item = (&'a str, &'a str, Uuid)>) {
        for (collection, key, user_id) in ids {
            for index in self.taking(collection, key) {
                if index.entries.write().remove(key, user_id) {
                    index.publish_len();
                }
            }
        }
    }

    /// Lists index entries matching a query, with Nakama's ordering, cursor and permissions.
    pub async fn list(&self, request: IndexQuery) -> Result<IndexPage, CoreError> {
        let index = self
            .find(&request.index)
            .ok_or_else(|| CoreError::invalid(format!("index {:?} not found", request.index)))?;
        let definition = &index.definition;
        if request.limit > index.max_entries {
            tracing::warn!(index = %definition.name, limit = request.limit, max_entries = definition.max_entries, "attempted to list more index entries than the index keeps");
        }
        let query_text = if request.query.is_empty() {
            "*".to_owned()
        } else {
            request.query.clone()
        };
        let offset = match request.cursor.as_deref().filter(|c| !c.is_empty()) {
            Some(text) => {
                ListCursor::decode(text, &query_text, request.limit, &request.order)
                    .map_err(CoreError::invalid)?
                    .offset
            }
            None => 0,
        };
        let query = Query::parse(&query_text).map_err(|e| CoreError::invalid(e.to_string()))?;
        let order = entries::sort_keys(definition, &request.order).map_err(CoreError::invalid)?;
        metrics::counter!("metafi_storage_index_queries_total", "index" => definition.name.clone())
            .increment(1);
        let mut found =
            index
                .entries
                .read()
                .search(&query, &order, offset, request.limit.saturating_add(1));
        let cursor = (found.len() > request.limit).then(|| {
            found.truncate(request.limit);
            ListCursor {
                query: query_text,
                offset: offset + request.limit,
                limit: request.limit,
                order: request.order.clone(),
            }
            .encode()
        });
        let objects = if definition.index_only {
            found
                .into_iter()
                .filter(|e| match request.caller {
                    // Nakama's rule for index-only results: public, or the caller's own.
                    Some(caller) => e.permission_read == 2 || e.user_id == caller,
                    None => true,
                })
                .map(|e| index_only_object(definition, e))
                .collect()
        } else {
            self.read_listed(&index, found, request.caller).await?
        };
        Ok(IndexPage { objects, cursor })
    }

    /// Reads the listed objects from storage as the caller, in the index's order; objects
    /// whose version moved on are re-indexed (Nakama's repair of a stale entry).
    async fn read_listed(
        &self,
        index: &Index,
        found: Vec<Entry>,
        caller: Option<Uuid>,
    ) -> Result<Vec<StorageObject>, CoreError> {
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let collection = &index.definition.collection;
        let ids: Vec<ObjectId> = found
            .iter()
            .map(|e| ObjectId {
                collection: collection.clone(),
                key: e.key.clone(),
                user_id: e.user_id,
            })
            .collect();
        let caller = caller.map_or(Caller::Server, Caller::User);
        let read = self
            .store
            .read_objects(caller, &ids)
            .await
            .map_err(|e| CoreError::storage("reading indexed storage objects", e))?;
        let mut by_id: HashMap<(String, Uuid), StorageObject> = read
            .into_iter()
            .map(|o| ((o.key.clone(), o.user_id), o))
            .collect();
        let mut objects = Vec::with_capacity(found.len());
        let mut stale = Vec::new();
        for entry in found {
            if let Some(object) = by_id.remove(&(entry.key, entry.user_id)) {
                if object.version != entry.version {
                    stale.push(object.clone());
                }
                objects.push(object);
            }
        }
        if !stale.is_empty() {
            self.written(&stale).await;
        }
        Ok(objects)
    }
}

/// The object an index-only listing returns: what the index kept.
fn index_only_object(definition: &IndexDefinition, entry: Entry) -> StorageObject {
    StorageObject {
        collection: definition.collection.clone(),
        key: entry.key,
        user_id: entry.user_id,
        value: entry.value.unwrap_or_else(|| "{}".to_owned()),
        version: entry.version,
        permission_read: entry.permission_read,
        permission_write: entry.permission_write,
        create_time_ms: entry.create_time_ms,
        update_time_ms: entry.update_time_ms,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    Indexed,
    Removed,
    Unchanged,
}

impl Index {
    /// Runs the filter, then indexes or removes `object`.
    async fn apply(&self, object: &StorageObject) -> Applied {
        let filter = self.filter.read().clone();
        if let Some(filter) = filter {
            match filter.admit(object).await {
                Ok(true) => {}
                Ok(false) => {
                    self.entries.write().remove(&object.key, object.user_id);
                    return Applied::Removed;
                }
                Err(error) => {
                    tracing::error!(index = %self.definition.name, %error, "error invoking the storage index filter function");
                    return Applied::Unchanged;
                }
            }
        }
        match entries::entry(&self.definition, object) {
            Some(entry) => {
                let mut entries = self.entries.write();
                // A write that lost a race to a newer one of the same object is not indexed
                // over it.
                if entries.has_newer(&entry) {
                    return Applied::Unchanged;
                }
                entries.upsert(entry);
                Applied::Indexed
            }
            None => {
                // Nakama keeps the old entry of an object whose value no longer has any
                // indexed key; MetaFi drops it, so a query never finds what is not there.
                self.entries.write().remove(&object.key, object.user_id);
                Applied::Removed
            }
        }
    }

    fn evict(&self) {
        let evicted = self.entries.write().evict(self.max_entries);
        if evicted > 0 {
            metrics::counter!("metafi_storage_index_evictions_total", "index" => self.definition.name.clone())
                .increment(evicted as u64);
        }
    }

    fn publish_len(&self) {
        let len = self.entries.read().len();
        metrics::gauge!("metafi_storage_index_entries", "index" => self.definition.name.clone())
            .set(len as f64);
    }
}

#[cfg(test)]
mod tests;

//! The local cache: `localcache_get`, `localcache_put`, `localcache_delete`,
//! `localcache_clear`. One per process and language, as Nakama's (Lua's and JavaScript's do
//! not share entries), shared by every VM of that language.
//!
//! Unlike Nakama's it is bounded: at `runtime.local_cache_max_entries` entries, or past
//! `runtime.local_cache_max_bytes` bytes of values (estimated), a put first drops expired
//! entries, then evicts the entries written longest ago; a single value over the byte bound
//! fails the put. TTLs are seconds
//! on the runtime's clock; expired entries are never returned.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("localcache_get"),
        js: Some("localcacheGet"),
        call: NkCall::Sync(localcache_get),
    },
    NkFunction {
        lua: Some("localcache_put"),
        js: Some("localcachePut"),
        call: NkCall::Sync(localcache_put),
    },
    NkFunction {
        lua: Some("localcache_delete"),
        js: Some("localcacheDelete"),
        call: NkCall::Sync(localcache_delete),
    },
    NkFunction {
        lua: Some("localcache_clear"),
        js: Some("localcacheClear"),
        call: NkCall::Sync(localcache_clear),
    },
];

/// A bounded key-value cache with per-entry expiry.
#[derive(Debug)]
pub struct LocalCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// Keys by write order (`seq`), oldest first: what to evict.
    order: BTreeMap<u64, String>,
    next_seq: u64,
    /// Sum of the entries' `bytes`.
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    value: NkValue,
    /// Milliseconds since the epoch; `None`: never expires.
    expires_at_ms: Option<i64>,
    seq: u64,
    /// Key and value size, estimated ([`NkValue::approx_bytes`]).
    bytes: usize,
}

impl Entry {
    fn live(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_none_or(|at| at > now_ms)
    }
}

impl LocalCache {
    pub fn new(max_entries: usize, max_bytes: usize) -> LocalCache {
        LocalCache {
            max_entries: max_entries.max(1),
            max_bytes: max_bytes.max(1),
            inner: Mutex::new(Entries::default()),
        }
    }

    pub fn get(&self, key: &str, now_ms: i64) -> Option<NkValue> {
        let mut entries = self.inner.lock();
        match entries.map.get(key) {
            Some(entry) if entry.live(now_ms) => Some(entry.value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value`; `ttl_sec` 0 keeps it until deleted or evicted. A value larger than
    /// the cache's byte bound is refused with the reason.
    pub fn put(&self, key: &str, value: NkValue, ttl_sec: i64, now_ms: i64) -> Result<(), String> {
        let bytes = key.len() + value.approx_bytes();
        if bytes > self.max_bytes {
            return Err(format!(
                "value too large for the local cache: about {bytes} bytes, the cache holds {} \
                 (runtime.local_cache_max_bytes)",
                self.max_bytes
            ));
        }
        let expires_at_ms =
            (ttl_sec > 0).then(|| now_ms.saturating_add(ttl_sec.saturating_mul(1000)));
        let mut entries = self.inner.lock();
        entries.remove(key);
        let full = |entries: &Entries| {
            entries.map.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes
        };
        if full(&entries) {
            // One pass over a full cache (tens of microseconds at 10,000 entries).
            let expired: Vec<String> = entries
                .map
                .iter()
                .filter(|(_, entry)| !entry.live(now_ms))
                .map(|(key, _)| key.clone())
                .collect();
            for key in expired {
                entries.remove(&key);
            }
        }
        while full(&entries) {
            let Some(oldest) = entries.order.first_key_value().map(|(_, key)| key.clone()) else {
                break;
            };
            entries.remove(&oldest);
            metrics::counter!("metafi_runtime_local_cache_evictions_total").increment(1);
        }
        let seq = entries.next_seq;
        entries.next_seq += 1;
        entries.order.insert(seq, key.to_owned());
        entries.bytes += bytes;
        entries.map.insert(
            key.to_owned(),
            Entry {
                value,
                expires_at_ms,
                seq,
                bytes,
            },
        );
        Ok(())
    }

    pub fn delete(&self, key: &str) {
        self.inner.lock().remove(key);
    }

    pub fn clear(&self) {
        let mut entries = self.inner.lock();
        entries.map.clear();
        entries.order.clear();
        entries.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Entries {
    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.map.remove(key) {
            self.order.remove(&entry.seq);
            self.bytes -= entry.bytes;
        }
    }
}

/// This language's cache: Lua (and native Rust, which spells as Lua does) or JavaScript.
fn cache<'a>(nk: &'a Nk, args: &NkArgs) -> &'a LocalCache {
    let state = nk.utilities();
    if args.is_js() {
        &state.js_cache
    } else {
        &state.lua_cache
    }
}

fn key(args: &NkArgs) -> Result<&str, NkError> {
    let message = if args.is_js() {
        "expects non empty key string"
    } else {
        "expects key string"
    };
    args.at(1).non_empty(message)
}

/// `(key, default)`: the cached value, else `default` (nil when absent).
fn localcache_get(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let key = key(&args)?;
    Ok(cache(nk, &args)
        .get(key, nk.time_ms())
        .unwrap_or_else(|| args.at(2).value.clone()))
}

/// `(key, value, ttl_seconds = 0)`. JavaScript stores strings, numbers and booleans only.
fn localcache_put(nk: &Nk, mut args: NkArgs) -> Result<NkValue, NkError> {
    let key = key(&args)?.to_owned();
    let ttl_arg = args.at(3);
    let ttl = ttl_arg.opt_integer("expects number")?.unwrap_or(0);
    if ttl < 0 {
        return Err(ttl_arg.error("ttl must be 0 or more"));
    }
    if args.is_js() {
        let value = args.at(2);
        match value.value {
            NkValue::Nil => return Err(value.error("expects a non empty value")),
            NkValue::Str(_) | NkValue::Int(_) | NkValue::Float(_) | NkValue::Bool(_) => {}
            _ => {
                return Err(
                    value.error("unsupported value type: must be string, numeric or boolean")
                );
            }
        }
    }
    let value = args.take(2);
    cache(nk, &args)
        .put(&key, value, ttl, nk.time_ms())
        .map_err(NkError::failed)?;
    Ok(NkValue::Nil)
}

fn localcache_delete(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let key = key(&args)?;
    cache(nk, &args).delete(key);
    Ok(NkValue::Nil)
}

fn localcache_clear(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    cache(nk, &args).clear();
    Ok(NkValue::Nil)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::test_support::{nk_with, on};
    use crate::nk_api::{Naming, UtilityConfig};

    #[tokio::test]
    async fn put_get_delete_clear_with_default_values() {
        let t = nk_with(UtilityConfig::default()).await;
        let lua = |name, args| on(&t.nk, Naming::Snake, name, args);
        assert_eq!(
            lua("localcache_get", vec!["k".into(), "dflt".into()]).await,
            Ok("dflt".into())
        );
        let table = NkValue::from_json(&serde_json::json!({"a": [1, 2]}));
        lua("localcache_put", vec!["k".into(), table.clone()])
            .await
            .unwrap();
        assert_eq!(lua("localcache_get", vec!["k".into()]).await, Ok(table));
        lua("localcache_delete", vec!["k".into()]).await.unwrap();
        assert_eq!(
            lua("localcache_get", vec!["k".into()]).await,
            Ok(NkValue::Nil)
        );
        lua("localcache_put", vec!["a".into(), 1i64.into()])
            .await
            .unwrap();
        lua("localcache_clear", vec![]).await.unwrap();
        assert_eq!(
            lua("localcache_get", vec!["a".into()]).await,
            Ok(NkValue::Nil)
        );
    }

    #[tokio::test]
    async fn entries_expire_after_their_ttl() {
        let t = nk_with(UtilityConfig::default()).await;
        let put = vec!["k".into(), "v".into(), 10i64.into()];
        on(&t.nk, Naming::Snake, "localcache_put", put)
            .await
            .unwrap();
        t.clock.advance_ms(9_999);
        assert_eq!(
            on(&t.nk, Naming::Snake, "localcache_get", vec!["k".into()]).await,
            Ok("v".into())
        );
        t.clock.advance_ms(1);
        assert_eq!(
            on(&t.nk, Naming::Snake, "localcache_get", vec!["k".into()]).await,
            Ok(NkValue::Nil)
        );
    }

    #[tokio::test]
    async fn a_full_cache_evicts_the_oldest_entry_instead_of_growing() {
        let t = nk_with(UtilityConfig {
            local_cache_max_entries: 3,
            ..UtilityConfig::default()
        })
        .await;
        for key in ["a", "b", "c", "d"] {
            on(
                &t.nk,
                Naming::Camel,
                "localcachePut",
                vec![key.into(), key.into()],
            )
            .await
            .unwrap();
        }
        assert_eq!(t.nk.utilities().js_cache.len(), 3);
        assert_eq!(
            on(&t.nk, Naming::Camel, "localcacheGet", vec!["a".into()]).await,
            Ok(NkValue::Nil),
            "the oldest entry went"
        );
        assert_eq!(
            on(&t.nk, Naming::Camel, "localcacheGet", vec!["d".into()]).await,
            Ok("d".into())
        );
    }

    #[tokio::test]
    async fn the_byte_bound_evicts_the_oldest_and_refuses_a_value_larger_than_the_cache() {
        let t = nk_with(UtilityConfig {
            local_cache_max_bytes: 1_000,
            ..UtilityConfig::default()
        })
        .await;
        let big = "x".repeat(400);
        for key in ["a", "b", "c"] {
            on(
                &t.nk,
                Naming::Snake,
                "localcache_put",
                vec![key.into(), big.as_str().into()],
            )
            .await
            .unwrap();
        }
        assert_eq!(
            t.nk.utilities().lua_cache.len(),
            2,
            "two of 400 bytes fit 1,000"
        );
        assert_eq!(
            on(&t.nk, Naming::Snake, "localcache_get", vec!["a".into()]).await,
            Ok(NkValue::Nil),
            "the oldest entry went"
        );
        let huge = "x".repeat(2_000);
        let refused = on(
            &t.nk,
            Naming::Snake,
            "localcache_put",
            vec!["h".into(), huge.as_str().into()],
        )
        .await
        .unwrap_err();
        assert!(
            refused
                .lua_message("localcache_put")
                .contains("runtime.local_cache_max_bytes"),
            "{refused:?}"
        );
        assert_eq!(
            t.nk.utilities().lua_cache.len(),
            2,
            "a refused put evicts nothing"
        );
    }

    #[tokio::test]
    async fn lua_and_javascript_have_their_own_caches() {
        let t = nk_with(UtilityConfig::default()).await;
        on(
            &t.nk,
            Naming::Snake,
            "localcache_put",
            vec!["k".into(), 1i64.into()],
        )
        .await
        .unwrap();
        assert_eq!(
            on(&t.nk, Naming::Camel, "localcacheGet", vec!["k".into()]).await,
            Ok(NkValue::Nil)
        );
    }

    #[tokio::test]
    async fn argument_errors_are_nakamas() {
        let t = nk_with(UtilityConfig::default()).await;
        let arg = |position, message: &'static str| NkError::Arg {
            position,
            message: message.into(),
        };
        assert_eq!(
            on(&t.nk, Naming::Snake, "localcache_get", vec!["".into()]).await,
            Err(arg(1, "expects key string"))
        );
        assert_eq!(
            on(
                &t.nk,
                Naming::Snake,
                "localcache_put",
                vec!["k".into(), 1i64.into(), (-1i64).into()]
            )
            .await,
            Err(arg(3, "ttl must be 0 or more"))
        );
        assert_eq!(
            on(&t.nk, Naming::Camel, "localcachePut", vec!["k".into()]).await,
            Err(arg(2, "expects a non empty value"))
        );
        assert_eq!(
            on(
                &t.nk,
                Naming::Camel,
                "localcachePut",
                vec!["k".into(), NkValue::List(vec![])]
            )
            .await,
            Err(arg(
                2,
                "unsupported value type: must be string, numeric or boolean"
            ))
        );
    }
}

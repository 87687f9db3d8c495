//! One index's entries in memory: the documents in indexing order, a keyword posting list per
//! `(field, keyword)` so a query with a required keyword visits only its documents, and the
//! update times for eviction.
//!
//! A document is what Nakama's Bluge document holds: the object's identity, version,
//! permissions and times as fields (`collection`, `key`, `user_id`, `version`, `read`,
//! `write`, `create_time`, `update_time`), and the indexed top-level keys of its value under
//! `value.` (`value.level`, `value.tags`, `value.stats.hp`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use metafi_storage::StorageObject;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::IndexDefinition;
use crate::search::{FieldValue, Fields, Query};

/// An indexed object: what a listing answers with, and its searchable fields.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) user_id: Uuid,
    pub(crate) version: String,
    pub(crate) permission_read: u8,
    pub(crate) permission_write: u8,
    pub(crate) create_time_ms: i64,
    pub(crate) update_time_ms: i64,
    /// The indexed keys of the value as JSON text: what an index-only listing returns.
    pub(crate) value: Option<String>,
    fields: Fields,
}

/// The entry of `object` in the index `definition` describes, or `None` when its value has
/// none of the indexed keys (or is not a JSON object).
pub(crate) fn entry(definition: &IndexDefinition, object: &StorageObject) -> Option<Entry> {
    let Ok(Value::Object(value)) = serde_json::from_str::<Value>(&object.value) else {
        return None;
    };
    let kept: Map<String, Value> = definition
        .fields
        .iter()
        .filter_map(|field| value.get(field).map(|v| (field.clone(), v.clone())))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut fields = Fields::new();
    fields.keyword("collection", &object.collection);
    fields.keyword("key", &object.key);
    fields.keyword("user_id", &object.user_id.to_string());
    fields.keyword("version", &object.version);
    fields.number("read", f64::from(object.permission_read));
    fields.number("write", f64::from(object.permission_write));
    fields.number("create_time", object.create_time_ms as f64 / 1000.0);
    fields.number("update_time", object.update_time_ms as f64 / 1000.0);
    let kept = Value::Object(kept);
    fields.json("value", &kept);
    Some(Entry {
        key: object.key.clone(),
        user_id: object.user_id,
        version: object.version.clone(),
        permission_read: object.permission_read,
        permission_write: object.permission_write,
        create_time_ms: object.create_time_ms,
        update_time_ms: object.update_time_ms,
        value: definition.index_only.then(|| kept.to_string()),
        fields: fields.finish(),
    })
}

/// One `order` item: a sortable field, ascending unless written `-field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SortKey {
    field: String,
    descending: bool,
}

/// Reads `order` (Bluge's sort strings). Only fields the index keeps sortable may be named:
/// `value.<sortable field>`, `create_time`, `update_time`; Bluge would silently not sort by
/// anything else, MetaFi says so.
pub(crate) fn sort_keys(
    definition: &IndexDefinition,
    order: &[String],
) -> Result<Vec<SortKey>, String> {
    order
        .iter()
        .map(|item| {
            let (field, descending) = match item.strip_prefix('-') {
                Some(field) => (field, true),
                None => (item.as_str(), false),
            };
            let sortable = matches!(field, "create_time" | "update_time")
                || field.strip_prefix("value.").is_some_and(|name| {
                    definition.sortable_fields.iter().any(|s| s == name)
                });
            if !sortable {
                return Err(format!(
                    "cannot order by {field:?}: index {:?} sorts only by create_time, update_time and its sortable fields ({})",
                    definition.name,
                    definition
                        .sortable_fields
                        .iter()
                        .map(|s| format!("value.{s}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            Ok(SortKey {
                field: field.to_owned(),
                descending,
            })
        })
        .collect()
}

/// The documents of one index.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    /// Indexing order: a write gets the next number (Bluge numbers documents as they are
    /// indexed, and equally ranked results come in that order).
    next_seq: u64,
    seq_of: HashMap<(String, Uuid), u64>,
    docs: BTreeMap<u64, Entry>,
    /// `(update time, seq)`: eviction takes the oldest first.
    by_update: BTreeSet<(i64, u64)>,
    /// field → keyword → documents that have it.
    postings: HashMap<Box<str>, HashMap<Box<str>, BTreeSet<u64>>>,
}

impl Entries {
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the index holds a later write of `entry`'s object than `entry`.
    pub(crate) fn has_newer(&self, entry: &Entry) -> bool {
        self.seq_of
            .get(&(entry.key.clone(), entry.user_id))
            .and_then(|seq| self.docs.get(seq))
            .is_some_and(|held| held.update_time_ms > entry.update_time_ms)
    }

    /// Indexes `entry`, replacing the object's previous entry.
    pub(crate) fn upsert(&mut self, entry: Entry) {
        self.remove(&entry.key, entry.user_id);
        let seq = self.next_seq;
        self.next_seq += 1;
        for (field, keyword) in entry.fields.keywords() {
            self.postings
                .entry(field.into())
                .or_default()
                .entry(keyword.into())
                .or_default()
                .insert(seq);
        }
        self.by_update.insert((entry.update_time_ms, seq));
        self.seq_of.insert((entry.key.clone(), entry.user_id), seq);
        self.docs.insert(seq, entry);
    }

    /// Removes an object's entry; whether there was one.
    pub(crate) fn remove(&mut self, key: &str, user_id: Uuid) -> bool {
        let Some(seq) = self.seq_of.remove(&(key.to_owned(), user_id)) else {
            return false;
        };
        if let Some(entry) = self.docs.remove(&seq) {
            self.by_update.remove(&(entry.update_time_ms, seq));
            for (field, keyword) in entry.fields.keywords() {
                if let Some(by_keyword) = self.postings.get_mut(field) {
                    if let Some(seqs) = by_keyword.get_mut(keyword) {
                        seqs.remove(&seq);
                        if seqs.is_empty() {
                            by_keyword.remove(keyword);
                        }
                    }
                    if by_keyword.is_empty() {
                        self.postings.remove(field);
                    }
                }
            }
        }
        true
    }

    /// Nakama's eviction: once the index holds more than 110% of `max`, the oldest entries by
    /// update time go until `max` remain. Returns how many went.
    pub(crate) fn evict(&mut self, max: usize) -> usize {
        let count = self.docs.len();
        if (count as f64) <= max as f64 * 1.1 {
            return 0;
        }
        let oldest: Vec<u64> = self
            .by_update
            .iter()
            .take(count - max)
            .map(|(_, seq)| *seq)
            .collect();
        for seq in &oldest {
            if let Some(entry) = self.docs.get(seq) {
                let (key, user_id) = (entry.key.clone(), entry.user_id);
                self.remove(&key, user_id);
            }
        }
        oldest.len()
    }

    /// The matches of `query` from `offset`, at most `take`, ordered by `order` (ties in
    /// indexing order) or, with no order, by score (the weights of matching optional clauses)
    /// then indexing order.
    pub(crate) fn search(
        &self,
        query: &Query,
        order: &[SortKey],
        offset: usize,
        take: usize,
    ) -> Vec<Entry> {
        let candidates: Box<dyn Iterator<Item = &Entry> + '_> = match query.required_keyword() {
            Some((field, keyword)) => {
                match self.postings.get(field).and_then(|by| by.get(keyword)) {
                    Some(seqs) => Box::new(seqs.iter().filter_map(|seq| self.docs.get(seq))),
                    None => Box::new(std::iter::empty()),
                }
            }
            None => Box::new(self.docs.values()),
        };
        if order.is_empty() && query.is_unranked() {
            // Every match ranks the same: indexing order, stop at the page's end.
            return candidates
                .filter(|entry| query.matches(&entry.fields))
                .skip(offset)
                .take(take)
                .cloned()
                .collect();
        }
        // Each hit's sort key is read once; the position in indexing order breaks ties, so
        // the order is total and a partial selection of the page is exact.
        let mut hits: Vec<(Vec<Option<FieldValue>>, f64, usize, &Entry)> = candidates
            .filter_map(|entry| query.score(&entry.fields).map(|score| (score, entry)))
            .enumerate()
            .map(|(position, (score, entry))| {
                let keys = order
                    .iter()
                    .map(|key| {
                        entry
                            .fields
                            .values(&key.field)
                            .first()
                            .map(|(_, v)| v.clone())
                    })
                    .collect();
                (keys, score, position, entry)
            })
            .collect();
        let total = |a: &(Vec<Option<FieldValue>>, f64, usize, &Entry),
                     b: &(Vec<Option<FieldValue>>, f64, usize, &Entry)| {
            let by_order = compare_keys(&a.0, &b.0, order);
            let by_score = if order.is_empty() {
                b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal)
            } else {
                Ordering::Equal
            };
            by_order.then(by_score).then(a.2.cmp(&b.2))
        };
        let want = offset.saturating_add(take);
        if want < hits.len() {
            hits.select_nth_unstable_by(want, total);
            hits.truncate(want);
        }
        hits.sort_unstable_by(total);
        hits.into_iter()
            .skip(offset)
            .take(take)
            .map(|(_, _, _, entry)| entry.clone())
            .collect()
    }
}

fn compare_keys(a: &[Option<FieldValue>], b: &[Option<FieldValue>], order: &[SortKey]) -> Ordering {
    for ((x, y), key) in a.iter().zip(b).zip(order) {
        let ordering = match (x, y) {
            (None, None) => Ordering::Equal,
            // Entries without the field come last either way.
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => {
                let o = compare_values(x, y);
                if key.descending { o.reverse() } else { o }
            }
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Numbers before text; booleans are the keywords `T`/`F`, as Bluge indexes them.
fn compare_values(a: &FieldValue, b: &FieldValue) -> Ordering {
    fn text(v: &FieldValue) -> Option<&str> {
        match v {
            FieldValue::Keyword(k) => Some(k),
            FieldValue::Bool(true) => Some("T"),
            FieldValue::Bool(false) => Some("F"),
            FieldValue::Number(_) => None,
        }
    }
    match (a, b) {
        (FieldValue::Number(x), FieldValue::Number(y)) => {
            x.partial_cmp(y).unwrap_or(Ordering::Equal)
        }
        (FieldValue::Number(_), _) => Ordering::Less,
        (_, FieldValue::Number(_)) => Ordering::Greater,
        _ => text(a).cmp(&text(b)),
    }
}

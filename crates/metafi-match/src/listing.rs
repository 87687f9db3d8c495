//! The index behind match listings: every authoritative match with its label fields, updated
//! synchronously when a match starts, ends or changes its label (sizes are read live from the
//! match), so a listing never shows a stale label or size.
//!
//! Documents are kept in creation order (listings show the newest first, as Nakama's
//! `-create_time` sort) with an inverted index of keywords; a query with a required keyword
//! (`+label.mode:ffa`) only visits the matches that have it, and a query without optional
//! clauses stops as soon as it has `limit` results.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;
use uuid::Uuid;

use crate::fields::Fields;
use crate::query::Query;
use crate::shared::MatchShared;

/// One listed match (Nakama's `api.Match`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchInfo {
    pub match_id: String,
    pub authoritative: bool,
    pub label: Option<String>,
    pub size: i32,
    pub tick_rate: Option<i32>,
    pub handler_name: Option<String>,
}

/// Filters of a listing, with Nakama's meaning: `None` is "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    pub authoritative: Option<bool>,
    /// Exact label.
    pub label: Option<String>,
    pub min_size: Option<i32>,
    pub max_size: Option<i32>,
    /// A query over label fields; see [`crate::query`].
    pub query: Option<String>,
}

impl ListQuery {
    pub(crate) fn size_ok(&self, size: i32) -> bool {
        self.min_size.is_none_or(|min| size >= min) && self.max_size.is_none_or(|max| size <= max)
    }
}

struct Doc {
    shared: Arc<MatchShared>,
    label: Arc<str>,
    tick_rate: u32,
    fields: Fields,
}

/// The authoritative matches of this node, searchable.
#[derive(Default)]
pub(crate) struct Listing {
    docs: BTreeMap<u64, Doc>,
    seq_of: HashMap<Uuid, u64>,
    /// field → keyword → matches (by creation sequence).
    postings: HashMap<Box<str>, HashMap<Box<str>, BTreeSet<u64>>>,
}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing")
            .field("matches", &self.docs.len())
            .finish()
    }
}

impl Listing {
    /// Adds a match or replaces its label and tick rate.
    pub(crate) fn upsert(&mut self, shared: &Arc<MatchShared>, label: Arc<str>, tick_rate: u32) {
        let seq = shared.seq;
        self.unpost(seq);
        let mut fields = Fields::new();
        fields.keyword("label_string", &label);
        fields.number("tick_rate", f64::from(tick_rate));
        fields.keyword("handler_name", &shared.handler_name);
        fields.keyword("node", shared.id.node());
        fields.number("create_time", shared.create_time_ms as f64);
        // Only JSON objects are searchable field by field, as in Nakama.
        if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&label) {
            fields.json("label", &value);
        }
        let fields = fields.finish();
        for (field, keyword) in fields.keywords() {
            self.postings
                .entry(field.into())
                .or_default()
                .entry(keyword.into())
                .or_default()
                .insert(seq);
        }
        self.seq_of.insert(shared.id.uuid(), seq);
        self.docs.insert(
            seq,
            Doc {
                shared: shared.clone(),
                label,
                tick_rate,
                fields,
            },
        );
    }

    pub(crate) fn remove(&mut self, id: Uuid) {
        if let Some(seq) = self.seq_of.remove(&id) {
            self.unpost(seq);
            self.docs.remove(&seq);
        }
    }

    fn unpost(&mut self, seq: u64) {
        let Some(doc) = self.docs.get(&seq) else {
            return;
        };
        for (field, keyword) in doc.fields.keywords() {
            if let Some(terms) = self.postings.get_mut(field) {
                if let Some(set) = terms.get_mut(keyword) {
                    set.remove(&seq);
                    if set.is_empty() {
                        terms.remove(keyword);
                    }
                }
                if terms.is_empty() {
                    self.postings.remove(field);
                }
            }
        }
    }

    /// Matches that pass `query` and the size filters: best score first, then newest first.
    pub(crate) fn search(&self, query: &Query, filters: &ListQuery) -> Vec<MatchInfo> {
        let limit = filters.limit;
        let candidates: Box<dyn Iterator<Item = &Doc>> = match query.required_keyword() {
            Some((field, keyword)) => match self.postings.get(field).and_then(|t| t.get(keyword)) {
                Some(set) => Box::new(set.iter().rev().filter_map(|seq| self.docs.get(seq))),
                None => return Vec::new(),
            },
            None => Box::new(self.docs.values().rev()),
        };
        if query.is_unranked() {
            return candidates
                .filter(|doc| query.matches(&doc.fields))
                .filter_map(|doc| doc.info_if(filters))
                .take(limit)
                .collect();
        }
        let mut scored: Vec<(f64, MatchInfo)> = candidates
            .filter_map(|doc| {
                let score = query.score(&doc.fields)?;
                Some((score, doc.info_if(filters)?))
            })
            .collect();
        // Stable: equal scores keep newest-first order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, info)| info)
            .collect()
    }

    /// Matches whose label is exactly `label`, newest first.
    pub(crate) fn with_label(&self, label: &str, filters: &ListQuery) -> Vec<MatchInfo> {
        let Some(set) = self.postings.get("label_string").and_then(|t| t.get(label)) else {
            return Vec::new();
        };
        set.iter()
            .rev()
            .filter_map(|seq| self.docs.get(seq))
            .filter_map(|doc| doc.info_if(filters))
            .take(filters.limit)
            .collect()
    }

    /// [`Listing::search`] narrowed to one handler, as the matches themselves (to reserve
    /// seats in).
    pub(crate) fn search_shared(
        &self,
        query: &Query,
        filters: &ListQuery,
        handler: &str,
    ) -> Vec<Arc<MatchShared>> {
        let mut scored: Vec<(f64, Arc<MatchShared>)> = self
            .postings
            .get("handler_name")
            .and_then(|t| t.get(handler))
            .into_iter()
            .flat_map(|set| set.iter().rev())
            .filter_map(|seq| self.docs.get(seq))
            .filter(|doc| doc.info_if(filters).is_some())
            .filter_map(|doc| Some((query.score(&doc.fields)?, doc.shared.clone())))
            .take(if query.is_unranked() {
                filters.limit
            } else {
                usize::MAX
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(filters.limit);
        scored.into_iter().map(|(_, shared)| shared).collect()
    }

    /// [`Listing::with_label`] narrowed to one handler, as the matches themselves.
    pub(crate) fn with_label_shared(
        &self,
        label: &str,
        filters: &ListQuery,
        handler: &str,
    ) -> Vec<Arc<MatchShared>> {
        let Some(set) = self.postings.get("label_string").and_then(|t| t.get(label)) else {
            return Vec::new();
        };
        set.iter()
            .rev()
            .filter_map(|seq| self.docs.get(seq))
            .filter(|doc| &*doc.shared.handler_name == handler && doc.info_if(filters).is_some())
            .take(filters.limit)
            .map(|doc| doc.shared.clone())
            .collect()
    }

    /// Every match, as other nodes list it.
    pub(crate) fn listed(&self) -> Vec<crate::remote::ListedMatch> {
        self.docs
            .values()
            .filter(|doc| !doc.shared.ended.load(Ordering::Acquire))
            .map(|doc| {
                let info = doc.info();
                crate::remote::ListedMatch {
                    match_id: info.match_id,
                    authoritative: true,
                    label: info.label,
                    size: info.size,
                    tick_rate: info.tick_rate,
                    handler_name: info.handler_name,
                    create_time_ms: doc.shared.create_time_ms,
                }
            })
            .collect()
    }

    /// Every match that passes `query` (or the exact `filters.label`) and the filters, with
    /// its score and create time, to merge with other nodes' (see
    /// [`crate::RemoteListing::search`], which answers the same way).
    pub(crate) fn scored(
        &self,
        query: Option<&Query>,
        filters: &ListQuery,
    ) -> Vec<(f64, i64, MatchInfo)> {
        if filters.authoritative == Some(false) {
            return Vec::new();
        }
        self.docs
            .values()
            .filter_map(|doc| {
                let score = match (query, &filters.label) {
                    (Some(query), _) => query.score(&doc.fields)?,
                    (None, Some(label)) if &*doc.label != label.as_str() => return None,
                    (None, Some(_)) => 0.0,
                    (None, None) => 1.0,
                };
                Some((score, doc.shared.create_time_ms, doc.info_if(filters)?))
            })
            .collect()
    }

    /// One match.
    pub(crate) fn info(&self, id: Uuid) -> Option<MatchInfo> {
        let doc = self.docs.get(self.seq_of.get(&id)?)?;
        Some(doc.info())
    }
}

impl Doc {
    fn info(&self) -> MatchInfo {
        MatchInfo {
            match_id: self.shared.id_text.to_string(),
            authoritative: true,
            label: Some(self.label.to_string()),
            size: self.size(),
            tick_rate: Some(self.tick_rate as i32),
            handler_name: Some(self.shared.handler_name.to_string()),
        }
    }

    fn size(&self) -> i32 {
        self.shared.listed_size() as i32
    }

    fn info_if(&self, filters: &ListQuery) -> Option<MatchInfo> {
        if self.shared.ended.load(Ordering::Acquire) || !filters.size_ok(self.size()) {
            return None;
        }
        Some(self.info())
    }
}

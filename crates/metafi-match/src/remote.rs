//! [`RemoteMatches`]: the seam between this node's [`Matches`] and matches that live on other
//! nodes of a cluster. A match id `<uuid>.<node>` names the node that runs it; a relayed match
//! (`<uuid>.`) lives on the node where it was created. Without a cluster no seam is installed
//! and `Matches` answers from this node alone, exactly as before; with one
//! (`metafi-cluster`), every request for a match this node does not have goes through the
//! seam, so the socket, REST and `nk` callers never branch on where a match lives.
//!
//! Listings of other nodes come from [`RemoteListing`]s: each node publishes what it runs
//! ([`Matches::listed`]) and the others search their copy with the same query language.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::authoritative::JoinOutcome;
use crate::error::MatchError;
use crate::fields::Fields;
use crate::id::MatchId;
use crate::listing::{ListQuery, MatchInfo};
use crate::match_handler::JoinRequest;
use crate::presence::{Presence, PresenceReason};
use crate::query::Query;
use crate::registry::{Inner, Matches};
use crate::relayed::RelayedJoin;
use crate::shared::Queued;

/// A boxed future, for the seam's asynchronous requests.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Matches on other nodes, as this node's [`Matches`] reaches them.
pub trait RemoteMatches: Send + Sync + fmt::Debug {
    /// A join attempt at an authoritative match of another node (`id.node()`), with the
    /// joiner's presence and metadata; the answer is the match's.
    fn join(
        &self,
        id: &MatchId,
        request: JoinRequest,
    ) -> BoxFuture<'static, Result<JoinOutcome, MatchError>>;

    /// Joins a relayed match this node does not have, if another node has it (`None`: not
    /// found anywhere).
    fn join_relayed(
        &self,
        uuid: Uuid,
        presence: Arc<Presence>,
    ) -> BoxFuture<'static, Option<RelayedJoin>>;

    /// The joiner's client has its answer: the join completes on the match's node.
    fn complete_join(&self, id: &MatchId, session_id: Uuid);

    /// A session leaves a match on another node (ignored when it is in none there).
    fn leave(&self, id: &MatchId, session_id: Uuid);

    /// Match data for a match on another node, with the sender's delivery extension (the
    /// match's node applies it as [`Matches::send_with`] does here). `Queued::Ended` when this
    /// node knows of no such match.
    #[allow(clippy::too_many_arguments)] // the fields of the client's match_data_send
    fn send(
        &self,
        id: &MatchId,
        session_id: Uuid,
        op_code: i64,
        data: Bytes,
        reliable: bool,
        delivery: Option<&metafi_proto::realtime::Delivery>,
        to: &[Uuid],
    ) -> Queued;

    /// `match_signal` of a match on another node.
    fn signal(&self, id: &MatchId, data: String) -> BoxFuture<'static, Result<String, MatchError>>;

    /// One match of another node, from this node's copy of its listing.
    fn info(&self, id: &MatchId) -> Option<MatchInfo>;

    /// The other nodes' matches that pass `query` (or the exact `filters.label`) and the
    /// filters, best first, at most `filters.limit`.
    /// Each with its score and create time (see [`RemoteListing::search`]).
    fn list(&self, query: Option<&Query>, filters: &ListQuery) -> Vec<(f64, i64, MatchInfo)>;

    /// A session of this node ended: it leaves the matches it joined on other nodes, with
    /// `reason` (server code's `nk.session_disconnect` may name one; else `Disconnect`).
    fn session_ended(&self, session_id: Uuid, reason: PresenceReason);

    /// Reserves a seat for `user` in authoritative match `id` of another node: the same
    /// atomic check-and-reserve there ([`Matches::reserve_seat`]). `Ok(false)`: the match is
    /// full or ended, or its node is gone.
    fn reserve_seat(
        &self,
        id: &MatchId,
        user: Uuid,
        seats: u32,
    ) -> BoxFuture<'static, Result<bool, MatchError>>;

    /// This node cannot start a match ("Node is full", draining): asks the other nodes that
    /// are not full, one after another, to find or create a seat among their own matches
    /// ([`Matches::find_seat_here`]). The first seat one of them reserved, or why none did.
    fn find_seat_elsewhere(
        &self,
        request: SeatRequest,
    ) -> BoxFuture<'static, Result<MatchId, MatchError>>;
}

/// A seat asked of another node: `match_find_seat`'s arguments (`docs/MATCHES.md`, "Seats").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatRequest {
    /// The match handler (module) to find, or start with `params`.
    pub handler_name: String,
    #[serde(default)]
    pub params: crate::match_handler::Params,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// An exact label (used when there is no query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<i32>,
    pub user: Uuid,
    pub seats: u32,
}

impl SeatRequest {
    /// The listing filters of the request (`limit` and `authoritative` are the finder's own).
    pub fn filters(&self) -> ListQuery {
        ListQuery {
            limit: 1,
            authoritative: Some(true),
            label: self.label.clone(),
            min_size: self.min_size,
            max_size: self.max_size,
            query: self.query.clone(),
        }
    }
}

/// One match as a node publishes it to the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedMatch {
    pub match_id: String,
    pub authoritative: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub size: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_rate: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler_name: Option<String>,
    /// Unix milliseconds: listings show the newest first.
    pub create_time_ms: i64,
}

impl ListedMatch {
    pub fn info(&self) -> MatchInfo {
        MatchInfo {
            match_id: self.match_id.clone(),
            authoritative: self.authoritative,
            label: self.label.clone(),
            size: self.size,
            tick_rate: self.tick_rate,
            handler_name: self.handler_name.clone(),
        }
    }
}

/// Another node's published matches, searchable as this node's own listing is.
#[derive(Debug, Default)]
pub struct RemoteListing {
    /// Newest first.
    docs: Vec<(ListedMatch, Fields)>,
}

impl RemoteListing {
    pub fn new(mut matches: Vec<ListedMatch>) -> RemoteListing {
        matches.sort_by(|a, b| {
            b.create_time_ms
                .cmp(&a.create_time_ms)
                .then(b.match_id.cmp(&a.match_id))
        });
        let docs = matches
            .into_iter()
            .map(|m| {
                let fields = fields_of(&m);
                (m, fields)
            })
            .collect();
        RemoteListing { docs }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Raises a listed match's size to at least `size` until the node's next listing replaces
    /// it: its node just refused a seat in it, so finders here stop trying it (a seat freed
    /// meanwhile shows again with that listing). False when the match is not listed.
    pub fn mark_taken(&mut self, match_id: &str, size: i32) -> bool {
        match self.docs.iter_mut().find(|(m, _)| m.match_id == match_id) {
            Some((m, _)) => {
                m.size = m.size.max(size);
                true
            }
            None => false,
        }
    }

    /// One match by id.
    pub fn get(&self, match_id: &str) -> Option<&ListedMatch> {
        self.docs
            .iter()
            .map(|(m, _)| m)
            .find(|m| m.match_id == match_id)
    }

    /// As [`Matches::list`] answers for this node: with a query or an exact label,
    /// authoritative matches only (scored, then newest first); otherwise authoritative ones
    /// then relayed ones as `filters.authoritative` allows. Each result carries its score and
    /// create time so several nodes' results merge in one order.
    pub fn search(&self, query: Option<&Query>, filters: &ListQuery) -> Vec<(f64, i64, MatchInfo)> {
        let mut out = Vec::new();
        let searched = query.is_some() || filters.label.is_some();
        for (m, fields) in &self.docs {
            if !filters.size_ok(m.size) {
                continue;
            }
            let score = if searched {
                if !m.authoritative || filters.authoritative == Some(false) {
                    continue;
                }
                if let Some(label) = &filters.label
                    && query.is_none()
                    && m.label.as_deref() != Some(label.as_str())
                {
                    continue;
                }
                match query {
                    Some(query) => match query.score(fields) {
                        Some(score) => score,
                        None => continue,
                    },
                    None => 0.0,
                }
            } else {
                match (m.authoritative, filters.authoritative) {
                    (true, Some(false)) | (false, Some(true)) => continue,
                    // Authoritative before relayed, as one node lists them.
                    (true, _) => 1.0,
                    (false, _) => 0.0,
                }
            };
            out.push((score, m.create_time_ms, m.info()));
        }
        out
    }
}

/// The searchable fields of a published match, as the node's own index has them.
fn fields_of(m: &ListedMatch) -> Fields {
    let mut fields = Fields::new();
    let label = m.label.as_deref().unwrap_or_default();
    fields.keyword("label_string", label);
    if let Some(tick_rate) = m.tick_rate {
        fields.number("tick_rate", f64::from(tick_rate));
    }
    if let Some(handler) = &m.handler_name {
        fields.keyword("handler_name", handler);
    }
    if let Ok(id) = MatchId::parse(&m.match_id) {
        fields.keyword("node", id.node());
    }
    fields.number("create_time", m.create_time_ms as f64);
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(label) {
        fields.json("label", &value);
    }
    fields.finish()
}

/// Orders merged results: best score first, then newest first, and keeps `limit`.
pub fn merge(mut all: Vec<(f64, i64, MatchInfo)>, limit: usize) -> Vec<MatchInfo> {
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    all.into_iter().take(limit).map(|(_, _, m)| m).collect()
}

/// A [`Matches`] that does not keep the registry alive (the cluster's seam holds one, and the
/// registry holds the seam).
#[derive(Debug, Clone)]
pub struct WeakMatches(pub(crate) Weak<Inner>);

impl WeakMatches {
    pub fn upgrade(&self) -> Option<Matches> {
        self.0.upgrade().map(|inner| Matches { inner })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_match_is_listed_as_taken_until_the_next_listing() {
        let mut listing = RemoteListing::new(vec![listed("m1.n2", "{}", 3, 1)]);
        let open = ListQuery {
            limit: 10,
            max_size: Some(9),
            ..ListQuery::default()
        };
        assert_eq!(listing.search(None, &open).len(), 1);
        assert!(listing.mark_taken("m1.n2", 10));
        assert!(listing.search(None, &open).is_empty());
        assert_eq!(listing.get("m1.n2").map(|m| m.size), Some(10));
        // Never lowered; an unknown match is not listed.
        assert!(listing.mark_taken("m1.n2", 5));
        assert_eq!(listing.get("m1.n2").map(|m| m.size), Some(10));
        assert!(!listing.mark_taken("m9.n2", 10));
    }

    fn listed(id: &str, label: &str, size: i32, created: i64) -> ListedMatch {
        ListedMatch {
            match_id: id.into(),
            authoritative: !id.ends_with('.'),
            label: (!id.ends_with('.')).then(|| label.into()),
            size,
            tick_rate: Some(10),
            handler_name: Some("arena".into()),
            create_time_ms: created,
        }
    }

    #[test]
    fn a_remote_listing_answers_queries_labels_sizes_and_kinds() {
        let a = format!("{}.n1", Uuid::new_v4());
        let b = format!("{}.n1", Uuid::new_v4());
        let r = format!("{}.", Uuid::new_v4());
        let listing = RemoteListing::new(vec![
            listed(&a, r#"{"mode":"ffa"}"#, 2, 10),
            listed(&b, r#"{"mode":"duel"}"#, 1, 20),
            listed(&r, "", 3, 30),
        ]);
        let all = ListQuery {
            limit: 10,
            ..ListQuery::default()
        };
        let ids = |found: Vec<(f64, i64, MatchInfo)>| -> Vec<String> {
            merge(found, 10).into_iter().map(|m| m.match_id).collect()
        };
        // No query: authoritative first (newest first), then relayed.
        assert_eq!(
            ids(listing.search(None, &all)),
            vec![b.clone(), a.clone(), r.clone()]
        );
        let query = Query::parse("+label.mode:ffa").unwrap();
        assert_eq!(ids(listing.search(Some(&query), &all)), vec![a.clone()]);
        let exact = ListQuery {
            label: Some(r#"{"mode":"duel"}"#.into()),
            ..all.clone()
        };
        assert_eq!(ids(listing.search(None, &exact)), vec![b.clone()]);
        let big = ListQuery {
            min_size: Some(2),
            ..all.clone()
        };
        assert_eq!(ids(listing.search(None, &big)), vec![a.clone(), r.clone()]);
        let relayed = ListQuery {
            authoritative: Some(false),
            ..all
        };
        assert_eq!(ids(listing.search(None, &relayed)), vec![r.clone()]);
        assert_eq!(listing.get(&a).map(|m| m.size), Some(2));
    }
}

//! `GET /v2/party` and `nk.party_list`: parties that are not hidden (unless server code asks), optionally only open (or only closed) ones,
//! filtered and ranked by a query over their label (`label.mode:ranked`, `+label.level:>=3`,
//! the match listing's query language), `limit` per page, and an offset cursor bound to the
//! query, limit and filter (Nakama's `PartyListCursor`). Unlike Nakama, whose index is
//! refreshed every `party.label_update_interval_ms`, a new or updated party of this node lists
//! at once.
//!
//! In a cluster, every node also keeps the other nodes' latest listings
//! ([`Parties::set_remote_listing`], fed by `metafi-cluster`), and a listing searches them with
//! the same query, filters and cursor: best score first, then this node's parties, then the
//! other nodes' by node name, each node's in creation order.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use metafi_core::{ListParties, PartyDirectory};
use metafi_match::{Fields, Query};
use metafi_proto::api::{Party, PartyList};
use serde::{Deserialize, Serialize};

use super::{Label, Parties, PartyState};

/// One party as a node's listing carries it to the others (hidden ones too: server code may
/// list them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedParty {
    pub party_id: String,
    pub open: bool,
    pub hidden: bool,
    pub max_size: u32,
    pub label: String,
    /// Creation order on its node.
    pub seq: u64,
}

/// Another node's party, ready to be searched.
#[derive(Debug, Clone)]
pub(crate) struct RemoteParty {
    party: Party,
    seq: u64,
    fields: Fields,
}

/// Why a listing failed. Nakama answers every one of these with `Error listing matches.`
/// (code 13); the text is for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    #[error("invalid cursor")]
    Cursor,
    #[error("invalid cursor: param {0} mismatch")]
    CursorMismatch(&'static str),
    #[error("error parsing query string: {0}")]
    Query(String),
}

#[derive(Serialize, Deserialize)]
struct Cursor {
    #[serde(rename = "q")]
    query: String,
    #[serde(rename = "o")]
    open: Option<bool>,
    #[serde(rename = "f")]
    offset: usize,
    #[serde(rename = "l")]
    limit: usize,
}

fn fields(party: &PartyState) -> Fields {
    fields_of(&party.label.value, party.open, party.hidden, party.max_size)
}

fn fields_of(label: &serde_json::Value, open: bool, hidden: bool, max_size: usize) -> Fields {
    let mut fields = Fields::new();
    fields.json("label", label);
    fields.keyword("open", if open { "T" } else { "F" });
    fields.keyword("hidden", if hidden { "T" } else { "F" });
    fields.number("max_size", max_size as f64);
    fields.finish()
}

impl RemoteParty {
    /// None for a label that is not one (another node checked it; a garbled one is skipped).
    fn new(listed: ListedParty) -> Option<RemoteParty> {
        let label = Label::parse(&listed.label).ok()?;
        let fields = fields_of(
            &label.value,
            listed.open,
            listed.hidden,
            listed.max_size as usize,
        );
        Some(RemoteParty {
            party: Party {
                party_id: listed.party_id,
                open: listed.open,
                hidden: listed.hidden,
                max_size: listed.max_size as i32,
                label: label.text,
            },
            seq: listed.seq,
            fields,
        })
    }
}

impl PartyDirectory for Parties {
    fn list_parties(&self, request: &ListParties) -> Result<PartyList, String> {
        self.list(request).map_err(|e| e.to_string())
    }
}

impl Parties {
    /// One page of listed parties.
    pub fn list(&self, request: &ListParties) -> Result<PartyList, ListError> {
        let query_text = if request.query.is_empty() {
            "*"
        } else {
            request.query.as_str()
        };
        let mut offset = 0;
        if !request.cursor.is_empty() {
            let bytes = URL_SAFE_NO_PAD
                .decode(&request.cursor)
                .map_err(|_| ListError::Cursor)?;
            let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| ListError::Cursor)?;
            if cursor.query != query_text {
                return Err(ListError::CursorMismatch("query"));
            }
            if cursor.limit != request.limit {
                return Err(ListError::CursorMismatch("limit"));
            }
            if cursor.open != request.open {
                return Err(ListError::CursorMismatch("open"));
            }
            offset = cursor.offset;
        }
        let query = Query::parse(query_text).map_err(|e| ListError::Query(e.to_string()))?;
        let wanted = |open: bool, hidden: bool| {
            (request.show_hidden || !hidden) && request.open.is_none_or(|o| o == open)
        };
        // (score, node: 0 for this one, then the others in name order, seq, party).
        let mut hits: Vec<(f64, usize, u64, Party)> = {
            let inner = self.inner.lock();
            inner
                .parties
                .values()
                .filter(|p| wanted(p.open, p.hidden))
                .filter_map(|p| {
                    let score = query.score(&fields(p))?;
                    Some((
                        score,
                        0,
                        p.seq,
                        Party {
                            party_id: p.id.clone(),
                            open: p.open,
                            hidden: p.hidden,
                            max_size: p.max_size as i32,
                            label: p.label.text.clone(),
                        },
                    ))
                })
                .collect()
        };
        for (n, parties) in self.remote.read().values().enumerate() {
            hits.extend(
                parties
                    .iter()
                    .filter(|p| wanted(p.party.open, p.party.hidden))
                    .filter_map(|p| {
                        let score = query.score(&p.fields)?;
                        Some((score, n + 1, p.seq, p.party.clone()))
                    }),
            );
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let total = hits.len();
        let parties: Vec<Party> = hits
            .into_iter()
            .skip(offset)
            .take(request.limit)
            .map(|(_, _, _, p)| p)
            .collect();
        let mut cursor = String::new();
        if offset + request.limit < total {
            let next = Cursor {
                query: query_text.to_owned(),
                open: request.open,
                offset: offset + request.limit,
                limit: request.limit,
            };
            // Serializing a struct of strings and numbers cannot fail.
            let json = serde_json::to_vec(&next).unwrap_or_default();
            cursor = URL_SAFE_NO_PAD.encode(json);
        }
        Ok(PartyList { parties, cursor })
    }
}

impl Parties {
    /// This node's parties as its listing for the other nodes, with the listing's version
    /// (it changes when a party is created, closed or updated).
    pub fn listed(&self) -> (u64, Vec<ListedParty>) {
        let inner = self.inner.lock();
        let parties = inner
            .parties
            .values()
            .map(|p| ListedParty {
                party_id: p.id.clone(),
                open: p.open,
                hidden: p.hidden,
                max_size: p.max_size as u32,
                label: p.label.text.clone(),
                seq: p.seq,
            })
            .collect();
        (inner.listing_version, parties)
    }

    /// The version of this node's listing: changes when a party is created, closed or updated.
    pub fn listing_version(&self) -> u64 {
        self.inner.lock().listing_version
    }

    /// Replaces what this node lists of `node`'s parties (a cluster peer's latest listing).
    pub fn set_remote_listing(&self, node: &str, parties: Vec<ListedParty>) {
        if node == self.node {
            return;
        }
        let parties: Vec<RemoteParty> = parties.into_iter().filter_map(RemoteParty::new).collect();
        self.remote.write().insert(node.to_owned(), parties);
    }

    /// Forgets `node`'s parties (the node is gone).
    pub fn drop_remote_listing(&self, node: &str) {
        self.remote.write().remove(node);
    }

    /// The nodes whose parties this node lists.
    pub fn remote_nodes(&self) -> Vec<String> {
        self.remote.read().keys().cloned().collect()
    }

    /// Other nodes' parties this node lists.
    pub fn remote_len(&self) -> usize {
        self.remote.read().values().map(Vec::len).sum()
    }
}

//! `GET /v2/party` and `nk.party_list`: parties that are not hidden (unless server code asks), optionally only open (or only closed) ones,
//! filtered and ranked by a query over their label (`label.mode:ranked`, `+label.level:>=3`,
//! the match listing's query language), `limit` per page, and an offset cursor bound to the
//! query, limit and filter (Nakama's `PartyListCursor`). Unlike Nakama, whose index is
//! refreshed every `party.label_update_interval_ms`, a new or updated party lists at once.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use metafi_core::{ListParties, PartyDirectory};
use metafi_match::{Fields, Query};
use metafi_proto::api::{Party, PartyList};
use serde::{Deserialize, Serialize};

use super::{Parties, PartyState};

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
    let mut fields = Fields::new();
    fields.json("label", &party.label.value);
    fields.keyword("open", if party.open { "T" } else { "F" });
    fields.keyword("hidden", if party.hidden { "T" } else { "F" });
    fields.number("max_size", party.max_size as f64);
    fields.finish()
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
        let mut hits: Vec<(f64, u64, Party)> = {
            let inner = self.inner.lock();
            inner
                .parties
                .values()
                .filter(|p| request.show_hidden || !p.hidden)
                .filter(|p| request.open.is_none_or(|open| p.open == open))
                .filter_map(|p| {
                    let score = query.score(&fields(p))?;
                    Some((
                        score,
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
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let total = hits.len();
        let parties: Vec<Party> = hits
            .into_iter()
            .skip(offset)
            .take(request.limit)
            .map(|(_, _, p)| p)
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

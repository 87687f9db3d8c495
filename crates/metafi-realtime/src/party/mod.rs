//! Parties: players who stay together across matches (Nakama's `party_*` messages and
//! `GET /v2/party`). In memory on this node, bounded by `party.max_parties` and
//! `party.max_size`.
//!
//! - `state.rs`: one party's state machine, sans-IO ([`PartyState`]: members, leader, join
//!   requests, label; each operation returns the messages to send);
//! - this file: [`Parties`], the registry (create, look up, which parties a session is in,
//!   cleanup when a session ends) and its errors;
//! - `listing.rs`: `GET /v2/party` (open/hidden filters, label queries, cursors);
//! - `requests.rs`: the socket messages, with Nakama's answers and error texts.

mod listing;
mod requests;
mod state;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

pub use listing::{ListError, ListedParty};
pub use requests::PartyForwarder;
pub use state::{Effects, Joined, Label, MAX_LABEL_BYTES, Member, PartyState};

/// The largest `max_size` Nakama accepts.
pub const NAKAMA_MAX_SIZE: usize = 256;

/// Limits of the party registry (`party.*` configuration keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartyConfig {
    /// Parties this node holds at once (`party.max_parties`); a create past it is refused.
    pub max_parties: usize,
    /// The largest `max_size` a party may have (`party.max_size`, at most 256 as Nakama).
    pub max_size: usize,
}

impl Default for PartyConfig {
    fn default() -> Self {
        PartyConfig {
            max_parties: 100_000,
            max_size: NAKAMA_MAX_SIZE,
        }
    }
}

/// Why a party operation was refused. Texts are Nakama's (`runtime.ErrParty*`); the socket
/// prefixes them with the operation ("Error joining party: party full").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartyError {
    #[error("party not found")]
    NotFound,
    #[error("party closed")]
    Closed,
    #[error("party full")]
    Full,
    #[error("party join request duplicate")]
    JoinRequestDuplicate,
    #[error("party join request already member")]
    AlreadyMember,
    #[error("party join requests full")]
    JoinRequestsFull,
    #[error("party leader only")]
    NotLeader,
    #[error("party member not found")]
    NotMember,
    #[error("party join request not found")]
    NotRequest,
    #[error("party cannot remove self")]
    RemoveSelf,
    #[error("party label too long")]
    LabelTooLong,
    #[error("failed to unmarshal party label: {0}")]
    LabelInvalid(String),
    #[error("party is hidden and label is not empty, invalid operation")]
    HiddenNonEmptyLabel,
    /// MetaFi's bound (Nakama has none).
    #[error("too many parties: this server holds at most {limit} (party.max_parties)")]
    TooManyParties { limit: usize },
}

/// A party id as clients send it: `uuid.node`.
pub fn parse_party_id(text: &str) -> Option<(Uuid, &str)> {
    let (id, node) = text.split_once('.')?;
    Some((Uuid::parse_str(id).ok()?, node))
}

/// Every party of this node.
pub struct Parties {
    node: String,
    config: PartyConfig,
    inner: Mutex<Inner>,
    /// Other nodes' latest listings, by node (a cluster; see `listing.rs`).
    remote: RwLock<BTreeMap<String, Vec<listing::RemoteParty>>>,
}

#[derive(Default)]
struct Inner {
    parties: HashMap<Uuid, PartyState>,
    /// The parties each session is a member of or asked to join, to clean up when it ends.
    by_session: HashMap<Uuid, Vec<Uuid>>,
    seq: u64,
    /// Changes when a party is created, closed or updated (what other nodes list of this one).
    listing_version: u64,
}

impl Inner {
    fn link(&mut self, session_id: Uuid, party: Uuid) {
        let list = self.by_session.entry(session_id).or_default();
        if !list.contains(&party) {
            list.push(party);
        }
    }

    fn unlink(&mut self, session_id: Uuid, party: Uuid) {
        if let Some(list) = self.by_session.get_mut(&session_id) {
            list.retain(|p| *p != party);
            if list.is_empty() {
                self.by_session.remove(&session_id);
            }
        }
    }

    /// Keeps the session index true after an operation on `party`: forgets the party when it
    /// closed, and sessions no longer in it (named in `effects.left`).
    fn settle(&mut self, party: Uuid, effects: &mut Effects, touched: &[Uuid]) {
        if effects.closed {
            if let Some(state) = self.parties.remove(&party) {
                let sessions: Vec<Uuid> = state
                    .members()
                    .iter()
                    .map(|m| m.session_id)
                    .chain(touched.iter().copied())
                    .collect();
                for s in sessions {
                    self.unlink(s, party);
                    if !effects.left.contains(&s) {
                        effects.left.push(s);
                    }
                }
                self.listing_version += 1;
            }
            for s in touched {
                self.unlink(*s, party);
            }
            self.clean_requests(party);
            metrics_parties(self.parties.len());
            return;
        }
        for s in touched {
            let keep = self
                .parties
                .get(&party)
                .is_some_and(|p| p.is_member(*s) || p.has_request(*s));
            if keep {
                self.link(*s, party);
            } else {
                self.unlink(*s, party);
                effects.left.push(*s);
            }
        }
    }

    /// Drops index entries of sessions whose request to a closed party was pending.
    fn clean_requests(&mut self, party: Uuid) {
        self.by_session.retain(|_, list| {
            list.retain(|p| *p != party);
            !list.is_empty()
        });
    }
}

fn metrics_parties(count: usize) {
    metrics::gauge!("metafi_parties").set(count as f64);
}

impl fmt::Debug for Parties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parties")
            .field("node", &self.node)
            .field("config", &self.config)
            .field("parties", &self.len())
            .finish()
    }
}

impl Parties {
    /// The registry of node `node` (party ids end in `.node`).
    pub fn new(node: impl Into<String>, config: PartyConfig) -> Parties {
        Parties {
            node: node.into(),
            config,
            inner: Mutex::new(Inner::default()),
            remote: RwLock::new(BTreeMap::new()),
        }
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn config(&self) -> &PartyConfig {
        &self.config
    }

    /// Parties alive.
    pub fn len(&self) -> usize {
        self.inner.lock().parties.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Creates a party led by `leader`; returns its id and the `Party` the creator is sent.
    pub fn create(
        &self,
        open: bool,
        hidden: bool,
        max_size: usize,
        label: &str,
        leader: Member,
    ) -> Result<metafi_proto::realtime::Party, PartyError> {
        let label = Label::parse(label)?;
        let mut inner = self.inner.lock();
        if inner.parties.len() >= self.config.max_parties {
            return Err(PartyError::TooManyParties {
                limit: self.config.max_parties,
            });
        }
        let uuid = Uuid::new_v4();
        inner.seq += 1;
        inner.listing_version += 1;
        let seq = inner.seq;
        let session = leader.session_id;
        let state = PartyState::new(
            format!("{uuid}.{}", self.node),
            seq,
            open,
            hidden,
            max_size,
            label,
            leader,
        );
        let described = state.describe(&state.members()[0]);
        inner.parties.insert(uuid, state);
        inner.link(session, uuid);
        metrics_parties(inner.parties.len());
        Ok(described)
    }

    /// Runs `op` on the party `id` names (`uuid.node`, checked against this node), keeping
    /// the session index true for the sessions in `touched`.
    pub fn with<T>(
        &self,
        id: Uuid,
        node: &str,
        touched: &[Uuid],
        op: impl FnOnce(&mut PartyState) -> Result<(T, Effects), PartyError>,
    ) -> Result<(T, Effects), PartyError> {
        if node != self.node {
            return Err(PartyError::NotFound);
        }
        let mut inner = self.inner.lock();
        let state = inner.parties.get_mut(&id).ok_or(PartyError::NotFound)?;
        let (value, mut effects) = op(state)?;
        inner.settle(id, &mut effects, touched);
        Ok((value, effects))
    }

    /// A party's label, openness or visibility changed (what other nodes list of this one).
    pub(crate) fn listing_changed(&self) {
        self.inner.lock().listing_version += 1;
    }

    /// Reads the party `id` names.
    pub fn read<T>(
        &self,
        id: Uuid,
        node: &str,
        op: impl FnOnce(&PartyState) -> Result<T, PartyError>,
    ) -> Result<T, PartyError> {
        if node != self.node {
            return Err(PartyError::NotFound);
        }
        let inner = self.inner.lock();
        let state = inner.parties.get(&id).ok_or(PartyError::NotFound)?;
        op(state)
    }

    /// A session ended: it leaves every party it is in and its join requests go. Returns
    /// each affected party's id text with what to send.
    pub fn session_ended(&self, session_id: Uuid) -> Vec<(String, Effects)> {
        let mut inner = self.inner.lock();
        let parties = inner.by_session.remove(&session_id).unwrap_or_default();
        let mut out = Vec::with_capacity(parties.len());
        for party in parties {
            let Some(state) = inner.parties.get_mut(&party) else {
                continue;
            };
            state.forget_request(session_id);
            let mut effects = state.leave(session_id);
            let id = state.id.clone();
            inner.settle(party, &mut effects, &[session_id]);
            out.push((id, effects));
        }
        out
    }

    /// Parties the session is in or asked to join (for tests and metrics).
    pub fn parties_of(&self, session_id: Uuid) -> usize {
        self.inner
            .lock()
            .by_session
            .get(&session_id)
            .map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests;

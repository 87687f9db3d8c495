//! The matchmaker, sans-IO: tickets in a pool, and a pass ([`Matchmaker::process`]) the caller
//! runs every `matchmaker.interval_sec` that forms groups the way Nakama's default process does.
//!
//! A ticket has a query over other tickets' properties (`properties.region:eu`,
//! `properties.skill:>=10`), a count range and a count multiple. In each pass every *active*
//! ticket (oldest first) searches the pool: candidates must match its query, have a
//! `min_count` at least its own and a `max_count` at most its own, and share no session with it.
//! Candidates are ranked by score, then by age (longest waiting first), and added to the group
//! until it reaches the ticket's `max_count`. A ticket settles for fewer (down to `min_count`)
//! only in its last active pass: after `matchmaker.max_intervals` passes, or at once when its
//! `min_count` equals its `max_count`. A group must satisfy every member's range and multiple;
//! when its size is not a multiple of the searching ticket's `count_multiple`, the newest
//! members are dropped until it is. Tickets no longer active stay in the pool and can still be
//! picked by other tickets' searches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use uuid::Uuid;

use crate::config::MatchmakerConfig;
use crate::fields::Fields;
use crate::presence::Presence;
use crate::query::{Query, QueryError};

/// Why a ticket was refused. Messages are Nakama's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchmakerError {
    #[error("Invalid minimum count, must be >= 2")]
    MinCount,
    #[error("Invalid maximum count, must be >= minimum count")]
    MaxCount,
    #[error("Invalid count multiple, must be >= 1")]
    CountMultiple,
    #[error("Invalid count multiple for minimum count, must divide")]
    MultipleMin,
    #[error("Invalid count multiple for maximum count, must divide")]
    MultipleMax,
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(
        "Too many matchmaker tickets: a session may hold {limit} at once (matchmaker.max_tickets)"
    )]
    TooManyTickets { limit: usize },
    #[error("Matchmaker ticket not found")]
    TicketNotFound,
    /// A party ticket names one session twice.
    #[error("matchmaker duplicate session")]
    DuplicateSession,
    /// A party already holds `matchmaker.max_tickets` tickets, or one of its members does.
    #[error("matchmaker too many tickets")]
    TooManyPartyTickets,
}

/// What a client asks for (`matchmaker_add`).
#[derive(Debug, Clone, PartialEq)]
pub struct TicketRequest {
    /// `*` or empty matches any ticket.
    pub query: String,
    pub min_count: u32,
    pub max_count: u32,
    pub count_multiple: u32,
    pub string_properties: HashMap<String, String>,
    pub numeric_properties: HashMap<String, f64>,
}

/// One matched player, with the properties of its ticket (`MatchmakerUser`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchedEntry {
    pub ticket: String,
    pub presence: Arc<Presence>,
    pub party_id: String,
    pub string_properties: HashMap<String, String>,
    pub numeric_properties: HashMap<String, f64>,
    /// When the ticket was made, wall time in ms (for `GET /v2/matchmaker/stats`).
    pub created_ms: i64,
}

/// A ticket as the cluster forwards it to the node that runs the pool: everything the pool
/// needs to match it again elsewhere, under the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketCopy {
    pub id: Uuid,
    pub created_ms: i64,
    pub presences: Vec<Arc<Presence>>,
    pub party_id: String,
    pub request: TicketRequest,
}

/// The pool as `GET /v2/matchmaker/stats` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Tickets in the pool.
    pub tickets: usize,
    /// When the oldest ticket in the pool was made (wall ms); `None` when the pool is empty.
    pub oldest_created_ms: Option<i64>,
}

#[derive(Debug)]
struct Ticket {
    id: Uuid,
    seq: u64,
    created_ms: i64,
    presences: Vec<Arc<Presence>>,
    party_id: String,
    request: TicketRequest,
    query: Query,
    fields: Fields,
    intervals: u32,
    active: bool,
    /// The node that owns this ticket when it is a copy held by the cluster's pool node
    /// (`None`: this node's own ticket).
    copy_of: Option<Arc<str>>,
}

impl Ticket {
    fn count(&self) -> u32 {
        self.presences.len() as u32
    }

    fn shares_session(&self, other: &Ticket) -> bool {
        self.presences
            .iter()
            .any(|p| other.presences.iter().any(|o| o.session_id == p.session_id))
    }
}

/// The ticket pool.
#[derive(Debug)]
pub struct Matchmaker {
    config: MatchmakerConfig,
    tickets: HashMap<Uuid, Ticket>,
    /// Tickets by age.
    order: BTreeMap<u64, Uuid>,
    by_session: HashMap<Uuid, Vec<Uuid>>,
    /// Tickets of each party (`party_matchmaker_add`), by party id.
    by_party: HashMap<String, Vec<Uuid>>,
    seq: u64,
    /// Copies of other nodes' tickets among `tickets`.
    copies: usize,
}

impl Matchmaker {
    pub fn new(config: MatchmakerConfig) -> Matchmaker {
        Matchmaker {
            config,
            tickets: HashMap::new(),
            order: BTreeMap::new(),
            by_session: HashMap::new(),
            by_party: HashMap::new(),
            seq: 0,
            copies: 0,
        }
    }

    pub fn config(&self) -> &MatchmakerConfig {
        &self.config
    }

    /// Tickets in the pool.
    pub fn len(&self) -> usize {
        self.tickets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }

    /// Tickets waiting and the oldest one's creation time.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            tickets: self.tickets.len(),
            oldest_created_ms: self.tickets.values().map(|t| t.created_ms).min(),
        }
    }

    /// Checks a request as Nakama's `matchmaker_add` does.
    pub fn validate(request: &TicketRequest) -> Result<Query, MatchmakerError> {
        if request.min_count < 2 {
            return Err(MatchmakerError::MinCount);
        }
        if request.max_count < request.min_count {
            return Err(MatchmakerError::MaxCount);
        }
        let multiple = request.count_multiple;
        if multiple < 1 {
            return Err(MatchmakerError::CountMultiple);
        }
        if !request.min_count.is_multiple_of(multiple) {
            return Err(MatchmakerError::MultipleMin);
        }
        if !request.max_count.is_multiple_of(multiple) {
            return Err(MatchmakerError::MultipleMax);
        }
        Ok(Query::parse(&request.query)?)
    }

    /// Adds a ticket for `presence` (one session). `created_ms` is wall time, for ordering
    /// equal scores and for `created_at` queries.
    pub fn add(
        &mut self,
        presence: Arc<Presence>,
        request: TicketRequest,
        created_ms: i64,
    ) -> Result<String, MatchmakerError> {
        let query = Matchmaker::validate(&request)?;
        let session = presence.session_id;
        let held = self.by_session.get(&session).map_or(0, Vec::len);
        if held >= self.config.max_tickets {
            return Err(MatchmakerError::TooManyTickets {
                limit: self.config.max_tickets,
            });
        }
        let fields = Matchmaker::fields(&request, created_ms);
        Ok(self.insert(
            Uuid::new_v4(),
            None,
            vec![presence],
            String::new(),
            request,
            query,
            fields,
            created_ms,
        ))
    }

    /// Adds one ticket for a whole party (`party_matchmaker_add`): its members match as one
    /// unit, never with another ticket of the same party. Refused when the party or any
    /// member already holds `matchmaker.max_tickets` tickets, or a session appears twice.
    pub fn add_party(
        &mut self,
        party_id: &str,
        presences: Vec<Arc<Presence>>,
        request: TicketRequest,
        created_ms: i64,
    ) -> Result<String, MatchmakerError> {
        let query = Matchmaker::validate(&request)?;
        let mut sessions = HashSet::with_capacity(presences.len());
        if !presences.iter().all(|p| sessions.insert(p.session_id)) {
            return Err(MatchmakerError::DuplicateSession);
        }
        let limit = self.config.max_tickets;
        let member_full = presences
            .iter()
            .any(|p| self.by_session.get(&p.session_id).map_or(0, Vec::len) >= limit);
        let party_full = self.by_party.get(party_id).map_or(0, Vec::len) >= limit;
        if member_full || party_full {
            return Err(MatchmakerError::TooManyPartyTickets);
        }
        let fields = Matchmaker::fields(&request, created_ms);
        Ok(self.insert(
            Uuid::new_v4(),
            None,
            presences,
            party_id.to_owned(),
            request,
            query,
            fields,
            created_ms,
        ))
    }

    /// Removes one ticket of a party (`party_matchmaker_remove`); a session's own ticket is
    /// not a party's.
    pub fn remove_party(&mut self, party_id: &str, ticket: &str) -> Result<(), MatchmakerError> {
        let id = Uuid::parse_str(ticket).map_err(|_| MatchmakerError::TicketNotFound)?;
        let owned = self
            .by_party
            .get(party_id)
            .is_some_and(|tickets| tickets.contains(&id));
        if !owned {
            return Err(MatchmakerError::TicketNotFound);
        }
        self.drop_ticket(id);
        Ok(())
    }

    /// Removes every ticket of a party (its members changed, or it closed). Returns how many.
    pub fn remove_party_all(&mut self, party_id: &str) -> usize {
        self.remove_party_all_ids(party_id).len()
    }

    /// [`Matchmaker::remove_party_all`], naming the tickets removed.
    pub fn remove_party_all_ids(&mut self, party_id: &str) -> Vec<Uuid> {
        let tickets = self.by_party.remove(party_id).unwrap_or_default();
        for id in &tickets {
            self.drop_ticket(*id);
        }
        tickets
    }

    fn fields(request: &TicketRequest, created_ms: i64) -> Fields {
        let mut fields = Fields::new();
        for (key, value) in &request.string_properties {
            fields.keyword(&format!("properties.{key}"), value);
        }
        for (key, value) in &request.numeric_properties {
            fields.number(&format!("properties.{key}"), *value);
        }
        fields.number("min_count", f64::from(request.min_count));
        fields.number("max_count", f64::from(request.max_count));
        fields.number("created_at", created_ms as f64);
        fields.finish()
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        id: Uuid,
        copy_of: Option<Arc<str>>,
        presences: Vec<Arc<Presence>>,
        party_id: String,
        request: TicketRequest,
        query: Query,
        fields: Fields,
        created_ms: i64,
    ) -> String {
        self.seq += 1;
        if copy_of.is_some() {
            self.copies += 1;
        }
        for p in &presences {
            self.by_session.entry(p.session_id).or_default().push(id);
        }
        if !party_id.is_empty() {
            self.by_party.entry(party_id.clone()).or_default().push(id);
        }
        let ticket = Ticket {
            id,
            seq: self.seq,
            created_ms,
            presences,
            party_id,
            request,
            query,
            fields,
            intervals: 0,
            active: true,
            copy_of,
        };
        self.order.insert(ticket.seq, id);
        self.tickets.insert(id, ticket);
        id.to_string()
    }

    /// Removes one ticket of a session (`matchmaker_remove`).
    pub fn remove(&mut self, session: Uuid, ticket: &str) -> Result<(), MatchmakerError> {
        let id = Uuid::parse_str(ticket).map_err(|_| MatchmakerError::TicketNotFound)?;
        // A party ticket is the party's: a member cannot remove it as its own.
        let owned = self
            .by_session
            .get(&session)
            .is_some_and(|tickets| tickets.contains(&id))
            && self.tickets.get(&id).is_some_and(|t| t.party_id.is_empty());
        if !owned {
            return Err(MatchmakerError::TicketNotFound);
        }
        self.drop_ticket(id);
        Ok(())
    }

    /// Removes every ticket of a session (it ended). Returns how many.
    pub fn remove_session(&mut self, session: Uuid) -> usize {
        self.remove_session_ids(session).len()
    }

    /// [`Matchmaker::remove_session`], naming the tickets removed.
    pub fn remove_session_ids(&mut self, session: Uuid) -> Vec<Uuid> {
        let tickets = self.by_session.remove(&session).unwrap_or_default();
        for id in &tickets {
            self.drop_ticket(*id);
        }
        tickets
    }

    /// A ticket of this node as the cluster forwards it (`None` for a copy or an unknown id).
    pub fn own_copy(&self, id: Uuid) -> Option<TicketCopy> {
        let ticket = self.tickets.get(&id).filter(|t| t.copy_of.is_none())?;
        Some(TicketCopy {
            id,
            created_ms: ticket.created_ms,
            presences: ticket.presences.clone(),
            party_id: ticket.party_id.clone(),
            request: ticket.request.clone(),
        })
    }

    /// This node's own tickets (not the copies it holds for others), oldest first.
    pub fn own_tickets(&self) -> Vec<TicketCopy> {
        self.order
            .values()
            .filter_map(|id| self.own_copy(*id))
            .collect()
    }

    /// Holds another node's ticket (this node runs the cluster's pool). Its owner checked the
    /// request and the limits; a ticket already held is left as it is.
    pub fn insert_copy(
        &mut self,
        owner: Arc<str>,
        copy: TicketCopy,
    ) -> Result<(), MatchmakerError> {
        if self.tickets.contains_key(&copy.id) {
            return Ok(());
        }
        let query = Matchmaker::validate(&copy.request)?;
        let fields = Matchmaker::fields(&copy.request, copy.created_ms);
        self.insert(
            copy.id,
            Some(owner),
            copy.presences,
            copy.party_id,
            copy.request,
            query,
            fields,
            copy.created_ms,
        );
        Ok(())
    }

    /// Drops copies of other nodes' tickets: those of `owner`, or all of them. Returns how many.
    pub fn drop_copies(&mut self, owner: Option<&str>) -> usize {
        let ids: Vec<Uuid> = self
            .tickets
            .values()
            .filter(|t| match (&t.copy_of, owner) {
                (Some(of), Some(owner)) => &**of == owner,
                (Some(_), None) => true,
                (None, _) => false,
            })
            .map(|t| t.id)
            .collect();
        for id in &ids {
            self.drop_ticket(*id);
        }
        ids.len()
    }

    /// Drops one copy of `owner`'s ticket (its owner removed it).
    pub fn remove_copy(&mut self, owner: &str, id: Uuid) -> bool {
        let held = self
            .tickets
            .get(&id)
            .is_some_and(|t| t.copy_of.as_deref() == Some(owner));
        if held {
            self.drop_ticket(id);
        }
        held
    }

    /// Drops this node's own ticket `id` (the pool elsewhere matched it); false when it is not
    /// held any more.
    pub fn take_own(&mut self, id: Uuid) -> bool {
        let held = self.tickets.get(&id).is_some_and(|t| t.copy_of.is_none());
        if held {
            self.drop_ticket(id);
        }
        held
    }

    /// The nodes whose tickets this pool holds copies of.
    pub fn copy_owners(&self) -> Vec<Arc<str>> {
        let mut owners: Vec<Arc<str>> = self
            .tickets
            .values()
            .filter_map(|t| t.copy_of.clone())
            .collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// Copies of other nodes' tickets held.
    pub fn copies(&self) -> usize {
        self.copies
    }

    fn drop_ticket(&mut self, id: Uuid) {
        let Some(ticket) = self.tickets.remove(&id) else {
            return;
        };
        if ticket.copy_of.is_some() {
            self.copies -= 1;
        }
        self.order.remove(&ticket.seq);
        if let Some(list) = self.by_party.get_mut(&ticket.party_id) {
            list.retain(|t| *t != id);
            if list.is_empty() {
                self.by_party.remove(&ticket.party_id);
            }
        }
        for p in &ticket.presences {
            if let Some(list) = self.by_session.get_mut(&p.session_id) {
                list.retain(|t| *t != id);
                if list.is_empty() {
                    self.by_session.remove(&p.session_id);
                }
            }
        }
    }

    /// One matchmaking pass: the groups formed, their tickets removed from the pool.
    pub fn process(&mut self) -> Vec<Vec<MatchedEntry>> {
        let max_intervals = self.config.max_intervals;
        let active: Vec<Uuid> = self
            .order
            .values()
            .filter(|id| self.tickets.get(id).is_some_and(|t| t.active))
            .copied()
            .collect();
        let mut selected: HashSet<Uuid> = HashSet::new();
        let mut groups: Vec<Vec<Uuid>> = Vec::new();
        for id in active {
            if selected.contains(&id) {
                continue;
            }
            let last_interval = {
                let Some(ticket) = self.tickets.get_mut(&id) else {
                    continue;
                };
                ticket.intervals += 1;
                let last = ticket.intervals >= max_intervals
                    || ticket.request.min_count == ticket.request.max_count;
                if last {
                    ticket.active = false;
                }
                last
            };
            if let Some(group) = self.search(id, last_interval, &selected) {
                selected.extend(group.iter().copied());
                groups.push(group);
            }
        }
        let mut matched = Vec::with_capacity(groups.len());
        for group in groups {
            let mut entries = Vec::new();
            for id in &group {
                let Some(ticket) = self.tickets.get(id) else {
                    continue;
                };
                for presence in &ticket.presences {
                    entries.push(MatchedEntry {
                        ticket: ticket.id.to_string(),
                        presence: presence.clone(),
                        party_id: ticket.party_id.clone(),
                        string_properties: ticket.request.string_properties.clone(),
                        numeric_properties: ticket.request.numeric_properties.clone(),
                        created_ms: ticket.created_ms,
                    });
                }
            }
            for id in group {
                self.drop_ticket(id);
            }
            matched.push(entries);
        }
        matched
    }

    /// The group ticket `id` forms in this pass, itself last, if any.
    fn search(&self, id: Uuid, last_interval: bool, selected: &HashSet<Uuid>) -> Option<Vec<Uuid>> {
        let me = self.tickets.get(&id)?;
        let (min, max) = (me.request.min_count, me.request.max_count);
        let mut hits: Vec<(f64, u64, &Ticket)> = self
            .order
            .values()
            .filter(|other| **other != id && !selected.contains(*other))
            .filter_map(|other| self.tickets.get(other))
            .filter(|t| t.request.min_count >= min && t.request.max_count <= max)
            .filter(|t| me.party_id.is_empty() || t.party_id != me.party_id)
            .filter_map(|t| me.query.score(&t.fields).map(|score| (score, t.seq, t)))
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

        let mut combos: Vec<Vec<&Ticket>> = Vec::new();
        let last_hit = hits.len().saturating_sub(1);
        for (index, (_, _, hit)) in hits.iter().enumerate() {
            if self.config.rev_precision && !hit.query.matches(&me.fields) {
                continue;
            }
            if max < hit.request.max_count && hit.intervals <= self.config.max_intervals {
                continue;
            }
            if me.shares_session(hit) {
                continue;
            }
            let mut found = None;
            for (at, combo) in combos.iter_mut().enumerate() {
                let size: u32 = combo.iter().map(|t| t.count()).sum();
                if size + hit.count() + me.count() > max {
                    continue;
                }
                if combo.iter().any(|t| t.shares_session(hit)) {
                    continue;
                }
                if self.config.rev_precision
                    && combo
                        .iter()
                        .any(|t| !hit.query.matches(&t.fields) || !t.query.matches(&hit.fields))
                {
                    continue;
                }
                combo.push(hit);
                found = Some(at);
                break;
            }
            let at = match found {
                Some(at) => at,
                None => {
                    combos.push(vec![hit]);
                    combos.len() - 1
                }
            };
            let mut size: u32 = combos[at].iter().map(|t| t.count()).sum::<u32>() + me.count();
            let complete =
                size == max || (last_interval && size >= min && size <= max && index >= last_hit);
            if !complete {
                continue;
            }
            let multiple = me.request.count_multiple.max(1);
            let mut combo = combos[at].clone();
            let remainder = size % multiple;
            if remainder != 0 {
                // Drop the newest tickets whose counts add up to the remainder.
                let mut need = remainder;
                let mut newest_first: Vec<&Ticket> = combo.clone();
                newest_first.sort_by_key(|t| std::cmp::Reverse(t.seq));
                let mut dropped = Vec::new();
                for t in newest_first {
                    if need > 0 && t.count() <= need {
                        need -= t.count();
                        dropped.push(t.id);
                    }
                }
                if need != 0 {
                    continue;
                }
                combo.retain(|t| !dropped.contains(&t.id));
                size = combo.iter().map(|t| t.count()).sum::<u32>() + me.count();
                if !size.is_multiple_of(multiple) || size < min {
                    continue;
                }
            }
            let fits = |t: &Ticket| {
                t.request.min_count <= size
                    && size <= t.request.max_count
                    && size.is_multiple_of(t.request.count_multiple.max(1))
            };
            if !combo.iter().all(|t| fits(t)) || !fits(me) {
                continue;
            }
            let mut group: Vec<Uuid> = combo.iter().map(|t| t.id).collect();
            group.push(id);
            return Some(group);
        }
        None
    }
}

//! Relayed matches: client-driven, no handler, no ticks. The server only keeps who is in each
//! and relays match data between them as it arrives (on the sender's IO thread).

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use crate::error::MatchError;
use crate::id::MatchId;
use crate::listing::{ListQuery, MatchInfo};
use crate::metrics;
use crate::outlet::{OutgoingData, PresenceEvent};
use crate::presence::{Presence, PresenceReason};
use crate::registry::Matches;
use crate::shared::Queued;

/// One relayed match.
#[derive(Debug)]
pub(crate) struct Relayed {
    seq: u64,
    create_time_ms: i64,
    id_text: Arc<str>,
    members: Vec<Arc<Presence>>,
    /// Members whose join is not announced yet: the first completion after a join announces
    /// it, a repeated one (or one cast again by another node) does not, as for an
    /// authoritative match's accepted joins.
    unannounced: Vec<Uuid>,
}

/// The answer to creating or joining a relayed match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedJoin {
    pub match_id: MatchId,
    /// The other members (the caller too when it was already in).
    pub presences: Vec<Arc<Presence>>,
    /// Members now, the caller included.
    pub members: usize,
    /// False when the caller was already in (nothing to announce).
    pub is_new: bool,
}

impl Relayed {
    pub(crate) fn members(&self) -> &[Arc<Presence>] {
        &self.members
    }

    pub(crate) fn id_text(&self) -> &str {
        &self.id_text
    }
}

impl Matches {
    /// `match_create`: a relayed match with a random id, or with the id derived from `name`
    /// (joining it if it exists, as Nakama does). Call [`Matches::complete_join`] after
    /// answering the client.
    pub fn create_relayed(
        &self,
        name: Option<&str>,
        presence: Arc<Presence>,
    ) -> Result<RelayedJoin, MatchError> {
        let uuid = match name.filter(|n| !n.is_empty()) {
            Some(name) => uuid_v5(name),
            None => Uuid::new_v4(),
        };
        // A new match on a draining or full node is refused; joining an existing named one
        // is not a new match.
        if !self.has_relayed(uuid) {
            if self.is_draining() {
                return Err(MatchError::ShuttingDown);
            }
            if let Some(refusal) = self.admission_refusal() {
                metrics::refused(refusal.label());
                return Err(refusal.into_error());
            }
        }
        self.enter_relayed(uuid, presence, true)
            .ok_or(MatchError::NotFound)
    }

    /// `match_join` of a relayed match. With `create` (a matchmaker token) a match that does
    /// not exist yet is created; otherwise `None` means "Match not found".
    pub fn join_relayed(
        &self,
        uuid: Uuid,
        presence: Arc<Presence>,
        create: bool,
    ) -> Option<RelayedJoin> {
        let joined = self.enter_relayed(uuid, presence, create);
        metrics::join(
            "relayed",
            match &joined {
                Some(j) if j.is_new => "accepted",
                Some(_) => "already_in",
                None => "not_found",
            },
        );
        joined
    }

    /// [`Matches::create_relayed`] that, for a named match this node does not have, first
    /// looks for it on the other nodes of a cluster and joins it there.
    pub async fn create_relayed_anywhere(
        &self,
        name: Option<&str>,
        presence: Arc<Presence>,
    ) -> Result<RelayedJoin, MatchError> {
        if let Some(name) = name.filter(|n| !n.is_empty())
            && let Some(remote) = self.inner.remote.get()
        {
            let uuid = uuid_v5(name);
            if !self.has_relayed(uuid)
                && let Some(joined) = remote.join_relayed(uuid, presence.clone()).await
            {
                return Ok(joined);
            }
        }
        self.create_relayed(name, presence)
    }

    /// [`Matches::join_relayed`] by id that also finds the match on another node of a
    /// cluster when this node does not have it (`None`: "Match not found"). With `create` (a
    /// matchmaker token) the match is created here only when no node has it yet, so the
    /// group's players on several nodes meet in one match.
    pub async fn join_relayed_anywhere(
        &self,
        uuid: Uuid,
        presence: Arc<Presence>,
        create: bool,
    ) -> Option<RelayedJoin> {
        if !self.has_relayed(uuid)
            && let Some(remote) = self.inner.remote.get()
        {
            let joined = remote.join_relayed(uuid, presence.clone()).await;
            if joined.is_some() || !create {
                return joined;
            }
        }
        self.join_relayed(uuid, presence, create)
    }

    fn enter_relayed(
        &self,
        uuid: Uuid,
        presence: Arc<Presence>,
        create: bool,
    ) -> Option<RelayedJoin> {
        let inner = &self.inner;
        let session = presence.session_id;
        // Registered before the connection check, so a session ending concurrently either is
        // seen as gone here or finds this match in its list and leaves it.
        inner.session_entered(session, uuid);
        if !inner.outlet.is_connected(session) {
            inner.session_exited(session, uuid);
            return None;
        }
        let mut relayed = inner.relayed.write();
        let count = relayed.len();
        let entry = match relayed.get_mut(&uuid) {
            Some(entry) => entry,
            None if create => {
                let entry = Relayed {
                    seq: inner.next_seq(),
                    create_time_ms: inner.wall.now_ms(),
                    id_text: Arc::from(MatchId::relayed(uuid).to_string()),
                    members: Vec::new(),
                    unannounced: Vec::new(),
                };
                metrics::relayed(count + 1);
                relayed.entry(uuid).or_insert(entry)
            }
            None => {
                drop(relayed);
                inner.session_exited(session, uuid);
                return None;
            }
        };
        let is_new = !entry.members.iter().any(|p| p.session_id == session);
        if is_new {
            entry.members.push(presence);
            entry.unannounced.push(session);
        }
        let presences = entry
            .members
            .iter()
            .filter(|p| !is_new || p.session_id != session)
            .cloned()
            .collect();
        Some(RelayedJoin {
            match_id: MatchId::relayed(uuid),
            presences,
            members: entry.members.len(),
            is_new,
        })
    }

    /// Announces a member's join to everyone in the match, the joiner included (as Nakama's
    /// tracker does), after its client got the answer; once per join (a repeated completion
    /// sends nothing). False when this node has no such match or member.
    pub(crate) fn relayed_announce(&self, uuid: Uuid, session: Uuid) -> bool {
        let mut relayed = self.inner.relayed.write();
        let Some(entry) = relayed.get_mut(&uuid) else {
            return false;
        };
        let Some(presence) = entry.members.iter().find(|p| p.session_id == session) else {
            return false;
        };
        let Some(at) = entry.unannounced.iter().position(|s| *s == session) else {
            // Announced already: handled here, nothing to send.
            return true;
        };
        entry.unannounced.swap_remove(at);
        let sessions: Vec<Uuid> = entry.members.iter().map(|p| p.session_id).collect();
        self.inner.outlet.send_presences(
            &sessions,
            &PresenceEvent {
                match_id: &entry.id_text,
                joins: std::slice::from_ref(presence),
                leaves: &[],
            },
        );
        self.inner.outlet.flush();
        true
    }

    /// A member leaves; the others are told; an empty match disappears. False when this node
    /// has no such match.
    pub(crate) fn relayed_leave(&self, uuid: Uuid, session: Uuid, _reason: PresenceReason) -> bool {
        let inner = &self.inner;
        inner.session_exited(session, uuid);
        let mut relayed = inner.relayed.write();
        let Some(entry) = relayed.get_mut(&uuid) else {
            return false;
        };
        let Some(at) = entry.members.iter().position(|p| p.session_id == session) else {
            return true;
        };
        let left = entry.members.swap_remove(at);
        entry.unannounced.retain(|s| *s != session);
        if entry.members.is_empty() {
            relayed.remove(&uuid);
            metrics::relayed(relayed.len());
            return true;
        }
        let sessions: Vec<Uuid> = entry.members.iter().map(|p| p.session_id).collect();
        inner.outlet.send_presences(
            &sessions,
            &PresenceEvent {
                match_id: &entry.id_text,
                joins: &[],
                leaves: std::slice::from_ref(&left),
            },
        );
        inner.outlet.flush();
        true
    }

    /// Relays match data: to every other member, or to the members listed in `to` (the
    /// sender only if listed). A sender that is not a member is ignored.
    #[allow(clippy::too_many_arguments)] // the fields of the client's match_data_send
    pub(crate) fn relayed_send(
        &self,
        id: &MatchId,
        session: Uuid,
        op_code: i64,
        data: &Bytes,
        reliable: bool,
        delivery: Option<&metafi_proto::realtime::Delivery>,
        to: &[Uuid],
    ) -> Queued {
        let relayed = self.inner.relayed.read();
        let Some(entry) = relayed.get(&id.uuid()) else {
            return Queued::Ended;
        };
        let Some(sender) = entry.members.iter().find(|p| p.session_id == session) else {
            return Queued::NotMember;
        };
        let recipients: Vec<Uuid> = entry
            .members
            .iter()
            .map(|p| p.session_id)
            .filter(|s| {
                if to.is_empty() {
                    *s != session
                } else {
                    to.contains(s)
                }
            })
            .collect();
        if !recipients.is_empty() {
            self.inner.outlet.send_data(
                &recipients,
                &OutgoingData {
                    match_id: &entry.id_text,
                    op_code,
                    data,
                    sender: Some(sender),
                    reliable,
                    delivery,
                },
            );
            self.inner.outlet.flush();
        }
        Queued::Queued
    }

    pub(crate) fn relayed_info(&self, uuid: Uuid) -> Option<MatchInfo> {
        let relayed = self.inner.relayed.read();
        let entry = relayed.get(&uuid)?;
        Some(MatchInfo {
            match_id: entry.id_text.to_string(),
            authoritative: false,
            label: None,
            size: entry.members.len() as i32,
            tick_rate: None,
            handler_name: None,
        })
    }

    /// Appends relayed matches (newest first) that pass the size filters.
    pub(crate) fn list_relayed(&self, filters: &ListQuery, results: &mut Vec<MatchInfo>) {
        let relayed = self.inner.relayed.read();
        let mut all: Vec<&Relayed> = relayed.values().collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.seq));
        for entry in all {
            if results.len() >= filters.limit {
                break;
            }
            let size = entry.members.len() as i32;
            if !filters.size_ok(size) {
                continue;
            }
            results.push(MatchInfo {
                match_id: entry.id_text.to_string(),
                authoritative: false,
                label: filters.label.clone(),
                size,
                tick_rate: None,
                handler_name: None,
            });
        }
    }

    /// Every relayed match of this node, as other nodes list it.
    pub(crate) fn listed_relayed(&self, out: &mut Vec<crate::remote::ListedMatch>) {
        let relayed = self.inner.relayed.read();
        out.extend(relayed.values().map(|entry| crate::remote::ListedMatch {
            match_id: entry.id_text.to_string(),
            authoritative: false,
            label: None,
            size: entry.members.len() as i32,
            tick_rate: None,
            handler_name: None,
            create_time_ms: entry.create_time_ms,
        }));
    }

    /// Whether this node has the relayed match `uuid`.
    pub fn has_relayed(&self, uuid: Uuid) -> bool {
        self.inner.relayed.read().contains_key(&uuid)
    }

    /// Relayed matches now.
    pub fn relayed_count(&self) -> usize {
        self.inner.relayed.read().len()
    }
}

/// UUID v5 of `name` in the DNS namespace, as Nakama names relayed matches.
fn uuid_v5(name: &str) -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_DNS, name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_matches_get_nakamas_uuid_v5() {
        // uuid.NewV5(uuid.NamespaceDNS, "python.org") is the RFC 4122 example value.
        assert_eq!(
            uuid_v5("python.org").to_string(),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d"
        );
    }
}

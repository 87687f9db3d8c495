//! One party, sans-IO: its members (in join order), leader, join requests and label. Every
//! operation checks Nakama's rules and hands back what to send to whom ([`Effects`]); the
//! caller owns the sessions and the matchmaker. Rules are Nakama's (`server/party_handler.go`):
//! - the oldest member leads when the leader leaves; the party closes when its last member
//!   leaves or its leader closes it;
//! - an open party takes joiners at once; a closed one queues join requests (at most
//!   `max_size`, one per user) that the leader accepts or removes;
//! - any change of members cancels the party's matchmaker tickets.

use bytes::Bytes;
use metafi_proto::realtime::{
    Message, Party, PartyClose, PartyData, PartyJoinRequest, PartyLeader, PartyPresenceEvent,
    PartyUpdate, UserPresence,
};
use serde_json::Value;
use uuid::Uuid;

use super::PartyError;

/// Longest label, in bytes (Nakama's `PartyLabelMaxBytes`).
pub const MAX_LABEL_BYTES: usize = 2048;

/// One session of a user, as a party knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
}

impl Member {
    pub fn wire(&self) -> UserPresence {
        UserPresence {
            user_id: self.user_id.to_string(),
            session_id: self.session_id.to_string(),
            username: self.username.clone(),
            persistence: false,
            status: None,
        }
    }

    /// Whether a presence a client sent names this member (session, user and username, as
    /// Nakama compares them).
    fn is(&self, presence: &UserPresence) -> bool {
        self.session_id.to_string() == presence.session_id
            && self.user_id.to_string() == presence.user_id
            && self.username == presence.username
    }
}

/// What an operation asks the caller to do.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    /// Messages to sessions (pushed: no `cid`), in order.
    pub sends: Vec<(Vec<Uuid>, Message)>,
    /// The party's matchmaker tickets must go (its members changed, or it closed).
    pub cancel_tickets: bool,
    /// The party is over: the caller forgets it.
    pub closed: bool,
    /// Sessions no longer in the party (as members or with a join request) after the
    /// operation; filled by the registry ([`super::Parties`]), not by the state machine.
    pub left: Vec<Uuid>,
}

impl Effects {
    fn send(&mut self, to: Vec<Uuid>, message: Message) {
        if !to.is_empty() {
            self.sends.push((to, message));
        }
    }
}

/// What a join did.
#[derive(Debug, PartialEq)]
pub enum Joined {
    /// The session is a member now (or already was).
    Member,
    /// The party is closed: a join request went to the leader.
    Requested,
}

/// A label checked as Nakama checks it: at most 2 KiB, a JSON object; empty means `{}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub text: String,
    pub value: Value,
}

impl Label {
    pub fn parse(text: &str) -> Result<Label, PartyError> {
        let text = if text.is_empty() { "{}" } else { text };
        if text.len() > MAX_LABEL_BYTES {
            return Err(PartyError::LabelTooLong);
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => Ok(Label {
                text: text.to_owned(),
                value,
            }),
            Ok(_) => Err(PartyError::LabelInvalid(
                "the label must be a JSON object".into(),
            )),
            Err(e) => Err(PartyError::LabelInvalid(e.to_string())),
        }
    }
}

/// One party.
#[derive(Debug)]
pub struct PartyState {
    /// `uuid.node`, as clients name it.
    pub id: String,
    pub open: bool,
    pub hidden: bool,
    pub max_size: usize,
    pub label: Label,
    /// Creation order among parties, for stable listings.
    pub seq: u64,
    /// Members in join order: the first is the oldest, who leads when the leader leaves.
    members: Vec<Member>,
    /// The leader's session; always a member while the party lives.
    leader: Uuid,
    /// Pending join requests of a closed party, oldest first.
    requests: Vec<Member>,
}

impl PartyState {
    /// A party led by its creator.
    pub fn new(
        id: String,
        seq: u64,
        open: bool,
        hidden: bool,
        max_size: usize,
        label: Label,
        leader: Member,
    ) -> PartyState {
        PartyState {
            id,
            open,
            hidden,
            max_size,
            label,
            seq,
            leader: leader.session_id,
            members: vec![leader],
            requests: Vec::new(),
        }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn leader(&self) -> &Member {
        // Invariant: the leader is a member (set from members, replaced when it leaves).
        self.members
            .iter()
            .find(|m| m.session_id == self.leader)
            .unwrap_or(&self.members[0])
    }

    pub fn is_member(&self, session_id: Uuid) -> bool {
        self.members.iter().any(|m| m.session_id == session_id)
    }

    pub fn has_request(&self, session_id: Uuid) -> bool {
        self.requests.iter().any(|m| m.session_id == session_id)
    }

    /// The `Party` message a member is sent: `self_presence` is `to`.
    pub fn describe(&self, to: &Member) -> Party {
        Party {
            party_id: self.id.clone(),
            open: self.open,
            hidden: self.hidden,
            max_size: self.max_size as i32,
            self_presence: Some(to.wire()),
            leader: Some(self.leader().wire()),
            presences: self.members.iter().map(Member::wire).collect(),
            label: self.label.text.clone(),
        }
    }

    fn sessions(&self) -> Vec<Uuid> {
        self.members.iter().map(|m| m.session_id).collect()
    }

    fn require_leader(&self, session_id: Uuid) -> Result<(), PartyError> {
        if self.leader == session_id {
            Ok(())
        } else {
            Err(PartyError::NotLeader)
        }
    }

    /// `party_join`: an open party takes the session at once, a closed one queues a request
    /// and tells the leader.
    pub fn join(&mut self, member: Member) -> Result<(Joined, Effects), PartyError> {
        let mut effects = Effects::default();
        if self.members.len() >= self.max_size {
            return Err(PartyError::Full);
        }
        if self.open {
            if !self.is_member(member.session_id) {
                self.admit(member, &mut effects);
            }
            return Ok((Joined::Member, effects));
        }
        if self.requests.len() >= self.max_size {
            return Err(PartyError::JoinRequestsFull);
        }
        if self.requests.iter().any(|r| r.user_id == member.user_id) {
            return Err(PartyError::JoinRequestDuplicate);
        }
        if self.members.iter().any(|m| m.user_id == member.user_id) {
            return Err(PartyError::AlreadyMember);
        }
        effects.send(
            vec![self.leader],
            Message::PartyJoinRequest(PartyJoinRequest {
                party_id: self.id.clone(),
                presences: vec![member.wire()],
            }),
        );
        self.requests.push(member);
        Ok((Joined::Requested, effects))
    }

    /// Adds a member: it is sent the party, every member (itself included) the join.
    fn admit(&mut self, member: Member, effects: &mut Effects) {
        let join = member.wire();
        let to = member.session_id;
        self.members.push(member);
        let described = self.describe(&self.members[self.members.len() - 1]);
        effects.send(vec![to], Message::Party(described));
        effects.send(
            self.sessions(),
            Message::PartyPresenceEvent(PartyPresenceEvent {
                party_id: self.id.clone(),
                joins: vec![join],
                leaves: Vec::new(),
            }),
        );
        effects.cancel_tickets = true;
    }

    /// A session leaves (`party_leave`, a removal, or its socket ended). Not a member: nothing
    /// happens. The remaining members see the leave; if it led, the oldest member leads and
    /// everyone is told; if it was the last, the party closes.
    pub fn leave(&mut self, session_id: Uuid) -> Effects {
        let mut effects = Effects::default();
        let Some(at) = self.members.iter().position(|m| m.session_id == session_id) else {
            return effects;
        };
        let gone = self.members.remove(at);
        effects.cancel_tickets = true;
        if self.members.is_empty() {
            effects.closed = true;
            return effects;
        }
        effects.send(
            self.sessions(),
            Message::PartyPresenceEvent(PartyPresenceEvent {
                party_id: self.id.clone(),
                joins: Vec::new(),
                leaves: vec![gone.wire()],
            }),
        );
        if self.leader == session_id {
            self.leader = self.members[0].session_id;
            effects.send(
                self.sessions(),
                Message::PartyLeader(PartyLeader {
                    party_id: self.id.clone(),
                    presence: Some(self.members[0].wire()),
                }),
            );
        }
        effects
    }

    /// Drops a session's join request (its socket ended).
    pub fn forget_request(&mut self, session_id: Uuid) {
        self.requests.retain(|r| r.session_id != session_id);
    }

    /// `party_promote`: the leader hands over to another member.
    pub fn promote(&mut self, by: Uuid, presence: &UserPresence) -> Result<Effects, PartyError> {
        self.require_leader(by)?;
        let member = self
            .members
            .iter()
            .find(|m| m.is(presence))
            .ok_or(PartyError::NotMember)?;
        self.leader = member.session_id;
        let mut effects = Effects::default();
        effects.send(
            self.sessions(),
            Message::PartyLeader(PartyLeader {
                party_id: self.id.clone(),
                presence: Some(member.wire()),
            }),
        );
        Ok(effects)
    }

    /// `party_accept`: the leader admits a session that asked to join.
    pub fn accept(&mut self, by: Uuid, presence: &UserPresence) -> Result<Effects, PartyError> {
        self.require_leader(by)?;
        if self.members.len() >= self.max_size {
            return Err(PartyError::Full);
        }
        let at = self
            .requests
            .iter()
            .position(|r| r.is(presence))
            .ok_or(PartyError::NotRequest)?;
        let member = self.requests.remove(at);
        let mut effects = Effects::default();
        if !self.is_member(member.session_id) {
            self.admit(member, &mut effects);
        }
        Ok(effects)
    }

    /// `party_remove`: the leader removes a member (who is sent `party_close`) or refuses a
    /// join request (silently).
    pub fn remove(&mut self, by: Uuid, presence: &UserPresence) -> Result<Effects, PartyError> {
        self.require_leader(by)?;
        if self.leader().is(presence) {
            return Err(PartyError::RemoveSelf);
        }
        if let Some(member) = self.members.iter().find(|m| m.is(presence)) {
            let removed = member.session_id;
            let mut effects = Effects::default();
            effects.send(
                vec![removed],
                Message::PartyClose(PartyClose {
                    party_id: self.id.clone(),
                }),
            );
            let left = self.leave(removed);
            effects.sends.extend(left.sends);
            effects.cancel_tickets = true;
            return Ok(effects);
        }
        if let Some(at) = self.requests.iter().position(|r| r.is(presence)) {
            self.requests.remove(at);
            return Ok(Effects::default());
        }
        Err(PartyError::NotMember)
    }

    /// `party_close`: the leader ends the party; every member is sent `party_close`.
    pub fn close(&mut self, by: Uuid) -> Result<Effects, PartyError> {
        self.require_leader(by)?;
        let mut effects = Effects {
            cancel_tickets: true,
            closed: true,
            ..Effects::default()
        };
        effects.send(
            self.sessions(),
            Message::PartyClose(PartyClose {
                party_id: self.id.clone(),
            }),
        );
        Ok(effects)
    }

    /// `party_join_request_list`: the pending requests (leader only).
    pub fn join_requests(&self, by: Uuid) -> Result<Vec<UserPresence>, PartyError> {
        self.require_leader(by)?;
        Ok(self.requests.iter().map(Member::wire).collect())
    }

    /// The members to matchmake with (leader only), and the sessions to tell of the ticket
    /// besides the leader.
    pub fn matchmaker_members(&self, by: Uuid) -> Result<(Vec<Member>, Vec<Uuid>), PartyError> {
        self.require_leader(by)?;
        let others = self
            .members
            .iter()
            .map(|m| m.session_id)
            .filter(|s| *s != by)
            .collect();
        Ok((self.members.clone(), others))
    }

    /// Checks that `by` leads (`party_matchmaker_remove`).
    pub fn check_leader(&self, by: Uuid) -> Result<(), PartyError> {
        self.require_leader(by)
    }

    /// `party_data_send`: data from a member to the other members.
    pub fn data(&self, from: Uuid, op_code: i64, data: Bytes) -> Result<Effects, PartyError> {
        let sender = self
            .members
            .iter()
            .find(|m| m.session_id == from)
            .ok_or(PartyError::NotMember)?;
        let mut effects = Effects::default();
        effects.send(
            self.sessions().into_iter().filter(|s| *s != from).collect(),
            Message::PartyData(PartyData {
                party_id: self.id.clone(),
                presence: Some(sender.wire()),
                op_code,
                data,
            }),
        );
        Ok(effects)
    }

    /// `party_update`: the leader changes the label, openness and visibility; every member is
    /// told. A hidden party has no label (Nakama's rule).
    pub fn update(
        &mut self,
        by: Uuid,
        label: &str,
        open: bool,
        hidden: bool,
    ) -> Result<Effects, PartyError> {
        self.require_leader(by)?;
        let parsed = Label::parse(label)?;
        self.label = parsed;
        self.open = open;
        self.hidden = hidden;
        let mut effects = Effects::default();
        effects.send(
            self.sessions(),
            Message::PartyUpdate(PartyUpdate {
                party_id: self.id.clone(),
                label: label.to_owned(),
                open,
                hidden,
            }),
        );
        Ok(effects)
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

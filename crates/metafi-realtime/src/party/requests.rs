//! The party messages of the socket, one concern of [`Realtime`] (see `realtime.rs` for the
//! split), with Nakama's answers, error codes and texts (`server/pipeline_party.go`): every
//! refusal is `BAD_INPUT` with the operation's prefix ("Error joining party: party full");
//! answers come before the events they cause.

use std::sync::Arc;

use metafi_match::{MatchmakerError, Presence, TicketRequest};
use metafi_proto::realtime::{
    Envelope, ErrorCode, Message, PartyCreate, PartyDataSend, PartyJoinRequest, PartyMatchmakerAdd,
    PartyMatchmakerRemove, PartyMatchmakerTicket, PartyPresenceEvent, PartyUpdate, UserPresence,
};
use uuid::Uuid;

use super::{Effects, Joined, Member, PartyError, parse_party_id};
use crate::client_requests::Flow;
use crate::{Outbound, Realtime, Session};

fn error(caller: &Caller<'_>, cid: String, code: ErrorCode, message: impl Into<String>) -> Flow {
    caller.send(&Envelope::error(cid, code, message));
    Ok(())
}

fn bad_input(caller: &Caller<'_>, cid: String, message: impl Into<String>) -> Flow {
    error(caller, cid, ErrorCode::BadInput, message)
}

fn member_of(session: &Session) -> Member {
    Member {
        session_id: session.id(),
        user_id: session.user_id(),
        username: session.username().to_owned(),
    }
}

/// Who sent a party message and where its answers go: a socket of this node, or (in a
/// cluster) a member on another node, answered through the router so the answer travels the
/// same way as the events it causes, and arrives before them.
pub(crate) struct Caller<'a> {
    pub(crate) member: Member,
    send: &'a dyn Fn(&Envelope),
}

impl Caller<'_> {
    fn id(&self) -> Uuid {
        self.member.session_id
    }

    fn send(&self, envelope: &Envelope) {
        (self.send)(envelope)
    }
}

/// The party a message is about (every party message but `party_create` names one).
fn party_id_of(message: &Message) -> Option<&str> {
    Some(match message {
        Message::PartyJoin(m) => &m.party_id,
        Message::PartyLeave(m) => &m.party_id,
        Message::PartyPromote(m) => &m.party_id,
        Message::PartyAccept(m) => &m.party_id,
        Message::PartyRemove(m) => &m.party_id,
        Message::PartyClose(m) => &m.party_id,
        Message::PartyJoinRequestList(m) => &m.party_id,
        Message::PartyMatchmakerAdd(m) => &m.party_id,
        Message::PartyMatchmakerRemove(m) => &m.party_id,
        Message::PartyDataSend(m) => &m.party_id,
        Message::PartyUpdate(m) => &m.party_id,
        _ => return None,
    })
}

/// Party requests for parties of other nodes (a cluster): each is forwarded to the party's
/// node, which answers the member's socket through the router.
pub trait PartyForwarder: Send + Sync + std::fmt::Debug {
    /// Forwards `message` (with its `cid`) from `member` to `node`; false when `node` cannot
    /// be reached (not a peer).
    fn forward(&self, node: &str, member: &Member, cid: &str, message: &Message) -> bool;

    /// A session of this node ended: it leaves the parties it reached on other nodes.
    fn session_ended(&self, session_id: Uuid);

    /// A member of this node's party `party_id` that sits on another node is no longer in it
    /// (removed by the leader, the party closed): its node stops counting it as a member.
    fn member_left(&self, session_id: Uuid, party_id: &str);
}

/// Nakama's check of a presence a client names: all three fields set.
fn valid_presence(presence: &Option<UserPresence>) -> Option<&UserPresence> {
    presence
        .as_ref()
        .filter(|p| !p.user_id.is_empty() && !p.session_id.is_empty() && !p.username.is_empty())
}

impl Realtime {
    /// Handles a party message of a socket of this node; a party of another node gets it
    /// forwarded (in a cluster).
    pub(crate) async fn handle_party_message(
        &self,
        session: &Arc<Session>,
        cid: String,
        message: Message,
    ) -> Flow {
        let member = member_of(session);
        if let (Some(parties), Some(forwarder)) = (&self.parties, self.party_forwarder.get())
            && let Some((_, node)) = party_id_of(&message).and_then(parse_party_id)
            && node != parties.node()
            && forwarder.forward(node, &member, &cid, &message)
        {
            return Ok(());
        }
        let send = |envelope: &Envelope| {
            session.send(envelope);
        };
        let caller = Caller {
            member,
            send: &send,
        };
        self.party_message(&caller, cid, message)
    }

    /// Handles a party message another node forwarded from its `member`: answers go to the
    /// member's socket through the router.
    pub fn handle_forwarded_party_message(&self, member: Member, cid: String, message: Message) {
        let router = self.parts.router.clone();
        let session_id = member.session_id;
        let send = move |envelope: &Envelope| {
            router.send_to_sessions(&[session_id], &Outbound::new(envelope.clone()));
        };
        let caller = Caller {
            member,
            send: &send,
        };
        let _ = self.party_message(&caller, cid, message);
    }

    /// A member of this node's parties that sits on another node is gone (its session ended
    /// or its node was lost): it leaves them as a session of this node would.
    pub fn party_member_gone(&self, session_id: Uuid) {
        self.parties_session_ended_here(session_id);
    }

    fn party_message(&self, caller: &Caller<'_>, cid: String, message: Message) -> Flow {
        let Some(parties) = self.parties.clone() else {
            return error(
                caller,
                cid,
                ErrorCode::RuntimeException,
                "Parties are not available on this server.",
            );
        };
        let me = caller.id();
        // The party id every message but `party_create` carries, checked as Nakama does.
        macro_rules! party_id {
            ($text:expr) => {
                match parse_party_id(&$text) {
                    Some((id, node)) => (id, node.to_owned()),
                    None => return bad_input(caller, cid, "Invalid party ID"),
                }
            };
        }
        match message {
            Message::PartyCreate(create) => self.party_create(&parties, caller, cid, create),
            Message::PartyJoin(join) => {
                let (id, node) = party_id!(join.party_id);
                let member = caller.member.clone();
                match parties.with(id, &node, &[me], |p| p.join(member)) {
                    Ok((joined, effects)) => {
                        caller.send(&Envelope::ack(cid));
                        if joined == Joined::Member {
                            tracing::debug!(party = %join.party_id, sid = %me, "joined party");
                        }
                        self.party_effects(&join.party_id, effects);
                        Ok(())
                    }
                    Err(e) => bad_input(caller, cid, format!("Error joining party: {e}")),
                }
            }
            Message::PartyLeave(leave) => {
                let (id, node) = party_id!(leave.party_id);
                // Leaving a party one is not in (or that is gone) is answered all the same.
                let left = parties.with(id, &node, &[me], |p| Ok(((), p.leave(me))));
                caller.send(&Envelope::ack(cid));
                if let Ok(((), effects)) = left {
                    self.party_effects(&leave.party_id, effects);
                }
                Ok(())
            }
            Message::PartyPromote(promote) => {
                let Some(presence) = valid_presence(&promote.presence) else {
                    return bad_input(caller, cid, "Invalid presence");
                };
                let (id, node) = party_id!(promote.party_id);
                match parties.with(id, &node, &[], |p| Ok(((), p.promote(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(caller, cid, &promote.party_id, effects),
                    Err(e) => bad_input(
                        caller,
                        cid,
                        format!("Error promoting new party leader: {e}"),
                    ),
                }
            }
            Message::PartyAccept(accept) => {
                let Some(presence) = valid_presence(&accept.presence) else {
                    return bad_input(caller, cid, "Invalid presence");
                };
                let (id, node) = party_id!(accept.party_id);
                let touched = Uuid::parse_str(&presence.session_id).ok();
                let touched: Vec<Uuid> = touched.into_iter().collect();
                match parties.with(id, &node, &touched, |p| Ok(((), p.accept(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(caller, cid, &accept.party_id, effects),
                    Err(e) => bad_input(
                        caller,
                        cid,
                        format!("Error accepting party join request: {e}"),
                    ),
                }
            }
            Message::PartyRemove(remove) => {
                let Some(presence) = valid_presence(&remove.presence) else {
                    return bad_input(caller, cid, "Invalid presence");
                };
                let (id, node) = party_id!(remove.party_id);
                let touched: Vec<Uuid> = Uuid::parse_str(&presence.session_id)
                    .ok()
                    .into_iter()
                    .collect();
                match parties.with(id, &node, &touched, |p| Ok(((), p.remove(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(caller, cid, &remove.party_id, effects),
                    Err(e) => bad_input(
                        caller,
                        cid,
                        format!("Error removing party member or join request: {e}"),
                    ),
                }
            }
            Message::PartyClose(close) => {
                let (id, node) = party_id!(close.party_id);
                match parties.with(id, &node, &[me], |p| Ok(((), p.close(me)?))) {
                    Ok(((), effects)) => self.party_done(caller, cid, &close.party_id, effects),
                    Err(e) => bad_input(caller, cid, format!("Error closing party: {e}")),
                }
            }
            Message::PartyJoinRequestList(list) => {
                let (id, node) = party_id!(list.party_id);
                match parties.read(id, &node, |p| p.join_requests(me)) {
                    Ok(presences) => {
                        caller.send(&Envelope::new(
                            cid,
                            Message::PartyJoinRequest(PartyJoinRequest {
                                party_id: list.party_id,
                                presences,
                            }),
                        ));
                        Ok(())
                    }
                    Err(e) => bad_input(
                        caller,
                        cid,
                        format!("Error listing party join requests: {e}"),
                    ),
                }
            }
            Message::PartyMatchmakerAdd(add) => {
                self.party_matchmaker_add(&parties, caller, cid, add)
            }
            Message::PartyMatchmakerRemove(remove) => {
                self.party_matchmaker_remove(&parties, caller, cid, remove)
            }
            Message::PartyDataSend(send) => {
                let PartyDataSend {
                    party_id,
                    op_code,
                    data,
                } = send;
                let (id, node) = party_id!(party_id);
                match parties.read(id, &node, |p| p.data(me, op_code, data)) {
                    Ok(effects) => {
                        // Data sends usually carry no cid: then there is nothing to answer.
                        if !cid.is_empty() {
                            caller.send(&Envelope::ack(cid));
                        }
                        self.party_effects(&party_id, effects);
                        Ok(())
                    }
                    Err(e) => bad_input(caller, cid, format!("Error sending party data: {e}")),
                }
            }
            Message::PartyUpdate(update) => self.party_update(&parties, caller, cid, update),
            _ => Ok(()),
        }
    }

    fn party_create(
        &self,
        parties: &super::Parties,
        caller: &Caller<'_>,
        cid: String,
        create: PartyCreate,
    ) -> Flow {
        let cap = parties.config().max_size;
        if create.max_size < 1 || create.max_size as usize > cap {
            return bad_input(
                caller,
                cid,
                format!("Invalid party max size, must be 1-{cap}"),
            );
        }
        let member = caller.member.clone();
        let join = member.wire();
        match parties.create(
            create.open,
            create.hidden,
            create.max_size as usize,
            &create.label,
            member,
        ) {
            Ok(party) => {
                let party_id = party.party_id.clone();
                caller.send(&Envelope::new(cid, Message::Party(party)));
                // The creator sees its own join, as every joiner does.
                caller.send(&Envelope::new(
                    "",
                    Message::PartyPresenceEvent(PartyPresenceEvent {
                        party_id,
                        joins: vec![join],
                        leaves: Vec::new(),
                    }),
                ));
                Ok(())
            }
            Err(e @ PartyError::TooManyParties { .. }) => error(
                caller,
                cid,
                ErrorCode::RuntimeException,
                format!("Error creating party: {e}"),
            ),
            Err(e) => bad_input(caller, cid, format!("Error creating party: {e}")),
        }
    }

    fn party_update(
        &self,
        parties: &super::Parties,
        caller: &Caller<'_>,
        cid: String,
        update: PartyUpdate,
    ) -> Flow {
        let Some((id, node)) = parse_party_id(&update.party_id) else {
            return bad_input(caller, cid, "Invalid party ID");
        };
        let prefix = "Error updating party";
        if update.hidden && !(update.label.is_empty() || update.label == "{}") {
            return bad_input(
                caller,
                cid,
                format!("{prefix}: {}", PartyError::HiddenNonEmptyLabel),
            );
        }
        let me = caller.id();
        match parties.with(id, node, &[], |p| {
            Ok(((), p.update(me, &update.label, update.open, update.hidden)?))
        }) {
            Ok(((), effects)) => {
                parties.listing_changed();
                self.party_done(caller, cid, &update.party_id, effects)
            }
            Err(e) => bad_input(caller, cid, format!("{prefix}: {e}")),
        }
    }

    fn party_matchmaker_add(
        &self,
        parties: &super::Parties,
        caller: &Caller<'_>,
        cid: String,
        add: PartyMatchmakerAdd,
    ) -> Flow {
        // The counts are checked before the party, with the matchmaker's own messages.
        let count_multiple = add.count_multiple.map_or(1, |m| m.value.max(0) as u32);
        let request = TicketRequest {
            query: if add.query.is_empty() {
                "*".into()
            } else {
                add.query
            },
            min_count: add.min_count.max(0) as u32,
            max_count: add.max_count.max(0) as u32,
            count_multiple,
            string_properties: add.string_properties,
            numeric_properties: add.numeric_properties,
        };
        match metafi_match::Matchmaker::validate(&request) {
            Ok(_) | Err(MatchmakerError::Query(_)) => {}
            Err(e) => return bad_input(caller, cid, e.to_string()),
        }
        let Some((id, node)) = parse_party_id(&add.party_id) else {
            return bad_input(caller, cid, "Invalid party ID");
        };
        let Some(services) = self.matches.clone() else {
            return error(
                caller,
                cid,
                ErrorCode::RuntimeException,
                "Matches and the matchmaker are not available on this server.",
            );
        };
        let prefix = "Error adding party to matchmaker";
        let me = caller.id();
        let (members, others) = match parties.read(id, node, |p| p.matchmaker_members(me)) {
            Ok(found) => found,
            Err(e) => return bad_input(caller, cid, format!("{prefix}: {e}")),
        };
        let mm_node: Arc<str> = Arc::from(services.matches.node());
        let presences = members
            .iter()
            .map(|m| {
                Arc::new(Presence {
                    user_id: m.user_id,
                    session_id: m.session_id,
                    username: Arc::from(m.username.as_str()),
                    node: mm_node.clone(),
                })
            })
            .collect();
        let ticket = match services
            .matchmaking
            .add_party(&add.party_id, presences, request)
        {
            Ok(ticket) => ticket,
            Err(MatchmakerError::Query(_)) => {
                return bad_input(caller, cid, format!("{prefix}: matchmaker query invalid"));
            }
            Err(e) => return bad_input(caller, cid, format!("{prefix}: {e}")),
        };
        let message = Message::PartyMatchmakerTicket(PartyMatchmakerTicket {
            party_id: add.party_id,
            ticket,
        });
        caller.send(&Envelope::new(cid, message.clone()));
        if !others.is_empty() {
            self.parts
                .router
                .send_to_sessions(&others, &Outbound::new(Envelope::new("", message)));
        }
        Ok(())
    }

    fn party_matchmaker_remove(
        &self,
        parties: &super::Parties,
        caller: &Caller<'_>,
        cid: String,
        remove: PartyMatchmakerRemove,
    ) -> Flow {
        if remove.ticket.is_empty() {
            return bad_input(caller, cid, "Invalid matchmaker ticket");
        }
        let Some((id, node)) = parse_party_id(&remove.party_id) else {
            return bad_input(caller, cid, "Invalid party ID");
        };
        // Nakama's text for every refusal here.
        let prefix = "Error closing party";
        let me = caller.id();
        if let Err(e) = parties.read(id, node, |p| p.check_leader(me)) {
            return bad_input(caller, cid, format!("{prefix}: {e}"));
        }
        let removed = match &self.matches {
            Some(services) => services
                .matchmaking
                .remove_party(&remove.party_id, &remove.ticket),
            None => Err(MatchmakerError::TicketNotFound),
        };
        match removed {
            Ok(()) => {
                caller.send(&Envelope::ack(cid));
                Ok(())
            }
            Err(_) => bad_input(
                caller,
                cid,
                format!("{prefix}: matchmaker ticket not found"),
            ),
        }
    }

    /// Acknowledges a request, then does what it caused.
    fn party_done(
        &self,
        caller: &Caller<'_>,
        cid: String,
        party_id: &str,
        effects: Effects,
    ) -> Flow {
        caller.send(&Envelope::ack(cid));
        self.party_effects(party_id, effects);
        Ok(())
    }

    /// Cancels the party's tickets when its members changed, then sends what the operation
    /// caused.
    pub(crate) fn party_effects(&self, party_id: &str, effects: Effects) {
        // The old tickets go before anyone hears of the change: a leader that adds a ticket
        // as soon as it sees a member join must not have that new ticket taken by the join's
        // own cancellation (seen when this thread was preempted between the sends and the
        // cancellation: `cluster_party`'s "matchmaker ticket not found").
        if effects.cancel_tickets
            && let Some(services) = &self.matches
        {
            services.matchmaking.remove_party_all(party_id);
        }
        for (to, message) in effects.sends {
            self.parts
                .router
                .send_to_sessions(&to, &Outbound::new(Envelope::new("", message)));
        }
        if let Some(forwarder) = self.party_forwarder.get() {
            for session in effects.left {
                if self.parts.router.is_remote_session(session) {
                    forwarder.member_left(session, party_id);
                }
            }
        }
    }

    /// A session ended: it leaves its parties (others see it leave; leadership passes on;
    /// empty parties close) and its join requests go.
    pub(crate) fn parties_session_ended(&self, session_id: Uuid) {
        if let Some(forwarder) = self.party_forwarder.get() {
            forwarder.session_ended(session_id);
        }
        self.parties_session_ended_here(session_id);
    }

    fn parties_session_ended_here(&self, session_id: Uuid) {
        let Some(parties) = &self.parties else {
            return;
        };
        for (party_id, effects) in parties.session_ended(session_id) {
            self.party_effects(&party_id, effects);
        }
    }
}

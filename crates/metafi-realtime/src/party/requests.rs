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

fn error(session: &Session, cid: String, code: ErrorCode, message: impl Into<String>) -> Flow {
    session.send(&Envelope::error(cid, code, message));
    Ok(())
}

fn bad_input(session: &Session, cid: String, message: impl Into<String>) -> Flow {
    error(session, cid, ErrorCode::BadInput, message)
}

fn member_of(session: &Session) -> Member {
    Member {
        session_id: session.id(),
        user_id: session.user_id(),
        username: session.username().to_owned(),
    }
}

/// Nakama's check of a presence a client names: all three fields set.
fn valid_presence(presence: &Option<UserPresence>) -> Option<&UserPresence> {
    presence
        .as_ref()
        .filter(|p| !p.user_id.is_empty() && !p.session_id.is_empty() && !p.username.is_empty())
}

impl Realtime {
    /// Handles a party message.
    pub(crate) async fn handle_party_message(
        &self,
        session: &Arc<Session>,
        cid: String,
        message: Message,
    ) -> Flow {
        let Some(parties) = self.parties.clone() else {
            return error(
                session,
                cid,
                ErrorCode::RuntimeException,
                "Parties are not available on this server.",
            );
        };
        let me = session.id();
        // The party id every message but `party_create` carries, checked as Nakama does.
        macro_rules! party_id {
            ($text:expr) => {
                match parse_party_id(&$text) {
                    Some((id, node)) => (id, node.to_owned()),
                    None => return bad_input(session, cid, "Invalid party ID"),
                }
            };
        }
        match message {
            Message::PartyCreate(create) => self.party_create(&parties, session, cid, create),
            Message::PartyJoin(join) => {
                let (id, node) = party_id!(join.party_id);
                let member = member_of(session);
                match parties.with(id, &node, &[me], |p| p.join(member)) {
                    Ok((joined, effects)) => {
                        session.send(&Envelope::ack(cid));
                        if joined == Joined::Member {
                            tracing::debug!(party = %join.party_id, sid = %me, "joined party");
                        }
                        self.party_effects(&join.party_id, effects);
                        Ok(())
                    }
                    Err(e) => bad_input(session, cid, format!("Error joining party: {e}")),
                }
            }
            Message::PartyLeave(leave) => {
                let (id, node) = party_id!(leave.party_id);
                // Leaving a party one is not in (or that is gone) is answered all the same.
                let left = parties.with(id, &node, &[me], |p| Ok(((), p.leave(me))));
                session.send(&Envelope::ack(cid));
                if let Ok(((), effects)) = left {
                    self.party_effects(&leave.party_id, effects);
                }
                Ok(())
            }
            Message::PartyPromote(promote) => {
                let Some(presence) = valid_presence(&promote.presence) else {
                    return bad_input(session, cid, "Invalid presence");
                };
                let (id, node) = party_id!(promote.party_id);
                match parties.with(id, &node, &[], |p| Ok(((), p.promote(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(session, cid, &promote.party_id, effects),
                    Err(e) => bad_input(
                        session,
                        cid,
                        format!("Error promoting new party leader: {e}"),
                    ),
                }
            }
            Message::PartyAccept(accept) => {
                let Some(presence) = valid_presence(&accept.presence) else {
                    return bad_input(session, cid, "Invalid presence");
                };
                let (id, node) = party_id!(accept.party_id);
                let touched = Uuid::parse_str(&presence.session_id).ok();
                let touched: Vec<Uuid> = touched.into_iter().collect();
                match parties.with(id, &node, &touched, |p| Ok(((), p.accept(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(session, cid, &accept.party_id, effects),
                    Err(e) => bad_input(
                        session,
                        cid,
                        format!("Error accepting party join request: {e}"),
                    ),
                }
            }
            Message::PartyRemove(remove) => {
                let Some(presence) = valid_presence(&remove.presence) else {
                    return bad_input(session, cid, "Invalid presence");
                };
                let (id, node) = party_id!(remove.party_id);
                let touched: Vec<Uuid> = Uuid::parse_str(&presence.session_id)
                    .ok()
                    .into_iter()
                    .collect();
                match parties.with(id, &node, &touched, |p| Ok(((), p.remove(me, presence)?))) {
                    Ok(((), effects)) => self.party_done(session, cid, &remove.party_id, effects),
                    Err(e) => bad_input(
                        session,
                        cid,
                        format!("Error removing party member or join request: {e}"),
                    ),
                }
            }
            Message::PartyClose(close) => {
                let (id, node) = party_id!(close.party_id);
                match parties.with(id, &node, &[me], |p| Ok(((), p.close(me)?))) {
                    Ok(((), effects)) => self.party_done(session, cid, &close.party_id, effects),
                    Err(e) => bad_input(session, cid, format!("Error closing party: {e}")),
                }
            }
            Message::PartyJoinRequestList(list) => {
                let (id, node) = party_id!(list.party_id);
                match parties.read(id, &node, |p| p.join_requests(me)) {
                    Ok(presences) => {
                        session.send(&Envelope::new(
                            cid,
                            Message::PartyJoinRequest(PartyJoinRequest {
                                party_id: list.party_id,
                                presences,
                            }),
                        ));
                        Ok(())
                    }
                    Err(e) => bad_input(
                        session,
                        cid,
                        format!("Error listing party join requests: {e}"),
                    ),
                }
            }
            Message::PartyMatchmakerAdd(add) => {
                self.party_matchmaker_add(&parties, session, cid, add)
            }
            Message::PartyMatchmakerRemove(remove) => {
                self.party_matchmaker_remove(&parties, session, cid, remove)
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
                            session.send(&Envelope::ack(cid));
                        }
                        self.party_effects(&party_id, effects);
                        Ok(())
                    }
                    Err(e) => bad_input(session, cid, format!("Error sending party data: {e}")),
                }
            }
            Message::PartyUpdate(update) => self.party_update(&parties, session, cid, update),
            _ => Ok(()),
        }
    }

    fn party_create(
        &self,
        parties: &super::Parties,
        session: &Session,
        cid: String,
        create: PartyCreate,
    ) -> Flow {
        let cap = parties.config().max_size;
        if create.max_size < 1 || create.max_size as usize > cap {
            return bad_input(
                session,
                cid,
                format!("Invalid party max size, must be 1-{cap}"),
            );
        }
        let member = member_of(session);
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
                session.send(&Envelope::new(cid, Message::Party(party)));
                // The creator sees its own join, as every joiner does.
                session.send(&Envelope::new(
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
                session,
                cid,
                ErrorCode::RuntimeException,
                format!("Error creating party: {e}"),
            ),
            Err(e) => bad_input(session, cid, format!("Error creating party: {e}")),
        }
    }

    fn party_update(
        &self,
        parties: &super::Parties,
        session: &Session,
        cid: String,
        update: PartyUpdate,
    ) -> Flow {
        let Some((id, node)) = parse_party_id(&update.party_id) else {
            return bad_input(session, cid, "Invalid party ID");
        };
        let prefix = "Error updating party";
        if update.hidden && !(update.label.is_empty() || update.label == "{}") {
            return bad_input(
                session,
                cid,
                format!("{prefix}: {}", PartyError::HiddenNonEmptyLabel),
            );
        }
        let me = session.id();
        match parties.with(id, node, &[], |p| {
            Ok(((), p.update(me, &update.label, update.open, update.hidden)?))
        }) {
            Ok(((), effects)) => self.party_done(session, cid, &update.party_id, effects),
            Err(e) => bad_input(session, cid, format!("{prefix}: {e}")),
        }
    }

    fn party_matchmaker_add(
        &self,
        parties: &super::Parties,
        session: &Session,
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
            Err(e) => return bad_input(session, cid, e.to_string()),
        }
        let Some((id, node)) = parse_party_id(&add.party_id) else {
            return bad_input(session, cid, "Invalid party ID");
        };
        let Some(services) = self.matches.clone() else {
            return error(
                session,
                cid,
                ErrorCode::RuntimeException,
                "Matches and the matchmaker are not available on this server.",
            );
        };
        let prefix = "Error adding party to matchmaker";
        let me = session.id();
        let (members, others) = match parties.read(id, node, |p| p.matchmaker_members(me)) {
            Ok(found) => found,
            Err(e) => return bad_input(session, cid, format!("{prefix}: {e}")),
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
                return bad_input(session, cid, format!("{prefix}: matchmaker query invalid"));
            }
            Err(e) => return bad_input(session, cid, format!("{prefix}: {e}")),
        };
        let message = Message::PartyMatchmakerTicket(PartyMatchmakerTicket {
            party_id: add.party_id,
            ticket,
        });
        session.send(&Envelope::new(cid, message.clone()));
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
        session: &Session,
        cid: String,
        remove: PartyMatchmakerRemove,
    ) -> Flow {
        if remove.ticket.is_empty() {
            return bad_input(session, cid, "Invalid matchmaker ticket");
        }
        let Some((id, node)) = parse_party_id(&remove.party_id) else {
            return bad_input(session, cid, "Invalid party ID");
        };
        // Nakama's text for every refusal here.
        let prefix = "Error closing party";
        let me = session.id();
        if let Err(e) = parties.read(id, node, |p| p.check_leader(me)) {
            return bad_input(session, cid, format!("{prefix}: {e}"));
        }
        let removed = match &self.matches {
            Some(services) => services
                .matchmaking
                .remove_party(&remove.party_id, &remove.ticket),
            None => Err(MatchmakerError::TicketNotFound),
        };
        match removed {
            Ok(()) => {
                session.send(&Envelope::ack(cid));
                Ok(())
            }
            Err(_) => bad_input(
                session,
                cid,
                format!("{prefix}: matchmaker ticket not found"),
            ),
        }
    }

    /// Acknowledges a request, then does what it caused.
    fn party_done(&self, session: &Session, cid: String, party_id: &str, effects: Effects) -> Flow {
        session.send(&Envelope::ack(cid));
        self.party_effects(party_id, effects);
        Ok(())
    }

    /// Sends what a party operation caused and cancels the party's tickets when its members
    /// changed.
    pub(crate) fn party_effects(&self, party_id: &str, effects: Effects) {
        for (to, message) in effects.sends {
            self.parts
                .router
                .send_to_sessions(&to, &Outbound::new(Envelope::new("", message)));
        }
        if effects.cancel_tickets
            && let Some(services) = &self.matches
        {
            services.matchmaking.remove_party_all(party_id);
        }
    }

    /// A session ended: it leaves its parties (others see it leave; leadership passes on;
    /// empty parties close) and its join requests go.
    pub(crate) fn parties_session_ended(&self, session_id: Uuid) {
        let Some(parties) = &self.parties else {
            return;
        };
        for (party_id, effects) in parties.session_ended(session_id) {
            self.party_effects(&party_id, effects);
        }
    }
}

//! Match and matchmaker requests over the socket, one concern of [`Realtime`] (see
//! `realtime.rs` for the split): `match_create` (relayed), `match_join` (by id or matchmaker
//! token, with metadata), `match_leave`, `match_data_send`, `matchmaker_add`,
//! `matchmaker_remove`, with Nakama's answers and error codes; the matchmaker loop that tells
//! matched sessions; cleanup when a session ends. Messages from the match engine to sessions go
//! through [`crate::MatchOutlet`] (`match_outlet.rs`).

use std::future::Future;
use std::sync::Arc;

use metafi_match::{
    JoinOutcome, JoinRequest, MatchId, MatchTarget, Matches, MatchmakerError, Matchmaking,
    Presence, PresenceReason, TicketRequest,
};
use metafi_proto::realtime::{
    DeliveryClass, Envelope, ErrorCode, Match, MatchCreate, MatchDataSend, MatchJoin, MatchJoinId,
    MatchLeave, MatchmakerAdd, MatchmakerMatched, MatchmakerMatchedId, MatchmakerRemove,
    MatchmakerTicket, MatchmakerUser, Message, UserPresence,
};
use metafi_proto::wkt::string_value;
use uuid::Uuid;

use crate::match_outlet::wire;
use crate::{CloseReason, MessageRouter, Outbound, Realtime, Session};

type Flow = Result<(), CloseReason>;

/// The match engine as the socket uses it.
#[derive(Debug, Clone)]
pub struct MatchServices {
    pub matches: Matches,
    pub matchmaking: Arc<Matchmaking>,
}

impl Realtime {
    fn presence_of(&self, session: &Session, node: &str) -> Arc<Presence> {
        Arc::new(Presence {
            user_id: session.user_id(),
            session_id: session.id(),
            username: Arc::from(session.username()),
            node: Arc::from(node),
        })
    }

    fn self_presence(session: &Session) -> UserPresence {
        UserPresence {
            user_id: session.user_id().to_string(),
            session_id: session.id().to_string(),
            username: session.username().to_owned(),
            persistence: false,
            status: None,
        }
    }

    /// Handles a match or matchmaker message; `None` when the engine is not configured.
    pub(crate) async fn handle_match_message(
        &self,
        session: &Session,
        cid: String,
        message: Message,
    ) -> Flow {
        let Some(services) = self.matches.clone() else {
            session.send(&Envelope::error(
                cid,
                ErrorCode::RuntimeException,
                "Matches and the matchmaker are not available on this server.",
            ));
            return Ok(());
        };
        match message {
            Message::MatchCreate(create) => {
                self.match_create(&services, session, cid, create).await
            }
            Message::MatchJoin(join) => self.match_join(&services, session, cid, join).await,
            Message::MatchLeave(leave) => self.match_leave(&services, session, cid, leave),
            Message::MatchDataSend(send) => self.match_data_send(&services, session, send),
            Message::MatchmakerAdd(add) => self.matchmaker_add(&services, session, cid, add),
            Message::MatchmakerRemove(remove) => {
                self.matchmaker_remove(&services, session, cid, remove)
            }
            _ => Ok(()),
        }
    }

    async fn match_create(
        &self,
        services: &MatchServices,
        session: &Session,
        cid: String,
        create: MatchCreate,
    ) -> Flow {
        let named = !create.name.is_empty();
        let presence = self.presence_of(session, "");
        let joined = match services
            .matches
            .create_relayed_anywhere(named.then_some(create.name.as_str()), presence)
            .await
        {
            Ok(joined) => joined,
            // A new match on a full or draining node (the latency objective, docs/MATCHES.md).
            Err(
                e
                @ (metafi_match::MatchError::Full { .. } | metafi_match::MatchError::ShuttingDown),
            ) => {
                return error(session, cid, ErrorCode::RuntimeException, e.to_string());
            }
            // The session is closing; nobody to answer.
            Err(_) => return Ok(()),
        };
        let size = if named { joined.members } else { 1 };
        session.send(&Envelope::new(
            cid,
            Message::Match(Match {
                match_id: joined.match_id.to_string(),
                authoritative: false,
                label: None,
                size: size as i32,
                presences: if named {
                    joined.presences.iter().map(|p| wire(p)).collect()
                } else {
                    Vec::new()
                },
                self_presence: Some(Realtime::self_presence(session)),
            }),
        ));
        if joined.is_new {
            services
                .matches
                .complete_join(&joined.match_id, session.id());
        }
        Ok(())
    }

    async fn match_join(
        &self,
        services: &MatchServices,
        session: &Session,
        cid: String,
        join: MatchJoin,
    ) -> Flow {
        let (id_text, id, via_token) = match &join.id {
            Some(MatchJoinId::MatchId(text)) => match MatchId::parse(text) {
                Ok(id) => (text.clone(), id, false),
                Err(_) => return error(session, cid, ErrorCode::BadInput, "Invalid match ID"),
            },
            Some(MatchJoinId::Token(token)) => {
                let now = self.services.clock.now_secs();
                match services.matchmaking.tokens().verify(token, now) {
                    Ok(id) => (id.to_string(), id, true),
                    Err(_) => {
                        return error(session, cid, ErrorCode::BadInput, "Invalid match token");
                    }
                }
            }
            None => {
                return error(
                    session,
                    cid,
                    ErrorCode::BadInput,
                    "No match ID or token found",
                );
            }
        };
        if !id.is_authoritative() {
            let presence = self.presence_of(session, "");
            let Some(joined) = services
                .matches
                .join_relayed_anywhere(id.uuid(), presence, via_token)
                .await
            else {
                return error(session, cid, ErrorCode::MatchNotFound, "Match not found");
            };
            let presences: Vec<UserPresence> = joined.presences.iter().map(|p| wire(p)).collect();
            session.send(&Envelope::new(
                cid,
                Message::Match(Match {
                    match_id: id_text,
                    authoritative: false,
                    label: None,
                    size: presences.len() as i32,
                    presences,
                    self_presence: Some(Realtime::self_presence(session)),
                }),
            ));
            if joined.is_new {
                services
                    .matches
                    .complete_join(&joined.match_id, session.id());
            }
            return Ok(());
        }

        let node = services.matches.node().to_owned();
        let request = JoinRequest {
            presence: self.presence_of(session, &node),
            metadata: join.metadata,
            vars: Arc::new(session.vars().clone()),
            session_expiry: session.expires_at(),
            client_ip: session.client_ip().map(|ip| ip.to_string()),
            client_port: None,
        };
        let outcome = match services.matches.join(&id, request).await {
            Ok(outcome) => outcome,
            Err(e) => {
                return error(session, cid, ErrorCode::MatchJoinRejected, e.to_string());
            }
        };
        match outcome {
            JoinOutcome::NotFound => {
                error(session, cid, ErrorCode::MatchNotFound, "Match not found")
            }
            JoinOutcome::Rejected { reason } => {
                error(session, cid, ErrorCode::MatchJoinRejected, reason)
            }
            JoinOutcome::Accepted {
                label,
                presences,
                is_new,
            } => {
                let presences: Vec<UserPresence> = presences
                    .iter()
                    .filter(|p| !is_new || p.session_id != session.id())
                    .map(|p| wire(p))
                    .collect();
                session.send(&Envelope::new(
                    cid,
                    Message::Match(Match {
                        match_id: id_text,
                        authoritative: true,
                        label: string_value(label.to_string()),
                        size: presences.len() as i32,
                        presences,
                        self_presence: Some(Realtime::self_presence(session)),
                    }),
                ));
                if is_new {
                    services.matches.complete_join(&id, session.id());
                }
                Ok(())
            }
        }
    }

    fn match_leave(
        &self,
        services: &MatchServices,
        session: &Session,
        cid: String,
        leave: MatchLeave,
    ) -> Flow {
        let Ok(id) = MatchId::parse(&leave.match_id) else {
            return error(session, cid, ErrorCode::BadInput, "Invalid match ID");
        };
        services.matches.leave(&id, session.id());
        session.send(&Envelope::ack(cid));
        Ok(())
    }

    pub(crate) fn match_data_send(
        &self,
        services: &MatchServices,
        session: &Session,
        send: MatchDataSend,
    ) -> Flow {
        let Ok(id) = MatchId::parse(&send.match_id) else {
            // As Nakama: the error carries no cid (data sends are not requests).
            return error(
                session,
                String::new(),
                ErrorCode::BadInput,
                "Invalid match ID",
            );
        };
        let mut to = Vec::with_capacity(send.presences.len());
        for presence in &send.presences {
            match Uuid::parse_str(&presence.session_id) {
                Ok(session_id) => to.push(session_id),
                // Nakama drops a send with a malformed filter.
                Err(_) => return Ok(()),
            }
        }
        // A named class decides `reliable` too, so handlers see what the sender chose.
        let reliable = DeliveryClass::resolve(send.delivery.as_ref(), send.reliable).is_reliable();
        let delivery = send
            .delivery
            .as_ref()
            .filter(|d| DeliveryClass::from_wire(d).is_some());
        services.matches.send_with(
            &id,
            session.id(),
            send.op_code,
            send.data,
            reliable,
            delivery,
            &to,
        );
        Ok(())
    }

    fn matchmaker_add(
        &self,
        services: &MatchServices,
        session: &Session,
        cid: String,
        add: MatchmakerAdd,
    ) -> Flow {
        // Validated by the matchmaker with Nakama's messages; out-of-range numbers become 0,
        // which fails the same checks.
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
        let presence = self.presence_of(session, services.matches.node());
        match services.matchmaking.add(presence, request) {
            Ok(ticket) => {
                session.send(&Envelope::new(
                    cid,
                    Message::MatchmakerTicket(MatchmakerTicket { ticket }),
                ));
                Ok(())
            }
            Err(e @ MatchmakerError::TooManyTickets { .. }) => {
                error(session, cid, ErrorCode::RuntimeException, e.to_string())
            }
            Err(e) => error(session, cid, ErrorCode::BadInput, e.to_string()),
        }
    }

    fn matchmaker_remove(
        &self,
        services: &MatchServices,
        session: &Session,
        cid: String,
        remove: MatchmakerRemove,
    ) -> Flow {
        if remove.ticket.is_empty() {
            return error(
                session,
                cid,
                ErrorCode::BadInput,
                "Invalid matchmaker ticket",
            );
        }
        match services.matchmaking.remove(session.id(), &remove.ticket) {
            Ok(()) => {
                session.send(&Envelope::ack(cid));
                Ok(())
            }
            Err(e) => error(session, cid, ErrorCode::BadInput, e.to_string()),
        }
    }

    /// A session ended: it leaves its matches and its tickets are dropped.
    pub(crate) fn matches_session_ended(&self, session_id: Uuid, reason: PresenceReason) {
        if let Some(services) = &self.matches {
            services.matches.session_ended_because(session_id, reason);
            services.matchmaking.session_ended(session_id);
        }
    }

    /// Runs the matchmaker every `matchmaker.interval_sec` until `stop` completes, telling
    /// each matched session which match to join.
    pub async fn run_matchmaker(&self, stop: impl Future<Output = ()>) {
        let Some(services) = self.matches.clone() else {
            return;
        };
        let mut interval = tokio::time::interval(services.matchmaking.interval());
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        let mut stop = std::pin::pin!(stop);
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = interval.tick() => {}
            }
            if services.matchmaking.is_empty() {
                continue;
            }
            for formed in services.matchmaking.pass().await {
                self.send_matched(&formed);
            }
        }
    }

    /// Sends `matchmaker_matched` to every player of a formed group whose ticket this node
    /// holds, each with its own ticket and `self` (players whose tickets other nodes hold are
    /// told by those nodes). A party's members are told wherever their sockets are.
    pub fn send_matched(&self, formed: &metafi_match::Formed) {
        let Some(services) = &self.matches else {
            return;
        };
        send_matched(&*self.parts.router, services.matches.node(), formed, |_| {
            true
        });
    }
}

/// Sends `matchmaker_matched` to the players of `formed` whose tickets node `node` holds (their
/// presence names it: a session's own node, or a party's node for its members) and whose ticket
/// `told` accepts, each with its own ticket and `self`, through `router` (so a party's members
/// on other nodes are told too); `users` lists the whole group. The cluster calls it on the
/// nodes of a group's players (`metafi-cluster`).
pub fn send_matched(
    router: &dyn MessageRouter,
    node: &str,
    formed: &metafi_match::Formed,
    told: impl Fn(&str) -> bool,
) {
    let users: Vec<MatchmakerUser> = formed
        .entries
        .iter()
        .map(|e| MatchmakerUser {
            presence: Some(wire(&e.presence)),
            party_id: e.party_id.clone(),
            string_properties: e.string_properties.clone(),
            numeric_properties: e.numeric_properties.clone(),
        })
        .collect();
    let id = match &formed.target {
        MatchTarget::MatchId(id) => MatchmakerMatchedId::MatchId(id.clone()),
        MatchTarget::Token(token) => MatchmakerMatchedId::Token(token.clone()),
    };
    for (entry, user) in formed.entries.iter().zip(&users) {
        if *entry.presence.node != *node || !told(&entry.ticket) {
            continue;
        }
        let envelope = Envelope::new(
            "",
            Message::MatchmakerMatched(MatchmakerMatched {
                ticket: entry.ticket.clone(),
                id: Some(id.clone()),
                users: users.clone(),
                self_user: Some(user.clone()),
            }),
        );
        router.send_to_sessions(&[entry.presence.session_id], &Outbound::new(envelope));
    }
}

fn error(session: &Session, cid: String, code: ErrorCode, message: impl Into<String>) -> Flow {
    session.send(&Envelope::error(cid, code, message));
    Ok(())
}

//! What the server does with each message a client sends, with Nakama's answers and error
//! codes, one concern of [`Realtime`] (see `realtime.rs` for the split): [`Realtime::handle`]
//! dispatches every client message; RPC, status and chat channel requests are answered here,
//! match and matchmaker requests in `match_requests.rs`. Requests of one session are handled
//! one at a time, in order.

use std::collections::HashSet;
use std::sync::Arc;

use metafi_core::channels::require_json_object;
use metafi_core::{ChannelId, CoreError};
use metafi_proto::api::{ChannelMessage, Rpc};
use metafi_proto::realtime::{
    Channel, ChannelJoin, ChannelLeave, ChannelMessageAck, ChannelMessageRemove,
    ChannelMessageSend, ChannelMessageUpdate, Envelope, ErrorCode, Message, Pong, Status,
    StatusFollow, StatusUnfollow, StatusUpdate, UserPresence,
};
use uuid::Uuid;

use crate::realtime::{NOTIFICATION_DM_REQUEST, wire_presence};
use crate::{CloseReason, Outbound, Presence, PresenceMeta, Realtime, Session, StreamKey, metrics};

/// Longest status text, in bytes (Nakama's limit).
pub const MAX_STATUS_BYTES: usize = 2048;

/// The outcome of one request: keep the session, or close it.
pub(crate) type Flow = Result<(), CloseReason>;

impl Realtime {
    /// Handles one envelope from `session`'s client. Answers (and errors) go to the session's
    /// outbox; `Err` means the session must close (Nakama closes on a missing or unknown
    /// message).
    pub async fn handle(&self, session: &Arc<Session>, envelope: Envelope) -> Flow {
        let Envelope { cid, message } = envelope;
        let Some(message) = message else {
            metrics::message_received("none");
            session.send(&Envelope::error(
                cid,
                ErrorCode::MissingPayload,
                "Missing message.",
            ));
            return Err(CloseReason::UnrecognizedMessage);
        };
        metrics::message_received(message.name());
        if let Some(hook) = crate::message_hooks::hook_of(&message)
            && (self.hooks.has_before(hook) || self.hooks.has_after(hook))
        {
            return self.handle_hooked(session, cid, message, hook).await;
        }
        self.dispatch(session, cid, message).await
    }

    /// Serves `envelope` at once when that never waits — match data with no hook on it, the
    /// message a game's clients send every tick — and hands it back otherwise, for
    /// [`Realtime::handle`]. The transport's reader calls this first: the boxed future of
    /// `handle` (kilobytes, for its largest request) is then made only for requests that need
    /// it, not for every input. Same outcome and counters as `handle`. (Handed back boxed: an
    /// envelope is large, and that path allocates the future's box anyway.)
    pub fn handle_now(
        &self,
        session: &Arc<Session>,
        envelope: Envelope,
    ) -> Result<Flow, Box<Envelope>> {
        let hook = metafi_core::Hook::MatchDataSend;
        let hooked = self.hooks.has_before(hook) || self.hooks.has_after(hook);
        let name = envelope.message.as_ref().map(Message::name);
        match (&self.matches, envelope.message) {
            (Some(services), Some(Message::MatchDataSend(send))) if !hooked => {
                metrics::message_received(name.unwrap_or_default());
                Ok(self.match_data_send(services, session, send))
            }
            (_, message) => Err(Box::new(Envelope {
                cid: envelope.cid,
                message,
            })),
        }
    }

    /// Serves one client message.
    pub(crate) async fn dispatch(
        &self,
        session: &Arc<Session>,
        cid: String,
        message: Message,
    ) -> Flow {
        match message {
            Message::Ping(_) => {
                session.send(&Envelope::new(cid, Message::Pong(Pong {})));
                Ok(())
            }
            Message::Pong(_) => Ok(()),
            Message::Rpc(rpc) => self.rpc(session, cid, rpc).await,
            Message::StatusFollow(follow) => self.status_follow(session, cid, follow).await,
            Message::StatusUnfollow(unfollow) => self.status_unfollow(session, cid, unfollow),
            Message::StatusUpdate(update) => self.status_update(session, cid, update),
            Message::ChannelJoin(join) => self.channel_join(session, cid, join).await,
            Message::ChannelLeave(leave) => self.channel_leave(session, cid, leave),
            Message::ChannelMessageSend(send) => self.channel_send(session, cid, send).await,
            Message::ChannelMessageUpdate(update) => {
                self.channel_update(session, cid, update).await
            }
            Message::ChannelMessageRemove(remove) => {
                self.channel_remove(session, cid, remove).await
            }
            message @ (Message::MatchCreate(_)
            | Message::MatchDataSend(_)
            | Message::MatchJoin(_)
            | Message::MatchLeave(_)
            | Message::MatchmakerAdd(_)
            | Message::MatchmakerRemove(_)) => {
                self.handle_match_message(session, cid, message).await
            }
            message @ (Message::PartyCreate(_)
            | Message::PartyJoin(_)
            | Message::PartyLeave(_)
            | Message::PartyPromote(_)
            | Message::PartyAccept(_)
            | Message::PartyRemove(_)
            | Message::PartyClose(_)
            | Message::PartyJoinRequestList(_)
            | Message::PartyMatchmakerAdd(_)
            | Message::PartyMatchmakerRemove(_)
            | Message::PartyDataSend(_)
            | Message::PartyUpdate(_)) => self.handle_party_message(session, cid, message).await,
            // Messages only the server sends.
            Message::Channel(_)
            | Message::ChannelMessage(_)
            | Message::ChannelMessageAck(_)
            | Message::ChannelPresenceEvent(_)
            | Message::Error(_)
            | Message::Match(_)
            | Message::MatchData(_)
            | Message::MatchPresenceEvent(_)
            | Message::MatchmakerMatched(_)
            | Message::MatchmakerTicket(_)
            | Message::Notifications(_)
            | Message::Status(_)
            | Message::StatusPresenceEvent(_)
            | Message::StreamData(_)
            | Message::StreamPresenceEvent(_)
            | Message::Party(_)
            | Message::PartyLeader(_)
            | Message::PartyJoinRequest(_)
            | Message::PartyMatchmakerTicket(_)
            | Message::PartyData(_)
            | Message::PartyPresenceEvent(_) => {
                session.send(&Envelope::error(
                    cid,
                    ErrorCode::UnrecognizedPayload,
                    "Unrecognized message.",
                ));
                Err(CloseReason::UnrecognizedMessage)
            }
        }
    }

    async fn rpc(&self, session: &Session, cid: String, rpc: Rpc) -> Flow {
        if rpc.id.is_empty() {
            return bad_input(session, cid, "RPC ID must be set");
        }
        let ctx = session.rpc_context(metafi_core::new_trace_id());
        let id = rpc.id.to_lowercase();
        match self.services.rpc.call(&id, ctx, rpc.payload).await {
            Ok(payload) => {
                session.send(&Envelope::new(
                    cid,
                    Message::Rpc(Rpc {
                        id: rpc.id,
                        payload,
                        http_key: String::new(),
                    }),
                ));
            }
            Err(CoreError::NotFound { message }) => {
                session.send(&Envelope::error(
                    cid,
                    ErrorCode::RuntimeFunctionNotFound,
                    message,
                ));
            }
            Err(error) => {
                log_fault(&error, "rpc");
                session.send(&Envelope::error(
                    cid,
                    ErrorCode::RuntimeFunctionException,
                    error.client_message(),
                ));
            }
        }
        Ok(())
    }

    async fn status_follow(&self, session: &Session, cid: String, follow: StatusFollow) -> Flow {
        let me = session.user_id();
        let mut ids = HashSet::new();
        for text in &follow.user_ids {
            let Ok(id) = Uuid::parse_str(text) else {
                return bad_input(session, cid, "Invalid user identifier");
            };
            if id != me {
                ids.insert(id);
            }
        }
        let mut names = HashSet::new();
        for name in &follow.usernames {
            if name.is_empty() {
                return bad_input(session, cid, "Invalid username");
            }
            if name != session.username() {
                names.insert(name.clone());
            }
        }
        if ids.is_empty() && names.is_empty() {
            session.send(&Envelope::new(cid, Message::Status(Status::default())));
            return Ok(());
        }
        // Only existing users can be followed; unknown ones are skipped, as in Nakama.
        let mut found: HashSet<Uuid> = HashSet::new();
        let store = &self.services.store;
        let ids: Vec<Uuid> = ids.into_iter().collect();
        let names: Vec<String> = names.into_iter().collect();
        let by_id = if ids.is_empty() {
            Ok(Vec::new())
        } else {
            store.users_by_id(&ids).await
        };
        let by_name = if names.is_empty() {
            Ok(Vec::new())
        } else {
            store.users_by_username(&names).await
        };
        match (by_id, by_name) {
            (Ok(a), Ok(b)) => found.extend(a.into_iter().chain(b).map(|u| u.id)),
            (Err(e), _) | (_, Err(e)) => {
                log_fault(
                    &CoreError::storage("checking users to follow", e),
                    "status_follow",
                );
                return runtime_error(session, cid, "Could not check users");
            }
        }
        found.remove(&me);
        found.remove(&Uuid::nil());
        let found: Vec<Uuid> = found.into_iter().collect();
        if let Err(limit) =
            self.parts
                .status
                .follow(session.id(), &found, self.config.max_followed_users)
        {
            return bad_input(
                session,
                cid,
                format!(
                    "Cannot follow more than {} users from one socket (socket.max_followed_users).",
                    limit.limit
                ),
            );
        }
        let presences: Vec<UserPresence> = found
            .iter()
            .flat_map(|user| self.parts.tracker.list(&StreamKey::status(*user), false))
            .map(|p| wire_presence(&p, true))
            .collect();
        session.send(&Envelope::new(cid, Message::Status(Status { presences })));
        Ok(())
    }

    fn status_unfollow(&self, session: &Session, cid: String, unfollow: StatusUnfollow) -> Flow {
        let mut ids = Vec::with_capacity(unfollow.user_ids.len());
        for text in &unfollow.user_ids {
            let Ok(id) = Uuid::parse_str(text) else {
                return bad_input(session, cid, "Invalid user identifier");
            };
            if id != session.user_id() {
                ids.push(id);
            }
        }
        self.parts.status.unfollow(session.id(), &ids);
        session.send(&Envelope::ack(cid));
        Ok(())
    }

    fn status_update(&self, session: &Session, cid: String, update: StatusUpdate) -> Flow {
        let stream = StreamKey::status(session.user_id());
        let change = match update.status {
            // No status: appear offline.
            None => self.parts.tracker.untrack(session.id(), &stream),
            Some(status) => {
                if status.value.len() > MAX_STATUS_BYTES {
                    return bad_input(session, cid, "Status must be 2048 characters or less");
                }
                Some(self.parts.tracker.update(
                    &stream,
                    Presence {
                        session_id: session.id(),
                        user_id: session.user_id(),
                        meta: PresenceMeta {
                            username: session.username().to_owned(),
                            persistence: false,
                            hidden: false,
                            status: Some(status.value),
                        },
                    },
                ))
            }
        };
        session.send(&Envelope::ack(cid));
        self.deliver(change.into_iter().collect());
        Ok(())
    }

    async fn channel_join(&self, session: &Session, cid: String, join: ChannelJoin) -> Flow {
        let channel = match self
            .services
            .channels
            .resolve_join(session.user_id(), &join.target, join.r#type)
            .await
        {
            Ok(channel) => channel,
            Err(error) => return core_error(session, cid, &error, "channel_join"),
        };
        let stream = StreamKey::channel(&channel);
        let already_in = self.parts.tracker.get(session.id(), &stream).is_some();
        if !already_in {
            let joined = self
                .parts
                .tracker
                .streams_of(session.id())
                .iter()
                .filter(|s| s.is_channel())
                .count();
            if joined >= self.config.max_channels_per_session {
                return bad_input(
                    session,
                    cid,
                    format!(
                        "Cannot be in more than {} channels from one socket (socket.max_channels_per_session).",
                        self.config.max_channels_per_session
                    ),
                );
            }
        }
        let meta = PresenceMeta {
            username: session.username().to_owned(),
            persistence: join.persistence.is_none_or(|p| p.value),
            hidden: join.hidden.is_some_and(|h| h.value),
            status: None,
        };
        let persistence = meta.persistence;
        let change = self.parts.tracker.track(
            &stream,
            Presence {
                session_id: session.id(),
                user_id: session.user_id(),
                meta,
            },
        );
        let is_new = change.is_some();
        let present = self.parts.tracker.list(&stream, false);
        if is_new && let ChannelId::Direct { user_one, user_two } = &channel {
            let other = if *user_one == session.user_id() {
                *user_two
            } else {
                *user_one
            };
            if other != session.user_id() && !present.iter().any(|p| p.user_id == other) {
                let content = serde_json::json!({ "username": session.username() }).to_string();
                self.notify(
                    other,
                    format!("{} wants to chat", session.username()),
                    content,
                    NOTIFICATION_DM_REQUEST,
                    Some(session.user_id()),
                )
                .await;
            }
        }
        let presences = present
            .iter()
            // A new member is not listed among the others; a repeated join lists itself.
            .filter(|p| !(is_new && p.session_id == session.id()))
            .map(|p| wire_presence(p, false))
            .collect();
        let mut reply = Channel {
            id: channel.to_string(),
            presences,
            self_presence: Some(UserPresence {
                user_id: session.user_id().to_string(),
                session_id: session.id().to_string(),
                username: session.username().to_owned(),
                persistence,
                status: None,
            }),
            ..Channel::default()
        };
        channel.fill(metafi_core::channels::ChannelFields {
            room_name: &mut reply.room_name,
            group_id: &mut reply.group_id,
            user_id_one: &mut reply.user_id_one,
            user_id_two: &mut reply.user_id_two,
        });
        session.send(&Envelope::new(cid, Message::Channel(reply)));
        self.deliver(change.into_iter().collect());
        Ok(())
    }

    fn channel_leave(&self, session: &Session, cid: String, leave: ChannelLeave) -> Flow {
        let Some(channel) = ChannelId::parse(&leave.channel_id) else {
            return bad_input(session, cid, "Invalid channel identifier");
        };
        let change = self
            .parts
            .tracker
            .untrack(session.id(), &StreamKey::channel(&channel));
        session.send(&Envelope::ack(cid));
        self.deliver(change.into_iter().collect());
        Ok(())
    }

    async fn channel_send(&self, session: &Session, cid: String, send: ChannelMessageSend) -> Flow {
        let Some(channel) = ChannelId::parse(&send.channel_id) else {
            return bad_input(session, cid, "Invalid channel identifier");
        };
        if let Err(error) = require_json_object(&send.content) {
            return core_error(session, cid, &error, "channel_message_send");
        }
        let Some(persist) = self.membership(session, &channel) else {
            return bad_input(session, cid, "Must join channel before sending messages");
        };
        let sent = self
            .services
            .channels
            .send(
                &channel,
                session.user_id(),
                session.username(),
                send.content,
                persist,
            )
            .await;
        self.relay(session, cid, &channel, sent, "channel_message_send")
    }

    async fn channel_update(
        &self,
        session: &Session,
        cid: String,
        update: ChannelMessageUpdate,
    ) -> Flow {
        if Uuid::parse_str(&update.message_id).is_err() {
            return bad_input(session, cid, "Invalid message identifier");
        }
        let Some(channel) = ChannelId::parse(&update.channel_id) else {
            return bad_input(session, cid, "Invalid channel identifier");
        };
        if let Err(error) = require_json_object(&update.content) {
            return core_error(session, cid, &error, "channel_message_update");
        }
        let Some(persist) = self.membership(session, &channel) else {
            return bad_input(session, cid, "Must join channel before updating messages");
        };
        let updated = self
            .services
            .channels
            .update(
                &channel,
                &update.message_id,
                session.user_id(),
                session.username(),
                update.content,
                persist,
            )
            .await;
        self.relay(session, cid, &channel, updated, "channel_message_update")
    }

    async fn channel_remove(
        &self,
        session: &Session,
        cid: String,
        remove: ChannelMessageRemove,
    ) -> Flow {
        if Uuid::parse_str(&remove.message_id).is_err() {
            return bad_input(session, cid, "Invalid message identifier");
        }
        let Some(channel) = ChannelId::parse(&remove.channel_id) else {
            return bad_input(session, cid, "Invalid channel identifier");
        };
        let Some(persist) = self.membership(session, &channel) else {
            return bad_input(session, cid, "Must join channel before removing messages");
        };
        let removed = self
            .services
            .channels
            .remove(
                &channel,
                &remove.message_id,
                session.user_id(),
                session.username(),
                persist,
            )
            .await;
        self.relay(session, cid, &channel, removed, "channel_message_remove")
    }

    /// The session's persistence setting in a channel it joined; `None` when not joined.
    fn membership(&self, session: &Session, channel: &ChannelId) -> Option<bool> {
        self.parts
            .tracker
            .get(session.id(), &StreamKey::channel(channel))
            .map(|meta| meta.persistence)
    }

    /// Broadcasts a sent/updated/removed message to the channel (the sender included, before
    /// its ack, as Nakama does) and acknowledges it.
    fn relay(
        &self,
        session: &Session,
        cid: String,
        channel: &ChannelId,
        result: Result<ChannelMessage, CoreError>,
        operation: &'static str,
    ) -> Flow {
        let message = match result {
            Ok(message) => message,
            Err(error) => return core_error(session, cid, &error, operation),
        };
        let ack = ChannelMessageAck {
            channel_id: message.channel_id.clone(),
            message_id: message.message_id.clone(),
            code: message.code,
            username: message.username.clone(),
            create_time: message.create_time,
            update_time: message.update_time,
            persistent: message.persistent,
            room_name: message.room_name.clone(),
            group_id: message.group_id.clone(),
            user_id_one: message.user_id_one.clone(),
            user_id_two: message.user_id_two.clone(),
        };
        let members = self.parts.tracker.session_ids(&StreamKey::channel(channel));
        self.parts.router.send_to_sessions(
            &members,
            &Outbound::new(Envelope::new("", Message::ChannelMessage(message))),
        );
        session.send(&Envelope::new(cid, Message::ChannelMessageAck(ack)));
        Ok(())
    }
}

fn bad_input(session: &Session, cid: String, message: impl Into<String>) -> Flow {
    session.send(&Envelope::error(cid, ErrorCode::BadInput, message));
    Ok(())
}

fn runtime_error(session: &Session, cid: String, message: impl Into<String>) -> Flow {
    session.send(&Envelope::error(cid, ErrorCode::RuntimeException, message));
    Ok(())
}

/// A service error as an error envelope: invalid input is `BAD_INPUT`, anything else
/// `RUNTIME_EXCEPTION` with the client-safe message (internal causes are logged, never sent).
fn core_error(session: &Session, cid: String, error: &CoreError, operation: &str) -> Flow {
    log_fault(error, operation);
    let code = match error {
        CoreError::InvalidArgument { .. } => ErrorCode::BadInput,
        _ => ErrorCode::RuntimeException,
    };
    session.send(&Envelope::error(cid, code, error.client_message()));
    Ok(())
}

fn log_fault(error: &CoreError, operation: &str) {
    if error.is_server_fault() {
        tracing::error!(error = %error, source = ?std::error::Error::source(error), operation, "realtime request failed");
    }
}

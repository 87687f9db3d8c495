//! [`Realtime`]: the service every socket transport drives. A transport authenticates the
//! client, calls [`Realtime::open`], feeds each decoded envelope to [`Realtime::handle`], writes
//! what the session's outbox hands out, and calls [`Realtime::end`] when the connection is
//! over. Nothing here knows about WebSockets or QUIC.
//!
//! `impl Realtime` is split by concern into three files, because the requests a client can send
//! are most of the code (one file would be ~1,200 lines) and each group shares nothing with the
//! others but `Realtime`'s fields:
//! - this file: the type, its construction and parts, the session lifecycle (`open`, `end`,
//!   `shutdown`) and delivery (`send_to_stream`, `send_to_user`, presence events, notifications);
//! - `client_requests.rs`: [`Realtime::handle`], which dispatches every client message, and the
//!   RPC, status and chat channel requests;
//! - `match_requests.rs`: match and matchmaker requests, the matchmaker loop
//!   ([`Realtime::run_matchmaker`]), and match cleanup when a session ends.

use std::collections::HashSet;
use std::sync::Arc;

use metafi_core::{Channels, Clock, Hooks, NewNotification, NoHooks, Notifier, RpcDispatch};
use metafi_match::PresenceReason;
use metafi_proto::api::Notification;
use metafi_proto::realtime::{
    ChannelPresenceEvent, Envelope, MatchPresenceEvent, Message, Notifications,
    StatusPresenceEvent, StreamPresenceEvent, UserPresence,
};
use metafi_proto::wkt::{Timestamp, string_value};
use metafi_storage::Storage;
use uuid::Uuid;

use crate::{
    CloseReason, LocalRouter, LocalStatusRegistry, LocalTracker, MatchServices, MessageRouter,
    NoRemoteSessions, Outbound, OutboxLimits, Parties, Presence, PresenceChange, PresenceMeta,
    RemoteSessions, Session, SessionParams, SessionRegistry, StatusRegistry, StreamKey, StreamMode,
    Tracker, metrics,
};

/// Nakama's notification code telling a socket it was replaced under `session.single_socket`.
pub const NOTIFICATION_SINGLE_SOCKET: i32 = -7;
/// Nakama's notification code of a direct-chat request.
pub const NOTIFICATION_DM_REQUEST: i32 = -1;

/// Limits of the realtime layer; every one is a configuration key (see `docs/REALTIME.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealtimeConfig {
    /// What a client that does not read may cost before it is disconnected
    /// (`socket.outgoing_queue_bytes`, `socket.outgoing_queue_max_age_ms`,
    /// `socket.outgoing_queue_size`).
    pub outbox: OutboxLimits,
    /// Only one socket per user; a new one closes the older ones (`session.single_socket`).
    pub single_socket: bool,
    /// Chat channels one socket may be in at once (`socket.max_channels_per_session`).
    pub max_channels_per_session: usize,
    /// Users one socket may follow (`socket.max_followed_users`).
    pub max_followed_users: usize,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        RealtimeConfig {
            outbox: OutboxLimits::default(),
            single_socket: false,
            max_channels_per_session: 128,
            max_followed_users: 1024,
        }
    }
}

/// The services the realtime layer calls.
#[derive(Debug, Clone)]
pub struct RealtimeServices {
    pub channels: Arc<Channels>,
    pub store: Arc<dyn Storage>,
    pub rpc: Arc<dyn RpcDispatch>,
    pub clock: Arc<dyn Clock>,
}

/// The cross-node parts, each behind a trait. [`RealtimeParts::local`] is the single-node set.
#[derive(Debug, Clone)]
pub struct RealtimeParts {
    pub registry: Arc<SessionRegistry>,
    pub tracker: Arc<dyn Tracker>,
    pub status: Arc<dyn StatusRegistry>,
    pub router: Arc<dyn MessageRouter>,
    /// Server code's requests for sessions of other nodes (closes, streams, push to all).
    pub remote: Arc<dyn RemoteSessions>,
}

impl RealtimeParts {
    pub fn local() -> RealtimeParts {
        let registry = Arc::new(SessionRegistry::new());
        RealtimeParts {
            router: Arc::new(LocalRouter::new(registry.clone())),
            registry,
            tracker: Arc::new(LocalTracker::new()),
            status: Arc::new(LocalStatusRegistry::new()),
            remote: Arc::new(NoRemoteSessions),
        }
    }

    /// Routes presence changes as Nakama does: channel streams tell their members, status
    /// streams tell the user's followers and the user's own sessions, match streams their
    /// members, other streams (server code's own included) their members; each only on this
    /// node (in a cluster the other nodes tell theirs).
    pub fn deliver(&self, changes: Vec<PresenceChange>) {
        for change in changes {
            if change.is_empty() {
                continue;
            }
            let with_status = change.stream.mode == StreamMode::Status;
            let joins: Vec<UserPresence> = change
                .joins
                .iter()
                .map(|p| wire_presence(p, with_status))
                .collect();
            let leaves: Vec<UserPresence> = change
                .leaves
                .iter()
                .map(|p| wire_presence(p, with_status))
                .collect();
            let stream = &change.stream;
            let (message, recipients) = match stream.mode {
                StreamMode::Status => {
                    let mut recipients: HashSet<Uuid> =
                        self.status.followers(stream.subject).into_iter().collect();
                    recipients.extend(self.registry.user_session_ids(stream.subject));
                    (
                        Message::StatusPresenceEvent(StatusPresenceEvent { joins, leaves }),
                        recipients.into_iter().collect(),
                    )
                }
                StreamMode::Room | StreamMode::Group | StreamMode::Direct => {
                    let mut event = ChannelPresenceEvent {
                        joins,
                        leaves,
                        ..ChannelPresenceEvent::default()
                    };
                    if let Some(channel) = stream.channel_id() {
                        event.channel_id = channel.to_string();
                        channel.fill(metafi_core::channels::ChannelFields {
                            room_name: &mut event.room_name,
                            group_id: &mut event.group_id,
                            user_id_one: &mut event.user_id_one,
                            user_id_two: &mut event.user_id_two,
                        });
                    }
                    (
                        Message::ChannelPresenceEvent(event),
                        self.tracker.session_ids(stream),
                    )
                }
                StreamMode::MatchRelayed | StreamMode::MatchAuthoritative => (
                    Message::MatchPresenceEvent(MatchPresenceEvent {
                        match_id: format!("{}.{}", stream.subject, stream.label),
                        joins,
                        leaves,
                    }),
                    self.tracker.session_ids(stream),
                ),
                StreamMode::Notifications | StreamMode::Party | StreamMode::Custom(_) => (
                    Message::StreamPresenceEvent(StreamPresenceEvent {
                        stream: Some(stream.to_wire()),
                        joins,
                        leaves,
                    }),
                    self.tracker.session_ids(stream),
                ),
            };
            // This node's sessions only: in a cluster every other node tells its own members
            // when it applies this node's announcement of the change (see `metafi-cluster`'s
            // tracker), so members on every node hear of it once, and only once their own
            // node's books hold it.
            let mut recipients = recipients;
            recipients.retain(|id| !self.router.is_remote_session(*id));
            if !recipients.is_empty() {
                self.router
                    .send_to_sessions(&recipients, &Outbound::new(Envelope::new("", message)));
            }
        }
        metrics::presences(self.tracker.len());
    }
}

/// Sessions, presences, status and channels behind every socket.
#[derive(Debug)]
pub struct Realtime {
    pub(crate) config: RealtimeConfig,
    pub(crate) services: RealtimeServices,
    pub(crate) parts: RealtimeParts,
    /// The match engine and matchmaker, when the server runs them (see `match_requests.rs`).
    pub(crate) matches: Option<MatchServices>,
    /// Before/after hooks on client messages (see `message_hooks.rs`); `NoHooks` by default.
    pub(crate) hooks: Arc<dyn Hooks>,
    /// The notifications service, for what the server tells users (direct-chat requests);
    /// without it those are only pushed live, not stored.
    pub(crate) notifier: Option<Arc<dyn Notifier>>,
    /// The parties of this node, when the server runs them (see `party/`).
    pub(crate) parties: Option<Arc<Parties>>,
    /// Party requests for other nodes' parties (a cluster).
    pub(crate) party_forwarder: std::sync::OnceLock<Arc<dyn crate::PartyForwarder>>,
}

impl Realtime {
    /// A single-node realtime service.
    pub fn new(config: RealtimeConfig, services: RealtimeServices) -> Realtime {
        Realtime::with_parts(config, services, RealtimeParts::local())
    }

    pub fn with_parts(
        config: RealtimeConfig,
        services: RealtimeServices,
        parts: RealtimeParts,
    ) -> Realtime {
        Realtime {
            config,
            services,
            parts,
            matches: None,
            hooks: Arc::new(NoHooks),
            notifier: None,
            parties: None,
            party_forwarder: std::sync::OnceLock::new(),
        }
    }

    /// Sends the server's notifications (direct-chat requests) through the notifications
    /// service: stored and pushed, as Nakama does.
    pub fn with_notifier(mut self, notifier: Arc<dyn Notifier>) -> Realtime {
        self.notifier = Some(notifier);
        self
    }

    /// Adds the runtime's before/after hooks on client messages.
    pub fn with_hooks(mut self, hooks: Arc<dyn Hooks>) -> Realtime {
        self.hooks = hooks;
        self
    }

    /// Adds the match engine: without it, match and matchmaker messages are answered with an
    /// error saying they are not available.
    pub fn with_matches(mut self, services: MatchServices) -> Realtime {
        self.matches = Some(services);
        self
    }

    /// Adds parties: without them, party messages are answered with an error saying they are
    /// not available.
    pub fn with_parties(mut self, parties: Arc<Parties>) -> Realtime {
        self.parties = Some(parties);
        self
    }

    /// Forwards party requests for other nodes' parties from now on (a cluster, once, at
    /// start); false when a forwarder was set already.
    pub fn set_party_forwarder(&self, forwarder: Arc<dyn crate::PartyForwarder>) -> bool {
        self.party_forwarder.set(forwarder).is_ok()
    }

    pub fn parties(&self) -> Option<&Arc<Parties>> {
        self.parties.as_ref()
    }

    pub fn matches(&self) -> Option<&MatchServices> {
        self.matches.as_ref()
    }

    pub fn config(&self) -> &RealtimeConfig {
        &self.config
    }

    pub fn registry(&self) -> &Arc<SessionRegistry> {
        &self.parts.registry
    }

    /// The presence books, for the match engine.
    pub fn tracker(&self) -> &Arc<dyn Tracker> {
        &self.parts.tracker
    }

    /// The status follow books.
    pub fn status(&self) -> &Arc<dyn StatusRegistry> {
        &self.parts.status
    }

    /// Registers a new session for an authenticated client. With `appear_online` its status
    /// presence is tracked (followers see it come online); under `single_socket` the user's
    /// older sessions are told and closed.
    pub fn open(&self, params: SessionParams) -> Arc<Session> {
        let appear_online = params.appear_online;
        let session = Arc::new(Session::new(Uuid::new_v4(), params, self.config.outbox));
        self.parts.registry.add(session.clone());
        metrics::sessions(self.parts.registry.len());
        tracing::debug!(sid = %session.id(), uid = %session.user_id(), format = session.format().as_str(), "realtime session opened");
        if appear_online {
            let change = self.parts.tracker.track(
                &StreamKey::status(session.user_id()),
                Presence {
                    session_id: session.id(),
                    user_id: session.user_id(),
                    meta: PresenceMeta {
                        username: session.username().to_owned(),
                        persistence: false,
                        hidden: false,
                        status: Some(String::new()),
                    },
                },
            );
            self.deliver(change.into_iter().collect());
        }
        if self.config.single_socket {
            self.close_other_sessions(&session);
        }
        session
    }

    /// Cleans up after a session: it leaves every stream (others see it leave), drops its
    /// follows and leaves the registry. Idempotent; `reason` is used if the session was not
    /// already closing.
    pub fn end(&self, session: &Session, reason: CloseReason) {
        session.close(reason);
        if !session.end() {
            return;
        }
        self.parts.registry.remove(session.id(), session.user_id());
        let changes = self.parts.tracker.untrack_all(session.id());
        self.parts.status.unfollow_all(session.id());
        let reason = session.outbox().close_reason().unwrap_or(reason);
        let presence_reason = match reason {
            CloseReason::ServerDisconnect { presence_reason } => presence_reason,
            _ => PresenceReason::Disconnect,
        };
        self.matches_session_ended(session.id(), presence_reason);
        self.parties_session_ended(session.id());
        self.deliver(changes);
        metrics::session_closed(reason.label());
        metrics::sessions(self.parts.registry.len());
        metrics::presences(self.parts.tracker.len());
        tracing::debug!(sid = %session.id(), uid = %session.user_id(), reason = reason.label(), "realtime session ended");
    }

    /// Closes every session (the server is stopping). Transports finish each connection.
    pub fn shutdown(&self) {
        for session in self.parts.registry.all() {
            session.close(CloseReason::Shutdown);
        }
    }

    /// Sends an envelope to every session in a stream; returns how many accepted it.
    pub fn send_to_stream(&self, stream: &StreamKey, envelope: Envelope) -> usize {
        let sessions = self.parts.tracker.session_ids(stream);
        if sessions.is_empty() {
            return 0;
        }
        self.parts
            .router
            .send_to_sessions(&sessions, &Outbound::new(envelope))
    }

    /// Sends an envelope to every session of a user.
    pub fn send_to_user(&self, user_id: Uuid, envelope: Envelope) -> usize {
        self.parts
            .router
            .send_to_user(user_id, &Outbound::new(envelope))
    }

    /// Routes presence changes to whoever should hear of them ([`RealtimeParts::deliver`]).
    pub fn deliver(&self, changes: Vec<PresenceChange>) {
        self.parts.deliver(changes);
    }

    /// A notification from the server to `user_id` (a direct-chat request): through the
    /// notifications service when the server has one (stored, as Nakama keeps these, and pushed
    /// to every socket of the user); otherwise only pushed live. A failure is logged: the
    /// request that caused it (a channel join) still succeeds, as in Nakama.
    pub(crate) async fn notify(
        &self,
        user_id: Uuid,
        subject: String,
        content: String,
        code: i32,
        sender: Option<Uuid>,
    ) {
        if let Some(notifier) = &self.notifier {
            let notification = NewNotification {
                user_id,
                subject,
                content,
                code,
                sender_id: sender,
                persistent: true,
            };
            if let Err(e) = notifier.notify(vec![notification]).await {
                tracing::warn!(%user_id, code, error = %e, "failed to send a notification");
            }
            return;
        }
        let notification = Notification {
            id: Uuid::new_v4().to_string(),
            subject,
            content,
            code,
            sender_id: sender.map(|s| s.to_string()).unwrap_or_default(),
            create_time: Some(Timestamp::from_millis(
                self.services.clock.now_secs().saturating_mul(1000),
            )),
            persistent: false,
        };
        self.send_to_user(
            user_id,
            Envelope::new(
                "",
                Message::Notifications(Notifications {
                    notifications: vec![notification],
                }),
            ),
        );
    }

    fn close_other_sessions(&self, session: &Session) {
        for other in self
            .parts
            .registry
            .user_session_ids(session.user_id())
            .into_iter()
            .filter(|id| *id != session.id())
        {
            let Some(old) = self.parts.registry.get(other) else {
                continue;
            };
            replace_session(&old, self.services.clock.now_secs());
        }
    }
}

/// Closes a session that a newer socket of its user replaced under `session.single_socket`
/// (on this node or, in a cluster, on another): it is told with Nakama's `single_socket`
/// notification (code -7), then closed. `now_secs` stamps the notification.
pub fn replace_session(old: &Session, now_secs: i64) {
    let notice = Notification {
        id: Uuid::new_v4().to_string(),
        subject: "single_socket".into(),
        content: "{}".into(),
        code: NOTIFICATION_SINGLE_SOCKET,
        sender_id: String::new(),
        create_time: Some(Timestamp::from_millis(now_secs.saturating_mul(1000))),
        persistent: false,
    };
    old.send(&Envelope::new(
        "",
        Message::Notifications(Notifications {
            notifications: vec![notice],
        }),
    ));
    old.close(CloseReason::SingleSocket);
}

/// A presence as clients see it; the status only in status streams.
pub(crate) fn wire_presence(presence: &Presence, with_status: bool) -> UserPresence {
    UserPresence {
        user_id: presence.user_id.to_string(),
        session_id: presence.session_id.to_string(),
        username: presence.meta.username.clone(),
        persistence: presence.meta.persistence,
        status: if with_status {
            string_value(presence.meta.status.clone().unwrap_or_default())
        } else {
            None
        },
    }
}

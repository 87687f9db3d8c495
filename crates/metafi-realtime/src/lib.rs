//! MetaFi's realtime layer: the sessions behind the Nakama-compatible socket, independent of
//! the transport that carries them (WebSocket or QUIC, in `metafi-transport`).
//!
//! A transport authenticates a client and calls [`Realtime::open`]; it feeds each decoded
//! envelope to [`Realtime::handle`], writes whatever the session's [`Outbox`] hands out, and
//! calls [`Realtime::end`] when the connection is over. In between, the session can join chat
//! channels, follow users' status, call RPCs, play matches and matchmake (with the match engine
//! from `metafi-match`, added by [`Realtime::with_matches`]), form parties ([`Parties`], added
//! by [`Realtime::with_parties`]), and receive what others send.
//!
//! Memory is bounded everywhere: each session's outbox is bounded by bytes, by how long its
//! messages wait unwritten, and by a sanity count ([`OutboxLimits`]; a client that does not
//! read is closed with [`CloseReason::OutgoingQueueFull`] or
//! [`CloseReason::OutgoingQueueStalled`]), presence events waiting in an outbox are merged,
//! channels and follows per session are capped, and an idle session owns no queue memory. A
//! broadcast is encoded once per wire format ([`Outbound`]), not once per recipient.
//!
//! Server code reaches sessions, streams, channels and follows through [`RealtimeControl`],
//! built from the same [`RealtimeParts`] before [`Realtime`] exists.
//!
//! Cross-node concerns are traits whose first implementation is local: [`Tracker`]
//! (presences), [`StatusRegistry`] (follows), [`MessageRouter`] (delivery) and
//! [`RemoteSessions`] (server code's closes and stream changes of other nodes' sessions).
//!
//! Must not depend on: HTTP or WebSocket libraries, script engines, storage backends. Key
//! types: [`Realtime`], [`Session`], [`Outbox`], [`Tracker`], [`StreamKey`], [`CloseReason`].

mod channel_push;
mod client_requests;
mod close;
mod control;
mod match_data_json;
mod match_outlet;
mod match_requests;
mod message_hooks;
mod message_router;
mod metrics;
mod node_sessions;
mod notification_push;
mod online;
mod outbound;
mod outbox;
pub mod party;
mod realtime;
mod remote_sessions;
mod session_registry;
mod socket_session;
mod status;
mod stream;
mod tracker;

pub use channel_push::ChannelSessions;
pub use client_requests::MAX_STATUS_BYTES;
pub use close::{CloseReason, QueueLimit};
pub use control::{JoinRefused, RealtimeControl, ServerMessage, StreamJoin};
pub use match_outlet::MatchOutlet;
pub use match_requests::{MatchServices, send_matched};
pub use message_router::{LocalRouter, MessageRouter};
pub use node_sessions::NodeSessions;
pub use notification_push::SessionPush;
pub use online::StatusOnline;
pub use outbound::{MergeKey, Outbound};
pub use outbox::{Next, NextRouted, Outbox, OutboxLimits, Pushed};
pub use party::{Parties, PartyConfig, PartyForwarder};
pub use realtime::{
    NOTIFICATION_DM_REQUEST, NOTIFICATION_SINGLE_SOCKET, Realtime, RealtimeConfig, RealtimeParts,
    RealtimeServices, replace_session,
};
pub use remote_sessions::{JoinAnswer, NoRemoteSessions, RemoteSessions};
pub use session_registry::{SessionListener, SessionRegistry};
pub use socket_session::{Session, SessionParams};
pub use status::{FollowLimitExceeded, LocalStatusRegistry, StatusRegistry};
pub use stream::{StreamKey, StreamMode};
pub use tracker::{LocalTracker, Presence, PresenceChange, PresenceMeta, Tracker};

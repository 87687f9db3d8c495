//! Where the match engine's output goes: match data and presence events for sessions. The
//! realtime layer implements [`Outlet`] (encoding each message once per wire format and queuing
//! the bytes to each session); tests use [`crate::testing::RecordingOutlet`].

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use crate::presence::Presence;

/// Match data on its way to clients (`rtapi.MatchData`).
#[derive(Debug, Clone, Copy)]
pub struct OutgoingData<'a> {
    /// `<uuid>.<node>` (or `<uuid>.` for a relayed match).
    pub match_id: &'a str,
    pub op_code: i64,
    pub data: &'a Bytes,
    /// Who sent it; `None` for messages from the server itself.
    pub sender: Option<&'a Presence>,
    pub reliable: bool,
    /// MetaFi's delivery extension: as the client sent it (relayed matches) or as the match
    /// handler chose it (`Dispatcher::broadcast_with`); `None` when neither named a class (then
    /// `reliable` decides).
    pub delivery: Option<&'a metafi_proto::realtime::Delivery>,
}

/// Presences that joined and left a match (`rtapi.MatchPresenceEvent`).
#[derive(Debug, Clone, Copy)]
pub struct PresenceEvent<'a> {
    pub match_id: &'a str,
    pub joins: &'a [Arc<Presence>],
    pub leaves: &'a [Arc<Presence>],
}

/// The sessions side of the engine. Called from executor threads (authoritative matches) and
/// from IO threads (relayed matches); must never block for long and never call back into the
/// match engine.
pub trait Outlet: Send + Sync + fmt::Debug {
    /// Delivers match data to each session in `recipients` (session ids) that is connected here.
    fn send_data(&self, recipients: &[Uuid], data: &OutgoingData<'_>);

    /// Delivers a presence event to each session in `recipients`.
    fn send_presences(&self, recipients: &[Uuid], event: &PresenceEvent<'_>);

    /// Whether a session is still connected. A join is accepted only for a connected session,
    /// so a session that ends concurrently never stays in a match.
    fn is_connected(&self, session_id: Uuid) -> bool;

    /// Makes what was sent on this thread since the last flush go out. An outlet may hold
    /// back waking the sessions' writers until then; the executor flushes after each step and
    /// relayed sends flush at once.
    fn flush(&self) {}
}

//! Who is in a match, and what they send it.

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

/// One session in a match. Shared (`Arc`) between the match, its input messages and listings,
/// so a message carries its sender without copying strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Presence {
    pub user_id: Uuid,
    pub session_id: Uuid,
    pub username: Arc<str>,
    /// The node the session is connected to.
    pub node: Arc<str>,
}

/// Why a presence joined or left (Nakama's `runtime.PresenceReason`; scripts see the number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PresenceReason {
    Unknown = 0,
    Join = 1,
    Update = 2,
    /// The client left (`match_leave`) or was kicked.
    Leave = 3,
    /// The session ended.
    Disconnect = 4,
}

/// A message a client sent to an authoritative match, delivered to `match_loop` at the next
/// tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchMessage {
    pub sender: Arc<Presence>,
    pub op_code: i64,
    pub data: Bytes,
    pub reliable: bool,
    /// When the server received it, milliseconds since the Unix epoch.
    pub receive_time_ms: i64,
}

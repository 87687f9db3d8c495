//! The realtime socket protocol (`nakama.realtime`, `rtapi/realtime.proto`): the [`Envelope`]
//! and every message MetaFi speaks — chat channels, status, RPC, heartbeats, notifications,
//! generic streams, the match and matchmaker messages the match engine uses, and parties.
//!
//! Each type derives `prost::Message` with Nakama's field numbers (hand-written, so no `protoc`
//! at build time) and serde with protobuf-JSON conventions (`crate::json`), so one struct serves
//! both [`Format`]s.

mod channel;
mod codec;
mod delivery;
mod envelope;
mod match_data_send_json;
mod match_messages;
mod matchmaker_messages;
mod misc;
mod party_messages;
mod status;
#[cfg(test)]
mod tests;

pub use channel::{
    Channel, ChannelJoin, ChannelLeave, ChannelMessageAck, ChannelMessageRemove,
    ChannelMessageSend, ChannelMessageUpdate, ChannelPresenceEvent, UserPresence,
};
pub use codec::{DecodeError, Format};
pub use delivery::{Delivery, DeliveryClass, Lane, class as delivery_class};
pub use envelope::{Envelope, Message};
pub use match_messages::{
    Match, MatchCreate, MatchData, MatchDataSend, MatchJoin, MatchJoinId, MatchLeave,
    MatchPresenceEvent,
};
pub use matchmaker_messages::{
    MatchmakerAdd, MatchmakerMatched, MatchmakerMatchedId, MatchmakerRemove, MatchmakerTicket,
    MatchmakerUser,
};
pub use misc::{Error, Notifications, Ping, Pong, Stream, StreamData, StreamPresenceEvent};
pub use party_messages::{
    Party, PartyAccept, PartyClose, PartyCreate, PartyData, PartyDataSend, PartyJoin,
    PartyJoinRequest, PartyJoinRequestList, PartyLeader, PartyLeave, PartyMatchmakerAdd,
    PartyMatchmakerRemove, PartyMatchmakerTicket, PartyPresenceEvent, PartyPromote, PartyRemove,
    PartyUpdate,
};
pub use status::{Status, StatusFollow, StatusPresenceEvent, StatusUnfollow, StatusUpdate};

/// The codes of an [`Error`] envelope (`rtapi.Error.Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    /// An unexpected failure on the server.
    RuntimeException = 0,
    /// The message is not one the server knows.
    UnrecognizedPayload = 1,
    /// The envelope carries no message.
    MissingPayload = 2,
    /// A field of the message is invalid.
    BadInput = 3,
    MatchNotFound = 4,
    MatchJoinRejected = 5,
    /// No RPC function with that id.
    RuntimeFunctionNotFound = 6,
    /// The RPC function failed.
    RuntimeFunctionException = 7,
}

/// Chat channel types of [`ChannelJoin::type`](ChannelJoin).
pub mod channel_type {
    /// Same as `ROOM`.
    pub const UNSPECIFIED: i32 = 0;
    pub const ROOM: i32 = 1;
    pub const DIRECT_MESSAGE: i32 = 2;
    pub const GROUP: i32 = 3;
}

//! What nodes say to each other. Membership messages, calls and match listings are small JSON
//! objects (readable with `nats sub 'metafi.cluster.>'`); the hot ones — session and presence
//! announcements and match data casts — have a compact binary form (`codec.rs`); deliveries are
//! a binary frame around the envelope's protobuf encoding, made once however many nodes and
//! sessions receive it.

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use metafi_proto::realtime::DeliveryClass;
use metafi_realtime::{Presence, PresenceMeta, StreamKey, StreamMode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// On `<prefix>.cluster.members`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MemberMessage {
    /// "I am here." `incarnation` changes when a node restarts; `seq` counts its beats, so a
    /// gap is a missed beat. `hello` (a node's first beat) asks every peer to beat back at once,
    /// so a starting node learns its peers in one round trip.
    Heartbeat {
        node: String,
        incarnation: u64,
        seq: u64,
        #[serde(default)]
        hello: bool,
        /// [`WIRE_VERSION`] of the sender; absent (0) from nodes older than version 2.
        #[serde(default)]
        wire: u32,
    },
    /// A node stopping on purpose: peers forget it at once.
    Bye { node: String, incarnation: u64 },
}

/// One session as the directory knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SessionEntry {
    pub session_id: Uuid,
    pub user_id: Uuid,
    /// When its socket opened (Unix milliseconds of the node's clock): under the single-socket
    /// rule the newest socket of a user wins, ties broken by the larger session id.
    pub opened_ms: u64,
}

/// On `<prefix>.cluster.node.NAME.sessions`: every node's session announcements to NAME, in the
/// order it made them, among its deliveries to NAME (one publisher connection, one subject: NATS
/// keeps that order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum SessionMessage {
    Open {
        node: String,
        session: SessionEntry,
    },
    Close {
        node: String,
        session_id: Uuid,
        user_id: Uuid,
    },
    /// Every session of `node`, in chunks: the `first` chunk replaces what receivers knew of the
    /// node, the others add to it. Sent when a peer joins (so it learns this node's sessions).
    Snapshot {
        node: String,
        first: bool,
        sessions: Vec<SessionEntry>,
    },
    /// A presence of one of `node`'s sessions joined a stream (or replaced its meta).
    Track {
        node: String,
        entry: PresenceEntry,
    },
    /// A session of `node` left a stream.
    Untrack {
        node: String,
        session_id: Uuid,
        stream: WireStream,
    },
    /// A session of `node` left every stream.
    UntrackAll {
        node: String,
        session_id: Uuid,
    },
    /// Every presence of `node`'s sessions, in chunks (as `Snapshot`).
    Presences {
        node: String,
        first: bool,
        presences: Vec<PresenceEntry>,
    },
    /// What `node` has announced so far (`digest.rs`): a receiver holding other sums for it
    /// asks for a snapshot.
    Digest {
        node: String,
        sessions: crate::digest::Sum,
        presences: crate::digest::Sum,
    },
    /// `node` asks `of` for a snapshot of its sessions and presences (its digest did not match).
    Ask {
        node: String,
        of: String,
    },
}

/// A stream as nodes name it to each other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireStream {
    pub mode: u8,
    pub subject: Uuid,
    pub subcontext: Uuid,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
}

/// One presence in one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PresenceEntry {
    pub stream: WireStream,
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub persistence: bool,
    pub hidden: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl WireStream {
    pub(crate) fn from_key(key: &StreamKey) -> WireStream {
        WireStream {
            mode: key.mode.number(),
            subject: key.subject,
            subcontext: key.subcontext,
            label: key.label.clone(),
        }
    }

    pub(crate) fn key(&self) -> StreamKey {
        StreamKey {
            mode: StreamMode::from_number(self.mode),
            subject: self.subject,
            subcontext: self.subcontext,
            label: self.label.clone(),
        }
    }
}

impl PresenceEntry {
    pub(crate) fn new(stream: &StreamKey, presence: &Presence) -> PresenceEntry {
        PresenceEntry {
            stream: WireStream::from_key(stream),
            session_id: presence.session_id,
            user_id: presence.user_id,
            username: presence.meta.username.clone(),
            persistence: presence.meta.persistence,
            hidden: presence.meta.hidden,
            status: presence.meta.status.clone(),
        }
    }

    pub(crate) fn split(self) -> (StreamKey, Presence) {
        (
            self.stream.key(),
            Presence {
                session_id: self.session_id,
                user_id: self.user_id,
                meta: PresenceMeta {
                    username: self.username,
                    persistence: self.persistence,
                    hidden: self.hidden,
                    status: self.status,
                },
            },
        )
    }
}

/// Match data from a session of the sending node for a match of the receiving node (the data
/// travel beside it as raw bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MatchDataCast {
    pub match_id: String,
    pub session_id: Uuid,
    pub op_code: i64,
    pub reliable: bool,
    /// MetaFi's delivery extension as the sender named it (a relayed match passes it on to the
    /// recipients); `None` when the sender named no class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<metafi_proto::realtime::Delivery>,
    /// The recipients the sender named (session ids); empty: every other member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<Uuid>,
}

/// A request from one node to another (see `calls.rs`): calls want an answer, casts do not.
/// Match data travel beside it as raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum CallRequest {
    /// Call: a join attempt at an authoritative match of the receiving node.
    MatchJoin {
        match_id: String,
        joiner: WirePresence,
        #[serde(default)]
        metadata: HashMap<String, String>,
        #[serde(default)]
        vars: HashMap<String, String>,
        session_expiry: i64,
        #[serde(default)]
        client_ip: Option<String>,
        #[serde(default)]
        client_port: Option<String>,
    },
    /// Call: join a relayed match, if the receiving node has it.
    MatchJoinRelayed { uuid: Uuid, joiner: WirePresence },
    /// Cast: the joiner's client has its answer.
    MatchCompleteJoin { match_id: String, session_id: Uuid },
    /// Cast: a session leaves a match.
    MatchLeave { match_id: String, session_id: Uuid },
    /// Cast: match data (the raw bytes) from a session of the sending node; in a binary frame
    /// of its own (`codec::encode_match_data`).
    MatchData(MatchDataCast),
    /// Cast: a session of the sending node ended; it leaves the receiver's matches with
    /// `reason` (`metafi_match::PresenceReason` as a number; none: a disconnect).
    MatchSessionEnded {
        session_id: Uuid,
        #[serde(default)]
        reason: Option<u8>,
    },
    /// Call: `match_signal`.
    MatchSignal { match_id: String, data: String },
    /// Call: reserve a seat for `user_id` in an authoritative match of the receiving node
    /// (`match_reserve_seat`, or a finder trying another node's listed match).
    MatchReserveSeat {
        match_id: String,
        user_id: Uuid,
        seats: u32,
    },
    /// Call: the sending node cannot start a match (full, draining); the receiving node finds
    /// or creates the seat among its own matches (`match_find_seat`).
    MatchFindSeat { request: metafi_match::SeatRequest },
    /// Cast: a party message (the raw bytes: its envelope, protobuf) from a member on `from`
    /// for a party of the receiving node.
    PartyMessage { from: String, member: WireMember },
    /// Cast: a session of the sending node ended; it leaves the receiver's parties.
    PartySessionEnded { session_id: Uuid },
    /// Cast: a session of the receiving node is no longer in the sending node's party (removed
    /// by its leader, the party closed).
    PartyMemberLeft { session_id: Uuid, party_id: String },
    /// Cast: a chunk of the sending node's party listing (the `first` replaces what the
    /// receiver held of it; once the `last` arrives the receiver lists it).
    PartyListing {
        from: String,
        first: bool,
        last: bool,
        parties: Vec<metafi_realtime::party::ListedParty>,
    },
    /// Cast: server code of the sending node closes these sessions of the receiving node
    /// (`nk.session_disconnect`, a ban, an account deletion); `reason` is the presence reason
    /// their matches see (`metafi_match::PresenceReason` as a number).
    SessionDisconnect { session_ids: Vec<Uuid>, reason: u8 },
    /// Call (in order, `Calls::call_in_order`), answered with [`CallReply::StreamJoined`]:
    /// server code of the sending node puts a session of the receiving node in a stream
    /// (`update`: replaces its meta; `nk.stream_user_join`, `stream_user_update`).
    StreamJoin {
        user_id: Uuid,
        session_id: Uuid,
        stream: WireStream,
        hidden: bool,
        persistence: bool,
        status: String,
        update: bool,
    },
    /// Cast: server code of the sending node takes a session of the receiving node out of a
    /// stream (`nk.stream_user_leave`, `stream_user_kick`).
    StreamLeave {
        user_id: Uuid,
        session_id: Uuid,
        stream: WireStream,
    },
    /// Cast: server code of the sending node closes a stream; the receiving node takes its
    /// sessions out of it (`nk.stream_close`).
    StreamClose { stream: WireStream },
    /// Cast: a notification for every socket (the raw bytes: its envelope, protobuf); the
    /// receiving node hands it to each of its sessions (`nk.notification_send_all`).
    PushAll,
}

impl CallRequest {
    /// For metrics.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            CallRequest::MatchJoin { .. } => "match_join",
            CallRequest::MatchJoinRelayed { .. } => "match_join_relayed",
            CallRequest::MatchCompleteJoin { .. } => "match_complete_join",
            CallRequest::MatchLeave { .. } => "match_leave",
            CallRequest::MatchData(_) => "match_data",
            CallRequest::MatchSessionEnded { .. } => "match_session_ended",
            CallRequest::MatchSignal { .. } => "match_signal",
            CallRequest::MatchReserveSeat { .. } => "match_reserve_seat",
            CallRequest::MatchFindSeat { .. } => "match_find_seat",
            CallRequest::PartyMessage { .. } => "party_message",
            CallRequest::PartySessionEnded { .. } => "party_session_ended",
            CallRequest::PartyListing { .. } => "party_listing",
            CallRequest::PartyMemberLeft { .. } => "party_member_left",
            CallRequest::SessionDisconnect { .. } => "session_disconnect",
            CallRequest::StreamJoin { .. } => "stream_join",
            CallRequest::StreamLeave { .. } => "stream_leave",
            CallRequest::StreamClose { .. } => "stream_close",
            CallRequest::PushAll => "push_all",
        }
    }
}

/// A presence reason from its number (Nakama's); an unknown one is a disconnect.
pub(crate) fn presence_reason(number: u8) -> metafi_match::PresenceReason {
    use metafi_match::PresenceReason;
    match number {
        0 => PresenceReason::Unknown,
        1 => PresenceReason::Join,
        2 => PresenceReason::Update,
        3 => PresenceReason::Leave,
        _ => PresenceReason::Disconnect,
    }
}

/// The answer to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum CallReply {
    /// A join attempt's outcome.
    MatchJoined { outcome: WireJoinOutcome },
    /// `None`: the node has no such relayed match.
    RelayedJoined { joined: Option<WireRelayedJoin> },
    /// `match_signal`'s result, or the match engine's error.
    Signalled {
        #[serde(default)]
        result: Option<String>,
        #[serde(default)]
        error: Option<WireMatchError>,
    },
    /// A seat reservation's outcome, or the match engine's error.
    SeatReserved {
        #[serde(default)]
        reserved: bool,
        #[serde(default)]
        error: Option<WireMatchError>,
    },
    /// The match where a seat was found or made, or why none was.
    SeatFound {
        #[serde(default)]
        match_id: Option<String>,
        #[serde(default)]
        error: Option<WireMatchError>,
    },
    /// A stream join of one of the node's sessions: whether it was new in the stream, or why
    /// the session could not join.
    StreamJoined {
        #[serde(default)]
        newly: bool,
        #[serde(default)]
        refused: Option<WireJoinRefused>,
    },
    /// The node answers too many calls already (`cluster.max_concurrent_calls`).
    Busy,
    /// The node cannot answer this request (its match engine is not ready).
    Refused { message: String },
}

/// Why a session of the answering node could not join a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireJoinRefused {
    /// The node has no such session (it ended meanwhile).
    NoSession,
    Closing,
}

/// A party member between nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireMember {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
}

/// A match presence between nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WirePresence {
    pub user_id: Uuid,
    pub session_id: Uuid,
    pub username: String,
    pub node: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum WireJoinOutcome {
    Accepted {
        label: String,
        presences: Vec<WirePresence>,
        is_new: bool,
    },
    Rejected {
        reason: String,
    },
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireRelayedJoin {
    pub presences: Vec<WirePresence>,
    pub members: usize,
    pub is_new: bool,
}

/// A match engine error between nodes: its kind and client-fit message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireMatchError {
    pub kind: String,
    pub message: String,
}

/// On `<prefix>.cluster.matches`: a node's matches, published in chunks (the `first` replaces
/// what receivers knew) when they changed (checked every `cluster.match_listing_interval_ms`),
/// when a peer joins and when a peer asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MatchListing {
    pub node: String,
    pub first: bool,
    /// This is the last chunk: the listing is whole.
    pub last: bool,
    pub matches: Vec<metafi_match::ListedMatch>,
    /// Counts the node's listings that differed from the one before (the same in every chunk).
    #[serde(default)]
    pub version: u64,
    /// The node refuses new matches now (admission: "Node is full"; draining): finders of
    /// other nodes do not ask it to start one.
    #[serde(default)]
    pub full: bool,
}

/// Everything on `<prefix>.cluster.matches`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ListingMessage {
    /// A chunk of a node's listing.
    Listing(MatchListing),
    /// Sent instead of an unchanged listing: `node`'s listing is still `version`. A receiver
    /// that holds another version (a chunk was lost) asks for it.
    Unchanged {
        node: String,
        version: u64,
        /// As [`MatchListing::full`], now.
        #[serde(default)]
        full: bool,
    },
    /// `node` asks `of` to publish its listing again.
    Ask { node: String, of: String },
}

/// Listed matches per chunk: ≈ 300 bytes of JSON each (labels are at most 2 KiB; a chunk of
/// the largest stays below NATS's default 1 MiB).
pub(crate) const LISTING_CHUNK: usize = 400;

/// Presence entries per snapshot chunk: ≈ 250 bytes of JSON each.
pub(crate) const PRESENCE_CHUNK: usize = 2_000;

/// Session entries per snapshot chunk: ≈ 110 bytes of JSON each, far below NATS's default
/// 1 MiB payload limit.
pub(crate) const SNAPSHOT_CHUNK: usize = 4_000;

/// Session ids per delivery frame: 256 KiB of ids at most.
pub(crate) const DELIVERY_CHUNK: usize = 16_384;

/// First byte of a delivery frame. Deliveries share a node's sessions subject with the
/// announcements (kinds 1–9, `codec.rs`), so theirs is apart from those; it was 1 when
/// deliveries had a subject of their own (cluster wire version 1).
pub(crate) const DELIVER: u8 = 0x10;

/// The cluster's wire version, in every heartbeat. 2: announcements go to each peer's sessions
/// subject with the deliveries (one order per sender), deliveries start with [`DELIVER`]. 3: a
/// delivery also carries the envelope's JSON when the sending node had encoded it (so the
/// receiving node encodes nothing). 4: a delivery carries its delivery class (and lane), and a
/// match data cast the sender's delivery extension, so a member on another node gets match data
/// as a member on the match's node does. A node hears nothing a peer of another version sends
/// (or misreads it), so it refuses such a peer (logged) instead of half-working with it.
pub(crate) const WIRE_VERSION: u32 = 4;

/// Why a delivery frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("empty frame")]
    Empty,
    #[error("unknown frame kind {0}")]
    Kind(u8),
    #[error("frame shorter than its session list, its lane or its JSON")]
    Truncated,
    #[error("unknown delivery class {0}")]
    Class(u8),
}

/// A delivery's envelope as the sending node encoded it, and how it is delivered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Encoded<'a> {
    /// The class the sending node's outboxes would deliver it with (match data: the class the
    /// handler or the sender named, a latest-wins key already scoped to the match and sender).
    pub class: &'a DeliveryClass,
    pub protobuf: &'a [u8],
    /// Present when the sending node had encoded it already (for its own JSON sessions); the
    /// receiving node's JSON sessions then take these bytes as they are.
    pub json: Option<&'a [u8]>,
}

/// A decoded delivery frame; the envelope's bytes are slices of the frame, not copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    pub session_ids: Vec<Uuid>,
    pub class: DeliveryClass,
    pub protobuf: Bytes,
    pub json: Option<Bytes>,
}

/// A delivery to sessions of one node: kind ([`DELIVER`]), count (u32, big-endian), the session
/// ids (16 bytes each), the delivery class (one byte: `DeliveryClass::parts`' number, 1–4) and
/// its lane (u32 length, text; empty for the classes without one), the JSON's length (u32; 0:
/// none), the envelope's JSON, then its protobuf bytes. (An envelope's JSON is never empty: it
/// is at least `{}`.)
pub(crate) fn encode_delivery(session_ids: &[Uuid], envelope: Encoded<'_>) -> Bytes {
    let json = envelope.json.unwrap_or_default();
    let (class, lane) = envelope.class.parts();
    let mut frame = BytesMut::with_capacity(
        14 + session_ids.len() * 16 + lane.len() + json.len() + envelope.protobuf.len(),
    );
    frame.put_u8(DELIVER);
    frame.put_u32(u32::try_from(session_ids.len()).unwrap_or(u32::MAX));
    for id in session_ids {
        frame.put_slice(id.as_bytes());
    }
    // Class numbers are 1–4.
    frame.put_u8(class as u8);
    // A lane is a client's or a handler's text, far below 4 GiB (a frame is at most
    // `batch_max_bytes`, NATS's payload limit).
    frame.put_u32(lane.len() as u32);
    frame.put_slice(lane.as_bytes());
    // An envelope's JSON over 4 GiB is not sent: the receiving node encodes its own.
    let json = u32::try_from(json.len()).map_or(&[][..], |_| json);
    frame.put_u32(json.len() as u32);
    frame.put_slice(json);
    frame.put_slice(envelope.protobuf);
    frame.freeze()
}

/// The session ids, class and envelope bytes of a delivery frame.
pub(crate) fn decode_delivery(frame: &Bytes) -> Result<Delivered, FrameError> {
    let (&kind, _) = frame.split_first().ok_or(FrameError::Empty)?;
    if kind != DELIVER {
        return Err(FrameError::Kind(kind));
    }
    // Offsets in `frame`, past the kind byte.
    let u32_at = |at: usize| -> Result<usize, FrameError> {
        let bytes: [u8; 4] = frame
            .get(at..at.checked_add(4).ok_or(FrameError::Truncated)?)
            .and_then(|b| b.try_into().ok())
            .ok_or(FrameError::Truncated)?;
        Ok(u32::from_be_bytes(bytes) as usize)
    };
    let slice_end = |start: usize, len: usize| {
        start
            .checked_add(len)
            .filter(|end| *end <= frame.len())
            .ok_or(FrameError::Truncated)
    };
    let count = u32_at(1)?;
    let ids_end = slice_end(5, count.checked_mul(16).ok_or(FrameError::Truncated)?)?;
    let session_ids = frame[5..ids_end]
        .chunks_exact(16)
        .map(|chunk| Uuid::from_slice(chunk).unwrap_or_default())
        .collect();
    let class = *frame.get(ids_end).ok_or(FrameError::Truncated)?;
    let lane_start = ids_end + 5;
    let lane_end = slice_end(lane_start, u32_at(ids_end + 1)?)?;
    let lane =
        std::str::from_utf8(&frame[lane_start..lane_end]).map_err(|_| FrameError::Truncated)?;
    let class =
        DeliveryClass::from_parts(i32::from(class), lane).ok_or(FrameError::Class(class))?;
    let json_len = u32_at(lane_end)?;
    let json_start = lane_end + 4;
    let json_end = slice_end(json_start, json_len)?;
    Ok(Delivered {
        session_ids,
        class,
        json: (json_len > 0).then(|| frame.slice(json_start..json_end)),
        protobuf: frame.slice(json_end..),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_frames_round_trip_and_garbage_is_refused() {
        let ids = vec![Uuid::new_v4(), Uuid::new_v4()];
        let classes = [
            DeliveryClass::default_stream(),
            DeliveryClass::ordered("talk"),
            DeliveryClass::ReliableUnordered,
            DeliveryClass::Unreliable,
            DeliveryClass::latest("m.n1/s/pos"),
        ];
        for class in &classes {
            for json in [None, Some(&b"{\"match_data\":{}}"[..])] {
                let frame = encode_delivery(
                    &ids,
                    Encoded {
                        class,
                        protobuf: b"envelope",
                        json,
                    },
                );
                let back = decode_delivery(&frame).expect("decodes");
                assert_eq!(back.session_ids, ids);
                assert_eq!(&back.class, class);
                assert_eq!(back.protobuf, &b"envelope"[..]);
                assert_eq!(back.json.as_deref(), json);
                // The envelope is a view of the frame, not a copy.
                assert!(frame.as_ptr_range().contains(&back.protobuf.as_ptr()));
                assert!(decode_delivery(&frame.slice(..40)).is_err());
            }
        }
        let class = DeliveryClass::ordered("talk");
        let frame = encode_delivery(
            &ids,
            Encoded {
                class: &class,
                protobuf: b"envelope",
                json: Some(b"{}"),
            },
        );
        let garbage = |bytes: &[u8]| decode_delivery(&Bytes::copy_from_slice(bytes));
        assert_eq!(garbage(&[]), Err(FrameError::Empty));
        assert_eq!(garbage(&[9]), Err(FrameError::Kind(9)));
        // A wire version 1 delivery (kind 1, an open's kind now) is no delivery.
        assert_eq!(garbage(&[1, 0, 0, 0, 0]), Err(FrameError::Kind(1)));
        assert_eq!(garbage(&frame[..20]), Err(FrameError::Truncated));
        // The ids but not the class; the class but not the whole lane; the lane but not the
        // JSON's length; then a JSON longer than the frame.
        assert_eq!(garbage(&frame[..37]), Err(FrameError::Truncated));
        assert_eq!(garbage(&frame[..44]), Err(FrameError::Truncated));
        assert_eq!(garbage(&frame[..46]), Err(FrameError::Truncated));
        assert_eq!(garbage(&frame[..51]), Err(FrameError::Truncated));
        assert!(decode_delivery(&frame.slice(..52)).is_ok());
        // An unknown class (a newer node's) is refused, not taken as another.
        let mut unknown = frame.to_vec();
        unknown[37] = 9;
        assert_eq!(garbage(&unknown), Err(FrameError::Class(9)));
        assert_eq!(
            garbage(&[DELIVER, 255, 255, 255, 255]),
            Err(FrameError::Truncated)
        );
        assert_eq!(
            garbage(&[DELIVER, 0, 0, 0, 0, 1, 255, 255, 255, 255]),
            Err(FrameError::Truncated)
        );
    }

    #[test]
    fn announcements_are_tagged_json() {
        let message = MemberMessage::Heartbeat {
            node: "n1".into(),
            incarnation: 7,
            seq: 3,
            hello: true,
            wire: WIRE_VERSION,
        };
        let json = serde_json::to_string(&message).expect("encodes");
        assert!(json.contains(r#""type":"heartbeat""#), "{json}");
        assert_eq!(
            serde_json::from_str::<MemberMessage>(&json).expect("decodes"),
            message
        );
        // A version 1 heartbeat (no `wire`) still decodes, as version 0, so it can be refused.
        let old = r#"{"type":"heartbeat","node":"n0","incarnation":1,"seq":1}"#;
        assert!(matches!(
            serde_json::from_str::<MemberMessage>(old).expect("decodes"),
            MemberMessage::Heartbeat { wire: 0, .. }
        ));
    }
}

//! An envelope on its way to many sessions, encoded at most once per wire format however many
//! sessions receive it.
//!
//! Presence events (`channel_presence_event`, `status_presence_event`,
//! `match_presence_event`) carry lists of joins and leaves; an [`Outbound`] holding one knows
//! its [`MergeKey`], so an outbox may merge it with other events of the same stream that are
//! still waiting to be written (see [`crate::Outbox`]): when 150 members leave a room at once,
//! a member whose writer is behind gets a few events listing every leave, not 150 events.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use metafi_proto::realtime::{DeliveryClass, Envelope, Format, Message, UserPresence};

/// A pushed envelope (a broadcast, an event). Each format's bytes are made the first time a
/// recipient of that format needs them, then shared (`Bytes` clones are reference counts).
/// Cloning an `Outbound` is a reference count too: an outbox keeps a presence event as an
/// `Outbound` until it is written, so it can still be merged.
#[derive(Debug, Clone)]
pub struct Outbound {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    envelope: Envelope,
    /// How transports that can tell classes apart (QUIC) deliver it.
    class: DeliveryClass,
    /// Set for presence events on the default stream: which queued events it may merge with.
    merge: Option<MergeKey>,
    json: OnceLock<Bytes>,
    protobuf: OnceLock<Bytes>,
}

/// The stream a presence event belongs to, as a client sees it: two events with the same key
/// differ only in their joins and leaves, so their lists can be concatenated into one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeKey {
    /// `channel_presence_event` of this channel id (the room/group/user fields follow from it).
    Channel(String),
    /// `status_presence_event`: it names no stream; each presence names its user.
    Status,
    /// `match_presence_event` of this match id.
    Match(String),
}

impl Outbound {
    /// An envelope for the default stream.
    pub fn new(envelope: Envelope) -> Outbound {
        Outbound::with_class(envelope, DeliveryClass::default_stream())
    }

    /// An envelope delivered as `class` says (match data).
    pub fn with_class(envelope: Envelope, class: DeliveryClass) -> Outbound {
        let merge = if class == DeliveryClass::default_stream() && envelope.cid.is_empty() {
            merge_key(&envelope)
        } else {
            None
        };
        Outbound {
            inner: Arc::new(Inner {
                envelope,
                class,
                merge,
                json: OnceLock::new(),
                protobuf: OnceLock::new(),
            }),
        }
    }

    /// An envelope that arrived already encoded (from another node of a cluster), delivered as
    /// `class` says (the class the sending node chose): `protobuf` is its protobuf encoding and
    /// `json`, when the sender had made it, its JSON. Neither is encoded again here; each must
    /// be the encoding of `envelope` (the nodes of a cluster run one MetaFi version, so they
    /// encode alike).
    pub fn received(
        envelope: Envelope,
        class: DeliveryClass,
        protobuf: Bytes,
        json: Option<Bytes>,
    ) -> Outbound {
        let outbound = Outbound::with_class(envelope, class);
        // Fresh cells of a value no one else holds yet: neither is set.
        let _ = outbound.inner.protobuf.set(protobuf);
        if let Some(json) = json {
            let _ = outbound.inner.json.set(json);
        }
        outbound
    }

    pub fn envelope(&self) -> &Envelope {
        &self.inner.envelope
    }

    pub fn class(&self) -> &DeliveryClass {
        &self.inner.class
    }

    /// Which waiting events this one may merge with; `None` for anything but a presence event.
    pub fn merge_key(&self) -> Option<&MergeKey> {
        self.inner.merge.as_ref()
    }

    /// The envelope encoded for `format`.
    pub fn bytes(&self, format: Format) -> Bytes {
        let cell = match format {
            Format::Json => &self.inner.json,
            Format::Protobuf => &self.inner.protobuf,
        };
        cell.get_or_init(|| Bytes::from(format.encode(&self.inner.envelope)))
            .clone()
    }

    /// Whether `format` has been encoded yet (for tests of the encode-once rule).
    pub fn is_encoded(&self, format: Format) -> bool {
        match format {
            Format::Json => self.inner.json.get().is_some(),
            Format::Protobuf => self.inner.protobuf.get().is_some(),
        }
    }

    /// The session ids of the presences this event lists (joins and leaves), for the outbox's
    /// rule that one merged event never names a session twice.
    pub(crate) fn presence_session_ids(&self) -> impl Iterator<Item = &str> {
        let (joins, leaves) = presence_slices(&self.inner.envelope);
        joins
            .iter()
            .chain(leaves)
            .map(|presence| presence.session_id.as_str())
    }
}

/// One event listing the joins and leaves of `parts` (all with the same [`MergeKey`]), in
/// order, encoded for `format`. A single part reuses its shared encoding.
pub(crate) fn merged_bytes(parts: &[Outbound], format: Format) -> Bytes {
    let [first, rest @ ..] = parts else {
        return Bytes::new();
    };
    if rest.is_empty() {
        return first.bytes(format);
    }
    let mut envelope = first.envelope().clone();
    if let Some((joins, leaves)) = presence_lists(&mut envelope) {
        for part in rest {
            let (more_joins, more_leaves) = presence_slices(part.envelope());
            joins.extend_from_slice(more_joins);
            leaves.extend_from_slice(more_leaves);
        }
    }
    Bytes::from(format.encode(&envelope))
}

fn merge_key(envelope: &Envelope) -> Option<MergeKey> {
    match &envelope.message {
        Some(Message::ChannelPresenceEvent(e)) => Some(MergeKey::Channel(e.channel_id.clone())),
        Some(Message::StatusPresenceEvent(_)) => Some(MergeKey::Status),
        Some(Message::MatchPresenceEvent(e)) => Some(MergeKey::Match(e.match_id.clone())),
        _ => None,
    }
}

fn presence_lists(
    envelope: &mut Envelope,
) -> Option<(&mut Vec<UserPresence>, &mut Vec<UserPresence>)> {
    match &mut envelope.message {
        Some(Message::ChannelPresenceEvent(e)) => Some((&mut e.joins, &mut e.leaves)),
        Some(Message::StatusPresenceEvent(e)) => Some((&mut e.joins, &mut e.leaves)),
        Some(Message::MatchPresenceEvent(e)) => Some((&mut e.joins, &mut e.leaves)),
        _ => None,
    }
}

fn presence_slices(envelope: &Envelope) -> (&[UserPresence], &[UserPresence]) {
    match &envelope.message {
        Some(Message::ChannelPresenceEvent(e)) => (&e.joins, &e.leaves),
        Some(Message::StatusPresenceEvent(e)) => (&e.joins, &e.leaves),
        Some(Message::MatchPresenceEvent(e)) => (&e.joins, &e.leaves),
        _ => (&[], &[]),
    }
}

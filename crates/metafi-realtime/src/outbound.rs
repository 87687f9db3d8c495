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

use crate::outbound::peek::{CHANNEL_PRESENCE_EVENT, MATCH_PRESENCE_EVENT, STATUS_PRESENCE_EVENT};

mod peek;

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
    /// The message's name (`Envelope::name`), for the per-message metrics.
    name: &'static str,
    /// Set at once for an envelope made on this node; for one that arrived encoded from
    /// another node ([`Outbound::encoded`]) decoded from `protobuf` only if something asks
    /// for it — nothing on the way to a socket does, but for presence events, whose merge key
    /// and lists are read, and which are decoded on arrival.
    envelope: OnceLock<Envelope>,
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
                name: envelope.name(),
                envelope: OnceLock::from(envelope),
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

    /// An envelope that arrived as protobuf bytes from another node of a cluster, with the
    /// JSON the sending node made of it if it made any, delivered as `class` says: neither
    /// format is encoded again here, and the protobuf is not decoded either unless the
    /// outboxes need what it holds (a presence event's merge key and lists) — a message's
    /// name, which the metrics need, is read from its protobuf tag. `None` for bytes that are
    /// not a protobuf envelope (a presence event that does not decode; anything else whose
    /// top-level fields do not parse).
    ///
    /// The bytes must be the encoding the sending node made of an envelope (the nodes of a
    /// cluster run one MetaFi version): a message whose inner fields were damaged in transit
    /// would reach clients as it came (NATS checks nothing, but TCP does).
    pub fn encoded(class: DeliveryClass, protobuf: Bytes, json: Option<Bytes>) -> Option<Outbound> {
        let top = peek::top_level(&protobuf)?;
        let mergeable = top.cid_is_empty && class == DeliveryClass::default_stream();
        if mergeable
            && matches!(
                top.message_tag,
                CHANNEL_PRESENCE_EVENT | STATUS_PRESENCE_EVENT | MATCH_PRESENCE_EVENT
            )
        {
            let envelope = Format::Protobuf.decode(&protobuf).ok()?;
            return Some(Outbound::received(envelope, class, protobuf, json));
        }
        let outbound = Outbound {
            inner: Arc::new(Inner {
                name: peek::message_name(top.message_tag),
                envelope: OnceLock::new(),
                class,
                merge: None,
                json: OnceLock::new(),
                protobuf: OnceLock::from(protobuf),
            }),
        };
        if let Some(json) = json {
            let _ = outbound.inner.json.set(json);
        }
        Some(outbound)
    }

    /// The envelope. For one that arrived encoded ([`Outbound::encoded`]) it is decoded on
    /// the first call (an empty envelope if its bytes do not decode, logged).
    pub fn envelope(&self) -> &Envelope {
        self.inner.envelope.get_or_init(|| {
            let bytes = self
                .inner
                .protobuf
                .get()
                .map(Bytes::as_ref)
                .unwrap_or_default();
            Format::Protobuf.decode(bytes).unwrap_or_else(|error| {
                tracing::debug!(%error, "an envelope from another node does not decode");
                Envelope::default()
            })
        })
    }

    /// The message's name, as [`Envelope::name`] gives it (known without decoding an envelope
    /// that arrived encoded).
    pub fn name(&self) -> &'static str {
        self.inner.name
    }

    /// Whether the envelope is at hand decoded (for tests of the decode-when-needed rule).
    pub fn is_decoded(&self) -> bool {
        self.inner.envelope.get().is_some()
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
        cell.get_or_init(|| Bytes::from(format.encode(self.envelope())))
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
        let (joins, leaves) = presence_slices(self.envelope());
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

#[cfg(test)]
mod tests {
    use metafi_proto::realtime::{MatchData, MatchPresenceEvent};

    use super::*;

    fn match_data() -> Envelope {
        Envelope::new(
            "",
            Message::MatchData(MatchData {
                match_id: "m.n1".into(),
                op_code: 1,
                data: Bytes::from_static(b"hello"),
                ..Default::default()
            }),
        )
    }

    #[test]
    fn match_data_from_another_node_goes_out_as_it_came_without_being_decoded() {
        let made_there = Outbound::with_class(match_data(), DeliveryClass::latest("m.n1/s/pos"));
        let protobuf = made_there.bytes(Format::Protobuf);
        let json = made_there.bytes(Format::Json);
        let here = Outbound::encoded(
            made_there.class().clone(),
            protobuf.clone(),
            Some(json.clone()),
        )
        .expect("an envelope");
        assert_eq!(here.name(), "match_data");
        assert_eq!(here.class(), made_there.class());
        assert_eq!(here.merge_key(), None);
        assert_eq!(here.bytes(Format::Protobuf), protobuf);
        assert_eq!(here.bytes(Format::Json), json);
        assert!(!here.is_decoded(), "decoded though nothing needed it");
        // Asked for, it is there.
        assert_eq!(here.envelope(), made_there.envelope());

        // Without the sender's JSON, the JSON is made here from the protobuf.
        let here = Outbound::encoded(DeliveryClass::default_stream(), protobuf, None)
            .expect("an envelope");
        assert_eq!(here.bytes(Format::Json), json);
    }

    #[test]
    fn a_presence_event_from_another_node_merges_as_one_made_here() {
        let event = Envelope::new(
            "",
            Message::MatchPresenceEvent(MatchPresenceEvent {
                match_id: "m.n2".into(),
                joins: vec![UserPresence {
                    session_id: "s1".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        );
        let made_there = Outbound::new(event);
        let here = Outbound::encoded(
            DeliveryClass::default_stream(),
            made_there.bytes(Format::Protobuf),
            None,
        )
        .expect("an envelope");
        assert_eq!(here.merge_key(), Some(&MergeKey::Match("m.n2".into())));
        assert_eq!(here.merge_key(), made_there.merge_key());
        assert_eq!(here.name(), "match_presence_event");
        assert_eq!(here.presence_session_ids().collect::<Vec<_>>(), ["s1"]);
        // Sent on a lane of its own it merges with nothing, as on its own node.
        let on_a_lane = Outbound::encoded(
            DeliveryClass::ordered("talk"),
            made_there.bytes(Format::Protobuf),
            None,
        )
        .expect("an envelope");
        assert_eq!(on_a_lane.merge_key(), None);
    }

    #[test]
    fn bytes_that_are_no_envelope_are_refused() {
        let class = DeliveryClass::default_stream;
        assert!(Outbound::encoded(class(), Bytes::from_static(&[0x72, 0x09, 1]), None).is_none());
        // A presence event is decoded on arrival, so one whose fields are damaged is refused.
        let event = Outbound::new(Envelope::new(
            "",
            Message::MatchPresenceEvent(MatchPresenceEvent {
                match_id: "m.n2".into(),
                ..Default::default()
            }),
        ))
        .bytes(Format::Protobuf);
        let mut damaged = event.to_vec();
        damaged[3] = 0xff;
        assert!(Outbound::encoded(class(), Bytes::from(damaged), None).is_none());
        // An empty payload is an empty envelope, as a decoder reads it.
        let empty = Outbound::encoded(class(), Bytes::new(), None).expect("an envelope");
        assert_eq!(empty.name(), "none");
    }
}

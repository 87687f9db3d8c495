//! MetaFi's extension to match data: how a message must be delivered (see `docs/TRANSPORT.md`,
//! "Protocol"). [`Delivery`] is the wire form, field 1000 of `MatchDataSend` and `MatchData` (a
//! number Nakama does not use, so Nakama's clients skip it as an unknown field); [`DeliveryClass`]
//! is what code works with.
//!
//! A message without the extension is delivered as Nakama's `reliable` flag says:
//! `reliable = true` → reliable-ordered on the default stream, `false` → unreliable.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::json::{self, is_zero_i32, nullable};

/// The wire form of a delivery class (`Delivery` in `docs/TRANSPORT.md`).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivery {
    /// 0 unspecified (use `reliable`), 1 reliable-ordered, 2 reliable-unordered, 3 unreliable,
    /// 4 unreliable-latest. Unknown values are treated as 0.
    #[prost(int32, tag = "1")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub class: i32,
    /// Reliable-ordered: the stream's name ("" is the default stream). Unreliable-latest: the
    /// key. Ignored by the other classes.
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub lane: String,
}

/// Numbers of [`Delivery::class`].
pub mod class {
    pub const UNSPECIFIED: i32 = 0;
    pub const RELIABLE_ORDERED: i32 = 1;
    pub const RELIABLE_UNORDERED: i32 = 2;
    pub const UNRELIABLE: i32 = 3;
    pub const UNRELIABLE_LATEST: i32 = 4;
}

/// A stream name or a latest-wins key: shared, so a broadcast to many sessions clones a pointer.
pub type Lane = Arc<str>;

/// How one message travels. Over WebSocket (TCP) every class is delivered reliably and in order;
/// over QUIC each has its own path (`docs/TRANSPORT.md`, "Delivery classes").
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum DeliveryClass {
    /// Reliable, in order with the other messages of the same named stream only; the empty name
    /// is the default stream, which carries every message that names no class.
    ReliableOrdered(Lane),
    /// Reliable, delivered as soon as it arrives, whatever was sent before it.
    ReliableUnordered,
    /// May be lost; never retransmitted.
    Unreliable,
    /// May be lost, and a message older than one already delivered under the same key is
    /// dropped; the last message of a key that goes quiet is guaranteed to arrive.
    UnreliableLatest(Lane),
}

impl DeliveryClass {
    /// The default stream: what every message without a class uses.
    pub fn default_stream() -> DeliveryClass {
        DeliveryClass::ReliableOrdered(Lane::from(""))
    }

    /// Reliable-ordered within the stream named `stream`.
    pub fn ordered(stream: &str) -> DeliveryClass {
        DeliveryClass::ReliableOrdered(Lane::from(stream))
    }

    /// Unreliable-latest under `key`.
    pub fn latest(key: &str) -> DeliveryClass {
        DeliveryClass::UnreliableLatest(Lane::from(key))
    }

    /// Nakama's `reliable` flag: true → the default stream, false → unreliable.
    pub fn from_reliable(reliable: bool) -> DeliveryClass {
        if reliable {
            DeliveryClass::default_stream()
        } else {
            DeliveryClass::Unreliable
        }
    }

    /// The class a message names, or the mapping of its `reliable` flag when it names none.
    pub fn resolve(delivery: Option<&Delivery>, reliable: bool) -> DeliveryClass {
        delivery
            .and_then(DeliveryClass::from_wire)
            .unwrap_or_else(|| DeliveryClass::from_reliable(reliable))
    }

    /// The class a [`Delivery`] names; `None` when unspecified or unknown.
    pub fn from_wire(delivery: &Delivery) -> Option<DeliveryClass> {
        DeliveryClass::from_parts(delivery.class, &delivery.lane)
    }

    /// The class a [`class`] number and a lane name (ignored by the classes without one);
    /// `None` when unspecified or unknown. With [`DeliveryClass::parts`], the binary forms
    /// that carry a class (a cluster's frames) use the extension's numbers.
    pub fn from_parts(class: i32, lane: &str) -> Option<DeliveryClass> {
        Some(match class {
            class::RELIABLE_ORDERED => DeliveryClass::ReliableOrdered(Lane::from(lane)),
            class::RELIABLE_UNORDERED => DeliveryClass::ReliableUnordered,
            class::UNRELIABLE => DeliveryClass::Unreliable,
            class::UNRELIABLE_LATEST => DeliveryClass::UnreliableLatest(Lane::from(lane)),
            _ => return None,
        })
    }

    /// The wire form.
    pub fn to_wire(&self) -> Delivery {
        let (class, lane) = self.parts();
        Delivery {
            class,
            lane: lane.to_owned(),
        }
    }

    /// The class's [`class`] number and its lane ("" for the classes without one).
    pub fn parts(&self) -> (i32, &str) {
        match self {
            DeliveryClass::ReliableOrdered(lane) => (class::RELIABLE_ORDERED, lane),
            DeliveryClass::ReliableUnordered => (class::RELIABLE_UNORDERED, ""),
            DeliveryClass::Unreliable => (class::UNRELIABLE, ""),
            DeliveryClass::UnreliableLatest(lane) => (class::UNRELIABLE_LATEST, lane),
        }
    }

    /// Whether the class retransmits lost messages (Nakama's `reliable`).
    pub fn is_reliable(&self) -> bool {
        matches!(
            self,
            DeliveryClass::ReliableOrdered(_) | DeliveryClass::ReliableUnordered
        )
    }

    /// Whether this is the default stream.
    pub fn is_default_stream(&self) -> bool {
        matches!(self, DeliveryClass::ReliableOrdered(lane) if lane.is_empty())
    }

    /// A fixed label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            DeliveryClass::ReliableOrdered(lane) if lane.is_empty() => "default",
            DeliveryClass::ReliableOrdered(_) => "reliable_ordered",
            DeliveryClass::ReliableUnordered => "reliable_unordered",
            DeliveryClass::Unreliable => "unreliable",
            DeliveryClass::UnreliableLatest(_) => "unreliable_latest",
        }
    }
}

impl Default for DeliveryClass {
    fn default() -> Self {
        DeliveryClass::default_stream()
    }
}

impl fmt::Debug for DeliveryClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliveryClass::ReliableOrdered(lane) => write!(f, "ReliableOrdered({lane:?})"),
            DeliveryClass::ReliableUnordered => f.write_str("ReliableUnordered"),
            DeliveryClass::Unreliable => f.write_str("Unreliable"),
            DeliveryClass::UnreliableLatest(lane) => write!(f, "UnreliableLatest({lane:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_round_trips_through_the_wire_form() {
        for class in [
            DeliveryClass::default_stream(),
            DeliveryClass::ordered("talk"),
            DeliveryClass::ReliableUnordered,
            DeliveryClass::Unreliable,
            DeliveryClass::latest("pos"),
        ] {
            assert_eq!(DeliveryClass::from_wire(&class.to_wire()), Some(class));
        }
    }

    #[test]
    fn no_extension_maps_nakamas_reliable_flag() {
        assert_eq!(
            DeliveryClass::resolve(None, true),
            DeliveryClass::default_stream()
        );
        assert_eq!(
            DeliveryClass::resolve(None, false),
            DeliveryClass::Unreliable
        );
        let unknown = Delivery {
            class: 99,
            lane: "x".into(),
        };
        assert_eq!(
            DeliveryClass::resolve(Some(&unknown), false),
            DeliveryClass::Unreliable
        );
    }
}

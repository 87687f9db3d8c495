//! An envelope on its way to many sessions, encoded at most once per wire format however many
//! sessions receive it.

use std::sync::OnceLock;

use bytes::Bytes;
use metafi_proto::realtime::{DeliveryClass, Envelope, Format};

/// A pushed envelope (a broadcast, an event). Each format's bytes are made the first time a
/// recipient of that format needs them, then shared (`Bytes` clones are reference counts).
#[derive(Debug)]
pub struct Outbound {
    envelope: Envelope,
    /// How transports that can tell classes apart (QUIC) deliver it.
    class: DeliveryClass,
    json: OnceLock<Bytes>,
    protobuf: OnceLock<Bytes>,
}

impl Outbound {
    /// An envelope for the default stream.
    pub fn new(envelope: Envelope) -> Outbound {
        Outbound::with_class(envelope, DeliveryClass::default_stream())
    }

    /// An envelope delivered as `class` says (match data).
    pub fn with_class(envelope: Envelope, class: DeliveryClass) -> Outbound {
        Outbound {
            envelope,
            class,
            json: OnceLock::new(),
            protobuf: OnceLock::new(),
        }
    }

    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    pub fn class(&self) -> &DeliveryClass {
        &self.class
    }

    /// The envelope encoded for `format`.
    pub fn bytes(&self, format: Format) -> Bytes {
        let cell = match format {
            Format::Json => &self.json,
            Format::Protobuf => &self.protobuf,
        };
        cell.get_or_init(|| Bytes::from(format.encode(&self.envelope)))
            .clone()
    }

    /// Whether `format` has been encoded yet (for tests of the encode-once rule).
    pub fn is_encoded(&self, format: Format) -> bool {
        match format {
            Format::Json => self.json.get().is_some(),
            Format::Protobuf => self.protobuf.get().is_some(),
        }
    }
}

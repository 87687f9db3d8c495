//! The two wire formats of the socket: protobuf JSON in text frames (the default) and protobuf
//! in binary frames (`format=protobuf`).

use std::fmt;

use prost::Message as _;

use crate::realtime::Envelope;

/// How a socket encodes envelopes, chosen by the client at connect time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Protobuf JSON with proto field names, in WebSocket text frames.
    #[default]
    Json,
    /// Protobuf binary, in WebSocket binary frames.
    Protobuf,
}

/// Why bytes from a client are not an envelope.
#[derive(Debug)]
pub enum DecodeError {
    Json(serde_json::Error),
    Protobuf(prost::DecodeError),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Json(e) => write!(f, "not a JSON envelope: {e}"),
            DecodeError::Protobuf(e) => write!(f, "not a protobuf envelope: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl Format {
    /// Parses the `format` query parameter of `/ws`: empty or `json`, or `protobuf`.
    pub fn from_query(value: &str) -> Option<Format> {
        match value {
            "" | "json" => Some(Format::Json),
            "protobuf" => Some(Format::Protobuf),
            _ => None,
        }
    }

    /// The name used in logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Protobuf => "protobuf",
        }
    }

    /// Encodes an envelope. JSON output is UTF-8.
    pub fn encode(self, envelope: &Envelope) -> Vec<u8> {
        match self {
            Format::Json => envelope.to_json(),
            Format::Protobuf => envelope.encode_to_vec(),
        }
    }

    /// Decodes an envelope. Unknown fields are ignored, as Nakama does.
    pub fn decode(self, bytes: &[u8]) -> Result<Envelope, DecodeError> {
        match self {
            // The most frequent message in its plain form by its own reader, else serde.
            Format::Json => match super::match_data_send_json::parse(bytes) {
                Some(envelope) => Ok(envelope),
                None => serde_json::from_slice(bytes).map_err(DecodeError::Json),
            },
            Format::Protobuf => Envelope::decode(bytes).map_err(DecodeError::Protobuf),
        }
    }
}

impl Envelope {
    /// Protobuf JSON, as Nakama renders it (proto names, empty fields omitted).
    pub fn to_json(&self) -> Vec<u8> {
        // Invariant: every type in an envelope serializes without error (string map keys only;
        // non-finite doubles are written as strings by `json::double_map`), and writing to a
        // Vec cannot fail.
        serde_json::to_vec(self).expect("realtime envelopes always serialize to JSON")
    }
}

//! Wire types of the Nakama v2 client API as MetaFi speaks it: REST JSON bodies, the realtime
//! socket protocol ([`realtime`], JSON and protobuf), the gRPC status codes used in error bodies,
//! and protobuf-JSON timestamps.
//!
//! JSON follows the conventions of Nakama's gateway (protobuf JSON with proto field names):
//! fields are snake_case, empty/zero/false fields are omitted from responses, requests accept a
//! field's proto name or its lowerCamelCase JSON name, and unknown request fields are ignored.
//!
//! Must not depend on: tokio, any IO, the storage layer. Key types: [`Code`], [`ErrorBody`],
//! [`api::Session`], [`api::Account`], [`realtime::Envelope`], [`realtime::Format`].

#[macro_use]
mod wire;
pub mod api;
mod code;
mod json;
pub mod realtime;
mod timestamp;
pub mod wkt;

pub use code::{Code, ErrorBody};
pub use timestamp::format_timestamp_ms;

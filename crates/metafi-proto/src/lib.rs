//! Wire types of the Nakama v2 client API as MetaFi speaks it: REST JSON bodies, the gRPC
//! status codes used in error bodies and envelopes, and protobuf-JSON timestamps.
//!
//! JSON follows the conventions of Nakama's gateway (protobuf JSON with proto field names):
//! fields are snake_case, empty/zero/false fields are omitted from responses, requests accept a
//! field's proto name or its lowerCamelCase JSON name, and unknown request fields are ignored.
//!
//! Must not depend on: tokio, any IO, the storage layer. Key types: [`Code`], [`ErrorBody`],
//! [`api::Session`], [`api::Account`].

pub mod api;
mod code;
mod timestamp;

pub use code::{Code, ErrorBody};
pub use timestamp::format_timestamp_ms;

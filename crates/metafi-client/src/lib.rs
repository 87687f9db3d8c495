//! A Rust client for Nakama-compatible servers (MetaFi, Nakama): the REST v2 API over lean
//! HTTP/1.1 keep-alive connections and the realtime socket. `metafi-bench` drives servers with
//! it, tests use it, and transports other than WebSocket plug in under the same session API.
//!
//! It is built to be cheap per simulated user: no thread per connection, no background pool,
//! connections opened from a chosen local address, and every byte counted at the socket layer.
//!
//! Must not depend on: any server crate (it speaks only the wire protocol, so it can measure any
//! Nakama-compatible server). Key types: [`Client`], [`ClientConfig`], [`Endpoint`],
//! [`Socket`], [`Events`], [`Transport`], [`ClientError`], [`net::NetCounters`].

mod error;
pub mod net;
mod rest;
mod socket;

pub use error::ClientError;
pub use metafi_proto::api::{Account, Session};
pub use rest::{Client, ClientConfig, Endpoint, ReadObjectId, RpcResult, WriteObject};
pub use socket::{Events, Format, Socket, SocketConfig, Transport, WebSocketTransport};

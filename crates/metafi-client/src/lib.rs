//! A Rust client for Nakama-compatible servers (MetaFi, Nakama): the REST v2 API over lean
//! HTTP/1.1 keep-alive connections and the realtime socket — over WebSocket, or over MetaFi's
//! QUIC transport with a delivery class per message ([`QuicConnector`],
//! [`Socket::send_match_data`], [`DeliveryClass`]). `metafi-bench` drives servers with it and
//! tests use it.
//!
//! It is built to be cheap per simulated user: no thread per connection, no background pool,
//! connections opened from a chosen local address, and every byte counted at the socket layer.
//!
//! Must not depend on: any server crate (it speaks only the wire protocol, so it can measure any
//! Nakama-compatible server; `metafi-quic` is the wire of the QUIC transport, shared with the
//! server). Key types: [`Client`], [`ClientConfig`], [`Endpoint`], [`Socket`], [`Events`],
//! [`Transport`], [`WebSocketTransport`], [`MatchDataView`] and [`MatchDataSendJson`] (the fast
//! path for match data), [`QuicConnector`], [`ClientError`], [`net::NetCounters`].

mod error;
mod match_data;
pub mod net;
mod quic;
mod rest;
mod socket;

pub use error::ClientError;
pub use match_data::{MatchDataSendJson, MatchDataView};
pub use metafi_proto::api::{Account, Session};
pub use metafi_proto::realtime::{Delivery, DeliveryClass};
pub use quic::{Fingerprint, QuicConfig, QuicConnector, QuicTransport, QuicTrust, QuicTuning};
pub use rest::{Client, ClientConfig, Endpoint, ReadObjectId, RpcResult, WriteObject};
pub use socket::{Events, Format, Socket, SocketConfig, Transport, WebSocketTransport};

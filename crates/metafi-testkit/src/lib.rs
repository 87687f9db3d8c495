//! The MetaFi test kit: what an integration test needs to talk to a real node.
//!
//! - [`TestNode`]: a node started in-process through `metafi_server::Node::start` on port 0,
//!   on SQLite in a throwaway directory, or on PostgreSQL when `METAFI_TEST_POSTGRES_URL` is set
//!   and the test asks for it ([`TestNode::start_on_postgres`]); configuration overrides are a
//!   closure over `RawConfig`.
//! - [`Http`]: a small HTTP client with Nakama's auth helpers (server key, device sign-in).
//! - [`Socket`]: a realtime client (JSON or protobuf) with request/answer correlation by `cid`;
//!   [`raw_ws::RawWs`] for hand-built frames no client library would send.
//! - [`user`]: a fixture user (device sign-in; token, id, username).
//! - [`cluster`]: nodes in one process that form a cluster ([`cluster::ClusterSpec`] →
//!   [`cluster::TestCluster`]) on the test NATS server, and [`cluster::eventually`].
//!
//! Depends on the server crate and the wire types only; it is a dev-dependency of whatever uses
//! it and never ships in the binary.

#![allow(clippy::unwrap_used)] // a test kit: a panic is the failure report

pub mod cluster;
mod fixtures;
mod http;
mod node;
pub mod raw_ws;
mod socket;

pub use fixtures::{User, user};
pub use http::{Http, Reply, assert_error};
pub use node::{POSTGRES_URL_VAR, TestNode};
pub use socket::{Refused, Socket, WAIT, Ws, ws_url};

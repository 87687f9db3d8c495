//! MetaFi's cluster: several `metafi` nodes sharing one PostgreSQL database and talking over
//! NATS (core publish/subscribe, no JetStream). No home-made gossip or consensus: NATS carries
//! every message, and each node keeps its own view built from what the others publish.
//!
//! - [`Membership`]: a node announces itself, heartbeats, knows its peers, and notices a peer
//!   that stopped heartbeating within `peer_lost_timeout` (plus one check period); a node that
//!   returns (or restarts) joins again.
//! - [`SessionDirectory`]: which session of which user lives on which other node, built from
//!   the open/close announcements and snapshots every node publishes. It carries the
//!   single-socket rule across nodes: a newer socket of a user on any node closes the older ones
//!   everywhere.
//! - [`ClusterRouter`]: the second [`metafi_realtime::MessageRouter`]: a session on this node is
//!   delivered to directly, one on another node through that node's delivery subject — one NATS
//!   message per node for a fan-out, not one per recipient, with the envelope encoded once.
//! - [`ClusterTracker`]: the second [`metafi_realtime::Tracker`]: this node's presences are
//!   announced, the other nodes' kept, so stream members (chat channels, streams of server
//!   code, who is online) span every node; a lost node's presences leave everywhere.
//! - One matchmaker across the cluster (`matchmaker.rs`): the live node with the lowest name
//!   runs the pool; every node keeps its own tickets and forwards them there.
//! - Status follows across nodes: each node tells its own followers of a status change it
//!   hears from another node (`tracker.rs`).
//! - [`Calls`]: request/reply (and one-way casts) to a named node, bounded and timed out; the
//!   match seam (`matches.rs`) forwards joins, leaves, data and signals for matches of other
//!   nodes through it, and keeps the other nodes' match listings.
//! - Server code's closes, stream changes and pushes to every socket reach sessions on any
//!   node (`session_requests.rs`, the second [`metafi_realtime::RemoteSessions`]): each is
//!   sent to the session's node, which does what its own server code would.
//! - [`Cluster`]: the parts wired together for a node (`metafi serve --cluster …`).
//!
//! Must not depend on: storage backends, HTTP, script engines. Key types: [`Cluster`],
//! [`ClusterConfig`], [`Membership`], [`MembershipEvent`], [`ClusterRouter`].
//! Design and guarantees: `docs/CLUSTER.md`.

mod calls;
mod cluster;
mod codec;
mod config;
mod digest;
mod directory;
mod matches;
mod matchmaker;
mod membership;
mod metrics;
mod outgoing;
mod parties;
mod router;
mod session_requests;
mod sessions;
mod tracker;
mod wire;

pub use calls::{CallError, Calls};
pub use cluster::{Cluster, ClusterError, connect};
pub use config::{ClusterConfig, valid_node_name};
pub use directory::{RemoteSession, SessionDirectory};
pub use membership::{Membership, MembershipEvent};
pub use router::ClusterRouter;
pub use tracker::ClusterTracker;

pub(crate) use metafi_match::BoxFuture;

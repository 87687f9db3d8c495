//! `metafi-bench`, the load tool: runs the seed's workloads (CCU, registration, authentication,
//! RPC, authoritative matches) against MetaFi or any server speaking Nakama's client API, and
//! reports them in the seed's columns (Tsung's: 10-second means, rates) plus percentiles,
//! errors by kind and network traffic, as a terminal table, JSON, Markdown and SVG charts.
//!
//! It is cheap per simulated user (async tasks on a small tokio runtime, one socket per user, no
//! thread per client) because on the project's machine it shares two cores with the server.
//!
//! Must not depend on: any server crate (only `metafi-client` and the wire protocol), so it
//! measures a peer the same way. (`floor` is the one server inside: the bare network stack, as
//! the floor of the RPC rows; it uses axum directly, not MetaFi's edge.) Key types:
//! [`phases::LoadModel`], [`runner::run`], [`stats::Stats`], [`report::Report`],
//! [`workloads::Workload`].

pub mod app;
pub mod cli;
pub mod floor;
pub mod net;
pub mod phases;
pub mod procfs;
pub mod report;
pub mod runner;
pub mod servers;
pub mod stats;
pub mod units;
pub mod workloads;

//! The `metafi` server: configuration, and a node built from the component crates that starts
//! and stops as one value ([`Node`]). Nothing else lives here; every behaviour belongs to a
//! component crate. The example native modules of `examples/native` are linked only with the
//! `examples` feature (`examples.rs`).
//!
//! Key items: [`config::Config`], [`Listeners`], [`Node`], [`run`].

pub mod agones;
pub mod config;
mod config_view;
mod console;
mod examples;
mod housekeeping;
mod listeners;
mod match_engine;
mod metrics_endpoint;
mod modules;
mod node;
mod quic_edge;
mod realtime_host;
mod started;
mod storage;
pub mod telemetry;
mod worlds;

pub use listeners::{Listeners, NodeAddrs};
pub use node::{Node, run};

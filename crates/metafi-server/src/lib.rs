//! The `metafi` server: configuration, wiring of the components, telemetry and shutdown.
//! Nothing else lives here; every behaviour belongs to a component crate. The example native
//! modules of `examples/native` are linked only with the `examples` feature (`examples.rs`).
//!
//! Key items: [`config::Config`], [`Listeners`], [`run`].

pub mod config;
mod examples;
mod matches;
mod serve;
mod storage;
pub mod telemetry;

pub use serve::{Listeners, run};

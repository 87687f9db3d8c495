//! The `metafi` server: configuration, wiring of the components, and shutdown. Nothing else
//! lives here; every behaviour belongs to a component crate.
//!
//! Key items: [`config::Config`], [`Listeners`], [`run`].

pub mod config;
mod examples;
mod matches;
mod serve;
mod storage;
pub mod telemetry;

pub use serve::{Listeners, run};

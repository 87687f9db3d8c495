//! MetaFi's engine conformance suite: one set of fixtures that every script engine must pass,
//! the way `metafi-storage`'s conformance suite is one set of cases every backend must pass.
//!
//! A fixture is a folder under `fixtures/`: `module.lua` and `module.js` doing the same thing
//! in each language's idiom (plus any helper modules they load), and `expect.toml`, the calls
//! to make (RPC id, payload, caller) and what each must give — result, error code and message,
//! side effects in storage and on the match host. The suite runs every fixture in each engine
//! it names (Lua, JavaScript, and native Rust where [`native`] has a module for it), checks
//! each engine against the expectations, and checks that the engines answered alike: the same
//! codes and messages, and results of the same shape. Adding a fixture needs no Rust code;
//! `docs/RUNTIME.md` ("Engine conformance suite") says how to write one.
//!
//! Test-only (`publish = false`), never linked into the server. Must not depend on: the
//! server, the HTTP or socket edges, PostgreSQL. Key types: [`Fixture`] (a parsed fixture),
//! [`Rig`] (a runtime over SQLite with a fake match host), [`run_all`] (the suite).

pub mod fixture;
pub mod matcher;
pub mod native;
pub mod rig;
pub mod runner;

pub use fixture::{Engine, Fixture};
pub use rig::Rig;
pub use runner::{FixtureResult, Report, run_all, run_fixture};

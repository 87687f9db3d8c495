//! MetaFi's engine conformance suite: one set of fixtures that every script engine must pass,
//! the way `metafi-storage`'s conformance suite is one set of cases every backend must pass.
//!
//! A fixture is a folder under `fixtures/`: `module.lua` and `module.js` doing the same thing
//! in each language's idiom (plus any helper modules they load), and `expect.toml`, the calls
//! to make (RPC id, payload, caller) and what each must give — result, error code and message,
//! side effects in storage and on the match host. The suite runs every fixture in each engine
//! it names (Lua, JavaScript, and native Rust where `tests/support/native.rs` has a module
//! for it), checks each engine against the expectations, and checks that the engines answered
//! alike: the same codes and messages, and results of the same shape. Adding a fixture needs no Rust code;
//! `docs/RUNTIME.md` ("Engine conformance suite") says how to write one.
//!
//! Test-only (`publish = false`): this library is empty; the suite is `tests/conformance.rs`
//! and its harness `tests/support/` (`fixture.rs`: `expect.toml`; `matcher.rs`: how results
//! are compared; `rig.rs`: a runtime over SQLite with the fake match host; `runner.rs`: runs
//! fixtures and compares engines; `native.rs`: the native modules), all dev-dependencies, so
//! nothing here reaches a shipped build. Must not depend on: the server, the HTTP or socket
//! edges, PostgreSQL.

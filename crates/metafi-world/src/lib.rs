//! `metafi-world`: a first-person-action world (the seeds' Quake server) simulated in parallel,
//! deterministically, as pure computation.
//!
//! **What it is.** A map of box brushes with spawn points and respawning pickups; players moved
//! by Quake-style commands (angles, forward/side/up, buttons, msec) with acceleration, friction,
//! gravity, steps and collision against the map and each other; hitscan and rocket weapons with
//! splash damage, death and respawn; and per-client snapshots chosen by interest management
//! (PVS or near, capped nearest-first, distance tiers, the set chosen afresh every
//! `refresh_ticks` ticks and kept in between) and delta-encoded against the last snapshot the
//! client acknowledged, which the server keeps in one arena for all clients.
//!
//! **The tick** ([`World::tick`]): world physics (rockets, items) → commands → merge →
//! snapshots. Each parallel phase reads the previous phase's immutable state and writes only
//! what it owns (double buffering); effects on other entities are [intents](intent) merged in a
//! sorted, deterministic order. Work items are runs of grid cells (many more than cores)
//! scheduled by rayon's work stealing. There are no locks on world state.
//!
//! **Determinism.** Same inputs → bit-identical state ([`World::state_hash`]) whatever the pool
//! size. Floats are `f32`: each value is computed by exactly one task from inputs that do not
//! depend on scheduling, and every reduction across entities (damage, knockback, pickups, rocket
//! ids) is applied in the order of a unique sort key, so no sum depends on the thread count. We
//! chose this over fixed-point because Quake's movement code is float code and the order-fixing
//! is needed for integers too (who picks up the last health box, whose rocket kills first).
//! Determinism is promised across thread counts on one build and machine, not across
//! platforms (`sin`/`atan2` may differ between libms).
//!
//! **Sans-IO.** The caller passes commands and `now`, and owns the rayon pool; the crate never
//! reads a clock, spawns a thread or does IO. Phase timing is the caller's job
//! ([`World::tick_observed`]).
//!
//! **Must not depend on** tokio, networking, storage or any other MetaFi crate.
//!
//! **Key types:** [`Map`] / [`MapSpec`] (JSON map format) / [`map_gen`], [`World`],
//! [`WorldConfig`], [`Command`] / [`UserCmd`], [`PlayerState`], [`Snapshot`] and the
//! [`delta`] codec, [`InterestConfig`], [`client::History`] (the snapshot-history arena) and
//! [`client::ClientTable`], [`ActionFile`] (recorded bot commands),
//! [`Recorder`], [`bots`] (seeded behaviours), and the [`Neighbourhood`] trait through which the
//! shared rules ([`step_player`], [`Projectile::advance`]) see other entities — the benchmark's
//! baselines reuse those rules with their own scheduling.

pub mod actions;
pub mod bots;
pub mod cells;
pub mod client;
pub mod combat;
pub mod command;
pub mod delta;
pub mod grid;
pub mod intent;
pub mod interest;
pub mod item;
pub mod map;
pub mod map_gen;
pub mod map_spec;
pub mod math;
pub mod movement;
pub mod neighbourhood;
pub mod player;
pub mod projectile;
pub mod rng;
pub mod rules;
pub mod snapshot;
pub mod step;
pub mod tick;
pub mod vis;
mod wire;
pub mod world;

pub use actions::{ActionError, ActionFile, BotTrack, Recorder};
pub use command::{Buttons, Command, PlayerId, UserCmd, Weapon};
pub use interest::InterestConfig;
pub use map::Map;
pub use map_spec::{ItemKind, MapError, MapSpec};
pub use math::{Aabb, Vec3};
pub use neighbourhood::Neighbourhood;
pub use player::PlayerState;
pub use projectile::Projectile;
pub use rules::Rules;
pub use snapshot::Snapshot;
pub use step::step_player;
pub use world::{Phase, TickSummary, World, WorldConfig, WorldError};

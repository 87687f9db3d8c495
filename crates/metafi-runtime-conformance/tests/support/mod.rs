//! The conformance suite's harness: fixtures, matching, the runtime rig, the runner.

pub mod fixture;
pub mod matcher;
pub mod native;
pub mod rig;
pub mod runner;

//! What a run measures, and how runs are bounded.

use std::time::Duration;

/// How long a configuration runs.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// Ticks run before measuring (caches, allocations, first full snapshots).
    pub warmup: u32,
    /// Measured ticks always run (also the span of the state-hash digest).
    pub min_ticks: u32,
    /// Measured ticks at most.
    pub max_ticks: u32,
    /// Stop measuring after this much wall time once `min_ticks` are done.
    pub max_wall: Duration,
}

impl RunPlan {
    pub fn done(&self, measured: u32, elapsed: Duration) -> bool {
        measured >= self.max_ticks || (measured >= self.min_ticks && elapsed >= self.max_wall)
    }

    /// Ticks folded into the state-hash digest: fixed, so digests compare across processes.
    pub fn hash_ticks(&self) -> u32 {
        self.warmup + self.min_ticks
    }
}

/// Phases as reported: physics, commands (requests), merge, snapshots (replies).
pub const PHASES: [&str; 4] = ["physics", "commands", "merge", "snapshots"];

/// One tick's measurements.
#[derive(Clone, Copy, Debug, Default)]
pub struct TickSample {
    pub total_ns: u64,
    pub phase_ns: [u64; 4],
    pub bytes: u64,
    pub entities: u64,
    /// What the tick did (from the world's summary; zero for schedulers that do not count),
    /// so a slow tick in `profile --samples` can be told apart by its workload.
    pub work: TickWork,
}

/// A tick's workload counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct TickWork {
    pub commands: u32,
    pub hits: u32,
    pub kills: u32,
    pub launches: u32,
    pub projectiles: u32,
}

/// A run's measurements.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub samples: Vec<TickSample>,
    /// Digest of the per-tick state hashes over [`RunPlan::hash_ticks`] (deterministic
    /// schedulers only).
    pub hash_digest: Option<u64>,
    pub players: usize,
    pub hits: u64,
    pub kills: u64,
    /// Region-lock baseline: time threads spent blocked on locks / at barriers, summed over
    /// threads, during measured ticks.
    pub lock_wait_ns: u64,
    pub barrier_wait_ns: u64,
    /// Thread-time available during measured ticks (threads × wall time).
    pub thread_ns: u64,
}

/// Folds one tick's state hash into a digest.
pub fn fold_hash(digest: u64, hash: u64) -> u64 {
    metafi_world::player::mix(digest ^ hash)
}

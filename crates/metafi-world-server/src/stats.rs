//! Per-world counters, readable while the world runs (`GET /debug/worlds`), and the node-wide
//! Prometheus series.

use std::sync::atomic::{AtomicU64, Ordering};

/// Phases of a served tick, in order: taking the inputs, the world's four phases, then
/// handing each client its snapshot.
pub const PHASES: [&str; 6] = [
    "receive",
    "physics",
    "commands",
    "merge",
    "snapshots",
    "send",
];

/// One world's counters. `last_*` describe the last tick; totals count since the start.
#[derive(Debug, Default)]
pub struct WorldStats {
    pub ticks: AtomicU64,
    pub players: AtomicU64,
    /// Nanoseconds per phase of the last tick ([`PHASES`] order).
    pub last_phase_ns: [AtomicU64; 6],
    /// Sum of nanoseconds per phase since the start (mean = sum / ticks).
    pub total_phase_ns: [AtomicU64; 6],
    pub last_tick_ns: AtomicU64,
    pub max_tick_ns: AtomicU64,
    /// How late the last tick started after its deadline.
    pub last_lateness_ns: AtomicU64,
    pub max_lateness_ns: AtomicU64,
    /// Ticks skipped because the world was more than a tick behind.
    pub skipped_ticks: AtomicU64,
    pub last_bytes_out: AtomicU64,
    pub last_frames_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub frames_out: AtomicU64,
    /// Snapshots not sent because the client's outbox was behind.
    pub dropped_snapshots: AtomicU64,
    pub commands: AtomicU64,
    /// Commands older than one already taken from the same player.
    pub stale_commands: AtomicU64,
    /// Command messages that could not be read.
    pub bad_commands: AtomicU64,
    /// Mean and largest acknowledgement age of the last tick, in ticks (clients that have not
    /// acknowledged anything are not counted).
    pub last_ack_age_mean_milli: AtomicU64,
    pub last_ack_age_max: AtomicU64,
    /// Clients of the last tick with no acknowledgement yet.
    pub last_unacked: AtomicU64,
}

impl WorldStats {
    pub(crate) fn record_phases(&self, ns: &[u64; 6]) {
        for (i, &n) in ns.iter().enumerate() {
            self.last_phase_ns[i].store(n, Ordering::Relaxed);
            self.total_phase_ns[i].fetch_add(n, Ordering::Relaxed);
            metrics::histogram!("metafi_world_tick_phase_seconds", "phase" => PHASES[i])
                .record(n as f64 / 1e9);
        }
        let total: u64 = ns.iter().sum();
        self.last_tick_ns.store(total, Ordering::Relaxed);
        self.max_tick_ns.fetch_max(total, Ordering::Relaxed);
        metrics::histogram!("metafi_world_tick_seconds").record(total as f64 / 1e9);
    }

    /// The counters as JSON (the debug listing).
    pub fn to_json(&self) -> serde_json::Value {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let ticks = get(&self.ticks).max(1);
        let mut last = serde_json::Map::new();
        let mut mean = serde_json::Map::new();
        for (i, name) in PHASES.iter().enumerate() {
            last.insert(
                (*name).into(),
                (get(&self.last_phase_ns[i]) as f64 / 1e9).into(),
            );
            mean.insert(
                (*name).into(),
                (get(&self.total_phase_ns[i]) as f64 / 1e9 / ticks as f64).into(),
            );
        }
        serde_json::json!({
            "ticks": get(&self.ticks),
            "players": get(&self.players),
            "last_phase_seconds": last,
            "mean_phase_seconds": mean,
            "last_tick_seconds": get(&self.last_tick_ns) as f64 / 1e9,
            "max_tick_seconds": get(&self.max_tick_ns) as f64 / 1e9,
            "last_lateness_seconds": get(&self.last_lateness_ns) as f64 / 1e9,
            "max_lateness_seconds": get(&self.max_lateness_ns) as f64 / 1e9,
            "skipped_ticks": get(&self.skipped_ticks),
            "last_bytes_out": get(&self.last_bytes_out),
            "last_frames_out": get(&self.last_frames_out),
            "bytes_out": get(&self.bytes_out),
            "frames_out": get(&self.frames_out),
            "dropped_snapshots": get(&self.dropped_snapshots),
            "commands": get(&self.commands),
            "stale_commands": get(&self.stale_commands),
            "bad_commands": get(&self.bad_commands),
            "last_ack_age_mean_ticks": get(&self.last_ack_age_mean_milli) as f64 / 1000.0,
            "last_ack_age_max_ticks": get(&self.last_ack_age_max),
            "last_unacked_clients": get(&self.last_unacked),
        })
    }
}

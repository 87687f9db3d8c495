//! Result rows as written by `run` and read by `report`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::measure::{PHASES, RunOutcome};

/// One configuration's summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultRow {
    pub suite: String,
    pub map: String,
    pub map_side: f32,
    pub behaviour: String,
    pub players: usize,
    pub scheduler: String,
    pub threads: usize,
    pub ticks: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Mean per phase: physics, commands, merge, snapshots (the baselines have no merge).
    pub phase_mean_ms: [f64; 4],
    pub bytes_per_player_tick: f64,
    pub entities_per_snapshot: f64,
    pub hits_per_tick: f64,
    pub kills_per_tick: f64,
    /// Hex digest of per-tick state hashes over the first ticks, for deterministic schedulers.
    pub hash_digest: Option<String>,
    /// Region-lock baseline: share of thread time blocked on locks and at barriers.
    pub lock_wait_pct: f64,
    pub barrier_wait_pct: f64,
    /// CPU time the process got during the run over wall time × threads: below 1.0 the machine
    /// was busy with something else (it is shared), so the times are pessimistic.
    #[serde(default)]
    pub cpu_share: f64,
}

/// A `run` process's output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultsFile {
    pub threads: usize,
    pub cpu: String,
    pub cores: usize,
    pub quick: bool,
    /// Whether worker threads were pinned one per processor (see `affinity`); files written
    /// before pinning existed read as `false`.
    #[serde(default)]
    pub pinned: bool,
    pub command: String,
    /// `/proc/loadavg` when the run started and ended.
    #[serde(default)]
    pub load_before: String,
    #[serde(default)]
    pub load_after: String,
    pub rows: Vec<ResultRow>,
}

impl ResultsFile {
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self)?)?;
        Ok(())
    }

    pub fn read(path: &Path) -> anyhow::Result<ResultsFile> {
        Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
    }
}

/// What a row is about.
pub struct RowKey<'a> {
    pub suite: &'a str,
    pub map: &'a str,
    pub map_side: f32,
    pub behaviour: &'a str,
    pub scheduler: &'a str,
    pub threads: usize,
}

pub fn summarise(key: RowKey<'_>, out: &RunOutcome) -> ResultRow {
    let mut totals: Vec<f64> = out
        .samples
        .iter()
        .map(|s| s.total_ns as f64 / 1e6)
        .collect();
    totals.sort_by(f64::total_cmp);
    let n = totals.len().max(1) as f64;
    let pct = |q: f64| {
        if totals.is_empty() {
            return 0.0;
        }
        let i = ((q * totals.len() as f64).ceil() as usize).clamp(1, totals.len()) - 1;
        totals[i]
    };
    let mut phase_mean_ms = [0.0; PHASES.len()];
    for s in &out.samples {
        for (k, ns) in s.phase_ns.iter().enumerate() {
            phase_mean_ms[k] += *ns as f64 / 1e6 / n;
        }
    }
    let bytes: u64 = out.samples.iter().map(|s| s.bytes).sum();
    let entities: u64 = out.samples.iter().map(|s| s.entities).sum();
    let player_ticks = (out.players as f64 * n).max(1.0);
    let share = |ns: u64| {
        if out.thread_ns == 0 {
            0.0
        } else {
            100.0 * ns as f64 / out.thread_ns as f64
        }
    };
    ResultRow {
        suite: key.suite.into(),
        map: key.map.into(),
        map_side: key.map_side,
        behaviour: key.behaviour.into(),
        players: out.players,
        scheduler: key.scheduler.into(),
        threads: key.threads,
        ticks: out.samples.len(),
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        max_ms: pct(1.0),
        mean_ms: totals.iter().sum::<f64>() / n,
        phase_mean_ms,
        bytes_per_player_tick: bytes as f64 / player_ticks,
        entities_per_snapshot: entities as f64 / player_ticks,
        hits_per_tick: out.hits as f64 / n,
        kills_per_tick: out.kills as f64 / n,
        hash_digest: out.hash_digest.map(|d| format!("{d:016x}")),
        lock_wait_pct: share(out.lock_wait_ns),
        barrier_wait_pct: share(out.barrier_wait_ns),
        cpu_share: 0.0,
    }
}

/// User + system CPU seconds of this process so far (from `/proc/self/stat`, 100 ticks/s).
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace().skip(11);
    let utime: f64 = f.next()?.parse().ok()?;
    let stime: f64 = f.next()?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

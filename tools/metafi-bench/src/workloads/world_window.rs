//! The world workload's measured phase (docs/BENCHMARKS.md, "The world served"): while the full
//! count of bots is in (the load model's last phase, less a margin at each end), it reads the
//! server's own figures for the world (`GET /debug/worlds` on the metrics listener, once a
//! second) and the server's CPU per thread (`/proc/PID/task/*/stat`, grouped by thread name) at
//! the first and last reading, and the bots' own counters at the same two instants. So every
//! figure of the report's measured-phase notes (and `report.json`'s `figures`) describes the
//! full count only, not the ramp, and is read before the bots leave and the world ends.
//!
//! The split between simulation and network: the world's threads (`metafi-world*`) run the
//! tick, whose phases the server times; their CPU is shared out by those phase times —
//! physics, commands and merge are simulation; receive (taking the queued inputs), snapshots
//! (delta-encoding each player's snapshot) and send (wrapping and queueing each client's
//! message) are network. The IO threads (`metafi-io`: sockets, WebSocket frames, decoding the
//! commands) are network. Other threads (storage, matches, the main thread) are counted apart.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::procfs;
use crate::stats::SeriesId;
use crate::units::{bytes, thousands};
use crate::workloads::Ctx;

/// The thread-name groups of the split (`procfs::thread_group` of the server's thread names).
pub const WORLD_GROUP: &str = "metafi-world";
pub const IO_GROUP: &str = "metafi-io";

/// The phases of a served tick, as `/debug/worlds` names them, and which are simulation.
const PHASES: [(&str, bool); 6] = [
    ("receive", false),
    ("physics", true),
    ("commands", true),
    ("merge", true),
    ("snapshots", false),
    ("send", false),
];

/// Everything the measured phase gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    /// Seconds from the run's start at the first and the last reading.
    pub from_secs: f64,
    pub to_secs: f64,
    /// Bots in the world on average (bot-seconds in it over the window's seconds).
    pub bots: f64,
    pub tick_rate: f64,
    /// Snapshots the bots received per bot per second.
    pub snapshots_per_bot_per_sec: f64,
    /// Command sent → first snapshot applying it, over the whole seconds of the window.
    pub command_p50_ms: f64,
    pub command_p99_ms: f64,
    pub commands_measured: u64,
    /// Bytes on the wire per bot per second as the bots count them: `in` is what they
    /// received (the server's output), `out` what they sent.
    pub bytes_in_per_bot_per_sec: f64,
    pub bytes_out_per_bot_per_sec: f64,
    /// The server's figures for the world (`None`: no `--server-metrics`, or not readable).
    pub server: Option<ServerFigures>,
    /// The server's CPU by thread group (`None`: no `--server-pid`, or not readable).
    pub cpu: Option<CpuFigures>,
    /// What could not be read, in words.
    pub problems: Vec<String>,
}

/// The world's counters over the window (`/debug/worlds`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    /// Players in the world at the last reading.
    pub players: u64,
    /// Mean players over the readings (the per-player figures' denominator).
    #[serde(default)]
    pub players_mean: f64,
    pub ticks: u64,
    /// Mean milliseconds per tick of each phase, in tick order (receive, physics, commands,
    /// merge, snapshots, send).
    pub phase_ms: BTreeMap<String, f64>,
    /// Largest "last tick" time and start lateness among the once-a-second readings.
    pub tick_ms_max_seen: f64,
    pub lateness_ms_max_seen: f64,
    pub skipped_ticks: u64,
    /// Snapshots not sent because the client's outbox was behind.
    pub dropped_snapshots: u64,
    pub snapshots_sent: u64,
    pub bytes_out: u64,
    pub commands: u64,
    pub stale_commands: u64,
    /// Mean of the readings' mean acknowledgement age, and the largest age seen, in ticks.
    pub ack_age_mean_ticks: f64,
    pub ack_age_max_ticks: u64,
    /// Clients that had acknowledged nothing at the last reading.
    pub unacked_clients: u64,
}

impl ServerFigures {
    /// Milliseconds per tick of the simulation phases and of the network phases.
    pub fn split_ms(&self) -> (f64, f64) {
        let mut sim = 0.0;
        let mut net = 0.0;
        for (name, simulation) in PHASES {
            let ms = self.phase_ms.get(name).copied().unwrap_or(0.0);
            if simulation {
                sim += ms;
            } else {
                net += ms;
            }
        }
        (sim, net)
    }

    /// The six phase means as `a / b / …` in tick order.
    pub fn phases_line(&self) -> String {
        PHASES
            .iter()
            .map(|(name, _)| format!("{:.2}", self.phase_ms.get(*name).copied().unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// The server's CPU over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// Wall seconds between the two readings.
    pub seconds: f64,
    /// The whole process: CPU seconds per wall second.
    pub cores: f64,
    /// Per thread-name group (`metafi-world`, `metafi-io`, …), busiest first; threads that
    /// ended inside the window are in `exited threads`.
    pub groups: Vec<GroupCpu>,
    pub world_cores: f64,
    pub io_cores: f64,
    pub other_cores: f64,
    /// The world's threads shared out by phase time, plus the IO threads as network.
    pub simulation_cores: f64,
    pub network_cores: f64,
    /// Simulation's share of simulation + network (0..1).
    pub simulation_share: f64,
    /// CPU microseconds per player per tick.
    pub simulation_us_per_player_tick: f64,
    pub network_us_per_player_tick: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupCpu {
    pub name: String,
    pub threads: u32,
    pub cores: f64,
}

/// One reading of the server's threads: CPU seconds by thread id, with their names.
#[derive(Debug, Clone, Default)]
pub struct ThreadsReading {
    pub process_cpu_secs: f64,
    pub threads: BTreeMap<u32, (String, f64)>,
}

impl ThreadsReading {
    /// The server processes' threads now (several pids: summed, keyed apart by thread id).
    pub fn take(pids: &[u32]) -> Result<ThreadsReading, String> {
        let mut reading = ThreadsReading::default();
        for &pid in pids {
            let process =
                procfs::read(pid).map_err(|e| format!("reading /proc/{pid}/stat: {e}"))?;
            reading.process_cpu_secs += process.cpu_secs;
            for t in procfs::threads(pid).map_err(|e| format!("reading /proc/{pid}/task: {e}"))? {
                reading.threads.insert(t.tid, (t.name, t.cpu_secs));
            }
        }
        Ok(reading)
    }
}

/// The CPU split between two readings `seconds` apart, with the world's phase times (for
/// sharing out its threads) and the players (for the per-player figures).
pub fn cpu_split(
    first: &ThreadsReading,
    last: &ThreadsReading,
    seconds: f64,
    server: Option<&ServerFigures>,
    players: f64,
    tick_rate: f64,
) -> CpuFigures {
    let seconds = seconds.max(1e-9);
    let mut groups: BTreeMap<String, (u32, f64)> = BTreeMap::new();
    let mut counted = 0.0;
    for (tid, (name, cpu)) in &last.threads {
        let before = first.threads.get(tid).map_or(0.0, |(_, c)| *c);
        let used = (cpu - before).max(0.0);
        counted += used;
        let entry = groups
            .entry(procfs::thread_group(name).to_owned())
            .or_default();
        entry.0 += 1;
        entry.1 += used;
    }
    let process = (last.process_cpu_secs - first.process_cpu_secs).max(0.0);
    let exited = process - counted;
    if exited > 0.005 {
        groups.insert("exited threads".into(), (0, exited));
    }
    let mut groups: Vec<GroupCpu> = groups
        .into_iter()
        .map(|(name, (threads, cpu))| GroupCpu {
            name,
            threads,
            cores: cpu / seconds,
        })
        .collect();
    groups.sort_by(|a, b| b.cores.total_cmp(&a.cores).then(a.name.cmp(&b.name)));
    let of = |group: &str| {
        groups
            .iter()
            .find(|g| g.name == group)
            .map_or(0.0, |g| g.cores)
    };
    let world_cores = of(WORLD_GROUP);
    let io_cores = of(IO_GROUP);
    let cores = process / seconds;
    let other_cores = (cores - world_cores - io_cores).max(0.0);
    let (sim_ms, net_ms) = server.map_or((0.0, 0.0), ServerFigures::split_ms);
    let sim_fraction = if sim_ms + net_ms > 0.0 {
        sim_ms / (sim_ms + net_ms)
    } else {
        0.0
    };
    let simulation_cores = world_cores * sim_fraction;
    let network_cores = world_cores * (1.0 - sim_fraction) + io_cores;
    let per_player_tick = |c: f64| {
        if players > 0.0 && tick_rate > 0.0 {
            c * 1e6 / players / tick_rate
        } else {
            0.0
        }
    };
    CpuFigures {
        seconds,
        cores,
        groups,
        world_cores,
        io_cores,
        other_cores,
        simulation_cores,
        network_cores,
        simulation_share: if simulation_cores + network_cores > 0.0 {
            simulation_cores / (simulation_cores + network_cores)
        } else {
            0.0
        },
        simulation_us_per_player_tick: per_player_tick(simulation_cores),
        network_us_per_player_tick: per_player_tick(network_cores),
    }
}

/// The entry of `world` in a `/debug/worlds` answer (the first world when it is not there).
pub fn world_entry<'a>(
    answer: &'a serde_json::Value,
    world: &str,
) -> Option<&'a serde_json::Value> {
    let worlds = answer["worlds"].as_object()?;
    worlds.get(world).or_else(|| worlds.values().next())
}

/// Running maxima and means of the once-a-second world readings.
#[derive(Debug, Default, Clone)]
pub struct WorldSeen {
    pub tick_max: f64,
    pub lateness_max: f64,
    pub ack_mean_sum: f64,
    pub ack_max: u64,
    pub players_sum: f64,
    pub readings: u32,
}

impl WorldSeen {
    pub fn observe(&mut self, w: &serde_json::Value) {
        let f = |k: &str| w[k].as_f64().unwrap_or(0.0);
        self.tick_max = self.tick_max.max(f("last_tick_seconds"));
        self.lateness_max = self.lateness_max.max(f("last_lateness_seconds"));
        self.ack_mean_sum += f("last_ack_age_mean_ticks");
        self.players_sum += f("players");
        self.ack_max = self
            .ack_max
            .max(w["last_ack_age_max_ticks"].as_u64().unwrap_or(0));
        self.readings += 1;
    }
}

/// The world's figures between two `/debug/worlds` entries of it.
pub fn server_figures(
    first: &serde_json::Value,
    last: &serde_json::Value,
    seen: &WorldSeen,
) -> ServerFigures {
    let u = |w: &serde_json::Value, k: &str| w[k].as_u64().unwrap_or(0);
    let delta = |k: &str| u(last, k).saturating_sub(u(first, k));
    let ticks = delta("ticks");
    // Totals per phase from the means since the start (mean × ticks), then their difference.
    let total = |w: &serde_json::Value, phase: &str| {
        w["mean_phase_seconds"][phase].as_f64().unwrap_or(0.0) * u(w, "ticks") as f64
    };
    let phase_ms = PHASES
        .iter()
        .map(|&(name, _)| {
            let secs = (total(last, name) - total(first, name)).max(0.0);
            let ms = if ticks > 0 {
                secs * 1000.0 / ticks as f64
            } else {
                0.0
            };
            (name.to_owned(), ms)
        })
        .collect();
    ServerFigures {
        players: u(last, "players"),
        players_mean: if seen.readings > 0 {
            seen.players_sum / f64::from(seen.readings)
        } else {
            u(last, "players") as f64
        },
        ticks,
        phase_ms,
        tick_ms_max_seen: seen.tick_max * 1000.0,
        lateness_ms_max_seen: seen.lateness_max * 1000.0,
        skipped_ticks: delta("skipped_ticks"),
        dropped_snapshots: delta("dropped_snapshots"),
        snapshots_sent: delta("frames_out"),
        bytes_out: delta("bytes_out"),
        commands: delta("commands"),
        stale_commands: delta("stale_commands"),
        ack_age_mean_ticks: if seen.readings > 0 {
            seen.ack_mean_sum / f64::from(seen.readings)
        } else {
            0.0
        },
        ack_age_max_ticks: seen.ack_max,
        unacked_clients: u(last, "last_unacked_clients"),
    }
}

/// The first and last instant of the window: the last phase less a tenth at each end (at
/// most 2 s after its start, for late joins to land, and 1 s before the deadline, so the last
/// reading is in before the bots leave). `None` when that leaves nothing.
pub fn window(ctx: &Ctx) -> Option<(Instant, Instant)> {
    let span = ctx.deadline.saturating_duration_since(ctx.last_phase);
    let from = ctx.last_phase + (span / 10).min(Duration::from_secs(2));
    let to = ctx
        .deadline
        .checked_sub((span / 10).min(Duration::from_secs(1)))?;
    (to > from + Duration::from_millis(500)).then_some((from, to))
}

/// The bots' command latency p50/p99 (ms) and count over the whole seconds in `from..to`
/// (seconds from the run's start).
pub fn command_quantiles(ctx: &Ctx, series: SeriesId, from: f64, to: f64) -> (f64, f64, u64) {
    let first = from.ceil() as usize;
    let last = to.floor() as usize;
    let mut merged: Option<hdrhistogram::Histogram<u32>> = None;
    let mut count = 0;
    for second in first..last {
        let bucket = ctx.stats.count_in(series, second);
        if bucket.count == 0 {
            continue;
        }
        count += bucket.count;
        match &mut merged {
            Some(h) => {
                let _ = h.add(&bucket.histogram);
            }
            None => merged = Some(bucket.histogram),
        }
    }
    match merged {
        Some(h) => (
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            count,
        ),
        None => (0.0, 0.0, 0),
    }
}

/// The report's lines for the measured phase.
pub fn notes(f: &WindowFigures) -> Vec<String> {
    let mut out = vec![format!(
        "measured phase ({:.1}–{:.1} s, {:.1} bots on average): {:.2} snapshots per bot per second of {} ({:.1}%); command → snapshot p50 {:.1} ms, p99 {:.1} ms ({} measured); per bot {}/s in, {}/s out",
        f.from_secs,
        f.to_secs,
        f.bots,
        f.snapshots_per_bot_per_sec,
        f.tick_rate,
        100.0 * f.snapshots_per_bot_per_sec / f.tick_rate.max(1.0),
        f.command_p50_ms,
        f.command_p99_ms,
        thousands(f.commands_measured),
        bytes(f.bytes_in_per_bot_per_sec as u64),
        bytes(f.bytes_out_per_bot_per_sec as u64),
    )];
    if let Some(s) = &f.server {
        out.push(format!(
            "server, measured phase: {} players ({:.1} on average), {} ticks; ms per tick receive / physics / commands / merge / snapshots / send {}; tick max {:.2} ms, lateness max {:.2} ms (at the readings); {} ticks skipped; {} snapshots sent, {} dropped; acknowledgement age mean {:.2} ticks, max {}; {} clients never acknowledged",
            thousands(s.players),
            s.players_mean,
            thousands(s.ticks),
            s.phases_line(),
            s.tick_ms_max_seen,
            s.lateness_ms_max_seen,
            thousands(s.skipped_ticks),
            thousands(s.snapshots_sent),
            thousands(s.dropped_snapshots),
            s.ack_age_mean_ticks,
            s.ack_age_max_ticks,
            thousands(s.unacked_clients),
        ));
    }
    if let Some(c) = &f.cpu {
        let groups: Vec<String> = c
            .groups
            .iter()
            .map(|g| format!("{} {:.3} ({})", g.name, g.cores, g.threads))
            .collect();
        out.push(format!(
            "server CPU, measured phase: {:.3} cores; by thread group (cores, threads): {}",
            c.cores,
            groups.join(", ")
        ));
        // The split shares the world's threads out by phase time: not without the phases.
        if f.server.is_some() {
            out.push(format!(
            "server CPU split: simulation {:.3} cores ({:.2} µs per player per tick), network {:.3} cores ({:.2} µs), other {:.3} cores: simulation {:.0}% / network {:.0}% (the world's threads shared out by phase time; IO threads are network)",
            c.simulation_cores,
            c.simulation_us_per_player_tick,
            c.network_cores,
            c.network_us_per_player_tick,
            c.other_cores,
            100.0 * c.simulation_share,
            100.0 * (1.0 - c.simulation_share),
        ));
        }
    }
    for p in &f.problems {
        out.push(format!("measured phase: {p}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(ticks: u64, means_ms: [f64; 6], dropped: u64, frames: u64) -> serde_json::Value {
        let mut mean = serde_json::Map::new();
        for (i, (name, _)) in PHASES.iter().enumerate() {
            mean.insert((*name).into(), (means_ms[i] / 1000.0).into());
        }
        serde_json::json!({
            "ticks": ticks, "players": 100, "mean_phase_seconds": mean,
            "dropped_snapshots": dropped, "frames_out": frames, "bytes_out": frames * 300,
            "commands": ticks * 10, "stale_commands": 0, "skipped_ticks": 0,
            "last_tick_seconds": 0.004, "last_lateness_seconds": 0.001,
            "last_ack_age_mean_ticks": 1.5, "last_ack_age_max_ticks": 3,
            "last_unacked_clients": 0,
        })
    }

    #[test]
    fn the_window_takes_differences_not_the_means_since_the_start() {
        // 100 ramp ticks at 1 ms of physics, then 100 ticks at 3 ms: the window's mean is 3.
        let first = world(100, [0.1, 1.0, 0.5, 0.2, 1.0, 1.0], 7, 1000);
        let last = world(200, [0.1, 2.0, 0.5, 0.2, 1.5, 1.0], 10, 21_000);
        let mut seen = WorldSeen::default();
        seen.observe(&first);
        seen.observe(&last);
        let s = server_figures(&first, &last, &seen);
        assert_eq!(s.ticks, 100);
        assert!(
            (s.phase_ms["physics"] - 3.0).abs() < 1e-9,
            "{:?}",
            s.phase_ms
        );
        assert!((s.phase_ms["snapshots"] - 2.0).abs() < 1e-9);
        assert!((s.phase_ms["receive"] - 0.1).abs() < 1e-9);
        assert_eq!(s.dropped_snapshots, 3);
        assert_eq!(s.snapshots_sent, 20_000);
        assert!((s.tick_ms_max_seen - 4.0).abs() < 1e-9);
        assert!((s.ack_age_mean_ticks - 1.5).abs() < 1e-9);
        assert_eq!(s.ack_age_max_ticks, 3);
        assert!((s.players_mean - 100.0).abs() < 1e-9);
        assert_eq!(s.phases_line(), "0.10 / 3.00 / 0.50 / 0.20 / 2.00 / 1.00");
        let (sim, net) = s.split_ms();
        assert!((sim - 3.7).abs() < 1e-9 && (net - 3.1).abs() < 1e-9);
    }

    #[test]
    fn the_cpu_is_split_by_thread_group_and_phase_time() {
        let reading = |cpu: [f64; 4], process: f64| ThreadsReading {
            process_cpu_secs: process,
            threads: [
                (1, ("metafi".to_owned(), cpu[0])),
                (2, ("metafi-io".to_owned(), cpu[1])),
                (3, ("metafi-world".to_owned(), cpu[2])),
                (4, ("metafi-world-0".to_owned(), cpu[3])),
            ]
            .into_iter()
            .collect(),
        };
        let first = reading([1.0, 2.0, 0.5, 1.0], 4.5);
        // 10 s: io 3 s, world 1 + 5 s, main 0.2 s, and 0.8 s of a thread that ended.
        let mut last = reading([1.2, 5.0, 1.5, 6.0], 14.5);
        last.threads.insert(5, ("metafi-world-1".into(), 0.0));
        let server = ServerFigures {
            phase_ms: PHASES
                .iter()
                .map(|(n, sim)| ((*n).to_owned(), if *sim { 1.0 } else { 0.5 }))
                .collect(),
            ..ServerFigures::default()
        };
        let c = cpu_split(&first, &last, 10.0, Some(&server), 1000.0, 20.0);
        assert!((c.cores - 1.0).abs() < 1e-9);
        assert!((c.world_cores - 0.6).abs() < 1e-9);
        assert!((c.io_cores - 0.3).abs() < 1e-9);
        assert!((c.other_cores - 0.1).abs() < 1e-9);
        let world = c
            .groups
            .iter()
            .find(|g| g.name == "metafi-world")
            .expect("world");
        assert_eq!(world.threads, 3);
        assert_eq!(c.groups[0].name, "metafi-world");
        let exited = c
            .groups
            .iter()
            .find(|g| g.name == "exited threads")
            .expect("exited");
        assert!((exited.cores - 0.08).abs() < 1e-9);
        // Simulation phases 3 ms of 4.5: two thirds of the world's 0.6 cores.
        assert!((c.simulation_cores - 0.4).abs() < 1e-9);
        assert!((c.network_cores - 0.5).abs() < 1e-9);
        assert!((c.simulation_share - 0.4 / 0.9).abs() < 1e-9);
        // 0.4 cores over 1000 players at 20 ticks/s: 20 µs per player per tick.
        assert!((c.simulation_us_per_player_tick - 20.0).abs() < 1e-9);
        assert!((c.network_us_per_player_tick - 25.0).abs() < 1e-9);
    }

    #[test]
    fn the_world_is_found_in_the_debug_answer() {
        let answer =
            serde_json::json!({ "worlds": { "a.n": { "ticks": 1 }, "b.n": { "ticks": 2 } } });
        assert_eq!(world_entry(&answer, "b.n").expect("b")["ticks"], 2);
        assert_eq!(world_entry(&answer, "x.n").expect("first")["ticks"], 1);
        assert!(world_entry(&serde_json::json!({ "worlds": {} }), "a.n").is_none());
        assert!(world_entry(&serde_json::json!({}), "a.n").is_none());
    }

    #[test]
    fn notes_name_the_split_and_the_phases() {
        let f = WindowFigures {
            from_secs: 12.0,
            to_secs: 29.0,
            bots: 500.0,
            tick_rate: 20.0,
            snapshots_per_bot_per_sec: 19.5,
            server: Some(ServerFigures::default()),
            cpu: Some(CpuFigures {
                simulation_share: 0.25,
                ..CpuFigures::default()
            }),
            problems: vec!["no readings".into()],
            ..WindowFigures::default()
        };
        let notes = notes(&f);
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(
            notes[0].contains("500.0 bots on average") && notes[0].contains("97.5%"),
            "{}",
            notes[0]
        );
        assert!(
            notes[3].contains("simulation 25% / network 75%"),
            "{}",
            notes[3]
        );
        assert!(notes[4].ends_with("no readings"));
    }
}

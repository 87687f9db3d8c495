//! `metafi-world-bench`: the world simulation's in-process benchmark.
//!
//! Runs metafi-world and two baselines built from the seed papers — the sequential QuakeWorld
//! loop and the region-lock parallel server — on the same maps and the same recorded bot
//! commands, with the same game rules, and reports tick times per phase, percentiles, snapshot
//! bandwidth and the determinism check. Must not depend on anything but `metafi-world` and
//! small utility crates. Key modules: `suite` (what runs), `sched_*` (the three schedulers),
//! `report` (Markdown and SVG).
//!
//! Worker threads are pinned one per processor of the process's set (`affinity`); `--no-pin`
//! leaves placement to the kernel.
//!
//! ```text
//! taskset -c 0   metafi-world-bench run --threads 1 --results DIR
//! taskset -c 0,1 metafi-world-bench run --threads 2 --results DIR
//! metafi-world-bench report --results DIR --out DIR
//! ```

mod affinity;
mod areatree;
mod measure;
mod replies;
mod report;
mod results;
mod sched_locks;
mod sched_ours;
mod sched_seq;
mod shared_player;
mod suite;
mod svg;
mod treeview;
mod workload;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand};
use metafi_world::WorldConfig;

use crate::affinity::Pinning;
use crate::results::{ResultsFile, RowKey, loadavg, process_cpu_seconds, summarise};
use crate::suite::{Sched, configs};
use crate::workload::Workload;

#[derive(Parser)]
#[command(
    name = "metafi-world-bench",
    about = "Benchmark the parallel world against the seed's servers"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the sweep with one thread count and write `DIR/results-t<N>.json`.
    Run {
        /// Worker threads for metafi-world's pool and the region-lock server.
        #[arg(long)]
        threads: usize,
        /// Directory for the results file.
        #[arg(long)]
        results: PathBuf,
        /// Small sizes and short runs, for smoke tests (< 30 s).
        #[arg(long)]
        quick: bool,
        /// Only run suites whose name contains this; their rows replace those in an existing
        /// results file, other rows are kept.
        #[arg(long)]
        only: Option<String>,
        /// Leave worker threads' placement to the kernel instead of pinning one per processor.
        #[arg(long)]
        no_pin: bool,
    },
    /// Run one configuration of metafi-world only, for profiling (`perf record`).
    Profile {
        #[arg(long, default_value_t = 10_000)]
        players: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[arg(long, default_value_t = 200)]
        ticks: u32,
        /// roam, hunt, camp, converge or mixed.
        #[arg(long, default_value = "mixed")]
        behaviour: String,
        /// Interest refresh period in ticks (1: every tick); the world's default if absent.
        #[arg(long)]
        refresh_ticks: Option<u32>,
        /// Write each measured tick (total and per-phase ns, bytes, entities) to this CSV file.
        #[arg(long)]
        samples: Option<PathBuf>,
        /// Leave worker threads' placement to the kernel instead of pinning one per processor.
        #[arg(long)]
        no_pin: bool,
    },
    /// Read every results-t*.json in DIR and write WORLD-BENCH.md and SVG charts to OUT.
    Report {
        #[arg(long)]
        results: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Run {
            threads,
            results,
            quick,
            only,
            no_pin,
        } => run(
            threads,
            &results,
            quick,
            only.as_deref(),
            &Pinning::new(!no_pin)?,
        ),
        Cmd::Report { results, out } => report::write(&results, &out),
        Cmd::Profile {
            players,
            threads,
            ticks,
            behaviour,
            refresh_ticks,
            samples,
            no_pin,
        } => profile(
            players,
            threads,
            ticks,
            &behaviour,
            refresh_ticks,
            samples,
            &Pinning::new(!no_pin)?,
        ),
    }
}

#[allow(clippy::print_stderr)] // progress for the person running the benchmark
fn run(
    threads: usize,
    dir: &std::path::Path,
    quick: bool,
    only: Option<&str>,
    pinning: &Pinning,
) -> anyhow::Result<()> {
    anyhow::ensure!(threads >= 1, "--threads must be at least 1");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pool = pinning.pool(threads)?;
    let mut file = ResultsFile {
        threads,
        cpu: cpu_model(),
        cores: cpu_count(),
        quick,
        pinned: pinning.enabled(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        load_before: loadavg(),
        load_after: String::new(),
        rows: Vec::new(),
    };
    let started = Instant::now();
    for cfg in configs(quick)
        .into_iter()
        .filter(|c| only.is_none_or(|o| c.suite.contains(o)))
    {
        let t = Instant::now();
        let work = Workload::build(cfg.map, cfg.players, cfg.behaviour, &pool)?;
        let side = work.map.bounds().max.x - work.map.bounds().min.x;
        eprintln!(
            "[{:>6.1}s] {} {} {} players={} (workload {:.1}s)",
            started.elapsed().as_secs_f64(),
            cfg.suite,
            cfg.map.name(),
            cfg.behaviour.name(),
            cfg.players,
            t.elapsed().as_secs_f64()
        );
        for &sched in cfg.scheds {
            if sched == Sched::Sequential && threads != 1 {
                continue;
            }
            let (wall, cpu) = (Instant::now(), process_cpu_seconds());
            let outcome = match sched {
                Sched::Ours => sched_ours::run(&work, &pool, &cfg.plan, WorldConfig::default())?,
                Sched::Sequential => {
                    let _pinned = pinning.pin_scoped(0)?;
                    sched_seq::run(&work, &cfg.plan)?
                }
                Sched::RegionLocks => sched_locks::run(&work, threads, &cfg.plan, pinning)?,
            };
            let used = if sched == Sched::Sequential {
                1
            } else {
                threads
            };
            let key = RowKey {
                suite: cfg.suite,
                map: cfg.map.name(),
                map_side: side,
                behaviour: cfg.behaviour.name(),
                scheduler: sched.name(),
                threads: used,
            };
            let mut row = summarise(key, &outcome);
            if let (Some(a), Some(b)) = (cpu, process_cpu_seconds()) {
                row.cpu_share = (b - a) / (wall.elapsed().as_secs_f64() * used as f64);
            }
            eprintln!(
                "          {:<13} t={} ticks={:<4} p50={:>8.2}ms p99={:>8.2}ms max={:>8.2}ms phases={:?} B/pl/tick={:.0} cpu={:.2}",
                row.scheduler,
                row.threads,
                row.ticks,
                row.p50_ms,
                row.p99_ms,
                row.max_ms,
                row.phase_mean_ms.map(|v| (v * 100.0).round() / 100.0),
                row.bytes_per_player_tick,
                row.cpu_share
            );
            file.rows.push(row);
        }
    }
    file.load_after = loadavg();
    let path = dir.join(format!("results-t{threads}.json"));
    if let Some(only) = only
        && let Ok(old) = ResultsFile::read(&path)
    {
        // A partial rerun replaces only the suites it ran; the rest of the file is kept.
        let kept: Vec<_> = old
            .rows
            .into_iter()
            .filter(|r| !r.suite.contains(only))
            .collect();
        file.rows.splice(0..0, kept);
        file.command = format!("{} ; {}", old.command, file.command);
        file.load_before = format!("{} ; {}", old.load_before, file.load_before);
        file.load_after = format!("{} ; {}", old.load_after, file.load_after);
    }
    file.write(&path)?;
    eprintln!(
        "wrote {} after {:.1}s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[allow(clippy::print_stderr)] // the profile's one line of output
fn profile(
    players: usize,
    threads: usize,
    ticks: u32,
    behaviour: &str,
    refresh_ticks: Option<u32>,
    samples: Option<PathBuf>,
    pinning: &Pinning,
) -> anyhow::Result<()> {
    let mut config = WorldConfig::default();
    if let Some(n) = refresh_ticks {
        config.interest.refresh_ticks = n;
    }
    let behaviour = metafi_world::bots::Behaviour::parse(behaviour).context("unknown behaviour")?;
    let pool = pinning.pool(threads)?;
    let work = Workload::build(workload::MapKind::Large, players, behaviour, &pool)?;
    let plan = measure::RunPlan {
        warmup: 5,
        min_ticks: ticks,
        max_ticks: ticks,
        max_wall: std::time::Duration::ZERO,
    };
    let (started, cpu0) = (Instant::now(), process_cpu_seconds());
    let out = sched_ours::run(&work, &pool, &plan, config)?;
    let wall = started.elapsed().as_secs_f64();
    // CPU time is what the tick cost, whatever else ran on the machine; the share says how
    // much of the wall time the process was actually running.
    let cpu = cpu0.zip(process_cpu_seconds()).map(|(a, b)| b - a);
    let key = RowKey {
        suite: "profile",
        map: "large",
        map_side: 0.0,
        behaviour: behaviour.name(),
        scheduler: "metafi-world",
        threads,
    };
    if let Some(path) = samples {
        write_samples(&path, &out.samples)?;
    }
    let row = summarise(key, &out);
    let mean = row.phase_mean_ms.iter().sum::<f64>();
    let all_ticks = f64::from(plan.warmup + ticks);
    eprintln!(
        "{players} players, {threads} threads, {} ticks in {wall:.1}s: p50 {:.2} ms, p99 {:.2} ms, mean {mean:.2} ms, phases {:?}, cpu {:.2} ms/tick (share {:.2})",
        row.ticks,
        row.p50_ms,
        row.p99_ms,
        row.phase_mean_ms.map(|v| (v * 100.0).round() / 100.0),
        cpu.map_or(f64::NAN, |c| 1000.0 * c / all_ticks),
        cpu.map_or(f64::NAN, |c| c / (wall * threads as f64)),
    );
    Ok(())
}

/// One CSV line per measured tick, for looking at the distribution behind p50/p99.
fn write_samples(path: &std::path::Path, samples: &[measure::TickSample]) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let mut csv = format!(
        "tick,total_ns,{}_ns,bytes,entities,commands,hits,kills,launches,projectiles\n",
        measure::PHASES.join("_ns,")
    );
    for (i, s) in samples.iter().enumerate() {
        let [a, b, c, d] = s.phase_ns;
        let w = &s.work;
        let _ = writeln!(
            csv,
            "{i},{},{a},{b},{c},{d},{},{},{},{},{},{},{}",
            s.total_ns, s.bytes, s.entities, w.commands, w.hits, w.kills, w.launches, w.projectiles
        );
    }
    std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))
}

/// Processors on the machine (not just the ones this process is pinned to).
fn cpu_count() -> usize {
    std::fs::read_to_string("/proc/cpuinfo").map_or(1, |s| {
        s.lines()
            .filter(|l| l.starts_with("processor"))
            .count()
            .max(1)
    })
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

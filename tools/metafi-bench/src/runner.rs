//! Runs a workload under a load model: unmeasured setup, then users started on schedule (or all
//! at once in a closed loop), a sampler that feeds the timeline and the progress line, and a
//! hard stop at the deadline or on Ctrl-C, after which partial results are still reported.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::phases::{ArrivalSchedule, LoadModel};
use crate::procfs::{self, ServerUsage};
use crate::servers::Servers;
use crate::stats::{SeriesKind, Snapshot, Stats};
use crate::units::{ms, thousands};
use crate::workloads::{Ctx, Workload};

/// How a run is driven.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub load: LoadModel,
    /// Most users alive at once in arrival mode; arrivals beyond are skipped (and counted as
    /// errors) so a slow server cannot make the tool's memory grow without bound.
    pub max_users: u64,
    /// Progress line period when stderr is not a terminal (on a terminal: every second).
    pub progress_every: Duration,
    /// The servers' process ids, to report their CPU time and peak memory (Linux `/proc`),
    /// summed over the processes; empty: not reported.
    pub server_pids: Vec<u32>,
}

/// What a finished (or interrupted) run hands to the report.
#[derive(Debug)]
pub struct Outcome {
    pub snapshot: Snapshot,
    pub duration: Duration,
    pub interrupted: bool,
    pub notes: Vec<String>,
    pub server: Option<ServerUsage>,
}

/// Runs `workload` against the servers (users spread over them round-robin); stops on its own
/// at the end of the load model.
pub async fn run<W: Workload>(
    workload: Arc<W>,
    servers: Servers,
    options: RunOptions,
    interrupt: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<Outcome> {
    let mut interrupt = std::pin::pin!(interrupt);
    progress_line(&format!("{}: setting up…", workload.name()), true);
    let mut notes = tokio::select! {
        notes = workload.prepare(&servers) => notes?,
        _ = &mut interrupt => anyhow::bail!("interrupted during setup; nothing was measured"),
    };

    let series = workload.series();
    let main_series = series
        .iter()
        .find(|(_, kind)| *kind == SeriesKind::Request)
        .or(series.first())
        .map(|(name, _)| *name);
    // Every server's client counts into one set of network counters.
    let stats = Stats::new(
        &series,
        servers.client(0).endpoint().connector().counters().clone(),
    )
    .with_servers(servers.urls());
    let total = options.load.total();
    let start = stats.start();
    let ctx = Arc::new(Ctx {
        stats,
        servers: Arc::new(servers),
        deadline: start + total,
        last_phase: start + options.load.last_phase_start(),
        stop: CancellationToken::new(),
    });
    ctx.stats.sample();
    let probe = if options.server_pids.is_empty() {
        None
    } else {
        match ServerProbe::start(&options.server_pids) {
            Ok(probe) => Some(Arc::new(probe)),
            Err((pid, e)) => {
                tracing::warn!(pid, error = %e, "cannot read the server's /proc entry; not reporting its CPU and memory");
                None
            }
        }
    };

    let sampler = tokio::spawn(sample_every_second(
        ctx.clone(),
        main_series,
        total,
        options.progress_every,
        probe.clone(),
    ));
    let watcher = tokio::spawn(workload.clone().watch(ctx.clone()));
    let mut users = JoinSet::new();
    let mut skipped = 0u64;
    let interrupted = match &options.load {
        LoadModel::Closed { clients, .. } => {
            for index in 0..*clients {
                spawn_user(&mut users, &workload, &ctx, index, true);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(ctx.deadline.into()) => false,
                _ = &mut interrupt => true,
            }
        }
        LoadModel::Arrival(phases) => {
            let schedule = ArrivalSchedule::new(phases.clone());
            let arrivals = async {
                let mut k = 0u64;
                while let Some(at) = schedule.arrival(k) {
                    tokio::time::sleep_until((start + at).into()).await;
                    while users.try_join_next().is_some() {}
                    if ctx.stats.active_users() >= options.max_users as i64 {
                        skipped += 1;
                        ctx.stats.error("arrival skipped (--max-users alive)");
                    } else {
                        spawn_user(&mut users, &workload, &ctx, k, false);
                    }
                    k += 1;
                }
                // every arrival is out: finish when the users do, or at the deadline
                while users.join_next().await.is_some() {}
            };
            tokio::select! {
                _ = arrivals => false,
                _ = tokio::time::sleep_until(ctx.deadline.into()) => false,
                _ = &mut interrupt => true,
            }
        }
    };
    let wall = start.elapsed();
    let duration = wall.min(total);
    let server = probe.and_then(|probe| probe.finish(wall));
    // The watcher's last reading is taken before the deadline; give it a moment to finish
    // (not after a Ctrl-C).
    let abort = watcher.abort_handle();
    if interrupted || tokio::time::timeout(WATCH_GRACE, watcher).await.is_err() {
        abort.abort();
    }
    ctx.stats.close();
    ctx.stop.cancel();
    sampler.abort();
    users.shutdown().await;
    if skipped > 0 {
        notes.push(format!(
            "{} arrivals skipped because --max-users ({}) were alive",
            thousands(skipped),
            thousands(options.max_users)
        ));
    }
    progress_line("", false);
    Ok(Outcome {
        snapshot: ctx.stats.snapshot(),
        duration,
        interrupted,
        notes,
        server,
    })
}

/// How long the runner waits after the deadline for a workload's watcher to finish.
const WATCH_GRACE: Duration = Duration::from_secs(3);

/// The servers' counters at the start, and their peak memory since (summed over the
/// processes at each sample).
#[derive(Debug)]
struct ServerProbe {
    pids: Vec<u32>,
    first_cpu_secs: f64,
    peak_rss: AtomicU64,
}

impl ServerProbe {
    fn start(pids: &[u32]) -> Result<ServerProbe, (u32, std::io::Error)> {
        let first = read_all(pids)?;
        Ok(ServerProbe {
            pids: pids.to_vec(),
            first_cpu_secs: first.cpu_secs,
            peak_rss: AtomicU64::new(first.rss_bytes),
        })
    }

    fn observe(&self) {
        if let Ok(now) = read_all(&self.pids) {
            self.peak_rss.fetch_max(now.rss_bytes, Ordering::Relaxed);
        }
    }

    fn finish(&self, wall: Duration) -> Option<ServerUsage> {
        let last = read_all(&self.pids).ok()?;
        let peak = self.peak_rss.load(Ordering::Relaxed).max(last.rss_bytes);
        let cpu_secs = (last.cpu_secs - self.first_cpu_secs).max(0.0);
        Some(ServerUsage {
            pid: self.pids[0],
            processes: self.pids.len() as u32,
            cpu_secs,
            cores_used: cpu_secs / wall.as_secs_f64().max(f64::EPSILON),
            peak_rss_bytes: peak,
        })
    }
}

/// CPU time and resident memory summed over `pids`; the first pid that cannot be read fails it.
fn read_all(pids: &[u32]) -> Result<procfs::ProcReading, (u32, std::io::Error)> {
    let mut sum = procfs::ProcReading {
        cpu_secs: 0.0,
        rss_bytes: 0,
    };
    for &pid in pids {
        let reading = procfs::read(pid).map_err(|e| (pid, e))?;
        sum.cpu_secs += reading.cpu_secs;
        sum.rss_bytes += reading.rss_bytes;
    }
    Ok(sum)
}

fn spawn_user<W: Workload>(
    users: &mut JoinSet<()>,
    workload: &Arc<W>,
    ctx: &Arc<Ctx>,
    index: u64,
    repeat: bool,
) {
    let user = workload.clone().user(ctx.clone(), index, repeat);
    let ctx = ctx.clone();
    let server = ctx.servers.of_user(index);
    users.spawn(Servers::run_user(server, async move {
        ctx.stats.user_started();
        user.await;
        ctx.stats.user_finished();
    }));
}

/// Samples the gauges once a second (the report's timeline) and prints progress.
async fn sample_every_second(
    ctx: Arc<Ctx>,
    main_series: Option<&'static str>,
    total: Duration,
    progress_every: Duration,
    probe: Option<Arc<ServerProbe>>,
) {
    let start = ctx.stats.start();
    let terminal = std::io::stderr().is_terminal();
    let mut last_print = Instant::now();
    let mut second = 1u64;
    loop {
        tokio::time::sleep_until((start + Duration::from_secs(second)).into()).await;
        let sample = ctx.stats.sample();
        if let Some(probe) = &probe {
            probe.observe();
        }
        let elapsed = second as usize;
        second += 1;
        if !terminal && last_print.elapsed() + Duration::from_millis(500) < progress_every {
            continue;
        }
        last_print = Instant::now();
        let mut line = format!("[{:>6.0} s / {:.0} s]", sample.at, total.as_secs_f64());
        if let Some(name) = main_series
            && let Some(id) = ctx.stats.series(name)
        {
            let bucket = ctx.stats.count_in(id, elapsed.saturating_sub(1));
            let (p50, p99) = if bucket.count > 0 {
                (
                    bucket.histogram.value_at_quantile(0.5) as f64 / 1000.0,
                    bucket.histogram.value_at_quantile(0.99) as f64 / 1000.0,
                )
            } else {
                (0.0, 0.0)
            };
            line.push_str(&format!(
                " {name} {}/s  p50 {}  p99 {}",
                thousands(bucket.count),
                ms(p50),
                ms(p99)
            ));
        }
        line.push_str(&format!(
            "  errors {}  connected {}  users {}",
            thousands(sample.errors),
            thousands(sample.connected.max(0) as u64),
            thousands(sample.active_users.max(0) as u64)
        ));
        progress_line(&line, terminal);
    }
}

/// On a terminal the line is rewritten in place; otherwise each call prints a line.
#[allow(clippy::print_stderr)] // the live progress line is the tool's user-facing output
fn progress_line(text: &str, keep: bool) {
    let mut err = std::io::stderr().lock();
    if std::io::stderr().is_terminal() {
        let _ = write!(err, "\r\x1b[2K{text}");
        if !keep && !text.is_empty() {
            let _ = writeln!(err);
        }
    } else if !text.is_empty() {
        let _ = writeln!(err, "{text}");
    }
    let _ = err.flush();
}

//! The Markdown report and its charts, from the `results-t*.json` files of one or more runs.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use crate::results::{ResultRow, ResultsFile};
use crate::svg::{Guide, Series, line_chart, stacked_bars};

const OURS: &str = "metafi-world";
const SEQ: &str = "sequential";
const LOCKS: &str = "region-locks";
/// Tick budget at 20 ticks/s, and the target (half of it).
const BUDGET_MS: f64 = 50.0;
const TARGET_MS: f64 = 25.0;
/// Smallest world in the linearity fit: below it the tick's fixed costs dominate.
const LINEAR_FROM: usize = 1000;
/// Largest fitted exponent of tick time in players that counts as linear (noise allowance).
const LINEAR_MAX_EXPONENT: f64 = 1.10;

/// Reads every results file in `results` and writes `WORLD-BENCH.md` and charts to `out`.
pub fn write(results: &Path, out: &Path) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(results).with_context(|| format!("reading {}", results.display()))?
    {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("results-t") && name.ends_with(".json") {
            files.push(
                ResultsFile::read(&path).with_context(|| format!("parsing {}", path.display()))?,
            );
        }
    }
    anyhow::ensure!(
        !files.is_empty(),
        "no results-t*.json in {}",
        results.display()
    );
    files.sort_by_key(|f| f.threads);
    std::fs::create_dir_all(out)?;
    let rows: Vec<ResultRow> = files.iter().flat_map(|f| f.rows.iter().cloned()).collect();
    let r = Report { rows: &rows };
    let mut md = String::new();
    r.header(&mut md, &files);
    r.targets(&mut md);
    r.scaling(&mut md, out)?;
    r.suite_table(
        &mut md,
        "scale-arena",
        "Small dense arena (3072 × 3072, hunt)",
        "players",
        out,
        "world-arena.svg",
    )?;
    r.behaviours(&mut md);
    r.bandwidth(&mut md);
    r.determinism(&mut md);
    r.locks(&mut md);
    std::fs::write(out.join("WORLD-BENCH.md"), md)?;
    Ok(())
}

struct Report<'a> {
    rows: &'a [ResultRow],
}

impl Report<'_> {
    fn find(
        &self,
        suite: &str,
        behaviour: Option<&str>,
        players: usize,
        sched: &str,
        threads: usize,
    ) -> Option<&ResultRow> {
        self.rows.iter().find(|r| {
            r.suite == suite
                && behaviour.is_none_or(|b| r.behaviour == b)
                && r.players == players
                && r.scheduler == sched
                && r.threads == threads
        })
    }

    fn players(&self, suite: &str) -> Vec<usize> {
        let mut p: Vec<usize> = self
            .rows
            .iter()
            .filter(|r| r.suite == suite)
            .map(|r| r.players)
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    fn header(&self, md: &mut String, files: &[ResultsFile]) {
        let f = &files[0];
        let _ = writeln!(md, "# metafi-world benchmark results\n");
        let _ = writeln!(
            md,
            "Machine: **{}**, {} cores. Each run is one process:",
            f.cpu, f.cores
        );
        let _ = writeln!(md);
        for f in files {
            let _ = writeln!(
                md,
                "- {} thread(s){}, worker threads {}: `{}`",
                f.threads,
                if f.quick { " (quick)" } else { "" },
                if f.pinned {
                    "pinned one per processor"
                } else {
                    "placed by the kernel"
                },
                f.command
            );
        }
        let _ = writeln!(
            md,
            "\nTick = 50 ms of game time (20 ticks/s). Times are wall-clock per tick, measured in-process after \
             warm-up; p50/p99/max over the measured ticks. `sequential` always runs on one thread.\n"
        );
    }

    fn targets(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "## Targets\n\n| target | measured | met |\n|---|---|---|"
        );
        let target_players = self.players("target").last().copied().unwrap_or(0);
        let t2 = self.find("target", None, target_players, OURS, 2);
        let t1 = self.find("target", None, target_players, OURS, 1);
        match t2 {
            Some(r) => {
                let _ = writeln!(
                    md,
                    "| {target_players} players, 2 threads, p99 ≤ {TARGET_MS} ms | p99 **{:.1} ms** (p50 {:.1}, max {:.1}, {} ticks, CPU share {:.2}) | {} |",
                    r.p99_ms,
                    r.p50_ms,
                    r.max_ms,
                    r.ticks,
                    r.cpu_share,
                    yes(r.p99_ms <= TARGET_MS)
                );
            }
            None => {
                let _ = writeln!(
                    md,
                    "| {target_players} players, 2 threads, p99 ≤ {TARGET_MS} ms | not run | – |"
                );
            }
        }
        if let (Some(a), Some(b)) = (t1, t2) {
            let s = a.mean_ms / b.mean_ms;
            let _ = writeln!(
                md,
                "| speedup 1 → 2 threads ≥ 1.8× ({target_players} players, mean tick) | **{s:.2}×** ({:.1} → {:.1} ms; p50 {:.2}×) | {} |",
                a.mean_ms,
                b.mean_ms,
                a.p50_ms / b.p50_ms,
                yes(s >= 1.8)
            );
        }
        let sizes = self.players("scale-large");
        for threads in [1, 2] {
            let per: Vec<(usize, f64)> = sizes
                .iter()
                .filter_map(|&n| {
                    self.find("scale-large", None, n, OURS, threads)
                        .map(|r| (n, r.mean_ms / n as f64 * 1000.0))
                })
                .collect();
            let fitted: Vec<(usize, f64)> =
                per.iter().copied().filter(|p| p.0 >= LINEAR_FROM).collect();
            if let Some(slope) = log_log_slope(&fitted) {
                let list: Vec<String> = per.iter().map(|(n, us)| format!("{n}: {us:.2}")).collect();
                let _ = writeln!(
                    md,
                    "| tick time no worse than linear in players at fixed density ({threads} thread{}) | µs per player per tick: {}; tick time ∝ players^**{:.2}** from {LINEAR_FROM} players | {} |",
                    if threads > 1 { "s" } else { "" },
                    list.join(", "),
                    1.0 + slope,
                    yes(1.0 + slope <= LINEAR_MAX_EXPONENT)
                );
            }
        }
        let _ = writeln!(
            md,
            "\n(the exponent is a least-squares fit of log tick time against log players over every size from {LINEAR_FROM} up: 1 is linear; we allow up to {LINEAR_MAX_EXPONENT} for noise. A fit over all sizes, rather than the ratio of two of them, is not swung by one noisy row.)\n"
        );
    }

    fn scaling(&self, md: &mut String, out: &Path) -> anyhow::Result<()> {
        let _ = writeln!(
            md,
            "## Scaling with players: large map at fixed density (512 × 512 units² per player, mixed behaviours)\n"
        );
        self.table(md, "scale-large", None);
        let sizes = self.players("scale-large");
        let mut series = Vec::new();
        for (sched, threads, dashed) in [
            (OURS, 2, false),
            (OURS, 1, true),
            (LOCKS, 2, false),
            (LOCKS, 1, true),
            (SEQ, 1, true),
        ] {
            let points: Vec<(f64, f64)> = sizes
                .iter()
                .filter_map(|&n| {
                    self.find("scale-large", None, n, sched, threads)
                        .map(|r| (n as f64, r.p99_ms.max(0.01)))
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{sched} ×{threads}"),
                    points,
                    dashed,
                });
            }
        }
        let guides = [
            Guide {
                name: "tick budget 50 ms".into(),
                y: BUDGET_MS,
            },
            Guide {
                name: "target 25 ms".into(),
                y: TARGET_MS,
            },
        ];
        let svg = line_chart(
            "p99 tick time, large map, fixed density",
            "players",
            "p99 tick time (ms)",
            &series,
            &guides,
        );
        std::fs::write(out.join("world-scaling.svg"), svg)?;
        let _ = writeln!(md, "![p99 tick time vs players](world-scaling.svg)\n");

        let _ = writeln!(
            md,
            "### Where the time goes (metafi-world, mean ms per phase)\n"
        );
        let _ = writeln!(
            md,
            "| players | threads | physics | commands | merge | snapshots | total |\n|---|---|---|---|---|---|---|"
        );
        let mut cats = Vec::new();
        let mut layers: Vec<(String, Vec<f64>)> = ["physics", "commands", "merge", "snapshots"]
            .iter()
            .map(|n| (n.to_string(), Vec::new()))
            .collect();
        for &n in &sizes {
            for threads in [1, 2] {
                if let Some(r) = self.find("scale-large", None, n, OURS, threads) {
                    let p = r.phase_mean_ms;
                    let _ = writeln!(
                        md,
                        "| {n} | {threads} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                        p[0], p[1], p[2], p[3], r.mean_ms
                    );
                    if threads == 2 && n >= 1000 {
                        cats.push(format!("{}k", n as f64 / 1000.0));
                        for (k, l) in layers.iter_mut().enumerate() {
                            l.1.push(p[k]);
                        }
                    }
                }
            }
        }
        if !cats.is_empty() {
            let svg = stacked_bars(
                "metafi-world, 2 threads: mean ms per phase",
                "ms per tick",
                &cats,
                &layers,
            );
            std::fs::write(out.join("world-phases.svg"), svg)?;
            let _ = writeln!(md, "\n![phases](world-phases.svg)\n");
        }
        Ok(())
    }

    /// p50 / p99 per scheduler and thread count, and our speedups.
    fn table(&self, md: &mut String, suite: &str, behaviour: Option<&str>) {
        let _ = writeln!(
            md,
            "| players | ours ×1 p50 / p99 | ours ×2 p50 / p99 | sequential p50 / p99 | region-locks ×1 | region-locks ×2 | ours ×2 vs sequential | ours ×2 vs region-locks ×2 | ours ×1 vs sequential |\n|---|---|---|---|---|---|---|---|---|"
        );
        let cell = |r: Option<&ResultRow>| {
            r.map_or("–".to_string(), |r| {
                format!("{:.2} / {:.2}", r.p50_ms, r.p99_ms)
            })
        };
        let speed = |a: Option<&ResultRow>, b: Option<&ResultRow>| match (a, b) {
            (Some(a), Some(b)) if b.mean_ms > 0.0 => format!("{:.1}×", a.mean_ms / b.mean_ms),
            _ => "–".into(),
        };
        for n in self.players(suite) {
            let o1 = self.find(suite, behaviour, n, OURS, 1);
            let o2 = self.find(suite, behaviour, n, OURS, 2);
            let s = self.find(suite, behaviour, n, SEQ, 1);
            let l1 = self.find(suite, behaviour, n, LOCKS, 1);
            let l2 = self.find(suite, behaviour, n, LOCKS, 2);
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(o1),
                cell(o2),
                cell(s),
                cell(l1),
                cell(l2),
                speed(s, o2),
                speed(l2, o2),
                speed(s, o1)
            );
        }
        let _ = writeln!(
            md,
            "\nSpeedups compare mean tick times on the same inputs (higher is better for us).\n"
        );
        let shares: Vec<String> = self
            .rows
            .iter()
            .filter(|r| r.suite == suite && behaviour.is_none_or(|b| r.behaviour == b))
            .filter(|r| r.cpu_share > 0.0 && r.cpu_share < 0.9)
            .map(|r| {
                format!(
                    "{} ×{} at {} players: {:.2}",
                    r.scheduler, r.threads, r.players, r.cpu_share
                )
            })
            .collect();
        if !shares.is_empty() {
            let _ = writeln!(
                md,
                "Runs that got less than 90% of the CPU they asked for (the machine is shared, so \
                 their times are pessimistic): {}.\n",
                shares.join("; ")
            );
        }
    }

    fn suite_table(
        &self,
        md: &mut String,
        suite: &str,
        title: &str,
        _x: &str,
        out: &Path,
        chart: &str,
    ) -> anyhow::Result<()> {
        if self.players(suite).is_empty() {
            return Ok(());
        }
        let _ = writeln!(md, "## {title}\n");
        self.table(md, suite, None);
        let mut series = Vec::new();
        for (sched, threads, dashed) in [
            (OURS, 2, false),
            (OURS, 1, true),
            (LOCKS, 2, false),
            (SEQ, 1, true),
        ] {
            let points: Vec<(f64, f64)> = self
                .players(suite)
                .iter()
                .filter_map(|&n| {
                    self.find(suite, None, n, sched, threads)
                        .map(|r| (n as f64, r.p99_ms.max(0.01)))
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{sched} ×{threads}"),
                    points,
                    dashed,
                });
            }
        }
        std::fs::write(
            out.join(chart),
            line_chart(title, "players", "p99 tick time (ms)", &series, &[]),
        )?;
        let _ = writeln!(md, "![{title}]({chart})\n");
        Ok(())
    }

    fn behaviours(&self, md: &mut String) {
        let rows: Vec<&ResultRow> = self
            .rows
            .iter()
            .filter(|r| r.suite == "behaviours")
            .collect();
        let Some(n) = rows.first().map(|r| r.players) else {
            return;
        };
        let _ = writeln!(md, "## Behaviours ({n} players, large map)\n");
        let _ = writeln!(
            md,
            "| behaviour | ours ×1 p50 / p99 | ours ×2 p50 / p99 | sequential p50 / p99 | region-locks ×2 p50 / p99 | region-locks ×2 lock / barrier wait | hits per tick |\n|---|---|---|---|---|---|---|"
        );
        let mut names: Vec<&str> = Vec::new();
        for r in &rows {
            if !names.contains(&r.behaviour.as_str()) {
                names.push(&r.behaviour);
            }
        }
        for b in names {
            let cell = |s, t| {
                self.find("behaviours", Some(b), n, s, t)
                    .map_or("–".into(), |r| {
                        format!("{:.2} / {:.2}", r.p50_ms, r.p99_ms)
                    })
            };
            let waits = self
                .find("behaviours", Some(b), n, LOCKS, 2)
                .map_or("–".into(), |r| {
                    format!("{:.1}% / {:.1}%", r.lock_wait_pct, r.barrier_wait_pct)
                });
            let hits = self
                .find("behaviours", Some(b), n, OURS, 2)
                .map_or("–".into(), |r| format!("{:.0}", r.hits_per_tick));
            let _ = writeln!(
                md,
                "| {b} | {} | {} | {} | {} | {waits} | {hits} |",
                cell(OURS, 1),
                cell(OURS, 2),
                cell(SEQ, 1),
                cell(LOCKS, 2)
            );
        }
        let _ = writeln!(md);
    }

    fn bandwidth(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "## Snapshot bandwidth (metafi-world, 2 threads)\n\n| suite | behaviour | players | bytes per player per tick | kbit/s per player at 20 Hz | entities per snapshot |\n|---|---|---|---|---|---|"
        );
        for r in self
            .rows
            .iter()
            .filter(|r| r.scheduler == OURS && r.threads == 2)
        {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.0} | {:.1} | {:.1} |",
                r.suite,
                r.behaviour,
                r.players,
                r.bytes_per_player_tick,
                r.bytes_per_player_tick * 20.0 * 8.0 / 1000.0,
                r.entities_per_snapshot
            );
        }
        let _ = writeln!(md);
    }

    fn determinism(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "## Determinism: state-hash digests of metafi-world, 1 vs 2 threads\n\nEach run folds the state hash of every tick of its first ticks into a digest; the same inputs must give the same digest whatever the thread count.\n\n| suite | behaviour | players | 1 thread | 2 threads | equal |\n|---|---|---|---|---|---|"
        );
        for a in self
            .rows
            .iter()
            .filter(|r| r.scheduler == OURS && r.threads == 1)
        {
            let b = self.rows.iter().find(|r| {
                r.scheduler == OURS
                    && r.threads == 2
                    && r.suite == a.suite
                    && r.behaviour == a.behaviour
                    && r.players == a.players
            });
            let (da, db) = (
                a.hash_digest.clone().unwrap_or_default(),
                b.and_then(|b| b.hash_digest.clone()).unwrap_or_default(),
            );
            let _ = writeln!(
                md,
                "| {} | {} | {} | `{da}` | `{db}` | {} |",
                a.suite,
                a.behaviour,
                a.players,
                if b.is_none() {
                    "–"
                } else if da == db {
                    "yes"
                } else {
                    "**NO**"
                }
            );
        }
        let _ = writeln!(md);
    }

    fn locks(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "## The seed's region-lock server: where its threads wait (share of thread time)\n\n| suite | behaviour | players | threads | blocked on locks | waiting at barriers |\n|---|---|---|---|---|---|"
        );
        for r in self
            .rows
            .iter()
            .filter(|r| r.scheduler == LOCKS && r.threads > 1)
        {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.1}% | {:.1}% |",
                r.suite, r.behaviour, r.players, r.threads, r.lock_wait_pct, r.barrier_wait_pct
            );
        }
        let _ = writeln!(md);
    }
}

fn yes(ok: bool) -> &'static str {
    if ok { "yes" } else { "**no**" }
}

/// Least-squares slope of log(µs per player) against log(players): the tick time grows as
/// players^(1 + slope). `None` for fewer than two sizes.
fn log_log_slope(per: &[(usize, f64)]) -> Option<f64> {
    if per.len() < 2 {
        return None;
    }
    let pts: Vec<(f64, f64)> = per
        .iter()
        .map(|&(n, us)| ((n as f64).ln(), us.ln()))
        .collect();
    let k = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / k,
        pts.iter().map(|p| p.1).sum::<f64>() / k,
    );
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linearity_fit_recovers_the_growth_exponent_and_ignores_one_outlier_more_than_a_ratio() {
        let flat = [(1000, 2.0), (5000, 2.0), (20000, 2.0)];
        assert!(log_log_slope(&flat).is_some_and(|s| s.abs() < 1e-9));
        // µs per player ∝ sqrt(players): tick time ∝ players^1.5.
        let grows: Vec<(usize, f64)> = [1000usize, 2500, 5000, 10000, 20000]
            .iter()
            .map(|&n| (n, (n as f64).sqrt()))
            .collect();
        assert!(log_log_slope(&grows).is_some_and(|s| (s - 0.5).abs() < 1e-9));
        // A real sweep's fast first row put the old two-point ratio at 1.20; the fit stays flat.
        let noisy = [
            (1000, 1.57),
            (2500, 1.99),
            (5000, 1.83),
            (10000, 1.89),
            (20000, 1.88),
        ];
        assert!(log_log_slope(&noisy).is_some_and(|s| 1.0 + s <= LINEAR_MAX_EXPONENT));
        assert_eq!(log_log_slope(&flat[..1]), None);
    }
}

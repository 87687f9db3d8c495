//! Charts of a bot-count sweep of the `world` workload (`metafi-bench world-charts`, written by
//! scripts/bench_world.sh): the measured-phase figures of each run's `report.json` against the
//! number of bots, like the seed's figures — response rate, command → snapshot latency, the
//! server's CPU split and its tick phases.

use super::svg::{Line, xy_chart};
use crate::workloads::world_window::{CpuFigures, WindowFigures};

/// One run of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldRun {
    /// Bots the run started (its count in the sweep).
    pub bots: f64,
    pub figures: WindowFigures,
}

/// The run in a `report.json` of `metafi-bench world`; `None` without measured-phase figures.
pub fn world_run(report: &serde_json::Value) -> Option<WorldRun> {
    let figures: WindowFigures = serde_json::from_value(report.get("figures")?.clone()).ok()?;
    let bots = report["users_started"]
        .as_f64()
        .filter(|b| *b > 0.0)
        .unwrap_or(figures.bots);
    Some(WorldRun { bots, figures })
}

/// `(file name, SVG)` of each chart the runs have data for.
pub fn world_sweep_charts(runs: &[WorldRun], label: &str) -> Vec<(String, String)> {
    let mut runs = runs.to_vec();
    runs.sort_by(|a, b| a.bots.total_cmp(&b.bots));
    if runs.is_empty() {
        return Vec::new();
    }
    let title = |what: &str| {
        if label.is_empty() {
            format!("world: {what}")
        } else {
            format!("world: {what} ({label})")
        }
    };
    let xs: Vec<f64> = runs.iter().map(|r| r.bots).collect();
    let line = |name: &str, dashed: bool, f: &dyn Fn(&WorldRun) -> f64| Line {
        name: name.to_owned(),
        values: runs.iter().map(f).collect(),
        dashed,
    };
    let mut out = Vec::new();
    out.push((
        "world-response-rate.svg".to_owned(),
        xy_chart(
            &title("snapshots per bot per second"),
            "bots",
            "per second",
            &xs,
            &[
                line("received", false, &|r| r.figures.snapshots_per_bot_per_sec),
                line("tick rate", true, &|r| r.figures.tick_rate),
                line("95 % of it", true, &|r| r.figures.tick_rate * 0.95),
            ],
        ),
    ));
    out.push((
        "world-command-latency.svg".to_owned(),
        xy_chart(
            &title("command → snapshot"),
            "bots",
            "ms",
            &xs,
            &[
                line("p50", true, &|r| r.figures.command_p50_ms),
                line("p99", false, &|r| r.figures.command_p99_ms),
                line("goal: 2 ticks + 20 ms", true, &|r| {
                    2000.0 / r.figures.tick_rate.max(1.0) + 20.0
                }),
            ],
        ),
    ));
    if runs
        .iter()
        .all(|r| r.figures.cpu.is_some() && r.figures.server.is_some())
    {
        let cpu =
            |f: fn(&CpuFigures) -> f64| move |r: &WorldRun| r.figures.cpu.as_ref().map_or(0.0, f);
        out.push((
            "world-cpu-split.svg".to_owned(),
            xy_chart(
                &title("server CPU, simulation and network"),
                "bots",
                "cores",
                &xs,
                &[
                    line("simulation", false, &cpu(|c| c.simulation_cores)),
                    line("network", false, &cpu(|c| c.network_cores)),
                    line("other threads", false, &cpu(|c| c.other_cores)),
                    line("whole server", true, &cpu(|c| c.cores)),
                ],
            ),
        ));
    }
    if runs.iter().all(|r| r.figures.server.is_some()) {
        let lines: Vec<Line> = [
            "receive",
            "physics",
            "commands",
            "merge",
            "snapshots",
            "send",
        ]
        .iter()
        .map(|&phase| {
            line(phase, false, &|r| {
                r.figures
                    .server
                    .as_ref()
                    .and_then(|s| s.phase_ms.get(phase).copied())
                    .unwrap_or(0.0)
            })
        })
        .collect();
        out.push((
            "world-tick-phases.svg".to_owned(),
            xy_chart(
                &title("server ms per tick by phase"),
                "bots",
                "ms per tick",
                &xs,
                &lines,
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::world_window::ServerFigures;

    fn report(bots: u64, rate: f64, with_cpu: bool) -> serde_json::Value {
        let figures = WindowFigures {
            bots: bots as f64 - 1.0,
            tick_rate: 20.0,
            snapshots_per_bot_per_sec: rate,
            command_p50_ms: 60.0,
            command_p99_ms: 90.0,
            server: Some(ServerFigures {
                phase_ms: [("physics".to_owned(), 1.5)].into_iter().collect(),
                ..ServerFigures::default()
            }),
            cpu: with_cpu.then(|| CpuFigures {
                simulation_cores: 0.2,
                network_cores: 0.5,
                cores: 0.8,
                ..CpuFigures::default()
            }),
            ..WindowFigures::default()
        };
        serde_json::json!({ "users_started": bots, "figures": figures })
    }

    #[test]
    fn a_sweep_is_charted_against_the_bots_in_order() {
        let runs: Vec<WorldRun> = [report(2000, 18.0, true), report(500, 19.9, true)]
            .iter()
            .map(|r| world_run(r).expect("figures"))
            .collect();
        assert_eq!(runs[0].bots, 2000.0);
        let charts = world_sweep_charts(&runs, "server on core 0");
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "world-response-rate.svg",
                "world-command-latency.svg",
                "world-cpu-split.svg",
                "world-tick-phases.svg"
            ]
        );
        let (_, rate) = &charts[0];
        assert!(
            rate.contains("(server on core 0)") && rate.contains(">bots<"),
            "{rate}"
        );
        assert_eq!(rate.matches("<polyline").count(), 3);
        assert_eq!(rate.matches("<circle").count(), 6);
        // 500 bots first: the received line falls from 19.9 to 18 (y grows downwards).
        let received = rate
            .lines()
            .find(|l| l.starts_with("<polyline"))
            .expect("line");
        let ys: Vec<f64> = received
            .split('"')
            .nth(7)
            .expect("points")
            .split(' ')
            .map(|p| p.split(',').nth(1).and_then(|y| y.parse().ok()).expect("y"))
            .collect();
        assert!(ys[0] < ys[1], "{received}");
        assert!(charts[2].1.contains("simulation") && charts[2].1.contains("network"));
    }

    #[test]
    fn runs_without_figures_or_cpu_are_charted_with_what_they_have() {
        assert_eq!(world_run(&serde_json::json!({ "users_started": 5 })), None);
        let runs = vec![
            world_run(&report(500, 20.0, false)).expect("figures"),
            world_run(&report(1000, 20.0, true)).expect("figures"),
        ];
        let names: Vec<String> = world_sweep_charts(&runs, "")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "world-response-rate.svg",
                "world-command-latency.svg",
                "world-tick-phases.svg"
            ]
        );
        assert!(world_sweep_charts(&[], "").is_empty());
    }
}

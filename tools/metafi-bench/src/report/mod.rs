//! The report of a run: the seed's columns per series, errors by kind, network traffic and a
//! per-second timeline; rendered as a terminal table, JSON, Markdown and SVG charts.

mod json;
mod markdown;
pub(crate) mod svg;
mod sweep;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::procfs::ServerUsage;
use crate::servers::ServerCount;
use crate::stats::{NetSummary, SeriesKind, Snapshot, Summary, ToolUsage};

pub use markdown::render as markdown;
pub use sweep::{WorldRun, world_run, world_sweep_charts};
pub use table::render as table;

/// Everything a run measured, ready to render.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub workload: String,
    /// Free text naming the setup, e.g. `MetaFi, SQLite, server on core 0`.
    pub label: String,
    pub server: String,
    pub load: String,
    pub command: String,
    /// Seconds since the Unix epoch at the start.
    pub started_unix: u64,
    pub planned_secs: f64,
    pub duration_secs: f64,
    /// The run was stopped with Ctrl-C before its planned end.
    pub interrupted: bool,
    /// Facts about the run worth printing (setup time, skipped arrivals, …).
    pub notes: Vec<String>,
    pub max_connected: i64,
    pub users_started: u64,
    pub connections: Vec<Summary>,
    pub requests: Vec<Summary>,
    pub errors: BTreeMap<String, u64>,
    pub network: NetSummary,
    /// The server's CPU and memory over the run, when `--server-pid` was given.
    pub server_usage: Option<ServerUsage>,
    /// Users, successes and errors per server (`--server` list, in order; users round-robin).
    pub per_server: Vec<ServerCount>,
    /// The tool's own CPU over the run (a run is valid only while it stays well under the
    /// tool's cores), when `/proc` could be read.
    pub tool_usage: Option<ToolUsage>,
    /// The workload's own figures (the world's: the server over the measured phase), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<serde_json::Value>,
    /// Names of the series of each timeline point, in order.
    pub timeline_series: Vec<String>,
    pub timeline: Vec<TimelinePoint>,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    /// Seconds since the start at the end of this point.
    pub at: f64,
    pub connected: i64,
    pub active_users: i64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub errors: u64,
    /// One entry per series, in the order of `Report::timeline_series`.
    pub series: Vec<SeriesPoint>,
}

/// One series in one second.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SeriesPoint {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// What the report needs besides the measurements.
#[derive(Debug, Clone)]
pub struct Meta {
    pub workload: String,
    pub label: String,
    pub server: String,
    pub load: String,
    pub command: String,
    pub started_unix: u64,
    pub planned_secs: f64,
    pub duration_secs: f64,
    pub interrupted: bool,
    pub notes: Vec<String>,
    pub server_usage: Option<ServerUsage>,
    pub figures: Option<serde_json::Value>,
}

impl Report {
    pub fn build(meta: Meta, snapshot: &Snapshot) -> Report {
        let duration = std::time::Duration::from_secs_f64(meta.duration_secs.max(0.0));
        let summaries: Vec<Summary> = snapshot
            .series
            .iter()
            .map(|s| s.summary(duration))
            .collect();
        let timeline = snapshot
            .samples
            .windows(2)
            .enumerate()
            .map(|(second, pair)| TimelinePoint {
                at: pair[1].at,
                connected: pair[1].connected,
                active_users: pair[1].active_users,
                bytes_sent: pair[1].bytes_sent.saturating_sub(pair[0].bytes_sent),
                bytes_received: pair[1]
                    .bytes_received
                    .saturating_sub(pair[0].bytes_received),
                errors: pair[1].errors.saturating_sub(pair[0].errors),
                series: snapshot
                    .series
                    .iter()
                    .map(|s| SeriesPoint {
                        count: s.second_count(second),
                        p50_ms: s.second_quantile(second, 0.50),
                        p90_ms: s.second_quantile(second, 0.90),
                        p99_ms: s.second_quantile(second, 0.99),
                    })
                    .collect(),
            })
            .collect();
        Report {
            workload: meta.workload,
            label: meta.label,
            server: meta.server,
            load: meta.load,
            command: meta.command,
            started_unix: meta.started_unix,
            planned_secs: meta.planned_secs,
            duration_secs: meta.duration_secs,
            interrupted: meta.interrupted,
            notes: meta.notes,
            max_connected: snapshot.max_connected,
            users_started: snapshot.samples.last().map_or(0, |s| s.started_users),
            connections: summaries
                .iter()
                .filter(|s| s.kind == SeriesKind::Connect)
                .cloned()
                .collect(),
            requests: summaries
                .iter()
                .filter(|s| s.kind == SeriesKind::Request)
                .cloned()
                .collect(),
            errors: snapshot.errors.clone(),
            network: NetSummary::from_samples(&snapshot.samples),
            server_usage: meta.server_usage,
            per_server: snapshot.per_server.clone(),
            tool_usage: ToolUsage::from_samples(&snapshot.samples),
            figures: meta.figures,
            timeline_series: snapshot.series.iter().map(|s| s.name.clone()).collect(),
            timeline,
        }
    }

    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The first request series' successes per second of server CPU: throughput normalised
    /// for the share of its core the server actually got (shared machines).
    pub fn per_server_cpu_second(&self) -> Option<(String, f64)> {
        let usage = self.server_usage?;
        let first = self.requests.first()?;
        (usage.cpu_secs > 0.0).then(|| (first.name.clone(), first.count as f64 / usage.cpu_secs))
    }

    pub fn success_total(&self) -> u64 {
        self.requests
            .iter()
            .chain(&self.connections)
            .map(|s| s.count)
            .sum()
    }

    /// Writes `report.json`, `report.md` and the SVG charts into `dir`; returns the paths.
    pub fn write_files(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
        let mut written = Vec::new();
        let mut write = |name: &str, text: String| -> anyhow::Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
            Ok(())
        };
        write("report.json", json::render(self)?)?;
        let charts = svg::charts(self);
        let chart_names: Vec<String> = charts.iter().map(|(name, _)| name.clone()).collect();
        write("report.md", markdown::render(self, &chart_names))?;
        for (name, text) in charts {
            write(&name, text)?;
        }
        Ok(written)
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    use std::sync::Arc;
    use std::time::Duration;

    use metafi_client::net::NetCounters;

    use super::*;
    use crate::stats::{Sample, Stats};

    /// A small report with known numbers: 12 s, 10 auth/s of 2 ms, then an error.
    pub fn report() -> Report {
        let stats = Stats::new(
            &[
                ("connect", SeriesKind::Connect),
                ("authenticate", SeriesKind::Request),
            ],
            Arc::new(NetCounters::default()),
        );
        let auth = stats.series("authenticate").expect("series");
        let connect = stats.series("connect").expect("series");
        for i in 0..120 {
            let at = Duration::from_millis(i * 100);
            stats.record_at(auth, at, Duration::from_millis(2));
            if i % 10 == 0 {
                stats.record_at(connect, at, Duration::from_millis(1));
            }
        }
        stats.error("status 500");
        let mut snapshot = stats.snapshot();
        snapshot.samples = (0..=12)
            .map(|t| Sample {
                at: t as f64,
                connected: t.min(10),
                bytes_sent: t as u64 * 1000,
                bytes_received: t as u64 * 4000,
                messages_received: t as u64 * 1000,
                tool_cpu_secs: 1.0 + t as f64 * 0.5,
                ..Sample::default()
            })
            .collect();
        snapshot.max_connected = 10;
        Report::build(
            Meta {
                workload: "auth".into(),
                label: "test".into(),
                server: "http://127.0.0.1:7350".into(),
                load: "closed loop: 1 clients for 12 s".into(),
                command: "metafi-bench auth".into(),
                started_unix: 0,
                planned_secs: 12.0,
                duration_secs: 12.0,
                interrupted: false,
                notes: vec!["setup: 1 user".into()],
                server_usage: Some(ServerUsage {
                    pid: 4242,
                    processes: 1,
                    cpu_secs: 6.0,
                    cores_used: 0.5,
                    peak_rss_bytes: 50_000_000,
                }),
                figures: None,
            },
            &snapshot,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_splits_connections_from_requests_and_fills_the_timeline() {
        let report = fixture::report();
        assert_eq!(report.connections.len(), 1);
        assert_eq!(report.requests.len(), 1);
        assert_eq!(report.requests[0].count, 120);
        assert_eq!(report.connections[0].count, 12);
        assert_eq!(report.timeline.len(), 12);
        assert_eq!(report.timeline[3].bytes_sent, 1000);
        assert_eq!(report.timeline[3].series[1].count, 10);
        assert_eq!(report.network.received_total_bytes, 48_000);
        assert_eq!(report.error_total(), 1);
        assert_eq!(report.success_total(), 132);
        assert_eq!(report.timeline_series, vec!["connect", "authenticate"]);
        let dir = tempfile::tempdir().expect("tempdir");
        let files = report.write_files(dir.path()).expect("written");
        let names: Vec<String> = files
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(names.contains(&"report.json".to_owned()));
        assert!(names.contains(&"report.md".to_owned()));
        assert!(names.iter().any(|n| n.ends_with(".svg")));
    }
}

//! `report`: every run result of a directory → `report.md` (tables) and SVG charts.
//!
//! Runs are grouped by client count, seed and strategy. For each client count and seed the GSI
//! ratio of a strategy is its client-traffic GSI over TCP's on the same trace (the seed's
//! comparison); across seeds the report gives the median and the range. Delay, jitter and
//! loss are means over seeds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::replay::RunResult;
use crate::stats::Summary;
use crate::strategy::Strategy;
use crate::wire::TYPE_NAMES;

type Key = (u16, Strategy);

pub fn write(results: &Path, out: &Path, note: &str) -> anyhow::Result<()> {
    let mut runs: Vec<RunResult> = Vec::new();
    for entry in std::fs::read_dir(results)
        .with_context(|| format!("reading the results directory {}", results.display()))?
    {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        // Other JSON files (emulator statistics) may sit next to the results.
        if let Ok(run) = serde_json::from_str::<RunResult>(&text) {
            runs.push(run);
        }
    }
    anyhow::ensure!(!runs.is_empty(), "no run results in {}", results.display());
    std::fs::create_dir_all(out)?;
    let report = Report::new(&runs);
    std::fs::write(out.join("report.md"), report.markdown(note))?;
    for (name, svg) in report.charts() {
        std::fs::write(out.join(name), svg)?;
    }
    Ok(())
}

struct Report<'a> {
    clients: Vec<u16>,
    strategies: Vec<Strategy>,
    seeds: Vec<u64>,
    by_key: BTreeMap<Key, Vec<&'a RunResult>>,
    /// GSI ratio vs TCP per (clients, strategy), one per seed that has both.
    ratios: BTreeMap<Key, Vec<f64>>,
}

impl<'a> Report<'a> {
    fn new(runs: &'a [RunResult]) -> Report<'a> {
        let mut by_key: BTreeMap<Key, Vec<&RunResult>> = BTreeMap::new();
        let mut tcp: BTreeMap<(u16, u64), f64> = BTreeMap::new();
        for run in runs {
            by_key
                .entry((run.clients, run.strategy))
                .or_default()
                .push(run);
            if run.strategy == Strategy::Tcp {
                tcp.insert((run.clients, run.seed), run.gsi_client);
            }
        }
        let mut ratios: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
        for run in runs {
            if let Some(base) = tcp.get(&(run.clients, run.seed)) {
                ratios
                    .entry((run.clients, run.strategy))
                    .or_default()
                    .push(run.gsi_client / base);
            }
        }
        let mut clients: Vec<u16> = runs.iter().map(|r| r.clients).collect();
        clients.sort_unstable();
        clients.dedup();
        let mut seeds: Vec<u64> = runs.iter().map(|r| r.seed).collect();
        seeds.sort_unstable();
        seeds.dedup();
        let strategies = Strategy::ALL
            .into_iter()
            .filter(|s| runs.iter().any(|r| r.strategy == *s))
            .collect();
        Report {
            clients,
            strategies,
            seeds,
            by_key,
            ratios,
        }
    }

    /// Mean over seeds of one summary field.
    fn mean(&self, key: Key, pick: impl Fn(&RunResult) -> f64) -> f64 {
        let Some(runs) = self.by_key.get(&key) else {
            return f64::NAN;
        };
        let values: Vec<f64> = runs
            .iter()
            .map(|r| pick(r))
            .filter(|v| v.is_finite())
            .collect();
        if values.is_empty() {
            return f64::NAN;
        }
        values.iter().sum::<f64>() / values.len() as f64
    }

    fn ratio(&self, key: Key) -> Option<(f64, f64, f64)> {
        let mut values = self.ratios.get(&key)?.clone();
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let median = if values.len() % 2 == 1 {
            values[values.len() / 2]
        } else {
            (values[values.len() / 2 - 1] + values[values.len() / 2]) / 2.0
        };
        Some((median, values[0], values[values.len() - 1]))
    }

    fn markdown(&self, note: &str) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "Runs: {} client counts × {} strategies × {} seeds ({}).{}\n",
            self.clients.len(),
            self.strategies.len(),
            self.seeds.len(),
            self.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if note.is_empty() {
                String::new()
            } else {
                format!(" {note}")
            }
        );
        let _ = writeln!(
            md,
            "**GSI ratio over TCP, client traffic** (median over seeds, range in brackets):\n"
        );
        let header: Vec<&str> = self.strategies.iter().map(|s| s.title()).collect();
        let _ = writeln!(md, "| clients | {} |", header.join(" | "));
        let _ = writeln!(md, "|---|{}", "---|".repeat(header.len()));
        for &clients in &self.clients {
            let cells: Vec<String> = self
                .strategies
                .iter()
                .map(|s| match self.ratio((clients, *s)) {
                    Some((m, lo, hi)) if self.seeds.len() > 1 => {
                        format!("{m:.2} [{lo:.2}–{hi:.2}]")
                    }
                    Some((m, _, _)) => format!("{m:.2}"),
                    None => "—".into(),
                })
                .collect();
            let _ = writeln!(md, "| {clients} | {} |", cells.join(" | "));
        }
        for (title, pick) in [
            (
                "Client messages (client → server)",
                (|r: &RunResult, i: usize| r.client_messages[i])
                    as fn(&RunResult, usize) -> Summary,
            ),
            (
                "Server messages (answers and forwards, server → client)",
                |r: &RunResult, i: usize| r.server_messages[i],
            ),
        ] {
            let _ = writeln!(
                md,
                "\n**{title}**: mean delay / jitter (ms) / loss, per type, mean over seeds.\n"
            );
            for &clients in &self.clients {
                let _ = writeln!(md, "{clients} clients:\n");
                let _ = writeln!(md, "| strategy | {} | all | GSI |", TYPE_NAMES.join(" | "));
                let _ = writeln!(md, "|---|---|---|---|---|---|");
                for &s in &self.strategies {
                    let key = (clients, s);
                    let cell = |i: usize| {
                        let d = self.mean(key, |r| pick(r, i).delay_ms);
                        let j = self.mean(key, |r| pick(r, i).jitter_ms);
                        let l = self.mean(key, |r| pick(r, i).loss);
                        format!("{d:.0} / {j:.0} / {:.1}%", l * 100.0)
                    };
                    let gsi = self.mean(key, |r| pick(r, 3).gsi());
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} | {gsi:.3} |",
                        s.title(),
                        cell(0),
                        cell(1),
                        cell(2),
                        cell(3)
                    );
                }
                md.push('\n');
            }
        }
        md
    }

    fn charts(&self) -> Vec<(String, String)> {
        let xs: Vec<f64> = self.clients.iter().map(|c| f64::from(*c)).collect();
        let lines = |pick: &dyn Fn(Key) -> f64| -> Vec<(String, Vec<f64>)> {
            self.strategies
                .iter()
                .map(|s| {
                    (
                        s.title().to_owned(),
                        self.clients.iter().map(|c| pick((*c, *s))).collect(),
                    )
                })
                .collect()
        };
        vec![
            (
                "gsi-ratio.svg".into(),
                chart(
                    "GSI ratio over TCP (client traffic, median over seeds)",
                    "ratio",
                    &xs,
                    &lines(&|k| self.ratio(k).map_or(f64::NAN, |r| r.0)),
                ),
            ),
            (
                "client-delay.svg".into(),
                chart(
                    "Client messages: mean delay",
                    "ms",
                    &xs,
                    &lines(&|k| self.mean(k, |r| r.client_messages[3].delay_ms)),
                ),
            ),
            (
                "client-jitter.svg".into(),
                chart(
                    "Client messages: mean jitter (std. dev. per connection)",
                    "ms",
                    &xs,
                    &lines(&|k| self.mean(k, |r| r.client_messages[3].jitter_ms)),
                ),
            ),
            (
                "server-delay.svg".into(),
                chart(
                    "Server messages: mean delay",
                    "ms",
                    &xs,
                    &lines(&|k| self.mean(k, |r| r.server_messages[3].delay_ms)),
                ),
            ),
            (
                "server-jitter.svg".into(),
                chart(
                    "Server messages: mean jitter (std. dev. per connection)",
                    "ms",
                    &xs,
                    &lines(&|k| self.mean(k, |r| r.server_messages[3].jitter_ms)),
                ),
            ),
        ]
    }
}

const COLOURS: [&str; 8] = [
    "#000000", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf",
];

/// A line chart over client counts.
fn chart(title: &str, unit: &str, xs: &[f64], lines: &[(String, Vec<f64>)]) -> String {
    const W: f64 = 760.0;
    const H: f64 = 340.0;
    const L: f64 = 60.0;
    const R: f64 = 180.0;
    const T: f64 = 40.0;
    const B: f64 = 45.0;
    let x_max = xs.iter().copied().fold(1.0_f64, f64::max);
    let y_top = lines
        .iter()
        .flat_map(|l| l.1.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let (y_max, y_step) = nice_scale(y_top);
    let (pw, ph) = (W - L - R, H - T - B);
    let px = |x: f64| L + x / x_max * pw;
    let py = |y: f64| T + ph - (y / y_max).clamp(0.0, 1.0) * ph;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{L}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let mut y = 0.0;
    while y <= y_max + y_step / 2.0 {
        let _ = writeln!(
            svg,
            r##"<line x1="{L}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            L + pw,
            py(y),
            py(y),
            L - 6.0,
            py(y) + 4.0,
            fmt_number(y)
        );
        y += y_step;
    }
    for x in xs {
        let _ = writeln!(
            svg,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{T}" y2="{:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{x}</text>"##,
            px(*x),
            px(*x),
            T + ph,
            px(*x),
            T + ph + 15.0
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">clients</text><text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        L + pw / 2.0,
        H - 8.0,
        T + ph / 2.0,
        T + ph / 2.0,
        escape(unit)
    );
    let _ = writeln!(
        svg,
        r#"<rect x="{L}" y="{T}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="black"/>"#
    );
    for (i, (name, values)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = xs
            .iter()
            .zip(values)
            .filter(|(_, y)| y.is_finite())
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let dash = if i >= COLOURS.len() {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
            points.join(" ")
        );
        for p in &points {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(svg, r#"<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>"#);
        }
        let ly = T + 10.0 + 16.0 * i as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - R + 10.0,
            W - R + 30.0,
            W - R + 35.0,
            ly + 4.0,
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// An axis top and step of 1, 2 or 5 × 10^k giving about five gridlines.
fn nice_scale(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 0.2);
    }
    let rough = max / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    ((max / step).ceil() * step, step)
}

fn fmt_number(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}").trim_end_matches('0').to_owned()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        strategy: Strategy,
        clients: u16,
        seed: u64,
        delay_ms: f64,
        jitter_ms: f64,
    ) -> RunResult {
        let summary = Summary {
            sent: 100,
            received: 96,
            loss: 0.04,
            delay_ms,
            jitter_ms,
            sd_ms: jitter_ms,
        };
        RunResult {
            strategy,
            clients,
            seed,
            trace_messages: 100,
            trace_seconds: 30.0,
            client_messages: [summary; 4],
            server_messages: [summary; 4],
            end_to_end: [summary; 4],
            gsi_client: summary.gsi(),
            gsi_server: summary.gsi(),
            max_send_lateness_ms: 1.0,
            malformed: 0,
            setup_seconds: 1.0,
        }
    }

    #[test]
    fn ratios_are_per_seed_against_tcp_and_charts_are_drawn() {
        let runs = vec![
            run(Strategy::Tcp, 150, 1, 285.0, 177.0),
            run(Strategy::M, 150, 1, 208.0, 52.0),
            run(Strategy::Tcp, 150, 2, 285.0, 177.0),
            run(Strategy::M, 150, 2, 285.0, 177.0),
        ];
        let report = Report::new(&runs);
        let (median, lo, hi) = report.ratio((150, Strategy::M)).unwrap();
        assert!((hi - 3.57).abs() < 0.01, "{hi}");
        assert!((lo - 1.0).abs() < 1e-9);
        assert!((median - (1.0 + hi) / 2.0).abs() < 1e-9);
        let md = report.markdown("");
        assert!(md.contains("| 150 | 1.00 [1.00–1.00] |"), "{md}");
        let charts = report.charts();
        assert_eq!(charts.len(), 5);
        assert!(charts[0].1.contains("<polyline"));
    }
}

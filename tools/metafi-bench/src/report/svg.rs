//! SVG line charts over time, drawn by hand: connected users, rate per series and latency
//! percentiles per series.

use std::fmt::Write as _;

use super::Report;
use crate::stats::SeriesKind;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 45.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A named line of y values, one per x.
pub(super) struct Line {
    pub(super) name: String,
    pub(super) values: Vec<f64>,
    pub(super) dashed: bool,
}

/// `(file name, SVG text)` of every chart the report has data for.
pub fn charts(report: &Report) -> Vec<(String, String)> {
    let xs: Vec<f64> = report.timeline.iter().map(|p| p.at).collect();
    if xs.is_empty() {
        return Vec::new();
    }
    let stem = &report.workload;
    let mut out = Vec::new();
    if report.max_connected > 0 {
        let lines = vec![Line {
            name: "connected".into(),
            values: report.timeline.iter().map(|p| p.connected as f64).collect(),
            dashed: false,
        }];
        out.push((
            format!("{stem}-connected.svg"),
            chart(&format!("{stem}: connected users"), "users", &xs, &lines),
        ));
    }
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    for (i, name) in report.timeline_series.iter().enumerate() {
        let kind = report
            .connections
            .iter()
            .chain(&report.requests)
            .find(|s| &s.name == name)
            .map_or(SeriesKind::Request, |s| s.kind);
        let per = |f: fn(&super::SeriesPoint) -> f64| -> Vec<f64> {
            report
                .timeline
                .iter()
                .map(|p| p.series.get(i).map_or(0.0, f))
                .collect()
        };
        rates.push(Line {
            name: format!("{name} /s"),
            values: per(|s| s.count as f64),
            dashed: kind == SeriesKind::Connect,
        });
        latencies.push(Line {
            name: format!("{name} p50"),
            values: per(|s| s.p50_ms),
            dashed: true,
        });
        latencies.push(Line {
            name: format!("{name} p90"),
            values: per(|s| s.p90_ms),
            dashed: false,
        });
        latencies.push(Line {
            name: format!("{name} p99"),
            values: per(|s| s.p99_ms),
            dashed: false,
        });
    }
    if !rates.is_empty() {
        out.push((
            format!("{stem}-rate.svg"),
            chart(
                &format!("{stem}: successes per second"),
                "per second",
                &xs,
                &rates,
            ),
        ));
        out.push((
            format!("{stem}-latency.svg"),
            chart(
                &format!("{stem}: latency percentiles per second"),
                "ms",
                &xs,
                &latencies,
            ),
        ));
    }
    out
}

fn chart(title: &str, unit: &str, xs: &[f64], lines: &[Line]) -> String {
    chart_with(title, "seconds", unit, xs, lines, false)
}

/// A chart over any x (`x_unit` names it); `markers` puts a dot on every point (a sweep of a
/// few runs rather than a per-second timeline).
pub(super) fn chart_with(
    title: &str,
    x_unit: &str,
    unit: &str,
    xs: &[f64],
    lines: &[Line],
    markers: bool,
) -> String {
    let x_max = xs.iter().copied().fold(1.0_f64, f64::max);
    let y_top = lines
        .iter()
        .flat_map(|l| l.values.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let (y_max, y_step) = nice_scale(y_top);
    let (_, x_step) = nice_scale(x_max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + x / x_max * plot_w;
    let py = |y: f64| TOP + plot_h - (y / y_max).clamp(0.0, 1.0) * plot_h;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    // grid and y labels
    let mut y = 0.0;
    while y <= y_max + y_step / 2.0 {
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            py(y),
            py(y),
            LEFT - 6.0,
            py(y) + 4.0,
            label(y)
        );
        y += y_step;
    }
    let mut x = 0.0;
    while x <= x_max + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{:.1}" x2="{:.1}" y1="{TOP}" y2="{:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            px(x),
            px(x),
            TOP + plot_h,
            px(x),
            TOP + plot_h + 15.0,
            label(x)
        );
        x += x_step;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 8.0,
        escape(x_unit),
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(unit)
    );
    let _ = writeln!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w:.1}" height="{plot_h:.1}" fill="none" stroke="black"/>"#
    );
    for (i, line) in lines.iter().enumerate() {
        let colour = COLOURS[(i / if lines.len() > COLOURS.len() { 3 } else { 1 }) % COLOURS.len()];
        let points: Vec<String> = xs
            .iter()
            .zip(&line.values)
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let dash = if line.dashed {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{}"/>"#,
            points.join(" ")
        );
        if markers {
            for (x, y) in xs.iter().zip(&line.values) {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                    px(*x),
                    py(*y)
                );
            }
        }
        let ly = TOP + 12.0 + 14.0 * i as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            WIDTH - RIGHT - 150.0,
            WIDTH - RIGHT - 130.0,
            WIDTH - RIGHT - 125.0,
            ly + 4.0,
            escape(&line.name)
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

fn label(value: f64) -> String {
    if value >= 1e6 {
        format!("{}M", value / 1e6)
    } else if value >= 1e4 {
        format!("{}k", value / 1e3)
    } else if value.fract() == 0.0 {
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

    #[test]
    fn scales_are_round() {
        assert_eq!(nice_scale(9.3), (10.0, 2.0));
        assert_eq!(nice_scale(1234.0), (1500.0, 500.0));
        assert_eq!(nice_scale(0.0), (1.0, 0.2));
        assert_eq!(label(20000.0), "20k");
        assert_eq!(label(0.5), "0.5");
    }

    #[test]
    fn charts_are_drawn_for_connections_rates_and_latency() {
        let report = crate::report::fixture::report();
        let charts = charts(&report);
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            vec!["auth-connected.svg", "auth-rate.svg", "auth-latency.svg"]
        );
        let (_, rate) = &charts[1];
        assert!(rate.starts_with("<svg"), "{rate}");
        assert!(rate.contains("authenticate /s"));
        assert_eq!(rate.matches("<polyline").count(), 2);
        let (_, latency) = &charts[2];
        assert_eq!(latency.matches("<polyline").count(), 6);
        assert!(latency.trim_end().ends_with("</svg>"));
    }
}

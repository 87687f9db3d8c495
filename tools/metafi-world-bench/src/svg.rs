//! Hand-written SVG charts: a line chart with log axes and a stacked bar chart. No dependency,
//! plain SVG 1.1 that any browser or Markdown viewer renders.

use std::fmt::Write as _;

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// One line of a [`line_chart`].
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// A horizontal reference line (a budget or target).
pub struct Guide {
    pub name: String,
    pub y: f64,
}

/// A log-log line chart.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    guides: &[Guide],
) -> String {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(guides.iter().map(|g| g.y));
    let (x0, x1) = log_range(xs);
    let (y0, y1) = log_range(ys);
    let px = |x: f64| LEFT + (x.log10() - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y.max(1e-9).log10() - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut s = header(title);
    axes(&mut s, x_label, y_label);
    for (v, label) in log_ticks(x0, x1) {
        let x = px(v);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{TOP}" stroke="#eee"/>"##,
            H - BOTTOM
        );
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{label}</text>"#,
            H - BOTTOM + 16.0
        );
    }
    for (v, label) in log_ticks(y0, y1) {
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/>"##,
            W - RIGHT
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{label}</text>"#,
            LEFT - 6.0,
            y + 4.0
        );
    }
    for g in guides {
        let y = py(g.y);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#555" stroke-dasharray="2,3"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
            W - RIGHT,
            LEFT + 4.0,
            y - 3.0,
            esc(&g.name)
        );
    }
    for (k, ser) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let dash = if ser.dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
            pts.join(" ")
        );
        for &(x, y) in &ser.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        }
        legend(&mut s, k, &ser.name, color, ser.dashed);
    }
    s.push_str("</svg>\n");
    s
}

/// Stacked bars: one bar per category, one stack segment per layer.
pub fn stacked_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    layers: &[(String, Vec<f64>)],
) -> String {
    let totals: Vec<f64> = (0..categories.len())
        .map(|i| {
            layers
                .iter()
                .map(|l| l.1.get(i).copied().unwrap_or(0.0))
                .sum()
        })
        .collect();
    let top = nice_ceiling(totals.iter().copied().fold(0.0, f64::max));
    let py = |v: f64| H - BOTTOM - v / top * (H - TOP - BOTTOM);
    let mut s = header(title);
    axes(&mut s, "", y_label);
    for k in 0..=5 {
        let v = top * k as f64 / 5.0;
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/>"##,
            W - RIGHT
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            fmt_num(v)
        );
    }
    let slot = (W - LEFT - RIGHT) / categories.len().max(1) as f64;
    for (i, cat) in categories.iter().enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.2;
        let mut base = 0.0;
        for (k, (_, values)) in layers.iter().enumerate() {
            let v = values.get(i).copied().unwrap_or(0.0);
            let (ya, yb) = (py(base), py(base + v));
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{yb:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                slot * 0.6,
                (ya - yb).max(0.0),
                COLORS[k % COLORS.len()]
            );
            base += v;
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
            x + slot * 0.3,
            H - BOTTOM + 16.0,
            esc(cat)
        );
    }
    for (k, (name, _)) in layers.iter().enumerate() {
        legend(&mut s, k, name, COLORS[k % COLORS.len()], false);
    }
    s.push_str("</svg>\n");
    s
}

fn header(title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif"><rect width="{W}" height="{H}" fill="white"/><text x="{:.1}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        esc(title)
    )
}

fn axes(s: &mut String, x_label: &str, y_label: &str) {
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}" stroke="#000"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b:.1}" stroke="#000"/>"##,
        b = H - BOTTOM,
        r = W - RIGHT
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        H - 12.0,
        esc(x_label)
    );
    let _ = write!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" font-size="12" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (H - BOTTOM + TOP) / 2.0,
        (H - BOTTOM + TOP) / 2.0,
        esc(y_label)
    );
}

fn legend(s: &mut String, k: usize, name: &str, color: &str, dashed: bool) {
    let y = TOP + 8.0 + 18.0 * k as f64;
    let x = W - RIGHT + 12.0;
    let dash = if dashed {
        r#" stroke-dasharray="6,4""#
    } else {
        ""
    };
    let _ = write!(
        s,
        r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="3"{dash}/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
        x + 22.0,
        x + 28.0,
        y + 4.0,
        esc(name)
    );
}

/// Decades covering the values (log10 bounds), at least one decade wide.
fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v.log10());
        hi = hi.max(v.log10());
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil());
    if hi <= lo { (lo, lo + 1.0) } else { (lo, hi) }
}

/// Ticks at 1, 2 and 5 times each power of ten in range.
fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    for d in lo as i32..=hi as i32 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(d);
            if v.log10() <= hi + 1e-9 {
                out.push((v, fmt_num(v)));
            }
        }
    }
    out
}

fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

fn fmt_num(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}k", v / 1000.0)
    } else if v >= 1.0 {
        format!("{}", (v * 100.0).round() / 100.0)
    } else {
        format!("{v:.2}")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let s = line_chart(
            "t",
            "players",
            "ms",
            &[Series {
                name: "a<b".into(),
                points: vec![(100.0, 1.0), (10_000.0, 30.0)],
                dashed: false,
            }],
            &[Guide {
                name: "budget".into(),
                y: 50.0,
            }],
        );
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && s.contains("polyline"));
        let b = stacked_bars(
            "p",
            "ms",
            &["1k".into()],
            &[
                ("physics".into(), vec![1.0]),
                ("snapshots".into(), vec![3.0]),
            ],
        );
        assert_eq!(b.matches("<rect").count(), 3);
    }

    #[test]
    fn log_ticks_cover_the_range() {
        let t = log_ticks(0.0, 2.0);
        assert_eq!(t.first().map(|t| t.0), Some(1.0));
        assert_eq!(t.last().map(|t| t.0), Some(100.0));
    }
}

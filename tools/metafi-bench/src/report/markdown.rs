//! `report.md`: the run as Markdown tables in the seed's columns, ready to paste into
//! `docs/BENCHMARKS.md`; chart links are relative to the report's directory.

use std::fmt::Write as _;

use super::Report;
use crate::stats::Summary;
use crate::units::{bytes, mbits, ms, rate, thousands};

pub fn render(report: &Report, charts: &[String]) -> String {
    let mut out = String::new();
    let title = if report.label.is_empty() {
        report.workload.clone()
    } else {
        format!("{} — {}", report.workload, report.label)
    };
    let _ = writeln!(out, "### {title}\n");
    let _ = writeln!(out, "```sh\n{}\n```\n", report.command);
    let interrupted = if report.interrupted {
        " **Interrupted (Ctrl-C): partial results.**"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "Server {}; {}; ran {:.1} s of {:.1} s; {} users started.{interrupted}\n",
        report.server,
        report.load,
        report.duration_secs,
        report.planned_secs,
        thousands(report.users_started)
    );
    for note in &report.notes {
        let _ = writeln!(out, "- {note}");
    }
    if !report.notes.is_empty() {
        out.push('\n');
    }
    if !report.connections.is_empty() || report.max_connected > 0 {
        let _ = writeln!(
            out,
            "Max connected: **{}**\n",
            thousands(report.max_connected.max(0) as u64)
        );
        table(&mut out, "time to connect", &report.connections);
    }
    table(&mut out, "request", &report.requests);
    if report.errors.is_empty() {
        let _ = writeln!(out, "Errors: none.\n");
    } else {
        let _ = writeln!(out, "| error | count |\n|---|---:|");
        for (kind, count) in &report.errors {
            let _ = writeln!(out, "| {kind} | {} |", thousands(*count));
        }
        out.push('\n');
    }
    let net = &report.network;
    let _ = writeln!(
        out,
        "| network (client side) | highest rate | total |\n|---|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| sent | {} | {} |",
        mbits(net.sent_highest_bits_per_sec),
        bytes(net.sent_total_bytes)
    );
    let _ = writeln!(
        out,
        "| received | {} | {} |\n",
        mbits(net.received_highest_bits_per_sec),
        bytes(net.received_total_bytes)
    );
    if report.per_server.len() > 1 {
        let _ = writeln!(
            out,
            "| server (users round-robin) | users | successes | errors |\n|---|---:|---:|---:|"
        );
        for c in &report.per_server {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                c.server,
                thousands(c.users),
                thousands(c.successes),
                thousands(c.errors)
            );
        }
        let _ = writeln!(out);
    }
    if let Some(usage) = &report.server_usage {
        let _ = writeln!(out, "{}\n", super::table::server_line(report, usage));
    }
    if let Some(tool) = &report.tool_usage {
        let _ = writeln!(out, "{}\n", super::table::tool_line(tool));
    }
    for chart in charts {
        let _ = writeln!(out, "![{chart}]({chart})");
    }
    out
}

fn table(out: &mut String, first: &str, rows: &[Summary]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "| {first} | count | highest 10sec mean | lowest 10sec mean | highest rate | mean rate | mean | p50 | p90 | p99 | max |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for s in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            thousands(s.count),
            ms(s.highest_10s_mean_ms),
            ms(s.lowest_10s_mean_ms),
            rate(s.highest_rate),
            rate(s.mean_rate),
            ms(s.mean_ms),
            ms(s.p50_ms),
            ms(s.p90_ms),
            ms(s.p99_ms),
            ms(s.max_ms),
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_the_seed_columns_and_links_the_charts() {
        let report = crate::report::fixture::report();
        let text = render(&report, &["auth-rate.svg".to_owned()]);
        assert!(text.starts_with("### auth — test"), "{text}");
        assert!(
            text.contains("| request | count | highest 10sec mean |"),
            "{text}"
        );
        assert!(text.contains("| authenticate | 120 |"), "{text}");
        assert!(text.contains("| time to connect |"), "{text}");
        assert!(text.contains("Max connected: **10**"), "{text}");
        assert!(text.contains("| status 500 | 1 |"), "{text}");
        assert!(text.contains("| sent | "), "{text}");
        assert!(text.contains("![auth-rate.svg](auth-rate.svg)"), "{text}");
        assert!(text.contains("- setup: 1 user"), "{text}");
        assert!(text.contains("server (pid 4242)"), "{text}");
    }
}

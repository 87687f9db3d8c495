//! The terminal table printed at the end of a run.

use std::fmt::Write as _;

use super::Report;
use crate::stats::Summary;
use crate::units::{bytes, mbits, ms, rate, thousands};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let status = if report.interrupted {
        " (interrupted: partial results)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{} against {}{status}",
        report.workload, report.server
    );
    if !report.label.is_empty() {
        let _ = writeln!(out, "  {}", report.label);
    }
    let _ = writeln!(
        out,
        "  {}; ran {:.1} s of {:.1} s; {} users started",
        report.load,
        report.duration_secs,
        report.planned_secs,
        thousands(report.users_started)
    );
    for note in &report.notes {
        let _ = writeln!(out, "  {note}");
    }
    if !report.connections.is_empty() || report.max_connected > 0 {
        let _ = writeln!(
            out,
            "\nconnections: max connected {}",
            thousands(report.max_connected.max(0) as u64)
        );
        section(&mut out, "time to connect", &report.connections);
    }
    section(&mut out, "requests", &report.requests);
    let _ = writeln!(out, "\nerrors: {}", thousands(report.error_total()));
    for (kind, count) in &report.errors {
        let _ = writeln!(out, "  {kind:<28} {}", thousands(*count));
    }
    if report.per_server.len() > 1 {
        let _ = writeln!(out, "\nper server (users round-robin):");
        for line in per_server_lines(report) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(usage) = &report.server_usage {
        let _ = writeln!(out, "\n{}", server_line(report, usage));
    }
    if let Some(tool) = &report.tool_usage {
        let _ = writeln!(out, "\n{}", tool_line(tool));
    }
    let net = &report.network;
    let _ = writeln!(
        out,
        "\nnetwork (client side)  sent: highest {}, total {}   received: highest {}, total {}",
        mbits(net.sent_highest_bits_per_sec),
        bytes(net.sent_total_bytes),
        mbits(net.received_highest_bits_per_sec),
        bytes(net.received_total_bytes)
    );
    out
}

/// "tool (this process): 8.0 CPU-s, 0.40 cores used (busiest 10 s: 0.60 of 1); 20.0 µs CPU per
/// received message (400,000)", and a warning when the tool was near its limit.
pub(super) fn tool_line(tool: &crate::stats::ToolUsage) -> String {
    let mut line = format!(
        "tool (this process): {:.1} CPU-s, {:.2} cores used (busiest 10 s: {:.2} of {})",
        tool.cpu_secs, tool.cores_used, tool.highest_cores_used, tool.cores_available
    );
    if let Some(per) = tool.cpu_micros_per_message {
        line.push_str(&format!(
            "; {per:.1} µs CPU per received message ({})",
            thousands(tool.messages_received)
        ));
    }
    if tool.near_its_limit() {
        line.push_str(&format!(
            "\nWARNING: the tool used more than {:.0} % of its cores: its own queueing may be in \
             the latencies; give it more cores or fewer users (docs/BENCH.md)",
            crate::stats::ToolUsage::SATURATED * 100.0
        ));
    }
    line
}

/// One line per server: "http://…  users 4  successes 1,200  errors 0".
pub(super) fn per_server_lines(report: &Report) -> Vec<String> {
    let width = report
        .per_server
        .iter()
        .map(|c| c.server.len())
        .max()
        .unwrap_or(0);
    report
        .per_server
        .iter()
        .map(|c| {
            format!(
                "{:<width$}  users {}  successes {}  errors {}",
                c.server,
                thousands(c.users),
                thousands(c.successes),
                thousands(c.errors)
            )
        })
        .collect()
}

/// "server (pid 42): 6.0 CPU-s, 0.50 cores, peak RSS 50.00 MB; 20.0 authenticate per CPU-s".
pub(super) fn server_line(report: &Report, usage: &crate::procfs::ServerUsage) -> String {
    let who = if usage.processes > 1 {
        format!(
            "servers ({} processes from pid {}, summed)",
            usage.processes, usage.pid
        )
    } else {
        format!("server (pid {})", usage.pid)
    };
    let mut line = format!(
        "{who}: {:.1} CPU-s, {:.2} cores used, peak RSS {}",
        usage.cpu_secs,
        usage.cores_used,
        bytes(usage.peak_rss_bytes)
    );
    if let Some((name, per)) = report.per_server_cpu_second() {
        let _ = write!(
            line,
            "; {} {name} per server CPU-second",
            thousands(per.round() as u64)
        );
    }
    line
}

fn section(out: &mut String, title: &str, rows: &[Summary]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    let header = [
        "name",
        "count",
        "high 10s mean",
        "low 10s mean",
        "highest rate",
        "mean rate",
        "mean",
        "p50",
        "p90",
        "p99",
        "max",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for s in rows {
        table.push(vec![
            s.name.clone(),
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
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::from(" ");
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, " {cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shows_the_seed_columns_errors_and_network() {
        let text = render(&crate::report::fixture::report());
        assert!(text.contains("max connected 10"), "{text}");
        assert!(text.contains("high 10s mean"), "{text}");
        assert!(text.contains("authenticate"), "{text}");
        assert!(text.contains("10.0 / s"), "{text}");
        assert!(
            text.contains("2.000 ms") || text.contains("2.001 ms"),
            "{text}"
        );
        assert!(text.contains("status 500"), "{text}");
        assert!(text.contains("total 12.00 kB"), "{text}");
        assert!(
            text.contains("tool (this process): 6.0 CPU-s, 0.50 cores used (busiest 10 s: 0.50 of"),
            "{text}"
        );
        assert!(
            text.contains("500.0 µs CPU per received message (12,000)"),
            "{text}"
        );
        assert!(text.contains("server (pid 4242): 6.0 CPU-s, 0.50 cores used, peak RSS 50.00 MB; 20 authenticate per server CPU-second"), "{text}");
        assert!(
            !text.contains("per server (users"),
            "one server: no per-server lines"
        );
    }

    #[test]
    fn several_servers_get_a_line_each_and_summed_usage() {
        let mut report = crate::report::fixture::report();
        report.per_server = vec![
            crate::servers::ServerCount {
                server: "http://127.0.0.1:7350".into(),
                users: 2,
                successes: 1200,
                errors: 1,
            },
            crate::servers::ServerCount {
                server: "http://127.0.0.1:17360".into(),
                users: 1,
                successes: 600,
                errors: 0,
            },
        ];
        if let Some(usage) = &mut report.server_usage {
            usage.processes = 2;
        }
        let text = render(&report);
        assert!(
            text.contains("http://127.0.0.1:7350   users 2  successes 1,200  errors 1"),
            "{text}"
        );
        assert!(
            text.contains("http://127.0.0.1:17360  users 1  successes 600  errors 0"),
            "{text}"
        );
        assert!(
            text.contains("servers (2 processes from pid 4242, summed): 6.0 CPU-s"),
            "{text}"
        );
        let md = crate::report::markdown(&report, &[]);
        assert!(
            md.contains("| http://127.0.0.1:17360 | 1 | 600 | 0 |"),
            "{md}"
        );
    }
}

//! `GET /v2/console/status`: this node (and the peers it sees) with sessions, sockets,
//! matches, CPU and memory, and the request counters of every route from the metrics
//! registry (per route, and per RPC from the runtime's series). Counters are totals: the status
//! page turns two samples into rates.

use axum::Json;
use axum::extract::State;
use metafi_api::ApiError;
use serde_json::{Value, json};

use crate::auth::Session;
use crate::{ConsoleState, Perm};

pub(crate) async fn get(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(snapshot(&state)))
}

/// The status answer (also rendered into the status page's first paint).
pub(crate) fn snapshot(state: &ConsoleState) -> Value {
    let sockets = state.probe.sockets();
    let matches = state.api.matches.count();
    let text = state.probe.metrics_text();
    let routes = routes(&text);
    let rpcs = rpcs(&text);
    let (requests, latency_sum): (f64, f64) = routes
        .iter()
        .fold((0.0, 0.0), |(n, s), r| (n + r.requests, s + r.latency_sum));
    let process = process();
    let now = state.clock.now_ms();
    json!({
        "nodes": [{
            "name": &*state.node,
            // Nakama's `StatusHealth` as its number: 0 is STATUS_HEALTH_OK.
            "health": 0,
            "create_time": crate::api::timestamp(state.started_ms),
            "session_count": sockets,
            "presence_count": sockets,
            "match_count": matches,
            "avg_latency_ms": if requests > 0.0 { latency_sum * 1000.0 / requests } else { 0.0 },
            "requests_total": requests,
            "cpu_seconds": process.cpu_seconds,
            "rss_bytes": process.rss_bytes,
            "uptime_sec": (now - state.started_ms) / 1000,
        }],
        "peers": state.probe.peers(),
        "routes": routes.iter().map(|r| json!({
            "method": r.method,
            "route": r.route,
            "requests": r.requests,
            "errors": r.errors,
            "latency_sum_sec": r.latency_sum,
        })).collect::<Vec<_>>(),
        "rpcs": rpcs.iter().map(|r| json!({
            "id": r.route,
            "runtime": r.method,
            "calls": r.requests,
            "errors": r.errors,
            "latency_sum_sec": r.latency_sum,
        })).collect::<Vec<_>>(),
        "timestamp": crate::api::timestamp(now),
        "timestamp_ms": now,
    })
}

/// One series' totals: a route (`method`, `route`) or an RPC (`method` = runtime, `route` = id).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct RouteTotals {
    pub method: String,
    pub route: String,
    pub requests: f64,
    /// Answers with a 4xx or 5xx status; RPC calls that did not end `ok`.
    pub errors: f64,
    pub latency_sum: f64,
}

/// What one family of series is called and how its labels read.
struct Family {
    count: &'static str,
    sum: &'static str,
    /// Labels naming the series: (first, second).
    keys: (&'static str, &'static str),
    /// Whether a count series' labels say it failed.
    failed: fn(&[(String, String)]) -> bool,
}

const HTTP: Family = Family {
    count: "metafi_http_requests_total{",
    sum: "metafi_http_request_duration_seconds_sum{",
    keys: ("method", "route"),
    failed: |labels| label(labels, "status").starts_with(['4', '5']),
};

const RPC: Family = Family {
    count: "metafi_runtime_rpc_calls_total{",
    sum: "metafi_runtime_rpc_duration_seconds_sum{",
    keys: ("runtime", "id"),
    failed: |labels| label(labels, "outcome") != "ok",
};

/// Reads `metafi_http_requests_total` and `metafi_http_request_duration_seconds_sum` out of
/// Prometheus' text format, per (method, route).
pub(crate) fn routes(text: &str) -> Vec<RouteTotals> {
    totals(text, &HTTP)
}

/// Reads `metafi_runtime_rpc_calls_total` and `metafi_runtime_rpc_duration_seconds_sum`, per
/// (runtime, RPC id).
pub(crate) fn rpcs(text: &str) -> Vec<RouteTotals> {
    totals(text, &RPC)
}

fn label(labels: &[(String, String)], name: &str) -> String {
    labels
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn totals(text: &str, family: &Family) -> Vec<RouteTotals> {
    let mut out: Vec<RouteTotals> = Vec::new();
    for line in text.lines() {
        let (series, is_count) = if let Some(rest) = line.strip_prefix(family.count) {
            (rest, true)
        } else if let Some(rest) = line.strip_prefix(family.sum) {
            (rest, false)
        } else {
            continue;
        };
        let Some((labels, value)) = series.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let labels = parse_labels(labels);
        let (method, route) = (label(&labels, family.keys.0), label(&labels, family.keys.1));
        let index = match out
            .iter()
            .position(|r| r.method == method && r.route == route)
        {
            Some(i) => i,
            None => {
                out.push(RouteTotals {
                    method,
                    route,
                    ..RouteTotals::default()
                });
                out.len() - 1
            }
        };
        let entry = &mut out[index];
        if is_count {
            entry.requests += value;
            if (family.failed)(&labels) {
                entry.errors += value;
            }
        } else {
            entry.latency_sum += value;
        }
    }
    out.sort_by(|a, b| (&a.route, &a.method).cmp(&(&b.route, &b.method)));
    out
}

fn parse_labels(text: &str) -> Vec<(String, String)> {
    let mut labels = Vec::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                other => value.push(other),
            }
        }
        labels.push((name.trim_start_matches(',').trim().to_owned(), value));
        rest = &after[end..];
    }
    labels
}

struct Process {
    cpu_seconds: f64,
    rss_bytes: u64,
}

/// CPU time and resident memory of this process, from `/proc` (zeros where it is missing).
fn process() -> Process {
    let cpu_seconds = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // Fields after the command name (which may hold spaces) start after ") ".
            let after = stat.rsplit_once(") ")?.1;
            let fields: Vec<&str> = after.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            // USER_HZ is 100 on every Linux MetaFi runs on.
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0);
    let rss_bytes = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0);
    Process {
        cpu_seconds,
        rss_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_totals_come_from_the_prometheus_text() {
        let text = r#"# TYPE metafi_http_requests_total counter
metafi_http_requests_total{method="GET",route="/v2/account",status="200"} 7
metafi_http_requests_total{method="GET",route="/v2/account",status="401"} 2
metafi_http_requests_total{method="POST",route="/v2/rpc/{id}",status="200"} 3
metafi_http_request_duration_seconds_sum{method="GET",route="/v2/account"} 0.25
metafi_http_request_duration_seconds_count{method="GET",route="/v2/account"} 9
metafi_runtime_rpc_calls_total{id="echo",runtime="lua",outcome="ok"} 5
metafi_runtime_rpc_calls_total{id="echo",runtime="lua",outcome="error"} 1
metafi_runtime_rpc_duration_seconds_sum{id="echo",runtime="lua"} 0.012
other_metric{route="x"} 1
"#;
        let rpcs = rpcs(text);
        assert_eq!(rpcs.len(), 1);
        assert_eq!(
            (rpcs[0].route.as_str(), rpcs[0].method.as_str()),
            ("echo", "lua")
        );
        assert_eq!((rpcs[0].requests, rpcs[0].errors), (6.0, 1.0));
        assert_eq!(rpcs[0].latency_sum, 0.012);
        let routes = routes(text);
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].route, "/v2/account");
        assert_eq!(routes[0].requests, 9.0);
        assert_eq!(routes[0].errors, 2.0);
        assert_eq!(routes[0].latency_sum, 0.25);
        assert_eq!(routes[1].route, "/v2/rpc/{id}");
        assert_eq!(routes[1].method, "POST");
        assert_eq!(routes[1].requests, 3.0);
    }

    #[test]
    fn this_process_has_cpu_time_and_memory() {
        let p = process();
        assert!(p.rss_bytes > 0);
        assert!(p.cpu_seconds >= 0.0);
    }
}

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

//! Runs the `register`, `auth` and `match` workloads for a few seconds against a MetaFi server
//! started in this process (SQLite in a temporary directory, port 0), through the same entry point as the
//! command line.

use clap::Parser as _;
use metafi_bench::app;
use metafi_bench::cli::Cli;
use metafi_bench::report::Report;
use metafi_testkit::TestNode;

/// A MetaFi node in this process (SQLite in a temporary directory, port 0), from the test kit.
async fn start_server() -> TestNode {
    TestNode::start(|_| {}).await
}

async fn bench(args: &[&str]) -> Report {
    let cli = Cli::try_parse_from(args).unwrap();
    app::execute(cli.command, std::future::pending())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_and_auth_succeed_without_errors_against_metafi() {
    let server = start_server().await;
    let base = server.base.clone();

    let register = bench(&[
        "metafi-bench",
        "register",
        "--server",
        &base,
        "--clients",
        "4",
        "--duration",
        "1s",
    ])
    .await;
    assert_eq!(register.workload, "register");
    assert!(register.requests[0].count > 0, "{register:#?}");
    assert_eq!(register.error_total(), 0, "{:?}", register.errors);
    assert!(register.network.sent_total_bytes > 0);
    assert!(register.network.received_total_bytes > register.network.sent_total_bytes / 2);

    let auth = bench(&[
        "metafi-bench",
        "auth",
        "--server",
        &base,
        "--clients",
        "4",
        "--duration",
        "1s",
        "--users",
        "20",
    ])
    .await;
    assert_eq!(auth.requests[0].name, "authenticate");
    assert!(auth.requests[0].count > 0, "{auth:#?}");
    assert_eq!(auth.error_total(), 0, "{:?}", auth.errors);
    assert!(
        auth.notes.iter().any(|n| n.contains("20 users")),
        "{:?}",
        auth.notes
    );

    // arrival mode: 20 users per second for a second each sign in once; the quiet second
    // phase lets the last ones finish before the run ends
    let arrivals = bench(&[
        "metafi-bench",
        "register",
        "--server",
        &base,
        "--phase",
        "20:1s",
        "--phase",
        "0:2s",
    ])
    .await;
    assert_eq!(arrivals.users_started, 20, "{arrivals:#?}");
    assert_eq!(arrivals.requests[0].count, 20);
    assert_eq!(arrivals.error_total(), 0, "{:?}", arrivals.errors);

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_are_spread_over_a_list_of_servers_round_robin_and_counted_per_server() {
    let (one, two) = (start_server().await, start_server().await);
    let list = format!("{},{}", one.base, two.base);
    // 5 closed-loop users: 0, 2, 4 on the first server, 1, 3 on the second.
    let report = bench(&[
        "metafi-bench",
        "register",
        "--server",
        &list,
        "--clients",
        "5",
        "--duration",
        "1s",
    ])
    .await;
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert_eq!(report.server, list);
    let users: Vec<u64> = report.per_server.iter().map(|c| c.users).collect();
    assert_eq!(users, [3, 2], "{:?}", report.per_server);
    assert_eq!(report.per_server[0].server, one.base);
    assert_eq!(report.per_server[1].server, two.base);
    assert!(
        report.per_server.iter().all(|c| c.successes > 0),
        "{:?}",
        report.per_server
    );
    let total: u64 = report.per_server.iter().map(|c| c.successes).sum();
    assert_eq!(
        total, report.requests[0].count,
        "every success is some server's"
    );
    one.stop().await;
    two.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_server_key_is_counted_as_errors_by_kind() {
    let server = start_server().await;
    let report = bench(&[
        "metafi-bench",
        "register",
        "--server",
        &server.base,
        "--server-key",
        "wrong",
        "--clients",
        "2",
        "--duration",
        "500ms",
    ])
    .await;
    assert_eq!(report.requests[0].count, 0);
    assert!(
        report.errors.get("status 401").copied().unwrap_or(0) > 0,
        "{:?}",
        report.errors
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_match_workload_measures_echo_and_broadcast_in_both_formats() {
    let server = start_server().await;
    for format in ["json", "protobuf"] {
        // 20 users (two seed matches of 10), each sending every 100 ms for 2 s
        let report = bench(&[
            "metafi-bench",
            "match",
            "--server",
            &server.base,
            "--rpc",
            "get_match_native",
            "--users",
            "20",
            "--phase",
            "40:500ms",
            "--phase",
            "0:3s",
            "--hold",
            "2s",
            "--interval",
            "100ms",
            "--format",
            format,
        ])
        .await;
        assert_eq!(report.error_total(), 0, "{format}: {:?}", report.errors);
        let count = |name: &str| {
            report
                .requests
                .iter()
                .find(|s| s.name == name)
                .map_or(0, |s| s.count)
        };
        assert_eq!(count("match_join"), 20, "{format}: {report:#?}");
        // every user sends ~10 echoes in 2 s and gets its own back; each broadcast reaches the
        // players of its match
        assert!(count("echo") >= 20 * 5, "{format}: {report:#?}");
        assert!(
            count("broadcast") >= count("echo") * 4,
            "{format}: {report:#?}"
        );
        let tool = report
            .tool_usage
            .expect("the tool reads its own /proc entry");
        assert!(
            tool.messages_received >= count("echo") + count("broadcast"),
            "{format}: {tool:?}"
        );
    }
    server.stop().await;
}

/// The leaderboard workload seeds the example board, then writes and reads around owners
/// without errors (at small scale: the lead measures a million records).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaderboard_workload_seeds_writes_and_reads_around_owners() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua");
    let server = TestNode::start(|raw| raw.runtime.path = examples.display().to_string()).await;
    let report = bench(&[
        "metafi-bench",
        "leaderboard",
        "--server",
        &server.base,
        "--clients",
        "4",
        "--duration",
        "1s",
        "--users",
        "8",
        "--seed",
        "2000",
    ])
    .await;
    assert_eq!(report.workload, "leaderboard");
    let count = |name: &str| {
        report
            .requests
            .iter()
            .find(|r| r.name == name)
            .map_or(0, |r| r.count)
    };
    assert!(count("write") > 0, "{report:#?}");
    assert!(count("around_owner") > 0, "{report:#?}");
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("added 2000 records")),
        "{:?}",
        report.notes
    );
}

/// The world workload reads the server's per-world figures and its threads' CPU while the bots
/// are in (the measured phase, after the ramp), and a sweep of its report.json is charted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_world_workload_measures_the_server_in_its_last_phase_and_charts_a_sweep() {
    let server = TestNode::start(|raw| {
        raw.world.enabled = true;
        raw.world.map = "arena".into();
        raw.world.threads = 1;
        raw.world.max_players = 10;
    })
    .await;
    let metrics = server.metrics.clone().expect("the kit turns metrics on");
    let pid = std::process::id().to_string();
    let report = bench(&[
        "metafi-bench",
        "world",
        "--server",
        &server.base,
        "--server-metrics",
        &metrics,
        "--server-pid",
        &pid,
        "--users",
        "6",
        "--phase",
        "12:500ms",
        "--phase",
        "0:4s",
        "--hold",
        "5s",
        "--format",
        "protobuf",
    ])
    .await;
    assert_eq!(report.error_total(), 0, "{:?}", report.errors);
    let figures = report.figures.clone().expect("the world's figures");
    // The window is the last phase less a tenth at each end (0.9 s to 4.1 s here): after the
    // ramp, and over before the run's end, when the bots leave.
    let from = figures["from_secs"].as_f64().unwrap();
    let to = figures["to_secs"].as_f64().unwrap();
    assert!(from >= 0.85 && to < 4.5 && to > from, "{figures:#}");
    let bots = figures["bots"].as_f64().unwrap();
    assert!(bots > 0.0 && bots <= 6.0 + 1e-6, "{figures:#}");
    assert!(figures["snapshots_per_bot_per_sec"].as_f64().unwrap() > 0.0);
    assert!(
        figures["commands_measured"].as_u64().unwrap() > 0,
        "{figures:#}"
    );
    assert_eq!(figures["problems"], serde_json::json!([]), "{figures:#}");
    // The server's side, read while the bots were in: six players, the window's ticks only.
    let s = &figures["server"];
    assert_eq!(s["players"], 6, "{figures:#}");
    // Ticks between the two readings, not since the world started (over 80 by then).
    let ticks = s["ticks"].as_u64().unwrap();
    assert!(
        ticks > 0 && ticks <= ((to - from) * 20.0).ceil() as u64 + 2,
        "{figures:#}"
    );
    let phases = s["phase_ms"].as_object().unwrap();
    assert_eq!(phases.len(), 6);
    assert!(
        phases.values().any(|v| v.as_f64().unwrap() > 0.0),
        "{figures:#}"
    );
    assert!(s["snapshots_sent"].as_u64().unwrap() > 0);
    // The CPU by thread group: the world's threads are found by name.
    let c = &figures["cpu"];
    let groups: Vec<&str> = c["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(groups.contains(&"metafi-world"), "{groups:?}");
    let share = c["simulation_share"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&share), "{figures:#}");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("server, measured phase: 6 players")),
        "{:#?}",
        report.notes
    );

    // A "sweep" of this one run, charted.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_vec(&report).unwrap()).unwrap();
    let out = dir.path().join("charts");
    let cli = Cli::try_parse_from([
        "metafi-bench",
        "world-charts",
        "--out",
        out.to_str().unwrap(),
        path.to_str().unwrap(),
    ])
    .unwrap();
    app::main(cli).unwrap();
    for name in [
        "world-response-rate.svg",
        "world-command-latency.svg",
        "world-cpu-split.svg",
        "world-tick-phases.svg",
    ] {
        let svg = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("bots"), "{name}");
    }
    server.stop().await;
}

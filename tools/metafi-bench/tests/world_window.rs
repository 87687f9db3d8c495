#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

//! The `world` workload's measured phase against a MetaFi node in this process (a world on the
//! arena, SQLite in a temporary directory, port 0), and `world-charts` over its report. A file
//! of its own: its world ticks while it runs, and the other in-process workloads' tests time
//! their server's RPCs.

use clap::Parser as _;
use metafi_bench::app;
use metafi_bench::cli::Cli;
use metafi_bench::report::Report;
use metafi_testkit::TestNode;

async fn bench(args: &[&str]) -> Report {
    let cli = Cli::try_parse_from(args).unwrap();
    app::execute(cli.command, std::future::pending())
        .await
        .unwrap()
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

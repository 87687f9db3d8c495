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

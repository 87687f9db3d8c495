#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

//! The floor server (`metafi-bench floor`) answers the `rpc` workload over REST and the socket
//! (JSON and protobuf) with the payload it was sent: the run counts calls and no errors, and
//! every answer is checked against the payload by the workload itself.

use clap::Parser as _;
use metafi_bench::cli::Cli;
use metafi_bench::report::Report;
use metafi_bench::{app, floor};
use tokio::net::TcpListener;

async fn rpc_run(base: &str, extra: &[&str]) -> Report {
    let mut args = vec![
        "metafi-bench",
        "rpc",
        "--server",
        base,
        "--clients",
        "4",
        "--users",
        "4",
        "--duration",
        "1s",
        "--id",
        "echo \"odd\" id",
        "--payload",
        r#"{"message":"to the floor and back","n":[1,2,3]}"#,
    ];
    args.extend_from_slice(extra);
    let cli = Cli::try_parse_from(args).unwrap();
    app::execute(cli.command, std::future::pending())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_echoes_rpcs_over_rest_and_the_socket_in_both_formats() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(floor::serve(listener, async {
        let _ = stopped.await;
    }));

    for extra in [
        &[][..],
        &["--socket"][..],
        &["--socket", "--format", "protobuf"][..],
    ] {
        let report = rpc_run(&base, extra).await;
        let rpc = report.requests.iter().find(|r| r.name == "rpc").unwrap();
        assert!(rpc.count > 0, "{extra:?}: {report:#?}");
        assert_eq!(report.error_total(), 0, "{extra:?}: {:?}", report.errors);
    }

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_floor_refuses_a_body_that_is_not_a_json_string() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(floor::serve(listener, std::future::pending()));
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = "POST /v2/rpc/echo HTTP/1.1\r\nhost: x\r\ncontent-length: 7\r\nconnection: close\r\n\r\n{\"a\":1}";
    tokio::io::AsyncWriteExt::write_all(&mut tcp, request.as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut tcp, &mut answer)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("payload as a JSON string"), "{answer}");
}

async fn match_run(base: &str, extra: &[&str]) -> Report {
    let mut args = vec![
        "metafi-bench",
        "match",
        "--server",
        base,
        "--users",
        "20",
        "--phase",
        "20:1s",
        "--phase",
        "0:3s",
        "--hold",
        "2s",
    ];
    args.extend_from_slice(extra);
    let cli = Cli::try_parse_from(args).unwrap();
    app::execute(cli.command, std::future::pending())
        .await
        .unwrap()
}

/// The floor of the seed match row: players find a seat (or are placed in matches made first),
/// join, and get their echoes back and every broadcast of their match of ten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_plays_the_seed_match_found_or_placed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(floor::serve(listener, std::future::pending()));

    for extra in [&["--rpc", "get_match"][..], &["--cross-node", "0"][..]] {
        let report = match_run(&base, extra).await;
        assert_eq!(report.error_total(), 0, "{extra:?}: {:?}", report.errors);
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with("seats: 20 of 20 players seated")),
            "{extra:?}: {:?}",
            report.notes
        );
        let count = |name: &str| {
            report
                .requests
                .iter()
                .find(|r| r.name == name)
                .unwrap()
                .count
        };
        let (echo, broadcast) = (count("echo"), count("broadcast"));
        assert!(echo > 0, "{extra:?}: {report:#?}");
        // Each broadcast reaches the ten players of its match, each echo only its sender.
        assert!(
            broadcast >= 5 * echo,
            "{extra:?}: echo {echo}, broadcast {broadcast}"
        );
    }
}

//! Silent connections used to fill the process's file-descriptor limit for good, after which
//! health checks failed. Now the server backs off while accepts fail and its idle deadline
//! frees the descriptors the silent connections held, so a health check gets through again.
//!
//! Alone in its own test binary: it lowers the limit of the whole process.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use metafi_api::HttpConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Hang guard: far above the deadlines configured below.
const GUARD: Duration = Duration::from_secs(30);

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_filling_the_descriptor_limit_are_freed_and_health_checks_recover() {
    let http = HttpConfig {
        idle_timeout: Duration::from_millis(300),
        header_read_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/healthcheck", get(|| async { "{}" }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        metafi_api::serve(listener, app, &http, async move {
            let _ = stopped.await;
        })
        .await;
    });

    // The health check's socket is made now, while descriptors are free: once the process is
    // out of them, only the server's side of a connection still needs one.
    let probe = tokio::net::TcpSocket::new_v4().unwrap();
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    let limit = open_descriptors() + 64;
    rlimit::setrlimit(rlimit::Resource::NOFILE, limit, hard).unwrap();

    // Silent clients until this process has no descriptor left (each connection the server
    // accepts costs it one too). They never send a byte and never close.
    let mut silent = Vec::new();
    let exhausted = tokio::time::timeout(GUARD, async {
        loop {
            match TcpStream::connect(addr).await {
                Ok(stream) => silent.push(stream),
                Err(e) => return e,
            }
            assert!(silent.len() < 10_000, "the limit was never reached");
        }
    })
    .await
    .expect("the descriptor limit was reached");
    assert_eq!(exhausted.raw_os_error(), Some(24), "{exhausted}");

    // The server can accept the health check only once it has freed descriptors held by the
    // silent clients: its idle deadline does that.
    let answer = tokio::time::timeout(GUARD, async {
        let mut stream = probe.connect(addr).await.unwrap();
        stream
            .write_all(b"GET /healthcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .expect("a health check got through while silent clients held their connections");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");

    drop(silent);
    rlimit::setrlimit(rlimit::Resource::NOFILE, hard.min(1 << 20), hard).unwrap();
    let _ = stop.send(());
    tokio::time::timeout(GUARD, server).await.unwrap().unwrap();
}

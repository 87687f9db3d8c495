//! Many clients connecting at once over a thin link: each client has its own UDP socket
//! (its own `Connector`), all behind one `LossyProxy` limited to a rate in both directions with
//! a drop-tail queue. Measures how many complete the QUIC + TLS handshake and the hello/welcome
//! exchange, how long it takes, and the bytes on the link — first with full handshakes, then
//! reconnecting with resumed sessions and 0-RTT. `docs/TRANSPORT.md` ("Certificates") records
//! the results.
//!
//! ```sh
//! cargo run --release -p metafi-quic --features test-util --example connect_storm \
//!     [clients=150] [kbit_per_s=600] [one_way_ms=20] [initial_rtt_ms=333] [mtu_discovery=0] \
//!     [idle_timeout_ms=30000] [queue_bytes=65536]
//! ```

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)] // a measurement tool's output

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use metafi_quic::cert::{ServerCert, Trust};
use metafi_quic::lossy::{LossyProxy, Profile};
use metafi_quic::wire::{Hello, Welcome};
use metafi_quic::{Connector, Handshake, Tuning};
use tokio::time::Instant;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut next = |default: u64| args.next().map_or(default, |s| s.parse().unwrap());
    let clients = next(150) as usize;
    let kbit = next(600);
    let one_way = Duration::from_millis(next(20));
    let initial_rtt = Duration::from_millis(next(333));
    let mtu_discovery = next(0) == 1;
    let idle_timeout = Duration::from_millis(next(30_000));
    let queue_bytes = next(65_536) as usize;
    let tuning = Tuning {
        initial_rtt,
        mtu_discovery,
        idle_timeout,
        ..Tuning::default()
    };
    let cert = ServerCert::ephemeral(&["localhost".to_owned()]).unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server_addr = socket.local_addr().unwrap();
    let endpoint =
        metafi_quic::server_endpoint(socket, &cert, &tuning, metafi_quic::ServerLimits::default())
            .unwrap();
    let server_tuning = Arc::new(tuning.clone());
    tokio::spawn({
        let endpoint = endpoint.clone();
        async move {
            while let Some(incoming) = endpoint.accept().await {
                let tuning = server_tuning.clone();
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else { return };
                    let Ok(handshake) =
                        Handshake::accept(&conn, Duration::from_secs(60), 4096).await
                    else {
                        return;
                    };
                    let welcome = Welcome {
                        session_id: "s".into(),
                    };
                    if let Ok((_sender, _receiver)) = handshake.welcome(&welcome, tuning).await {
                        conn.closed().await;
                    }
                });
            }
        }
    });
    let link = Profile {
        delay: one_way,
        rate_bps: Some(kbit * 1000),
        queue_bytes,
        ..Profile::default()
    };
    let proxy = LossyProxy::start(server_addr, link.clone(), link, 1)
        .await
        .unwrap();
    let connectors: Vec<Connector> = (0..clients)
        .map(|_| {
            Connector::new(
                "127.0.0.1:0".parse().unwrap(),
                proxy.addr(),
                "localhost",
                &Trust::Fingerprint(cert.fingerprint),
                tuning.clone(),
            )
            .unwrap()
        })
        .collect();
    println!(
        "{clients} clients at once, {kbit} kbit/s each way, {} ms one way, {queue_bytes}-byte queue, initial_rtt {} ms, idle_timeout {} s, mtu_discovery {mtu_discovery}, certificate {} bytes\n",
        one_way.as_millis(),
        initial_rtt.as_millis(),
        idle_timeout.as_secs(),
        cert.chain_bytes()
    );
    println!(
        "| round | connected | 0-RTT | median s | p99 s | last s | up kB | down kB | packets dropped at the queue |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for round in ["full handshakes", "resumed + 0-RTT"] {
        let up_before = proxy.up_stats.bytes.load(Ordering::Relaxed);
        let down_before = proxy.down_stats.bytes.load(Ordering::Relaxed);
        let dropped_before = proxy.up_stats.queue_dropped.load(Ordering::Relaxed)
            + proxy.down_stats.queue_dropped.load(Ordering::Relaxed);
        let start = Instant::now();
        let tasks: Vec<_> = connectors
            .iter()
            .cloned()
            .map(|connector| {
                tokio::spawn(async move {
                    let hello = Hello {
                        token: "t".into(),
                        ..Hello::default()
                    };
                    let link = connector.connect(&hello).await;
                    (start.elapsed(), link)
                })
            })
            .collect();
        let mut times = Vec::new();
        let mut zero_rtt = 0;
        let mut links = Vec::new();
        let mut errors: std::collections::BTreeMap<String, usize> = Default::default();
        for task in tasks {
            let (elapsed, link) = task.await.unwrap();
            match link {
                Ok(link) => {
                    times.push(elapsed.as_secs_f64());
                    zero_rtt += usize::from(link.zero_rtt);
                    links.push(link);
                }
                Err(e) => {
                    let mut text = e.to_string();
                    if let Some(source) = std::error::Error::source(&e) {
                        text = format!("{text}: {source}");
                    }
                    *errors.entry(text).or_default() += 1;
                }
            }
        }
        for (error, count) in &errors {
            eprintln!("{round}: {count} × {error}");
        }
        times.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            times
                .get(((times.len() as f64 - 1.0) * p) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let up = proxy.up_stats.bytes.load(Ordering::Relaxed) - up_before;
        let down = proxy.down_stats.bytes.load(Ordering::Relaxed) - down_before;
        let dropped = proxy.up_stats.queue_dropped.load(Ordering::Relaxed)
            + proxy.down_stats.queue_dropped.load(Ordering::Relaxed)
            - dropped_before;
        println!(
            "| {round} | {}/{clients} | {zero_rtt} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {dropped} |",
            times.len(),
            pct(0.5),
            pct(0.99),
            times.last().copied().unwrap_or(f64::NAN),
            up as f64 / 1000.0,
            down as f64 / 1000.0,
        );
        for link in &links {
            link.sender
                .connection()
                .close(metafi_quic::quinn::VarInt::from_u32(1000), b"bye");
        }
        drop(links);
        // Let the closes and the session tickets drain from the link.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

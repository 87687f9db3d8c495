//! Measures what each QUIC knob does to delay and jitter on a thin game stream over an
//! emulated bad link (in-process `LossyProxy`), per delivery class. Prints a Markdown table;
//! `docs/TRANSPORT.md` ("Tuning knobs") records the results.
//!
//! ```sh
//! cargo run --release -p metafi-quic --features test-util --example knobs [seconds] [seed] [thin|overload|all]
//! ```
//!
//! The stream follows the seed paper's mix (move 84 % / attack 12 % / talk 4 %): 21 move
//! updates per second as unreliable-latest, 3 attacks as reliable-unordered, 1 talk message as
//! reliable-ordered, 40–60 bytes each, client to server. Each message carries its send time; the
//! receiver (same process, same clock) records the one-way delay. Jitter is the standard
//! deviation of the delay. A second scenario overloads a 600 kbit/s link with move updates to
//! show the datagram send buffer's effect.

#![allow(clippy::unwrap_used, clippy::print_stdout)] // a measurement tool's output

use std::collections::HashMap;
use std::net::UdpSocket;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use metafi_quic::cert::{ServerCert, Trust};
use metafi_quic::lossy::{LossyProxy, Profile};
use metafi_quic::wire::{Hello, Welcome};
use metafi_quic::{Congestion, Connector, DeliveryClass, Handshake, Tuning};
use tokio::time::Instant;

const MOVE: u8 = 0;
const ATTACK: u8 = 1;
const TALK: u8 = 2;
const NAMES: [&str; 3] = ["move (latest)", "attack (unordered)", "talk (ordered)"];

#[derive(Default)]
struct Samples {
    sent: u64,
    delays_ms: Vec<f64>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map_or(15, |s| s.parse().unwrap());
    let seed: u64 = args.next().map_or(1, |s| s.parse().unwrap());
    let part = args.next().unwrap_or_else(|| "all".into());
    if part != "overload" {
        thin(seconds, seed).await;
    }
    if part != "thin" {
        overload(seconds, seed).await;
    }
}

async fn thin(seconds: u64, seed: u64) {
    let link = Profile {
        loss: 0.05,
        delay: Duration::from_millis(40),
        jitter: Duration::from_millis(4),
        ..Profile::default()
    };
    // The baseline is quinn's behaviour: no copies. `Tuning::default()` enables one copy
    // because of what this measurement showed.
    let base = Tuning {
        redundancy_copies: 0,
        ..Tuning::default()
    };
    let runs: Vec<(&str, Tuning)> = vec![
        ("baseline (no copies)", base.clone()),
        (
            "initial_rtt_ms 100",
            Tuning {
                initial_rtt: Duration::from_millis(100),
                ..base.clone()
            },
        ),
        (
            "max_ack_delay_ms 5",
            Tuning {
                max_ack_delay: Duration::from_millis(5),
                ..base.clone()
            },
        ),
        (
            "ack_eliciting_threshold 0",
            Tuning {
                ack_eliciting_threshold: 0,
                ..base.clone()
            },
        ),
        (
            "time_threshold 1.02",
            Tuning {
                time_threshold: 1.02,
                ..base.clone()
            },
        ),
        (
            "redundancy_copies 1",
            Tuning {
                redundancy_copies: 1,
                ..base.clone()
            },
        ),
        (
            "redundancy_copies 2",
            Tuning {
                redundancy_copies: 2,
                ..base.clone()
            },
        ),
        (
            "copies 1 + max_ack_delay 5",
            Tuning {
                redundancy_copies: 1,
                max_ack_delay: Duration::from_millis(5),
                ..base.clone()
            },
        ),
        (
            "latest_settle_ms 30",
            Tuning {
                latest_settle: Duration::from_millis(30),
                ..base.clone()
            },
        ),
        (
            "congestion bbr",
            Tuning {
                congestion: Congestion::Bbr,
                ..base.clone()
            },
        ),
        (
            "congestion new_reno",
            Tuning {
                congestion: Congestion::NewReno,
                ..base.clone()
            },
        ),
    ];
    println!(
        "Link: {:.0} % loss each way, {} ms ± {} ms one way; {seconds} s per run, seed {seed}.\n",
        link.loss * 100.0,
        link.delay.as_millis(),
        link.jitter.as_millis()
    );
    println!(
        "| knobs | class | delivered | median ms | p99 ms | max ms | jitter ms |\n|---|---|---|---|---|---|---|"
    );
    for (name, tuning) in runs {
        let samples = run(&link, &link, tuning, seconds, seed, thin_stream).await;
        print_rows(name, &samples);
    }
}

/// Overload: fresh data must not queue behind stale data.
async fn overload(seconds: u64, seed: u64) {
    let slow = Profile {
        rate_bps: Some(600_000),
        queue_bytes: 10_000,
        delay: Duration::from_millis(20),
        ..Profile::default()
    };
    println!(
        "\nOverload: 600 kbit/s, 20 ms one way, 10 kB drop-tail queue (≈ 130 ms); 1000 move updates/s of 110 bytes (≈ 900 kbit/s offered).\n"
    );
    println!(
        "| datagram_send_buffer_bytes, congestion | class | delivered | median ms | p99 ms | max ms | jitter ms |\n|---|---|---|---|---|---|---|"
    );
    for (buffer, congestion) in [
        (2_048usize, Congestion::Cubic),
        (8_192, Congestion::Cubic),
        (65_536, Congestion::Cubic),
        (1 << 20, Congestion::Cubic),
        (8_192, Congestion::Bbr),
        (8_192, Congestion::NewReno),
    ] {
        let tuning = Tuning {
            datagram_send_buffer_bytes: buffer,
            congestion,
            ..Tuning::default()
        };
        let samples = run(&slow, &Profile::default(), tuning, seconds, seed, flood).await;
        print_rows(&format!("{buffer}, {}", congestion.as_str()), &samples);
    }
}

fn print_rows(name: &str, samples: &HashMap<u8, Samples>) {
    for class in [MOVE, ATTACK, TALK] {
        let Some(s) = samples.get(&class) else {
            continue;
        };
        if s.sent == 0 {
            continue;
        }
        let mut d = s.delays_ms.clone();
        d.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            d.get(((d.len() as f64 - 1.0) * p) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / d.len().max(1) as f64).sqrt();
        println!(
            "| {name} | {} | {:.1} % | {:.1} | {:.1} | {:.1} | {:.1} |",
            NAMES[class as usize],
            100.0 * d.len() as f64 / s.sent as f64,
            pct(0.5),
            pct(0.99),
            d.last().copied().unwrap_or(f64::NAN),
            sd
        );
    }
}

/// When to send what: (time from start, class, payload bytes).
type Plan = fn(u64) -> Vec<(Duration, u8, usize)>;

/// Seed mix: 21 moves, 3 attacks, 1 talk per second, evenly spread.
fn thin_stream(seconds: u64) -> Vec<(Duration, u8, usize)> {
    let mut plan = Vec::new();
    for s in 0..seconds {
        let start = Duration::from_secs(s);
        for i in 0..21 {
            plan.push((start + Duration::from_millis(i * 1000 / 21), MOVE, 40));
        }
        for i in 0..3 {
            plan.push((start + Duration::from_millis(150 + i * 333), ATTACK, 50));
        }
        plan.push((start + Duration::from_millis(500), TALK, 60));
    }
    plan.sort();
    plan
}

/// 1000 moves per second.
fn flood(seconds: u64) -> Vec<(Duration, u8, usize)> {
    (0..seconds * 1000)
        .map(|i| (Duration::from_millis(i), MOVE, 110))
        .collect()
}

async fn run(
    up: &Profile,
    down: &Profile,
    tuning: Tuning,
    seconds: u64,
    seed: u64,
    plan: Plan,
) -> HashMap<u8, Samples> {
    let cert = ServerCert::ephemeral(&["localhost".to_owned()]).unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server_addr = socket.local_addr().unwrap();
    let endpoint =
        metafi_quic::server_endpoint(socket, &cert, &tuning, metafi_quic::ServerLimits::default())
            .unwrap();
    let server_tuning = Arc::new(tuning.clone());
    let epoch = Instant::now();
    let receiver = tokio::spawn({
        let endpoint = endpoint.clone();
        async move {
            let conn = endpoint.accept().await.unwrap().await.unwrap();
            let handshake = Handshake::accept(&conn, Duration::from_secs(10), 4096)
                .await
                .unwrap();
            let (_sender, mut receiver) = handshake
                .welcome(&Welcome::default(), server_tuning)
                .await
                .unwrap();
            let mut got: Vec<(u8, f64)> = Vec::new();
            while let Some(Ok(bytes)) = receiver.recv().await {
                let now = epoch.elapsed().as_secs_f64() * 1000.0;
                let class = bytes[0];
                let sent_us = u64::from_be_bytes(bytes[5..13].try_into().unwrap());
                got.push((class, now - sent_us as f64 / 1000.0));
            }
            got
        }
    });
    let proxy = LossyProxy::start(server_addr, up.clone(), down.clone(), seed)
        .await
        .unwrap();
    let connector = Connector::new(
        "127.0.0.1:0".parse().unwrap(),
        proxy.addr(),
        "localhost",
        &Trust::Fingerprint(cert.fingerprint),
        tuning,
    )
    .unwrap();
    let mut link = connector
        .connect(&Hello {
            token: "t".into(),
            ..Hello::default()
        })
        .await
        .unwrap();
    let mut samples: HashMap<u8, Samples> = HashMap::new();
    let classes = [
        DeliveryClass::latest("pos"),
        DeliveryClass::ReliableUnordered,
        DeliveryClass::ordered("talk"),
    ];
    let start = Instant::now();
    for (seq, (at, class, len)) in plan(seconds).into_iter().enumerate() {
        loop {
            let due = start + at;
            let timers = link.sender.next_deadline();
            match timers {
                Some(t) if t < due => {
                    tokio::time::sleep_until(t).await;
                    link.sender.on_timers(Instant::now()).await.unwrap();
                }
                _ => {
                    tokio::time::sleep_until(due).await;
                    break;
                }
            }
        }
        let mut payload = BytesMut::with_capacity(64);
        payload.put_u8(class);
        payload.put_u32(seq as u32);
        payload.put_u64(epoch.elapsed().as_micros() as u64);
        payload.resize(len, 0);
        link.sender
            .send(Bytes::from(payload), &classes[class as usize])
            .await
            .unwrap();
        samples.entry(class).or_default().sent += 1;
    }
    // Let settling resends and retransmissions finish.
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        match link.sender.next_deadline() {
            Some(t) => {
                tokio::time::sleep_until(t.min(end)).await;
                link.sender.on_timers(Instant::now()).await.unwrap();
            }
            None => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    link.sender
        .connection()
        .close(metafi_quic::quinn::VarInt::from_u32(1000), b"done");
    drop(link);
    for (class, delay) in receiver.await.unwrap() {
        samples.entry(class).or_default().delays_ms.push(delay);
    }
    endpoint.close(metafi_quic::quinn::VarInt::from_u32(1000), b"done");
    samples
}

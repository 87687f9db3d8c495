//! UDP probes: `probe-echo` answers every datagram; `probe` sends numbered, timestamped
//! datagrams and reports round-trip times and loss. Used to check an emulated path (the smoke
//! test, and the experiment script before it measures anything).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::Serialize;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// What `probe` prints.
#[derive(Debug, Serialize)]
pub struct ProbeReport {
    pub sent: u32,
    pub received: u32,
    pub rtt_min_ms: f64,
    pub rtt_mean_ms: f64,
    pub rtt_max_ms: f64,
}

pub async fn echo(bind: SocketAddr, duration: Duration) -> anyhow::Result<()> {
    let socket = UdpSocket::bind(bind)
        .await
        .with_context(|| format!("binding {bind}"))?;
    let mut buf = vec![0u8; 65_536];
    let deadline = Instant::now() + duration;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return Ok(()),
            got = socket.recv_from(&mut buf) => {
                let (len, from) = got.context("receiving a probe")?;
                // A failed answer is a lost probe: the prober counts it.
                let _ = socket.send_to(&buf[..len], from).await;
            }
        }
    }
}

pub async fn probe(
    to: SocketAddr,
    from: Option<Ipv4Addr>,
    count: u32,
    interval: Duration,
    size: usize,
    wait: Duration,
) -> anyhow::Result<()> {
    if size < 12 {
        bail!("--size must be at least 12 bytes (sequence number and send time)");
    }
    let local = SocketAddr::new(from.map_or([0, 0, 0, 0].into(), Into::into), 0);
    let socket = UdpSocket::bind(local)
        .await
        .with_context(|| format!("binding {local}"))?;
    socket
        .connect(to)
        .await
        .with_context(|| format!("connecting to {to}"))?;
    let start = Instant::now();
    let mut rtts: HashMap<u32, f64> = HashMap::new();
    let mut next_send = start;
    let mut sent = 0;
    let mut buf = vec![0u8; size.max(64)];
    let mut deadline = start + interval * count + wait;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_send), if sent < count => {
                let mut datagram = vec![0u8; size];
                datagram[..4].copy_from_slice(&sent.to_be_bytes());
                let at = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                datagram[4..12].copy_from_slice(&at.to_be_bytes());
                socket.send(&datagram).await.context("sending a probe")?;
                sent += 1;
                next_send += interval;
                if sent == count {
                    deadline = Instant::now() + wait;
                }
            }
            got = socket.recv(&mut buf) => {
                let len = got.context("receiving an answer")?;
                if len >= 12 {
                    let seq = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    let mut at = [0u8; 8];
                    at.copy_from_slice(&buf[4..12]);
                    let sent_at = u64::from_be_bytes(at);
                    let now = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    rtts.insert(seq, now.saturating_sub(sent_at) as f64 / 1e6);
                }
                if sent == count && rtts.len() as u32 == count {
                    break;
                }
            }
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    let values: Vec<f64> = rtts.values().copied().collect();
    let report = ProbeReport {
        sent,
        received: values.len() as u32,
        rtt_min_ms: values.iter().copied().fold(f64::INFINITY, f64::min),
        rtt_mean_ms: values.iter().sum::<f64>() / values.len().max(1) as f64,
        rtt_max_ms: values.iter().copied().fold(0.0, f64::max),
    };
    #[allow(clippy::print_stdout)] // the report is the command's output
    {
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(())
}

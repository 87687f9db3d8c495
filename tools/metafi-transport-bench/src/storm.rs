//! `storm`: every player opens its realtime connection at the same moment — QUIC or the
//! WebSocket — over the measured links, and the time each connection took is reported.
//! Players sign in first (on the emulator's setup link when `--emulator-pid` is given), so
//! only the connections themselves share the server's link.

use std::time::Instant;

use anyhow::Context as _;
use metafi_client::{Format, SocketConfig};
use serde::Serialize;
use tokio::sync::Barrier;

use crate::connect::Connection;
use crate::replay::{self, RunOptions};

/// What `storm` measured.
#[derive(Debug, Serialize)]
pub struct StormResult {
    pub transport: &'static str,
    pub players: usize,
    pub connected: usize,
    pub failures: Vec<String>,
    /// Seconds from the common start to each success, sorted.
    pub seconds: Vec<f64>,
    pub median_s: f64,
    pub max_s: f64,
}

pub async fn storm(options: &RunOptions, players: usize) -> anyhow::Result<StormResult> {
    replay::signal_emulator(options.emulator_pid, "-USR2")?;
    let clients = replay::sign_in(options, players).await?;
    replay::signal_emulator(options.emulator_pid, "-USR1")?;
    let config = SocketConfig {
        format: Format::Protobuf,
        timeout: options.timeout,
        ..SocketConfig::default()
    };
    let barrier = std::sync::Arc::new(Barrier::new(players));
    let mut tasks = Vec::new();
    for (i, (client, token)) in clients.into_iter().enumerate() {
        let options = options.clone();
        let config = config.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let started = Instant::now();
            let source = replay::source(&options, i);
            let opened =
                Connection::open(&options, client.endpoint(), source, &token, &config).await;
            (
                started.elapsed().as_secs_f64(),
                opened.map(|(c, _events)| c),
            )
        }));
    }
    let mut seconds = Vec::new();
    let mut failures = Vec::new();
    let mut open = Vec::new();
    for task in tasks {
        let (took, opened) = task.await.context("a connecting task failed")?;
        match opened {
            Ok(connection) => {
                seconds.push(took);
                open.push(connection);
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    for connection in open {
        connection.close().await;
    }
    seconds.sort_by(f64::total_cmp);
    let median_s = seconds.get(seconds.len() / 2).copied().unwrap_or(f64::NAN);
    let max_s = seconds.last().copied().unwrap_or(f64::NAN);
    Ok(StormResult {
        transport: if options.strategy.uses_quic() {
            "quic"
        } else {
            "websocket"
        },
        players,
        connected: seconds.len(),
        failures,
        seconds,
        median_s,
        max_s,
    })
}
